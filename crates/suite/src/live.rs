//! `datasets/<name>/dataset.yaml`: a dataset whose catalog is a live MCP server instead of a
//! `tools.json`.
//!
//! ```yaml
//! catalog:
//!   command: node                # a child process over stdio
//!   args: [server.js, --flag]
//!   env: {LOG_LEVEL: warn}       # added to toolscore's environment
//!   cwd: .                       # relative to the dataset folder [default: the dataset folder]
//!   timeout_s: 60                # start, initialize and list [default: 60]
//! ```
//!
//! or `catalog: {url: https://…/mcp, headers: {X-Team: eval}, token_env: MCP_TOKEN}` for a
//! streamable-HTTP server (the token is read from the variable; never written in the file).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use toolscore_core::{Error, InputError};
use toolscore_mcp::ServerSpec;

/// The file next to `cases.jsonl` that names a live server.
pub const DATASET_FILE: &str = "dataset.yaml";

/// Default time to start a server, initialize and list its tools.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDatasetFile {
    catalog: RawServer,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    token_env: Option<String>,
    timeout_s: Option<f64>,
}

/// A server named by a dataset, with how long to wait for it.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveCatalogSpec {
    pub spec: ServerSpec,
    pub timeout: Duration,
    /// The dataset.yaml that names it, for messages and as the catalog's source.
    pub file: PathBuf,
}

/// `dir/dataset.yaml` parsed, or None when the dataset has none. Like every loader of this
/// layer, it fails with the core [`Error`].
pub fn load_dataset_file(dir: &Path) -> Result<Option<LiveCatalogSpec>, Error> {
    let path = dir.join(DATASET_FILE);
    if !path.exists() {
        return Ok(None);
    }
    let text = toolscore_core::read_text(&path)?;
    Ok(Some(parse_dataset_file(&text, &path, dir)?))
}

/// Parses dataset.yaml text; `dir` is the dataset folder (the default working folder).
pub fn parse_dataset_file(
    text: &str,
    path: &Path,
    dir: &Path,
) -> Result<LiveCatalogSpec, InputError> {
    let file = path.display().to_string();
    let raw: RawDatasetFile =
        serde_saphyr::from_str(text).map_err(|e| InputError::yaml(&file, "dataset file", &e))?;
    server_spec(raw.catalog, text, path, dir, "catalog")
}

/// A server named by a mapping (`catalog:` of a dataset.yaml or of a scenario): `text` is the
/// file's text (for line numbers), `dir` the folder relative paths start from, `key` the
/// mapping's field name in messages.
pub(crate) fn server_spec(
    s: RawServer,
    text: &str,
    path: &Path,
    dir: &Path,
    key: &str,
) -> Result<LiveCatalogSpec, InputError> {
    let file = path.display().to_string();
    let line_of = |key: &str| toolscore_core::catalog::line_of(text, &format!("{key}:"));
    let err = |field: &str, msg: &str| {
        InputError::at(&file, line_of(field), &format!("{key}.{field}"), msg)
    };
    let timeout = match s.timeout_s {
        None => DEFAULT_TIMEOUT,
        Some(t) => toolscore_core::timeout_from_seconds(t).ok_or_else(|| {
            err(
                "timeout_s",
                &format!(
                    "must be a number of seconds {}",
                    toolscore_core::TIMEOUT_RANGE
                ),
            )
        })?,
    };
    let mut s = s;
    let spec = match (s.command.take(), s.url.take()) {
        (Some(_), Some(_)) => {
            return Err(err(
                "url",
                "give either `command` (a stdio server) or `url` (a streamable-HTTP server), not both",
            ));
        }
        (None, None) => {
            return Err(InputError::at(
                &file,
                line_of(key),
                key,
                "name a server: `command` (with `args`, `env`, `cwd`) for stdio, or `url` (with `headers`, `token_env`) for streamable HTTP",
            ));
        }
        (Some(command), None) => stdio_server(command, s, dir, &err)?,
        (None, Some(url)) => http_server(url, s, &err)?,
    };
    Ok(LiveCatalogSpec {
        spec,
        timeout,
        file: path.to_owned(),
    })
}

/// A stdio server: its command with `args`, `env` and `cwd` (relative to `dir`); `err` locates
/// a fault at a field of the mapping.
fn stdio_server(
    command: String,
    s: RawServer,
    dir: &Path,
    err: &dyn Fn(&str, &str) -> InputError,
) -> Result<ServerSpec, InputError> {
    if command.trim().is_empty() {
        return Err(err("command", "must not be empty"));
    }
    if !s.headers.is_empty() || s.token_env.is_some() {
        return Err(err(
            if s.headers.is_empty() {
                "token_env"
            } else {
                "headers"
            },
            "`headers` and `token_env` are for a `url` server",
        ));
    }
    let cwd = s.cwd.map_or_else(|| dir.to_owned(), |c| dir.join(c));
    Ok(ServerSpec::Stdio {
        command,
        args: s.args,
        env: s.env,
        cwd: Some(cwd),
    })
}

/// A streamable-HTTP server: its URL with `headers` and `token_env`.
fn http_server(
    url: String,
    s: RawServer,
    err: &dyn Fn(&str, &str) -> InputError,
) -> Result<ServerSpec, InputError> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(err("url", "must start with http:// or https://"));
    }
    if !s.args.is_empty() || !s.env.is_empty() || s.cwd.is_some() {
        return Err(err(
            "url",
            "`args`, `env` and `cwd` are for a `command` server",
        ));
    }
    if let Some(var) = &s.token_env
        && (var.is_empty() || var.contains(char::is_whitespace))
    {
        return Err(err("token_env", "must name an environment variable"));
    }
    Ok(ServerSpec::Http {
        url,
        headers: s.headers,
        token_env: s.token_env,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<LiveCatalogSpec, InputError> {
        parse_dataset_file(text, Path::new("d/dataset.yaml"), Path::new("d"))
    }

    #[test]
    fn stdio_and_http_servers() {
        let s = parse("catalog:\n  command: node\n  args: [s.js]\n  env: {A: b}\n").unwrap();
        assert_eq!(
            s.spec,
            ServerSpec::Stdio {
                command: "node".into(),
                args: vec!["s.js".into()],
                env: BTreeMap::from([("A".into(), "b".into())]),
                cwd: Some(PathBuf::from("d")),
            }
        );
        assert_eq!(s.timeout, DEFAULT_TIMEOUT);
        let s = parse("catalog:\n  url: http://h/mcp\n  token_env: TOK\n  timeout_s: 5\n").unwrap();
        assert_eq!(s.spec.label(), "http://h/mcp");
        assert_eq!(s.timeout, Duration::from_secs(5));
    }

    #[test]
    fn mistakes_name_the_line_and_field() {
        let e = parse("catalog:\n  command: node\n  url: http://h\n").unwrap_err();
        assert_eq!(e.location, "d/dataset.yaml:3");
        assert_eq!(e.field.as_deref(), Some("catalog.url"));
        let e = parse("catalog:\n  url: ftp://h\n").unwrap_err().to_string();
        assert!(e.contains("must start with http://"), "{e}");
        let e = parse("catalog:\n  comand: node\n").unwrap_err().to_string();
        assert!(e.starts_with("d/dataset.yaml:2"), "{e}");
        let e = parse("catalog: {}\n").unwrap_err().to_string();
        assert!(e.contains("name a server"), "{e}");
    }
}
