//! `toolscore compare`: two arms of a run folder paired by case.

use std::io::Write;
use std::path::{Path, PathBuf};
use toolscore_core::metric::Metric;

use clap::Args;

use super::setup;
use super::{read_header, reaggregate_run, usage};
use crate::cli::Error;
use toolscore_core::ExitCode;

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// One run folder with two arms, or two run folders (A, then B).
    #[arg(required = true, num_args = 1..=2, value_name = "RUN_DIR")]
    pub run_dirs: Vec<PathBuf>,
    /// Which arm is A, then B: a variant, a provider, or PROVIDER/VARIANT [default: the two
    /// arms in plan order].
    #[arg(long = "arm", value_name = "NAME")]
    pub arms: Vec<String>,
    /// The rate compared.
    #[arg(long, value_enum, default_value_t = Metric::Selection)]
    pub metric: Metric,
    /// The smallest difference worth acting on: the verdict says whether one that large is
    /// ruled out, and how many cases would detect it [default: the run's own, when one
    /// RUN_DIR compared its arms with --compare; else 0.05].
    #[arg(long)]
    pub min_effect: Option<f64>,
    /// Power for the number of cases that would detect --min-effect.
    #[arg(long, default_value_t = 0.8)]
    pub power: f64,
    /// Two-sided confidence level of every interval [default: the first run's].
    #[arg(long)]
    pub confidence: Option<f64>,
    /// Compare on the cases both arms share instead of refusing when they differ.
    #[arg(long)]
    pub intersect: bool,
    /// Also write the comparison as JSON to this file, with the decision under `decision`.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Re-aggregates each run from its files, compares the chosen arms and prints the decision, then
/// the comparison. The decision is the run's (`decide::decision`): exit 0 when the data decide
/// (better, worse or no difference as large as --min-effect), 3 when they do not yet, 4 when a
/// run's infrastructure errors leave nothing to judge.
pub(super) fn run(args: &CompareArgs) -> Result<ExitCode, Error> {
    let metric = args.metric;
    if let Some(m) = args.min_effect
        && !(m > 0.0 && m < 1.0)
    {
        return Err(usage("--min-effect must be between 0 and 1 (e.g. 0.05)"));
    }
    if !(args.power > 0.5 && args.power < 1.0) {
        return Err(usage("--power must be between 0.5 and 1 (e.g. 0.8)"));
    }
    let mut summaries = Vec::with_capacity(args.run_dirs.len());
    let mut headers = Vec::with_capacity(args.run_dirs.len());
    for dir in &args.run_dirs {
        let header = read_header(dir)?;
        summaries.push(reaggregate_run(dir, header.clone())?);
        headers.push(header);
    }
    let confidence = setup::checked_confidence(args.confidence.unwrap_or(summaries[0].confidence))?;
    // One run folder that compared its arms is judged again by the run's own --min-effect, so
    // its decision is the run's; anything else by the flag, or 0.05.
    let min_effect = args
        .min_effect
        .or_else(|| match headers.as_slice() {
            [header] => header.min_effect(),
            _ => None,
        })
        .unwrap_or(toolscore_decide::DEFAULT_MIN_EFFECT);
    // An attacked run's two arms have no cases, only (scenario × attack) units.
    if let ([summary], [header]) = (summaries.as_mut_slice(), headers.as_slice())
        && summary.arms.is_empty()
        && summary.security.len() == 2
    {
        return compare_attacked(args, (header, min_effect), summary);
    }
    let (a, b) = toolscore_decide::choose_arms(&summaries, &args.arms)?;
    let mut comparison = toolscore_decide::compare(
        a,
        b,
        toolscore_decide::CompareOptions {
            metric,
            confidence,
            min_effect,
            power: args.power,
            intersect: args.intersect,
            holdout_apart: true,
        },
    )?;
    // Two folders of one run id: the id alone would name both arms the same.
    if let [dir_a, dir_b] = args.run_dirs.as_slice()
        && comparison.a.run_id == comparison.b.run_id
    {
        comparison.a.folder = Some(dir_a.display().to_string());
        comparison.b.folder = Some(dir_b.display().to_string());
    }
    let decision = match (args.run_dirs.as_slice(), summaries.as_mut_slice()) {
        ([run_dir], [summary]) => {
            rejudge_sequential(
                run_dir,
                headers[0].comparison().as_ref(),
                summary,
                &mut comparison,
            )?;
            // The run's own decision, with this comparison: its recorded gates stand as the
            // run judged them (`report` judges them again).
            summary.gate = headers[0].gate();
            summary.comparison = Some(comparison.clone());
            toolscore_decide::decide(summary, headers[0].max_infra_error_rate())
        }
        _ => {
            let runs: Vec<_> = summaries
                .iter()
                .zip(&headers)
                .map(|(s, h)| (s, h.max_infra_error_rate()))
                .collect();
            toolscore_decide::decide_comparison(&runs, &comparison)
        }
    };
    let json = CompareJson {
        comparison: &comparison,
        decision: &decision,
    };
    tell(args, &decision, &json, &mut |out| {
        writeln!(out)?;
        toolscore_report::render_comparison(&comparison, out)?;
        if let Some(why) = super::output::compare_explain_hint(&comparison, &args.run_dirs) {
            writeln!(out, "\n{why}")?;
        }
        Ok(())
    })
}

/// What `compare` says of a decision and its comparison: `--json` written, then the decision
/// and the comparison `render` prints, on stdout; the exit code the decision's. One telling for
/// both kinds of comparison.
fn tell(
    args: &CompareArgs,
    decision: &toolscore_summary::Decision,
    json: &impl serde::Serialize,
    render: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> Result<ExitCode, Error> {
    if let Some(path) = &args.json {
        toolscore_core::write_json(path, json)?;
    }
    let failed = |e| Error::io("cannot write the comparison", e);
    let mut out = std::io::stdout().lock();
    toolscore_report::render_decision(decision, &mut out).map_err(failed)?;
    render(&mut out).map_err(failed)?;
    if let Some(why) = decision.not_judged_because() {
        errln!("error: {why}")?;
    }
    Ok(toolscore_decide::exit_code(decision))
}

/// An attacked run's two arms compared again by unit, by the run's own `--min-effect` when it
/// compared them (so the decision is the run's), and its decision with the gates it recorded.
fn compare_attacked(
    args: &CompareArgs,
    (header, min_effect): (&toolscore_summary::SummaryHeader, f64),
    summary: &mut toolscore_summary::Summary,
) -> Result<ExitCode, Error> {
    if !args.arms.is_empty() {
        return Err(usage(
            "--arm picks cases' arms; an attacked run's two arms are compared in plan order",
        ));
    }
    let Some(comparison) = toolscore_decide::compare_attacks(summary, min_effect)? else {
        return Err(usage("the run has no two attacked arms to compare"));
    };
    summary.gate = header.gate();
    summary.attack_comparison = Some(comparison.clone());
    let decision = toolscore_decide::decide(summary, header.max_infra_error_rate());
    let json = AttackCompareJson {
        comparison: &comparison,
        decision: &decision,
    };
    tell(args, &decision, &json, &mut |out| {
        toolscore_report::render_attack_comparison(&comparison, out)
    })
}

/// `--json` of an attacked run: the attack comparison's fields and the decision.
#[derive(serde::Serialize)]
struct AttackCompareJson<'a> {
    #[serde(flatten)]
    comparison: &'a toolscore_summary::AttackComparison,
    decision: &'a toolscore_summary::Decision,
}

/// `--json`: the comparison's fields, and the decision (the run's, under `decision`, as
/// summary.json holds it).
#[derive(serde::Serialize)]
struct CompareJson<'a> {
    #[serde(flatten)]
    comparison: &'a toolscore_summary::Comparison,
    decision: &'a toolscore_summary::Decision,
}

/// The sequential comparison a run recorded (`run --compare --sequential`), judged again from
/// its results.jsonl by the same observer and set on `comparison`'s groups: the verdict is a
/// function of the records, paired as `comparison` pairs its arms. Nothing changes when the run
/// recorded none, or `comparison` pairs other arms or another metric than the recorded one.
pub(super) fn rejudge_sequential(
    run_dir: &Path,
    recorded: Option<&toolscore_summary::Comparison>,
    summary: &toolscore_summary::Summary,
    comparison: &mut toolscore_summary::Comparison,
) -> Result<(), Error> {
    use toolscore_decide::HOLDOUT_TAG;
    use toolscore_decide::{CompareRule, SequentialCompare, SequentialCompareSpec};
    let Some(recorded) = recorded else {
        return Ok(());
    };
    let Some(sequential) = &recorded.visible.sequential else {
        return Ok(());
    };
    // The same two arms in either order: the observer pairs them as `comparison` does.
    let same_arms = (&recorded.a.arm, &recorded.b.arm) == (&comparison.a.arm, &comparison.b.arm)
        || (&recorded.a.arm, &recorded.b.arm) == (&comparison.b.arm, &comparison.a.arm);
    if !same_arms || recorded.metric != comparison.metric {
        return Ok(());
    }
    let cases_of = |held: bool| -> Vec<(String, String)> {
        summary
            .arms
            .iter()
            .find(|a| a.arm == comparison.a.arm)
            .map(|a| {
                a.cases
                    .iter()
                    .filter(|c| c.tags.iter().any(|t| t == HOLDOUT_TAG) == held)
                    .map(|c| (c.dataset.clone(), c.case_id.clone()))
                    .collect()
            })
            .unwrap_or_default()
    };
    let spec = SequentialCompareSpec {
        arms: [comparison.a.arm.clone(), comparison.b.arm.clone()],
        metric: comparison.metric,
        confidence: comparison.confidence,
        rule: CompareRule::Compare {
            min_effect: comparison.min_effect,
        },
        cases: cases_of(false),
        holdout: cases_of(true),
        max_rounds: sequential.max_rounds,
    };
    let Some(mut observer) = SequentialCompare::new(spec) else {
        return Ok(());
    };
    toolscore_summary::for_each_record_mut(&run_dir.join("results.jsonl"), &mut |r| {
        observer.push(r);
    })?;
    observer.apply_to(comparison);
    Ok(())
}
