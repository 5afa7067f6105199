//! Command line: clap definitions, turning raw flags and the config into a validated
//! `RunPlan` before any work starts, and mapping outcomes to exit codes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::error::{Error, ExitCode, InputError};
use crate::provider::cassette::Cassette;
use crate::provider::{ProviderKind, ProviderSettings, SecretString};
use crate::runner::{ProgressMode, Recording, RunPlan};
use crate::suite::{Config, Dataset, ProviderEntry, load_config, load_dataset};

const EXIT_CODES_HELP: &str = "Exit codes:
  0  run completed
  1  gate failed or regression found
  2  bad input or usage (nothing was run)
  3  inconclusive: not enough evidence yet
  4  too many infrastructure errors to judge (see --max-infra-error-rate)
  130 interrupted with Ctrl-C (summary of completed trials written)";

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
    /// or `replay:CASSETTE` to serve recorded responses without calling any model.
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Record every raw response to this cassette (`.gz` = compressed) for later replay.
    #[arg(long, value_name = "CASSETTE")]
    pub record: Option<PathBuf>,
    /// With --record: what the recording is (model build, server), shown whenever it is replayed.
    #[arg(long, value_name = "TEXT", requires = "record")]
    pub record_note: Option<String>,
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
    /// Confidence level of every interval [default: 0.95].
    #[arg(long)]
    pub confidence: Option<f64>,
    /// Target half-width: warn when an interval is wider and say how many trials would do [default: 0.05].
    #[arg(long)]
    pub precision: Option<f64>,
    /// Fraction of trials allowed to end in infrastructure errors before the run exits 4.
    #[arg(long, default_value_t = 0.1, value_name = "RATE")]
    pub max_infra_error_rate: f64,
    /// Folder for run outputs; each run writes OUT/<run-id>/.
    #[arg(long, default_value = "reports", value_name = "DIR")]
    pub out: PathBuf,
    /// Run id [default: UTC timestamp plus a random suffix].
    #[arg(long)]
    pub run_id: Option<String>,
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
        Command::Run(args) => {
            let max_infra = args.max_infra_error_rate;
            if !(0.0..=1.0).contains(&max_infra) {
                return Err(usage("--max-infra-error-rate must be between 0 and 1"));
            }
            let plan = build_plan(args, &|name| std::env::var(name).ok())?;
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .map_err(|e| Error::io("cannot start the async runtime", e))?;
            let result = runtime.block_on(crate::runner::execute(plan))?;
            let summary = &result.summary;
            let mut out = std::io::stdout().lock();
            crate::report::render_terminal(summary, &mut out)
                .map_err(|e| Error::io("cannot write the report", e))?;
            println!(
                "\nwrote {} and {}",
                result.out_dir.join("results.jsonl").display(),
                result.out_dir.join("summary.json").display()
            );
            if summary.interrupted {
                return Ok(ExitCode::Interrupted);
            }
            let done = summary.completed_trials.max(1) as f64;
            if summary.completed_trials == 0 || summary.infra.errors as f64 / done > max_infra {
                eprintln!(
                    "error: {} of {} trials ended in infrastructure errors (limit {:.0}%); the scores cannot be trusted",
                    summary.infra.errors,
                    summary.completed_trials,
                    max_infra * 100.0
                );
                return Ok(ExitCode::InfraErrors);
            }
            Ok(ExitCode::Pass)
        }
    }
}

fn usage(msg: &str) -> Error {
    Error::Input(InputError::new(msg))
}

/// Loads the config (if any) and every dataset, fully validated.
fn load_suite(args: &SuiteArgs) -> Result<(Config, Vec<Dataset>), Error> {
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

/// Turns flags, config and environment into a plan; every check that can fail happens here,
/// before any request or output file. `env` is injected so tests need not touch the process
/// environment.
pub fn build_plan(args: RunArgs, env: &dyn Fn(&str) -> Option<String>) -> Result<RunPlan, Error> {
    let (config, datasets) = load_suite(&args.suite)?;
    let defaults = &config.defaults;
    if let Some(path) = args
        .provider
        .as_deref()
        .and_then(|p| p.strip_prefix("replay:"))
        .map(PathBuf::from)
    {
        return build_replay_plan(&path, args, datasets, defaults);
    }

    let (name, entry) = match args.provider.as_deref() {
        Some(name) => match config.providers.get(name) {
            Some(entry) => (name.to_owned(), Some(entry.clone())),
            None if name.parse::<ProviderKind>().is_ok() => (name.to_owned(), None),
            None => {
                let known: Vec<&str> = config.providers.keys().map(String::as_str).collect();
                return Err(usage(&format!(
                    "--provider `{name}` is neither a provider in the config ({}) nor a provider kind (openai-compat)",
                    if known.is_empty() {
                        "none defined".to_owned()
                    } else {
                        known.join(", ")
                    }
                )));
            }
        },
        None if config.providers.len() == 1 => {
            let (n, e) = config
                .providers
                .iter()
                .next()
                .map(|(n, e)| (n.clone(), e.clone()))
                .ok_or_else(|| usage("no provider"))?;
            (n, Some(e))
        }
        None => {
            return Err(usage(
                "choose a provider with --provider (a name from toolscore.yaml, or openai-compat with --base-url and --model)",
            ));
        }
    };
    let entry = entry.unwrap_or(ProviderEntry {
        kind: name.clone(),
        base_url: String::new(),
        model: String::new(),
        api_key_env: None,
        temperature: None,
        max_tokens: None,
        timeout_s: None,
        max_retries: None,
    });
    let kind: ProviderKind = entry.kind.parse().map_err(|_| {
        usage(&format!(
            "provider `{name}`: unknown kind `{}` (known: openai-compat)",
            entry.kind
        ))
    })?;
    let base_url = args.base_url.clone().unwrap_or(entry.base_url.clone());
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(usage(&format!(
            "provider `{name}`: base URL must start with http:// or https:// (got `{base_url}`); set --base-url"
        )));
    }
    let model = args.model.clone().unwrap_or(entry.model.clone());
    if model.is_empty() {
        return Err(usage(&format!("provider `{name}`: no model; set --model")));
    }
    let key_var = args.api_key_env.clone().or(entry.api_key_env.clone());
    let api_key = match &key_var {
        Some(var) => match env(var) {
            Some(v) if !v.is_empty() => Some(SecretString::new(v)),
            _ => {
                return Err(usage(&format!(
                    "provider `{name}`: environment variable {var} is not set (it should hold the API key)"
                )));
            }
        },
        None => None,
    };

    let trials = args.trials.or(defaults.trials).unwrap_or(50);
    if trials == 0 {
        return Err(usage("--trials must be at least 1"));
    }
    let temperature = args
        .temperature
        .or(entry.temperature)
        .or(defaults.temperature);
    if let Some(t) = temperature
        && !(0.0..=2.0).contains(&t)
    {
        return Err(usage("--temperature must be between 0 and 2"));
    }
    let timeout_s = args
        .timeout
        .or(entry.timeout_s)
        .or(defaults.timeout_s)
        .unwrap_or(60.0);
    if !(timeout_s > 0.0 && timeout_s <= 3600.0) {
        return Err(usage("--timeout must be between 0 and 3600 seconds"));
    }
    let common = common_settings(&args, defaults)?;

    let provider = ProviderSettings {
        kind,
        name,
        base_url,
        model,
        api_key,
        temperature,
        max_tokens: args.max_tokens.or(entry.max_tokens).or(defaults.max_tokens),
        timeout: Duration::from_secs_f64(timeout_s),
        max_retries: args
            .max_retries
            .or(entry.max_retries)
            .or(defaults.max_retries)
            .unwrap_or(4),
        retry_base: Duration::from_millis(500),
        retry_cap: Duration::from_secs(30),
    };
    provider.check().map_err(|e| usage(&e))?;
    Ok(RunPlan {
        run_id: common.run_id,
        out_dir: common.out_dir,
        trials,
        concurrency: common.concurrency,
        provider,
        datasets,
        confidence: common.confidence,
        precision: common.precision,
        progress: args.progress,
        replay: None,
        record: args.record.map(|path| Recording {
            path,
            note: args.record_note,
        }),
    })
}

/// A replay run: provider settings come from the cassette header, and every case must have
/// a recording for every requested trial, checked here so a missing one stops the run before
/// it starts (never a silent fallback to a live call).
fn build_replay_plan(
    path: &Path,
    args: RunArgs,
    datasets: Vec<Dataset>,
    defaults: &crate::suite::Defaults,
) -> Result<RunPlan, Error> {
    for (flag, given) in [
        ("--base-url", args.base_url.is_some()),
        ("--model", args.model.is_some()),
        ("--api-key-env", args.api_key_env.is_some()),
        ("--temperature", args.temperature.is_some()),
        ("--max-tokens", args.max_tokens.is_some()),
        ("--record", args.record.is_some()),
    ] {
        if given {
            return Err(usage(&format!(
                "{flag} cannot be used with --provider replay:…: the cassette fixes the model and its parameters"
            )));
        }
    }
    let cassette = Cassette::load(path)?;
    let h = &cassette.header;
    let file = path.display().to_string();
    for d in &datasets {
        match h.catalogs.get(&d.name) {
            None => {
                let recorded: Vec<&str> = h.catalogs.keys().map(String::as_str).collect();
                return Err(InputError::at(
                    &file,
                    None,
                    "",
                    &format!(
                        "the cassette has no recordings for dataset `{}` (it was recorded for: {})",
                        d.name,
                        recorded.join(", ")
                    ),
                )
                .into());
            }
            Some(fp) if *fp != d.catalog.fingerprint => {
                return Err(InputError::at(
                    &file,
                    None,
                    "",
                    &format!(
                        "the cassette was recorded against another catalog for dataset `{}` ({fp}), but {} is {}: a changed catalog or a variant needs its own recording",
                        d.name, d.catalog.source, d.catalog.fingerprint
                    ),
                )
                .into());
            }
            Some(_) => {}
        }
    }
    let mut settings = ProviderSettings::new(
        h.provider_kind,
        "replay",
        h.base_url.clone(),
        h.model.clone(),
    );
    settings.temperature = h.temperature;
    settings.max_tokens = h.max_tokens;
    let record_hint = |case: &str, have: u32| {
        format!(
            "case `{case}` has {have} recorded trials in {file}; record them with `toolscore run --provider <live provider> --model {} --record {file}{}` on the same dataset",
            h.model,
            h.temperature
                .map_or(String::new(), |t| format!(" --temperature {t}"))
        )
    };
    let mut fewest = u32::MAX;
    let mut fewest_case = String::new();
    for d in &datasets {
        for c in &d.cases {
            let have = cassette.recorded_trials(&crate::provider::request_hash(
                &settings,
                &c.messages,
                &d.catalog,
            ));
            if have == 0 {
                return Err(InputError::at(&file, None, "", &format!("no recording for {}/{}: the fixture or the catalog changed since recording, or it was never recorded; {}", d.name, c.id, record_hint(&c.id, 0))).into());
            }
            if have < fewest {
                fewest = have;
                fewest_case = c.id.clone();
            }
        }
    }
    let trials = args.trials.unwrap_or(fewest);
    if trials == 0 {
        return Err(usage("--trials must be at least 1"));
    }
    if trials > fewest {
        return Err(InputError::new(format!(
            "--trials {trials} needs {trials} recordings per case, but {}",
            record_hint(&fewest_case, fewest)
        ))
        .into());
    }
    let common = common_settings(&args, defaults)?;
    Ok(RunPlan {
        run_id: common.run_id,
        out_dir: common.out_dir,
        trials,
        concurrency: common.concurrency,
        provider: settings,
        datasets,
        confidence: common.confidence,
        precision: common.precision,
        progress: args.progress,
        replay: Some(cassette),
        record: None,
    })
}

/// Settings every run has, live or replayed.
struct CommonSettings {
    concurrency: usize,
    confidence: f64,
    precision: f64,
    run_id: String,
    out_dir: PathBuf,
}

fn common_settings(
    args: &RunArgs,
    defaults: &crate::suite::Defaults,
) -> Result<CommonSettings, Error> {
    let concurrency = args.concurrency.or(defaults.concurrency).unwrap_or(8);
    if concurrency == 0 || concurrency > 4096 {
        return Err(usage("--concurrency must be between 1 and 4096"));
    }
    let confidence = args.confidence.or(defaults.confidence).unwrap_or(0.95);
    if !(confidence > 0.5 && confidence < 1.0) {
        return Err(usage("--confidence must be between 0.5 and 1 (e.g. 0.95)"));
    }
    let precision = args.precision.or(defaults.precision).unwrap_or(0.05);
    if !(precision > 0.0 && precision < 0.5) {
        return Err(usage(
            "--precision must be between 0 and 0.5 (a half-width, e.g. 0.05)",
        ));
    }
    let run_id = checked_run_id(args.run_id.clone())?;
    let out_dir = args.out.join(&run_id);
    if out_dir.exists() {
        return Err(usage(&format!(
            "{} already exists; choose another --run-id",
            out_dir.display()
        )));
    }
    Ok(CommonSettings {
        concurrency,
        confidence,
        precision,
        run_id,
        out_dir,
    })
}

fn checked_run_id(given: Option<String>) -> Result<String, Error> {
    match given {
        Some(id)
            if id.is_empty()
                || !id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                || id.starts_with('.') =>
        {
            Err(usage(
                "--run-id may only contain letters, digits, '-', '_' and '.'",
            ))
        }
        Some(id) => Ok(id),
        None => Ok(new_run_id()),
    }
}

/// `20261202T223500Z-3fa1`: sortable, and unique enough for runs started the same second.
fn new_run_id() -> String {
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let compact: String = now.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    format!("{compact}-{:04x}", rand::random::<u16>())
}
