//! `run --attacks --compare`: two arms' attacked runs, paired by (scenario × attack) unit, as
//! the paired comparison of cases is made (reference/stats.md §3.3): per unit the difference
//! of the two rates, and their mean with a t(m−1) interval, units the independent clusters.
//! Attack success is lower the better, so its verdict is told that way round: BETTER when B's
//! interval of B − A lies below 0.

use std::collections::BTreeMap;

use toolscore_core::InputError;
use toolscore_core::metric::Metric;
use toolscore_summary::{
    AttackComparison, ComparedArm, ComparisonVerdict, GroupComparison, RateStat,
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
    let axis = super::axis_of((summary, &a.arm), (summary, &b.arm))?;
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
        |f: &dyn Fn(&toolscore_summary::AttackUnit) -> &RateStat| -> Vec<(&RateStat, &RateStat)> {
            pairs.iter().map(|(ua, ub)| (f(ua), f(ub))).collect()
        };
    let attack_success = lower_is_better(no_narrower_than_pooled(
        paired_group(&of(&|u| &u.attack_success), opts),
        &of(&|u| &u.attack_success),
        opts,
    ));
    let utility_under_attack = no_narrower_than_pooled(
        paired_group(&of(&|u| &u.utility_under_attack), opts),
        &of(&|u| &u.utility_under_attack),
        opts,
    );
    let side = |arm: &SecurityArmSummary| ComparedArm {
        run_id: summary.run.run_id.clone(),
        arm: arm.arm.clone(),
        folder: None,
    };
    Ok(Some(AttackComparison {
        confidence: summary.confidence,
        min_effect,
        a: side(a),
        b: side(b),
        axis,
        attack_success,
        utility_under_attack,
    }))
}

/// The paired interval, never narrower than Newcombe's interval of the two arms' pooled rates.
/// The t interval's width comes only from the spread of the unit differences: when every unit
/// shows the same rate in both arms (0 of 3 against 0 of 3, as an attack nobody follows
/// gives) it has no width at all, although each rate is a noisy estimate, and "no detectable
/// difference" would rest on nothing. As the suite interval is never narrower than Wilson at
/// the effective sample size, this one is never narrower than the pooled trials allow; the
/// verdict is then taken on the widened interval.
fn no_narrower_than_pooled(
    mut g: GroupComparison,
    pairs: &[(&RateStat, &RateStat)],
    opts: CompareOptions,
) -> GroupComparison {
    let (mut xa, mut na, mut xb, mut nb) = (0, 0, 0, 0);
    for (a, b) in pairs.iter().filter(|(a, b)| a.n > 0 && b.n > 0) {
        (xa, na, xb, nb) = (xa + a.x, na + a.n, xb + b.x, nb + b.n);
    }
    let (Some(d), Some(pooled)) = (
        g.difference.as_mut(),
        toolscore_stats::newcombe_interval(xb, nb, xa, na, opts.confidence),
    ) else {
        return g;
    };
    if pooled.lo < d.lo || pooled.hi > d.hi {
        d.lo = d.lo.min(pooled.lo);
        d.hi = d.hi.max(pooled.hi);
        d.method
            .push_str("; never narrower than Newcombe's interval of the pooled rates");
    }
    g.verdict = super::verdict_of(g.difference.as_ref(), opts.min_effect);
    g
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

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(x: u64, n: u64) -> RateStat {
        RateStat {
            x,
            n,
            rate: Some(x as f64 / n as f64),
            interval: None,
            case_level: None,
        }
    }

    fn opts(min_effect: f64) -> CompareOptions {
        CompareOptions {
            metric: Metric::Pass,
            confidence: 0.95,
            min_effect,
            power: 0.8,
            intersect: false,
            holdout_apart: false,
        }
    }

    #[test]
    fn units_that_all_agree_still_get_the_width_their_trials_allow() {
        // 33 units at 0 of 3 in both arms: the t interval has no width at all, and would call
        // any difference smaller than 0.01 ruled out on 99 trials an arm.
        let (a, b) = (stat(0, 3), stat(0, 3));
        let pairs: Vec<(&RateStat, &RateStat)> = (0..33).map(|_| (&a, &b)).collect();
        let t_only = paired_group(&pairs, opts(0.01));
        let d = t_only.difference.as_ref().unwrap();
        assert_eq!((d.lo, d.hi), (0.0, 0.0));
        assert_eq!(t_only.verdict, ComparisonVerdict::Equivalent);
        let floored = no_narrower_than_pooled(t_only, &pairs, opts(0.01));
        let d = floored.difference.as_ref().unwrap();
        let pooled = toolscore_stats::newcombe_interval(0, 99, 0, 99, 0.95).unwrap();
        assert_eq!((d.lo, d.hi), (pooled.lo, pooled.hi));
        assert!(d.hi > 0.03, "{d:?}");
        assert_eq!(floored.verdict, ComparisonVerdict::Inconclusive);
        // A t interval already wider than the pooled one is kept as it is.
        let (c, e) = (stat(3, 3), stat(0, 3));
        let mixed: Vec<(&RateStat, &RateStat)> = (0..10)
            .map(|i| if i % 2 == 0 { (&a, &b) } else { (&c, &e) })
            .collect();
        let t = paired_group(&mixed, opts(0.05));
        let kept = no_narrower_than_pooled(t.clone(), &mixed, opts(0.05));
        assert_eq!(kept.difference, t.difference);
    }
}
