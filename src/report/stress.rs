//! The terminal report of `toolscore stress`.

use std::fmt::Write as _;

use super::wording::format_percentile;
use crate::mcp::stress::{LEAKS_SHOWN, StressReport, ToolStress};

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
