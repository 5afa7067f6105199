//! `toolscore stress SOURCE`: parallel sessions against a live MCP server (see
//! [`toolscore_mcp::stress`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use super::mcp_source::{McpSourceArgs, expected_calls};
use super::usage;
use crate::cli::Error;
use toolscore_core::ExitCode;
use toolscore_mcp::DatasetCall;
use toolscore_mcp::ServerSpec;
use toolscore_mcp::{ArgSelector, PeakLoad, StressPlan, StressRun, StressSettings};

/// Most sessions one run opens (each stdio session is a process).
const MAX_SESSIONS: u32 = 256;
/// Longest run.
const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

#[derive(Debug, Args)]
pub struct StressArgs {
    // Each session starts its own stdio server and makes the dataset's calls in turn.
    #[command(flatten)]
    pub source: McpSourceArgs,
    /// Sessions calling in parallel.
    #[arg(long, value_name = "N", conflicts_with = "peak")]
    pub sessions: Option<u32>,
    /// The peak of concurrent sessions the server is meant to carry; the run opens
    /// ceil(PEAK × --multiple) sessions.
    #[arg(long, value_name = "PEAK")]
    pub peak: Option<f64>,
    /// How many times the stated --peak to run at.
    #[arg(long, value_name = "M", default_value_t = 2.0, requires = "peak")]
    pub multiple: f64,
    /// How long the sessions call, e.g. `30s`, `5m`.
    #[arg(long, value_name = "D", default_value = "30s")]
    pub duration: String,
    /// Calls per second per session [default: closed loop, the next call as soon as the last
    /// answer came back].
    #[arg(long, value_name = "R")]
    pub rate: Option<f64>,
    /// Leave the strings at this argument path as the dataset wrote them, without a canary
    /// (a path or an id the server must find); repeatable. PATH is keys joined by `.`, each
    /// with `[N]` for one element or `[]` for every one (a key alone reaches into arrays):
    /// `read_text_file.path`, `create_entities.entities[0].name`, `create_entities.entities.name`.
    /// It covers everything below it.
    #[arg(long = "no-canary", value_name = "TOOL.PATH")]
    pub no_canary: Vec<String>,
    /// Fail (exit 1) when the run did not test for leakage: no call carried a canary (no free
    /// string, or all excluded) or none that did got a result [default: such a run is
    /// reported "not tested" and exits as it would otherwise].
    #[arg(long)]
    pub require_leakage_test: bool,
    /// Confidence level of every interval, and of the gate's one-sided bound.
    #[arg(long, value_name = "LEVEL", default_value_t = 0.95)]
    pub confidence: f64,
    /// Fail (exit 1) when the one-sided upper confidence bound of the error rate over all
    /// calls exceeds R, or a session failed to start [R default: 0.01].
    #[arg(long, value_name = "R", num_args = 0..=1, default_missing_value = "0.01")]
    pub max_error_rate: Option<f64>,
    /// Also write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

pub(super) fn run(args: &StressArgs) -> Result<ExitCode, Error> {
    let settings = settings(args)?;
    let source = args.source.resolve("stress")?;
    let Some(dir) = source.dataset.clone() else {
        return Err(usage(
            "stress makes a dataset's expected calls: give --dataset DIR, or a dataset folder as SOURCE",
        ));
    };
    let calls = expected_calls(&dir)?;
    if calls.is_empty() {
        return Err(usage(&format!(
            "{}: no case expects a call with arguments, so there is nothing to call",
            dir.display()
        )));
    }
    let no_canary = no_canary_paths(&args.no_canary, &calls, &dir)?;
    let plan = StressPlan {
        sessions: settings.sessions,
        duration: settings.duration,
        rate_per_session: settings.rate_per_session,
        timeout: source.timeout,
        no_canary,
    };
    let run = run_stress(&source.spec, &plan, &calls)?;
    let report = toolscore_mcp::summarise(&run, &settings);
    if let Some(path) = &args.json {
        toolscore_core::write_json(path, &report)?;
    }
    toolscore_report::render_stress(&report, &mut std::io::stdout().lock())
        .map_err(|e| Error::io("cannot write the report", e))?;
    if report.interrupted {
        return Err(Error::interrupted(toolscore_mcp::MCP_SHUT_DOWN));
    }
    let gate_failed = report.gate.as_ref().is_some_and(|g| !g.passed);
    let untested_but_required = report.leakage.required && !report.leakage.tested;
    Ok(
        if report.leaked_answers > 0 || gate_failed || untested_but_required {
            ExitCode::GateFailed
        } else {
            ExitCode::Pass
        },
    )
}

/// The flags, checked, before anything is started.
fn settings(args: &StressArgs) -> Result<StressSettings, Error> {
    let (sessions, peak) = match (args.sessions, args.peak) {
        (Some(n), None) if (1..=MAX_SESSIONS).contains(&n) => (n, None),
        (Some(_), None) => {
            return Err(usage(&format!(
                "--sessions must be between 1 and {MAX_SESSIONS}"
            )));
        }
        (None, Some(peak)) => {
            let load = PeakLoad {
                peak,
                multiple: args.multiple,
            };
            let n = load
                .sessions(MAX_SESSIONS)
                .filter(|_| peak > 0.0 && args.multiple > 0.0);
            match n {
                Some(n) => (n, Some(load)),
                None => {
                    return Err(usage(&format!(
                        "--peak {peak} × --multiple {} must come to between 1 and {MAX_SESSIONS} sessions",
                        args.multiple
                    )));
                }
            }
        }
        _ => {
            return Err(usage(
                "give --sessions N, or --peak P (and --multiple M, default 2)",
            ));
        }
    };
    let duration = humantime::parse_duration(args.duration.trim()).map_err(|e| {
        usage(&format!(
            "--duration {}: {e} (write e.g. 30s or 5m)",
            args.duration
        ))
    })?;
    if duration.is_zero() || duration > MAX_DURATION {
        return Err(usage("--duration must be more than 0 and at most 24h"));
    }
    if let Some(rate) = args.rate
        && !(rate.is_finite() && rate > 0.0 && rate <= 10_000.0)
    {
        return Err(usage(
            "--rate must be more than 0 and at most 10000 calls per second per session",
        ));
    }
    if !(args.confidence >= 0.5 && args.confidence < 1.0) {
        return Err(usage("--confidence must be at least 0.5 and below 1"));
    }
    if let Some(max) = args.max_error_rate
        && !(0.0..=1.0).contains(&max)
    {
        return Err(usage("--max-error-rate must be between 0 and 1"));
    }
    Ok(StressSettings {
        sessions,
        peak,
        duration,
        rate_per_session: args.rate,
        confidence: args.confidence,
        max_error_rate: args.max_error_rate,
        require_leakage_test: args.require_leakage_test,
    })
}

/// Each `--no-canary TOOL.PATH`: the tool (the longest tool name of the calls it starts with,
/// as a tool name may hold a dot) and the path, which must name a string some call of that
/// tool sends.
fn no_canary_paths(
    items: &[String],
    calls: &[DatasetCall],
    dir: &Path,
) -> Result<Vec<(String, ArgSelector)>, Error> {
    let mut out = Vec::new();
    let syntax = |item: &str| {
        usage(&format!(
            "--no-canary {item}: expected TOOL.PATH, e.g. read_text_file.path or \
             create_entities.entities[0].name"
        ))
    };
    for item in items {
        if !item.contains('.') {
            return Err(syntax(item));
        }
        let tool = calls
            .iter()
            .map(|c| c.tool.as_str())
            .filter(|t| item.len() > t.len() + 1 && item.starts_with(&format!("{t}.")))
            .max_by_key(|t| t.len());
        let Some(tool) = tool else {
            let named = item.split_once('.').map_or(item.as_str(), |(t, _)| t);
            return Err(usage(&format!(
                "--no-canary {item}: no case of {} expects a call of `{named}`",
                dir.display()
            )));
        };
        let path = &item[tool.len() + 1..];
        let Some(selector) = ArgSelector::parse(path) else {
            return Err(syntax(item));
        };
        if !calls
            .iter()
            .any(|c| c.tool == tool && selector.finds_in(&c.args))
        {
            return Err(usage(&format!(
                "--no-canary {item}: no call of `{tool}` in {} has a string at `{path}`",
                dir.display()
            )));
        }
        out.push((tool.to_owned(), selector));
    }
    Ok(out)
}

fn run_stress(
    spec: &ServerSpec,
    plan: &StressPlan,
    calls: &[DatasetCall],
) -> Result<StressRun, Error> {
    let runtime = super::async_runtime(Some(2))?;
    let env: toolscore_mcp::EnvReader = Arc::new(|name: &str| std::env::var(name).ok());
    runtime.block_on(async {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        // Ctrl-C ends the calls in flight and the sessions cleanly; what completed is reported.
        let signal = tokio::spawn(async move {
            toolscore_mcp::shutdown_signal().await;
            let _ = stop_tx.send(true);
        });
        let run = toolscore_mcp::stress(spec, plan, env, calls, stop_rx).await;
        signal.abort();
        run.map_err(Error::from)
    })
}
