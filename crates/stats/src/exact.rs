//! The exact one-sided bounds and binomial tests every fixed-n rate gate decides with
//! (stats.md §1.4: "if ≤ α for every n is required, gate on the Clopper–Pearson bound").
//!
//! The Wilson bound's coverage oscillates around its level: at t = 0.9, n = 60 a case at the
//! threshold passes a 95% Wilson gate 5.3% of the time, and the score test's lower tail fails
//! a case at the threshold up to 8.75% of the time at high rates. A gate promises an error
//! rate, so it decides on exact binomial tails instead:
//!
//! - **pass** when `P(X ≥ x | n, t) ≤ α`, which is exactly "the one-sided Clopper–Pearson
//!   lower bound at `1 − α` is at least `t`": the false-pass rate at any true rate `p ≤ t` is
//!   at most α, at every n;
//! - **fail** on the exact p-value `P(X ≤ x | n, t)` of `H₀: p ≥ t` (with Holm's procedure
//!   when several cases are judged), equivalent to the one-sided Clopper–Pearson upper bound
//!   falling below `t`.
//!
//! Wilson stays the interval of the descriptive tables; decisions show these bounds.

use super::binomial::{binomial_cdf, binomial_sf};
use super::clopper_pearson_interval;

fn valid_threshold(t: f64) -> bool {
    t > 0.0 && t < 1.0
}

/// α of a one-sided level, when the level is one a gate can use: in [0.5, 1).
fn one_sided_alpha(conf: f64) -> Option<f64> {
    (conf.is_finite() && (0.5..1.0).contains(&conf)).then_some(1.0 - conf)
}

/// One-sided Clopper–Pearson lower bound at level `conf`: `B⁻¹(α; x, n−x+1)`, the lower end
/// of the two-sided interval at `2·conf − 1`. Exactly 0.0 when `x == 0`.
///
/// `None` when `n == 0`, `x > n`, `n` exceeds [`super::MAX_EXACT_N`], or `conf` is not in
/// (0.5, 1).
pub fn clopper_pearson_lower_bound(x: u64, n: u64, conf: f64) -> Option<f64> {
    clopper_pearson_interval(x, n, 2.0 * conf - 1.0).map(|iv| iv.lo)
}

/// One-sided Clopper–Pearson upper bound at level `conf`; exactly 1.0 when `x == n`.
/// `None` as for [`clopper_pearson_lower_bound`].
pub fn clopper_pearson_upper_bound(x: u64, n: u64, conf: f64) -> Option<f64> {
    clopper_pearson_interval(x, n, 2.0 * conf - 1.0).map(|iv| iv.hi)
}

/// Exact p-value of `H₀: p ≥ t` against `p < t` for `x` of `n`: `P(X ≤ x)`, X ~ Bin(n, t).
/// Under H₀ it is below any α with probability at most α (it is a valid p-value at every n),
/// so Holm's procedure on these keeps the family-wise false-fail rate at most α.
///
/// `None` when `n == 0`, `x > n` or `t` is not strictly inside (0, 1).
pub fn binomial_p_value_below(x: u64, n: u64, t: f64) -> Option<f64> {
    if n == 0 || x > n || !valid_threshold(t) {
        return None;
    }
    binomial_cdf(x, n, t)
}

/// Exact p-value of `H₀: p ≤ t` against `p > t`: `P(X ≥ x)`, X ~ Bin(n, t). `None` as for
/// [`binomial_p_value_below`].
pub fn binomial_p_value_above(x: u64, n: u64, t: f64) -> Option<f64> {
    if n == 0 || x > n || !valid_threshold(t) {
        return None;
    }
    binomial_sf(x, n, t)
}

/// Whether `x` passes of `n` clear the bar `t` at one-sided level `conf`: the exact binomial
/// test of `p ≤ t` rejects at α = 1 − conf. `None` when the arguments are undefined (as for
/// [`binomial_p_value_above`], or `conf` not in [0.5, 1)).
pub fn exact_gate_passes(x: u64, n: u64, t: f64, conf: f64) -> Option<bool> {
    let alpha = one_sided_alpha(conf)?;
    Some(binomial_p_value_above(x, n, t)? <= alpha)
}

/// The fewest passes of `n` with which the exact gate passes: the smallest `x` with
/// `P(X ≥ x | n, t) ≤ α`, by bisection (the tail falls as `x` grows). `None` when even
/// `x = n` cannot pass (`tⁿ > α`: n below `ln α / ln t`, e.g. 29 trials for t = 0.9 at 95%)
/// or the arguments are undefined.
pub fn exact_gate_min_successes(n: u64, t: f64, conf: f64) -> Option<u64> {
    let alpha = one_sided_alpha(conf)?;
    if n == 0 || !valid_threshold(t) {
        return None;
    }
    let passes = |x: u64| binomial_sf(x, n, t).is_some_and(|p| p <= alpha);
    if !passes(n) {
        return None;
    }
    // Invariant: passes(hi), and lo fails (x = 0 always fails: P(X ≥ 0) = 1 > α).
    let (mut lo, mut hi) = (0u64, n);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if passes(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{binomial_pmf as pmf, close, f, rows, u, vectors};
    use super::*;

    #[test]
    fn the_gate_agrees_with_every_clopper_pearson_vector() {
        let v = vectors();
        for row in rows(&v, "gate_one_sided") {
            let (x, n, t, conf) = (u(row, "x"), u(row, "n"), f(row, "t"), f(row, "conf"));
            let want = row["cp_pass"].as_bool().expect("bool");
            assert_eq!(exact_gate_passes(x, n, t, conf), Some(want), "{row}");
            let lb = clopper_pearson_lower_bound(x, n, conf).expect("bound");
            close(lb, f(row, "cp_lb"), 1e-9, &format!("cp_lb {row}"));
            // The bound the verdict shows and the test it decides with agree.
            assert_eq!(lb >= t, want, "{row}");
        }
    }

    #[test]
    fn a_perfect_run_passes_from_ln_alpha_over_ln_t_trials() {
        // stats.md §1.4: min n (Clopper–Pearson, all-pass).
        for (t, conf, min_n) in [
            (0.8, 0.90, 11),
            (0.8, 0.95, 14),
            (0.8, 0.99, 21),
            (0.9, 0.90, 22),
            (0.9, 0.95, 29),
            (0.9, 0.99, 44),
            (0.95, 0.90, 45),
            (0.95, 0.95, 59),
            (0.95, 0.99, 90),
            (0.99, 0.90, 230),
            (0.99, 0.95, 299),
            (0.99, 0.99, 459),
        ] {
            assert_eq!(exact_gate_min_successes(min_n, t, conf), Some(min_n));
            assert_eq!(exact_gate_min_successes(min_n - 1, t, conf), None);
        }
    }

    #[test]
    fn false_pass_is_at_most_alpha_at_every_n_on_the_grid() {
        // The issue's grid: t ∈ {0.5, 0.8, 0.9, 0.95, 0.99} × n from 10 to 500, summed
        // exactly with an independent pmf. Also checks x_min is the least passing count.
        for conf in [0.9, 0.95, 0.99] {
            let alpha = 1.0 - conf;
            for t in [0.5, 0.8, 0.9, 0.95, 0.99] {
                for n in 10..=500u64 {
                    let Some(x_min) = exact_gate_min_successes(n, t, conf) else {
                        assert_eq!(exact_gate_passes(n, n, t, conf), Some(false));
                        continue;
                    };
                    assert_eq!(exact_gate_passes(x_min, n, t, conf), Some(true));
                    assert_eq!(exact_gate_passes(x_min - 1, n, t, conf), Some(false));
                    let size: f64 = (x_min..=n).map(|k| pmf(k, n, t)).sum();
                    assert!(
                        size <= alpha * (1.0 + 1e-9),
                        "t {t} n {n} conf {conf}: {size}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_fail_side_p_value_is_valid_at_every_n_on_the_grid() {
        // P(p-value ≤ a) ≤ a under H₀ (p = t, the worst case of p ≥ t) for the levels Holm
        // uses first with 1, 4 and 50 cases: the largest x the test rejects at each level.
        for t in [0.5, 0.8, 0.9, 0.95, 0.99] {
            for n in 10..=500u64 {
                for a in [0.05, 0.05 / 4.0, 0.05 / 50.0, 0.1, 0.1 / 4.0] {
                    let size: f64 = (0..=n)
                        .take_while(|&x| binomial_p_value_below(x, n, t).unwrap() <= a)
                        .map(|x| pmf(x, n, t))
                        .sum();
                    assert!(size <= a * (1.0 + 1e-9), "t {t} n {n} a {a}: {size}");
                }
            }
        }
    }

    #[test]
    fn the_issues_examples_decide_exactly() {
        // 50 of 60 against 0.9: the score test said p = 0.043 (fail at 95%); the exact tail
        // is 0.0731, which does not reject.
        close(
            binomial_p_value_below(50, 60, 0.9).unwrap(),
            0.073_065_510_083_698_94,
            1e-12,
            "P(X ≤ 50)",
        );
        // 58 of 60 against 0.9: Wilson passed it, the exact tail is 0.0530 > 0.05.
        close(
            binomial_p_value_above(58, 60, 0.9).unwrap(),
            0.053_045_081_815_992_71,
            1e-12,
            "P(X ≥ 58)",
        );
        assert_eq!(exact_gate_passes(58, 60, 0.9, 0.95), Some(false));
        assert_eq!(exact_gate_min_successes(60, 0.9, 0.95), Some(59));
    }

    #[test]
    fn undefined_inputs_give_none() {
        assert_eq!(binomial_p_value_below(1, 0, 0.5), None);
        assert_eq!(binomial_p_value_below(3, 2, 0.5), None);
        assert_eq!(binomial_p_value_above(1, 2, 1.0), None);
        assert_eq!(binomial_p_value_above(1, 2, f64::NAN), None);
        for conf in [0.3, 1.0, f64::NAN] {
            assert_eq!(exact_gate_passes(10, 10, 0.5, conf), None);
            assert_eq!(exact_gate_min_successes(10, 0.5, conf), None);
        }
        assert_eq!(clopper_pearson_lower_bound(0, 10, 0.95), Some(0.0));
        assert_eq!(clopper_pearson_upper_bound(10, 10, 0.95), Some(1.0));
    }
}
