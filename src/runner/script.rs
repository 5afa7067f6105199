//! Scripted tools for scenarios: each tool answers a call with the first of its rules whose
//! condition matches the arguments, and a rule may change the scenario's state (a JSON
//! document), so a write the model repeats really happens twice and later answers can say
//! so. Arguments that break the tool's input schema get a validation error naming the failing
//! path, as a real server answers. Pure: no I/O, deterministic.

use serde_json::{Map, Value};

use crate::json::{canonical_json, json_equal, value_at_path};
use crate::message::ToolCall;
use crate::record::{CallKind, ExecutedCall};
use crate::score::{ToolValidators, check_matcher};

pub use crate::suite::script::{
    Effect, RuleCondition, RuleResponse, Script, ScriptRule, valid_expression,
};

/// The largest a scenario's state or one scripted result may grow, as compact JSON. A template
/// that copies the state into itself (`append: {path: calls, value: "${state}"}`) doubles it
/// on every call, which 40 steps take past any memory; past this cap the trial stops and
/// fails with the reason, so it is accounted for like any other.
pub const MAX_SCRIPT_BYTES: usize = 1 << 20;

/// The script of one trial as it runs: its state, and which result wording it answers with.
pub struct ScriptRun<'a> {
    script: &'a Script,
    variant: Option<&'a str>,
    state: Value,
    /// Set once the state or a result passed [`MAX_SCRIPT_BYTES`]: the trial must stop.
    over_limit: bool,
}

impl<'a> ScriptRun<'a> {
    /// A fresh run: the initial state, answering in `variant`'s wording where a rule has one.
    pub fn new(script: &'a Script, variant: Option<&'a str>) -> Self {
        ScriptRun {
            script,
            variant,
            state: script.initial_state.clone().unwrap_or(Value::Null),
            over_limit: false,
        }
    }

    /// Whether the state or a result passed [`MAX_SCRIPT_BYTES`]; the last executed call says
    /// which, and the trial stops there.
    pub fn over_limit(&self) -> bool {
        self.over_limit
    }

    /// The state now; `None` when the scenario declares none.
    pub fn final_state(&self) -> Option<Value> {
        self.script
            .initial_state
            .as_ref()
            .map(|_| self.state.clone())
    }

    /// Answers one call of step `step`.
    pub fn execute(
        &mut self,
        step: u32,
        call: &ToolCall,
        validators: &ToolValidators,
    ) -> ExecutedCall {
        let mut out = ExecutedCall {
            step,
            tool: call.name.clone(),
            arguments: call.arguments.clone(),
            unparsed_arguments: call.unparsed_arguments.clone(),
            kind: CallKind::Scripted,
            rule: None,
            content: String::new(),
            structured: None,
            is_error: true,
            state: None,
        };
        if !validators.contains(&call.name) {
            out.kind = CallKind::UnknownTool;
            out.content = format!("Unknown tool: {}", call.name);
            return out;
        }
        if call.arguments_not_json() {
            out.kind = CallKind::InvalidArguments;
            out.content = "Invalid arguments: not valid JSON".to_owned();
            return out;
        }
        if self.script.validate_arguments
            && let Some(message) = violations_message(call, validators)
        {
            out.kind = CallKind::InvalidArguments;
            out.content = message;
            return out;
        }
        let Some((index, rule)) = self.matching_rule(call) else {
            out.kind = CallKind::Unscripted;
            out.content = format!(
                "No scripted result for this call to {} (the scenario has no rule matching these arguments)",
                call.name
            );
            return out;
        };
        let args = &call.arguments;
        for effect in &rule.effects {
            self.apply(effect, args);
            let size = crate::json::compact_len(&self.state);
            if size > MAX_SCRIPT_BYTES {
                // Dropped rather than kept: it would be written into results.jsonl.
                self.state = Value::String(format!("(dropped: {size} bytes)"));
                return self.stopped(out, &format!("the scenario's state grew to {size} bytes after this call's effects, past the cap of {MAX_SCRIPT_BYTES}; a template that copies the state into itself doubles it on every call"));
            }
        }
        let response = self
            .variant
            .and_then(|v| rule.variants.get(v))
            .unwrap_or(&rule.response);
        let structured = response
            .structured
            .as_ref()
            .map(|s| render(s, args, &self.state));
        out.content = match &response.content {
            Some(text) => render_text(text, args, &self.state),
            None => structured.as_ref().map(canonical_json).unwrap_or_default(),
        };
        let size = out.content.len() + structured.as_ref().map_or(0, crate::json::compact_len);
        if size > MAX_SCRIPT_BYTES {
            return self.stopped(out, &format!("this call's scripted result rendered to {size} bytes, past the cap of {MAX_SCRIPT_BYTES}"));
        }
        out.structured = structured;
        out.is_error = response.is_error;
        out.rule = Some(index as u32);
        if !rule.effects.is_empty() {
            out.state = Some(self.state.clone());
        }
        out
    }

    /// The first of the tool's rules whose condition the call's arguments meet, with its index.
    fn matching_rule(&self, call: &ToolCall) -> Option<(usize, &'a ScriptRule)> {
        let script: &'a Script = self.script;
        script
            .tools
            .get(&call.name)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .enumerate()
            .find(|(_, r)| r.when.matches(&call.arguments))
    }

    /// The call that passed the size cap: an error result saying why, and the run marked so
    /// the trial stops.
    fn stopped(&mut self, mut out: ExecutedCall, why: &str) -> ExecutedCall {
        self.over_limit = true;
        out.content = format!("Scenario stopped: {why}.");
        out.structured = None;
        out.is_error = true;
        out
    }

    fn apply(&mut self, effect: &Effect, args: &Value) {
        match effect {
            Effect::Set { path, value } => {
                let v = render(value, args, &self.state);
                *slot(&mut self.state, path) = v;
            }
            Effect::Append { path, value } => {
                let v = render(value, args, &self.state);
                let target = slot(&mut self.state, path);
                match target {
                    Value::Array(items) => items.push(v),
                    other => *other = Value::Array(vec![v]),
                }
            }
            Effect::Increment { path, by } => {
                let target = slot(&mut self.state, path);
                let now = target.as_f64().unwrap_or(0.0) + by;
                *target = number(now);
            }
        }
    }
}

impl RuleCondition {
    /// Whether the rule applies to a call's arguments.
    pub fn matches(&self, args: &Value) -> bool {
        if let Some(want) = &self.args {
            let Some(got) = args.as_object() else {
                return false;
            };
            if self.exact && got.len() != want.len() {
                return false;
            }
            let all = want.iter().all(|(k, w)| {
                // A key also judged by a matcher is left to the matcher.
                self.matchers.contains_key(k) || got.get(k).is_some_and(|g| json_equal(w, g))
            });
            if !all {
                return false;
            }
        }
        self.matchers.iter().all(|(path, m)| {
            let want = self
                .args
                .as_ref()
                .and_then(|a| value_at_path(&Value::Object(a.clone()), path).cloned());
            check_matcher(path, m, want.as_ref(), value_at_path(args, path)).is_ok()
        })
    }
}

/// The value at a dotted path of `root`, created (as objects, or array slots for numeric
/// segments of an existing array) when absent.
fn slot<'v>(root: &'v mut Value, path: &str) -> &'v mut Value {
    let mut cur = root;
    for seg in path.split('.').filter(|s| !s.is_empty()) {
        let index = seg.parse::<usize>().ok();
        cur = match (cur, index) {
            (Value::Array(items), Some(i)) => {
                if i >= items.len() {
                    items.resize(i + 1, Value::Null);
                }
                &mut items[i]
            }
            (other, _) => {
                if !other.is_object() {
                    *other = Value::Object(Map::new());
                }
                match other {
                    Value::Object(map) => map.entry(seg.to_owned()).or_insert(Value::Null),
                    _ => unreachable!("just made an object"),
                }
            }
        };
    }
    cur
}

/// Integral results stay integers in the state (`3`, not `3.0`).
fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        Value::from(x as i64)
    } else {
        serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
    }
}

/// Renders a template value: every string is rendered with [`render_text`], except a string
/// that is exactly one `${…}`, which becomes the referenced JSON value itself (so
/// `value: "${args}"` appends the arguments as an object, not as text).
pub fn render(template: &Value, args: &Value, state: &Value) -> Value {
    match template {
        Value::String(s) => {
            if let Some(expr) = s.strip_prefix("${").and_then(|r| r.strip_suffix('}'))
                && !expr.contains("${")
                && !expr.contains('}')
            {
                return lookup(expr, args, state).unwrap_or(Value::Null);
            }
            Value::String(render_text(s, args, state))
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| render(v, args, state)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), render(v, args, state)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Replaces each `${args.PATH}`, `${state.PATH}` (strings bare, other values as compact JSON,
/// absent as empty) and `${#state.PATH}` (the length of an array, object or string) in text.
fn render_text(text: &str, args: &Value, state: &Value) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        match lookup(&after[..end], args, state) {
            Some(Value::String(s)) => out.push_str(&s),
            Some(v) => out.push_str(&canonical_json(&v)),
            None => {}
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

fn lookup(expr: &str, args: &Value, state: &Value) -> Option<Value> {
    let (length, e) = match expr.strip_prefix('#') {
        Some(rest) => (true, rest),
        None => (false, expr),
    };
    let (root, path) = e.split_once('.').unwrap_or((e, ""));
    let doc = match root {
        "args" => args,
        "state" => state,
        _ => return None,
    };
    let v = value_at_path(doc, path)?;
    if length {
        let n = match v {
            Value::Array(a) => a.len(),
            Value::Object(o) => o.len(),
            Value::String(s) => s.chars().count(),
            _ => return Some(Value::from(0)),
        };
        return Some(Value::from(n));
    }
    Some(v.clone())
}

/// What the tool answers a call whose arguments break its schema: the first three
/// violations, each at its path; None when they conform.
fn violations_message(call: &ToolCall, validators: &ToolValidators) -> Option<String> {
    let violations = validators.validate(&call.name, &call.arguments)?;
    if violations.is_empty() {
        return None;
    }
    let shown: Vec<String> = violations
        .iter()
        .take(3)
        .map(|v| {
            let path = if v.path.is_empty() {
                "(root)"
            } else {
                v.path.as_str()
            };
            format!("{path}: {}", v.message)
        })
        .collect();
    Some(format!(
        "Invalid arguments for {}: {}",
        call.name,
        shown.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use std::collections::BTreeMap;

    use super::*;
    use crate::catalog::{Catalog, Tool};
    use crate::score::ArgMatcher;

    fn validators() -> ToolValidators {
        ToolValidators::compile(&Catalog::new(
            vec![
                Tool {
                    name: "append_note".into(),
                    description: String::new(),
                    input_schema: json!({"type":"object","properties":{"text":{"type":"string","minLength":1}},"required":["text"]}),
                },
                Tool {
                    name: "lookup".into(),
                    description: String::new(),
                    input_schema: json!({"type":"object"}),
                },
            ],
            "t".into(),
        ))
        .unwrap()
    }

    fn call(name: &str, args: serde_json::Value) -> ToolCall {
        ToolCall::for_test(name, args)
    }

    fn notes_script() -> Script {
        let mut tools = BTreeMap::new();
        tools.insert(
            "append_note".to_owned(),
            vec![ScriptRule {
                when: RuleCondition::default(),
                effects: vec![
                    Effect::Append {
                        path: "notes".into(),
                        value: json!("${args.text}"),
                    },
                    Effect::Increment {
                        path: "writes".into(),
                        by: 1.0,
                    },
                ],
                response: RuleResponse {
                    content: Some("{\"ok\": true}".into()),
                    ..Default::default()
                },
                variants: [(
                    "verbose".to_owned(),
                    RuleResponse {
                        content: Some(
                            "Saved \"${args.text}\"; notes.md now has ${#state.notes} entries."
                                .into(),
                        ),
                        ..Default::default()
                    },
                )]
                .into(),
            }],
        );
        tools.insert(
            "lookup".to_owned(),
            vec![
                ScriptRule {
                    when: RuleCondition {
                        args: Some(
                            json!({"email": "ana@example.com"})
                                .as_object()
                                .unwrap()
                                .clone(),
                        ),
                        ..Default::default()
                    },
                    effects: vec![],
                    response: RuleResponse {
                        structured: Some(json!({"id": "C-1", "echo": "${args}"})),
                        ..Default::default()
                    },
                    variants: BTreeMap::new(),
                },
                ScriptRule {
                    when: RuleCondition {
                        matchers: [(
                            "email".to_owned(),
                            ArgMatcher::Regex(regex::Regex::new("^(?:.*@example\\.org)$").unwrap()),
                        )]
                        .into(),
                        ..Default::default()
                    },
                    effects: vec![],
                    response: RuleResponse {
                        content: Some("Unknown account ${args.email}".into()),
                        is_error: true,
                        ..Default::default()
                    },
                    variants: BTreeMap::new(),
                },
            ],
        );
        Script {
            tools,
            validate_arguments: true,
            initial_state: Some(json!({"notes": []})),
        }
    }

    #[test]
    fn a_repeated_write_happens_twice_and_the_wording_variant_says_so() {
        let script = notes_script();
        let v = validators();
        let mut run = ScriptRun::new(&script, None);
        let a = run.execute(0, &call("append_note", json!({"text": "hi"})), &v);
        let b = run.execute(1, &call("append_note", json!({"text": "hi"})), &v);
        assert_eq!(
            (a.kind, a.is_error, a.content.as_str()),
            (CallKind::Scripted, false, "{\"ok\": true}")
        );
        assert_eq!(b.rule, Some(0));
        assert_eq!(
            run.final_state(),
            Some(json!({"notes": ["hi", "hi"], "writes": 2}))
        );
        let mut verbose = ScriptRun::new(&script, Some("verbose"));
        let c = verbose.execute(0, &call("append_note", json!({"text": "hi"})), &v);
        assert_eq!(c.content, "Saved \"hi\"; notes.md now has 1 entries.");
    }

    #[test]
    fn rules_match_subsets_and_matchers_in_order_and_render_structured_results() {
        let script = notes_script();
        let v = validators();
        let mut run = ScriptRun::new(&script, None);
        let found = run.execute(
            0,
            &call("lookup", json!({"email": "ana@example.com", "extra": 1})),
            &v,
        );
        assert_eq!(
            found.structured,
            Some(json!({"id": "C-1", "echo": {"email": "ana@example.com", "extra": 1}}))
        );
        assert_eq!(
            found.content,
            "{\"echo\":{\"email\":\"ana@example.com\",\"extra\":1},\"id\":\"C-1\"}"
        );
        let unknown = run.execute(0, &call("lookup", json!({"email": "bo@example.org"})), &v);
        assert_eq!((unknown.is_error, unknown.rule), (true, Some(1)));
        assert_eq!(unknown.content, "Unknown account bo@example.org");
        let unscripted = run.execute(0, &call("lookup", json!({"email": "x@y.z"})), &v);
        assert_eq!(unscripted.kind, CallKind::Unscripted);
        assert!(unscripted.is_error);
    }

    #[test]
    fn invalid_arguments_and_unknown_tools_are_answered_like_a_server_would() {
        let script = notes_script();
        let v = validators();
        let mut run = ScriptRun::new(&script, None);
        let bad = run.execute(0, &call("append_note", json!({"text": ""})), &v);
        assert_eq!(bad.kind, CallKind::InvalidArguments);
        assert!(
            bad.content
                .starts_with("Invalid arguments for append_note: text: "),
            "{}",
            bad.content
        );
        let missing = run.execute(0, &call("append_note", json!({})), &v);
        assert!(
            missing
                .content
                .contains("(root): \"text\" is a required property"),
            "{}",
            missing.content
        );
        assert_eq!(
            run.final_state(),
            Some(json!({"notes": []})),
            "no effect on invalid calls"
        );
        let unknown = run.execute(0, &call("delete_all", json!({})), &v);
        assert_eq!(
            (unknown.kind, unknown.content.as_str()),
            (CallKind::UnknownTool, "Unknown tool: delete_all")
        );
        let garbled = ToolCall::from_encoded_arguments(None, "lookup".into(), "{oops");
        assert_eq!(
            run.execute(0, &garbled, &v).kind,
            CallKind::InvalidArguments
        );
    }

    #[test]
    fn templates() {
        let args = json!({"a": {"b": 2}, "s": "x"});
        let state = json!({"list": [1, 2, 3]});
        assert_eq!(
            render_text(
                "a=${args.a.b} s=${args.s} n=${#state.list} gone=${args.nope}",
                &args,
                &state
            ),
            "a=2 s=x n=3 gone="
        );
        assert_eq!(render(&json!("${args.a}"), &args, &state), json!({"b": 2}));
        assert_eq!(
            render_text("unclosed ${args", &args, &state),
            "unclosed ${args"
        );
        assert!(
            valid_expression("#state.x")
                && valid_expression("args")
                && !valid_expression("env.HOME")
        );
        let mut s = json!(null);
        *slot(&mut s, "a.0.b") = json!(1);
        assert_eq!(s, json!({"a": {"0": {"b": 1}}}));
    }
}
