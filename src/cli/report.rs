//! `toolscore report`: a finished run folder re-aggregated from its records and rendered again,
//! judged by the gates it recorded (or new ones).

use std::path::PathBuf;

use clap::Args;

use super::gate::parse_gates_at;
use super::gate::{GateArgs, judge_baseline};
use super::output::{self, Format};
use super::run::compare_two_arms;
use super::usage;
use super::{rescore, setup};
use crate::cli::Error;
use toolscore_core::ExitCode;
use toolscore_decide::gate::GateSpec;
use toolscore_decide::gate::recorded::RecordedSequential;
use toolscore_summary::GateLevel;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The run's folder (reports/<run-id>), holding results.jsonl and summary.json.
    pub run_dir: PathBuf,
    /// Confidence level of every interval [default: the run's].
    #[arg(long)]
    pub confidence: Option<f64>,
    /// Target half-width for warnings [default: the run's].
    #[arg(long)]
    pub precision: Option<f64>,
    #[command(flatten)]
    pub gate: GateArgs,
    /// What to produce; repeatable: terminal (stdout), json (the summary on stdout), md
    /// (RUN_DIR/report.md), junit (RUN_DIR/junit.xml), html (RUN_DIR/report.html) [default:
    /// terminal].
    #[arg(long = "format", value_enum, value_name = "FORMAT")]
    pub formats: Vec<Format>,
    /// Print the whole report: per-tool rates, the weakest and unstable cases, confusions,
    /// schema violations, argument failures, latency by tool and tokens, with the verdict last
    /// [default: the decision and the figures it rests on].
    #[arg(long)]
    pub detail: bool,
}

/// Every figure comes from the records; summary.json only supplies what records do not hold
/// (the run header: when, how, which cassette; how many trials were planned).
pub(super) fn run(args: &ReportArgs) -> Result<ExitCode, Error> {
    let formats = output::chosen(&args.formats, &[Format::Terminal]);
    if formats.contains(&Format::Csv) {
        return Err(usage(
            "--format csv: results.csv is written by `run`; `report` changes no record",
        ));
    }
    output::check_one_stdout(&formats)?;
    let results_path = args.run_dir.join("results.jsonl");
    let header = super::read_header(&args.run_dir)?;
    let confidence = setup::checked_confidence(args.confidence.unwrap_or(header.confidence))?;
    let precision = setup::checked_precision(args.precision.unwrap_or(header.precision))?;
    let judging = judging_of(args, &header)?;
    let max_infra = header.max_infra_error_rate();
    // The comparison the run recorded, by its own --min-effect (the default, when it no
    // longer reads as one).
    let recorded_comparison = header.comparison();
    let compared = header.compared().then(|| {
        header
            .min_effect()
            .unwrap_or(toolscore_decide::DEFAULT_MIN_EFFECT)
    });
    let mut rescorer = rescore::Rescorer::for_run(&header.run);
    let (mut summary, latency) = toolscore_summary::reaggregate_rescored(
        &results_path,
        header,
        confidence,
        precision,
        &mut |r| {
            if let Some(rs) = &mut rescorer {
                rs.apply(r);
            }
        },
    )?;
    if let Some(notice) = rescorer.as_ref().and_then(rescore::Rescorer::notice) {
        if formats.contains(&Format::Terminal) {
            outln!("{notice}")?;
        } else {
            errln!("{notice}")?;
        }
    }
    let gates = judging.specs;
    if let Some(q) = judging.sequential {
        let spec = toolscore_decide::gate::sequential::SequentialSpec {
            gates,
            confidence,
            kind: q.kind,
            p1: q.p1,
            fail_below: q.fail_below,
            max_trials: summary.run.trials_per_case,
            level: judging.level,
        };
        summary.gate = Some(replay_sequential(
            spec,
            &summary.run,
            &results_path,
            rescorer.as_mut(),
        )?);
    } else if !gates.is_empty() {
        summary.gate = Some(toolscore_decide::gate::evaluate(
            &summary,
            &latency,
            &gates,
            judging.level,
        ));
    }
    if !judging.kept_baseline.is_empty() {
        let mut results = summary.gate.take().map(|g| g.gates).unwrap_or_default();
        results.extend(judging.kept_baseline);
        summary.gate = Some(toolscore_decide::gate::report_of(results, confidence));
    }
    let baseline = args.gate.load_baseline()?;
    judge_baseline(&mut summary, baseline.as_ref(), &args.gate, None)?;
    if let Some(min_effect) = compared {
        compare_again(
            &mut summary,
            min_effect,
            &args.run_dir,
            recorded_comparison.as_ref(),
        )?;
    }
    let decision = toolscore_decide::decide(&summary, max_infra);
    let code = toolscore_decide::exit_code(&decision);
    summary.decision = Some(decision);
    for path in output::write_files(&summary, &args.run_dir, &formats)? {
        errln!("wrote {}", path.display())?;
    }
    output::print_stdout(&summary, &formats, args.detail, &args.run_dir)?;
    Ok(code)
}

/// A sequential gate judged again on the records in their order (rescored first when the run's
/// scorer changed), as the run judged them while they finished.
fn replay_sequential(
    spec: toolscore_decide::gate::sequential::SequentialSpec,
    run: &toolscore_summary::RunInfo,
    results: &std::path::Path,
    mut rescorer: Option<&mut rescore::Rescorer>,
) -> Result<toolscore_summary::GateReport, Error> {
    let confidence = spec.confidence;
    // The flags are checked as `run` checks them (a --sprt-p1 or --fail-below at or below a
    // bar is bad input, not a gate that silently never decides).
    let case_thresholds: Vec<f64> = run
        .datasets
        .iter()
        .flat_map(|d| d.case_gates.values().copied())
        .collect();
    spec.check(&case_thresholds).map_err(|e| usage(&e))?;
    let mut gate = setup::sequential_gate(spec, run)?;
    toolscore_summary::for_each_record_mut(results, &mut |r| {
        if let Some(rs) = rescorer.as_deref_mut() {
            rs.apply(r);
        }
        gate.push(r);
    })?;
    Ok(toolscore_decide::gate::report_of(
        gate.results(),
        confidence,
    ))
}

/// A compared run's two arms compared again from the records, by the run's own
/// `--min-effect`, and its sequential comparison replayed when it ran one.
fn compare_again(
    summary: &mut toolscore_summary::Summary,
    min_effect: f64,
    run_dir: &std::path::Path,
    recorded: Option<&toolscore_summary::Comparison>,
) -> Result<(), Error> {
    compare_two_arms(summary, min_effect)?;
    if let Some(mut c) = summary.comparison.take() {
        super::compare::rejudge_sequential(run_dir, recorded, summary, &mut c)?;
        summary.comparison = Some(c);
    }
    Ok(())
}

/// How `report` judges a run: by the flags when any gate flag is given, else by the gates the
/// run recorded (so a re-render keeps the verdict).
struct Judging {
    specs: Vec<GateSpec>,
    level: GateLevel,
    sequential: Option<RecordedSequential>,
    /// Baseline results the run recorded, kept as judged (the baseline run is not re-read).
    kept_baseline: Vec<toolscore_summary::GateResult>,
}

fn judging_of(
    args: &ReportArgs,
    header: &toolscore_summary::SummaryHeader,
) -> Result<Judging, Error> {
    let flags_given = !args.gate.gates.is_empty() || args.gate.baseline.is_some();
    match header.gate() {
        Some(report) if !flags_given => {
            let r = toolscore_decide::gate::recorded::recorded(&report);
            errln!(
                "report: judged again by the run's own gates ({}); give --gate to judge by others",
                r.as_flags()
            )?;
            Ok(Judging {
                specs: r.specs,
                level: r.level,
                sequential: r.sequential,
                kept_baseline: r.baseline,
            })
        }
        _ if args.gate.sequential && args.gate.gates.is_empty() => Err(usage(
            "--sequential judges case gates: add --gate METRIC>=T --gate-level case (a run's sequential comparison is judged again by `toolscore report RUN_DIR` or `toolscore compare RUN_DIR` as it ran)",
        )),
        // A fixed-n gate on trials a sequential test stopped would not hold its error rate:
        // which cases ran how long depended on their own results.
        _ if !args.gate.gates.is_empty()
            && !args.gate.sequential
            && header.sampled_sequentially() =>
        {
            Err(usage(
                "this run was sampled sequentially (--sequential stopped its cases, or the run, as soon as they were decided), so a fixed-n gate on its trials would not hold its stated error rate: judge it with --sequential (and --gate-level case or suite), or run again at a fixed number of trials",
            ))
        }
        _ => Ok(Judging {
            specs: parse_gates_at(&args.gate.gates, args.gate.gate_level)?,
            level: args.gate.gate_level,
            sequential: args.gate.sequential.then(|| RecordedSequential {
                kind: toolscore_decide::gate::sequential::kind_for(args.gate.sprt_p1),
                p1: args.gate.sprt_p1,
                p1_at_gate: args.gate.sprt_p1.unwrap_or_default(),
                fail_below: args.gate.fail_below,
            }),
            kept_baseline: Vec::new(),
        }),
    }
}
