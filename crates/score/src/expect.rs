//! What a fixture expects: the tool (or no tool) and the arguments, with per-field matchers.
//! The types live beside the scoring that judges them; `suite` only parses them.

use std::collections::BTreeMap;

use serde_json::Value;

/// What a fixture expects the model to do at its decision point.
#[derive(Debug, Clone)]
pub enum Expectation {
    /// `"tool": null`: the model must answer without calling any tool.
    NoCall,
    /// One call (`"tool": "x"`), or several parallel calls (`"calls": [...]`) matched in any
    /// order.
    Calls {
        calls: Vec<ExpectedCall>,
        parallel: bool,
    },
    /// `"bfcl": {...}`: a case imported from the Berkeley Function Calling Leaderboard, passed
    /// exactly when BFCL's own checker would pass it (see `score::bfcl`).
    Bfcl(std::sync::Arc<super::bfcl::BfclExpect>),
}

impl Expectation {
    /// Whether any expected call states its arguments (so argument matching applies).
    pub fn checks_args(&self) -> bool {
        match self {
            Expectation::NoCall => false,
            Expectation::Calls { calls, .. } => calls.iter().any(|c| c.args.is_some()),
            Expectation::Bfcl(b) => matches!(
                b.checker,
                super::bfcl::BfclChecker::Simple
                    | super::bfcl::BfclChecker::Multiple
                    | super::bfcl::BfclChecker::Parallel
            ),
        }
    }

    /// A short label for grouping by tool: `create_quote`, `(no call)`, or `a + b` for
    /// parallel calls.
    pub fn tool_label(&self) -> String {
        match self {
            Expectation::NoCall => "(no call)".to_owned(),
            Expectation::Bfcl(b) => match b.checker {
                super::bfcl::BfclChecker::Irrelevance => "(no call)".to_owned(),
                super::bfcl::BfclChecker::Relevance => "(any call)".to_owned(),
                _ => {
                    let mut names = b.tool_names();
                    names.sort_unstable();
                    names.join(" + ")
                }
            },
            Expectation::Calls { calls, .. } => {
                let mut names: Vec<&str> = calls.iter().map(|c| c.tool.as_str()).collect();
                names.sort_unstable();
                names.join(" + ")
            }
        }
    }
}

/// One expected tool call.
#[derive(Debug, Clone)]
pub struct ExpectedCall {
    /// The expected tool's name, or the family's label (`a|b`, `/pattern/`).
    pub tool: String,
    /// A tool family: any of several names, or a name pattern, instead of the one `tool`.
    pub family: Option<ToolPattern>,
    /// Expected arguments; `None` = only the tool choice is checked.
    pub args: Option<Value>,
    /// Per-field matchers keyed by dotted path into the arguments (`lines.0.sku`). A path
    /// with a matcher is compared by the matcher instead of by equality.
    pub matchers: BTreeMap<String, ArgMatcher>,
}

impl ExpectedCall {
    /// Whether a call of tool `name` is the expected tool (or one of its family).
    pub fn accepts(&self, name: &str) -> bool {
        match &self.family {
            Some(f) => f.matches(name),
            None => self.tool == name,
        }
    }
}

/// Which tools an expectation accepts: one name, any of several (a tool family), or a name
/// pattern, so a suite survives a `tools/list` refresh that renames or adds a tool.
#[derive(Debug, Clone)]
pub enum ToolPattern {
    Name(String),
    AnyOf(Vec<String>),
    /// Anchored: the whole name must match.
    Regex(regex::Regex),
}

impl ToolPattern {
    pub fn matches(&self, name: &str) -> bool {
        match self {
            ToolPattern::Name(n) => n == name,
            ToolPattern::AnyOf(names) => names.iter().any(|n| n == name),
            ToolPattern::Regex(re) => re.is_match(name),
        }
    }

    /// How the pattern reads in a report: `apply_credit`, `apply_credit|issue_credit`,
    /// `/.*_credit/`.
    pub fn label(&self) -> String {
        match self {
            ToolPattern::Name(n) => n.clone(),
            ToolPattern::AnyOf(names) => names.join("|"),
            ToolPattern::Regex(re) => {
                let p = re.as_str();
                let shown = p
                    .strip_prefix("^(?:")
                    .and_then(|p| p.strip_suffix(")$"))
                    .unwrap_or(p);
                format!("/{shown}/")
            }
        }
    }
}

/// How one argument field is compared.
#[derive(Debug, Clone)]
pub enum ArgMatcher {
    /// Any value, and the field may also be absent.
    Any,
    /// Strings equal ignoring case.
    CaseInsensitive,
    /// The value is a string matching the regex (anchored: the whole string must match).
    Regex(regex::Regex),
    /// The value equals (canonically) one of these.
    OneOf(Vec<Value>),
    /// A number within this absolute tolerance of the expected number.
    Approx(f64),
}

impl ArgMatcher {
    /// Parses the JSON form used in fixtures: `"any"`, `"ci"`, `{"regex": "..."}`,
    /// `{"one_of": [...]}`, `{"approx": 0.01}`. The error says what is accepted.
    pub fn from_json(value: &Value) -> Result<ArgMatcher, String> {
        const ACCEPTED: &str = "expected \"any\", \"ci\", {\"regex\": \"...\"}, {\"one_of\": [...]} or {\"approx\": <tolerance>}";
        match value {
            Value::String(s) if s == "any" => Ok(ArgMatcher::Any),
            Value::String(s) if s == "ci" => Ok(ArgMatcher::CaseInsensitive),
            Value::Object(map) if map.len() == 1 => {
                let (key, arg) = map.iter().next().ok_or_else(|| ACCEPTED.to_owned())?;
                match (key.as_str(), arg) {
                    ("regex", Value::String(pattern)) => {
                        regex::Regex::new(&format!("^(?:{pattern})$"))
                            .map(ArgMatcher::Regex)
                            .map_err(|e| format!("invalid regex: {e}"))
                    }
                    ("one_of", Value::Array(options)) if !options.is_empty() => {
                        Ok(ArgMatcher::OneOf(options.clone()))
                    }
                    ("approx", Value::Number(n)) => match n.as_f64() {
                        Some(t) if t >= 0.0 && t.is_finite() => Ok(ArgMatcher::Approx(t)),
                        _ => Err("`approx` tolerance must be a finite number >= 0".to_owned()),
                    },
                    _ => Err(ACCEPTED.to_owned()),
                }
            }
            _ => Err(ACCEPTED.to_owned()),
        }
    }
}
