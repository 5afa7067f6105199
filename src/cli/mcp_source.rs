//! The server a `probe` or `stress` run talks to: SOURCE (a dataset folder or a URL) or the
//! command after `--`, and the dataset whose expected calls it makes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

use super::catalog::{ServerFlags, server_of};
use super::usage;
use crate::cli::Error;
use toolscore_mcp::DatasetCall;
use toolscore_mcp::ServerSpec;
use toolscore_score::Expectation;

#[derive(Debug, Args)]
pub struct McpSourceArgs {
    /// The server: a dataset folder whose dataset.yaml names it, or the URL of a
    /// streamable-HTTP server. Or its command after `--`.
    #[arg(value_name = "SOURCE")]
    pub source: Option<String>,
    /// The command that starts a stdio MCP server, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub server_command: Vec<String>,
    /// The dataset whose expected calls (those with arguments) are made [default: SOURCE when
    /// it is a dataset folder].
    #[arg(long, value_name = "DIR")]
    pub dataset: Option<PathBuf>,
    #[command(flatten)]
    pub server: ServerFlags,
}

/// A resolved source: the server, its timeout, and the dataset folder, if any.
pub(super) struct McpSource {
    pub spec: ServerSpec,
    pub timeout: Duration,
    pub dataset: Option<PathBuf>,
}

impl McpSourceArgs {
    /// The server SOURCE or the command after `--` names. `command` names the subcommand in
    /// messages.
    pub(super) fn resolve(&self, command: &str) -> Result<McpSource, Error> {
        let (spec, timeout, dataset_dir) = match (&self.source, self.server_command.is_empty()) {
            (Some(_), false) => {
                return Err(usage(
                    "give either SOURCE or a server command after `--`, not both",
                ));
            }
            (None, true) => {
                return Err(usage(
                    "name a server: a dataset folder with a dataset.yaml, a URL, or a command after `--`",
                ));
            }
            (Some(source), true) if Path::new(source).is_dir() => {
                let dir = Path::new(source);
                let Some(live) = toolscore_suite::load_dataset_file(dir)? else {
                    return Err(usage(&format!(
                        "{source} has no {}: {command} needs a live server",
                        toolscore_suite::DATASET_FILE
                    )));
                };
                (live.spec, live.timeout, Some(dir.to_owned()))
            }
            (Some(source), true) => {
                let (spec, timeout) = server_of(Some(source), &[], &self.server)?;
                (spec, timeout, None)
            }
            (None, false) => {
                let (spec, timeout) = server_of(None, &self.server_command, &self.server)?;
                (spec, timeout, None)
            }
        };
        Ok(McpSource {
            spec,
            timeout,
            dataset: self.dataset.clone().or(dataset_dir),
        })
    }
}

/// The dataset's expected calls that state their arguments, once each.
pub(super) fn expected_calls(dir: &Path) -> Result<Vec<DatasetCall>, Error> {
    let dataset = toolscore_suite::load_dataset(dir)?;
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for case in &dataset.cases {
        let Expectation::Calls { calls, .. } = &case.expect else {
            continue;
        };
        for call in calls {
            let Some(args) = &call.args else { continue };
            if seen.insert((call.tool.clone(), toolscore_core::canonical_json(args))) {
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
