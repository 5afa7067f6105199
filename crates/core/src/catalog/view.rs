//! The catalog flat and cold: each tool's name, description and parameters as plain text, in
//! the order and with the words a model receives, without any context from the server. Also
//! the token footprint, and per-tool fingerprints.
//!
//! The footprint is an approximation, deterministic and the same for every provider: the
//! characters of the compact JSON a provider is sent for the tool (`{"name", "description",
//! "parameters"}`) divided by 4, rounded up (about 4 characters a token is the usual figure
//! for English and JSON with BPE tokenizers). Providers wrap tools in their own prompt format,
//! so the exact count differs by model; the approximation is for comparing catalogs and
//! versions, not for billing.

use std::fmt::Write as _;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{Catalog, Tool};

/// Approximate tokens one tool costs in every request (see the module documentation).
pub fn tool_tokens(tool: &Tool) -> usize {
    let wire = serde_json::json!({
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.input_schema,
    });
    let chars = serde_json::to_string(&wire).map_or(0, |s| s.chars().count());
    chars.div_ceil(4)
}

/// Approximate tokens of the whole catalog.
pub fn catalog_tokens(catalog: &Catalog) -> usize {
    catalog.tools.iter().map(tool_tokens).sum()
}

/// `sha256:` of the canonical JSON of one tool: changes exactly when what the model reads
/// about it changes.
pub fn tool_fingerprint(tool: &Tool) -> String {
    let canonical = crate::json::canonical_json(&serde_json::to_value(tool).unwrap_or(Value::Null));
    format!(
        "sha256:{}",
        crate::json::hex(&Sha256::digest(canonical.as_bytes()))
    )
}

/// The first 12 hex digits of a fingerprint, for display.
pub fn short(fingerprint: &str) -> &str {
    let hex = fingerprint.strip_prefix("sha256:").unwrap_or(fingerprint);
    &hex[..hex.len().min(12)]
}

/// One parameter, flattened: nested properties are `outer.inner`, array items `list[]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    pub path: String,
    pub kind: String,
    pub required: bool,
    pub enumeration: Option<Vec<Value>>,
    pub default: Option<Value>,
    pub description: Option<String>,
}

/// Deepest nesting flattened; deeper objects are shown as `object`.
const MAX_DEPTH: usize = 6;

/// Every parameter of an input schema, depth first, properties in key order (the order in
/// which toolscore sends a schema to a provider).
pub fn parameters(schema: &Value) -> Vec<Parameter> {
    let mut out = Vec::new();
    collect(schema, "", 0, &mut out);
    out
}

fn collect(schema: &Value, prefix: &str, depth: usize, out: &mut Vec<Parameter>) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, prop) in props {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        out.push(Parameter {
            path: path.clone(),
            kind: type_of(prop),
            required: required.contains(&name.as_str()),
            enumeration: prop.get("enum").and_then(Value::as_array).cloned(),
            default: prop.get("default").cloned(),
            description: prop
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
        });
        if depth + 1 >= MAX_DEPTH {
            continue;
        }
        collect(prop, &path, depth + 1, out);
        if let Some(items) = prop.get("items") {
            collect(items, &format!("{path}[]"), depth + 1, out);
        }
    }
}

/// `string`, `integer | null`, `array of string`, `string (const "x")`, `ref #/$defs/X`.
fn type_of(schema: &Value) -> String {
    let base = match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" | "),
        _ => {
            if let Some(alts) = ["anyOf", "oneOf"]
                .iter()
                .find_map(|k| schema.get(*k).and_then(Value::as_array))
            {
                alts.iter().map(type_of).collect::<Vec<_>>().join(" | ")
            } else if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
                format!("ref {r}")
            } else if let Some(c) = schema.get("const") {
                format!("const {c}")
            } else {
                "any".to_owned()
            }
        }
    };
    if base == "array"
        && let Some(items) = schema.get("items")
    {
        return format!("array of {}", type_of(items));
    }
    base
}

/// Writes the catalog flat and cold: a header, then every tool.
pub fn render(catalog: &Catalog, header: &[(String, String)], out: &mut String) {
    for (k, v) in header {
        let _ = writeln!(out, "{k}: {v}");
    }
    let _ = writeln!(
        out,
        "tools: {}, about {} tokens (JSON characters / 4), fingerprint {}",
        catalog.tools.len(),
        catalog_tokens(catalog),
        catalog.fingerprint
    );
    for tool in &catalog.tools {
        out.push('\n');
        render_tool(tool, out);
    }
}

/// One tool: its name with its footprint and short fingerprint, its description, its
/// parameters.
fn render_tool(tool: &Tool, out: &mut String) {
    let _ = writeln!(
        out,
        "{}  (~{} tokens, {})",
        tool.name,
        tool_tokens(tool),
        short(&tool_fingerprint(tool))
    );
    out.push_str(&tool_text(tool));
}

/// What the model reads about one tool, without the footprint line: the text `catalog diff`
/// compares.
pub(crate) fn tool_text(tool: &Tool) -> String {
    let mut out = String::new();
    if tool.description.trim().is_empty() {
        out.push_str("  (no description)\n");
    } else {
        for line in tool.description.trim_end().lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    let params = parameters(&tool.input_schema);
    if params.is_empty() {
        out.push_str("  parameters: none\n");
        return out;
    }
    out.push_str("  parameters:\n");
    for p in params {
        let mut facts = vec![p.kind.clone()];
        facts.push(if p.required { "required" } else { "optional" }.to_owned());
        if let Some(values) = &p.enumeration {
            let values: Vec<String> = values.iter().map(compact).collect();
            facts.push(format!("one of {}", values.join(", ")));
        }
        if let Some(d) = &p.default {
            facts.push(format!("default {}", compact(d)));
        }
        let _ = writeln!(out, "    {}: {}", p.path, facts.join(", "));
        if let Some(d) = &p.description {
            for line in d.trim_end().lines() {
                let _ = writeln!(out, "      {line}");
            }
        }
    }
    out
}

fn compact(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(schema: Value) -> Tool {
        Tool {
            name: "book".into(),
            description: "Books a room.\nOnly for members.".into(),
            input_schema: schema,
            ..Default::default()
        }
    }

    #[test]
    fn parameters_are_flattened_with_every_fact() {
        let t = tool(json!({
            "type": "object",
            "properties": {
                "room": {"type": "string", "enum": ["a", "b"], "description": "Which room"},
                "nights": {"type": ["integer", "null"], "default": 1},
                "guests": {"type": "array", "items": {"type": "object",
                    "properties": {"name": {"type": "string"}}, "required": ["name"]}}
            },
            "required": ["room"]
        }));
        assert_eq!(
            tool_text(&t),
            "  Books a room.
  Only for members.
  parameters:
    room: string, required, one of \"a\", \"b\"
      Which room
    nights: integer | null, optional, default 1
    guests: array of object, optional
    guests[].name: string, required
"
        );
    }

    #[test]
    fn footprint_is_json_characters_over_four_rounded_up() {
        let t = Tool {
            name: "a".into(),
            description: String::new(),
            input_schema: json!({}),
            ..Default::default()
        };
        // {"description":"","name":"a","parameters":{}} is 45 characters.
        assert_eq!(tool_tokens(&t), 12);
        assert_eq!(tool_text(&t), "  (no description)\n  parameters: none\n");
    }

    #[test]
    fn fingerprints_follow_what_the_model_reads() {
        let a = tool(json!({"type": "object"}));
        let mut b = a.clone();
        assert_eq!(tool_fingerprint(&a), tool_fingerprint(&b));
        b.description.push('!');
        assert_ne!(tool_fingerprint(&a), tool_fingerprint(&b));
        assert_eq!(short("sha256:0123456789abcdef"), "0123456789ab");
    }
}
