//! The bound on one text's work: rules read at most [`MAX_TEXT_BYTES`] of any one string.
//!
//! The injection rules match each text in a dozen views (normalised, decoded, reversed…) and
//! the description rules build word sets, so one 50 MB description took 1.5 GB and 40 s. A text
//! longer than the bound is linted on its first [`MAX_TEXT_BYTES`] and a `lint-bound` finding
//! says so; the token estimate still counts the whole text, since the model pays for all of it.

use crate::RuleId;
use std::borrow::Cow;

use serde_json::{Map, Value};

use super::{Raw, child_path};
use toolscore_core::catalog::{Annotations, Catalog, Tool};

/// Longest text (name, description, property name or schema string) the rules read, in bytes.
/// 64 KiB is some 16,000 tokens, far beyond any description a model is helped by, and keeps
/// the dozen views the injection rules build of it to a few megabytes.
pub(crate) const MAX_TEXT_BYTES: usize = 64 * 1024;

/// The catalog as the rules read it: itself when no text is longer than [`MAX_TEXT_BYTES`];
/// otherwise a copy with each longer text cut to its first [`MAX_TEXT_BYTES`] (at a character
/// boundary), with a `lint-bound` finding for each cut.
pub(crate) fn capped<'a>(catalog: &'a Catalog, out: &mut Vec<Raw>) -> Cow<'a, Catalog> {
    let long = |t: &Tool| {
        t.name.len() > MAX_TEXT_BYTES
            || t.description.len() > MAX_TEXT_BYTES
            || has_long_text(&t.input_schema)
            || t.title.as_ref().is_some_and(|s| s.len() > MAX_TEXT_BYTES)
            || t.annotations
                .as_ref()
                .is_some_and(|a| a.title.len() > MAX_TEXT_BYTES)
            || t.output_schema.as_ref().is_some_and(has_long_text)
    };
    if !catalog.tools.iter().any(long) {
        return Cow::Borrowed(catalog);
    }
    let mut copy = catalog.clone();
    for tool in &mut copy.tools {
        if !long(tool) {
            continue;
        }
        let mut cuts = Vec::new();
        let name = cut(&tool.name, "name", &mut cuts);
        let description = cut(&tool.description, "description", &mut cuts);
        let schema = cut_value(&tool.input_schema, "inputSchema", &mut cuts);
        let title = tool.title.as_ref().map(|t| cut(t, "title", &mut cuts));
        let annotations = tool.annotations.as_ref().map(|a| Annotations {
            title: cut(&a.title, "annotations.title", &mut cuts),
        });
        let output_schema = tool
            .output_schema
            .as_ref()
            .map(|s| cut_value(s, "outputSchema", &mut cuts));
        for (path, len) in cuts {
            out.push(Raw::new(
                RuleId::LintBound,
                Some(&name),
                path,
                format!(
                    "the text is {} bytes; lint read its first {} only (the bound on one text)",
                    super::thousands(len as u64),
                    super::thousands(MAX_TEXT_BYTES as u64)
                ),
                "Shorten it: the model pays for every token of it on every request.",
            ));
        }
        *tool = Tool {
            name,
            title,
            description,
            input_schema: schema,
            annotations,
            output_schema,
        };
    }
    Cow::Owned(copy)
}

fn has_long_text(value: &Value) -> bool {
    match value {
        Value::String(s) => s.len() > MAX_TEXT_BYTES,
        Value::Array(items) => items.iter().any(has_long_text),
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| k.len() > MAX_TEXT_BYTES || has_long_text(v)),
        _ => false,
    }
}

/// `text` cut to [`MAX_TEXT_BYTES`] at a character boundary; a cut is noted as (path, length).
fn cut(text: &str, path: &str, cuts: &mut Vec<(String, usize)>) -> String {
    if text.len() <= MAX_TEXT_BYTES {
        return text.to_owned();
    }
    cuts.push((path.to_owned(), text.len()));
    let mut end = MAX_TEXT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

fn cut_value(value: &Value, path: &str, cuts: &mut Vec<(String, usize)>) -> Value {
    match value {
        Value::String(s) => Value::String(cut(s, path, cuts)),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| cut_value(v, &format!("{path}[{i}]"), cuts))
                .collect(),
        ),
        Value::Object(map) => {
            let mut copy = Map::new();
            for (k, v) in map {
                let key = cut(k, &child_path(path, k), cuts);
                let child = child_path(path, &key);
                copy.insert(key, cut_value(v, &child, cuts));
            }
            Value::Object(copy)
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use serde_json::json;

    #[test]
    fn a_short_catalog_is_not_copied() {
        let c = catalog(vec![clean_tool("get_invoice")]);
        let mut out = Vec::new();
        assert!(matches!(capped(&c, &mut out), Cow::Borrowed(_)));
        assert!(out.is_empty());
    }

    #[test]
    fn long_texts_are_cut_at_a_character_boundary_and_reported() {
        // 'é' is two bytes, so the bound falls inside a character when preceded by one 'a'.
        let long = format!("a{}", "é".repeat(MAX_TEXT_BYTES));
        let c = catalog(vec![tool(
            "get_invoice",
            &long,
            json!({"type": "object", "properties": {"q": {"type": "string", "description": long}}}),
        )]);
        let mut out = Vec::new();
        let linted = capped(&c, &mut out);
        let t = &linted.tools[0];
        assert_eq!(t.description.len(), MAX_TEXT_BYTES - 1);
        assert!(t.description.starts_with("aé"));
        let q = t.input_schema["properties"]["q"]["description"]
            .as_str()
            .unwrap();
        assert_eq!(q.len(), MAX_TEXT_BYTES - 1);
        let paths: Vec<&str> = out.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(
            paths,
            ["description", "inputSchema.properties.q.description"]
        );
        assert!(
            out[0]
                .message
                .contains("is 131,073 bytes; lint read its first 65,536 only"),
            "{}",
            out[0].message
        );
    }
}
