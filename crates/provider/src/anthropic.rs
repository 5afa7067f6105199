//! Anthropic Messages API (`POST /v1/messages`, `x-api-key`, `anthropic-version`): request
//! encoding, response decoding, error-body reading (reference/providers.md §1).
//!
//! - System messages go to the top-level `system`; earlier calls are `tool_use` blocks with
//!   their arguments as objects; results are `tool_result` blocks at the head of the next user
//!   message, all results of one turn in one message, `is_error` kept.
//! - The last tool carries `cache_control: ephemeral`, so the tool prefix every trial of a case
//!   repeats is cached (reads cost 0.1× input; prefixes under the model's minimum, 1024 tokens
//!   for Sonnet/Opus, are silently left uncached).
//! - `usage.input_tokens` counts only the tokens after the cache breakpoint; the neutral
//!   `input_tokens` adds the cache reads and writes back.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use super::pairing::{PendingCalls, RoleRun, push_grouped};
use super::{Adapter, ErrorClass, InvalidHeader, ProviderError, ProviderSettings};
use crate::batch::{BatchApi, NoBatchApi};
use crate::wire::{
    ErrorInfo, call_id, classify_status, decode_arguments, excerpt_text, http_error, malformed,
    parse_object,
};
use toolscore_core::catalog::Catalog;
use toolscore_core::{FinishReason, Message, ModelTurn, ToolCall, Usage};

/// The Messages adapter.
pub(crate) struct Anthropic;

/// Its kind, for code that names it directly.
#[cfg(test)]
pub(crate) const KIND: crate::ProviderKind = crate::ProviderKind(&Anthropic);

/// The only `anthropic-version` the official SDK sends.
pub(crate) const API_VERSION: &str = "2023-06-01";

/// `max_tokens` is required by this API; used when the run sets none.
const DEFAULT_MAX_TOKENS: u32 = 4096;

impl Adapter for Anthropic {
    fn batch_api(&self) -> Result<BatchApi, NoBatchApi> {
        Ok(BatchApi::Anthropic)
    }

    fn output_bound(&self, settings: &ProviderSettings) -> Option<u32> {
        // The API requires max_tokens: every request sends one.
        Some(settings.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS))
    }

    fn kind(&self) -> &'static str {
        "anthropic"
    }

    fn endpoint(&self, base_url: &str, _model: &str) -> String {
        format!("{}/messages", base_url.trim_end_matches('/'))
    }

    fn default_base_url(&self) -> Option<&'static str> {
        Some("https://api.anthropic.com/v1")
    }

    fn default_key_env(&self) -> Option<&'static str> {
        Some("ANTHROPIC_API_KEY")
    }

    fn auth_headers(&self, api_key: &str, headers: &mut HeaderMap) -> Result<(), InvalidHeader> {
        super::key_header(HeaderName::from_static("x-api-key"), api_key, headers)?;
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        Ok(())
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
        error_from_status(status, body)
    }
}

// Long: one pass over the wire format's fields in the order its documentation gives them.
pub(crate) fn encode_request(
    settings: &ProviderSettings,
    messages: &[Message],
    catalog: &Catalog,
) -> Vec<u8> {
    let mut system: Vec<&str> = Vec::new();
    let mut turns: Vec<RoleRun> = Vec::new();
    let mut pending = PendingCalls::default();
    for message in messages {
        match message {
            Message::System { content } => system.push(content),
            Message::User { content } => {
                push_grouped(&mut turns, "user", json!({"type": "text", "text": content}));
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                if let Some(text) = content.as_deref().filter(|t| !t.is_empty()) {
                    push_grouped(
                        &mut turns,
                        "assistant",
                        json!({"type": "text", "text": text}),
                    );
                }
                let ids = pending.open_turn(tool_calls);
                for (call, id) in tool_calls.iter().zip(ids) {
                    push_grouped(
                        &mut turns,
                        "assistant",
                        json!({"type": "tool_use", "id": id, "name": call.name, "input": input_object(call)}),
                    );
                }
            }
            Message::Tool {
                call_id,
                content,
                is_error,
            } => {
                let id = pending
                    .answer(call_id)
                    .map_or_else(|| call_id.clone(), |p| p.wire_id);
                let mut block =
                    json!({"type": "tool_result", "tool_use_id": id, "content": content});
                if *is_error {
                    block["is_error"] = Value::Bool(true);
                }
                push_grouped(&mut turns, "user", block);
            }
        }
    }
    let wire_messages: Vec<Value> = turns
        .into_iter()
        .map(|t| {
            // A lone text block is sent as a plain string, the form of the official examples.
            let content = match t.items.as_slice() {
                [only] if only["type"] == "text" => only["text"].clone(),
                _ => Value::Array(t.items),
            };
            json!({"role": t.role, "content": content})
        })
        .collect();
    let mut tools: Vec<Value> = catalog
        .tools
        .iter()
        .map(|t| {
            let mut tool = Map::new();
            tool.insert("name".into(), Value::String(t.name.clone()));
            if !t.description.is_empty() {
                tool.insert("description".into(), Value::String(t.description.clone()));
            }
            tool.insert("input_schema".into(), t.input_schema.clone());
            Value::Object(tool)
        })
        .collect();
    if let Some(last) = tools.last_mut() {
        last["cache_control"] = json!({"type": "ephemeral"});
    }
    let mut body = Map::new();
    body.insert("model".into(), Value::String(settings.model.clone()));
    body.insert(
        "max_tokens".into(),
        json!(settings.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    if !system.is_empty() {
        body.insert("system".into(), Value::String(system.join("\n\n")));
    }
    body.insert("messages".into(), Value::Array(wire_messages));
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
        if let Some(choice) = tool_choice(settings) {
            body.insert("tool_choice".into(), choice);
        }
    }
    if let Some(t) = settings.temperature {
        body.insert("temperature".into(), json!(t));
    }
    serde_json::to_vec(&Value::Object(body)).unwrap_or_default()
}

/// Anthropic's `tool_choice` for what the user configured: `auto`, `any` (OpenAI's
/// `required`) or `none`, with `disable_parallel_tool_use` when parallel calls are turned off.
/// `None` when neither is configured: nothing is sent and Anthropic's default applies.
fn tool_choice(settings: &ProviderSettings) -> Option<Value> {
    use super::ToolChoice;
    if settings.tool_choice.is_none() && settings.parallel_tool_calls.is_none() {
        return None;
    }
    let kind = match settings.tool_choice.unwrap_or(ToolChoice::Auto) {
        ToolChoice::Auto => "auto",
        ToolChoice::Required => "any",
        ToolChoice::None => "none",
    };
    let mut choice = json!({"type": kind});
    // Anthropic's field says the opposite of OpenAI's; `none` takes no parallel flag.
    if let (Some(parallel), false) = (settings.parallel_tool_calls, kind == "none") {
        choice["disable_parallel_tool_use"] = Value::Bool(!parallel);
    }
    Some(choice)
}

/// `input` must be an object: arguments that never parsed (another provider's text) go as `{}`.
fn input_object(call: &ToolCall) -> Value {
    match &call.arguments {
        v @ Value::Object(_) => v.clone(),
        _ => json!({}),
    }
}

pub fn decode_response(raw: &[u8]) -> Result<ModelTurn, ProviderError> {
    let value = parse_object(raw)?;
    if value.get("type").and_then(Value::as_str) == Some("error") || value.get("error").is_some() {
        return Err(error_in_body(&value));
    }
    let Some(Value::Array(blocks)) = value.get("content") else {
        return Err(malformed(format!(
            "response has no content array: {}",
            excerpt_text(&value.to_string())
        )));
    };
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(t) = block.get("text").and_then(Value::as_str) {
                    text.push_str(t);
                }
            }
            Some("tool_use") => {
                let name = block.get("name").and_then(Value::as_str).unwrap_or("");
                if name.is_empty() {
                    return Err(malformed(format!("content[{i}] (tool_use) has no name")));
                }
                let id = call_id(block.get("id"));
                // `input` is documented as an object; a string is decoded as JSON text.
                tool_calls.push(decode_arguments(id, name.to_owned(), block.get("input")));
            }
            // thinking, redacted_thinking, server tool blocks: not part of the answer.
            _ => {}
        }
    }
    let finish = value
        .get("stop_reason")
        .and_then(Value::as_str)
        .map(|s| match s {
            "end_turn" | "stop_sequence" => FinishReason::Stop,
            "tool_use" => FinishReason::ToolCalls,
            "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
            "refusal" => FinishReason::ContentFilter,
            other => FinishReason::Other(other.to_owned()),
        });
    Ok(ModelTurn {
        tool_calls,
        text: (!text.is_empty()).then_some(text),
        usage: decode_usage(value.get("usage")),
        finish,
    })
}

fn decode_usage(usage: Option<&Value>) -> Usage {
    let Some(u) = usage.filter(|u| u.is_object()) else {
        return Usage::default();
    };
    let count = |k: &str| u.get(k).and_then(Value::as_u64);
    let uncached = count("input_tokens");
    let read = count("cache_read_input_tokens");
    let write = count("cache_creation_input_tokens");
    Usage {
        input_tokens: uncached.map(|n| n + read.unwrap_or(0) + write.unwrap_or(0)),
        output_tokens: count("output_tokens"),
        cache_read_tokens: read,
        cache_write_tokens: write,
    }
}

/// The class of an Anthropic error: its `error.type`, refined by what the body says.
fn classify(status: Option<u16>, info: &ErrorInfo, body: &Value) -> ErrorClass {
    let detail_code = body
        .pointer("/error/details/error_code")
        .and_then(Value::as_str);
    let message = info.message.as_deref().unwrap_or("").to_ascii_lowercase();
    // A spend limit reached (a 429 without retry-after) or credit used up (a 400) will not
    // clear by waiting: stop, do not retry.
    if detail_code == Some("enforced_spend_limit_reached")
        || info.says("billing_error")
        || message.contains("credit balance is too low")
    {
        return ErrorClass::QuotaExceeded;
    }
    if info.says("overloaded_error") || status == Some(529) {
        return ErrorClass::Overloaded;
    }
    if info.says("rate_limit_error") {
        return ErrorClass::RateLimited;
    }
    if info.says("authentication_error") || info.says("permission_error") {
        return ErrorClass::Auth;
    }
    if info.says("timeout_error") {
        return ErrorClass::Timeout;
    }
    match status {
        Some(s) => classify_status(s, info),
        None if info.says("api_error") => ErrorClass::ServerError,
        None if info.says("invalid_request_error") || info.says("not_found_error") => {
            ErrorClass::ClientError
        }
        None => ErrorClass::BadResponse,
    }
}

/// The `error` of an `errored` Message Batches result (an ErrorResponse), classed by its type
/// as the same error from the Messages API would be.
pub(crate) fn batch_error(value: &Value) -> ProviderError {
    let info = ErrorInfo::from_json(value);
    ProviderError::new(
        classify(None, &info, value),
        None,
        format!(
            "batch request errored{}: {}",
            info.code_suffix(),
            info.message_excerpt()
        ),
    )
}

fn error_in_body(value: &Value) -> ProviderError {
    let info = ErrorInfo::from_json(value);
    let class = classify(None, &info, value);
    ProviderError::new(
        class,
        None,
        format!(
            "provider returned an error in a successful response{}: {}",
            info.code_suffix(),
            info.message_excerpt()
        ),
    )
}

pub(crate) fn error_from_status(status: u16, body: &[u8]) -> ProviderError {
    let info = ErrorInfo::from_body(body);
    let value = serde_json::from_slice::<Value>(body).unwrap_or(Value::Null);
    let class = classify(Some(status), &info, &value);
    http_error(class, status, &info.code_suffix(), &info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolscore_core::catalog::Tool;

    fn catalog() -> Catalog {
        Catalog::new(
            vec![Tool {
                name: "get_weather".into(),
                description: "Get the current weather in a given location".into(),
                input_schema: json!({"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}),
                ..Default::default()
            }],
            "t".into(),
        )
    }

    #[test]
    fn history_is_encoded_as_the_docs_show() {
        let mut settings = ProviderSettings::new(KIND, "a", "http://x/v1", "claude-sonnet-4-5");
        settings.temperature = Some(0.0);
        let messages = vec![
            Message::System {
                content: "You are a weather bot.".into(),
            },
            Message::User {
                content: "What's the weather in Paris?".into(),
            },
            Message::Assistant {
                content: Some("I'll check the weather.".into()),
                tool_calls: vec![ToolCall {
                    id: Some("toolu_01A09q90qw90lq917835lq9".into()),
                    name: "get_weather".into(),
                    arguments: json!({"location": "Paris, France"}),
                    unparsed_arguments: None,
                    thought_signature: None,
                }],
            },
            Message::Tool {
                call_id: "toolu_01A09q90qw90lq917835lq9".into(),
                content: "15 degrees".into(),
                is_error: true,
            },
            Message::User {
                content: "And tomorrow?".into(),
            },
        ];
        let body: Value =
            serde_json::from_slice(&encode_request(&settings, &messages, &catalog())).unwrap();
        assert_eq!(body["system"], "You are a weather bot.");
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(body["temperature"], 0.0);
        // Only configured fields are sent.
        assert!(body.get("tool_choice").is_none(), "{body}");
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
        assert_eq!(body["tools"][0]["cache_control"]["type"], "ephemeral");
        let m = body["messages"].as_array().unwrap();
        assert_eq!(m.len(), 3);
        // Configured: `required` is Anthropic's `any`, and parallel calls off is
        // `disable_parallel_tool_use: true`.
        let mut configured = settings.clone();
        configured.tool_choice = Some(super::super::ToolChoice::Required);
        configured.parallel_tool_calls = Some(false);
        let body: Value =
            serde_json::from_slice(&encode_request(&configured, &messages, &catalog())).unwrap();
        assert_eq!(
            body["tool_choice"],
            json!({"type": "any", "disable_parallel_tool_use": true})
        );
        configured.tool_choice = None;
        configured.parallel_tool_calls = Some(true);
        let body: Value =
            serde_json::from_slice(&encode_request(&configured, &messages, &catalog())).unwrap();
        assert_eq!(
            body["tool_choice"],
            json!({"type": "auto", "disable_parallel_tool_use": false})
        );
        assert_eq!(
            m[0],
            json!({"role": "user", "content": "What's the weather in Paris?"})
        );
        assert_eq!(m[1]["content"][1]["type"], "tool_use");
        assert_eq!(
            m[1]["content"][1]["input"],
            json!({"location": "Paris, France"})
        );
        // The result first, then the user's text, in one user message.
        assert_eq!(m[2]["content"][0]["type"], "tool_result");
        assert_eq!(
            m[2]["content"][0]["tool_use_id"],
            "toolu_01A09q90qw90lq917835lq9"
        );
        assert_eq!(m[2]["content"][0]["is_error"], true);
        assert_eq!(m[2]["content"][1]["text"], "And tomorrow?");
    }

    #[test]
    fn decodes_the_official_tool_use_example_with_cache_usage() {
        let body = br#"{"id":"msg_01Aq9w938a90dw8q","type":"message","role":"assistant","model":"claude-sonnet-4-5",
          "content":[{"type":"text","text":"I'll check the current weather in San Francisco for you."},
            {"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"get_weather","input":{"location":"San Francisco, CA","unit":"celsius"}}],
          "stop_reason":"tool_use","stop_sequence":null,
          "usage":{"input_tokens":412,"cache_creation_input_tokens":0,"cache_read_input_tokens":1830,
            "cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":71,"service_tier":"standard"}}"#;
        let turn = decode_response(body).unwrap();
        assert_eq!(turn.tool_calls.len(), 1);
        assert_eq!(
            turn.tool_calls[0].id.as_deref(),
            Some("toolu_01A09q90qw90lq917835lq9")
        );
        assert_eq!(
            turn.tool_calls[0].arguments,
            json!({"location": "San Francisco, CA", "unit": "celsius"})
        );
        assert_eq!(turn.finish, Some(FinishReason::ToolCalls));
        assert_eq!(turn.usage.input_tokens, Some(412 + 1830));
        assert_eq!(turn.usage.cache_read_tokens, Some(1830));
        assert_eq!(turn.usage.cache_write_tokens, Some(0));
        assert_eq!(turn.usage.output_tokens, Some(71));
    }

    #[test]
    fn error_shapes_are_classified() {
        let body = |t: &str, m: &str| {
            format!(
                r#"{{"type":"error","error":{{"type":"{t}","message":"{m}"}},"request_id":"req_1"}}"#
            )
        };
        let class = |status: u16, b: &str| error_from_status(status, b.as_bytes()).class;
        assert_eq!(
            class(529, &body("overloaded_error", "Overloaded")),
            ErrorClass::Overloaded
        );
        assert_eq!(
            class(429, &body("rate_limit_error", "slow down")),
            ErrorClass::RateLimited
        );
        let spend = r#"{"type":"error","error":{"type":"rate_limit_error","message":"spend limit","details":{"error_code":"enforced_spend_limit_reached"}}}"#;
        assert_eq!(class(429, spend), ErrorClass::QuotaExceeded);
        assert_eq!(
            class(
                400,
                &body(
                    "invalid_request_error",
                    "Your credit balance is too low to access the Anthropic API."
                )
            ),
            ErrorClass::QuotaExceeded
        );
        assert_eq!(
            class(401, &body("authentication_error", "invalid x-api-key")),
            ErrorClass::Auth
        );
        assert_eq!(
            class(400, &body("invalid_request_error", "bad")),
            ErrorClass::ClientError
        );
        let in_200 =
            decode_response(body("overloaded_error", "Overloaded").as_bytes()).unwrap_err();
        assert_eq!(in_200.class, ErrorClass::Overloaded);
        assert!(in_200.message.contains("Overloaded"), "{}", in_200.message);
    }
}
