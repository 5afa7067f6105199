//! Exact binomial probabilities for the decision statistics: McNemar's test (stats.md §3.2),
//! gate power and false-pass rates (§1.4, §2.3).
//!
//! statrs' `Binomial::cdf` goes through an incomplete beta whose continued fraction is cut
//! off after 140 terms (see `MAX_EXACT_N` in the parent module), and a tail computed as
//! `1 − cdf` loses all relative precision once the tail is below 1e-16. Here each tail is a
//! direct sum of probabilities, started at its largest term and scaled by it, so nothing
//! underflows before the end and small tails keep their relative precision. The starting
//! term is Loader's saddle-point form of the binomial probability (C. Loader, "Fast and
//! accurate computation of binomial probabilities", 2000; the algorithm behind R's
//! `dbinom`), which stays accurate to about 1e-14 relative for n in the millions, where
//! `ln Γ` differences would lose several digits to cancellation.

use statrs::function::gamma::ln_gamma;

/// ln √(2π).
const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;

/// Terms of a tail smaller than this fraction of the running sum no longer change an f64.
const NEGLIGIBLE: f64 = 1e-17;

/// Stirling's-series error `δ(n) = ln n! − ln(√(2πn)·(n/e)ⁿ)` for `n ≥ 1`.
fn stirling_error(n: f64) -> f64 {
    const S0: f64 = 1.0 / 12.0;
    const S1: f64 = 1.0 / 360.0;
    const S2: f64 = 1.0 / 1260.0;
    const S3: f64 = 1.0 / 1680.0;
    const S4: f64 = 1.0 / 1188.0;
    // δ(1..=15) to full precision (50-digit decimal arithmetic; the same values as R's
    // `sferr_halves`): below 16 the series converges too slowly and ln Γ differences cancel
    // to ~3e-14.
    const SMALL: [f64; 15] = [
        0.081_061_466_795_327_26,
        0.041_340_695_955_409_3,
        0.027_677_925_684_998_34,
        0.020_790_672_103_765_093,
        0.016_644_691_189_821_193,
        0.013_876_128_823_070_748,
        0.011_896_709_945_891_77,
        0.010_411_265_261_972_096,
        0.009_255_462_182_712_733,
        0.008_330_563_433_362_87,
        0.007_573_675_487_951_841,
        0.006_942_840_107_209_53,
        0.006_408_994_188_004_207,
        0.005_951_370_112_758_847_5,
        0.005_554_733_551_962_801,
    ];
    if n <= 15.0 {
        if n == n.floor() && n >= 1.0 {
            return SMALL[n as usize - 1];
        }
        return ln_gamma(n + 1.0) - (n + 0.5) * n.ln() + n - LN_SQRT_2PI;
    }
    let nn = n * n;
    if n > 500.0 {
        (S0 - S1 / nn) / n
    } else if n > 80.0 {
        (S0 - (S1 - S2 / nn) / nn) / n
    } else if n > 35.0 {
        (S0 - (S1 - (S2 - S3 / nn) / nn) / nn) / n
    } else {
        (S0 - (S1 - (S2 - (S3 - S4 / nn) / nn) / nn) / nn) / n
    }
}

/// The deviance term `x·ln(x/np) + np − x`, by its series where the two nearly cancel.
fn deviance(x: f64, np: f64) -> f64 {
    if (x - np).abs() < 0.1 * (x + np) {
        let mut v = (x - np) / (x + np);
        let mut s = (x - np) * v;
        let mut ej = 2.0 * x * v;
        v *= v;
        for j in 1..1000 {
            ej *= v;
            let next = s + ej / f64::from(2 * j + 1);
            if next == s {
                return next;
            }
            s = next;
        }
        s
    } else {
        x * (x / np).ln() + np - x
    }
}

/// `ln P(X = k)`, X ~ Bin(n, p), with `q = 1 − p` passed separately so that neither loses
/// precision to the subtraction. Requires `k ≤ n` and p, q in [0, 1].
fn ln_pmf_pq(k: u64, n: u64, p: f64, q: f64) -> f64 {
    if p == 0.0 {
        return if k == 0 { 0.0 } else { f64::NEG_INFINITY };
    }
    if q == 0.0 {
        return if k == n { 0.0 } else { f64::NEG_INFINITY };
    }
    let nf = n as f64;
    if k == 0 {
        return nf * if p < 0.5 { (-p).ln_1p() } else { q.ln() };
    }
    if k == n {
        return nf * if q < 0.5 { (-q).ln_1p() } else { p.ln() };
    }
    let (kf, rest) = (k as f64, (n - k) as f64);
    let lc = stirling_error(nf)
        - stirling_error(kf)
        - stirling_error(rest)
        - deviance(kf, nf * p)
        - deviance(rest, nf * q);
    let lf = 2.0 * LN_SQRT_2PI + kf.ln() + (-kf / nf).ln_1p();
    lc - 0.5 * lf
}

/// `P(X ≥ k)` for `k` at or above the mode, where the terms only shrink: summed upwards,
/// relative to the first, until they stop mattering.
fn tail_from_mode_up(k: u64, n: u64, p: f64, q: f64) -> f64 {
    let ratio = p / q;
    let (mut term, mut sum) = (1.0_f64, 1.0_f64);
    let mut i = k;
    while i < n && term > sum * NEGLIGIBLE {
        term *= (n - i) as f64 / (i + 1) as f64 * ratio;
        sum += term;
        i += 1;
    }
    (ln_pmf_pq(k, n, p, q) + sum.ln()).exp()
}

/// `P(X ≥ k)` with `q = 1 − p` given.
fn upper_tail(k: u64, n: u64, p: f64, q: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > n || p == 0.0 {
        return 0.0;
    }
    if q == 0.0 {
        return 1.0;
    }
    // The mode is ⌊(n+1)p⌋; from there on the probabilities do not increase.
    let mode = (((n as f64) + 1.0) * p).floor().min(n as f64) as u64;
    if k >= mode {
        tail_from_mode_up(k, n, p, q)
    } else {
        // Below the mode the tail holds at least about half the mass, so its complement,
        // the lower tail P(X ≤ k−1) = P(n − X ≥ n−k+1), is the short sum.
        (1.0 - tail_from_mode_up(n - k + 1, n, q, p)).clamp(0.0, 1.0)
    }
}

fn valid_p(p: f64) -> bool {
    (0.0..=1.0).contains(&p)
}

/// `P(X = k)`, X ~ Bin(n, p). `None` when `p` is NaN or outside [0, 1]; 0 when `k > n`.
pub fn binomial_pmf(k: u64, n: u64, p: f64) -> Option<f64> {
    if !valid_p(p) {
        return None;
    }
    if k > n {
        return Some(0.0);
    }
    Some(ln_pmf_pq(k, n, p, 1.0 - p).exp())
}

/// Survival function `P(X ≥ k)`, X ~ Bin(n, p) (note: `≥ k`, the form gates and p-values
/// ask for). `None` when `p` is NaN or outside [0, 1].
pub(crate) fn binomial_sf(k: u64, n: u64, p: f64) -> Option<f64> {
    valid_p(p).then(|| upper_tail(k, n, p, 1.0 - p))
}

/// Distribution function `P(X ≤ k)`, X ~ Bin(n, p). `None` when `p` is NaN or outside
/// [0, 1].
pub(crate) fn binomial_cdf(k: u64, n: u64, p: f64) -> Option<f64> {
    if !valid_p(p) {
        return None;
    }
    if k >= n {
        return Some(1.0);
    }
    // P(X ≤ k) = P(n − X ≥ n − k), and n − X ~ Bin(n, 1 − p).
    Some(upper_tail(n - k, n, 1.0 - p, p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use statrs::distribution::{Binomial, Discrete, DiscreteCDF};

    #[test]
    fn small_n_at_one_half_is_exact() {
        // At p = ½ every probability is C(n, k)/2ⁿ, exact in f64 for n ≤ 50.
        for n in 0..=50u64 {
            let mut c = 1.0_f64; // C(n, k)
            let scale = 0.5_f64.powi(n as i32);
            let mut below = 0.0;
            for k in 0..=n {
                let pmf = c * scale;
                let got = binomial_pmf(k, n, 0.5).unwrap();
                // exp of a log near −35 carries a few ulps of 35: ~1e-14 relative.
                assert!(
                    (got - pmf).abs() <= 4e-14 * pmf,
                    "pmf {k}/{n}: {got} vs {pmf}"
                );
                below += pmf;
                let cdf = binomial_cdf(k, n, 0.5).unwrap();
                assert!((cdf - below).abs() <= 4e-14 * below, "cdf {k}/{n}");
                let sf = binomial_sf(k + 1, n, 0.5).unwrap();
                let want = 1.0 - below;
                assert!((sf - want).abs() <= 1e-14, "sf {}/{n}", k + 1);
                c = c * (n - k) as f64 / (k + 1) as f64;
            }
        }
    }

    #[test]
    fn agrees_with_statrs_and_the_values_checked_against_scipy() {
        // stats.md §8: values scipy and statrs agree on.
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b;
        assert!(close(
            binomial_sf(264, 284, 0.95).unwrap(),
            0.950683280861071
        ));
        assert!(close(
            binomial_sf(264, 284, 0.90).unwrap(),
            0.0539297991845114
        ));
        assert!(close(
            2.0 * binomial_cdf(6, 22, 0.5).unwrap(),
            0.0524787902832031
        ));
        for n in [1u64, 7, 60, 333, 1000] {
            for p in [0.001, 0.1, 0.5, 0.9, 0.97, 0.999] {
                let b = Binomial::new(p, n).unwrap();
                for k in 0..=n {
                    let (pmf, cdf) = (
                        binomial_pmf(k, n, p).unwrap(),
                        binomial_cdf(k, n, p).unwrap(),
                    );
                    assert!(
                        (pmf - b.pmf(k)).abs() <= 1e-11 * b.pmf(k).max(1e-300),
                        "{k}/{n}@{p}"
                    );
                    assert!((cdf - b.cdf(k)).abs() <= 1e-11, "{k}/{n}@{p}");
                }
            }
        }
    }

    #[test]
    fn large_n_keeps_precision() {
        // P(X = n/2) at p = ½ has the asymptotic series √(2/(πn))·(1 − 1/(4n) + 1/(32n²) + …).
        let n = 100_000u64;
        let nf = n as f64;
        let series = (2.0 / (std::f64::consts::PI * nf)).sqrt()
            * (1.0 - 1.0 / (4.0 * nf) + 1.0 / (32.0 * nf * nf));
        let centre = binomial_pmf(n / 2, n, 0.5).unwrap();
        assert!(
            (centre - series).abs() <= 1e-12 * series,
            "{centre} vs {series}"
        );
        // Symmetry: P(X ≤ n/2) = ½ + ½·P(X = n/2).
        let half = binomial_cdf(n / 2, n, 0.5).unwrap();
        assert!((half - (0.5 + 0.5 * centre)).abs() <= 1e-14);
        // Far tails keep relative precision where 1 − cdf would be 0.
        for p in [0.9, 0.99] {
            for k in [0u64, 1, 50_000, 89_000, 90_000, 91_000, n - 1, n] {
                let sf = binomial_sf(k, n, p).unwrap();
                let cdf = if k == 0 {
                    0.0
                } else {
                    binomial_cdf(k - 1, n, p).unwrap()
                };
                assert!((sf + cdf - 1.0).abs() <= 1e-13, "{k} {p}: {sf} + {cdf}");
                assert!(sf.is_finite() && (0.0..=1.0).contains(&sf));
            }
        }
        let deep = binomial_sf(91_500, n, 0.9).unwrap();
        assert!(deep > 0.0 && deep < 1e-40, "{deep}");
        let pmf_sum: f64 = (85_000..=95_000)
            .map(|k| binomial_pmf(k, n, 0.9).unwrap())
            .sum();
        assert!((pmf_sum - 1.0).abs() < 1e-12, "{pmf_sum}");
    }

    #[test]
    fn degenerate_and_invalid_arguments() {
        assert_eq!(binomial_sf(0, 0, 0.3), Some(1.0));
        assert_eq!(binomial_sf(1, 0, 0.3), Some(0.0));
        assert_eq!(binomial_cdf(0, 0, 0.3), Some(1.0));
        assert_eq!(binomial_sf(3, 5, 0.0), Some(0.0));
        assert_eq!(binomial_sf(5, 5, 1.0), Some(1.0));
        assert_eq!(binomial_cdf(4, 5, 1.0), Some(0.0));
        assert_eq!(binomial_pmf(6, 5, 0.5), Some(0.0));
        for p in [f64::NAN, -0.1, 1.1, f64::INFINITY] {
            assert_eq!(binomial_sf(1, 5, p), None);
            assert_eq!(binomial_cdf(1, 5, p), None);
            assert_eq!(binomial_pmf(1, 5, p), None);
        }
    }
}
