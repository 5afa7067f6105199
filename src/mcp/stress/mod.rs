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

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::watch;

use crate::mcp::DatasetCall;
use crate::mcp::client::{McpError, McpSession, ServerSpec};

mod canary;
mod tally;

pub use canary::*;
use tally::detail;
pub use tally::*;

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
    calls: &[DatasetCall],
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
    use crate::catalog::source::ServerIdentity;
    use crate::mcp::client::ToolResult;
    use crate::report::render_stress as render;
    use crate::stats::{wilson_interval, wilson_upper_bound};
    use serde_json::json;

    fn obs(tool: &str, session: u32, outcome: CallOutcome, latency_ms: f64) -> CallObservation {
        CallObservation {
            tool: tool.into(),
            session,
            call: 0,
            latency_ms,
            outcome,
            planted: true,
            leaked: Vec::new(),
            detail: (outcome != CallOutcome::Ok).then(|| format!("{outcome:?}")),
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
            stderr: String::new(),
        });
        assert_eq!(classify(&dropped), CallOutcome::Dropped);
        assert!(CallOutcome::Dropped.breaks_session() && !CallOutcome::Dropped.answered());
        let timeout = Err(McpError::Timeout {
            server: server(),
            what: what(),
            after: Duration::from_secs(1),
            stderr: String::new(),
        });
        assert_eq!(classify(&timeout), CallOutcome::Timeout);
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
            obs("echo", 1, CallOutcome::Ok, 10.0),
            obs("echo", 1, CallOutcome::Ok, 20.0),
            obs("echo", 2, CallOutcome::ToolError, 30.0),
            obs(
                "echo",
                2,
                CallOutcome::RateLimited { retry_after: true },
                1.0,
            ),
            obs(
                "echo",
                2,
                CallOutcome::RateLimited { retry_after: false },
                1.0,
            ),
            obs("sum", 1, CallOutcome::ServerError { status: 502 }, 1.0),
            obs("sum", 1, CallOutcome::Dropped, 1.0),
            obs("sum", 2, CallOutcome::Timeout, 60000.0),
            obs("sum", 2, CallOutcome::RpcError { code: -32603 }, 2.0),
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
        let clean: Vec<_> = (0..400)
            .map(|_| obs("echo", 1, CallOutcome::Ok, 5.0))
            .collect();
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
