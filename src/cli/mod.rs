//! Command line: clap definitions, turning raw flags and the config into a validated
//! `RunPlan` before any work starts, and mapping outcomes to exit codes.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};

mod catalog;
mod cost;
mod import;
mod lint;
mod merge;
mod output;
mod probe;
mod rescore;
mod resume;
mod setup;
mod stress;

pub use output::Format;

pub use setup::{Recording, RunSetup, Sinks, build_plan};

use crate::decide::gate::GateSpec;
use crate::error::{Error, ExitCode, InputError};
use crate::event::Observers;
use crate::report::{GateLevel, ProgressMode};
use crate::suite::scenario::{Scenario, load_scenarios};
use crate::suite::{Config, Dataset, load_config, load_dataset};

const EXIT_CODES_HELP: &str = "Exit codes:
  0  run completed (and every --gate passed)
  1  a --gate (or --baseline) failed; history --fail-on-drop: the newest run dropped;
     catalog diff: a tool changed under the same server version; probe: a check failed;
     stress: leakage, or the --max-error-rate bound exceeded;
     lint: an error-level finding
  2  bad input or usage (nothing was run)
  3  a --gate is inconclusive: not enough evidence yet (compare: a verdict not yet decided)
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
    /// model is called, and nothing is written unless --format md, junit or html asks for a file.
    Report(ReportArgs),
    /// Compare two arms paired by case: two arms of one run (`--variant base --variant terse`),
    /// or one arm of each of two runs. Which scores higher, with an interval, case by case and
    /// for the suite; cases tagged `holdout` only in aggregate. Nothing is called or written
    /// (unless --json).
    Compare(CompareArgs),
    /// Before spending anything: trials per case for a precision or a gate (fixed and
    /// sequential), cases for a suite-level claim, and the requests and tokens of each option.
    Plan(PlanArgs),
    /// The trend of every series of runs (same datasets, provider, model, variant) from
    /// DIR/history.jsonl, which every `run` appends to: each run's case-level score, and against
    /// the previous run the paired difference, flagged only when its interval excludes 0.
    History(HistoryArgs),
    /// Check a tool catalog before any model reads it: names, descriptions, schemas, provider
    /// compatibility, token footprint and injection payloads. Local, offline, deterministic.
    /// Exit 1 when any error-level finding remains, 0 otherwise, 2 on bad input.
    Lint(lint::LintArgs),
    /// Join the run folders of `run --shard i/n` into one run folder (results.jsonl,
    /// results.csv, summary.json re-aggregated from the records): refused, naming the shard,
    /// unless the folders are every shard of one plan exactly once, each finished. `report`,
    /// `--gate` and `compare` then work on the merged folder.
    Merge(merge::MergeArgs),
    /// Work with recorded cassettes.
    #[command(subcommand)]
    Cassette(CassetteCommand),
    /// Print a catalog exactly as a model receives it, flat and cold, with its token footprint:
    /// from a file, a dataset, a live MCP server over stdio (`toolscore catalog -- npx -y
    /// @modelcontextprotocol/server-everything`) or a URL. `catalog diff OLD NEW` compares two.
    Catalog(catalog::CatalogArgs),
    /// Deterministic edge checks of a live MCP server, each with a verdict and its evidence:
    /// the dataset's expected calls return results valid against the tool's outputSchema (or
    /// well-formed content), an unknown tool gets JSON-RPC error -32602, arguments that break
    /// a tool's input schema get isError naming the field, an unsupported protocol version is
    /// refused with the supported list. Calls the server's tools: point it at a test instance.
    /// Exit 1 when a check fails.
    Probe(probe::ProbeArgs),
    /// Load a live MCP server: parallel sessions make the dataset's expected calls directly (no
    /// model) for a duration, each call with a canary of its own in its free string arguments.
    /// Per tool: calls, error rate with its interval, p50/p95/p99 latency with intervals, 429s
    /// with and without Retry-After, 5xx, dropped connections, timeouts; and any answer that
    /// carried another session's canary (leakage). Over stdio each session is its own server
    /// process. Exit 1 on leakage, or when --max-error-rate's bound is exceeded.
    Stress(stress::StressArgs),
    /// Turn outside data into datasets: `import bfcl` converts the Berkeley Function Calling
    /// Leaderboard (PyPI `bfcl-eval`), `import traffic` logged model calls (OpenAI, Anthropic,
    /// OpenTelemetry GenAI spans). Never overwrites a dataset without --force; every dataset
    /// written is loaded back as `validate` loads it.
    #[command(subcommand)]
    Import(import::ImportCommand),
}

/// `--gate` and `--gate-level`, shared by `run` and `report`.
#[derive(Debug, Clone, Args)]
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
    /// Judge every case after each of its trials with an anytime-valid sequential test (SPRT
    /// with Ville thresholds) and stop running a case the moment it decides. Case level only.
    #[arg(long, requires = "gates")]
    pub sequential: bool,
    /// With --sequential: the rate a case should pass at (the test's alternative) [default:
    /// halfway from the threshold to 1].
    #[arg(long, value_name = "P1", requires = "sequential")]
    pub sprt_p1: Option<f64>,
    /// An earlier run to gate against: pass when this run is not worse than it by more than
    /// --margin (the lower bound of the paired case-level difference), fail when it is.
    #[arg(long, value_name = "RUN_DIR")]
    pub baseline: Option<PathBuf>,
    /// With --baseline: the loss that is tolerated.
    #[arg(long, default_value_t = 0.02, requires = "baseline")]
    pub margin: f64,
    /// With --baseline: the rate compared (selection, args, schema or pass).
    #[arg(long, default_value = "pass", requires = "baseline")]
    pub baseline_metric: String,
    /// With --baseline: compare on the cases both runs have instead of refusing when they
    /// differ.
    #[arg(long, requires = "baseline")]
    pub intersect: bool,
}

impl GateArgs {
    /// The baseline to gate against, read and checked before any work.
    pub(crate) fn load_baseline(
        &self,
    ) -> Result<Option<(crate::report::Summary, crate::report::Metric)>, Error> {
        let Some(dir) = &self.baseline else {
            return Ok(None);
        };
        let metric = crate::decide::gate::parse_metric(&self.baseline_metric).ok_or_else(|| {
            usage(&format!(
                "--baseline-metric {}: expected selection, args, schema or pass",
                self.baseline_metric
            ))
        })?;
        if !(self.margin >= 0.0 && self.margin < 1.0) {
            return Err(usage("--margin must be between 0 and 1 (e.g. 0.02)"));
        }
        Ok(Some((load_run(dir)?, metric)))
    }
}

/// A finished run, re-aggregated from its results.jsonl at its own confidence.
fn load_run(dir: &Path) -> Result<crate::report::Summary, Error> {
    let path = dir.join("summary.json");
    let text = crate::input::read_text(&path)?;
    let header: crate::report::SummaryHeader = serde_json::from_str(&text)
        .map_err(|e| InputError::json(&path.display().to_string(), &e))?;
    let (conf, prec) = (header.confidence, header.precision);
    crate::report::reaggregate(&dir.join("results.jsonl"), header, conf, prec)
}

/// The plan runs the baseline's cases with its trials per case: checked before any request, so
/// a baseline that cannot be compared is bad input (exit 2), not a run spent for nothing.
fn check_baseline_population(
    plan: &crate::runner::RunPlan,
    base: &crate::report::Summary,
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
fn judge_baseline(
    summary: &mut crate::report::Summary,
    baseline: Option<&(crate::report::Summary, crate::report::Metric)>,
    args: &GateArgs,
) -> Result<(), Error> {
    let Some((base, metric)) = baseline else {
        return Ok(());
    };
    summary.scenario_drift =
        crate::report::scenario::scenario_drift(&summary.scenarios, &base.scenarios);
    if summary.arms.is_empty() {
        // Only scenarios ran: their drift is the comparison; there is no case rate to gate.
        return Ok(());
    }
    let results = crate::decide::gate::baseline::baseline_gates(
        summary,
        base,
        *metric,
        args.margin,
        summary.confidence,
        args.intersect,
    )?;
    let mut gates = summary.gate.take().map(|g| g.gates).unwrap_or_default();
    gates.extend(results);
    summary.gate = Some(crate::decide::gate::report_of(gates, summary.confidence));
    Ok(())
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
    /// What to produce; repeatable: terminal (stdout), json (the summary on stdout), md
    /// (RUN_DIR/report.md), junit (RUN_DIR/junit.xml), html (RUN_DIR/report.html) [default:
    /// terminal].
    #[arg(long = "format", value_enum, value_name = "FORMAT")]
    pub formats: Vec<Format>,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// A gate to plan for, `METRIC>=T`; repeatable.
    #[arg(long = "gate", value_name = "METRIC>=T")]
    pub gates: Vec<String>,
    /// Target half-width of a case's interval [default: the config's, or 0.05].
    #[arg(long)]
    pub precision: Option<f64>,
    /// Confidence level [default: the config's, or 0.95].
    #[arg(long)]
    pub confidence: Option<f64>,
    /// Power a gate should have at the true rates planned for.
    #[arg(long, default_value_t = 0.8)]
    pub power: f64,
    /// An earlier run: its case rates, between-case spread and token usage replace the
    /// planning defaults.
    #[arg(long, value_name = "RUN_DIR")]
    pub from: Option<PathBuf>,
    /// The rate read from --from [default: the first gate's metric, or selection].
    #[arg(long)]
    pub metric: Option<String>,
    /// The most trials per case the sequential gate may use.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub max_trials: u32,
    /// Show each option in US dollars at this provider's price (a name from toolscore.yaml,
    /// or KIND:MODEL): the shipped price table or `prices:` in the config [default: the
    /// config's provider, when it has a price].
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Also write the plan as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// One run folder with two arms, or two run folders (A, then B).
    #[arg(required = true, num_args = 1..=2, value_name = "RUN_DIR")]
    pub run_dirs: Vec<PathBuf>,
    /// Which arm is A, then B: a variant, a provider, or PROVIDER/VARIANT [default: the two
    /// arms in plan order].
    #[arg(long = "arm", value_name = "NAME")]
    pub arms: Vec<String>,
    /// The rate compared: selection, args, schema or pass.
    #[arg(long, default_value = "selection")]
    pub metric: String,
    /// The smallest difference worth acting on: the verdict says whether one that large is
    /// ruled out, and how many cases would detect it.
    #[arg(long, default_value_t = 0.05)]
    pub min_effect: f64,
    /// Power for the number of cases that would detect --min-effect.
    #[arg(long, default_value_t = 0.8)]
    pub power: f64,
    /// Two-sided confidence level of every interval [default: the first run's].
    #[arg(long)]
    pub confidence: Option<f64>,
    /// Compare on the cases both arms share instead of refusing when they differ.
    #[arg(long)]
    pub intersect: bool,
    /// Also write the comparison as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The --out folder of the runs, holding history.jsonl.
    #[arg(long, default_value = "reports", value_name = "DIR")]
    pub dir: PathBuf,
    /// The rate followed: selection or pass.
    #[arg(long, default_value = "selection")]
    pub metric: String,
    /// Show only the newest N runs of each series (each still compared with the run before it).
    #[arg(long, value_name = "N")]
    pub last: Option<usize>,
    /// Exit 1 when the newest run of any series dropped significantly.
    #[arg(long)]
    pub fail_on_drop: bool,
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
    /// Dataset folder (tools.json + cases.jsonl); repeatable. With --dataset or --scenario,
    /// the flags name the whole suite (the config's lists are not used).
    #[arg(long = "dataset", value_name = "DIR")]
    pub datasets: Vec<PathBuf>,
    /// Multi-step scenario: a `scenarios/<name>.yaml` file or a folder of them; repeatable.
    #[arg(long = "scenario", value_name = "FILE|DIR")]
    pub scenarios: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// A provider named in the config, a kind (`openai-compat`) configured by the flags below,
    /// a kind and model as KIND:MODEL (`anthropic:claude-sonnet-4-5`, `gemini:gemini-2.5-flash`,
    /// `ollama:qwen3`), or `replay:CASSETTE` to serve recorded responses without calling any model. Repeat it to
    /// run several arms in one plan; each record names its arm.
    #[arg(long = "provider", value_name = "NAME")]
    pub providers: Vec<String>,
    /// Catalog variant to show the model: `base` (the dataset's tools.json) or an overlay
    /// `DATASET/variants/NAME.json`. Repeat it to run one arm per variant on the same cases,
    /// interleaved trial by trial, for `toolscore compare` [default: base].
    #[arg(long = "variant", value_name = "NAME")]
    pub variants: Vec<String>,
    /// Record every raw response to this cassette (`.gz` = compressed) for later replay.
    #[arg(long, value_name = "CASSETTE")]
    pub record: Option<PathBuf>,
    /// With --record: what the recording is (model build, server), shown whenever it is replayed.
    #[arg(long, value_name = "TEXT", requires = "record")]
    pub record_note: Option<String>,
    /// With --record: overwrite the cassette if the file exists.
    #[arg(long, requires = "record")]
    pub force: bool,
    /// Base URL of the provider's API, replacing its kind's default or the config's (a proxy, a
    /// gateway, a local server), e.g. http://127.0.0.1:8080/v1.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Model name sent to the provider.
    #[arg(long)]
    pub model: Option<String>,
    /// Environment variable that holds the API key (the key itself is never a flag) [default:
    /// the kind's own: ANTHROPIC_API_KEY, OPENAI_API_KEY for openai-responses, GEMINI_API_KEY,
    /// AZURE_OPENAI_API_KEY; none for openai-compat and ollama].
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Trials per case [default: the config's `trials`, else 50; a replay runs the trials its
    /// cassette holds per case].
    #[arg(long)]
    pub trials: Option<u32>,
    /// With --sequential: the most trials a case may use before it is called inconclusive (the
    /// plan's trials per case) [default: 200].
    #[arg(
        long,
        value_name = "N",
        requires = "sequential",
        conflicts_with = "trials"
    )]
    pub max_trials: Option<u32>,
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
    /// Requests to each provider in flight at once, over all its arms (also `max_in_flight:` in
    /// the config) [default: only --concurrency limits them].
    #[arg(long, value_name = "N")]
    pub max_in_flight: Option<usize>,
    /// Requests started per minute to each provider, evenly spaced (also
    /// `requests_per_minute:` in the config) [default: no limit].
    #[arg(long, value_name = "N")]
    pub requests_per_minute: Option<u32>,
    /// Tokens sent to each provider per minute: each request is charged its body's characters
    /// / 4 plus its max tokens before it is sent (also `tokens_per_minute:` in the config)
    /// [default: no limit].
    #[arg(long, value_name = "N")]
    pub tokens_per_minute: Option<u32>,
    /// Send `tool_choice` (also `tool_choice:` in the config): auto, required or none, in each
    /// provider's own form [default: not sent, the provider's default applies].
    #[arg(long, value_enum, value_name = "CHOICE")]
    pub tool_choice: Option<crate::provider::ToolChoice>,
    /// Send `parallel_tool_calls` (also `parallel_tool_calls:` in the config; Anthropic's
    /// `disable_parallel_tool_use`) [default: not sent].
    #[arg(long, value_name = "BOOL")]
    pub parallel_tool_calls: Option<bool>,
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
    /// Refuse to start a run whose estimated cost (printed before the first request) is over
    /// USD, and stop starting trials once spend plus the trials in flight would pass it: the
    /// rest are reported as not run (budget), never as failures. Every arm needs a price (the
    /// shipped table or `prices:` in toolscore.yaml).
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
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
    /// With exactly two arms (e.g. --variant base --variant terse): compare them paired by case
    /// when the run ends, print it after the report and keep it in summary.json, as `toolscore
    /// compare` would (selection, --min-effect 0.05).
    #[arg(long)]
    pub compare: bool,
    /// Run one deterministic slice of the plan, `INDEX/COUNT` counted from 0 (`0/4` … `3/4`):
    /// each trial belongs to the shard its key (arm, dataset, case, trial) hashes to, so the
    /// slices are balanced and stay put when cases are added. `auto` reads the index from
    /// JOB_COMPLETION_INDEX (Kubernetes Indexed Jobs) and the count from --shard-count. Join
    /// the shards' run folders with `toolscore merge`. Not with --sequential, --gate,
    /// --baseline, --compare or --record: those need the whole plan.
    #[arg(long, value_name = "INDEX/COUNT|auto")]
    pub shard: Option<String>,
    /// Send the trials through the providers' batch APIs (OpenAI Batch for openai-compat and
    /// openai-responses, Anthropic Message Batches, Gemini batch mode) at their batch price:
    /// submitted at once, polled (progress on stderr), then scored and reported like any run.
    /// The batch ids are kept in RUN_DIR/batches.json, so a run killed while polling is picked
    /// up with --resume without submitting again. Single-step fixtures only; no latency is
    /// measured.
    #[arg(long)]
    pub batch: bool,
    /// With --batch: the wait between two polls of a running batch (`30s`, `2m`, `500ms`)
    /// [default: 30s].
    #[arg(long, value_name = "DURATION")]
    pub batch_poll: Option<String>,
    /// With --shard auto: how many shards the plan is split into (the Job's `completions`).
    #[arg(long, value_name = "N", requires = "shard")]
    pub shard_count: Option<u32>,
    /// What to produce; repeatable: terminal (stdout), json (summary.json), csv
    /// (results.csv), md (RUN_DIR/report.md), junit (RUN_DIR/junit.xml), html
    /// (RUN_DIR/report.html) [default: terminal,
    /// json, csv]. summary.json and results.csv are written whatever is chosen: they are the
    /// run's record, which `report`, `--resume` and `--baseline` read.
    #[arg(long = "format", value_enum, value_name = "FORMAT")]
    pub formats: Vec<Format>,
}

/// Runs the parsed command and returns the process exit code.
pub fn run(cli: Cli) -> Result<ExitCode, Error> {
    match cli.command {
        Command::Validate(args) => {
            let suite = load_suite(&args)?;
            for d in &suite.datasets {
                println!(
                    "{}: {} tools, {} cases, catalog {}",
                    d.dir.display(),
                    d.catalog.tools.len(),
                    d.cases.len(),
                    d.catalog.fingerprint
                );
                if let Some(live) = &d.live {
                    println!("  listed live from {}: {}", live.source, live.server);
                }
                for v in d.variants.iter().filter(|v| v.file.is_some()) {
                    println!(
                        "  variant {}: {}, catalog {}{}",
                        v.name,
                        v.file.as_deref().unwrap_or_default(),
                        v.catalog.fingerprint,
                        v.note
                            .as_deref()
                            .map_or(String::new(), |n| format!(" ({n})"))
                    );
                }
            }
            for s in &suite.scenarios {
                let rules: usize = s.script.tools.values().map(Vec::len).sum();
                println!(
                    "{}: scenario {}, {} scripted tool{} ({rules} rule{}), max {} steps, expects {}, catalog {}",
                    s.file.display(),
                    s.name,
                    s.script.tools.len(),
                    if s.script.tools.len() == 1 { "" } else { "s" },
                    if rules == 1 { "" } else { "s" },
                    s.max_steps,
                    s.expect.label(),
                    s.catalogs[0].catalog.fingerprint
                );
                if !s.result_variants.is_empty() {
                    println!("  result variants: {}", s.result_variants.join(", "));
                }
            }
            Ok(ExitCode::Pass)
        }
        Command::Report(args) => report_command(&args),
        Command::Lint(args) => lint::lint_command(&args),
        Command::Merge(args) => merge::run(&args),
        Command::Compare(args) => compare_command(&args),
        Command::Plan(args) => plan_command(&args),
        Command::History(args) => history_command(&args),
        Command::Catalog(args) => catalog::run(&args),
        Command::Probe(args) => probe::run(&args),
        Command::Stress(args) => stress::run(&args),
        Command::Import(command) => import::run(&command),
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
            let baseline = args.gate.load_baseline()?;
            let gate_args = args.gate.clone();
            let compare = args.compare;
            let formats = output::chosen(
                &args.formats,
                &[Format::Terminal, Format::Json, Format::Csv],
            );
            let setup = build_plan(args, &|name| std::env::var(name).ok())?;
            if let Some((base, _)) = &baseline
                && !gate_args.intersect
            {
                check_baseline_population(&setup.plan, base)?;
            }
            if compare && setup.plan.arms.len() != 2 {
                return Err(usage(&format!(
                    "--compare needs exactly two arms (two --variant or two --provider); this run has {}",
                    setup.plan.arms.len()
                )));
            }
            run_command(
                setup,
                max_infra,
                baseline.as_ref(),
                &gate_args,
                compare,
                &formats,
            )
        }
    }
}

/// Runs a validated setup: composes the sinks as observers of the run, aggregates, writes
/// `summary.json`, prints the report and decides the exit code.
fn run_command(
    setup: RunSetup,
    max_infra: f64,
    baseline: Option<&(crate::report::Summary, crate::report::Metric)>,
    gate_args: &GateArgs,
    compare: bool,
    formats: &[Format],
) -> Result<ExitCode, Error> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::io("cannot start the async runtime", e))?;
    let started = std::time::SystemTime::now();
    let mut run = setup.run_info(started);
    let mut setup = setup;
    if setup.resume && setup.plan.batch.is_none() {
        let state_file = setup.out_dir.join(crate::runner::batch::STATE_FILE);
        let running = crate::runner::batch::uncollected(&state_file)?;
        if !running.is_empty() {
            // Running them again one request at a time would pay for them twice.
            return Err(usage(&format!(
                "--resume {}: its batches {} were submitted and not collected yet; resume with --batch to poll and collect them",
                setup.out_dir.display(),
                running.join(", ")
            )));
        }
    }
    let resumed = if setup.resume {
        let r = resume::prepare(&mut setup)?;
        eprintln!("{}", r.describe());
        Some(r)
    } else {
        None
    };
    // Priced before the first request and before any file: a cap the estimate passes is bad
    // input (exit 2), and nothing is written.
    let estimate = crate::runner::budget::estimate(&setup.plan);
    let max_cost = setup.plan.max_cost;
    let show_cost = max_cost.is_some() || estimate.arms.iter().any(|a| a.usd.is_some());
    if show_cost {
        eprintln!("{}", cost::describe_estimate(&estimate));
    }
    if let (Some(max), Some(usd)) = (max_cost, estimate.usd)
        && usd > max
    {
        return Err(usage(&format!(
            "the estimated cost {} of {} trials is over --max-cost {}; lower --trials, run fewer cases or providers, or raise the cap",
            crate::report::format_usd(usd),
            estimate.trials,
            crate::report::format_usd(max)
        )));
    }
    let mut sinks = setup.sinks(started)?;
    let catalogs = lint::run_catalogs(&setup.plan);
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
    if show_cost {
        summary.budget = Some(cost::budget_report(
            &estimate,
            max_cost,
            totals.budget_not_run,
        ));
    }
    if totals.budget_not_run > 0 {
        eprintln!(
            "budget: --max-cost {} reached ({} spent); {} planned trials were not run (not counted as failures)",
            crate::report::format_usd(max_cost.unwrap_or_default()),
            crate::report::format_usd(summary.cost.total.usd.unwrap_or_default()),
            totals.budget_not_run
        );
    }
    if let Some(sequential) = &sinks.sequential {
        summary.gate = Some(crate::decide::gate::report_of(
            sequential.results(),
            setup.confidence,
        ));
    } else if !setup.gates.is_empty() {
        summary.gate = Some(crate::decide::gate::evaluate(
            &summary,
            &latency,
            &setup.gates,
            setup.gate_level,
        ));
    }
    if let Err(e) = judge_baseline(&mut summary, baseline, gate_args) {
        // The run happened and is on disk; a baseline it cannot be compared with is reported,
        // and the verdict is left inconclusive rather than losing the summary.
        eprintln!("error: {e}");
        let gates = summary.gate.take().map(|g| g.gates).unwrap_or_default();
        summary.gate = Some(crate::report::GateReport {
            verdict: crate::report::Verdict::Inconclusive,
            confidence: summary.confidence,
            gates,
        });
    }
    if compare {
        compare_two_arms(&mut summary);
    }
    if !sinks.provider_stops.stops().is_empty() {
        eprintln!(
            "{} planned trials were not run (skipped, not counted as failures)",
            totals.skipped_trials
        );
    }
    crate::report::write_json_atomically(&setup.out_dir.join("summary.json"), &summary)?;
    let (code, message) = run_exit_code(&summary, max_infra);
    // A provider stopped by an auth or quota error left its arm without figures: the run
    // cannot be judged as a whole, whatever the other arms scored.
    let (code, message) = match (code, sinks.provider_stops.stops()) {
        (ExitCode::Interrupted | ExitCode::InfraErrors, _) | (_, []) => (code, message),
        (_, stops) => (
            ExitCode::InfraErrors,
            Some(format!(
                "{} stopped by auth or quota errors; their remaining trials were not run",
                stops
                    .iter()
                    .map(|s| format!("provider `{}` ({})", s.provider, s.class))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        ),
    };
    let untrusted = (code == ExitCode::InfraErrors)
        .then_some(message.as_deref())
        .flatten();
    append_history(&setup.out_dir, &summary, untrusted)?;
    let files = output::write_files(&summary, &setup.out_dir, formats)?;
    if formats.contains(&Format::Terminal) {
        let mut out = std::io::stdout().lock();
        crate::report::render_terminal(&summary, &mut out)
            .map_err(|e| Error::io("cannot write the report", e))?;
        if let Some(c) = &summary.comparison {
            writeln!(out).map_err(|e| Error::io("cannot write the report", e))?;
            crate::report::render_comparison(c, &mut out)
                .map_err(|e| Error::io("cannot write the comparison", e))?;
        }
        println!();
        let lints = lint::lint_run_catalogs(&catalogs, &setup.lint);
        lint::print_beside_weakest(&summary, &lints, &setup.out_dir, &mut out)
            .map_err(|e| Error::io("cannot write the report", e))?;
    }
    let mut written = vec![
        setup.out_dir.join("results.jsonl"),
        setup.out_dir.join("results.csv"),
        setup.out_dir.join("summary.json"),
    ];
    written.extend(files);
    let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    let line = match names.split_last() {
        Some((last, rest)) => format!("wrote {} and {last}", rest.join(", ")),
        None => String::new(),
    };
    // On stdout under the terminal report, as before; on stderr when stdout carries no report.
    if formats.contains(&Format::Terminal) {
        println!("{line}");
    } else {
        eprintln!("{line}");
    }
    if let Some(message) = message {
        eprintln!("error: {message}");
    }
    Ok(code)
}

/// `--compare`: the run's two arms compared as `toolscore compare` does with its defaults,
/// kept in the summary. A comparison that cannot be made is reported, not fatal: the run
/// happened and is on disk.
fn compare_two_arms(summary: &mut crate::report::Summary) {
    if summary.arms.len() != 2 {
        return;
    }
    let side = |arm| crate::decide::compare::Side {
        summary: &*summary,
        arm,
    };
    match crate::decide::compare::compare(
        side(0),
        side(1),
        crate::decide::compare::CompareOptions {
            metric: crate::report::Metric::Selection,
            confidence: summary.confidence,
            min_effect: 0.05,
            power: 0.8,
            intersect: false,
            holdout_apart: true,
        },
    ) {
        Ok(c) => summary.comparison = Some(c),
        Err(e) => eprintln!("error: --compare: {e}"),
    }
}

/// Appends the run's arms to `history.jsonl` in its --out folder (the parent of the run's
/// folder), after summary.json so a line never names a run whose summary is missing. An
/// interrupted run is left out: its cases ran fewer trials than planned and its next,
/// resumed, finish appends the whole run. Not named in the "wrote" line: it is the folder's
/// running log, not one of the run's files. `untrusted` is why the run exits 4, when it
/// does: its lines are kept, marked, and left out of every trend.
pub(super) fn append_history(
    run_dir: &Path,
    summary: &crate::report::Summary,
    untrusted: Option<&str>,
) -> Result<(), Error> {
    // A shard is a slice of a run: the merged run is the one that enters the history.
    if summary.interrupted || summary.run.shard.is_some() {
        return Ok(());
    }
    let path = run_dir
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join(crate::report::history::FILE_NAME);
    crate::report::history::append(&path, &crate::report::history::lines_of(summary, untrusted))
        .map_err(|e| Error::io(format!("cannot append to {}", path.display()), e))
}

/// Reads DIR/history.jsonl and prints every series with its moves. Exit 1 with --fail-on-drop
/// when the newest run of a series dropped significantly, else 0.
fn history_command(args: &HistoryArgs) -> Result<ExitCode, Error> {
    let metric = match args.metric.as_str() {
        "selection" => crate::report::Metric::Selection,
        "pass" => crate::report::Metric::Pass,
        other => {
            return Err(usage(&format!(
                "--metric {other}: history follows selection or pass"
            )));
        }
    };
    if args.last == Some(0) {
        return Err(usage("--last must be at least 1"));
    }
    let path = args.dir.join(crate::report::history::FILE_NAME);
    if !path.is_file() {
        return Err(usage(&format!(
            "{}: no history yet; every `toolscore run --out {}` appends to it",
            path.display(),
            args.dir.display()
        )));
    }
    let text = crate::input::read_text(&path)?;
    let lines = crate::report::history::parse(&text, &path.display().to_string())?;
    let series = crate::report::history::series(lines, metric);
    let mut out = std::io::stdout().lock();
    crate::report::history::render(&series, metric, args.last, &mut out)
        .map_err(|e| Error::io("cannot write the history", e))?;
    let dropped = series
        .iter()
        .any(crate::report::history::Series::newest_dropped);
    Ok(if dropped && args.fail_on_drop {
        ExitCode::GateFailed
    } else {
        ExitCode::Pass
    })
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
    // Scenario trials lost to infrastructure errors count like any trial's: a run whose
    // scenarios all failed cannot be trusted because its datasets (if any) went well.
    let scenario_errors: u64 = summary
        .scenarios
        .iter()
        .flat_map(|a| &a.scenarios)
        .flat_map(|s| s.errors.values())
        .sum();
    let errors: u64 = summary.arms.iter().map(|a| a.infra.errors).sum::<u64>() + scenario_errors;
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
    let formats = output::chosen(&args.formats, &[Format::Terminal]);
    if formats.contains(&Format::Csv) {
        return Err(usage(
            "--format csv: results.csv is written by `run`; `report` changes no record",
        ));
    }
    if formats.contains(&Format::Terminal) && formats.contains(&Format::Json) {
        return Err(usage(
            "--format terminal and --format json both print to stdout; choose one",
        ));
    }
    let summary_path = args.run_dir.join("summary.json");
    let results_path = args.run_dir.join("results.jsonl");
    let text = crate::input::read_text(&summary_path)?;
    let header: crate::report::SummaryHeader = serde_json::from_str(&text)
        .map_err(|e| InputError::json(&summary_path.display().to_string(), &e))?;
    let confidence = setup::checked_confidence(args.confidence.unwrap_or(header.confidence))?;
    let precision = setup::checked_precision(args.precision.unwrap_or(header.precision))?;
    let judging = judging_of(args, &header)?;
    let compared = header.compared();
    let mut rescorer = rescore::Rescorer::for_run(&header.run);
    let (mut summary, latency) = crate::report::reaggregate_rescored(
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
            println!("{notice}");
        } else {
            eprintln!("{notice}");
        }
    }
    let gates = judging.specs;
    if judging.sequential {
        let spec = crate::decide::gate::sequential::SequentialSpec {
            gates,
            confidence,
            p1: judging.sprt_p1,
            max_trials: summary.run.trials_per_case,
        };
        let mut gate = setup::sequential_gate(spec, &summary.run)?;
        crate::report::for_each_record_mut(&results_path, &mut |r| {
            if let Some(rs) = &mut rescorer {
                rs.apply(r);
            }
            gate.push(r);
        })?;
        summary.gate = Some(crate::decide::gate::report_of(gate.results(), confidence));
    } else if !gates.is_empty() {
        summary.gate = Some(crate::decide::gate::evaluate(
            &summary,
            &latency,
            &gates,
            judging.level,
        ));
    }
    if !judging.kept_baseline.is_empty() {
        let mut results = summary.gate.take().map(|g| g.gates).unwrap_or_default();
        results.extend(judging.kept_baseline);
        summary.gate = Some(crate::decide::gate::report_of(results, confidence));
    }
    let baseline = args.gate.load_baseline()?;
    judge_baseline(&mut summary, baseline.as_ref(), &args.gate)?;
    if compared {
        compare_two_arms(&mut summary);
    }
    for path in output::write_files(&summary, &args.run_dir, &formats)? {
        eprintln!("wrote {}", path.display());
    }
    if formats.contains(&Format::Json) {
        let text = serde_json::to_string_pretty(&summary)
            .map_err(|e| Error::Fatal(format!("cannot encode the summary: {e}")))?;
        println!("{text}");
    } else if formats.contains(&Format::Terminal) {
        let mut out = std::io::stdout().lock();
        crate::report::render_terminal(&summary, &mut out)
            .map_err(|e| Error::io("cannot write the report", e))?;
    }
    Ok(gate_exit_code(&summary))
}

/// How `report` judges a run: by the flags when any gate flag is given, else by the gates the
/// run recorded (so a re-render keeps the verdict).
struct Judging {
    specs: Vec<GateSpec>,
    level: GateLevel,
    sequential: bool,
    sprt_p1: Option<f64>,
    /// Baseline results the run recorded, kept as judged (the baseline run is not re-read).
    kept_baseline: Vec<crate::report::GateResult>,
}

fn judging_of(args: &ReportArgs, header: &crate::report::SummaryHeader) -> Result<Judging, Error> {
    let flags_given = !args.gate.gates.is_empty() || args.gate.baseline.is_some();
    match header.gate() {
        Some(report) if !flags_given => {
            let r = crate::decide::gate::recorded::recorded(&report);
            eprintln!(
                "report: judged again by the run's own gates ({}); give --gate to judge by others",
                r.as_flags()
            );
            Ok(Judging {
                specs: r.specs,
                level: r.level,
                sequential: r.sequential_p1.is_some(),
                sprt_p1: r.sequential_p1,
                kept_baseline: r.baseline,
            })
        }
        _ => Ok(Judging {
            specs: parse_gates(&args.gate.gates)?,
            level: args.gate.gate_level,
            sequential: args.gate.sequential,
            sprt_p1: args.gate.sprt_p1,
            kept_baseline: Vec::new(),
        }),
    }
}

/// Re-aggregates each run from its files, compares the chosen arms and prints the comparison.
/// Exit 0 when the data decide (better, worse or no difference as large as --min-effect), 3
/// when they do not yet.
fn compare_command(args: &CompareArgs) -> Result<ExitCode, Error> {
    let metric = crate::decide::gate::parse_metric(&args.metric).ok_or_else(|| {
        usage(&format!(
            "--metric {}: expected selection, args, schema or pass",
            args.metric
        ))
    })?;
    if !(args.min_effect > 0.0 && args.min_effect < 1.0) {
        return Err(usage("--min-effect must be between 0 and 1 (e.g. 0.05)"));
    }
    if !(args.power > 0.5 && args.power < 1.0) {
        return Err(usage("--power must be between 0.5 and 1 (e.g. 0.8)"));
    }
    let mut summaries = Vec::with_capacity(args.run_dirs.len());
    for dir in &args.run_dirs {
        summaries.push(load_run(dir)?);
    }
    let confidence = setup::checked_confidence(args.confidence.unwrap_or(summaries[0].confidence))?;
    let (a, b) = crate::decide::compare::choose_arms(&summaries, &args.arms)?;
    let comparison = crate::decide::compare::compare(
        a,
        b,
        crate::decide::compare::CompareOptions {
            metric,
            confidence,
            min_effect: args.min_effect,
            power: args.power,
            intersect: args.intersect,
            holdout_apart: true,
        },
    )?;
    if let Some(path) = &args.json {
        crate::report::write_json_atomically(path, &comparison)?;
    }
    let mut out = std::io::stdout().lock();
    crate::report::render_comparison(&comparison, &mut out)
        .map_err(|e| Error::io("cannot write the comparison", e))?;
    Ok(if comparison.overall().decided() {
        ExitCode::Pass
    } else {
        ExitCode::Inconclusive
    })
}

/// Prints how many trials and cases each option needs, and what it costs in requests and
/// tokens. Reads the suite (and an earlier run) only; calls nothing.
fn plan_command(args: &PlanArgs) -> Result<ExitCode, Error> {
    let gates = parse_gates(&args.gates)?;
    if let Some(g) = gates.iter().find(|g| g.metric.rate().is_none()) {
        return Err(usage(&format!(
            "--gate {}: plan covers rate gates (selection, args, schema, pass); a latency budget needs the trials its percentile's upper bound needs (368 answered trials for p99 at 95%)",
            g.metric.label()
        )));
    }
    let LoadedSuite {
        config, datasets, ..
    } = load_suite(&args.suite)?;
    let d = &config.defaults;
    let confidence = setup::checked_confidence(args.confidence.or(d.confidence).unwrap_or(0.95))?;
    let precision = setup::checked_precision(args.precision.or(d.precision).unwrap_or(0.05))?;
    if !(args.power > 0.5 && args.power < 1.0) {
        return Err(usage("--power must be between 0.5 and 1 (e.g. 0.8)"));
    }
    if args.max_trials == 0 {
        return Err(usage("--max-trials must be at least 1"));
    }
    let metric = match &args.metric {
        Some(m) => crate::decide::gate::parse_metric(m).ok_or_else(|| {
            usage(&format!(
                "--metric {m}: expected selection, args, schema or pass"
            ))
        })?,
        None => gates
            .first()
            .and_then(|g| g.metric.rate())
            .unwrap_or(crate::report::Metric::Selection),
    };
    let cases: usize = datasets.iter().map(|d| d.cases.len()).sum();
    let mut observed_case_rates = Vec::new();
    let mut observed_suite = None;
    let tokens = match &args.from {
        Some(dir) => {
            let text = crate::input::read_text(&dir.join("summary.json"))?;
            let header: crate::report::SummaryHeader =
                serde_json::from_str(&text).map_err(|e| {
                    InputError::json(&dir.join("summary.json").display().to_string(), &e)
                })?;
            let summary = crate::report::reaggregate(
                &dir.join("results.jsonl"),
                header,
                confidence,
                precision,
            )?;
            let arm = summary
                .arms
                .first()
                .ok_or_else(|| usage(&format!("--from {}: the run has no arms", dir.display())))?;
            let rate = |c: &crate::report::CaseSummary| {
                let s = c.metrics.get(metric);
                (s.n > 0).then(|| s.x as f64 / s.n as f64)
            };
            observed_case_rates = arm.cases.iter().filter_map(rate).collect();
            observed_suite = arm.suite.metrics.get(metric).case_level;
            crate::decide::sample_size::TokenBasis {
                source: format!("run {}", summary.run.run_id),
                input_per_request: arm.tokens.input_mean.unwrap_or(0.0),
                output_per_request: arm.tokens.output_mean,
            }
        }
        None => fixture_tokens(&datasets),
    };
    let trial_plan = crate::decide::sample_size::plan(&crate::decide::sample_size::PlanRequest {
        confidence,
        precision,
        power: args.power,
        gates: gates
            .iter()
            .map(|g| (g.metric.label().replace(' ', "_"), g.threshold))
            .collect(),
        cases,
        observed_case_rates,
        observed_suite,
        tokens,
        max_trials: args.max_trials,
        price: setup::plan_price(args.provider.as_deref(), &config)?,
    });
    if let Some(path) = &args.json {
        crate::report::write_json_atomically(path, &trial_plan)?;
    }
    let mut out = std::io::stdout().lock();
    crate::decide::sample_size::render_plan(&trial_plan, &mut out)
        .map_err(|e| Error::io("cannot write the plan", e))?;
    Ok(ExitCode::Pass)
}

/// Input tokens per request estimated from what the model reads: the catalog and a case's
/// messages, at about 4 characters a token (the usual figure for English with BPE tokenizers;
/// an earlier run's measured usage, `--from`, replaces it).
fn fixture_tokens(datasets: &[Dataset]) -> crate::decide::sample_size::TokenBasis {
    let mut chars = 0usize;
    let mut requests = 0usize;
    for d in datasets {
        let catalog = serde_json::to_string(&d.catalog.tools).map_or(0, |s| s.len());
        for c in &d.cases {
            let messages = serde_json::to_string(&c.messages).map_or(0, |s| s.len());
            chars += catalog + messages;
            requests += 1;
        }
    }
    crate::decide::sample_size::TokenBasis {
        source: "fixtures (characters / 4)".to_owned(),
        input_per_request: chars as f64 / requests.max(1) as f64 / 4.0,
        output_per_request: None,
    }
}

/// Every `--gate`, parsed before any work.
pub(crate) fn parse_gates(texts: &[String]) -> Result<Vec<GateSpec>, Error> {
    texts
        .iter()
        .map(|t| GateSpec::parse(t).map_err(Error::from))
        .collect()
}

/// 0 pass (or no gate), 1 fail, 3 inconclusive.
///
/// The run's decision: the worst of its gate verdict and, with `--compare`, its comparison's
/// overall verdict (`Comparison::overall`: decided counts as a pass, undecided as
/// inconclusive), so `run --compare` and `compare` on the same folder exit alike.
fn gate_exit_code(summary: &crate::report::Summary) -> ExitCode {
    use crate::report::Verdict;
    let comparison = summary.comparison.as_ref().map(|c| {
        if c.overall().decided() {
            Verdict::Pass
        } else {
            Verdict::Inconclusive
        }
    });
    let gate = summary.gate.as_ref().map(|g| g.verdict);
    match gate.into_iter().chain(comparison).max() {
        None | Some(Verdict::Pass) => ExitCode::Pass,
        Some(Verdict::Fail) => ExitCode::GateFailed,
        Some(Verdict::Inconclusive) => ExitCode::Inconclusive,
    }
}

pub(crate) fn usage(msg: &str) -> Error {
    Error::Input(InputError::new(msg))
}

/// `--timeout` (or a config's `timeout_s`) in seconds, checked by the one rule every command
/// and config file shares ([`crate::input::timeout_from_seconds`]).
pub(crate) fn checked_timeout(seconds: f64) -> Result<std::time::Duration, Error> {
    crate::input::timeout_from_seconds(seconds).ok_or_else(|| {
        usage(&format!(
            "--timeout must be {} (got {seconds:?})",
            crate::input::TIMEOUT_RANGE
        ))
    })
}

/// Loads the config (if any) and every dataset, fully validated.
pub(crate) fn load_suite(args: &SuiteArgs) -> Result<LoadedSuite, Error> {
    let config = match &args.config {
        Some(path) => load_config(path)?,
        None if Path::new("toolscore.yaml").is_file() => load_config(Path::new("toolscore.yaml"))?,
        None => Config::default(),
    };
    // Flags name the whole suite; without them, the config's lists do.
    let (dirs, scenario_paths) = if args.datasets.is_empty() && args.scenarios.is_empty() {
        (config.datasets.clone(), config.scenarios.clone())
    } else {
        (args.datasets.clone(), args.scenarios.clone())
    };
    if dirs.is_empty() && scenario_paths.is_empty() {
        return Err(usage(
            "no dataset: pass --dataset DIR (or --scenario FILE) or list `datasets` in toolscore.yaml",
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
    let mut scenarios: Vec<std::sync::Arc<Scenario>> = Vec::new();
    for path in &scenario_paths {
        for s in load_scenarios(path)? {
            if let Some(other) = scenarios.iter().find(|o| o.name == s.name) {
                return Err(usage(&format!(
                    "two scenarios are named `{}` ({} and {}); scenario file names must differ",
                    s.name,
                    other.file.display(),
                    s.file.display()
                )));
            }
            scenarios.push(std::sync::Arc::new(s));
        }
    }
    Ok(LoadedSuite {
        config,
        datasets,
        scenarios,
    })
}

/// What a command runs on: the config, its datasets and its scenarios, all validated.
pub(crate) struct LoadedSuite {
    pub config: Config,
    pub datasets: Vec<Dataset>,
    pub scenarios: Vec<std::sync::Arc<Scenario>>,
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
            comparison: None,
            scenarios: Vec::new(),
            scenario_drift: Vec::new(),
            provider_diffs: Vec::new(),
            cost: Default::default(),
            budget: None,
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
