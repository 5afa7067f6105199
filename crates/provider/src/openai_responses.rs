//! OpenAI Responses API (`POST /v1/responses`, bearer key), stateless: the whole history goes
//! in `input` every time (reference/providers.md §3).
//!
//! - Earlier calls are `function_call` items, results `function_call_output` items, paired on
//!   `call_id` (a call's `id`, `fc_…`, is the item id and is never used for matching).
//! - Tools are flat (`name`, `parameters` at the top level) and sent with `strict: false`:
//!   left out, Responses would normalize every schema into strict mode and refuse catalogs
//!   whose objects are open or whose properties are optional, which is not what is measured.
//! - There is no finish reason: a completed response is reported as `tool_calls` when it holds
//!   calls and `stop` otherwise; `incomplete_details.reason` gives `length` or `content_filter`.
//!   A `failed` response carries its `error` in the 200 body.

use serde_json::{Map, Value, json};

use super::openai_compat;
use super::{Adapter, ProviderError, ProviderSettings};
use crate::batch::{BatchApi, NoBatchApi};
use crate::wire::{
    call_id, decode_arguments, encode_arguments, excerpt_text, malformed, parse_object,
};
use toolscore_core::catalog::Catalog;
use toolscore_core::{FinishReason, Message, ModelTurn, Usage};

/// The Responses adapter.
pub(crate) struct OpenAiResponses;

/// Its kind, for code that names it directly.
#[cfg(test)]
pub(crate) const KIND: crate::ProviderKind = crate::ProviderKind(&OpenAiResponses);

impl Adapter for OpenAiResponses {
    fn batch_api(&self) -> Result<BatchApi, NoBatchApi> {
        Ok(BatchApi::OpenAi {
            url: "/v1/responses",
        })
    }

    fn kind(&self) -> &'static str {
        "openai-responses"
    }

    fn endpoint(&self, base_url: &str, _model: &str) -> String {
        format!("{}/responses", base_url.trim_end_matches('/'))
    }

    fn default_base_url(&self) -> Option<&'static str> {
        Some("https://api.openai.com/v1")
    }

    fn default_key_env(&self) -> Option<&'static str> {
        Some("OPENAI_API_KEY")
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

// Long: one pass over the wire format's fields in the order its documentation gives them.
pub(crate) fn encode_request(
    settings: &ProviderSettings,
    messages: &[Message],
    catalog: &Catalog,
) -> Vec<u8> {
    let mut instructions: Vec<&str> = Vec::new();
    let mut input: Vec<Value> = Vec::with_capacity(messages.len());
    let mut pending = super::pairing::PendingCalls::default();
    for message in messages {
        match message {
            Message::System { content } => instructions.push(content),
            Message::User { content } => input.push(json!({"role": "user", "content": content})),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                if let Some(text) = content.as_deref().filter(|t| !t.is_empty()) {
                    input.push(json!({"role": "assistant", "content": text}));
                }
                let ids = pending.open_turn(tool_calls);
                for (call, call_id) in tool_calls.iter().zip(ids) {
                    input.push(json!({
                        "type": "function_call",
                        "call_id": call_id,
                        "name": call.name,
                        "arguments": encode_arguments(call),
                    }));
                }
            }
            Message::Tool {
                call_id, content, ..
            } => {
                let call_id = pending
                    .answer(call_id)
                    .map_or_else(|| call_id.clone(), |p| p.wire_id);
                input.push(
                    json!({"type": "function_call_output", "call_id": call_id, "output": content}),
                );
            }
        }
    }
    let tools: Vec<Value> = catalog
        .tools
        .iter()
        .map(|t| {
            let mut tool = Map::new();
            tool.insert("type".into(), json!("function"));
            tool.insert("name".into(), json!(t.name));
            if !t.description.is_empty() {
                tool.insert("description".into(), json!(t.description));
            }
            tool.insert("parameters".into(), t.input_schema.clone());
            tool.insert("strict".into(), Value::Bool(false));
            Value::Object(tool)
        })
        .collect();
    let mut body = Map::new();
    body.insert("model".into(), json!(settings.model));
    if !instructions.is_empty() {
        body.insert("instructions".into(), json!(instructions.join("\n\n")));
    }
    body.insert("input".into(), Value::Array(input));
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
        // Only what the user configured: the provider's defaults otherwise.
        if let Some(choice) = settings.tool_choice {
            body.insert("tool_choice".into(), json!(choice.as_str()));
        }
        if let Some(parallel) = settings.parallel_tool_calls {
            body.insert("parallel_tool_calls".into(), Value::Bool(parallel));
        }
    }
    if let Some(t) = settings.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(n) = settings.max_tokens {
        body.insert("max_output_tokens".into(), json!(n));
    }
    // Nothing is kept server-side: every request carries its whole history.
    body.insert("store".into(), Value::Bool(false));
    serde_json::to_vec(&Value::Object(body)).unwrap_or_default()
}

// Long: one pass over the wire format's fields in the order its documentation gives them.
pub fn decode_response(raw: &[u8]) -> Result<ModelTurn, ProviderError> {
    let value = parse_object(raw)?;
    if let Some(err) = openai_compat::error_in_body(&value) {
        return Err(err);
    }
    let Some(Value::Array(output)) = value.get("output") else {
        return Err(malformed(format!(
            "response has no output array: {}",
            excerpt_text(&value.to_string())
        )));
    };
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for (i, item) in output.iter().enumerate() {
        match item.get("type").and_then(Value::as_str) {
            Some("function_call") => {
                let name = item.get("name").and_then(Value::as_str).unwrap_or("");
                if name.is_empty() {
                    return Err(malformed(format!(
                        "output[{i}] (function_call) has no name"
                    )));
                }
                let call_id = call_id(item.get("call_id"));
                tool_calls.push(decode_arguments(
                    call_id,
                    name.to_owned(),
                    item.get("arguments"),
                ));
            }
            Some("message") => {
                if let Some(Value::Array(parts)) = item.get("content") {
                    for part in parts {
                        let piece = match part.get("type").and_then(Value::as_str) {
                            Some("output_text") => part.get("text"),
                            Some("refusal") => part.get("refusal"),
                            _ => None,
                        };
                        if let Some(t) = piece.and_then(Value::as_str) {
                            text.push_str(t);
                        }
                    }
                }
            }
            // reasoning, web_search_call, …: not part of the answer.
            _ => {}
        }
    }
    let status = value.get("status").and_then(Value::as_str);
    let finish = match status {
        Some("incomplete") => Some(
            match value
                .pointer("/incomplete_details/reason")
                .and_then(Value::as_str)
            {
                Some("max_output_tokens") => FinishReason::Length,
                Some("content_filter") => FinishReason::ContentFilter,
                Some(other) => FinishReason::Other(other.to_owned()),
                None => FinishReason::Other("incomplete".to_owned()),
            },
        ),
        Some("completed") if !tool_calls.is_empty() => Some(FinishReason::ToolCalls),
        Some("completed") => Some(FinishReason::Stop),
        Some(other) => Some(FinishReason::Other(other.to_owned())),
        None => None,
    };
    let usage = match value.get("usage") {
        Some(u @ Value::Object(_)) => Usage {
            input_tokens: u.get("input_tokens").and_then(Value::as_u64),
            output_tokens: u.get("output_tokens").and_then(Value::as_u64),
            cache_read_tokens: u
                .pointer("/input_tokens_details/cached_tokens")
                .and_then(Value::as_u64),
            cache_write_tokens: u
                .pointer("/input_tokens_details/cache_write_tokens")
                .and_then(Value::as_u64),
        },
        _ => Usage::default(),
    };
    Ok(ModelTurn {
        tool_calls,
        text: (!text.is_empty()).then_some(text),
        usage,
        finish,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorClass;
    use toolscore_core::ToolCall;
    use toolscore_core::catalog::Tool;

    #[test]
    fn history_goes_as_function_call_items_paired_on_call_id() {
        let catalog = Catalog::new(
            vec![Tool {
                name: "get_weather".into(),
                description: String::new(),
                input_schema: json!({"type": "object", "properties": {}}),
                ..Default::default()
            }],
            "t".into(),
        );
        let mut settings = ProviderSettings::new(KIND, "r", "http://x/v1", "gpt-5.4");
        settings.max_tokens = Some(300);
        let messages = vec![
            Message::System {
                content: "You are a weather bot.".into(),
            },
            Message::User {
                content: "Paris?".into(),
            },
            Message::Assistant {
                content: None,
                tool_calls: vec![ToolCall {
                    id: Some("call_unLAR8MvFNptuiZK6K6HCy5k".into()),
                    name: "get_weather".into(),
                    arguments: json!({"location": "Paris, France"}),
                    unparsed_arguments: None,
                    thought_signature: None,
                }],
            },
            Message::Tool {
                call_id: "call_unLAR8MvFNptuiZK6K6HCy5k".into(),
                content: "15 degrees".into(),
                is_error: false,
            },
        ];
        let body: Value =
            serde_json::from_slice(&encode_request(&settings, &messages, &catalog)).unwrap();
        assert_eq!(body["instructions"], "You are a weather bot.");
        assert_eq!(body["max_output_tokens"], 300);
        assert_eq!(body["store"], false);
        assert_eq!(body["tools"][0]["name"], "get_weather");
        assert_eq!(body["tools"][0]["strict"], false);
        assert!(body["tools"][0].get("function").is_none());
        let input = body["input"].as_array().unwrap();
        assert_eq!(input[1]["type"], "function_call");
        assert_eq!(input[1]["arguments"], "{\"location\":\"Paris, France\"}");
        assert_eq!(input[2]["type"], "function_call_output");
        assert_eq!(input[2]["call_id"], input[1]["call_id"]);
        assert_eq!(input[2]["output"], "15 degrees");
    }

    #[test]
    fn decodes_the_official_examples() {
        let call = br#"{"id":"resp_67ca","object":"response","created_at":1741294021,"status":"completed","error":null,"incomplete_details":null,"model":"gpt-5.4",
          "output":[{"type":"function_call","id":"fc_67ca09c6","call_id":"call_unLAR8MvFNptuiZK6K6HCy5k","name":"get_current_weather","arguments":"{\"location\":\"Boston, MA\",\"unit\":\"celsius\"}","status":"completed"}],
          "usage":{"input_tokens":291,"output_tokens":23,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":314}}"#;
        let turn = decode_response(call).unwrap();
        assert_eq!(
            turn.tool_calls[0].id.as_deref(),
            Some("call_unLAR8MvFNptuiZK6K6HCy5k")
        );
        assert_eq!(turn.tool_calls[0].arguments["unit"], "celsius");
        assert_eq!(turn.finish, Some(FinishReason::ToolCalls));
        assert_eq!(turn.usage.input_tokens, Some(291));
        let text = br#"{"id":"resp_1","object":"response","status":"completed","error":null,"incomplete_details":null,
          "output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"It's 15 C in Paris.","annotations":[]}]}],
          "usage":{"input_tokens":36,"input_tokens_details":{"cached_tokens":12,"cache_write_tokens":0},"output_tokens":87,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":123}}"#;
        let turn = decode_response(text).unwrap();
        assert!(turn.tool_calls.is_empty());
        assert_eq!(turn.text.as_deref(), Some("It's 15 C in Paris."));
        assert_eq!(turn.usage.cache_read_tokens, Some(12));
        assert_eq!(turn.finish, Some(FinishReason::Stop));
    }

    #[test]
    fn a_failed_response_is_an_error_with_its_class() {
        let failed = br#"{"id":"resp_1","object":"response","status":"failed","error":{"code":"rate_limit_exceeded","message":"slow down"},"output":[]}"#;
        let err = decode_response(failed).unwrap_err();
        assert_eq!(err.class, ErrorClass::RateLimited);
        assert!(err.message.contains("slow down"));
        let failed = br#"{"id":"resp_1","object":"response","status":"failed","error":{"code":"server_error","message":"boom"},"output":[]}"#;
        assert_eq!(
            decode_response(failed).unwrap_err().class,
            ErrorClass::ServerError
        );
    }
}
