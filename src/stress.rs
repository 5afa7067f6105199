//! `toolscore stress`: parallel sessions call a live MCP server's tools directly (no model),
//! each with arguments of its own, for a fixed time; per tool, how many calls failed and how,
//! how long the answered ones took, and whether any session was shown another session's data.
//!
//! - Each session makes the dataset's expected calls in turn, closed loop (the next call as
//!   soon as the last answer came back) or at `rate` calls per second. Over stdio a session is
//!   a server process of its own: that is what a stdio server is, one client per process.
//! - Every call carries a canary, `tscanary-<run>-<session>-<call>`, appended to each of its
//!   string arguments the tool's input schema leaves free (no `enum`, `const`, `pattern`,
//!   `format` or short `maxLength`), so no two calls send the same arguments. A result, or an
//!   error message, that contains a canary of another session (or of another run) is leakage:
//!   a cache, a global or a connection pool handed one client's data to another.
//! - Outcomes: a result, a tool-execution error (`isError`), a JSON-RPC error, HTTP 429 with
//!   and without `Retry-After`, HTTP 5xx, a dropped connection, a timeout. Every outcome but a
//!   result counts as an error; latency percentiles are of the calls the server answered
//!   (result, `isError` or JSON-RPC error), with their order-statistic intervals. A 429's
//!   `Retry-After` is recorded, not obeyed: the offered load is what is being measured.
//!
//! The judging and aggregation are pure and unit-tested; [`stress`] only makes the calls.

use std::fmt::Write as _;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use regex::Regex;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::watch;

use crate::catalog::mcp::{McpError, McpSession, ServerIdentity, ServerSpec, ToolResult};
use crate::probe::ExpectedCall;
use crate::report::{LatencyAgg, LatencySummary, format_percentile};
use crate::stats::{Interval, wilson_interval, wilson_upper_bound};

/// What every canary starts with.
pub const CANARY_PREFIX: &str = "tscanary-";

/// The mark one call leaves in its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Canary {
    /// Random per run, so a result replaying an earlier run's argument is caught too.
    pub run: u32,
    pub session: u32,
    pub call: u64,
}

impl std::fmt::Display for Canary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{CANARY_PREFIX}{:08x}-{}-{}",
            self.run, self.session, self.call
        )
    }
}

static CANARY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"tscanary-([0-9a-f]{8})-([0-9]{1,9})-([0-9]{1,19})").expect("static regex is valid")
});

/// Every canary in `text`, in order of appearance.
pub fn find_canaries(text: &str) -> Vec<Canary> {
    CANARY
        .captures_iter(text)
        .filter_map(|c| {
            Some(Canary {
                run: u32::from_str_radix(&c[1], 16).ok()?,
                session: c[2].parse().ok()?,
                call: c[3].parse().ok()?,
            })
        })
        .collect()
}

/// The canaries in `text` that belong to another session than `session` of run `run`, once
/// each.
pub fn foreign_canaries(text: &str, run: u32, session: u32) -> Vec<Canary> {
    let mut found: Vec<Canary> = find_canaries(text)
        .into_iter()
        .filter(|c| (c.run, c.session) != (run, session))
        .collect();
    found.sort();
    found.dedup();
    found
}

/// Shortest `maxLength` a free string may declare: the canary and a space must fit after a
/// short value.
const MIN_FREE_MAX_LENGTH: u64 = 64;

/// The top-level string parameters of `schema` that accept any text, in schema order: the
/// places a canary can go without breaking the call.
pub fn free_string_fields(schema: &Value) -> Vec<String> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .filter(|(_, p)| {
            let is_string = match p.get("type") {
                Some(Value::String(t)) => t == "string",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
                _ => false,
            };
            let constrained = ["enum", "const", "pattern", "format"]
                .iter()
                .any(|k| p.get(k).is_some())
                || p.get("maxLength")
                    .and_then(Value::as_u64)
                    .is_some_and(|m| m < MIN_FREE_MAX_LENGTH);
            is_string && !constrained
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// `args` with `canary` appended (after a space) to each of `fields` that holds a string.
pub fn plant_canary(args: &Value, fields: &[String], canary: &Canary) -> Value {
    let mut out = args.clone();
    if let Value::Object(map) = &mut out {
        for field in fields {
            if let Some(Value::String(s)) = map.get_mut(field) {
                s.push(' ');
                s.push_str(&canary.to_string());
            }
        }
    }
    out
}

/// The fields of `args` a canary goes into: the free string fields it gives a string.
pub fn canary_fields(args: &Value, free: &[String]) -> Vec<String> {
    free.iter()
        .filter(|f| args.get(f.as_str()).is_some_and(Value::is_string))
        .cloned()
        .collect()
}

/// How one call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Outcome {
    /// A result without `isError`.
    Ok,
    /// A result with `isError: true`.
    ToolError,
    /// A JSON-RPC error answer.
    RpcError { code: i32 },
    /// HTTP 429.
    RateLimited { retry_after: bool },
    /// HTTP 5xx.
    ServerError { status: u16 },
    /// The connection broke (or, over stdio, the process went away) during the call.
    Dropped,
    /// No answer within the timeout.
    Timeout,
    /// Another HTTP error status (400, 404, …), or a call that could not be made at all.
    Other,
}

impl Outcome {
    /// Whether the server answered (its latency is then counted).
    pub fn answered(self) -> bool {
        matches!(
            self,
            Outcome::Ok | Outcome::ToolError | Outcome::RpcError { .. }
        )
    }

    /// Whether the session has to be opened again after it.
    pub fn breaks_session(self) -> bool {
        matches!(self, Outcome::Dropped | Outcome::Timeout)
    }
}

/// The outcome of a call.
pub fn classify(result: &Result<ToolResult, McpError>) -> Outcome {
    match result {
        Ok(r) if r.is_error => Outcome::ToolError,
        Ok(_) => Outcome::Ok,
        Err(McpError::Rpc { code, .. }) => Outcome::RpcError { code: *code },
        Err(McpError::HttpStatus {
            status: 429,
            retry_after,
            ..
        }) => Outcome::RateLimited {
            retry_after: retry_after.is_some(),
        },
        Err(McpError::HttpStatus { status, .. }) if *status >= 500 => {
            Outcome::ServerError { status: *status }
        }
        Err(McpError::Transport { .. }) => Outcome::Dropped,
        Err(McpError::Timeout { .. }) => Outcome::Timeout,
        Err(_) => Outcome::Other,
    }
}

/// The text of an answer that is searched for canaries: every content block, the structured
/// content, or a JSON-RPC error's message.
pub fn answer_text(result: &Result<ToolResult, McpError>) -> String {
    match result {
        Ok(r) => {
            let mut text: String = r.content.iter().map(Value::to_string).collect();
            if let Some(s) = &r.structured_content {
                text.push_str(&s.to_string());
            }
            text
        }
        Err(McpError::Rpc { message, .. }) => message.clone(),
        Err(_) => String::new(),
    }
}

/// Longest error text kept as an example.
const MAX_DETAIL: usize = 200;

fn detail(result: &Result<ToolResult, McpError>) -> Option<String> {
    let text = match result {
        Ok(r) if r.is_error => format!("isError: {}", r.text()),
        Ok(_) => return None,
        Err(e) => e.to_string(),
    };
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(if one_line.chars().count() > MAX_DETAIL {
        let cut: String = one_line.chars().take(MAX_DETAIL).collect();
        format!("{cut}…")
    } else {
        one_line
    })
}

/// One call as it happened.
#[derive(Debug, Clone, PartialEq)]
pub struct CallObservation {
    pub tool: String,
    pub session: u32,
    pub call: u64,
    pub latency_ms: f64,
    pub outcome: Outcome,
    /// Whether the call carried its canary (the tool had a free string argument).
    pub planted: bool,
    /// Canaries of other sessions in the answer.
    pub leaked: Vec<Canary>,
    /// The error, for a call that did not end in a result.
    pub detail: Option<String>,
}

/// How the sessions fared, apart from their calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SessionLog {
    pub planned: u32,
    pub started: u32,
    /// Why each session that never started did not.
    pub failed_to_start: Vec<String>,
    /// Sessions opened again after a dropped connection or a timeout.
    pub reconnects: u64,
    /// Why each session that could not be opened again (and so stopped early) could not.
    pub reconnect_failures: Vec<String>,
}

/// One tool's figures (or all tools', as `tool: "(all tools)"`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolStress {
    pub tool: String,
    pub calls: u64,
    pub ok: u64,
    /// Every call that did not end in a result.
    pub errors: u64,
    pub error_rate: Option<f64>,
    /// Two-sided Wilson interval of the error rate.
    pub error_interval: Option<Interval>,
    pub tool_errors: u64,
    pub rpc_errors: u64,
    pub rate_limited_with_retry_after: u64,
    pub rate_limited_without_retry_after: u64,
    pub server_errors: u64,
    pub dropped: u64,
    pub timeouts: u64,
    pub other: u64,
    /// Latency of the answered calls (result, isError or JSON-RPC error).
    pub latency_ms: LatencySummary,
    /// The arguments that carried the canary; empty when the tool has no free string.
    pub canary_fields: Vec<String>,
    /// Answers that carried another session's canary.
    pub leaked_answers: u64,
    /// The first error seen, as an example.
    pub first_error: Option<String>,
}

/// One answer that carried another session's canary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Leak {
    pub tool: String,
    pub session: u32,
    pub call: u64,
    /// The other sessions' canaries it contained.
    pub found: Vec<String>,
}

/// Leaks listed in full in the JSON report; all are counted.
pub const LEAKS_LISTED: usize = 20;
/// Leaks listed on the terminal.
pub const LEAKS_SHOWN: usize = 5;

/// The error-rate gate: the one-sided upper confidence bound of the error rate over all calls
/// must not exceed `max_error_rate`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorRateGate {
    pub max_error_rate: f64,
    pub upper_bound: Option<f64>,
    pub passed: bool,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StressReport {
    pub source: String,
    pub transport: &'static str,
    pub server: ServerIdentity,
    pub sessions: u32,
    /// The stated peak and multiple the sessions were derived from, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak: Option<PeakLoad>,
    pub duration_s: f64,
    /// From the first call to the last answer, in seconds.
    pub elapsed_s: f64,
    /// Calls per second per session, when paced; closed loop otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_per_session: Option<f64>,
    pub confidence: f64,
    pub tools: Vec<ToolStress>,
    pub total: ToolStress,
    pub leaked_answers: u64,
    pub leaks: Vec<Leak>,
    pub session_log: SessionLog,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<ErrorRateGate>,
    /// Stopped with Ctrl-C or SIGTERM before the duration ran out.
    pub interrupted: bool,
}

/// `sessions = ceil(peak × multiple)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PeakLoad {
    pub peak: f64,
    pub multiple: f64,
}

impl PeakLoad {
    /// The sessions it stands for; `None` when not a positive whole number within `max`.
    pub fn sessions(self, max: u32) -> Option<u32> {
        let n = (self.peak * self.multiple).ceil();
        (n.is_finite() && n >= 1.0 && n <= f64::from(max)).then_some(n as u32)
    }
}

fn tally(tool: &str, calls: &[&CallObservation], fields: &[String], conf: f64) -> ToolStress {
    let mut t = ToolStress {
        tool: tool.to_owned(),
        calls: calls.len() as u64,
        ok: 0,
        errors: 0,
        error_rate: None,
        error_interval: None,
        tool_errors: 0,
        rpc_errors: 0,
        rate_limited_with_retry_after: 0,
        rate_limited_without_retry_after: 0,
        server_errors: 0,
        dropped: 0,
        timeouts: 0,
        other: 0,
        latency_ms: LatencyAgg::new().summary(conf),
        canary_fields: fields.to_vec(),
        leaked_answers: 0,
        first_error: None,
    };
    let mut latency = LatencyAgg::new();
    for c in calls {
        match c.outcome {
            Outcome::Ok => t.ok += 1,
            Outcome::ToolError => t.tool_errors += 1,
            Outcome::RpcError { .. } => t.rpc_errors += 1,
            Outcome::RateLimited { retry_after: true } => t.rate_limited_with_retry_after += 1,
            Outcome::RateLimited { retry_after: false } => t.rate_limited_without_retry_after += 1,
            Outcome::ServerError { .. } => t.server_errors += 1,
            Outcome::Dropped => t.dropped += 1,
            Outcome::Timeout => t.timeouts += 1,
            Outcome::Other => t.other += 1,
        }
        if c.outcome.answered() {
            latency.record(c.latency_ms);
        }
        if !c.leaked.is_empty() {
            t.leaked_answers += 1;
        }
        if t.first_error.is_none() && c.outcome != Outcome::Ok {
            t.first_error = c.detail.clone();
        }
    }
    t.errors = t.calls - t.ok;
    t.error_rate = (t.calls > 0).then(|| t.errors as f64 / t.calls as f64);
    t.error_interval = wilson_interval(t.errors, t.calls, conf);
    t.latency_ms = latency.summary(conf);
    t
}

/// The gate's verdict on the total.
pub fn judge_gate(
    total: &ToolStress,
    log: &SessionLog,
    max_error_rate: f64,
    conf: f64,
) -> ErrorRateGate {
    let upper = wilson_upper_bound(total.errors, total.calls, conf);
    let pct = |x: f64| format!("{:.2}%", x * 100.0);
    let (passed, reason) = match upper {
        None => (false, "no call was made".to_owned()),
        Some(_) if !log.failed_to_start.is_empty() => (
            false,
            format!(
                "{} of {} sessions failed to start",
                log.failed_to_start.len(),
                log.planned
            ),
        ),
        Some(u) if u > max_error_rate => (
            false,
            format!(
                "the error rate's upper bound {} ({}/{} calls, one-sided {:.0}%) exceeds {}",
                pct(u),
                total.errors,
                total.calls,
                conf * 100.0,
                pct(max_error_rate)
            ),
        ),
        Some(u) => (
            true,
            format!(
                "the error rate's upper bound {} ({}/{} calls, one-sided {:.0}%) is within {}",
                pct(u),
                total.errors,
                total.calls,
                conf * 100.0,
                pct(max_error_rate)
            ),
        ),
    };
    ErrorRateGate {
        max_error_rate,
        upper_bound: upper,
        passed,
        reason,
    }
}

/// What a run measured, before it is summarised.
#[derive(Debug, Clone)]
pub struct StressRun {
    pub source: String,
    pub transport: &'static str,
    pub server: ServerIdentity,
    /// Tools in the order the dataset first names them, with their canary fields.
    pub tools: Vec<(String, Vec<String>)>,
    pub observations: Vec<CallObservation>,
    pub session_log: SessionLog,
    pub elapsed: Duration,
    pub interrupted: bool,
}

/// How the run was set up, as the report states it.
#[derive(Debug, Clone, PartialEq)]
pub struct StressSettings {
    pub sessions: u32,
    pub peak: Option<PeakLoad>,
    pub duration: Duration,
    pub rate_per_session: Option<f64>,
    pub confidence: f64,
    pub max_error_rate: Option<f64>,
}

/// The report of a run: per tool, in total, the leaks and the gate.
pub fn summarise(run: &StressRun, settings: &StressSettings) -> StressReport {
    let conf = settings.confidence;
    let mut tools = Vec::new();
    for (tool, fields) in &run.tools {
        let calls: Vec<&CallObservation> = run
            .observations
            .iter()
            .filter(|o| &o.tool == tool)
            .collect();
        tools.push(tally(tool, &calls, fields, conf));
    }
    let all: Vec<&CallObservation> = run.observations.iter().collect();
    let total = tally("(all tools)", &all, &[], conf);
    let mut leaked: Vec<&CallObservation> = run
        .observations
        .iter()
        .filter(|o| !o.leaked.is_empty())
        .collect();
    leaked.sort_by_key(|o| (o.session, o.call));
    let leaks = leaked
        .iter()
        .take(LEAKS_LISTED)
        .map(|o| Leak {
            tool: o.tool.clone(),
            session: o.session,
            call: o.call,
            found: o.leaked.iter().map(Canary::to_string).collect(),
        })
        .collect();
    let gate = settings
        .max_error_rate
        .map(|max| judge_gate(&total, &run.session_log, max, conf));
    StressReport {
        source: run.source.clone(),
        transport: run.transport,
        server: run.server.clone(),
        sessions: settings.sessions,
        peak: settings.peak,
        duration_s: settings.duration.as_secs_f64(),
        elapsed_s: run.elapsed.as_secs_f64(),
        rate_per_session: settings.rate_per_session,
        confidence: conf,
        tools,
        leaked_answers: leaked.len() as u64,
        leaks,
        total,
        session_log: run.session_log.clone(),
        gate,
        interrupted: run.interrupted,
    }
}

fn format_error_rate(t: &ToolStress) -> String {
    match (t.error_rate, t.error_interval) {
        (Some(p), Some(iv)) => format!(
            "{p:.4} [{:.4}, {:.4}] ({}/{})",
            iv.lo, iv.hi, t.errors, t.calls
        ),
        _ => format!("n/a ({}/{})", t.errors, t.calls),
    }
}

fn write_tool(out: &mut String, t: &ToolStress, conf: f64) {
    let canary = if t.canary_fields.is_empty() {
        String::new()
    } else {
        format!(
            ", canary in {}",
            t.canary_fields
                .iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let _ = writeln!(out, "{}: {} calls{canary}", t.tool, t.calls);
    let _ = writeln!(
        out,
        "  error rate  {} at {:.0}%",
        format_error_rate(t),
        conf * 100.0
    );
    let _ = writeln!(
        out,
        "  errors      {} isError, {} JSON-RPC, {} HTTP 429 with Retry-After, {} without, {} HTTP 5xx, {} dropped, {} timeouts{}",
        t.tool_errors,
        t.rpc_errors,
        t.rate_limited_with_retry_after,
        t.rate_limited_without_retry_after,
        t.server_errors,
        t.dropped,
        t.timeouts,
        if t.other > 0 {
            format!(", {} other", t.other)
        } else {
            String::new()
        }
    );
    let l = &t.latency_ms;
    let _ = writeln!(
        out,
        "  latency ms  p50 {}  p95 {}  p99 {}  ({} answered)",
        format_percentile(&l.p50),
        format_percentile(&l.p95),
        format_percentile(&l.p99),
        l.n
    );
    if let Some(e) = &t.first_error {
        let _ = writeln!(out, "  first error {e}");
    }
}

/// The report for the terminal.
pub fn render(r: &StressReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "stress of {}", r.source);
    let _ = writeln!(out, "server: {}", r.server);
    let sessions = match r.peak {
        Some(p) => format!("{} sessions (peak {} × {})", r.sessions, p.peak, p.multiple),
        None => format!("{} sessions", r.sessions),
    };
    let per_session = if r.transport == "stdio" {
        ", each its own server process (stdio)"
    } else {
        " over streamable HTTP"
    };
    let pace = match r.rate_per_session {
        Some(rate) => format!("{rate} calls/s per session"),
        None => "closed loop".to_owned(),
    };
    let _ = writeln!(
        out,
        "{sessions}{per_session}, {:.1} s, {pace}; {} calls in {:.1} s ({:.1} calls/s)\n",
        r.duration_s,
        r.total.calls,
        r.elapsed_s,
        if r.elapsed_s > 0.0 {
            r.total.calls as f64 / r.elapsed_s
        } else {
            0.0
        }
    );
    for t in &r.tools {
        write_tool(&mut out, t, r.confidence);
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "all tools: error rate {} at {:.0}%",
        format_error_rate(&r.total),
        r.confidence * 100.0
    );
    let planted: u64 = r
        .tools
        .iter()
        .filter(|t| !t.canary_fields.is_empty())
        .map(|t| t.calls)
        .sum();
    if r.leaked_answers == 0 {
        let _ = writeln!(
            out,
            "leakage: none; {} answers searched, {planted} calls carried a canary",
            r.total.calls
        );
    } else {
        let _ = writeln!(
            out,
            "LEAKAGE: {} answers carried another session's canary ({} answers searched, {planted} calls carried a canary)",
            r.leaked_answers, r.total.calls
        );
        for l in r.leaks.iter().take(LEAKS_SHOWN) {
            let _ = writeln!(
                out,
                "  session {} call {} ({}) got {}",
                l.session,
                l.call,
                l.tool,
                l.found.join(", ")
            );
        }
        let shown = r.leaks.len().min(LEAKS_SHOWN) as u64;
        if r.leaked_answers > shown {
            let _ = writeln!(out, "  … {} more", r.leaked_answers - shown);
        }
    }
    let s = &r.session_log;
    let _ = writeln!(
        out,
        "sessions: {} of {} started, {} reopened after a dropped connection or timeout",
        s.started, s.planned, s.reconnects
    );
    for e in s.failed_to_start.iter().take(3) {
        let _ = writeln!(out, "  failed to start: {}", first_line(e));
    }
    for e in s.reconnect_failures.iter().take(3) {
        let _ = writeln!(out, "  could not reopen: {}", first_line(e));
    }
    if r.interrupted {
        let _ = writeln!(out, "interrupted before the duration ran out");
    }
    if let Some(g) = &r.gate {
        let _ = writeln!(
            out,
            "gate: {}: {}",
            if g.passed { "PASS" } else { "FAIL" },
            g.reason
        );
    }
    out
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// How the sessions run.
#[derive(Debug, Clone)]
pub struct StressPlan {
    pub sessions: u32,
    pub duration: Duration,
    /// Calls per second per session; closed loop when `None`.
    pub rate_per_session: Option<f64>,
    /// For connecting and for each call.
    pub timeout: Duration,
    /// (tool, parameter) left as the dataset wrote them: a path or an id the server looks up.
    pub no_canary: Vec<(String, String)>,
}

/// Reads environment variables (the bearer token), injected for tests.
pub type EnvReader = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The calls the sessions make in turn, with the fields each carries its canary in.
#[derive(Debug, Clone)]
struct PreparedCall {
    tool: String,
    args: Value,
    fields: Vec<String>,
}

/// Lists the server's tools once, then runs `plan.sessions` sessions making `calls` in turn
/// until the duration ends or `stop` turns true. Fails only when the server cannot be listed,
/// or does not list a tool the calls need.
pub async fn stress(
    spec: &ServerSpec,
    plan: &StressPlan,
    env: EnvReader,
    calls: &[ExpectedCall],
    stop: watch::Receiver<bool>,
) -> Result<StressRun, McpError> {
    let server_label = spec.label();
    let first = McpSession::connect(spec, plan.timeout, env.as_ref()).await?;
    let server = first.server().clone();
    let listed = first.list_tool_definitions().await;
    first.shutdown().await;
    let definitions = listed?;
    let mut prepared = Vec::new();
    let mut tools: Vec<(String, Vec<String>)> = Vec::new();
    for call in calls {
        let Some(def) = definitions
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(call.tool.as_str()))
        else {
            return Err(McpError::Config {
                server: server_label,
                message: format!(
                    "the server does not list the tool `{}` that case {} expects",
                    call.tool, call.case
                ),
            });
        };
        let free: Vec<String> = free_string_fields(def.get("inputSchema").unwrap_or(&Value::Null))
            .into_iter()
            .filter(|f| {
                !plan
                    .no_canary
                    .iter()
                    .any(|(t, p)| t == &call.tool && p == f)
            })
            .collect();
        let fields = canary_fields(&call.args, &free);
        match tools.iter_mut().find(|(t, _)| t == &call.tool) {
            Some((_, known)) => {
                for f in &fields {
                    if !known.contains(f) {
                        known.push(f.clone());
                    }
                }
            }
            None => tools.push((call.tool.clone(), fields.clone())),
        }
        prepared.push(PreparedCall {
            tool: call.tool.clone(),
            args: call.args.clone(),
            fields,
        });
    }
    let prepared = Arc::new(prepared);
    let run_id: u32 = rand::random();

    // Every session connects first, so all of them load the server for the whole duration.
    let mut connecting = tokio::task::JoinSet::new();
    for session in 1..=plan.sessions {
        let spec = spec.clone();
        let env = Arc::clone(&env);
        let timeout = plan.timeout;
        connecting.spawn(async move {
            (
                session,
                McpSession::connect(&spec, timeout, env.as_ref()).await,
            )
        });
    }
    let mut log = SessionLog {
        planned: plan.sessions,
        ..SessionLog::default()
    };
    let mut sessions = Vec::new();
    while let Some(joined) = connecting.join_next().await {
        match joined {
            Ok((n, Ok(s))) => sessions.push((n, s)),
            Ok((n, Err(e))) => log.failed_to_start.push(format!("session {n}: {e}")),
            Err(e) => log
                .failed_to_start
                .push(format!("a session task failed: {e}")),
        }
    }
    log.started = sessions.len() as u32;
    if *stop.borrow() {
        for (_, s) in sessions {
            s.shutdown().await;
        }
        return Ok(StressRun {
            source: server_label,
            transport: transport_name(spec),
            server,
            tools,
            observations: Vec::new(),
            session_log: log,
            elapsed: Duration::ZERO,
            interrupted: true,
        });
    }

    let started = Instant::now();
    let deadline = started + plan.duration;
    let mut running = tokio::task::JoinSet::new();
    for (n, session) in sessions {
        let worker = SessionWorker {
            spec: spec.clone(),
            env: Arc::clone(&env),
            timeout: plan.timeout,
            calls: Arc::clone(&prepared),
            run_id,
            session: n,
            rate: plan.rate_per_session,
            deadline,
            stop: stop.clone(),
        };
        running.spawn(worker.run(session));
    }
    let mut observations = Vec::new();
    while let Some(joined) = running.join_next().await {
        match joined {
            Ok(done) => {
                observations.extend(done.observations);
                log.reconnects += done.reconnects;
                log.reconnect_failures.extend(done.reconnect_failure);
            }
            Err(e) => log
                .reconnect_failures
                .push(format!("a session task failed: {e}")),
        }
    }
    let elapsed = started.elapsed();
    let interrupted = *stop.borrow();
    Ok(StressRun {
        source: server_label,
        transport: transport_name(spec),
        server,
        tools,
        observations,
        session_log: log,
        elapsed,
        interrupted,
    })
}

fn transport_name(spec: &ServerSpec) -> &'static str {
    match spec {
        ServerSpec::Stdio { .. } => "stdio",
        ServerSpec::Http { .. } => "streamable HTTP",
    }
}

struct SessionWorker {
    spec: ServerSpec,
    env: EnvReader,
    timeout: Duration,
    calls: Arc<Vec<PreparedCall>>,
    run_id: u32,
    session: u32,
    rate: Option<f64>,
    deadline: Instant,
    stop: watch::Receiver<bool>,
}

struct SessionDone {
    observations: Vec<CallObservation>,
    reconnects: u64,
    reconnect_failure: Option<String>,
}

impl SessionWorker {
    async fn run(mut self, first: McpSession) -> SessionDone {
        let mut done = SessionDone {
            observations: Vec::new(),
            reconnects: 0,
            reconnect_failure: None,
        };
        let mut session = Some(first);
        let start = Instant::now();
        let mut call: u64 = 0;
        loop {
            if Instant::now() >= self.deadline || *self.stop.borrow() {
                break;
            }
            if let Some(rate) = self.rate {
                let due = start + Duration::from_secs_f64(call as f64 / rate);
                if due >= self.deadline {
                    break;
                }
                tokio::select! {
                    () = tokio::time::sleep_until(due.into()) => {}
                    Ok(()) = self.stop.changed() => break,
                }
            }
            let current = match session.take() {
                Some(s) => s,
                None => {
                    match McpSession::connect(&self.spec, self.timeout, self.env.as_ref()).await {
                        Ok(s) => {
                            done.reconnects += 1;
                            s
                        }
                        Err(e) => {
                            done.reconnect_failure = Some(format!("session {}: {e}", self.session));
                            break;
                        }
                    }
                }
            };
            // Sessions start on different calls, so each tool is under concurrent load.
            let index = (self.session as u64 + call) % self.calls.len() as u64;
            let prepared = &self.calls[index as usize];
            let canary = Canary {
                run: self.run_id,
                session: self.session,
                call,
            };
            let args = plant_canary(&prepared.args, &prepared.fields, &canary);
            let began = Instant::now();
            let result = tokio::select! {
                r = current.call_tool(&prepared.tool, &args) => r,
                // An interrupted call has no outcome to count. (An `Err` means the sender is
                // gone and no stop can come: the branch is then disabled.)
                Ok(()) = self.stop.changed() => {
                    current.shutdown().await;
                    break;
                }
            };
            let latency_ms = began.elapsed().as_secs_f64() * 1000.0;
            let outcome = classify(&result);
            done.observations.push(CallObservation {
                tool: prepared.tool.clone(),
                session: self.session,
                call,
                latency_ms,
                outcome,
                planted: !prepared.fields.is_empty(),
                leaked: foreign_canaries(&answer_text(&result), self.run_id, self.session),
                detail: detail(&result),
            });
            call += 1;
            if outcome.breaks_session() {
                current.shutdown().await;
            } else {
                session = Some(current);
            }
        }
        if let Some(s) = session {
            s.shutdown().await;
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obs(tool: &str, session: u32, outcome: Outcome, latency_ms: f64) -> CallObservation {
        CallObservation {
            tool: tool.into(),
            session,
            call: 0,
            latency_ms,
            outcome,
            planted: true,
            leaked: Vec::new(),
            detail: (outcome != Outcome::Ok).then(|| format!("{outcome:?}")),
        }
    }

    #[test]
    fn canaries_round_trip_and_only_other_sessions_leak() {
        let own = Canary {
            run: 0xab,
            session: 1,
            call: 7,
        };
        assert_eq!(own.to_string(), "tscanary-000000ab-1-7");
        let other = Canary {
            run: 0xab,
            session: 12,
            call: 3,
        };
        let old_run = Canary {
            run: 0xcd,
            session: 1,
            call: 7,
        };
        let text = format!("echo: {own} and {other}, {other}; before: {old_run}");
        assert_eq!(find_canaries(&text), vec![own, other, other, old_run]);
        // Session 1 is not a prefix match of session 12, and an earlier run is foreign.
        assert_eq!(foreign_canaries(&text, 0xab, 1), vec![other, old_run]);
        assert_eq!(foreign_canaries(&own.to_string(), 0xab, 1), vec![]);
        assert_eq!(find_canaries("tscanary-xyz-1-2"), vec![]);
    }

    #[test]
    fn canaries_go_into_free_strings_only() {
        let schema = json!({"type": "object", "properties": {
            "message": {"type": "string"},
            "unit": {"type": "string", "enum": ["c", "f"]},
            "path": {"type": "string", "pattern": "^/"},
            "when": {"type": "string", "format": "date"},
            "code": {"type": "string", "maxLength": 8},
            "note": {"type": ["string", "null"], "maxLength": 500},
            "count": {"type": "integer"}}});
        assert_eq!(free_string_fields(&schema), vec!["message", "note"]);
        let args = json!({"message": "hi", "unit": "c", "count": 3});
        let fields = canary_fields(&args, &free_string_fields(&schema));
        assert_eq!(fields, vec!["message"]);
        let canary = Canary {
            run: 1,
            session: 2,
            call: 3,
        };
        assert_eq!(
            plant_canary(&args, &fields, &canary),
            json!({"message": "hi tscanary-00000001-2-3", "unit": "c", "count": 3})
        );
        assert!(free_string_fields(&json!({"type": "object"})).is_empty());
    }

    #[test]
    fn outcomes_are_classified_from_the_call_result() {
        let server = || "s".to_owned();
        let what = || "tools/call x".to_owned();
        let ok = |is_error| {
            Ok(ToolResult {
                content: vec![json!({"type": "text", "text": "t"})],
                structured_content: None,
                is_error,
            })
        };
        assert_eq!(classify(&ok(false)), Outcome::Ok);
        assert_eq!(classify(&ok(true)), Outcome::ToolError);
        let http = |status, retry_after: Option<&str>| {
            Err(McpError::HttpStatus {
                server: server(),
                what: what(),
                status,
                retry_after: retry_after.map(str::to_owned),
            })
        };
        assert_eq!(
            classify(&http(429, Some("2"))),
            Outcome::RateLimited { retry_after: true }
        );
        assert_eq!(
            classify(&http(429, None)),
            Outcome::RateLimited { retry_after: false }
        );
        assert_eq!(
            classify(&http(503, None)),
            Outcome::ServerError { status: 503 }
        );
        assert_eq!(classify(&http(400, None)), Outcome::Other);
        let rpc = Err(McpError::Rpc {
            server: server(),
            what: what(),
            code: -32602,
            message: "leaked tscanary-00000001-9-9".into(),
        });
        assert_eq!(classify(&rpc), Outcome::RpcError { code: -32602 });
        // An error message is searched for canaries too.
        assert_eq!(find_canaries(&answer_text(&rpc)).len(), 1);
        let dropped = Err(McpError::Transport {
            server: server(),
            what: what(),
            message: "connection closed".into(),
            stderr: String::new(),
        });
        assert_eq!(classify(&dropped), Outcome::Dropped);
        assert!(Outcome::Dropped.breaks_session() && !Outcome::Dropped.answered());
        let timeout = Err(McpError::Timeout {
            server: server(),
            what: what(),
            after: Duration::from_secs(1),
            stderr: String::new(),
        });
        assert_eq!(classify(&timeout), Outcome::Timeout);
    }

    fn run_of(observations: Vec<CallObservation>, failed: usize) -> StressRun {
        StressRun {
            source: "src".into(),
            transport: "stdio",
            server: ServerIdentity {
                name: "srv".into(),
                version: "1".into(),
                protocol_version: "2025-06-18".into(),
            },
            tools: vec![
                ("echo".into(), vec!["message".into()]),
                ("sum".into(), vec![]),
            ],
            observations,
            session_log: SessionLog {
                planned: 2,
                started: 2 - failed as u32,
                failed_to_start: vec!["session 2: boom".into(); failed],
                ..SessionLog::default()
            },
            elapsed: Duration::from_secs(3),
            interrupted: false,
        }
    }

    fn settings(max: Option<f64>) -> StressSettings {
        StressSettings {
            sessions: 2,
            peak: None,
            duration: Duration::from_secs(3),
            rate_per_session: None,
            confidence: 0.95,
            max_error_rate: max,
        }
    }

    #[test]
    fn tallies_count_each_outcome_and_time_only_answered_calls() {
        let mut calls = vec![
            obs("echo", 1, Outcome::Ok, 10.0),
            obs("echo", 1, Outcome::Ok, 20.0),
            obs("echo", 2, Outcome::ToolError, 30.0),
            obs("echo", 2, Outcome::RateLimited { retry_after: true }, 1.0),
            obs("echo", 2, Outcome::RateLimited { retry_after: false }, 1.0),
            obs("sum", 1, Outcome::ServerError { status: 502 }, 1.0),
            obs("sum", 1, Outcome::Dropped, 1.0),
            obs("sum", 2, Outcome::Timeout, 60000.0),
            obs("sum", 2, Outcome::RpcError { code: -32603 }, 2.0),
        ];
        calls[1].leaked = vec![Canary {
            run: 1,
            session: 2,
            call: 0,
        }];
        let report = summarise(&run_of(calls, 0), &settings(None));
        let echo = &report.tools[0];
        assert_eq!((echo.calls, echo.ok, echo.errors), (5, 2, 3));
        assert_eq!(echo.tool_errors, 1);
        assert_eq!(echo.rate_limited_with_retry_after, 1);
        assert_eq!(echo.rate_limited_without_retry_after, 1);
        assert_eq!(echo.latency_ms.n, 3);
        assert_eq!(echo.leaked_answers, 1);
        assert_eq!(echo.first_error.as_deref(), Some("ToolError"));
        let iv = echo.error_interval.unwrap();
        assert_eq!(iv, wilson_interval(3, 5, 0.95).unwrap());
        assert_eq!(echo.error_rate, Some(0.6));
        let sum = &report.tools[1];
        assert_eq!(
            (sum.server_errors, sum.dropped, sum.timeouts, sum.rpc_errors),
            (1, 1, 1, 1)
        );
        // The timeout's 60 s is not a latency: only the JSON-RPC error was answered.
        assert_eq!(sum.latency_ms.n, 1);
        // (2 ms is below the histogram's first bucket boundary, so it is kept exactly.)
        assert_eq!(sum.latency_ms.p50.as_ref().map(|p| p.value), Some(2.0));
        assert_eq!((report.total.calls, report.total.errors), (9, 7));
        assert_eq!(report.leaked_answers, 1);
        assert_eq!(
            report.leaks,
            vec![Leak {
                tool: "echo".into(),
                session: 1,
                call: 0,
                found: vec!["tscanary-00000001-2-0".into()],
            }]
        );
        assert!(report.gate.is_none());
        let text = render(&report);
        assert!(
            text.contains("echo: 5 calls, canary in `message`\n  error rate  0.6000 ["),
            "{text}"
        );
        assert!(
            text.contains("LEAKAGE: 1 answers carried another session's canary"),
            "{text}"
        );
        assert!(
            text.contains("  session 1 call 0 (echo) got tscanary-00000001-2-0\n"),
            "{text}"
        );
    }

    #[test]
    fn the_gate_reads_the_upper_bound_of_all_calls() {
        // 0 errors in 400 calls: upper bound 0.67% at one-sided 95%, within 1%.
        let clean: Vec<_> = (0..400).map(|_| obs("echo", 1, Outcome::Ok, 5.0)).collect();
        let report = summarise(&run_of(clean.clone(), 0), &settings(Some(0.01)));
        let gate = report.gate.as_ref().unwrap();
        assert!(gate.passed, "{gate:?}");
        assert_eq!(gate.upper_bound, wilson_upper_bound(0, 400, 0.95));
        assert!(render(&report).contains("gate: PASS: the error rate's upper bound 0.67%"));
        // 0 errors in 100 calls cannot show a rate below 1%: the bound is 2.6%.
        let few: Vec<_> = clean[..100].to_vec();
        let gate = summarise(&run_of(few, 0), &settings(Some(0.01)))
            .gate
            .unwrap();
        assert!(!gate.passed);
        assert!(gate.reason.contains("exceeds 1.00%"), "{}", gate.reason);
        // A session that never started fails the gate whatever the calls did.
        let gate = summarise(&run_of(clean, 1), &settings(Some(0.01)))
            .gate
            .unwrap();
        assert!(!gate.passed);
        assert_eq!(gate.reason, "1 of 2 sessions failed to start");
        let gate = summarise(&run_of(vec![], 0), &settings(Some(0.5)))
            .gate
            .unwrap();
        assert_eq!(
            (gate.passed, gate.reason.as_str()),
            (false, "no call was made")
        );
    }

    #[test]
    fn peak_times_multiple_rounds_up() {
        let load = |peak, multiple| PeakLoad { peak, multiple }.sessions(64);
        assert_eq!(load(3.0, 2.0), Some(6));
        assert_eq!(load(5.0, 1.5), Some(8));
        assert_eq!(load(0.0, 2.0), None);
        assert_eq!(load(40.0, 2.0), None);
    }
}
