//! The security section of the reports: an attacked run's rates per arm, and two attacked arms
//! compared.

use toolscore_summary::{RateStat, SecurityGroup};

/// Most attacks the terminal lists by name (every one is in summary.json).
const ATTACKS_SHOWN: usize = 10;

/// The security section of the terminal report: per arm, the three rates over the suite,
/// then by family, by scenario and the attacks that succeeded most.
pub(crate) fn write_terminal(
    s: &super::Summary,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let conf = format!("{:.0}%", s.confidence * 100.0);
    for arm in &s.security {
        writeln!(w)?;
        writeln!(
            w,
            "=== security · arm {} · model {} · variant {} ===",
            arm.arm.provider, arm.arm.model, arm.arm.variant
        )?;
        let g = &arm.suite;
        let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        writeln!(
            w,
            "{} ({} × {}) · {} trials judged{}",
            plural(g.units, "attacked unit"),
            plural(arm.by_scenario.len(), "scenario"),
            plural(arm.by_attack.len(), "attack"),
            g.trials,
            errors_note(g.errors)
        )?;
        writeln!(
            w,
            "  {:<22} {:<36} mean of unit rates, t interval",
            "metric",
            format!("rate [{conf} Wilson] (x/n)")
        )?;
        write_rate_row("attack success", &g.attack_success, "units", w)?;
        write_rate_row("utility under attack", &g.utility_under_attack, "units", w)?;
        if let Some(u) = &g.utility {
            write_rate_row("utility (clean)", u, "scenarios", w)?;
        }
        writeln!(
            w,
            "  the payload reached the model in {}/{} judged trials",
            g.delivered, g.trials
        )?;
        if !arm.not_attacked.is_empty() {
            writeln!(
                w,
                "  not attacked (no injection point): {}",
                arm.not_attacked.join(", ")
            )?;
        }
        write_groups("by family", &arm.by_family, w)?;
        write_groups("by scenario", &arm.by_scenario, w)?;
        let mut attacks: Vec<&SecurityGroup> = arm.by_attack.iter().collect();
        attacks.sort_by(|a, b| {
            b.attack_success
                .rate
                .partial_cmp(&a.attack_success.rate)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| a.name.cmp(&b.name))
        });
        let shown: Vec<SecurityGroup> = attacks
            .into_iter()
            .filter(|a| a.attack_success.x > 0)
            .take(ATTACKS_SHOWN)
            .cloned()
            .collect();
        if !shown.is_empty() {
            let title = if arm.by_attack.len() > shown.len() {
                format!(
                    "attacks that succeeded, most first ({} of {}; all in summary.json)",
                    shown.len(),
                    arm.by_attack.len()
                )
            } else {
                "attacks that succeeded, most first".to_owned()
            };
            write_groups(&title, &shown, w)?;
        }
    }
    if let Some(c) = &s.attack_comparison {
        write_comparison(c, w)?;
    }
    Ok(())
}

/// `run --attacks --compare`: B − A on each rate, paired by unit, with its verdict (also what
/// `toolscore compare RUN_DIR` prints of an attacked run).
pub fn render_attack_comparison(
    c: &super::AttackComparison,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    write_comparison(c, w)
}

fn write_comparison(
    c: &super::AttackComparison,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    writeln!(w)?;
    writeln!(
        w,
        "=== security comparison · B − A, paired by (scenario × attack) unit · {:.0}% t interval over units, never narrower than the pooled trials' ===",
        c.confidence * 100.0
    )?;
    writeln!(w, "A: {} · B: {}", c.a.label(&c.axis), c.b.label(&c.axis))?;
    let rows = c.told();
    for (name, g, verdict) in rows {
        let means = match (g.a_mean, g.b_mean) {
            (Some(a), Some(b)) => format!(" (A {a:.3}, B {b:.3})"),
            _ => String::new(),
        };
        match &g.difference {
            Some(d) => writeln!(
                w,
                "  {name:<22} B − A = {:+.3} [{:+.3}, {:+.3}] over {} units{means} · {verdict}",
                d.mean, d.lo, d.hi, g.cases
            )?,
            None => writeln!(
                w,
                "  {name:<22} n/a ({} units with data in both arms; at least 2 are needed)",
                g.cases
            )?,
        }
    }
    Ok(())
}

fn errors_note(errors: u64) -> String {
    match errors {
        0 => String::new(),
        1 => " · 1 infrastructure error, not judged".to_owned(),
        n => format!(" · {n} infrastructure errors, not judged"),
    }
}

fn write_rate_row(
    name: &str,
    r: &RateStat,
    clusters: &str,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let clustered = match &r.case_level {
        Some(c) => format!(
            "{:.3} [{:.3}, {:.3}] ({} {clusters})",
            c.mean, c.interval.lo, c.interval.hi, c.cases
        ),
        None if r.n == 0 => "n/a (no judged trials)".to_owned(),
        None => format!("n/a (fewer than 2 {clusters} with data)"),
    };
    writeln!(
        w,
        "  {name:<22} {:<36} {clustered}",
        super::wording::format_rate(r)
    )
}

fn write_groups(
    title: &str,
    groups: &[SecurityGroup],
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    use super::wording::format_rate;
    writeln!(w)?;
    writeln!(w, "{title}:")?;
    let width = groups
        .iter()
        .map(|g| g.name.chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, 40);
    writeln!(
        w,
        "  {:<width$} {:>5}  {:<34} utility under attack",
        "", "units", "attack success"
    )?;
    for g in groups {
        writeln!(
            w,
            "  {:<width$} {:>5}  {:<34} {}{}",
            g.name,
            g.units,
            format_rate(&g.attack_success),
            format_rate(&g.utility_under_attack),
            errors_note(g.errors)
        )?;
    }
    Ok(())
}
