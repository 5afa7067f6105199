//! `toolscore init`: start a dataset from what a user already has — a live MCP server, an
//! OpenAI- or Anthropic-style tool list, or a tools.json — with one starter case per tool to
//! edit, and a toolscore.yaml when there is none.

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::{Value, json};

use super::catalog::{Loaded, ServerFlags, is_url, live, load, server_of};
use super::usage;
use crate::cli::Error;
use toolscore_core::ExitCode;
use toolscore_core::catalog::{Catalog, to_tools_json};
use toolscore_core::command;
use toolscore_import::{CatalogFile, put_in_place, stage_dataset};
use toolscore_mcp::ServerSpec;
use toolscore_suite::{STARTER_PLACEHOLDER, STARTER_TAG};

mod refresh;

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Where the tools come from: a catalog file (an MCP tools/list result, OpenAI `tools` or
    /// Anthropic `tools`; detected), a dataset folder, or the URL of a streamable-HTTP MCP
    /// server. Or, instead, a stdio server's command after `--`.
    #[arg(value_name = "SOURCE")]
    pub source: Option<String>,
    /// The command that starts a stdio MCP server, after `--`:
    /// `toolscore init -- npx -y @modelcontextprotocol/server-everything`.
    #[arg(last = true, value_name = "COMMAND")]
    pub server_command: Vec<String>,
    /// The dataset's name: it is written to DIR/NAME [default: the server's name, or the
    /// file's].
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// The folder datasets live in.
    #[arg(long, value_name = "DIR", default_value = "datasets")]
    pub dir: PathBuf,
    /// Name the live server in a dataset.yaml, listed afresh on every run, instead of writing
    /// its catalog as it is now to tools.json.
    #[arg(long)]
    pub live: bool,
    /// Refresh a dataset of that name: its catalog is replaced by the one listed now; its cases
    /// are kept as they are (a starter case is added for each tool no case expects, and an
    /// unedited starter case of a tool that is gone is removed), and each case that does not
    /// fit (its tool gone, its args refused by the new schema) is reported.
    #[arg(long)]
    pub force: bool,
    /// The config to write when it does not exist (one provider to start with); an existing
    /// one is left as it is.
    #[arg(long, value_name = "FILE", default_value = "toolscore.yaml")]
    pub config: PathBuf,
    #[command(flatten)]
    pub server: ServerFlags,
}

pub(super) fn run(args: &InitArgs) -> Result<ExitCode, Error> {
    check_live(args)?;
    if let Some(name) = &args.name {
        check_name(name)?;
        refuse_existing(&args.dir.join(name), args.force)?;
    }
    let (loaded, spec) = load_source(args)?;
    if loaded.catalog.tools.is_empty() {
        return Err(usage(&format!(
            "{} lists no tools: nothing to start a dataset from",
            loaded.catalog.source
        )));
    }
    let name = match &args.name {
        Some(n) => n.clone(),
        None => {
            let n = default_name(args, &loaded)?;
            refuse_existing(&args.dir.join(&n), args.force)?;
            n
        }
    };
    let dest = args.dir.join(&name);
    // Checked before anything is written: a config that would not load stops init here.
    let config = config_to_write(&args.config, &dest)?;
    let cases = starter_cases(&loaded.catalog);
    let staging = match (&spec, args.live) {
        (Some((spec, timeout)), true) => {
            let yaml = dataset_yaml(spec, *timeout, &dest)?;
            stage_dataset(&dest, CatalogFile::Live(&yaml), &cases)?
        }
        _ => {
            let tools = to_tools_json(&loaded.catalog, loaded.server.as_ref());
            stage_dataset(&dest, CatalogFile::Tools(&tools), &cases)?
        }
    };
    // Only --force reaches here with a dataset in place (refuse_existing): a refresh.
    let refreshed = if dest.exists() {
        Some(refresh::refresh(&staging, &dest, &loaded.catalog, &cases)?)
    } else {
        put_in_place(&staging, &dest, false)?;
        None
    };
    if let Some(text) = &config {
        toolscore_core::write_file(&args.config, text.as_bytes())?;
    }
    match &refreshed {
        Some(r) => {
            for line in refresh::describe(r) {
                outln!("{line}")?;
            }
        }
        None => outln!(
            "wrote {} ({}, cases.jsonl with {} starter {}, one per tool)",
            dest.display(),
            if args.live {
                "dataset.yaml (the live server)"
            } else {
                "tools.json"
            },
            cases.len(),
            if cases.len() == 1 { "case" } else { "cases" }
        )?,
    }
    print_next_steps(&dest, refreshed.as_ref(), args, config.is_some())?;
    Ok(ExitCode::Pass)
}

/// A live server and how long to wait for it.
type LiveServer = (ServerSpec, std::time::Duration);

/// The catalog SOURCE or the command after `--` names, and the server when it is a live one.
fn load_source(args: &InitArgs) -> Result<(Loaded, Option<LiveServer>), Error> {
    match (&args.source, args.server_command.is_empty()) {
        (Some(_), false) => Err(usage(
            "give either SOURCE or a server command after `--`, not both",
        )),
        (None, true) => Err(usage(
            "name what the tools come from: a catalog file, a dataset folder, a URL, or a server command after `--`",
        )),
        (Some(url), true) if is_url(url) => {
            let (spec, timeout) = server_of(Some(url), &[], &args.server)?;
            Ok((live(&spec, &args.server)?, Some((spec, timeout))))
        }
        (Some(source), true) => Ok((load(source, &args.server)?, None)),
        (None, false) => {
            let (spec, timeout) = server_of(None, &args.server_command, &args.server)?;
            Ok((live(&spec, &args.server)?, Some((spec, timeout))))
        }
    }
}

/// `--live` names a server (a URL or a command), and never writes a header's value: it may
/// be a credential. Checked before the server is contacted.
fn check_live(args: &InitArgs) -> Result<(), Error> {
    if !args.live {
        return Ok(());
    }
    let names_server =
        args.source.as_deref().is_some_and(is_url) || !args.server_command.is_empty();
    if !names_server {
        return Err(usage(
            "--live names a server: give its URL or its command after `--`",
        ));
    }
    if !args.server.headers.is_empty() {
        return Err(usage(
            "--live with --header: header values may be credentials, and dataset.yaml is a file; pass the token with --token-env VAR, or add `headers:` to the dataset.yaml yourself",
        ));
    }
    Ok(())
}

/// A dataset name is one folder: letters, digits, `-`, `_` and `.`, not starting with `.`.
fn check_name(name: &str) -> Result<(), Error> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(usage(&format!(
            "--name {name:?}: a dataset name is one folder name of letters, digits, `-`, `_` and `.`"
        )))
    }
}

fn refuse_existing(dest: &Path, force: bool) -> Result<(), Error> {
    if dest.exists() && !force {
        return Err(usage(&format!(
            "{} already exists; pass --force to refresh its catalog from this source (its cases are kept, and those that do not fit it are reported), or --name to choose another",
            dest.display()
        )));
    }
    Ok(())
}

/// The server's name (`mcp-servers/everything` → `everything`), or the file's or folder's.
fn default_name(args: &InitArgs, loaded: &Loaded) -> Result<String, Error> {
    let raw = match (&loaded.server, &args.source) {
        (Some(server), _) => server
            .name
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_owned(),
        (None, Some(source)) => {
            let path = Path::new(source);
            let stem = if path.is_dir() {
                path.file_name()
            } else {
                path.file_stem()
            };
            stem.map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        }
        (None, None) => String::new(),
    };
    let name: String = raw
        .trim_end_matches("-server")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_') {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let name = name.trim_matches('-').to_owned();
    if name.is_empty() || name == "tools" {
        return Err(usage(
            "cannot tell what to call this dataset; name it with --name",
        ));
    }
    Ok(name)
}

/// One starter case per tool, in the catalog's order: the expected tool filled in, the
/// request and the arguments left to the user, and marked as a starter in its tags and source.
fn starter_cases(catalog: &Catalog) -> Vec<Value> {
    catalog
        .tools
        .iter()
        .map(|tool| {
            let what = tool
                .description
                .split_terminator(['.', '\n'])
                .next()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map_or(String::new(), |s| format!(" ({s})"));
            json!({
                "id": format!("starter-{}", tool.name),
                "messages": [{
                    "role": "user",
                    "content": format!("{STARTER_PLACEHOLDER} write what a user would ask that needs {}{what}", tool.name),
                }],
                "expect": {"tool": tool.name},
                "tags": [STARTER_TAG],
                "source": {"toolscore init": "a starter case: write the user's request above, then add the expected \"args\""},
            })
        })
        .collect()
}

/// The dataset.yaml that names the server: a stdio server's command runs from where `init`
/// ran (its `cwd` written relative to the dataset folder); a URL server's token stays in its
/// variable, and header values are never written ([`check_live`] refuses them).
fn dataset_yaml(
    spec: &ServerSpec,
    timeout: std::time::Duration,
    dest: &Path,
) -> Result<String, Error> {
    let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let mut yaml = String::from(
        "# Written by `toolscore init`: this dataset's catalog is the live server below, listed\n# afresh on every run.\ncatalog:\n",
    );
    match spec {
        ServerSpec::Stdio {
            command,
            args: server_args,
            env,
            cwd,
        } => {
            yaml.push_str(&format!("  command: {}\n", q(command)));
            let list: Vec<String> = server_args.iter().map(|a| q(a)).collect();
            yaml.push_str(&format!("  args: [{}]\n", list.join(", ")));
            if !env.is_empty() {
                let pairs: Vec<String> = env
                    .iter()
                    .map(|(k, v)| format!("{}: {}", q(k), q(v)))
                    .collect();
                yaml.push_str(&format!("  env: {{{}}}\n", pairs.join(", ")));
            }
            let from = cwd.clone().unwrap_or_else(|| PathBuf::from("."));
            yaml.push_str(&format!("  cwd: {}\n", q(&relative_from(dest, &from)?)));
        }
        ServerSpec::Http { url, token_env, .. } => {
            yaml.push_str(&format!("  url: {}\n", q(url)));
            if let Some(var) = token_env {
                yaml.push_str(&format!("  token_env: {}\n", q(var)));
            }
        }
    }
    yaml.push_str(&format!("  timeout_s: {}\n", timeout.as_secs_f64()));
    Ok(yaml)
}

/// `target` (relative to where `init` runs) as seen from the dataset folder `dest`.
fn relative_from(dest: &Path, target: &Path) -> Result<String, Error> {
    if target.is_absolute() || dest.is_absolute() {
        let absolute = std::env::current_dir()
            .map_err(|e| Error::io("cannot read the current folder", e))?
            .join(target);
        return Ok(absolute.display().to_string());
    }
    let ups = dest.components().count();
    let mut path = PathBuf::new();
    for _ in 0..ups {
        path.push("..");
    }
    // `.` adds nothing: `../..`, not `../../.`.
    for part in target.components() {
        if part != std::path::Component::CurDir {
            path.push(part);
        }
    }
    Ok(path.display().to_string())
}

/// The config `init` starts a user with (one OpenAI provider, the new dataset), parsed as
/// `run` will read it; None when `path` exists, which init never edits.
fn config_to_write(path: &Path, dest: &Path) -> Result<Option<String>, Error> {
    if path.exists() {
        return Ok(None);
    }
    let text = format!(
        "# Written by `toolscore init`. Flags override everything here; every key is in\n\
         # toolscore's docs/reference/config.md.\n\
         defaults:\n  trials: 20\n  provider: openai\n\n\
         providers:\n  openai:\n    kind: openai-responses   # reads OPENAI_API_KEY\n    model: gpt-4.1-mini\n\n\
         datasets:\n  - {}\n",
        dest.display()
    );
    let base = path.parent().unwrap_or(Path::new("."));
    toolscore_suite::parse_config(&text, &path.display().to_string(), base)?;
    Ok(Some(text))
}

fn print_next_steps(
    dest: &Path,
    refreshed: Option<&refresh::Refreshed>,
    args: &InitArgs,
    wrote_config: bool,
) -> Result<(), Error> {
    if wrote_config {
        outln!(
            "wrote {} (provider `openai`, model gpt-4.1-mini: set OPENAI_API_KEY, or change it)",
            args.config.display()
        )?;
    } else {
        outln!("left {} as it is", args.config.display())?;
    }
    let (provider, why) = if wrote_config {
        (String::new(), None)
    } else {
        run_provider(&args.config)
    };
    outln!("\nnext:")?;
    let cases_file = dest.join("cases.jsonl");
    match refreshed {
        None => outln!(
            "  1. edit {}: in each starter case, write the request and add the expected \"args\"",
            cases_file.display()
        )?,
        Some(r) if r.stale.is_empty() && r.added_starters.is_empty() => {
            outln!("  1. nothing to edit: every case fits the new catalog")?;
        }
        Some(r) => {
            let mut work = Vec::new();
            if !r.stale.is_empty() {
                work.push("fix or delete each case above that does not fit");
            }
            if !r.added_starters.is_empty() {
                work.push(
                    "in each new starter case, write the request and add the expected \"args\"",
                );
            }
            outln!("  1. edit {}: {}", cases_file.display(), work.join("; "))?;
        }
    }
    let dataset = dest.display().to_string();
    outln!(
        "  2. {}",
        command(["toolscore", "validate", "--dataset", &dataset])
    )?;
    outln!(
        "  3. {}{provider} --trials 10",
        command(["toolscore", "run", "--dataset", &dataset])
    )?;
    if let Some(why) = why {
        outln!("     ({why})")?;
    }
    Ok(())
}

/// The model a new dataset is first run against when no config names one: the provider
/// `init` writes into a new config, as KIND:MODEL.
const STARTER_MODEL: &str = "openai-responses:gpt-4.1-mini";

/// The `--provider` flag (with its leading space; empty when none is needed) that makes `run`
/// call a model on a new dataset with the existing config at `path`, and why it is that one.
/// `run` without `--provider` uses the config's default provider (or its only one); a replay
/// serves only what its cassette recorded, never a dataset made a moment ago, so the printed
/// command names a provider of the config that calls a model instead, or a KIND:MODEL.
fn run_provider(path: &Path) -> (String, Option<String>) {
    let file = path.display();
    let config = match toolscore_suite::load_config(path) {
        Ok(config) => config,
        Err(_) => {
            return (
                " --provider PROVIDER".to_owned(),
                Some(format!(
                    "{file} does not load, so which provider to name is yours to say; `toolscore validate` shows why"
                )),
            );
        }
    };
    let replays = |name: &str| {
        config
            .providers
            .get(name)
            .is_some_and(|p| p.kind == toolscore_suite::REPLAY_KIND)
    };
    let chosen = config.defaults.provider.clone().or_else(|| {
        (config.providers.len() == 1)
            .then(|| config.providers.keys().next().cloned())
            .flatten()
    });
    let why_not_chosen = match &chosen {
        Some(name) if !replays(name) => return (String::new(), None),
        Some(name) => format!(
            "`{name}`, {file}'s default provider, replays recorded responses, and has none for this dataset"
        ),
        None => format!("{file} names no default provider"),
    };
    let callers: Vec<&String> = config
        .providers
        .iter()
        .filter(|(_, p)| p.kind != toolscore_suite::REPLAY_KIND)
        .map(|(name, _)| name)
        .collect();
    match callers.split_first() {
        Some((first, others)) => {
            let entry = &config.providers[first.as_str()];
            let needs = match (&entry.start, key_variable(entry)) {
                (Some(start), _) => format!(" (start it first: `{start}`)"),
                (None, Some(var)) => format!(" (it reads {var})"),
                (None, None) => String::new(),
            };
            let also = match others {
                [] => String::new(),
                [only] => format!("; so does `{only}`"),
                [rest @ .., last] => {
                    let names: Vec<String> = rest.iter().map(|n| format!("`{n}`")).collect();
                    format!("; so do {} and `{last}`", names.join(", "))
                }
            };
            (
                format!(" --provider {first}"),
                Some(format!(
                    "{why_not_chosen}; `{first}` calls a model{needs}{also}"
                )),
            )
        }
        None => (
            format!(" --provider {STARTER_MODEL}"),
            Some(format!(
                "{why_not_chosen}, and no provider of it calls a model; {STARTER_MODEL} reads OPENAI_API_KEY, and any KIND:MODEL will do (docs/guides/providers.md)"
            )),
        ),
    }
}

/// The environment variable a provider of the config reads its key from, if any.
fn key_variable(entry: &toolscore_suite::ProviderEntry) -> Option<String> {
    entry.api_key_env.clone().or_else(|| {
        entry
            .kind
            .parse::<toolscore_provider::ProviderKind>()
            .ok()
            .and_then(|k| k.adapter().default_key_env())
            .map(str::to_owned)
    })
}
