//! Schema rules: valid JSON Schema for its draft, an object at the root, `required` naming
//! defined properties, constraints stated only in prose, and `x-mcp-header` mirroring.

use crate::RuleId;
use serde_json::{Map, Value};

use super::{Raw, child_path};
use toolscore_core::catalog::Catalog;

/// Keywords whose value is one subschema.
const ONE: &[&str] = &[
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalItems",
];
/// Keywords whose value is an array of subschemas.
const MANY: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];
/// Keywords whose value maps names to subschemas.
const MAP: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Calls `f` on every schema object reachable from `schema` (itself included), with its path.
pub(crate) fn walk(schema: &Value, path: &str, f: &mut dyn FnMut(&Map<String, Value>, &str)) {
    let Value::Object(map) = schema else { return };
    f(map, path);
    for (k, v) in map {
        if ONE.contains(&k.as_str()) {
            match v {
                Value::Array(items) if k == "items" => {
                    for (i, s) in items.iter().enumerate() {
                        walk(s, &format!("{}[{i}]", child_path(path, k)), f);
                    }
                }
                _ => walk(v, &child_path(path, k), f),
            }
        } else if MANY.contains(&k.as_str()) {
            if let Value::Array(items) = v {
                for (i, s) in items.iter().enumerate() {
                    walk(s, &format!("{}[{i}]", child_path(path, k)), f);
                }
            }
        } else if MAP.contains(&k.as_str())
            && let Value::Object(m) = v
        {
            let base = child_path(path, k);
            for (name, s) in m {
                walk(s, &child_path(&base, name), f);
            }
        }
    }
}

/// Every property schema: (path, name, schema, whether its parent requires it, depth of
/// `properties` only — None when reached through anything else).
pub(crate) struct Property<'a> {
    pub path: String,
    pub name: &'a str,
    pub schema: &'a Map<String, Value>,
    pub required: bool,
    /// Reached from the root through `properties` keys only (what `x-mcp-header` requires).
    pub direct: bool,
}

pub(crate) fn properties(schema: &Value) -> Vec<Property<'_>> {
    let mut out = Vec::new();
    collect_properties(schema, "inputSchema", true, &mut out);
    out
}

fn collect_properties<'a>(
    schema: &'a Value,
    path: &str,
    direct: bool,
    out: &mut Vec<Property<'a>>,
) {
    let Value::Object(map) = schema else { return };
    // A set: a schema with thousands of properties, all required, is linear, not quadratic.
    let required: std::collections::HashSet<&str> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(Value::Object(props)) = map.get("properties") {
        let base = child_path(path, "properties");
        for (name, s) in props {
            let p = child_path(&base, name);
            if let Value::Object(m) = s {
                out.push(Property {
                    path: p.clone(),
                    name,
                    schema: m,
                    required: required.contains(name.as_str()),
                    direct,
                });
            }
            collect_properties(s, &p, direct, out);
        }
    }
    for k in ["items", "additionalProperties"] {
        if let Some(v @ Value::Object(_)) = map.get(k) {
            collect_properties(v, &child_path(path, k), false, out);
        }
    }
    for k in MANY {
        if let Some(Value::Array(items)) = map.get(*k) {
            for (i, s) in items.iter().enumerate() {
                collect_properties(s, &format!("{}[{i}]", child_path(path, k)), false, out);
            }
        }
    }
    for k in ["$defs", "definitions"] {
        if let Some(Value::Object(m)) = map.get(k) {
            let base = child_path(path, k);
            for (name, s) in m {
                collect_properties(s, &child_path(&base, name), false, out);
            }
        }
    }
}

/// The `$schema` URIs of the drafts the validator bundles.
const KNOWN_DRAFTS: &[&str] = &[
    "json-schema.org/draft-04/schema",
    "json-schema.org/draft-06/schema",
    "json-schema.org/draft-07/schema",
    "json-schema.org/draft/2019-09/schema",
    "json-schema.org/draft/2020-12/schema",
];

pub(crate) fn check(catalog: &Catalog, out: &mut Vec<Raw>) {
    for tool in &catalog.tools {
        let t = Some(tool.name.as_str());
        let schema = &tool.input_schema;
        validity(tool.name.as_str(), schema, out);
        match schema.get("type") {
            Some(Value::String(s)) if s == "object" => {}
            other => out.push(Raw::new(
                RuleId::SchemaRootNotObject,
                t,
                "inputSchema.type",
                match other {
                    None => "the input schema has no `type`; MCP and every provider expect `type: object` at the root".to_owned(),
                    Some(v) => format!("the input schema's root type is {v}, not \"object\""),
                },
                "Set `\"type\": \"object\"` at the root and put the parameters under `properties`.",
            )),
        }
        walk(schema, "inputSchema", &mut |node, path| {
            let (Some(Value::Array(req)), props) = (node.get("required"), node.get("properties"))
            else {
                return;
            };
            let defined = props.and_then(Value::as_object);
            for name in req.iter().filter_map(Value::as_str) {
                if !defined.is_some_and(|d| d.contains_key(name)) {
                    out.push(Raw::new(
                        RuleId::RequiredUnknown,
                        t,
                        child_path(path, "required"),
                        format!("`required` lists `{name}`, which `properties` does not define"),
                        format!(
                            "Define `{name}` under `properties`, or remove it from `required`."
                        ),
                    ));
                }
            }
        });
        let props = properties(schema);
        for p in &props {
            prose_constraints(tool.name.as_str(), p, out);
        }
        headers(tool.name.as_str(), schema, &props, out);
    }
}

fn validity(tool: &str, schema: &Value, out: &mut Vec<Raw>) {
    let t = Some(tool);
    if let Some(uri) = schema.get("$schema") {
        let known = uri.as_str().is_some_and(|u| {
            let u = u.trim_end_matches('#');
            KNOWN_DRAFTS.iter().any(|d| {
                u.strip_prefix("https://")
                    .or_else(|| u.strip_prefix("http://"))
                    == Some(d)
            })
        });
        if !known {
            out.push(Raw::new(
                RuleId::SchemaInvalid,
                t,
                "inputSchema.$schema",
                format!(
                    "`$schema` {uri} is not a JSON Schema draft this validator knows (draft-04, -06, -07, 2019-09, 2020-12)"
                ),
                "Use \"https://json-schema.org/draft/2020-12/schema\" or remove `$schema` (2020-12 is the default).",
            ));
            return;
        }
    }
    let meta = match jsonschema::meta::validator_for(schema) {
        Ok(m) => m,
        Err(e) => {
            out.push(Raw::new(
                RuleId::SchemaInvalid,
                t,
                "inputSchema",
                format!("the meta-schema cannot be loaded: {e}"),
                "Use a standard `$schema`.",
            ));
            return;
        }
    };
    let mut any = false;
    for e in meta.iter_errors(schema).take(5) {
        any = true;
        let segments: Vec<String> = e
            .instance_path()
            .segments()
            .map(|s| s.to_string())
            .collect();
        let mut path = "inputSchema".to_owned();
        for s in &segments {
            if s.chars().all(|c| c.is_ascii_digit()) {
                path.push_str(&format!("[{s}]"));
            } else {
                path = child_path(&path, s);
            }
        }
        out.push(Raw::new(
            RuleId::SchemaInvalid,
            t,
            path,
            format!("not valid JSON Schema: {}", truncate(&e.to_string(), 200)),
            "Fix the keyword's value to what its draft allows.",
        ));
    }
    if any {
        return;
    }
    if let Err(e) = jsonschema::options().build(schema) {
        out.push(Raw::new(
            RuleId::SchemaInvalid,
            t,
            "inputSchema",
            format!("the schema does not compile: {}", truncate(&e.to_string(), 200)),
            "Fix the reference or regular expression it names (remote `$ref`s cannot be resolved offline).",
        ));
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(max).collect();
        t.push('…');
        t
    }
}

fn type_of(schema: &Map<String, Value>) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

// Long: its patterns (static regexes) beside the rule that reads them.
fn prose_constraints(tool: &str, p: &Property<'_>, out: &mut Vec<Raw>) {
    use std::sync::LazyLock;
    static ENUM: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)\b(must be|should be|can be|has to be|is|are)\s+(one of|either)\b|\b(possible|allowed|valid|accepted|supported|available)\s+values\s*(are|:|include)|\bone of\s*[:(\[]",
        )
        .expect("static regex")
    });
    static FORMAT: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)\b(yyyy[-/.]?mm[-/.]?dd|dd[-/.]mm[-/.]yyyy|mm[-/.]dd[-/.]yyyy|hh:mm|iso[ -]?8601|rfc[ -]?3339|date-time)\b",
        )
        .expect("static regex")
    });
    static RANGE: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)\b(between\s+-?\d+(\.\d+)?\s+and\s+-?\d+|at most\s+\d+|no more than\s+\d+|maximum (of|is|value( is)?)\s+\d+|at least\s+\d+|minimum (of|is|value( is)?)\s+\d+|must not exceed\s+\d+|cannot exceed\s+\d+|up to\s+\d+)",
        )
        .expect("static regex")
    });
    let Some(Value::String(desc)) = p.schema.get("description") else {
        return;
    };
    let has = |k: &str| p.schema.contains_key(k);
    let types = type_of(p.schema);
    if ENUM.is_match(desc) && !(has("enum") || has("const") || has("anyOf") || has("oneOf")) {
        out.push(Raw::new(
            RuleId::ConstraintInProse,
            Some(tool),
            p.path.clone(),
            format!(
                "`{}`: the description lists allowed values but the schema has no `enum`",
                p.name
            ),
            "List the allowed values in `enum`; keep the prose for what each means.",
        ));
    }
    if let Some(m) = FORMAT.find(desc)
        && types.contains(&"string")
        && !(has("format") || has("pattern") || has("enum"))
    {
        out.push(Raw::new(
            RuleId::ConstraintInProse,
            Some(tool),
            p.path.clone(),
            format!("`{}`: the description states a format ({}) but the schema has no `format` or `pattern`", p.name, m.as_str()),
            "Add `\"format\": \"date\"` / `\"date-time\"`, or a `pattern`.",
        ));
    }
    if let Some(m) = RANGE.find(desc) {
        let numeric = types.iter().any(|t| *t == "integer" || *t == "number");
        let stringy = types.contains(&"string");
        let arrayish = types.contains(&"array");
        let bounded = if numeric {
            has("minimum") || has("maximum") || has("exclusiveMinimum") || has("exclusiveMaximum")
        } else if stringy {
            has("minLength") || has("maxLength") || has("enum") || has("pattern")
        } else if arrayish {
            has("minItems") || has("maxItems")
        } else {
            true
        };
        if !bounded {
            let keyword = if numeric {
                "`minimum`/`maximum`"
            } else if stringy {
                "`minLength`/`maxLength`"
            } else {
                "`minItems`/`maxItems`"
            };
            out.push(Raw::new(
                RuleId::ConstraintInProse,
                Some(tool),
                p.path.clone(),
                format!(
                    "`{}`: the description states a bound (\"{}\") that the schema does not",
                    p.name,
                    m.as_str()
                ),
                format!("Add {keyword}."),
            ));
        }
    }
}

/// RFC 9110 `token` characters.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c))
}

// Long: its patterns (static regexes) beside the rule that reads them.
fn headers(tool: &str, schema: &Value, props: &[Property<'_>], out: &mut Vec<Raw>) {
    use std::sync::LazyLock;
    static SENSITIVE: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)(auth|token|secret|passw|api[-_]?key|apikey|cookie|session|credential|private|bearer|signature|jwt)",
        )
        .expect("static regex")
    });
    let t = Some(tool);
    // Header name (lower-cased: header names are case-insensitive) → the first property
    // mirrored into it; a map, so thousands of mirrored properties stay linear.
    let mut seen: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for p in props {
        let Some(h) = p.schema.get("x-mcp-header") else {
            continue;
        };
        let hpath = child_path(&p.path, "x-mcp-header");
        let Some(name) = h.as_str().filter(|s| is_token(s)) else {
            out.push(Raw::new(
                RuleId::HeaderMirrorInvalid,
                t,
                hpath,
                format!("`x-mcp-header` on `{}` is {h}, not an HTTP header token; clients drop the whole tool", p.name),
                "Use a plain header name such as \"Region\".",
            ));
            continue;
        };
        let types = type_of(p.schema);
        if types.is_empty()
            || !types
                .iter()
                .all(|t| matches!(*t, "string" | "integer" | "boolean"))
        {
            out.push(Raw::new(
                RuleId::HeaderMirrorInvalid,
                t,
                hpath.clone(),
                format!("`x-mcp-header` sits on `{}` of type {:?}; only string, integer and boolean parameters can be mirrored", p.name, types),
                "Mirror only a string, integer or boolean parameter.",
            ));
        }
        if !p.direct {
            out.push(Raw::new(
                RuleId::HeaderMirrorInvalid,
                t,
                hpath.clone(),
                format!("`x-mcp-header` on `{}` is not reached through `properties` alone (it is under items, a combinator or $defs)", p.name),
                "Move the annotation to a property reached from the root through `properties`.",
            ));
        }
        if let Some(other) = seen.get(&name.to_ascii_lowercase()) {
            out.push(Raw::new(
                RuleId::HeaderMirrorInvalid,
                t,
                hpath.clone(),
                format!(
                    "header `{name}` is also mirrored from `{other}` (names are case-insensitive)"
                ),
                "Give each mirrored parameter its own header name.",
            ));
        }
        seen.entry(name.to_ascii_lowercase())
            .or_insert_with(|| p.name.to_owned());
        if SENSITIVE.is_match(name) || SENSITIVE.is_match(p.name) {
            out.push(Raw::new(
                RuleId::HeaderSensitive,
                t,
                hpath,
                format!("`{}` looks like a credential and is mirrored into the header `Mcp-Param-{name}`, where proxies and logs see it", p.name),
                "Remove `x-mcp-header` from it; credentials belong in the server's configuration, not in model-filled parameters.",
            ));
        }
    }
    // An annotation on the root itself is never reachable as a parameter.
    if schema.get("x-mcp-header").is_some() {
        out.push(Raw::new(
            RuleId::HeaderMirrorInvalid,
            t,
            "inputSchema.x-mcp-header",
            "`x-mcp-header` on the root schema names no parameter",
            "Put the annotation on a property.",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use serde_json::json;

    fn one(schema: serde_json::Value) -> toolscore_core::catalog::Catalog {
        catalog(vec![tool(
            "get_invoice",
            "Look up one invoice by its id and return its lines and totals.",
            schema,
        )])
    }

    #[test]
    fn schema_invalid_positive_and_negative() {
        let bad = one(
            json!({"type": "object", "properties": {"n": {"type": "integr", "description": "A number of things."}}, "required": ["n"]}),
        );
        let f = findings_of(&bad, RuleId::SchemaInvalid);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].path, "inputSchema.properties.n.type");
        let bad_regex = one(
            json!({"type": "object", "properties": {"n": {"type": "string", "pattern": "(", "description": "A pattern thing."}}, "required": ["n"]}),
        );
        assert!(!findings_of(&bad_regex, RuleId::SchemaInvalid).is_empty());
        let unknown = one(json!({"$schema": "http://example.com/my-draft", "type": "object"}));
        assert!(
            findings_of(&unknown, RuleId::SchemaInvalid)[0]
                .message
                .contains("not a JSON Schema draft")
        );
        // Draft 4 honoured: exclusiveMinimum is a boolean there, a number in 2020-12.
        let d4 = one(
            json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "description": "A number of things."}}, "required": ["n"]}),
        );
        assert!(findings_of(&d4, RuleId::SchemaInvalid).is_empty());
        let d2020 = one(
            json!({"type": "object", "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "description": "A number of things."}}, "required": ["n"]}),
        );
        assert!(!findings_of(&d2020, RuleId::SchemaInvalid).is_empty());
        assert!(findings_of(&catalog(vec![clean_tool("a")]), RuleId::SchemaInvalid).is_empty());
    }

    #[test]
    fn root_must_be_an_object() {
        assert!(
            !findings_of(&one(json!({"type": "array"})), RuleId::SchemaRootNotObject).is_empty()
        );
        assert!(
            !findings_of(&one(json!({"properties": {}})), RuleId::SchemaRootNotObject).is_empty()
        );
        assert!(
            findings_of(&catalog(vec![clean_tool("a")]), RuleId::SchemaRootNotObject).is_empty()
        );
    }

    #[test]
    fn required_names_defined_properties() {
        let f = findings_of(
            &one(json!({"type": "object", "properties": {}, "required": ["ghost"]})),
            RuleId::RequiredUnknown,
        );
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("ghost"));
        assert!(findings_of(&catalog(vec![clean_tool("a")]), RuleId::RequiredUnknown).is_empty());
    }

    #[test]
    fn constraints_in_prose_are_found_and_schema_constraints_accepted() {
        let prose = one(json!({"type": "object", "properties": {
            "status": {"type": "string", "description": "Must be one of open, paid or void."},
            "day": {"type": "string", "description": "Invoice day, format YYYY-MM-DD."},
            "limit": {"type": "integer", "description": "How many, between 1 and 100.", "default": 10}
        }, "required": ["status", "day"]}));
        let f = findings_of(&prose, RuleId::ConstraintInProse);
        let paths: Vec<_> = f.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                "inputSchema.properties.day",
                "inputSchema.properties.limit",
                "inputSchema.properties.status"
            ]
        );
        let schema = one(json!({"type": "object", "properties": {
            "status": {"type": "string", "enum": ["open", "paid", "void"], "description": "Must be one of open, paid or void."},
            "day": {"type": "string", "format": "date", "description": "Invoice day, format YYYY-MM-DD."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "How many, between 1 and 100.", "default": 10}
        }, "required": ["status", "day"]}));
        assert!(findings_of(&schema, RuleId::ConstraintInProse).is_empty());
    }

    #[test]
    fn mirrored_headers_that_look_like_credentials_are_errors() {
        let c = one(json!({"type": "object", "properties": {
            "api_key": {"type": "string", "description": "The caller's key.", "x-mcp-header": "Api-Key"},
            "region": {"type": "string", "description": "Cloud region, e.g. us-west1.", "x-mcp-header": "Region"}
        }, "required": ["api_key", "region"]}));
        let f = findings_of(&c, RuleId::HeaderSensitive);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].path, "inputSchema.properties.api_key.x-mcp-header");
        assert!(findings_of(&c, RuleId::HeaderMirrorInvalid).is_empty());
    }

    #[test]
    fn invalid_header_mirrors_are_errors() {
        let c = one(json!({"type": "object", "properties": {
            "ratio": {"type": "number", "description": "A ratio of two things.", "x-mcp-header": "Ratio"},
            "bad": {"type": "string", "description": "A badly named one.", "x-mcp-header": "Has Space"},
            "a": {"type": "string", "description": "First of a pair.", "x-mcp-header": "Pair"},
            "b": {"type": "string", "description": "Second of a pair.", "x-mcp-header": "pair"},
            "items": {"type": "array", "description": "Nested things.", "items": {"type": "object", "properties": {
                "zone": {"type": "string", "description": "Zone of a thing.", "x-mcp-header": "Zone"}}}}
        }, "required": ["ratio", "bad", "a", "b", "items"]}));
        let f = findings_of(&c, RuleId::HeaderMirrorInvalid);
        let msgs: Vec<_> = f.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(f.len(), 4, "{msgs:?}");
        let ok = one(json!({"type": "object", "properties": {
            "region": {"type": "string", "description": "Cloud region, e.g. us-west1.", "x-mcp-header": "Region"}}, "required": ["region"]}));
        assert!(findings_of(&ok, RuleId::HeaderMirrorInvalid).is_empty());
        assert!(findings_of(&ok, RuleId::HeaderSensitive).is_empty());
    }
}
