//! Power and sample size of the fixed-n PR gate "pass iff the exact binomial test of p ≤ t
//! rejects", i.e. "the one-sided Clopper–Pearson lower bound ≥ t" (stats.md §1.4, §2.3; the
//! rule itself is in `exact`): how many passes a run of n trials needs, how often a case
//! whose true rate is p gets them, and how many trials make that likely.

use serde::{Deserialize, Serialize};

use super::binomial::binomial_sf;
use super::exact::exact_gate_min_successes;
use super::try_z_one_sided;

fn valid_threshold(t: f64) -> bool {
    t > 0.0 && t < 1.0
}

/// The fewest passes out of `n` trials with which the fixed-n gate passes: the smallest x
/// with `P(X ≥ x | n, t) ≤ 1 − conf` ([`super::exact_gate_min_successes`], the rule the
/// gate decides with, so the two can never disagree).
///
/// `Some(x)` with `x ≤ n`, or `None` when no count can pass at this n (a perfect run needs
/// `n ≥ ln α / ln t`, e.g. 29 trials for t = 0.9 at 95%) or the arguments are undefined:
/// `n = 0`, `t` not strictly inside (0, 1), `conf` not in [0.5, 1).
pub fn gate_min_successes(n: u64, t: f64, conf: f64) -> Option<u64> {
    exact_gate_min_successes(n, t, conf)
}

/// Exact probability that a case whose true pass rate is `p` passes the fixed-n gate at
/// `n` trials: `P(Bin(n, p) ≥ x_min(n))` (stats.md §2.3). At `p = t` this is the gate's
/// false-pass rate, which for the exact gate never exceeds `1 − conf` (§1.4).
///
/// The binomial tail is summed exactly (relative precision about 1e-14, also for n in the
/// hundreds of thousands). `Some(0.0)` when no count can pass at this n. `None` when
/// `n = 0`, `t` is not strictly inside (0, 1), `p` is not in [0, 1], or `conf` is not in
/// [0.5, 1).
pub fn gate_power(n: u64, t: f64, p: f64, conf: f64) -> Option<f64> {
    if n == 0 || !valid_threshold(t) || !(0.0..=1.0).contains(&p) || !gate_conf(conf) {
        return None;
    }
    match exact_gate_min_successes(n, t, conf) {
        Some(x) => binomial_sf(x, n, p),
        None => Some(0.0),
    }
}

/// Whether a one-sided gate level is usable: in [0.5, 1).
fn gate_conf(conf: f64) -> bool {
    conf.is_finite() && (0.5..1.0).contains(&conf)
}

/// The trials a fixed-n gate needs to pass a case of true rate `p > t` with a target power
/// ([`gate_sample_size`]; stats.md §2.3).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GateSampleSize {
    /// The smallest n whose exact power reaches the target.
    pub first: u64,
    /// The smallest n from which the power stays at or above the target at every n up to
    /// the horizon `2·first + 100`. Power is sawtoothed in n (each time `x_min` steps up it
    /// drops), so a budget between `first` and `stable` can still fall short; plan with
    /// `stable` when the trial count is not exact.
    pub stable: u64,
    /// `x_min(first)`: passes needed at that n.
    pub min_successes_at_first: u64,
    /// The gate's exact false-pass probability at `p = t` for n = `first`: the size actually
    /// delivered, at most `1 − conf`.
    pub false_pass_at_threshold: f64,
    /// The normal-approximation n, `[(z₁₋α√(t(1−t)) + z_power√(p(1−p))) / (p − t)]²`, before
    /// rounding: shown for comparison only; it is off by a fifth or more (§2.3).
    pub normal_approx: f64,
}

/// Exact sample size for the fixed-n gate (stats.md §2.3): the first n at which a case of
/// true rate `p` passes with probability ≥ `power`, and the n from which it keeps doing so.
///
/// The normal-approximation formula misses the exact n by up to a fifth, and because power
/// is sawtoothed in n a single "n" is not enough: both the first n and the stable one are
/// reported. "Stable" is checked up to a horizon of `2·first + 100` trials. Power's dips
/// shrink as n grows, and in every row of §2.3 the last dip below target is within
/// `1.4·first`, so the horizon has room to spare; it is not a proof that no dip exists
/// further out.
///
/// `None` when `t` is not strictly inside (0, 1), `p` is not in (t, 1], `conf` is not in
/// [0.5, 1), `power` is not strictly inside (0, 1), or no n ≤ `n_cap` reaches the target, or
/// the power is still below target at the horizon.
pub fn gate_sample_size(
    t: f64,
    p: f64,
    conf: f64,
    power: f64,
    n_cap: u64,
) -> Option<GateSampleSize> {
    let alternative = valid_threshold(t) && p > t && p <= 1.0;
    if !(alternative && power > 0.0 && power < 1.0 && gate_conf(conf)) {
        return None;
    }
    let z = try_z_one_sided(conf)?;
    let z_power = try_z_one_sided(power)?;
    let reaches = |n: u64| gate_power(n, t, p, conf).is_some_and(|pw| pw >= power);
    // Below ln α / ln t trials no count passes; start the search there.
    let least = ((1.0 - conf).ln() / t.ln()).floor().max(1.0) as u64;
    let first = (least..=n_cap).find(|&n| reaches(n))?;
    let horizon = first.checked_mul(2)?.checked_add(100)?;
    let mut stable = first;
    for n in first + 1..=horizon {
        if !reaches(n) {
            stable = n + 1;
        }
    }
    if stable > horizon {
        return None;
    }
    let min_successes_at_first = exact_gate_min_successes(first, t, conf)?;
    let false_pass_at_threshold = binomial_sf(min_successes_at_first, first, t)?;
    let normal_approx =
        ((z * (t * (1.0 - t)).sqrt() + z_power * (p * (1.0 - p)).sqrt()) / (p - t)).powi(2);
    Some(GateSampleSize {
        first,
        stable,
        min_successes_at_first,
        false_pass_at_threshold,
        normal_approx,
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_support::close;
    use super::super::{clopper_pearson_lower_bound, exact_gate_passes};
    use super::*;

    #[test]
    fn min_successes_is_the_least_count_the_gate_passes() {
        for conf in [0.9, 0.95, 0.99] {
            for t in [0.5, 0.8, 0.9, 0.95, 0.99] {
                for n in (1..=300u64).chain([500, 1000, 2000]) {
                    let got = gate_min_successes(n, t, conf);
                    let least = (0..=n).find(|&x| exact_gate_passes(x, n, t, conf) == Some(true));
                    assert_eq!(got, least, "{n} {t} {conf}");
                    if let Some(x) = got
                        && n <= 300
                    {
                        // The bound a verdict shows sits on the same side of t.
                        assert!(clopper_pearson_lower_bound(x, n, conf).unwrap() >= t);
                        if x > 0 {
                            assert!(clopper_pearson_lower_bound(x - 1, n, conf).unwrap() < t);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn gate_power_matches_the_fixed_n_comparators() {
        // §6.3: the Clopper–Pearson design at n = 298 needs 277 passes; power 0.9542 at
        // p = 0.95, size 0.0494 at 0.90.
        assert_eq!(gate_min_successes(298, 0.9, 0.95), Some(277));
        close(
            gate_power(298, 0.9, 0.95, 0.95).unwrap(),
            0.9542,
            5e-5,
            "power",
        );
        close(
            gate_power(298, 0.9, 0.9, 0.95).unwrap(),
            0.0494,
            5e-5,
            "size",
        );
        // No count passes below 29 trials at t = 0.9: power 0 whatever p is.
        assert_eq!(gate_power(28, 0.9, 1.0, 0.95), Some(0.0));
        assert_eq!(gate_power(29, 0.9, 1.0, 0.95), Some(1.0));
        // Large n: finite, and monotone in p.
        let n = 100_000;
        let lo = gate_power(n, 0.9, 0.901, 0.95).unwrap();
        let hi = gate_power(n, 0.9, 0.903, 0.95).unwrap();
        assert!(0.0 < lo && lo < hi && hi < 1.0, "{lo} {hi}");
        // At p = t the size stays at or below α, and near it at large n.
        let size = gate_power(n, 0.9, 0.9, 0.95).unwrap();
        assert!((0.045..=0.05).contains(&size), "{size}");
    }

    #[test]
    fn sample_sizes_match_the_clopper_pearson_comparators() {
        // §6.3: first n with power ≥ 0.95 at p₁ = 0.95 is 298, stable from 321.
        let s = gate_sample_size(0.9, 0.95, 0.95, 0.95, 10_000).expect("defined");
        assert_eq!(
            (s.first, s.stable, s.min_successes_at_first),
            (298, 321, 277)
        );
        close(s.false_pass_at_threshold, 0.0494, 5e-5, "size");
        assert!(s.false_pass_at_threshold <= 0.05);
    }

    #[test]
    fn sample_size_definitions_hold() {
        let s = gate_sample_size(0.9, 0.97, 0.95, 0.8, 10_000).unwrap();
        let pw = |n| gate_power(n, 0.9, 0.97, 0.95).unwrap();
        assert!(pw(s.first) >= 0.8);
        assert!((1..s.first).all(|n| pw(n) < 0.8));
        assert!((s.stable..=2 * s.first + 100).all(|n| pw(n) >= 0.8));
        assert!(pw(s.stable - 1) < 0.8);
        // A cap below the first n: no answer rather than a wrong one.
        assert_eq!(gate_sample_size(0.9, 0.97, 0.95, 0.8, s.first - 1), None);
        assert!(gate_sample_size(0.9, 0.97, 0.95, 0.8, s.first).is_some());
    }

    #[test]
    fn undefined_inputs_give_none() {
        for conf in [0.0, 0.3, 1.0, f64::NAN, 2.0] {
            assert_eq!(gate_min_successes(100, 0.9, conf), None, "{conf}");
            assert_eq!(gate_power(100, 0.9, 0.95, conf), None, "{conf}");
            assert_eq!(gate_sample_size(0.9, 0.95, conf, 0.8, 1000), None, "{conf}");
        }
        for t in [0.0, 1.0, -0.1, f64::NAN] {
            assert_eq!(gate_min_successes(100, t, 0.95), None, "{t}");
            assert_eq!(gate_power(100, t, 0.95, 0.95), None, "{t}");
            assert_eq!(gate_sample_size(t, 0.95, 0.95, 0.8, 1000), None, "{t}");
        }
        assert_eq!(gate_min_successes(0, 0.9, 0.95), None);
        assert_eq!(gate_power(0, 0.9, 0.95, 0.95), None);
        for p in [-0.1, 1.1, f64::NAN] {
            assert_eq!(gate_power(100, 0.9, p, 0.95), None, "{p}");
        }
        // p must exceed t, and power lie strictly inside (0, 1).
        for (p, power) in [
            (0.9, 0.8),
            (0.85, 0.8),
            (f64::NAN, 0.8),
            (0.95, 0.0),
            (0.95, 1.0),
            (0.95, f64::NAN),
        ] {
            assert_eq!(
                gate_sample_size(0.9, p, 0.95, power, 1000),
                None,
                "{p} {power}"
            );
        }
        assert_eq!(gate_sample_size(0.9, 0.95, 0.95, 0.8, 0), None);
    }
}
