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

use crate::mcp::DatasetCall;
use crate::mcp::client::{McpError, McpSession, ServerSpec};

mod canary;
mod leakage;
mod tally;

pub use canary::*;
pub use leakage::*;
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
    use crate::catalog::source::ServerIdentity;
    use crate::mcp::client::ToolResult;

    fn render(r: &StressReport) -> String {
        let mut out = Vec::new();
        crate::report::render_stress(r, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }
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

    fn run_of(observations: Vec<CallObservation>, failed: usize) -> StressRun {
        StressRun {
            source: "src".into(),
            transport: "stdio",
            server: ServerIdentity {
                name: "srv".into(),
                version: "1".into(),
                protocol_version: "2025-06-18".into(),
            },
            run_id: 1,
            tools: vec![
                ToolCanaries {
                    tool: "echo".into(),
                    canaried: vec!["message".into()],
                    kept: vec![],
                },
                ToolCanaries {
                    tool: "sum".into(),
                    ..ToolCanaries::default()
                },
            ],
            calls: vec![
                CallPlan {
                    tool: "echo".into(),
                    canaried: vec![ArgPath(vec![Step::Key("message".into())])],
                },
                CallPlan {
                    tool: "sum".into(),
                    canaried: vec![],
                },
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
            require_leakage_test: false,
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
        // Session 2's first call is echo's (session + call, round the two calls), its one
        // canaried string `message`, slot 0.
        calls[1].leaked = vec![Canary {
            run: 1,
            session: 2,
            call: 0,
            slot: Some(0),
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
        let leak = &report.leaks[0];
        assert_eq!(
            (leak.tool.as_str(), leak.session, leak.call),
            ("echo", 1, 0)
        );
        assert_eq!(leak.found, ["tscanary-00000001-2-0-0"]);
        let writer = leak.sources[0].writer.as_ref().unwrap();
        assert_eq!(
            (writer.session, writer.tool.as_str(), writer.path.as_deref()),
            (2, "echo", Some("message"))
        );
        assert!(report.gate.is_none());
        let text = render(&report);
        assert!(
            text.contains("echo: 5 calls, canary in `message`\n  error rate  0.6000 ["),
            "{text}"
        );
        assert!(
            text.contains(
                "LEAKAGE: 1 answers carried another session's canary (9 answers searched, 9 \
                 calls carried a canary)\n  from session 2 to session 1: 1 answers\n  session 1 \
                 call 0 (echo) got tscanary-00000001-2-0-0 from session 2 call 0 through \
                 echo.message\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_run_in_which_no_call_carried_a_canary_is_not_tested_and_says_why() {
        let verdict = |run: &StressRun| summarise(run, &settings(None)).leakage;
        let mut carried = obs("echo", 1, CallOutcome::Ok, 1.0);
        let mut plain = obs("sum", 1, CallOutcome::Ok, 1.0);
        plain.planted = false;
        let tested = run_of(vec![carried.clone(), plain.clone()], 0);
        assert!(verdict(&tested).tested);
        assert_eq!(verdict(&tested).calls_with_canary, 1);

        assert_eq!(
            verdict(&run_of(vec![], 0)).untested_because,
            Some(Untested::NoCallMade)
        );
        // No tool has a free string; then, one that had was excluded.
        let mut none_free = run_of(vec![plain.clone()], 0);
        none_free.tools[0].canaried.clear();
        none_free.tools[0].kept = vec![KeptField {
            path: "unit".into(),
            reason: KeptReason::Enum,
        }];
        assert_eq!(
            verdict(&none_free).untested_because,
            Some(Untested::NoFreeString)
        );
        let text = render(&summarise(&none_free, &settings(None)));
        assert!(text.contains("  left alone  `unit` (enum)\n"), "{text}");
        assert!(
            text.contains(
                "leakage: not tested: no call carried a canary: no call's arguments hold a \
                 free string (see each tool's strings left alone); 1 answers searched\n"
            ),
            "{text}"
        );
        assert!(!text.contains("leakage: none"), "{text}");
        none_free.tools[0].kept[0].reason = KeptReason::NoCanary;
        let report = summarise(
            &none_free,
            &StressSettings {
                require_leakage_test: true,
                ..settings(None)
            },
        );
        assert_eq!(report.leakage.untested_because, Some(Untested::AllExcluded));
        assert!(
            render(&report).contains(
                "leakage: not tested: no call carried a canary: every free string is excluded \
                 by --no-canary; 1 answers searched (FAIL: --require-leakage-test)\n"
            ),
            "{}",
            render(&report)
        );
        // Calls with free strings exist, but none came round; or none got a result.
        assert_eq!(
            verdict(&run_of(vec![plain], 0)).untested_because,
            Some(Untested::NoneSent)
        );
        carried.outcome = CallOutcome::ServerError { status: 503 };
        assert_eq!(
            verdict(&run_of(vec![carried], 0)).untested_because,
            Some(Untested::NoneAnswered)
        );
    }

    #[test]
    fn leaks_count_per_pair_of_sessions_and_an_earlier_run_is_no_session() {
        let mut calls: Vec<_> = (1..=3)
            .map(|s| obs("echo", s, CallOutcome::Ok, 1.0))
            .collect();
        let ours = |session, call| Canary {
            run: 1,
            session,
            call,
            slot: Some(0),
        };
        let earlier = Canary {
            run: 9,
            session: 2,
            call: 5,
            slot: None,
        };
        calls[0].leaked = vec![ours(2, 1), ours(2, 3), ours(3, 0)];
        calls[1].leaked = vec![earlier];
        calls[2].leaked = vec![ours(2, 7)];
        let mut run = run_of(calls, 0);
        run.session_log.planned = 3;
        let report = summarise(&run, &settings(None));
        let pair = |writer, reader, answers| LeakPair {
            writer_session: writer,
            reader_session: reader,
            answers,
        };
        // One answer with two of session 2's canaries counts once for that pair.
        assert_eq!(
            report.leakage.pairs,
            vec![
                pair(None, 2, 1),
                pair(Some(2), 1, 1),
                pair(Some(2), 3, 1),
                pair(Some(3), 1, 1)
            ]
        );
        // Session 2's call 1 is the second call in turn (sum): no canaried string, no path.
        let writer = report.leaks[0].sources[0].writer.as_ref().unwrap();
        assert_eq!(
            (writer.tool.as_str(), writer.path.as_deref()),
            ("sum", None)
        );
        assert_eq!(report.leaks[1].sources[0].writer, None);
        let text = render(&report);
        assert!(
            text.contains("  from an earlier run to session 2: 1 answers\n"),
            "{text}"
        );
        assert!(
            text.contains("got tscanary-00000009-2-5 from an earlier run\n"),
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
