//! A scenario file as written: the YAML shape serde reads, before any check.

use super::{BTreeMap, Deserialize, Map, Message, PathBuf, Value};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScenario {
    pub(super) description: Option<String>,
    /// A dataset folder (its tools.json and variants) or a catalog file, relative to the
    /// scenario file; or a live MCP server (`{command, args, …}` or `{url, …}`).
    pub(super) catalog: RawCatalog,
    /// Tools executed on the live server (`all`, or a list) instead of scripted.
    pub(super) live: Option<RawLive>,
    /// Live tools whose real result gets an attack's payload appended.
    #[serde(default)]
    pub(super) inject: Vec<String>,
    #[serde(default = "default_max_steps")]
    pub(super) max_steps: u32,
    pub(super) trials: Option<u32>,
    #[serde(default = "yes")]
    pub(super) validate_arguments: bool,
    pub(super) messages: Vec<Message>,
    pub(super) state: Option<Value>,
    #[serde(default)]
    pub(super) tools: BTreeMap<String, Vec<RawRule>>,
    pub(super) expect: RawExpect,
    #[serde(default)]
    pub(super) tags: Vec<String>,
    /// Other openings of the conversation by variant name, run as arms (a defended system
    /// prompt against none).
    #[serde(default)]
    pub(super) variants: BTreeMap<String, RawOpening>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOpening {
    pub(super) messages: Vec<Message>,
}

#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawCatalog {
    Path(PathBuf),
    Server(crate::live::RawServer),
}

#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawLive {
    All(String),
    Tools(Vec<String>),
}

pub(super) fn default_max_steps() -> u32 {
    8
}

pub(super) fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRule {
    pub(super) when: Option<RawWhen>,
    #[serde(default)]
    pub(super) effects: Vec<RawEffect>,
    pub(super) result: Option<Value>,
    pub(super) content: Option<String>,
    pub(super) structured: Option<Value>,
    pub(super) error: Option<String>,
    #[serde(default)]
    pub(super) is_error: bool,
    #[serde(default)]
    pub(super) variants: BTreeMap<String, RawResponse>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawResponse {
    pub(super) result: Option<Value>,
    pub(super) content: Option<String>,
    pub(super) structured: Option<Value>,
    pub(super) error: Option<String>,
    #[serde(default)]
    pub(super) is_error: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWhen {
    pub(super) args: Option<Map<String, Value>>,
    #[serde(rename = "match")]
    pub(super) matchers: Option<BTreeMap<String, Value>>,
    #[serde(default)]
    pub(super) exact: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEffect {
    pub(super) set: Option<RawPathValue>,
    pub(super) append: Option<RawPathValue>,
    pub(super) increment: Option<RawIncrement>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPathValue {
    pub(super) path: String,
    pub(super) value: Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawIncrement {
    pub(super) path: String,
    #[serde(default = "one")]
    pub(super) by: f64,
}

pub(super) fn one() -> f64 {
    1.0
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExpect {
    pub(super) sequence: Option<RawSequence>,
    #[serde(default)]
    pub(super) forbidden: Vec<Value>,
    pub(super) max_calls: Option<u32>,
    #[serde(default)]
    pub(super) state: Vec<RawStateCheck>,
    pub(super) answer: Option<RawAnswer>,
    #[serde(default)]
    pub(super) allow_unscripted: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSequence {
    #[serde(default = "in_order")]
    pub(super) mode: String,
    pub(super) calls: Vec<RawItem>,
}

pub(super) fn in_order() -> String {
    "in_order".to_owned()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawItem {
    pub(super) tool: Value,
    pub(super) args: Option<Value>,
    #[serde(rename = "match")]
    pub(super) matchers: Option<BTreeMap<String, Value>>,
    #[serde(default)]
    pub(super) uses: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStateCheck {
    pub(super) path: String,
    pub(super) equals: Option<Value>,
    #[serde(rename = "match")]
    pub(super) matcher: Option<Value>,
    pub(super) length: Option<usize>,
    #[serde(default)]
    pub(super) absent: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAnswer {
    #[serde(default)]
    pub(super) contains: Vec<String>,
    pub(super) regex: Option<String>,
    #[serde(default)]
    pub(super) cites: Vec<String>,
}
