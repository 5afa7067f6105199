//! `toolscore probe --security`: sandbox and permission escapes of a live server, reached
//! through its tools' string parameters (top-level or nested in objects and array items, to
//! [`MAX_DEPTH`] names: `options.path`, `files[].path`), each verdict resting on proof
//! (CWE-22, CWE-918, CWE-78, and schema smuggling as a warning).
//!
//! - `path-traversal`, for path-, file-, folder- and name-like parameters: `../` chains, an
//!   absolute path, URL-encoded and doubled forms aiming at `/etc/passwd`, then `..\` and `/`
//!   chains and absolute forms aiming at `C:\Windows\win.ini`. Proof: a line `root:…:0:0:`,
//!   or win.ini's `; for 16-bit app support` (or its `[fonts]` and `[extensions]` together), in
//!   what the tool returned.
//! - `ssrf`, for URL-, endpoint-, host- and link-like parameters (or `format: uri`): a URL of
//!   the probe's own loopback [`Listener`] with a fresh token in its path. Proof: a request
//!   with that token reaching the listener (a bare `host:port` gets a listener of its own).
//! - `shell-injection`, for every other string parameter: `$(…)`, backticks, `;` and `|`,
//!   each running `printf 'A%sB' TOKEN`. Proof: `A{TOKEN}B` in the result, which the text sent
//!   does not hold, so a server that echoes its input is not accused.
//! - `schema-smuggling` (a warning): an extra property where `additionalProperties` is false,
//!   and a wrong type for a typed parameter, accepted without an error.
//!
//! Only proof fails a check; a refusal, a tool error, a timeout or an answer without proof
//! passes, and the evidence says which. Every payload is harmless (it reads a world-readable
//! file, asks toolscore's own listener, or prints), calls per tool are bounded, and every text
//! quoted from the server is made inert ([`inert`]) before it reaches a report.

use std::sync::LazyLock;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use super::listener::{Listener, TOKEN_PATH};
use super::{CheckVerdict, Reconnecting, breaking_arguments};
use crate::client::{McpError, McpSession, ServerSpec, ToolResult};
use toolscore_core::catalog::source::ServerIdentity;

/// Calls per tool at most, unless the caller says otherwise.
pub const DEFAULT_MAX_CALLS: usize = 20;
/// How long after a call returns a request may still reach the listener and count.
pub(crate) const FETCH_WAIT: Duration = Duration::from_millis(500);
/// Longest text quoted from a server in a verdict.
pub(crate) const MAX_QUOTE: usize = 200;
/// Longest tool or parameter name shown.
const MAX_NAME: usize = 80;
/// Depth of the relative traversal: enough to climb out of any plausible sandbox.
const DEPTH: usize = 8;
/// Calls in a row that got no answer within the timeout, after which a tool is given up on:
/// a server that stopped answering costs at most this many timeouts per tool, not the bound.
pub(crate) const STALLED_AFTER: usize = 2;
/// The property the `schema-smuggling` check adds where none is allowed.
pub(crate) const EXTRA_PROPERTY: &str = "toolscore_probe_extra";

/// The four escape checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EscapeCheck {
    PathTraversal,
    Ssrf,
    ShellInjection,
    SchemaSmuggling,
}

impl EscapeCheck {
    pub const ALL: [EscapeCheck; 4] = [
        EscapeCheck::PathTraversal,
        EscapeCheck::Ssrf,
        EscapeCheck::ShellInjection,
        EscapeCheck::SchemaSmuggling,
    ];

    pub fn id(self) -> &'static str {
        match self {
            EscapeCheck::PathTraversal => "path-traversal",
            EscapeCheck::Ssrf => "ssrf",
            EscapeCheck::ShellInjection => "shell-injection",
            EscapeCheck::SchemaSmuggling => "schema-smuggling",
        }
    }

    /// What the check sends and what counts as proof, in one sentence.
    pub fn summary(self) -> &'static str {
        match self {
            EscapeCheck::PathTraversal => {
                "Path traversal (CWE-22): ../ and ..\\ chains, absolute paths and encoded forms aimed at /etc/passwd and C:\\Windows\\win.ini; proof is a root:…:0:0: line of /etc/passwd, or win.ini's \"; for 16-bit app support\" line or its [fonts] and [extensions] headers, in the result."
            }
            EscapeCheck::Ssrf => {
                "Server-side request forgery (CWE-918): a URL of the probe's own 127.0.0.1 listener with a fresh token; proof is a request with that token reaching it."
            }
            EscapeCheck::ShellInjection => {
                "OS command injection (CWE-78): $(…), backticks, ; and | running printf 'A%sB' TOKEN; proof is the expanded A{TOKEN}B in the result, which the text sent does not hold."
            }
            EscapeCheck::SchemaSmuggling => {
                "Schema smuggling: a property additionalProperties forbids, or a wrong type, accepted without an error (a warning)."
            }
        }
    }

    /// How to fix what the check found.
    pub fn fix(self) -> &'static str {
        match self {
            EscapeCheck::PathTraversal => {
                "Resolve the path and refuse any that lands outside the folder the tool serves."
            }
            EscapeCheck::Ssrf => {
                "Fetch only from an allowlist of hosts, and never from loopback or private addresses."
            }
            EscapeCheck::ShellInjection => {
                "Pass arguments to a program as a list, never through a shell command line."
            }
            EscapeCheck::SchemaSmuggling => {
                "Validate arguments against the input schema and answer isError naming the field."
            }
        }
    }

    /// The verdict its proof earns: an escape fails, smuggling warns.
    fn on_proof(self) -> CheckVerdict {
        match self {
            EscapeCheck::SchemaSmuggling => CheckVerdict::Warn,
            EscapeCheck::PathTraversal | EscapeCheck::Ssrf | EscapeCheck::ShellInjection => {
                CheckVerdict::Fail
            }
        }
    }
}

impl std::fmt::Display for EscapeCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// One check of one parameter of one tool, with its evidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EscapeVerdict {
    pub check: EscapeCheck,
    /// The tool's name, made inert.
    pub tool: String,
    /// The parameter (or, for an extra property, the property added), made inert.
    pub parameter: String,
    pub verdict: CheckVerdict,
    /// `tool.parameter = value`: the payload that proved it, or else the last one sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent: Option<String>,
    /// What proved it, or why nothing did.
    pub evidence: String,
    /// Calls this check made on this parameter.
    pub calls: usize,
}

/// The calls made to one tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCalls {
    pub tool: String,
    pub calls: usize,
    /// Payloads the tool's parameters called for.
    pub planned: usize,
    /// Payloads not sent because the bound on calls per tool was reached.
    pub cut: usize,
    /// Payloads not sent because their check was already proven on that parameter.
    pub after_proof: usize,
    /// Payloads not sent because the tool stopped answering ([`STALLED_AFTER`] calls in a row
    /// timed out).
    pub unanswered: usize,
}

/// Every escape verdict of one server, and the calls that earned them.
#[derive(Debug, Clone, Serialize)]
pub struct EscapeReport {
    pub source: String,
    pub server: ServerIdentity,
    /// The bound on calls per tool.
    pub max_calls: usize,
    pub verdicts: Vec<EscapeVerdict>,
    pub tools: Vec<ToolCalls>,
    /// Calls made in all.
    pub calls: usize,
}

impl EscapeReport {
    pub fn count(&self, verdict: CheckVerdict) -> usize {
        self.verdicts
            .iter()
            .filter(|c| c.verdict == verdict)
            .count()
    }
}

/// Why the escape probe could not run.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error(transparent)]
    Mcp(#[from] McpError),
    #[error("cannot start the probe's listener on 127.0.0.1")]
    Listener(#[source] std::io::Error),
}

/// Whether `url`'s host is this machine: 127.0.0.0/8, ::1 (also IPv4-mapped) or `localhost`.
/// Only such a server is probed, so the probe's own loopback listener is the server's too.
pub fn is_loopback_url(url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return false;
    };
    let Some(host) = parsed.host_str() else {
        return false;
    };
    // An IPv6 host keeps its brackets in a URL.
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => ip.is_loopback(),
        Ok(std::net::IpAddr::V6(ip)) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        Err(_) => host.eq_ignore_ascii_case("localhost") || host.eq_ignore_ascii_case("localhost."),
    }
}

// ---------------------------------------------------------------------------------------------
// Evidence: bounded and inert.

pub(crate) use toolscore_core::inert;

fn quote(text: &str) -> String {
    format!("\"{}\"", inert(text, MAX_QUOTE))
}

/// The part of `haystack` around `start..end`, on its line, cut to [`MAX_QUOTE`] and inert.
fn around(haystack: &str, start: usize, end: usize) -> String {
    let line_start = haystack[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = haystack[end..]
        .find('\n')
        .map_or(haystack.len(), |i| end + i);
    let mut from = line_start.max(start.saturating_sub(60));
    while !haystack.is_char_boundary(from) {
        from -= 1;
    }
    let lead = if from > line_start { "…" } else { "" };
    format!("\"{lead}{}\"", inert(&haystack[from..line_end], MAX_QUOTE))
}

// ---------------------------------------------------------------------------------------------
// Which parameters get which checks.

/// A parameter's name split into lower-case words (`filePath` → file, path; `dir_name` → dir,
/// name).
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

const URL_WORDS: &[&str] = &[
    "url", "urls", "uri", "uris", "endpoint", "link", "href", "webhook", "callback", "src",
];
const HOST_WORDS: &[&str] = &["host", "hostname", "domain"];
const PATH_WORDS: &[&str] = &[
    "path",
    "paths",
    "pathname",
    "file",
    "files",
    "filename",
    "filepath",
    "dir",
    "dirname",
    "directory",
    "folder",
];

/// How a parameter takes a server-side request forgery payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fetched {
    /// A whole URL.
    Url,
    /// A host, perhaps with a port and path.
    Host,
}

/// The checks a string parameter gets, from its name and its `format`. A name that could be
/// a file's as well as anything else (`name`, `note_name`) gets both path traversal and shell
/// injection.
fn checks_of(name: &str, schema: &Value) -> (Vec<EscapeCheck>, Option<Fetched>) {
    let format = schema.get("format").and_then(Value::as_str).unwrap_or("");
    let w = words(name);
    let has = |list: &[&str]| w.iter().any(|x| list.contains(&x.as_str()));
    if matches!(format, "uri" | "url" | "iri") || has(URL_WORDS) {
        return (vec![EscapeCheck::Ssrf], Some(Fetched::Url));
    }
    if matches!(format, "hostname" | "idn-hostname") || has(HOST_WORDS) {
        return (vec![EscapeCheck::Ssrf], Some(Fetched::Host));
    }
    if matches!(format, "uri-reference" | "iri-reference") || has(PATH_WORDS) {
        return (vec![EscapeCheck::PathTraversal], None);
    }
    if w.last().is_some_and(|x| x == "name") {
        return (
            vec![EscapeCheck::PathTraversal, EscapeCheck::ShellInjection],
            None,
        );
    }
    (vec![EscapeCheck::ShellInjection], None)
}

/// A free string: `type: string` (alone or among others), with no `enum` or `const` that
/// would make a payload invalid on its face.
fn is_free_string(schema: &Value) -> bool {
    let string = match schema.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
        _ => false,
    };
    string && schema.get("enum").is_none() && schema.get("const").is_none()
}

/// Most items a benign array gets for its `minItems`: a schema asking for more gets fewer (and
/// the server may refuse the call, which is a pass, never a false proof).
const MAX_BENIGN_ITEMS: u64 = 8;

/// A harmless valid value for a parameter: its `const`, first `enum` value or `default`, else
/// one of its type ("test", 1 within its bounds, false, `minItems` benign items, an object of
/// its required properties' benign values, null). The schema is finite, so the recursion ends.
#[cfg(test)]
fn benign_value(schema: &Value) -> Value {
    benign_in(schema, schema, 0)
}

/// How deep a benign value is built: a schema whose required property refers back to its own
/// object (through a `$ref`) ends here in an empty object or list.
const MAX_BENIGN_DEPTH: usize = 2 * MAX_DEPTH;

/// [`benign_value`] of `schema`, its `$ref`s resolved in `root`, `depth` levels down.
fn benign_in(root: &Value, schema: &Value, depth: usize) -> Value {
    let schema = resolved(root, schema);
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    if let Some(d) = schema.get("default") {
        return d.clone();
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        // Properties without a type are an object's (Pydantic writes nested models so).
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    let number = || {
        let min = schema.get("minimum").and_then(Value::as_f64);
        let max = schema.get("maximum").and_then(Value::as_f64);
        match (min, max) {
            (Some(lo), _) if lo > 1.0 => lo,
            (_, Some(hi)) if hi < 1.0 => hi,
            _ => 1.0,
        }
    };
    match ty {
        "integer" => Value::from(number().ceil() as i64),
        "number" => serde_json::Number::from_f64(number()).map_or(Value::from(1), Value::Number),
        "boolean" => Value::Bool(false),
        "array" => {
            // As many benign items as `minItems` asks for (an empty list is valid otherwise).
            let least = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let item = schema.get("items").unwrap_or(&Value::Null);
            if depth >= MAX_BENIGN_DEPTH {
                return Value::Array(Vec::new());
            }
            Value::Array(
                (0..least.min(MAX_BENIGN_ITEMS))
                    .map(|_| benign_in(root, item, depth + 1))
                    .collect(),
            )
        }
        // An object is valid only with its own required properties.
        "object" if depth >= MAX_BENIGN_DEPTH => Value::Object(Map::new()),
        "object" => Value::Object(base_in(root, schema, None, depth + 1)),
        "null" => Value::Null,
        _ => Value::from("test"),
    }
}

/// Arguments valid apart from `except`: every other required parameter of `schema` (its
/// `$ref`s resolved in `root`) with a benign value.
fn base_arguments(root: &Value, schema: &Value, except: Option<&str>) -> Map<String, Value> {
    base_in(root, schema, except, 0)
}

fn base_in(root: &Value, schema: &Value, except: Option<&str>, depth: usize) -> Map<String, Value> {
    let schema = resolved(root, schema);
    let props = schema.get("properties").and_then(Value::as_object);
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    let mut args = Map::new();
    for name in required.filter(|n| Some(*n) != except) {
        let prop = props.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
        args.insert(name.to_owned(), benign_in(root, prop, depth));
    }
    args
}

// ---------------------------------------------------------------------------------------------
// Payloads.

/// One payload, before its token (fresh for each call) is filled in.
#[derive(Debug, Clone, PartialEq)]
enum Payload {
    /// A fixed path.
    Path(String),
    /// The listener's URL with a token.
    Url,
    /// `127.0.0.1:PORT` of a listener started for this call alone.
    BareHost,
    /// `127.0.0.1:PORT/toolscore-probe/TOKEN`.
    HostPath,
    /// A shell form of `printf 'A%sB' TOKEN`.
    Shell(ShellForm),
    /// The property the schema forbids, beside valid arguments.
    ExtraProperty,
    /// The parameter with a value of the wrong type, beside valid arguments.
    WrongType(Value),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ShellForm {
    Substitution,
    Backticks,
    Semicolon,
    Pipe,
}

impl ShellForm {
    const ALL: [ShellForm; 4] = [
        ShellForm::Substitution,
        ShellForm::Backticks,
        ShellForm::Semicolon,
        ShellForm::Pipe,
    ];

    /// The payload's text. Its expansion, `A{token}B`, never appears in it.
    fn text(self, token: &str) -> String {
        match self {
            ShellForm::Substitution => format!("$(printf 'A%sB' {token})"),
            ShellForm::Backticks => format!("`printf 'A%sB' {token}`"),
            ShellForm::Semicolon => format!("; printf 'A%sB\\n' {token}"),
            ShellForm::Pipe => format!("| printf 'A%sB\\n' {token}"),
        }
    }
}

/// The traversal payloads: toward `/etc/passwd` relative, absolute, URL-encoded and doubled;
/// then toward `C:\Windows\win.ini` relative with `..\`, relative with `/` (Windows takes
/// both separators, and a server may filter only one), absolute, and absolute with `/`. The
/// POSIX ones come first: the schedule is round-robin, so a bound on calls cuts the Windows
/// ones before any POSIX one.
fn traversal_paths() -> Vec<String> {
    vec![
        format!("{}etc/passwd", "../".repeat(DEPTH)),
        "/etc/passwd".to_owned(),
        format!("{}etc%2fpasswd", "..%2f".repeat(DEPTH)),
        format!("{}etc/passwd", "....//".repeat(DEPTH)),
        format!("{}Windows\\win.ini", "..\\".repeat(DEPTH)),
        format!("{}Windows/win.ini", "../".repeat(DEPTH)),
        "C:\\Windows\\win.ini".to_owned(),
        "C:/Windows/win.ini".to_owned(),
    ]
}

/// One step from a tool's arguments down to a parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// A property of an object, by its name as the server named it (sent as is).
    Key(String),
    /// The item of an array (the payload goes in its first item).
    Item,
}

/// How deep the probe looks for string parameters: `path` is 1, `options.path` and
/// `files[].path` are 2, `a.b.c` is 3. Real tools nest a path or a URL an object or two deep;
/// deeper, the lanes would crowd the bound on calls out of the parameters that matter.
pub(crate) const MAX_DEPTH: usize = 3;

/// One (parameter, check) and the payloads it is to receive, in order.
#[derive(Debug, Clone, PartialEq)]
struct Lane {
    check: EscapeCheck,
    /// The parameter's JSON path as the server named it (`path`, `options.path`,
    /// `files[].path`; shown inert).
    parameter: String,
    /// Where the payload goes in the arguments.
    at: Vec<Step>,
    payloads: Vec<Payload>,
}

/// `options.path`, `files[].path`: the steps as people write them.
fn dotted(at: &[Step]) -> String {
    let mut out = String::new();
    for step in at {
        match step {
            Step::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Step::Item => out.push_str("[]"),
        }
    }
    out
}

/// `schema` with a local `$ref` (`#/$defs/Options`, as Pydantic and zod-to-json-schema write
/// nested models) replaced by what it points at in `root`, and an untyped `anyOf` or `oneOf`
/// by its first branch that is not `null` (`Optional[X]` is `anyOf: [X, {"type": "null"}]`);
/// any other schema as it is.
fn resolved<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    let mut at = schema;
    // A chain of references is followed a few steps, never round a cycle.
    for _ in 0..2 * MAX_DEPTH {
        if let Some(pointer) = at
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
        {
            match root.pointer(pointer) {
                Some(target) => {
                    at = target;
                    continue;
                }
                None => break,
            }
        }
        // Beside a type or properties, `anyOf` only narrows them (`required` alternatives):
        // the schema is what it says already.
        if at.get("type").is_some() || at.get("properties").is_some() {
            break;
        }
        let null = Value::from("null");
        let branch = ["anyOf", "oneOf"]
            .iter()
            .filter_map(|k| at.get(*k).and_then(Value::as_array))
            .flatten()
            .find(|b| b.get("type") != Some(&null));
        match branch {
            Some(b) => at = b,
            None => break,
        }
    }
    at
}

/// Every free string parameter under `schema` (an object's properties, an array's items) to
/// [`MAX_DEPTH`] property names, in the schema's order, each with the steps to it and the name
/// its checks are chosen by (the property's own, or the array's for a list of strings).
fn string_parameters(root: &Value, schema: &Value) -> Vec<(Vec<Step>, String, Value)> {
    fn walk(
        root: &Value,
        schema: &Value,
        at: &mut Vec<Step>,
        name: &str,
        depth: usize,
        out: &mut Vec<(Vec<Step>, String, Value)>,
    ) {
        let schema = resolved(root, schema);
        if is_free_string(schema) {
            if !at.is_empty() {
                out.push((at.clone(), name.to_owned(), schema.clone()));
            }
            return;
        }
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            if depth >= MAX_DEPTH {
                return;
            }
            for (key, prop) in props {
                at.push(Step::Key(key.clone()));
                walk(root, prop, at, key, depth + 1, out);
                at.pop();
            }
        } else if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
            // An array at the top is no parameter; one inside the arguments is. An array of
            // arrays counts no names, so the steps are bounded too: a `$ref` that comes back
            // to itself through `items` must not recurse for ever.
            if at.is_empty() || at.len() >= 2 * MAX_DEPTH {
                return;
            }
            at.push(Step::Item);
            walk(root, items, at, name, depth, out);
            at.pop();
        }
    }
    let mut out = Vec::new();
    walk(root, schema, &mut Vec::new(), "", 0, &mut out);
    out
}

/// The arguments of a call whose payload `value` goes `at` in `schema`: every object on the
/// way holds its other required properties' benign values, every array on the way holds the
/// one item, so the call is valid but for the payload.
fn arguments_with(root: &Value, schema: &Value, at: &[Step], value: Value) -> Value {
    let schema = resolved(root, schema);
    match at.split_first() {
        None => value,
        Some((Step::Key(key), rest)) => {
            let mut object = base_arguments(root, schema, Some(key));
            let inner = schema
                .get("properties")
                .and_then(|p| p.get(key))
                .unwrap_or(&Value::Null);
            object.insert(key.clone(), arguments_with(root, inner, rest, value));
            Value::Object(object)
        }
        Some((Step::Item, rest)) => {
            let items = schema.get("items").unwrap_or(&Value::Null);
            let mut list = vec![arguments_with(root, items, rest, value)];
            // `minItems` more than one: the payload's item first, benign ones after it.
            let least = schema.get("minItems").and_then(Value::as_u64).unwrap_or(1);
            for _ in 1..least.min(MAX_BENIGN_ITEMS) {
                list.push(benign_in(root, items, 0));
            }
            Value::Array(list)
        }
    }
}

/// The lanes of a tool's input schema: each free string parameter's checks (top-level or
/// nested, see [`string_parameters`]), then schema smuggling (an extra property where `additionalProperties` is false; a wrong type for the
/// first required typed parameter, else the first typed one).
fn lanes_of(schema: &Value) -> Vec<Lane> {
    let mut lanes = Vec::new();
    for (at, name, prop) in string_parameters(schema, schema) {
        let (checks, fetched) = checks_of(&name, &prop);
        for check in checks {
            let payloads = match check {
                EscapeCheck::PathTraversal => {
                    traversal_paths().into_iter().map(Payload::Path).collect()
                }
                EscapeCheck::Ssrf => match fetched {
                    Some(Fetched::Host) => vec![Payload::BareHost, Payload::HostPath],
                    _ => vec![Payload::Url],
                },
                EscapeCheck::ShellInjection => {
                    ShellForm::ALL.into_iter().map(Payload::Shell).collect()
                }
                EscapeCheck::SchemaSmuggling => Vec::new(),
            };
            lanes.push(Lane {
                check,
                parameter: dotted(&at),
                at: at.clone(),
                payloads,
            });
        }
    }
    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
        lanes.push(Lane {
            check: EscapeCheck::SchemaSmuggling,
            parameter: EXTRA_PROPERTY.to_owned(),
            at: vec![Step::Key(EXTRA_PROPERTY.to_owned())],
            payloads: vec![Payload::ExtraProperty],
        });
    }
    if let Some((field, args)) = breaking_arguments(schema) {
        let wrong = args.get(&field).cloned().unwrap_or(Value::Null);
        lanes.push(Lane {
            check: EscapeCheck::SchemaSmuggling,
            at: vec![Step::Key(field.clone())],
            parameter: field,
            payloads: vec![Payload::WrongType(wrong)],
        });
    }
    lanes
}

/// The order payloads are sent in: the first of every lane, then the second of every lane,
/// and so on, so a bound on calls cuts depth, never a whole parameter.
fn schedule(lanes: &[Lane]) -> Vec<(usize, usize)> {
    let deepest = lanes.iter().map(|l| l.payloads.len()).max().unwrap_or(0);
    (0..deepest)
        .flat_map(|depth| {
            lanes
                .iter()
                .enumerate()
                .filter(move |(_, l)| depth < l.payloads.len())
                .map(move |(i, _)| (i, depth))
        })
        .collect()
}

/// A fresh token: 16 characters of [a-z0-9], random.
fn new_token() -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut n: u128 = rand::random();
    (0..16)
        .map(|_| {
            let d = (n % 36) as usize;
            n /= 36;
            char::from(DIGITS[d])
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Judging one answer.

/// What one call's answer showed.
#[derive(Debug, Clone, PartialEq)]
enum Answer {
    /// The proof, quoted.
    Proof(String),
    /// `isError: true`, with its text quoted.
    ToolError(String),
    /// A JSON-RPC error.
    RpcError(i32, String),
    /// No answer within the client's timeout.
    Timeout,
    /// The call failed otherwise (the connection broke).
    Failed(String),
    /// A result without proof.
    Answered(String),
}

/// Everything a result holds as text: its text blocks, every other block and its
/// structuredContent as JSON; a JSON-RPC error's message.
fn haystack(result: &Result<ToolResult, McpError>) -> String {
    match result {
        Ok(r) => {
            let mut text = r.text();
            for block in r
                .content
                .iter()
                .filter(|b| b.get("type") != Some(&"text".into()))
            {
                text.push('\n');
                text.push_str(&block.to_string());
            }
            if let Some(s) = &r.structured_content {
                text.push('\n');
                text.push_str(&s.to_string());
            }
            text
        }
        Err(McpError::Rpc { message, .. }) => message.clone(),
        Err(_) => String::new(),
    }
}

static PASSWD_LINE: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"root:[^:\n]*:0:0:").unwrap_or_else(|e| unreachable!("a fixed regex: {e}"))
});

/// The `root:…:0:0:` line of `/etc/passwd` in `text`, quoted.
fn passwd_proof(text: &str) -> Option<String> {
    let m = PASSWD_LINE.find(text)?;
    Some(around(text, m.start(), m.end()))
}

/// The first line of the `win.ini` every Windows install ships (Windows 95 to 11), which no
/// payload holds.
const WIN_INI_COMMENT: &str = "; for 16-bit app support";
/// Two of its section headers; both must be there (either alone is a common INI section).
const WIN_INI_SECTIONS: [&str; 2] = ["[fonts]", "[extensions]"];

/// What of `C:\Windows\win.ini` is in `text`, quoted: its `; for 16-bit app support` line,
/// else its `[fonts]` and `[extensions]` headers together. Neither holds a character of the
/// path that asked for it, so an echo of the payload is no proof. Case is ignored (Windows
/// ignores it too), and the headers are found anywhere, not only at a line's start, since a
/// JSON `structuredContent` carries the file's lines escaped on one line.
fn win_ini_proof(text: &str) -> Option<String> {
    // ASCII lower-casing keeps every byte offset, so a match's place in `lower` is its place
    // in `text`.
    let lower = text.to_ascii_lowercase();
    if let Some(at) = lower.find(WIN_INI_COMMENT) {
        return Some(around(text, at, at + WIN_INI_COMMENT.len()));
    }
    let [fonts, extensions] = WIN_INI_SECTIONS.map(|h| lower.find(h).map(|at| (at, h.len())));
    let ((f, fl), (e, el)) = (fonts?, extensions?);
    Some(format!(
        "{} and {}",
        around(text, f, f + fl),
        around(text, e, e + el)
    ))
}

/// The proof of a traversal: a line of `/etc/passwd`, or of `C:\Windows\win.ini`.
fn traversal_proof(text: &str) -> Option<String> {
    passwd_proof(text).or_else(|| win_ini_proof(text))
}

/// The expanded marker `A{token}B` in `text`, quoted.
fn marker_proof(text: &str, token: &str) -> Option<String> {
    let marker = format!("A{token}B");
    let at = text.find(&marker)?;
    Some(around(text, at, at + marker.len()))
}

/// What an answer without proof was.
fn without_proof(result: &Result<ToolResult, McpError>) -> Answer {
    match result {
        Ok(r) if r.is_error => Answer::ToolError(quote(&r.text())),
        Ok(r) => Answer::Answered(quote(&r.text())),
        Err(McpError::Rpc { code, message, .. }) => Answer::RpcError(*code, quote(message)),
        Err(McpError::Timeout { .. }) => Answer::Timeout,
        Err(e) => Answer::Failed(quote(&e.to_string())),
    }
}

/// The answer of a call whose proof is in what it returned (`find` looks for it).
fn judge_returned(
    result: &Result<ToolResult, McpError>,
    find: impl Fn(&str) -> Option<String>,
) -> Answer {
    match find(&haystack(result)) {
        Some(p) => Answer::Proof(format!("the result holds {p}")),
        None => without_proof(result),
    }
}

/// The answer of a server-side request forgery call: proof is the listener's hit.
fn judge_fetched(
    hit: Option<&super::listener::Hit>,
    result: &Result<ToolResult, McpError>,
) -> Answer {
    match hit {
        Some(h) => Answer::Proof(format!(
            "the probe's listener received {}",
            quote(&h.request_line)
        )),
        None => without_proof(result),
    }
}

/// The answer of a smuggling call: accepted without an error is the (warning's) proof.
fn judge_smuggled(result: &Result<ToolResult, McpError>) -> Answer {
    match result {
        Ok(r) if !r.is_error => {
            Answer::Proof(format!("accepted without an error: {}", quote(&r.text())))
        }
        other => without_proof(other),
    }
}

/// How the answers without proof of one lane went, for its PASS.
#[derive(Debug, Default, Clone, PartialEq)]
struct Tally {
    tool_errors: usize,
    rpc_errors: usize,
    timeouts: usize,
    failed: usize,
    answered: usize,
    /// The last answer quoted, with what it was.
    last: Option<String>,
}

impl Tally {
    fn add(&mut self, a: &Answer) {
        match a {
            Answer::ToolError(q) => {
                self.tool_errors += 1;
                self.last = Some(format!("a tool error {q}"));
            }
            Answer::RpcError(code, q) => {
                self.rpc_errors += 1;
                self.last = Some(format!("JSON-RPC error {code} {q}"));
            }
            Answer::Timeout => self.timeouts += 1,
            Answer::Failed(q) => {
                self.failed += 1;
                self.last = Some(format!("the call failed: {q}"));
            }
            Answer::Answered(q) => {
                self.answered += 1;
                self.last = Some(format!("an answer {q}"));
            }
            Answer::Proof(_) => {}
        }
    }

    /// "no proof in 4 calls: 3 refused with a tool error, 1 answered without proof; last, …",
    /// and the payloads the bound `cut` or a silent tool left `unanswered`.
    fn evidence(&self, check: EscapeCheck, cut: usize, unanswered: usize) -> String {
        let mut parts = Vec::new();
        let mut part = |n: usize, what: &str| {
            if n > 0 {
                parts.push(format!("{n} {what}"));
            }
        };
        let nothing = match check {
            EscapeCheck::Ssrf => "answered, and no request reached the listener",
            EscapeCheck::SchemaSmuggling => "answered",
            EscapeCheck::PathTraversal => "answered without a line of /etc/passwd or win.ini",
            EscapeCheck::ShellInjection => "answered without the expanded marker",
        };
        part(self.tool_errors, "refused with a tool error");
        part(self.rpc_errors, "refused with a JSON-RPC error");
        part(self.timeouts, "got no answer within the timeout");
        part(self.failed, "failed");
        part(self.answered, nothing);
        let calls =
            self.tool_errors + self.rpc_errors + self.timeouts + self.failed + self.answered;
        let mut text = if calls == 0 {
            "no payload sent".to_owned()
        } else {
            format!(
                "no proof in {calls} call{}: {}",
                if calls == 1 { "" } else { "s" },
                parts.join(", ")
            )
        };
        if let Some(last) = &self.last {
            text.push_str(&format!("; last, {last}"));
        }
        if cut > 0 {
            text.push_str(&format!(
                "; {cut} more payload{} cut by the bound on calls",
                if cut == 1 { "" } else { "s" }
            ));
        }
        if unanswered > 0 {
            text.push_str(&format!(
                "; {unanswered} more payload{} not sent: the tool stopped answering",
                if unanswered == 1 { "" } else { "s" }
            ));
        }
        text
    }
}

/// `tool.parameter = value`, inert: a string in quotes as sent, anything else as JSON.
fn sent(tool: &str, parameter: &str, value: &Value) -> String {
    let shown = match value {
        Value::String(s) => quote(s),
        other => inert(&other.to_string(), MAX_QUOTE),
    };
    format!(
        "{}.{} = {shown}",
        inert(tool, MAX_NAME),
        inert(parameter, MAX_NAME)
    )
}

// ---------------------------------------------------------------------------------------------
// The probe.

/// Probes every listed tool, at most `max_calls` calls each. Fails only when the server
/// cannot be listed at all, or the listener cannot start.
pub async fn probe_escapes(
    spec: &ServerSpec,
    timeout: Duration,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
    max_calls: usize,
) -> Result<EscapeReport, ProbeError> {
    let listener = Listener::start().await.map_err(ProbeError::Listener)?;
    let first = McpSession::connect(spec, timeout, env).await?;
    // What the server says of itself reaches the report too: as inert as its answers.
    let said = first.server();
    let server = ServerIdentity {
        name: inert(&said.name, MAX_NAME),
        version: inert(&said.version, MAX_NAME),
        protocol_version: inert(&said.protocol_version, MAX_NAME),
    };
    let tools = match first.list_tool_definitions().await {
        Ok(t) => t,
        Err(e) => {
            first.shutdown().await;
            return Err(e.into());
        }
    };
    let mut calls = Reconnecting {
        spec,
        timeout,
        env,
        session: Some(first),
    };
    let mut verdicts = Vec::new();
    let mut counts = Vec::new();
    let mut failure = None;
    for def in &tools {
        match probe_tool(def, &mut calls, &listener, max_calls).await {
            Ok((v, c)) => {
                verdicts.extend(v);
                counts.push(c);
            }
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    calls.close().await;
    if let Some(e) = failure {
        return Err(e);
    }
    let total = counts.iter().map(|c| c.calls).sum();
    Ok(EscapeReport {
        source: spec.label(),
        server,
        max_calls,
        verdicts,
        tools: counts,
        calls: total,
    })
}

/// What one lane has seen so far.
#[derive(Default)]
struct LaneState {
    calls: usize,
    tally: Tally,
    proof: Option<(String, String)>,
    last_sent: Option<String>,
    cut: usize,
    unanswered: usize,
}

async fn probe_tool(
    def: &Value,
    calls: &mut Reconnecting<'_>,
    listener: &Listener,
    max_calls: usize,
) -> Result<(Vec<EscapeVerdict>, ToolCalls), ProbeError> {
    let name = def.get("name").and_then(Value::as_str).unwrap_or_default();
    let schema = def.get("inputSchema").cloned().unwrap_or(Value::Null);
    let lanes = lanes_of(&schema);
    let order = schedule(&lanes);
    let mut states: Vec<LaneState> = lanes.iter().map(|_| LaneState::default()).collect();
    let (mut made, mut after_proof) = (0usize, 0usize);
    // Timeouts in a row: a tool that stopped answering is given up on.
    let mut silent = 0usize;
    for (i, depth) in &order {
        let (lane, state) = (&lanes[*i], &mut states[*i]);
        if state.proof.is_some() {
            after_proof += 1;
            continue;
        }
        if silent >= STALLED_AFTER {
            state.unanswered += 1;
            continue;
        }
        if made >= max_calls {
            state.cut += 1;
            continue;
        }
        let token = new_token();
        let mut own = None;
        let parameter_value = match &lane.payloads[*depth] {
            Payload::Path(p) => Value::from(p.as_str()),
            Payload::Url => Value::from(listener.url(&token)),
            Payload::BareHost => {
                // A host alone carries no token: a listener of this call's own tells its
                // requests apart.
                let l = Listener::start().await.map_err(ProbeError::Listener)?;
                let authority = l.authority();
                own = Some(l);
                Value::from(authority)
            }
            Payload::HostPath => {
                Value::from(format!("{}{TOKEN_PATH}{token}", listener.authority()))
            }
            Payload::Shell(form) => Value::from(form.text(&token)),
            // Beside the required arguments, valid, one the schema forbids.
            Payload::ExtraProperty => Value::from("x"),
            Payload::WrongType(v) => v.clone(),
        };
        let args = arguments_with(&schema, &schema, &lane.at, parameter_value.clone());
        let result = calls.call(name, &args).await;
        made += 1;
        state.calls += 1;
        let answer = match lane.check {
            EscapeCheck::PathTraversal => judge_returned(&result, traversal_proof),
            EscapeCheck::ShellInjection => {
                judge_returned(&result, |text| marker_proof(text, &token))
            }
            EscapeCheck::Ssrf => {
                let hit = match &own {
                    Some(l) => l.any_hit(FETCH_WAIT).await,
                    None => listener.hit_with(&token, FETCH_WAIT).await,
                };
                judge_fetched(hit.as_ref(), &result)
            }
            EscapeCheck::SchemaSmuggling => judge_smuggled(&result),
        };
        let shown = sent(name, &lane.parameter, &parameter_value);
        silent = if answer == Answer::Timeout {
            silent + 1
        } else {
            0
        };
        match answer {
            Answer::Proof(p) => state.proof = Some((shown, p)),
            other => {
                state.tally.add(&other);
                state.last_sent = Some(shown);
            }
        }
    }
    let tool = inert(name, MAX_NAME);
    let verdicts = lanes
        .iter()
        .zip(states.iter())
        .map(|(lane, state)| {
            let (verdict, sent, evidence) = match &state.proof {
                Some((sent, proof)) => (lane.check.on_proof(), Some(sent.clone()), proof.clone()),
                None if state.calls == 0 && state.unanswered > 0 => (
                    CheckVerdict::Skip,
                    None,
                    format!(
                        "not probed: the tool stopped answering ({STALLED_AFTER} calls in a row timed out)"
                    ),
                ),
                None if state.calls == 0 => (
                    CheckVerdict::Skip,
                    None,
                    format!(
                        "not probed: the bound of {max_calls} calls per tool was reached first"
                    ),
                ),
                None => (
                    CheckVerdict::Pass,
                    state.last_sent.clone(),
                    state.tally.evidence(lane.check, state.cut, state.unanswered),
                ),
            };
            EscapeVerdict {
                check: lane.check,
                tool: tool.clone(),
                parameter: inert(&lane.parameter, MAX_NAME),
                verdict,
                sent,
                evidence,
                calls: state.calls,
            }
        })
        .collect();
    let counts = ToolCalls {
        tool,
        calls: made,
        planned: order.len(),
        cut: states.iter().map(|s| s.cut).sum(),
        after_proof,
        unanswered: states.iter().map(|s| s.unanswered).sum(),
    };
    Ok((verdicts, counts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(is_error: bool, t: &str) -> Result<ToolResult, McpError> {
        Ok(ToolResult {
            content: vec![json!({"type": "text", "text": t})],
            structured_content: None,
            is_error,
        })
    }

    #[test]
    fn parameters_get_their_checks_by_name_and_format() {
        let s = json!({"type": "string"});
        let check = |n: &str| checks_of(n, &s).0;
        assert_eq!(check("path"), [EscapeCheck::PathTraversal]);
        assert_eq!(check("filePath"), [EscapeCheck::PathTraversal]);
        assert_eq!(check("target_dir"), [EscapeCheck::PathTraversal]);
        assert_eq!(check("url"), [EscapeCheck::Ssrf]);
        assert_eq!(check("webhookUrl"), [EscapeCheck::Ssrf]);
        assert_eq!(checks_of("host", &s).1, Some(Fetched::Host));
        assert_eq!(checks_of("endpoint", &s).1, Some(Fetched::Url));
        assert_eq!(
            check("name"),
            [EscapeCheck::PathTraversal, EscapeCheck::ShellInjection]
        );
        assert_eq!(check("query"), [EscapeCheck::ShellInjection]);
        // An e-mail address is no host to fetch from.
        assert_eq!(check("email_address"), [EscapeCheck::ShellInjection]);
        // "profile" holds "file" as letters, not as a word.
        assert_eq!(check("profile"), [EscapeCheck::ShellInjection]);
        assert_eq!(
            checks_of("target", &json!({"type": "string", "format": "uri"})).0,
            [EscapeCheck::Ssrf]
        );
        assert_eq!(
            checks_of("ref", &json!({"type": "string", "format": "uri-reference"})).0,
            [EscapeCheck::PathTraversal]
        );
    }

    #[test]
    fn lanes_cover_free_strings_and_smuggling_and_skip_enums() {
        let schema = json!({"type": "object", "additionalProperties": false,
            "properties": {"mode": {"type": "string", "enum": ["a", "b"]},
                           "path": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["mode"]});
        let lanes = lanes_of(&schema);
        let kinds: Vec<(EscapeCheck, &str)> = lanes
            .iter()
            .map(|l| (l.check, l.parameter.as_str()))
            .collect();
        assert_eq!(
            kinds,
            [
                (EscapeCheck::PathTraversal, "path"),
                (EscapeCheck::SchemaSmuggling, EXTRA_PROPERTY),
                (EscapeCheck::SchemaSmuggling, "mode"),
            ]
        );
        assert_eq!(lanes[0].payloads.len(), 8);
        assert_eq!(lanes[2].payloads, [Payload::WrongType(json!(12345))]);
        // Round robin: the first payload of every lane before any second.
        assert_eq!(schedule(&lanes)[..4], [(0, 0), (1, 0), (2, 0), (0, 1)]);
    }

    #[test]
    fn benign_values_are_valid_for_their_schema() {
        assert_eq!(benign_value(&json!({"type": "string"})), json!("test"));
        assert_eq!(
            benign_value(&json!({"type": "integer", "minimum": 5})),
            json!(5)
        );
        assert_eq!(benign_value(&json!({"type": "number"})), json!(1.0));
        assert_eq!(benign_value(&json!({"type": "boolean"})), json!(false));
        assert_eq!(benign_value(&json!({"type": "array"})), json!([]));
        assert_eq!(benign_value(&json!({"type": "object"})), json!({}));
        assert_eq!(benign_value(&json!({"enum": ["x", "y"]})), json!("x"));
        assert_eq!(
            benign_value(&json!({"type": ["null", "boolean"]})),
            json!(false)
        );
        // An object gets its required properties; an array its minItems.
        assert_eq!(
            benign_value(
                &json!({"type": "object", "properties": {"k": {"type": "integer"},
                "o": {"type": "string"}}, "required": ["k"]})
            ),
            json!({"k": 1})
        );
        assert_eq!(
            benign_value(&json!({"type": "array", "minItems": 2, "items": {"type": "string"}})),
            json!(["test", "test"])
        );
        let schema = json!({"properties": {"a": {"type": "string"}, "b": {"type": "boolean"}},
            "required": ["a", "b"]});
        assert_eq!(
            Value::Object(base_arguments(&schema, &schema, Some("a"))),
            json!({"b": false})
        );
    }

    #[test]
    fn payloads_never_hold_their_own_proof() {
        let token = new_token();
        assert_eq!(token.len(), 16);
        assert!(token.chars().all(|c| c.is_ascii_alphanumeric()));
        for form in ShellForm::ALL {
            let payload = form.text(&token);
            assert!(marker_proof(&payload, &token).is_none(), "{payload}");
        }
        let paths = traversal_paths();
        for path in &paths {
            assert!(traversal_proof(path).is_none(), "{path}");
            // Nor does a server's echo of it, in any case, in a sentence or as JSON.
            let echo = format!("no such note: {}", path.to_uppercase());
            assert!(traversal_proof(&echo).is_none(), "{echo}");
            assert!(traversal_proof(&json!({"path": path}).to_string()).is_none());
        }
        assert!(paths[0].starts_with("../../../../../../../../etc"));
        // The Windows ones come after every POSIX one, so a bound cuts them first.
        assert_eq!(paths.len(), 8);
        assert!(paths[..4].iter().all(|p| p.contains("etc")));
        assert_eq!(paths[4], r"..\..\..\..\..\..\..\..\Windows\win.ini");
        assert_eq!(paths[6], r"C:\Windows\win.ini");
        assert_eq!(paths[7], "C:/Windows/win.ini");
    }

    /// `C:\Windows\win.ini` as Windows 10 and 11 ship it.
    const WIN_INI: &str = "; for 16-bit app support\r\n[fonts]\r\n[extensions]\r\n[mci extensions]\r\n[files]\r\n[Mail]\r\nMAPI=1\r\n";

    #[test]
    fn win_ini_is_proof_and_its_names_alone_are_not() {
        assert_eq!(
            judge_returned(&text(false, WIN_INI), traversal_proof),
            Answer::Proof("the result holds \"; for 16-bit app support\"".into())
        );
        // Without its comment line (an older or edited win.ini), its two headers together.
        let edited = "[fonts]\r\n[extensions]\r\nbmp=mspaint.exe\r\n";
        assert_eq!(
            win_ini_proof(edited).as_deref(),
            Some("\"[fonts]\" and \"[extensions]\"")
        );
        // Escaped onto one line, as structuredContent carries it.
        let structured = Ok(ToolResult {
            content: vec![],
            structured_content: Some(json!({"body": "[Fonts]\r\n[Extensions]\r\n"})),
            is_error: false,
        });
        assert!(matches!(
            judge_returned(&structured, traversal_proof),
            Answer::Proof(_)
        ));
        // One header is a common INI section, not win.ini.
        assert!(win_ini_proof("[fonts]\nsize=12\n").is_none());
        assert!(win_ini_proof("[mci extensions]\n[fonts]\n").is_none());
        // An echo of the payload, even refused, names the file and proves nothing.
        let echo = text(
            true,
            r"cannot open ..\..\Windows\win.ini: outside the notes folder",
        );
        assert!(matches!(
            judge_returned(&echo, traversal_proof),
            Answer::ToolError(_)
        ));
    }

    #[test]
    fn nested_string_parameters_are_found_to_a_bounded_depth() {
        let schema = json!({"type": "object",
            "properties": {
                "options": {"type": "object",
                    "properties": {"path": {"type": "string"}, "mode": {"type": "string", "enum": ["a"]},
                                   "overwrite": {"type": "boolean"}},
                    "required": ["path", "overwrite"]},
                "files": {"type": "array", "items": {"$ref": "#/$defs/File"}},
                "tags": {"type": "array", "items": {"type": "string"}},
                "a": {"type": "object", "properties": {"b": {"type": "object", "properties": {
                    "c": {"type": "string"},
                    "d": {"type": "object", "properties": {"e": {"type": "string"}}}}}}},
                "count": {"type": "integer"}},
            "required": ["count", "options"],
            "$defs": {"File": {"type": "object",
                "properties": {"url": {"type": "string"}, "encoding": {"enum": ["utf-8"]}},
                "required": ["url", "encoding"]}}});
        let lanes = lanes_of(&schema);
        let kinds: Vec<(EscapeCheck, &str)> = lanes
            .iter()
            .map(|l| (l.check, l.parameter.as_str()))
            .collect();
        assert_eq!(
            kinds,
            [
                (EscapeCheck::PathTraversal, "options.path"),
                (EscapeCheck::Ssrf, "files[].url"),
                (EscapeCheck::ShellInjection, "tags[]"),
                // Three names deep is the limit: `a.b.d.e` is not probed.
                (EscapeCheck::ShellInjection, "a.b.c"),
                (EscapeCheck::SchemaSmuggling, "options"),
            ]
        );
        // The payload in place; every object on the way valid but for it.
        let path = arguments_with(&schema, &schema, &lanes[0].at, json!("/etc/passwd"));
        assert_eq!(
            path,
            json!({"count": 1, "options": {"path": "/etc/passwd", "overwrite": false}})
        );
        let url = arguments_with(&schema, &schema, &lanes[1].at, json!("http://x"));
        assert_eq!(
            url,
            json!({"count": 1, "options": {"path": "test", "overwrite": false},
                   "files": [{"url": "http://x", "encoding": "utf-8"}]})
        );
        let tag = arguments_with(&schema, &schema, &lanes[2].at, json!("$(x)"));
        assert_eq!(tag["tags"], json!(["$(x)"]));
        let deep = arguments_with(&schema, &schema, &lanes[3].at, json!("v"));
        assert_eq!(deep["a"], json!({"b": {"c": "v"}}));
        // A top-level parameter as before.
        let flat = json!({"properties": {"p": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["p", "n"]});
        assert_eq!(
            arguments_with(&flat, &flat, &[Step::Key("p".into())], json!("x")),
            json!({"p": "x", "n": 1})
        );
        // A schema that refers to itself ends at the bound, through objects or arrays.
        let cyclic = json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "properties": {
                "name": {"type": "string"}, "child": {"$ref": "#/$defs/Node"},
                "list": {"type": "array", "items": {"$ref": "#/$defs/List"}}}},
                "List": {"type": "array", "items": {"$ref": "#/$defs/List"}}}});
        let names: Vec<String> = lanes_of(&cyclic).into_iter().map(|l| l.parameter).collect();
        assert_eq!(
            names,
            [
                "root.name",
                "root.name",
                "root.child.name",
                "root.child.name"
            ]
        );
        // As Pydantic writes nested models: `$ref`s, an untyped object, `Optional[…]` as
        // `anyOf` with null. A required `$ref` sibling gets a valid object, not "test".
        let pydantic = json!({"type": "object",
            "properties": {"req": {"$ref": "#/$defs/Request"}}, "required": ["req"],
            "$defs": {
                "Request": {"type": "object", "properties": {
                    "options": {"$ref": "#/$defs/Options"},
                    "target_path": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null},
                    "hook": {"anyOf": [{"$ref": "#/$defs/Hook"}, {"type": "null"}], "default": null}},
                    "required": ["options"]},
                "Options": {"properties": {"mode": {"enum": ["a", "b"]}, "depth": {"type": "integer"}},
                    "required": ["mode", "depth"]},
                "Hook": {"type": "object", "properties": {"url": {"type": "string"}},
                    "required": ["url"]}}});
        let lanes = lanes_of(&pydantic);
        let names: Vec<(EscapeCheck, &str)> = lanes
            .iter()
            .map(|l| (l.check, l.parameter.as_str()))
            .collect();
        assert_eq!(
            names[..2],
            [
                (EscapeCheck::PathTraversal, "req.target_path"),
                (EscapeCheck::Ssrf, "req.hook.url")
            ]
        );
        assert_eq!(
            arguments_with(&pydantic, &pydantic, &lanes[1].at, json!("http://x")),
            json!({"req": {"options": {"mode": "a", "depth": 1}, "hook": {"url": "http://x"}}})
        );
        // A required property that refers back to its own object ends at the bound.
        let looped = json!({"type": "object", "properties": {"n": {"$ref": "#"}, "p": {"type": "string"}},
            "required": ["n"]});
        let args = arguments_with(&looped, &looped, &[Step::Key("p".into())], json!("x"));
        assert_eq!(args["p"], "x");
        assert!(args.to_string().len() < 200, "{args}");
        // minItems is kept: the payload's item, then benign ones.
        let listed = json!({"properties": {"f": {"type": "array", "minItems": 2,
            "items": {"type": "object", "properties": {"path": {"type": "string"}},
                      "required": ["path"]}}}});
        let lane = &lanes_of(&listed)[0];
        assert_eq!(lane.parameter, "f[].path");
        assert_eq!(
            arguments_with(&listed, &listed, &lane.at, json!("p")),
            json!({"f": [{"path": "p"}, {"path": "test"}]})
        );
    }

    #[test]
    fn proof_is_found_and_an_echo_is_not_accused() {
        let passwd = text(
            false,
            "daemon:x:1:1::/:/bin/sh\nroot:x:0:0:root:/root:/bin/bash\nbin:x:2:2",
        );
        assert_eq!(
            judge_returned(&passwd, passwd_proof),
            Answer::Proof("the result holds \"root:x:0:0:root:/root:/bin/bash\"".into())
        );
        let echo = text(false, "label: $(printf 'A%sB' tok1)");
        assert!(matches!(
            judge_returned(&echo, |t| marker_proof(t, "tok1")),
            Answer::Answered(_)
        ));
        let expanded = text(false, "label: Atok1B");
        assert!(matches!(
            judge_returned(&expanded, |t| marker_proof(t, "tok1")),
            Answer::Proof(_)
        ));
        // A tool error that leaks the file still proves it.
        let leaked = text(true, "cannot parse root:x:0:0:root:/root:/bin/sh");
        assert!(matches!(
            judge_returned(&leaked, passwd_proof),
            Answer::Proof(_)
        ));
        let refused = text(true, "outside the sandbox");
        assert_eq!(
            judge_returned(&refused, passwd_proof),
            Answer::ToolError("\"outside the sandbox\"".into())
        );
        // structuredContent is searched too.
        let structured = Ok(ToolResult {
            content: vec![],
            structured_content: Some(json!({"body": "root:x:0:0:root:/root:/bin/sh"})),
            is_error: false,
        });
        assert!(matches!(
            judge_returned(&structured, passwd_proof),
            Answer::Proof(_)
        ));
    }

    #[test]
    fn smuggling_warns_only_when_accepted() {
        assert!(matches!(
            judge_smuggled(&text(false, "ok")),
            Answer::Proof(_)
        ));
        assert!(matches!(
            judge_smuggled(&text(true, "unknown property")),
            Answer::ToolError(_)
        ));
        assert_eq!(EscapeCheck::SchemaSmuggling.on_proof(), CheckVerdict::Warn);
        assert_eq!(EscapeCheck::Ssrf.on_proof(), CheckVerdict::Fail);
    }

    #[test]
    fn quoted_text_is_one_bounded_inert_line() {
        let hostile = format!(
            "\u{1b}]0;owned\u{7}\u{1b}[31mred\r\nnext\u{202e}line{}",
            "x".repeat(100_000)
        );
        let shown = inert(&hostile, 60);
        assert!(shown.chars().count() <= 61, "{shown}");
        assert!(shown.ends_with('…'));
        assert!(
            !shown
                .chars()
                .any(|c| c.is_control() || toolscore_core::is_hidden(c)),
            "{shown}"
        );
        assert!(
            shown.starts_with("\\u{1b}]0;owned\\u{7}\\u{1b}[31mred next\\u{202e}line"),
            "{shown}"
        );
        assert_eq!(inert("  a \n\t b  ", 10), "a b");
        let line = format!(
            "{}root:x:0:0:\u{1b}[2J{}",
            "y".repeat(5000),
            "z".repeat(5000)
        );
        let proof = passwd_proof(&line).unwrap();
        assert!(proof.chars().count() < MAX_QUOTE + 10, "{proof}");
        assert!(
            proof.starts_with("\"…") && proof.contains("root:x:0:0:\\u{1b}[2J"),
            "{proof}"
        );
    }

    #[test]
    fn only_loopback_servers_are_probed() {
        for url in [
            "http://127.0.0.1:8080/mcp",
            "http://127.1.2.3/mcp",
            "http://localhost:3000/mcp",
            "http://LOCALHOST/mcp",
            "http://[::1]:9/mcp",
            "http://[::ffff:127.0.0.1]/mcp",
        ] {
            assert!(is_loopback_url(url), "{url}");
        }
        for url in [
            "https://mcp.example.com/mcp",
            "http://10.0.0.1/mcp",
            "http://localhost.example.com/mcp",
            "http://127.0.0.1.nip.io/mcp",
            "not a url",
        ] {
            assert!(!is_loopback_url(url), "{url}");
        }
    }

    #[test]
    fn a_pass_says_what_the_answers_were() {
        let mut t = Tally::default();
        t.add(&Answer::ToolError("\"no\"".into()));
        t.add(&Answer::Timeout);
        assert_eq!(
            t.evidence(EscapeCheck::PathTraversal, 2, 1),
            "no proof in 2 calls: 1 refused with a tool error, 1 got no answer within the timeout; last, a tool error \"no\"; 2 more payloads cut by the bound on calls; 1 more payload not sent: the tool stopped answering"
        );
    }
}
