//! Judging and counting (pure): how each call ended, per-tool tallies with their intervals,
//! the leaks, the error-rate gate, and the report of a run (the leakage verdict is
//! [`super::leakage`]'s).

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::canary::Canary;
use super::leakage::{
    CallPlan, KeptField, LeakSource, Leakage, ToolCanaries, judge_leakage, sources_of,
};
use crate::client::{McpError, ToolResult};
use toolscore_core::catalog::source::ServerIdentity;
use toolscore_stats::{Interval, LatencyAgg, LatencySummary, wilson_interval, wilson_upper_bound};

/// How one call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum CallOutcome {
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

impl CallOutcome {
    /// Whether the server answered (its latency is then counted).
    pub fn answered(self) -> bool {
        matches!(
            self,
            CallOutcome::Ok | CallOutcome::ToolError | CallOutcome::RpcError { .. }
        )
    }

    /// Whether the session has to be opened again after it.
    pub(crate) fn breaks_session(self) -> bool {
        matches!(self, CallOutcome::Dropped | CallOutcome::Timeout)
    }
}

/// The outcome of a call.
pub(crate) fn classify(result: &Result<ToolResult, McpError>) -> CallOutcome {
    match result {
        Ok(r) if r.is_error => CallOutcome::ToolError,
        Ok(_) => CallOutcome::Ok,
        Err(McpError::Rpc { code, .. }) => CallOutcome::RpcError { code: *code },
        Err(McpError::HttpStatus {
            status: 429,
            retry_after,
            ..
        }) => CallOutcome::RateLimited {
            retry_after: retry_after.is_some(),
        },
        Err(McpError::HttpStatus { status, .. }) if *status >= 500 => {
            CallOutcome::ServerError { status: *status }
        }
        Err(McpError::Transport { .. }) => CallOutcome::Dropped,
        Err(McpError::Timeout { .. }) => CallOutcome::Timeout,
        Err(_) => CallOutcome::Other,
    }
}

/// The text of an answer that is searched for canaries: every content block, the structured
/// content, or a JSON-RPC error's message.
pub(crate) fn answer_text(result: &Result<ToolResult, McpError>) -> String {
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

pub(super) fn detail(result: &Result<ToolResult, McpError>) -> Option<String> {
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
    pub outcome: CallOutcome,
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
    /// The arguments that carried the canary, as shapes (`entities[].name`); empty when the
    /// tool has no free string.
    pub canary_fields: Vec<String>,
    /// The strings sent as the dataset wrote them, and why.
    pub kept_fields: Vec<KeptField>,
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
    /// Who wrote them: session, call, tool and argument (the first
    /// [`super::leakage::SOURCES_LISTED`]).
    pub sources: Vec<LeakSource>,
}

/// Leaks listed in full in the JSON report; all are counted.
const LEAKS_LISTED: usize = 20;
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
    /// Whether leakage was tested at all, and the count per pair of sessions.
    pub leakage: Leakage,
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

fn tally(
    tool: &str,
    calls: &[&CallObservation],
    canaries: Option<&ToolCanaries>,
    conf: f64,
) -> ToolStress {
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
        canary_fields: canaries.map(|c| c.canaried.clone()).unwrap_or_default(),
        kept_fields: canaries.map(|c| c.kept.clone()).unwrap_or_default(),
        leaked_answers: 0,
        first_error: None,
    };
    let mut latency = LatencyAgg::new();
    for c in calls {
        match c.outcome {
            CallOutcome::Ok => t.ok += 1,
            CallOutcome::ToolError => t.tool_errors += 1,
            CallOutcome::RpcError { .. } => t.rpc_errors += 1,
            CallOutcome::RateLimited { retry_after: true } => t.rate_limited_with_retry_after += 1,
            CallOutcome::RateLimited { retry_after: false } => {
                t.rate_limited_without_retry_after += 1
            }
            CallOutcome::ServerError { .. } => t.server_errors += 1,
            CallOutcome::Dropped => t.dropped += 1,
            CallOutcome::Timeout => t.timeouts += 1,
            CallOutcome::Other => t.other += 1,
        }
        if c.outcome.answered() {
            latency.record(c.latency_ms);
        }
        if !c.leaked.is_empty() {
            t.leaked_answers += 1;
        }
        if t.first_error.is_none() && c.outcome != CallOutcome::Ok {
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
fn judge_gate(
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
    /// Random per run: the first part of its canaries.
    pub run_id: u32,
    /// Tools in the order the dataset first names them, with where their canary goes.
    pub tools: Vec<ToolCanaries>,
    /// The calls the sessions make in turn (see [`super::leakage::call_in_turn`]).
    pub calls: Vec<CallPlan>,
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
    /// Whether a run that did not test for leakage fails.
    pub require_leakage_test: bool,
}

/// The report of a run: per tool, in total, the leaks and the gate.
pub fn summarise(run: &StressRun, settings: &StressSettings) -> StressReport {
    let conf = settings.confidence;
    let mut tools = Vec::new();
    for canaries in &run.tools {
        let calls: Vec<&CallObservation> = run
            .observations
            .iter()
            .filter(|o| o.tool == canaries.tool)
            .collect();
        tools.push(tally(&canaries.tool, &calls, Some(canaries), conf));
    }
    let all: Vec<&CallObservation> = run.observations.iter().collect();
    let total = tally("(all tools)", &all, None, conf);
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
            sources: sources_of(o, run),
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
        leakage: judge_leakage(run, settings.require_leakage_test),
        total,
        session_log: run.session_log.clone(),
        gate,
        interrupted: run.interrupted,
    }
}
