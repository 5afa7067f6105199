//! Decisions on a run's summary: `--gate 'pass>=0.8'` passes only when the lower confidence
//! bound clears the bar, fails only when the upper bound is below it, and is inconclusive
//! otherwise (reference/stats.md §1.4, §3.3).
//!
//! - Suite level: the suite interval of the mean of case rates (`stats::suite_interval`, cases
//!   as the independent units), taken two-sided at `2·conf − 1` so each end is a one-sided
//!   bound at `conf`.
//! - Case level, fixed n: a case passes when its one-sided Wilson lower bound is at least the
//!   threshold, and the gate passes when every case does (an intersection–union test, valid at
//!   α without correction). A case fails only when Holm's procedure over the gated cases
//!   rejects `p ≥ T` for it, so the chance of any false "fail" stays at most α however many
//!   cases are gated.
//!
//! Pure: reads a `Summary`, returns a `GateReport`.

pub mod baseline;
pub mod sequential;

use crate::error::InputError;
use crate::report::{
    ArmSummary, CaseVerdict, DatasetInfo, GateLevel, GateReport, GateResult, Metric, RateStat,
    Summary, Verdict,
};
use crate::stats;

/// A rate's name as users write it: selection, args, schema, pass.
pub fn parse_metric(name: &str) -> Option<Metric> {
    match name {
        "selection" => Some(Metric::Selection),
        "args" | "args_exact" => Some(Metric::ArgsExact),
        "schema" | "schema_valid" => Some(Metric::SchemaValid),
        "pass" => Some(Metric::Pass),
        _ => None,
    }
}

/// A gate as the user wrote it: `METRIC>=THRESHOLD`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GateSpec {
    pub metric: Metric,
    pub threshold: f64,
}

impl GateSpec {
    /// Parses `pass>=0.8` (metrics: selection, args, schema, pass).
    pub fn parse(text: &str) -> Result<GateSpec, InputError> {
        let bad = |why: &str| {
            InputError::new(format!(
                "--gate `{text}`: {why} (write METRIC>=THRESHOLD, METRIC one of selection, args, schema, pass, e.g. pass>=0.8)"
            ))
        };
        let (name, value) = text.split_once(">=").ok_or_else(|| bad("no `>=`"))?;
        let metric = parse_metric(name.trim())
            .ok_or_else(|| bad(&format!("unknown metric `{}`", name.trim())))?;
        let threshold: f64 = value
            .trim()
            .parse()
            .map_err(|_| bad(&format!("`{}` is not a number", value.trim())))?;
        if !(threshold > 0.0 && threshold < 1.0) {
            return Err(bad("the threshold must be strictly between 0 and 1"));
        }
        Ok(GateSpec { metric, threshold })
    }
}

/// The run's verdict from gate results: the worst of them.
pub fn report_of(gates: Vec<GateResult>, confidence: f64) -> GateReport {
    let verdict = gates
        .iter()
        .map(|g| g.verdict)
        .max()
        .unwrap_or(Verdict::Inconclusive);
    GateReport {
        verdict,
        confidence,
        gates,
    }
}

/// Evaluates every gate on every arm of the summary.
pub fn evaluate(summary: &Summary, specs: &[GateSpec], level: GateLevel) -> GateReport {
    let conf = summary.confidence;
    let gates: Vec<GateResult> = summary
        .arms
        .iter()
        .flat_map(|arm| {
            specs.iter().map(move |spec| match level {
                GateLevel::Suite => suite_gate(arm, *spec, conf),
                GateLevel::Case | GateLevel::Baseline => {
                    case_gate(arm, *spec, conf, &summary.run.datasets)
                }
            })
        })
        .collect();
    let verdict = gates
        .iter()
        .map(|g| g.verdict)
        .max()
        .unwrap_or(Verdict::Pass);
    GateReport {
        verdict,
        confidence: conf,
        gates,
    }
}

fn empty_result(arm: &ArmSummary, spec: GateSpec, level: GateLevel, method: &str) -> GateResult {
    GateResult {
        metric: spec.metric,
        threshold: spec.threshold,
        level,
        arm: arm.arm.clone(),
        verdict: Verdict::Inconclusive,
        method: method.to_owned(),
        estimate: None,
        lower: None,
        upper: None,
        cases: 0,
        passed_cases: 0,
        failed_cases: 0,
        inconclusive_cases: 0,
        not_passed: Vec::new(),
        hint: None,
        sequential: None,
    }
}

fn suite_gate(arm: &ArmSummary, spec: GateSpec, conf: f64) -> GateResult {
    let mut r = empty_result(
        arm,
        spec,
        GateLevel::Suite,
        "suite interval of the mean of case rates (t(m-1), never narrower than Wilson at N/DEFF), one-sided",
    );
    let counts: Vec<(u64, u64)> = arm
        .cases
        .iter()
        .map(|c| {
            let s = c.metrics.get(spec.metric);
            (s.x, s.n)
        })
        .filter(|&(_, n)| n > 0)
        .collect();
    r.cases = counts.len();
    let Some(est) = stats::suite_interval(&counts, 2.0 * conf - 1.0) else {
        r.hint = Some(format!(
            "{} case(s) with data; a suite-level gate needs at least 2",
            counts.len()
        ));
        return r;
    };
    r.estimate = Some(est.mean);
    r.lower = Some(est.interval.lo);
    r.upper = Some(est.interval.hi);
    r.verdict = if est.interval.lo >= spec.threshold {
        Verdict::Pass
    } else if est.interval.hi < spec.threshold {
        Verdict::Fail
    } else {
        Verdict::Inconclusive
    };
    if r.verdict == Verdict::Inconclusive {
        let margin = (est.mean - spec.threshold).abs();
        r.hint = Some(
            match stats::cases_for_half_width(&est, margin.min(0.49), 2.0 * conf - 1.0) {
                Some(m) if margin > 0.0 => format!(
                    "about {m} cases with the same spread would settle it at the observed mean (more trials per case cannot)"
                ),
                _ => {
                    "the observed mean sits on the threshold; no sample size settles it".to_owned()
                }
            },
        );
    }
    r
}

/// The bar of one case: its fixture's `"gate"` when it has one, else the `--gate` threshold.
fn case_threshold(datasets: &[DatasetInfo], dataset: &str, case: &str, spec: GateSpec) -> f64 {
    datasets
        .iter()
        .find(|d| d.name == dataset)
        .and_then(|d| d.case_gates.get(case).copied())
        .unwrap_or(spec.threshold)
}

fn case_gate(arm: &ArmSummary, spec: GateSpec, conf: f64, datasets: &[DatasetInfo]) -> GateResult {
    let mut r = empty_result(
        arm,
        spec,
        GateLevel::Case,
        "one-sided Wilson per case; every case must pass (intersection-union); a case fails under Holm across the gated cases; a fixture's \"gate\" sets its own bar",
    );
    let gated: Vec<(&crate::report::CaseSummary, &RateStat)> = arm
        .cases
        .iter()
        .map(|c| (c, c.metrics.get(spec.metric)))
        .filter(|(_, s)| s.n > 0)
        .collect();
    r.cases = gated.len();
    if gated.is_empty() {
        r.hint = Some("no case has data for this metric".to_owned());
        return r;
    }
    let thresholds: Vec<f64> = gated
        .iter()
        .map(|(c, _)| case_threshold(datasets, &c.dataset, &c.case_id, spec))
        .collect();
    let p_values: Vec<f64> = gated
        .iter()
        .zip(&thresholds)
        .map(|((_, s), &t)| stats::score_p_value_below(s.x, s.n, t).unwrap_or(1.0))
        .collect();
    let failing = stats::holm_rejections(&p_values, 1.0 - conf);
    let mut cases = Vec::with_capacity(gated.len());
    for (((c, s), failed), &t) in gated.iter().zip(failing).zip(&thresholds) {
        let lower = stats::wilson_lower_bound(s.x, s.n, conf).unwrap_or(0.0);
        let upper = stats::wilson_upper_bound(s.x, s.n, conf).unwrap_or(1.0);
        let verdict = if lower >= t {
            Verdict::Pass
        } else if failed {
            Verdict::Fail
        } else {
            Verdict::Inconclusive
        };
        let more_trials = (verdict == Verdict::Inconclusive)
            .then(|| {
                let p = s.x as f64 / s.n as f64;
                let margin = (p - t).abs();
                (margin > 0.0)
                    .then(|| {
                        stats::wilson_trials_for_half_width(p, margin.min(0.49), 2.0 * conf - 1.0)
                    })
                    .flatten()
                    .map(|n| n.saturating_sub(s.n))
            })
            .flatten();
        cases.push(CaseVerdict {
            dataset: c.dataset.clone(),
            case_id: c.case_id.clone(),
            x: s.x,
            n: s.n,
            lower,
            upper,
            threshold: t,
            verdict,
            more_trials,
        });
    }
    r.passed_cases = cases.iter().filter(|c| c.verdict == Verdict::Pass).count();
    r.failed_cases = cases.iter().filter(|c| c.verdict == Verdict::Fail).count();
    r.inconclusive_cases = cases.len() - r.passed_cases - r.failed_cases;
    r.verdict = if r.failed_cases > 0 {
        Verdict::Fail
    } else if r.inconclusive_cases > 0 {
        Verdict::Inconclusive
    } else {
        Verdict::Pass
    };
    if r.verdict == Verdict::Inconclusive {
        let most = cases.iter().filter_map(|c| c.more_trials).max();
        r.hint = Some(match most {
            Some(m) => format!(
                "about {m} more trials for the least settled case would decide it at its observed rate"
            ),
            None => {
                "a case's observed rate sits on the threshold; no sample size settles it".to_owned()
            }
        });
    }
    let mut not_passed: Vec<CaseVerdict> = cases
        .into_iter()
        .filter(|c| c.verdict != Verdict::Pass)
        .collect();
    not_passed.sort_by(|a, b| {
        b.verdict
            .cmp(&a.verdict)
            .then(
                a.upper
                    .partial_cmp(&b.upper)
                    .unwrap_or(std::cmp::Ordering::Equal),
            )
            .then_with(|| a.case_id.cmp(&b.case_id))
    });
    r.not_passed = not_passed;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_specs_parse_or_say_what_is_wrong() {
        assert_eq!(
            GateSpec::parse("pass>=0.8").unwrap(),
            GateSpec {
                metric: Metric::Pass,
                threshold: 0.8
            }
        );
        assert_eq!(
            GateSpec::parse(" args >= 0.5").unwrap().metric,
            Metric::ArgsExact
        );
        for bad in ["pass>0.8", "speed>=0.8", "pass>=1", "pass>=x"] {
            let msg = GateSpec::parse(bad).unwrap_err().to_string();
            assert!(msg.contains("METRIC>=THRESHOLD"), "{bad}: {msg}");
        }
    }

    /// SplitMix64 uniforms, for seeded simulations.
    fn uniforms(mut state: u64) -> impl FnMut() -> f64 {
        move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    #[test]
    fn the_fixed_n_bound_passes_a_case_at_the_threshold_at_most_alpha_of_the_time() {
        let mut u = uniforms(7);
        let (reps, n, t) = (4000, 100u64, 0.8);
        let passes = (0..reps)
            .filter(|_| {
                let x = (0..n).filter(|_| u() < t).count() as u64;
                stats::wilson_lower_bound(x, n, 0.95).unwrap() >= t
            })
            .count();
        let rate = passes as f64 / f64::from(reps);
        let mc = (0.05f64 * 0.95 / f64::from(reps)).sqrt();
        assert!(rate <= 0.05 + 3.0 * mc, "false-pass rate {rate}");
    }

    #[test]
    fn holm_keeps_the_chance_of_any_false_fail_at_alpha_over_fifty_cases() {
        // 50 cases whose true rate is 0.03 above the bar: none should fail; the chance that
        // at least one does is the family-wise error Holm bounds by alpha.
        let mut u = uniforms(11);
        let (reps, cases, n, t) = (1000, 50, 60u64, 0.8);
        let any_fail = (0..reps)
            .filter(|_| {
                let p: Vec<f64> = (0..cases)
                    .map(|_| {
                        let x = (0..n).filter(|_| u() < t + 0.03).count() as u64;
                        stats::score_p_value_below(x, n, t).unwrap()
                    })
                    .collect();
                stats::holm_rejections(&p, 0.05).contains(&true)
            })
            .count();
        let rate = any_fail as f64 / f64::from(reps);
        assert!(
            rate <= 0.05 + 3.0 * (0.05f64 * 0.95 / f64::from(reps)).sqrt(),
            "family-wise false-fail rate {rate}"
        );
    }
}
