//! `--baseline RUN_DIR`: a non-inferiority gate against an earlier run (main's last run, say).
//!
//! The estimand is the mean over cases of (this run's case rate − the baseline's), with the
//! paired t(m−1) interval of `compare` (reference/stats.md §3.3), taken two-sided at
//! `2·conf − 1` so each end is a one-sided bound at `conf`:
//! - PASS when the lower bound is above −margin (any loss is smaller than the margin);
//! - FAIL when the upper bound is below −margin (the loss is larger than the margin);
//! - INCONCLUSIVE otherwise.
//!
//! The two runs must have run the same cases with the same trials per case (`compare`'s
//! population check), unless `--intersect`.

use crate::compare::{CompareOptions, Side, compare};
use toolscore_core::InputError;
use toolscore_core::metric::Metric;
use toolscore_summary::{GateLevel, GateResult, Summary, Verdict};

/// Judges every arm of `current` against the matching arm of `baseline`.
pub fn baseline_gates(
    current: &Summary,
    baseline: &Summary,
    metric: Metric,
    margin: f64,
    confidence: f64,
    intersect: bool,
) -> Result<Vec<GateResult>, InputError> {
    let mut out = Vec::with_capacity(current.arms.len());
    for (i, arm) in current.arms.iter().enumerate() {
        let base_arm = baseline_arm(baseline, &arm.arm)?;
        let c = compare(
            Side {
                summary: baseline,
                arm: base_arm,
            },
            Side {
                summary: current,
                arm: i,
            },
            CompareOptions {
                metric,
                confidence: 2.0 * confidence - 1.0,
                min_effect: margin,
                power: 0.8,
                intersect,
                holdout_apart: false,
            },
        )
        .map_err(|e| InputError::new(format!("--baseline {}: {e}", baseline.run.run_id)))?;
        let g = &c.visible;
        let (verdict, lower, upper, estimate) = match &g.difference {
            Some(d) if d.lo > -margin => (Verdict::Pass, Some(d.lo), Some(d.hi), Some(d.mean)),
            Some(d) if d.hi < -margin => (Verdict::Fail, Some(d.lo), Some(d.hi), Some(d.mean)),
            Some(d) => (Verdict::Inconclusive, Some(d.lo), Some(d.hi), Some(d.mean)),
            None => (Verdict::Inconclusive, None, None, None),
        };
        let hint = baseline_hint(&c, verdict, margin, confidence);
        out.push(GateResult {
            metric: metric.into(),
            threshold: -margin,
            level: GateLevel::Baseline,
            arm: arm.arm.clone(),
            verdict,
            method: format!(
                "non-inferiority to run {}: mean over {} cases of (this run − baseline) case rates, paired t(m-1), one-sided; pass when the lower bound > -{margin}",
                baseline.run.run_id, g.cases
            ),
            estimate,
            lower,
            upper,
            cases: g.cases,
            passed_cases: 0,
            failed_cases: 0,
            inconclusive_cases: 0,
            not_passed: Vec::new(),
            hint,
            sequential: None,
            tools: Vec::new(),
            trials: None,
        });
    }
    Ok(out)
}

/// The baseline's arm this run's arm is held against: its only arm, or the one of the same
/// name and variant.
pub(super) fn baseline_arm(
    baseline: &Summary,
    arm: &toolscore_core::ArmId,
) -> Result<usize, InputError> {
    Ok(match baseline.arms.len() {
        1 => 0,
        _ => baseline
            .arms
            .iter()
            .position(|b| b.arm == *arm)
            .ok_or_else(|| {
                InputError::new(format!(
                    "--baseline {}: it has {} arms and none is {}/{}; name a baseline run with one arm or the same arms",
                    baseline.run.run_id,
                    baseline.arms.len(),
                    arm.provider,
                    arm.variant
                ))
            })?,
    })
}

/// What a baseline gate adds: the cases that got worse, and the cases an inconclusive
/// verdict would need.
fn baseline_hint(
    c: &toolscore_summary::Comparison,
    verdict: Verdict,
    margin: f64,
    confidence: f64,
) -> Option<String> {
    let worst: Vec<String> = c
        .changed_cases
        .iter()
        .filter(|cc| cc.difference < 0.0)
        .take(5)
        .map(|cc| {
            format!(
                "{} {}/{} → {}/{} ({:+.3} [{:+.3}, {:+.3}])",
                cc.case_id, cc.a_x, cc.a_n, cc.b_x, cc.b_n, cc.difference, cc.lo, cc.hi
            )
        })
        .collect();
    let mut hint = Vec::new();
    if !worst.is_empty() {
        hint.push(format!(
            "cases that got worse ({:.0}% Newcombe interval of the difference excludes 0):\n        {}",
            (2.0 * confidence - 1.0) * 100.0,
            worst.join("\n        ")
        ));
    }
    if verdict == Verdict::Inconclusive
        && let Some(n) = c.visible.cases_needed
    {
        hint.push(format!(
            "about {n} cases with this spread would tell a loss of {margin} from none"
        ));
    }
    (!hint.is_empty()).then(|| hint.join("\n      "))
}
