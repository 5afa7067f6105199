//! The FAIL side of the sequential case gates: an anytime-valid test that a case's rate is
//! below its bar t, the mirror of the mixture SPRT's PASS side.
//!
//! H₀ is `p ≥ t` (the case clears the bar). The evidence against it mixes the likelihood
//! ratios of four alternatives below t,
//!
//! `F_n = Σ_k w_k · (r_k/t)^S · ((1−r_k)/(1−t))^(n−S)`,
//! `r_k = t·(1 − 2^−k)` for k = 1…4 (halfway to 0, then three, seven and fifteen sixteenths of
//! the way from 0 to t: 0.4, 0.6, 0.7, 0.75 at t = 0.8), `w_k = 1/4` each.
//!
//! One trial multiplies term k by `p·r_k/t + (1−p)(1−r_k)/(1−t)` on average, which is 1 at
//! p = t and falls as p grows (r_k < t), so under any p ≥ t every term, and their weighted
//! sum, is a nonnegative supermartingale starting at 1. Ville's inequality then gives
//! `P(sup_n F_n ≥ 1/β | p ≥ t) ≤ β`: FAIL when `F_n ≥ 1/β` keeps the chance of failing a case
//! that clears the bar at most β at every n, however often it is looked at, and whether or
//! not the run stops at a trial budget.
//!
//! The same evidence with the bar moved to q (alternatives `q·(1 − 2^−k)`) tests `p ≥ q`
//! for every q at once, and it grows with q (each `(1 − c·q)/(1 − q)` does), so the rates it
//! has not ruled out are an interval below [`BelowMixture::upper_bound`]: an anytime-valid
//! upper confidence bound at level 1 − β. FAIL at t is exactly "that bound is below t".
//!
//! Weights: the nearer alternatives find a case just below the bar sooner and the farther
//! ones a case far below it; equal weights cost at most 9% more trials than the best of the
//! orderings tried (8-4-2-1 either way) from t/2 to 0.95·t at t = 0.6 … 0.95 (exact dynamic
//! programming; see the tests).

use serde::{Deserialize, Serialize};

/// How many alternatives the FAIL evidence mixes.
const COMPONENTS: usize = 4;

/// The anytime-valid test of "the rate is below t" that FAILs a case (the default FAIL side of
/// `--sequential`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BelowMixture {
    threshold: f64,
    beta: f64,
}

impl BelowMixture {
    /// The test for bar `t` with false-fail bound `beta` (the chance of ever failing a case
    /// whose rate is at least t).
    ///
    /// `None` unless `t` and `beta` are strictly inside (0, 1).
    pub fn new(t: f64, beta: f64) -> Option<Self> {
        let open = |v: f64| v > 0.0 && v < 1.0;
        (open(t) && open(beta)).then_some(BelowMixture { threshold: t, beta })
    }

    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// The alternatives mixed and their weights at the bar, `(r_k, w_k)`.
    pub fn alternatives(&self) -> [(f64, f64); COMPONENTS] {
        std::array::from_fn(|k| (self.threshold * shrink(k), 1.0 / COMPONENTS as f64))
    }

    /// `ln F_n` with the bar at `q`, after `successes` passes in `n` trials (a log-sum-exp).
    /// `−∞` for q outside (0, 1).
    pub(crate) fn log_evidence_at(&self, q: f64, successes: u64, n: u64) -> f64 {
        if !(q > 0.0 && q < 1.0) {
            return f64::NEG_INFINITY;
        }
        let (s, f) = (successes as f64, n.saturating_sub(successes) as f64);
        let ln_w = -(COMPONENTS as f64).ln();
        let logs: [f64; COMPONENTS] = std::array::from_fn(|k| {
            let c = shrink(k);
            // ln(r/q) = ln c; ln((1 − r)/(1 − q)) = ln((1 − c·q)/(1 − q)).
            ln_w + s * c.ln() + f * ((1.0 - c * q) / (1.0 - q)).ln()
        });
        log_sum_exp(&logs)
    }

    fn rejects_at(&self, q: f64, successes: u64, n: u64) -> bool {
        self.log_evidence_at(q, successes, n) >= -self.beta.ln()
    }

    /// The most passes with which the test FAILs after `n` trials (`F_n ≥ 1/β`); `None` when
    /// not even 0 of n fails. The evidence falls as S grows, so a binary search finds it.
    pub(crate) fn fail_boundary(&self, n: u64) -> Option<u64> {
        let t = self.threshold;
        if !self.rejects_at(t, 0, n) {
            return None;
        }
        // Invariant: lo fails, hi + 1 does not (or hi = n).
        let (mut lo, mut hi) = (0u64, n);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if self.rejects_at(t, mid, n) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        Some(lo)
    }

    /// The anytime-valid upper confidence bound (level 1 − β) after `successes` of `n`: the
    /// least rate q the evidence rules out (`F_n ≥ 1/β` with the bar at q), 1 when it rules
    /// out none. It is at or below t exactly when the test FAILs at t (`fails_at_bar`, the
    /// decision the gate made from its integer boundary), so a FAIL is never printed beside an
    /// upper bound above the bar.
    pub fn upper_bound(&self, successes: u64, n: u64, fails_at_bar: bool) -> f64 {
        let t = self.threshold;
        // Invariant: q = lo is not ruled out, q = hi is (q = 1 trivially).
        let (kept, ruled_out) = if fails_at_bar { (0.0, t) } else { (t, 1.0) };
        bisect(kept, ruled_out, |q| self.rejects_at(q, successes, n))
    }
}

/// `c_k = 1 − 2^−(k+1)`: the k-th alternative is `c_k` times the bar.
fn shrink(k: usize) -> f64 {
    1.0 - 0.5f64.powi(k as i32 + 1)
}

pub(super) fn log_sum_exp(logs: &[f64]) -> f64 {
    let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if top == f64::NEG_INFINITY {
        return top;
    }
    top + logs.iter().map(|l| (l - top).exp()).sum::<f64>().ln()
}

/// The edge of a confidence bound: the rate nearest `kept` that is still ruled out, between
/// `kept` (a rate `ruled_out` leaves in) and `out` (a rate it rules out, or one taken as
/// ruled out, 0 or 1), for a `ruled_out` that changes once between them. Narrowed to 1e-12
/// and always on the ruled-out side, so a bound never lands on the wrong side of the rate
/// the decision was taken at.
pub(super) fn bisect(mut kept: f64, mut out: f64, ruled_out: impl Fn(f64) -> bool) -> f64 {
    while (out - kept).abs() > 1e-12 {
        let mid = 0.5 * (kept + out);
        if ruled_out(mid) {
            out = mid;
        } else {
            kept = mid;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test(t: f64, beta: f64) -> BelowMixture {
        BelowMixture::new(t, beta).expect("valid")
    }

    #[test]
    fn alternatives_step_toward_the_bar_from_halfway_to_zero() {
        let alts = test(0.8, 0.0125).alternatives();
        for ((r, w), want) in alts.iter().zip([0.4, 0.6, 0.7, 0.75]) {
            assert!((r - want).abs() < 1e-12, "{r} vs {want}");
            assert!((w - 0.25).abs() < 1e-12);
        }
    }

    /// `F_n` summed term by term, without logs: what the boundaries must agree with.
    fn direct_evidence(g: &BelowMixture, s: u64, n: u64) -> f64 {
        let t = g.threshold();
        g.alternatives()
            .iter()
            .map(|&(r, w)| {
                w * (r / t).powi(s as i32) * ((1.0 - r) / (1.0 - t)).powi((n - s) as i32)
            })
            .sum()
    }

    #[test]
    fn fail_boundaries_agree_with_the_evidence_summed_directly() {
        for (t, beta) in [(0.8, 0.0125), (0.9, 0.05), (0.6, 0.01), (0.5, 0.001)] {
            let g = test(t, beta);
            for n in 0..=300u64 {
                let fb = g.fail_boundary(n);
                for s in 0..=n {
                    let e = direct_evidence(&g, s, n);
                    // Stay away from ties, where the two routes may round differently.
                    if (e * beta - 1.0).abs() < 1e-9 {
                        continue;
                    }
                    let fails = fb.is_some_and(|b| s <= b);
                    assert_eq!(fails, e >= 1.0 / beta, "t={t} {s}/{n}: F = {e}");
                }
            }
        }
    }

    #[test]
    fn fail_boundaries_match_an_independent_implementation() {
        // The most passes with F_n ≥ 1/β, from a separate Python computation of F_n.
        type Row = (f64, f64, [(u64, Option<u64>); 7]);
        let rows: [Row; 3] = [
            (
                0.8,
                0.0125,
                [
                    (5, None),
                    (10, Some(3)),
                    (25, Some(12)),
                    (50, Some(29)),
                    (100, Some(65)),
                    (200, Some(140)),
                    (1000, Some(755)),
                ],
            ),
            (
                0.9,
                0.05,
                [
                    (5, Some(1)),
                    (10, Some(5)),
                    (25, Some(17)),
                    (50, Some(38)),
                    (100, Some(80)),
                    (200, Some(166)),
                    (1000, Some(865)),
                ],
            ),
            (
                0.6,
                0.01,
                [
                    (5, None),
                    (10, None),
                    (25, Some(6)),
                    (50, Some(18)),
                    (100, Some(43)),
                    (200, Some(96)),
                    (1000, Some(545)),
                ],
            ),
        ];
        for (t, beta, points) in rows {
            let g = test(t, beta);
            for (n, want) in points {
                assert_eq!(g.fail_boundary(n), want, "t={t} beta={beta} n={n}");
            }
        }
    }

    #[test]
    fn the_upper_bound_is_below_the_bar_exactly_when_the_test_fails() {
        for (t, beta) in [(0.8, 0.0125), (0.9, 0.05), (0.6, 0.01)] {
            let g = test(t, beta);
            for n in 1..=200u64 {
                let fb = g.fail_boundary(n);
                for s in 0..=n {
                    let fails = fb.is_some_and(|b| s <= b);
                    let u = g.upper_bound(s, n, fails);
                    assert!((0.0..=1.0).contains(&u), "{s}/{n}: {u}");
                    if fails {
                        assert!(u < t, "t={t} {s}/{n}: FAIL beside upper bound {u}");
                    } else {
                        assert!(u > t, "t={t} {s}/{n}: no FAIL beside upper bound {u}");
                    }
                    // The bound is the edge of the rates the evidence rules out: a rate a
                    // little above it is ruled out, one a little below it is not.
                    if u < 1.0 - 1e-6 {
                        assert!(g.rejects_at(u + 1e-9, s, n), "t={t} {s}/{n} at {u}");
                    }
                    if u > 1e-6 {
                        assert!(!g.rejects_at(u - 1e-9, s, n), "t={t} {s}/{n} at {u}");
                    }
                }
            }
        }
        // Nothing observed rules nothing out. 0 of 30 rules out every rate from 0.294 (a
        // separate Python bisection of F_n with the bar at q: 0.29432); its alternatives are
        // scaled to the bar, so near 0 they are close to it and the bound is loose there (the
        // exact one-sided bound at this level is 0.136), which costs nothing at the bar.
        let g = test(0.8, 0.0125);
        assert_eq!(g.upper_bound(0, 0, false), 1.0);
        assert!((g.upper_bound(0, 30, true) - 0.294322).abs() < 1e-6);
    }

    #[test]
    fn undefined_tests_give_none() {
        for (t, beta) in [
            (0.0, 0.05),
            (1.0, 0.05),
            (0.8, 0.0),
            (0.8, 1.0),
            (f64::NAN, 0.05),
        ] {
            assert_eq!(BelowMixture::new(t, beta), None, "{t} {beta}");
        }
    }
}
