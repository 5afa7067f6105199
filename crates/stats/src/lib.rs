//! Statistics for pass rates, suite-level estimates and latency percentiles.
//!
//! This module owns the numbers every report and gate decision rests on: Wilson and
//! Clopper–Pearson intervals for one rate, the exact bounds the PR gate decides with,
//! suite-level (case-clustered) intervals and design effects, planning sample sizes, and
//! nearest-rank percentiles with exact order-statistic intervals. Formulas and test vectors
//! come from `reference/stats.md`.
//!
//! The statistics behind decisions live in submodules, re-exported here so every formula
//! has one path, `stats::…`:
//! - `paired`: two variants on the same cases: Newcombe intervals (unpaired and paired),
//!   McNemar's test, the case-level paired t comparison and its case count (§3);
//! - `exact`: the exact one-sided bounds and binomial tests fixed-n rate gates decide with;
//! - `power`: passes needed, exact power and sample size of the fixed-n gate (§1.4, §2.3);
//! - `sequential`: the early-stopping case gates (PASS by the mixture SPRT or the SPRT, FAIL by
//!   an anytime-valid test that the rate is below the bar, or by name the SPRT's indifference
//!   zone), their anytime-valid bounds and their exact operating characteristics (§6);
//! - `binomial` (crate-internal): exact binomial tails in log space for the above.
//!
//! Everything here is a pure function over plain numbers: no I/O, no clocks, no randomness,
//! and no knowledge of tools, providers or trial records. Callers turn their data into counts
//! and rates first. No function panics on any input: invalid arguments (n = 0, x > n, a
//! confidence level outside (0, 1), NaN) yield `None` (or NaN from the two bare `z_*`
//! functions and the McNemar p-values, whose signatures cannot say "no answer").

mod binomial;
pub use binomial::binomial_pmf;
mod exact;
mod latency;
mod paired;
mod passk;
mod power;
mod sequential;

pub use exact::{
    binomial_p_value_above, binomial_p_value_below, clopper_pearson_lower_bound,
    clopper_pearson_upper_bound, exact_gate_min_successes, exact_gate_passes,
};
pub use latency::{LatencyAgg, LatencyDistribution, LatencySummary, Percentile};
pub use paired::{
    PairedCounts, PairedDifference, cases_for_paired_effect, mcnemar_exact_p, mcnemar_mid_p,
    newcombe_interval, newcombe_paired_interval, paired_mean_difference,
};
pub use passk::{clustered_ratio_interval, pass_at_k, pass_hat_k, pass_k_intervals};
pub use power::{GateSampleSize, gate_min_successes, gate_power, gate_sample_size};
pub use sequential::{
    BelowMixture, Boundaries, ComparisonCharacteristics, EXACT_COMPARISON_WORK_LIMIT, FailSide,
    MixtureGate, OperatingCharacteristics, PairCounts, PairedBetting, PairedDecision, PassSide,
    Reach, SeededUniform, SequentialDecision, SequentialKind, SequentialTest, SimulatedOc,
    SprtGate, curtailed_operating_characteristics, exact_comparison, operating_characteristics,
    simulate_comparison, simulate_suite_gate,
};

use serde::{Deserialize, Serialize};
use statrs::distribution::{
    Beta, Binomial, ChiSquared, ContinuousCDF, DiscreteCDF, Normal, StudentsT,
};
use statrs::function::beta::checked_beta_reg;

/// A closed interval `[lo, hi]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
}

impl Interval {
    pub fn half_width(&self) -> f64 {
        (self.hi - self.lo) / 2.0
    }

    /// Whether `value` lies inside the closed interval.
    pub fn contains(&self, value: f64) -> bool {
        self.lo <= value && value <= self.hi
    }
}

/// A confidence level is usable only strictly inside (0, 1): at 1 every bound is infinite,
/// and at 0 (or NaN) there is nothing to report.
fn valid_conf(conf: f64) -> bool {
    conf.is_finite() && conf > 0.0 && conf < 1.0
}

/// Standard-normal quantile that refuses to produce infinities; `p` very close to 1 can
/// round to exactly 1.0 when computed from a conf like `1 − 1e-17`.
pub fn normal_quantile(p: f64) -> Option<f64> {
    if !(p > 0.0 && p < 1.0) {
        return None;
    }
    let z = Normal::standard().inverse_cdf(p);
    z.is_finite().then_some(z)
}

fn try_z_two_sided(conf: f64) -> Option<f64> {
    if !valid_conf(conf) {
        return None;
    }
    // (1 + conf)/2 rather than 1 − α/2: same value, one rounding fewer.
    normal_quantile((1.0 + conf) / 2.0)
}

fn try_z_one_sided(conf: f64) -> Option<f64> {
    if !valid_conf(conf) {
        return None;
    }
    normal_quantile(conf)
}

#[cfg(test)]
/// Two-sided critical value `Φ⁻¹(1 − α/2)` with `α = 1 − conf`.
///
/// Returns NaN when `conf` is not strictly inside (0, 1); the interval functions below
/// return `None` in that case instead.
fn z_two_sided(conf: f64) -> f64 {
    try_z_two_sided(conf).unwrap_or(f64::NAN)
}

#[cfg(test)]
/// One-sided critical value `Φ⁻¹(conf)`.
///
/// Returns NaN when `conf` is not strictly inside (0, 1).
fn z_one_sided(conf: f64) -> f64 {
    try_z_one_sided(conf).unwrap_or(f64::NAN)
}

/// Wilson score interval for critical value `z`, with the edges pinned.
///
/// Floating point leaves residues such as `0.99999999999999989` at `x = n` (stats.md §1.3),
/// and a report that says "100 of 100 passed, upper bound 99.99999%" looks broken, so the
/// edges are set exactly rather than computed.
fn wilson_with_z(x: u64, n: u64, z: f64) -> Option<Interval> {
    if n == 0 || x > n || !z.is_finite() {
        return None;
    }
    let (xf, nf) = (x as f64, n as f64);
    let z2 = z * z;
    let center = (xf + z2 / 2.0) / (nf + z2);
    let half = z / (nf + z2) * (xf * ((n - x) as f64) / nf + z2 / 4.0).sqrt();
    let mut lo = (center - half).clamp(0.0, 1.0);
    let mut hi = (center + half).clamp(0.0, 1.0);
    if x == 0 {
        lo = 0.0;
    }
    if x == n {
        hi = 1.0;
    }
    Some(Interval { lo, hi })
}

/// Two-sided Wilson score interval for `x` passes out of `n` trials at level `conf`.
///
/// `None` when `n == 0`, `x > n`, or `conf` is not strictly inside (0, 1). The result lies in
/// [0, 1]; `lo` is exactly 0.0 when `x == 0` and `hi` exactly 1.0 when `x == n`.
pub fn wilson_interval(x: u64, n: u64, conf: f64) -> Option<Interval> {
    wilson_with_z(x, n, try_z_two_sided(conf)?)
}

/// The interval the report gives every single rate: Wilson, with Brown, Cai & DasGupta's
/// (2001) modification at the edges. For `1 ≤ x ≤ x*` (`x* = 2` when `n ≤ 50`, else 3) the
/// lower bound is the Poisson one, `χ²_{2x}(α/2) / 2n`, where it is lower; symmetrically for
/// the upper bound when `1 ≤ n − x ≤ x*`.
///
/// Plain Wilson dips well below its level next to 0 and 1 (x = 1 or n − 1 out of a few
/// trials: 96.7% instead of 99% for 5 trials of rates near 1, tests/it/coverage.rs), which is
/// where tool-selection rates live. The modification only ever widens the interval, and leaves
/// it unchanged when `x* < x < n − x*`. `None` as for [`wilson_interval`].
pub fn rate_interval(x: u64, n: u64, conf: f64) -> Option<Interval> {
    let mut iv = wilson_interval(x, n, conf)?;
    let edge = if n <= 50 { 2 } else { 3 };
    let half_alpha = (1.0 - conf) / 2.0;
    let poisson = |k: u64| -> Option<f64> {
        // χ²_{2k} quantile / 2 = the Poisson mean whose P(X ≥ k) is α/2.
        let chi = ChiSquared::new(2.0 * k as f64)
            .ok()?
            .inverse_cdf(half_alpha);
        (chi.is_finite() && chi >= 0.0).then(|| chi / 2.0 / n as f64)
    };
    if (1..=edge).contains(&x)
        && let Some(lo) = poisson(x)
    {
        iv.lo = iv.lo.min(lo);
    }
    let failures = n - x;
    if (1..=edge).contains(&failures)
        && let Some(lo) = poisson(failures)
    {
        iv.hi = iv.hi.max(1.0 - lo);
    }
    Some(iv)
}

/// One-sided Wilson lower bound at level `conf`: the bound the PR gate compares with its
/// threshold. Equals the lower end of the two-sided interval at level `1 − 2α`.
///
/// `None` when `n == 0`, `x > n`, or `conf` is not in [0.5, 1): below 50% the "lower bound"
/// would sit above the observed rate, which is never what a gate means. Exactly 0.0 when
/// `x == 0`. Only the tests use it now, as the reference the gates' bounds are checked against.
#[cfg(test)]
fn wilson_lower_bound(x: u64, n: u64, conf: f64) -> Option<f64> {
    if conf.is_nan() || conf < 0.5 {
        return None;
    }
    wilson_with_z(x, n, try_z_one_sided(conf)?).map(|iv| iv.lo)
}

/// One-sided Wilson upper bound at level `conf`: the observed rate is significantly below
/// `t` when this is below `t`. `None` when `n == 0`, `x > n` or `conf` is not in [0.5, 1);
/// exactly 1.0 when `x == n`.
pub fn wilson_upper_bound(x: u64, n: u64, conf: f64) -> Option<f64> {
    if conf.is_nan() || conf < 0.5 {
        return None;
    }
    wilson_with_z(x, n, try_z_one_sided(conf)?).map(|iv| iv.hi)
}

#[cfg(test)]
/// One-sided p-value of the score test of `H0: p ≥ t` against `p < t` for `x` of `n`:
/// `Φ((x − n·t) / √(n·t·(1−t)))`. It is below `α` exactly when the one-sided Wilson upper
/// bound at `1 − α` is below `t`, so Holm's procedure on these p-values is Holm on the
/// bounds. `None` when `n == 0`, `x > n` or `t` is not strictly inside (0, 1).
fn score_p_value_below(x: u64, n: u64, t: f64) -> Option<f64> {
    if n == 0 || x > n || !(t > 0.0 && t < 1.0) {
        return None;
    }
    let nf = n as f64;
    let z = (x as f64 - nf * t) / (nf * t * (1.0 - t)).sqrt();
    Some(Normal::standard().cdf(z))
}

/// Holm's step-down procedure: which hypotheses are rejected at family-wise level `alpha`
/// given their p-values (in their order). Reject the smallest p-value while
/// `p_(i) ≤ α / (k − i)`, i = 0, 1, …, and stop at the first that is not.
pub fn holm_rejections(p_values: &[f64], alpha: f64) -> Vec<bool> {
    let k = p_values.len();
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by(|&a, &b| {
        p_values[a]
            .partial_cmp(&p_values[b])
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let mut rejected = vec![false; k];
    for (i, &idx) in order.iter().enumerate() {
        if p_values[idx] <= alpha / (k - i) as f64 {
            rejected[idx] = true;
        } else {
            break;
        }
    }
    rejected
}

/// Quantile of Beta(a, b) by bisection on the regularized incomplete beta function.
///
/// statrs' `inv_beta_reg` (behind `Beta::inverse_cdf`) never returns for some large shape
/// parameters (x = 0, n = 10⁸ already hangs), and a hang is worse than a panic, so the
/// inversion here runs a bounded number of steps. The bracket halves until it can shrink no
/// more in f64, which resolves even tiny quantiles (1 − (α/2)^(1/n) at large n) to full
/// relative precision.
fn beta_quantile(a: f64, b: f64, p: f64) -> Option<f64> {
    Beta::new(a, b).ok()?;
    if !(p > 0.0 && p < 1.0) {
        return None;
    }
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    for _ in 0..1100 {
        let mid = lo + (hi - lo) / 2.0;
        if mid <= lo || mid >= hi {
            break;
        }
        if checked_beta_reg(a, b, mid).ok()? < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let q = lo + (hi - lo) / 2.0;
    q.is_finite().then_some(q)
}

/// Largest n for which Clopper–Pearson bounds and order-statistic ranks are computed.
///
/// statrs' incomplete beta stops its continued fraction after 140 terms, which is no longer
/// enough somewhere between 2·10⁷ and 5·10⁷ trials at rates near ½ (the "interval" comes out
/// inverted). Up to 10⁷ the results track Wilson to the expected O(1/n) everywhere checked;
/// no eval run gets near that many trials of one rate or latency samples of one series.
pub(crate) const MAX_EXACT_N: u64 = 10_000_000;

/// Two-sided Clopper–Pearson ("exact") interval: guaranteed coverage ≥ conf, wider than
/// Wilson. Use it where a guarantee is needed rather than nominal coverage.
///
/// `None` when `n == 0`, `n > MAX_EXACT_N`, `x > n`, or `conf` is not strictly inside
/// (0, 1). `lo` is exactly 0.0 when `x == 0` and `hi` exactly 1.0 when `x == n`.
pub(crate) fn clopper_pearson_interval(x: u64, n: u64, conf: f64) -> Option<Interval> {
    if n == 0 || n > MAX_EXACT_N || x > n || !valid_conf(conf) {
        return None;
    }
    let alpha = 1.0 - conf;
    let (xf, nf) = (x as f64, n as f64);
    // At the edges the Beta quantile has the closed forms (α/2)^(1/n) and 1 − (α/2)^(1/n);
    // the exp_m1 form keeps 1 − (α/2)^(1/n) precise when it is tiny.
    let edge = -(alpha / 2.0).ln() / nf;
    let lo = if x == 0 {
        0.0
    } else if x == n {
        (-edge).exp()
    } else {
        beta_quantile(xf, nf - xf + 1.0, alpha / 2.0)?
    };
    let hi = if x == n {
        1.0
    } else if x == 0 {
        -(-edge).exp_m1()
    } else {
        beta_quantile(xf + 1.0, nf - xf, 1.0 - alpha / 2.0)?
    };
    // Belt and braces against an inaccurate incomplete beta: an interval that misses the
    // estimate is wrong, and no answer is better than a wrong one.
    let p_hat = xf / nf;
    (lo <= p_hat && p_hat <= hi).then_some(Interval { lo, hi })
}

/// Suite-level estimate built from case-level rates (stats.md §3.3).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClusteredEstimate {
    /// Equal-weight mean of the case rates.
    pub mean: f64,
    /// `s / √m`, s the sample standard deviation of the case rates.
    pub se: f64,
    /// The reported interval: see `method`.
    pub interval: Interval,
    /// Number of cases m.
    pub cases: usize,
    /// Degrees of freedom, m − 1.
    pub df: usize,
    /// `t_{m−1, 1−α/2} · se`: the half-width of the case-level t interval before clipping.
    pub t_half_width: f64,
    /// Whether the t interval reached past 0 or 1 and was clipped.
    pub clipped: bool,
    /// Trials behind the Wilson bound: `N / DEFF` with `DEFF ≥ 1` (absent for a bare t
    /// interval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effective_n: Option<f64>,
    /// Which bound produced the interval's ends.
    pub method: SuiteIntervalMethod,
}

/// How a suite-level interval was formed ([`suite_interval`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SuiteIntervalMethod {
    /// The case-level t interval, clipped to [0, 1]: it contained the Wilson bound.
    CaseT,
    /// The Wilson score interval at the effective sample size `N / DEFF` with critical value
    /// `t_{m−1}`: it contained the t interval (within-case noise dominates, e.g. every case at
    /// the same rate, where the t interval has zero width).
    WilsonEffectiveN,
    /// Each end from whichever of the two reaches further.
    Hull,
}

/// Suite-level interval from case-level rates, treating cases (not trials) as the
/// independent units, so repeated trials of one prompt do not shrink the interval as if
/// they were new evidence about the suite.
///
/// Uses `t_{m−1}` rather than z because suites often have few cases. `None` when fewer than
/// two cases, when any rate is NaN or outside [0, 1], or when `conf` is not strictly inside
/// (0, 1).
pub fn clustered_mean_interval(case_rates: &[f64], conf: f64) -> Option<ClusteredEstimate> {
    let m = case_rates.len();
    if m < 2 || !valid_conf(conf) {
        return None;
    }
    if case_rates.iter().any(|r| !(0.0..=1.0).contains(r)) {
        return None;
    }
    let mf = m as f64;
    let mean = case_rates.iter().sum::<f64>() / mf;
    let ss: f64 = case_rates.iter().map(|r| (r - mean).powi(2)).sum();
    let se = (ss / (mf - 1.0)).sqrt() / mf.sqrt();
    let df = m - 1;
    let t_dist = StudentsT::new(0.0, 1.0, df as f64).ok()?;
    let p = (1.0 + conf) / 2.0;
    if !(p > 0.5 && p < 1.0) {
        return None;
    }
    let t = t_dist.inverse_cdf(p);
    if !t.is_finite() {
        return None;
    }
    let (lo, hi) = (mean - t * se, mean + t * se);
    let interval = Interval {
        lo: lo.clamp(0.0, 1.0),
        hi: hi.clamp(0.0, 1.0),
    };
    Some(ClusteredEstimate {
        mean,
        se,
        interval,
        cases: m,
        df,
        t_half_width: t * se,
        clipped: lo < 0.0 || hi > 1.0,
        effective_n: None,
        method: SuiteIntervalMethod::CaseT,
    })
}

/// Two-sided Student-t critical value `t_{df, 1−α/2}`.
fn t_two_sided(df: u64, conf: f64) -> Option<f64> {
    if df == 0 || !valid_conf(conf) {
        return None;
    }
    let t = StudentsT::new(0.0, 1.0, df as f64)
        .ok()?
        .inverse_cdf((1.0 + conf) / 2.0);
    t.is_finite().then_some(t)
}

/// Wilson score interval for a rate `p` observed over a (possibly fractional) effective
/// number of trials `n`, with critical value `c`.
fn wilson_real(p: f64, n: f64, c: f64) -> Option<Interval> {
    if !(n > 0.0 && (0.0..=1.0).contains(&p) && c.is_finite()) {
        return None;
    }
    let c2n = c * c / n;
    let center = (p + c2n / 2.0) / (1.0 + c2n);
    let half = c / (1.0 + c2n) * (p * (1.0 - p) / n + c2n / (4.0 * n)).sqrt();
    let mut lo = (center - half).clamp(0.0, 1.0);
    let mut hi = (center + half).clamp(0.0, 1.0);
    if p == 0.0 {
        lo = 0.0;
    }
    if p == 1.0 {
        hi = 1.0;
    }
    Some(Interval { lo, hi })
}

/// The suite-level interval of the population mean of case rates, from per-case counts
/// `(x_i, n_i)` (cases with `n_i = 0` are left out).
///
/// The case-level t interval (stats.md §3.3) treats cases as the independent units, but its
/// width comes only from the spread of observed case rates: when every case shows the same
/// rate (5 cases at 5/5) it has zero width although each rate is a noisy estimate. So the
/// interval is never narrower than the Wilson score interval of the mean at the effective
/// sample size `N / DEFF`, `DEFF = max(1, se² / (μ̂(1−μ̂)/N))` (the clustered-proportion
/// effective-sample-size idea of stats.md §3.3), with `t_{m−1}` as critical value because m
/// is often small. `method` says which bound produced the ends. `None` with fewer than two
/// cases with data, or when `conf` is not strictly inside (0, 1).
pub fn suite_interval(case_counts: &[(u64, u64)], conf: f64) -> Option<ClusteredEstimate> {
    let with_data: Vec<(u64, u64)> = case_counts
        .iter()
        .copied()
        .filter(|&(x, n)| n > 0 && x <= n)
        .collect();
    let rates: Vec<f64> = with_data
        .iter()
        .map(|&(x, n)| x as f64 / n as f64)
        .collect();
    let mut est = clustered_mean_interval(&rates, conf)?;
    let trials: u64 = with_data.iter().map(|&(_, n)| n).sum();
    let p = est.mean;
    let pq = p * (1.0 - p);
    let total = trials as f64;
    let effective_n = if est.se > 0.0 && pq > 0.0 {
        (pq / (est.se * est.se)).min(total)
    } else {
        total
    };
    let c = t_two_sided(est.df as u64, conf)?;
    let w = wilson_real(p, effective_n, c)?;
    let t = est.interval;
    est.method = if t.lo <= w.lo && t.hi >= w.hi {
        SuiteIntervalMethod::CaseT
    } else if w.lo <= t.lo && w.hi >= t.hi {
        SuiteIntervalMethod::WilsonEffectiveN
    } else {
        SuiteIntervalMethod::Hull
    };
    est.interval = Interval {
        lo: t.lo.min(w.lo),
        hi: t.hi.max(w.hi),
    };
    est.effective_n = Some(effective_n);
    Some(est)
}

/// One-sided p-value of `H0: mean of case rates ≥ t` that [`suite_interval`] inverts: the
/// smallest α at which the one-sided upper bound at `1 − α` (the upper end of the two-sided
/// interval at `1 − 2α`) is below `t`.
///
/// A plain t-test p-value would disagree with the interval the report shows whenever the
/// Wilson bound at `N / DEFF` is the wider one (every case at the same rate: the t statistic
/// is infinite, the interval is not), so a gate could "fail" a group whose shown upper bound
/// clears the bar. Inverting the interval keeps the two in step: `p ≤ α ⇔ upper bound < t`, as
/// [`score_p_value_below`] does for one rate, which is what Holm's procedure over several
/// groups needs. Found by bisection on α (the upper bound falls as α grows). `Some(1.0)` when
/// even the narrowest interval reaches `t`; `None` with fewer than two cases with data or `t`
/// not strictly inside (0, 1).
pub fn suite_p_value_below(case_counts: &[(u64, u64)], t: f64) -> Option<f64> {
    if !(t > 0.0 && t < 1.0) {
        return None;
    }
    let upper = |alpha: f64| suite_interval(case_counts, 1.0 - 2.0 * alpha).map(|e| e.interval.hi);
    const WIDEST: f64 = 1e-12;
    const NARROWEST: f64 = 0.5 - 1e-9;
    if upper(NARROWEST)? >= t {
        return Some(1.0);
    }
    if upper(WIDEST)? < t {
        return Some(WIDEST);
    }
    // Invariant: upper(lo) ≥ t > upper(hi).
    let (mut lo, mut hi) = (WIDEST, NARROWEST);
    for _ in 0..80 {
        let mid = lo + (hi - lo) / 2.0;
        if upper(mid)? < t {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// One-sided p-value of `H0: the q-quantile ≤ B`, given that `k` of `n` observations are at
/// most `B`: `P(Bin(n, q) ≤ k)`. It is at most α exactly when the lower end of the
/// order-statistic interval at one-sided level `1 − α` ([`order_statistic_ci`] at `1 − 2α`)
/// lies above `B`, so Holm's procedure on these p-values is Holm on those bounds (stats.md
/// §7.3). `None` when `n == 0`, `n > MAX_EXACT_N`, `k > n` or `q` is not strictly inside (0, 1).
pub fn quantile_p_value_above(n: u64, k: u64, q: f64) -> Option<f64> {
    if n == 0 || n > MAX_EXACT_N || k > n || !(q > 0.0 && q < 1.0) {
        return None;
    }
    let b = Binomial::new(q, n).ok()?;
    Some(b.cdf(k).clamp(0.0, 1.0))
}

#[cfg(test)]
/// Intraclass correlation and design effect of a suite run K times per case (stats.md §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct DesignEffect {
    /// ρ̂ = V̂_b / (V̂_b + V̂_w); 0 when the data show no variation at all.
    pub icc: f64,
    /// 1 + (K̄ − 1)·ρ̂.
    pub deff: f64,
    /// Total trials divided by `deff`: what the suite is worth in independent trials.
    pub effective_trials: f64,
}

#[cfg(test)]
/// Method-of-moments ICC and design effect from per-case `(successes, trials)`.
///
/// K is the mean number of trials per case, used both in the within-case variance
/// correction `K/(K−1)` and in `1 + (K−1)ρ`; with equal K (the harness's normal design) this
/// is exactly §4.3. When every case is all-pass or all-fail there is no variance to
/// apportion, and the result is ρ = 0, DEFF = 1 (nothing inflates the trial count).
///
/// `None` when fewer than two cases, any case has zero trials or more successes than
/// trials, or the mean K is below 2.
fn design_effect(case_counts: &[(u64, u64)]) -> Option<DesignEffect> {
    let m = case_counts.len();
    if m < 2 {
        return None;
    }
    if case_counts.iter().any(|&(x, k)| k == 0 || x > k) {
        return None;
    }
    let mf = m as f64;
    let total_trials: f64 = case_counts.iter().map(|&(_, k)| k as f64).sum();
    let k_bar = total_trials / mf;
    if k_bar < 2.0 {
        return None;
    }
    let rates: Vec<f64> = case_counts
        .iter()
        .map(|&(x, k)| x as f64 / k as f64)
        .collect();
    let mean = rates.iter().sum::<f64>() / mf;
    let s2 = rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (mf - 1.0);
    let v_within = rates
        .iter()
        .map(|r| k_bar / (k_bar - 1.0) * r * (1.0 - r))
        .sum::<f64>()
        / mf;
    let v_between = (s2 - v_within / k_bar).max(0.0);
    let total = v_between + v_within;
    let icc = if total > 0.0 { v_between / total } else { 0.0 };
    let deff = 1.0 + (k_bar - 1.0) * icc;
    Some(DesignEffect {
        icc,
        deff,
        effective_trials: total_trials / deff,
    })
}

/// `⌈v⌉`, except that a value within a relative 1e-9 of an integer counts as that integer:
/// closed forms evaluated in floating point can land an ulp above an exact integer, and
/// rounding that up would ask for one spurious extra trial or rank.
fn tolerant_ceil(v: f64) -> f64 {
    let r = v.round();
    if (v - r).abs() <= 1e-9 * r.abs().max(1.0) {
        r
    } else {
        v.ceil()
    }
}

/// Trials needed so that the two-sided Wilson half-width at `p̂ = p` is at most `e`
/// (stats.md §2.2 closed form, rounded up; at least 1).
///
/// Works at `p = 0` and `p = 1`, where Wilson (unlike Wald) still needs trials. `None` when
/// `p` is outside [0, 1], `e` is not in (0, 0.5), `conf` is not strictly inside (0, 1), or the
/// answer does not fit in a `u64`.
pub fn wilson_trials_for_half_width(p: f64, e: f64, conf: f64) -> Option<u64> {
    if !((0.0..=1.0).contains(&p) && e > 0.0 && e < 0.5) {
        return None;
    }
    let z = try_z_two_sided(conf)?;
    let pq = p * (1.0 - p);
    let e2 = e * e;
    let disc = pq * pq + e2 * (1.0 - 4.0 * pq);
    let n_star = z * z * (pq - 2.0 * e2 + disc.max(0.0).sqrt()) / (2.0 * e2);
    if !n_star.is_finite() {
        return None;
    }
    let n = tolerant_ceil(n_star).max(1.0);
    // u64::MAX as f64 rounds up to 2^64, so `<` excludes every value that would saturate.
    (n < u64::MAX as f64).then_some(n as u64)
}

#[cfg(test)]
/// Nearest-rank percentile (Hyndman–Fan type 1, HdrHistogram's semantics): the
/// `max(1, ⌈q·N⌉)`-th smallest element of `sorted`. Always an observed value.
///
/// `sorted` must be in ascending order (not checked). `None` when empty or when `q` is NaN
/// or outside [0, 1].
fn nearest_rank<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    if sorted.is_empty() || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let n = sorted.len();
    let rank = tolerant_ceil(q * n as f64).clamp(1.0, n as f64) as usize;
    sorted.get(rank - 1).copied()
}

/// The 1-based rank of the nearest-rank q-quantile among `n` observations, `max(1, ⌈q·N⌉)`:
/// the position [`nearest_rank`] reads, for data kept in a histogram rather than a slice.
/// `None` when `n == 0` or `q` is outside [0, 1].
pub fn nearest_rank_position(n: u64, q: f64) -> Option<u64> {
    if n == 0 || !(0.0..=1.0).contains(&q) {
        return None;
    }
    Some(tolerant_ceil(q * n as f64).clamp(1.0, n as f64) as u64)
}

/// Cases needed for a suite-level (case-level) t interval of half-width `e`, from an observed
/// clustered estimate: the smallest `m ≥ 2` with `t_{m−1, 1−α/2} · s / √m ≤ e`, `s = se · √m₀`
/// the between-case standard deviation (stats.md §3.3). More trials per case cannot shrink
/// this; only more cases can. `None` when the case rates do not vary (s = 0), when `e` is not in
/// (0, 0.5), or when `conf` is not strictly inside (0, 1).
pub fn cases_for_half_width(estimate: &ClusteredEstimate, e: f64, conf: f64) -> Option<u64> {
    if !(e > 0.0 && e < 0.5) {
        return None;
    }
    let sd = estimate.se * (estimate.cases as f64).sqrt();
    if !(sd > 0.0 && sd.is_finite()) {
        return None;
    }
    // z < t, so the normal-theory answer is a lower bound; t(m−1) falls quickly towards z, so
    // a short walk up from it finds the exact answer.
    let z = try_z_two_sided(conf)?;
    let start = ((z * sd / e).powi(2)).ceil().max(2.0);
    if start.is_nan() || start >= 1e12 {
        return None;
    }
    let start = start as u64;
    (start..start + 100_000)
        .find(|&m| t_two_sided(m - 1, conf).is_some_and(|t| t * sd / (m as f64).sqrt() <= e))
}

/// The fewest observations for which the exact order-statistic interval of the q-quantile has
/// an upper bound at level `conf`: the smallest `N` with `q^N ≤ α/2` (stats.md §7.3). 368 for
/// p99 at 95%, 528 at 99%. `None` when `q` or `conf` is not strictly inside (0, 1).
pub fn min_trials_for_upper_bound(q: f64, conf: f64) -> Option<u64> {
    if !(q > 0.0 && q < 1.0 && valid_conf(conf)) {
        return None;
    }
    let half_alpha = (1.0 - conf) / 2.0;
    // q^N ≤ α/2  ⇔  N ≥ ln(α/2) / ln(q); confirm against the exact interval around the
    // closed form, which guards the rounding at the boundary.
    let guess = (half_alpha.ln() / q.ln()).ceil().max(1.0) as u64;
    let bounded = |n: u64| order_statistic_ci(n, q, conf).is_some_and(|ci| ci.upper_rank.is_some());
    let mut n = guess.saturating_sub(2).max(1);
    while n <= guess + 2 {
        if bounded(n) {
            return Some(n);
        }
        n += 1;
    }
    None
}

/// Distribution-free confidence interval for a quantile, as 1-based ranks into the sorted
/// sample (stats.md §7.3).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OrderStatisticCi {
    /// Rank l of the lower bound; `None` when the sample is too small to bound the quantile
    /// from below (`(1−q)^N > α/2`).
    pub lower_rank: Option<u64>,
    /// Rank u of the upper bound; `None` when the sample is too small to bound the quantile
    /// from above (`q^N > α/2`), i.e. the upper bound is +∞.
    pub upper_rank: Option<u64>,
    /// Exact coverage `P(l ≤ B ≤ u−1)`, B ~ Bin(N, q), with a missing bound counting as
    /// unbounded on that side; at least `conf` for continuous data.
    pub coverage: f64,
}

/// Smallest j in `lo..=hi` with `pred(j)` true, for `pred` false up to some point and true
/// from there on; `None` if `pred(hi)` is false.
fn first_true(lo: u64, hi: u64, pred: impl Fn(u64) -> bool) -> Option<u64> {
    if lo > hi || !pred(hi) {
        return None;
    }
    let (mut a, mut b) = (lo, hi);
    while a < b {
        let mid = a + (b - a) / 2;
        if pred(mid) {
            b = mid;
        } else {
            a = mid + 1;
        }
    }
    Some(b)
}

/// Exact distribution-free order-statistic interval for the q-quantile of `n` observations
/// at level `conf`:
/// `l = max{j : F_B(j−1) ≤ α/2}`, `u = min{j : F_B(j−1) ≥ 1−α/2}`, `B ~ Bin(n, q)`.
///
/// `None` when `n == 0`, `n > MAX_EXACT_N`, `q` is not strictly inside (0, 1), or `conf` is
/// not strictly inside (0, 1).
pub fn order_statistic_ci(n: u64, q: f64, conf: f64) -> Option<OrderStatisticCi> {
    if n == 0 || n > MAX_EXACT_N || !(q > 0.0 && q < 1.0) || !valid_conf(conf) {
        return None;
    }
    let half_alpha = (1.0 - conf) / 2.0;
    let b = Binomial::new(q, n).ok()?;
    // F_B is nondecreasing in j, so both ranks are found by bisection; this matters at
    // N in the tens of thousands where each CDF evaluation is an incomplete beta.
    let lower_rank = match first_true(1, n, |j| b.cdf(j - 1) > half_alpha) {
        None => Some(n),
        Some(1) => None,
        Some(j) => Some(j - 1),
    };
    // Upper tail via the survival function: 1 − F_B(j−1) = P(B ≥ j) stays accurate where
    // F_B itself is within rounding of 1.
    let upper_rank = first_true(1, n, |j| b.sf(j - 1) <= half_alpha);
    let below = lower_rank.map_or(0.0, |l| b.cdf(l - 1));
    let above = upper_rank.map_or(0.0, |u| b.sf(u - 1));
    if let (Some(l), Some(u)) = (lower_rank, upper_rank)
        && l >= u
    {
        return None;
    }
    let coverage = (1.0 - below - above).clamp(0.0, 1.0);
    Some(OrderStatisticCi {
        lower_rank,
        upper_rank,
        coverage,
    })
}

#[cfg(test)]
/// Ranks `(l, u)` (1-based) of the exact order-statistic interval for the q-quantile of `n`
/// observations (stats.md §7.3). `u` is `None` when the data cannot bound the quantile from
/// above (`q^N > α/2`): report "insufficient data" for the upper end.
///
/// `None` when `n == 0` or `n > MAX_EXACT_N`, `q` or `conf` is not strictly inside (0, 1), or
/// the sample cannot
/// bound the quantile from below either (`(1−q)^N > α/2`, e.g. a median from 5 points at
/// 95%); [`order_statistic_ci`] reports each side separately.
fn order_statistic_ci_ranks(n: u64, q: f64, conf: f64) -> Option<(u64, Option<u64>)> {
    let ci = order_statistic_ci(n, q, conf)?;
    Some((ci.lower_rank?, ci.upper_rank))
}

#[cfg(any(test, feature = "test-support"))]
pub mod test_support;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suite_p_value_agrees_with_the_suite_upper_bound() {
        // Spread case rates (the t interval decides) and equal ones (Wilson at N/DEFF does).
        for counts in [
            vec![(19u64, 20u64), (18, 20), (12, 20), (20, 20), (15, 20)],
            vec![(17, 20), (17, 20), (17, 20)],
        ] {
            for t in [0.7, 0.8, 0.85, 0.9, 0.95] {
                let p = suite_p_value_below(&counts, t).unwrap();
                for alpha in [0.01, 0.05, 0.1] {
                    let hi = suite_interval(&counts, 1.0 - 2.0 * alpha)
                        .unwrap()
                        .interval
                        .hi;
                    // Away from the boundary itself, p ≤ α ⇔ upper bound < t.
                    if (hi - t).abs() > 1e-9 {
                        assert_eq!(p <= alpha, hi < t, "{counts:?} t={t} alpha={alpha} p={p}");
                    }
                }
            }
        }
        assert_eq!(suite_p_value_below(&[(5, 10)], 0.5), None);
        assert_eq!(suite_p_value_below(&[(5, 10), (6, 10)], 1.0), None);
    }

    #[test]
    fn quantile_p_value_agrees_with_the_order_statistic_lower_bound() {
        // n = 100, p95 at one-sided 95% (two-sided 90%): the lower rank l; the bound lies
        // above B exactly when fewer than l observations are at most B.
        for (n, q) in [(100u64, 0.95), (100, 0.5), (400, 0.99), (30, 0.5)] {
            for alpha in [0.01, 0.05] {
                let l = order_statistic_ci(n, q, 1.0 - 2.0 * alpha)
                    .unwrap()
                    .lower_rank;
                for k in 0..=n {
                    let p = quantile_p_value_above(n, k, q).unwrap();
                    let bound_above = l.is_some_and(|l| k < l);
                    assert_eq!(p <= alpha, bound_above, "n={n} q={q} k={k} alpha={alpha}");
                }
            }
        }
        assert_eq!(quantile_p_value_above(0, 0, 0.5), None);
        assert_eq!(quantile_p_value_above(5, 6, 0.5), None);
    }

    #[test]
    fn rate_interval_widens_only_at_the_edges() {
        // Interior counts: plain Wilson.
        for (x, n) in [(3, 7), (20, 40), (0, 10), (10, 10), (4, 60), (56, 60)] {
            assert_eq!(
                rate_interval(x, n, 0.95),
                wilson_interval(x, n, 0.95),
                "{x}/{n}"
            );
        }
        // x = 1 of 5 at 99%: lower bound -ln(1 - 0.005) / 5 (the Poisson bound for one event).
        let iv = rate_interval(1, 5, 0.99).unwrap();
        let want = -(1.0f64 - 0.005).ln() / 5.0;
        assert!((iv.lo - want).abs() < 1e-9, "{iv:?} vs {want}");
        assert_eq!(iv.hi, wilson_interval(1, 5, 0.99).unwrap().hi);
        // n − x = 1 mirrors it, and one trial that failed no longer excludes 0.8 at 95%.
        let top = rate_interval(4, 5, 0.99).unwrap();
        assert!((top.hi - (1.0 - want)).abs() < 1e-9, "{top:?}");
        assert!(rate_interval(0, 1, 0.95).unwrap().contains(0.8));
        assert!(!wilson_interval(0, 1, 0.95).unwrap().contains(0.8));
        // Beyond 50 trials the edge is 3 events.
        let wide = rate_interval(3, 60, 0.95).unwrap();
        assert!(wide.lo < wilson_interval(3, 60, 0.95).unwrap().lo);
        assert_eq!(rate_interval(1, 0, 0.95), None);
    }

    #[test]
    fn score_p_value_agrees_with_the_one_sided_wilson_upper_bound() {
        for (x, n, t) in [
            (70u64, 100u64, 0.8),
            (75, 100, 0.8),
            (9, 10, 0.95),
            (0, 5, 0.5),
        ] {
            let p = score_p_value_below(x, n, t).unwrap();
            let hi = wilson_upper_bound(x, n, 0.95).unwrap();
            assert_eq!(p <= 0.05, hi < t, "{x}/{n} vs {t}: p {p}, upper {hi}");
        }
        // 70/100 against 0.8: z = -2.5, p = 0.00621.
        assert!((score_p_value_below(70, 100, 0.8).unwrap() - 0.006_209_665).abs() < 1e-6);
        assert_eq!(score_p_value_below(1, 0, 0.8), None);
    }

    #[test]
    fn holm_steps_down_and_stops_at_the_first_survivor() {
        // k = 4: thresholds 0.0125, 0.0167, 0.025, 0.05.
        assert_eq!(
            holm_rejections(&[0.04, 0.001, 0.016, 0.03], 0.05),
            vec![false, true, true, false],
            "0.03 > 0.025 stops the procedure, so 0.04 is not rejected either"
        );
        assert_eq!(holm_rejections(&[0.2, 0.3], 0.05), vec![false, false]);
        assert!(holm_rejections(&[], 0.05).is_empty());
    }

    #[test]
    fn nearest_rank_position_matches_nearest_rank() {
        let data: Vec<u64> = (1..=2440).collect();
        for q in [0.0, 0.5, 0.95, 0.99, 1.0] {
            let pos = nearest_rank_position(2440, q).unwrap();
            assert_eq!(
                Some(data[pos as usize - 1]),
                nearest_rank(&data, q),
                "q={q}"
            );
        }
        assert_eq!(nearest_rank_position(0, 0.5), None);
        assert_eq!(nearest_rank_position(10, 1.5), None);
    }

    #[test]
    fn upper_bound_needs_368_trials_for_p99_at_95_and_more_at_99() {
        assert_eq!(min_trials_for_upper_bound(0.99, 0.95), Some(368));
        let at99 = min_trials_for_upper_bound(0.99, 0.99).unwrap();
        assert_eq!(at99, 528);
        assert!(
            order_statistic_ci(at99 - 1, 0.99, 0.99)
                .unwrap()
                .upper_rank
                .is_none()
        );
        assert!(
            order_statistic_ci(at99, 0.99, 0.99)
                .unwrap()
                .upper_rank
                .is_some()
        );
        assert_eq!(min_trials_for_upper_bound(0.99, 0.90), Some(299));
        assert_eq!(min_trials_for_upper_bound(0.99, 1.0), None);
    }

    #[test]
    fn cases_needed_solves_with_t_not_z() {
        let rates: Vec<f64> = (0..61).map(|i| f64::from(i % 5) / 4.0).collect();
        let est = clustered_mean_interval(&rates, 0.95).unwrap();
        let sd = est.se * (est.cases as f64).sqrt();
        let m = cases_for_half_width(&est, 0.05, 0.95).unwrap();
        let t = |m: u64| t_two_sided(m - 1, 0.95).unwrap();
        assert!(t(m) * sd / (m as f64).sqrt() <= 0.05);
        assert!(
            t(m - 1) * sd / ((m - 1) as f64).sqrt() > 0.05,
            "smallest such m"
        );
        let z_answer = ((1.959963984540054 * sd / 0.05).powi(2)).ceil() as u64;
        assert!(
            m > z_answer,
            "t(m-1) needs more cases than z: {m} vs {z_answer}"
        );
        assert!(cases_for_half_width(&est, 0.05, 0.99).unwrap() > m);
        assert_eq!(cases_for_half_width(&est, 0.0, 0.95), None);
        let flat = clustered_mean_interval(&[1.0, 1.0, 1.0], 0.95).unwrap();
        assert_eq!(cases_for_half_width(&flat, 0.05, 0.95), None);
    }

    #[test]
    fn suite_interval_is_never_zero_width_when_every_case_agrees() {
        // 5 cases at 5/5: the t interval is [1, 1]; the Wilson bound at N = 25 with t(4).
        let all = [(5u64, 5u64); 5];
        let t_only = clustered_mean_interval(&[1.0; 5], 0.95).unwrap();
        assert_eq!((t_only.interval.lo, t_only.interval.hi), (1.0, 1.0));
        let est = suite_interval(&all, 0.95).unwrap();
        assert_eq!(est.method, SuiteIntervalMethod::WilsonEffectiveN);
        assert_eq!(est.effective_n, Some(25.0));
        let c = t_two_sided(4, 0.95).unwrap();
        assert!((est.interval.lo - 1.0 / (1.0 + c * c / 25.0)).abs() < 1e-12);
        assert_eq!(est.interval.hi, 1.0);
        // All failing with one trial each: [0, something > 0].
        let zero = suite_interval(&[(0, 1); 5], 0.95).unwrap();
        assert_eq!(zero.interval.lo, 0.0);
        assert!(zero.interval.hi > 0.3, "{zero:?}");
    }

    #[test]
    fn suite_interval_keeps_the_t_interval_when_cases_differ() {
        // Spread between cases dominates: the t interval contains the Wilson bound.
        let counts: Vec<(u64, u64)> = (0..20)
            .map(|i| (if i % 2 == 0 { 40 } else { 4 }, 40))
            .collect();
        let rates: Vec<f64> = counts.iter().map(|&(x, n)| x as f64 / n as f64).collect();
        let t_only = clustered_mean_interval(&rates, 0.95).unwrap();
        let est = suite_interval(&counts, 0.95).unwrap();
        assert_eq!(est.method, SuiteIntervalMethod::CaseT);
        assert_eq!(est.interval, t_only.interval);
        assert!(
            est.effective_n.unwrap() < 800.0,
            "DEFF > 1 with this spread"
        );
        assert_eq!(
            suite_interval(&[(3, 4), (0, 0)], 0.95),
            None,
            "one case with data"
        );
    }
    use super::test_support::{close, f, rows, u, vectors};

    #[test]
    fn z_values_match_vectors() {
        let v = vectors();
        let rows = rows(&v, "z");
        assert_eq!(rows.len(), 3);
        for row in rows {
            let conf = f(row, "conf");
            close(
                z_two_sided(conf),
                f(row, "z_two_sided"),
                1e-12,
                "z two-sided",
            );
            close(
                z_one_sided(conf),
                f(row, "z_one_sided"),
                1e-12,
                "z one-sided",
            );
        }
    }

    #[test]
    fn z_rejects_bad_confidence() {
        for conf in [0.0, 1.0, -0.5, 1.5, f64::NAN, f64::INFINITY, 1.0 - 1e-17] {
            assert!(z_two_sided(conf).is_nan(), "{conf}");
            assert!(z_one_sided(conf).is_nan(), "{conf}");
        }
    }

    #[test]
    fn wilson_and_clopper_pearson_match_vectors() {
        let v = vectors();
        let rows = rows(&v, "wilson_two_sided");
        assert_eq!(rows.len(), 20);
        for row in rows {
            let (x, n, conf) = (u(row, "x"), u(row, "n"), f(row, "conf"));
            let what = format!("{x}/{n}@{conf}");
            let w = wilson_interval(x, n, conf).expect("wilson defined");
            close(
                w.lo,
                f(row, "wilson_lo"),
                1e-9,
                &format!("wilson lo {what}"),
            );
            close(
                w.hi,
                f(row, "wilson_hi"),
                1e-9,
                &format!("wilson hi {what}"),
            );
            let cp = clopper_pearson_interval(x, n, conf).expect("cp defined");
            close(cp.lo, f(row, "cp_lo"), 1e-9, &format!("cp lo {what}"));
            close(cp.hi, f(row, "cp_hi"), 1e-9, &format!("cp hi {what}"));
            if x == 0 {
                assert_eq!(w.lo, 0.0, "{what}");
                assert_eq!(cp.lo, 0.0, "{what}");
            }
            if x == n {
                assert_eq!(w.hi, 1.0, "{what}");
                assert_eq!(cp.hi, 1.0, "{what}");
            }
        }
    }

    #[test]
    fn wilson_pins_edges_where_floating_point_would_not() {
        // 10/10 @ 95% computes to 0.99999999999999989 unpinned (stats.md §1.3).
        assert_eq!(wilson_interval(10, 10, 0.95).map(|i| i.hi), Some(1.0));
        // 0/100 @ 95% computes to 3.469e-18 unpinned.
        assert_eq!(wilson_interval(0, 100, 0.95).map(|i| i.lo), Some(0.0));
    }

    #[test]
    fn gate_lower_bounds_match_vectors() {
        let v = vectors();
        let rows = rows(&v, "gate_one_sided");
        assert_eq!(rows.len(), 18);
        for row in rows {
            let (x, n, conf, t) = (u(row, "x"), u(row, "n"), f(row, "conf"), f(row, "t"));
            let lb = wilson_lower_bound(x, n, conf).expect("lb defined");
            close(
                lb,
                f(row, "wilson_lb"),
                1e-9,
                &format!("wilson lb {x}/{n}@{conf}"),
            );
            assert_eq!(lb >= t, row["wilson_pass"].as_bool() == Some(true), "{row}");
        }
        assert_eq!(wilson_lower_bound(0, 50, 0.95), Some(0.0));
    }

    #[test]
    fn wilson_lower_bound_is_lower_end_of_two_sided_at_one_minus_two_alpha() {
        for n in [1u64, 7, 25, 100, 1000] {
            for x in 0..=n {
                for conf in [0.9, 0.95, 0.99] {
                    let lb = wilson_lower_bound(x, n, conf).expect("defined");
                    let two = wilson_interval(x, n, 1.0 - 2.0 * (1.0 - conf)).expect("defined");
                    close(lb, two.lo, 1e-12, &format!("{x}/{n}@{conf}"));
                }
            }
        }
    }

    #[test]
    fn sample_sizes_match_vectors() {
        let v = vectors();
        let rows = rows(&v, "sample_size_halfwidth");
        assert_eq!(rows.len(), 60);
        for row in rows {
            let (conf, p, e) = (f(row, "conf"), f(row, "p"), f(row, "e"));
            assert_eq!(
                wilson_trials_for_half_width(p, e, conf),
                Some(u(row, "n_wilson")),
                "{row}"
            );
        }
    }

    #[test]
    fn sample_size_meets_target_and_handles_edges() {
        for conf in [0.9, 0.95, 0.99] {
            for p in [0.0, 0.01, 0.3, 0.5, 0.9, 0.99, 1.0] {
                for e in [0.001, 0.01, 0.05, 0.2, 0.49] {
                    let n = wilson_trials_for_half_width(p, e, conf).expect("defined");
                    assert!(n >= 1);
                    // The half-width at p̂ = p, evaluated at real-valued x = p·n.
                    let z = z_two_sided(conf);
                    let nf = n as f64;
                    let half = z / (nf + z * z) * (nf * p * (1.0 - p) + z * z / 4.0).sqrt();
                    assert!(half <= e * (1.0 + 1e-9), "p={p} e={e} conf={conf} n={n}");
                }
            }
        }
        // Closed form at p = 0: n* = z²(1−2e)/(2e).
        let z = z_two_sided(0.95);
        let expect = (z * z * (1.0 - 0.1) / 0.1).ceil() as u64;
        assert_eq!(wilson_trials_for_half_width(0.0, 0.05, 0.95), Some(expect));
        assert_eq!(
            wilson_trials_for_half_width(0.0, 0.05, 0.95),
            wilson_trials_for_half_width(1.0, 0.05, 0.95)
        );
        for (p, e, conf) in [
            (0.5, 0.0, 0.95),
            (0.5, -0.1, 0.95),
            (0.5, 0.5, 0.95),
            (0.5, 0.7, 0.95),
            (0.5, f64::NAN, 0.95),
            (f64::NAN, 0.05, 0.95),
            (-0.1, 0.05, 0.95),
            (1.1, 0.05, 0.95),
            (0.5, 0.05, 1.0),
            (0.5, 0.05, f64::NAN),
            (0.5, 1e-300, 0.95),
        ] {
            assert_eq!(
                wilson_trials_for_half_width(p, e, conf),
                None,
                "{p} {e} {conf}"
            );
        }
    }

    #[test]
    fn nearest_rank_matches_vectors() {
        let v = vectors();
        let data: Vec<u64> = v["percentiles"]["data"]
            .as_array()
            .expect("data array")
            .iter()
            .map(|d| d.as_u64().expect("integer latency"))
            .collect();
        let rows = rows(&v["percentiles"], "rows");
        assert_eq!(rows.len(), 4);
        for row in rows {
            let q = f(row, "q");
            assert_eq!(
                nearest_rank(&data, q),
                Some(u(row, "nearest_rank")),
                "q={q}"
            );
        }
        assert_eq!(nearest_rank(&data, 0.0), Some(12));
        assert_eq!(nearest_rank(&data, 1.0), Some(900));
        assert_eq!(nearest_rank::<u64>(&[], 0.5), None);
        assert_eq!(nearest_rank(&data, f64::NAN), None);
        assert_eq!(nearest_rank(&data, 1.5), None);
        // 0.07·100 is 7.000000000000001 in floating point; the 7th value is meant.
        let hundred: Vec<u32> = (1..=100).collect();
        assert_eq!(nearest_rank(&hundred, 0.07), Some(7));
        assert_eq!(nearest_rank(&hundred, 0.071), Some(8));
    }

    #[test]
    fn order_statistic_ranks_match_vectors() {
        let v = vectors();
        let rows = rows(&v, "order_stat_ci");
        assert_eq!(rows.len(), 27);
        for row in rows {
            let (n, q) = (u(row, "n"), f(row, "q"));
            let expected_u = row["u"].as_u64();
            assert!(expected_u.is_some() || row["u"].is_null(), "{row}");
            assert_eq!(
                order_statistic_ci_ranks(n, q, 0.95),
                Some((u(row, "l"), expected_u)),
                "{row}"
            );
            let ci = order_statistic_ci(n, q, 0.95).expect("defined");
            close(
                ci.coverage,
                f(row, "coverage"),
                1e-9,
                &format!("coverage {row}"),
            );
        }
    }

    #[test]
    fn order_statistic_edges() {
        // A median from 5 points cannot be bounded on either side at 95%: 0.5^5 > 0.025.
        assert_eq!(order_statistic_ci_ranks(5, 0.5, 0.95), None);
        let ci = order_statistic_ci(5, 0.5, 0.95).expect("defined");
        assert_eq!(
            (ci.lower_rank, ci.upper_rank, ci.coverage),
            (None, None, 1.0)
        );
        // The p95 finite-bound thresholds of §7.3: N ≥ 72 at 95%, N ≥ 59 at 90%.
        assert_eq!(
            order_statistic_ci_ranks(71, 0.95, 0.95).map(|r| r.1),
            Some(None)
        );
        assert!(order_statistic_ci_ranks(72, 0.95, 0.95).is_some_and(|r| r.1.is_some()));
        assert_eq!(
            order_statistic_ci_ranks(58, 0.95, 0.90).map(|r| r.1),
            Some(None)
        );
        assert!(order_statistic_ci_ranks(59, 0.95, 0.90).is_some_and(|r| r.1.is_some()));
        // A low quantile bounded above but not below.
        let low = order_statistic_ci(20, 0.05, 0.95).expect("defined");
        assert_eq!(low.lower_rank, None);
        assert!(low.upper_rank.is_some());
        for (n, q, conf) in [
            (0, 0.5, 0.95),
            (10, 0.0, 0.95),
            (10, 1.0, 0.95),
            (10, f64::NAN, 0.95),
            (10, 0.5, 1.0),
            (10, 0.5, f64::NAN),
        ] {
            assert_eq!(order_statistic_ci(n, q, conf), None, "{n} {q} {conf}");
        }
        // Ranks always satisfy 1 ≤ l < u ≤ n, and the coverage meets the level.
        for n in 1..=300u64 {
            for q in [0.1, 0.5, 0.9, 0.95, 0.99] {
                let ci = order_statistic_ci(n, q, 0.95).expect("defined");
                if let Some(l) = ci.lower_rank {
                    assert!(l >= 1 && l <= n);
                }
                if let Some(u) = ci.upper_rank {
                    assert!(u >= 1 && u <= n);
                    assert!(ci.lower_rank.is_none_or(|l| l < u), "n={n} q={q}");
                }
                assert!(ci.coverage >= 0.95 - 1e-12, "n={n} q={q} {}", ci.coverage);
            }
        }
    }

    const A: [u64; 12] = [19, 13, 17, 15, 20, 20, 19, 19, 20, 20, 20, 20];
    const B: [u64; 12] = [16, 11, 15, 18, 18, 19, 18, 19, 14, 17, 19, 17];

    fn rates(successes: &[u64], k: u64) -> Vec<f64> {
        successes.iter().map(|&x| x as f64 / k as f64).collect()
    }

    #[test]
    fn clustered_interval_worked_example() {
        let a = clustered_mean_interval(&rates(&A, 20), 0.95).expect("defined");
        close(a.mean, 0.925, 1e-12, "A mean");
        close(a.se, 0.033428, 5e-7, "A se");
        close(a.interval.lo, 0.851426, 5e-7, "A lo");
        close(a.interval.hi, 0.998574, 5e-7, "A hi");
        assert_eq!((a.cases, a.df), (12, 11));

        let b = clustered_mean_interval(&rates(&B, 20), 0.95).expect("defined");
        close(b.mean, 0.8375, 1e-12, "B mean");
        close(b.se, 0.034883, 5e-7, "B se");
        close(b.interval.lo, 0.760722, 5e-7, "B lo");
        close(b.interval.hi, 0.914278, 5e-7, "B hi");
    }

    #[test]
    fn clustered_interval_guards() {
        assert_eq!(clustered_mean_interval(&[], 0.95), None);
        assert_eq!(clustered_mean_interval(&[0.5], 0.95), None);
        assert_eq!(clustered_mean_interval(&[0.5, f64::NAN], 0.95), None);
        assert_eq!(clustered_mean_interval(&[0.5, 1.2], 0.95), None);
        assert_eq!(clustered_mean_interval(&[0.5, 0.6], 1.0), None);
        assert_eq!(clustered_mean_interval(&[0.5, 0.6], f64::NAN), None);
        // Clipped to [0, 1] even when the t interval would spill over.
        let e = clustered_mean_interval(&[1.0, 1.0, 0.0], 0.95).expect("defined");
        assert_eq!((e.interval.lo, e.interval.hi), (0.0, 1.0));
        // No spread: a degenerate interval, not NaN.
        let e = clustered_mean_interval(&[1.0, 1.0], 0.95).expect("defined");
        assert_eq!((e.se, e.interval.lo, e.interval.hi), (0.0, 1.0, 1.0));
    }

    #[test]
    fn design_effect_worked_example() {
        let a: Vec<(u64, u64)> = A.iter().map(|&x| (x, 20)).collect();
        let d = design_effect(&a).expect("defined");
        close(d.icc, 0.147600, 5e-7, "A icc");
        close(d.deff, 3.804406, 5e-7, "A deff");
        close(d.effective_trials, 63.084746, 5e-7, "A n_eff");

        let b: Vec<(u64, u64)> = B.iter().map(|&x| (x, 20)).collect();
        let d = design_effect(&b).expect("defined");
        close(d.icc, 0.059310, 5e-7, "B icc");
        close(d.deff, 2.126897, 5e-7, "B deff");
        close(d.effective_trials, 112.840467, 5e-7, "B n_eff");
    }

    #[test]
    fn design_effect_guards() {
        assert_eq!(design_effect(&[]), None);
        assert_eq!(design_effect(&[(3, 5)]), None);
        assert_eq!(design_effect(&[(1, 1), (0, 1)]), None); // K < 2
        assert_eq!(design_effect(&[(3, 5), (0, 0)]), None);
        assert_eq!(design_effect(&[(6, 5), (1, 5)]), None);
        let all_pass = design_effect(&[(10, 10), (10, 10), (10, 10)]).expect("defined");
        assert_eq!(
            (all_pass.icc, all_pass.deff, all_pass.effective_trials),
            (0.0, 1.0, 30.0)
        );
        // Cases that differ completely: all variance is between cases, ρ = 1, DEFF = K.
        let split = design_effect(&[(10, 10), (0, 10)]).expect("defined");
        close(split.icc, 1.0, 1e-12, "split icc");
        close(split.deff, 10.0, 1e-12, "split deff");
    }

    #[test]
    fn intervals_contain_estimate_for_many_counts() {
        for n in 1..=300u64 {
            for x in 0..=n {
                let p_hat = x as f64 / n as f64;
                for conf in [0.5, 0.8, 0.9, 0.95, 0.99, 0.999] {
                    let mut intervals = vec![wilson_interval(x, n, conf).expect("wilson")];
                    // Clopper–Pearson bisects an incomplete beta: costly in a debug build, so
                    // a smaller grid.
                    if n <= 60 && (conf == 0.9 || conf == 0.99) {
                        intervals.push(clopper_pearson_interval(x, n, conf).expect("cp"));
                    }
                    for iv in intervals {
                        assert!(
                            0.0 <= iv.lo && iv.lo <= iv.hi && iv.hi <= 1.0,
                            "{x}/{n} {iv:?}"
                        );
                        assert!(iv.contains(p_hat), "{x}/{n}@{conf} {iv:?}");
                        assert!(iv.half_width() >= 0.0);
                    }
                    let lb = wilson_lower_bound(x, n, conf).expect("lb");
                    assert!((0.0..=p_hat).contains(&lb), "{x}/{n}@{conf} lb {lb}");
                }
            }
        }
    }

    #[test]
    fn wilson_is_nested_in_confidence_and_symmetric_in_x() {
        for n in [1u64, 2, 9, 40, 333] {
            for x in 0..=n {
                let narrow = wilson_interval(x, n, 0.9).expect("defined");
                let wide = wilson_interval(x, n, 0.99).expect("defined");
                assert!(wide.lo <= narrow.lo && narrow.hi <= wide.hi, "{x}/{n}");
                let mirror = wilson_interval(n - x, n, 0.9).expect("defined");
                close(narrow.lo, 1.0 - mirror.hi, 1e-12, "mirror lo");
                close(narrow.hi, 1.0 - mirror.lo, 1e-12, "mirror hi");
            }
        }
    }

    #[test]
    fn undefined_inputs_give_none_never_panic() {
        for conf in [0.9, 0.95] {
            assert_eq!(wilson_interval(0, 0, conf), None);
            assert_eq!(wilson_lower_bound(0, 0, conf), None);
            assert_eq!(clopper_pearson_interval(0, 0, conf), None);
            assert_eq!(wilson_interval(5, 4, conf), None);
            assert_eq!(wilson_lower_bound(5, 4, conf), None);
            assert_eq!(clopper_pearson_interval(5, 4, conf), None);
        }
        for conf in [
            0.0,
            1.0,
            -1.0,
            2.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            assert_eq!(wilson_interval(3, 10, conf), None, "{conf}");
            assert_eq!(wilson_lower_bound(3, 10, conf), None, "{conf}");
            assert_eq!(clopper_pearson_interval(3, 10, conf), None, "{conf}");
        }
        assert_eq!(wilson_lower_bound(3, 10, 0.3), None);
        assert_eq!(clopper_pearson_interval(5, MAX_EXACT_N + 1, 0.95), None);
        assert_eq!(order_statistic_ci(MAX_EXACT_N + 1, 0.5, 0.95), None);
        // Large but supported: finite, ordered, and close to Wilson (they agree to O(1/n)).
        for x in [
            0,
            1,
            7,
            MAX_EXACT_N / 3,
            MAX_EXACT_N / 2,
            MAX_EXACT_N - 1,
            MAX_EXACT_N,
        ] {
            let cp = clopper_pearson_interval(x, MAX_EXACT_N, 0.95).expect("defined");
            let w = wilson_interval(x, MAX_EXACT_N, 0.95).expect("defined");
            assert!(
                (cp.lo - w.lo).abs() < 2.0 / MAX_EXACT_N as f64,
                "{x} {cp:?} {w:?}"
            );
            assert!(
                (cp.hi - w.hi).abs() < 2.0 / MAX_EXACT_N as f64,
                "{x} {cp:?} {w:?}"
            );
        }
        assert!(order_statistic_ci(MAX_EXACT_N, 0.99, 0.95).is_some());
        // Enormous counts stay finite and ordered.
        for (x, n) in [
            (0, u64::MAX),
            (u64::MAX, u64::MAX),
            (u64::MAX / 2, u64::MAX),
        ] {
            let w = wilson_interval(x, n, 0.95).expect("defined");
            assert!(
                w.lo.is_finite() && w.hi.is_finite() && w.lo <= w.hi,
                "{w:?}"
            );
            assert!(wilson_lower_bound(x, n, 0.95).is_some());
        }
    }

    #[test]
    fn serde_round_trip() {
        // serde_json without its `float_roundtrip` feature may parse a float one ulp away,
        // so compare numbers with a tolerance rather than bit for bit.
        let e = clustered_mean_interval(&rates(&A, 20), 0.95).expect("defined");
        let json = serde_json::to_string(&e).expect("serialises");
        let back: ClusteredEstimate = serde_json::from_str(&json).expect("deserialises");
        assert_eq!((back.cases, back.df), (e.cases, e.df));
        for (got, want) in [
            (back.mean, e.mean),
            (back.se, e.se),
            (back.interval.lo, e.interval.lo),
            (back.interval.hi, e.interval.hi),
        ] {
            close(got, want, 1e-15, "round trip");
        }
        let d = design_effect(&[(3, 10), (9, 10)]).expect("defined");
        let back: DesignEffect =
            serde_json::from_str(&serde_json::to_string(&d).expect("serialises"))
                .expect("deserialises");
        close(back.deff, d.deff, 1e-15, "deff round trip");
    }

    proptest::proptest! {
        #[test]
        fn rate_intervals_are_inside_0_1_and_hold_the_estimate(
            n in 1u64..3000,
            frac in 0.0f64..=1.0,
            conf in 0.5f64..0.999,
        ) {
            let x = (frac * n as f64).round() as u64;
            let iv = rate_interval(x, n, conf).unwrap();
            let p = x as f64 / n as f64;
            proptest::prop_assert!(0.0 <= iv.lo && iv.lo <= p && p <= iv.hi && iv.hi <= 1.0, "{x}/{n} {iv:?}");
        }

        #[test]
        fn rate_intervals_nest_as_confidence_grows(
            n in 1u64..500,
            frac in 0.0f64..=1.0,
            c1 in 0.5f64..0.99,
            step in 0.001f64..0.009,
        ) {
            let x = (frac * n as f64).round() as u64;
            let narrow = rate_interval(x, n, c1).unwrap();
            let wide = rate_interval(x, n, c1 + step).unwrap();
            proptest::prop_assert!(wide.lo <= narrow.lo + 1e-12 && narrow.hi <= wide.hi + 1e-12, "{x}/{n}: {narrow:?} {wide:?}");
        }

        #[test]
        fn rate_bounds_grow_with_the_count(n in 1u64..500, frac in 0.0f64..1.0, conf in 0.5f64..0.999) {
            let x = ((frac * n as f64) as u64).min(n - 1);
            let a = rate_interval(x, n, conf).unwrap();
            let b = rate_interval(x + 1, n, conf).unwrap();
            proptest::prop_assert!(a.lo <= b.lo + 1e-12 && a.hi <= b.hi + 1e-12, "{x}/{n}: {a:?} {b:?}");
        }

        #[test]
        fn suite_intervals_hold_the_mean_inside_0_1(
            counts in proptest::collection::vec((0u64..50, 1u64..50), 2..40),
            conf in 0.5f64..0.999,
        ) {
            let counts: Vec<(u64, u64)> = counts.into_iter().map(|(x, n)| (x.min(n), n)).collect();
            let est = suite_interval(&counts, conf).unwrap();
            let iv = est.interval;
            proptest::prop_assert!(0.0 <= iv.lo && iv.lo <= est.mean && est.mean <= iv.hi && iv.hi <= 1.0, "{est:?}");
            proptest::prop_assert!(iv.hi > iv.lo, "never zero-width: {est:?}");
        }
    }
}
