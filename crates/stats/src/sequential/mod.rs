//! Sequential (early-stopping) case gates, stats.md §6: tests that may be checked after every
//! trial and stopped at the first decision without inflating their error rates.
//!
//! Peeking at a fixed-n Wilson bound after every trial passes a case at the threshold a
//! quarter of the time instead of 5% (§6.1). A case gate here is two one-sided tests, each
//! read as a test martingale, so Ville's inequality keeps its error rate however often it is
//! looked at ([`SequentialTest`]):
//!
//! - PASS, `P(PASS | p ≤ t) ≤ α`: [`MixtureGate`] (the default) needs no guess of the true
//!   rate; its evidence mixes the likelihood ratios of several alternatives above t, so it is
//!   about as fast as the best of them at whatever rate the case really has. [`SprtGate`] is
//!   Wald's SPRT for a user who knows the rate a case should pass at (`--sprt-p1`).
//! - FAIL, `P(FAIL | p ≥ t) ≤ β`: [`BelowMixture`], the mirror mixture with alternatives below
//!   t. A FAIL means the bar is ruled out, as in the fixed-n gate. The indifference-zone FAIL of
//!   Wald's SPRT (`P(FAIL | p ≥ p₁) ≤ β`, which fails cases between t and p₁) is used only when
//!   asked for by name (`--fail-below P1`), and its FAIL means "below p₁".
//!
//! Each side is also an anytime-valid confidence bound ([`SequentialTest::lower_bound`],
//! [`SequentialTest::upper_bound`]): the same evidence with the bar moved to any q. A case
//! PASSes exactly when the lower bound reaches t and FAILs exactly when the upper bound falls
//! to t (to p₁ under `--fail-below`), so the bounds printed beside a verdict never contradict
//! it.
//!
//! [`PairedBetting`] is the sequential comparison of two arms paired by case: a confidence
//! sequence for their mean difference that may stop at any complete round.
//!
//! The case gates decide on integer boundaries of the counts (S passes of n), so a decision
//! depends only on the counts, never on the order trials arrived in, and
//! [`operating_characteristics`] computes a test's expected trials and error rates exactly
//! ([`curtailed_operating_characteristics`] for the gate as it runs, which also stops a case
//! once no decision is reachable within its trial budget).

mod below;
mod exact;
mod mixture;
mod paired;
mod paired_exact;
mod simulate;
mod sprt;

use serde::{Deserialize, Serialize};

pub use below::BelowMixture;
pub use exact::{
    OperatingCharacteristics, curtailed_operating_characteristics, operating_characteristics,
};
pub use mixture::MixtureGate;
pub use paired::{PairCounts, PairedBetting, PairedDecision};
pub use paired_exact::{ComparisonCharacteristics, EXACT_COMPARISON_WORK_LIMIT, exact_comparison};
pub use simulate::{SeededUniform, SimulatedOc, simulate_comparison, simulate_suite_gate};
pub use sprt::SprtGate;

/// What a sequential test says after n trials with S passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SequentialDecision {
    /// The PASS evidence reached 1/α: the rate is above t (false-pass probability ≤ α).
    Pass,
    /// The FAIL evidence reached 1/β: the rate is below t (false-fail probability ≤ β when
    /// p ≥ t); under `--fail-below P1`, below p₁ (≤ β when p ≥ p₁).
    Fail,
    /// Neither boundary reached: run more trials (or, at the trial budget, report
    /// inconclusive, which the safe side treats as FAIL).
    Continue,
}

/// A sequential test written as its two integer boundaries on the passes S after n trials.
pub trait Boundaries {
    /// The fewest passes that PASS after `n` trials; `None` when no run of n trials can pass
    /// yet.
    fn pass_boundary(&self, n: u64) -> Option<u64>;

    /// The most passes that FAIL after `n` trials; `None` when not even 0 of n fails yet.
    fn fail_boundary(&self, n: u64) -> Option<u64>;

    /// The decision after `successes` passes in `n` trials. Valid at every n however often it
    /// is asked; the trial budget is the caller's, and `Continue` at the budget means
    /// inconclusive.
    ///
    /// `None` when `successes > n`.
    fn decide(&self, successes: u64, n: u64) -> Option<SequentialDecision> {
        if successes > n {
            return None;
        }
        Some(if self.pass_boundary(n).is_some_and(|b| successes >= b) {
            SequentialDecision::Pass
        } else if self.fail_boundary(n).is_some_and(|b| successes <= b) {
            SequentialDecision::Fail
        } else {
            SequentialDecision::Continue
        })
    }

    /// The fewest further trials that could still decide from `successes` of `n`: all
    /// passes to the PASS boundary, or all failures to the FAIL boundary. `None` when nothing
    /// decides within `limit` more trials.
    fn fewest_to_decide(&self, successes: u64, n: u64, limit: u64) -> Option<u64> {
        (1..=limit).find(|&extra| {
            self.decide(successes + extra, n + extra) == Some(SequentialDecision::Pass)
                || self.decide(successes, n + extra) == Some(SequentialDecision::Fail)
        })
    }

    /// Whether some run of trials up to `cap` in all could still decide from `successes` of
    /// `n` (an undecided state): all passes reaching the PASS boundary by `cap`, or all
    /// failures the FAIL boundary. When neither can, the case is inconclusive whatever its
    /// remaining trials say, and the gate stops it (curtailment: it changes no verdict's
    /// probability, only the trials spent).
    ///
    /// It looks only at `cap`: for every test here a pass multiplies the PASS evidence and a
    /// failure the FAIL evidence by more than 1, so `n − pass_boundary(n)` (the failures a
    /// PASS allows) and `fail_boundary(n)` never fall as n grows, and a boundary reachable at
    /// some n ≤ cap is reachable at cap.
    fn can_decide_by(&self, successes: u64, n: u64, cap: u64) -> bool {
        Reach::of(self, cap).can_decide(successes, n)
    }
}

/// A test's boundaries at its trial budget: all [`Boundaries::can_decide_by`] needs, kept so a
/// caller asking about many states computes them once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reach {
    cap: u64,
    pass_at_cap: Option<u64>,
    fail_at_cap: Option<u64>,
}

impl Reach {
    pub fn of<B: Boundaries + ?Sized>(test: &B, cap: u64) -> Self {
        Reach {
            cap,
            pass_at_cap: test.pass_boundary(cap),
            fail_at_cap: test.fail_boundary(cap),
        }
    }

    /// Whether an undecided state (`successes` of `n`) can still PASS or FAIL by the cap.
    pub(crate) fn can_decide(&self, successes: u64, n: u64) -> bool {
        if n >= self.cap || successes > n {
            return false;
        }
        let failures = n - successes;
        self.pass_at_cap
            .is_some_and(|b| failures <= self.cap - b.min(self.cap))
            || self.fail_at_cap.is_some_and(|b| successes <= b)
    }
}

/// Which sequential test a case gate runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SequentialKind {
    /// [`MixtureGate`]: no p₁ to guess (the default of `--sequential`).
    Mixture,
    /// [`SprtGate`] at a given p₁ (`--sprt-p1`). The default when reading a summary written
    /// before the mixture existed, when every sequential gate was an SPRT.
    #[default]
    Sprt,
    /// [`PairedBetting`] over rounds of every case: the sequential suite gate, no case test.
    Betting,
}

/// The PASS side of a case gate: evidence that the rate is above t.
#[derive(Debug, Clone, PartialEq)]
pub enum PassSide {
    /// The mixture SPRT (the default): no guess of the true rate.
    Mixture(MixtureGate),
    /// Wald's SPRT at `--sprt-p1`.
    Sprt(SprtGate),
}

/// The FAIL side of a case gate.
#[derive(Debug, Clone, PartialEq)]
pub enum FailSide {
    /// The default: anytime-valid evidence that the rate is below t,
    /// `P(FAIL | p ≥ t) ≤ β`.
    BelowBar(BelowMixture),
    /// `--fail-below P1`: the SPRT of t against p₁, whose FAIL means "below p₁",
    /// `P(FAIL | p ≥ p₁) ≤ β` (an indifference zone between t and p₁, where it may fail a case
    /// that clears the bar).
    BelowRate(SprtGate),
}

/// A case gate's sequential test: a PASS side and a FAIL side, each anytime-valid on its own.
#[derive(Debug, Clone, PartialEq)]
pub struct SequentialTest {
    pass: PassSide,
    fail: FailSide,
}

impl SequentialTest {
    /// The test for threshold `t`: PASS by `kind` (the SPRT with alternative `p1`; the mixture
    /// needs none), false-pass bound `alpha`; FAIL with false-fail bound `beta`, below t, or
    /// below `fail_below` when that is given (the indifference zone, by name).
    ///
    /// `None` for parameters either side refuses (`p1` and `fail_below` must lie in (t, 1)).
    pub fn new(
        kind: SequentialKind,
        t: f64,
        p1: f64,
        fail_below: Option<f64>,
        alpha: f64,
        beta: f64,
    ) -> Option<Self> {
        let pass = match kind {
            // The mixture's own FAIL side is not used here; p₁ only has to be valid.
            SequentialKind::Mixture => {
                PassSide::Mixture(MixtureGate::new(t, t + (1.0 - t) / 2.0, alpha, beta)?)
            }
            SequentialKind::Sprt => PassSide::Sprt(SprtGate::new(t, p1, alpha, beta)?),
            SequentialKind::Betting => return None,
        };
        let fail = match fail_below {
            None => FailSide::BelowBar(BelowMixture::new(t, beta)?),
            Some(rate) => FailSide::BelowRate(SprtGate::new(t, rate, alpha, beta)?),
        };
        Some(SequentialTest { pass, fail })
    }

    pub fn kind(&self) -> SequentialKind {
        match self.pass {
            PassSide::Mixture(_) => SequentialKind::Mixture,
            PassSide::Sprt(_) => SequentialKind::Sprt,
        }
    }

    pub fn pass_side(&self) -> &PassSide {
        &self.pass
    }

    /// `--fail-below`'s rate when the FAIL side is the indifference-zone SPRT; `None` when a
    /// FAIL rules out the bar itself.
    pub fn fail_below(&self) -> Option<f64> {
        match &self.fail {
            FailSide::BelowBar(_) => None,
            FailSide::BelowRate(s) => Some(s.p1()),
        }
    }

    /// The anytime-valid lower confidence bound (level 1 − α) the PASS side gives after
    /// `successes` of `n`: at or above t exactly when the test PASSes. `None` when
    /// `successes > n`.
    pub fn lower_bound(&self, successes: u64, n: u64) -> Option<f64> {
        let passes = self.decide(successes, n)? == SequentialDecision::Pass;
        Some(match &self.pass {
            PassSide::Mixture(m) => m.lower_bound(successes, n, passes),
            PassSide::Sprt(s) => s.lower_bound(successes, n, passes),
        })
    }

    /// The anytime-valid upper confidence bound (level 1 − β) the FAIL side gives after
    /// `successes` of `n`: at or below t exactly when the test FAILs (under `--fail-below P1`,
    /// at or below p₁, and always above t). `None` when `successes > n`.
    pub fn upper_bound(&self, successes: u64, n: u64) -> Option<f64> {
        let fails = self.fail_boundary(n).is_some_and(|b| successes <= b);
        (successes <= n).then(|| match &self.fail {
            FailSide::BelowBar(b) => b.upper_bound(successes, n, fails),
            FailSide::BelowRate(s) => s.upper_bound(successes, n, fails),
        })
    }
}

impl Boundaries for SequentialTest {
    fn pass_boundary(&self, n: u64) -> Option<u64> {
        match &self.pass {
            PassSide::Mixture(g) => g.pass_boundary(n),
            PassSide::Sprt(g) => g.pass_boundary(n),
        }
    }

    fn fail_boundary(&self, n: u64) -> Option<u64> {
        match &self.fail {
            FailSide::BelowBar(g) => g.fail_boundary(n),
            FailSide::BelowRate(g) => g.fail_boundary(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate_sample_size;

    /// The default case gate: mixture PASS, FAIL below the bar; β = α/m.
    fn default_gate(t: f64, alpha: f64, cases: f64) -> SequentialTest {
        let p1 = t + (1.0 - t) / 2.0;
        SequentialTest::new(SequentialKind::Mixture, t, p1, None, alpha, alpha / cases)
            .expect("valid")
    }

    fn designs(t: f64, alpha: f64, cases: f64) -> Vec<(&'static str, SequentialTest)> {
        let p1 = t + (1.0 - t) / 2.0;
        let beta = alpha / cases;
        let make = |kind, fail_below| {
            SequentialTest::new(kind, t, p1, fail_below, alpha, beta).expect("valid")
        };
        vec![
            ("mixture", make(SequentialKind::Mixture, None)),
            ("sprt", make(SequentialKind::Sprt, None)),
            (
                "mixture --fail-below",
                make(SequentialKind::Mixture, Some(p1)),
            ),
            ("sprt --fail-below", make(SequentialKind::Sprt, Some(p1))),
        ]
    }

    #[test]
    fn a_false_fail_at_the_bar_stays_within_beta_at_every_budget() {
        // Issue 40: P(FAIL | p = t) ≤ β/m ≤ α at every n, whatever the PASS side, for bars from
        // 0.5 to 0.95, with the budget (the last n looked at) from 10 to 5,000 trials.
        for (t, cases) in [
            (0.8, 4.0),
            (0.9, 1.0),
            (0.6, 10.0),
            (0.95, 60.0),
            (0.5, 20.0),
        ] {
            let alpha = 0.05;
            let beta = alpha / cases;
            for (name, gate) in &designs(t, alpha, cases)[..2] {
                for n_max in [10, 25, 50, 100, 200, 500, 1000, 5000] {
                    for oc in [
                        operating_characteristics(gate, t, n_max),
                        curtailed_operating_characteristics(gate, t, n_max),
                    ] {
                        let oc = oc.expect("defined");
                        assert!(
                            oc.p_fail <= beta,
                            "{name} t={t} n_max={n_max}: P(FAIL | p = t) = {} > {beta}",
                            oc.p_fail
                        );
                        assert!(oc.p_pass <= alpha, "{name} t={t} n_max={n_max}: {oc:?}");
                    }
                }
                // Above the bar a false FAIL is rarer still.
                for p in [t + (1.0 - t) / 8.0, t + (1.0 - t) / 4.0] {
                    let oc = operating_characteristics(gate, p, 1000).unwrap();
                    assert!(oc.p_fail <= beta, "{name} t={t} p={p}: {oc:?}");
                }
            }
        }
    }

    #[test]
    fn a_case_at_0_87_against_0_8_is_failed_at_most_alpha_of_the_time() {
        // The case: t = 0.8, 4 cases (β = 0.0125 each), at most 200 trials. The old
        // FAIL side, still there under --fail-below 0.9, failed a case at 0.87 10.9% of the
        // time and one at 0.83 58%; the default FAIL side 0.012% and 0.11%.
        let designs = designs(0.8, 0.05, 4.0);
        for p in [0.8, 0.83, 0.87] {
            for (name, gate) in &designs[..2] {
                let oc = curtailed_operating_characteristics(gate, p, 200).unwrap();
                assert!(oc.p_fail <= 0.0125, "{name} p={p}: {oc:?}");
            }
        }
        let at = |i: usize, p: f64| {
            curtailed_operating_characteristics(&designs[i].1, p, 200)
                .unwrap()
                .p_fail
        };
        assert!((at(0, 0.87) - 0.000118).abs() < 5e-7, "{}", at(0, 0.87));
        assert!((at(0, 0.83) - 0.001063).abs() < 5e-7, "{}", at(0, 0.83));
        // What the indifference zone does, and why it is only used when named.
        assert!((at(2, 0.87) - 0.109085).abs() < 5e-7, "{}", at(2, 0.87));
        assert!((at(2, 0.83) - 0.580577).abs() < 5e-7, "{}", at(2, 0.83));
    }

    #[test]
    fn the_default_gate_matches_an_independent_implementation() {
        // (t, α, cases, n_max, p, E[N] to the budget, E[N] curtailed, P(PASS), P(FAIL),
        // P(undecided)) from a separate Python dynamic program over (n, S), with the
        // boundaries written from the formulas and curtailment from the boundaries at every
        // later n (not only at n_max).
        type Row = (f64, f64, f64, u64, f64, f64, f64, f64, f64, f64);
        let rows: [Row; 11] = [
            (
                0.8, 0.05, 4.0, 200, 0.7, 142.1987, 139.4221, 0.001542, 0.624931, 0.373527,
            ),
            (
                0.8, 0.05, 4.0, 200, 0.8, 192.4103, 170.4403, 0.045160, 0.006345, 0.948495,
            ),
            (
                0.8, 0.05, 4.0, 200, 0.83, 180.5128, 157.5315, 0.154365, 0.001063, 0.844572,
            ),
            (
                0.8, 0.05, 4.0, 200, 0.87, 133.3198, 122.5143, 0.594263, 0.000118, 0.405619,
            ),
            (
                0.8, 0.05, 4.0, 200, 0.95, 34.6564, 34.6562, 0.999991, 0.000000, 0.000008,
            ),
            (
                0.9, 0.05, 1.0, 400, 0.8, 83.0149, 83.0088, 0.000148, 0.998363, 0.001489,
            ),
            (
                0.9, 0.05, 1.0, 400, 0.9, 376.2361, 356.9263, 0.046411, 0.031437, 0.922152,
            ),
            (
                0.9, 0.05, 1.0, 400, 0.95, 175.7348, 173.3278, 0.912690, 0.000980, 0.086330,
            ),
            (
                0.6, 0.1, 10.0, 300, 0.5, 209.7716, 204.4975, 0.013224, 0.633556, 0.353220,
            ),
            (
                0.6, 0.1, 10.0, 300, 0.6, 276.4990, 234.1644, 0.080488, 0.004987, 0.914525,
            ),
            (
                0.6, 0.1, 10.0, 300, 0.67, 211.9081, 183.6690, 0.360924, 0.000124, 0.638952,
            ),
        ];
        for (t, alpha, cases, n_max, p, en, en_curtailed, pass, fail, undecided) in rows {
            let g = default_gate(t, alpha, cases);
            let full = operating_characteristics(&g, p, n_max).unwrap();
            let cut = curtailed_operating_characteristics(&g, p, n_max).unwrap();
            let what = format!("t={t} p={p}: {full:?} / {cut:?}");
            assert!((full.expected_n - en).abs() <= 5e-4, "E[N] {what}");
            assert!(
                (cut.expected_n - en_curtailed).abs() <= 5e-4,
                "curtailed {what}"
            );
            for oc in [full, cut] {
                assert!((oc.p_pass - pass).abs() <= 5e-7, "PASS {what}");
                assert!((oc.p_fail - fail).abs() <= 5e-7, "FAIL {what}");
                assert!(
                    (oc.p_truncated - undecided).abs() <= 5e-7,
                    "undecided {what}"
                );
            }
        }
    }

    #[test]
    fn the_pass_side_spends_at_most_0_70_of_the_fixed_design_at_t_plus_0_07() {
        // The figure docs/concepts/statistics.md keeps: 4 cases, t = 0.8, α = 0.05, at most 200
        // trials. The fixed-n gate with the same α and power 1 − β/m at p₁ = 0.9 needs 187.
        let fixed = gate_sample_size(0.8, 0.9, 0.95, 1.0 - 0.0125, 100_000)
            .unwrap()
            .first;
        assert_eq!(fixed, 187);
        for (name, gate) in &designs(0.8, 0.05, 4.0)[..2] {
            let oc = curtailed_operating_characteristics(gate, 0.87, 200).unwrap();
            let ratio = oc.expected_n / fixed as f64;
            assert!(
                ratio <= 0.70,
                "{name}: {} trials, {ratio:.3}",
                oc.expected_n
            );
        }
    }

    #[test]
    fn curtailment_changes_no_verdict_only_the_trials_spent() {
        for (t, cases) in [(0.8, 4.0), (0.9, 1.0), (0.6, 10.0)] {
            for (name, gate) in designs(t, 0.05, cases) {
                for p in [t - 0.1, t, t + (1.0 - t) / 3.0, t + (1.0 - t) * 0.75] {
                    for n_max in [40, 200] {
                        let full = operating_characteristics(&gate, p, n_max).unwrap();
                        let cut = curtailed_operating_characteristics(&gate, p, n_max).unwrap();
                        let what = format!("{name} t={t} p={p} n_max={n_max}");
                        assert!((full.p_pass - cut.p_pass).abs() < 1e-12, "{what}");
                        assert!((full.p_fail - cut.p_fail).abs() < 1e-12, "{what}");
                        assert!(cut.expected_n <= full.expected_n + 1e-9, "{what}");
                    }
                }
            }
        }
    }

    #[test]
    fn boundaries_never_retreat_as_trials_accumulate() {
        // What `can_decide_by` relies on: the failures a PASS allows, and the passes a FAIL
        // allows, never fall as n grows; once defined, a boundary stays defined.
        for (t, cases) in [(0.8, 4.0), (0.9, 1.0), (0.6, 10.0), (0.95, 60.0)] {
            for (name, gate) in designs(t, 0.05, cases) {
                let (mut allowed_failures, mut allowed_passes) = (None, None);
                for n in 1..=2000u64 {
                    let pass = gate.pass_boundary(n).map(|b| n - b);
                    let fail = gate.fail_boundary(n);
                    assert!(pass >= allowed_failures, "{name} t={t} n={n}");
                    assert!(fail >= allowed_passes, "{name} t={t} n={n}");
                    (allowed_failures, allowed_passes) = (pass, fail);
                }
            }
        }
    }

    #[test]
    fn reachability_agrees_with_looking_at_every_later_trial() {
        for (name, gate) in designs(0.8, 0.05, 4.0) {
            let cap = 60;
            for n in 0..cap {
                for s in 0..=n {
                    if gate.decide(s, n) != Some(SequentialDecision::Continue) {
                        continue;
                    }
                    let by_search = (n + 1..=cap).any(|m| {
                        gate.pass_boundary(m).is_some_and(|b| s + (m - n) >= b)
                            || gate.fail_boundary(m).is_some_and(|b| s <= b)
                    });
                    assert_eq!(gate.can_decide_by(s, n, cap), by_search, "{name} {s}/{n}");
                }
            }
        }
    }

    #[test]
    fn the_printed_bounds_agree_with_every_decision() {
        // PASS exactly when the lower bound reaches t, FAIL exactly when the upper bound is
        // below t (below p₁ under --fail-below, whose upper bound never falls to t).
        for (t, cases) in [(0.8, 4.0), (0.9, 1.0), (0.6, 10.0)] {
            let p1 = t + (1.0 - t) / 2.0;
            for (name, gate) in designs(t, 0.05, cases) {
                for n in 1..=150u64 {
                    for s in 0..=n {
                        let d = gate.decide(s, n).unwrap();
                        let lower = gate.lower_bound(s, n).unwrap();
                        let upper = gate.upper_bound(s, n).unwrap();
                        let what = format!("{name} t={t} {s}/{n}: {d:?} [{lower}, {upper}]");
                        assert!(lower <= upper, "{what}");
                        assert_eq!(d == SequentialDecision::Pass, lower >= t, "{what}");
                        match gate.fail_below() {
                            None => {
                                assert_eq!(d == SequentialDecision::Fail, upper < t, "{what}")
                            }
                            Some(rate) => {
                                assert_eq!(rate, p1);
                                assert_eq!(d == SequentialDecision::Fail, upper <= rate, "{what}");
                                assert!(upper > t, "{what}");
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(default_gate(0.8, 0.05, 4.0).lower_bound(3, 2), None);
    }

    #[test]
    fn undefined_designs_give_none() {
        let new =
            |kind, p1, fail_below| SequentialTest::new(kind, 0.8, p1, fail_below, 0.05, 0.0125);
        assert!(new(SequentialKind::Mixture, 0.9, None).is_some());
        assert!(new(SequentialKind::Sprt, 0.7, None).is_none());
        assert!(new(SequentialKind::Mixture, 0.9, Some(0.8)).is_none());
        assert!(new(SequentialKind::Mixture, 0.9, Some(1.0)).is_none());
        assert!(new(SequentialKind::Betting, 0.9, None).is_none());
    }
}
