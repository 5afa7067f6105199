//! Tool catalogs: the text a model reads (names, descriptions, input schemas).
//!
//! Owns the file formats: an MCP `tools/list` result (`{"tools": [{name, description,
//! inputSchema}]}` or its bare array) and an OpenAI `tools` array
//! (`[{"type": "function", "function": {name, description, parameters}}]`). Knows nothing of
//! providers' request formats.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::InputError;

/// One tool as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub input_schema: Value,
}

/// The tools offered to the model in one dataset (or one variant of it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Catalog {
    pub tools: Vec<Tool>,
    /// Where the catalog came from (a file path, later a live server).
    pub source: String,
    /// `sha256:` of the canonical JSON of `tools`: identifies exactly what the model read, so
    /// records and recordings from a different catalog can be told apart.
    pub fingerprint: String,
}

impl Catalog {
    pub fn new(tools: Vec<Tool>, source: String) -> Self {
        let fingerprint = fingerprint_tools(&tools);
        Catalog {
            tools,
            source,
            fingerprint,
        }
    }

    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }
}

fn fingerprint_tools(tools: &[Tool]) -> String {
    let canonical =
        crate::json::canonical_json(&serde_json::to_value(tools).unwrap_or(Value::Null));
    let digest = Sha256::digest(canonical.as_bytes());
    format!("sha256:{}", crate::json::hex(&digest))
}

/// Reads a catalog file. Errors name the file, the line and the offending field.
pub fn load_catalog_file(path: &Path) -> Result<Catalog, InputError> {
    let text = crate::input::read_text(path)?;
    parse_catalog(&text, &path.display().to_string())
}

/// Parses catalog text in any of the accepted shapes.
pub fn parse_catalog(text: &str, source: &str) -> Result<Catalog, InputError> {
    let value: Value = serde_json::from_str(text).map_err(|e| InputError::json(source, &e))?;
    let list = match &value {
        Value::Array(items) => items,
        Value::Object(map) => match map.get("tools") {
            Some(Value::Array(items)) => items,
            _ => {
                return Err(InputError::at(
                    source,
                    Some(1),
                    "tools",
                    "expected an array `tools` (an MCP tools/list result) or a top-level array of tools",
                ));
            }
        },
        _ => {
            return Err(InputError::at(
                source,
                Some(1),
                "$",
                "expected an array of tools or an object with `tools`",
            ));
        }
    };
    let mut tools = Vec::with_capacity(list.len());
    let mut seen = BTreeSet::new();
    for (i, item) in list.iter().enumerate() {
        let field = format!("tools[{i}]");
        let tool = parse_tool(item).map_err(|(sub, msg)| {
            let line = item
                .get("name")
                .and_then(Value::as_str)
                .and_then(|n| line_of(text, &format!("\"{n}\"")));
            InputError::at(source, line, &format!("{field}{sub}"), &msg)
        })?;
        if !seen.insert(tool.name.clone()) {
            let line = line_of_nth(text, &format!("\"{}\"", tool.name), 2);
            return Err(InputError::at(
                source,
                line,
                &format!("{field}.name"),
                &format!("duplicate tool name `{}`", tool.name),
            ));
        }
        tools.push(tool);
    }
    if tools.is_empty() {
        return Err(InputError::at(
            source,
            Some(1),
            "tools",
            "the catalog has no tools",
        ));
    }
    Ok(Catalog::new(tools, source.to_owned()))
}

/// Accepts an MCP tool (`name`, `description`, `inputSchema`) or an OpenAI tool
/// (`{"type": "function", "function": {name, description, parameters}}`).
fn parse_tool(item: &Value) -> Result<Tool, (String, String)> {
    let obj = item
        .as_object()
        .ok_or_else(|| (String::new(), "a tool must be an object".to_owned()))?;
    let (inner, prefix, schema_key) = match obj.get("function") {
        Some(Value::Object(f)) => (f, ".function", "parameters"),
        Some(_) => return Err((".function".into(), "`function` must be an object".into())),
        None => (
            obj,
            "",
            if obj.contains_key("input_schema") {
                "input_schema"
            } else {
                "inputSchema"
            },
        ),
    };
    let name = match inner.get("name") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(_) => {
            return Err((
                format!("{prefix}.name"),
                "`name` must be a non-empty string".into(),
            ));
        }
        None => return Err((format!("{prefix}.name"), "missing `name`".into())),
    };
    let description = match inner.get("description") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => {
            return Err((
                format!("{prefix}.description"),
                "`description` must be a string".into(),
            ));
        }
    };
    let input_schema = match inner.get(schema_key) {
        // A tool without parameters: MCP requires inputSchema, but OpenAI allows omitting it.
        None => serde_json::json!({"type": "object", "properties": {}}),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(_) => {
            return Err((
                format!("{prefix}.{schema_key}"),
                "the input schema must be a JSON object".into(),
            ));
        }
    };
    Ok(Tool {
        name,
        description,
        input_schema,
    })
}

/// 1-based line of the first occurrence of `needle` in `text`.
pub fn line_of(text: &str, needle: &str) -> Option<usize> {
    line_of_nth(text, needle, 1)
}

fn line_of_nth(text: &str, needle: &str, nth: usize) -> Option<usize> {
    let (pos, _) = text.match_indices(needle).nth(nth.saturating_sub(1))?;
    Some(text[..pos].bytes().filter(|b| *b == b'\n').count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_mcp_and_openai_shapes_with_same_fingerprint() {
        let mcp = r#"{"tools":[{"name":"a","description":"d","inputSchema":{"type":"object"}}]}"#;
        let oai = r#"[{"type":"function","function":{"name":"a","description":"d","parameters":{"type":"object"}}}]"#;
        let c1 = parse_catalog(mcp, "m.json").unwrap();
        let c2 = parse_catalog(oai, "o.json").unwrap();
        assert_eq!(c1.tools, c2.tools);
        assert_eq!(c1.fingerprint, c2.fingerprint);
        assert!(c1.fingerprint.starts_with("sha256:"));
    }

    #[test]
    fn duplicate_names_are_rejected_with_line() {
        let text =
            "[\n{\"name\":\"a\",\"inputSchema\":{}},\n{\"name\":\"a\",\"inputSchema\":{}}\n]";
        let err = parse_catalog(text, "t.json").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("t.json:3"), "{msg}");
        assert!(msg.contains("duplicate tool name `a`"), "{msg}");
    }

    #[test]
    fn invalid_json_reports_line_and_column() {
        let err = parse_catalog("[\n{\"name\": }\n]", "t.json").unwrap_err();
        assert!(err.to_string().starts_with("t.json:2:"), "{err}");
    }
}
