//! `toolscore probe SOURCE`: deterministic edge checks of a live MCP server (see
//! [`toolscore_mcp::probe`]), or with `--security` its escape probes (see
//! [`toolscore_mcp::probe_escapes`]).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::mcp_source::{McpSourceArgs, expected_calls};
use super::usage;
use crate::cli::Error;
use toolscore_core::ExitCode;
use toolscore_mcp::CheckVerdict;
use toolscore_mcp::ServerSpec;
use toolscore_mcp::{DEFAULT_MAX_CALLS, EscapeReport, ProbeError, is_loopback_url, probe_escapes};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProbeFormat {
    /// Each verdict with its evidence, for people.
    Text,
    /// The whole report as JSON.
    Json,
    /// SARIF 2.1.0 for code-scanning UIs (with --security): one rule per escape check.
    Sarif,
}

#[derive(Debug, Args)]
pub struct ProbeArgs {
    // A dataset's expected calls are made and their results checked too.
    #[command(flatten)]
    pub source: McpSourceArgs,
    /// Also write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = ProbeFormat::Text)]
    pub format: ProbeFormat,
    /// Probe for sandbox and permission escapes instead of the edge checks, through every
    /// string parameter (nested ones too, three names deep: options.path, files[].path): path
    /// traversal toward /etc/passwd and C:\Windows\win.ini, server-side request forgery
    /// toward toolscore's own 127.0.0.1 listener, shell injection that prints a marker, and
    /// schema smuggling (a warning). A check fails only on proof (the root:…:0:0: line or
    /// win.ini's own lines, a request reaching the listener, the expanded marker). The payloads read, fetch from loopback and print, nothing more, but
    /// they are attacks: point the probe at a local test instance, never a shared or
    /// production one. A URL must be on this machine (127.0.0.0/8, ::1, localhost). Exit 1
    /// when an escape is proven.
    #[arg(long)]
    pub security: bool,
    /// With --security: calls per tool at most; payloads over the bound are cut, and the
    /// report says so per tool.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CALLS, requires = "security")]
    pub max_calls: usize,
    /// With --security --format sarif: the file of the repository every result points at
    /// (line 1), such as server/main.py, instead of the one toolscore infers (a dataset's
    /// dataset.yaml, or the server's script named in the command). A path relative to the
    /// repository's root, with / between folders and no `..`. GitHub code scanning refuses a
    /// result without a file, and a URL names none.
    #[arg(long, value_name = "PATH", requires = "security")]
    pub sarif_artifact: Option<String>,
}

pub(super) fn run(args: &ProbeArgs) -> Result<ExitCode, Error> {
    if args.security {
        return run_security(args);
    }
    if args.format == ProbeFormat::Sarif {
        return Err(usage(
            "--format sarif is for --security: the edge checks report as text or JSON",
        ));
    }
    let source = args.source.resolve("probe")?;
    let expected = match &source.dataset {
        Some(dir) => Some(expected_calls(dir)?),
        None => None,
    };
    let env = |name: &str| std::env::var(name).ok();
    let report = until_interrupted(toolscore_mcp::probe(
        &source.spec,
        source.timeout,
        &env,
        expected.as_deref(),
    ))?;
    if let Some(path) = &args.json {
        toolscore_core::write_json(path, &report)?;
    }
    let mut out = Vec::new();
    match args.format {
        ProbeFormat::Json => json_to(&mut out, &report)?,
        ProbeFormat::Text | ProbeFormat::Sarif => {
            toolscore_report::render_probe(&report, &mut out)
                .map_err(|e| Error::io("cannot write the report", e))?;
        }
    }
    write_stdout(&out)?;
    Ok(if report.count(CheckVerdict::Fail) > 0 {
        ExitCode::GateFailed
    } else {
        ExitCode::Pass
    })
}

fn run_security(args: &ProbeArgs) -> Result<ExitCode, Error> {
    if args.max_calls == 0 {
        return Err(usage("--max-calls must be at least 1"));
    }
    if args.source.dataset.is_some() {
        return Err(usage(
            "--dataset names expected calls for the edge checks; --security makes none",
        ));
    }
    let artifact = match &args.sarif_artifact {
        Some(_) if args.format != ProbeFormat::Sarif => {
            return Err(usage(
                "--sarif-artifact names the file SARIF results point at: it needs --format sarif",
            ));
        }
        Some(path) => Some(repository_path(path)?),
        None => None,
    };
    let source = args.source.resolve("probe")?;
    // Refused before any call: the probe attacks what it is pointed at.
    if let ServerSpec::Http { url, .. } = &source.spec
        && !is_loopback_url(url)
    {
        return Err(usage(&format!(
            "{}: --security probes only a server on this machine (127.0.0.0/8, ::1, localhost); point it at a local test instance, never a shared or production one",
            source.spec.label()
        )));
    }
    let env = |name: &str| std::env::var(name).ok();
    let report = until_interrupted(async {
        probe_escapes(&source.spec, source.timeout, &env, args.max_calls)
            .await
            .map_err(|e| match e {
                ProbeError::Mcp(e) => Error::from(e),
                ProbeError::Listener(io) => Error::io("cannot start the probe's listener", io),
            })
    })?;
    if let Some(path) = &args.json {
        toolscore_core::write_json(path, &report)?;
    }
    let mut out = Vec::new();
    match args.format {
        ProbeFormat::Text => toolscore_report::render_escapes(&report, &mut out)
            .map_err(|e| Error::io("cannot write the report", e))?,
        ProbeFormat::Json => json_to(&mut out, &report)?,
        ProbeFormat::Sarif => {
            let artifact = artifact.or_else(|| sarif_artifact(&args.source));
            json_to(
                &mut out,
                &toolscore_report::escapes_sarif(
                    &report,
                    artifact.as_deref(),
                    env!("CARGO_PKG_VERSION"),
                ),
            )?;
            if artifact.is_none() {
                // The SARIF is still right for a viewer that takes logical locations; GitHub's
                // upload is what refuses it, so say so before a CI run finds out.
                errln!(
                    "warning: {} names no file of the repository, so the SARIF results have only a logical location (tool.parameter); GitHub code scanning needs a physical location: name the file that defines the server with --sarif-artifact PATH (such as server/main.py)",
                    report.source
                )?;
            }
        }
    }
    write_stdout(&out)?;
    Ok(exit_of(&report))
}

/// `--sarif-artifact PATH` as SARIF's `artifactLocation.uri`: a path relative to the
/// repository's root (code scanning resolves it there), so not absolute, not a URL or a drive,
/// no `..` out of the repository, `/` between folders; a leading `./` is dropped.
fn repository_path(raw: &str) -> Result<String, Error> {
    let refuse = |why: &str| {
        Err(usage(&format!(
            "--sarif-artifact \"{}\": {why}",
            toolscore_core::inert(raw, 200)
        )))
    };
    if raw.chars().any(char::is_control) {
        return refuse("a path holds no control characters");
    }
    if raw.starts_with('/') || raw.starts_with('\\') {
        return refuse(
            "an absolute path; name the file relative to the repository's root, such as server/main.py",
        );
    }
    if raw.contains('\\') {
        return refuse("write the path with / between folders, as SARIF does");
    }
    let parts: Vec<&str> = raw
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.first().is_some_and(|p| p.contains(':')) {
        return refuse(
            "a URL or a drive, not a path in the repository; name the file relative to the repository's root",
        );
    }
    if parts.contains(&"..") {
        return refuse(
            "a path with `..` may leave the repository; name the file from the repository's root, without `..`",
        );
    }
    if parts.is_empty() {
        return refuse("names no file; name the file relative to the repository's root");
    }
    Ok(parts.join("/"))
}

/// The file SARIF results point at when `--sarif-artifact` names none, so code scanning can
/// place them on the pull request (it takes only a path in the repository): a dataset folder's
/// dataset.yaml, else the first word of a stdio command that names a file under the current
/// folder (the server's script, as in `node dist/index.js`). A URL names no file: its results
/// carry only their logical location, and the caller warns.
fn sarif_artifact(source: &McpSourceArgs) -> Option<String> {
    let relative_file = |w: &str| {
        let p = Path::new(w);
        p.is_relative() && p.is_file()
    };
    match &source.source {
        Some(dir) if Path::new(dir).is_dir() => Some(format!(
            "{}/{}",
            dir.trim_end_matches('/'),
            toolscore_suite::DATASET_FILE
        )),
        Some(_) => None,
        None => source
            .server_command
            .iter()
            .find(|w| relative_file(w))
            .map(|w| w.trim_start_matches("./").to_owned()),
    }
}

fn exit_of(report: &EscapeReport) -> ExitCode {
    if report.count(CheckVerdict::Fail) > 0 {
        ExitCode::GateFailed
    } else {
        ExitCode::Pass
    }
}

fn json_to(out: &mut Vec<u8>, value: &impl serde::Serialize) -> Result<(), Error> {
    *out = serde_json::to_vec_pretty(value).map_err(|e| Error::encode("the report", e))?;
    out.push(b'\n');
    Ok(())
}

fn write_stdout(bytes: &[u8]) -> Result<(), Error> {
    out!("{}", String::from_utf8_lossy(bytes))
}

/// Runs `probe` on a runtime of its own, ending it on Ctrl-C or SIGTERM.
fn until_interrupted<T, E: Into<Error>>(
    probe: impl Future<Output = Result<T, E>>,
) -> Result<T, Error> {
    let runtime = super::async_runtime(Some(2))?;
    runtime.block_on(async {
        let finished = tokio::select! {
            r = probe => Some(r),
            () = toolscore_mcp::shutdown_signal() => None,
        };
        match finished {
            Some(r) => r.map_err(Into::into),
            None => {
                // The abandoned sessions kill their process groups from tasks of this
                // runtime: give those tasks a moment before the runtime ends.
                tokio::time::sleep(Duration::from_millis(500)).await;
                Err(Error::interrupted(toolscore_mcp::MCP_SHUT_DOWN))
            }
        }
    })
}
