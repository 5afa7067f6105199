//! `toolscore catalog SOURCE` and `toolscore catalog diff OLD NEW`: a catalog as the model
//! reads it, from a file, a dataset, a stdio server or a URL, and what changed between two.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand};

use super::usage;
use crate::cli::Error;
use toolscore_core::ExitCode;
use toolscore_core::catalog::source::ServerIdentity;
use toolscore_core::catalog::{Catalog, load_catalog_document, to_tools_json};
use toolscore_mcp::{ServerSpec, list_catalog_blocking};

/// `toolscore catalog`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct CatalogArgs {
    #[command(subcommand)]
    pub command: Option<CatalogCommand>,
    /// A catalog file (an MCP tools/list result, OpenAI tools or Anthropic tools; detected), a
    /// dataset folder (its tools.json, or the live server its dataset.yaml names), or the URL
    /// of a streamable-HTTP MCP server. Or, instead, a stdio server's command after `--`.
    #[arg(value_name = "SOURCE")]
    pub source: Option<String>,
    /// The command that starts a stdio MCP server, after `--`:
    /// `toolscore catalog -- npx -y @modelcontextprotocol/server-everything`.
    #[arg(last = true, value_name = "COMMAND")]
    pub server_command: Vec<String>,
    /// Also write the catalog to FILE as a tools.json (an MCP tools/list result, with the
    /// server's name, version and protocol version when it came from a server).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub server: ServerFlags,
}

/// How to reach a live server named on the command line.
#[derive(Debug, Clone, Args)]
pub struct ServerFlags {
    /// URL server: an HTTP header sent with every request, `NAME: VALUE`; repeatable.
    #[arg(long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// URL server: the environment variable holding a bearer token (sent as Authorization).
    #[arg(long, value_name = "VAR")]
    pub token_env: Option<String>,
    /// Stdio server: an environment variable for the server, `NAME=VALUE`; repeatable.
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// Stdio server: its working folder [default: the current folder].
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Seconds to wait for the server to start, initialize and answer each request.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub timeout: f64,
}

#[derive(Debug, Subcommand)]
pub enum CatalogCommand {
    /// What changed between two catalogs, flagged under an unchanged server version
    ///
    /// Tools added, removed and renamed (by similarity), descriptions and schemas changed (a
    /// unified diff of the text the model reads), with per-tool fingerprints. A tool that
    /// changed while the server's name and version stayed the same is flagged, and makes the
    /// exit code 1.
    Diff(DiffArgs),
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The catalog before: a file, a dataset folder or a URL.
    pub old: String,
    /// The catalog after: a file, a dataset folder or a URL.
    pub new: String,
    /// Also write the differences as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub server: ServerFlags,
}

/// A catalog and where it came from.
pub(super) struct Loaded {
    pub catalog: Catalog,
    pub server: Option<ServerIdentity>,
    /// `source:`, `format:`, `server:` lines for the header.
    header: Vec<(String, String)>,
}

pub(super) fn run(args: &CatalogArgs) -> Result<ExitCode, Error> {
    if let Some(CatalogCommand::Diff(d)) = &args.command {
        return diff(d);
    }
    let loaded = match (&args.source, args.server_command.is_empty()) {
        (Some(_), false) => {
            return Err(usage(
                "give either SOURCE or a server command after `--`, not both",
            ));
        }
        (None, true) => {
            return Err(usage(
                "name a catalog: a file, a dataset folder, a URL, or a server command after `--`",
            ));
        }
        (Some(source), true) => load(source, &args.server)?,
        (None, false) => {
            let (spec, _) = server_of(None, &args.server_command, &args.server)?;
            live(&spec, &args.server)?
        }
    };
    if let Some(path) = &args.json {
        toolscore_core::write_json(
            path,
            &to_tools_json(&loaded.catalog, loaded.server.as_ref()),
        )?;
    }
    let mut text = String::new();
    toolscore_core::catalog::view::render(&loaded.catalog, &loaded.header, &mut text);
    out!("{text}")?;
    if let Some(path) = &args.json {
        errln!("wrote {}", path.display())?;
    }
    Ok(ExitCode::Pass)
}

fn diff(args: &DiffArgs) -> Result<ExitCode, Error> {
    let old = load(&args.old, &args.server)?;
    let new = load(&args.new, &args.server)?;
    let d = toolscore_core::catalog::diff::diff(
        &old.catalog,
        old.server.as_ref(),
        &new.catalog,
        new.server.as_ref(),
    );
    if let Some(path) = &args.json {
        toolscore_core::write_json(path, &d)?;
    }
    out!("{}", toolscore_core::catalog::diff::render(&d))?;
    let flagged = d.flagged();
    if flagged > 0 {
        errln!(
            "error: {flagged} tool(s) changed while the server kept its name and version; clients that cache the catalog by version will not see it"
        )?;
        return Ok(ExitCode::GateFailed);
    }
    Ok(ExitCode::Pass)
}

/// The server a URL, or a command after `--`, names, with the flags that apply to it, and
/// `--timeout`.
pub(super) fn server_of(
    url: Option<&str>,
    command: &[String],
    flags: &ServerFlags,
) -> Result<(ServerSpec, Duration), Error> {
    let timeout = super::checked_timeout(flags.timeout)?;
    if let Some(url) = url {
        if !is_url(url) {
            return Err(usage(&format!(
                "{url}: expected an http:// or https:// URL, a dataset folder, or a command after `--`"
            )));
        }
        if !flags.env.is_empty() || flags.cwd.is_some() {
            return Err(usage("--env and --cwd are for a stdio server (after `--`)"));
        }
        let spec = ServerSpec::Http {
            url: url.to_owned(),
            headers: parse_headers(&flags.headers)?,
            token_env: flags.token_env.clone(),
        };
        return Ok((spec, timeout));
    }
    let mut spec = ServerSpec::command_line(command)
        .ok_or_else(|| usage("the server command after `--` is empty"))?;
    if let ServerSpec::Stdio { env, cwd, .. } = &mut spec {
        *env = parse_env(&flags.env)?;
        cwd.clone_from(&flags.cwd);
    }
    if !flags.headers.is_empty() || flags.token_env.is_some() {
        return Err(usage("--header and --token-env are for a URL server"));
    }
    Ok((spec, timeout))
}

pub(super) fn is_url(source: &str) -> bool {
    source.starts_with("http://") || source.starts_with("https://")
}

/// A file, a dataset folder or a URL.
pub(super) fn load(source: &str, flags: &ServerFlags) -> Result<Loaded, Error> {
    if is_url(source) {
        let (spec, _) = server_of(Some(source), &[], flags)?;
        return live(&spec, flags);
    }
    let path = Path::new(source);
    if path.is_dir() {
        if let Some(spec) = toolscore_suite::load_dataset_file(path)? {
            let mut loaded = live(
                &spec.spec,
                &ServerFlags {
                    timeout: spec.timeout.as_secs_f64(),
                    ..flags.clone()
                },
            )?;
            loaded.catalog.source = spec.file.display().to_string();
            loaded
                .header
                .insert(0, ("dataset".into(), spec.file.display().to_string()));
            return Ok(loaded);
        }
        return load_file(&path.join("tools.json"));
    }
    load_file(path)
}

fn load_file(path: &Path) -> Result<Loaded, Error> {
    let doc = load_catalog_document(path)?;
    let mut header = vec![
        ("source".to_owned(), path.display().to_string()),
        ("format".to_owned(), format!("{} tools", doc.format)),
    ];
    if let Some(s) = &doc.server {
        header.push(("server".into(), s.to_string()));
    }
    Ok(Loaded {
        catalog: doc.catalog,
        server: doc.server,
        header,
    })
}

pub(super) fn live(spec: &ServerSpec, flags: &ServerFlags) -> Result<Loaded, Error> {
    let timeout = super::checked_timeout(flags.timeout)?;
    let listed = list_catalog_blocking(spec, timeout, &|name| std::env::var(name).ok())?;
    let kind = match spec {
        ServerSpec::Stdio { .. } => "stdio",
        ServerSpec::Http { .. } => "streamable HTTP",
    };
    let mut catalog = listed.catalog;
    catalog.source = spec.label();
    Ok(Loaded {
        header: vec![
            ("source".into(), format!("{} ({kind})", spec.label())),
            ("server".into(), listed.server.to_string()),
        ],
        catalog,
        server: Some(listed.server),
    })
}

fn parse_env(pairs: &[String]) -> Result<BTreeMap<String, String>, Error> {
    pairs
        .iter()
        .map(|p| match p.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
            _ => Err(usage(&format!(
                "--env {}: expected NAME=VALUE",
                name_only(p)
            ))),
        })
        .collect()
}

fn parse_headers(pairs: &[String]) -> Result<BTreeMap<String, String>, Error> {
    pairs
        .iter()
        .map(|p| match p.split_once(':') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
            // Never echo the value: it may be a credential.
            _ => Err(usage("--header: expected `NAME: VALUE`")),
        })
        .collect()
}

/// The part of `NAME=VALUE` that is safe to print.
fn name_only(pair: &str) -> &str {
    pair.split('=').next().unwrap_or_default()
}
