//! pass@k and pass^k (stats.md §5) and the interval of a ratio of counts clustered by trial
//! (a retry rate: retries over calls, several calls per trial).

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::{Interval, rate_interval, valid_conf};

/// Unbiased pass@k of one case with `c` passes in `n` trials: the chance that at least one
/// of k trials drawn without replacement passes, `1 − C(n−c, k)/C(n, k)` in product form.
/// `None` when `k` is 0 or exceeds `n`, or `c > n`.
pub fn pass_at_k(n: u64, c: u64, k: u64) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    if n - c < k {
        return Some(1.0);
    }
    let miss: f64 = ((n - c + 1)..=n)
        .map(|i| 1.0 - k as f64 / i as f64)
        .product();
    Some(1.0 - miss)
}

/// Unbiased pass^k of one case: the chance that all of k trials drawn without replacement
/// pass, `C(c, k)/C(n, k)` in product form (τ-bench's reliability metric).
pub fn pass_hat_k(n: u64, c: u64, k: u64) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    if c < k {
        return Some(0.0);
    }
    Some((0..k).map(|i| (c - i) as f64 / (n - i) as f64).product())
}

/// An interval for `p^k` (pass^k) and `1 − (1 − p)^k` (pass@k) of one case: the Wilson
/// interval of its pass rate p mapped through the (monotone) function, which keeps its
/// coverage for the population quantity, then widened where needed to hold the unbiased
/// estimates [`pass_at_k`] and [`pass_hat_k`] the report prints beside it.
///
/// The unbiased estimators vary far more than the plug-in `1 − (1 − c/n)^k` when k is close
/// to n, and can fall outside the mapped interval: 1 pass in 4 trials gives pass@4 = 1 (all
/// four were drawn) against a mapped interval of [0.025, 0.992]. An estimate printed outside
/// its own interval reads as an error, and widening only raises coverage. `None` when the
/// estimates are undefined (`k` is 0 or exceeds `n`, `c > n`) or `conf` is not in (0, 1).
pub fn pass_k_intervals(n: u64, c: u64, k: u64, conf: f64) -> Option<(Interval, Interval)> {
    let (est_at, est_hat) = (pass_at_k(n, c, k)?, pass_hat_k(n, c, k)?);
    let p = rate_interval(c, n, conf)?;
    let k = k as i32;
    let at = Interval {
        lo: (1.0 - (1.0 - p.lo).powi(k)).min(est_at),
        hi: (1.0 - (1.0 - p.hi).powi(k)).max(est_at),
    };
    let hat = Interval {
        lo: p.lo.powi(k).min(est_hat),
        hi: p.hi.powi(k).max(est_hat),
    };
    Some((at, hat))
}

/// A rate of events over opportunities pooled across trials (retries over calls) with an
/// interval that respects the clustering: the Wilson interval of the pooled counts, widened
/// to the cluster-robust ratio-estimator interval (trials as clusters, t with m − 1 degrees
/// of freedom) where that is wider, so calls of one trial are not counted as independent
/// evidence. `counts` holds (events, opportunities) per trial; trials with no opportunity
/// carry no information and are ignored. `None` when there is no opportunity at all.
pub fn clustered_ratio_interval(counts: &[(u64, u64)], conf: f64) -> Option<(f64, Interval)> {
    let used: Vec<(f64, f64)> = counts
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|&(x, n)| (x as f64, n as f64))
        .collect();
    let x: f64 = used.iter().map(|(x, _)| x).sum();
    let n: f64 = used.iter().map(|(_, n)| n).sum();
    if n == 0.0 || !valid_conf(conf) {
        return None;
    }
    let r = x / n;
    let mut interval = rate_interval(x as u64, n as u64, conf)?;
    let m = used.len();
    if m >= 2 {
        let mf = m as f64;
        let mean_n = n / mf;
        let ss: f64 = used
            .iter()
            .map(|(xi, ni)| ((xi - r * ni) / mean_n).powi(2))
            .sum();
        let se = (ss / (mf * (mf - 1.0))).sqrt();
        if let Ok(t) = StudentsT::new(0.0, 1.0, (m - 1) as f64) {
            let half = t.inverse_cdf((1.0 + conf) / 2.0) * se;
            interval.lo = interval.lo.min((r - half).max(0.0));
            interval.hi = interval.hi.max((r + half).min(1.0));
        }
    }
    Some((r, interval))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{close, f, rows, u, vectors};

    #[test]
    fn pass_k_matches_the_reference_vectors() {
        let v = vectors();
        for row in rows(&v, "passk") {
            let (n, c, k) = (u(row, "n"), u(row, "c"), u(row, "k"));
            close(
                pass_at_k(n, c, k).unwrap(),
                f(row, "pass_at_k"),
                1e-12,
                "pass@k",
            );
            close(
                pass_hat_k(n, c, k).unwrap(),
                f(row, "pass_hat_k"),
                1e-12,
                "pass^k",
            );
        }
        assert_eq!(pass_at_k(3, 1, 4), None);
        assert_eq!(pass_hat_k(3, 1, 0), None);
    }

    #[test]
    fn pass_k_intervals_map_the_wilson_interval() {
        let (at, hat) = pass_k_intervals(10, 5, 2, 0.95).unwrap();
        let p = rate_interval(5, 10, 0.95).unwrap();
        close(hat.lo, p.lo * p.lo, 1e-12, "pass^2 lo");
        close(at.hi, 1.0 - (1.0 - p.hi).powi(2), 1e-12, "pass@2 hi");
        assert!(hat.lo < pass_hat_k(10, 5, 2).unwrap() && pass_hat_k(10, 5, 2).unwrap() < hat.hi);
    }

    #[test]
    fn an_estimate_never_falls_outside_its_own_interval() {
        // The case: 1 of 4 at k = 4 printed "pass@k 1.000 [0.025, 0.992]".
        let (at, _) = pass_k_intervals(4, 1, 4, 0.95).unwrap();
        assert_eq!(at.hi, 1.0);
        close(
            at.lo,
            1.0 - (1.0 - rate_interval(1, 4, 0.95).unwrap().lo).powi(4),
            1e-12,
            "lo",
        );
        // pass^5 of 3 in 5 is 0 (fewer than five passes), below the mapped lower end.
        let (_, hat) = pass_k_intervals(5, 3, 5, 0.95).unwrap();
        assert_eq!(hat.lo, 0.0);
        for n in 1..=30u64 {
            for c in 0..=n {
                for k in 1..=n {
                    let (at, hat) = pass_k_intervals(n, c, k, 0.95).unwrap();
                    assert!(at.contains(pass_at_k(n, c, k).unwrap()), "{n} {c} {k}");
                    assert!(hat.contains(pass_hat_k(n, c, k).unwrap()), "{n} {c} {k}");
                }
            }
        }
    }

    #[test]
    fn the_ratio_interval_is_never_narrower_than_wilson_and_widens_with_clustering() {
        // Even spread: 1 retry in 10 calls in each of 10 trials.
        let even = vec![(1, 10); 10];
        let (r, i) = clustered_ratio_interval(&even, 0.95).unwrap();
        let w = rate_interval(10, 100, 0.95).unwrap();
        close(r, 0.1, 1e-12, "rate");
        assert_eq!((i.lo, i.hi), (w.lo, w.hi));
        // The same 10 retries all in one trial: far less evidence about the rate.
        let mut lumped = vec![(0, 10); 9];
        lumped.push((10, 10));
        let (r2, i2) = clustered_ratio_interval(&lumped, 0.95).unwrap();
        close(r2, 0.1, 1e-12, "rate");
        assert!(i2.hi > w.hi && i2.lo <= w.lo, "{i2:?} vs {w:?}");
        assert_eq!(clustered_ratio_interval(&[(0, 0)], 0.95), None);
    }
}
