//! Comparing two variants (two tool descriptions, two prompts) on the same cases, stats.md §3.
//!
//! Which function fits depends on the design (§3.3 "Decide the estimand first"):
//! - many independent trials of one case under each variant: [`newcombe_interval`] (§3.1);
//! - one trial per case under each variant: [`newcombe_paired_interval`] with
//!   [`mcnemar_exact_p`] / [`mcnemar_mid_p`] (§3.2);
//! - a suite with many trials per case: [`paired_mean_difference`] over case-level
//!   differences, cases as the units (§3.3), planned with [`cases_for_paired_effect`].

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::binomial::{binomial_cdf, binomial_pmf};
use super::{Interval, first_true, t_two_sided, try_z_one_sided, try_z_two_sided, valid_conf};

/// Newcombe's hybrid score interval for `p₁ − p₂` from two independent samples (Newcombe
/// 1998, method 10; stats.md §3.1): square-and-add of the two Wilson intervals' distances
/// from their estimates. It is what statsmodels calls `method="newcomb"`; unlike the Wald
/// difference it stays inside [−1, 1] and behaves at 0/n and n/n, where tool-selection
/// rates live.
///
/// `None` when either `n` is 0, either `x > n`, or `conf` is not strictly inside (0, 1).
pub fn newcombe_interval(x1: u64, n1: u64, x2: u64, n2: u64, conf: f64) -> Option<Interval> {
    let w1 = super::wilson_interval(x1, n1, conf)?;
    let w2 = super::wilson_interval(x2, n2, conf)?;
    let p1 = x1 as f64 / n1 as f64;
    let p2 = x2 as f64 / n2 as f64;
    let d = p1 - p2;
    let lo = d - ((p1 - w1.lo).powi(2) + (w2.hi - p2).powi(2)).sqrt();
    let hi = d + ((w1.hi - p1).powi(2) + (p2 - w2.lo).powi(2)).sqrt();
    Some(Interval {
        lo: lo.clamp(-1.0, 1.0),
        hi: hi.clamp(-1.0, 1.0),
    })
}

/// The 2×2 table of a paired binary design: each case run once under variant A and once
/// under B (Newcombe 1998b's e, f, g, h; stats.md §3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairedCounts {
    /// e: cases both variants pass.
    pub both: u64,
    /// f: cases only A passes.
    pub a_only: u64,
    /// g: cases only B passes.
    pub b_only: u64,
    /// h: cases both fail.
    pub neither: u64,
}

impl PairedCounts {
    /// Number of pairs n = e + f + g + h; `None` if it overflows.
    pub fn total(&self) -> Option<u64> {
        self.both
            .checked_add(self.a_only)?
            .checked_add(self.b_only)?
            .checked_add(self.neither)
    }

    /// `p̂_A − p̂_B = (f − g)/n`; `None` when there are no pairs.
    pub fn difference(&self) -> Option<f64> {
        let n = self.total().filter(|&n| n > 0)?;
        Some((self.a_only as f64 - self.b_only as f64) / n as f64)
    }
}

/// Newcombe's square-and-add interval for the paired difference `p_A − p_B` (Newcombe
/// 1998b, method 10, as implemented in R `contingencytables`; stats.md §3.2): the two
/// marginal Wilson intervals combined with the correlation correction φ. Closed form, no
/// root-finding, and it matches the published values to 4 dp.
///
/// Ignoring the pairing (calling [`newcombe_interval`] on the marginals) would be valid but
/// wider whenever the variants agree on most cases, which is the usual situation.
///
/// `None` when there are no pairs (or their count overflows) or `conf` is not strictly
/// inside (0, 1).
pub fn newcombe_paired_interval(counts: &PairedCounts, conf: f64) -> Option<Interval> {
    let n = counts.total().filter(|&n| n > 0)?;
    let PairedCounts {
        both: e,
        a_only: f,
        b_only: g,
        neither: h,
    } = *counts;
    // e + f and e + g are at most n, which did not overflow.
    let wa = super::wilson_interval(e + f, n, conf)?;
    let wb = super::wilson_interval(e + g, n, conf)?;
    let nf = n as f64;
    let (pa, pb) = ((e + f) as f64 / nf, (e + g) as f64 / nf);
    let (ef, ff, gf, hf) = (e as f64, f as f64, g as f64, h as f64);
    let a = ef * hf - ff * gf;
    // √ of each pair of margins separately: the product of all four overflows sooner.
    let d = ((ef + ff) * (gf + hf)).sqrt() * ((ef + gf) * (ff + hf)).sqrt();
    let phi = if d == 0.0 {
        0.0
    } else if a > nf / 2.0 {
        (a - nf / 2.0) / d
    } else if a < 0.0 {
        a / d
    } else {
        0.0
    };
    let diff = pa - pb;
    let combine = |x: f64, y: f64| (x * x - 2.0 * phi * x * y + y * y).max(0.0).sqrt();
    let lo = diff - combine(pa - wa.lo, wb.hi - pb);
    let hi = diff + combine(wa.hi - pa, pb - wb.lo);
    Some(Interval {
        lo: lo.clamp(-1.0, 1.0),
        hi: hi.clamp(-1.0, 1.0),
    })
}

/// The binomial ingredients of McNemar's test: `(P(Bin(f+g, ½) ≤ k), P(Bin(f+g, ½) = k))`
/// with `k = min(f, g)`, or `None` when f + g is 0 or overflows.
fn mcnemar_tail(f: u64, g: u64) -> Option<(f64, f64)> {
    let m = f.checked_add(g).filter(|&m| m > 0)?;
    let k = f.min(g);
    Some((binomial_cdf(k, m, 0.5)?, binomial_pmf(k, m, 0.5)?))
}

/// McNemar's exact two-sided p-value from the discordant pairs `f` (only A passes) and `g`
/// (only B passes): `min(1, 2·P(Bin(f+g, ½) ≤ min(f, g)))` (stats.md §3.2; equal to scipy
/// `binomtest(f, f+g, 0.5)`). Only discordant pairs carry evidence about which variant is
/// better; the concordant ones enter the interval, not the test.
///
/// 1 when `f + g = 0` (no evidence either way). The binomial tail is summed exactly in log
/// space, so it stays accurate for f + g in the millions. NaN only if `f + g` overflows a
/// `u64`.
pub fn mcnemar_exact_p(f: u64, g: u64) -> f64 {
    if f == 0 && g == 0 {
        return 1.0;
    }
    match mcnemar_tail(f, g) {
        Some((below, _)) => (2.0 * below).min(1.0),
        None => f64::NAN,
    }
}

/// McNemar's mid-p value, `2·[P(Bin(f+g, ½) ≤ k) − ½·P(Bin(f+g, ½) = k)]`, k = min(f, g)
/// (stats.md §3.2): the exact test counts the observed table fully and is conservative;
/// mid-p counts it half and holds its level closely on average. 1 when `f + g = 0`; NaN only
/// if `f + g` overflows a `u64`.
pub fn mcnemar_mid_p(f: u64, g: u64) -> f64 {
    if f == 0 && g == 0 {
        return 1.0;
    }
    match mcnemar_tail(f, g) {
        Some((below, at)) => (2.0 * below - at).clamp(0.0, 1.0),
        None => f64::NAN,
    }
}

/// The paired suite-level comparison of stats.md §3.3: the mean of case-level differences
/// with its t(m−1) test and interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PairedDifference {
    /// d̄, the mean of the case-level differences.
    pub mean: f64,
    /// Sample standard deviation of the differences (divisor m − 1).
    pub sd: f64,
    /// `sd / √m`.
    pub se: f64,
    /// Degrees of freedom, m − 1.
    pub df: usize,
    /// `d̄ / se`. `None` when every difference is the same (sd = 0), where the statistic is
    /// 0/0 or ±∞; `p_two_sided` then says 1 (all zero) or 0 (all equal and non-zero).
    pub t_stat: Option<f64>,
    /// Two-sided p-value of `H₀: mean difference = 0` from t(m−1).
    pub p_two_sided: f64,
    /// `d̄ ± t_{m−1, 1−α/2}·se`, clipped only to [−1, 1] (differences of rates cannot leave
    /// it).
    pub interval: Interval,
}

/// Mean case-level difference `d_i = p̂_{A,i} − p̂_{B,i}` with a t(m−1) test and interval
/// (stats.md §3.3): cases are the independent units, so trials of one case under one
/// variant do not count as fresh evidence about the suite. This equals OLS `y ~ variant`
/// with case-clustered (CR1) errors up to the factor given in §3.3, and with few cases the
/// t(m−1) critical value is what keeps it honest.
///
/// `None` when fewer than two differences, any difference is NaN or outside [−1, 1], or
/// `conf` is not strictly inside (0, 1).
pub fn paired_mean_difference(diffs: &[f64], conf: f64) -> Option<PairedDifference> {
    let m = diffs.len();
    if m < 2 || !valid_conf(conf) || diffs.iter().any(|d| !(-1.0..=1.0).contains(d)) {
        return None;
    }
    let mf = m as f64;
    let mean = diffs.iter().sum::<f64>() / mf;
    let sd = (diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (mf - 1.0)).sqrt();
    let se = sd / mf.sqrt();
    let df = m - 1;
    let crit = t_two_sided(df as u64, conf)?;
    let (t_stat, p_two_sided) = if se > 0.0 {
        let t = mean / se;
        let dist = StudentsT::new(0.0, 1.0, df as f64).ok()?;
        (Some(t), (2.0 * dist.sf(t.abs())).min(1.0))
    } else if mean == 0.0 {
        (None, 1.0)
    } else {
        (None, 0.0)
    };
    Some(PairedDifference {
        mean,
        sd,
        se,
        df,
        t_stat,
        p_two_sided,
        interval: Interval {
            lo: (mean - crit * se).clamp(-1.0, 1.0),
            hi: (mean + crit * se).clamp(-1.0, 1.0),
        },
    })
}

/// One-sided Student-t quantile `t_{df, p}`.
fn t_quantile(df: u64, p: f64) -> Option<f64> {
    if df == 0 || !(p > 0.0 && p < 1.0) {
        return None;
    }
    let t = StudentsT::new(0.0, 1.0, df as f64).ok()?.inverse_cdf(p);
    t.is_finite().then_some(t)
}

/// Cases needed for the paired t test of [`paired_mean_difference`] (two-sided, level
/// `1 − conf`) to detect a mean case-level difference `effect` with probability `power`,
/// when case-level differences have standard deviation `sd_of_diffs`.
///
/// The smallest m ≥ 2 with `m ≥ ((t_{m−1, 1−α/2} + t_{m−1, power}) · sd / |effect|)²`: the
/// textbook normal-theory sample size with both z's replaced by t(m−1) quantiles and solved
/// for m (t depends on m, so it is a search; both sides are monotone in m, so the first m
/// that satisfies it is the answer). It ignores the noncentral t distribution, which it
/// tracks to about one case: for `effect/sd = 0.5`, α = 0.05 and power 0.8 it gives 34, as
/// does the exact noncentral-t calculation. Use `sd_of_diffs = se·√m₀` from a pilot
/// [`PairedDifference`]. More trials per case shrink sd only down to the between-case spread
/// (stats.md §4.3); beyond that only more cases help.
///
/// `None` when `sd_of_diffs` is not positive and finite, `effect` is zero or not finite,
/// `conf` is not strictly inside (0, 1), `power` is not in [0.5, 1) (a design that misses
/// the effect more often than it finds it is not a design), or the answer exceeds 10¹².
pub fn cases_for_paired_effect(
    sd_of_diffs: f64,
    effect: f64,
    conf: f64,
    power: f64,
) -> Option<u64> {
    if !(sd_of_diffs > 0.0 && sd_of_diffs.is_finite() && effect.is_finite() && effect != 0.0) {
        return None;
    }
    if !(valid_conf(conf) && (0.5..1.0).contains(&power)) {
        return None;
    }
    let ratio = sd_of_diffs / effect.abs();
    let alpha_half = (1.0 + conf) / 2.0;
    let enough = |m: u64| -> bool {
        match (t_quantile(m - 1, alpha_half), t_quantile(m - 1, power)) {
            (Some(a), Some(b)) => m as f64 >= ((a + b) * ratio).powi(2),
            _ => false,
        }
    };
    // Both t quantiles are at least their normal counterparts (power ≥ ½), so the z answer
    // is a lower bound.
    let z = try_z_two_sided(conf)? + try_z_one_sided(power)?;
    let start = ((z * ratio).powi(2)).ceil().max(2.0);
    const LIMIT: u64 = 1_000_000_000_000;
    if start.is_nan() || start >= LIMIT as f64 {
        return None;
    }
    let start = start as u64;
    // Double until the condition holds, then bisect back to the first m that meets it.
    let mut hi = start;
    while !enough(hi) {
        hi = hi.checked_mul(2).filter(|&h| h <= LIMIT)?;
    }
    first_true(start, hi, enough)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{close, f, rows, u, vectors};
    use super::*;

    #[test]
    fn newcombe_independent_matches_vectors() {
        let v = vectors();
        let rows = rows(&v, "newcombe_independent");
        assert_eq!(rows.len(), 15);
        for row in rows {
            let (x1, n1, x2, n2) = (u(row, "x1"), u(row, "n1"), u(row, "x2"), u(row, "n2"));
            let iv = newcombe_interval(x1, n1, x2, n2, f(row, "conf")).expect("defined");
            close(iv.lo, f(row, "lo"), 1e-9, &format!("lo {row}"));
            close(iv.hi, f(row, "hi"), 1e-9, &format!("hi {row}"));
            if let Some(published) = row["published_4dp"].as_array() {
                let (plo, phi) = (
                    published[0].as_f64().unwrap(),
                    published[1].as_f64().unwrap(),
                );
                close(iv.lo, plo, 5e-5, "published lo");
                close(iv.hi, phi, 5e-5, "published hi");
            }
        }
    }

    #[test]
    fn paired_newcombe_and_mcnemar_match_vectors() {
        let v = vectors();
        let rows = rows(&v, "paired");
        assert_eq!(rows.len(), 10);
        for row in rows {
            let c = PairedCounts {
                both: u(row, "both"),
                a_only: u(row, "a_only"),
                b_only: u(row, "b_only"),
                neither: u(row, "neither"),
            };
            close(c.difference().unwrap(), f(row, "diff"), 1e-12, "diff");
            let iv = newcombe_paired_interval(&c, f(row, "conf")).expect("defined");
            close(iv.lo, f(row, "newcombe_lo"), 1e-9, &format!("lo {row}"));
            close(iv.hi, f(row, "newcombe_hi"), 1e-9, &format!("hi {row}"));
            let exact = mcnemar_exact_p(c.a_only, c.b_only);
            let mid = mcnemar_mid_p(c.a_only, c.b_only);
            // Relative: the (0, 30, 0, 0) row's p-values are 1.9e-9 and 9.3e-10.
            let rel = |got: f64, want: f64, what: &str| {
                assert!(
                    (got - want).abs() <= 1e-12 * want,
                    "{what}: {got} vs {want} in {row}"
                )
            };
            rel(exact, f(row, "mcnemar_exact_p"), "exact");
            rel(mid, f(row, "mcnemar_midp"), "mid-p");
            if let Some(published) = row["published"]["newcombe"].as_array() {
                close(iv.lo, published[0].as_f64().unwrap(), 5e-5, "published lo");
                close(iv.hi, published[1].as_f64().unwrap(), 5e-5, "published hi");
            }
        }
    }

    #[test]
    fn mcnemar_matches_vectors() {
        let v = vectors();
        let rows = rows(&v, "mcnemar");
        assert_eq!(rows.len(), 9);
        for row in rows {
            let (fc, gc) = (u(row, "f"), u(row, "g"));
            close(
                mcnemar_exact_p(fc, gc),
                f(row, "exact"),
                1e-12,
                &format!("exact {row}"),
            );
            close(
                mcnemar_mid_p(fc, gc),
                f(row, "midp"),
                1e-12,
                &format!("mid-p {row}"),
            );
            // Symmetric in the two variants.
            assert_eq!(mcnemar_exact_p(fc, gc), mcnemar_exact_p(gc, fc));
        }
    }

    #[test]
    fn mcnemar_stays_accurate_for_many_discordant_pairs() {
        // 20 000 discordant pairs split 9 800 / 10 200. The continuity-corrected normal
        // approximation, 2·Φ(−199.5/√5000) = 0.004781, tracks the exact p-value to a few
        // parts in 10⁴ at this size; the uncorrected one, 2·Φ(−200/√5000) = 0.004678, tracks
        // mid-p.
        let p = mcnemar_exact_p(9_800, 10_200);
        assert!((p - 0.004781).abs() < 5e-6, "{p}");
        let mid = mcnemar_mid_p(9_800, 10_200);
        assert!((mid - 0.004678).abs() < 5e-6, "{mid}");
        // Balanced: exactly 1. Extreme: tiny but positive, not 0 from 1 − cdf.
        close(mcnemar_exact_p(25_000, 25_000), 1.0, 1e-12, "balanced");
        let tiny = mcnemar_exact_p(1, 200);
        let want = 2.0 * 201.0 * 0.5_f64.powi(201) + 2.0 * 0.5_f64.powi(201);
        assert!((tiny - want).abs() <= 1e-12 * want, "{tiny} vs {want}");
        assert!(mcnemar_exact_p(u64::MAX, 1).is_nan());
    }

    #[test]
    fn paired_mean_difference_matches_worked_example() {
        // stats.md §3.3: A and B, 12 cases, 20 trials each.
        const A: [u64; 12] = [19, 13, 17, 15, 20, 20, 19, 19, 20, 20, 20, 20];
        const B: [u64; 12] = [16, 11, 15, 18, 18, 19, 18, 19, 14, 17, 19, 17];
        let diffs: Vec<f64> = A
            .iter()
            .zip(B)
            .map(|(&a, b)| (a as f64 - b as f64) / 20.0)
            .collect();
        let d = paired_mean_difference(&diffs, 0.95).expect("defined");
        close(d.mean, 0.0875, 1e-12, "mean");
        close(d.se, 0.030850, 5e-7, "se");
        assert_eq!(d.df, 11);
        close(d.t_stat.unwrap(), 2.836331, 5e-7, "t");
        close(d.p_two_sided, 0.016188, 5e-7, "p");
        close(d.interval.lo, 0.019600, 5e-7, "lo");
        close(d.interval.hi, 0.155400, 5e-7, "hi");
        close(d.sd, d.se * 12f64.sqrt(), 1e-15, "sd");
    }

    #[test]
    fn paired_mean_difference_degenerate_and_clipped() {
        let zero = paired_mean_difference(&[0.0; 5], 0.95).unwrap();
        assert_eq!((zero.t_stat, zero.p_two_sided), (None, 1.0));
        assert_eq!((zero.interval.lo, zero.interval.hi), (0.0, 0.0));
        let same = paired_mean_difference(&[0.2; 4], 0.95).unwrap();
        assert_eq!((same.t_stat, same.p_two_sided), (None, 0.0));
        // Not clipped to [0, 1]: a difference may be negative.
        let neg = paired_mean_difference(&[-0.3, -0.1, -0.2, -0.25, -0.15], 0.95).unwrap();
        assert!(neg.interval.lo < -0.2 && neg.interval.hi < 0.0, "{neg:?}");
        // …but to [−1, 1].
        let wide = paired_mean_difference(&[1.0, -1.0, 1.0], 0.99).unwrap();
        assert_eq!((wide.interval.lo, wide.interval.hi), (-1.0, 1.0));
        let json = serde_json::to_string(&zero).unwrap();
        let back: PairedDifference = serde_json::from_str(&json).unwrap();
        assert_eq!(back, zero);
    }

    #[test]
    fn cases_for_paired_effect_hand_checked_and_monotone() {
        // effect/sd = 0.5, α = 0.05, power 0.8: m = 34, as the textbook noncentral-t answer
        // (G*Power, "paired t, dz = 0.5") also gives. By hand: at m = 34, df = 33,
        // (2.0345 + 0.8527)·2 = 5.774, squared 33.34 ≤ 34; at m = 33, df = 32,
        // (2.0369 + 0.8530)·2 = 5.780, squared 33.41 > 33. The z answer would be 32.
        assert_eq!(cases_for_paired_effect(0.1, 0.05, 0.95, 0.8), Some(34));
        assert_eq!(cases_for_paired_effect(0.1, -0.05, 0.95, 0.8), Some(34));
        let mut last = 0;
        for effect in [0.2, 0.1, 0.05, 0.02, 0.01, 0.005] {
            let m = cases_for_paired_effect(0.1, effect, 0.95, 0.8).unwrap();
            assert!(m >= last, "smaller effects need more cases: {effect} → {m}");
            last = m;
        }
        let m80 = cases_for_paired_effect(0.1, 0.05, 0.95, 0.8).unwrap();
        assert!(cases_for_paired_effect(0.1, 0.05, 0.95, 0.9).unwrap() > m80);
        assert!(cases_for_paired_effect(0.1, 0.05, 0.99, 0.8).unwrap() > m80);
        assert!(cases_for_paired_effect(0.2, 0.05, 0.95, 0.8).unwrap() > m80);
        // Huge effects still need the minimum of two cases.
        assert_eq!(cases_for_paired_effect(0.01, 1.0, 0.95, 0.8), Some(2));
        // Smallest such m: the condition fails one below.
        let check = |m: u64| {
            let a = t_quantile(m - 1, 0.975).unwrap();
            let b = t_quantile(m - 1, 0.8).unwrap();
            m as f64 >= ((a + b) * 2.0).powi(2)
        };
        assert!(check(m80) && !check(m80 - 1));
        // The §3.3 example as a pilot: sd of the case differences 0.1069; detecting 0.05.
        let pilot_sd = 0.030850 * 12f64.sqrt();
        let m = cases_for_paired_effect(pilot_sd, 0.05, 0.95, 0.8).unwrap();
        // By hand: sd/effect = 2.137; at m = 38 (2.0262 + 0.8512)·2.137 = 6.150, squared
        // 37.8 ≤ 38; at m = 37 (2.0281 + 0.8514)·2.137 = 6.154, squared 37.9 > 37.
        assert_eq!(m, 38);
    }

    #[test]
    fn undefined_inputs_give_none() {
        assert_eq!(newcombe_interval(1, 0, 1, 2, 0.95), None);
        assert_eq!(newcombe_interval(3, 2, 1, 2, 0.95), None);
        for conf in [0.0, 1.0, f64::NAN, -0.5] {
            assert_eq!(newcombe_interval(1, 2, 1, 2, conf), None);
            let c = PairedCounts {
                both: 1,
                a_only: 1,
                b_only: 0,
                neither: 1,
            };
            assert_eq!(newcombe_paired_interval(&c, conf), None);
            assert_eq!(paired_mean_difference(&[0.1, 0.2], conf), None);
            assert_eq!(cases_for_paired_effect(0.1, 0.05, conf, 0.8), None);
        }
        let empty = PairedCounts {
            both: 0,
            a_only: 0,
            b_only: 0,
            neither: 0,
        };
        assert_eq!(newcombe_paired_interval(&empty, 0.95), None);
        assert_eq!(empty.difference(), None);
        let overflow = PairedCounts {
            both: u64::MAX,
            a_only: 1,
            b_only: 0,
            neither: 0,
        };
        assert_eq!(newcombe_paired_interval(&overflow, 0.95), None);
        assert_eq!(mcnemar_exact_p(0, 0), 1.0);
        assert_eq!(mcnemar_mid_p(0, 0), 1.0);
        assert_eq!(paired_mean_difference(&[], 0.95), None);
        assert_eq!(paired_mean_difference(&[0.1], 0.95), None);
        assert_eq!(paired_mean_difference(&[0.1, f64::NAN], 0.95), None);
        assert_eq!(paired_mean_difference(&[0.1, 1.5], 0.95), None);
        for (sd, effect, power) in [
            (0.0, 0.05, 0.8),
            (-0.1, 0.05, 0.8),
            (f64::NAN, 0.05, 0.8),
            (f64::INFINITY, 0.05, 0.8),
            (0.1, 0.0, 0.8),
            (0.1, f64::NAN, 0.8),
            (0.1, 0.05, 0.3),
            (0.1, 0.05, 1.0),
            (0.1, 0.05, f64::NAN),
            (1.0, 1e-9, 0.8), // beyond 10¹² cases
        ] {
            assert_eq!(
                cases_for_paired_effect(sd, effect, 0.95, power),
                None,
                "{sd} {effect} {power}"
            );
        }
    }
}
