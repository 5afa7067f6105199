//! Public as a namespace: callers write `catalog::Catalog`, `catalog::lock::Lock`, `catalog::diff::…`.
//!
//! Tool catalogs: the text a model reads (names, descriptions, input schemas).
//!
//! Owns the file formats: an MCP `tools/list` result (`{"tools": [{name, description,
//! inputSchema}]}`, its bare array, or the whole JSON-RPC response around it), an OpenAI
//! `tools` array (`[{"type": "function", "function": {name, description, parameters}}]`, or
//! the Responses API's flat `{"type": "function", name, description, parameters}`) and an
//! Anthropic `tools` array (`[{name, description, input_schema}]`), detected tool by tool.
//! Live servers are [`mcp`]; the flat text a model reads is [`view`]; differences between two
//! catalogs are [`diff`]. Knows nothing of providers' request formats.

pub mod diff;
pub mod lock;
pub mod source;
pub mod view;

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::InputError;

/// One tool as the model sees it, with the strings a client shows of it beside.
///
/// `title`, `annotations.title` and `outputSchema` (MCP 2025-06-18) are kept as the author
/// wrote them so lint and the judge read them too; no provider adapter sends them, so the
/// model reads what it always read. Absent, they are not serialized: the fingerprint of a
/// tool without them (and every lock written before) is unchanged.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    /// The display name a client shows instead of `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default)]
    pub description: String,
    pub input_schema: Value,
    /// `annotations`, of which only the text is kept (the hints are not text a person or
    /// model reads); `None` when the tool has no `annotations.title`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// The schema of the tool's structured result; its descriptions and titles are text a
    /// client may show or pass on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
}

/// The text of a tool's `annotations`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Annotations {
    /// `annotations.title`, the display name older clients read.
    pub title: String,
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

    /// Its tools by name: for looking many names up, where [`Self::get`] in a loop would be
    /// quadratic in the catalog's size.
    pub fn by_name(&self) -> std::collections::HashMap<&str, &Tool> {
        self.tools.iter().map(|t| (t.name.as_str(), t)).collect()
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
    parse_catalog_document(text, source).map(|d| d.catalog)
}

/// A catalog file and what it says about the server it was listed from (a file written by
/// `toolscore catalog --json` from a live server carries `serverInfo` and `protocolVersion`).
#[derive(Debug, Clone)]
pub struct CatalogDocument {
    pub catalog: Catalog,
    pub server: Option<source::ServerIdentity>,
    /// The shape of the first tool: `MCP`, `OpenAI` or `Anthropic`.
    pub format: &'static str,
}

/// Reads a catalog file with its server identity, if it has one.
pub fn load_catalog_document(path: &Path) -> Result<CatalogDocument, InputError> {
    let text = crate::input::read_text(path)?;
    parse_catalog_document(&text, &path.display().to_string())
}

/// Parses catalog text in any of the accepted shapes, keeping the server identity.
fn parse_catalog_document(text: &str, source: &str) -> Result<CatalogDocument, InputError> {
    let value: Value = serde_json::from_str(text).map_err(|e| InputError::json(source, &e))?;
    // A saved JSON-RPC response: the tools/list result is its `result`.
    let value = match value {
        Value::Object(mut map) if map.contains_key("jsonrpc") && map.contains_key("result") => {
            map.remove("result").unwrap_or(Value::Null)
        }
        other => other,
    };
    let server = value.get("serverInfo").map(|info| source::ServerIdentity {
        name: str_at(info, "name"),
        version: str_at(info, "version"),
        protocol_version: str_at(&value, "protocolVersion"),
    });
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
    let format = list.first().map_or("MCP", format_of);
    Ok(CatalogDocument {
        catalog: Catalog::new(tools, source.to_owned()),
        server,
        format,
    })
}

fn str_at(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn format_of(tool: &Value) -> &'static str {
    if tool.get("function").is_some() || tool.get("parameters").is_some() {
        "OpenAI"
    } else if tool.get("input_schema").is_some() {
        "Anthropic"
    } else {
        "MCP"
    }
}

/// The catalog as an MCP `tools/list` result (the tools.json format), with the server's
/// identity when it came from one. `catalog --json` writes it; every loader reads it back.
pub fn to_tools_json(catalog: &Catalog, server: Option<&source::ServerIdentity>) -> Value {
    let tools: Vec<Value> = catalog
        .tools
        .iter()
        .map(|t| {
            let mut tool = serde_json::json!({
                "name": t.name,
                "description": t.description,
                "inputSchema": t.input_schema,
            });
            if let Value::Object(map) = &mut tool {
                if let Some(title) = &t.title {
                    map.insert("title".into(), Value::String(title.clone()));
                }
                if let Some(a) = &t.annotations {
                    map.insert("annotations".into(), serde_json::json!({"title": a.title}));
                }
                if let Some(schema) = &t.output_schema {
                    map.insert("outputSchema".into(), schema.clone());
                }
            }
            tool
        })
        .collect();
    let mut doc = serde_json::Map::new();
    if let Some(s) = server {
        doc.insert(
            "serverInfo".into(),
            serde_json::json!({"name": s.name, "version": s.version}),
        );
        doc.insert(
            "protocolVersion".into(),
            Value::String(s.protocol_version.clone()),
        );
    }
    doc.insert("tools".into(), Value::Array(tools));
    Value::Object(doc)
}

/// Accepts an MCP tool (`name`, `description`, `inputSchema`) or an OpenAI tool
/// (`{"type": "function", "function": {name, description, parameters}}`).
pub fn parse_tool(item: &Value) -> Result<Tool, (String, String)> {
    let obj = item
        .as_object()
        .ok_or_else(|| (String::new(), "a tool must be an object".to_owned()))?;
    let (inner, prefix, schema_key) = match obj.get("function") {
        Some(Value::Object(f)) => (f, ".function", "parameters"),
        Some(_) => return Err((".function".into(), "`function` must be an object".into())),
        // The Responses API's flat function tool.
        None if obj.get("type").and_then(Value::as_str) == Some("function") => {
            (obj, "", "parameters")
        }
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
    let text_at = |v: Option<&Value>, field: String| match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err((field, "must be a string".to_owned())),
    };
    let title = text_at(inner.get("title"), format!("{prefix}.title"))
        .map_err(|(f, m)| (f, format!("`title` {m}")))?;
    let annotations = match inner.get("annotations") {
        None | Some(Value::Null) => None,
        Some(Value::Object(a)) => text_at(a.get("title"), format!("{prefix}.annotations.title"))
            .map_err(|(f, m)| (f, format!("`annotations.title` {m}")))?
            .map(|title| Annotations { title }),
        Some(_) => {
            return Err((
                format!("{prefix}.annotations"),
                "`annotations` must be an object".into(),
            ));
        }
    };
    let output_schema = match inner.get("outputSchema") {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(v.clone()),
        Some(_) => {
            return Err((
                format!("{prefix}.outputSchema"),
                "the output schema must be a JSON object".into(),
            ));
        }
    };
    Ok(Tool {
        name,
        title,
        description,
        input_schema,
        annotations,
        output_schema,
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
    fn detects_every_shape_and_reads_the_server_identity_back() {
        let schema = r#"{"type":"object","properties":{"q":{"type":"string"}}}"#;
        let shapes = [
            (
                format!(
                    r#"{{"jsonrpc":"2.0","id":2,"result":{{"tools":[{{"name":"a","description":"d","inputSchema":{schema}}}]}}}}"#
                ),
                "MCP",
            ),
            (
                format!(
                    r#"[{{"type":"function","name":"a","description":"d","parameters":{schema}}}]"#
                ),
                "OpenAI",
            ),
            (
                format!(r#"[{{"name":"a","description":"d","input_schema":{schema}}}]"#),
                "Anthropic",
            ),
        ];
        let fingerprints: Vec<String> = shapes
            .iter()
            .map(|(text, format)| {
                let doc = parse_catalog_document(text, "t.json").unwrap();
                assert_eq!(doc.format, *format);
                assert!(doc.server.is_none());
                doc.catalog.fingerprint
            })
            .collect();
        assert!(fingerprints.iter().all(|f| *f == fingerprints[0]));

        let catalog = parse_catalog(&shapes[0].0, "t.json").unwrap();
        let server = source::ServerIdentity {
            name: "srv".into(),
            version: "1.2.3".into(),
            protocol_version: "2025-06-18".into(),
        };
        let text = serde_json::to_string(&to_tools_json(&catalog, Some(&server))).unwrap();
        let back = parse_catalog_document(&text, "out.json").unwrap();
        assert_eq!(back.server, Some(server));
        assert_eq!(back.catalog.fingerprint, catalog.fingerprint);
    }

    #[test]
    fn titles_and_the_output_schema_are_kept_and_absent_ones_leave_the_fingerprint_alone() {
        let plain = r#"{"tools":[{"name":"a","description":"d","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}"#;
        let titled = r#"{"tools":[{"name":"a","title":"A","description":"d","inputSchema":{"type":"object"},"annotations":{"title":"Ann","readOnlyHint":true},"outputSchema":{"type":"object"}}]}"#;
        let p = parse_catalog(plain, "p.json").unwrap();
        // The fingerprint of a tool without the new fields is what it always was.
        let before = fingerprint_of_words(
            r#"[{"description":"d","input_schema":{"type":"object"},"name":"a"}]"#,
        );
        assert_eq!(p.fingerprint, before);
        assert_eq!(p.tools[0].annotations, None);
        let t = parse_catalog(titled, "t.json").unwrap();
        assert_eq!(t.tools[0].title.as_deref(), Some("A"));
        assert_eq!(
            t.tools[0].annotations.as_ref().map(|a| a.title.as_str()),
            Some("Ann")
        );
        assert!(t.tools[0].output_schema.is_some());
        assert_ne!(t.fingerprint, p.fingerprint);
        // Written back as the author wrote them, and read back the same.
        let text = serde_json::to_string(&to_tools_json(&t, None)).unwrap();
        assert_eq!(parse_catalog(&text, "out.json").unwrap().tools, t.tools);
        let bad = r#"[{"name":"a","title":3,"inputSchema":{}}]"#;
        let err = parse_catalog(bad, "b.json").unwrap_err().to_string();
        assert!(
            err.contains("tools[0].title") && err.contains("`title` must be a string"),
            "{err}"
        );
        let bad = r#"[{"name":"a","annotations":{"title":[]},"inputSchema":{}}]"#;
        let err = parse_catalog(bad, "b.json").unwrap_err().to_string();
        assert!(err.contains("tools[0].annotations.title"), "{err}");
    }

    fn fingerprint_of_words(canonical: &str) -> String {
        format!(
            "sha256:{}",
            crate::json::hex(&Sha256::digest(canonical.as_bytes()))
        )
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
