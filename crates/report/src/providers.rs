//! Several providers shown the same catalog variant, side by side and where they disagree.

use std::io::{self, Write};

use toolscore_core::ArmId;
use toolscore_core::metric::Metric;
use toolscore_summary::{ArmSummary, PassDiff, ProviderDiff, RateStat, Summary};

fn rate_cell(r: &RateStat) -> String {
    match (r.rate, r.interval) {
        (Some(rate), Some(i)) => format!("{rate:.3} [{:.3}, {:.3}] ({}/{})", i.lo, i.hi, r.x, r.n),
        (Some(rate), None) => format!("{rate:.3} ({}/{})", r.x, r.n),
        _ => "— (0/0)".to_owned(),
    }
}

fn column_label(arm: &ArmId) -> String {
    format!("{} ({})", arm.provider, arm.model)
}

/// The side-by-side rows: (metric, one cell per arm).
pub(crate) fn side_by_side_rows(arms: &[&ArmSummary]) -> Vec<(String, Vec<String>)> {
    let metric = |name: &str, f: &dyn Fn(&ArmSummary) -> String| {
        (name.to_owned(), arms.iter().map(|a| f(a)).collect())
    };
    let rates = Metric::ALL
        .into_iter()
        .map(|m| metric(m.label(), &|a| rate_cell(&a.suite.metrics[m])));
    rates
        .chain([
            metric("infra errors", &|a| {
                format!(
                    "{} of {} trials",
                    a.infra.errors,
                    a.infra.errors + a.suite.scored_trials
                )
            }),
            metric("latency p50", &|a| match &a.latency_ms.p50 {
                Some(p) => format!(
                    "{:.0} ms [{}, {}]",
                    p.value,
                    p.lo.map_or("—".to_owned(), |v| format!("{v:.0}")),
                    p.hi.map_or("unbounded".to_owned(), |v| format!("{v:.0}"))
                ),
                None => "—".to_owned(),
            }),
            metric(
                "tokens/trial",
                &|a| match (a.tokens.input_mean, a.tokens.output_mean) {
                    (Some(i), Some(o)) => format!("{i:.0} in · {o:.0} out"),
                    _ => "not reported".to_owned(),
                },
            ),
        ])
        .collect()
}

/// Terminal rendering of every provider diff of the summary.
pub(crate) fn render_provider_diffs(summary: &Summary, out: &mut dyn Write) -> io::Result<()> {
    for (k, d) in summary.provider_diffs.iter().enumerate() {
        if k > 0 {
            writeln!(out)?;
        }
        let arms: Vec<&ArmSummary> = d
            .arms
            .iter()
            .filter_map(|id| summary.arms.iter().find(|a| &a.arm == id))
            .collect();
        writeln!(
            out,
            "=== providers side by side · variant {} · {:.0}% intervals ===",
            d.variant,
            d.confidence * 100.0
        )?;
        write_side_by_side(d, &arms, out)?;
        writeln!(out)?;
        writeln!(
            out,
            "cross-provider diff · {} cases scored by all {} arms",
            d.cases_compared,
            d.arms.len()
        )?;
        write_choice_diffs(d, out)?;
        write_pass_diffs(d, out)?;
    }
    Ok(())
}

/// Every metric of the arms side by side, in columns as wide as their widest cell.
fn write_side_by_side(
    d: &ProviderDiff,
    arms: &[&ArmSummary],
    out: &mut dyn Write,
) -> io::Result<()> {
    let rows = side_by_side_rows(arms);
    let labels: Vec<String> = d.arms.iter().map(column_label).collect();
    let widths: Vec<usize> = (0..labels.len())
        .map(|i| {
            rows.iter()
                .map(|(_, cells)| cells[i].chars().count())
                .chain(std::iter::once(labels[i].chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |first: &str, cells: &[String]| {
        let mut l = format!("  {first:<13}");
        for (cell, w) in cells.iter().zip(&widths) {
            l.push_str(&format!("  {cell:<w$}"));
        }
        l.trim_end().to_owned()
    };
    writeln!(out, "{}", line("metric", &labels))?;
    for (name, cells) in &rows {
        writeln!(out, "{}", line(name, cells))?;
    }
    Ok(())
}

/// The cases whose majority choice of tool differs between the arms.
fn write_choice_diffs(d: &ProviderDiff, out: &mut dyn Write) -> io::Result<()> {
    let name = |i: usize| d.arms[i].provider.as_str();
    if d.choice_differs.is_empty() {
        writeln!(out, "  majority choice of tool: the same in every case")?;
    } else {
        writeln!(
            out,
            "  majority choice of tool differs in {} of {} cases:",
            d.choice_differs.len(),
            d.cases_compared
        )?;
        for c in d.choice_differs.iter().take(SHOWN) {
            let parts: Vec<String> = c
                .choices
                .iter()
                .enumerate()
                .map(|(i, ch)| {
                    format!(
                        "{} {} {} {}/{}",
                        name(i),
                        if ch.majority {
                            "→"
                        } else {
                            "→ no majority, most often"
                        },
                        ch.top,
                        ch.count,
                        ch.scored
                    )
                })
                .collect();
            writeln!(
                out,
                "    {}/{} (expects {}): {}",
                c.dataset,
                c.case_id,
                c.expected,
                parts.join(" · ")
            )?;
        }
    }
    if d.choice_differs.len() > SHOWN {
        writeln!(
            out,
            "    … {} more in summary.json (provider_diffs)",
            d.choice_differs.len() - SHOWN
        )?;
    }
    Ok(())
}

/// The cases whose pass rate differs beyond its interval, against how many would by chance.
fn write_pass_diffs(d: &ProviderDiff, out: &mut dyn Write) -> io::Result<()> {
    let name = |i: usize| d.arms[i].provider.as_str();
    writeln!(
        out,
        "  pass rate differs beyond its {:.0}% interval (Newcombe, paired by case) in {} of {} case comparisons; about {:.1} would by chance alone if the providers were alike",
        d.confidence * 100.0,
        d.pass_differs.iter().map(|p| p.pairs.len()).sum::<usize>(),
        d.pass_comparisons,
        d.differences_by_chance()
    )?;
    for p in d.pass_differs.iter().take(SHOWN) {
        let (rates, pairs) = pass_diff_text(p, &|i| name(i).to_owned());
        writeln!(
            out,
            "    {}/{} (expects {}): {rates} · {pairs}",
            p.dataset, p.case_id, p.expected,
        )?;
    }
    if d.pass_differs.len() > SHOWN {
        writeln!(
            out,
            "    … {} more in summary.json (provider_diffs)",
            d.pass_differs.len() - SHOWN
        )?;
    }
    Ok(())
}

/// A differing case as text: each arm's passes (`NAME x/n · …`) and each differing pair
/// (`B − A = +d [lo, hi] · …`), arms named by `name`.
pub(crate) fn pass_diff_text(p: &PassDiff, name: &dyn Fn(usize) -> String) -> (String, String) {
    let rates: Vec<String> = p
        .pass
        .iter()
        .enumerate()
        .map(|(i, (x, n))| format!("{} {x}/{n}", name(i)))
        .collect();
    let pairs: Vec<String> = p
        .pairs
        .iter()
        .map(|q| {
            format!(
                "{} − {} = {:+.3} [{:+.3}, {:+.3}]",
                name(q.b),
                name(q.a),
                q.difference,
                q.lo,
                q.hi
            )
        })
        .collect();
    (rates.join(" · "), pairs.join(" · "))
}

/// Cases listed per kind of difference on the terminal; summary.json has them all.
const SHOWN: usize = 10;

#[cfg(test)]
mod tests {
    use super::*;
    use toolscore_core::RunTotals;
    use toolscore_core::{Outcome, TrialRecord};
    use toolscore_summary::{Aggregator, RunInfo};

    fn scored(selection_ok: bool, called: bool) -> TrialRecord {
        let mut r = TrialRecord::for_test("c", Outcome::Pass, 10.0);
        r.usage.input_tokens = Some(10);
        r.score = Some(toolscore_core::TrialScore {
            selection_ok,
            args_ok: None,
            schema_ok: called.then_some(true),
            passed: selection_ok,
            failure: None,
            detail: None,
            schema_violations: Vec::new(),
            arg_failures: None,
        });
        if !selection_ok {
            r.outcome = Outcome::Fail;
        }
        r
    }

    /// A scored trial of `provider` on `case` whose first call is `chosen` (None: no call).
    fn chose_as(provider: &str, case: &str, chosen: Option<&str>) -> TrialRecord {
        let ok = chosen == Some("t");
        let mut r = scored(ok, chosen.is_some());
        r.case_id = case.into();
        r.arm.provider = provider.into();
        r.turns = vec![toolscore_core::ModelTurn {
            tool_calls: chosen
                .map(|name| toolscore_core::ToolCall {
                    id: None,
                    name: name.into(),
                    arguments: serde_json::json!({}),
                    unparsed_arguments: None,
                    thought_signature: None,
                })
                .into_iter()
                .collect(),
            text: None,
            usage: Default::default(),
            finish: None,
        }];
        r
    }

    /// The terminal's words for the diffs `summary`'s aggregator tests compute.
    #[test]
    fn providers_are_compared_case_by_case_on_majority_choice_and_pass_rate() {
        let mut agg = Aggregator::new();
        for _ in 0..10 {
            agg.add(&chose_as("p1", "a", Some("t")));
            agg.add(&chose_as("p2", "a", Some("t")));
            agg.add(&chose_as("p3", "a", Some("wrong_tool")));
        }
        for i in 0..10 {
            let pick = if i % 2 == 0 { Some("t") } else { None };
            for p in ["p1", "p2", "p3"] {
                agg.add(&chose_as(p, "b", pick));
            }
        }
        let totals = RunTotals {
            planned_trials: 60,
            completed_trials: 60,
            skipped_trials: 0,
            budget_not_run: 0,
            interrupted: false,
            failures: Vec::new(),
        };
        let s = agg.finish(RunInfo::for_test(100), &totals, 0.95, 0.05);
        let mut text = Vec::new();
        render_provider_diffs(&s, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains(
                "    d/a (expects t): p1 → t 10/10 · p2 → t 10/10 · p3 → wrong_tool 10/10"
            ),
            "{text}"
        );
        assert!(
            text.contains("in 2 of 6 case comparisons; about 0.3 would by chance alone"),
            "{text}"
        );
    }
}
