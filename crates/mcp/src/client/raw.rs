//! One `initialize` outside the SDK, for probing version negotiation: the SDK only asks for
//! versions it supports. Read under the same bounds as a session: one message of at most
//! [`MAX_MESSAGE_BYTES`], UTF-8, within the timeout.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncBufReadExt as _;

use super::bounded::{BoundedStdout, StderrTail, StdoutFault, count};
use super::{
    EXIT_GRACE, MAX_MESSAGE_BYTES, McpError, STDERR_GRACE, ServerSpec, spawn_message,
    terminate_group,
};

/// Sends one `initialize` request asking for `protocol_version`, outside the SDK (which only
/// asks for versions it supports), and returns the server's raw JSON-RPC response: a result
/// or an error. The server is shut down afterwards. For probing version negotiation.
pub(crate) async fn raw_initialize(
    spec: &ServerSpec,
    protocol_version: &str,
    timeout: Duration,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<Value, McpError> {
    let request = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": protocol_version,
            "capabilities": {},
            "clientInfo": {"name": "toolscore-probe", "version": env!("CARGO_PKG_VERSION")},
        },
    });
    let timed_out = |stderr: Option<String>| McpError::Timeout {
        server: spec.label(),
        what: format!("initialize at protocol version {protocol_version}"),
        after: timeout,
        stderr,
    };
    match super::HttpTarget::of(spec, env)? {
        None => raw_stdio(spec, &request, protocol_version, timeout, &timed_out).await,
        Some(target) => {
            let answer = tokio::time::timeout(timeout, raw_http(spec, &target, &request)).await;
            match answer {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => Err(e),
                Err(_) => Err(timed_out(None)),
            }
        }
    }
}

async fn raw_stdio(
    spec: &ServerSpec,
    request: &Value,
    protocol_version: &str,
    timeout: Duration,
    timed_out: &dyn Fn(Option<String>) -> McpError,
) -> Result<Value, McpError> {
    let server = spec.label();
    let super::StdioParts {
        command,
        args,
        env: vars,
        cwd,
    } = super::stdio_parts(spec)?;
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args)
        .envs(vars)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let mut child = cmd.spawn().map_err(|e| McpError::Spawn {
        server: server.clone(),
        message: spawn_message(command, cwd, &e),
    })?;
    let group = child.id().map(|p| p as i32);
    let tail = child
        .stderr
        .take()
        .map(|s| StderrTail::follow(s, server.clone()));
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        terminate_group(group).await;
        return Err(McpError::Spawn {
            server,
            message: "no stdio pipes".into(),
        });
    };
    let fault = StdoutFault::default();
    let exchange = exchange(&mut stdin, stdout, request, fault.clone());
    let answer = tokio::time::timeout(timeout, exchange).await;
    drop(stdin);
    // A server that answered gets SIGTERM and a short grace; one that did not answer within
    // the deadline gets none. The leader is waited for here, not polled for: until it is
    // reaped its group still exists.
    let group = group.unwrap_or(0);
    let first = if answer.is_err() {
        libc::SIGKILL
    } else {
        libc::SIGTERM
    };
    super::signal_group(group, first);
    if tokio::time::timeout(EXIT_GRACE, child.wait())
        .await
        .is_err()
    {
        super::signal_group(group, libc::SIGKILL);
        let _ = child.wait().await;
    }
    // Anything the leader left in its group goes too.
    super::signal_group(group, libc::SIGKILL);
    let stderr = match &tail {
        Some(t) => Some(t.text(STDERR_GRACE).await),
        None => None,
    };
    match answer {
        Ok(Some(v)) => Ok(v),
        Ok(None) => Err(McpError::Start {
            server,
            message: fault.get().unwrap_or_else(|| format!(
                "the process closed its stdout without answering initialize at protocol version {protocol_version}"
            )),
            stderr,
        }),
        Err(_) => Err(timed_out(stderr)),
    }
}

async fn raw_http(
    spec: &ServerSpec,
    target: &super::HttpTarget,
    request: &Value,
) -> Result<Value, McpError> {
    let server = spec.label();
    let start_error = |message: String| McpError::Start {
        server: server.clone(),
        message,
        stderr: None,
    };
    let client = reqwest::Client::new();
    let mut req = client
        .post(&target.url)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(request).unwrap_or_default());
    for (k, v) in &target.headers {
        req = req.header(k, v);
    }
    if let Some(token) = &target.token {
        req = req.bearer_auth(token);
    }
    let mut resp = req
        .send()
        .await
        .map_err(|e| match super::connect_failure(&e) {
            Some(reason) => McpError::Unreachable {
                server: server.clone(),
                reason,
            },
            None => start_error(e.without_url().to_string()),
        })?;
    let status = resp.status();
    let session = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = bounded_body(&mut resp).await;
    // End the session the probe opened, if the server opened one.
    if let Some(id) = session {
        let _ = client
            .delete(&target.url)
            .header("mcp-session-id", id)
            .send()
            .await;
    }
    let body = body.map_err(start_error)?;
    // A JSON body, or an SSE stream whose `data:` lines carry the answer.
    let answer = serde_json::from_str::<Value>(&body).ok().or_else(|| {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|v| v.get("id") == Some(&Value::from(1)))
    });
    answer.ok_or_else(|| start_error(format!("HTTP {status} without a JSON-RPC answer")))
}

/// The body, read in chunks up to [`MAX_MESSAGE_BYTES`], as text.
async fn bounded_body(resp: &mut reqwest::Response) -> Result<String, String> {
    let mut body = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| e.without_url().to_string())?
    {
        if body.len() + chunk.len() > MAX_MESSAGE_BYTES {
            return Err(format!(
                "the server sent an answer of more than {} bytes (16 MiB), the bound on one message",
                count(MAX_MESSAGE_BYTES)
            ));
        }
        body.extend_from_slice(&chunk);
    }
    String::from_utf8(body).map_err(|e| {
        format!(
            "the server's answer is not valid UTF-8 (at byte {}), so not JSON-RPC",
            count(e.utf8_error().valid_up_to())
        )
    })
}

/// Writes `request` and reads lines until the answer with id 1; None when the output ends or
/// is refused (`fault` then says why).
async fn exchange(
    stdin: &mut tokio::process::ChildStdin,
    stdout: tokio::process::ChildStdout,
    request: &Value,
    fault: StdoutFault,
) -> Option<Value> {
    use tokio::io::AsyncWriteExt as _;
    let mut line = serde_json::to_vec(request).unwrap_or_default();
    line.push(b'\n');
    stdin.write_all(&line).await.ok()?;
    stdin.flush().await.ok()?;
    // The bounded reader fails a line past the bound, so `read_until` cannot grow past it.
    let mut reader = tokio::io::BufReader::new(BoundedStdout::new(stdout, fault));
    // Notifications and log lines may come first; the answer carries id 1.
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return None,
            Ok(_) => {
                if let Ok(v) = serde_json::from_slice::<Value>(&line)
                    && v.get("id") == Some(&Value::from(1))
                {
                    return Some(v);
                }
            }
        }
    }
}
