//! Power and sample size of the fixed-n PR gate "pass iff the one-sided Wilson lower bound
//! ≥ t" (stats.md §1.4, §2.3): how many passes a run of n trials needs, how often a case
//! whose true rate is p gets them, and how many trials make that likely.

use serde::{Deserialize, Serialize};

use super::binomial::binomial_sf;
use super::{try_z_one_sided, wilson_with_z};

/// Whether a one-sided gate level is usable: the same range [`super::wilson_lower_bound`]
/// accepts.
fn gate_conf(conf: f64) -> Option<f64> {
    if conf.is_nan() || conf < 0.5 {
        return None;
    }
    try_z_one_sided(conf)
}

/// `x_min(n)` for critical value `z₁`: the closed form of §1.4 as a first guess, then
/// settled against the lower bound itself, so that the count agrees with what the gate
/// computes even where the closed form sits within rounding of an integer.
fn min_successes_with_z(n: u64, t: f64, z: f64) -> Option<u64> {
    let passes = |x: u64| wilson_with_z(x, n, z).is_some_and(|iv| iv.lo >= t);
    let nf = n as f64;
    let guess = (nf * t + z * (nf * t * (1.0 - t)).sqrt()).ceil();
    let mut x = if guess.is_finite() {
        guess.clamp(0.0, nf) as u64
    } else {
        n
    };
    while x > 0 && passes(x - 1) {
        x -= 1;
    }
    while x <= n && !passes(x) {
        x += 1;
    }
    (x <= n).then_some(x)
}

fn valid_threshold(t: f64) -> bool {
    t > 0.0 && t < 1.0
}

/// The fewest passes out of `n` trials with which the fixed-n gate passes: the smallest x
/// whose one-sided Wilson lower bound at `conf` is at least `t`. Equivalently (stats.md
/// §1.4, proved there and checked exhaustively) `⌈n·t + z₁·√(n·t·(1−t))⌉`, the one-sided
/// score test of `p ≤ t`; it is this closed form, confirmed against
/// [`super::wilson_lower_bound`] so the two can never disagree.
///
/// `Some(x)` with `x ≤ n`, or `None` when no count can pass at this n (a perfect run needs
/// `n ≥ t·z₁²/(1−t)`, e.g. 25 trials for t = 0.9 at 95%) or the arguments are undefined:
/// `n = 0`, `t` not strictly inside (0, 1), `conf` not in [0.5, 1).
pub fn gate_min_successes(n: u64, t: f64, conf: f64) -> Option<u64> {
    if n == 0 || !valid_threshold(t) {
        return None;
    }
    min_successes_with_z(n, t, gate_conf(conf)?)
}

/// `P(Bin(n, p) ≥ x_min(n))` with `x_min` from [`min_successes_with_z`]; 0 when no count
/// passes.
fn power_with_z(n: u64, t: f64, p: f64, z: f64) -> Option<f64> {
    match min_successes_with_z(n, t, z) {
        Some(x) => binomial_sf(x, n, p),
        None => Some(0.0),
    }
}

/// Exact probability that a case whose true pass rate is `p` passes the fixed-n gate at
/// `n` trials: `P(Bin(n, p) ≥ x_min(n))` (stats.md §2.3). At `p = t` this is the gate's
/// false-pass rate, which for the Wilson gate oscillates around `1 − conf` rather than
/// staying below it (§1.4).
///
/// The binomial tail is summed exactly (relative precision about 1e-14, also for n in the
/// hundreds of thousands). `Some(0.0)` when no count can pass at this n. `None` when
/// `n = 0`, `t` is not strictly inside (0, 1), `p` is not in [0, 1], or `conf` is not in
/// [0.5, 1).
pub fn gate_power(n: u64, t: f64, p: f64, conf: f64) -> Option<f64> {
    if n == 0 || !valid_threshold(t) || !(0.0..=1.0).contains(&p) {
        return None;
    }
    power_with_z(n, t, p, gate_conf(conf)?)
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
    /// delivered, which for Wilson is near but not always below `1 − conf`.
    pub false_pass_at_threshold: f64,
    /// The normal-approximation n, `[(z₁₋α√(t(1−t)) + z_power√(p(1−p))) / (p − t)]²`, before
    /// rounding: shown for comparison only; it is off by −18% to +15% in §2.3's table.
    pub normal_approx: f64,
}

/// Exact sample size for the fixed-n Wilson gate (stats.md §2.3): the first n at which a
/// case of true rate `p` passes with probability ≥ `power`, and the n from which it keeps
/// doing so.
///
/// The normal-approximation formula misses the exact n by up to a fifth, and because power
/// is sawtoothed in n a single "n" is not enough: both the first n and the stable one are
/// reported. "Stable" is checked up to a horizon of `2·first + 100` trials. Power's dips
/// shrink as n grows, and in every row of §2.3 (48 settings) the last dip below target is
/// within `1.4·first`, so the horizon has room to spare; it is not a proof that no dip
/// exists further out.
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
    if !(alternative && power > 0.0 && power < 1.0) {
        return None;
    }
    let z = gate_conf(conf)?;
    let z_power = try_z_one_sided(power)?;
    let reaches = |n: u64| power_with_z(n, t, p, z).is_some_and(|pw| pw >= power);
    let first = (1..=n_cap).find(|&n| reaches(n))?;
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
    let min_successes_at_first = min_successes_with_z(first, t, z)?;
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
    use super::super::test_support::{close, f, rows, u, vectors};
    use super::super::wilson_lower_bound;
    use super::*;

    #[test]
    fn min_successes_match_vectors() {
        let v = vectors();
        let table = v["gate_min_x_conf95"].as_object().expect("object");
        assert_eq!(table.len(), 40);
        for (key, want) in table {
            let (n, t) = key.split_once('_').expect("n_t");
            let (n, t): (u64, f64) = (n.parse().unwrap(), t.parse().unwrap());
            assert_eq!(gate_min_successes(n, t, 0.95), want.as_u64(), "{key}");
        }
    }

    #[test]
    fn min_successes_is_the_closed_form_and_the_lower_bound() {
        // §1.4's exhaustive check, on a grid a debug build runs quickly.
        for conf in [0.9, 0.95, 0.99] {
            let z = super::super::z_one_sided(conf);
            for t in [0.5, 0.8, 0.9, 0.95, 0.99] {
                for n in (1..=300u64).chain([500, 1000, 2000]) {
                    let nf = n as f64;
                    let closed = (nf * t + z * (nf * t * (1.0 - t)).sqrt()).ceil() as u64;
                    let got = gate_min_successes(n, t, conf);
                    assert_eq!(got, (closed <= n).then_some(closed), "{n} {t} {conf}");
                    if let Some(x) = got {
                        assert!(wilson_lower_bound(x, n, conf).unwrap() >= t);
                        if x > 0 {
                            assert!(wilson_lower_bound(x - 1, n, conf).unwrap() < t);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn gate_power_matches_the_fixed_n_comparators() {
        // §6.3 / §8: n = 284, x_min = 264; power 0.9507 at p = 0.95, size 0.0539 at 0.90.
        close(
            gate_power(284, 0.9, 0.95, 0.95).unwrap(),
            0.950683280861071,
            1e-12,
            "power",
        );
        close(
            gate_power(284, 0.9, 0.9, 0.95).unwrap(),
            0.0539297991845114,
            1e-12,
            "size",
        );
        // §1.4: the Wilson gate's worst false-pass rate, 0.0718 at n = 25, t = 0.9.
        close(
            gate_power(25, 0.9, 0.9, 0.95).unwrap(),
            0.0718,
            5e-5,
            "n=25",
        );
        // No count passes below 25 trials at t = 0.9: power 0 whatever p is.
        assert_eq!(gate_power(24, 0.9, 1.0, 0.95), Some(0.0));
        assert_eq!(gate_power(25, 0.9, 1.0, 0.95), Some(1.0));
        // Large n: finite, and monotone in p.
        let n = 100_000;
        let lo = gate_power(n, 0.9, 0.901, 0.95).unwrap();
        let hi = gate_power(n, 0.9, 0.903, 0.95).unwrap();
        assert!(0.0 < lo && lo < hi && hi < 1.0, "{lo} {hi}");
        // At p = t the size stays near α.
        let size = gate_power(n, 0.9, 0.9, 0.95).unwrap();
        assert!((0.045..0.055).contains(&size), "{size}");
    }

    #[test]
    fn sample_sizes_match_every_vector() {
        let v = vectors();
        let rows = rows(&v, "gate_sample_size");
        assert_eq!(rows.len(), 48);
        for row in rows {
            let (t, conf, p, power) = (f(row, "t"), f(row, "conf"), f(row, "p"), f(row, "power"));
            let s = gate_sample_size(t, p, conf, power, 10_000).expect("defined");
            assert_eq!(s.first, u(row, "n_exact_first"), "first {row}");
            assert_eq!(s.stable, u(row, "n_exact_stable"), "stable {row}");
            assert_eq!(
                s.min_successes_at_first,
                u(row, "xmin_at_n_first"),
                "x_min {row}"
            );
            close(
                s.false_pass_at_threshold,
                f(row, "exact_size_at_t_for_n_first"),
                1e-12,
                &format!("size {row}"),
            );
            close(
                s.normal_approx,
                f(row, "n_normal_approx"),
                1e-9,
                &format!("normal {row}"),
            );
        }
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
