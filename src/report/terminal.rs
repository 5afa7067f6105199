//! Plain-text report for a terminal or a log. Writes to any `Write`, so tests compare strings.

use std::io::{self, Write};

use super::{Metrics, RateStat, Summary};

/// How many of the worst cases the terminal report lists (all are in summary.json).
pub const WORST_CASES_SHOWN: usize = 10;

/// `0.853 [0.838, 0.867] (1877/2200)`, or `n/a (0/0)` when nothing was measured.
pub fn format_rate(r: &RateStat) -> String {
    match (r.rate, r.interval) {
        (Some(p), Some(iv)) => format!("{p:.3} [{:.3}, {:.3}] ({}/{})", iv.lo, iv.hi, r.x, r.n),
        _ => format!("n/a ({}/{})", r.x, r.n),
    }
}

fn format_case_level(r: &RateStat) -> String {
    match &r.case_level {
        Some(c) => format!(
            "{:.3} [{:.3}, {:.3}] ({} cases)",
            c.mean, c.interval.lo, c.interval.hi, c.cases
        ),
        None => "n/a (fewer than 2 cases)".to_owned(),
    }
}

fn metric_rows(m: &Metrics) -> [(&'static str, &RateStat); 4] {
    [
        ("selection", &m.selection),
        ("args exact", &m.args_exact),
        ("schema valid", &m.schema_valid),
        ("pass", &m.pass),
    ]
}

/// Renders the whole summary.
pub fn render_terminal(s: &Summary, w: &mut dyn Write) -> io::Result<()> {
    let r = &s.run;
    let conf = format!("{:.0}%", s.confidence * 100.0);
    writeln!(w, "toolscore {} · run {}", r.toolscore_version, r.run_id)?;
    match &r.replay {
        Some(rp) => {
            writeln!(
                w,
                "REPLAY: no model was called. Responses replayed from {}",
                rp.cassette
            )?;
            writeln!(
                w,
                "        recorded {} from model `{}` at {}",
                rp.recorded_at, rp.model, rp.base_url
            )?;
            if let Some(note) = &rp.note {
                writeln!(w, "        {note}")?;
            }
        }
        None => writeln!(
            w,
            "provider {} ({}) · model {} · {}",
            r.provider, r.provider_kind, r.model, r.base_url
        )?,
    }
    for d in &r.datasets {
        writeln!(
            w,
            "dataset {} · {} cases · catalog {} ({})",
            d.name,
            d.cases,
            d.catalog_source,
            short_fp(&d.catalog_fingerprint)
        )?;
    }
    writeln!(
        w,
        "{} trials per case · {} of {} trials completed{}",
        r.trials_per_case,
        s.completed_trials,
        s.planned_trials,
        if s.interrupted { " (INTERRUPTED)" } else { "" }
    )?;
    writeln!(w)?;
    writeln!(
        w,
        "suite: {} cases, {} trials scored, {} infrastructure errors (not scored)",
        s.suite.cases, s.suite.scored_trials, s.infra.errors
    )?;
    writeln!(
        w,
        "  {:<13} {:<36} case-level mean, t interval",
        "metric",
        format!("rate [{conf} Wilson] (x/n)")
    )?;
    for (name, rate) in metric_rows(&s.suite.metrics) {
        writeln!(
            w,
            "  {:<13} {:<36} {}",
            name,
            format_rate(rate),
            format_case_level(rate)
        )?;
    }
    writeln!(w)?;
    writeln!(w, "by expected tool ({conf} Wilson over trials):")?;
    let width = s
        .tools
        .iter()
        .map(|t| t.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    writeln!(
        w,
        "  {:<width$} {:>5}  {:<34} {:<34} {:<34}",
        "tool", "cases", "selection", "args exact", "schema valid"
    )?;
    for t in &s.tools {
        let m = &t.metrics;
        writeln!(
            w,
            "  {:<width$} {:>5}  {:<34} {:<34} {:<34}",
            t.name,
            t.cases,
            format_rate(&m.selection),
            format_rate(&m.args_exact),
            format_rate(&m.schema_valid)
        )?;
    }
    writeln!(w)?;
    let mut worst: Vec<_> = s
        .cases
        .iter()
        .filter(|c| c.metrics.pass.rate.is_some())
        .collect();
    worst.sort_by(|a, b| {
        a.metrics
            .pass
            .rate
            .partial_cmp(&b.metrics.pass.rate)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.case_id.cmp(&b.case_id))
    });
    writeln!(
        w,
        "weakest cases by pass rate ({} of {} shown; all in summary.json):",
        worst.len().min(WORST_CASES_SHOWN),
        s.cases.len()
    )?;
    for c in worst.iter().take(WORST_CASES_SHOWN) {
        writeln!(
            w,
            "  {:<34} pass {:<34} expected {}",
            c.case_id,
            format_rate(&c.metrics.pass),
            c.expected
        )?;
        let mut top: Vec<_> = c.failures.iter().collect();
        top.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        for (detail, n) in top.into_iter().take(3) {
            writeln!(w, "      {n:>5}× {detail}")?;
        }
    }
    if !s.schema_violations.is_empty() {
        writeln!(w)?;
        writeln!(w, "schema violations in produced arguments:")?;
        let mut v: Vec<_> = s.schema_violations.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        for (k, n) in v.into_iter().take(10) {
            writeln!(w, "  {n:>5}× {k}")?;
        }
    }
    writeln!(w)?;
    let l = &s.latency_ms;
    let p = |x: &Option<super::Percentile>| match x {
        Some(p) => format!(
            "{:.1} [{:.1}, {}]",
            p.value,
            p.lo,
            p.hi.map_or("unbounded".to_owned(), |h| format!("{h:.1}"))
        ),
        None => "n/a".to_owned(),
    };
    writeln!(
        w,
        "latency ms (n={}, nearest rank, {conf} order-statistic interval): p50 {} · p95 {} · p99 {}",
        l.n,
        p(&l.p50),
        p(&l.p95),
        p(&l.p99)
    )?;
    let t = &s.tokens;
    let mean = |m: Option<f64>| m.map_or("n/a".to_owned(), |m| format!("{m:.1}"));
    writeln!(
        w,
        "tokens: input {} (mean {}) · output {} (mean {}) over {} trials reporting usage",
        t.input_total,
        mean(t.input_mean),
        t.output_total,
        mean(t.output_mean),
        t.trials_with_usage
    )?;
    let by_class: Vec<String> = s
        .infra
        .by_class
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    writeln!(
        w,
        "infrastructure: {} errors{} · retried trials {}",
        s.infra.errors,
        if by_class.is_empty() {
            String::new()
        } else {
            format!(" ({})", by_class.join(", "))
        },
        format_rate(&s.infra.retried)
    )?;
    if !s.warnings.is_empty() {
        writeln!(w)?;
        writeln!(w, "warnings:")?;
        for msg in &s.warnings {
            writeln!(w, "  - {msg}")?;
        }
    }
    Ok(())
}

fn short_fp(fp: &str) -> &str {
    fp.get(..19).unwrap_or(fp)
}
