//! Config, datasets and fixtures: parsed and validated before any model is called, with errors
//! that name the file, the line and the field.
//!
//! `attack` and `shown` are public as namespaces; the other modules are private and the root
//! re-exports what other crates name (`lock_of` is `lock::of`, the lock of a loaded suite).

pub mod attack;
mod config;
mod fit;
mod live;
mod lock;
mod scenario;
mod script;
pub mod shown;
mod variant;

pub use fit::{CaseFit, fit_cases};
pub use live::{DATASET_FILE, load_dataset_file, parse_dataset_file};
pub use lock::of as lock_of;
pub use scenario::{Scenario, load_scenarios, parse_scenario};
pub use script::{
    Effect, INJECTION, RuleCondition, RuleResponse, Script, ScriptRule, valid_expression,
};

use std::collections::BTreeMap;

use serde_json::Value;

use toolscore_core::Message;

pub use config::{
    CONCURRENCY_RANGE, Config, Defaults, MAX_RETRIES_RANGE, PRICE_RANGE, ProviderEntry,
    REPLAY_KIND, TEMPERATURE_RANGE, concurrency_ok, confidence_ok, load_config, max_retries_ok,
    parse_config, precision_ok, price_ok, temperature_ok,
};
pub use variant::{CatalogVariant, apply_overlay};

/// One fixture: the conversation up to the decision and what should happen next.
#[derive(Debug, Clone)]
pub struct Case {
    pub id: String,
    /// 1-based line in `cases.jsonl`, for error messages and reports.
    pub line: usize,
    pub messages: Vec<Message>,
    pub expect: Expectation,
    pub tags: Vec<String>,
    /// `"gate": 0.99`: this case's bar under a case-level gate, instead of the `--gate`
    /// threshold (a stricter one for a dangerous tool).
    pub gate: Option<f64>,
    /// `"trials": N`: trials of this case instead of `--trials` (more for a case that needs
    /// them).
    pub trials: Option<u32>,
    /// `"catalog": {"tools": [...]}`: the tools this case alone shows the model, instead of the
    /// dataset's (a BFCL question comes with its own functions, and two questions may define
    /// one name differently), with their compiled validators. Catalog variants do not apply.
    pub catalog: Option<(Arc<Catalog>, Arc<ToolValidators>)>,
    /// `"source"`: where an imported case came from (free-form JSON, kept for provenance).
    pub source: Option<Value>,
}

/// The tag `toolscore init` puts on each starter case, so a user can find the cases to edit.
pub const STARTER_TAG: &str = "starter";

/// How `toolscore init` begins each starter case's request: the text the user replaces.
pub const STARTER_PLACEHOLDER: &str = "EDIT ME:";

impl Case {
    /// Whether this is a starter case as `toolscore init` wrote it: still tagged `starter`, and
    /// a user message still beginning with the placeholder. Both marks, so a case whose request
    /// was written is real even if it keeps its tag, and a real request that happens to begin
    /// "EDIT ME:" (a case for an editing tool) is not taken for a placeholder.
    pub fn is_unedited_starter(&self) -> bool {
        unedited_starter(&self.tags, &self.messages)
    }
}

/// [`Case::is_unedited_starter`]'s rule, for a case that may not load.
fn unedited_starter(tags: &[String], messages: &[Message]) -> bool {
    tags.iter().any(|t| t == STARTER_TAG)
        && messages.iter().any(|m| {
            matches!(m, Message::User { content } if content.trim_start().starts_with(STARTER_PLACEHOLDER))
        })
}

// ---------------------------------------------------------------------------------------------
// Loading and validation.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use toolscore_core::catalog::{Catalog, line_of, load_catalog_file};
use toolscore_core::{InputError, strip_position};
use toolscore_score::{ArgMatcher, Expectation, ExpectedCall, ToolPattern, ToolValidators};

/// A catalog, its compiled validators and its fixtures, validated together.
pub struct Dataset {
    pub name: String,
    pub dir: PathBuf,
    pub catalog: Arc<Catalog>,
    pub validators: Arc<ToolValidators>,
    pub cases: Vec<Case>,
    /// Every catalog the dataset can be shown: the base first, then each
    /// `variants/<name>.json` overlay in name order.
    pub variants: Vec<CatalogVariant>,
    /// The live MCP server the catalog was listed from (`dataset.yaml`), None for a tools.json.
    pub live: Option<toolscore_core::catalog::source::LiveSource>,
    /// `sha256:` of the fixtures as data (each line's canonical JSON, in file order): a
    /// resumed run refuses fixtures edited since it began, whitespace and key order aside.
    pub fixtures_digest: String,
}

impl Dataset {
    /// The catalog shown under `variant` (`base` for tools.json).
    pub fn variant(&self, name: &str) -> Option<&CatalogVariant> {
        self.variants.iter().find(|v| v.name == name)
    }

    /// Names of the variants this dataset has, base first.
    pub fn variant_names(&self) -> Vec<&str> {
        self.variants.iter().map(|v| v.name.as_str()).collect()
    }
}

/// Loads `DIR/tools.json` (or lists the live server `DIR/dataset.yaml` names) and
/// `DIR/cases.jsonl`, compiling every schema once.
pub fn load_dataset(dir: &Path) -> Result<Dataset, toolscore_core::Error> {
    if !dir.is_dir() {
        // A folder beside it with a near name is most likely the one meant.
        let siblings: Vec<String> = dir
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| Path::new(".").to_path_buf(), Path::to_path_buf)
            .read_dir()
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter(|e| e.path().is_dir())
                    .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                    .take(10_000)
                    .collect()
            })
            .unwrap_or_default();
        let hint = dir
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| toolscore_core::did_you_mean(n, siblings.iter().map(String::as_str)))
            .map_or(String::new(), |n| {
                format!("; did you mean {}?", dir.with_file_name(n).display())
            });
        return Err(InputError::at(
            &dir.display().to_string(),
            None,
            "",
            &format!(
                "dataset folder not found (expected DIR/tools.json and DIR/cases.jsonl){hint}"
            ),
        )
        .into());
    }
    let tools_path = dir.join("tools.json");
    let (catalog, live) = match live::load_dataset_file(dir)? {
        Some(spec) => {
            let (catalog, live) = list_live_catalog(&spec, &tools_path)?;
            (catalog, Some(live))
        }
        None => (load_catalog_file(&tools_path)?, None),
    };
    let validators = ToolValidators::compile(&catalog).map_err(|(tool, message)| {
        let file = catalog.source.clone();
        let text = std::fs::read_to_string(&tools_path).unwrap_or_default();
        let index = catalog
            .tools
            .iter()
            .position(|t| t.name == tool)
            .unwrap_or(0);
        InputError::at(
            &file,
            line_of(&text, &format!("\"{tool}\"")),
            &format!("tools[{index}].inputSchema"),
            &format!("tool `{tool}` has an invalid JSON Schema: {message}"),
        )
    })?;
    let cases_path = dir.join("cases.jsonl");
    let text = toolscore_core::read_text(&cases_path)?;
    let cases = parse_cases(&text, &cases_path.display().to_string(), &catalog)?;
    let fixtures_digest = fixtures_digest(&text);
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string());
    let mut variants = variant::load_variants(dir, &catalog)?;
    let catalog = Arc::new(catalog);
    let validators = Arc::new(validators);
    variants.insert(
        0,
        CatalogVariant::base(Arc::clone(&catalog), Arc::clone(&validators)),
    );
    Ok(Dataset {
        name,
        dir: dir.to_owned(),
        catalog,
        validators,
        cases,
        variants,
        live,
        fixtures_digest,
    })
}

/// The catalog of the live server `dataset.yaml` names, listed now; an error when the folder
/// also has a tools.json or the server lists no tools.
fn list_live_catalog(
    spec: &live::LiveCatalogSpec,
    tools_path: &Path,
) -> Result<(Catalog, toolscore_core::catalog::source::LiveSource), toolscore_core::Error> {
    let file = spec.file.display().to_string();
    if tools_path.exists() {
        return Err(InputError::at(
            &file,
            None,
            "catalog",
            &format!(
                "this dataset has both a live server here and {}; keep one",
                tools_path.display()
            ),
        )
        .into());
    }
    let listed = toolscore_mcp::list_catalog_blocking(&spec.spec, spec.timeout, &|name| {
        std::env::var(name).ok()
    })?;
    let mut catalog = listed.catalog;
    if catalog.tools.is_empty() {
        return Err(InputError::at(
            &file,
            None,
            "catalog",
            &format!("the MCP server {} lists no tools", spec.spec.label()),
        )
        .into());
    }
    catalog.source = file;
    let live = toolscore_core::catalog::source::LiveSource {
        source: spec.spec.label(),
        server: listed.server,
    };
    Ok((catalog, live))
}

/// [`Dataset::fixtures_digest`] of `cases.jsonl` text that [`parse_cases`] accepted.
fn fixtures_digest(text: &str) -> String {
    let canonical: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| match serde_json::from_str::<Value>(l) {
            Ok(v) => toolscore_core::canonical_json(&v),
            Err(_) => l.to_owned(),
        })
        .collect();
    toolscore_core::sha256_of(&canonical.join("\n"))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    id: String,
    messages: Vec<Message>,
    expect: RawExpect,
    #[serde(default)]
    tags: Vec<String>,
    gate: Option<f64>,
    trials: Option<u32>,
    catalog: Option<Value>,
    source: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    /// Absent, `null` (no call) or a tool name; kept as a Value to tell absent from null.
    #[serde(default = "absent")]
    tool: Value,
    args: Option<Value>,
    #[serde(rename = "match")]
    matchers: Option<BTreeMap<String, Value>>,
    calls: Option<Vec<RawCall>>,
    bfcl: Option<toolscore_score::bfcl::BfclExpect>,
}

fn absent() -> Value {
    Value::Bool(false)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCall {
    tool: String,
    args: Option<Value>,
    #[serde(rename = "match")]
    matchers: Option<BTreeMap<String, Value>>,
}

/// Most trials one case may ask for: a million requests is already a budget decision.
pub(crate) const MAX_CASE_TRIALS: u32 = 1_000_000;

/// Parses `cases.jsonl` text: one fixture per non-blank line.
pub fn parse_cases(text: &str, file: &str, catalog: &Catalog) -> Result<Vec<Case>, InputError> {
    let mut cases = Vec::new();
    let mut first_line_of: HashMap<String, usize> = HashMap::new();
    for (index, raw_line) in text.lines().enumerate() {
        let line = index + 1;
        if raw_line.trim().is_empty() {
            continue;
        }
        let raw = parse_case_line(raw_line, file, line)?;
        if raw.id.trim().is_empty() {
            return Err(InputError::at(
                file,
                Some(line),
                "id",
                "case id must not be empty",
            ));
        }
        if let Some(first) = first_line_of.get(&raw.id) {
            return Err(InputError::at(
                file,
                Some(line),
                "id",
                &format!(
                    "duplicate case id `{}` (first used on line {first})",
                    raw.id
                ),
            ));
        }
        first_line_of.insert(raw.id.clone(), line);
        cases.push(case_of(raw, file, line, catalog)?);
    }
    if cases.is_empty() {
        return Err(InputError::at(
            file,
            None,
            "",
            "no fixtures found (one JSON object per line)",
        ));
    }
    Ok(cases)
}

/// A parsed line of cases.jsonl as a case: its messages, expectation (against its own
/// catalog when it has one), tags, gate and trials checked.
fn case_of(raw: RawCase, file: &str, line: usize, catalog: &Catalog) -> Result<Case, InputError> {
    let err = |field: &str, msg: &str| {
        InputError::at(
            file,
            Some(line),
            field,
            &format!("case `{}`: {msg}", raw.id),
        )
    };
    validate_messages(&raw.messages).map_err(|(field, msg)| err(&field, &msg))?;
    let own_catalog = match &raw.catalog {
        None => None,
        Some(value) => Some(own_catalog(value, &raw.id, file, line)?),
    };
    let shown = own_catalog.as_ref().map_or(catalog, |(c, _)| c.as_ref());
    let expect = build_expectation(raw.expect, shown).map_err(|(field, msg)| err(&field, &msg))?;
    let tags = raw
        .tags
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if let Some(g) = raw.gate
        && !(g > 0.0 && g < 1.0)
    {
        return Err(err(
            "gate",
            &format!("`gate` is a rate threshold strictly between 0 and 1 (got {g})"),
        ));
    }
    if raw.trials == Some(0) || raw.trials.is_some_and(|t| t > MAX_CASE_TRIALS) {
        return Err(err(
            "trials",
            &format!("`trials` must be between 1 and {MAX_CASE_TRIALS}"),
        ));
    }
    Ok(Case {
        id: raw.id,
        line,
        messages: raw.messages,
        expect,
        tags,
        gate: raw.gate,
        trials: raw.trials,
        catalog: own_catalog,
        source: raw.source,
    })
}

/// One line of cases.jsonl as a fixture, its fault located at the line, column and field.
fn parse_case_line(raw_line: &str, file: &str, line: usize) -> Result<RawCase, InputError> {
    let de = &mut serde_json::Deserializer::from_str(raw_line);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        // `?` is serde_path_to_error's "somewhere unknown": it names nothing.
        let field = if path == "." || path.is_empty() || path == "?" {
            None
        } else {
            Some(path)
        };
        let message = if inner.is_eof() {
            "this line is not a complete JSON object: cases.jsonl is JSON Lines, so each fixture must fit on one line (write it without line breaks)".to_owned()
        } else if inner.is_syntax() {
            format!(
                "this line is not valid JSON ({}); each fixture is one JSON object on one line",
                strip_position(&inner.to_string())
            )
        } else {
            format!("invalid fixture: {}", strip_position(&inner.to_string()))
        };
        InputError::at_column(file, line, inner.column(), field, &message)
    })
}

/// A case's own catalog (one tool at least) and its compiled validators.
fn own_catalog(
    value: &Value,
    id: &str,
    file: &str,
    line: usize,
) -> Result<(Arc<Catalog>, Arc<ToolValidators>), InputError> {
    let err = |field: &str, msg: &str| {
        InputError::at(file, Some(line), field, &format!("case `{id}`: {msg}"))
    };
    let source = format!("{file}:{line} (case `{id}`)");
    let own = toolscore_core::catalog::parse_catalog(&value.to_string(), &source)
        .map_err(|e| err("catalog", &strip_position(&e.to_string())))?;
    if own.tools.is_empty() {
        return Err(err(
            "catalog",
            "a case's own catalog needs at least one tool",
        ));
    }
    let validators = ToolValidators::compile(&own).map_err(|(tool, message)| {
        err(
            "catalog",
            &format!("tool `{tool}` has an invalid JSON Schema: {message}"),
        )
    })?;
    Ok((Arc::new(own), Arc::new(validators)))
}

pub fn validate_messages(messages: &[Message]) -> Result<(), (String, String)> {
    if messages.is_empty() {
        return Err((
            "messages".into(),
            "a fixture needs at least one message".into(),
        ));
    }
    let mut call_ids = BTreeSet::new();
    for (i, m) in messages.iter().enumerate() {
        match m {
            Message::Assistant { tool_calls, .. } => {
                for (j, call) in tool_calls.iter().enumerate() {
                    if !call.arguments.is_object() {
                        return Err((
                            format!("messages[{i}].tool_calls[{j}].arguments"),
                            "arguments must be a JSON object".into(),
                        ));
                    }
                    if let Some(id) = &call.id {
                        call_ids.insert(id.clone());
                    }
                }
            }
            Message::Tool { call_id, .. } if !call_ids.contains(call_id) => {
                return Err((
                    format!("messages[{i}].call_id"),
                    format!(
                        "tool result answers `{call_id}`, which no earlier assistant tool call has as its id"
                    ),
                ));
            }
            _ => {}
        }
    }
    match messages.last() {
        Some(Message::User { .. }) | Some(Message::Tool { .. }) => Ok(()),
        _ => Err((format!("messages[{}]", messages.len() - 1), "the conversation must end with a user message or a tool result (the model decides next)".into())),
    }
}

fn build_expectation(raw: RawExpect, catalog: &Catalog) -> Result<Expectation, (String, String)> {
    if let Some(b) = raw.bfcl {
        let alone = raw.tool == Value::Bool(false)
            && raw.calls.is_none()
            && raw.args.is_none()
            && raw.matchers.is_none();
        return bfcl_expectation(b, alone, catalog);
    }
    match (raw.tool, raw.calls) {
        (Value::Bool(false), None) => Err((
            "expect".into(),
            "state `tool` (a tool name, or null for no call) or `calls` (parallel calls)".into(),
        )),
        (Value::Bool(false), Some(calls)) => {
            if raw.args.is_some() || raw.matchers.is_some() {
                return Err((
                    "expect".into(),
                    "with `calls`, put `args` and `match` inside each call".into(),
                ));
            }
            parallel_calls(calls, catalog)
        }
        (Value::Null, None) => {
            if raw.args.is_some() || raw.matchers.is_some() {
                return Err((
                    "expect.args".into(),
                    "a no-call expectation (`tool`: null) cannot have `args` or `match`".into(),
                ));
            }
            Ok(Expectation::NoCall)
        }
        (Value::String(tool), None) => Ok(Expectation::Calls {
            calls: vec![build_call(tool, raw.args, raw.matchers, catalog, "expect")?],
            parallel: false,
        }),
        (Value::Object(spec), None) => family_call(&spec, raw.args, raw.matchers, catalog),
        (_, Some(_)) => Err((
            "expect".into(),
            "use either `tool` or `calls`, not both".into(),
        )),
        (_, None) => Err((
            "expect.tool".into(),
            "`tool` must be a tool name, null, {\"any_of\": [names]} or {\"regex\": \"pattern\"}"
                .into(),
        )),
    }
}

/// A `bfcl` expectation: BFCL's own answer format, standing alone, its tools in the catalog.
fn bfcl_expectation(
    b: toolscore_score::bfcl::BfclExpect,
    alone: bool,
    catalog: &Catalog,
) -> Result<Expectation, (String, String)> {
    if !alone {
        return Err((
            "expect.bfcl".into(),
            "a `bfcl` expectation stands alone (no `tool`, `calls`, `args` or `match`)".into(),
        ));
    }
    b.validate().map_err(|e| ("expect.bfcl".to_owned(), e))?;
    for name in b.tool_names() {
        if catalog.get(&name).is_none() {
            return Err((
                "expect.bfcl.answer".into(),
                format!("tool `{name}` is not in the catalog {}", catalog.source),
            ));
        }
    }
    Ok(Expectation::Bfcl(Arc::new(b)))
}

/// `calls`: parallel calls, each with its own `args` and `match`.
fn parallel_calls(calls: Vec<RawCall>, catalog: &Catalog) -> Result<Expectation, (String, String)> {
    if calls.is_empty() {
        return Err((
            "expect.calls".into(),
            "`calls` must list at least one call (use \"tool\": null for no call)".into(),
        ));
    }
    let calls = calls
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            build_call(
                c.tool,
                c.args,
                c.matchers,
                catalog,
                &format!("expect.calls[{i}]"),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Expectation::Calls {
        calls,
        parallel: true,
    })
}

/// `tool: {"any_of": …}` or `{"regex": …}`: one call of a family of tools, its arguments
/// checked against the family's first tool in the catalog.
fn family_call(
    spec: &serde_json::Map<String, Value>,
    args: Option<Value>,
    matchers: Option<BTreeMap<String, Value>>,
    catalog: &Catalog,
) -> Result<Expectation, (String, String)> {
    let family = tool_family(spec)?;
    // The arguments are checked against the first catalog tool of the family.
    let Some(member) = catalog
        .tools
        .iter()
        .find(|t| family.matches(&t.name))
        .map(|t| t.name.clone())
    else {
        return Err((
            "expect.tool".into(),
            format!(
                "no tool of the catalog {} is in the family {}",
                catalog.source,
                family.label()
            ),
        ));
    };
    let mut call = build_call(member, args, matchers, catalog, "expect")?;
    call.tool = family.label();
    call.family = Some(family);
    Ok(Expectation::Calls {
        calls: vec![call],
        parallel: false,
    })
}

/// `{"any_of": [names]}` (every name needs not exist yet, but one must) or `{"regex": "…"}`
/// (anchored): a tool family, so a fixture survives a catalog refresh that renames a tool.
fn tool_family(spec: &serde_json::Map<String, Value>) -> Result<ToolPattern, (String, String)> {
    let err = |m: &str| Err(("expect.tool".to_owned(), m.to_owned()));
    match spec.iter().next() {
        Some((k, Value::Array(names))) if spec.len() == 1 && k == "any_of" && !names.is_empty() => {
            let names: Option<Vec<String>> = names
                .iter()
                .map(|n| n.as_str().map(str::to_owned))
                .collect();
            match names {
                Some(n) => Ok(ToolPattern::AnyOf(n)),
                None => err("`any_of` lists tool names"),
            }
        }
        Some((k, Value::String(p))) if spec.len() == 1 && k == "regex" => {
            match regex::Regex::new(&format!("^(?:{p})$")) {
                Ok(re) => Ok(ToolPattern::Regex(re)),
                Err(e) => err(&format!("invalid regex: {e}")),
            }
        }
        _ => err("a tool family is {\"any_of\": [names]} or {\"regex\": \"pattern\"}"),
    }
}

fn build_call(
    tool: String,
    args: Option<Value>,
    matchers: Option<BTreeMap<String, Value>>,
    catalog: &Catalog,
    field: &str,
) -> Result<ExpectedCall, (String, String)> {
    if catalog.get(&tool).is_none() {
        let known: Vec<&str> = catalog.tools.iter().map(|t| t.name.as_str()).collect();
        return Err((
            format!("{field}.tool"),
            format!(
                "tool `{tool}` is not in the catalog {} (known: {})",
                catalog.source,
                known.join(", ")
            ),
        ));
    }
    if let Some(a) = &args
        && !a.is_object()
    {
        return Err((
            format!("{field}.args"),
            "expected arguments must be a JSON object".into(),
        ));
    }
    let mut parsed = BTreeMap::new();
    for (path, spec) in matchers.unwrap_or_default() {
        let m = ArgMatcher::from_json(&spec).map_err(|e| (format!("{field}.match.{path}"), e))?;
        // `ci` and `approx` compare against the expected value; without one every trial would
        // fail, so say so now rather than report a 0% rate.
        let needs_expected = matches!(m, ArgMatcher::CaseInsensitive | ArgMatcher::Approx(_));
        if needs_expected
            && args
                .as_ref()
                .and_then(|a| toolscore_core::value_at_path(a, &path))
                .is_none()
        {
            return Err((
                format!("{field}.match.{path}"),
                format!(
                    "this matcher compares with the expected value, but `args` has no value at `{path}`"
                ),
            ));
        }
        parsed.insert(path, m);
    }
    if args.is_none() && !parsed.is_empty() {
        return Err((
            format!("{field}.match"),
            "`match` refines `args`: give `args` too".into(),
        ));
    }
    Ok(ExpectedCall {
        tool,
        args,
        matchers: parsed,
        family: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolscore_core::catalog::parse_catalog;

    fn catalog() -> Catalog {
        parse_catalog(r#"{"tools":[{"name":"get_quote","inputSchema":{"type":"object"}},{"name":"send_invoice","inputSchema":{"type":"object"}}]}"#, "tools.json").unwrap()
    }

    #[test]
    fn parses_single_parallel_and_no_call() {
        let text = concat!(
            r#"{"id":"a","messages":[{"role":"user","content":"q"}],"expect":{"tool":"get_quote","args":{"quote_id":"qt_1"},"match":{"quote_id":"ci"}}}"#,
            "\n",
            "\n",
            r#"{"id":"b","messages":[{"role":"user","content":"hi"}],"expect":{"tool":null},"tags":["x","x"]}"#,
            "\n",
            r#"{"id":"c","messages":[{"role":"user","content":"q"}],"expect":{"calls":[{"tool":"get_quote"},{"tool":"send_invoice","args":{}}]}}"#,
        );
        let cases = parse_cases(text, "cases.jsonl", &catalog()).unwrap();
        assert_eq!(cases.len(), 3);
        assert_eq!(cases[1].line, 3);
        assert!(matches!(cases[1].expect, Expectation::NoCall));
        assert_eq!(cases[1].tags, vec!["x".to_string()]);
        assert_eq!(cases[2].expect.tool_label(), "get_quote + send_invoice");
        assert!(cases[0].expect.checks_args());
    }

    #[test]
    fn a_starter_case_is_unedited_only_while_it_keeps_both_marks() {
        let text = [
            // As init wrote it.
            r#"{"id":"a","messages":[{"role":"user","content":"EDIT ME: write what a user would ask"}],"expect":{"tool":"get_quote"},"tags":["starter"]}"#,
            // A system prompt added before it changes nothing.
            r#"{"id":"b","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"  EDIT ME: write it"}],"expect":{"tool":"get_quote"},"tags":["billing","starter"]}"#,
            // The request written, the tag kept: real.
            r#"{"id":"c","messages":[{"role":"user","content":"show quote qt_1"}],"expect":{"tool":"get_quote"},"tags":["starter"]}"#,
            // A real request that begins so, untagged: real.
            r#"{"id":"d","messages":[{"role":"user","content":"EDIT ME: is the title of my draft"}],"expect":{"tool":"get_quote"}}"#,
        ]
        .join("\n");
        let cases = parse_cases(&text, "cases.jsonl", &catalog()).unwrap();
        let unedited: Vec<&str> = cases
            .iter()
            .filter(|c| c.is_unedited_starter())
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(unedited, ["a", "b"]);
    }

    #[test]
    fn a_tool_family_accepts_any_member_and_survives_a_rename() {
        use toolscore_core::{ModelTurn, ToolCall};
        let text = concat!(
            r#"{"id":"f","messages":[{"role":"user","content":"q"}],"expect":{"tool":{"any_of":["get_quote","fetch_quote"]},"args":{"quote_id":"qt_1"}}}"#,
            "\n",
            r#"{"id":"r","messages":[{"role":"user","content":"q"}],"expect":{"tool":{"regex":"(get|send)_.*"}}}"#,
        );
        let cat = catalog();
        let cases = parse_cases(text, "cases.jsonl", &cat).unwrap();
        assert_eq!(cases[0].expect.tool_label(), "get_quote|fetch_quote");
        let validators = toolscore_score::ToolValidators::compile(&cat).unwrap();
        let turn = |name: &str| ModelTurn {
            tool_calls: vec![ToolCall {
                id: None,
                name: name.into(),
                arguments: serde_json::json!({"quote_id": "qt_1"}),
                unparsed_arguments: None,
                thought_signature: None,
            }],
            ..Default::default()
        };
        let judge = |i: usize, name: &str| {
            toolscore_score::score_trial(&cases[i].expect, &[turn(name)], &validators).selection_ok
        };
        // `fetch_quote` is a later name of the tool: not in this catalog, still accepted.
        assert!(judge(0, "get_quote") && judge(0, "fetch_quote") && !judge(0, "send_invoice"));
        assert!(judge(1, "send_invoice") && !judge(1, "list_quotes"));
        let none = r#"{"id":"n","messages":[{"role":"user","content":"q"}],"expect":{"tool":{"any_of":["nope"]}}}"#;
        assert!(err_of(none).contains("no tool of the catalog tools.json is in the family nope"));
        let bad = r#"{"id":"b","messages":[{"role":"user","content":"q"}],"expect":{"tool":{"one_of":["x"]}}}"#;
        assert!(err_of(bad).contains("a tool family is"), "{}", err_of(bad));
    }

    fn err_of(text: &str) -> String {
        parse_cases(text, "cases.jsonl", &catalog())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn unknown_tool_names_file_line_and_field() {
        let msg = err_of(
            "\n{\"id\":\"a\",\"messages\":[{\"role\":\"user\",\"content\":\"q\"}],\"expect\":{\"tool\":\"nope\"}}",
        );
        assert!(
            msg.starts_with(
                "cases.jsonl:2: expect.tool: case `a`: tool `nope` is not in the catalog"
            ),
            "{msg}"
        );
    }

    #[test]
    fn duplicate_ids_point_at_both_lines() {
        let line =
            r#"{"id":"a","messages":[{"role":"user","content":"q"}],"expect":{"tool":null}}"#;
        let msg = err_of(&format!("{line}\n{line}"));
        assert!(
            msg.contains("cases.jsonl:2: id: duplicate case id `a` (first used on line 1)"),
            "{msg}"
        );
    }

    #[test]
    fn bad_json_and_bad_fields_are_located() {
        let msg = err_of("{\"id\":\"a\",\"messages\":[}");
        assert!(msg.starts_with("cases.jsonl:1:"), "{msg}");
        assert!(msg.contains("not valid JSON"), "{msg}");
        let msg = err_of(
            r#"{"id":"a","messages":[{"role":"robot","content":"q"}],"expect":{"tool":null}}"#,
        );
        assert!(msg.contains("messages[0]"), "{msg}");
        let msg = err_of(
            r#"{"id":"a","messages":[{"role":"user","content":"q"}],"expect":{"tool":"get_quote","args":{},"match":{"x":{"regex":"("}}}}"#,
        );
        assert!(
            msg.contains("expect.match.x: case `a`: invalid regex"),
            "{msg}"
        );
        let msg = err_of(
            r#"{"id":"a","messages":[{"role":"user","content":"q"}],"expect":{"tool":"get_quote","args":{"a":[1]},"match":{"a.1":{"approx":0.1}}}}"#,
        );
        assert!(
            msg.contains(
                "expect.match.a.1: case `a`: this matcher compares with the expected value"
            ),
            "{msg}"
        );
        let msg = err_of(r#"{"id":"a","messages":[{"role":"user","content":"q"}],"expect":{}}"#);
        assert!(msg.contains("expect: case `a`: state `tool`"), "{msg}");
    }

    #[test]
    fn tool_results_must_answer_earlier_calls() {
        let msg = err_of(
            r#"{"id":"a","messages":[{"role":"user","content":"q"},{"role":"tool","call_id":"c9","content":"{}"}],"expect":{"tool":null}}"#,
        );
        assert!(msg.contains("messages[1].call_id"), "{msg}");
    }
}
