//! The sequential comparison of two arms paired by case: an anytime-valid confidence sequence
//! for the mean difference of their rates over a fixed set of cases, by betting (Waudby-Smith
//! & Ramdas, "Estimating means of bounded random variables by betting", JRSS-B 2024).
//!
//! A *round* is one trial of every case under both arms. Each case gives a pair difference
//! D = B − A ∈ {−1, 0, +1}, whose mean over the round's cases is Δ, the suite's mean difference
//! (this suite's cases, not a population of cases). To test "Δ ≤ μ", bet a fraction of the
//! stake on every pair: the stake is multiplied by `1 + λ(D − μ)`, with `λ = f/(1 + μ)` so it
//! never goes negative. Within a round the cases differ, but since `1 + x ≤ eˣ` the round's
//! expected factor is `Π_c (1 + λ(Δ_c − μ)) ≤ exp(λ·m·(Δ − μ)) ≤ 1` when Δ ≤ μ: at round
//! boundaries the stake is a test supermartingale, and Ville's inequality bounds the chance it
//! ever reaches 2/α by α/2. The test is looked at only at complete rounds, which the runner's
//! trial-major order makes the natural points.
//!
//! The stake mixes four fixed fractions f (1/16, 1/8, 1/4, 1/2, equal weights), so it needs
//! no guess of the difference, and it depends only on the counts of +1, 0 and −1 pairs,
//! never on their order. (In simulation these four reach a verdict at B − A = −0.10 in 9%
//! fewer rounds than six fractions from 1/32 to 3/4: differences worth acting on bet best
//! between 1/8 and 1/2.)
//!
//! The confidence sequence is every μ that neither side rejects at 2/α; B is *better* when it
//! lies above 0, *worse* when below 0, and *within ±δ* when it lies inside (−δ, δ). All three
//! claims are true at once with probability at least 1 − α, at every stopping time.

use serde::{Deserialize, Serialize};

/// The betting fractions the stake mixes, equally weighted.
const FRACTIONS: [f64; 4] = [1.0 / 16.0, 1.0 / 8.0, 1.0 / 4.0, 1.0 / 2.0];

/// How the pairs of complete rounds came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PairCounts {
    /// B passed and A failed (D = +1).
    pub b_only: u64,
    /// A passed and B failed (D = −1).
    pub a_only: u64,
    /// Both passed or both failed (D = 0).
    pub same: u64,
}

impl PairCounts {
    pub fn pairs(&self) -> u64 {
        self.b_only + self.a_only + self.same
    }

    /// The mean difference B − A over the pairs (0 with none).
    pub fn mean_difference(&self) -> f64 {
        match self.pairs() {
            0 => 0.0,
            n => (self.b_only as f64 - self.a_only as f64) / n as f64,
        }
    }

    /// Adds one pair's outcome.
    pub fn add(&mut self, a_passed: bool, b_passed: bool) {
        match (a_passed, b_passed) {
            (false, true) => self.b_only += 1,
            (true, false) => self.a_only += 1,
            _ => self.same += 1,
        }
    }
}

/// What the comparison says after some complete rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PairedDecision {
    /// The confidence sequence lies above 0.
    Better,
    /// It lies below 0.
    Worse,
    /// It lies inside (−δ, δ): no difference as large as δ either way.
    Within,
    /// Its upper end lies below δ: B is not better by δ (a futility stop: the difference may
    /// be anything under δ).
    NotBetter,
    /// None of these yet.
    Continue,
}

/// The betting confidence sequence for a paired mean difference at level 1 − α.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PairedBetting {
    alpha: f64,
}

impl PairedBetting {
    /// `None` unless `alpha` is strictly inside (0, 1).
    pub fn new(alpha: f64) -> Option<Self> {
        (alpha > 0.0 && alpha < 1.0).then_some(PairedBetting { alpha })
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// `ln` of the evidence against "Δ ≤ μ" (the stake bet on differences above μ).
    pub(crate) fn log_evidence_above(&self, c: PairCounts, mu: f64) -> f64 {
        mixed(|f| {
            let l = f / (1.0 + mu);
            weighted(c, 1.0 + l * (1.0 - mu), 1.0 - l * mu, 1.0 - l * (1.0 + mu))
        })
    }

    /// `ln` of the evidence against "Δ ≥ μ" (the stake bet on differences below μ).
    pub(crate) fn log_evidence_below(&self, c: PairCounts, mu: f64) -> f64 {
        mixed(|f| {
            let l = f / (1.0 - mu);
            weighted(c, 1.0 - l * (1.0 - mu), 1.0 + l * mu, 1.0 + l * (1.0 + mu))
        })
    }

    fn bar(&self) -> f64 {
        (2.0 / self.alpha).ln()
    }

    /// The decision after the pairs `c` for a smallest difference worth acting on `min_effect`.
    pub fn decide(&self, c: PairCounts, min_effect: f64) -> PairedDecision {
        let bar = self.bar();
        if self.log_evidence_above(c, 0.0) >= bar {
            PairedDecision::Better
        } else if self.log_evidence_below(c, 0.0) >= bar {
            PairedDecision::Worse
        } else if self.log_evidence_below(c, min_effect) >= bar
            && self.log_evidence_above(c, -min_effect) >= bar
        {
            PairedDecision::Within
        } else {
            PairedDecision::Continue
        }
    }

    /// [`Self::decide`] for every `b_only` in `lo..=hi` at once, with `pairs` pairs of which
    /// `a_only` are −1 (`lo ≤ hi ≤ pairs − a_only`), for `min_effect` in (−1, 1): the four
    /// tests `decide` makes, each found where it turns along the row by bisection, so a row
    /// costs a few dozen evaluations of the evidence however wide it is.
    ///
    /// Why each test turns once. Along the row a step of `b_only` turns a 0 pair into a +1
    /// pair, which multiplies every stake betting above μ by `(1 + λ(1 − μ))/(1 − λμ) > 1` and
    /// every stake betting below μ by `(1 − λ(1 − μ))/(1 + λμ) < 1` (λ > 0 for |μ| < 1). So
    /// each mixed evidence is strictly monotone along the row: above 0 and above −δ rise,
    /// below 0 and below δ fall. In `f64` the same holds: for the four tests the factor is at
    /// least `1 + f` (or at most `1 − f`), so a step moves the log of the evidence by at least
    /// ln(1 + 1/16) ≈ 0.06, far beyond the rounding of a sum of three terms `n · ln(factor)`
    /// (about 10⁻¹⁰ at a million pairs). `row_decisions_are_decide_on_a_grid` checks every
    /// state of a grid against `decide`.
    pub(crate) fn decide_row(
        &self,
        pairs: u64,
        a_only: u64,
        lo: u64,
        hi: u64,
        min_effect: f64,
    ) -> RowDecisions {
        let bar = self.bar();
        let at = |b_only: u64| PairCounts {
            b_only,
            a_only,
            same: pairs - a_only - b_only,
        };
        // The first b_only in lo..=hi where a rising test holds (hi + 1 when none does).
        let first = |holds: &dyn Fn(u64) -> bool| {
            let (mut l, mut h) = (lo, hi + 1);
            while l < h {
                let mid = l + (h - l) / 2;
                if holds(mid) {
                    h = mid;
                } else {
                    l = mid + 1;
                }
            }
            l
        };
        RowDecisions {
            better_from: first(&|u| self.log_evidence_above(at(u), 0.0) >= bar),
            worse_to: first(&|u| self.log_evidence_below(at(u), 0.0) < bar),
            within_from: first(&|u| self.log_evidence_above(at(u), -min_effect) >= bar),
            within_to: first(&|u| self.log_evidence_below(at(u), min_effect) < bar),
        }
    }

    /// The pairs it takes to decide [`PairedDecision::Within`] at `min_effect` when the arms
    /// do not differ and a share `disagreement` of pairs disagree, half each way: the count at
    /// which pairs in exactly those proportions first decide it. With `disagreement` 0 (every
    /// pair agrees, the evidence most in its favour) it is a floor: fewer pairs can never rule
    /// out a difference of `min_effect`, however they come out. `None` when not even 10⁸
    /// would (a `min_effect` too small to rule out).
    pub fn pairs_to_rule_out(&self, min_effect: f64, disagreement: f64) -> Option<u64> {
        let within = |n: u64| {
            let each_way = (n as f64 * disagreement.clamp(0.0, 1.0) / 2.0).round() as u64;
            let c = PairCounts {
                b_only: each_way,
                a_only: each_way,
                same: n.saturating_sub(2 * each_way),
            };
            self.decide(c, min_effect) == PairedDecision::Within
        };
        let mut hi = 1u64;
        while !within(hi) {
            hi = hi.checked_mul(2).filter(|&h| h <= 100_000_000)?;
        }
        let mut lo = hi / 2;
        // within(lo) is false (or lo = 0), within(hi) true: the evidence grows with n.
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if within(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Some(hi)
    }

    /// For a race of candidates: `Better` when the sequence lies above 0, `Worse` when below
    /// 0, `NotBetter` when its upper end is below `min_effect`, on the same two-sided sequence
    /// as [`Self::decide`].
    pub fn decide_improvement(&self, c: PairCounts, min_effect: f64) -> PairedDecision {
        let bar = self.bar();
        if self.log_evidence_above(c, 0.0) >= bar {
            PairedDecision::Better
        } else if self.log_evidence_below(c, 0.0) >= bar {
            PairedDecision::Worse
        } else if self.log_evidence_below(c, min_effect) >= bar {
            PairedDecision::NotBetter
        } else {
            PairedDecision::Continue
        }
    }

    /// One side at a time at 1/α, for a gate against `mu`: `Better` when "Δ ≤ μ" is rejected,
    /// `Worse` when "Δ ≥ μ" is, else `Continue`. Each claim is wrong with probability at most α.
    pub fn decide_one_sided(&self, c: PairCounts, mu: f64) -> PairedDecision {
        let bar = (1.0 / self.alpha).ln();
        if self.log_evidence_above(c, mu) >= bar {
            PairedDecision::Better
        } else if self.log_evidence_below(c, mu) >= bar {
            PairedDecision::Worse
        } else {
            PairedDecision::Continue
        }
    }

    /// Each side's bound at one-sided level 1 − α (bar 1/α), for a gate that judges one side
    /// at a time: the least μ "Δ ≤ μ" is not rejected at, and the greatest "Δ ≥ μ" is not.
    pub fn one_sided_bounds(&self, c: PairCounts) -> (f64, f64) {
        self.bounds_at(c, (1.0 / self.alpha).ln())
    }

    /// The confidence sequence at the pairs `c`: every μ in (−1, 1) that neither side
    /// rejects, to within 1e-6. The evidence above μ falls as μ grows and the evidence below
    /// rises, so each end is found by bisection (inside the open range: at μ = ±1 a stake's
    /// fraction would be infinite).
    pub fn interval(&self, c: PairCounts) -> (f64, f64) {
        self.bounds_at(c, self.bar())
    }

    fn bounds_at(&self, c: PairCounts, bar: f64) -> (f64, f64) {
        let (lo, hi) = (-1.0 + 1e-9, 1.0 - 1e-9);
        let lower = bisect(|mu| self.log_evidence_above(c, mu) >= bar, lo, hi);
        let upper = bisect(|mu| self.log_evidence_below(c, mu) < bar, lo, hi);
        (lower, upper)
    }
}

/// Where each of [`PairedBetting::decide`]'s tests holds along one row of counts (fixed pairs
/// and `a_only`, `b_only` varying), from [`PairedBetting::decide_row`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RowDecisions {
    /// "Better" (the sequence above 0) holds from here on.
    better_from: u64,
    /// "Worse" (below 0) holds before here.
    worse_to: u64,
    /// "Within" (inside (−δ, δ)) holds from `within_from` to before `within_to`.
    within_from: u64,
    within_to: u64,
}

impl RowDecisions {
    /// What `decide` says at `b_only`, its tests taken in its order.
    pub(crate) fn at(&self, b_only: u64) -> PairedDecision {
        if b_only >= self.better_from {
            PairedDecision::Better
        } else if b_only < self.worse_to {
            PairedDecision::Worse
        } else if (self.within_from..self.within_to).contains(&b_only) {
            PairedDecision::Within
        } else {
            PairedDecision::Continue
        }
    }
}

/// `ln Σ_k w_k · stake_k` over the fractions, with `stake(f)` giving `ln` of one stake.
fn mixed(stake: impl Fn(f64) -> f64) -> f64 {
    let logs = FRACTIONS.map(|f| stake(f) - (FRACTIONS.len() as f64).ln());
    let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if top == f64::NEG_INFINITY {
        return top;
    }
    top + logs.iter().map(|l| (l - top).exp()).sum::<f64>().ln()
}

/// `ln` of the stake after the pairs `c` with per-pair factors for D = +1, 0, −1.
fn weighted(c: PairCounts, up: f64, zero: f64, down: f64) -> f64 {
    let term = |n: u64, factor: f64| if n == 0 { 0.0 } else { n as f64 * factor.ln() };
    term(c.b_only, up) + term(c.same, zero) + term(c.a_only, down)
}

/// The point in [lo, hi] where `rejected` turns from true to false (`rejected` true at the
/// low end of the range, false at the high end), to within 1e-6; `lo` when it is false
/// throughout, `hi` when true throughout.
fn bisect(rejected: impl Fn(f64) -> bool, mut lo: f64, mut hi: f64) -> f64 {
    if !rejected(lo) {
        return lo;
    }
    if rejected(hi) {
        return hi;
    }
    while hi - lo > 1e-6 {
        let mid = (lo + hi) / 2.0;
        if rejected(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::uniforms;

    fn counts(b_only: u64, a_only: u64, same: u64) -> PairCounts {
        PairCounts {
            b_only,
            a_only,
            same,
        }
    }

    /// The stake summed directly, pair by pair in any order, without logs.
    fn direct(c: PairCounts, mu: f64, above: bool) -> f64 {
        FRACTIONS
            .iter()
            .map(|&f| {
                let factor = |d: f64| {
                    if above {
                        1.0 + f / (1.0 + mu) * (d - mu)
                    } else {
                        1.0 - f / (1.0 - mu) * (d - mu)
                    }
                };
                factor(1.0).powi(c.b_only as i32)
                    * factor(0.0).powi(c.same as i32)
                    * factor(-1.0).powi(c.a_only as i32)
                    / FRACTIONS.len() as f64
            })
            .sum()
    }

    #[test]
    fn evidence_is_the_mixed_stake() {
        let g = PairedBetting::new(0.05).unwrap();
        for c in [
            counts(0, 0, 0),
            counts(7, 2, 30),
            counts(1, 9, 4),
            counts(40, 0, 0),
        ] {
            for mu in [-0.5, -0.05, 0.0, 0.05, 0.3] {
                let above = g.log_evidence_above(c, mu).exp();
                let below = g.log_evidence_below(c, mu).exp();
                assert!(
                    (above / direct(c, mu, true) - 1.0).abs() < 1e-9,
                    "{c:?} {mu}"
                );
                assert!(
                    (below / direct(c, mu, false) - 1.0).abs() < 1e-9,
                    "{c:?} {mu}"
                );
            }
        }
        // No pairs: the stake is still 1.
        assert!(g.log_evidence_above(counts(0, 0, 0), 0.0).abs() < 1e-12);
    }

    #[test]
    fn decisions_and_the_interval_agree() {
        let g = PairedBetting::new(0.05).unwrap();
        // 40 pairs where B alone passed and 4 where A alone did, of 200.
        let better = counts(40, 4, 156);
        assert_eq!(g.decide(better, 0.05), PairedDecision::Better);
        let (lo, hi) = g.interval(better);
        assert!(lo > 0.0 && hi > lo && hi < 1.0, "{lo} {hi}");
        let mirrored = counts(4, 40, 156);
        assert_eq!(g.decide(mirrored, 0.05), PairedDecision::Worse);
        let (mlo, mhi) = g.interval(mirrored);
        assert!(
            (mlo + hi).abs() < 1e-5 && (mhi + lo).abs() < 1e-5,
            "symmetric"
        );
        // Balanced and plenty: within ±0.05.
        let same = counts(20, 20, 3000);
        assert_eq!(g.decide(same, 0.05), PairedDecision::Within);
        let (lo, hi) = g.interval(same);
        assert!(lo > -0.05 && hi < 0.05 && lo < 0.0 && hi > 0.0, "{lo} {hi}");
        // Too few to say anything.
        let few = counts(3, 1, 6);
        assert_eq!(g.decide(few, 0.05), PairedDecision::Continue);
        let (lo, hi) = g.interval(few);
        assert!(lo < 0.0 && hi > 0.0);
        assert_eq!(PairedBetting::new(0.0), None);
        assert_eq!(PairedBetting::new(f64::NAN), None);
    }

    /// Rounds of `m` cases with per-case rates `rates_a`, `rates_b` until a decision or
    /// `cap` rounds: how often each decision came and the mean rounds used.
    fn simulate(rates: &[(f64, f64)], cap: u32, reps: u32, seed: u64) -> ([u32; 4], f64) {
        let g = PairedBetting::new(0.05).unwrap();
        let mut u = uniforms(seed);
        let mut tally = [0u32; 4];
        let mut rounds_used = 0.0;
        for _ in 0..reps {
            let mut c = PairCounts::default();
            let mut decision = PairedDecision::Continue;
            let mut r = 0;
            while r < cap && decision == PairedDecision::Continue {
                for &(pa, pb) in rates {
                    c.add(u() < pa, u() < pb);
                }
                r += 1;
                decision = g.decide(c, 0.05);
            }
            rounds_used += f64::from(r);
            tally[match decision {
                PairedDecision::Better => 0,
                PairedDecision::Worse => 1,
                PairedDecision::Within => 2,
                PairedDecision::NotBetter | PairedDecision::Continue => 3,
            }] += 1;
        }
        (tally, rounds_used / f64::from(reps))
    }

    #[test]
    fn no_false_difference_when_the_arms_are_equal_on_average() {
        // Cases that differ in opposite directions with mean difference exactly 0: the
        // within-round bound has to hold, not only the iid one.
        let rates = [(0.9, 0.6), (0.6, 0.9), (0.5, 0.5), (0.2, 0.2)];
        let reps = 2000;
        let ([better, worse, _, _], _) = simulate(&rates, 100, reps, 7);
        let false_rate = f64::from(better + worse) / f64::from(reps);
        // α = 0.05, and the Monte Carlo se at 2,000 replications is 0.005.
        assert!(
            false_rate <= 0.05 + 2.0 * 0.005,
            "false difference {false_rate}"
        );
    }

    #[test]
    fn a_real_difference_is_found_and_named() {
        // B is 0.10 worse on every one of 10 cases.
        let rates = [(0.8, 0.7); 10];
        let ([better, worse, within, _], rounds) = simulate(&rates, 100, 300, 8);
        assert_eq!((better, within), (0, 0));
        assert!(worse >= 290, "{worse}");
        assert!(rounds < 60.0, "{rounds}");
    }

    #[test]
    fn row_decisions_are_decide_on_a_grid() {
        // Every state of these pair counts, at two levels and two effects, whole rows and
        // stretches of them: decide_row's bisections say what decide says.
        for alpha in [0.05, 0.2] {
            let g = PairedBetting::new(alpha).unwrap();
            for min_effect in [0.05, 0.3] {
                for pairs in [0, 1, 7, 40, 130, 400] {
                    for a_only in 0..=pairs {
                        let end = pairs - a_only;
                        for (lo, hi) in [(0, end), (end / 3, end / 2), (end / 2, end)] {
                            let row = g.decide_row(pairs, a_only, lo, hi, min_effect);
                            for b_only in lo..=hi {
                                let c = counts(b_only, a_only, pairs - a_only - b_only);
                                assert_eq!(
                                    row.at(b_only),
                                    g.decide(c, min_effect),
                                    "{c:?} alpha {alpha} effect {min_effect} row {lo}..={hi}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn fewer_agreeing_pairs_than_the_floor_never_rule_out_the_effect() {
        let b = PairedBetting::new(0.05).unwrap();
        let floor = b.pairs_to_rule_out(0.05, 0.0).unwrap();
        let at = |n| PairCounts {
            same: n,
            ..PairCounts::default()
        };
        assert_eq!(b.decide(at(floor), 0.05), PairedDecision::Within);
        assert_eq!(b.decide(at(floor - 1), 0.05), PairedDecision::Continue);
        // Disagreeing pairs only take evidence from one side or the other: at the floor's
        // count minus one, no split of the pairs rules the effect out either.
        let n = floor - 1;
        for b_only in 0..=n.min(40) {
            for a_only in 0..=(n - b_only).min(40) {
                let c = PairCounts {
                    b_only,
                    a_only,
                    same: n - b_only - a_only,
                };
                assert_ne!(b.decide(c, 0.05), PairedDecision::Within, "{c:?}");
            }
        }
        // A smaller effect needs more pairs, and so do disagreeing ones; an effect too small
        // for 10⁸ pairs is said so.
        assert!(b.pairs_to_rule_out(0.02, 0.0).unwrap() > floor);
        let noisy = b.pairs_to_rule_out(0.05, 0.3).unwrap();
        assert!(noisy > 2 * floor, "{noisy} {floor}");
        assert_eq!(b.pairs_to_rule_out(1e-9, 0.0), None);
    }

    /// statistics.md's figure for the comparison at equal rates (A = B = 0.8, so a pair
    /// disagrees with chance 2 · 0.8 · 0.2 = 0.32): 1,000 pairs cannot yet rule out a difference
    /// of 0.05, and 1,264 pairs in those proportions do.
    #[test]
    fn the_statistics_pages_pairs_to_rule_out_at_equal_rates() {
        let b = PairedBetting::new(0.05).unwrap();
        assert_eq!(b.pairs_to_rule_out(0.05, 2.0 * 0.8 * 0.2), Some(1_264));
    }
}
