//! `scenarios/<name>.yaml`: a multi-step task — the catalog, the opening messages, scripted
//! tools with an optional state, and what the trajectory and its outcome must show. Parsed and
//! validated before any model is called; errors name the file, the line and the field.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::live::LiveCatalogSpec;
use super::script::{
    Effect, INJECTION, RuleCondition, RuleResponse, Script, ScriptRule, ToolRules, valid_expression,
};
use super::variant::{CatalogVariant, load_variants};
use toolscore_core::BASE_VARIANT;
use toolscore_core::Message;
use toolscore_core::catalog::source::ServerIdentity;
use toolscore_core::catalog::{line_of, load_catalog_file};
use toolscore_core::{Error, InputError};
use toolscore_score::{ArgMatcher, ExpectedCall, ToolValidators};
use toolscore_score::{
    ResultRef, ScenarioExpect, SequenceItem, SequenceMode, StateCheck, ToolPattern,
};

mod expect;
mod raw;

use expect::build_expect;
pub(crate) use expect::matchers;
use raw::{
    RawAnswer, RawCatalog, RawEffect, RawExpect, RawLive, RawRule, RawScenario, RawSequence,
};

/// Most requests one trial may make (`max_steps`).
const MAX_STEPS_LIMIT: u32 = 64;

/// A loaded, validated scenario.
#[derive(Clone)]
pub struct Scenario {
    /// The file stem: the scenario's id in records and reports.
    pub name: String,
    pub file: PathBuf,
    pub description: Option<String>,
    /// The catalogs it can be shown: the base first, then the dataset's overlays (when
    /// `catalog` names a dataset folder).
    pub catalogs: Vec<CatalogVariant>,
    pub messages: Vec<Message>,
    pub max_steps: u32,
    pub trials: Option<u32>,
    pub script: Script,
    pub expect: ScenarioExpect,
    /// The result-wording variants its rules define, in name order.
    pub result_variants: Vec<String>,
    /// Other openings of the conversation by variant name (`variants: NAME: messages:`), run
    /// as arms: the same task behind a defended system prompt, say. An arm of any other
    /// variant opens with `messages`.
    pub openings: BTreeMap<String, Vec<Message>>,
    pub tags: Vec<String>,
    /// The live MCP server the catalog was listed from, and which tools run on it.
    pub server: Option<LiveTools>,
    /// `sha256:` of the scenario file's text (and, for an attacked unit, of its attack): a
    /// resumed run refuses a scenario edited since it began.
    pub source_digest: String,
    /// Live tools whose real result gets an attack's payload appended (`inject:`).
    pub inject: BTreeSet<String>,
    /// Set on an attacked unit (`run --attacks`): the attack and the scenario it attacks.
    pub attack: Option<crate::attack::AttackedBy>,
}

/// A scenario's live server: a fresh session per trial executes `tools` (all when `None`).
#[derive(Clone)]
pub struct LiveTools {
    pub spec: LiveCatalogSpec,
    pub identity: ServerIdentity,
    /// The tools executed on the server; `None` = every tool.
    pub tools: Option<std::collections::BTreeSet<String>>,
}

impl Scenario {
    /// Whether calls of `tool` go to the live server (rather than to the script). A tool the
    /// script answers never does: an attacked unit scripts the attacker's tools it adds.
    pub fn is_live(&self, tool: &str) -> bool {
        !self.script.tools.contains_key(tool)
            && self
                .server
                .as_ref()
                .is_some_and(|l| l.tools.as_ref().is_none_or(|t| t.contains(tool)))
    }

    /// The key this scenario's conversations are recorded and replayed under, from the hash
    /// of its opening request. An attacked unit opens with the same request as its clean
    /// scenario (the payload comes later, in a tool result), so its key also names the
    /// attack: else a recording would replay one unit's answers to the other.
    pub fn conversation_key(&self, opening_hash: String) -> String {
        match &self.attack {
            None => opening_hash,
            Some(by) => {
                toolscore_core::sha256_of(&format!("{opening_hash}\nattack\n{}", by.attack.id))
            }
        }
    }

    /// Whether an attack has somewhere to go: a scripted answer holding `${injection}`, or a
    /// live tool listed in `inject`.
    pub fn has_injection_point(&self) -> bool {
        !self.inject.is_empty()
            || self.script.tools.values().flatten().any(|rule| {
                rule.response.has_injection_point()
                    || rule
                        .variants
                        .values()
                        .any(RuleResponse::has_injection_point)
            })
    }
}

impl Scenario {
    /// The catalog an arm of catalog variant `name` is shown: that variant of the dataset, or
    /// the base when only the results have such a variant.
    pub fn catalog_for(&self, variant: &str) -> Option<&CatalogVariant> {
        if let Some(v) = self.catalogs.iter().find(|c| c.name == variant) {
            return Some(v);
        }
        if variant == BASE_VARIANT
            || self.result_variants.iter().any(|r| r == variant)
            || self.openings.contains_key(variant)
        {
            return self.catalogs.first();
        }
        None
    }

    /// Every variant name this scenario can run under (base first).
    pub fn variant_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.catalogs.iter().map(|c| c.name.clone()).collect();
        for r in self.result_variants.iter().chain(self.openings.keys()) {
            if !names.contains(r) {
                names.push(r.clone());
            }
        }
        names
    }

    /// The conversation an arm of `variant` opens with: that variant's opening, or the
    /// scenario's `messages`.
    pub fn messages_for(&self, variant: &str) -> &[Message] {
        self.openings.get(variant).unwrap_or(&self.messages)
    }

    /// The result wording an arm of `variant` answers with, when the rules have one.
    pub fn wording_for(&self, variant: &str) -> Option<&str> {
        self.result_variants
            .iter()
            .find(|r| *r == variant)
            .map(String::as_str)
    }
}

/// Loads every scenario a path names: a `.yaml`/`.yml` file, or each such file of a folder
/// (name order; a README or other files are ignored).
pub fn load_scenarios(path: &Path) -> Result<Vec<Scenario>, Error> {
    let shown = path.display().to_string();
    if path.is_dir() {
        let entries = std::fs::read_dir(path).map_err(|e| Error::from(InputError::io(path, &e)))?;
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(InputError::at(
                &shown,
                None,
                "",
                "no scenario files (*.yaml) in this folder",
            )
            .into());
        }
        return files.iter().map(|f| load_scenario(f)).collect();
    }
    if !path.exists() {
        return Err(InputError::at(&shown, None, "", "scenario file not found").into());
    }
    Ok(vec![load_scenario(path)?])
}

/// Loads one scenario file (listing its live server's catalog, when it names one).
fn load_scenario(path: &Path) -> Result<Scenario, Error> {
    let text = toolscore_core::read_text(path)?;
    let file = path.display().to_string();
    // A bare file name has the empty path as parent: the current folder.
    let base = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    parse_scenario(&text, &file, &name, base)
}

/// The catalogs a scenario's `catalog:` resolves to, and its live server when it names one.
type ResolvedCatalog = (
    Vec<CatalogVariant>,
    Option<(LiveCatalogSpec, ServerIdentity)>,
);

/// The catalogs a scenario's `catalog:` names: files are read, a live server is listed (once,
/// at load time; each trial then opens its own session to execute tools).
fn resolve_catalog(
    raw: RawCatalog,
    text: &str,
    file: &str,
    base: &Path,
) -> Result<ResolvedCatalog, Error> {
    match raw {
        RawCatalog::Path(p) => {
            let path = if p.is_relative() { base.join(&p) } else { p };
            let catalogs = load_catalogs(&path).map_err(|e| {
                if e.location.is_empty() {
                    InputError::at(file, line_of(text, "catalog:"), "catalog", &e.message)
                } else {
                    e
                }
            })?;
            Ok((catalogs, None))
        }
        RawCatalog::Server(server) => {
            let spec = super::live::server_spec(server, text, Path::new(file), base, "catalog")?;
            let listed = toolscore_mcp::list_catalog_blocking(&spec.spec, spec.timeout, &|n| {
                std::env::var(n).ok()
            })?;
            let mut catalog = listed.catalog;
            if catalog.tools.is_empty() {
                return Err(InputError::at(
                    file,
                    line_of(text, "catalog:"),
                    "catalog",
                    &format!("the MCP server {} lists no tools", spec.spec.label()),
                )
                .into());
            }
            catalog.source = spec.spec.label();
            let validators = ToolValidators::compile(&catalog).map_err(|(tool, message)| {
                InputError::at(
                    file,
                    line_of(text, "catalog:"),
                    &format!("catalog: tool {tool}"),
                    &format!("the server's tool `{tool}` has an invalid input schema: {message}"),
                )
            })?;
            Ok((
                vec![CatalogVariant::base(
                    Arc::new(catalog),
                    Arc::new(validators),
                )],
                Some((spec, listed.server)),
            ))
        }
    }
}

/// Parses scenario text named `file`; `catalog` is resolved against `base`.
pub fn parse_scenario(text: &str, file: &str, name: &str, base: &Path) -> Result<Scenario, Error> {
    let mut raw: RawScenario =
        serde_saphyr::from_str(text).map_err(|e| InputError::yaml(file, "scenario", &e))?;
    let catalog = std::mem::replace(&mut raw.catalog, RawCatalog::Path(PathBuf::new()));
    let (catalogs, server) = resolve_catalog(catalog, text, file, base)?;
    Ok(build_scenario(raw, text, file, name, catalogs, server)?)
}

/// Where a scenario file's errors point: the line of a key's first appearance.
struct Locate<'a> {
    text: &'a str,
    file: &'a str,
}

impl Locate<'_> {
    fn at(&self, needle: &str, field: &str, msg: &str) -> InputError {
        InputError::at(self.file, line_of(self.text, needle), field, msg)
    }
}

/// The scenario from its parsed fields and resolved catalogs: every reference checked.
fn build_scenario(
    raw: RawScenario,
    text: &str,
    file: &str,
    name: &str,
    catalogs: Vec<CatalogVariant>,
    server: Option<(LiveCatalogSpec, ServerIdentity)>,
) -> Result<Scenario, InputError> {
    let loc = Locate { text, file };
    let Some(base_catalog) = catalogs.first() else {
        return Err(loc.at("catalog:", "catalog", "no catalog"));
    };
    let validators: &ToolValidators = &base_catalog.validators;
    let tool_exists = |t: &str| validators.contains(t);
    check_settings(&raw, &loc)?;

    let has_state = raw.state.is_some();
    let (tools, result_variants) = build_rules(raw.tools, has_state, base_catalog, &loc)?;

    let server = match server {
        None if raw.live.is_some() => {
            return Err(loc.at(
                "live:",
                "live",
                "`live` executes tools on a live MCP server: name one in `catalog` ({command, args} or {url})",
            ));
        }
        None => None,
        Some((spec, identity)) => Some(LiveTools {
            spec,
            identity,
            tools: live_tools(raw.live, &tools, &tool_exists, &loc)?,
        }),
    };
    let expect = build_expect(raw.expect, &tool_exists)
        .map_err(|(needle, field, msg)| loc.at(&needle, &field, &msg))?;
    let inject = inject_tools(raw.inject, server.as_ref(), &tools, &tool_exists, &loc)?;
    let openings = openings(raw.variants, &loc)?;

    Ok(Scenario {
        name: name.to_owned(),
        file: PathBuf::from(file),
        description: raw.description,
        catalogs,
        messages: raw.messages,
        max_steps: raw.max_steps,
        trials: raw.trials,
        script: Script {
            tools,
            validate_arguments: raw.validate_arguments,
            initial_state: raw.state,
        },
        expect,
        result_variants,
        openings,
        tags: raw.tags,
        server,
        source_digest: toolscore_core::sha256_of(text),
        inject,
        attack: None,
    })
}

/// The live tools `inject:` lists: each a tool of the catalog that runs on the live server.
fn inject_tools(
    inject: Vec<String>,
    server: Option<&LiveTools>,
    scripted: &ToolRules,
    tool_exists: &dyn Fn(&str) -> bool,
    loc: &Locate<'_>,
) -> Result<BTreeSet<String>, InputError> {
    let mut out = BTreeSet::new();
    for tool in inject {
        let live = server.is_some_and(|l| l.tools.as_ref().is_none_or(|t| t.contains(&tool)));
        let why = if !tool_exists(&tool) {
            Some(format!("`{tool}` is not a tool of the catalog"))
        } else if scripted.contains_key(&tool) || !live {
            Some(format!(
                "`{tool}` is not a live tool: `inject` appends the payload to a live tool's real result; a scripted answer marks its place with ${{injection}}"
            ))
        } else {
            None
        };
        if let Some(why) = why {
            return Err(loc.at("inject:", "inject", &why));
        }
        out.insert(tool);
    }
    Ok(out)
}

/// The scripted rules of each tool (every tool one of the catalog's) and the result variants
/// they name, sorted.
fn build_rules(
    raw_tools: BTreeMap<String, Vec<RawRule>>,
    has_state: bool,
    base_catalog: &CatalogVariant,
    loc: &Locate<'_>,
) -> Result<(ToolRules, Vec<String>), InputError> {
    let mut tools = BTreeMap::new();
    let mut result_variants: Vec<String> = Vec::new();
    for (tool, rules) in raw_tools {
        let at = format!("{tool}:");
        if !base_catalog.validators.contains(&tool) {
            return Err(loc.at(
                &at,
                &format!("tools.{tool}"),
                &format!(
                    "`{tool}` is not a tool of the catalog ({})",
                    base_catalog.catalog.source
                ),
            ));
        }
        let mut built = Vec::with_capacity(rules.len());
        for (i, rule) in rules.into_iter().enumerate() {
            let field = format!("tools.{tool}[{i}]");
            let rule = build_rule(rule, has_state, &field, &at, loc)?;
            for vname in rule.variants.keys() {
                if !result_variants.contains(vname) {
                    result_variants.push(vname.clone());
                }
            }
            built.push(rule);
        }
        tools.insert(tool, built);
    }
    result_variants.sort();
    Ok((tools, result_variants))
}

/// `max_steps`, `trials`, `messages` and `state`, each within its bounds.
fn check_settings(raw: &RawScenario, loc: &Locate<'_>) -> Result<(), InputError> {
    if raw.max_steps == 0 || raw.max_steps > MAX_STEPS_LIMIT {
        return Err(loc.at(
            "max_steps:",
            "max_steps",
            &format!("`max_steps` must be between 1 and {MAX_STEPS_LIMIT}"),
        ));
    }
    if raw.trials == Some(0) || raw.trials.is_some_and(|t| t > super::MAX_CASE_TRIALS) {
        return Err(loc.at(
            "trials:",
            "trials",
            &format!("`trials` must be between 1 and {}", super::MAX_CASE_TRIALS),
        ));
    }
    super::validate_messages(&raw.messages)
        .map_err(|(field, msg)| loc.at("messages:", &field, &msg))?;
    if raw.state.as_ref().is_some_and(|s| !s.is_object()) {
        return Err(loc.at(
            "state:",
            "state",
            "`state` must be a mapping (the JSON document rules read and write)",
        ));
    }
    Ok(())
}

/// The `variants:` openings, each a conversation as valid as `messages`; `base` is the
/// scenario's own `messages` and cannot be redefined.
fn openings(
    raw: BTreeMap<String, raw::RawOpening>,
    loc: &Locate<'_>,
) -> Result<BTreeMap<String, Vec<Message>>, InputError> {
    raw.into_iter()
        .map(|(name, opening)| {
            if name == BASE_VARIANT {
                return Err(loc.at(
                    "variants:",
                    &format!("variants.{name}"),
                    "`base` is the scenario's own `messages`: name the other opening otherwise",
                ));
            }
            super::validate_messages(&opening.messages)
                .map_err(|(f, msg)| loc.at("variants:", &format!("variants.{name}.{f}"), &msg))?;
            Ok((name, opening.messages))
        })
        .collect()
}

/// One scripted rule of a tool: its condition, answer, answer variants and effects on the
/// state. `at` is the tool's key in the file, `field` the rule's path.
fn build_rule(
    rule: RawRule,
    has_state: bool,
    field: &str,
    at: &str,
    loc: &Locate<'_>,
) -> Result<ScriptRule, InputError> {
    let when = match rule.when {
        None => RuleCondition::default(),
        Some(w) => RuleCondition {
            args: w.args,
            exact: w.exact,
            matchers: matchers(w.matchers)
                .map_err(|(p, m)| loc.at(at, &format!("{field}.when.match.{p}"), &m))?,
        },
    };
    let answer = response(
        rule.result,
        rule.content,
        rule.structured,
        rule.error,
        rule.is_error,
    )
    .map_err(|m| loc.at(at, field, &m))?;
    let mut variants = BTreeMap::new();
    for (vname, v) in rule.variants {
        let vfield = format!("{field}.variants.{vname}");
        super::variant::check_name(&vname).map_err(|m| loc.at(at, &vfield, &m))?;
        if vname == BASE_VARIANT {
            return Err(loc.at(
                at,
                &format!("{field}.variants.base"),
                "`base` is the rule's own wording; name the variant otherwise",
            ));
        }
        let r = response(v.result, v.content, v.structured, v.error, v.is_error)
            .map_err(|m| loc.at(at, &vfield, &m))?;
        check_templates(&built_strings(&r, &[]), Templates::Answer)
            .map_err(|m| loc.at(at, &vfield, &m))?;
        variants.insert(vname, r);
    }
    let mut effects = Vec::with_capacity(rule.effects.len());
    for (j, e) in rule.effects.into_iter().enumerate() {
        let efield = format!("{field}.effects[{j}]");
        let effect = build_effect(e).map_err(|m| loc.at(at, &efield, m))?;
        if !has_state {
            return Err(loc.at(
                at,
                &efield,
                "effects change the scenario's `state`; declare one (e.g. `state: {}`)",
            ));
        }
        effects.push(effect);
    }
    check_templates(&built_strings(&answer, &[]), Templates::Answer)
        .map_err(|m| loc.at(at, field, &m))?;
    check_templates(
        &built_strings(&RuleResponse::default(), &effects),
        Templates::Effect,
    )
    .map_err(|m| loc.at(at, field, &m))?;
    Ok(ScriptRule {
        when,
        effects,
        response: answer,
        variants,
    })
}

fn build_effect(e: RawEffect) -> Result<Effect, &'static str> {
    match (e.set, e.append, e.increment) {
        (Some(s), None, None) => Ok(Effect::Set {
            path: s.path,
            value: s.value,
        }),
        (None, Some(a), None) => Ok(Effect::Append {
            path: a.path,
            value: a.value,
        }),
        (None, None, Some(inc)) if inc.by.is_finite() => Ok(Effect::Increment {
            path: inc.path,
            by: inc.by,
        }),
        (None, None, Some(_)) => Err("`by` must be a finite number"),
        _ => Err(
            "an effect is exactly one of `set: {path, value}`, `append: {path, value}` or `increment: {path, by}`",
        ),
    }
}

/// Which tools run on the live server: all (`None`), or those `live` lists, none of them
/// also scripted.
fn live_tools(
    live: Option<RawLive>,
    scripted: &BTreeMap<String, Vec<ScriptRule>>,
    tool_exists: &dyn Fn(&str) -> bool,
    loc: &Locate<'_>,
) -> Result<Option<BTreeSet<String>>, InputError> {
    let live_tools = match live {
        None => None,
        Some(RawLive::All(a)) if a == "all" => None,
        Some(RawLive::All(other)) => {
            return Err(loc.at(
                "live:",
                "live",
                &format!("`live` is `all` or a list of tool names (got `{other}`)"),
            ));
        }
        Some(RawLive::Tools(list)) => {
            for t in &list {
                if !tool_exists(t) {
                    return Err(loc.at(
                        "live:",
                        "live",
                        &format!("`{t}` is not a tool of the server"),
                    ));
                }
                if scripted.contains_key(t) {
                    return Err(loc.at(
                        &format!("{t}:"),
                        &format!("tools.{t}"),
                        &format!("`{t}` is both live and scripted; keep one"),
                    ));
                }
            }
            Some(list.into_iter().collect())
        }
    };
    if live_tools.is_none() && !scripted.is_empty() {
        return Err(loc.at(
            "tools:",
            "tools",
            "every tool runs on the live server (`live: all`, the default with a server): list the live ones in `live: [...]` to script the others",
        ));
    }
    Ok(live_tools)
}

/// The base catalog of a dataset folder (with its overlays) or of a catalog file.
fn load_catalogs(path: &Path) -> Result<Vec<CatalogVariant>, InputError> {
    let (catalog, overlays) = if path.is_dir() {
        let catalog = load_catalog_file(&path.join("tools.json"))?;
        let overlays = load_variants(path, &catalog)?;
        (catalog, overlays)
    } else if path.is_file() {
        (load_catalog_file(path)?, Vec::new())
    } else {
        return Err(InputError::new(format!(
            "`{}` is neither a dataset folder nor a catalog file",
            path.display()
        )));
    };
    let validators = ToolValidators::compile(&catalog).map_err(|(tool, message)| {
        InputError::at(
            &catalog.source,
            None,
            &format!("tools.{tool}.inputSchema"),
            &format!("tool `{tool}` has an invalid JSON Schema: {message}"),
        )
    })?;
    let mut out = vec![CatalogVariant::base(
        Arc::new(catalog),
        Arc::new(validators),
    )];
    out.extend(overlays);
    Ok(out)
}

fn response(
    result: Option<Value>,
    content: Option<String>,
    structured: Option<Value>,
    error: Option<String>,
    is_error: bool,
) -> Result<RuleResponse, String> {
    match (result, content, structured, error) {
        (Some(Value::String(s)), None, None, None) => Ok(RuleResponse { content: Some(s), structured: None, is_error }),
        (Some(v), None, None, None) => Ok(RuleResponse { content: None, structured: Some(v), is_error }),
        (None, content, structured, None) if content.is_some() || structured.is_some() => {
            Ok(RuleResponse { content, structured, is_error })
        }
        (None, None, None, Some(text)) => Ok(RuleResponse { content: Some(text), structured: None, is_error: true }),
        (None, None, None, None) => Err("a rule answers with `result` (text or a mapping), `content` and/or `structured`, or `error: TEXT`".to_owned()),
        _ => Err("give one of `result`, `content`/`structured`, or `error`".to_owned()),
    }
}

fn built_strings(response: &RuleResponse, effects: &[Effect]) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(o) => o.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    out.extend(response.content.clone());
    if let Some(s) = &response.structured {
        walk(s, &mut out);
    }
    for e in effects {
        if let Effect::Set { value, .. } | Effect::Append { value, .. } = e {
            walk(value, &mut out);
        }
    }
    out
}

/// Where a template sits: an answer may mark where an attack's payload goes, an effect (what
/// is written to the state) may not.
#[derive(Clone, Copy, PartialEq)]
enum Templates {
    Answer,
    Effect,
}

fn check_templates(strings: &[String], place: Templates) -> Result<(), String> {
    for s in strings {
        let mut rest = s.as_str();
        while let Some(start) = rest.find("${") {
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else { break };
            let expr = &after[..end];
            if expr == INJECTION && place == Templates::Effect {
                return Err(format!(
                    "template `${{{INJECTION}}}` marks where an attack's payload goes in an answer; an effect cannot hold it"
                ));
            }
            if !valid_expression(expr) {
                return Err(format!(
                    "template `${{{expr}}}`: expected ${{args.PATH}}, ${{state.PATH}}, ${{#state.PATH}} (a length) or ${{{INJECTION}}} (where an attack's payload goes)"
                ));
            }
            rest = &after[end + 1..];
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: &str = r#"{"tools":[
      {"name":"find_customer","description":"Find a customer by email.","inputSchema":{"type":"object","properties":{"email":{"type":"string"}},"required":["email"]}},
      {"name":"apply_credit","description":"Apply a credit.","inputSchema":{"type":"object","properties":{"customer_id":{"type":"string"},"amount":{"type":"number","minimum":0}},"required":["customer_id","amount"]}}
    ]}"#;

    fn dir() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("tools.json"), TOOLS).unwrap();
        d
    }

    const GOOD: &str = r#"description: Credit the customer found by email.
catalog: tools.json
max_steps: 4
messages:
  - role: user
    content: Give ana@example.com a 10 EUR credit.
state:
  credits: []
tools:
  find_customer:
    - when: {args: {email: ana@example.com}}
      result: {customer_id: C-1042}
    - error: No customer with that email.
  apply_credit:
    - effects:
        - append: {path: credits, value: "${args}"}
      content: Credit applied.
      variants:
        verbose:
          content: "Credit of ${args.amount} applied; the account has ${#state.credits} credits."
expect:
  sequence:
    mode: in_order
    calls:
      - tool: find_customer
        args: {email: ana@example.com}
      - tool: {any_of: [apply_credit, issue_credit]}
        args: {customer_id: C-1042}
        match: {amount: {approx: 0.01}}
        uses: {customer_id: find_customer.customer_id}
  forbidden: [{regex: "delete_.*"}]
  max_calls: 4
  state:
    - {path: credits, length: 1}
  answer:
    contains: [credit]
"#;

    #[test]
    fn a_complete_scenario_loads() {
        let d = dir();
        let s = parse_scenario(GOOD, "s.yaml", "s", d.path()).unwrap();
        assert_eq!(s.max_steps, 4);
        assert_eq!(s.result_variants, vec!["verbose".to_owned()]);
        assert_eq!(s.script.tools["find_customer"].len(), 2);
        assert!(s.script.tools["find_customer"][1].response.is_error);
        assert_eq!(
            s.expect.label(),
            "find_customer → apply_credit|issue_credit"
        );
        assert!(s.catalog_for("verbose").is_some());
        assert!(s.catalog_for("terse").is_none());
        assert_eq!(
            s.variant_names(),
            vec!["base".to_owned(), "verbose".to_owned()]
        );
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let d = dir();
        let cases = [
            (
                GOOD.replace("  apply_credit:\n    - effects", "  refund:\n    - effects"),
                "s.yaml:14: tools.refund: `refund` is not a tool",
            ),
            (
                GOOD.replace("max_steps: 4", "max_steps: 0"),
                "s.yaml:3: max_steps",
            ),
            (
                GOOD.replace("mode: in_order", "mode: sideways"),
                "expect.sequence.mode: unknown mode `sideways`",
            ),
            (
                GOOD.replace("${#state.credits}", "${env.HOME}"),
                "template `${env.HOME}`",
            ),
            (
                GOOD.replace(
                    "  - {path: credits, length: 1}",
                    "  - {path: credits, length: 1, absent: true}",
                ),
                "expect.state[0]",
            ),
            (
                GOOD.replace("catalog: tools.json", "catalog: nope.json"),
                "s.yaml:2: catalog",
            ),
            (
                GOOD.replace("max_calls: 4", "max_calls: many"),
                "s.yaml:32:14",
            ),
            (
                GOOD.replace("find_customer.customer_id}", "customer_id}"),
                "expected TOOL.PATH",
            ),
            (
                GOOD.replace(
                    "    - error: No customer with that email.",
                    "    - content: x\n      error: y",
                ),
                "tools.find_customer[1]: give one of",
            ),
        ];
        for (text, want) in cases {
            let e = parse_scenario(&text, "s.yaml", "s", d.path())
                .err()
                .unwrap_or_else(|| panic!("no error for {want}"))
                .to_string();
            assert!(e.contains(want), "want {want:?} in: {e}");
        }
    }

    #[test]
    fn effects_need_a_declared_state() {
        let d = dir();
        let text = GOOD.replace("state:\n  credits: []\n", "");
        let e = parse_scenario(&text, "s.yaml", "s", d.path())
            .err()
            .unwrap_or_else(|| panic!("no error"))
            .to_string();
        assert!(e.contains("declare one"), "{e}");
    }
}
