//! The `--gate` and `--baseline` flags `run` and `report` share, and judging a summary by them.

use std::path::PathBuf;
use toolscore_core::metric::Metric;

use clap::Args;

use super::load_run;
use super::usage;
use crate::cli::Error;
use toolscore_decide::gate::GateSpec;
use toolscore_summary::GateLevel;

/// `--gate` and `--gate-level`, shared by `run` and `report`.
#[derive(Debug, Clone, Args)]
pub struct GateArgs {
    /// A gate, `METRIC>=T` (selection, args, schema, pass): pass when the one-sided lower
    /// confidence bound clears T (exit 0), fail when the upper bound is below it (exit 1),
    /// inconclusive otherwise (exit 3). Or a latency budget, `LATENCY<=MS` (p50_ms, p95_ms,
    /// p99_ms): pass when the percentile's upper bound is within MS, fail when its lower bound
    /// is over it. With --attacks, `attack_success<=T` (pass when the upper bound is at most T,
    /// fail when the lower bound is above it), `utility_under_attack>=T`, `utility>=T`.
    /// Repeatable.
    #[arg(long = "gate", value_name = "METRIC>=T|LATENCY<=MS")]
    pub gates: Vec<String>,
    /// What a gate judges: the suite's case-level rate (latency: the arm's), every case on
    /// its own, or every expected tool on its own.
    #[arg(long, value_enum, default_value_t = GateLevel::Suite)]
    pub gate_level: GateLevel,
    /// Judge every case after each of its trials with anytime-valid sequential tests (pass
    /// when the lower bound clears T, by the mixture SPRT, which needs no guess of the true
    /// rate; fail only when the upper bound is below T) and stop running a case the moment it
    /// decides (case-level gates); with `run --compare` instead of gates, judge the comparison
    /// after every round and stop the run the moment it decides.
    #[arg(long)]
    pub sequential: bool,
    /// With --sequential: pass cases by Wald's SPRT with this alternative instead of the
    /// mixture (the rate a case should pass at) [default: the mixture, which needs none].
    #[arg(long, value_name = "P1", requires = "sequential")]
    pub sprt_p1: Option<f64>,
    /// With --sequential --gate-level case: fail a case by the indifference-zone SPRT of T
    /// against P1 instead, faster near T but failing only "below P1": a case between T and P1
    /// may be failed though it clears T (at most beta of the time at P1 and above). Its lines
    /// say BELOW P1, not FAIL [default: fail only when the case's anytime-valid upper bound is
    /// below T].
    #[arg(long, value_name = "P1", requires = "sequential")]
    pub fail_below: Option<f64>,
    /// An earlier run to gate against: pass when this run is not worse than it by more than
    /// --margin (the lower bound of the paired case-level difference), fail when it is.
    #[arg(long, value_name = "RUN_DIR")]
    pub baseline: Option<PathBuf>,
    /// With --baseline: the loss that is tolerated.
    #[arg(long, default_value_t = 0.02, requires = "baseline")]
    pub margin: f64,
    /// With --baseline: the rate compared.
    #[arg(long, value_enum, default_value_t = Metric::Pass, requires = "baseline")]
    pub baseline_metric: Metric,
    /// With --baseline: compare on the cases both runs have instead of refusing when they
    /// differ.
    #[arg(long, requires = "baseline")]
    pub intersect: bool,
}

impl GateArgs {
    /// The baseline to gate against, read and checked before any work.
    pub(crate) fn load_baseline(
        &self,
    ) -> Result<Option<(toolscore_summary::Summary, toolscore_core::metric::Metric)>, Error> {
        let Some(dir) = &self.baseline else {
            return Ok(None);
        };
        let metric = self.baseline_metric;
        if !(self.margin >= 0.0 && self.margin < 1.0) {
            return Err(usage("--margin must be between 0 and 1 (e.g. 0.02)"));
        }
        Ok(Some((load_run(dir)?, metric)))
    }
}

/// The plan runs the baseline's cases with its trials per case: checked before any request, so
/// a baseline that cannot be compared is bad input (exit 2), not a run spent for nothing.
pub(super) fn check_baseline_population(
    plan: &toolscore_runner::RunPlan,
    base: &toolscore_summary::Summary,
) -> Result<(), Error> {
    let planned: Vec<(String, String, u32)> = plan
        .datasets
        .iter()
        .flat_map(|d| {
            d.cases.iter().map(|c| {
                (
                    d.name.clone(),
                    c.id.clone(),
                    c.trials.unwrap_or(plan.trials),
                )
            })
        })
        .collect();
    if planned.is_empty() && base.arms.is_empty() {
        // Scenarios only: compared for drift, no dataset gate to populate.
        return Ok(());
    }
    let Some(arm) = base.arms.first() else {
        return Err(usage("--baseline: the baseline run has no arms"));
    };
    let base_cases: std::collections::BTreeSet<(&str, &str)> = arm
        .cases
        .iter()
        .map(|c| (c.dataset.as_str(), c.case_id.as_str()))
        .collect();
    let base_trials = |d: &str, c: &str| base.run.planned_trials(d, c);
    for (d, c, t) in &planned {
        if !base_cases.contains(&(d.as_str(), c.as_str())) {
            return Err(usage(&format!(
                "--baseline {}: it did not run case {d}/{c}; gate on the same cases, or add --intersect to compare on the cases both have",
                base.run.run_id
            )));
        }
        if base_trials(d, c) != *t {
            return Err(usage(&format!(
                "--baseline {}: it ran {} trials of {d}/{c}, this run plans {t}; use the same --trials",
                base.run.run_id,
                base_trials(d, c)
            )));
        }
    }
    if base_cases.len() != planned.len() {
        return Err(usage(&format!(
            "--baseline {}: it ran {} cases, this run plans {}; gate on the same cases, or add --intersect",
            base.run.run_id,
            base_cases.len(),
            planned.len()
        )));
    }
    Ok(())
}

/// Adds the `--baseline` verdicts to the summary's gate report.
pub(super) fn judge_baseline(
    summary: &mut toolscore_summary::Summary,
    baseline: Option<&(toolscore_summary::Summary, toolscore_core::metric::Metric)>,
    args: &GateArgs,
    sequential: Option<Vec<toolscore_summary::GateResult>>,
) -> Result<(), Error> {
    let Some((base, metric)) = baseline else {
        return Ok(());
    };
    summary.scenario_drift = toolscore_summary::scenario_drift(&summary.scenarios, &base.scenarios);
    if summary.arms.is_empty() {
        // Only scenarios ran: their drift is the comparison; there is no case rate to gate.
        return Ok(());
    }
    let results = match sequential {
        Some(results) => results,
        None => toolscore_decide::gate::baseline::baseline_gates(
            summary,
            base,
            *metric,
            args.margin,
            summary.confidence,
            args.intersect,
        )?,
    };
    let mut gates = summary.gate.take().map(|g| g.gates).unwrap_or_default();
    gates.extend(results);
    summary.gate = Some(toolscore_decide::gate::report_of(gates, summary.confidence));
    Ok(())
}

/// Every `--gate`, parsed before any work.
pub(crate) fn parse_gates(texts: &[String]) -> Result<Vec<GateSpec>, Error> {
    texts
        .iter()
        .map(|t| GateSpec::parse(t).map_err(Error::from))
        .collect()
}

/// `--gate`s judged at `level`: an attacked run's rates are over (scenario × attack) units,
/// which have no expected tool, so they are gated at suite or case level.
pub(crate) fn parse_gates_at(texts: &[String], level: GateLevel) -> Result<Vec<GateSpec>, Error> {
    let gates = parse_gates(texts)?;
    if level == GateLevel::Tool
        && let Some(g) = gates.iter().find(|g| g.metric.attack().is_some())
    {
        return Err(usage(&format!(
            "--gate {}{}{}: an attacked run's rates are gated at --gate-level suite or case (its units are (scenario × attack) pairs, which expect no one tool)",
            g.metric.label(),
            g.metric.op(),
            g.threshold
        )));
    }
    Ok(gates)
}

/// `--baseline RUN_DIR --sequential` (with no `--gate` and no `--compare`): the observer that
/// judges every arm against the baseline round by round, fed the baseline's trials before the
/// run starts.
pub(super) fn sequential_baseline(
    setup: &super::setup::RunSetup,
    args: &GateArgs,
    baseline: Option<&(toolscore_summary::Summary, toolscore_core::metric::Metric)>,
) -> Result<Option<toolscore_decide::gate::sequential_baseline::SequentialBaseline>, Error> {
    use toolscore_decide::gate::sequential_baseline::{SequentialBaseline, SequentialBaselineSpec};
    let (Some((base, metric)), Some(dir)) = (baseline, &args.baseline) else {
        return Ok(None);
    };
    if !args.sequential || !setup.gates.is_empty() || setup.sequential_compare.is_some() {
        return Ok(None);
    }
    let plan = &setup.plan;
    // The cases both runs have: all of them, unless --intersect let the plan differ.
    let in_baseline: std::collections::HashSet<(&str, &str)> = base
        .arms
        .iter()
        .flat_map(|a| a.cases.iter())
        .map(|c| (c.dataset.as_str(), c.case_id.as_str()))
        .collect();
    let cases_with_trials = || {
        plan.datasets.iter().flat_map(|d| {
            d.cases
                .iter()
                .filter(|c| in_baseline.contains(&(d.name.as_str(), c.id.as_str())))
                .map(move |c| {
                    (
                        (d.name.clone(), c.id.clone()),
                        c.trials.unwrap_or(plan.trials),
                    )
                })
        })
    };
    let spec = SequentialBaselineSpec {
        metric: *metric,
        margin: args.margin,
        confidence: setup.confidence,
        arms: plan.arms.iter().map(toolscore_runner::Arm::id).collect(),
        cases: cases_with_trials().map(|(key, _)| key).collect(),
        max_rounds: cases_with_trials().map(|(_, t)| t).min().unwrap_or(0),
        budget: super::setup::trial_budget(&setup.run_info(std::time::SystemTime::now())),
    };
    let mut gate = SequentialBaseline::new(spec, base)?;
    toolscore_summary::for_each_record_mut(&dir.join("results.jsonl"), &mut |r| {
        gate.push_baseline(r)
    })?;
    Ok(Some(gate))
}
