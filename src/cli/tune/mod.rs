//! `toolscore tune`: diagnose a wording from its own trials, propose edits, race them against
//! the base on the training cases, confirm the winner on held-out cases it never saw, and
//! write it as a variant overlay only when the held-out cases say it is better.
//!
//! Every phase is a run: its own folder under TUNE_DIR (`baseline/`, `race/`, `confirm/`)
//! with results.jsonl and summary.json, so `report`, `explain` and `compare` read each one as
//! they read any run, and every figure of `tune.json` is recomputed from them. This file holds
//! the flags and the report; `phases.rs` runs the phases.

use std::path::{Path, PathBuf};

use clap::Args;

use super::output::Format;
use super::run::RunArgs;
use super::{SuiteArgs, usage};
use crate::cli::Error;
use toolscore_core::ExitCode;
use toolscore_report::ProgressMode;
use toolscore_summary::tune::{TuneOutcome, TuneReport};

mod author;
mod phases;
mod provider;

use phases::Tuner;

#[derive(Debug, Args)]
pub struct TuneArgs {
    #[command(flatten, next_help_heading = "Input")]
    pub suite: SuiteArgs,
    /// Score starter cases that `toolscore init` wrote and nobody edited (tagged `starter`, the
    /// request still beginning "EDIT ME:"); without it a suite that holds any is refused (exit
    /// 2), naming each. A placeholder request measures nothing.
    #[arg(help_heading = "Input", long)]
    pub allow_starter_cases: bool,
    /// The provider every phase runs against: a name from toolscore.yaml, a kind configured
    /// by the flags below, KIND:MODEL, or `replay:CASSETTE` [default: the config's].
    #[arg(help_heading = "Provider", long, value_name = "NAME")]
    pub provider: Option<String>,
    #[command(flatten)]
    pub provider_args: super::ProviderArgs,
    /// Trials in flight at once [default: 8].
    #[arg(help_heading = "Provider", long)]
    pub concurrency: Option<usize>,
    /// A provider (as --provider names one) that rewrites the text of each implicated tool
    /// from the training trials' evidence; its rewrites race beside the deterministic edits.
    /// Each request is paid from the budget as one trial. --record keeps its answers in the
    /// cassette, and a replay of it needs the same --author (served, not asked).
    #[arg(help_heading = "Tuning", long, value_name = "NAME")]
    pub author: Option<String>,
    /// An earlier run of the base wording to diagnose, instead of running a baseline: only
    /// its trials of the training cases (and training scenarios) are read.
    #[arg(help_heading = "Tuning", long, value_name = "RUN_DIR")]
    pub from: Option<PathBuf>,
    /// Trials per training case of the baseline tune runs when there is no --from.
    #[arg(help_heading = "Tuning", long, default_value_t = 10, value_name = "N")]
    pub trials: u32,
    /// The most rounds the race and the confirmation may each use (a round is one trial of
    /// every case under each arm).
    #[arg(help_heading = "Tuning", long, default_value_t = 40, value_name = "N")]
    pub max_rounds: u32,
    /// The most candidates proposed and raced, heaviest evidence first.
    #[arg(help_heading = "Tuning", long, default_value_t = 6, value_name = "N")]
    pub max_candidates: usize,
    /// The smallest improvement worth keeping: a candidate is dropped once the race rules out
    /// an improvement this large, and the confirmation says whether the held-out cases rule
    /// out a difference this large either way. A smaller effect takes many more trials to
    /// rule out.
    #[arg(help_heading = "Tuning", long, default_value_t = 0.1)]
    pub min_effect: f64,
    /// Confidence of every comparison.
    #[arg(help_heading = "Tuning", long, default_value_t = 0.95)]
    pub confidence: f64,
    /// Without `holdout` tags: the share of cases held back to confirm on.
    #[arg(
        help_heading = "Tuning",
        long,
        default_value_t = 0.3,
        value_name = "FRACTION"
    )]
    pub holdout_fraction: f64,
    /// Without `holdout` tags: the seed of the split (the same seed holds back the same cases).
    #[arg(help_heading = "Tuning", long, default_value_t = 1)]
    pub seed: u64,
    /// The share of a phase's trials that may end in infrastructure errors before tune stops
    /// with exit 4 (as `run --max-infra-error-rate`): a candidate measured through errors is
    /// not measured.
    #[arg(
        help_heading = "Tuning",
        long,
        default_value_t = toolscore_summary::Decision::DEFAULT_MAX_INFRA_ERROR_RATE,
        value_name = "RATE"
    )]
    pub max_infra_error_rate: f64,
    /// Write the tuned overlay even when the held-out cases do not confirm it.
    #[arg(help_heading = "Tuning", long)]
    pub write_anyway: bool,
    /// The most trials tune sends over all its phases (baseline, race, confirmation).
    #[arg(help_heading = "Budget", long, value_name = "N")]
    pub budget_trials: Option<u64>,
    /// The most US dollars tune spends over all its phases, counted as `run --max-cost`
    /// counts (every arm needs a price).
    #[arg(help_heading = "Budget", long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Folder for tune's outputs: each tune writes OUT/<tune-id>/ [default: reports, beside
    /// the toolscore.yaml found (the current folder's without one)].
    #[arg(help_heading = "Output", long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Tune id [default: `tune-` and a UTC timestamp].
    #[arg(help_heading = "Output", long)]
    pub tune_id: Option<String>,
    /// What to produce; repeatable: terminal (stdout), md (TUNE_DIR/report.md), html
    /// (TUNE_DIR/report.html). tune.json is always written [default: terminal].
    #[arg(
        help_heading = "Output",
        long = "format",
        value_enum,
        value_name = "FORMAT"
    )]
    pub formats: Vec<Format>,
    /// Progress display on stderr.
    #[arg(help_heading = "Output", long, value_enum, default_value_t = ProgressMode::Auto)]
    pub progress: ProgressMode,
    /// Record every phase's raw responses to this one cassette (`.gz` = compressed): `tune
    /// --provider replay:CASSETTE` with the same flags then replays the whole tune offline.
    #[arg(help_heading = "Recording", long, value_name = "CASSETTE")]
    pub record: Option<PathBuf>,
    /// With --record: what the recording is (model build, server), shown whenever it is
    /// replayed.
    #[arg(
        help_heading = "Recording",
        long,
        value_name = "TEXT",
        requires = "record"
    )]
    pub record_note: Option<String>,
    /// With --record: overwrite the cassette if the file exists.
    #[arg(help_heading = "Recording", long, requires = "record")]
    pub force: bool,
}

/// Runs the phases in order and reports. Exit 0 when the held-out cases confirm the tuned
/// wording (or there is nothing to tune), 1 when they find no improvement or a worse one,
/// 3 when the confirmation ends undecided, 4 when infrastructure errors spoil a phase.
pub(super) fn run(args: &TuneArgs) -> Result<ExitCode, Error> {
    let formats = checked(args)?;
    let env = |name: &str| std::env::var(name).ok();
    let mut tuner = Tuner::new(args, &env)?;
    let tuned = tuner.tune();
    // The cassette keeps what was recorded even when a phase failed.
    if let Some(recorder) = tuner.recorder.take() {
        recorder.finish()?;
    }
    let report = tuned?;
    toolscore_core::write_json(&tuner.dir.join("tune.json"), &report)?;
    type Renderer = fn(&TuneReport, &mut dyn std::io::Write) -> std::io::Result<()>;
    let files: [(Format, &str, Renderer); 2] = [
        (
            Format::Md,
            "report.md",
            toolscore_report::render_tune_markdown,
        ),
        (
            Format::Html,
            "report.html",
            toolscore_report::render_tune_html,
        ),
    ];
    for (format, name, render) in files {
        if formats.contains(&format) {
            let mut text = Vec::new();
            render(&report, &mut text).map_err(|e| Error::io("cannot render the report", e))?;
            toolscore_core::write_file(&tuner.dir.join(name), &text)?;
        }
    }
    if formats.contains(&Format::Terminal) {
        toolscore_report::render_tune(&report, &mut std::io::stdout().lock())
            .map_err(|e| Error::io("cannot write the report", e))?;
    }
    outln!("wrote {}", tuner.dir.join("tune.json").display())?;
    Ok(match report.outcome {
        TuneOutcome::Confirmed | TuneOutcome::NothingToTune => ExitCode::Pass,
        TuneOutcome::NoDifference | TuneOutcome::Worse | TuneOutcome::NoFinalist => {
            ExitCode::GateFailed
        }
        TuneOutcome::Undecided => ExitCode::Inconclusive,
    })
}

/// The flags' own rules, before anything is loaded; the formats chosen.
fn checked(args: &TuneArgs) -> Result<Vec<Format>, Error> {
    if !(args.min_effect > 0.0 && args.min_effect < 1.0) {
        return Err(usage("--min-effect must be between 0 and 1 (e.g. 0.05)"));
    }
    if !(args.confidence > 0.5 && args.confidence < 1.0) {
        return Err(usage("--confidence must be between 0.5 and 1 (e.g. 0.95)"));
    }
    if !(args.holdout_fraction > 0.0 && args.holdout_fraction < 1.0) {
        return Err(usage(
            "--holdout-fraction must be between 0 and 1 (e.g. 0.3)",
        ));
    }
    if !(0.0..=1.0).contains(&args.max_infra_error_rate) {
        return Err(usage("--max-infra-error-rate must be between 0 and 1"));
    }
    if args.trials == 0 || args.max_rounds == 0 || args.max_candidates == 0 {
        return Err(usage(
            "--trials, --max-rounds and --max-candidates must each be at least 1",
        ));
    }
    let formats = super::output::chosen(&args.formats, &[Format::Terminal]);
    if let Some(f) = formats.iter().find(|f| {
        !matches!(
            f,
            Format::Terminal | Format::Md | Format::Html | Format::Json
        )
    }) {
        return Err(usage(&format!(
            "--format {f:?}: tune writes terminal, md, html and json (tune.json, always written)"
        )));
    }
    Ok(formats)
}

/// The flags of a phase's run: tune's provider flags, the suite, `trials` per case, the
/// phase's folder TUNE_DIR/NAME, and its share of --max-cost.
pub(super) fn phase_args(
    args: &TuneArgs,
    dir: &Path,
    name: &str,
    trials: u32,
    max_cost: Option<f64>,
) -> RunArgs {
    let mut run = RunArgs::defaults();
    run.suite = args.suite.clone();
    run.allow_starter_cases = args.allow_starter_cases;
    run.providers = args.provider.iter().cloned().collect();
    run.provider_args = args.provider_args.clone();
    run.concurrency = args.concurrency;
    run.trials = Some(trials);
    run.confidence = Some(args.confidence);
    run.max_cost = max_cost;
    run.out = Some(dir.to_owned());
    run.run_id = Some(name.to_owned());
    run.progress = args.progress;
    run
}
