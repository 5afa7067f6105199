//! Command line: clap definitions, turning raw flags and the config into a validated
//! `RunPlan` before any work starts, and mapping outcomes to exit codes.

use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};

mod plan;
mod resume;

pub use plan::{Recording, RunSetup, Sinks, build_plan};

use crate::error::{Error, ExitCode, InputError};
use crate::event::Observers;
use crate::gate::GateSpec;
use crate::report::{GateLevel, ProgressMode};
use crate::suite::{Config, Dataset, load_config, load_dataset};

const EXIT_CODES_HELP: &str = "Exit codes:
  0  run completed (and every --gate passed)
  1  a --gate failed
  2  bad input or usage (nothing was run)
  3  a --gate is inconclusive: not enough evidence yet
  4  too many infrastructure errors to judge (see --max-infra-error-rate), or trials lost
  130 interrupted with Ctrl-C or SIGTERM (summary of completed trials written)";

/// Replay tool-calling fixtures against a model many times and report every rate with its
/// confidence interval.
#[derive(Debug, Parser)]
#[command(name = "toolscore", version, after_help = EXIT_CODES_HELP)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
#[expect(clippy::large_enum_variant, reason = "parsed once per process")]
pub enum Command {
    /// Run every case of the datasets N times against a provider and report.
    Run(RunArgs),
    /// Check config, catalogs and fixtures without calling any model.
    Validate(SuiteArgs),
    /// Re-aggregate a finished run from its results.jsonl and print its report again; no
    /// model is called and nothing is written.
    Report(ReportArgs),
    /// Work with recorded cassettes.
    #[command(subcommand)]
    Cassette(CassetteCommand),
}

/// `--gate` and `--gate-level`, shared by `run` and `report`.
#[derive(Debug, Args)]
pub struct GateArgs {
    /// A gate, `METRIC>=T` (selection, args, schema, pass): pass when the one-sided lower
    /// confidence bound clears T (exit 0), fail when the upper bound is below it (exit 1),
    /// inconclusive otherwise (exit 3). Or a latency budget, `LATENCY<=MS` (p50_ms, p95_ms,
    /// p99_ms): pass when the percentile's upper bound is within MS, fail when its lower bound
    /// is over it. Repeatable.
    #[arg(long = "gate", value_name = "METRIC>=T|LATENCY<=MS")]
    pub gates: Vec<String>,
    /// What a gate judges: the suite's case-level rate (latency: the arm's), every case on
    /// its own, or every expected tool on its own.
    #[arg(long, value_enum, default_value_t = GateLevel::Suite)]
    pub gate_level: GateLevel,
}

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
}

#[derive(Debug, Subcommand)]
pub enum CassetteCommand {
    /// Convert a format-1 cassette to the current format (no model is called; every response
    /// is kept byte for byte, so replays reproduce the recorded run exactly).
    Upgrade {
        /// The old cassette.
        from: PathBuf,
        /// Where to write the converted one (`.gz` = compressed); must not exist.
        to: PathBuf,
    },
}

/// Where the suite comes from.
#[derive(Debug, Args)]
pub struct SuiteArgs {
    /// Config file [default: toolscore.yaml when it exists].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Dataset folder (tools.json + cases.jsonl); repeatable; replaces the config's list.
    #[arg(long = "dataset", value_name = "DIR")]
    pub datasets: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// A provider named in the config, a kind (`openai-compat`) configured by the flags below,
    /// or `replay:CASSETTE` to serve recorded responses without calling any model. Repeat it to
    /// run several arms in one plan; each record names its arm.
    #[arg(long = "provider", value_name = "NAME")]
    pub providers: Vec<String>,
    /// Record every raw response to this cassette (`.gz` = compressed) for later replay.
    #[arg(long, value_name = "CASSETTE")]
    pub record: Option<PathBuf>,
    /// With --record: what the recording is (model build, server), shown whenever it is replayed.
    #[arg(long, value_name = "TEXT", requires = "record")]
    pub record_note: Option<String>,
    /// With --record: overwrite the cassette if the file exists.
    #[arg(long, requires = "record")]
    pub force: bool,
    /// Base URL of an OpenAI-compatible API, e.g. http://127.0.0.1:8080/v1.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Model name sent to the provider.
    #[arg(long)]
    pub model: Option<String>,
    /// Environment variable that holds the API key (the key itself is never a flag).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Trials per case [default: 50].
    #[arg(long)]
    pub trials: Option<u32>,
    /// Trials in flight at once [default: 8].
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Sampling temperature [default: the provider's].
    #[arg(long)]
    pub temperature: Option<f64>,
    /// Maximum output tokens per request.
    #[arg(long)]
    pub max_tokens: Option<u32>,
    /// Per-request timeout in seconds [default: 60].
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// Retries after 429/5xx/timeouts, with capped exponential backoff and full jitter [default: 4].
    #[arg(long)]
    pub max_retries: Option<u32>,
    /// Largest response body read, in bytes; a larger one is a bad_response [default: 8 MiB].
    #[arg(long, value_name = "BYTES")]
    pub max_response_bytes: Option<usize>,
    /// Confidence level of every interval [default: 0.95].
    #[arg(long)]
    pub confidence: Option<f64>,
    /// Target half-width: warn when an interval is wider and say how many trials would do [default: 0.05].
    #[arg(long)]
    pub precision: Option<f64>,
    #[command(flatten)]
    pub gate: GateArgs,
    /// Fraction of trials allowed to end in infrastructure errors before the run exits 4.
    #[arg(long, default_value_t = 0.1, value_name = "RATE")]
    pub max_infra_error_rate: f64,
    /// Folder for run outputs; each run writes OUT/<run-id>/.
    #[arg(long, default_value = "reports", value_name = "DIR")]
    pub out: PathBuf,
    /// Run id [default: UTC timestamp plus a random suffix].
    #[arg(long, conflicts_with = "resume")]
    pub run_id: Option<String>,
    /// Finish a run that was killed or interrupted: keep its completed trials, re-run those that
    /// ended in infrastructure errors, run the missing ones. Give the same flags as the run.
    #[arg(long, value_name = "RUN_DIR", conflicts_with_all = ["run_id", "record"])]
    pub resume: Option<PathBuf>,
    /// Progress display on stderr.
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    pub progress: ProgressMode,
}

/// Runs the parsed command and returns the process exit code.
pub fn run(cli: Cli) -> Result<ExitCode, Error> {
    match cli.command {
        Command::Validate(args) => {
            let (_, datasets) = load_suite(&args)?;
            for d in &datasets {
                println!(
                    "{}: {} tools, {} cases, catalog {}",
                    d.dir.display(),
                    d.catalog.tools.len(),
                    d.cases.len(),
                    d.catalog.fingerprint
                );
            }
            Ok(ExitCode::Pass)
        }
        Command::Report(args) => report_command(&args),
        Command::Cassette(CassetteCommand::Upgrade { from, to }) => {
            if to.exists() {
                return Err(usage(&format!(
                    "{} already exists; choose another output path",
                    to.display()
                )));
            }
            let n = crate::provider::cassette::upgrade_v1(&from, &to)?;
            println!(
                "converted {n} entries from {} to {} (format {})",
                from.display(),
                to.display(),
                crate::provider::cassette::CASSETTE_FORMAT
            );
            Ok(ExitCode::Pass)
        }
        Command::Run(args) => {
            let max_infra = args.max_infra_error_rate;
            if !(0.0..=1.0).contains(&max_infra) {
                return Err(usage("--max-infra-error-rate must be between 0 and 1"));
            }
            let setup = build_plan(args, &|name| std::env::var(name).ok())?;
            run_command(setup, max_infra)
        }
    }
}

/// Runs a validated setup: composes the sinks as observers of the run, aggregates, writes
/// `summary.json`, prints the report and decides the exit code.
fn run_command(setup: RunSetup, max_infra: f64) -> Result<ExitCode, Error> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::io("cannot start the async runtime", e))?;
    let started = std::time::SystemTime::now();
    let mut run = setup.run_info(started);
    let mut setup = setup;
    let resumed = if setup.resume {
        let r = resume::prepare(&mut setup)?;
        eprintln!("{}", r.describe());
        Some(r)
    } else {
        None
    };
    let mut sinks = setup.sinks(started)?;
    if let Some(r) = &resumed {
        r.replay_into(&setup.out_dir, &mut sinks)?;
    }
    let totals = {
        let mut observers = Observers::new();
        for o in sinks.observers() {
            observers.push(o);
        }
        runtime.block_on(crate::runner::execute(setup.plan, &mut observers))?
    };
    // Close every pooled connection before writing the summary: with a high --concurrency the
    // sockets would otherwise hold the file descriptors the summary needs.
    drop(runtime);
    let totals = match &resumed {
        Some(r) => r.add_to(totals),
        None => totals,
    };
    run.finished_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let latency = sinks.aggregator.latency_distributions();
    let mut summary = sinks
        .aggregator
        .finish(run, &totals, setup.confidence, setup.precision);
    if !setup.gates.is_empty() {
        summary.gate = Some(crate::gate::evaluate(
            &summary,
            &latency,
            &setup.gates,
            setup.gate_level,
        ));
    }
    crate::report::write_json_atomically(&setup.out_dir.join("summary.json"), &summary)?;
    let mut out = std::io::stdout().lock();
    crate::report::render_terminal(&summary, &mut out)
        .map_err(|e| Error::io("cannot write the report", e))?;
    println!(
        "\nwrote {} and {}",
        setup.out_dir.join("results.jsonl").display(),
        setup.out_dir.join("summary.json").display()
    );
    let (code, message) = run_exit_code(&summary, max_infra);
    if let Some(message) = message {
        eprintln!("error: {message}");
    }
    Ok(code)
}

/// The exit code of a finished run, and what to say on stderr when it is not 0. A run that
/// did not account for every planned trial never exits 0.
fn run_exit_code(summary: &crate::report::Summary, max_infra: f64) -> (ExitCode, Option<String>) {
    if summary.interrupted {
        return (ExitCode::Interrupted, None);
    }
    let accounted = summary.completed_trials + summary.skipped_trials;
    if accounted < summary.planned_trials {
        return (
            ExitCode::InfraErrors,
            Some(format!(
                "{} of {} planned trials were neither run nor skipped; the scores cannot be trusted",
                summary.planned_trials - accounted,
                summary.planned_trials
            )),
        );
    }
    let errors: u64 = summary.arms.iter().map(|a| a.infra.errors).sum();
    let done = summary.completed_trials.max(1) as f64;
    if summary.completed_trials == 0 || errors as f64 / done > max_infra {
        return (
            ExitCode::InfraErrors,
            Some(format!(
                "{} of {} trials ended in infrastructure errors (limit {:.0}%); the scores cannot be trusted",
                errors,
                summary.completed_trials,
                max_infra * 100.0
            )),
        );
    }
    (gate_exit_code(summary), None)
}

/// Every figure comes from the records; summary.json only supplies what records do not hold
/// (the run header: when, how, which cassette; how many trials were planned).
fn report_command(args: &ReportArgs) -> Result<ExitCode, Error> {
    let summary_path = args.run_dir.join("summary.json");
    let results_path = args.run_dir.join("results.jsonl");
    let text = crate::input::read_text(&summary_path)?;
    let header: crate::report::SummaryHeader = serde_json::from_str(&text)
        .map_err(|e| InputError::json(&summary_path.display().to_string(), &e))?;
    let confidence = plan::checked_confidence(args.confidence.unwrap_or(header.confidence))?;
    let precision = plan::checked_precision(args.precision.unwrap_or(header.precision))?;
    let gates = parse_gates(&args.gate.gates)?;
    let (mut summary, latency) =
        crate::report::reaggregate_with_latency(&results_path, header, confidence, precision)?;
    if !gates.is_empty() {
        summary.gate = Some(crate::gate::evaluate(
            &summary,
            &latency,
            &gates,
            args.gate.gate_level,
        ));
    }
    let mut out = std::io::stdout().lock();
    crate::report::render_terminal(&summary, &mut out)
        .map_err(|e| Error::io("cannot write the report", e))?;
    Ok(gate_exit_code(&summary))
}

/// Every `--gate`, parsed before any work.
pub(crate) fn parse_gates(texts: &[String]) -> Result<Vec<GateSpec>, Error> {
    texts
        .iter()
        .map(|t| GateSpec::parse(t).map_err(Error::from))
        .collect()
}

/// 0 pass (or no gate), 1 fail, 3 inconclusive.
fn gate_exit_code(summary: &crate::report::Summary) -> ExitCode {
    match summary.gate.as_ref().map(|g| g.verdict) {
        None | Some(crate::report::Verdict::Pass) => ExitCode::Pass,
        Some(crate::report::Verdict::Fail) => ExitCode::GateFailed,
        Some(crate::report::Verdict::Inconclusive) => ExitCode::Inconclusive,
    }
}

pub(crate) fn usage(msg: &str) -> Error {
    Error::Input(InputError::new(msg))
}

/// Loads the config (if any) and every dataset, fully validated.
pub(crate) fn load_suite(args: &SuiteArgs) -> Result<(Config, Vec<Dataset>), Error> {
    let config = match &args.config {
        Some(path) => load_config(path)?,
        None if Path::new("toolscore.yaml").is_file() => load_config(Path::new("toolscore.yaml"))?,
        None => Config::default(),
    };
    let dirs = if args.datasets.is_empty() {
        config.datasets.clone()
    } else {
        args.datasets.clone()
    };
    if dirs.is_empty() {
        return Err(usage(
            "no dataset: pass --dataset DIR or list `datasets` in toolscore.yaml",
        ));
    }
    let mut datasets: Vec<Dataset> = Vec::with_capacity(dirs.len());
    for dir in &dirs {
        let d = load_dataset(dir)?;
        if datasets.iter().any(|other| other.name == d.name) {
            return Err(usage(&format!(
                "two datasets are named `{}`; dataset folder names must differ",
                d.name
            )));
        }
        datasets.push(d);
    }
    Ok((config, datasets))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(planned: u64, completed: u64, skipped: u64) -> crate::report::Summary {
        let run = crate::report::RunInfo::for_test(1);
        crate::report::Summary {
            run,
            planned_trials: planned,
            completed_trials: completed,
            skipped_trials: skipped,
            interrupted: false,
            confidence: 0.95,
            precision: 0.05,
            arms: Vec::new(),
            warnings: Vec::new(),
            gate: None,
        }
    }

    #[test]
    fn a_run_that_lost_trials_never_exits_0() {
        assert_eq!(run_exit_code(&summary(12, 12, 0), 0.1).0, ExitCode::Pass);
        assert_eq!(run_exit_code(&summary(12, 4, 8), 0.1).0, ExitCode::Pass);
        let (code, message) = run_exit_code(&summary(12, 1, 0), 0.1);
        assert_eq!(code, ExitCode::InfraErrors);
        assert_eq!(
            message.as_deref(),
            Some(
                "11 of 12 planned trials were neither run nor skipped; the scores cannot be trusted"
            )
        );
    }
}
