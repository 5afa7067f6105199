//! Catalog variants: `DIR/variants/<name>.json` overlays the dataset's catalog so two wordings
//! of the same tools can be run side by side on the same cases (`--variant base --variant
//! terse`) and compared case by case.
//!
//! An overlay edits tools by name; every tool it does not mention is shown as in the base
//! catalog, so a variant states only what it changes:
//!
//! ```json
//! {
//!   "note": "one-line descriptions",
//!   "tools": {
//!     "get_job_status": {
//!       "description": "Progress of an async export job.",
//!       "properties": {"job_id": "The job_xxxxxx id export_invoices returned."}
//!     },
//!     "get_server_status": {"rename": "billing_service_health"}
//!   }
//! }
//! ```
//!
//! A rename carries the fixtures along: expectations and earlier tool calls in a case's history
//! use the new name under that variant, so the same case is asked the same question in every
//! arm and the arms pair by case id.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use toolscore_core::BASE_VARIANT;
use toolscore_core::InputError;
use toolscore_core::Message;
use toolscore_core::catalog::{Catalog, Tool, line_of};
use toolscore_score::{Expectation, ToolPattern, ToolValidators};

/// One catalog a dataset can be shown: the base, or an overlay of it.
#[derive(Clone)]
pub struct CatalogVariant {
    pub name: String,
    /// The overlay file; `None` for the base catalog.
    pub file: Option<String>,
    /// The overlay's `note`: what this wording tries.
    pub note: Option<String>,
    pub catalog: Arc<Catalog>,
    pub validators: Arc<ToolValidators>,
    /// Base tool name → name under this variant, for the tools the overlay renames.
    pub renames: BTreeMap<String, String>,
}

impl CatalogVariant {
    pub fn base(catalog: Arc<Catalog>, validators: Arc<ToolValidators>) -> Self {
        CatalogVariant {
            name: BASE_VARIANT.to_owned(),
            file: None,
            note: None,
            catalog,
            validators,
            renames: BTreeMap::new(),
        }
    }

    /// The tool's name under this variant.
    pub fn tool_name<'a>(&'a self, base: &'a str) -> &'a str {
        self.renames.get(base).map_or(base, String::as_str)
    }

    /// A fixture's expectation as this variant names the tools.
    pub fn expectation(&self, expect: &Expectation) -> Expectation {
        if self.renames.is_empty() {
            return expect.clone();
        }
        match expect {
            Expectation::NoCall => Expectation::NoCall,
            // BFCL's checker compares against BFCL's own names: a rename cannot follow.
            Expectation::Bfcl(b) => Expectation::Bfcl(std::sync::Arc::clone(b)),
            Expectation::Calls { calls, parallel } => Expectation::Calls {
                calls: calls
                    .iter()
                    .map(|c| {
                        let mut c = c.clone();
                        match &mut c.family {
                            None => c.tool = self.tool_name(&c.tool).to_owned(),
                            // A family follows the renames of its members; a pattern is kept
                            // (it names tools by shape, whatever they are called).
                            Some(ToolPattern::AnyOf(names)) => {
                                for n in names.iter_mut() {
                                    *n = self.tool_name(n).to_owned();
                                }
                                c.tool = names.join("|");
                            }
                            Some(_) => {}
                        }
                        c
                    })
                    .collect(),
                parallel: *parallel,
            },
        }
    }

    /// A fixture's conversation as this variant names the tools (earlier calls in the history).
    pub fn messages(&self, messages: &[Message]) -> Vec<Message> {
        let mut out = messages.to_vec();
        if self.renames.is_empty() {
            return out;
        }
        for m in &mut out {
            if let Message::Assistant { tool_calls, .. } = m {
                for call in tool_calls {
                    if let Some(new) = self.renames.get(&call.name) {
                        call.name = new.clone();
                    }
                }
            }
        }
        out
    }
}

/// Valid variant names: they name arms in records and reports.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        || name.starts_with('.')
    {
        return Err(format!(
            "variant name `{name}`: use 1 to 64 letters, digits, '-', '_' or '.'"
        ));
    }
    Ok(())
}

/// Loads every `DIR/variants/*.json` of a dataset, in name order, each checked against the
/// base catalog and compiled. A dataset without the folder has only its base.
pub(crate) fn load_variants(dir: &Path, base: &Catalog) -> Result<Vec<CatalogVariant>, InputError> {
    let folder = dir.join("variants");
    if !folder.is_dir() {
        return Ok(Vec::new());
    }
    let entries = std::fs::read_dir(&folder).map_err(|e| {
        InputError::at(
            &folder.display().to_string(),
            None,
            "",
            &format!("cannot list variants: {e}"),
        )
    })?;
    let mut files: Vec<std::path::PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut out = Vec::with_capacity(files.len());
    for path in files {
        out.push(load_variant_file(&path, base)?);
    }
    Ok(out)
}

/// One overlay file (`NAME.json`), named by its file, checked against the base catalog and
/// compiled.
pub(crate) fn load_variant_file(path: &Path, base: &Catalog) -> Result<CatalogVariant, InputError> {
    let file = path.display().to_string();
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    check_name(&name).map_err(|m| InputError::at(&file, None, "", &m))?;
    if name == BASE_VARIANT {
        return Err(InputError::at(
            &file,
            None,
            "",
            "`base` is the dataset's own catalog (tools.json); name the overlay otherwise",
        ));
    }
    let text = toolscore_core::read_text(path)?;
    let (catalog, note, renames) = apply_overlay(base, &text, &file)?;
    let validators = ToolValidators::compile(&catalog).map_err(|(tool, message)| {
        InputError::at(
            &file,
            line_of(&text, "\"input_schema\""),
            &format!("tools.{tool}.input_schema"),
            &format!("tool `{tool}` has an invalid JSON Schema: {message}"),
        )
    })?;
    Ok(CatalogVariant {
        name,
        file: Some(file),
        note,
        catalog: Arc::new(catalog),
        validators: Arc::new(validators),
        renames,
    })
}

/// An overlay applied: the catalog it produces, its note, and its renames (base → new name).
type Overlay = (Catalog, Option<String>, BTreeMap<String, String>);

/// Applies an overlay's text to the base catalog. Errors name the file, the line and the
/// field.
pub fn apply_overlay(base: &Catalog, text: &str, file: &str) -> Result<Overlay, InputError> {
    let value: Value = serde_json::from_str(text).map_err(|e| InputError::json(file, &e))?;
    let loc = OverlayFile { text, file };
    let Value::Object(top) = &value else {
        return Err(loc.at(
            "$",
            None,
            "an overlay is an object: {\"note\": \"...\", \"tools\": {\"TOOL\": {...}}}",
        ));
    };
    for key in top.keys() {
        if key != "note" && key != "tools" {
            return Err(loc.at(
                key,
                Some(key),
                &format!("unknown field `{key}` (expected `note` and `tools`)"),
            ));
        }
    }
    let note = match top.get("note") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(loc.at("note", Some("note"), "`note` must be a string")),
    };
    let edits = match top.get("tools") {
        Some(Value::Object(edits)) if !edits.is_empty() => edits,
        _ => {
            return Err(loc.at(
                "tools",
                Some("tools"),
                "`tools` must be an object naming at least one tool to change",
            ));
        }
    };
    let mut tools: Vec<Tool> = base.tools.clone();
    let mut renames = BTreeMap::new();
    for (tool_name, edit) in edits {
        let field = format!("tools.{tool_name}");
        let Some(tool) = tools.iter_mut().find(|t| &t.name == tool_name) else {
            let known: Vec<&str> = base.tools.iter().map(|t| t.name.as_str()).collect();
            return Err(loc.at(
                &field,
                Some(tool_name),
                &format!(
                    "no tool `{tool_name}` in the base catalog (it has: {})",
                    known.join(", ")
                ),
            ));
        };
        apply_edit(tool, tool_name, edit, &mut renames, &loc)?;
    }
    for tool in &mut tools {
        if let Some(new) = renames.get(&tool.name) {
            tool.name = new.clone();
        }
    }
    let mut seen = BTreeSet::new();
    for tool in &tools {
        if !seen.insert(tool.name.as_str()) {
            return Err(loc.at(
                "tools",
                Some(&tool.name),
                &format!(
                    "after the renames two tools are named `{}`; tool names must stay unique",
                    tool.name
                ),
            ));
        }
    }
    Ok((Catalog::new(tools, file.to_owned()), note, renames))
}

/// Where an overlay's errors point: the line of a quoted key, else the first line.
struct OverlayFile<'a> {
    text: &'a str,
    file: &'a str,
}

impl OverlayFile<'_> {
    fn at(&self, field: &str, needle: Option<&str>, msg: &str) -> InputError {
        let line = needle.and_then(|n| line_of(self.text, &format!("\"{n}\"")));
        InputError::at(self.file, line.or(Some(1)), field, msg)
    }
}

/// One tool's edit: its schema replaced first (so property descriptions apply to the new
/// one), then its description, its properties' descriptions and its new name.
fn apply_edit(
    tool: &mut Tool,
    tool_name: &str,
    edit: &Value,
    renames: &mut BTreeMap<String, String>,
    loc: &OverlayFile<'_>,
) -> Result<(), InputError> {
    let field = format!("tools.{tool_name}");
    let Value::Object(edit) = edit else {
        return Err(loc.at(
            &field,
            Some(tool_name),
            "a tool's edit is an object with `description`, `rename`, `properties` or `input_schema`",
        ));
    };
    if edit.is_empty() {
        return Err(loc.at(&field, Some(tool_name), "the edit changes nothing"));
    }
    // The schema first, so property descriptions apply to the replaced schema.
    if let Some(schema) = edit.get("input_schema") {
        if !schema.is_object() {
            return Err(loc.at(
                &format!("{field}.input_schema"),
                Some("input_schema"),
                "`input_schema` must be a JSON Schema object",
            ));
        }
        tool.input_schema = schema.clone();
    }
    for (key, v) in edit {
        let sub = format!("{field}.{key}");
        match (key.as_str(), v) {
            ("input_schema", _) => {}
            ("description", Value::String(s)) => tool.description = s.clone(),
            ("rename", Value::String(s)) => {
                check_tool_name(s).map_err(|m| loc.at(&sub, Some(s), &m))?;
                renames.insert(tool_name.to_owned(), s.clone());
            }
            ("properties", Value::Object(props)) => {
                for (path, desc) in props {
                    let Value::String(desc) = desc else {
                        return Err(loc.at(
                            &format!("{sub}.{path}"),
                            Some(path),
                            "a property's new description must be a string",
                        ));
                    };
                    set_property_description(&mut tool.input_schema, path, desc)
                        .map_err(|m| loc.at(&format!("{sub}.{path}"), Some(path), &m))?;
                }
            }
            ("description" | "rename", _) => {
                return Err(loc.at(&sub, Some(key), &format!("`{key}` must be a string")));
            }
            ("properties", _) => {
                return Err(loc.at(
                    &sub,
                    Some(key),
                    "`properties` maps a property path (`lines.sku`) to its new description",
                ));
            }
            _ => {
                return Err(loc.at(
                    &sub,
                    Some(key),
                    &format!(
                        "unknown edit `{key}` (expected description, rename, properties, input_schema)"
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn check_tool_name(name: &str) -> Result<(), String> {
    // The strictest provider rule (OpenAI, Anthropic, Gemini): 1-64 of [A-Za-z0-9_-].
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            "new name `{name}`: providers accept 1 to 64 letters, digits, '_' or '-'"
        ));
    }
    Ok(())
}

/// Sets the description of the property at a dotted path (`lines.sku`), walking `properties`
/// of objects and `items` of arrays.
fn set_property_description(schema: &mut Value, path: &str, desc: &str) -> Result<(), String> {
    let mut node = schema;
    for part in path.split('.') {
        if node.get("properties").is_none() && node.get("items").is_some() {
            node = &mut node["items"];
        }
        node = node
            .get_mut("properties")
            .and_then(|p| p.get_mut(part))
            .filter(|p| p.is_object())
            .ok_or_else(|| format!("the schema has no property `{path}` (at `{part}`)"))?;
    }
    if let Value::Object(map) = node {
        map.insert("description".to_owned(), Value::String(desc.to_owned()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolscore_core::catalog::parse_catalog;

    fn base() -> Catalog {
        parse_catalog(
            r#"{"tools": [
              {"name": "get_job_status", "description": "Job progress.",
               "inputSchema": {"type": "object", "properties": {"job_id": {"type": "string"}}}},
              {"name": "create_quote", "description": "Make a quote.",
               "inputSchema": {"type": "object", "properties": {"lines": {"type": "array",
                 "items": {"type": "object", "properties": {"sku": {"type": "string"}}}}}}}
            ]}"#,
            "tools.json",
        )
        .unwrap()
    }

    #[test]
    fn an_overlay_changes_only_what_it_names() {
        let b = base();
        let (c, note, renames) = apply_overlay(
            &b,
            r#"{"note": "terse", "tools": {
                 "get_job_status": {"description": "Async job.", "rename": "job_status",
                                    "properties": {"job_id": "The job id."}},
                 "create_quote": {"properties": {"lines.sku": "A SKU-0000."}}}}"#,
            "v.json",
        )
        .unwrap();
        assert_eq!(note.as_deref(), Some("terse"));
        assert_eq!(renames["get_job_status"], "job_status");
        let job = c.get("job_status").unwrap();
        assert_eq!(job.description, "Async job.");
        assert_eq!(
            job.input_schema["properties"]["job_id"]["description"],
            "The job id."
        );
        let quote = c.get("create_quote").unwrap();
        assert_eq!(quote.description, "Make a quote.");
        assert_eq!(
            quote.input_schema["properties"]["lines"]["items"]["properties"]["sku"]["description"],
            "A SKU-0000."
        );
        assert_ne!(c.fingerprint, b.fingerprint);
        assert!(c.get("get_job_status").is_none());
    }

    #[test]
    fn overlay_errors_name_the_line_and_field() {
        let b = base();
        let cases = [
            (
                "{\"tools\": {\n \"nope\": {\"description\": \"x\"}}}",
                "v.json:2",
                "no tool `nope`",
            ),
            (
                "{\"tools\": {\"create_quote\": {\n\"properties\": {\"lines.qty\": \"x\"}}}}",
                "tools.create_quote.properties.lines.qty",
                "no property `lines.qty`",
            ),
            (
                "{\"tools\": {\"create_quote\": {\"rename\": \"get_job_status\"}}}",
                "tools",
                "two tools are named `get_job_status`",
            ),
            (
                "{\"tools\": {\"create_quote\": {\"colour\": \"red\"}}}",
                "tools.create_quote.colour",
                "unknown edit",
            ),
            ("{\"tools\": {}}", "tools", "at least one tool"),
            ("[1]", "$", "an overlay is an object"),
            (
                "{\"tools\": {\"create_quote\": {\"rename\": \"has space\"}}}",
                "rename",
                "letters, digits",
            ),
        ];
        for (text, at, msg) in cases {
            let e = apply_overlay(&b, text, "v.json").unwrap_err().to_string();
            assert!(e.contains(at) && e.contains(msg), "{text}: {e}");
        }
    }

    #[test]
    fn renames_follow_into_expectations_and_history() {
        let b = base();
        let (c, _, renames) = apply_overlay(
            &b,
            r#"{"tools": {"get_job_status": {"rename": "job_status"}}}"#,
            "v.json",
        )
        .unwrap();
        let validators = ToolValidators::compile(&c).unwrap();
        let v = CatalogVariant {
            name: "renamed".into(),
            file: Some("v.json".into()),
            note: None,
            catalog: Arc::new(c),
            validators: Arc::new(validators),
            renames,
        };
        let expect = Expectation::Calls {
            calls: vec![toolscore_score::ExpectedCall {
                tool: "get_job_status".into(),
                args: None,
                matchers: BTreeMap::new(),
                family: None,
            }],
            parallel: false,
        };
        assert_eq!(v.expectation(&expect).tool_label(), "job_status");
        let history = vec![Message::Assistant {
            content: None,
            tool_calls: vec![toolscore_core::ToolCall {
                id: Some("c1".into()),
                name: "get_job_status".into(),
                arguments: serde_json::json!({}),
                unparsed_arguments: None,
                thought_signature: None,
            }],
        }];
        match &v.messages(&history)[0] {
            Message::Assistant { tool_calls, .. } => assert_eq!(tool_calls[0].name, "job_status"),
            other => panic!("{other:?}"),
        }
    }
}
