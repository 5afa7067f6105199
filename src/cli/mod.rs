//! Command line: clap definitions, turning raw flags and the config into a validated
//! `RunPlan` before any work starts, and mapping outcomes to exit codes.

use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};

#[macro_use]
mod say;

mod attacks;
mod cassette;
mod catalog;
mod compare;
mod cost;
mod error;
mod explain;
mod gate;
mod help;
mod history;
mod import;
mod init;
mod interrupt;
mod lint;
mod lock;
mod mcp_source;
mod merge;
mod models;
mod output;
mod plan;
mod probe;
mod project;
mod report;
mod rescore;
mod resume;
mod run;
mod setup;
mod shown;
mod stress;
mod tune;
mod validate;

pub use output::Format;

pub use setup::{Recording, RunSetup, Sinks, build_plan};

pub use error::{Error, LocalServerDown};
use toolscore_core::{ExitCode, InputError};
use toolscore_suite::{Config, Dataset, load_config, load_dataset};
use toolscore_suite::{Scenario, load_scenarios};

const EXIT_CODES_HELP: &str = "Exit codes:
  0    completed, and every gate passed
  1    a gate (or --baseline) failed; a regression (history --fail-on-drop,
       catalog diff); a check failed (lint, probe, stress, lock --check)
  2    bad input or usage: nothing was run
  3    inconclusive: not enough evidence yet to pass or fail a gate, or to
       decide a comparison
  4    too many infrastructure errors to judge (--max-infra-error-rate), or
       trials lost
  130  interrupted (Ctrl-C, SIGTERM): the summary of completed trials is written
  141  the output's reader stopped reading (`| head`): stopped quietly

`toolscore help COMMAND` shows a command's flags in full;
guides and reference: docs/README.md";

/// Score tool-calling models and MCP servers, every rate with its interval
///
/// Replay tool-calling fixtures against a model many times and report every rate with its
/// confidence interval; check MCP servers with no model (catalog, lint, probe, stress).
#[derive(Debug, Parser)]
#[command(name = "toolscore", version = version_text(), after_help = EXIT_CODES_HELP, max_term_width = 80)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// `toolscore --version`: the version, and the model map built in (prices and what a model
/// accepts come from it).
fn version_text() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        let (map, taken) = toolscore_provider::snapshot_version();
        format!(
            "{} (model map: LiteLLM {map} of {taken})",
            env!("CARGO_PKG_VERSION")
        )
    })
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start a dataset from an MCP server or tool list, a case per tool
    ///
    /// From a live MCP server (a URL, or its command after `--`), an OpenAI- or Anthropic-style
    /// tool list, or a tools.json: writes DIR/NAME/tools.json (or, with --live, a dataset.yaml
    /// naming the server) and a cases.jsonl with one starter case per tool to edit, loads it
    /// back as `validate` does, writes a toolscore.yaml when there is none, and prints the next
    /// three commands. An existing dataset is left alone, or with --force refreshed: its
    /// catalog replaced, its cases kept, those that do not fit reported.
    Init(init::InitArgs),
    /// Run every case N times against a provider and report
    ///
    /// Every case of the datasets and scenarios, N trials each, concurrently; every rate is
    /// reported with its interval and count, infrastructure errors apart, and --gate judges
    /// the run.
    Run(run::RunArgs),
    /// Check config, catalogs and fixtures without calling any model
    Validate(SuiteArgs),
    /// Pin what the model reads of every catalog in toolscore.lock
    ///
    /// Every dataset and scenario of the config, their variants, and the server each live
    /// catalog came from: written beside the config. Once it exists, `validate`, `run`, `plan`,
    /// `tune` and `lint` (of a dataset the config lists) refuse (exit 2) a catalog that differs,
    /// showing the diff of the words, before any model is called. A lock that differs is left
    /// alone (exit 2) unless --update accepts the change; --check only tells (exit 1), for CI.
    /// No secret is written: no command line, URL, header or environment value.
    Lock(lock::LockArgs),
    /// Report a finished run again from its results.jsonl
    ///
    /// The run is re-aggregated from its records (at another --confidence if asked, and
    /// judged by any --gate); no model is called, and nothing is written unless --format md,
    /// junit or html asks for a file.
    Report(report::ReportArgs),
    /// Compare two arms paired by case, with a verdict and its interval
    ///
    /// Two arms of one run (`--variant base --variant terse`), or one arm of each of two runs:
    /// which scores higher, with an interval, case by case and for the suite; cases tagged
    /// `holdout` only in aggregate. Nothing is called or written (unless --json).
    Compare(compare::CompareArgs),
    /// What the trials of one case did, beside what the model read
    ///
    /// The case's conversation and catalog exactly as the arm's model read them, then its
    /// trials grouped into behaviours (the calls made, normalised), each with its share and
    /// interval and one example of the model's own words; with --against RUN_DIR or a second
    /// --arm, how the behaviours moved between two arms. Reads the run's files only.
    Explain(explain::ExplainArgs),
    /// Improve descriptions from their trials; confirm on held-out cases
    ///
    /// Diagnoses the base wording on the training cases (confusions, argument failures,
    /// lint; with --scenario, repeated calls and missed recoveries), proposes small explained
    /// edits, races them against the base with sequential paired comparisons, confirms the
    /// winner on held-out cases it never saw, and writes DATASET/variants/tuned-DATE.json only
    /// when they say it is better.
    Tune(tune::TuneArgs),
    /// Trials and cases a precision or a gate needs, and what they cost
    ///
    /// Before spending anything: trials per case for a precision or a gate (fixed and
    /// sequential), cases for a suite-level claim, and the requests, tokens and dollars of
    /// each option.
    Plan(plan::PlanArgs),
    /// The trend of each series of runs, with significant drops flagged
    ///
    /// A series is the runs of the same datasets, provider, model and variant in
    /// DIR/history.jsonl, which every `run` appends to: each run's case-level score, and against
    /// the previous run the paired difference, flagged only when its interval excludes 0.
    History(history::HistoryArgs),
    /// Check a catalog offline: names, descriptions, schemas, injection
    ///
    /// Before any model reads it: names, descriptions, schemas, provider compatibility, token
    /// footprint and injection payloads. Local, offline, deterministic. Exit 1 when any
    /// error-level finding remains, 0 otherwise, 2 on bad input.
    Lint(lint::LintArgs),
    /// Join the run folders of `run --shard i/n` into one run
    ///
    /// One run folder (results.jsonl, results.csv, summary.json re-aggregated from the
    /// records): refused, naming the shard, unless the folders are every shard of one plan
    /// exactly once, each finished. `report`, `--gate` and `compare` then work on it.
    Merge(merge::MergeArgs),
    /// What toolscore knows of a model, and where each fact comes from
    ///
    /// For a provider of toolscore.yaml or KIND:MODEL: the price a run would use (`prices:`,
    /// the config's `model_map:`, the hand-kept table, or the snapshot of LiteLLM's model map
    /// built in), what the map says the model accepts (function calling, tool_choice, parallel
    /// calls, sampling parameters, input tokens), and the request fields the capability table
    /// says it refuses. Calls nothing.
    Models(models::ModelsArgs),
    /// Work with recorded cassettes
    #[command(subcommand)]
    Cassette(cassette::CassetteCommand),
    /// Print a catalog as a model reads it; `catalog diff` compares two
    ///
    /// Exactly as a model receives it, flat and cold, with its token footprint: from a file, a
    /// dataset, a live MCP server over stdio (`toolscore catalog -- npx -y
    /// @modelcontextprotocol/server-everything`) or a URL.
    Catalog(catalog::CatalogArgs),
    /// Deterministic edge checks of a live MCP server
    ///
    /// Each check has a verdict and its evidence: the dataset's expected calls return results valid against the tool's outputSchema (or
    /// well-formed content), an unknown tool gets JSON-RPC error -32602, arguments that break
    /// a tool's input schema get isError naming the field, an unsupported protocol version is
    /// refused with the supported list. With --security, escape probes instead: path
    /// traversal, server-side request forgery, shell injection and schema smuggling, each
    /// verdict on proof. Calls the server's tools: point it at a test instance. Exit 1 when a
    /// check fails.
    Probe(probe::ProbeArgs),
    /// Load a live MCP server: errors, latency, leakage between sessions
    ///
    /// Parallel sessions make the dataset's expected calls directly (no
    /// model) for a duration, each call with a canary of its own in its free string arguments,
    /// at any depth. Per tool: calls, error rate with its interval, p50/p95/p99 latency with
    /// intervals, 429s with and without Retry-After, 5xx, dropped connections, timeouts; and
    /// any answer that carried another session's canary (leakage), or "not tested" when no
    /// call carried one. Over stdio each session is its own server process. Exit 1 on leakage,
    /// when --max-error-rate's bound is exceeded, or, with --require-leakage-test, untested.
    Stress(stress::StressArgs),
    /// Turn BFCL or logged model calls into datasets
    ///
    /// `import bfcl` converts the Berkeley Function Calling
    /// Leaderboard (PyPI `bfcl-eval`), `import traffic` logged model calls (OpenAI, Anthropic,
    /// OpenTelemetry GenAI spans). Never overwrites a dataset without --force; every dataset
    /// written is loaded back as `validate` loads it.
    #[command(subcommand)]
    Import(import::ImportCommand),
    /// Print a completion script: bash, zsh, fish, powershell, elvish
    ///
    /// Generated from the same definitions as --help, on stdout. For bash: `mkdir -p
    /// ~/.local/share/bash-completion/completions && toolscore completions bash >
    /// ~/.local/share/bash-completion/completions/toolscore`.
    Completions(help::CompletionsArgs),
    /// Write a man page per subcommand into a folder
    ///
    /// toolscore.1 and a page per subcommand (toolscore-run.1, …), generated from the same
    /// definitions as --help; read one with `man -l DIR/toolscore-run.1`.
    Man(help::ManArgs),
}

/// Where the suite comes from.
#[derive(Debug, Clone, Args)]
pub struct SuiteArgs {
    /// Config file [default: the nearest toolscore.yaml, from the current folder up to the
    /// repository's top].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Dataset folder (tools.json + cases.jsonl); repeatable. With --dataset or --scenario,
    /// the flags name the whole suite (the config's lists are not used).
    #[arg(long = "dataset", value_name = "DIR")]
    pub datasets: Vec<PathBuf>,
    /// Multi-step scenario: a `scenarios/<name>.yaml` file or a folder of them; repeatable.
    #[arg(long = "scenario", value_name = "FILE|DIR")]
    pub scenarios: Vec<PathBuf>,
    /// Attacks planted in tool results (JSON Lines), or `builtin` for the shipped corpus;
    /// repeatable. Each scenario with an injection point (`${injection}` in a scripted answer,
    /// or `inject:` for a live tool) also runs once per attack, as the unit SCENARIO@ATTACK.
    #[arg(long = "attacks", value_name = "FILE|builtin")]
    pub attacks: Vec<String>,
}

/// How a live provider is asked, beside its name (`--provider`): its URL, model, key variable,
/// sampling and limits. `run` and `tune` share them; a replay refuses those a cassette fixes.
#[derive(Debug, Clone, Default, Args)]
pub struct ProviderArgs {
    /// Base URL of the provider's API, replacing its kind's default or the config's (a proxy, a
    /// gateway, a local server), e.g. http://127.0.0.1:8080/v1.
    #[arg(help_heading = "Provider", long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Model name sent to the provider.
    #[arg(help_heading = "Provider", long)]
    pub model: Option<String>,
    /// Environment variable that holds the API key (the key itself is never a flag) [default:
    /// the kind's own: ANTHROPIC_API_KEY, OPENAI_API_KEY for openai-responses, GEMINI_API_KEY,
    /// AZURE_OPENAI_API_KEY; none for openai-compat and ollama].
    #[arg(help_heading = "Provider", long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Sampling temperature [default: the provider's].
    #[arg(help_heading = "Provider", long)]
    pub temperature: Option<f64>,
    /// Maximum output tokens per request.
    #[arg(help_heading = "Provider", long)]
    pub max_tokens: Option<u32>,
    /// Per-request timeout in seconds [default: 60].
    #[arg(help_heading = "Provider", long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// Retries after 429/5xx/timeouts, with capped exponential backoff and full jitter; 0 to 20
    /// [default: 4].
    #[arg(help_heading = "Provider", long)]
    pub max_retries: Option<u32>,
    /// Send `tool_choice` (also `tool_choice:` in the config): auto, required or none, in each
    /// provider's own form [default: not sent, the provider's default applies].
    #[arg(help_heading = "Provider", long, value_enum, value_name = "CHOICE")]
    pub tool_choice: Option<toolscore_core::ToolChoice>,
    /// Send `parallel_tool_calls` (also `parallel_tool_calls:` in the config; Anthropic's
    /// `disable_parallel_tool_use`) [default: not sent].
    #[arg(help_heading = "Provider", long, value_name = "BOOL")]
    pub parallel_tool_calls: Option<bool>,
    /// Largest response body read, in bytes; a larger one is a bad_response [default: 8 MiB].
    #[arg(help_heading = "Provider", long, value_name = "BYTES")]
    pub max_response_bytes: Option<usize>,
}

/// Runs the parsed command and returns the process exit code: each subcommand's file has its
/// flags and its `run`.
pub fn run(cli: Cli) -> Result<ExitCode, Error> {
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Validate(args) => validate::run(&args),
        Command::Lock(args) => lock::run(&args),
        Command::Report(args) => report::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::Explain(args) => explain::run(&args),
        Command::Plan(args) => plan::run(&args),
        Command::Tune(args) => tune::run(&args),
        Command::History(args) => history::run(&args),
        Command::Lint(args) => lint::run(&args),
        Command::Merge(args) => merge::run(&args),
        Command::Models(args) => models::run(&args),
        Command::Cassette(command) => cassette::run(&command),
        Command::Catalog(args) => catalog::run(&args),
        Command::Probe(args) => probe::run(&args),
        Command::Stress(args) => stress::run(&args),
        Command::Import(command) => import::run(&command),
        Command::Init(args) => init::run(&args),
        Command::Completions(args) => help::completions(&args),
        Command::Man(args) => help::man(&args),
    }
}

/// A finished run, re-aggregated from its results.jsonl at its own confidence.
fn load_run(dir: &Path) -> Result<toolscore_summary::Summary, Error> {
    reaggregate_run(dir, read_header(dir)?)
}

/// A run folder's summary.json header: what its records do not hold.
fn read_header(dir: &Path) -> Result<toolscore_summary::SummaryHeader, Error> {
    if !dir.is_dir() {
        return Err(usage(&format!(
            "no such run: {} is not a folder (a run folder is --out/RUN_ID, e.g. reports/<run-id>)",
            dir.display()
        )));
    }
    let path = dir.join("summary.json");
    if !path.exists() {
        let resume = if dir.join("results.jsonl").is_file() {
            format!(
                "; a run cut short before writing it is finished by `{}`",
                toolscore_core::command([
                    "toolscore",
                    "run",
                    "--resume",
                    &dir.display().to_string()
                ])
            )
        } else {
            String::new()
        };
        return Err(usage(&format!(
            "{} is not a run folder: it has no summary.json{resume}",
            dir.display()
        )));
    }
    let text = toolscore_core::read_text(&path)?;
    serde_json::from_str(&text)
        .map_err(|e| InputError::json(&path.display().to_string(), &e).into())
}

/// A run folder re-aggregated from its records under `header`, at the run's own confidence
/// and precision.
fn reaggregate_run(
    dir: &Path,
    header: toolscore_summary::SummaryHeader,
) -> Result<toolscore_summary::Summary, Error> {
    let (conf, prec) = (header.confidence, header.precision);
    Ok(toolscore_summary::reaggregate(
        &dir.join("results.jsonl"),
        header,
        conf,
        prec,
    )?)
}

/// The async runtime a subcommand runs its work on; `workers` caps its threads.
fn async_runtime(workers: Option<usize>) -> Result<tokio::runtime::Runtime, Error> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = workers {
        builder.worker_threads(n);
    }
    builder
        .enable_all()
        .build()
        .map_err(|e| Error::io("cannot start the async runtime", e))
}

pub(crate) fn usage(msg: &str) -> Error {
    InputError::new(msg).into()
}

/// `--timeout` (or a config's `timeout_s`) in seconds, checked by the one rule every command
/// and config file shares ([`toolscore_core::timeout_from_seconds`]).
pub(crate) fn checked_timeout(seconds: f64) -> Result<std::time::Duration, Error> {
    toolscore_core::timeout_from_seconds(seconds).ok_or_else(|| {
        usage(&format!(
            "--timeout must be {} (got {seconds:?})",
            toolscore_core::TIMEOUT_RANGE
        ))
    })
}

/// Loads the config (if any) and every dataset, fully validated, and refuses any catalog that
/// differs from the project's `toolscore.lock` ([`lock::check`]): every command that shows a
/// catalog to a model loads its suite here, so the check comes before any model is called.
///
/// With `--attacks`, the scenarios are followed by their attacked units, made after the lock's
/// check: the lock pins what the author wrote, and an attacked unit is that, plus the payload
/// and the attacker's tools its goal names.
pub(crate) fn load_suite(args: &SuiteArgs) -> Result<LoadedSuite, Error> {
    let mut suite = load_suite_unchecked(args)?;
    lock::check(&suite)?;
    if !args.attacks.is_empty() {
        let clean = std::mem::take(&mut suite.scenarios);
        suite.scenarios = attacks::attacked(clean, &args.attacks)?;
    }
    Ok(suite)
}

/// The config file a command reads: `--config`, else the nearest toolscore.yaml found from
/// the current folder up ([`project`]).
fn config_file(args: &SuiteArgs) -> Option<PathBuf> {
    config_path(args.config.as_deref())
}

pub(crate) use project::{config_path, default_path};

/// [`load_suite`] without the lock's check: what `toolscore lock` pins.
fn load_suite_unchecked(args: &SuiteArgs) -> Result<LoadedSuite, Error> {
    let config_file = config_file(args);
    let config = match &config_file {
        Some(path) => load_config(path)?,
        None => Config::default(),
    };
    // Flags name the whole suite; without them, the config's lists do.
    let (dirs, scenario_paths) = if args.datasets.is_empty() && args.scenarios.is_empty() {
        (config.datasets.clone(), config.scenarios.clone())
    } else {
        (args.datasets.clone(), args.scenarios.clone())
    };
    if dirs.is_empty() && scenario_paths.is_empty() {
        return Err(usage(&match &config_file {
            Some(path) => format!(
                "no dataset: {} lists no `datasets` (or `scenarios`); list one there, or pass --dataset DIR (or --scenario FILE)",
                path.display()
            ),
            // Outside a project: say where toolscore looked, and how a project starts.
            None => format!(
                "no dataset: no toolscore.yaml in {} or the folders above it (up to a repository's top) and no --dataset or --scenario; run this in your project, pass --dataset DIR, or start a project here with `toolscore init` (from an MCP server or a tool list: `toolscore help init`)",
                std::env::current_dir()
                    .map_or_else(|_| ".".to_owned(), |d| d.display().to_string())
            ),
        }));
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
        config_file,
        datasets,
        scenarios,
    })
}

/// The starter cases of `datasets` that nobody has edited yet (as
/// [`toolscore_suite::Case::is_unedited_starter`] decides), one line each: `  FILE:LINE  ID`.
fn unedited_starters(datasets: &[Dataset]) -> Vec<String> {
    datasets
        .iter()
        .flat_map(|d| {
            let file = d.dir.join("cases.jsonl");
            d.cases
                .iter()
                .filter(|c| c.is_unedited_starter())
                .map(move |c| format!("  {}:{}  {}", file.display(), c.line, c.id))
        })
        .collect()
}

/// What makes a starter case unedited, in the words every message about them uses.
const UNEDITED_RULE: &str =
    "tagged `starter` and the request still beginning \"EDIT ME:\", as `toolscore init` wrote it";

/// `validate`'s warning about unedited starter cases, None when there are none.
pub(crate) fn unedited_starters_warning(datasets: &[Dataset]) -> Option<String> {
    let found = unedited_starters(datasets);
    if found.is_empty() {
        return None;
    }
    Some(format!(
        "warning: {} unedited starter case{} ({UNEDITED_RULE}); `run` and `tune` refuse to score {} until the request is written (or with --allow-starter-cases):\n{}",
        found.len(),
        if found.len() == 1 { "" } else { "s" },
        if found.len() == 1 { "it" } else { "them" },
        found.join("\n")
    ))
}

/// What `run` and `tune` say when --allow-starter-cases lets unedited starter cases be scored.
pub(crate) fn allowed_starters_note(datasets: &[Dataset]) -> Option<String> {
    let n = unedited_starters(datasets).len();
    (n > 0).then(|| {
        format!(
            "warning: scoring {n} unedited starter case{} as {} (--allow-starter-cases)",
            if n == 1 { "" } else { "s" },
            if n == 1 { "it is" } else { "they are" }
        )
    })
}

/// Refuses to score a suite that still holds unedited starter cases, unless `allowed`
/// (`--allow-starter-cases`): a placeholder request scored as a real one gives a rate that
/// measures nothing, and looks like a result.
pub(crate) fn refuse_unedited_starters(datasets: &[Dataset], allowed: bool) -> Result<(), Error> {
    let found = unedited_starters(datasets);
    if found.is_empty() {
        return Ok(());
    }
    if allowed {
        return Ok(());
    }
    Err(usage(&format!(
        "{n} unedited starter case{s} ({UNEDITED_RULE}) would be scored as if real:\n{}\nwrite the request a user would make in each (and its expected \"args\"), or delete the case; a case whose request is written counts, tag or not. To score them as they are, pass --allow-starter-cases.",
        found.join("\n"),
        n = found.len(),
        s = if found.len() == 1 { "" } else { "s" },
    )))
}

/// What a command runs on: the config, its datasets and its scenarios, all validated.
pub(crate) struct LoadedSuite {
    pub config: Config,
    /// The config file read, if any: the lock is beside it.
    pub config_file: Option<PathBuf>,
    pub datasets: Vec<Dataset>,
    /// The scenarios, then (`--attacks`) their attacked units.
    pub scenarios: Vec<std::sync::Arc<Scenario>>,
}
