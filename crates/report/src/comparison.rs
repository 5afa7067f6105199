//! How a comparison reads in a terminal or a log (`render_comparison`), and the lines the
//! other formats share with it.

use std::io::{self, Write};

use toolscore_summary::{Comparison, GroupComparison, Substitution};

/// The comparison's overall line, as the terminal and Markdown print it.
pub(crate) fn overall_line(c: &Comparison) -> String {
    let o = c.overall();
    let b = c.b.label(&c.axis);
    match o.reason {
        None => format!("verdict: {}", o.verdict.describe(&b, c.min_effect)),
        Some(reason) => format!("verdict: INCONCLUSIVE: {reason}"),
    }
}

/// How many changed cases and substitutions the terminal lists (all are in the JSON).
const SHOWN: usize = 12;

/// Renders a comparison for a terminal or a log.
// Long: one line per figure, in the order the report shows them.
pub fn render_comparison(c: &Comparison, w: &mut dyn Write) -> io::Result<()> {
    let a = c.a.label(&c.axis);
    let b = c.b.label(&c.axis);
    writeln!(
        w,
        "compare {} · A = {a} · B = {b} · {:.0}% intervals, B − A paired by case",
        c.metric.label(),
        c.confidence * 100.0
    )?;
    if c.axis == "variant" {
        if c.a.arm.provider == c.b.arm.provider {
            writeln!(
                w,
                "        both: provider {} · model {}",
                c.a.arm.provider, c.a.arm.model
            )?;
        } else {
            writeln!(
                w,
                "        A: provider {} · B: provider {} · both model {}",
                c.a.arm.provider, c.b.arm.provider, c.a.arm.model
            )?;
        }
    }
    writeln!(w)?;
    writeln!(w, "  {}", overall_line(c))?;
    writeln!(w)?;
    write_group(w, "visible cases", &c.visible, c, &b)?;
    if !c.changed_cases.is_empty() {
        writeln!(
            w,
            "\n  cases that changed (Newcombe interval of B − A excludes 0; per case, not adjusted for {} cases):",
            c.visible.cases
        )?;
        writeln!(
            w,
            "    {:<8} {:<34} {:>9} {:>9}  B − A",
            "", "case", "A", "B"
        )?;
        for cc in c.changed_cases.iter().take(SHOWN) {
            writeln!(
                w,
                "    {:<8} {:<34} {:>9} {:>9}  {:+.3} [{:+.3}, {:+.3}]",
                if cc.difference > 0.0 {
                    "better"
                } else {
                    "worse"
                },
                cc.case_id,
                format!("{}/{}", cc.a_x, cc.a_n),
                format!("{}/{}", cc.b_x, cc.b_n),
                cc.difference,
                cc.lo,
                cc.hi
            )?;
        }
        if c.changed_cases.len() > SHOWN {
            writeln!(
                w,
                "    … {} more in the JSON",
                c.changed_cases.len() - SHOWN
            )?;
        }
    } else {
        writeln!(w, "\n  no visible case changed beyond its interval")?;
    }
    if let Some(h) = &c.holdout {
        writeln!(w)?;
        write_group(
            w,
            "holdout cases (tagged `holdout`; aggregate only)",
            h,
            c,
            &b,
        )?;
    }
    if !c.substitutions.is_empty() {
        writeln!(
            w,
            "\n  substitutions (expected → chosen instead, scored trials; largest change first):"
        )?;
        let shown: Vec<(String, &Substitution)> = c
            .substitutions
            .iter()
            .take(SHOWN)
            .map(|s| (format!("{} → {}", s.expected, s.chosen), s))
            .collect();
        let width = shown
            .iter()
            .map(|(label, _)| label.chars().count())
            .max()
            .unwrap_or(0)
            .max(20);
        writeln!(w, "    {:<width$} {:>7} {:>7}", "", "A", "B")?;
        for (label, s) in &shown {
            writeln!(w, "    {label:<width$} {:>7} {:>7}", s.a, s.b)?;
        }
        if c.substitutions.len() > SHOWN {
            writeln!(
                w,
                "    … {} more in the JSON",
                c.substitutions.len() - SHOWN
            )?;
        }
    }
    Ok(())
}

/// After the fixed-n interval of a group judged sequentially: that it is not the decision's.
pub(crate) fn fixed_n_caveat(g: &GroupComparison) -> &'static str {
    if g.sequential.is_some() {
        " · fixed-n, descriptive only: not the decision's, and not valid after the run stopped on its data"
    } else {
        ""
    }
}

fn write_group(
    w: &mut dyn Write,
    title: &str,
    g: &GroupComparison,
    c: &Comparison,
    b: &str,
) -> io::Result<()> {
    let mean = |m: Option<f64>| m.map_or("n/a".to_owned(), |m| format!("{m:.3}"));
    writeln!(
        w,
        "  {title}: {} · mean of case rates A {} · B {}",
        g.cases,
        mean(g.a_mean),
        mean(g.b_mean)
    )?;
    match &g.difference {
        Some(d) => writeln!(
            w,
            "    B − A = {:+.3} [{:+.3}, {:+.3}] (paired t on {} case differences, {} df, sd {:.3}, p = {:.4}){}",
            d.mean,
            d.lo,
            d.hi,
            g.cases,
            d.df,
            d.sd,
            d.p_value,
            fixed_n_caveat(g)
        )?,
        None => writeln!(
            w,
            "    B − A: n/a (fewer than 2 cases with data in both arms)"
        )?,
    }
    if let Some(m) = &g.mcnemar {
        writeln!(
            w,
            "    one trial per case: McNemar on {} discordant cases (A only {}, B only {}): exact p = {:.4}, mid-p = {:.4}; Newcombe paired [{:+.3}, {:+.3}]",
            m.a_only + m.b_only,
            m.a_only,
            m.b_only,
            m.exact_p,
            m.mid_p,
            m.lo,
            m.hi
        )?;
    }
    match &g.sequential {
        Some(q) => {
            writeln!(w, "    {}", q.line())?;
            writeln!(w, "    verdict: {}", q.verdict.describe(b, c.min_effect))?;
        }
        None => writeln!(w, "    verdict: {}", g.verdict.describe(b, c.min_effect))?,
    }
    if let Some(n) = g.cases_needed {
        writeln!(
            w,
            "    about {n} cases with this spread would detect a difference of {} with {:.0}% power",
            c.min_effect,
            c.power * 100.0
        )?;
    }
    Ok(())
}
