//! The terminal report of `toolscore stress`.

use std::fmt::Write as _;

use super::wording::format_percentile;
use toolscore_mcp::{
    KeptReason, LEAKS_SHOWN, Leak, LeakSource, Leakage, MAX_ARG_DEPTH, MAX_ARG_VALUES,
    MIN_FREE_MAX_LENGTH, StressReport, ToolStress, Untested,
};

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
    if !t.kept_fields.is_empty() {
        // One reason after all the fields it keeps, reasons in the order first met.
        let mut by_reason: Vec<(KeptReason, Vec<String>)> = Vec::new();
        for k in &t.kept_fields {
            let field = format!("`{}`", k.path);
            match by_reason.iter_mut().find(|(r, _)| *r == k.reason) {
                Some((_, fields)) => fields.push(field),
                None => by_reason.push((k.reason, vec![field])),
            }
        }
        let kept: Vec<String> = by_reason
            .iter()
            .map(|(reason, fields)| format!("{} ({})", fields.join(", "), kept_reason(*reason)))
            .collect();
        let _ = writeln!(out, "  left alone  {}", kept.join(", "));
    }
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
pub fn render_stress(r: &StressReport, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    w.write_all(text(r).as_bytes())
}

fn text(r: &StressReport) -> String {
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
    write_leakage(&mut out, r);
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

/// Why a string was sent without a canary, in the report's words.
fn kept_reason(reason: KeptReason) -> String {
    match reason {
        KeptReason::NoCanary => "--no-canary".to_owned(),
        KeptReason::Enum => "enum".to_owned(),
        KeptReason::Const => "const".to_owned(),
        KeptReason::Format => "format".to_owned(),
        KeptReason::Pattern => "pattern".to_owned(),
        KeptReason::ShortMaxLength => format!("maxLength under {MIN_FREE_MAX_LENGTH}"),
        KeptReason::NotDeclaredString => "not a string in the schema".to_owned(),
        KeptReason::TooDeep => format!("deeper than {MAX_ARG_DEPTH} levels, not looked into"),
        KeptReason::TooMany => format!("past the first {MAX_ARG_VALUES} values, not looked at"),
    }
}

fn untested_reason(l: &Leakage) -> String {
    let why = match l.untested_because {
        None => return String::new(),
        Some(Untested::NoCallMade) => "no call was made",
        Some(Untested::NoFreeString) => {
            "no call's arguments hold a free string (see each tool's strings left alone)"
        }
        Some(Untested::AllExcluded) => "every free string is excluded by --no-canary",
        Some(Untested::NoneSent) => "none of the calls made was one with a free string",
        Some(Untested::NoneAnswered) => {
            return format!(
                "the {} calls that carried a canary all failed (none ended in a result)",
                l.calls_with_canary
            );
        }
    };
    format!("no call carried a canary: {why}")
}

/// The leakage lines: not tested (and why), none, or the leaks with their writers.
fn write_leakage(out: &mut String, r: &StressReport) {
    let l = &r.leakage;
    if !l.tested {
        let required = if l.required {
            " (FAIL: --require-leakage-test)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "leakage: not tested: {}; {} answers searched{required}",
            untested_reason(l),
            l.answers_searched
        );
    }
    if l.leaked_answers == 0 {
        if l.tested {
            let _ = writeln!(
                out,
                "leakage: none; {} answers searched, {} calls carried a canary",
                l.answers_searched, l.calls_with_canary
            );
        }
        return;
    }
    let _ = writeln!(
        out,
        "LEAKAGE: {} answers carried another session's canary ({} answers searched, {} calls carried a canary)",
        l.leaked_answers, l.answers_searched, l.calls_with_canary
    );
    for p in l.pairs.iter().take(LEAKS_SHOWN) {
        let writer = match p.writer_session {
            Some(s) => format!("session {s}"),
            None => "an earlier run".to_owned(),
        };
        let _ = writeln!(
            out,
            "  from {writer} to session {}: {} answers",
            p.reader_session, p.answers
        );
    }
    match l.pairs.len().saturating_sub(LEAKS_SHOWN) {
        0 => {}
        1 => {
            let _ = writeln!(out, "  … 1 more pair");
        }
        n => {
            let _ = writeln!(out, "  … {n} more pairs");
        }
    }
    for leak in r.leaks.iter().take(LEAKS_SHOWN) {
        write_leak(out, leak);
    }
    let shown = r.leaks.len().min(LEAKS_SHOWN) as u64;
    if l.leaked_answers > shown {
        let _ = writeln!(out, "  … {} more", l.leaked_answers - shown);
    }
}

/// One line a leak: its first source (the JSON report lists more).
fn write_leak(out: &mut String, leak: &Leak) {
    let first = leak.sources.first().map(source_words).unwrap_or_default();
    let more = match leak.found.len() {
        0 | 1 => String::new(),
        n => format!(", and {} more", n - 1),
    };
    let _ = writeln!(
        out,
        "  session {} call {} ({}) got {first}{more}",
        leak.session, leak.call, leak.tool
    );
}

fn source_words(source: &LeakSource) -> String {
    match &source.writer {
        Some(w) => {
            let through = match &w.path {
                Some(path) => format!("through {}.{path}", w.tool),
                None => format!("({})", w.tool),
            };
            format!(
                "{} from session {} call {} {through}",
                source.canary, w.session, w.call
            )
        }
        None => format!("{} from an earlier run", source.canary),
    }
}

#[cfg(test)]
mod tests {
    //! What the stress report says about runs `toolscore_mcp::summarise` tallied.
    use std::time::Duration;

    use super::*;

    use toolscore_core::catalog::source::ServerIdentity;
    use toolscore_mcp::{
        ArgPath, CallObservation, CallOutcome, CallPlan, Canary, KeptField, LeakPair, SessionLog,
        Step, StressRun, StressSettings, ToolCanaries, summarise,
    };
    use toolscore_stats::{wilson_interval, wilson_upper_bound};

    fn render(r: &StressReport) -> String {
        let mut out = Vec::new();
        render_stress(r, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }
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
}
