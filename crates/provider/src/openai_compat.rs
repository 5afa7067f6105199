//! OpenAI Chat Completions wire format, as spoken by OpenAI, vLLM, llama.cpp `llama-server`,
//! Ollama `/v1` and OpenRouter (and Azure OpenAI, which adds its own URL and key header):
//! request encoding, response decoding, an error inside a 2xx body.
//!
//! Pure functions over bytes and neutral types; what every wire format shares is in
//! `wire.rs`, the transport in `transport.rs`.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use super::{Adapter, ErrorClass, ProviderError, ProviderKind, ProviderSettings};
use crate::adapter::is_loopback;
use crate::batch::{BatchApi, NoBatchApi};
use crate::wire::{
    ErrorInfo, call_id, class_from_code, classify_status, decode_arguments, encode_arguments,
    excerpt_text, fallback_call_id, malformed, parse_object,
};
use toolscore_core::catalog::Catalog;
use toolscore_core::{FinishReason, Message, ModelTurn, ToolCall, Usage};

/// The Chat Completions adapter.
pub(crate) struct OpenAiCompat;

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

    fn encode_request(
        &self,
        settings: &ProviderSettings,
        messages: &[Message],
        catalog: &Catalog,
    ) -> Vec<u8> {
        encode_request(settings, messages, catalog)
    }

    fn decode_response(&self, body: &[u8]) -> Result<ModelTurn, ProviderError> {
        decode_response(body)
    }

    fn error_from_status(&self, status: u16, body: &[u8]) -> ProviderError {
        crate::wire::error_from_status(status, body)
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
}
