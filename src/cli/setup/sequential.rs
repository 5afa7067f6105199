//! `--sequential`'s designs, checked before anything is sent: the case or suite gates it judges
//! while the run goes, or the comparison of two arms it stops the run on.

use super::{
    Dataset, Error, RunArgs, SequentialCompareSpec, SequentialSpec, checked_confidence, usage,
};
use toolscore_decide::CompareRule;

/// `--sequential`'s design for gates, checked: case or suite level, every bar within its
/// bounds. `None` without --sequential, or when it judges a comparison instead.
pub(super) fn sequential_spec(
    args: &RunArgs,
    defaults: &toolscore_suite::Defaults,
    gates: &[toolscore_decide::gate::GateSpec],
    trials: u32,
    datasets: &[Dataset],
) -> Result<Option<SequentialSpec>, Error> {
    if args.gate.sequential && gates.is_empty() && !args.compare && args.gate.baseline.is_none() {
        return Err(usage(
            "--sequential judges gates (--gate METRIC>=T --gate-level case or suite), a comparison of two arms (--compare) or a baseline (--baseline RUN_DIR); give one of them",
        ));
    }
    if args.gate.sequential && gates.is_empty() && args.compare && args.gate.baseline.is_some() {
        return Err(usage(
            "--sequential judges either the comparison or the baseline in one run, not both: each stops the run on its own evidence",
        ));
    }
    if gates.is_empty() && args.gate.baseline.is_some() && !args.compare {
        let flag = match (args.gate.sprt_p1, args.gate.fail_below) {
            (Some(_), _) => Some("--sprt-p1 sets the case gates' SPRT"),
            (None, Some(_)) => Some("--fail-below sets the case gates' indifference-zone FAIL"),
            (None, None) => None,
        };
        if let Some(flag) = flag {
            return Err(usage(&format!(
                "{flag}; the sequential baseline gate judges rounds with its own bounds and has none"
            )));
        }
    }
    if args.gate.sequential && !gates.is_empty() && args.compare {
        return Err(usage(
            "--sequential judges either the case gates or the comparison in one run, not both: a gate stops the cases it has decided, which leaves the comparison's rounds unbalanced",
        ));
    }
    Ok(if args.gate.sequential && !gates.is_empty() {
        let mut spec = SequentialSpec::from_flags(
            gates.to_vec(),
            checked_confidence(args.confidence.or(defaults.confidence).unwrap_or(0.95))?,
            args.gate.sprt_p1,
            args.gate.fail_below,
            trials,
        );
        spec.level = args.gate.gate_level;
        let case_thresholds: Vec<f64> = datasets
            .iter()
            .flat_map(|d| d.cases.iter().filter_map(|c| c.gate))
            .collect();
        spec.check(&case_thresholds).map_err(|e| usage(&e))?;
        Some(spec)
    } else {
        None
    })
}

/// `--compare --sequential`'s design: the two arms, the visible cases (those not tagged
/// `holdout`, which `compare` judges apart) and the rounds the plan holds.
pub(super) fn sequential_compare_spec(
    args: &RunArgs,
    defaults: &toolscore_suite::Defaults,
    arms: &[toolscore_runner::Arm],
    trials: u32,
    datasets: &[Dataset],
) -> Result<Option<SequentialCompareSpec>, Error> {
    if !(args.gate.sequential && args.compare && args.gate.gates.is_empty()) {
        return Ok(None);
    }
    if args.gate.sprt_p1.is_some() {
        return Err(usage(
            "--sprt-p1 sets the case gates' SPRT; the sequential comparison needs no alternative",
        ));
    }
    if args.gate.fail_below.is_some() {
        return Err(usage(
            "--fail-below sets the case gates' indifference-zone FAIL; the sequential comparison has none",
        ));
    }
    let [a, b] = arms else {
        return Err(usage(&format!(
            "--compare needs exactly two arms (two --variant or two --provider); this run has {}",
            arms.len()
        )));
    };
    let is_holdout =
        |c: &toolscore_suite::Case| c.tags.iter().any(|t| t == toolscore_decide::HOLDOUT_TAG);
    let keys = |held: bool| -> Vec<(String, String)> {
        datasets
            .iter()
            .flat_map(|d| d.cases.iter().map(move |c| (d, c)))
            .filter(|(_, c)| is_holdout(c) == held)
            .map(|(d, c)| (d.name.clone(), c.id.clone()))
            .collect()
    };
    let Some(max_rounds) = datasets
        .iter()
        .flat_map(|d| d.cases.iter().map(|c| c.trials.unwrap_or(trials)))
        .min()
    else {
        return Ok(None);
    };
    let cases = keys(false);
    if cases.is_empty() {
        return Err(usage(
            "--compare --sequential needs at least one case not tagged `holdout` to compare on",
        ));
    }
    Ok(Some(SequentialCompareSpec {
        arms: [a.id(), b.id()],
        metric: toolscore_core::metric::Metric::Selection,
        confidence: checked_confidence(args.confidence.or(defaults.confidence).unwrap_or(0.95))?,
        rule: CompareRule::Compare {
            min_effect: args.min_effect,
        },
        cases,
        holdout: keys(true),
        max_rounds,
    }))
}
