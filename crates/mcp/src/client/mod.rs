//! Live MCP servers, through the official Rust SDK (`rmcp`, pinned in Cargo.toml). This is the
//! only module that names `rmcp`, so an upgrade of the SDK touches this file alone.
//!
//! A server is a child process spoken to over stdio, or a URL spoken to over streamable HTTP.
//! [`McpSession`] is one initialized connection: list its tools, call them, shut it down. A
//! child process runs in its own process group, so a Ctrl-C in the terminal reaches toolscore
//! only and toolscore shuts the server down itself (close stdin, then SIGTERM, then SIGKILL
//! to the whole group, which also covers the grandchildren `npx` starts).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceError, ServiceExt as _};
use serde_json::Value;

use toolscore_core::catalog::Catalog;
use toolscore_core::catalog::source::ServerIdentity;

mod bounded;
mod listing;
mod raw;

use bounded::{BoundedChild, EXIT_GRACE, StderrTail, StdoutFault};
use bounded::{
    MAX_ERROR_MESSAGE_BYTES, MAX_LISTING_BYTES, MAX_MESSAGE_BYTES, MAX_PAGES, MAX_TOOLS,
};
#[cfg(test)]
use listing::catalog_of_listing;
pub use listing::list_catalog_blocking;
pub(crate) use raw::raw_initialize;
use toolscore_core::cut_text;

/// What an interrupted listing left behind.
pub const MCP_SHUT_DOWN: &str = "the MCP server was shut down";

/// How to reach a server: a command toolscore starts, or a URL.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerSpec {
    /// A child process speaking MCP over its stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Added to toolscore's own environment, which the child inherits.
        env: BTreeMap<String, String>,
        /// Working folder of the child [default: toolscore's].
        cwd: Option<PathBuf>,
    },
    /// A streamable-HTTP endpoint.
    Http {
        url: String,
        /// Sent with every request. Values are never printed.
        headers: BTreeMap<String, String>,
        /// Environment variable holding a bearer token, sent as `Authorization: Bearer …`.
        token_env: Option<String>,
    },
}

impl ServerSpec {
    /// A stdio server from a command line (program, then its arguments).
    pub fn command_line(words: &[String]) -> Option<ServerSpec> {
        let (command, args) = words.split_first()?;
        Some(ServerSpec::Stdio {
            command: command.clone(),
            args: args.to_vec(),
            env: BTreeMap::new(),
            cwd: None,
        })
    }

    /// An HTTP server at `url` with no headers or token.
    pub fn url(url: &str) -> ServerSpec {
        ServerSpec::Http {
            url: url.to_owned(),
            headers: BTreeMap::new(),
            token_env: None,
        }
    }

    /// How the server is named in messages and records: the command line, or the URL without
    /// its query string and user info (either may carry a secret). Never an env or header value.
    pub fn label(&self) -> String {
        match self {
            ServerSpec::Stdio { command, args, .. } => {
                toolscore_core::command(std::iter::once(command).chain(args))
            }
            ServerSpec::Http { url, .. } => redact_url(url),
        }
    }
}

fn redact_url(url: &str) -> String {
    let without_query = url.split(['?', '#']).next().unwrap_or(url);
    match without_query.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = match rest.find('/') {
                Some(i) => rest.split_at(i),
                None => (rest, ""),
            };
            let host = authority.rsplit('@').next().unwrap_or(authority);
            format!("{scheme}://{host}{path}")
        }
        None => without_query.to_owned(),
    }
}

/// A catalog listed from a live server, with the server that served it.
#[derive(Debug, Clone)]
pub struct LiveCatalog {
    pub catalog: Catalog,
    pub server: ServerIdentity,
}

/// What a tool call returned (a tool-execution error is a result with `is_error`, not an
/// [`McpError`]: the model reads it).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// Content blocks as the server sent them (`{"type": "text", "text": …}`, images, …).
    pub content: Vec<Value>,
    pub structured_content: Option<Value>,
    pub is_error: bool,
}

impl ToolResult {
    /// The text blocks joined by newlines: what a text-only model is shown.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Why talking to a server failed. Every variant names the server; those that can quote the
/// server's stderr do. `stderr` is None for a server reached over HTTP: it has no stderr of
/// ours to quote, so its errors say nothing about one.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum McpError {
    /// Bad settings, found before anything was started (a missing token variable).
    #[error("MCP server {server}: {message}")]
    Config { server: String, message: String },
    /// The command could not be run at all.
    #[error("MCP server {server}: failed to start: {message}")]
    Spawn { server: String, message: String },
    /// An HTTP server's address could not be reached: refused, unresolvable, timed out.
    #[error("MCP server {server}: cannot connect: {reason}")]
    Unreachable { server: String, reason: String },
    /// The server did not complete `initialize`.
    #[error(
        "MCP server {server}: failed to start: {message}{}",
        stderr_block(stderr)
    )]
    Start {
        server: String,
        message: String,
        stderr: Option<String>,
    },
    #[error("MCP server {server}: no answer to {what} within {}s{}", after.as_secs_f64(), stderr_block(stderr))]
    Timeout {
        server: String,
        what: String,
        after: Duration,
        stderr: Option<String>,
    },
    /// The server answered with something that is not a catalog.
    #[error(
        "MCP server {server}: malformed tools/list result: {message}{}",
        stderr_block(stderr)
    )]
    Malformed {
        server: String,
        message: String,
        stderr: Option<String>,
    },
    /// A listing passed one of the bounds on pages, tools or bytes ([`MAX_PAGES`],
    /// [`MAX_TOOLS`], [`MAX_LISTING_BYTES`]).
    #[error("MCP server {server}: {what}: {message}")]
    Limit {
        server: String,
        what: String,
        message: String,
    },
    /// The server answered a request with a JSON-RPC error.
    #[error("MCP server {server}: {what} answered with JSON-RPC error {code}: {message}")]
    Rpc {
        server: String,
        what: String,
        code: i32,
        message: String,
    },
    /// A streamable-HTTP server answered a request with an error status (429, 5xx, 400, …)
    /// instead of a JSON-RPC message. `retry_after` is its `Retry-After` header as sent, if
    /// any (kept for 429 and 5xx).
    #[error("MCP server {server}: {what} answered with HTTP {status}{}", retry_after.as_ref().map_or(String::new(), |r| format!(" (Retry-After: {r})")))]
    HttpStatus {
        server: String,
        what: String,
        status: u16,
        retry_after: Option<String>,
    },
    /// The connection broke during a request.
    #[error(
        "MCP server {server}: {what} failed: {message}{}",
        stderr_block(stderr)
    )]
    Transport {
        server: String,
        what: String,
        message: String,
        stderr: Option<String>,
    },
    #[error("interrupted")]
    Interrupted,
}

fn stderr_block(stderr: &Option<String>) -> String {
    let Some(stderr) = stderr else {
        return String::new();
    };
    if stderr.trim().is_empty() {
        return "\n  (the server wrote nothing to stderr)".to_owned();
    }
    let mut out = String::from("\n  its stderr ended with:");
    for line in stderr.trim_end().lines() {
        out.push_str("\n  | ");
        out.push_str(line);
    }
    out
}

impl From<McpError> for toolscore_core::Error {
    /// A server that cannot be listed is bad input (exit 2): the config names it; an
    /// interruption is exit 130.
    fn from(e: McpError) -> Self {
        match e {
            McpError::Interrupted => toolscore_core::Error::Interrupted(MCP_SHUT_DOWN),
            other => {
                toolscore_core::Error::Input(toolscore_core::InputError::new(other.to_string()))
            }
        }
    }
}

/// How long to wait for a dying child's stderr before quoting it.
const STDERR_GRACE: Duration = Duration::from_millis(1500);

/// One initialized connection to a server. Each trial of a scenario can open its own.
pub struct McpSession {
    service: RunningService<RoleClient, ClientConfig>,
    server: String,
    identity: ServerIdentity,
    stderr: Option<StderrTail>,
    /// Why a stdio server's output was refused, if it was.
    fault: Option<StdoutFault>,
    /// Process group of a stdio child, to end it if a graceful shutdown does not.
    child_group: Option<i32>,
    timeout: Duration,
    /// A request went unanswered for the whole timeout: the server is not shut down
    /// gracefully (its stdio child was killed then), only closed.
    unresponsive: AtomicBool,
}

/// A connection under way: `initialize` within the timeout (the outer `Err`) or not.
struct Started {
    service: Result<
        Result<RunningService<RoleClient, ClientConfig>, rmcp::service::ClientInitializeError>,
        tokio::time::error::Elapsed,
    >,
    stderr: Option<StderrTail>,
    fault: Option<StdoutFault>,
    child_group: Option<i32>,
}

async fn stderr_text(tail: &Option<StderrTail>) -> Option<String> {
    match tail {
        Some(t) => Some(t.text(STDERR_GRACE).await),
        None => None,
    }
}

/// What starts a stdio server: its command, arguments, added environment and folder.
struct StdioParts<'a> {
    command: &'a String,
    args: &'a [String],
    env: &'a BTreeMap<String, String>,
    cwd: Option<&'a PathBuf>,
}

/// The parts of a stdio server spec; an HTTP one is an error.
fn stdio_parts(spec: &ServerSpec) -> Result<StdioParts<'_>, McpError> {
    match spec {
        ServerSpec::Stdio {
            command,
            args,
            env,
            cwd,
        } => Ok(StdioParts {
            command,
            args,
            env,
            cwd: cwd.as_ref(),
        }),
        ServerSpec::Http { .. } => Err(McpError::Config {
            server: spec.label(),
            message: "not a stdio server".into(),
        }),
    }
}

/// Spawns a stdio server in its own process group, read through the bounded transport, and
/// sends `initialize`.
async fn start_stdio(
    spec: &ServerSpec,
    client: ClientConfig,
    timeout: Duration,
    group: &AtomicI32,
) -> Result<Started, McpError> {
    let StdioParts {
        command,
        args,
        env: vars,
        cwd,
    } = stdio_parts(spec)?;
    let server = spec.label();
    let mut cmd = process_wrap::tokio::CommandWrap::with_new(command, |c| {
        c.args(args);
        c.envs(vars);
        if let Some(dir) = cwd {
            c.current_dir(dir);
        }
    });
    cmd.wrap(process_wrap::tokio::ProcessGroup::leader());
    let (transport, stderr, fault) = BoundedChild::spawn(cmd).map_err(|e| McpError::Spawn {
        server: server.clone(),
        message: spawn_message(command, cwd, &e),
    })?;
    let child_group = transport.id().map(|p| p as i32);
    group.store(child_group.unwrap_or(0), Ordering::SeqCst);
    let tail = stderr.map(|s| StderrTail::follow(s, server));
    Ok(Started {
        service: tokio::time::timeout(timeout, client.serve(transport)).await,
        stderr: tail,
        fault: Some(fault),
        child_group,
    })
}

/// Reaches a streamable-HTTP server (with its headers and bearer token) and sends
/// The bearer token of an HTTP server whose `token_env` names a variable: its value, or a
/// configuration error when it is unset or empty. `None` when no variable is named.
pub(super) fn bearer_token(
    server: &str,
    token_env: Option<&str>,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<Option<String>, McpError> {
    let Some(var) = token_env else {
        return Ok(None);
    };
    env(var)
        .filter(|t| !t.is_empty())
        .map(Some)
        .ok_or_else(|| McpError::Config {
            server: server.to_owned(),
            message: format!("the bearer token variable {var} is not set (token_env names it)"),
        })
}

/// `initialize`. The SDK bounds each message at [`MAX_MESSAGE_BYTES`] itself.
/// An HTTP server's address, headers and bearer token, read and checked once for every way
/// toolscore reaches it (the SDK's transport, the raw `initialize` probe).
pub(super) struct HttpTarget {
    pub url: String,
    pub headers: std::collections::HashMap<HeaderName, HeaderValue>,
    pub token: Option<String>,
}

impl HttpTarget {
    /// `None` for a stdio server.
    pub(super) fn of(
        spec: &ServerSpec,
        env: &(dyn Fn(&str) -> Option<String> + Sync),
    ) -> Result<Option<HttpTarget>, McpError> {
        let ServerSpec::Http {
            url,
            headers,
            token_env,
        } = spec
        else {
            return Ok(None);
        };
        let server = spec.label();
        let mut map = std::collections::HashMap::new();
        for (name, value) in headers {
            let bad = |what: &str| McpError::Config {
                server: server.clone(),
                message: format!("header `{name}`: invalid {what}"),
            };
            let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("name"))?;
            let v = HeaderValue::from_str(value).map_err(|_| bad("value"))?;
            map.insert(n, v);
        }
        Ok(Some(HttpTarget {
            url: url.clone(),
            headers: map,
            token: bearer_token(&server, token_env.as_deref(), env)?,
        }))
    }
}

/// `initialize`. The SDK bounds each message at [`MAX_MESSAGE_BYTES`] itself.
async fn start_http(
    target: HttpTarget,
    client: ClientConfig,
    timeout: Duration,
) -> Result<Started, McpError> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(target.url.as_str());
    if let Some(token) = target.token {
        config = config.auth_header(token);
    }
    let map = target.headers;
    config = config.custom_headers(map);
    let transport = StreamableHttpClientTransport::from_config(config);
    Ok(Started {
        service: tokio::time::timeout(timeout, client.serve(transport)).await,
        stderr: None,
        fault: None,
        child_group: None,
    })
}

impl McpSession {
    /// Starts (stdio) or reaches (HTTP) the server and completes `initialize`, within
    /// `timeout`. `env` reads environment variables (the bearer token), injected for tests.
    pub async fn connect(
        spec: &ServerSpec,
        timeout: Duration,
        env: &(dyn Fn(&str) -> Option<String> + Sync),
    ) -> Result<McpSession, McpError> {
        Self::connect_noting_group(spec, timeout, env, &AtomicI32::new(0)).await
    }

    /// [`McpSession::connect`], storing a stdio child's process group in `group` as soon as
    /// it is spawned, so a caller that abandons the connection (Ctrl-C) can still end it.
    pub(crate) async fn connect_noting_group(
        spec: &ServerSpec,
        timeout: Duration,
        env: &(dyn Fn(&str) -> Option<String> + Sync),
        group: &AtomicI32,
    ) -> Result<McpSession, McpError> {
        let server = spec.label();
        let client = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolscore", env!("CARGO_PKG_VERSION")),
        );
        let started = match HttpTarget::of(spec, env)? {
            None => start_stdio(spec, client, timeout, group).await?,
            Some(target) => start_http(target, client, timeout).await?,
        };
        let child_group = started.child_group;
        let stderr = started.stderr.clone();
        let fault = started.fault.clone();
        let service = match started.service {
            Ok(Ok(service)) => service,
            Ok(Err(e)) => {
                // An HTTP server that could not be reached has no stderr and never started:
                // say why the address failed.
                if child_group.is_none()
                    && let Some(reason) = unreachable_reason(&e)
                {
                    return Err(McpError::Unreachable { server, reason });
                }
                terminate_group(child_group).await;
                return Err(McpError::Start {
                    // What our reader refused explains the failure better than the SDK can.
                    message: fault
                        .and_then(|f| f.get())
                        .unwrap_or_else(|| start_message(&e, child_group.is_some())),
                    server,
                    stderr: stderr_text(&stderr).await,
                });
            }
            Err(_) => {
                terminate_group(child_group).await;
                return Err(McpError::Timeout {
                    server,
                    what: "initialize".into(),
                    after: timeout,
                    stderr: stderr_text(&stderr).await,
                });
            }
        };
        let mut session = McpSession {
            service,
            server,
            identity: ServerIdentity {
                name: String::new(),
                version: String::new(),
                protocol_version: String::new(),
            },
            stderr,
            fault,
            child_group,
            timeout,
            unresponsive: AtomicBool::new(false),
        };
        match session.service.peer_info() {
            Some(info) => {
                let (name, version) = info
                    .server_info
                    .as_ref()
                    .map(|i| (i.name.clone(), i.version.clone()))
                    .unwrap_or_else(|| ("(unnamed)".to_owned(), String::new()));
                session.identity = ServerIdentity {
                    name,
                    version,
                    protocol_version: info.protocol_version.to_string(),
                };
                Ok(session)
            }
            None => {
                session.close().await;
                Err(McpError::Start {
                    server: session.server.clone(),
                    message: "no initialize result".into(),
                    stderr: stderr_text(&session.stderr).await,
                })
            }
        }
    }

    /// What the server said about itself.
    pub fn server(&self) -> &ServerIdentity {
        &self.identity
    }

    /// The server's name in messages (its command line or URL).
    pub fn label(&self) -> &str {
        &self.server
    }

    /// Calls one tool. A tool-execution error (`isError: true`) is an `Ok` result; a JSON-RPC
    /// error (unknown tool, invalid params) is [`McpError::Rpc`] with its code.
    pub async fn call_tool(&self, name: &str, arguments: &Value) -> Result<ToolResult, McpError> {
        let mut params = CallToolRequestParams::new(name.to_owned());
        match arguments {
            Value::Object(map) => params = params.with_arguments(map.clone()),
            Value::Null => {}
            _ => {
                return Err(McpError::Config {
                    server: self.server.clone(),
                    message: format!("tools/call {name}: arguments must be a JSON object"),
                });
            }
        }
        let what = format!("tools/call {name}");
        let called =
            tokio::time::timeout(self.timeout, self.service.peer().call_tool(params)).await;
        match called {
            Ok(Ok(result)) => Ok(ToolResult {
                content: result
                    .content
                    .iter()
                    .map(|c| serde_json::to_value(c).unwrap_or(Value::Null))
                    .collect(),
                structured_content: result.structured_content.clone(),
                is_error: result.is_error.unwrap_or(false),
            }),
            Ok(Err(e)) => Err(self.request_error(&what, e).await),
            Err(_) => Err(self.timed_out(what).await),
        }
    }

    /// A request got no answer within the timeout: the deadline has passed, so a stdio
    /// child's process group is killed now rather than after a graceful shutdown it is
    /// unlikely to heed, and the error quotes its stderr up to its death.
    pub(super) async fn timed_out(&self, what: String) -> McpError {
        self.unresponsive.store(true, Ordering::SeqCst);
        let stderr = match self.child_group {
            Some(group) => {
                signal_group(group, libc::SIGKILL);
                match &self.stderr {
                    Some(tail) => Some(tail.text(EXIT_GRACE).await),
                    None => None,
                }
            }
            None => self.stderr_settled().await,
        };
        McpError::Timeout {
            server: self.server.clone(),
            what,
            after: self.timeout,
            stderr,
        }
    }

    /// Ends the session: closes the transport and, for a child, waits for it to exit
    /// (closing its stdin, then SIGTERM, then SIGKILL to its process group).
    pub async fn shutdown(mut self) {
        self.close().await;
    }

    async fn close(&mut self) {
        // A server that answered gets [`EXIT_GRACE`] after its stdin closes and again after
        // SIGTERM (the transport's sequence); one that stopped answering was killed already
        // (stdio) or gets no more than one grace to end its session (HTTP).
        let bound = if self.unresponsive.load(Ordering::SeqCst) {
            EXIT_GRACE
        } else {
            EXIT_GRACE * 4
        };
        let closed = self.service.close_with_timeout(bound).await;
        if !matches!(closed, Ok(Some(_))) {
            terminate_group(self.child_group).await;
        } else if let Some(group) = self.child_group {
            // The leader has exited; anything it left in its group goes too.
            signal_group(group, libc::SIGKILL);
        }
    }

    /// The server's stderr to quote in an error, once its reader has caught up.
    async fn stderr_settled(&self) -> Option<String> {
        match &self.stderr {
            Some(tail) => Some(tail.settled().await),
            None => None,
        }
    }

    async fn request_error(&self, what: &str, e: ServiceError) -> McpError {
        if let Some((status, retry_after)) = http_status_of(&e) {
            return McpError::HttpStatus {
                server: self.server.clone(),
                what: what.to_owned(),
                status,
                retry_after,
            };
        }
        if let Some(fault) = self.fault.as_ref().and_then(StdoutFault::get) {
            // The connection ended because our reader refused the output: say what arrived.
            return McpError::Transport {
                server: self.server.clone(),
                what: what.to_owned(),
                message: fault,
                stderr: self.stderr_settled().await,
            };
        }
        match e {
            ServiceError::McpError(data) => McpError::Rpc {
                server: self.server.clone(),
                what: what.to_owned(),
                code: data.code.0,
                message: cut_text(&data.message, MAX_ERROR_MESSAGE_BYTES),
            },
            other => McpError::Transport {
                server: self.server.clone(),
                what: what.to_owned(),
                message: match &other {
                    ServiceError::TransportSend(t) => t.error.to_string(),
                    ServiceError::TransportClosed => "the connection closed".to_owned(),
                    _ => other.to_string(),
                },
                stderr: stderr_text(&self.stderr).await,
            },
        }
    }
}

/// The HTTP status (429 or 5xx) and `Retry-After` header behind a failed request, which the
/// SDK keeps inside the transport error it returns.
fn http_status_of(e: &ServiceError) -> Option<(u16, Option<String>)> {
    use rmcp::transport::streamable_http_client::{HttpStatusError, StreamableHttpError};
    let ServiceError::TransportSend(transport) = e else {
        return None;
    };
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(transport.error.as_ref());
    while let Some(current) = source {
        if let Some(StreamableHttpError::<reqwest::Error>::HttpStatus(h)) = current.downcast_ref() {
            return Some((h.status, h.retry_after.clone()));
        }
        if let Some(h) = current.downcast_ref::<HttpStatusError>() {
            return Some((h.status, h.retry_after.clone()));
        }
        // Other failing statuses (400, 405, …) reach us only as the SDK's text,
        // `HTTP 400 Bad Request: <body>`; without the status they would pass for a broken
        // connection.
        if let Some(StreamableHttpError::<reqwest::Error>::UnexpectedServerResponse(text)) =
            current.downcast_ref()
            && let Some(status) = status_in_message(text)
        {
            return Some((status, None));
        }
        source = current.source();
    }
    None
}

/// The status of a message `HTTP 400 Bad Request: …`.
fn status_in_message(text: &str) -> Option<u16> {
    let code = text.strip_prefix("HTTP ")?.get(..3)?;
    code.parse().ok().filter(|c| (100..=599).contains(c))
}

/// Why an HTTP server's address could not be reached, when that is why `initialize` failed
/// (the SDK keeps reqwest's error inside its transport error).
fn unreachable_reason(e: &rmcp::service::ClientInitializeError) -> Option<String> {
    use rmcp::service::ClientInitializeError as E;
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let E::TransportError { error, .. } = e else {
        return None;
    };
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error.error.as_ref());
    while let Some(current) = source {
        if let Some(StreamableHttpError::<reqwest::Error>::Client(client)) = current.downcast_ref()
        {
            return connect_failure(client);
        }
        if let Some(client) = current.downcast_ref::<reqwest::Error>() {
            return connect_failure(client);
        }
        source = current.source();
    }
    None
}

/// Why a request never reached the server (refused, a host name that does not resolve, a
/// timeout, TLS), in the user's terms; None when it did reach it.
pub(super) fn connect_failure(e: &reqwest::Error) -> Option<String> {
    if !e.is_connect() && !e.is_timeout() {
        return None;
    }
    let (mut refused, mut dns, mut timed_out) = (false, false, e.is_timeout());
    // The innermost cause says it in the system's words ("Connection refused (os error 111)",
    // "failed to lookup address information: Name or service not known").
    let mut innermost = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(current) = source {
        if let Some(io) = current.downcast_ref::<std::io::Error>() {
            refused |= io.kind() == std::io::ErrorKind::ConnectionRefused;
            timed_out |= io.kind() == std::io::ErrorKind::TimedOut;
        }
        let text = current.to_string();
        dns |= text.starts_with("dns error");
        innermost = text;
        source = current.source();
    }
    Some(if refused {
        "connection refused: nothing is listening at that host and port (is the server running, and is the URL right?)".to_owned()
    } else if dns {
        format!("the host name does not resolve ({innermost}); is the URL right?")
    } else if timed_out {
        format!("timed out connecting ({innermost})")
    } else {
        innermost
    })
}

/// Why `initialize` failed, in the user's terms rather than rmcp's type names.
fn start_message(e: &rmcp::service::ClientInitializeError, stdio: bool) -> String {
    use rmcp::service::ClientInitializeError as E;
    match e {
        // Which of the two a dead child causes is a race (writing to a closed pipe, or
        // reading end-of-file first), and both mean the same thing.
        E::ConnectionClosed(_) | E::TransportError { .. } if stdio => {
            "the process closed its stdout before answering initialize (it exited or crashed)"
                .to_owned()
        }
        E::TransportError { error, .. } => error.error.to_string(),
        E::JsonRpcError(data) => format!(
            "initialize answered with JSON-RPC error {}: {}",
            data.code.0,
            cut_text(&data.message, MAX_ERROR_MESSAGE_BYTES)
        ),
        other => other.to_string(),
    }
}

fn spawn_message(command: &str, cwd: Option<&PathBuf>, e: &std::io::Error) -> String {
    match (e.kind(), cwd) {
        (std::io::ErrorKind::NotFound, Some(dir)) if !dir.is_dir() => {
            format!("the working folder {} does not exist", dir.display())
        }
        (std::io::ErrorKind::NotFound, _) => {
            format!("cannot run `{command}`: no such program (is it installed and on PATH?)")
        }
        _ => format!("cannot run `{command}`: {e}"),
    }
}

fn signal_group(group: i32, signal: i32) -> bool {
    // SAFETY: killpg only sends a signal; a stale group id fails with ESRCH.
    group > 0 && unsafe { libc::killpg(group, signal) } == 0
}

/// Ends a child's process group when it could not be shut down through the transport:
/// SIGTERM, up to [`EXIT_GRACE`] to exit, then SIGKILL.
async fn terminate_group(group: Option<i32>) {
    let Some(group) = group else { return };
    if !signal_group(group, libc::SIGTERM) {
        return;
    }
    let step = Duration::from_millis(50);
    for _ in 0..(EXIT_GRACE.as_millis() / step.as_millis()) {
        tokio::time::sleep(step).await;
        if !signal_group(group, 0) {
            return;
        }
    }
    signal_group(group, libc::SIGKILL);
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_never_carry_secrets() {
        let spec = ServerSpec::Http {
            url: "https://user:pw@example.com/mcp?key=abc".into(),
            headers: BTreeMap::from([("X-Key".into(), "hunter2".into())]),
            token_env: Some("TOKEN".into()),
        };
        assert_eq!(spec.label(), "https://example.com/mcp");
        let spec = ServerSpec::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "a b".into()],
            env: BTreeMap::from([("API_KEY".into(), "hunter2".into())]),
            cwd: None,
        };
        assert_eq!(spec.label(), "npx -y 'a b'");
    }

    #[test]
    fn listing_is_checked_like_a_file() {
        let ok = vec![serde_json::json!({"name": "a", "inputSchema": {"type": "object"}})];
        assert_eq!(catalog_of_listing(&ok, "s").unwrap().tools.len(), 1);
        let dup = vec![ok[0].clone(), ok[0].clone()];
        assert_eq!(
            catalog_of_listing(&dup, "s").unwrap_err(),
            "tools[1].name: duplicate tool name `a`"
        );
        let bad = vec![serde_json::json!({"name": "", "inputSchema": {}})];
        assert!(
            catalog_of_listing(&bad, "s")
                .unwrap_err()
                .contains("non-empty")
        );
    }

    #[test]
    fn a_status_is_read_from_the_sdk_message() {
        assert_eq!(status_in_message("HTTP 400 Bad Request: nope"), Some(400));
        assert_eq!(
            status_in_message("HTTP 405 Method Not Allowed: "),
            Some(405)
        );
        assert_eq!(status_in_message("HTTP error"), None);
        assert_eq!(status_in_message("unexpected end of stream"), None);
    }

    #[test]
    fn stderr_is_quoted_line_by_line() {
        let e = McpError::Start {
            server: "srv".into(),
            message: "connection closed".into(),
            stderr: Some("boom\nline 2\n".into()),
        };
        assert_eq!(
            e.to_string(),
            "MCP server srv: failed to start: connection closed\n  its stderr ended with:\n  | boom\n  | line 2"
        );
    }
}
