//! The gate's block of the terminal report: per gate its verdict, the bound it rests on and
//! the threshold, a sequential gate's savings, and the cases and tools that did not pass.

use std::io::{self, Write};

use super::{GateLevel, GateReport, GateResult, SequentialInfo, Verdict, case_verdict_notes};

/// The verdict block: per gate, its verdict, the bound it rests on and the threshold.
pub(super) fn write_gate(g: &GateReport, several: bool, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w)?;
    let design = if g.gates.iter().any(|r| r.sequential.is_some()) {
        "sequential"
    } else {
        "fixed n"
    };
    writeln!(
        w,
        "gate ({:.0}% one-sided, {design}): {}",
        g.confidence * 100.0,
        g.label()
    )?;
    for r in &g.gates {
        write_gate_line(r, several, w)?;
        if let Some(q) = &r.sequential {
            write_sequential(q, w)?;
        }
        write_not_passed(r, w)?;
        if let Some(hint) = &r.hint {
            writeln!(w, "      {hint}")?;
        }
    }
    Ok(())
}

/// Rates to three decimals; latencies in ms to one, with a missing end unbounded.
fn gate_bound(v: Option<f64>, latency: bool) -> String {
    match (v, latency) {
        (Some(v), false) => format!("{v:.3}"),
        (Some(v), true) => format!("{v:.1}"),
        (None, false) => "n/a".to_owned(),
        (None, true) => "unbounded".to_owned(),
    }
}

/// One gate's verdict, the bound it rests on and what it is measured over.
// Long: one sentence per gate level (tool, latency, suite, baseline, case), each with its bound.
fn write_gate_line(r: &GateResult, several: bool, w: &mut dyn Write) -> io::Result<()> {
    let arm = if several {
        format!(" [arm {}]", r.arm.provider)
    } else {
        String::new()
    };
    let latency = r.metric.quantile().is_some();
    let ceiling = r.metric.ceiling();
    let gate = r.name();
    let bound = |v| gate_bound(v, latency);
    // An attacked run's cases are its (scenario × attack) units.
    let cases = if r.metric.attack().is_some() {
        "units"
    } else {
        "cases"
    };
    let clause = match r.verdict {
        Verdict::Pass if ceiling => {
            format!("upper bound {} <= {}", bound(r.upper), r.threshold)
        }
        // BELOW is a case gate's; the arm and suite clauses never see one.
        Verdict::Fail | Verdict::Below if ceiling => {
            format!("lower bound {} > {}", bound(r.lower), r.threshold)
        }
        Verdict::Pass => format!("lower bound {} >= {}", bound(r.lower), r.threshold),
        Verdict::Fail | Verdict::Below => {
            format!("upper bound {} < {}", bound(r.upper), r.threshold)
        }
        Verdict::Inconclusive if ceiling => format!(
            "[{}, {}] straddles {}",
            bound(r.lower),
            bound(r.upper),
            r.threshold
        ),
        Verdict::Inconclusive => format!("{} straddles {}", bound(r.lower), r.threshold),
    };
    let pct = r.metric.label().trim_end_matches("_ms");
    match (r.level, latency) {
        (GateLevel::Tool, _) => {
            let count = |v: Verdict| r.tools.iter().filter(|t| t.verdict == v).count();
            writeln!(
                w,
                "  {} {gate}{arm}, every tool: {} passed, {} failed, {} inconclusive of {} tools",
                r.verdict.label(),
                count(Verdict::Pass),
                count(Verdict::Fail),
                count(Verdict::Inconclusive),
                r.tools.len()
            )?;
        }
        (_, true) => writeln!(
            w,
            "  {} {gate}{arm}, arm: {clause} — {pct} {} ms of {} answered trials, bounds [{}, {}]",
            r.verdict.label(),
            bound(r.estimate),
            r.trials.unwrap_or(0),
            bound(r.lower),
            bound(r.upper)
        )?,
        (GateLevel::Suite, false) => writeln!(
            w,
            "  {} {gate}{arm}, suite: {clause} — mean {} of {} {cases}, bounds [{}, {}]",
            r.verdict.label(),
            bound(r.estimate),
            r.cases,
            bound(r.lower),
            bound(r.upper)
        )?,
        (GateLevel::Baseline, _) => writeln!(
            w,
            "  {} {} vs baseline{arm}: this run − baseline = {} [{}, {}] over {} cases; {} -{}",
            r.verdict.label(),
            r.metric.label().replace(' ', "_"),
            bound(r.estimate),
            bound(r.lower),
            bound(r.upper),
            r.cases,
            match r.verdict {
                Verdict::Pass => "lower bound above",
                Verdict::Fail | Verdict::Below => "upper bound below",
                Verdict::Inconclusive => "bounds straddle",
            },
            -r.threshold
        )?,
        (GateLevel::Case, false) => writeln!(
            w,
            "  {} {gate}{arm}, every {}: {}",
            r.verdict_label(),
            cases.trim_end_matches('s'),
            r.outcome()
        )?,
    }
    Ok(())
}

/// How a sequential gate decided and what it saved over the fixed-n design.
fn write_sequential(q: &SequentialInfo, w: &mut dyn Write) -> io::Result<()> {
    writeln!(
        w,
        "      sequential ({}{}",
        q.design(),
        q.pass_rule().map_or(String::new(), |r| format!("; {r}"))
    )?;
    writeln!(w, "      {}", q.spent())?;
    Ok(())
}

/// The tools and cases that did not pass, ten of each.
fn write_not_passed(r: &GateResult, w: &mut dyn Write) -> io::Result<()> {
    let latency = r.metric.quantile().is_some();
    let bound = |v| gate_bound(v, latency);
    let pct = r.metric.label().trim_end_matches("_ms");
    let not_passed = r.tools_not_passed();
    for t in not_passed.iter().take(10) {
        let figure = if latency {
            format!("{pct} {} ms of {} answered trials", bound(t.estimate), t.n)
        } else {
            format!(
                "mean {} of {} case{} ({} trials)",
                bound(t.estimate),
                t.cases,
                if t.cases == 1 { "" } else { "s" },
                t.n
            )
        };
        writeln!(
            w,
            "      {:<12} {:<34} {figure}, bounds [{}, {}]",
            t.verdict.label(),
            t.tool,
            bound(t.lower),
            bound(t.upper)
        )?;
        if let Some(hint) = &t.hint {
            writeln!(w, "          {hint}")?;
        }
    }
    if not_passed.len() > 10 {
        writeln!(w, "      … {} more in summary.json", not_passed.len() - 10)?;
    }
    // A sequential gate's cases carry the anytime-valid bounds its test decided by.
    let bounds = if r
        .sequential
        .as_ref()
        .is_some_and(|q| q.anytime_valid_bounds)
    {
        "anytime-valid bounds"
    } else {
        "bounds"
    };
    for c in r.not_passed.iter().take(10) {
        writeln!(
            w,
            "      {:<12} {:<36} {}/{} {bounds} {}{}",
            c.label(),
            c.case_id,
            c.x,
            c.n,
            c.bounds_text(),
            case_verdict_notes(c, r.threshold)
                .iter()
                .map(|n| format!(" · {n}"))
                .collect::<String>()
        )?;
    }
    if r.not_passed.len() > 10 {
        writeln!(
            w,
            "      … {} more in summary.json",
            r.not_passed.len() - 10
        )?;
    }
    Ok(())
}
