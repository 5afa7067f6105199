//! Scoring of one model turn against a fixture's expectation: tool selection, argument
//! matching (canonical equality plus per-field matchers) and JSON-Schema validation of the
//! produced arguments.
//!
//! Pure: plain functions over plain data, no I/O. Schema validators are compiled once per run
//! ([`ToolValidators::compile`]) and shared by every trial.

mod args;
mod attack;
pub mod bfcl;
mod expect;
mod taxonomy;
mod trajectory;

pub use attack::{AttackGoal, judge_goal};
pub use trajectory::{
    ResultRef, ScenarioExpect, SequenceItem, SequenceMode, StateCheck, call_signals,
    score_trajectory,
};

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use toolscore_core::catalog::Catalog;
use toolscore_core::{ModelTurn, ToolCall};
use toolscore_core::{canonical_json, json_equal};

pub use args::check_matcher;
use args::match_args;
use args::{apply_matcher, args_path, has_matcher_below, join, matcher_children};
pub use expect::{ArgMatcher, Expectation, ExpectedCall, ToolPattern};
pub use taxonomy::classify_call;
use taxonomy::classify_parallel;
use toolscore_core::{FailureKind, SchemaViolation, TrialScore};

/// Longest value (in characters) quoted in a detail string before it is truncated.
const MAX_VALUE_CHARS: usize = 80;
/// Longest validator message kept in a [`SchemaViolation`].
const MAX_MESSAGE_CHARS: usize = 200;
/// Most schema violations reported per call (and per trial).
const MAX_VIOLATIONS: usize = 10;

// ---------------------------------------------------------------------------------------------
// Schema validation
// ---------------------------------------------------------------------------------------------

/// Every tool's input-schema validator, compiled once per run (never per trial).
pub struct ToolValidators {
    validators: HashMap<String, jsonschema::Validator>,
    /// The raw schemas, for the argument-failure taxonomy, which reads `required`,
    /// `properties` and `type` (a compiled validator does not expose them).
    schemas: HashMap<String, Value>,
}

impl std::fmt::Debug for ToolValidators {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: BTreeSet<&str> = self.validators.keys().map(String::as_str).collect();
        f.debug_struct("ToolValidators")
            .field("tools", &names)
            .finish()
    }
}

impl ToolValidators {
    /// Err((tool_name, message)) for the first schema that is not valid JSON Schema. Draft
    /// auto-detected from `$schema` (default 2020-12); `format` is validated. Remote `$ref`s
    /// cannot be fetched (the resolver features are off), so they fail here.
    pub fn compile(catalog: &Catalog) -> Result<ToolValidators, (String, String)> {
        let mut validators = HashMap::with_capacity(catalog.tools.len());
        let mut schemas = HashMap::with_capacity(catalog.tools.len());
        for tool in &catalog.tools {
            schemas.insert(tool.name.clone(), tool.input_schema.clone());
            let validator = jsonschema::options()
                .should_validate_formats(true)
                .build(&tool.input_schema)
                .map_err(|e| {
                    (
                        tool.name.clone(),
                        truncate(&e.to_string(), MAX_MESSAGE_CHARS),
                    )
                })?;
            validators.insert(tool.name.clone(), validator);
        }
        Ok(ToolValidators {
            validators,
            schemas,
        })
    }

    /// The input schema of a catalog tool.
    pub fn schema(&self, tool: &str) -> Option<&Value> {
        self.schemas.get(tool)
    }

    /// Whether the catalog these validators came from has a tool with this name.
    pub fn contains(&self, tool: &str) -> bool {
        self.validators.contains_key(tool)
    }

    /// None when the tool is not in the catalog; Some(vec![]) when valid. At most 10
    /// violations.
    pub fn validate(&self, tool: &str, args: &Value) -> Option<Vec<SchemaViolation>> {
        let validator = self.validators.get(tool)?;
        let violations = validator
            .iter_errors(args)
            .take(MAX_VIOLATIONS)
            .map(|e| SchemaViolation {
                tool: tool.to_owned(),
                path: e
                    .instance_path()
                    .segments()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join("."),
                keyword: e.kind().keyword().to_owned(),
                message: truncate(&e.to_string(), MAX_MESSAGE_CHARS),
            })
            .collect();
        Some(violations)
    }
}

// Validators are shared across concurrent trials.
const _: fn() = || {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ToolValidators>();
};

// ---------------------------------------------------------------------------------------------
// Trial scoring
// ---------------------------------------------------------------------------------------------

/// Records the first failure only: later checks still run (their flags are reported), but the
/// reason shown is the earliest in the order selection → arguments → schema.
#[derive(Default)]
struct FirstFailure {
    failure: Option<(FailureKind, String)>,
}

impl FirstFailure {
    fn set(&mut self, kind: FailureKind, detail: String) {
        if self.failure.is_none() {
            self.failure = Some((kind, detail));
        }
    }
}

/// Scores a trial, given the turns of its conversation. A single-call fixture judges its one
/// decision point: the first turn (a trial with no turn is judged as making no call).
pub fn score_trial(
    expect: &Expectation,
    turns: &[ModelTurn],
    validators: &ToolValidators,
) -> TrialScore {
    match turns.first() {
        Some(turn) => score_turn(expect, turn, validators),
        None => score_turn(expect, &ModelTurn::default(), validators),
    }
}

/// Scores one model turn against the expectation.
pub fn score_turn(
    expect: &Expectation,
    turn: &ModelTurn,
    validators: &ToolValidators,
) -> TrialScore {
    let produced = &turn.tool_calls;
    let mut first = FirstFailure::default();

    // Selection and arguments.
    let (selection_ok, args_ok) = match expect {
        Expectation::Bfcl(b) => score_bfcl(b, produced, &mut first),
        Expectation::NoCall => {
            let ok = produced.is_empty();
            if !ok {
                first.set(
                    FailureKind::UnexpectedCall,
                    format!(
                        "expected no tool call, got {}",
                        names_label(produced.iter().map(|c| c.name.as_str()))
                    ),
                );
            }
            (ok, None)
        }
        Expectation::Calls { calls, parallel } if calls.len() == 1 && !parallel => score_single(
            &calls[0],
            expect.checks_args(),
            produced,
            validators,
            &mut first,
        ),
        Expectation::Calls { calls, .. } => {
            score_parallel(calls, expect.checks_args(), produced, &mut first)
        }
    };

    // Schema: every produced call.
    let (schema_ok, schema_violations) = score_schema(produced, validators, &mut first);

    let passed = selection_ok && args_ok != Some(false) && schema_ok != Some(false);
    // The taxonomy applies when the right tool was chosen but its arguments failed a check:
    // with the wrong tool there are no "right" arguments to compare against.
    // An imported BFCL case passes exactly when BFCL's checker says so; schema validity
    // stays its own metric (`schema_ok`), as BFCL checks no schema.
    let passed = match expect {
        Expectation::Bfcl(_) => selection_ok && args_ok != Some(false),
        _ => passed,
    };
    let arg_failures = (selection_ok && !passed).then(|| match expect {
        Expectation::NoCall | Expectation::Bfcl(_) => Vec::new(),
        Expectation::Calls { calls, parallel } if calls.len() == 1 && !parallel => produced
            .first()
            .map(|call| classify_call(&calls[0], call, validators))
            .unwrap_or_default(),
        Expectation::Calls { calls, .. } => classify_parallel(calls, produced, validators),
    });
    let arg_failures = arg_failures.map(taxonomy::keep_small);
    let (failure, detail) = match first.failure {
        Some((kind, detail)) if !passed => (Some(kind), Some(detail)),
        _ => (None, None),
    };
    TrialScore {
        selection_ok,
        args_ok,
        schema_ok,
        passed,
        failure,
        detail,
        schema_violations,
        arg_failures,
    }
}

/// BFCL's verdict as selection and arguments: selection is whether the right functions were
/// called (names and count, as BFCL pairs them), arguments the rest of the verdict.
fn score_bfcl(
    expect: &bfcl::BfclExpect,
    produced: &[ToolCall],
    first: &mut FirstFailure,
) -> (bool, Option<bool>) {
    use bfcl::BfclChecker;
    let verdict = bfcl::judge(expect, produced);
    let fail_kind = |first: &mut FirstFailure, kind: FailureKind, detail: String| {
        first.set(kind, detail);
    };
    match expect.checker {
        BfclChecker::Irrelevance | BfclChecker::Relevance => {
            if let Err(detail) = verdict {
                let kind = if expect.checker == BfclChecker::Irrelevance {
                    FailureKind::UnexpectedCall
                } else {
                    FailureKind::NoCallMade
                };
                fail_kind(first, kind, detail);
                return (false, None);
            }
            (true, None)
        }
        _ => {
            let mut want = expect.tool_names();
            let mut got: Vec<String> = produced.iter().map(|c| c.name.clone()).collect();
            want.sort_unstable();
            got.sort_unstable();
            let selection_ok = want == got;
            match verdict {
                Ok(()) => (true, Some(true)),
                Err(detail) => {
                    let kind = if produced.is_empty() {
                        FailureKind::NoCallMade
                    } else if want.len() != got.len() {
                        FailureKind::WrongCallCount
                    } else if !selection_ok {
                        FailureKind::WrongTool
                    } else if produced.iter().any(ToolCall::arguments_not_json) {
                        FailureKind::ArgumentsNotJson
                    } else {
                        FailureKind::ArgsMismatch
                    };
                    fail_kind(first, kind, detail);
                    (selection_ok, Some(false))
                }
            }
        }
    }
}

fn score_single(
    expected: &ExpectedCall,
    checks_args: bool,
    produced: &[ToolCall],
    validators: &ToolValidators,
    first: &mut FirstFailure,
) -> (bool, Option<bool>) {
    let Some(call) = produced.first() else {
        first.set(
            FailureKind::NoCallMade,
            format!("expected {}, got no tool call", short(&expected.tool)),
        );
        return (false, checks_args.then_some(false));
    };
    let selection_ok = expected.accepts(&call.name);
    if !selection_ok {
        let unknown = if validators.contains(&call.name) {
            ""
        } else {
            " (not in the catalog)"
        };
        first.set(
            FailureKind::WrongTool,
            format!(
                "expected {}, got {}{unknown}",
                short(&expected.tool),
                short(&call.name)
            ),
        );
    }
    if !checks_args {
        return (selection_ok, None);
    }
    if !selection_ok {
        return (false, Some(false));
    }
    if call.arguments_not_json() {
        first.set(
            FailureKind::ArgumentsNotJson,
            format!("arguments of {} are not valid JSON", short(&call.name)),
        );
        return (true, Some(false));
    }
    match match_args(expected, &call.arguments) {
        Ok(()) => (true, Some(true)),
        Err((path, reason)) => {
            first.set(
                FailureKind::ArgsMismatch,
                format!("{}: {reason}", args_path(&path)),
            );
            (true, Some(false))
        }
    }
}

// Long: one matching pass (each expected call to at most one produced call), kept whole so
// the matching rule reads in one place.
fn score_parallel(
    expected: &[ExpectedCall],
    checks_args: bool,
    produced: &[ToolCall],
    first: &mut FirstFailure,
) -> (bool, Option<bool>) {
    let mut want: Vec<&str> = expected.iter().map(|c| c.tool.as_str()).collect();
    let mut got: Vec<&str> = produced.iter().map(|c| c.name.as_str()).collect();
    want.sort_unstable();
    got.sort_unstable();
    let selection_ok = want == got;
    if !selection_ok {
        let want_label = names_label(want.iter().copied());
        if produced.is_empty() {
            first.set(
                FailureKind::NoCallMade,
                format!("expected {want_label}, got no tool call"),
            );
        } else if want.len() != got.len() {
            first.set(
                FailureKind::WrongCallCount,
                format!(
                    "expected {} call{} ({want_label}), got {} ({})",
                    want.len(),
                    if want.len() == 1 { "" } else { "s" },
                    got.len(),
                    names_label(got.iter().copied())
                ),
            );
        } else {
            first.set(
                FailureKind::WrongTool,
                format!(
                    "expected {want_label}, got {}",
                    names_label(got.iter().copied())
                ),
            );
        }
    }
    if !checks_args {
        return (selection_ok, None);
    }
    if !selection_ok {
        return (false, Some(false));
    }

    // compatible[e][p]: produced call p can stand for expected call e.
    let compatible: Vec<Vec<bool>> = expected
        .iter()
        .map(|e| produced.iter().map(|p| call_matches(e, p)).collect())
        .collect();
    let mut used = vec![false; produced.len()];
    if assign(&compatible, 0, &mut used) {
        return (true, Some(true));
    }

    // No one-to-one assignment: explain the first expected call that nothing matches.
    for (e, row) in expected.iter().zip(&compatible) {
        if row.iter().any(|&ok| ok) {
            continue;
        }
        let same_name: Vec<&ToolCall> = produced.iter().filter(|p| e.accepts(&p.name)).collect();
        if let Some(p) = same_name.iter().find(|p| p.arguments_not_json()) {
            first.set(
                FailureKind::ArgumentsNotJson,
                format!("arguments of {} are not valid JSON", short(&p.name)),
            );
            return (true, Some(false));
        }
        if let Some(p) = same_name.first()
            && let Err((path, reason)) = match_args(e, &p.arguments)
        {
            first.set(
                FailureKind::ArgsMismatch,
                format!("{}: {}: {reason}", short(&e.tool), args_path(&path)),
            );
            return (true, Some(false));
        }
    }
    first.set(
        FailureKind::ArgsMismatch,
        "the calls' arguments cannot be paired one-to-one with the expected calls".to_owned(),
    );
    (true, Some(false))
}

/// Whether a produced call satisfies one expected call: same name, and (when arguments are
/// stated) JSON arguments that match.
fn call_matches(expected: &ExpectedCall, produced: &ToolCall) -> bool {
    if !expected.accepts(&produced.name) {
        return false;
    }
    if expected.args.is_none() {
        return true;
    }
    !produced.arguments_not_json() && match_args(expected, &produced.arguments).is_ok()
}

/// Backtracking search for a perfect matching of expected rows to produced columns.
fn assign(compatible: &[Vec<bool>], row: usize, used: &mut [bool]) -> bool {
    let Some(options) = compatible.get(row) else {
        return true;
    };
    for (col, &ok) in options.iter().enumerate() {
        if ok && !used[col] {
            used[col] = true;
            if assign(compatible, row + 1, used) {
                return true;
            }
            used[col] = false;
        }
    }
    false
}

fn score_schema(
    produced: &[ToolCall],
    validators: &ToolValidators,
    first: &mut FirstFailure,
) -> (Option<bool>, Vec<SchemaViolation>) {
    if produced.is_empty() {
        return (None, Vec::new());
    }
    let several = produced.len() > 1;
    let mut ok = true;
    let mut all = Vec::new();
    for call in produced {
        if call.arguments_not_json() {
            ok = false;
            first.set(
                FailureKind::ArgumentsNotJson,
                format!("arguments of {} are not valid JSON", short(&call.name)),
            );
            continue;
        }
        let Some(violations) = validators.validate(&call.name, &call.arguments) else {
            ok = false;
            first.set(
                FailureKind::UnknownTool,
                format!("unknown tool {}", short(&call.name)),
            );
            continue;
        };
        if let Some(v) = violations.first() {
            ok = false;
            let at = if v.path.is_empty() {
                "arguments".to_owned()
            } else {
                short(&v.path)
            };
            let prefix = if several {
                format!("{}: ", short(&call.name))
            } else {
                String::new()
            };
            first.set(
                FailureKind::SchemaInvalid,
                format!("{prefix}{at} failed {}", v.keyword),
            );
        }
        let room = MAX_VIOLATIONS.saturating_sub(all.len());
        all.extend(violations.into_iter().take(room));
    }
    (Some(ok), all)
}

// ---------------------------------------------------------------------------------------------
// Argument matching
// ---------------------------------------------------------------------------------------------

/// A value for a detail string: canonical JSON, truncated.
fn show(v: &Value) -> String {
    truncate(&canonical_json(v), MAX_VALUE_CHARS)
}

/// A name or path for a detail string, truncated.
fn short(s: &str) -> String {
    truncate(s, MAX_VALUE_CHARS)
}

/// Most tool names listed in one detail string; the rest are counted.
const MAX_NAMES_SHOWN: usize = 8;

fn names_label<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut shown: Vec<String> = Vec::new();
    let mut more = 0usize;
    for name in names {
        if shown.len() < MAX_NAMES_SHOWN {
            shown.push(short(name));
        } else {
            more += 1;
        }
    }
    if shown.is_empty() {
        return "no tool call".to_owned();
    }
    let mut label = shown.join(" + ");
    if more > 0 {
        label.push_str(&format!(" + … ({more} more)"));
    }
    label
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// At most `max` characters, with "…" appended when cut.
fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_owned(),
        Some((cut, _)) => format!("{}…", &s[..cut]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolscore_core::Usage;
    use toolscore_core::catalog::Tool;

    // -- fixtures ------------------------------------------------------------------------------

    fn quote_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "customer": {"type": "string"},
                "lines": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$"},
                            "qty": {"type": "integer", "minimum": 1}
                        },
                        "required": ["sku", "qty"],
                        "additionalProperties": false
                    }
                },
                "note": {"type": "string"}
            },
            "required": ["customer", "lines"],
            "additionalProperties": false
        })
    }

    fn tool(name: &str, schema: Value) -> Tool {
        Tool {
            name: name.to_owned(),
            description: String::new(),
            input_schema: schema,
            ..Default::default()
        }
    }

    fn catalog() -> Catalog {
        Catalog::new(
            vec![
                tool("create_quote", quote_schema()),
                tool(
                    "get_quote",
                    json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}),
                ),
                tool(
                    "get_weather",
                    json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
                ),
                tool(
                    "get_time",
                    json!({"type": "object", "properties": {"tz": {"type": "string"}}}),
                ),
            ],
            "test".to_owned(),
        )
    }

    fn validators() -> ToolValidators {
        ToolValidators::compile(&catalog()).expect("test catalog compiles")
    }

    fn expected(tool: &str, args: Option<Value>, matchers: &[(&str, ArgMatcher)]) -> ExpectedCall {
        ExpectedCall {
            tool: tool.to_owned(),
            args,
            matchers: matchers
                .iter()
                .map(|(k, m)| ((*k).to_owned(), m.clone()))
                .collect(),
            family: None,
        }
    }

    fn single(call: ExpectedCall) -> Expectation {
        Expectation::Calls {
            calls: vec![call],
            parallel: false,
        }
    }

    fn parallel(calls: Vec<ExpectedCall>) -> Expectation {
        Expectation::Calls {
            calls,
            parallel: true,
        }
    }

    fn call(name: &str, args: Value) -> ToolCall {
        ToolCall {
            id: None,
            name: name.to_owned(),
            arguments: args,
            unparsed_arguments: None,
            thought_signature: None,
        }
    }

    fn turn(calls: Vec<ToolCall>) -> ModelTurn {
        ModelTurn {
            tool_calls: calls,
            text: None,
            usage: Usage::default(),
            finish: None,
        }
    }

    fn good_quote() -> Value {
        json!({"customer": "ACME", "lines": [{"sku": "ABC-1", "qty": 2}, {"sku": "XYZ-9", "qty": 1}]})
    }

    fn matcher(v: Value) -> ArgMatcher {
        ArgMatcher::from_json(&v).expect("valid matcher")
    }

    fn mismatch(exp: &ExpectedCall, actual: Value) -> (String, String) {
        match_args(exp, &actual).expect_err("should mismatch")
    }

    // -- match_args ----------------------------------------------------------------------------

    #[test]
    fn match_args_exact_with_key_order_and_float_integers() {
        let exp = expected("create_quote", Some(good_quote()), &[]);
        let actual = json!({"lines": [{"qty": 2.0, "sku": "ABC-1"}, {"qty": 1, "sku": "XYZ-9"}], "customer": "ACME"});
        assert_eq!(match_args(&exp, &actual), Ok(()));
    }

    #[test]
    fn match_args_reports_type_difference_with_nested_path() {
        let exp = expected("create_quote", Some(good_quote()), &[]);
        let mut actual = good_quote();
        actual["lines"][0]["qty"] = json!("2");
        assert_eq!(
            mismatch(&exp, actual),
            ("lines.0.qty".to_owned(), "expected 2, got \"2\"".to_owned())
        );
    }

    #[test]
    fn match_args_rejects_missing_and_extra_keys() {
        let exp = expected("create_quote", Some(good_quote()), &[]);
        let mut missing = good_quote();
        missing.as_object_mut().unwrap().remove("customer");
        let (path, reason) = mismatch(&exp, missing);
        assert_eq!(path, "customer");
        assert!(reason.starts_with("missing"), "{reason}");

        let mut extra = good_quote();
        extra["note"] = json!("rush");
        let (path, reason) = mismatch(&exp, extra);
        assert_eq!(path, "note");
        assert!(reason.starts_with("unexpected argument"), "{reason}");

        let mut nested_extra = good_quote();
        nested_extra["lines"][1]["discount"] = json!(5);
        assert_eq!(mismatch(&exp, nested_extra).0, "lines.1.discount");
    }

    #[test]
    fn match_args_reports_array_length_and_non_object_root() {
        let exp = expected("create_quote", Some(good_quote()), &[]);
        let mut short = good_quote();
        short["lines"].as_array_mut().unwrap().pop();
        let (path, reason) = mismatch(&exp, short);
        assert_eq!(path, "lines");
        assert_eq!(reason, "expected 2 items, got 1");

        let (path, reason) = mismatch(&exp, json!([good_quote()]));
        assert_eq!(path, "");
        assert!(reason.contains("an array"), "{reason}");
        assert!(match_args(&exp, &json!(null)).is_err());
    }

    #[test]
    fn any_matcher_accepts_any_value_or_absence() {
        let exp = expected(
            "t",
            Some(json!({"a": 1, "note": "x"})),
            &[("note", ArgMatcher::Any)],
        );
        assert_eq!(
            match_args(&exp, &json!({"a": 1, "note": "something else"})),
            Ok(())
        );
        assert_eq!(
            match_args(&exp, &json!({"a": 1, "note": {"deep": [1]}})),
            Ok(())
        );
        assert_eq!(match_args(&exp, &json!({"a": 1})), Ok(()));
        assert_eq!(mismatch(&exp, json!({"a": 2})).0, "a");
        // A matcher on a key absent from the expected arguments allows it to appear.
        let exp = expected("t", Some(json!({"a": 1})), &[("opt", ArgMatcher::Any)]);
        assert_eq!(match_args(&exp, &json!({"a": 1, "opt": true})), Ok(()));
        assert_eq!(match_args(&exp, &json!({"a": 1})), Ok(()));
        assert_eq!(mismatch(&exp, json!({"a": 1, "other": true})).0, "other");
    }

    #[test]
    fn case_insensitive_matcher_uses_unicode_lowercase() {
        let exp = expected(
            "t",
            Some(json!({"city": "Zürich"})),
            &[("city", matcher(json!("ci")))],
        );
        assert_eq!(match_args(&exp, &json!({"city": "ZÜRICH"})), Ok(()));
        assert_eq!(match_args(&exp, &json!({"city": "zürich"})), Ok(()));
        assert_eq!(mismatch(&exp, json!({"city": "Zurich"})).0, "city");
        assert_eq!(mismatch(&exp, json!({"city": 7})).0, "city");
        assert!(mismatch(&exp, json!({})).1.starts_with("missing"));
    }

    #[test]
    fn regex_matcher_on_nested_array_path() {
        let exp = expected(
            "create_quote",
            Some(good_quote()),
            &[("lines.0.sku", matcher(json!({"regex": "[A-Z]{3}-\\d+"})))],
        );
        let mut actual = good_quote();
        actual["lines"][0]["sku"] = json!("QRS-42");
        assert_eq!(match_args(&exp, &actual), Ok(()));
        // Anchored: a partial match is not enough.
        actual["lines"][0]["sku"] = json!("QRS-42x");
        let (path, reason) = mismatch(&exp, actual.clone());
        assert_eq!(path, "lines.0.sku");
        assert!(reason.contains("/[A-Z]{3}-\\d+/"), "{reason}");
        // Not a string.
        actual["lines"][0]["sku"] = json!(42);
        assert_eq!(mismatch(&exp, actual.clone()).0, "lines.0.sku");
        // The other item is still compared exactly.
        actual["lines"][0]["sku"] = json!("ABC-1");
        actual["lines"][1]["sku"] = json!("XYZ-10");
        assert_eq!(mismatch(&exp, actual).0, "lines.1.sku");
    }

    #[test]
    fn matcher_path_absent_from_expected_args_still_applies() {
        let exp = expected(
            "t",
            Some(json!({"a": 1})),
            &[("id", matcher(json!({"regex": "q-\\d+"})))],
        );
        assert_eq!(match_args(&exp, &json!({"a": 1, "id": "q-7"})), Ok(()));
        assert_eq!(mismatch(&exp, json!({"a": 1, "id": "x"})).0, "id");
        let (path, reason) = mismatch(&exp, json!({"a": 1}));
        assert_eq!(path, "id");
        assert_eq!(reason, "missing");
        // Nested under a key the expected arguments do not have.
        let exp = expected(
            "t",
            Some(json!({"a": 1})),
            &[("meta.source", ArgMatcher::Any)],
        );
        assert_eq!(match_args(&exp, &json!({"a": 1})), Ok(()));
        assert_eq!(
            match_args(&exp, &json!({"a": 1, "meta": {"source": "web"}})),
            Ok(())
        );
        assert_eq!(
            mismatch(&exp, json!({"a": 1, "meta": {"other": 1}})).0,
            "meta.other"
        );
        // `any` on an array item lets it be absent.
        let exp = expected(
            "t",
            Some(json!({"xs": [1, 2]})),
            &[("xs.1", ArgMatcher::Any)],
        );
        assert_eq!(match_args(&exp, &json!({"xs": [1]})), Ok(()));
        assert_eq!(match_args(&exp, &json!({"xs": [1, "z"]})), Ok(()));
        assert_eq!(mismatch(&exp, json!({"xs": [3, 2]})).0, "xs.0");
        assert_eq!(mismatch(&exp, json!({"xs": [1, 2, 3]})).0, "xs.2");
    }

    #[test]
    fn one_of_matcher_is_canonical() {
        let exp = expected(
            "t",
            Some(json!({"unit": "c"})),
            &[("unit", matcher(json!({"one_of": ["c", "celsius", 1.0]})))],
        );
        assert_eq!(match_args(&exp, &json!({"unit": "celsius"})), Ok(()));
        assert_eq!(match_args(&exp, &json!({"unit": 1})), Ok(()));
        let (path, reason) = mismatch(&exp, json!({"unit": "kelvin"}));
        assert_eq!(path, "unit");
        assert!(reason.starts_with("expected one of"), "{reason}");
    }

    #[test]
    fn approx_matcher_uses_absolute_tolerance() {
        let exp = expected(
            "t",
            Some(json!({"lat": 48.8566})),
            &[("lat", matcher(json!({"approx": 0.01})))],
        );
        assert_eq!(match_args(&exp, &json!({"lat": 48.85})), Ok(()));
        assert_eq!(match_args(&exp, &json!({"lat": 48.86})), Ok(()));
        assert_eq!(mismatch(&exp, json!({"lat": 48.9})).0, "lat");
        assert_eq!(mismatch(&exp, json!({"lat": "48.8566"})).0, "lat");
        assert_eq!(mismatch(&exp, json!({})).0, "lat");
    }

    #[test]
    fn match_args_without_expected_args_checks_nothing() {
        let exp = expected("t", None, &[]);
        assert_eq!(match_args(&exp, &json!({"anything": [1, 2]})), Ok(()));
    }

    // -- score_turn: selection and arguments ----------------------------------------------------

    #[test]
    fn single_call_passes_with_matching_args() {
        let exp = single(expected("create_quote", Some(good_quote()), &[]));
        let s = score_turn(
            &exp,
            &turn(vec![call("create_quote", good_quote())]),
            &validators(),
        );
        assert!(s.passed, "{s:?}");
        assert_eq!(
            (s.selection_ok, s.args_ok, s.schema_ok),
            (true, Some(true), Some(true))
        );
        assert_eq!(s.failure, None);
        assert_eq!(s.detail, None);
        assert!(s.schema_violations.is_empty());
    }

    #[test]
    fn wrong_tool_fails_selection_and_args() {
        let exp = single(expected("create_quote", Some(good_quote()), &[]));
        let s = score_turn(
            &exp,
            &turn(vec![call("get_quote", json!({"id": "q1"}))]),
            &validators(),
        );
        assert!(!s.passed);
        assert!(!s.selection_ok);
        assert_eq!(s.args_ok, Some(false));
        assert_eq!(s.schema_ok, Some(true));
        assert_eq!(s.failure, Some(FailureKind::WrongTool));
        assert_eq!(
            s.detail.as_deref(),
            Some("expected create_quote, got get_quote")
        );
    }

    #[test]
    fn tool_only_expectation_leaves_args_unjudged() {
        let exp = single(expected("get_quote", None, &[]));
        let s = score_turn(
            &exp,
            &turn(vec![call("get_quote", json!({"id": "anything"}))]),
            &validators(),
        );
        assert!(s.passed);
        assert_eq!(s.args_ok, None);
        let s = score_turn(&exp, &turn(vec![]), &validators());
        assert!(!s.passed);
        assert_eq!(s.args_ok, None);
        assert_eq!(s.schema_ok, None);
        assert_eq!(s.failure, Some(FailureKind::NoCallMade));
        assert_eq!(
            s.detail.as_deref(),
            Some("expected get_quote, got no tool call")
        );
    }

    #[test]
    fn args_mismatch_detail_names_the_path() {
        let exp = single(expected("create_quote", Some(good_quote()), &[]));
        let mut actual = good_quote();
        actual["lines"][0]["qty"] = json!("2");
        let s = score_turn(
            &exp,
            &turn(vec![call("create_quote", actual)]),
            &validators(),
        );
        assert!(!s.passed);
        assert!(s.selection_ok);
        assert_eq!(s.args_ok, Some(false));
        assert_eq!(s.failure, Some(FailureKind::ArgsMismatch));
        assert_eq!(
            s.detail.as_deref(),
            Some("args.lines.0.qty: expected 2, got \"2\"")
        );
        // The schema also rejects a string qty; the reason shown stays the first one.
        assert_eq!(s.schema_ok, Some(false));
        assert_eq!(s.schema_violations[0].path, "lines.0.qty");
        assert_eq!(s.schema_violations[0].keyword, "type");
    }

    #[test]
    fn duplicate_calls_after_a_correct_first_call_still_pass() {
        let exp = single(expected("create_quote", Some(good_quote()), &[]));
        let calls = vec![
            call("create_quote", good_quote()),
            call("create_quote", good_quote()),
            call("get_quote", json!({"id": "q1"})),
        ];
        let s = score_turn(&exp, &turn(calls), &validators());
        assert!(s.passed, "{s:?}");
        assert!(s.selection_ok);
        assert_eq!(s.args_ok, Some(true));
        // A wrong first call is not rescued by a correct later one.
        let calls = vec![
            call("get_quote", json!({"id": "q1"})),
            call("create_quote", good_quote()),
        ];
        let s = score_turn(&exp, &turn(calls), &validators());
        assert!(!s.passed);
        assert_eq!(s.failure, Some(FailureKind::WrongTool));
    }

    #[test]
    fn no_call_expectation_passes_and_fails() {
        let ok = score_turn(&Expectation::NoCall, &turn(vec![]), &validators());
        assert!(ok.passed);
        assert_eq!(
            (ok.selection_ok, ok.args_ok, ok.schema_ok),
            (true, None, None)
        );
        assert_eq!(ok.failure, None);

        let bad = score_turn(
            &Expectation::NoCall,
            &turn(vec![call("get_time", json!({}))]),
            &validators(),
        );
        assert!(!bad.passed);
        assert!(!bad.selection_ok);
        assert_eq!(bad.schema_ok, Some(true));
        assert_eq!(bad.failure, Some(FailureKind::UnexpectedCall));
        assert_eq!(
            bad.detail.as_deref(),
            Some("expected no tool call, got get_time")
        );
    }

    #[test]
    fn arguments_not_json_is_a_scored_failure() {
        let broken =
            ToolCall::from_encoded_arguments(None, "create_quote".into(), "{\"customer\": ");
        assert!(broken.arguments_not_json());
        // With argument checking: judged in the arguments step.
        let exp = single(expected("create_quote", Some(good_quote()), &[]));
        let s = score_turn(&exp, &turn(vec![broken.clone()]), &validators());
        assert!(!s.passed);
        assert!(s.selection_ok);
        assert_eq!(s.args_ok, Some(false));
        assert_eq!(s.schema_ok, Some(false));
        assert_eq!(s.failure, Some(FailureKind::ArgumentsNotJson));
        // Tool-only: the schema step catches it.
        let exp = single(expected("create_quote", None, &[]));
        let s = score_turn(&exp, &turn(vec![broken]), &validators());
        assert!(!s.passed);
        assert!(s.selection_ok);
        assert_eq!(s.args_ok, None);
        assert_eq!(s.schema_ok, Some(false));
        assert_eq!(s.failure, Some(FailureKind::ArgumentsNotJson));
    }

    #[test]
    fn unknown_tool_fails_schema() {
        let exp = single(expected("get_time", None, &[]));
        let calls = vec![
            call("get_time", json!({})),
            call("launch_rockets", json!({})),
        ];
        let s = score_turn(&exp, &turn(calls), &validators());
        assert!(s.selection_ok);
        assert!(!s.passed);
        assert_eq!(s.schema_ok, Some(false));
        assert_eq!(s.failure, Some(FailureKind::UnknownTool));
        assert_eq!(s.detail.as_deref(), Some("unknown tool launch_rockets"));
        // As the first call it is a selection failure, noted as outside the catalog.
        let s = score_turn(
            &exp,
            &turn(vec![call("launch_rockets", json!({}))]),
            &validators(),
        );
        assert_eq!(s.failure, Some(FailureKind::WrongTool));
        assert_eq!(
            s.detail.as_deref(),
            Some("expected get_time, got launch_rockets (not in the catalog)")
        );
        assert_eq!(s.schema_ok, Some(false));
    }

    // -- score_turn: parallel -------------------------------------------------------------------

    #[test]
    fn parallel_calls_match_in_any_order_with_duplicates() {
        let exp = parallel(vec![
            expected("get_time", Some(json!({"tz": "Europe/Paris"})), &[]),
            expected("get_weather", None, &[]),
            expected("get_weather", Some(json!({"city": "Paris"})), &[]),
        ]);
        // Greedy assignment would give the name-only expectation the Paris call first; the
        // search must backtrack.
        let calls = vec![
            call("get_weather", json!({"city": "Paris"})),
            call("get_time", json!({"tz": "Europe/Paris"})),
            call("get_weather", json!({"city": "Rome"})),
        ];
        let s = score_turn(&exp, &turn(calls), &validators());
        assert!(s.passed, "{s:?}");
        assert_eq!(
            (s.selection_ok, s.args_ok, s.schema_ok),
            (true, Some(true), Some(true))
        );
    }

    #[test]
    fn parallel_duplicates_need_a_one_to_one_assignment() {
        let exp = parallel(vec![
            expected("get_weather", Some(json!({"city": "Paris"})), &[]),
            expected("get_weather", Some(json!({"city": "Rome"})), &[]),
        ]);
        let calls = vec![
            call("get_weather", json!({"city": "Paris"})),
            call("get_weather", json!({"city": "Paris"})),
        ];
        let s = score_turn(&exp, &turn(calls), &validators());
        assert!(!s.passed);
        assert!(s.selection_ok);
        assert_eq!(s.args_ok, Some(false));
        assert_eq!(s.failure, Some(FailureKind::ArgsMismatch));
        let detail = s.detail.unwrap_or_default();
        assert!(
            detail.starts_with("get_weather: args.city: expected \"Rome\""),
            "{detail}"
        );
    }

    #[test]
    fn parallel_counts_and_names_are_a_multiset() {
        let exp = parallel(vec![
            expected("get_weather", None, &[]),
            expected("get_time", None, &[]),
        ]);
        let s = score_turn(
            &exp,
            &turn(vec![call("get_weather", json!({"city": "Oslo"}))]),
            &validators(),
        );
        assert!(!s.passed);
        assert_eq!(s.failure, Some(FailureKind::WrongCallCount));
        assert_eq!(
            s.detail.as_deref(),
            Some("expected 2 calls (get_time + get_weather), got 1 (get_weather)")
        );

        let calls = vec![
            call("get_weather", json!({"city": "Oslo"})),
            call("get_weather", json!({"city": "Rome"})),
        ];
        let s = score_turn(&exp, &turn(calls), &validators());
        assert_eq!(s.failure, Some(FailureKind::WrongTool));
        assert!(!s.selection_ok);

        let calls = vec![
            call("get_time", json!({})),
            call("get_weather", json!({"city": "Oslo"})),
        ];
        let s = score_turn(&exp, &turn(calls), &validators());
        assert!(s.passed, "{s:?}");
        assert_eq!(s.args_ok, None);

        let s = score_turn(&exp, &turn(vec![]), &validators());
        assert_eq!(s.failure, Some(FailureKind::NoCallMade));
    }

    // -- schema validation ----------------------------------------------------------------------

    #[test]
    fn schema_violation_paths_are_dotted() {
        let exp = single(expected("create_quote", None, &[]));
        let mut args = good_quote();
        args["lines"][0]["sku"] = json!("abc");
        let s = score_turn(&exp, &turn(vec![call("create_quote", args)]), &validators());
        assert!(!s.passed);
        assert!(s.selection_ok);
        assert_eq!(s.schema_ok, Some(false));
        assert_eq!(s.failure, Some(FailureKind::SchemaInvalid));
        assert_eq!(s.detail.as_deref(), Some("lines.0.sku failed pattern"));
        assert_eq!(s.schema_violations.len(), 1);
        assert_eq!(s.schema_violations[0].path, "lines.0.sku");
        assert_eq!(s.schema_violations[0].keyword, "pattern");
        assert!(!s.schema_violations[0].message.is_empty());
    }

    #[test]
    fn validate_reports_keywords_and_root_path() {
        let v = validators();
        assert_eq!(v.validate("nope", &json!({})), None);
        assert_eq!(v.validate("create_quote", &good_quote()), Some(vec![]));

        let found = v
            .validate("create_quote", &json!({"lines": [], "extra": 1}))
            .expect("known tool");
        let keywords: BTreeSet<(&str, &str)> = found
            .iter()
            .map(|x| (x.path.as_str(), x.keyword.as_str()))
            .collect();
        assert!(keywords.contains(&("", "required")), "{found:?}");
        assert!(
            keywords.contains(&("", "additionalProperties")),
            "{found:?}"
        );

        let found = v
            .validate(
                "create_quote",
                &json!({"customer": "A", "lines": [{"sku": "ABC-1", "qty": 0}]}),
            )
            .expect("known tool");
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].path.as_str(), found[0].keyword.as_str()),
            ("lines.0.qty", "minimum")
        );
    }

    #[test]
    fn violations_are_capped_at_ten() {
        let v = validators();
        let lines: Vec<Value> = (0..15).map(|_| json!({"sku": "bad", "qty": 1})).collect();
        let found = v
            .validate("create_quote", &json!({"customer": "A", "lines": lines}))
            .expect("known tool");
        assert_eq!(found.len(), 10);
        let exp = single(expected("create_quote", None, &[]));
        let lines: Vec<Value> = (0..15).map(|_| json!({"sku": "bad", "qty": 1})).collect();
        let calls = vec![
            call(
                "create_quote",
                json!({"customer": "A", "lines": lines.clone()}),
            ),
            call("create_quote", json!({"customer": "B", "lines": lines})),
        ];
        let s = score_turn(&exp, &turn(calls), &validators());
        assert_eq!(s.schema_violations.len(), 10);
    }

    #[test]
    fn formats_are_validated() {
        let cat = Catalog::new(
            vec![tool(
                "book",
                json!({"type": "object", "properties": {"day": {"type": "string", "format": "date"}}}),
            )],
            "t".into(),
        );
        let v = ToolValidators::compile(&cat).expect("compiles");
        assert_eq!(
            v.validate("book", &json!({"day": "2024-02-29"})),
            Some(vec![])
        );
        let found = v
            .validate("book", &json!({"day": "2024-13-45"}))
            .expect("known tool");
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].path.as_str(), found[0].keyword.as_str()),
            ("day", "format")
        );
    }

    #[test]
    fn draft_07_tuple_items_compile_and_validate() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"pair": {"type": "array", "items": [{"type": "string"}, {"type": "number"}]}}
        });
        let cat = Catalog::new(vec![tool("pairs", schema.clone())], "t".into());
        // Without `$schema` the default draft (2020-12) would reject array-form `items`, so
        // compiling proves the draft was detected rather than forced.
        let mut undeclared = schema.clone();
        undeclared.as_object_mut().unwrap().remove("$schema");
        let as_2020 = Catalog::new(vec![tool("pairs", undeclared)], "t".into());
        assert!(ToolValidators::compile(&as_2020).is_err());
        let v = ToolValidators::compile(&cat).expect("draft-07 tuple items are valid");
        assert_eq!(
            v.validate("pairs", &json!({"pair": ["a", 1]})),
            Some(vec![])
        );
        let found = v
            .validate("pairs", &json!({"pair": ["a", "b"]}))
            .expect("known tool");
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].path.as_str(), found[0].keyword.as_str()),
            ("pair.1", "type")
        );
    }

    #[test]
    fn invalid_schema_fails_compile_with_tool_name() {
        let cat = Catalog::new(
            vec![
                tool("fine", json!({"type": "object"})),
                tool("broken", json!({"type": 12})),
            ],
            "t".into(),
        );
        let (name, message) = ToolValidators::compile(&cat).expect_err("type 12 is not a schema");
        assert_eq!(name, "broken");
        assert!(!message.is_empty());
    }

    // -- serialization and details ---------------------------------------------------------------

    #[test]
    fn failure_kinds_serialize_snake_case() {
        assert_eq!(
            serde_json::to_value(FailureKind::ArgumentsNotJson).ok(),
            Some(json!("arguments_not_json"))
        );
        assert_eq!(
            serde_json::to_value(FailureKind::NoCallMade).ok(),
            Some(json!("no_call_made"))
        );
        let s = score_turn(&Expectation::NoCall, &turn(vec![]), &validators());
        let back: TrialScore =
            serde_json::from_value(serde_json::to_value(&s).expect("serializes")).expect("parses");
        assert_eq!(back, s);
    }

    #[test]
    fn a_reply_with_thousands_of_calls_gives_a_bounded_detail() {
        let calls: Vec<ToolCall> = (0..10_000)
            .map(|i| ToolCall {
                id: Some(format!("c{i}")),
                name: "get_quote".into(),
                arguments: json!({}),
                unparsed_arguments: None,
                thought_signature: None,
            })
            .collect();
        let turn = ModelTurn {
            tool_calls: calls,
            ..ModelTurn::default()
        };
        let s = score_turn(&Expectation::NoCall, &turn, &validators());
        let detail = s.detail.expect("a failure detail");
        assert!(detail.len() < 400, "{} chars", detail.len());
        assert!(detail.ends_with("(9992 more)"), "{detail}");
        assert!(s.schema_violations.len() <= 10);
    }

    #[test]
    fn long_values_are_truncated_in_details() {
        let long = "x".repeat(500);
        let exp = single(expected("get_weather", Some(json!({"city": "Paris"})), &[]));
        let s = score_turn(
            &exp,
            &turn(vec![call("get_weather", json!({"city": long}))]),
            &validators(),
        );
        let detail = s.detail.expect("has detail");
        assert!(
            detail.starts_with("args.city: expected \"Paris\", got \"xxx"),
            "{detail}"
        );
        assert!(detail.chars().count() < 150, "{detail}");
        assert!(detail.ends_with('…'), "{detail}");
        assert_eq!(truncate("héllo", 2), "hé…");
        assert_eq!(truncate("hé", 2), "hé");
    }

    proptest::proptest! {
        /// Any arguments match themselves, whatever the key order or number form they are
        /// produced in, and a changed leaf never matches.
        #[test]
        fn arguments_match_themselves_and_not_a_changed_leaf(
            fields in proptest::collection::btree_map("[a-e]{1,3}", -50i64..50, 1..6),
            pick in 0usize..6,
        ) {
            let want = Value::Object(fields.iter().map(|(k, v)| (k.clone(), json!(v))).collect());
            // The same values as floats, in reverse key order.
            let got = Value::Object(fields.iter().rev().map(|(k, v)| (k.clone(), json!(*v as f64))).collect());
            let exp = ExpectedCall { tool: "t".into(), args: Some(want), matchers: BTreeMap::new(), family: None };
            proptest::prop_assert!(match_args(&exp, &got).is_ok());
            let key = fields.keys().nth(pick % fields.len()).unwrap().clone();
            let mut changed = got.clone();
            changed[&key] = json!(fields[&key] + 1);
            let (path, _) = match_args(&exp, &changed).unwrap_err();
            proptest::prop_assert_eq!(path, key);
        }
    }
}
