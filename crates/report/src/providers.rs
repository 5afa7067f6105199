//! Several providers in one run, side by side: a column per provider arm, and the cases where
//! they disagree. A server that works with one client and breaks with another is a production
//! bug, so a difference between providers is reported as a finding, case by case. Computed
//! from the arms' summaries when the summary is built (so `report` and `merge` give the same
//! diff as the run); renderers only format these numbers and the arms' own figures.

use std::collections::BTreeMap;
use std::io::{self, Write};
use toolscore_core::metric::Metric;

use serde::{Deserialize, Serialize};

use super::{ArmSummary, RateStat, Summary};
use toolscore_core::record::ArmId;

/// The provider arms shown one catalog variant, compared case by case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderDiff {
    pub variant: String,
    /// The columns: every arm of this variant, in the summary's arm order.
    pub arms: Vec<ArmId>,
    /// Two-sided confidence level of every per-case interval.
    pub confidence: f64,
    /// Cases with scored trials in every one of the arms: the cases compared.
    pub cases_compared: u64,
    /// Cases whose majority choice of tool differs between arms, in case order.
    pub choice_differs: Vec<ChoiceDiff>,
    /// (case, pair of arms) pass-rate comparisons made: the count that false alarms scale
    /// with (at 95%, about one in twenty when the providers are alike).
    pub pass_comparisons: u64,
    /// Cases where some pair of arms has a pass-rate difference whose interval excludes 0,
    /// largest difference first.
    pub pass_differs: Vec<PassDiff>,
}

impl ProviderDiff {
    /// About how many case comparisons would differ beyond their intervals by chance alone
    /// if the providers were alike: each comparison's interval misses with 1 − confidence.
    pub(crate) fn differences_by_chance(&self) -> f64 {
        self.pass_comparisons as f64 * (1.0 - self.confidence)
    }
}

/// One arm's choices on a case: its most frequent choice, and whether that is a majority
/// (more than half of the scored trials).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmChoice {
    pub top: String,
    pub count: u64,
    pub scored: u64,
    pub majority: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChoiceDiff {
    pub dataset: String,
    pub case_id: String,
    pub expected: String,
    /// One per arm, in the order of [`ProviderDiff::arms`].
    pub choices: Vec<ArmChoice>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassDiff {
    pub dataset: String,
    pub case_id: String,
    pub expected: String,
    /// Passing trials and scored trials per arm, in the order of [`ProviderDiff::arms`].
    pub pass: Vec<(u64, u64)>,
    /// The pairs whose interval excludes 0.
    pub pairs: Vec<PairDifference>,
}

/// Arm `b`'s pass rate minus arm `a`'s on one case, with Newcombe's hybrid score interval
/// (the two arms' trials of a case are independent samples).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairDifference {
    pub a: usize,
    pub b: usize,
    pub difference: f64,
    pub lo: f64,
    pub hi: f64,
}

/// One diff per catalog variant shown to two or more arms (which then differ in provider,
/// model or sampling settings), over the cases every one of those arms scored.
pub(crate) fn provider_diffs(arms: &[ArmSummary], confidence: f64) -> Vec<ProviderDiff> {
    let mut by_variant: BTreeMap<&str, Vec<&ArmSummary>> = BTreeMap::new();
    for arm in arms.iter().filter(|a| !a.cases.is_empty()) {
        by_variant.entry(&arm.arm.variant).or_default().push(arm);
    }
    by_variant
        .into_iter()
        .filter(|(_, arms)| arms.len() >= 2)
        .map(|(variant, arms)| diff_of(variant, &arms, confidence))
        .collect()
}

fn diff_of(variant: &str, arms: &[&ArmSummary], confidence: f64) -> ProviderDiff {
    type Key<'a> = (&'a str, &'a str);
    let cases: Vec<BTreeMap<Key<'_>, &super::CaseSummary>> = arms
        .iter()
        .map(|a| {
            a.cases
                .iter()
                .filter(|c| c.scored_trials > 0)
                .map(|c| ((c.dataset.as_str(), c.case_id.as_str()), c))
                .collect()
        })
        .collect();
    let shared: Vec<Key<'_>> = cases[0]
        .keys()
        .filter(|k| cases.iter().all(|m| m.contains_key(*k)))
        .copied()
        .collect();
    let mut choice_differs = Vec::new();
    let mut pass_differs = Vec::new();
    let mut pass_comparisons = 0u64;
    for key in &shared {
        let per_arm: Vec<&super::CaseSummary> = cases.iter().map(|m| m[key]).collect();
        let choices: Vec<ArmChoice> = per_arm.iter().map(|c| choice_of(c)).collect();
        let majority = |c: &ArmChoice| c.majority.then(|| c.top.clone());
        if choices.iter().any(|c| majority(c) != majority(&choices[0])) {
            choice_differs.push(ChoiceDiff {
                dataset: key.0.to_owned(),
                case_id: key.1.to_owned(),
                expected: per_arm[0].expected.clone(),
                choices,
            });
        }
        let pass: Vec<(u64, u64)> = per_arm
            .iter()
            .map(|c| (c.metrics[Metric::Pass].x, c.metrics[Metric::Pass].n))
            .collect();
        let (pairs, compared) = significant_pairs(&pass, confidence);
        pass_comparisons += compared;
        if !pairs.is_empty() {
            pass_differs.push(PassDiff {
                dataset: key.0.to_owned(),
                case_id: key.1.to_owned(),
                expected: per_arm[0].expected.clone(),
                pass,
                pairs,
            });
        }
    }
    let largest = |p: &PassDiff| {
        p.pairs
            .iter()
            .map(|q| q.difference.abs())
            .fold(0.0, f64::max)
    };
    pass_differs.sort_by(|x, y| {
        largest(y)
            .total_cmp(&largest(x))
            .then_with(|| (&x.dataset, &x.case_id).cmp(&(&y.dataset, &y.case_id)))
    });
    ProviderDiff {
        variant: variant.to_owned(),
        arms: arms.iter().map(|a| a.arm.clone()).collect(),
        confidence,
        cases_compared: shared.len() as u64,
        choice_differs,
        pass_comparisons,
        pass_differs,
    }
}

/// The pairs of arms (a < b) whose pass rates on one case differ beyond chance (Newcombe's
/// interval of b − a excludes 0), and how many pairs had data to compare.
fn significant_pairs(pass: &[(u64, u64)], confidence: f64) -> (Vec<PairDifference>, u64) {
    let mut pairs = Vec::new();
    let mut compared = 0u64;
    for a in 0..pass.len() {
        for b in a + 1..pass.len() {
            let ((ax, an), (bx, bn)) = (pass[a], pass[b]);
            if an == 0 || bn == 0 {
                continue;
            }
            compared += 1;
            if let Some(iv) = toolscore_stats::newcombe_interval(bx, bn, ax, an, confidence)
                && (iv.lo > 0.0 || iv.hi < 0.0)
            {
                pairs.push(PairDifference {
                    a,
                    b,
                    difference: bx as f64 / bn as f64 - ax as f64 / an as f64,
                    lo: iv.lo,
                    hi: iv.hi,
                });
            }
        }
    }
    (pairs, compared)
}

/// The most frequent choice (ties by name; `(other)` never counts as a choice).
fn choice_of(case: &super::CaseSummary) -> ArmChoice {
    let scored: u64 = case.chosen.values().sum();
    let top = case
        .chosen
        .iter()
        .filter(|(k, _)| k.as_str() != "(other)")
        .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)));
    match top {
        Some((tool, &count)) => ArmChoice {
            top: tool.clone(),
            count,
            scored,
            majority: 2 * count > scored,
        },
        None => ArmChoice {
            top: "(none)".to_owned(),
            count: 0,
            scored,
            majority: false,
        },
    }
}

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
pub fn side_by_side_rows(arms: &[&ArmSummary]) -> Vec<(String, Vec<String>)> {
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
pub fn render_provider_diffs(summary: &Summary, out: &mut dyn Write) -> io::Result<()> {
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
