//! Wald's one-sided SPRT with Ville's thresholds (stats.md §6.2): the PASS side of the
//! sequential gate for a user who knows the rate a case should pass at (`--sprt-p1`), and the
//! indifference-zone FAIL side `--fail-below P` asks for by name.
//!
//! It keeps `P(PASS | p ≤ t) ≤ α` and `P(FAIL | p ≥ p₁) ≤ β` under any monitoring schedule,
//! and at t = 0.90, p₁ = 0.95, α = β = 0.05 decides in 95.5 trials on average at p = 0.97
//! against 284 for the fixed-n design with the same guarantees (§6.3). Its FAIL means "below
//! p₁", not "below t": between t and p₁ it fails cases that clear the bar (58% of the time at
//! 0.83 against t = 0.8, p₁ = 0.9), so the case gates FAIL with [`super::BelowMixture`] unless
//! `--fail-below` names p₁.

use serde::{Deserialize, Serialize};

use super::Boundaries;
use super::below::bisect;

/// One-sided SPRT gate for a pass rate (stats.md §6.2): H₀ `p ≤ t` (must not pass) against
/// H₁ `p ≥ p₁` (should pass), with Ville's thresholds `ln(1/α)` and `ln β` on the
/// log-likelihood ratio `Λ_n = S·ln(p₁/t) + (n−S)·ln((1−p₁)/(1−t))`.
///
/// Decisions are made on the integer forms of the boundaries ([`Self::pass_boundary`],
/// [`Self::fail_boundary`]), so they depend only on the counts (S, n), never on the order
/// trials arrived in or on a running floating-point sum, and anyone can recompute them from
/// the printed line `S ≥ slope·n + intercept`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SprtGate {
    threshold: f64,
    p1: f64,
    alpha: f64,
    beta: f64,
    /// `ln(p₁/t) > 0`: the evidence one pass adds.
    a: f64,
    /// `ln((1−p₁)/(1−t)) < 0`: the evidence one failure adds.
    b: f64,
}

impl SprtGate {
    /// A gate for threshold `t` with design alternative `p1` (the rate that should pass with
    /// probability ≥ 1 − β; nothing is promised for rates in the indifference zone (t, p₁)),
    /// false-pass bound `alpha` and false-fail bound `beta`.
    ///
    /// `None` unless `0 < t < p1 < 1` and `alpha`, `beta` are strictly inside (0, 1).
    pub fn new(t: f64, p1: f64, alpha: f64, beta: f64) -> Option<Self> {
        let open = |v: f64| v > 0.0 && v < 1.0;
        if !(open(t) && open(p1) && t < p1 && open(alpha) && open(beta)) {
            return None;
        }
        let a = (p1 / t).ln();
        let b = ((1.0 - p1) / (1.0 - t)).ln();
        (a > 0.0 && b < 0.0 && a.is_finite() && b.is_finite()).then_some(SprtGate {
            threshold: t,
            p1,
            alpha,
            beta,
            a,
            b,
        })
    }

    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    pub fn p1(&self) -> f64 {
        self.p1
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// `a − b`, the per-trial spread of the evidence; positive by construction.
    fn spread(&self) -> f64 {
        self.a - self.b
    }

    /// Slope of both boundary lines, `p* = −b/(a−b)`: the rate at which the test drifts
    /// neither way (0.92764 for t = 0.90, p₁ = 0.95), where it takes longest.
    pub fn slope(&self) -> f64 {
        -self.b / self.spread()
    }

    /// Intercept of the PASS line, `ln(1/α)/(a−b)`: PASS iff `S ≥ slope·n + intercept`
    /// (4.00920 for t = 0.90, p₁ = 0.95, α = 0.05).
    pub fn intercept(&self) -> f64 {
        -self.alpha.ln() / self.spread()
    }

    /// `ln` of the PASS evidence with the bar moved to `q < p₁`: the likelihood ratio of p₁
    /// against q, `S·ln(p₁/q) + (n−S)·ln((1−p₁)/(1−q))`.
    fn log_pass_evidence_at(&self, q: f64, successes: u64, n: u64) -> f64 {
        let (s, f) = (successes as f64, n.saturating_sub(successes) as f64);
        s * (self.p1 / q).ln() + f * ((1.0 - self.p1) / (1.0 - q)).ln()
    }

    /// `ln` of the FAIL evidence with the rate moved to `q > t`: the likelihood ratio of t
    /// against q, which tests `p ≥ q`.
    fn log_fail_evidence_at(&self, q: f64, successes: u64, n: u64) -> f64 {
        let (s, f) = (successes as f64, n.saturating_sub(successes) as f64);
        s * (self.threshold / q).ln() + f * ((1.0 - self.threshold) / (1.0 - q)).ln()
    }

    /// The anytime-valid lower confidence bound (level 1 − α) of the PASS side after
    /// `successes` of `n`: the greatest q below p₁ that the likelihood ratio of p₁ against q
    /// rules out (each q its own test of `p ≤ q`), 0 when none is. The ruled-out rates are an
    /// interval from 0 (the ratio falls in q below S/n and stays under 1 between S/n and p₁),
    /// and the bound is at or above t exactly when the gate PASSes (`passes_at_bar`, the
    /// decision on the integer boundary).
    pub fn lower_bound(&self, successes: u64, n: u64, passes_at_bar: bool) -> f64 {
        let t = self.threshold;
        let (kept, ruled_out) = if passes_at_bar {
            (self.p1, t)
        } else {
            (t, 0.0)
        };
        bisect(kept, ruled_out, |q| {
            q > 0.0 && self.log_pass_evidence_at(q, successes, n) >= -self.alpha.ln()
        })
    }

    /// The anytime-valid upper confidence bound (level 1 − β) of the FAIL side after
    /// `successes` of `n`: the least q above t that the likelihood ratio of t against q rules
    /// out (each q its own test of `p ≥ q`), 1 when none is. The ruled-out rates are an
    /// interval up to 1 (the ratio stays under 1 between t and S/n and grows in q above it);
    /// the bound is at or below p₁ exactly when the SPRT FAILs (`fails_at_p1`), and it is
    /// always above t: this FAIL never rules out the bar itself.
    pub fn upper_bound(&self, successes: u64, n: u64, fails_at_p1: bool) -> f64 {
        let floor = self.threshold.max(successes as f64 / n.max(1) as f64);
        let (kept, ruled_out) = if fails_at_p1 {
            (floor.min(self.p1), self.p1)
        } else {
            (self.p1, 1.0)
        };
        bisect(kept, ruled_out, |q| {
            q < 1.0 && self.log_fail_evidence_at(q, successes, n) >= -self.beta.ln()
        })
    }

    #[cfg(test)]
    /// Intercept of the FAIL line, `ln β/(a−b)` (negative): FAIL iff
    /// `S ≤ slope·n + fail_intercept`.
    fn fail_intercept(&self) -> f64 {
        self.beta.ln() / self.spread()
    }
}

impl Boundaries for SprtGate {
    /// The fewest passes that make the gate PASS after `n` trials,
    /// `⌈(ln(1/α) − n·b)/(a − b)⌉` (stats.md §6.2); `None` when that exceeds n, i.e. no
    /// run of n trials can pass yet (for t = 0.90, p₁ = 0.95, α = 0.05: every n < 56).
    fn pass_boundary(&self, n: u64) -> Option<u64> {
        let v = ((-self.alpha.ln() - n as f64 * self.b) / self.spread()).ceil();
        (v.is_finite() && v <= n as f64).then_some(v.max(0.0) as u64)
    }

    /// The most passes with which the gate FAILs after `n` trials,
    /// `⌊(ln β − n·b)/(a − b)⌋` (stats.md §6.2); `None` when that is negative, i.e. not
    /// even 0 of n fails yet (for β = 0.05 above: every n < 5).
    fn fail_boundary(&self, n: u64) -> Option<u64> {
        let v = ((self.beta.ln() - n as f64 * self.b) / self.spread()).floor();
        (v.is_finite() && v >= 0.0).then(|| v.min(n as f64) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::super::SequentialDecision;
    use super::*;
    use crate::test_support::close;

    fn reference_gate() -> SprtGate {
        SprtGate::new(0.90, 0.95, 0.05, 0.05).expect("valid")
    }

    #[test]
    fn coefficients_match_section_6_2() {
        let g = reference_gate();
        close(g.a, 0.0540672, 5e-8, "a");
        // ln((1 − 0.95)/(1 − 0.90)) = ln ½ (up to the rounding of 1 − 0.95): the table's
        // −0.6931472.
        close(g.b, -std::f64::consts::LN_2, 1e-12, "b");
        close(g.spread(), 0.7472144, 5e-8, "a - b");
        close(g.slope(), 0.9276416, 5e-8, "slope");
        close(g.intercept(), 4.0092004, 5e-8, "pass intercept");
        close(g.fail_intercept(), -4.0092004, 5e-8, "fail intercept");
        // What a report prints.
        let line = format!("S ≥ {:.5}·n + {:.5}", g.slope(), g.intercept());
        assert_eq!(line, "S ≥ 0.92764·n + 4.00920");
    }

    #[test]
    fn boundaries_match_the_table_of_section_6_2() {
        let g = reference_gate();
        // (n, PASS if S ≥, FAIL if S ≤)
        let table: [(u64, Option<u64>, Option<u64>); 13] = [
            (10, None, Some(5)),
            (20, None, Some(14)),
            (30, None, Some(23)),
            (40, None, Some(33)),
            (50, None, Some(42)),
            (60, Some(60), Some(51)),
            (80, Some(79), Some(70)),
            (100, Some(97), Some(88)),
            (150, Some(144), Some(135)),
            (200, Some(190), Some(181)),
            (300, Some(283), Some(274)),
            (500, Some(468), Some(459)),
            (1000, Some(932), Some(923)),
        ];
        for (n, pass, fail) in table {
            assert_eq!(g.pass_boundary(n), pass, "pass at {n}");
            assert_eq!(g.fail_boundary(n), fail, "fail at {n}");
        }
        // Earliest possible PASS: 56/56; earliest possible FAIL: 0/5.
        let first_pass = (0..200).find(|&n| g.pass_boundary(n).is_some());
        assert_eq!(first_pass, Some(56));
        assert_eq!(g.pass_boundary(56), Some(56));
        let first_fail = (0..200).find(|&n| g.fail_boundary(n).is_some());
        assert_eq!(first_fail, Some(5));
        assert_eq!(g.fail_boundary(5), Some(0));
        assert_eq!(g.decide(56, 56), Some(SequentialDecision::Pass));
        assert_eq!(g.decide(55, 55), Some(SequentialDecision::Continue));
        assert_eq!(g.decide(0, 5), Some(SequentialDecision::Fail));
        assert_eq!(g.decide(0, 4), Some(SequentialDecision::Continue));
        assert_eq!(g.decide(0, 0), Some(SequentialDecision::Continue));
    }

    #[test]
    fn integer_boundaries_agree_with_the_log_likelihood_ratio() {
        let g = reference_gate();
        let (up, down) = ((1.0 / g.alpha).ln(), g.beta.ln());
        for n in 0..=400u64 {
            for s in 0..=n {
                let llr = s as f64 * g.a + (n - s) as f64 * g.b;
                // Stay away from ties, where the two routes may round differently.
                if (llr - up).abs() < 1e-9 || (llr - down).abs() < 1e-9 {
                    continue;
                }
                let want = if llr >= up {
                    SequentialDecision::Pass
                } else if llr <= down {
                    SequentialDecision::Fail
                } else {
                    SequentialDecision::Continue
                };
                assert_eq!(g.decide(s, n), Some(want), "{s}/{n}");
            }
        }
    }

    #[test]
    fn undefined_gates_and_counts_give_none() {
        for (t, p1, alpha, beta) in [
            (0.9, 0.9, 0.05, 0.05),
            (0.95, 0.9, 0.05, 0.05),
            (0.0, 0.9, 0.05, 0.05),
            (0.9, 1.0, 0.05, 0.05),
            (0.9, 0.95, 0.0, 0.05),
            (0.9, 0.95, 1.0, 0.05),
            (0.9, 0.95, 0.05, 0.0),
            (0.9, 0.95, 0.05, 1.0),
            (f64::NAN, 0.95, 0.05, 0.05),
            (0.9, f64::NAN, 0.05, 0.05),
            (0.9, 0.95, f64::NAN, 0.05),
            (0.9, 0.95, 0.05, f64::NAN),
        ] {
            assert_eq!(
                SprtGate::new(t, p1, alpha, beta),
                None,
                "{t} {p1} {alpha} {beta}"
            );
        }
        assert_eq!(reference_gate().decide(6, 5), None);
        // Boundaries stay defined (and ordered) for enormous n.
        let g = reference_gate();
        let n = 1u64 << 40;
        let (pass, fail) = (g.pass_boundary(n).unwrap(), g.fail_boundary(n).unwrap());
        assert!(fail < pass && pass <= n);
    }
}
