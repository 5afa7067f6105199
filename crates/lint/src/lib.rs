//! `toolscore lint`: deterministic checks of what the model reads in a tool catalog — names,
//! descriptions, schemas, provider compatibility, token footprint and injection payloads.
//!
//! Pure: a [`Catalog`] and [`LintOptions`] in, a [`LintReport`] out. No I/O, no model, no clock;
//! the same catalog always gives the same findings in the same order. The command line
//! (`cli::lint`) reads the source, the config and the tool-level inline allows, and renders.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use toolscore_core::catalog::Catalog;

mod bounds;
mod conduct;
mod descriptions;
mod injection;
pub mod judge;
mod names;
mod providers;
pub mod rank;
pub mod render;
mod schema;
mod similar;
mod text;
mod tokens;

pub use tokens::{Footprint, tool_tokens};
use toolscore_core::thousands;

/// How serious a finding is. `Error` findings make `toolscore lint` exit 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub fn label(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// A severity set in `toolscore.yaml`, or `off` to disable the rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Off,
    Info,
    Warning,
    Error,
}

/// What a rule looks at; the adversarial corpus's recall counts `Injection` errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    Names,
    Descriptions,
    Schema,
    Providers,
    Tokens,
    Injection,
}

impl Category {
    pub fn label(self) -> &'static str {
        match self {
            Category::Names => "names",
            Category::Descriptions => "descriptions",
            Category::Schema => "schema",
            Category::Providers => "providers",
            Category::Tokens => "tokens",
            Category::Injection => "injection",
        }
    }
}

/// One rule: its id (what config and inline allows name), category, default severity, what it
/// checks, and the general fix (each finding also carries its own, concrete one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rule {
    pub id: RuleId,
    pub category: Category,
    pub severity: Severity,
    pub summary: &'static str,
    pub fix: &'static str,
}

/// Declares every rule once: its [`RuleId`] variant and id, category, default severity,
/// summary and fix. The enum, its ids and [`RULES`] all come from this one list, so a check
/// can only name a rule that exists.
macro_rules! rules {
    ($($variant:ident = $id:literal, $cat:ident, $sev:ident, $summary:literal, $fix:literal;)*) => {
        /// A lint rule. Ids a user writes (config, inline allows) are parsed into it at the
        /// boundary ([`RuleId::parse`]); the checks name variants, which cannot be misspelt.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum RuleId {
            $($variant,)*
        }

        impl RuleId {
            /// The id config and reports use (`name-invalid`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(RuleId::$variant => $id,)*
                }
            }
        }

        /// Every rule, in the order the table of docs/guides/lint.md lists them.
        pub const RULES: &[Rule] = &[
            $(Rule {
                id: RuleId::$variant,
                category: Category::$cat,
                severity: Severity::$sev,
                summary: $summary,
                fix: $fix,
            },)*
        ];
    };
}

rules! {
    NameInvalid = "name-invalid", Names, Error,
        "Tool name outside MCP's rule: 1-128 characters of ASCII letters, digits, `_`, `-`, `.`",
        "Rename the tool using only A-Z a-z 0-9 _ - . (at most 128 characters).";
    NameDuplicate = "name-duplicate", Names, Error,
        "Two tools share a name (names are case-sensitive and must be unique)",
        "Give every tool its own name.";
    NameCaseCollision = "name-case-collision", Names, Warning,
        "Names that differ only in letter case (clients that fold case see one tool)",
        "Rename one of them so the names differ in more than case.";
    NameConvention = "name-convention", Names, Warning,
        "A name that breaks the naming convention most of the catalog follows",
        "Rename it in the catalog's convention (snake_case, camelCase, kebab-case…).";
    NameCommonCollision = "name-common-collision", Names, Warning,
        "A name other servers commonly expose (`search`, `fetch`, `get_status`…): with several servers connected the model cannot tell them apart, and one may shadow another",
        "Prefix or qualify the name with what the tool acts on (`search_invoices`).";
    NameTooGeneric = "name-too-generic", Names, Warning,
        "A name made only of generic words while the description says what it acts on (`get_status` returning a job's status)",
        "Put the object the description names into the name (`get_job_status`).";
    DescriptionMissing = "description-missing", Descriptions, Error,
        "A tool without a description: the model has only its name to choose it by",
        "Describe what the tool does, when to use it and what it returns.";
    PropertyDescriptionMissing = "property-description-missing", Descriptions, Warning,
        "A parameter without a description",
        "Say what the parameter is, its unit or format, and an example.";
    DescriptionTooShort = "description-too-short", Descriptions, Warning,
        "A tool or parameter description shorter than the configured minimum",
        "Say what it does or holds, in a full sentence.";
    ParamGenericName = "param-generic-name", Descriptions, Warning,
        "A parameter named with a generic word (`id`, `user`, `data`, `path`…) and no qualifier",
        "Qualify the name with what it identifies (`customer_id`, `file_path`).";
    OptionalNoDefault = "optional-no-default", Descriptions, Warning,
        "An optional parameter with no `default` and no stated behaviour when omitted",
        "Add `default`, or say in the description what happens when it is omitted.";
    UnboundedDefault = "unbounded-default", Descriptions, Warning,
        "An optional size/limit parameter whose default (or absence) returns unbounded output",
        "Give it a bounded `default` and a `maximum`.";
    DescriptionNearDuplicate = "description-near-duplicate", Descriptions, Warning,
        "Two tools whose descriptions are nearly the same: the model cannot tell them apart",
        "Say in each description what distinguishes it from the other and when to prefer it.";
    WriteNoReturn = "write-no-return", Descriptions, Warning,
        "A tool that changes something but does not say what it returns on success",
        "Say what the tool returns when it succeeds (the new object, its id, a confirmation).";
    SchemaInvalid = "schema-invalid", Schema, Error,
        "The input schema is not valid JSON Schema for its draft (`$schema`, default 2020-12)",
        "Fix the schema so it validates against its meta-schema.";
    SchemaRootNotObject = "schema-root-not-object", Schema, Error,
        "The input schema's root is not `type: object` (MCP and every provider expect an object)",
        "Make the root `{\"type\": \"object\", \"properties\": {…}}`.";
    RequiredUnknown = "required-unknown", Schema, Warning,
        "`required` names a property that `properties` does not define",
        "Define the property or remove it from `required`.";
    ConstraintInProse = "constraint-in-prose", Schema, Warning,
        "A constraint stated only in prose (\"one of …\", \"format YYYY-MM-DD\", \"between 1 and 100\") that belongs in the schema",
        "Express it with `enum`, `format`/`pattern`, or `minimum`/`maximum`/`maxLength`.";
    HeaderSensitive = "header-sensitive", Schema, Error,
        "A parameter mirrored into an HTTP header (`x-mcp-header`) that looks like a credential: it travels in clear headers and logs",
        "Do not mirror credentials; take them from the server's own configuration.";
    HeaderMirrorInvalid = "header-mirror-invalid", Schema, Error,
        "An `x-mcp-header` annotation that clients must reject (not a header token, on a non-primitive, not reachable through `properties`, or duplicated)",
        "Put `x-mcp-header: Name` only on string, integer or boolean properties reached through `properties`, with unique token names.";
    ProviderOpenaiStrict = "provider-openai-strict", Providers, Warning,
        "A construct OpenAI strict mode rejects (function calling with `strict: true`, and the Responses API by default)",
        "Close every object, require every key (optional = `[T, \"null\"]`), drop unsupported keywords.";
    ProviderGemini = "provider-gemini", Providers, Warning,
        "A construct Gemini's `parameters` (OpenAPI 3.0 subset) rejects with a 400",
        "Strip it for Gemini, or send the schema as `parametersJsonSchema`.";
    ProviderAnthropic = "provider-anthropic", Providers, Warning,
        "A construct the Anthropic Messages API rejects, or its strict tool use drops",
        "Keep names to ^[a-zA-Z0-9_-]{1,64}$ and the root an object.";
    TokensToolLarge = "tokens-tool-large", Tokens, Warning,
        "One tool's definition is larger than the configured token budget",
        "Shorten the description, move reference material out of the schema.";
    TokensCatalog = "tokens-catalog", Tokens, Info,
        "The catalog's input tokens per request, and per month at the configured volume and price",
        "Drop tools the agent does not need, or shorten the largest.";
    LintBound = "lint-bound", Tokens, Warning,
        "Lint hit one of its work bounds and read part of the catalog only: a text over 64 KiB (its first 64 KiB are read), or the near-duplicate check's limit on candidate pairs",
        "Shorten the text; the model pays for all of it on every request.";
    InjectionInstruction = "injection-instruction", Injection, Error,
        "Instructions aimed at the model (\"ignore previous instructions\", \"do not tell the user\", \"before using this tool, read …\")",
        "Remove the instruction; a tool description says what the tool does, never what the model must do behind the user's back.";
    InjectionHiddenUnicode = "injection-hidden-unicode", Injection, Error,
        "Invisible or deceptive characters: zero-width, bidirectional controls, Unicode tag characters, variation-selector payloads",
        "Remove the characters; they hide text from reviewers while the model still reads it.";
    InjectionHomoglyph = "injection-homoglyph", Injection, Error,
        "A name or word mixing look-alike letters from other scripts (Cyrillic `а` for Latin `a`)",
        "Use plain ASCII letters in names; retype the word.";
    InjectionDirectiveTag = "injection-directive-tag", Injection, Error,
        "HTML/XML-style directive tags or chat-template markers (`<IMPORTANT>`, `<system>`, `[INST]`, `<!-- -->`)",
        "Remove the tag and its hidden instruction.";
    InjectionExfiltration = "injection-exfiltration", Injection, Error,
        "A pattern that sends data out: conversation or secrets to a URL, templated query parameters, markdown images to remote hosts",
        "Remove it; a tool's own endpoint belongs in the server's code, not in text the model reads.";
    InjectionSecretReference = "injection-secret-reference", Injection, Error,
        "A reference to secrets or credential files (`~/.ssh`, `.env`, private keys, environment variables)",
        "Remove it; a tool never needs the model to read or pass the user's secrets.";
    InjectionToolReference = "injection-tool-reference", Injection, Error,
        "Text that changes how other tools behave or replaces them (tool shadowing)",
        "Describe only this tool; never instruct how other tools are to be called.";
    InjectionConduct = "injection-conduct", Injection, Error,
        "A sentence that directs the model's conduct beyond calling this tool, read from what it asks for rather than its wording: concealment, misreporting, changing other tools, sending data out, collecting secrets, a new role, privileges, authority claims, tampering with the user's values",
        "Describe what the tool does and what its parameters mean; never what the model must do about the user, other tools or its replies.";
    JudgePoisoned = "judge-poisoned", Injection, Error,
        "A model asked to judge the tool's text (`lint --judge`) calls it poisoned: text aimed at the model rather than describing the tool, in whatever language or encoding",
        "Read the text the judge points at; remove what is aimed at the model, or accept the finding for this tool when it only describes the tool.";
    InjectionUrl = "injection-url", Injection, Warning,
        "A URL in text the model reads (often documentation; sometimes a payload's destination)",
        "Check the URL is needed and points where it should; prefer none in descriptions.";
}

impl RuleId {
    /// The rule a user named, if there is one.
    pub fn parse(id: &str) -> Option<RuleId> {
        RULES.iter().map(|r| r.id).find(|r| r.as_str() == id)
    }
}

impl std::fmt::Display for RuleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for RuleId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Rule ids sort by their text, as reports have always listed them.
impl Ord for RuleId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for RuleId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The rule with this id.
pub fn rule(id: RuleId) -> &'static Rule {
    &RULES[id as usize]
}

/// One finding: a rule, where (tool and JSON path inside it), what, and how to fix it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub rule: RuleId,
    pub severity: Severity,
    pub category: Category,
    /// The tool, or None for a finding about the whole catalog.
    pub tool: Option<String>,
    /// JSON path inside the tool: `name`, `description`, `inputSchema.properties.amount`…;
    /// empty for the tool (or catalog) as a whole.
    pub path: String,
    pub message: String,
    pub fix: String,
}

impl Finding {
    /// `tool.path`, `tool`, or `(catalog)`.
    pub fn location(&self) -> String {
        match (&self.tool, self.path.is_empty()) {
            (Some(t), true) => t.clone(),
            (Some(t), false) => format!("{t}.{}", self.path),
            (None, true) => "(catalog)".to_owned(),
            (None, false) => self.path.clone(),
        }
    }
}

/// Emitted by the rule modules: the rule id, then where and what. The severity and category
/// come from [`RULES`] (and the config) when [`lint`] collects them.
#[derive(Debug, Clone)]
pub(crate) struct Raw {
    pub rule: RuleId,
    pub tool: Option<String>,
    pub path: String,
    pub message: String,
    pub fix: String,
}

impl Raw {
    pub(crate) fn new(
        rule: RuleId,
        tool: Option<&str>,
        path: impl Into<String>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Raw {
        Raw {
            rule,
            tool: tool.map(str::to_owned),
            path: path.into(),
            message: message.into(),
            fix: fix.into(),
        }
    }
}

/// The `lint:` section of `toolscore.yaml`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LintConfig {
    /// Rule id → `off`, `info`, `warning` or `error`.
    #[serde(default)]
    pub rules: BTreeMap<String, Level>,
    /// Tool name → rule ids accepted for that tool (every location in it).
    #[serde(default)]
    pub allow: BTreeMap<String, Vec<String>>,
    /// Shortest tool description, in characters [default: 40].
    pub min_tool_description: Option<usize>,
    /// Shortest parameter description, in characters [default: 10].
    pub min_property_description: Option<usize>,
    /// Largest tool definition, in estimated tokens, before `tokens-tool-large` [default: 1000].
    pub max_tool_tokens: Option<u64>,
    /// Requests a month, for the monthly token figure.
    pub requests_per_month: Option<u64>,
    /// Price of a million input tokens (any currency), for the monthly cost.
    pub price_per_million_input_tokens: Option<f64>,
}

impl LintConfig {
    /// Rule ids the config names that do not exist, with the key they appear under.
    pub fn unknown_rules(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for id in self.rules.keys() {
            if RuleId::parse(id).is_none() {
                out.push((format!("lint.rules.{id}"), id.clone()));
            }
        }
        for (tool, ids) in &self.allow {
            for id in ids {
                if RuleId::parse(id).is_none() {
                    out.push((format!("lint.allow.{tool}"), id.clone()));
                }
            }
        }
        out
    }
}

/// Everything a lint needs besides the catalog.
#[derive(Debug, Clone)]
pub struct LintOptions {
    pub levels: BTreeMap<RuleId, Level>,
    /// Tool name → accepted rules (from the config and from each tool's `x-toolscore-lint`).
    pub allow: BTreeMap<String, BTreeSet<RuleId>>,
    pub min_tool_description: usize,
    pub min_property_description: usize,
    pub max_tool_tokens: u64,
    pub requests_per_month: Option<u64>,
    pub price_per_million_input_tokens: Option<f64>,
}

impl Default for LintOptions {
    fn default() -> Self {
        LintOptions {
            levels: BTreeMap::new(),
            allow: BTreeMap::new(),
            min_tool_description: 40,
            min_property_description: 10,
            max_tool_tokens: 1000,
            requests_per_month: None,
            price_per_million_input_tokens: None,
        }
    }
}

impl LintOptions {
    /// The options a config section gives, before any inline allow. Ids that name no rule
    /// are left out: the config's validation refused them already
    /// ([`LintConfig::unknown_rules`]).
    pub fn from_config(config: &LintConfig) -> LintOptions {
        let d = LintOptions::default();
        LintOptions {
            levels: config
                .rules
                .iter()
                .filter_map(|(id, level)| Some((RuleId::parse(id)?, *level)))
                .collect(),
            allow: config
                .allow
                .iter()
                .map(|(t, ids)| {
                    (
                        t.clone(),
                        ids.iter().filter_map(|id| RuleId::parse(id)).collect(),
                    )
                })
                .collect(),
            min_tool_description: config
                .min_tool_description
                .unwrap_or(d.min_tool_description),
            min_property_description: config
                .min_property_description
                .unwrap_or(d.min_property_description),
            max_tool_tokens: config.max_tool_tokens.unwrap_or(d.max_tool_tokens),
            requests_per_month: config.requests_per_month,
            price_per_million_input_tokens: config.price_per_million_input_tokens,
        }
    }

    /// Adds tool-level allows (e.g. from `x-toolscore-lint` keys).
    pub fn allow_for(&mut self, tool: &str, rules: impl IntoIterator<Item = RuleId>) {
        self.allow.entry(tool.to_owned()).or_default().extend(rules);
    }
}

/// The key a team puts on a tool object, or on any node of its input schema, to accept
/// findings there: `"x-toolscore-lint": {"allow": ["rule-id", …]}`.
pub const INLINE_KEY: &str = "x-toolscore-lint";

/// A finding accepted by an allow, kept so the report can say how many were accepted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Suppressed {
    pub rule: RuleId,
    pub location: String,
    /// `config` or `inline`.
    pub by: &'static str,
}

/// What `lint` found in one catalog.
#[derive(Debug, Clone, Serialize)]
pub struct LintReport {
    pub source: String,
    pub fingerprint: String,
    pub tools: usize,
    pub findings: Vec<Finding>,
    pub suppressed: Vec<Suppressed>,
    pub footprint: Footprint,
    /// `lint --judge`: who judged, how many tools it answered for, and those it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<judge::JudgeSummary>,
}

impl LintReport {
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    }

    pub fn has_errors(&self) -> bool {
        self.count(Severity::Error) > 0
    }
}

/// Lints a catalog. Deterministic: findings are sorted by severity, tool order in the
/// catalog, path and rule.
pub fn lint(catalog: &Catalog, options: &LintOptions) -> LintReport {
    lint_with(catalog, options, Vec::new(), None)
}

/// [`lint`] with a judge's verdicts (`lint --judge`), by tool name: its findings are settled
/// with the rules' (the config's levels and allows apply to `judge-poisoned` as to any rule)
/// and sorted among them, and the report says how many tools it judged.
pub fn lint_judged(
    catalog: &Catalog,
    options: &LintOptions,
    judgements: &BTreeMap<String, judge::Judgement>,
    who: &judge::JudgeRun,
) -> LintReport {
    let (raw, summary) = judge::findings(catalog, judgements, who);
    lint_with(catalog, options, raw, Some(summary))
}

fn lint_with(
    catalog: &Catalog,
    options: &LintOptions,
    judged: Vec<Raw>,
    judge: Option<judge::JudgeSummary>,
) -> LintReport {
    let mut raw = judged;
    let whole = catalog;
    // The rules read each text up to a bound; the token estimate counts every byte.
    let linted = bounds::capped(whole, &mut raw);
    let catalog = linted.as_ref();
    names::check(catalog, &mut raw);
    descriptions::check(catalog, options, &mut raw);
    schema::check(catalog, &mut raw);
    providers::check(catalog, &mut raw);
    let mut footprint = tokens::footprint(whole, options);
    for (entry, tool) in footprint.per_tool.iter_mut().zip(&catalog.tools) {
        // The names findings use, if a name was over the bound.
        if entry.0 != tool.name {
            entry.0.clone_from(&tool.name);
        }
    }
    tokens::check(catalog, options, &footprint, &mut raw);
    injection::check(catalog, &mut raw);

    // Inline allows by tool, so each finding looks at its own tool's only.
    let mut inline: InlineAllows = BTreeMap::new();
    for (tool, path, ids) in inline_schema_allows(catalog) {
        inline.entry(tool).or_default().push((path, ids));
    }
    let order: BTreeMap<&str, usize> = catalog
        .tools
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.as_str(), i))
        .collect();
    let (mut findings, suppressed) = settle(raw, options, &inline);
    findings.sort_by(|a, b| {
        let pos = |f: &Finding| {
            f.tool
                .as_deref()
                .and_then(|t| order.get(t).copied())
                .map_or(0, |i| i + 1)
        };
        (a.severity, pos(a), &a.path, a.rule, &a.message).cmp(&(
            b.severity,
            pos(b),
            &b.path,
            b.rule,
            &b.message,
        ))
    });
    LintReport {
        source: catalog.source.clone(),
        fingerprint: catalog.fingerprint.clone(),
        tools: catalog.tools.len(),
        findings,
        suppressed,
        footprint,
        judge,
    }
}

/// Inline allows by tool: (schema path, accepted rule ids).
type InlineAllows = BTreeMap<String, Vec<(String, BTreeSet<RuleId>)>>;

/// The raw findings with their severities from the config, less duplicates and those an
/// allow accepts (returned apart).
fn settle(
    raw: Vec<Raw>,
    options: &LintOptions,
    inline: &InlineAllows,
) -> (Vec<Finding>, Vec<Suppressed>) {
    let mut findings = Vec::new();
    let mut suppressed = Vec::new();
    let mut seen = BTreeSet::new();
    for r in raw {
        let rule = rule(r.rule);
        let severity = match options.levels.get(&r.rule) {
            Some(Level::Off) => continue,
            Some(Level::Info) => Severity::Info,
            Some(Level::Warning) => Severity::Warning,
            Some(Level::Error) => Severity::Error,
            None => rule.severity,
        };
        let finding = Finding {
            rule: rule.id,
            severity,
            category: rule.category,
            tool: r.tool,
            path: r.path,
            message: r.message,
            fix: r.fix,
        };
        // One finding per rule, place and message.
        if !seen.insert((
            finding.rule,
            finding.tool.clone(),
            finding.path.clone(),
            finding.message.clone(),
        )) {
            continue;
        }
        if let Some(tool) = &finding.tool {
            if options
                .allow
                .get(tool)
                .is_some_and(|ids| ids.contains(&finding.rule))
            {
                suppressed.push(Suppressed {
                    rule: finding.rule,
                    location: finding.location(),
                    by: "config",
                });
                continue;
            }
            let inline_hit = inline.get(tool).into_iter().flatten().any(|(path, ids)| {
                ids.contains(&finding.rule)
                    && (finding.path == *path || finding.path.starts_with(&format!("{path}.")))
            });
            if inline_hit {
                suppressed.push(Suppressed {
                    rule: finding.rule,
                    location: finding.location(),
                    by: "inline",
                });
                continue;
            }
        }
        findings.push(finding);
    }
    (findings, suppressed)
}

/// The rule ids of an `x-toolscore-lint` value (`{"allow": [...]}`), or an error message.
pub fn parse_inline(value: &Value) -> Result<Vec<RuleId>, String> {
    let allow = value
        .as_object()
        .and_then(|o| o.get("allow"))
        .ok_or_else(|| format!("`{INLINE_KEY}` must be an object with `allow: [rule ids]`"))?;
    let Value::Array(items) = allow else {
        return Err(format!("`{INLINE_KEY}.allow` must be an array of rule ids"));
    };
    let mut out = Vec::new();
    for item in items {
        let id = item
            .as_str()
            .ok_or_else(|| format!("`{INLINE_KEY}.allow` holds rule ids (strings)"))?;
        let rule = RuleId::parse(id)
            .ok_or_else(|| format!("`{INLINE_KEY}.allow`: unknown rule `{id}`"))?;
        out.push(rule);
    }
    Ok(out)
}

/// Tool-level inline allows from a raw catalog document (the tool objects themselves, which
/// `Catalog` does not keep): tool name → rule ids. Accepts the same shapes as
/// `catalog::parse_catalog`. Err names the tool and what is wrong.
pub fn tool_inline_allows(document: &Value) -> Result<Vec<(String, Vec<RuleId>)>, String> {
    let list = match document {
        Value::Array(items) => items,
        Value::Object(map) => match map.get("tools") {
            Some(Value::Array(items)) => items,
            _ => return Ok(Vec::new()),
        },
        _ => return Ok(Vec::new()),
    };
    let mut out = Vec::new();
    for (i, item) in list.iter().enumerate() {
        let inner = item.get("function").unwrap_or(item);
        let name = inner
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let key = item.get(INLINE_KEY).or_else(|| inner.get(INLINE_KEY));
        if let Some(v) = key {
            let ids = parse_inline(v).map_err(|e| format!("tools[{i}] ({name}): {e}"))?;
            out.push((name.to_owned(), ids));
        }
    }
    Ok(out)
}

/// `x-toolscore-lint` keys inside input schemas: (tool, path of the node, rule ids). A malformed
/// one allows nothing (the command line refuses it before linting, naming the tool).
fn inline_schema_allows(catalog: &Catalog) -> Vec<(String, String, BTreeSet<RuleId>)> {
    let mut out = Vec::new();
    for tool in &catalog.tools {
        schema::walk(&tool.input_schema, "inputSchema", &mut |node, path| {
            if let Some(v) = node.get(INLINE_KEY)
                && let Ok(ids) = parse_inline(v)
            {
                out.push((
                    tool.name.clone(),
                    path.to_owned(),
                    ids.into_iter().collect(),
                ));
            }
        });
    }
    out
}

/// `inputSchema.properties.amount` → `inputSchema.properties.amount` (keys that are not plain
/// identifiers are quoted: `properties["a b"]`).
pub(crate) fn child_path(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '$');
    if plain {
        if parent.is_empty() {
            key.to_owned()
        } else {
            format!("{parent}.{key}")
        }
    } else {
        format!(
            "{parent}[{}]",
            serde_json::to_string(key).unwrap_or_default()
        )
    }
}

#[cfg(test)]
pub(crate) mod test_support;

#[cfg(test)]
mod tests;
