//! The data of scripted tools (what a scenario file declares); `runner::script` executes it.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use toolscore_core::{json_equal, value_at_path};
use toolscore_score::{ArgMatcher, check_matcher};

/// Every scripted tool of a scenario, with its initial state.
#[derive(Debug, Clone, Default)]
pub struct Script {
    pub tools: ToolRules,
    /// Answer schema-breaking arguments with a validation error before any rule (default).
    pub validate_arguments: bool,
    /// The state before the first call; `None` when the scenario declares none.
    pub initial_state: Option<Value>,
}

/// Each scripted tool's rules, in the order they are tried.
pub(crate) type ToolRules = BTreeMap<String, Vec<ScriptRule>>;

/// One rule: when it applies, what it does to the state, and what it answers.
#[derive(Debug, Clone)]
pub struct ScriptRule {
    pub when: RuleCondition,
    pub effects: Vec<Effect>,
    pub response: RuleResponse,
    /// Other wordings of the response, by result-variant name (run as arms).
    pub variants: BTreeMap<String, RuleResponse>,
}

/// When a rule applies. Empty = always (a tool's default rule).
#[derive(Debug, Clone, Default)]
pub struct RuleCondition {
    /// These arguments, compared canonically: a subset of the call's (or all of them with
    /// `exact`).
    pub args: Option<Map<String, Value>>,
    pub exact: bool,
    /// Per-field matchers at dotted paths, as in fixtures (`any`, `ci`, `regex`, `one_of`,
    /// `approx`).
    pub matchers: BTreeMap<String, ArgMatcher>,
}

/// A change to the scenario's state. Values are templates (see [`render`]).
#[derive(Debug, Clone)]
pub enum Effect {
    Set { path: String, value: Value },
    Append { path: String, value: Value },
    Increment { path: String, by: f64 },
}

/// What a rule answers. `content` and `structured` are templates.
#[derive(Debug, Clone, Default)]
pub struct RuleResponse {
    /// The text content; when absent, the structured content as compact JSON.
    pub content: Option<String>,
    pub structured: Option<Value>,
    pub is_error: bool,
}

/// The template expression that marks where an attack's payload goes in a scripted answer
/// (`${injection}`); it renders as nothing in a clean trial.
pub const INJECTION: &str = "injection";

/// Whether a template expression is one `runner::script::render` understands (checked when loading).
pub fn valid_expression(expr: &str) -> bool {
    if expr == INJECTION {
        return true;
    }
    let e = expr.strip_prefix('#').unwrap_or(expr);
    let root = e.split('.').next().unwrap_or("");
    root == "args" || root == "state"
}

impl RuleResponse {
    /// Whether the answer marks a place for an attack's payload (`${injection}`).
    pub fn has_injection_point(&self) -> bool {
        fn holds(v: &Value) -> bool {
            match v {
                Value::String(s) => mentions_injection(s),
                Value::Array(items) => items.iter().any(holds),
                Value::Object(map) => map.values().any(holds),
                Value::Null | Value::Bool(_) | Value::Number(_) => false,
            }
        }
        self.content.as_deref().is_some_and(mentions_injection)
            || self.structured.as_ref().is_some_and(holds)
    }
}

fn mentions_injection(text: &str) -> bool {
    text.contains(concat!("${", "injection", "}"))
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
