//! `toolscore stress`: parallel sessions call a live MCP server's tools directly (no model),
//! each with arguments of its own, for a fixed time; per tool, how many calls failed and how,
//! how long the answered ones took, and whether any session was shown another session's data.
//!
//! - Each session makes the dataset's expected calls in turn, closed loop (the next call as
//!   soon as the last answer came back) or at `rate` calls per second. Over stdio a session is
//!   a server process of its own: that is what a stdio server is, one client per process.
//! - Every call carries a canary, `tscanary-<run>-<session>-<call>-<slot>`, appended to each
//!   string of its arguments, at any depth of objects and arrays, that the tool's input schema
//!   leaves free (no `enum`, `const`, `pattern`, `format` or short `maxLength`) and no
//!   `--no-canary` path covers, so no two calls send the same arguments; the slot names the
//!   string. A result, or an error message, that contains a canary of another session (or of
//!   another run) is leakage: a cache, a global or a connection pool handed one client's data
//!   to another. A run in which no call carried a canary (and got a result) did not test for
//!   leakage, and says so ([`leakage`]).
//! - Outcomes: a result, a tool-execution error (`isError`), a JSON-RPC error, HTTP 429 with
//!   and without `Retry-After`, HTTP 5xx, a dropped connection, a timeout. Every outcome but a
//!   result counts as an error; latency percentiles are of the calls the server answered
//!   (result, `isError` or JSON-RPC error), with their order-statistic intervals. A 429's
//!   `Retry-After` is recorded, not obeyed: the offered load is what is being measured.
//!
//! The judging and aggregation are pure and unit-tested; [`stress`] only makes the calls.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::watch;

use crate::DatasetCall;
use crate::client::{McpError, McpSession, ServerSpec};

mod canary;
mod leakage;
mod tally;

#[cfg(test)]
use canary::find_canaries;
pub use canary::{
    ArgPath, ArgSelector, Canary, KeptReason, MAX_ARG_DEPTH, MAX_ARG_VALUES, MIN_FREE_MAX_LENGTH,
    Step,
};
use canary::{foreign_canaries, place_canaries, plant_canary};
use leakage::call_in_turn;
pub use leakage::{CallPlan, KeptField, LeakPair, LeakSource, Leakage, ToolCanaries, Untested};
pub use tally::{
    CallObservation, CallOutcome, LEAKS_SHOWN, Leak, PeakLoad, SessionLog, StressReport, StressRun,
    StressSettings, ToolStress, summarise,
};
use tally::{answer_text, classify, detail};

/// How the sessions run.
#[derive(Debug, Clone)]
pub struct StressPlan {
    pub sessions: u32,
    pub duration: Duration,
    /// Calls per second per session; closed loop when `None`.
    pub rate_per_session: Option<f64>,
    /// For connecting and for each call.
    pub timeout: Duration,
    /// (tool, argument path) left as the dataset wrote them: a path or an id the server looks
    /// up.
    pub no_canary: Vec<(String, ArgSelector)>,
}

/// Reads environment variables (the bearer token), injected for tests.
pub type EnvReader = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// A call the sessions make in turn: its plan (tool, canaried strings) and the dataset's
/// arguments.
#[derive(Debug, Clone)]
struct PreparedCall {
    plan: CallPlan,
    args: Value,
}

/// Lists the server's tools once, then runs `plan.sessions` sessions making `calls` in turn
/// until the duration ends or `stop` turns true. Fails only when the server cannot be listed,
/// or does not list a tool the calls need.
pub async fn stress(
    spec: &ServerSpec,
    plan: &StressPlan,
    env: EnvReader,
    calls: &[DatasetCall],
    stop: watch::Receiver<bool>,
) -> Result<StressRun, McpError> {
    let source = spec.label();
    let first = McpSession::connect(spec, plan.timeout, env.as_ref()).await?;
    let server = first.server().clone();
    let listed = first.list_tool_definitions().await;
    first.shutdown().await;
    let (prepared, tools) = prepare_calls(&listed?, calls, plan, &source)?;
    let mut run = StressRun {
        source,
        transport: transport_name(spec),
        server,
        run_id: rand::random(),
        tools,
        calls: prepared.iter().map(|p| p.plan.clone()).collect(),
        observations: Vec::new(),
        session_log: SessionLog::default(),
        elapsed: Duration::ZERO,
        interrupted: true,
    };
    let (sessions, mut log) = connect_sessions(spec, plan, &env).await;
    if *stop.borrow() {
        for (_, s) in sessions {
            s.shutdown().await;
        }
        run.session_log = log;
        return Ok(run);
    }

    let started = Instant::now();
    let deadline = started + plan.duration;
    let prepared = Arc::new(prepared);
    let mut running = tokio::task::JoinSet::new();
    for (n, session) in sessions {
        let worker = SessionWorker {
            spec: spec.clone(),
            env: Arc::clone(&env),
            timeout: plan.timeout,
            calls: Arc::clone(&prepared),
            run_id: run.run_id,
            session: n,
            rate: plan.rate_per_session,
            deadline,
            stop: stop.clone(),
        };
        running.spawn(worker.run(session));
    }
    while let Some(joined) = running.join_next().await {
        match joined {
            Ok(done) => {
                run.observations.extend(done.observations);
                log.reconnects += done.reconnects;
                log.reconnect_failures.extend(done.reconnect_failure);
            }
            Err(e) => log
                .reconnect_failures
                .push(format!("a session task failed: {e}")),
        }
    }
    run.elapsed = started.elapsed();
    run.interrupted = *stop.borrow();
    run.session_log = log;
    Ok(run)
}

/// Each dataset call with where its canary goes, and per tool (in the order the calls first
/// name them) the strings that carry it and those kept. Fails when the server does not list
/// a tool a call needs.
fn prepare_calls(
    definitions: &[Value],
    calls: &[DatasetCall],
    plan: &StressPlan,
    server: &str,
) -> Result<(Vec<PreparedCall>, Vec<ToolCanaries>), McpError> {
    let mut prepared = Vec::new();
    let mut tools: Vec<ToolCanaries> = Vec::new();
    for call in calls {
        let Some(def) = definitions
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(call.tool.as_str()))
        else {
            return Err(McpError::Config {
                server: server.to_owned(),
                message: format!(
                    "the server does not list the tool `{}` that case {} expects",
                    call.tool, call.case
                ),
            });
        };
        let excluded: Vec<ArgSelector> = plan
            .no_canary
            .iter()
            .filter(|(tool, _)| tool == &call.tool)
            .map(|(_, path)| path.clone())
            .collect();
        let schema = def.get("inputSchema").unwrap_or(&Value::Null);
        let placement = place_canaries(&call.args, schema, &excluded);
        let index = match tools.iter().position(|t| t.tool == call.tool) {
            Some(i) => i,
            None => {
                tools.push(ToolCanaries {
                    tool: call.tool.clone(),
                    ..ToolCanaries::default()
                });
                tools.len() - 1
            }
        };
        tools[index].add(&placement);
        prepared.push(PreparedCall {
            plan: CallPlan {
                tool: call.tool.clone(),
                canaried: placement.canaried,
            },
            args: call.args.clone(),
        });
    }
    Ok((prepared, tools))
}

/// Opens every session before the clock starts, so all of them load the server for the
/// whole duration.
async fn connect_sessions(
    spec: &ServerSpec,
    plan: &StressPlan,
    env: &EnvReader,
) -> (Vec<(u32, McpSession)>, SessionLog) {
    let mut connecting = tokio::task::JoinSet::new();
    for session in 1..=plan.sessions {
        let spec = spec.clone();
        let env = Arc::clone(env);
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
    (sessions, log)
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
            let prepared = &self.calls[call_in_turn(self.session, call, self.calls.len())];
            let canary = Canary {
                run: self.run_id,
                session: self.session,
                call,
                slot: None,
            };
            let args = plant_canary(&prepared.args, &prepared.plan.canaried, canary);
            let began = Instant::now();
            let result = tokio::select! {
                r = current.call_tool(&prepared.plan.tool, &args) => r,
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
                tool: prepared.plan.tool.clone(),
                session: self.session,
                call,
                latency_ms,
                outcome,
                planted: !prepared.plan.canaried.is_empty(),
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

    use crate::client::ToolResult;

    use serde_json::json;

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
        assert_eq!(classify(&ok(false)), CallOutcome::Ok);
        assert_eq!(classify(&ok(true)), CallOutcome::ToolError);
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
            CallOutcome::RateLimited { retry_after: true }
        );
        assert_eq!(
            classify(&http(429, None)),
            CallOutcome::RateLimited { retry_after: false }
        );
        assert_eq!(
            classify(&http(503, None)),
            CallOutcome::ServerError { status: 503 }
        );
        assert_eq!(classify(&http(400, None)), CallOutcome::Other);
        let rpc = Err(McpError::Rpc {
            server: server(),
            what: what(),
            code: -32602,
            message: "leaked tscanary-00000001-9-9".into(),
        });
        assert_eq!(classify(&rpc), CallOutcome::RpcError { code: -32602 });
        // An error message is searched for canaries too.
        assert_eq!(find_canaries(&answer_text(&rpc)).len(), 1);
        let dropped = Err(McpError::Transport {
            server: server(),
            what: what(),
            message: "connection closed".into(),
            stderr: None,
        });
        assert_eq!(classify(&dropped), CallOutcome::Dropped);
        assert!(CallOutcome::Dropped.breaks_session() && !CallOutcome::Dropped.answered());
        let timeout = Err(McpError::Timeout {
            server: server(),
            what: what(),
            after: Duration::from_secs(1),
            stderr: None,
        });
        assert_eq!(classify(&timeout), CallOutcome::Timeout);
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
