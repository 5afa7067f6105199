//! The argument-failure taxonomy: when a trial chose the right tool but its arguments are not
//! an exact match (or break the schema), say *why*, per call: `invalid_json`,
//! `missing_required`, `extra_parameter`, `wrong_type`, `wrong_value`.
//!
//! `score` already reports the first mismatch as a detail string; that answers "what went
//! wrong in this trial" but cannot be counted. A catalog author needs the distribution
//! ("a third of the failures are hallucinated parameters" points at the description, "wrong
//! types" at the schema), so this walks the whole call and keeps every finding.
//!
//! Two sources are combined, because either alone misses failures:
//! - the fixture's expected arguments and per-field matchers (a key the fixture expects is
//!   missing; a value differs in type or value; a key nobody expects is there);
//! - the tool's input schema (a required property is missing; a key the schema does not
//!   declare; a property of the wrong JSON type), plus the validator's other violations
//!   (`pattern`, `enum`, `minimum`, …), which are wrong values.
//!
//! A field a per-field matcher accepts is never flagged. Pure, like the rest of `score`.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{
    ArgMatcher, ExpectedCall, MAX_VALUE_CHARS, ToolValidators, apply_matcher, has_matcher_below,
    join, matcher_children, truncate,
};
use toolscore_core::ToolCall;
use toolscore_core::json_equal;
use toolscore_core::{ArgFailure, ArgFailureKind, MAX_ARG_FAILURES};

/// Deepest nesting the classifier walks; arguments deeper than this are judged at this depth
/// (the schema validator has already bounded what it accepts).
const MAX_DEPTH: usize = 64;

/// Every finding for one produced call standing for `expected` (same tool name). The call's
/// schema comes from `validators`; a tool without one is judged on the expectation alone.
pub fn classify_call(
    expected: &ExpectedCall,
    call: &ToolCall,
    validators: &ToolValidators,
) -> Vec<ArgFailure> {
    if call.arguments_not_json() {
        return vec![ArgFailure {
            kind: ArgFailureKind::InvalidJson,
            path: String::new(),
        }];
    }
    let mut out = Findings::default();
    let args = &call.arguments;
    if let Some(want) = &expected.args {
        if args.is_object() {
            walk_expected("", Some(want), Some(args), &expected.matchers, &mut out, 0);
        } else {
            out.push(ArgFailureKind::WrongType, "");
        }
    }
    if let Some(schema) = validators.schema(&call.name) {
        let before = out.items.clone();
        let mut from_schema = Findings::default();
        walk_schema(
            "",
            schema,
            args,
            expected.args.as_ref(),
            &expected.matchers,
            &mut from_schema,
            0,
        );
        // Where the fixture already judged a path, its verdict stands (2.5 for an expected 2
        // is a wrong value, though the schema's `integer` would call it a wrong type).
        for f in from_schema.items {
            if !before.iter().any(|b| b.path == f.path) {
                out.push(f.kind, &f.path);
            }
        }
        // The validator sees what the walk above cannot ($ref, allOf, pattern, enum, bounds).
        // Its type/required/additionalProperties findings are kept only when the walks found no
        // finding of that kind (one missing key is not reported twice, at the key and at its
        // object), and none is kept at a path already judged.
        if let Some(violations) = validators.validate(&call.name, args) {
            let walked: Vec<ArgFailureKind> = out.items[before.len()..]
                .iter()
                .map(|f| f.kind)
                .chain(before.iter().map(|f| f.kind))
                .collect();
            for v in violations {
                let kind = match v.keyword.as_str() {
                    "type" => ArgFailureKind::WrongType,
                    "required" | "dependentRequired" => ArgFailureKind::MissingRequired,
                    "additionalProperties" | "unevaluatedProperties" => {
                        ArgFailureKind::ExtraParameter
                    }
                    _ => ArgFailureKind::WrongValue,
                };
                let structural = kind != ArgFailureKind::WrongValue;
                let judged = out.items.iter().any(|f| f.path == v.path);
                if judged || (structural && walked.contains(&kind)) {
                    continue;
                }
                out.push(kind, &v.path);
            }
        }
    }
    out.items
}

/// Picks, for every expected call of a parallel expectation, the produced call of the same
/// tool with the fewest findings (each produced call used once), and returns their findings
/// with paths prefixed `tool:`. Greedy in the expected order: an approximation of the best
/// pairing, which is enough to say which kinds of mistakes were made.
pub(crate) fn classify_parallel(
    expected: &[ExpectedCall],
    produced: &[ToolCall],
    validators: &ToolValidators,
) -> Vec<ArgFailure> {
    let mut used = vec![false; produced.len()];
    let mut all = Vec::new();
    for e in expected {
        let best = produced
            .iter()
            .enumerate()
            .filter(|(i, p)| !used[*i] && e.accepts(&p.name))
            .map(|(i, p)| (i, classify_call(e, p, validators)))
            .min_by_key(|(_, f)| f.len());
        if let Some((i, findings)) = best {
            used[i] = true;
            all.extend(findings.into_iter().map(|f| ArgFailure {
                kind: f.kind,
                path: format!("{}:{}", e.tool, f.path),
            }));
        }
    }
    all
}

/// At most [`MAX_ARG_FAILURES`] findings, without duplicates, keeping the first finding of
/// every kind (counts are per kind per trial, so no kind may be lost to the cap), then the
/// rest in order. Paths are truncated like detail strings.
pub(crate) fn keep_small(findings: Vec<ArgFailure>) -> Vec<ArgFailure> {
    let mut unique: Vec<ArgFailure> = Vec::new();
    for f in findings {
        if !unique.contains(&f) {
            unique.push(f);
        }
    }
    let mut kept: Vec<usize> = Vec::new();
    for kind in ArgFailureKind::ALL {
        if let Some(i) = unique.iter().position(|f| f.kind == kind) {
            kept.push(i);
        }
    }
    for i in 0..unique.len() {
        if kept.len() >= MAX_ARG_FAILURES {
            break;
        }
        if !kept.contains(&i) {
            kept.push(i);
        }
    }
    kept.sort_unstable();
    kept.into_iter()
        .map(|i| ArgFailure {
            kind: unique[i].kind,
            path: truncate(&unique[i].path, MAX_VALUE_CHARS),
        })
        .collect()
}

#[derive(Default)]
struct Findings {
    items: Vec<ArgFailure>,
}

impl Findings {
    fn push(&mut self, kind: ArgFailureKind, path: &str) {
        let f = ArgFailure {
            kind,
            path: path.to_owned(),
        };
        if !self.items.contains(&f) {
            self.items.push(f);
        }
    }
}

/// JSON type of a value, with integers and floats both "number" (`2 == 2.0` canonically).
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Mirrors `score::compare`, but collects every mismatch with its kind instead of stopping at
/// the first.
fn walk_expected(
    path: &str,
    want: Option<&Value>,
    got: Option<&Value>,
    matchers: &BTreeMap<String, ArgMatcher>,
    out: &mut Findings,
    depth: usize,
) {
    if let Some(matcher) = matchers.get(path) {
        if apply_matcher(path, matcher, want, got).is_err() {
            out.push(matcher_kind(matcher, want, got), path);
        }
        return;
    }
    if depth > MAX_DEPTH {
        return;
    }
    let below = has_matcher_below(path, matchers);
    match (want, got) {
        (None, None) => {
            if below {
                for seg in matcher_children(path, matchers) {
                    walk_expected(&join(path, &seg), None, None, matchers, out, depth + 1);
                }
            }
        }
        (Some(_), None) => out.push(ArgFailureKind::MissingRequired, path),
        (None, Some(g)) => {
            if below && (g.is_object() || g.is_array()) {
                descend(path, None, g, matchers, out, depth);
            } else {
                out.push(ArgFailureKind::ExtraParameter, path);
            }
        }
        (Some(w), Some(g)) => match (w, g) {
            (Value::Object(_), Value::Object(_)) | (Value::Array(_), Value::Array(_)) => {
                descend(path, Some(w), g, matchers, out, depth);
            }
            _ if json_type(w) != json_type(g) => out.push(ArgFailureKind::WrongType, path),
            _ if !json_equal(w, g) => out.push(ArgFailureKind::WrongValue, path),
            _ => {}
        },
    }
}

fn descend(
    path: &str,
    want: Option<&Value>,
    got: &Value,
    matchers: &BTreeMap<String, ArgMatcher>,
    out: &mut Findings,
    depth: usize,
) {
    match got {
        Value::Object(g) => {
            let w = want.and_then(Value::as_object);
            let mut keys: std::collections::BTreeSet<&str> = g.keys().map(String::as_str).collect();
            if let Some(w) = w {
                keys.extend(w.keys().map(String::as_str));
            }
            let children = matcher_children(path, matchers);
            keys.extend(children.iter().map(String::as_str));
            for key in keys {
                walk_expected(
                    &join(path, key),
                    w.and_then(|w| w.get(key)),
                    g.get(key),
                    matchers,
                    out,
                    depth + 1,
                );
            }
        }
        Value::Array(g) => {
            // A list of the wrong length is a wrong value (not a missing or hallucinated
            // parameter); items present on both sides are compared one by one.
            let w = want.and_then(Value::as_array);
            let want_len = w.map_or(0, Vec::len);
            let mut indices: std::collections::BTreeSet<usize> =
                (0..want_len.max(g.len())).collect();
            indices.extend(
                matcher_children(path, matchers)
                    .iter()
                    .filter_map(|s| s.parse::<usize>().ok()),
            );
            for i in indices {
                let item_path = join(path, &i.to_string());
                let (wi, gi) = (w.and_then(|w| w.get(i)), g.get(i));
                if matchers.contains_key(&item_path) || (wi.is_some() && gi.is_some()) {
                    walk_expected(&item_path, wi, gi, matchers, out, depth + 1);
                } else if wi.is_some() || gi.is_some() {
                    if wi.is_none() && w.is_none() {
                        // No expected list at all (only matchers below): an unexpected item.
                        walk_expected(&item_path, None, gi, matchers, out, depth + 1);
                    } else {
                        out.push(ArgFailureKind::WrongValue, path);
                    }
                }
            }
        }
        _ => out.push(ArgFailureKind::ExtraParameter, path),
    }
}

/// Why a matcher rejected a value: absent, of a type it can never accept, or the right type
/// with a value it does not accept.
fn matcher_kind(matcher: &ArgMatcher, want: Option<&Value>, got: Option<&Value>) -> ArgFailureKind {
    let Some(got) = got else {
        return ArgFailureKind::MissingRequired;
    };
    let type_ok = match matcher {
        ArgMatcher::Any => true,
        ArgMatcher::Regex(_) => got.is_string(),
        ArgMatcher::CaseInsensitive => want.is_none_or(|w| json_type(w) == json_type(got)),
        ArgMatcher::OneOf(options) => options.iter().any(|o| json_type(o) == json_type(got)),
        ArgMatcher::Approx(_) => got.is_number(),
    };
    if type_ok {
        ArgFailureKind::WrongValue
    } else {
        ArgFailureKind::WrongType
    }
}

/// Whether `v` is of the JSON-Schema type(s) `t` (a name or a list of names). Unknown names
/// accept anything: the validator, not this walk, is the authority on odd schemas.
fn type_matches(t: &Value, v: &Value) -> bool {
    let one = |name: &str| match name {
        "integer" => match v {
            Value::Number(n) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        "number" => v.is_number(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "null" => v.is_null(),
        _ => true,
    };
    match t {
        Value::String(name) => one(name),
        Value::Array(names) => names.iter().filter_map(Value::as_str).any(one),
        _ => true,
    }
}

/// Walks the schema's `type`, `required`, `properties` and `items` along the arguments. A key
/// the schema does not declare is an extra parameter unless the schema allows undeclared keys
/// on purpose (`additionalProperties` true or a schema, or `patternProperties`), or the fixture
/// expects it (then the fixture, not the schema, is the reference).
fn walk_schema(
    path: &str,
    schema: &Value,
    got: &Value,
    want: Option<&Value>,
    matchers: &BTreeMap<String, ArgMatcher>,
    out: &mut Findings,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    if matches!(matchers.get(path), Some(ArgMatcher::Any)) {
        return;
    }
    let Some(schema) = schema.as_object() else {
        return;
    };
    if let Some(t) = schema.get("type")
        && !type_matches(t, got)
    {
        out.push(ArgFailureKind::WrongType, path);
        return;
    }
    match got {
        Value::Object(g) => {
            if let Some(required) = schema.get("required").and_then(Value::as_array) {
                for name in required.iter().filter_map(Value::as_str) {
                    let p = join(path, name);
                    if !g.contains_key(name) && !matches!(matchers.get(&p), Some(ArgMatcher::Any)) {
                        out.push(ArgFailureKind::MissingRequired, &p);
                    }
                }
            }
            let props = schema.get("properties").and_then(Value::as_object);
            let open = schema.contains_key("patternProperties")
                || matches!(
                    schema.get("additionalProperties"),
                    Some(Value::Bool(true) | Value::Object(_))
                );
            let wanted = want.and_then(Value::as_object);
            for (key, value) in g {
                let p = join(path, key);
                let w = wanted.and_then(|w| w.get(key));
                match props.and_then(|props| props.get(key)) {
                    Some(sub) => walk_schema(&p, sub, value, w, matchers, out, depth + 1),
                    None => {
                        let expected = w.is_some() || matchers.contains_key(&p);
                        if props.is_some() && !open && !expected {
                            out.push(ArgFailureKind::ExtraParameter, &p);
                        }
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items").filter(|s| s.is_object()) {
                let wanted = want.and_then(Value::as_array);
                for (i, item) in items.iter().enumerate() {
                    walk_schema(
                        &join(path, &i.to_string()),
                        item_schema,
                        item,
                        wanted.and_then(|w| w.get(i)),
                        matchers,
                        out,
                        depth + 1,
                    );
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Expectation, score_turn};
    use serde_json::json;
    use toolscore_core::ModelTurn;
    use toolscore_core::catalog::{Catalog, Tool};

    use ArgFailureKind::*;

    fn validators() -> ToolValidators {
        let quote = json!({
            "type": "object",
            "properties": {
                "customer": {"type": "string"},
                "lines": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$"},
                        "qty": {"type": "integer", "minimum": 1}
                    },
                    "required": ["sku", "qty"]
                }},
                "note": {"type": "string"}
            },
            "required": ["customer", "lines"]
        });
        let catalog = Catalog::new(
            vec![
                Tool {
                    name: "create_quote".into(),
                    description: String::new(),
                    input_schema: quote,
                    ..Default::default()
                },
                Tool {
                    name: "get_time".into(),
                    description: String::new(),
                    input_schema: json!({"type": "object", "properties": {"tz": {"type": "string"}}}),
                    ..Default::default()
                },
            ],
            "test".to_owned(),
        );
        ToolValidators::compile(&catalog).expect("compiles")
    }

    fn expected(args: Value, matchers: &[(&str, Value)]) -> ExpectedCall {
        ExpectedCall {
            tool: "create_quote".into(),
            args: Some(args),
            matchers: matchers
                .iter()
                .map(|(k, m)| ((*k).to_owned(), ArgMatcher::from_json(m).expect("matcher")))
                .collect(),
            family: None,
        }
    }

    fn call(args: Value) -> ToolCall {
        ToolCall {
            id: None,
            name: "create_quote".into(),
            arguments: args,
            unparsed_arguments: None,
            thought_signature: None,
        }
    }

    fn good() -> Value {
        json!({"customer": "ACME", "lines": [{"sku": "ABC-1", "qty": 2}]})
    }

    fn kinds(findings: &[ArgFailure]) -> Vec<(ArgFailureKind, &str)> {
        findings.iter().map(|f| (f.kind, f.path.as_str())).collect()
    }

    fn classify(exp: &ExpectedCall, got: Value) -> Vec<ArgFailure> {
        classify_call(exp, &call(got), &validators())
    }

    #[test]
    fn an_exact_match_has_no_findings() {
        assert!(classify(&expected(good(), &[]), good()).is_empty());
    }

    #[test]
    fn each_kind_is_recognised_at_its_path() {
        let exp = expected(good(), &[]);
        // missing_required: a key the fixture expects and the schema requires.
        let f = classify(&exp, json!({"lines": [{"sku": "ABC-1", "qty": 2}]}));
        assert_eq!(kinds(&f), [(MissingRequired, "customer")]);
        // extra_parameter: a key nobody expects (and the schema does not declare).
        let mut extra = good();
        extra["discount"] = json!(10);
        assert_eq!(
            kinds(&classify(&exp, extra)),
            [(ExtraParameter, "discount")]
        );
        // wrong_type: "2" for 2 (and the schema's integer).
        let f = classify(
            &exp,
            json!({"customer": "ACME", "lines": [{"sku": "ABC-1", "qty": "2"}]}),
        );
        assert_eq!(kinds(&f), [(WrongType, "lines.0.qty")]);
        // wrong_value: right type, other value.
        let f = classify(
            &exp,
            json!({"customer": "Acme Inc", "lines": [{"sku": "ABC-1", "qty": 2}]}),
        );
        assert_eq!(kinds(&f), [(WrongValue, "customer")]);
        // invalid_json: nothing else can be said.
        let broken =
            ToolCall::from_encoded_arguments(None, "create_quote".into(), "{\"customer\": ");
        assert_eq!(
            kinds(&classify_call(&exp, &broken, &validators())),
            [(InvalidJson, "")]
        );
    }

    #[test]
    fn several_kinds_in_one_call_are_all_found_with_nested_paths() {
        let exp = expected(
            json!({"customer": "ACME", "lines": [{"sku": "ABC-1", "qty": 2}, {"sku": "XYZ-9", "qty": 1}]}),
            &[],
        );
        let f = classify(
            &exp,
            json!({"customer": "ACME", "lines": [{"sku": "ABC-1", "qty": 2.5, "colour": "red"}, {"qty": 1}]}),
        );
        assert_eq!(
            kinds(&f),
            [
                (ExtraParameter, "lines.0.colour"),
                (WrongValue, "lines.0.qty"),
                (MissingRequired, "lines.1.sku"),
            ],
            "{f:?}"
        );
        // A list of the wrong length is a wrong value of the list.
        let f = classify(&exp, good());
        assert_eq!(kinds(&f), [(WrongValue, "lines")]);
    }

    #[test]
    fn the_schema_alone_finds_what_a_tool_only_expectation_cannot() {
        let exp = ExpectedCall {
            tool: "create_quote".into(),
            args: None,
            matchers: BTreeMap::new(),
            family: None,
        };
        let f = classify(
            &exp,
            json!({"lines": [{"sku": "abc", "qty": 0}], "priority": "high", "note": 3}),
        );
        let mut got = kinds(&f);
        got.sort();
        assert_eq!(
            got,
            [
                (MissingRequired, "customer"),
                (ExtraParameter, "priority"),
                (WrongType, "note"),
                (WrongValue, "lines.0.qty"),
                (WrongValue, "lines.0.sku"),
            ],
            "{f:?}"
        );
    }

    #[test]
    fn fields_a_matcher_accepts_are_never_flagged() {
        let exp = expected(
            json!({"customer": "ACME", "lines": [{"sku": "ABC-1", "qty": 2}], "note": "x"}),
            &[
                ("customer", json!("ci")),
                ("lines.0.sku", json!({"regex": "[A-Z]{3}-[0-9]+"})),
                ("lines.0.qty", json!({"one_of": [2, 3]})),
                ("note", json!("any")),
            ],
        );
        // Every matcher accepts (the note is absent, which `any` allows); only the extra key
        // is a finding.
        let f = classify(
            &exp,
            json!({"customer": "acme", "lines": [{"sku": "QRS-77", "qty": 3}], "rush": true}),
        );
        assert_eq!(kinds(&f), [(ExtraParameter, "rush")]);
        // Rejections are classified by what the matcher could accept.
        let f = classify(
            &exp,
            json!({"customer": 7, "lines": [{"sku": "nope", "qty": 4}]}),
        );
        let mut got = kinds(&f);
        got.sort();
        assert_eq!(
            got,
            [
                (WrongType, "customer"),
                (WrongValue, "lines.0.qty"),
                (WrongValue, "lines.0.sku"),
            ],
            "{f:?}"
        );
        let approx = ExpectedCall {
            tool: "create_quote".into(),
            args: Some(json!({"customer": "ACME", "lines": [{"sku": "ABC-1", "qty": 2}]})),
            matchers: [(
                "lines.0.qty".to_owned(),
                ArgMatcher::from_json(&json!({"approx": 0.5})).expect("matcher"),
            )]
            .into(),
            family: None,
        };
        let f = classify(
            &approx,
            json!({"customer": "ACME", "lines": [{"sku": "ABC-1", "qty": "2"}]}),
        );
        assert_eq!(kinds(&f), [(WrongType, "lines.0.qty")]);
    }

    #[test]
    fn a_trial_records_findings_only_when_the_right_tool_failed_its_arguments() {
        let v = validators();
        let exp = Expectation::Calls {
            calls: vec![expected(good(), &[])],
            parallel: false,
        };
        let turn = |args: Value, name: &str| ModelTurn {
            tool_calls: vec![ToolCall {
                id: None,
                name: name.into(),
                arguments: args,
                unparsed_arguments: None,
                thought_signature: None,
            }],
            ..Default::default()
        };
        assert_eq!(
            score_turn(&exp, &turn(good(), "create_quote"), &v).arg_failures,
            None
        );
        // The wrong tool: nothing to compare the arguments with.
        let s = score_turn(&exp, &turn(json!({}), "get_time"), &v);
        assert_eq!(s.arg_failures, None);
        let s = score_turn(&exp, &turn(json!({"customer": 1}), "create_quote"), &v);
        let f = s.arg_failures.expect("classified");
        assert_eq!(
            kinds(&f),
            [(WrongType, "customer"), (MissingRequired, "lines")]
        );
    }

    #[test]
    fn parallel_calls_are_paired_by_tool_and_prefixed() {
        let v = validators();
        let time = ExpectedCall {
            tool: "get_time".into(),
            args: Some(json!({"tz": "UTC"})),
            matchers: BTreeMap::new(),
            family: None,
        };
        let produced = vec![
            ToolCall {
                id: None,
                name: "get_time".into(),
                arguments: json!({"tz": "CET"}),
                unparsed_arguments: None,
                thought_signature: None,
            },
            call(good()),
        ];
        let f = classify_parallel(&[expected(good(), &[]), time], &produced, &v);
        assert_eq!(kinds(&f), [(WrongValue, "get_time:tz")]);
    }

    #[test]
    fn the_kept_list_is_small_and_loses_no_kind() {
        let mut many: Vec<ArgFailure> = (0..50)
            .map(|i| ArgFailure {
                kind: ExtraParameter,
                path: format!("k{i}"),
            })
            .collect();
        many.push(ArgFailure {
            kind: WrongValue,
            path: "z".into(),
        });
        let kept = keep_small(many);
        assert_eq!(kept.len(), MAX_ARG_FAILURES);
        assert!(kept.iter().any(|f| f.kind == WrongValue));
    }
}
