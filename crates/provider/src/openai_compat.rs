//! OpenAI Chat Completions wire format, as spoken by OpenAI, vLLM, llama.cpp `llama-server`,
//! Ollama `/v1` and OpenRouter: request encoding, response decoding, error-body reading.
//!
//! Pure functions over bytes and neutral types; the transport lives in `transport.rs`.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use super::{Adapter, ErrorClass, ProviderError, ProviderKind, ProviderSettings, WireFormat};
use crate::adapter::is_loopback;
use crate::batch::{BatchApi, NoBatchApi};
use toolscore_core::catalog::Catalog;
use toolscore_core::message::{FinishReason, Message, ModelTurn, ToolCall, Usage};

/// Longest excerpt of a provider's error text kept in an error message (characters).
pub(crate) const EXCERPT_CHARS: usize = 300;

/// The Chat Completions adapter.
pub struct OpenAiCompat;

/// Its kind, for code that names it directly (tests, defaults).
pub const KIND: ProviderKind = ProviderKind(&OpenAiCompat);

impl Adapter for OpenAiCompat {
    fn batch_api(&self) -> Result<BatchApi, NoBatchApi> {
        Ok(BatchApi::OpenAi {
            url: "/v1/chat/completions",
        })
    }

    /// A compatible server on this machine (llama.cpp, vLLM, LM Studio) bills nothing.
    fn serves_free(&self, base_url: &str) -> bool {
        is_loopback(base_url)
    }

    fn kind(&self) -> &'static str {
        "openai-compat"
    }

    fn endpoint(&self, base_url: &str, _model: &str) -> String {
        format!("{}/chat/completions", base_url.trim_end_matches('/'))
    }

    fn wire(&self) -> &'static WireFormat {
        &WIRE
    }
}

/// This adapter's wire format, read by the `Adapter` methods that encode, decode and classify.
static WIRE: WireFormat = WireFormat {
    encode: encode_request,
    decode: decode_response,
    error: error_from_status,
};

#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    /// What reasoning models (o1, o3, o4, gpt-5) take instead of `max_tokens`, which they
    /// refuse with a 400.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    /// Always present; `null` for an assistant turn without text.
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<Cow<'a, str>>,
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: Cow<'a, str>,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    /// A JSON-encoded string, as the wire format requires.
    arguments: Cow<'a, str>,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    description: &'a str,
    parameters: &'a Value,
}

/// The id sent for a history tool call that has none: `call_<n>`, where `n` is the 0-based
/// index of the call among all tool calls of the conversation.
pub fn fallback_call_id(index: usize) -> String {
    format!("call_{index}")
}

/// Encodes one Chat Completions request body.
///
/// History tool calls without an id get [`fallback_call_id`]; a tool message with an empty
/// `call_id` answers the oldest still-unanswered call of the preceding assistant turn.
// Long: one pass over the wire format's fields in the order its documentation gives them.
pub(crate) fn encode_request(
    settings: &ProviderSettings,
    messages: &[Message],
    catalog: &Catalog,
) -> Vec<u8> {
    let mut wire = Vec::with_capacity(messages.len());
    let mut call_index = 0usize;
    let mut pending: std::collections::VecDeque<Cow<'_, str>> = Default::default();
    for message in messages {
        match message {
            Message::System { content } => wire.push(WireMessage {
                role: "system",
                content: Some(content),
                tool_calls: Vec::new(),
                tool_call_id: None,
            }),
            Message::User { content } => wire.push(WireMessage {
                role: "user",
                content: Some(content),
                tool_calls: Vec::new(),
                tool_call_id: None,
            }),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                pending.clear();
                let calls: Vec<WireToolCall<'_>> = tool_calls
                    .iter()
                    .map(|call| {
                        let id: Cow<'_, str> = match call.id.as_deref() {
                            Some(id) if !id.is_empty() => Cow::Borrowed(id),
                            _ => Cow::Owned(fallback_call_id(call_index)),
                        };
                        call_index += 1;
                        pending.push_back(id.clone());
                        WireToolCall {
                            id,
                            kind: "function",
                            function: WireFunctionCall {
                                name: &call.name,
                                arguments: encode_arguments(call),
                            },
                        }
                    })
                    .collect();
                let content = content.as_deref().filter(|c| !c.is_empty());
                wire.push(WireMessage {
                    role: "assistant",
                    content,
                    tool_calls: calls,
                    tool_call_id: None,
                });
            }
            Message::Tool {
                call_id, content, ..
            } => {
                let id: Cow<'_, str> = if call_id.is_empty() {
                    pending.pop_front().unwrap_or(Cow::Borrowed(""))
                } else {
                    if let Some(pos) = pending.iter().position(|p| p == call_id) {
                        pending.remove(pos);
                    }
                    Cow::Borrowed(call_id)
                };
                wire.push(WireMessage {
                    role: "tool",
                    content: Some(content),
                    tool_calls: Vec::new(),
                    tool_call_id: Some(id),
                });
            }
        }
    }
    let tools: Vec<WireTool<'_>> = catalog
        .tools
        .iter()
        .map(|t| WireTool {
            kind: "function",
            function: WireFunction {
                name: &t.name,
                description: &t.description,
                parameters: &t.input_schema,
            },
        })
        .collect();
    let has_tools = !tools.is_empty();
    let request = ChatRequest {
        model: &settings.model,
        messages: wire,
        tools,
        // Only what the user configured (the request an application that sets nothing
        // sends); both are rejected by OpenAI when no tools are sent.
        tool_choice: settings
            .tool_choice
            .filter(|_| has_tools)
            .map(crate::ToolChoice::as_str),
        parallel_tool_calls: settings.parallel_tool_calls.filter(|_| has_tools),
        temperature: settings.temperature,
        max_tokens: settings
            .max_tokens
            .filter(|_| !uses_max_completion_tokens(&settings.model)),
        max_completion_tokens: settings
            .max_tokens
            .filter(|_| uses_max_completion_tokens(&settings.model)),
    };
    // Serializing borrowed strings, numbers and `Value`s into a Vec cannot fail.
    serde_json::to_vec(&request).unwrap_or_default()
}

/// Whether `model` belongs to an OpenAI reasoning family (o1, o3, o4, gpt-5, with or without a
/// router prefix such as `openai/`), which takes `max_completion_tokens` and refuses
/// `max_tokens`.
fn uses_max_completion_tokens(model: &str) -> bool {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    ["o1", "o3", "o4", "gpt-5"].iter().any(|family| {
        name.strip_prefix(family)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['-', '.', '_']))
    })
}

pub(crate) fn encode_arguments(call: &ToolCall) -> Cow<'_, str> {
    if let Some(raw) = &call.unparsed_arguments {
        return Cow::Borrowed(raw);
    }
    match &call.arguments {
        Value::Null => Cow::Borrowed("{}"),
        v => Cow::Owned(v.to_string()),
    }
}

/// A 2xx body parsed as a JSON object, or a `bad_response` quoting it.
pub(crate) fn parse_object(raw: &[u8]) -> Result<Value, ProviderError> {
    let value: Value = serde_json::from_slice(raw).map_err(|e| {
        ProviderError::new(
            ErrorClass::BadResponse,
            None,
            format!(
                "response body is not JSON ({e}): {}",
                excerpt_text(&String::from_utf8_lossy(raw))
            ),
        )
    })?;
    if !value.is_object() {
        return Err(ProviderError::new(
            ErrorClass::BadResponse,
            None,
            format!(
                "response body is not a JSON object: {}",
                excerpt_text(&value.to_string())
            ),
        ));
    }
    Ok(value)
}

/// A `bad_response` error about the shape of a 2xx body.
pub(crate) fn malformed(what: String) -> ProviderError {
    ProviderError::new(ErrorClass::BadResponse, None, what)
}

/// Decodes a 2xx Chat Completions body into a neutral turn.
// Long: one pass over the wire format's fields in the order its documentation gives them.
pub fn decode_response(raw: &[u8]) -> Result<ModelTurn, ProviderError> {
    let value = parse_object(raw)?;
    let Some(root) = value.as_object() else {
        return Err(malformed("response body is not a JSON object".to_owned()));
    };
    if let Some(err) = error_in_body(&value) {
        return Err(err);
    }
    let choice = match root.get("choices") {
        Some(Value::Array(choices)) if !choices.is_empty() => &choices[0],
        _ => {
            return Err(malformed(format!(
                "response has no choices: {}",
                excerpt_text(&value.to_string())
            )));
        }
    };
    let Some(Value::Object(message)) = choice.get("message") else {
        return Err(malformed("choices[0] has no message object".to_owned()));
    };

    // A malformed call list is the provider's fault, not the model's: it is an unreadable
    // response (infrastructure, not scored), never a wrong answer.
    let malformed = |what: String| {
        ProviderError::new(
            ErrorClass::BadResponse,
            None,
            format!("malformed tool_calls: {what}"),
        )
    };
    let mut tool_calls = Vec::new();
    match message.get("tool_calls") {
        None | Some(Value::Null) => {}
        Some(Value::Array(calls)) => {
            for (i, call) in calls.iter().enumerate() {
                match decode_tool_call(call) {
                    Some(c) if !c.name.is_empty() => tool_calls.push(c),
                    Some(_) => return Err(malformed(format!("tool_calls[{i}] has no name"))),
                    None => {
                        return Err(malformed(format!(
                            "tool_calls[{i}] is not an object: {}",
                            excerpt_text(&call.to_string())
                        )));
                    }
                }
            }
        }
        Some(other) => {
            return Err(malformed(format!(
                "expected an array, got {}",
                excerpt_text(&other.to_string())
            )));
        }
    }
    // The deprecated single `function_call` shape (still emitted by some servers).
    if tool_calls.is_empty()
        && let Some(fc @ Value::Object(_)) = message.get("function_call")
        && let Some(name) = fc.get("name").and_then(Value::as_str)
    {
        tool_calls.push(decode_arguments(None, name.to_owned(), fc.get("arguments")));
    }

    let text =
        content_text(message.get("content")).or_else(|| content_text(message.get("refusal")));
    let finish = match choice.get("finish_reason") {
        Some(Value::String(s)) => Some(map_finish(s)),
        _ => None,
    };
    let usage = match root.get("usage") {
        // Cached tokens are already counted in `prompt_tokens` here.
        Some(u @ Value::Object(_)) => Usage {
            input_tokens: u.get("prompt_tokens").and_then(Value::as_u64),
            output_tokens: u.get("completion_tokens").and_then(Value::as_u64),
            cache_read_tokens: u
                .pointer("/prompt_tokens_details/cached_tokens")
                .and_then(Value::as_u64),
            cache_write_tokens: u
                .pointer("/prompt_tokens_details/cache_write_tokens")
                .and_then(Value::as_u64),
        },
        _ => Usage::default(),
    };
    Ok(ModelTurn {
        tool_calls,
        text,
        usage,
        finish,
    })
}

fn decode_tool_call(call: &Value) -> Option<ToolCall> {
    let obj = call.as_object()?;
    let id = call_id(obj.get("id"));
    let function = obj.get("function").and_then(Value::as_object);
    let name = function
        .and_then(|f| f.get("name"))
        .or_else(|| obj.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let arguments = function
        .and_then(|f| f.get("arguments"))
        .or_else(|| obj.get("arguments"));
    Some(decode_arguments(id, name, arguments))
}

/// A call's id as the API gave it; an empty id is none.
pub(crate) fn call_id(value: Option<&Value>) -> Option<String> {
    value
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// A call from arguments that arrived as a JSON string (the documented form here) or as an
/// object (what some servers send; the native form of Anthropic, Gemini and Ollama).
pub(crate) fn decode_arguments(
    id: Option<String>,
    name: String,
    arguments: Option<&Value>,
) -> ToolCall {
    match arguments {
        Some(Value::String(s)) => ToolCall::from_encoded_arguments(id, name, s),
        None | Some(Value::Null) => ToolCall::from_encoded_arguments(id, name, ""),
        // Some servers send the arguments as an object rather than a JSON string.
        Some(v) => ToolCall {
            id,
            name,
            arguments: v.clone(),
            unparsed_arguments: None,
            thought_signature: None,
        },
    }
}

/// `content` as text: a string (empty → `None`) or an array of text parts.
pub(crate) fn content_text(content: Option<&Value>) -> Option<String> {
    match content? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Array(parts) => {
            let text: String = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str).or_else(|| p.as_str()))
                .collect();
            (!text.is_empty()).then_some(text)
        }
        _ => None,
    }
}

fn map_finish(s: &str) -> FinishReason {
    match s {
        "stop" => FinishReason::Stop,
        // `function_call` is the deprecated form; `tool` is what old llama.cpp builds sent.
        "tool_calls" | "function_call" | "tool" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// An error carried inside a body: OpenAI's `{"error": {...}}` (or `{"error": "text"}`) and
/// vLLM's `{"object": "error", "message": ...}`.
pub(crate) fn error_in_body(value: &Value) -> Option<ProviderError> {
    let has_error = matches!(value.get("error"), Some(e) if !e.is_null())
        || value.get("object").and_then(Value::as_str) == Some("error");
    if !has_error {
        return None;
    }
    let info = ErrorInfo::from_json(value);
    let status = info.numeric_code;
    let class = match status {
        Some(s) if s >= 400 => classify_status(s, &info),
        _ => class_from_code(&info).unwrap_or(ErrorClass::BadResponse),
    };
    let what = match status {
        Some(s) => format!("provider returned an error in a successful response (code {s})"),
        None => "provider returned an error in a successful response".to_owned(),
    };
    Some(ProviderError::new(
        class,
        status,
        format!("{what}{}: {}", info.code_suffix(), info.message_excerpt()),
    ))
}

/// What an error body says, whatever its shape.
#[derive(Debug, Default)]
pub(crate) struct ErrorInfo {
    pub message: Option<String>,
    /// `code` when it is a string, else `type`.
    pub code: Option<String>,
    pub kind: Option<String>,
    pub numeric_code: Option<u16>,
    /// The body text when it is not a recognized error shape.
    pub raw: Option<String>,
}

impl ErrorInfo {
    pub(crate) fn from_body(body: &[u8]) -> ErrorInfo {
        match serde_json::from_slice::<Value>(body) {
            Ok(v @ Value::Object(_)) => {
                let info = ErrorInfo::from_json(&v);
                if info.message.is_none() && info.code.is_none() {
                    ErrorInfo {
                        raw: Some(v.to_string()),
                        ..info
                    }
                } else {
                    info
                }
            }
            _ => ErrorInfo {
                raw: Some(String::from_utf8_lossy(body).into_owned()),
                ..Default::default()
            },
        }
    }

    pub(crate) fn from_json(v: &Value) -> ErrorInfo {
        // `{"error": {...}}`, `{"error": "text"}`, or the fields at top level (vLLM, FastAPI `detail`).
        let (obj, top_message) = match v.get("error") {
            Some(e @ Value::Object(_)) => (e, None),
            Some(Value::String(s)) => (v, Some(s.clone())),
            _ => (v, None),
        };
        let str_field = |k: &str| {
            obj.get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let message = top_message.or_else(|| str_field("message")).or_else(|| {
            match obj.get("detail").or_else(|| v.get("detail")) {
                Some(Value::String(s)) => Some(s.clone()),
                Some(d @ (Value::Array(_) | Value::Object(_))) => Some(d.to_string()),
                _ => None,
            }
        });
        let numeric_code = match obj.get("code") {
            Some(Value::Number(n)) => n.as_u64().and_then(|n| u16::try_from(n).ok()),
            Some(Value::String(s)) => s.parse::<u16>().ok(),
            _ => None,
        };
        let code = obj
            .get("code")
            .and_then(Value::as_str)
            .filter(|s| s.parse::<u16>().is_err() && !s.is_empty())
            .map(str::to_owned);
        let kind = str_field("type");
        ErrorInfo {
            message,
            code,
            kind,
            numeric_code,
            raw: None,
        }
    }

    pub(crate) fn says(&self, what: &str) -> bool {
        self.code.as_deref() == Some(what) || self.kind.as_deref() == Some(what)
    }

    pub(crate) fn code_suffix(&self) -> String {
        match self.code.as_deref().or(self.kind.as_deref()) {
            Some(c) => format!(" ({c})"),
            None => String::new(),
        }
    }

    pub(crate) fn message_excerpt(&self) -> String {
        match (&self.message, &self.raw) {
            (Some(m), _) => excerpt_text(m),
            (None, Some(r)) if !r.trim().is_empty() => excerpt_text(r),
            _ => "(empty body)".to_owned(),
        }
    }
}

pub(crate) fn class_from_code(info: &ErrorInfo) -> Option<ErrorClass> {
    if info.says("insufficient_quota") {
        Some(ErrorClass::QuotaExceeded)
    } else if info.says("rate_limit_exceeded")
        || info.says("rate_limit_error")
        || info.says("tokens")
        || info.says("requests")
    {
        Some(ErrorClass::RateLimited)
    } else if info.says("invalid_api_key")
        || info.says("authentication_error")
        || info.says("permission_error")
    {
        Some(ErrorClass::Auth)
    } else if info.says("overloaded_error") {
        Some(ErrorClass::Overloaded)
    } else if info.says("server_error")
        || info.says("api_error")
        || info.says("InternalServerError")
    {
        Some(ErrorClass::ServerError)
    } else {
        None
    }
}

/// The class of a non-2xx status, refined by what the body says.
pub(crate) fn classify_status(status: u16, info: &ErrorInfo) -> ErrorClass {
    match status {
        401 | 403 => ErrorClass::Auth,
        402 => ErrorClass::QuotaExceeded,
        408 => ErrorClass::Timeout,
        // A conflict (e.g. a lock timeout) is transient; OpenAI's SDK retries it too.
        409 => ErrorClass::ServerError,
        429 if info.says("insufficient_quota") => ErrorClass::QuotaExceeded,
        429 => ErrorClass::RateLimited,
        400..=499 if info.says("insufficient_quota") => ErrorClass::QuotaExceeded,
        400..=499 => ErrorClass::ClientError,
        // Anthropic's "overloaded"; other providers' 529s mean the same when they send one.
        529 => ErrorClass::Overloaded,
        _ if info.says("overloaded_error") => ErrorClass::Overloaded,
        500..=599 => ErrorClass::ServerError,
        300..=399 => ErrorClass::ClientError,
        _ => ErrorClass::BadResponse,
    }
}

/// A `ProviderError` for a non-2xx response (attempts and redaction are filled in by the caller).
pub(crate) fn error_from_status(status: u16, body: &[u8]) -> ProviderError {
    let info = ErrorInfo::from_body(body);
    http_error(
        classify_status(status, &info),
        status,
        &info.code_suffix(),
        &info,
    )
}

/// Every adapter's wording of a non-2xx response: `HTTP 429 Too Many Requests (code): message`.
/// `code` is the API's own name for the error, as ` (name)`, or empty.
pub(crate) fn http_error(
    class: ErrorClass,
    status: u16,
    code: &str,
    info: &ErrorInfo,
) -> ProviderError {
    ProviderError::new(
        class,
        Some(status),
        format!(
            "HTTP {status}{}{code}: {}",
            http_reason(status),
            info.message_excerpt()
        ),
    )
}

pub(crate) fn http_reason(status: u16) -> &'static str {
    match status {
        400 => " Bad Request",
        401 => " Unauthorized",
        402 => " Payment Required",
        403 => " Forbidden",
        404 => " Not Found",
        408 => " Request Timeout",
        409 => " Conflict",
        413 => " Payload Too Large",
        422 => " Unprocessable Entity",
        429 => " Too Many Requests",
        500 => " Internal Server Error",
        502 => " Bad Gateway",
        503 => " Service Unavailable",
        504 => " Gateway Timeout",
        529 => " Overloaded",
        _ => "",
    }
}

/// At most [`EXCERPT_CHARS`] characters of `text`, whitespace collapsed, with `…` when cut.
pub(crate) fn excerpt_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(EXCERPT_CHARS + 4));
    let mut count = 0usize;
    let mut last_space = false;
    for ch in text.trim().chars() {
        let ch = if ch.is_whitespace() { ' ' } else { ch };
        if ch == ' ' && last_space {
            continue;
        }
        last_space = ch == ' ';
        if count == EXCERPT_CHARS {
            out.push('…');
            return out;
        }
        out.push(ch);
        count += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn excerpt_is_bounded_and_char_safe() {
        let long = "é".repeat(1000);
        let e = excerpt_text(&long);
        assert_eq!(e.chars().count(), EXCERPT_CHARS + 1);
        assert!(e.ends_with('…'));
        assert_eq!(excerpt_text("  a \n\n b  "), "a b");
    }

    #[test]
    fn decodes_content_parts_and_function_call() {
        let body = json!({"choices":[{"message":{"content":[{"type":"text","text":"hi "},{"type":"text","text":"there"}],
            "function_call":{"name":"f","arguments":"{\"a\":1}"}},"finish_reason":"function_call"}]});
        let turn = decode_response(body.to_string().as_bytes()).unwrap();
        assert_eq!(turn.text.as_deref(), Some("hi there"));
        assert_eq!(turn.tool_calls.len(), 1);
        assert_eq!(turn.tool_calls[0].arguments, json!({"a":1}));
        assert_eq!(turn.finish, Some(FinishReason::ToolCalls));
    }

    #[test]
    fn reasoning_families_take_max_completion_tokens() {
        for m in [
            "o1",
            "o1-mini",
            "o3",
            "o4-mini",
            "gpt-5",
            "gpt-5.1",
            "gpt-5-mini",
            "openai/gpt-5-nano",
            "O3-2025-04-16",
        ] {
            assert!(uses_max_completion_tokens(m), "{m}");
        }
        for m in [
            "gpt-4o",
            "gpt-4.1-mini",
            "gpt-50",
            "o1x",
            "llama-3.1-8b",
            "qwen3:8b",
            "",
        ] {
            assert!(!uses_max_completion_tokens(m), "{m}");
        }
    }

    #[test]
    fn vllm_error_shape_is_classified() {
        let body = json!({"object":"error","message":"boom","type":"BadRequestError","param":null,"code":400});
        let err = decode_response(body.to_string().as_bytes()).unwrap_err();
        assert_eq!(err.class, ErrorClass::ClientError);
        assert_eq!(err.status, Some(400));
        assert!(err.message.contains("boom"));
        let body = json!({"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}});
        assert_eq!(
            decode_response(body.to_string().as_bytes())
                .unwrap_err()
                .class,
            ErrorClass::QuotaExceeded
        );
        let body = json!({"error":"plain text"});
        assert_eq!(
            decode_response(body.to_string().as_bytes())
                .unwrap_err()
                .class,
            ErrorClass::BadResponse
        );
    }

    #[test]
    fn status_classes() {
        let none = ErrorInfo::default();
        assert_eq!(classify_status(401, &none), ErrorClass::Auth);
        assert_eq!(classify_status(404, &none), ErrorClass::ClientError);
        assert_eq!(classify_status(529, &none), ErrorClass::Overloaded);
        let quota = ErrorInfo::from_body(br#"{"error":{"message":"q","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#);
        assert_eq!(classify_status(429, &quota), ErrorClass::QuotaExceeded);
        let rate = ErrorInfo::from_body(br#"{"error":{"message":"r","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#);
        assert_eq!(classify_status(429, &rate), ErrorClass::RateLimited);
        let e = error_from_status(502, b"<html>bad gateway</html>");
        assert!(
            e.message.contains("HTTP 502") && e.message.contains("bad gateway"),
            "{}",
            e.message
        );
    }
}
