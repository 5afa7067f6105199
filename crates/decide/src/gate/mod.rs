//! Public as a namespace: callers write `gate::GateSpec`, `gate::evaluate`, `gate::sequential::SequentialGate`.
//!
//! Decisions on a run's summary: `--gate 'pass>=0.8'` passes only when the lower confidence
//! bound clears the bar, fails only when the upper bound is below it, and is inconclusive
//! otherwise (reference/stats.md §1.4, §3.3); `--gate 'p95_ms<=2000'` passes only when the
//! upper bound of the percentile is within the budget and fails only when its lower bound is
//! over it (§7.3).
//!
//! - Suite level: the suite interval of the mean of case rates (`stats::suite_interval`, cases
//!   as the independent units), taken two-sided at `2·conf − 1` so each end is a one-sided
//!   bound at `conf`.
//! - Case level, fixed n: a case passes when its one-sided Clopper–Pearson lower bound is at
//!   least the threshold (the exact binomial test of `p ≤ T` rejects at α; `stats::exact`),
//!   and the gate passes when every case does (an intersection–union test, valid at α without
//!   correction). A case fails only when Holm's procedure over the gated cases rejects
//!   `p ≥ T` on exact binomial p-values, so the chance of any false "fail" stays at most α
//!   however many cases are gated. Both hold exactly at every n, not approximately.
//! - Tool level: the same design with expected tools as the units. A tool's rate is the suite
//!   interval of its own cases (one case: that case's exact bounds, as at case level); every tool must
//!   pass, and a tool fails only when Holm's procedure over the gated tools rejects for it,
//!   using the p-values that invert those very intervals.
//! - Latency: the exact order-statistic interval of the percentile (distribution-free), each
//!   end one-sided at `conf`; per arm at suite (and case) level, per expected tool at tool
//!   level, where FAIL again goes through Holm across tools.
//!
//! Pure: reads a `Summary` (and, for latency, the arms' latency distributions), returns a
//! `GateReport`.

use std::collections::BTreeMap;

mod attack;
pub mod baseline;
pub mod recorded;
pub mod sequential;
pub mod sequential_baseline;
pub mod sequential_suite;

use toolscore_core::InputError;
use toolscore_core::metric::{AttackMetric, Metric};
use toolscore_stats as stats;
use toolscore_summary::{
    ArmLatencyDistribution, ArmSummary, CaseVerdict, DatasetInfo, GateLevel, GateMetric,
    GateReport, GateResult, LatencyDistributions, LatencyQuantile, Summary, ToolVerdict, Verdict,
};

/// A gate as the user wrote it: `METRIC>=THRESHOLD` for a rate, `LATENCY<=BUDGET_MS` for a
/// latency percentile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GateSpec {
    pub metric: GateMetric,
    /// The rate threshold, or the latency budget in milliseconds.
    pub threshold: f64,
}

/// The forms a `--gate` takes, quoted in every parse error.
fn gate_forms() -> String {
    let names = |list: &mut dyn Iterator<Item = &'static str>| list.collect::<Vec<_>>().join(", ");
    format!(
        "write METRIC>=THRESHOLD, METRIC one of {}, e.g. pass>=0.8; or LATENCY<=MS, LATENCY one of {}, e.g. p95_ms<=2000; or, for a run with --attacks, attack_success<=THRESHOLD or {}>=THRESHOLD",
        names(&mut Metric::ALL.iter().map(|m| m.name())),
        names(&mut LatencyQuantile::ALL.iter().map(|q| q.name())),
        names(
            &mut AttackMetric::ALL
                .iter()
                .filter(|m| !m.lower_is_better())
                .map(|m| m.name())
        ),
    )
}

impl GateSpec {
    /// Parses `pass>=0.8` (metrics: selection, args, schema, pass), `p95_ms<=2000` (p50_ms,
    /// p95_ms, p99_ms) or `attack_success<=0.02` (and `utility_under_attack>=`, `utility>=`).
    /// A rate where higher is better only takes `>=` (a floor), a latency or attack success
    /// only `<=` (a ceiling): the other direction would be a gate nobody means, so it is
    /// refused.
    pub fn parse(text: &str) -> Result<GateSpec, InputError> {
        let bad = |why: &str| InputError::new(format!("--gate `{text}`: {why} ({})", gate_forms()));
        let (name, op, value) = if let Some((n, v)) = text.split_once(">=") {
            (n, ">=", v)
        } else if let Some((n, v)) = text.split_once("<=") {
            (n, "<=", v)
        } else {
            return Err(bad("no `>=` or `<=`"));
        };
        let metric = GateMetric::parse(name.trim())
            .ok_or_else(|| bad(&format!("unknown metric `{}`", name.trim())))?;
        let value = value.trim();
        let latency = metric.quantile().is_some();
        if latency && op == ">=" {
            return Err(bad(&format!(
                "a latency is gated with `<=` (a budget it must stay within), e.g. {}<={value}",
                metric.label()
            )));
        }
        if metric.ceiling() && op == ">=" {
            return Err(bad(&format!(
                "{} is lower the better: it is gated with `<=` (a ceiling it must stay under), e.g. {}<={value}",
                metric.label(),
                metric.label()
            )));
        }
        if !metric.ceiling() && op == "<=" {
            return Err(bad(&format!(
                "a rate is gated with `>=` (a floor it must clear), e.g. {}>={value}",
                name.trim()
            )));
        }
        let threshold: f64 = value
            .parse()
            .map_err(|_| bad(&format!("`{value}` is not a number")))?;
        if latency {
            if !(threshold.is_finite() && threshold > 0.0) {
                return Err(bad(
                    "the latency budget must be a positive number of milliseconds",
                ));
            }
        } else if !(threshold > 0.0 && threshold < 1.0) {
            return Err(bad("the threshold must be strictly between 0 and 1"));
        }
        Ok(GateSpec { metric, threshold })
    }
}

/// The cases that did not pass, failures first, then the lowest upper bounds.
pub(crate) fn worst_first(cases: &[CaseVerdict]) -> Vec<CaseVerdict> {
    let mut not_passed: Vec<CaseVerdict> = cases
        .iter()
        .filter(|c| c.verdict != Verdict::Pass)
        .cloned()
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
    not_passed
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

/// Evaluates every gate on every arm of the summary. Latency gates read the arms' latency
/// distributions (`Aggregator::latency_distributions`, `summary::reaggregate_with_latency`),
/// which the summary does not hold; rate gates need only the summary.
pub fn evaluate(
    summary: &Summary,
    latency: &LatencyDistributions,
    specs: &[GateSpec],
    level: GateLevel,
) -> GateReport {
    let conf = summary.confidence;
    let none = ArmLatencyDistribution::default();
    let (attack_specs, specs): (Vec<GateSpec>, Vec<GateSpec>) =
        specs.iter().partition(|s| s.metric.attack().is_some());
    let gates: Vec<GateResult> = summary
        .arms
        .iter()
        .flat_map(|arm| {
            let dist = latency.arms.get(&arm.arm).unwrap_or(&none);
            specs
                .iter()
                .map(move |spec| match (spec.metric.rate(), level) {
                    (Some(metric), GateLevel::Suite) => suite_gate(arm, *spec, metric, conf),
                    (Some(metric), GateLevel::Case | GateLevel::Baseline) => {
                        case_gate(arm, *spec, metric, conf, &summary.run.datasets)
                    }
                    (Some(metric), GateLevel::Tool) => tool_rate_gate(arm, *spec, metric, conf),
                    (None, GateLevel::Tool) => tool_latency_gate(arm, dist, *spec, conf),
                    (None, _) => arm_latency_gate(arm, dist, *spec, level, conf),
                })
        })
        .chain(attack::gates(summary, &attack_specs, level))
        .chain(without_cases(summary, &specs, level))
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
    empty_result_of(&arm.arm, spec, level, method)
}

/// A gate on `arm` judged nothing yet: inconclusive, with no bounds.
/// A fixture gate on a run with no fixture case (only scenarios ran): an inconclusive result
/// per arm saying why, never a PASS over nothing. `run` refuses such a gate before any
/// request; a summary judged again by `report --gate` can still ask for one.
fn without_cases(summary: &Summary, specs: &[GateSpec], level: GateLevel) -> Vec<GateResult> {
    if !summary.arms.is_empty() {
        return Vec::new();
    }
    summary
        .run
        .arms
        .iter()
        .flat_map(|arm| {
            specs.iter().map(move |spec| {
                let mut r = empty_result_of(&arm.id(), *spec, level, SUITE_METHOD);
                r.hint = Some(format!(
                    "no fixture case: `{}` is measured on fixture cases (--dataset), and this run ran only scenarios",
                    spec.metric.label()
                ));
                r
            })
        })
        .collect()
}

pub(crate) fn empty_result_of(
    arm: &toolscore_core::ArmId,
    spec: GateSpec,
    level: GateLevel,
    method: &str,
) -> GateResult {
    GateResult {
        metric: spec.metric,
        threshold: spec.threshold,
        level,
        arm: arm.clone(),
        verdict: Verdict::Inconclusive,
        method: method.to_owned(),
        estimate: None,
        lower: None,
        upper: None,
        cases: 0,
        trials: None,
        passed_cases: 0,
        failed_cases: 0,
        inconclusive_cases: 0,
        not_passed: Vec::new(),
        tools: Vec::new(),
        hint: None,
        sequential: None,
    }
}

fn suite_gate(arm: &ArmSummary, spec: GateSpec, metric: Metric, conf: f64) -> GateResult {
    let r = empty_result(arm, spec, GateLevel::Suite, SUITE_METHOD);
    let counts: Vec<(u64, u64)> = arm
        .cases
        .iter()
        .map(|c| {
            let s = c.metrics.get(metric);
            (s.x, s.n)
        })
        .filter(|&(_, n)| n > 0)
        .collect();
    judge_suite(r, &counts, conf)
}

/// How a suite-level rate gate bounds its rate.
pub(crate) const SUITE_METHOD: &str = "suite interval of the mean of case rates (t(m-1), never narrower than Wilson at N/DEFF), one-sided";

/// A suite-level floor on the mean of the units' rates, from each unit's (x, n): PASS when the
/// one-sided lower bound clears `r.threshold`, FAIL when the upper bound is below it.
pub(crate) fn judge_suite(mut r: GateResult, counts: &[(u64, u64)], conf: f64) -> GateResult {
    let threshold = r.threshold;
    r.cases = counts.len();
    let Some(est) = stats::suite_interval(counts, 2.0 * conf - 1.0) else {
        r.hint = Some(format!(
            "{} case(s) with data; a suite-level gate needs at least 2",
            counts.len()
        ));
        return r;
    };
    r.estimate = Some(est.mean);
    r.lower = Some(est.interval.lo);
    r.upper = Some(est.interval.hi);
    r.verdict = if est.interval.lo >= threshold {
        Verdict::Pass
    } else if est.interval.hi < threshold {
        Verdict::Fail
    } else {
        Verdict::Inconclusive
    };
    if r.verdict == Verdict::Inconclusive {
        let margin = (est.mean - threshold).abs();
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

fn case_gate(
    arm: &ArmSummary,
    spec: GateSpec,
    metric: Metric,
    conf: f64,
    datasets: &[DatasetInfo],
) -> GateResult {
    let r = empty_result(arm, spec, GateLevel::Case, CASE_METHOD);
    let gated: Vec<GatedCase> = arm
        .cases
        .iter()
        .map(|c| (c, c.metrics.get(metric)))
        .filter(|(_, s)| s.n > 0)
        .map(|(c, s)| GatedCase {
            dataset: c.dataset.clone(),
            case_id: c.case_id.clone(),
            x: s.x,
            n: s.n,
            threshold: case_threshold(datasets, &c.dataset, &c.case_id, spec),
        })
        .collect();
    judge_cases(r, &gated, conf)
}

/// How a case-level rate gate bounds each case.
pub(crate) const CASE_METHOD: &str = "exact one-sided Clopper-Pearson bound per case; every case must pass (intersection-union); a case fails under Holm across the gated cases on exact binomial p-values; a fixture's \"gate\" sets its own bar";

/// One case a case-level gate judges: its successes of trials and its bar.
pub(crate) struct GatedCase {
    pub(crate) dataset: String,
    pub(crate) case_id: String,
    pub(crate) x: u64,
    pub(crate) n: u64,
    pub(crate) threshold: f64,
}

/// A case-level floor: each case passes when its exact lower bound clears its bar, fails when
/// Holm across the gated cases rejects "at least the bar" for it; the gate passes when every
/// case does and fails when one fails.
pub(crate) fn judge_cases(mut r: GateResult, gated: &[GatedCase], conf: f64) -> GateResult {
    r.cases = gated.len();
    if gated.is_empty() {
        r.hint = Some("no case has data for this metric".to_owned());
        return r;
    }
    let p_values: Vec<f64> = gated
        .iter()
        .map(|c| stats::binomial_p_value_below(c.x, c.n, c.threshold).unwrap_or(1.0))
        .collect();
    let failing = stats::holm_rejections(&p_values, 1.0 - conf);
    let mut cases = Vec::with_capacity(gated.len());
    for (c, failed) in gated.iter().zip(failing) {
        let (x, n, t) = (c.x, c.n, c.threshold);
        let lower = stats::clopper_pearson_lower_bound(x, n, conf).unwrap_or(0.0);
        let upper = stats::clopper_pearson_upper_bound(x, n, conf).unwrap_or(1.0);
        // Decided on the exact tail itself, which the bound shown inverts.
        let verdict = if stats::exact_gate_passes(x, n, t, conf) == Some(true) {
            Verdict::Pass
        } else if failed {
            Verdict::Fail
        } else {
            Verdict::Inconclusive
        };
        let more_trials = (verdict == Verdict::Inconclusive)
            .then(|| trials_to_settle(x, n, t, conf))
            .flatten();
        cases.push(CaseVerdict {
            dataset: c.dataset.clone(),
            case_id: c.case_id.clone(),
            x,
            n,
            lower,
            upper,
            threshold: t,
            verdict,
            more_trials,
            below: None,
        });
    }
    tally_case_verdicts(&mut r, &cases);
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
    r.not_passed = worst_first(&cases);
    r
}

/// The counts of passed, failed and inconclusive cases, and the gate's verdict from them:
/// every case must pass; one failure fails it.
fn tally_case_verdicts(r: &mut GateResult, cases: &[CaseVerdict]) {
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
}

/// About how many more trials would put a case's Wilson interval, at its observed rate, clear
/// of threshold `t`; None when the rate sits on the threshold.
fn trials_to_settle(x: u64, n: u64, t: f64, conf: f64) -> Option<u64> {
    let p = x as f64 / n as f64;
    let margin = (p - t).abs();
    if margin > 0.0 && (x == 0 || x == n) {
        // Wilson's half-width degenerates at 0 and 1 (it says "none more" at 3 of 3). The
        // exact one-sided bound has a closed form there, with α = 1 − conf: N of N clears t
        // once α^(1/N) ≥ t, and 0 of N is below t once 1 − α^(1/N) < t.
        let alpha = 1.0 - conf;
        let side = if x == n { t } else { 1.0 - t };
        let needed = (alpha.ln() / side.ln()).floor() as u64 + 1;
        return Some(needed.saturating_sub(n).max(1));
    }
    (margin > 0.0)
        .then(|| stats::wilson_trials_for_half_width(p, margin.min(0.49), 2.0 * conf - 1.0))
        .flatten()
        .map(|needed| needed.saturating_sub(n))
}

/// What the data say about one latency percentile against a budget, each bound one-sided at
/// `conf` (the order-statistic interval at `2·conf − 1`).
struct LatencyJudgement {
    n: u64,
    value: Option<f64>,
    lower: Option<f64>,
    upper: Option<f64>,
    /// `P(Bin(n, q) ≤ k)`, k the answers within the budget: the p-value of "within budget".
    p_value: Option<f64>,
    hint: Option<String>,
}

/// The value at 1-based `rank` of an ascending (value, count) distribution.
fn value_at_rank(distribution: &[(f64, u64)], rank: u64) -> Option<f64> {
    let mut seen = 0;
    distribution.iter().find_map(|&(v, c)| {
        seen += c;
        (seen >= rank).then_some(v)
    })
}

fn judge_latency(distribution: &[(f64, u64)], q: f64, budget: f64, conf: f64) -> LatencyJudgement {
    let n: u64 = distribution.iter().map(|&(_, c)| c).sum();
    let mut j = LatencyJudgement {
        n,
        value: None,
        lower: None,
        upper: None,
        p_value: None,
        hint: None,
    };
    if n == 0 {
        j.hint = Some("no answered trials".to_owned());
        return j;
    }
    let two_sided = 2.0 * conf - 1.0;
    j.value = stats::nearest_rank_position(n, q).and_then(|r| value_at_rank(distribution, r));
    let ci = stats::order_statistic_ci(n, q, two_sided);
    j.lower = ci
        .and_then(|c| c.lower_rank)
        .and_then(|r| value_at_rank(distribution, r));
    j.upper = ci
        .and_then(|c| c.upper_rank)
        .and_then(|r| value_at_rank(distribution, r));
    let within: u64 = distribution
        .iter()
        .filter(|&&(v, _)| v <= budget)
        .map(|&(_, c)| c)
        .sum();
    j.p_value = stats::quantile_p_value_above(n, within, q);
    if j.upper.is_none() {
        let needed = stats::min_trials_for_upper_bound(q, two_sided).unwrap_or(0);
        j.hint = Some(format!(
            "p{} has no upper bound from {n} answered trials at {:.0}% one-sided; passing needs at least {needed}",
            percentile_label(q),
            conf * 100.0
        ));
    } else if j.upper.is_some_and(|u| u > budget) && j.lower.is_none_or(|lo| lo <= budget) {
        j.hint = Some(
            "the percentile's interval straddles the budget; more trials narrow it".to_owned(),
        );
    }
    j
}

fn percentile_label(q: f64) -> String {
    format!("{}", (q * 100.0).round())
}

/// A latency gate on the arm's answered trials (suite and case level: latency is kept per arm
/// and per expected tool, not per case).
fn arm_latency_gate(
    arm: &ArmSummary,
    dist: &ArmLatencyDistribution,
    spec: GateSpec,
    level: GateLevel,
    conf: f64,
) -> GateResult {
    let method = format!(
        "exact order-statistic interval of the arm's {} over its answered trials, one-sided{}",
        spec.metric.label(),
        if level == GateLevel::Case {
            " (latency is judged per arm: it is not kept per case)"
        } else {
            ""
        }
    );
    let mut r = empty_result(arm, spec, level, &method);
    let Some(q) = spec.metric.quantile() else {
        return r;
    };
    r.cases = arm.cases.len();
    let j = judge_latency(&dist.arm, q, spec.threshold, conf);
    r.trials = Some(j.n);
    r.estimate = j.value;
    r.lower = j.lower;
    r.upper = j.upper;
    r.verdict = latency_verdict(
        &j,
        spec.threshold,
        j.lower.is_some_and(|lo| lo > spec.threshold),
    );
    r.hint = j.hint;
    r
}

fn latency_verdict(j: &LatencyJudgement, budget: f64, failed: bool) -> Verdict {
    if j.upper.is_some_and(|u| u <= budget) {
        Verdict::Pass
    } else if failed {
        Verdict::Fail
    } else {
        Verdict::Inconclusive
    }
}

/// Each expected tool's latency percentile against the budget: every tool must pass; a tool
/// fails only when Holm's procedure over the gated tools rejects "within budget" for it.
fn tool_latency_gate(
    arm: &ArmSummary,
    dist: &ArmLatencyDistribution,
    spec: GateSpec,
    conf: f64,
) -> GateResult {
    let mut r = empty_result(
        arm,
        spec,
        GateLevel::Tool,
        "exact order-statistic interval of each expected tool's percentile, one-sided; every tool must pass (intersection-union); a tool fails under Holm across the gated tools",
    );
    let Some(q) = spec.metric.quantile() else {
        return r;
    };
    let judged: Vec<(&str, LatencyJudgement)> = dist
        .tools
        .iter()
        .map(|(tool, d)| (tool.as_str(), judge_latency(d, q, spec.threshold, conf)))
        .filter(|(_, j)| j.n > 0)
        .collect();
    let p_values: Vec<f64> = judged
        .iter()
        .map(|(_, j)| j.p_value.unwrap_or(1.0))
        .collect();
    let failing = stats::holm_rejections(&p_values, 1.0 - conf);
    let gated = judged.len();
    let tools = judged
        .into_iter()
        .zip(failing)
        .map(|((tool, j), failed)| {
            let verdict = latency_verdict(&j, spec.threshold, failed);
            let held_back =
                verdict == Verdict::Inconclusive && j.lower.is_some_and(|lo| lo > spec.threshold);
            let hint = if held_back {
                Some(holm_hint(gated))
            } else {
                j.hint
            };
            ToolVerdict {
                tool: tool.to_owned(),
                verdict,
                cases: cases_of(arm, tool),
                n: j.n,
                estimate: j.value,
                lower: j.lower,
                upper: j.upper,
                p_value: j.p_value,
                method: "order-statistic interval, one-sided".to_owned(),
                hint,
            }
        })
        .collect();
    finish_tools(r.clone(), tools).unwrap_or_else(|| {
        r.hint = Some("no expected tool has answered trials".to_owned());
        r
    })
}

/// Why a tool whose own one-sided bound already misses the bar is not failed.
fn holm_hint(tools: usize) -> String {
    format!(
        "its own bound misses the bar, but not after Holm's correction across the {tools} gated tools; more evidence for it would settle it"
    )
}

fn cases_of(arm: &ArmSummary, tool: &str) -> usize {
    arm.cases.iter().filter(|c| c.expected == tool).count()
}

/// Each expected tool's rate against the threshold, from that tool's cases alone.
fn tool_rate_gate(arm: &ArmSummary, spec: GateSpec, metric: Metric, conf: f64) -> GateResult {
    let mut r = empty_result(
        arm,
        spec,
        GateLevel::Tool,
        "per expected tool: the suite interval of its cases' rates (t(m-1), never narrower than Wilson at N/DEFF; a single case: its exact Clopper-Pearson bound), one-sided; every tool must pass (intersection-union); a tool fails only when Holm across the gated tools rejects rate >= T, on the p-values that invert those intervals",
    );
    let t = spec.threshold;
    let mut by_tool: BTreeMap<&str, Vec<(u64, u64)>> = BTreeMap::new();
    for c in &arm.cases {
        let s = c.metrics.get(metric);
        if s.n > 0 {
            by_tool
                .entry(c.expected.as_str())
                .or_default()
                .push((s.x, s.n));
        }
    }
    r.cases = by_tool.values().map(Vec::len).sum();
    let mut tools: Vec<ToolVerdict> = Vec::with_capacity(by_tool.len());
    let mut p_values = Vec::with_capacity(by_tool.len());
    let mut clears_bar = Vec::with_capacity(by_tool.len());
    for (tool, counts) in &by_tool {
        let v = tool_bounds(tool, counts, t, conf);
        p_values.push(v.p_value.unwrap_or(1.0));
        // One case: the exact test the bound inverts decides; several: the suite bound.
        clears_bar.push(match counts.as_slice() {
            [(x, n)] => stats::exact_gate_passes(*x, *n, t, conf) == Some(true),
            _ => v.lower.is_some_and(|lo| lo >= t),
        });
        tools.push(v);
    }
    let failing = stats::holm_rejections(&p_values, 1.0 - conf);
    let tools_gated = tools.len();
    for ((v, failed), passes) in tools.iter_mut().zip(failing).zip(clears_bar) {
        v.verdict = if passes {
            Verdict::Pass
        } else if failed {
            Verdict::Fail
        } else {
            Verdict::Inconclusive
        };
        if v.verdict != Verdict::Inconclusive {
            v.hint = None;
        } else if v.upper.is_some_and(|hi| hi < t) {
            // Below the bar on its own bound: what holds it back is the correction for
            // judging several tools, which a sample-size figure at this margin would hide.
            v.hint = Some(holm_hint(tools_gated));
        } else if v.hint.is_none() {
            v.hint = Some(
                "its observed rate sits on the threshold; no sample size settles it".to_owned(),
            );
        }
    }
    finish_tools(r.clone(), tools).unwrap_or_else(|| {
        r.hint = Some("no expected tool has data for this metric".to_owned());
        r
    })
}

/// One tool's estimate, one-sided bounds, p-value and method: its one case's exact
/// Clopper-Pearson bound, or the suite interval of its cases; with what would settle it.
fn tool_bounds(tool: &str, counts: &[(u64, u64)], t: f64, conf: f64) -> ToolVerdict {
    let n: u64 = counts.iter().map(|&(_, n)| n).sum();
    let mut v = ToolVerdict {
        tool: tool.to_owned(),
        verdict: Verdict::Inconclusive,
        cases: counts.len(),
        n,
        estimate: None,
        lower: None,
        upper: None,
        p_value: None,
        method: String::new(),
        hint: None,
    };
    if let [(x, n)] = counts {
        v.method = "exact one-sided Clopper-Pearson (a single case)".to_owned();
        v.estimate = Some(*x as f64 / *n as f64);
        v.lower = stats::clopper_pearson_lower_bound(*x, *n, conf);
        v.upper = stats::clopper_pearson_upper_bound(*x, *n, conf);
        v.p_value = stats::binomial_p_value_below(*x, *n, t);
        let p = *x as f64 / *n as f64;
        let margin = (p - t).abs();
        v.hint = (margin > 0.0)
            .then(|| stats::wilson_trials_for_half_width(p, margin.min(0.49), 2.0 * conf - 1.0))
            .flatten()
            .map(|need| {
                format!(
                    "about {} more trials of its one case would settle it at the observed rate",
                    need.saturating_sub(*n)
                )
            });
    } else if let Some(est) = stats::suite_interval(counts, 2.0 * conf - 1.0) {
        v.method = format!("suite interval of its {} cases, one-sided", counts.len());
        v.estimate = Some(est.mean);
        v.lower = Some(est.interval.lo);
        v.upper = Some(est.interval.hi);
        v.p_value = stats::suite_p_value_below(counts, t);
        let margin = (est.mean - t).abs();
        v.hint = (margin > 0.0).then(|| {
            match stats::cases_for_half_width(&est, margin.min(0.49), 2.0 * conf - 1.0) {
                Some(m) if m > counts.len() as u64 => format!(
                    "about {m} cases of this tool with the same spread would settle it (more trials per case cannot)"
                ),
                // The case rates agree (or already would at this spread): the interval
                // rests on the trials within the cases, which more trials do narrow.
                _ => "its cases agree; the interval rests on their trials, so more trials per case would narrow it".to_owned(),
            }
        });
    }
    v
}

/// The gate's verdict from its tools' (any failure fails it; all must pass to pass), with the
/// tools worst first: failures, then inconclusive, then the lowest rate or highest latency
/// bound. `None` when no tool was gated.
fn finish_tools(mut r: GateResult, mut tools: Vec<ToolVerdict>) -> Option<GateResult> {
    if tools.is_empty() {
        return None;
    }
    let latency = r.metric.quantile().is_some();
    tools.sort_by(|a, b| {
        let (ka, kb) = if latency {
            (
                -a.lower.unwrap_or(f64::INFINITY),
                -b.lower.unwrap_or(f64::INFINITY),
            )
        } else {
            (a.upper.unwrap_or(1.0), b.upper.unwrap_or(1.0))
        };
        b.verdict
            .cmp(&a.verdict)
            .then(ka.partial_cmp(&kb).unwrap_or(std::cmp::Ordering::Equal))
            .then_with(|| a.tool.cmp(&b.tool))
    });
    let failed = tools.iter().filter(|t| t.verdict == Verdict::Fail).count();
    let inconclusive = tools
        .iter()
        .filter(|t| t.verdict == Verdict::Inconclusive)
        .count();
    r.verdict = if failed > 0 {
        Verdict::Fail
    } else if inconclusive > 0 {
        Verdict::Inconclusive
    } else {
        Verdict::Pass
    };
    if r.verdict == Verdict::Inconclusive {
        r.hint = Some(format!(
            "{inconclusive} of {} tools neither pass nor fail; each says what would settle it",
            tools.len()
        ));
    }
    r.tools = tools;
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolscore_stats::test_support::binomial_pmf as pmf;

    #[test]
    fn gate_specs_parse_or_say_what_is_wrong() {
        assert_eq!(
            GateSpec::parse("pass>=0.8").unwrap(),
            GateSpec {
                metric: GateMetric::Rate(Metric::Pass),
                threshold: 0.8
            }
        );
        assert_eq!(
            GateSpec::parse(" args >= 0.5").unwrap().metric,
            GateMetric::Rate(Metric::ArgsExact)
        );
        for bad in ["pass>0.8", "speed>=0.8", "pass>=1", "pass>=x"] {
            let msg = GateSpec::parse(bad).unwrap_err().to_string();
            assert!(msg.contains("METRIC>=THRESHOLD"), "{bad}: {msg}");
        }
    }

    use toolscore_core::RunTotals;
    use toolscore_core::{Outcome, TrialRecord, TrialScore};
    use toolscore_summary::{Aggregator, RunInfo};

    /// A trial of `case` (expecting `tool`) that passed or not, answered in `ms`.
    fn trial(tool: &str, case: &str, passed: bool, ms: f64) -> TrialRecord {
        let outcome = if passed { Outcome::Pass } else { Outcome::Fail };
        let mut r = TrialRecord::for_test(case, outcome, ms);
        r.expected = tool.into();
        r.score = Some(TrialScore {
            selection_ok: passed,
            args_ok: None,
            schema_ok: Some(true),
            passed,
            failure: None,
            detail: None,
            schema_violations: Vec::new(),
            arg_failures: None,
        });
        r
    }

    fn summary(records: &[TrialRecord]) -> (Summary, LatencyDistributions) {
        let mut agg = Aggregator::new();
        for r in records {
            agg.add(r);
        }
        let latency = agg.latency_distributions();
        let n = records.len() as u64;
        let totals = RunTotals::all_completed(n);
        (
            agg.finish(RunInfo::for_test(40), &totals, 0.95, 0.05),
            latency,
        )
    }

    /// Tool `a`: three cases always right; tool `b`: three cases right half the time; tool
    /// `c`: one case right in 38 of 40.
    fn three_tools() -> (Summary, LatencyDistributions) {
        let mut records = Vec::new();
        for case in 0..3 {
            for i in 0..40 {
                records.push(trial("a", &format!("a{case}"), true, 10.0));
                records.push(trial("b", &format!("b{case}"), i % 2 == 0, 10.0));
            }
        }
        for i in 0..40 {
            records.push(trial("c", "c0", i < 38, 10.0));
        }
        summary(&records)
    }

    fn gate(s: &(Summary, LatencyDistributions), spec: &str, level: GateLevel) -> GateResult {
        let report = evaluate(&s.0, &s.1, &[GateSpec::parse(spec).unwrap()], level);
        report.gates.into_iter().next().unwrap()
    }

    fn tool<'a>(r: &'a GateResult, name: &str) -> &'a ToolVerdict {
        r.tools.iter().find(|t| t.tool == name).unwrap()
    }

    #[test]
    fn a_tool_gate_fails_the_tool_below_and_needs_every_tool_to_pass() {
        let s = three_tools();
        let r = gate(&s, "pass>=0.8", GateLevel::Tool);
        assert_eq!(r.verdict, Verdict::Fail);
        assert_eq!(tool(&r, "b").verdict, Verdict::Fail);
        assert_eq!(tool(&r, "a").verdict, Verdict::Pass);
        // Worst first.
        assert_eq!(r.tools[0].tool, "b");
        // b's bounds are the suite interval of b's own three cases, one-sided.
        let iv = stats::suite_interval(&[(20, 40); 3], 0.90)
            .unwrap()
            .interval;
        assert_eq!(
            (tool(&r, "b").lower, tool(&r, "b").upper),
            (Some(iv.lo), Some(iv.hi))
        );
        // c has a single case: its exact one-sided bound.
        let c = tool(&r, "c");
        assert_eq!(c.lower, stats::clopper_pearson_lower_bound(38, 40, 0.95));
        assert_eq!(c.cases, 1);
        assert_eq!(r.cases, 7);

        let r = gate(&s, "selection>=0.3", GateLevel::Tool);
        assert_eq!(r.verdict, Verdict::Pass, "{:?}", r.tools);
        // At 0.5, b sits on the bar: neither bound decides.
        let r = gate(&s, "pass>=0.5", GateLevel::Tool);
        assert_eq!(r.verdict, Verdict::Inconclusive, "{:?}", r.tools);
        assert!(tool(&r, "b").hint.is_some());
    }

    #[test]
    fn a_tool_fails_only_when_holm_across_the_tools_rejects() {
        // Ten single-case tools at 16/20 against 0.93: each exact one-sided upper bound is
        // below the bar, but Holm over ten p-values needs far stronger evidence.
        let mut records = Vec::new();
        for t in 0..10 {
            for i in 0..20 {
                records.push(trial(&format!("t{t}"), &format!("c{t}"), i < 16, 10.0));
            }
        }
        let s = summary(&records);
        let r = gate(&s, "pass>=0.93", GateLevel::Tool);
        let p = stats::binomial_p_value_below(16, 20, 0.93).unwrap();
        assert!(p < 0.05 && p * 10.0 > 0.05, "p = {p}");
        assert!(r.tools.iter().all(|t| t.upper.unwrap() < 0.93));
        assert_eq!(r.verdict, Verdict::Inconclusive, "{:?}", r.tools);
    }

    #[test]
    fn latency_budgets_per_tool_pass_fail_or_ask_for_more_trials() {
        let mut records = Vec::new();
        for i in 0..100 {
            records.push(trial("fast", "f", true, f64::from(i + 1)));
            records.push(trial("slow", "s", true, f64::from(1000 + i)));
        }
        let s = summary(&records);
        let r = gate(&s, "p95_ms<=500", GateLevel::Tool);
        assert_eq!(r.verdict, Verdict::Fail);
        assert_eq!(tool(&r, "fast").verdict, Verdict::Pass);
        let slow = tool(&r, "slow");
        assert_eq!(slow.verdict, Verdict::Fail);
        // The order-statistic ranks at two-sided 90% for n = 100, p95.
        let ci = stats::order_statistic_ci(100, 0.95, 0.90).unwrap();
        let close = |got: Option<f64>, want: f64| (got.unwrap() - want).abs() <= want * 1e-3;
        assert!(
            close(slow.lower, 999.0 + ci.lower_rank.unwrap() as f64),
            "{slow:?}"
        );
        assert!(close(tool(&r, "fast").upper, ci.upper_rank.unwrap() as f64));
        assert!(gate(&s, "p95_ms<=2000", GateLevel::Tool).verdict == Verdict::Pass);

        // p99 from 100 answers has no upper bound: inconclusive, saying how many are needed.
        let r = gate(&s, "p99_ms<=5000", GateLevel::Tool);
        assert_eq!(r.verdict, Verdict::Inconclusive);
        let hint = tool(&r, "fast").hint.clone().unwrap();
        assert!(hint.contains("at least 299"), "{hint}");
        assert_eq!(stats::min_trials_for_upper_bound(0.99, 0.90), Some(299));

        // Per arm at suite level: the 200 answers together.
        let r = gate(&s, "p50_ms<=2000", GateLevel::Suite);
        assert_eq!((r.verdict, r.trials), (Verdict::Pass, Some(200)));
        assert!(r.tools.is_empty());
        let r = gate(&s, "p50_ms<=10", GateLevel::Suite);
        assert_eq!(r.verdict, Verdict::Fail);
    }

    #[test]
    fn latency_and_rate_gates_refuse_the_other_direction() {
        assert_eq!(
            GateSpec::parse("p95_ms<=2000").unwrap(),
            GateSpec {
                metric: GateMetric::Latency(LatencyQuantile::P95Ms),
                threshold: 2000.0
            }
        );
        for (bad, why) in [
            ("p95_ms>=2000", "a latency is gated with `<=`"),
            ("pass<=0.8", "a rate is gated with `>=`"),
            ("p99_ms<=0", "positive number of milliseconds"),
            ("p99_ms<=inf", "positive number of milliseconds"),
            ("p90_ms<=100", "unknown metric `p90_ms`"),
        ] {
            let msg = GateSpec::parse(bad).unwrap_err().to_string();
            assert!(msg.contains(why), "{bad}: {msg}");
            assert!(msg.contains("LATENCY<=MS"), "{bad}: {msg}");
        }
    }

    #[test]
    fn a_gate_result_written_before_tool_gates_still_parses() {
        let old = serde_json::json!({
            "metric": "pass", "threshold": 0.8, "level": "suite",
            "arm": {"variant": "base", "provider": "p", "model": "m"},
            "verdict": "fail", "method": "…", "cases": 6,
            "passed_cases": 0, "failed_cases": 0, "inconclusive_cases": 0
        });
        let r: GateResult = serde_json::from_value(old).unwrap();
        assert_eq!(r.metric, GateMetric::Rate(Metric::Pass));
        assert!(r.tools.is_empty() && r.trials.is_none());
    }

    /// The case gate's verdict on a case with `x` of `n` right, judged beside `others`
    /// cases that are right every time (they never fail, so the judged case meets Holm's
    /// first, strictest level α / (others + 1)).
    fn case_verdict(x: u64, n: u64, others: usize, spec: &str) -> Verdict {
        let mut records: Vec<TrialRecord> =
            (0..n).map(|i| trial("a", "judged", i < x, 10.0)).collect();
        for o in 0..others {
            records.extend((0..n).map(|_| trial("a", &format!("sure{o}"), true, 10.0)));
        }
        let r = gate(&summary(&records), spec, GateLevel::Case);
        let c = r.not_passed.iter().find(|c| c.case_id == "judged");
        c.map_or(Verdict::Pass, |c| c.verdict)
    }

    #[test]
    fn the_case_gate_passes_a_case_at_the_threshold_at_most_alpha_of_the_time() {
        // Exact: the probability, at p = t, of every count the gate passes. With the
        // one-sided Wilson bound this was 5.305% at t = 0.9, n = 60 (it passed 58 of 60).
        for (t, n) in [(0.9, 60u64), (0.8, 100), (0.95, 120)] {
            let spec = format!("selection>={t}");
            let size: f64 = (0..=n)
                .filter(|&x| case_verdict(x, n, 0, &spec) == Verdict::Pass)
                .map(|x| pmf(x, n, t))
                .sum();
            assert!(size <= 0.05, "t {t} n {n}: false-pass {size}");
        }
        assert_eq!(
            case_verdict(58, 60, 0, "selection>=0.9"),
            Verdict::Inconclusive
        );
        assert_eq!(case_verdict(59, 60, 0, "selection>=0.9"), Verdict::Pass);
    }

    #[test]
    fn holm_keeps_the_chance_of_any_false_fail_at_alpha_over_four_cases() {
        // Four independent cases at p = t: the family is falsely failed exactly when one of
        // them meets Holm's first level, α/4. With score p-values this was 16.2% at 90% and
        // 5.7% at 95% (the enumeration); exact p-values keep it at most α.
        for (t, n, conf) in [(0.9, 60u64, 0.95), (0.9, 60, 0.90), (0.8, 40, 0.95)] {
            let spec = format!("selection>={t}");
            let one: f64 = (0..=n)
                .filter(|&x| {
                    let mut records: Vec<TrialRecord> =
                        (0..n).map(|i| trial("a", "judged", i < x, 10.0)).collect();
                    for o in 0..3 {
                        records.extend((0..n).map(|_| trial("a", &format!("sure{o}"), true, 10.0)));
                    }
                    let mut s = summary(&records);
                    s.0.confidence = conf;
                    let r = gate(&s, &spec, GateLevel::Case);
                    r.not_passed
                        .iter()
                        .any(|c| c.case_id == "judged" && c.verdict == Verdict::Fail)
                })
                .map(|x| pmf(x, n, t))
                .sum();
            let family = 1.0 - (1.0 - one).powi(4);
            assert!(family <= 1.0 - conf, "t {t} n {n} conf {conf}: {family}");
        }
        // The example: 50 of 60 against 0.9 at 95% failed on the score test's
        // p = 0.043; the exact P(X ≤ 50) = 0.073 does not reject.
        assert_eq!(
            case_verdict(50, 60, 0, "selection>=0.9"),
            Verdict::Inconclusive
        );
        assert_eq!(case_verdict(48, 60, 0, "selection>=0.9"), Verdict::Fail);
    }
}
