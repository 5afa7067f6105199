//! `run --attacks --compare`: two arms' attacked runs, paired by (scenario × attack) unit, as
//! the paired comparison of cases is made (reference/stats.md §3.3): per unit the difference
//! of the two rates, and their mean with a t(m−1) interval, units the independent clusters.
//! Attack success is lower the better, so its verdict is told that way round: BETTER when B's
//! interval of B − A lies below 0.

use std::collections::BTreeMap;

use toolscore_core::error::InputError;
use toolscore_report::{
    AttackComparison, ComparedArm, ComparisonVerdict, GroupComparison, Metric, RateStat,
    SecurityArmSummary, Summary,
};

use super::{CompareOptions, paired_group};

/// The run's two attacked arms compared, B − A, in plan order (A the first arm planned).
/// `None` when the run has not exactly two arms with attacked units.
pub fn compare_attacks(
    summary: &Summary,
    min_effect: f64,
) -> Result<Option<AttackComparison>, InputError> {
    if summary.security.len() != 2 {
        return Ok(None);
    }
    let planned = |arm: &SecurityArmSummary| {
        summary
            .run
            .arms
            .iter()
            .position(|info| info.id() == arm.arm)
            .unwrap_or(usize::MAX)
    };
    let mut arms: Vec<&SecurityArmSummary> = summary.security.iter().collect();
    arms.sort_by_key(|a| planned(a));
    let (a, b) = (arms[0], arms[1]);
    let axis = if a.arm.variant != b.arm.variant {
        if a.arm.provider != b.arm.provider || a.arm.model != b.arm.model {
            return Err(InputError::new(format!(
                "the arms differ in both catalog variant ({} vs {}) and provider or model ({} {} vs {} {}): a difference could come from either; compare one change at a time",
                a.arm.variant,
                b.arm.variant,
                a.arm.provider,
                a.arm.model,
                b.arm.provider,
                b.arm.model
            )));
        }
        "variant"
    } else {
        "provider"
    };
    let units_b: BTreeMap<&str, _> = b.units.iter().map(|u| (u.case_id.as_str(), u)).collect();
    let pairs: Vec<_> = a
        .units
        .iter()
        .filter_map(|ua| units_b.get(ua.case_id.as_str()).map(|ub| (ua, *ub)))
        .collect();
    if pairs.is_empty() {
        return Err(InputError::new(
            "the arms share no attacked unit (scenario × attack)",
        ));
    }
    let opts = CompareOptions {
        // Only how the figures are computed is read from here, not which metric.
        metric: Metric::Pass,
        confidence: summary.confidence,
        min_effect,
        power: 0.8,
        intersect: false,
        holdout_apart: false,
    };
    let of =
        |f: &dyn Fn(&toolscore_report::AttackUnit) -> &RateStat| -> Vec<(&RateStat, &RateStat)> {
            pairs.iter().map(|(ua, ub)| (f(ua), f(ub))).collect()
        };
    let attack_success = lower_is_better(paired_group(&of(&|u| &u.attack_success), opts));
    let utility_under_attack = paired_group(&of(&|u| &u.utility_under_attack), opts);
    let side = |arm: &SecurityArmSummary| ComparedArm {
        run_id: summary.run.run_id.clone(),
        arm: arm.arm.clone(),
    };
    Ok(Some(AttackComparison {
        confidence: summary.confidence,
        min_effect,
        a: side(a),
        b: side(b),
        axis: axis.to_owned(),
        attack_success,
        utility_under_attack,
    }))
}

/// A comparison of a rate where lower is better: B is better when B − A is below 0.
fn lower_is_better(mut g: GroupComparison) -> GroupComparison {
    g.verdict = match g.verdict {
        ComparisonVerdict::Better => ComparisonVerdict::Worse,
        ComparisonVerdict::Worse => ComparisonVerdict::Better,
        other => other,
    };
    g
}
