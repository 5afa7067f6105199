//! Several providers in one run, side by side: a column per provider arm, and the cases where
//! they disagree. A server that works with one client and breaks with another is a production
//! bug, so a difference between providers is reported as a finding, case by case. Computed
//! from the arms' summaries when the summary is built (so `report` and `merge` give the same
//! diff as the run); renderers only format these numbers and the arms' own figures.

use std::collections::BTreeMap;
use toolscore_core::metric::Metric;

use serde::{Deserialize, Serialize};

use super::ArmSummary;
use toolscore_core::ArmId;

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
    pub fn differences_by_chance(&self) -> f64 {
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
