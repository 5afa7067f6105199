//! The mixture SPRT (Robbins 1970; the "testing by betting" view of Ramdas et al.): the PASS
//! side of the default sequential case gate, because it needs no guess of the rate a case
//! really has.
//!
//! The SPRT's PASS evidence is the likelihood ratio of one alternative p₁ against t; it
//! drifts up fastest when the case's true rate is p₁ and slowest just above t, so its cost
//! depends on how well p₁ was guessed. The mixture's PASS evidence is a weighted sum of the
//! likelihood ratios of several alternatives spread over (t, 1):
//!
//! `E_n = Σ_k w_k · (q_k/t)^S · ((1−q_k)/(1−t))^(n−S)`,
//! `q_k = 1 − (1−t)/2^k` for k = 1…4 (halfway to 1, then three quarters, …),
//! `w_k = 2^(4−k)/15` (8/15, 4/15, 2/15, 1/15).
//!
//! Each term is a nonnegative supermartingale with mean at most 1 when p ≤ t (every q_k is
//! above t), so their weighted sum is one too, and Ville's inequality gives
//! `P(sup_n E_n ≥ 1/α | p ≤ t) ≤ α`: PASS when `E_n ≥ 1/α` is as valid at every n as the
//! SPRT's PASS. Whatever the true rate, the term whose q_k is nearest it grows almost as
//! fast as that SPRT would, and costs only `ln(1/w_k)` more evidence.
//!
//! With the bar moved to q (alternatives `1 − (1−q)/2^k`) the same evidence tests `p ≤ q` for
//! every q at once; it falls as q grows, so the rates it rules out are those at or below
//! [`MixtureGate::lower_bound`], an anytime-valid lower confidence bound at level 1 − α, and
//! PASS at t is exactly "that bound is at or above t".
//!
//! [`MixtureGate`]'s own FAIL boundary is the SPRT's of t against p₁ (the likelihood ratio of t
//! against p₁ reaching 1/β), whose FAIL means "below p₁", not "below t": the case gates use it
//! only under `--fail-below P1`, the indifference zone asked for by name, and otherwise pair
//! this PASS side with [`super::BelowMixture`] ([`super::SequentialTest`]).

use serde::{Deserialize, Serialize};

use super::below::{bisect, log_sum_exp};
use super::{Boundaries, SprtGate};

/// How many alternatives the PASS evidence mixes.
const COMPONENTS: usize = 4;

/// The mixture SPRT for one threshold: PASS on the mixed evidence above, FAIL as the SPRT of
/// t against p₁.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MixtureGate {
    threshold: f64,
    alpha: f64,
    /// The SPRT of t against p₁ at (α, β): only its FAIL boundary is used.
    fail_side: SprtGate,
    /// Per alternative: (ln w_k, ln(q_k/t), ln((1−q_k)/(1−t))).
    terms: [(f64, f64, f64); COMPONENTS],
}

impl MixtureGate {
    /// A gate for threshold `t` with false-pass bound `alpha`, failing a case at rate ≥ `p1`
    /// with probability at most `beta`.
    ///
    /// `None` unless `0 < t < p1 < 1` and `alpha`, `beta` are strictly inside (0, 1).
    pub fn new(t: f64, p1: f64, alpha: f64, beta: f64) -> Option<Self> {
        let fail_side = SprtGate::new(t, p1, alpha, beta)?;
        let total = f64::from((1u32 << COMPONENTS) - 1);
        let mut terms = [(0.0, 0.0, 0.0); COMPONENTS];
        for (k, term) in terms.iter_mut().enumerate() {
            let step = (k + 1) as i32;
            let q = 1.0 - (1.0 - t) / 2f64.powi(step);
            let weight = f64::from(1u32 << (COMPONENTS - 1 - k)) / total;
            let (a, b) = ((q / t).ln(), ((1.0 - q) / (1.0 - t)).ln());
            if !(a > 0.0 && b < 0.0 && a.is_finite() && b.is_finite()) {
                return None;
            }
            *term = (weight.ln(), a, b);
        }
        Some(MixtureGate {
            threshold: t,
            alpha,
            fail_side,
            terms,
        })
    }

    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// The alternatives mixed and their weights, `(q_k, w_k)`, for a report to print.
    pub fn alternatives(&self) -> [(f64, f64); COMPONENTS] {
        self.terms
            .map(|(ln_w, a, _)| (self.threshold * a.exp(), ln_w.exp()))
    }

    /// `ln E_n` after `successes` passes in `n` trials (a log-sum-exp, so it neither
    /// overflows nor underflows at large n).
    pub(crate) fn log_evidence(&self, successes: u64, n: u64) -> f64 {
        let (s, f) = (successes as f64, n.saturating_sub(successes) as f64);
        let logs = self.terms.map(|(ln_w, a, b)| ln_w + s * a + f * b);
        let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        top + logs.iter().map(|l| (l - top).exp()).sum::<f64>().ln()
    }

    fn passes(&self, successes: u64, n: u64) -> bool {
        self.log_evidence(successes, n) >= -self.alpha.ln()
    }

    /// `ln E_n` with the bar moved to `q` (alternatives `1 − (1−q)/2^k`, the same weights);
    /// `−∞` for q outside (0, 1). At q = t it is [`Self::log_evidence`] up to rounding.
    pub(crate) fn log_evidence_at(&self, q: f64, successes: u64, n: u64) -> f64 {
        if !(q > 0.0 && q < 1.0) {
            return f64::NEG_INFINITY;
        }
        let (s, f) = (successes as f64, n.saturating_sub(successes) as f64);
        let mut logs = [0.0; COMPONENTS];
        for (k, (log, (ln_w, _, _))) in logs.iter_mut().zip(self.terms).enumerate() {
            let shrink = 0.5f64.powi(k as i32 + 1);
            // ln(q_k/q) and ln((1 − q_k)/(1 − q)) = ln 2^−k.
            let q_k = 1.0 - (1.0 - q) * shrink;
            *log = ln_w + s * (q_k / q).ln() + f * shrink.ln();
        }
        log_sum_exp(&logs)
    }

    /// The anytime-valid lower confidence bound (level 1 − α) after `successes` of `n`: the
    /// greatest rate q the PASS evidence rules out (`E_n ≥ 1/α` with the bar at q), 0 when it
    /// rules out none. It is at or above t exactly when the gate PASSes at t
    /// (`passes_at_bar`, the decision taken on the integer boundary).
    pub fn lower_bound(&self, successes: u64, n: u64, passes_at_bar: bool) -> f64 {
        let t = self.threshold;
        let (kept, ruled_out) = if passes_at_bar { (1.0, t) } else { (t, 0.0) };
        bisect(kept, ruled_out, |q| {
            self.log_evidence_at(q, successes, n) >= -self.alpha.ln()
        })
    }
}

impl Boundaries for MixtureGate {
    /// The fewest passes with `E_n ≥ 1/α` after `n` trials. The evidence grows with S (every
    /// `ln(q_k/t)` is positive and every `ln((1−q_k)/(1−t))` negative), so a binary search
    /// over S finds it; `None` when even n of n falls short.
    fn pass_boundary(&self, n: u64) -> Option<u64> {
        if !self.passes(n, n) {
            return None;
        }
        let (mut lo, mut hi) = (0u64, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.passes(mid, n) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Some(lo)
    }

    fn fail_boundary(&self, n: u64) -> Option<u64> {
        self.fail_side.fail_boundary(n)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{SequentialDecision, operating_characteristics};
    use super::*;

    fn gate(t: f64, alpha: f64, cases: f64) -> MixtureGate {
        MixtureGate::new(t, t + (1.0 - t) / 2.0, alpha, alpha / cases).expect("valid")
    }

    #[test]
    fn alternatives_halve_the_distance_to_one() {
        let g = gate(0.8, 0.05, 4.0);
        let alts = g.alternatives();
        let want = [(0.9, 8.0), (0.95, 4.0), (0.975, 2.0), (0.9875, 1.0)];
        for ((q, w), (wq, ww)) in alts.iter().zip(want) {
            assert!((q - wq).abs() < 1e-12, "{q} vs {wq}");
            assert!((w - ww / 15.0).abs() < 1e-12, "{w}");
        }
        assert!((alts.iter().map(|a| a.1).sum::<f64>() - 1.0).abs() < 1e-12);
    }

    /// `E_n` summed term by term, without logs: what the boundaries must agree with.
    fn direct_evidence(g: &MixtureGate, s: u64, n: u64) -> f64 {
        g.alternatives()
            .iter()
            .map(|&(q, w)| {
                let t = g.threshold();
                w * (q / t).powi(s as i32) * ((1.0 - q) / (1.0 - t)).powi((n - s) as i32)
            })
            .sum()
    }

    #[test]
    fn boundaries_agree_with_the_evidence_summed_directly() {
        for (t, alpha) in [(0.8, 0.05), (0.9, 0.05), (0.6, 0.1), (0.5, 0.01)] {
            let g = gate(t, alpha, 4.0);
            for n in 0..=300u64 {
                for s in 0..=n {
                    let e = direct_evidence(&g, s, n);
                    // Stay away from ties, where the two routes may round differently.
                    if (e * alpha - 1.0).abs() < 1e-9 {
                        continue;
                    }
                    let pass = g.decide(s, n) == Some(SequentialDecision::Pass);
                    assert_eq!(pass, e >= 1.0 / alpha, "t={t} {s}/{n}: E = {e}");
                }
            }
        }
    }

    #[test]
    fn pass_boundaries_match_an_independent_implementation() {
        // The fewest passes for E_n ≥ 1/α, from a separate Python computation of E_n.
        let at_08 = gate(0.8, 0.05, 4.0);
        let at_09 = gate(0.9, 0.05, 1.0);
        let at_06 = gate(0.6, 0.1, 10.0);
        for (n, want_08, want_09, want_06) in [
            (25, Some(25), None, Some(21)),
            (50, Some(47), Some(50), Some(39)),
            (100, Some(90), Some(97), Some(74)),
            (200, Some(176), Some(191), Some(145)),
        ] {
            assert_eq!(at_08.pass_boundary(n), want_08, "t=0.8 n={n}");
            assert_eq!(at_09.pass_boundary(n), want_09, "t=0.9 n={n}");
            assert_eq!(at_06.pass_boundary(n), want_06, "t=0.6 n={n}");
        }
        // FAIL is the SPRT's: 0 of 5 at t = 0.9, p₁ = 0.95, β = 0.05.
        let sprt_like = MixtureGate::new(0.9, 0.95, 0.05, 0.05).unwrap();
        assert_eq!(sprt_like.fail_boundary(4), None);
        assert_eq!(sprt_like.fail_boundary(5), Some(0));
    }

    #[test]
    fn operating_characteristics_match_an_independent_implementation() {
        // (t, α, cases, n_max, p, E[N], P(PASS), P(FAIL), P(truncated)) from a separate
        // Python dynamic program over (n, S) with the decision rule written from the formula.
        type Row = (f64, f64, f64, u64, f64, f64, f64, f64, f64);
        let rows: [Row; 15] = [
            (
                0.8, 0.05, 4.0, 200, 0.7, 37.1983, 0.001542, 0.998452, 0.000006,
            ),
            (
                0.8, 0.05, 4.0, 200, 0.8, 91.9198, 0.045133, 0.877966, 0.0769,
            ),
            (
                0.8, 0.05, 4.0, 200, 0.83, 123.2626, 0.154107, 0.580577, 0.265316,
            ),
            (
                0.8, 0.05, 4.0, 200, 0.87, 122.8914, 0.592905, 0.109085, 0.29801,
            ),
            (
                0.8, 0.05, 4.0, 200, 0.95, 34.6557, 0.999986, 0.000006, 0.000008,
            ),
            (
                0.8, 0.05, 4.0, 200, 0.9, 81.2683, 0.926556, 0.008552, 0.064892,
            ),
            (0.9, 0.05, 1.0, 400, 0.8, 34.3718, 0.000148, 0.999852, 0.0),
            (
                0.9, 0.05, 1.0, 400, 0.9, 138.7594, 0.046152, 0.915866, 0.037983,
            ),
            (
                0.9, 0.05, 1.0, 400, 0.93, 228.768, 0.425119, 0.335324, 0.239557,
            ),
            (
                0.9, 0.05, 1.0, 400, 0.97, 86.5967, 0.999032, 0.000766, 0.000202,
            ),
            (
                0.9, 0.05, 1.0, 400, 0.95, 167.0503, 0.902761, 0.036031, 0.061208,
            ),
            (0.6, 0.1, 10.0, 300, 0.5, 23.7142, 0.013223, 0.986777, 0.0),
            (
                0.6, 0.1, 10.0, 300, 0.6, 41.1784, 0.080164, 0.919825, 0.000012,
            ),
            (
                0.6, 0.1, 10.0, 300, 0.67, 64.5735, 0.335956, 0.659575, 0.004469,
            ),
            (
                0.6, 0.1, 10.0, 300, 0.8, 27.9087, 0.992996, 0.006998, 0.000005,
            ),
        ];
        for (t, alpha, cases, n_max, p, en, pass, fail, trunc) in rows {
            let oc = operating_characteristics(&gate(t, alpha, cases), p, n_max).unwrap();
            let what = format!("t={t} p={p}: {oc:?}");
            assert!((oc.expected_n - en).abs() <= 5e-4, "E[N] {what}");
            assert!((oc.p_pass - pass).abs() <= 5e-7, "PASS {what}");
            assert!((oc.p_fail - fail).abs() <= 5e-7, "FAIL {what}");
            assert!((oc.p_truncated - trunc).abs() <= 5e-7, "trunc {what}");
        }
    }

    #[test]
    fn ville_bounds_hold_exactly_at_the_boundaries() {
        // With a budget so long that almost nothing is left undecided, the exact chance of a
        // false PASS at p = t stays ≤ α and of a false FAIL at p = p₁ ≤ β.
        for (t, alpha, cases) in [(0.8, 0.05, 4.0), (0.9, 0.05, 1.0), (0.5, 0.01, 20.0)] {
            let g = gate(t, alpha, cases);
            let at_t = operating_characteristics(&g, t, 20_000).unwrap();
            assert!(at_t.p_pass <= alpha, "t={t}: {at_t:?}");
            let p1 = t + (1.0 - t) / 2.0;
            let at_p1 = operating_characteristics(&g, p1, 20_000).unwrap();
            assert!(at_p1.p_fail <= alpha / cases, "t={t}: {at_p1:?}");
        }
    }

    #[test]
    fn about_as_fast_as_the_sprt_near_t_and_faster_above() {
        // The gate the issue measured: t = 0.8, p₁ = 0.9, α = 0.05, 4 cases, 200 trials.
        let mixture = gate(0.8, 0.05, 4.0);
        let sprt = SprtGate::new(0.8, 0.9, 0.05, 0.0125).unwrap();
        for p in [0.8, 0.83, 0.87, 0.95, 0.99] {
            let m = operating_characteristics(&mixture, p, 200).unwrap();
            let s = operating_characteristics(&sprt, p, 200).unwrap();
            let ratio = m.expected_n / s.expected_n;
            assert!(ratio <= 1.05, "p={p}: {} vs {}", m.expected_n, s.expected_n);
            if p >= 0.95 {
                assert!(ratio <= 0.9, "p={p}: {ratio}");
            }
        }
    }

    #[test]
    fn undefined_gates_give_none() {
        for (t, p1, alpha, beta) in [
            (0.9, 0.9, 0.05, 0.05),
            (0.95, 0.9, 0.05, 0.05),
            (0.0, 0.9, 0.05, 0.05),
            (0.9, 0.95, 0.0, 0.05),
            (0.9, 0.95, 0.05, 1.0),
            (f64::NAN, 0.95, 0.05, 0.05),
        ] {
            assert_eq!(MixtureGate::new(t, p1, alpha, beta), None, "{t} {p1}");
        }
        assert_eq!(gate(0.8, 0.05, 4.0).decide(6, 5), None);
    }
}
