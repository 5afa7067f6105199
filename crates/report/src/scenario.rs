//! The scenarios block of the reports: per arm, per scenario, every rate with its interval.

use toolscore_stats::{ClusteredEstimate, Interval};
use toolscore_summary::{MeanStat, ScenarioArmSummary, ScenarioSummary};

/// The sample-size warning of a scenario, as every report words it.
pub(crate) fn too_few_trials(sc: &ScenarioSummary, precision: f64) -> Option<String> {
    let need = sc.trials_needed?;
    let iv = sc.success.interval?;
    Some(format!(
        "too few trials: ±{:.3} is wider than ±{precision:.3}; about {need} trials would do",
        iv.half_width()
    ))
}

/// The scenarios block of the terminal report: per arm, per scenario, every rate with its
/// interval and count.
pub(crate) fn write_terminal(
    s: &super::Summary,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    for arm in &s.scenarios {
        writeln!(w)?;
        writeln!(
            w,
            "=== scenarios · arm {} · model {} · variant {} ===",
            arm.arm.provider, arm.arm.model, arm.arm.variant
        )?;
        for sc in &arm.scenarios {
            write_scenario(sc, s.precision, w)?;
        }
        for d in s.scenario_drift.iter().filter(|d| d.arm == arm.arm) {
            writeln!(w)?;
            writeln!(
                w,
                "DRIFT against the baseline: scenario {} {}: {:?} in {}/{} trials, was {:?} in {}/{}",
                d.scenario,
                d.what,
                d.current.0,
                d.current.1,
                d.current.2,
                d.baseline.0,
                d.baseline.1,
                d.baseline.2
            )?;
        }
        if let Some(c) = &arm.success {
            write_scenario_totals(arm, c, w)?;
        }
    }
    Ok(())
}

/// One scenario's rates, means and percentiles, each with its interval and count.
// Long: one line per figure, in the order the report shows them.
fn write_scenario(
    sc: &ScenarioSummary,
    precision: f64,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    use super::wording::{format_percentile, format_rate};
    let errors: u64 = sc.errors.values().sum();
    writeln!(w)?;
    writeln!(
        w,
        "scenario {} (expects {}) · {} trials judged{}",
        sc.name,
        sc.expects,
        sc.trials,
        if errors > 0 {
            format!(
                " · {errors} infrastructure errors ({}), not judged",
                sc.errors
                    .iter()
                    .map(|(c, n)| format!("{c} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else {
            String::new()
        }
    )?;
    writeln!(w, "  success          {}", format_rate(&sc.success))?;
    if let Some(text) = too_few_trials(sc, precision) {
        writeln!(w, "  ! {text}")?;
    }
    writeln!(
        w,
        "  retry            {} of calls (after a success {}, after an error {})",
        format_rate(&sc.retry),
        sc.retry_after_success.x,
        sc.retry_after_error.x
    )?;
    if sc.recovery.n > 0 {
        writeln!(
            w,
            "  recovery         {} of error results",
            format_rate(&sc.recovery)
        )?;
    } else {
        writeln!(
            w,
            "  recovery         n/a (no error result was followed by the same tool)"
        )?;
    }
    let mean = |m: &MeanStat| match m.interval {
        Some(iv) => format!("{:.2} [{:.2}, {:.2}]", m.mean, iv.lo, iv.hi),
        None => format!("{:.2} (no spread over {})", m.mean, m.n),
    };
    if let Some(e) = &sc.step_efficiency {
        writeln!(w, "  step efficiency  {} calls per expected call", mean(e))?;
    }
    writeln!(
        w,
        "  per trial        {} calls, {} steps; {} stopped at max_steps; {} unscripted calls",
        mean(&sc.calls_per_trial),
        mean(&sc.steps_per_trial),
        sc.step_limit,
        sc.unscripted_calls
    )?;
    if let (Some(t), Some(st)) = (&sc.tokens_per_trial, &sc.tokens_per_step) {
        writeln!(
            w,
            "  tokens           {} per trial, {:.1} per step",
            mean(t),
            st.mean
        )?;
    }
    writeln!(
        w,
        "  latency ms       trial p50 {} p95 {} · step p50 {} p95 {}",
        format_percentile(&sc.latency_per_trial_ms.p50),
        format_percentile(&sc.latency_per_trial_ms.p95),
        format_percentile(&sc.latency_per_step_ms.p50),
        format_percentile(&sc.latency_per_step_ms.p95)
    )?;
    if !sc.pass_k.is_empty() {
        let show = |v: f64, iv: Option<Interval>| match iv {
            Some(iv) => format!("{v:.3} [{:.3}, {:.3}]", iv.lo, iv.hi),
            None => format!("{v:.3}"),
        };
        for p in &sc.pass_k {
            writeln!(
                w,
                "  k={:<2}             pass@k {} · pass^k {}",
                p.k,
                show(p.pass_at_k, p.pass_at_k_interval),
                show(p.pass_hat_k, p.pass_hat_k_interval)
            )?;
        }
    }
    if !sc.failures.is_empty() {
        writeln!(
            w,
            "  failed on        {}",
            sc.failures
                .iter()
                .map(|(r, n)| format!("{r} ({n})"))
                .collect::<Vec<_>>()
                .join(", ")
        )?;
    }
    Ok(())
}

/// Every scenario of an arm together: the mean success rate and pass@k, clustered by scenario.
fn write_scenario_totals(
    arm: &ScenarioArmSummary,
    c: &ClusteredEstimate,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    writeln!(w)?;
    writeln!(
        w,
        "all scenarios    success {:.3} [{:.3}, {:.3}] (mean of {} scenario rates, clustered by scenario)",
        c.mean, c.interval.lo, c.interval.hi, c.cases
    )?;
    for p in &arm.pass_k {
        let iv = |i: Option<Interval>| {
            i.map_or(" (equal in every scenario: no interval)".to_owned(), |i| {
                format!(" [{:.3}, {:.3}]", i.lo, i.hi)
            })
        };
        writeln!(
            w,
            "  k={:<2}             pass@k {:.3}{} · pass^k {:.3}{}",
            p.k,
            p.pass_at_k,
            iv(p.pass_at_k_interval),
            p.pass_hat_k,
            iv(p.pass_hat_k_interval)
        )?;
    }
    Ok(())
}
