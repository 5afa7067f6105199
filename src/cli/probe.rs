//! `toolscore probe SOURCE`: deterministic edge checks of a live MCP server (see
//! [`crate::mcp::probe`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

use super::catalog::{ServerFlags, server_of};
use super::usage;
use crate::error::{Error, ExitCode};
use crate::mcp::DatasetCall;
use crate::mcp::client::ServerSpec;
use crate::mcp::probe::CheckVerdict;
use crate::score::Expectation;

#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// The server: a dataset folder whose dataset.yaml names it (its fixtures' expected calls
    /// are made too), or the URL of a streamable-HTTP server. Or its command after `--`.
    #[arg(value_name = "SOURCE")]
    pub source: Option<String>,
    /// The command that starts a stdio MCP server, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub server_command: Vec<String>,
    /// A dataset whose expected calls (those with arguments) are made and their results
    /// checked [default: SOURCE when it is a dataset folder].
    #[arg(long, value_name = "DIR")]
    pub dataset: Option<PathBuf>,
    /// Also write every check as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub server: ServerFlags,
}

pub fn run(args: &ProbeArgs) -> Result<ExitCode, Error> {
    let (spec, timeout, dataset_dir) = server_source(
        args.source.as_deref(),
        &args.server_command,
        &args.server,
        "probe",
    )?;
    let dataset_dir = args.dataset.clone().or(dataset_dir);
    let expected = match &dataset_dir {
        Some(dir) => Some(expected_calls(dir)?),
        None => None,
    };
    let report = run_probe(&spec, timeout, expected.as_deref())?;
    if let Some(path) = &args.json {
        crate::atomic::write_json(path, &report)?;
    }
    print!("{}", crate::mcp::probe::render(&report));
    Ok(if report.count(CheckVerdict::Fail) > 0 {
        ExitCode::GateFailed
    } else {
        ExitCode::Pass
    })
}

/// The server SOURCE (a dataset folder, a URL) or the command after `--` names, its timeout,
/// and the dataset folder when SOURCE is one. `command` names the subcommand in messages.
pub(super) fn server_source(
    source: Option<&str>,
    server_command: &[String],
    flags: &ServerFlags,
    command: &str,
) -> Result<(ServerSpec, Duration, Option<PathBuf>), Error> {
    match (source, server_command.is_empty()) {
        (Some(_), false) => Err(usage(
            "give either SOURCE or a server command after `--`, not both",
        )),
        (None, true) => Err(usage(
            "name a server: a dataset folder with a dataset.yaml, a URL, or a command after `--`",
        )),
        (Some(source), true) if Path::new(source).is_dir() => {
            let dir = Path::new(source);
            let Some(live) = crate::suite::live::load_dataset_file(dir)? else {
                return Err(usage(&format!(
                    "{source} has no {}: {command} needs a live server",
                    crate::suite::live::DATASET_FILE
                )));
            };
            Ok((live.spec, live.timeout, Some(dir.to_owned())))
        }
        (Some(source), true) => {
            let (spec, timeout) = server_of(Some(source), &[], flags)?;
            Ok((spec, timeout, None))
        }
        (None, false) => {
            let (spec, timeout) = server_of(None, server_command, flags)?;
            Ok((spec, timeout, None))
        }
    }
}

/// The dataset's expected calls that state their arguments, once each.
pub(super) fn expected_calls(dir: &Path) -> Result<Vec<DatasetCall>, Error> {
    let dataset = crate::suite::load_dataset(dir)?;
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for case in &dataset.cases {
        let Expectation::Calls { calls, .. } = &case.expect else {
            continue;
        };
        for call in calls {
            let Some(args) = &call.args else { continue };
            if seen.insert((call.tool.clone(), crate::json::canonical_json(args))) {
                out.push(DatasetCall {
                    case: case.id.clone(),
                    tool: call.tool.clone(),
                    args: args.clone(),
                });
            }
        }
    }
    Ok(out)
}

fn run_probe(
    spec: &ServerSpec,
    timeout: Duration,
    expected: Option<&[DatasetCall]>,
) -> Result<crate::mcp::probe::ProbeReport, Error> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::io("cannot start the async runtime", e))?;
    let env = |name: &str| std::env::var(name).ok();
    runtime.block_on(async {
        let finished = tokio::select! {
            r = crate::mcp::probe::probe(spec, timeout, &env, expected) => Some(r),
            () = crate::mcp::client::shutdown_signal() => None,
        };
        match finished {
            Some(r) => r.map_err(Error::from),
            None => {
                // The abandoned sessions kill their process groups from tasks of this
                // runtime: give those tasks a moment before the runtime ends.
                tokio::time::sleep(Duration::from_millis(500)).await;
                Err(Error::Interrupted(crate::mcp::client::MCP_SHUT_DOWN))
            }
        }
    })
}
