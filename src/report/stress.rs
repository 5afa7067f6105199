//! The terminal report of `toolscore stress`.

use std::fmt::Write as _;

use super::wording::format_percentile;
use crate::mcp::stress::{
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
