//! `toolscore probe SOURCE`: deterministic edge checks of a live MCP server (see
//! [`toolscore_mcp::probe`]).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::mcp_source::{McpSourceArgs, expected_calls};
use crate::cli::Error;
use toolscore_core::error::ExitCode;
use toolscore_mcp::DatasetCall;
use toolscore_mcp::client::ServerSpec;
use toolscore_mcp::probe::CheckVerdict;

#[derive(Debug, Args)]
pub struct ProbeArgs {
    // A dataset's expected calls are made and their results checked too.
    #[command(flatten)]
    pub source: McpSourceArgs,
    /// Also write every check as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

pub(super) fn run(args: &ProbeArgs) -> Result<ExitCode, Error> {
    let source = args.source.resolve("probe")?;
    let expected = match &source.dataset {
        Some(dir) => Some(expected_calls(dir)?),
        None => None,
    };
    let report = run_probe(&source.spec, source.timeout, expected.as_deref())?;
    if let Some(path) = &args.json {
        toolscore_core::atomic::write_json(path, &report)?;
    }
    toolscore_report::render_probe(&report, &mut std::io::stdout().lock())
        .map_err(|e| Error::io("cannot write the report", e))?;
    Ok(if report.count(CheckVerdict::Fail) > 0 {
        ExitCode::GateFailed
    } else {
        ExitCode::Pass
    })
}

fn run_probe(
    spec: &ServerSpec,
    timeout: Duration,
    expected: Option<&[DatasetCall]>,
) -> Result<toolscore_mcp::probe::ProbeReport, Error> {
    let runtime = super::async_runtime(Some(2))?;
    let env = |name: &str| std::env::var(name).ok();
    runtime.block_on(async {
        let finished = tokio::select! {
            r = toolscore_mcp::probe::probe(spec, timeout, &env, expected) => Some(r),
            () = toolscore_mcp::client::shutdown_signal() => None,
        };
        match finished {
            Some(r) => r.map_err(Error::from),
            None => {
                // The abandoned sessions kill their process groups from tasks of this
                // runtime: give those tasks a moment before the runtime ends.
                tokio::time::sleep(Duration::from_millis(500)).await;
                Err(Error::interrupted(toolscore_mcp::client::MCP_SHUT_DOWN))
            }
        }
    })
}
