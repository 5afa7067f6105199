//! `toolscore probe`: deterministic edge checks of a live MCP server, each with a verdict and
//! the evidence for it. No model is involved; the same server answers the same way each time.
//!
//! - `result`: each of the dataset's expected calls is made; a tool that declares an
//!   `outputSchema` must return `structuredContent` valid against it, any other must return
//!   well-formed content blocks;
//! - `unknown-tool`: a call to a tool that does not exist must get the JSON-RPC error -32602
//!   (a tool-execution error naming the tool is tolerated with a warning; a success, a crash or
//!   silence fails);
//! - `invalid-arguments`: for each tool, arguments that break its input schema (the first
//!   required parameter, or else the first typed one, given a value of the wrong type) must get
//!   a tool-execution error (`isError: true`) whose text names the parameter, so a model can
//!   correct itself; a JSON-RPC error is a warning (the model never sees it), a success or an
//!   empty or generic message fails;
//! - `protocol-version`: an `initialize` at a version no server supports must get either a
//!   version the server does support (the lifecycle's counter-offer) or the error -32602 with
//!   the list of supported versions; echoing the unsupported version, a crash or silence fails.
//!
//! The judging functions are pure and unit-tested; [`probe`] only makes the calls.
//! Probing calls the server's tools, with valid and invalid arguments: point it at a test
//! instance.
//!
//! [`security`] holds the escape probes (`probe --security`): path traversal, server-side
//! request forgery to the probe's own loopback [`listener`], shell injection and schema
//! smuggling, each verdict resting on proof.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

mod listener;
pub(crate) mod security;

use crate::DatasetCall;
use crate::client::{McpError, McpSession, ServerSpec, ToolResult};
use toolscore_core::catalog::source::ServerIdentity;

/// The unsupported version the `protocol-version` check asks for.
const UNSUPPORTED_VERSION: &str = "1999-01-01";
/// The tool name the `unknown-tool` check calls.
const UNKNOWN_TOOL: &str = "toolscore_probe_no_such_tool";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckVerdict {
    Pass,
    Warn,
    Fail,
    Skip,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    pub check: &'static str,
    /// The tool (and case) it concerns, if one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    pub verdict: CheckVerdict,
    pub evidence: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProbeReport {
    pub source: String,
    pub server: ServerIdentity,
    pub checks: Vec<Check>,
}

impl ProbeReport {
    pub fn count(&self, verdict: CheckVerdict) -> usize {
        self.checks.iter().filter(|c| c.verdict == verdict).count()
    }
}

/// Longest evidence quoted from a server.
const MAX_EVIDENCE: usize = 300;

fn quote(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > MAX_EVIDENCE {
        let cut: String = one_line.chars().take(MAX_EVIDENCE).collect();
        format!("\"{cut}…\"")
    } else {
        format!("\"{one_line}\"")
    }
}

/// Content blocks as the MCP schema defines them; the first fault found.
fn content_fault(blocks: &[Value]) -> Option<String> {
    for (i, b) in blocks.iter().enumerate() {
        let field = |k: &str| b.get(k).and_then(Value::as_str).is_some();
        let fault = match b.get("type").and_then(Value::as_str) {
            Some("text") if !field("text") => Some("a text block without a string `text`"),
            Some("image" | "audio") if !(field("data") && field("mimeType")) => {
                Some("an image or audio block without string `data` and `mimeType`")
            }
            Some("resource_link") if !(field("uri") && field("name")) => {
                Some("a resource_link without string `uri` and `name`")
            }
            Some("resource")
                if b.get("resource")
                    .and_then(|r| r.get("uri"))
                    .and_then(Value::as_str)
                    .is_none() =>
            {
                Some("an embedded resource without `resource.uri`")
            }
            Some("text" | "image" | "audio" | "resource_link" | "resource") => None,
            Some(_) | None => Some("a block of unknown `type`"),
        };
        if let Some(f) = fault {
            return Some(format!("content[{i}]: {f}"));
        }
    }
    None
}

/// The `result` check of one call, given the tool's `outputSchema` (if it declares one).
fn judge_result(
    output_schema: Option<&Value>,
    result: &Result<ToolResult, McpError>,
) -> (CheckVerdict, String) {
    let r = match result {
        Ok(r) => r,
        Err(e) => {
            return (
                CheckVerdict::Fail,
                format!("the call failed: {}", first_line(e)),
            );
        }
    };
    if r.is_error {
        return (
            CheckVerdict::Fail,
            format!(
                "the expected call returned a tool error: {}",
                quote(&r.text())
            ),
        );
    }
    if let Some(f) = content_fault(&r.content) {
        return (CheckVerdict::Fail, f);
    }
    let Some(schema) = output_schema else {
        return (
            CheckVerdict::Pass,
            format!(
                "{} well-formed content block(s); no outputSchema declared",
                r.content.len()
            ),
        );
    };
    let Some(structured) = &r.structured_content else {
        return (
            CheckVerdict::Fail,
            "the tool declares an outputSchema but returned no structuredContent".into(),
        );
    };
    let validator = match jsonschema::options().build(schema) {
        Ok(v) => v,
        Err(e) => {
            return (
                CheckVerdict::Fail,
                format!("its outputSchema is not valid JSON Schema: {e}"),
            );
        }
    };
    let errors: Vec<String> = validator
        .iter_errors(structured)
        .take(3)
        .map(|e| {
            let path = e.instance_path().to_string();
            format!("{}: {e}", if path.is_empty() { "/" } else { &path })
        })
        .collect();
    if errors.is_empty() {
        (
            CheckVerdict::Pass,
            "structuredContent is valid against the outputSchema".into(),
        )
    } else {
        (
            CheckVerdict::Fail,
            format!(
                "structuredContent breaks the outputSchema: {}",
                errors.join("; ")
            ),
        )
    }
}

/// The `unknown-tool` check.
fn judge_unknown_tool(result: &Result<ToolResult, McpError>) -> (CheckVerdict, String) {
    match result {
        Err(McpError::Rpc {
            code: -32602,
            message,
            ..
        }) => (
            CheckVerdict::Pass,
            format!("JSON-RPC error -32602: {}", quote(message)),
        ),
        Err(McpError::Rpc { code, message, .. }) => (
            CheckVerdict::Warn,
            format!(
                "JSON-RPC error {code} (the specification uses -32602): {}",
                quote(message)
            ),
        ),
        Ok(r) if r.is_error && r.text().contains(UNKNOWN_TOOL) => (
            CheckVerdict::Warn,
            format!(
                "a tool-execution error instead of the JSON-RPC error -32602: {}",
                quote(&r.text())
            ),
        ),
        Ok(r) if r.is_error => (
            CheckVerdict::Fail,
            format!(
                "a tool-execution error that does not name the tool: {}",
                quote(&r.text())
            ),
        ),
        Ok(r) => (
            CheckVerdict::Fail,
            format!(
                "a call to a tool that does not exist succeeded: {}",
                quote(&r.text())
            ),
        ),
        Err(e) => (CheckVerdict::Fail, first_line(e)),
    }
}

/// Arguments that break `schema`: the parameter chosen and the whole argument object. None
/// when the schema has no typed top-level property to break.
fn breaking_arguments(schema: &Value) -> Option<(String, Value)> {
    let props = schema.get("properties")?.as_object()?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let typed = |name: &&String| {
        props
            .get(name.as_str())
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            .is_some()
    };
    let field = props
        .keys()
        .filter(typed)
        .find(|k| required.contains(&k.as_str()))
        .or_else(|| props.keys().find(typed))?
        .clone();
    let wrong = match props[&field]["type"].as_str() {
        Some("string") => Value::from(12345),
        Some("array") | Some("object") | Some("boolean") => Value::from("not-a-valid-value"),
        Some("null") => Value::from(1),
        // number, integer
        _ => Value::from("not-a-number"),
    };
    let mut args = serde_json::Map::new();
    args.insert(field.clone(), wrong);
    Some((field, Value::Object(args)))
}

/// Whether `text` names `field` as a word of its own (so that a parameter `a` is not found in
/// "Invalid").
pub(crate) fn names(text: &str, field: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    text.match_indices(field).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + field.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// The `invalid-arguments` check of one tool whose parameter `field` was given a wrong value.
fn judge_invalid_arguments(
    field: &str,
    result: &Result<ToolResult, McpError>,
) -> (CheckVerdict, String) {
    match result {
        Ok(r) if r.is_error => {
            let text = r.text();
            if names(&text, field) {
                (
                    CheckVerdict::Pass,
                    format!("isError naming `{field}`: {}", quote(&text)),
                )
            } else if text.trim().is_empty() {
                (CheckVerdict::Fail, "isError with an empty message".into())
            } else {
                (
                    CheckVerdict::Fail,
                    format!(
                        "isError, but the message does not name `{field}`: {}",
                        quote(&text)
                    ),
                )
            }
        }
        Ok(r) => (
            CheckVerdict::Fail,
            format!(
                "arguments breaking the input schema at `{field}` succeeded: {}",
                quote(&r.text())
            ),
        ),
        Err(McpError::Rpc { code, message, .. }) => (
            CheckVerdict::Warn,
            format!(
                "JSON-RPC error {code} instead of isError (a model never reads it): {}",
                quote(message)
            ),
        ),
        Err(e) => (CheckVerdict::Fail, first_line(e)),
    }
}

/// The `protocol-version` check, from the raw JSON-RPC answer to an `initialize` at
/// [`UNSUPPORTED_VERSION`].
fn judge_protocol_version(answer: &Result<Value, McpError>) -> (CheckVerdict, String) {
    let v = match answer {
        Ok(v) => v,
        Err(e) => return (CheckVerdict::Fail, first_line(e)),
    };
    if let Some(result) = v.get("result") {
        return match result.get("protocolVersion").and_then(Value::as_str) {
            Some(UNSUPPORTED_VERSION) => (
                CheckVerdict::Fail,
                format!("accepted the unsupported version {UNSUPPORTED_VERSION}"),
            ),
            Some(offered) => (
                CheckVerdict::Pass,
                format!("answered with a version it supports instead: {offered}"),
            ),
            None => (
                CheckVerdict::Fail,
                "an initialize result without protocolVersion".into(),
            ),
        };
    }
    let Some(error) = v.get("error") else {
        return (
            CheckVerdict::Fail,
            "an answer with neither result nor error".into(),
        );
    };
    let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let supported = error
        .get("data")
        .and_then(|d| d.get("supported"))
        .and_then(Value::as_array)
        .map(|s| {
            s.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        });
    match (code, supported) {
        (-32602, Some(list)) if !list.is_empty() => (
            CheckVerdict::Pass,
            format!("JSON-RPC error -32602 listing the supported versions: {list}"),
        ),
        (_, Some(list)) if !list.is_empty() => (
            CheckVerdict::Warn,
            format!("JSON-RPC error {code} (the specification uses -32602), supported: {list}"),
        ),
        _ => (
            CheckVerdict::Fail,
            format!(
                "JSON-RPC error {code} without the supported versions: {}",
                quote(message)
            ),
        ),
    }
}

fn first_line(e: &McpError) -> String {
    e.to_string().lines().next().unwrap_or_default().to_owned()
}

/// A session that is opened again after the server broke one (so one crash does not fail
/// every later check).
struct Reconnecting<'a> {
    spec: &'a ServerSpec,
    timeout: Duration,
    env: &'a (dyn Fn(&str) -> Option<String> + Sync),
    session: Option<McpSession>,
}

impl Reconnecting<'_> {
    async fn call(&mut self, tool: &str, args: &Value) -> Result<ToolResult, McpError> {
        let session = match self.session.take() {
            Some(s) => s,
            None => McpSession::connect(self.spec, self.timeout, self.env).await?,
        };
        let result = session.call_tool(tool, args).await;
        if matches!(
            result,
            Err(McpError::Transport { .. } | McpError::Timeout { .. })
        ) {
            session.shutdown().await;
        } else {
            self.session = Some(session);
        }
        result
    }

    async fn close(self) {
        if let Some(s) = self.session {
            s.shutdown().await;
        }
    }
}

/// Runs every check against the server. Fails only when the server cannot be listed at all.
pub async fn probe(
    spec: &ServerSpec,
    timeout: Duration,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
    expected: Option<&[DatasetCall]>,
) -> Result<ProbeReport, McpError> {
    let first = McpSession::connect(spec, timeout, env).await?;
    let server = first.server().clone();
    let listed = first.list_tool_definitions().await;
    let tools = match listed {
        Ok(t) => t,
        Err(e) => {
            first.shutdown().await;
            return Err(e);
        }
    };
    let mut calls = Reconnecting {
        spec,
        timeout,
        env,
        session: Some(first),
    };
    let mut checks = Vec::new();
    check_results(expected, &tools, &mut calls, &mut checks).await;
    let result = calls
        .call(UNKNOWN_TOOL, &Value::Object(Default::default()))
        .await;
    let (verdict, evidence) = judge_unknown_tool(&result);
    checks.push(Check {
        check: "unknown-tool",
        subject: Some(UNKNOWN_TOOL.to_owned()),
        verdict,
        evidence,
    });

    for def in &tools {
        checks.push(check_invalid_arguments(def, &mut calls).await);
    }
    calls.close().await;

    let answer = crate::client::raw_initialize(spec, UNSUPPORTED_VERSION, timeout, env).await;
    let (verdict, evidence) = judge_protocol_version(&answer);
    checks.push(Check {
        check: "protocol-version",
        subject: Some(UNSUPPORTED_VERSION.to_owned()),
        verdict,
        evidence,
    });

    Ok(ProbeReport {
        source: spec.label(),
        server,
        checks,
    })
}

/// The `result` checks: each expected call of the dataset made, its result judged against
/// the tool's `outputSchema`; skipped without a dataset.
async fn check_results(
    expected: Option<&[DatasetCall]>,
    tools: &[Value],
    calls: &mut Reconnecting<'_>,
    checks: &mut Vec<Check>,
) {
    let definition = |name: &str| {
        tools
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
    };
    match expected {
        None => checks.push(Check {
            check: "result",
            subject: None,
            verdict: CheckVerdict::Skip,
            evidence:
                "no dataset: give --dataset DIR (or probe a dataset folder) for its expected calls"
                    .into(),
        }),
        Some([]) => checks.push(Check {
            check: "result",
            subject: None,
            verdict: CheckVerdict::Skip,
            evidence: "the dataset has no expected call with arguments".into(),
        }),
        Some(list) => {
            for call in list {
                let subject = Some(format!("{} (case {})", call.tool, call.case));
                let Some(def) = definition(&call.tool) else {
                    checks.push(Check {
                        check: "result",
                        subject,
                        verdict: CheckVerdict::Fail,
                        evidence: "the server does not list this tool".into(),
                    });
                    continue;
                };
                let result = calls.call(&call.tool, &call.args).await;
                let (verdict, evidence) = judge_result(def.get("outputSchema"), &result);
                checks.push(Check {
                    check: "result",
                    subject,
                    verdict,
                    evidence,
                });
            }
        }
    }
}

/// One tool called with arguments its schema refuses: the server should answer with a tool
/// error, not crash or accept them.
async fn check_invalid_arguments(def: &Value, calls: &mut Reconnecting<'_>) -> Check {
    let name = def
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let schema = def.get("inputSchema").cloned().unwrap_or(Value::Null);
    let Some((field, args)) = breaking_arguments(&schema) else {
        return Check {
            check: "invalid-arguments",
            subject: Some(name),
            verdict: CheckVerdict::Skip,
            evidence: "no typed parameter to break".into(),
        };
    };
    let result = calls.call(&name, &args).await;
    let (verdict, evidence) = judge_invalid_arguments(&field, &result);
    Check {
        check: "invalid-arguments",
        subject: Some(format!("{name}.{field}")),
        verdict,
        evidence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(is_error: bool, t: &str) -> Result<ToolResult, McpError> {
        Ok(ToolResult {
            content: vec![json!({"type": "text", "text": t})],
            structured_content: None,
            is_error,
        })
    }

    fn rpc(code: i32, message: &str) -> Result<ToolResult, McpError> {
        Err(McpError::Rpc {
            server: "s".into(),
            what: "tools/call".into(),
            code,
            message: message.into(),
        })
    }

    #[test]
    fn unknown_tool_verdicts() {
        assert_eq!(
            judge_unknown_tool(&rpc(-32602, "Unknown tool")).0,
            CheckVerdict::Pass
        );
        assert_eq!(
            judge_unknown_tool(&rpc(-32601, "nope")).0,
            CheckVerdict::Warn
        );
        let named = format!("Tool {UNKNOWN_TOOL} not found");
        assert_eq!(
            judge_unknown_tool(&text(true, &named)).0,
            CheckVerdict::Warn
        );
        assert_eq!(
            judge_unknown_tool(&text(true, "error")).0,
            CheckVerdict::Fail
        );
        assert_eq!(judge_unknown_tool(&text(false, "ok")).0, CheckVerdict::Fail);
    }

    #[test]
    fn breaking_arguments_pick_a_required_typed_parameter() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "number"}, "b": {"type": "string"}, "c": {}}, "required": ["b"]});
        assert_eq!(
            breaking_arguments(&schema),
            Some(("b".into(), json!({"b": 12345})))
        );
        let optional = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        assert_eq!(
            breaking_arguments(&optional),
            Some(("n".into(), json!({"n": "not-a-number"})))
        );
        assert_eq!(breaking_arguments(&json!({"type": "object"})), None);
    }

    #[test]
    fn invalid_argument_verdicts() {
        let (v, e) = judge_invalid_arguments("a", &text(true, "expected number at a"));
        assert_eq!(v, CheckVerdict::Pass, "{e}");
        assert_eq!(
            judge_invalid_arguments("count", &text(true, "Something went wrong")).0,
            CheckVerdict::Fail
        );
        // "a" inside "Invalid" or "data" does not name the parameter `a`.
        assert_eq!(
            judge_invalid_arguments("a", &text(true, "Invalid data")).0,
            CheckVerdict::Fail
        );
        assert!(names("expected number at `a`.", "a"));
        assert!(!names("max_count exceeded", "count"));
        assert_eq!(
            judge_invalid_arguments("a", &text(true, " ")).0,
            CheckVerdict::Fail
        );
        assert_eq!(
            judge_invalid_arguments("a", &text(false, "done")).0,
            CheckVerdict::Fail
        );
        assert_eq!(
            judge_invalid_arguments("a", &rpc(-32602, "bad a")).0,
            CheckVerdict::Warn
        );
    }

    #[test]
    fn protocol_version_verdicts() {
        let offer =
            Ok(json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18"}}));
        assert_eq!(judge_protocol_version(&offer).0, CheckVerdict::Pass);
        let echo = Ok(json!({"id": 1, "result": {"protocolVersion": UNSUPPORTED_VERSION}}));
        assert_eq!(judge_protocol_version(&echo).0, CheckVerdict::Fail);
        let listed = Ok(
            json!({"id": 1, "error": {"code": -32602, "message": "Unsupported protocol version",
            "data": {"supported": ["2024-11-05"], "requested": UNSUPPORTED_VERSION}}}),
        );
        let (v, e) = judge_protocol_version(&listed);
        assert_eq!(v, CheckVerdict::Pass);
        assert!(e.ends_with("2024-11-05"), "{e}");
        let bare = Ok(json!({"id": 1, "error": {"code": -32600, "message": "bad"}}));
        assert_eq!(judge_protocol_version(&bare).0, CheckVerdict::Fail);
    }

    #[test]
    fn results_are_checked_against_the_output_schema() {
        let schema =
            json!({"type": "object", "properties": {"t": {"type": "number"}}, "required": ["t"]});
        let with = |structured: Value| {
            Ok(ToolResult {
                content: vec![json!({"type": "text", "text": "x"})],
                structured_content: Some(structured),
                is_error: false,
            })
        };
        assert_eq!(
            judge_result(Some(&schema), &with(json!({"t": 1}))).0,
            CheckVerdict::Pass
        );
        let (v, e) = judge_result(Some(&schema), &with(json!({"t": "hot"})));
        assert_eq!(v, CheckVerdict::Fail);
        assert!(e.contains("/t"), "{e}");
        assert_eq!(
            judge_result(Some(&schema), &text(false, "x")).0,
            CheckVerdict::Fail
        );
        assert_eq!(judge_result(None, &text(false, "x")).0, CheckVerdict::Pass);
        let broken = Ok(ToolResult {
            content: vec![json!({"type": "image", "data": "AAA"})],
            structured_content: None,
            is_error: false,
        });
        assert_eq!(
            judge_result(None, &broken).1,
            "content[0]: an image or audio block without string `data` and `mimeType`"
        );
    }
}
