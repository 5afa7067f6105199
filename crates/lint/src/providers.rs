//! Provider compatibility: one finding per construct and provider, for what OpenAI strict
//! mode, Gemini's `parameters` and the Anthropic API reject (reference: providers.md §9).

use crate::RuleId;
use serde_json::{Map, Value};

use super::schema::walk;
use super::{Raw, child_path};
use toolscore_core::catalog::{Catalog, Tool};

const OPENAI: RuleId = RuleId::ProviderOpenaiStrict;
const GEMINI: RuleId = RuleId::ProviderGemini;
const ANTHROPIC: RuleId = RuleId::ProviderAnthropic;

/// String formats OpenAI strict mode accepts.
const OPENAI_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];
/// Formats Anthropic strict tool use keeps (OpenAI's plus `uri`).
const ANTHROPIC_STRICT_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "uri",
    "ipv4",
    "ipv6",
    "uuid",
];
/// Keywords OpenAI strict mode does not support.
const OPENAI_UNSUPPORTED: &[&str] = &[
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "oneOf",
];
/// Fields of Gemini's `Schema` (the OpenAPI 3.0 subset `parameters` takes); any other key is a
/// 400 "Unknown name". `$ref`/`$defs` are left out of the check: their support is
/// version-dependent (the SDK inlines them).
const GEMINI_FIELDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
    "$ref",
    "$defs",
];

pub(crate) fn check(catalog: &Catalog, out: &mut Vec<Raw>) {
    for tool in &catalog.tools {
        openai(tool, out);
        gemini(tool, out);
        anthropic(tool, out);
    }
    if catalog.tools.len() > 128 {
        out.push(Raw::new(
            GEMINI,
            None,
            "",
            format!(
                "{} tools; Gemini takes at most 128 function declarations per request",
                catalog.tools.len()
            ),
            "Split the catalog or send only the tools a request needs.",
        ));
    }
}

fn is_object_schema(node: &Map<String, Value>) -> bool {
    match node.get("type") {
        Some(Value::String(s)) => s == "object",
        Some(Value::Array(a)) => a.iter().any(|t| t == "object"),
        None => node.contains_key("properties"),
        _ => false,
    }
}

fn openai(tool: &Tool, out: &mut Vec<Raw>) {
    let t = Some(tool.name.as_str());
    if !plain_name(&tool.name) {
        out.push(Raw::new(
            OPENAI,
            t,
            "name",
            format!(
                "OpenAI takes names of 1-64 characters from a-zA-Z0-9_- ; `{}` is rejected",
                tool.name
            ),
            "Rename it (dots and other characters become `_`).",
        ));
    }
    let schema = &tool.input_schema;
    if schema.get("anyOf").is_some() {
        out.push(Raw::new(
            OPENAI,
            t,
            "inputSchema.anyOf",
            "OpenAI strict: the root must be an object, not `anyOf`",
            "Make the root an object and move the alternatives into a property.",
        ));
    }
    if schema
        .as_object()
        .is_some_and(|m| !m.contains_key("properties"))
    {
        out.push(Raw::new(
            OPENAI,
            t,
            "inputSchema",
            "OpenAI strict: a tool with no parameters still needs `\"properties\": {}` (\"object schema missing properties\")",
            "Send `{\"type\":\"object\",\"properties\":{},\"required\":[],\"additionalProperties\":false}`.",
        ));
    }
    let mut depth_reported = false;
    walk(schema, "inputSchema", &mut |node, path| {
        openai_node(t, node, path, &mut depth_reported, out);
    });
}

/// OpenAI strict mode's rules for one node of a schema; the depth rule is reported once.
// Long: OpenAI strict mode's per-node rules, one after another as its documentation lists them.
fn openai_node(
    t: Option<&str>,
    node: &Map<String, Value>,
    path: &str,
    depth_reported: &mut bool,
    out: &mut Vec<Raw>,
) {
    if is_object_schema(node) {
        if node.get("additionalProperties") != Some(&Value::Bool(false)) {
            out.push(Raw::new(
                OPENAI,
                t,
                path.to_owned(),
                "OpenAI strict: every object needs `\"additionalProperties\": false`",
                "Add `\"additionalProperties\": false` to this object.",
            ));
        }
        if let Some(Value::Object(props)) = node.get("properties") {
            let required: Vec<&str> = node
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for name in props.keys() {
                if !required.contains(&name.as_str()) {
                    out.push(Raw::new(
                        OPENAI,
                        t,
                        child_path(&child_path(path, "properties"), name),
                        format!("OpenAI strict: every property must be in `required`; `{name}` is optional"),
                        format!("List `{name}` in `required` and make it nullable (`\"type\": [T, \"null\"]`)."),
                    ));
                }
            }
        }
    }
    for k in OPENAI_UNSUPPORTED {
        if node.contains_key(*k) {
            out.push(Raw::new(
                OPENAI,
                t,
                child_path(path, k),
                format!(
                    "OpenAI strict does not support `{k}`{}",
                    if *k == "oneOf" { " (only `anyOf`)" } else { "" }
                ),
                if *k == "oneOf" {
                    "Use `anyOf`."
                } else {
                    "Express it without this keyword, or validate it in the server."
                },
            ));
        }
    }
    if let Some(Value::String(f)) = node.get("format")
        && !OPENAI_FORMATS.contains(&f.as_str())
    {
        out.push(Raw::new(
            OPENAI,
            t,
            child_path(path, "format"),
            format!(
                "OpenAI strict does not support `format: {f}` (only {})",
                OPENAI_FORMATS.join(", ")
            ),
            "Drop the format or express it with `pattern`.",
        ));
    }
    if let Some(Value::Array(e)) = node.get("enum")
        && e.len() > 1000
    {
        out.push(Raw::new(
            OPENAI,
            t,
            child_path(path, "enum"),
            format!(
                "OpenAI strict allows at most 1000 enum values; this has {}",
                e.len()
            ),
            "Shorten the enum or take a free string validated by the server.",
        ));
    }
    let depth = path.matches(".properties.").count() + path.matches(".items").count();
    if depth > 10 && !*depth_reported {
        *depth_reported = true;
        out.push(Raw::new(
            OPENAI,
            t,
            path.to_owned(),
            "OpenAI strict allows 10 levels of nesting",
            "Flatten the schema.",
        ));
    }
}

/// A name of 1 to 64 characters from a-zA-Z0-9_-, as OpenAI and Anthropic take them.
fn plain_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn gemini(tool: &Tool, out: &mut Vec<Raw>) {
    let t = Some(tool.name.as_str());
    let name_ok = tool
        .name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && tool.name.len() <= 128
        && tool
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'));
    if !name_ok {
        out.push(Raw::new(
            GEMINI,
            t,
            "name",
            format!("Gemini names start with a letter or `_` and hold a-zA-Z0-9_.:- (at most 128); `{}` does not", tool.name),
            "Rename it.",
        ));
    }
    walk(&tool.input_schema, "inputSchema", &mut |node, path| {
        for (k, v) in node {
            let kpath = child_path(path, k);
            match k.as_str() {
                "type" if v.is_array() => out.push(Raw::new(
                    GEMINI,
                    t,
                    kpath,
                    "Gemini `parameters` rejects type arrays (\"Proto field is not repeating\")",
                    "Use a single type with `\"nullable\": true`.",
                )),
                "enum" => {
                    if let Value::Array(values) = v
                        && values.iter().any(|x| !x.is_string())
                    {
                        out.push(Raw::new(
                            GEMINI,
                            t,
                            kpath,
                            "Gemini takes string enum values only",
                            "Use string values (and parse them in the server), or drop the enum.",
                        ));
                    }
                }
                _ if !GEMINI_FIELDS.contains(&k.as_str()) => {
                    let hint = match k.as_str() {
                        "$schema" => "Strip `$schema` before sending to Gemini.",
                        "additionalProperties" => {
                            "Strip it for Gemini `parameters`, or send `parametersJsonSchema`."
                        }
                        "const" => "Use a one-value `enum`.",
                        "exclusiveMinimum" | "exclusiveMaximum" => "Use `minimum`/`maximum`.",
                        "oneOf" => "Use `anyOf`.",
                        _ => {
                            "Remove the key for Gemini, or send the schema as `parametersJsonSchema`."
                        }
                    };
                    out.push(Raw::new(
                        GEMINI,
                        t,
                        kpath,
                        format!("Gemini `parameters` rejects the key `{k}` (400 Unknown name)"),
                        hint,
                    ));
                }
                _ => {}
            }
        }
    });
}

fn anthropic(tool: &Tool, out: &mut Vec<Raw>) {
    let t = Some(tool.name.as_str());
    if !plain_name(&tool.name) {
        out.push(Raw::new(
            ANTHROPIC,
            t,
            "name",
            format!(
                "Anthropic names must match ^[a-zA-Z0-9_-]{{1,64}}$; `{}` is rejected",
                tool.name
            ),
            "Rename it (dots become `_`).",
        ));
    }
    if tool.input_schema.get("type").and_then(Value::as_str) != Some("object") {
        out.push(Raw::new(
            ANTHROPIC,
            t,
            "inputSchema.type",
            "Anthropic requires `input_schema.type` to be \"object\"",
            "Set the root type to object.",
        ));
    }
    walk(&tool.input_schema, "inputSchema", &mut |node, path| {
        if let Some(Value::String(f)) = node.get("format")
            && !ANTHROPIC_STRICT_FORMATS.contains(&f.as_str())
        {
            out.push(Raw::new(
                ANTHROPIC,
                t,
                child_path(path, "format"),
                format!(
                    "Anthropic strict tool use keeps only formats {}; `{f}` is dropped",
                    ANTHROPIC_STRICT_FORMATS.join(", ")
                ),
                "Express it with `pattern`, or validate it in the server.",
            ));
        }
        if let Some(n) = node.get("minItems").and_then(Value::as_u64)
            && n > 1
        {
            out.push(Raw::new(
                ANTHROPIC,
                t,
                child_path(path, "minItems"),
                format!("Anthropic strict tool use allows `minItems` 0 or 1 only; this is {n}"),
                "Use 0 or 1 and check the count in the server.",
            ));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use serde_json::json;

    fn rules_for(schema: serde_json::Value, rule: RuleId) -> Vec<String> {
        let c = catalog(vec![tool(
            "get_invoice",
            "Look up one invoice by its id and return its lines and totals.",
            schema,
        )]);
        findings_of(&c, rule)
            .into_iter()
            .map(|f| format!("{} {}", f.path, f.message))
            .collect()
    }

    #[test]
    fn openai_strict_positive_and_negative() {
        let loose = json!({"type": "object", "properties": {
            "a": {"type": "string", "description": "First thing.", "format": "uri"},
            "b": {"oneOf": [{"type": "string"}, {"type": "integer"}], "description": "Second thing."}
        }, "required": ["a"]});
        let f = rules_for(loose, RuleId::ProviderOpenaiStrict);
        let joined = f.join("\n");
        assert!(
            joined.contains("inputSchema additionalProperties")
                || joined.contains("inputSchema OpenAI strict: every object"),
            "{joined}"
        );
        assert!(joined.contains("`b` is optional"), "{joined}");
        assert!(joined.contains("`oneOf`"), "{joined}");
        assert!(joined.contains("format: uri"), "{joined}");
        let strict = json!({"type": "object", "properties": {"a": {"type": ["string", "null"], "description": "First thing.", "format": "date"}}, "required": ["a"], "additionalProperties": false});
        assert!(rules_for(strict, RuleId::ProviderOpenaiStrict).is_empty());
        let c = catalog(vec![tool(
            "ns.get",
            "Look up one invoice by its id and return its lines and totals.",
            json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false}),
        )]);
        assert_eq!(findings_of(&c, RuleId::ProviderOpenaiStrict).len(), 1);
    }

    #[test]
    fn gemini_positive_and_negative() {
        let bad = json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "additionalProperties": false, "properties": {
            "a": {"type": ["string", "null"], "description": "First thing."},
            "b": {"const": "x", "description": "Second thing."},
            "c": {"type": "integer", "enum": [1, 2], "exclusiveMinimum": 0, "description": "Third thing."}
        }, "required": ["a"]});
        let f = rules_for(bad, RuleId::ProviderGemini);
        let joined = f.join("\n");
        for want in [
            "$schema",
            "additionalProperties",
            "type arrays",
            "`const`",
            "string enum",
            "exclusiveMinimum",
        ] {
            assert!(joined.contains(want), "{want} in {joined}");
        }
        let ok = json!({"type": "object", "properties": {"a": {"type": "string", "nullable": true, "enum": ["x", "y"], "description": "First thing."}}, "required": ["a"]});
        assert!(rules_for(ok, RuleId::ProviderGemini).is_empty());
    }

    #[test]
    fn anthropic_positive_and_negative() {
        let c = catalog(vec![tool(
            "ns.get_invoice",
            "Look up one invoice by its id and return its lines and totals.",
            json!({"type": "object", "properties": {
            "tags": {"type": "array", "minItems": 2, "items": {"type": "string"}, "description": "Tags to match."}}, "required": ["tags"]}),
        )]);
        let f = findings_of(&c, RuleId::ProviderAnthropic);
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(
            findings_of(
                &catalog(vec![clean_tool("get_invoice")]),
                RuleId::ProviderAnthropic
            )
            .is_empty()
        );
    }
}
