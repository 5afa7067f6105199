//! Ollama's native chat API (`POST /api/chat`, no key locally) (reference/providers.md §5).
//!
//! - Sent with `"stream": false`; arguments travel as JSON objects both ways; results are
//!   `role: "tool"` messages naming the tool (`tool_name`) and the call (`tool_call_id`, ids
//!   exist since Ollama of November 2025; older servers send none, so results are paired with
//!   calls by id when there is one and by position otherwise). An id goes back only when the
//!   call came with one: none is invented for a call the model sent without, as for Gemini.
//! - `done_reason` is `"stop"` for tool calls too; the calls decide.
//! - `tool_choice` does not exist here; `max_tokens` is `options.num_predict`.
//! - Errors are `{"error": "text"}`, also inside a 200 (a streamed error line): both are
//!   errors, never an empty answer.

use serde_json::{Map, Value, json};

use super::pairing::PendingCalls;
use super::{Adapter, ErrorClass, ProviderError, ProviderSettings};
use crate::wire::{
    ErrorInfo, call_id, class_from_code, decode_arguments, excerpt_text, malformed, parse_object,
};
use toolscore_core::catalog::Catalog;
use toolscore_core::{FinishReason, Message, ModelTurn, Usage};

/// The native chat adapter.
pub(crate) struct Ollama;

/// Its kind, for code that names it directly.
#[cfg(test)]
pub(crate) const KIND: crate::ProviderKind = crate::ProviderKind(&Ollama);

impl Adapter for Ollama {
    /// Ollama serves models on the user's machine (its cloud models are billed by Ollama's
    /// plan, not per token).
    fn serves_free(&self, _base_url: &str) -> bool {
        true
    }

    fn kind(&self) -> &'static str {
        "ollama"
    }

    fn request_fields(&self) -> super::RequestFields {
        // /api/chat takes neither: the model always decides, one call or several.
        super::RequestFields {
            tool_choice: false,
            parallel_tool_calls: false,
        }
    }

    fn endpoint(&self, base_url: &str, _model: &str) -> String {
        format!("{}/api/chat", base_url.trim_end_matches('/'))
    }

    fn default_base_url(&self) -> Option<&'static str> {
        Some("http://localhost:11434")
    }

    fn local_start_command(&self) -> Option<&'static str> {
        Some("ollama serve")
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

pub(crate) fn encode_request(
    settings: &ProviderSettings,
    messages: &[Message],
    catalog: &Catalog,
) -> Vec<u8> {
    let mut wire: Vec<Value> = Vec::with_capacity(messages.len());
    let mut pending = PendingCalls::default();
    for message in messages {
        match message {
            Message::System { content } => wire.push(json!({"role": "system", "content": content})),
            Message::User { content } => wire.push(json!({"role": "user", "content": content})),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                // Only ids the call came with are sent: an id the model never issued would be
                // put in its mouth (the tool result names the tool, and pairs by position).
                pending.open_turn(tool_calls);
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .enumerate()
                    .map(|(index, call)| {
                        let arguments = match &call.arguments {
                            v @ Value::Object(_) => v.clone(),
                            _ => json!({}),
                        };
                        let mut wire_call = json!({"function": {"index": index, "name": call.name, "arguments": arguments}});
                        if let Some(id) = call.id.as_deref().filter(|id| !id.is_empty()) {
                            wire_call["id"] = json!(id);
                        }
                        wire_call
                    })
                    .collect();
                let mut m = Map::new();
                m.insert("role".into(), json!("assistant"));
                m.insert("content".into(), json!(content.as_deref().unwrap_or("")));
                if !calls.is_empty() {
                    m.insert("tool_calls".into(), Value::Array(calls));
                }
                wire.push(Value::Object(m));
            }
            Message::Tool {
                call_id, content, ..
            } => {
                let answered = pending.answer(call_id);
                let (name, id) = match answered {
                    Some(p) => (p.name, p.given_id),
                    None => (String::new(), Some(call_id.clone())),
                };
                let mut result = json!({"role": "tool", "tool_name": name, "content": content});
                if let Some(id) = id.filter(|id| !id.is_empty()) {
                    result["tool_call_id"] = json!(id);
                }
                wire.push(result);
            }
        }
    }
    let tools: Vec<Value> = catalog
        .tools
        .iter()
        .map(|t| {
            json!({"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.input_schema}})
        })
        .collect();
    let mut body = Map::new();
    body.insert("model".into(), json!(settings.model));
    body.insert("stream".into(), Value::Bool(false));
    body.insert("messages".into(), Value::Array(wire));
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    let mut options = Map::new();
    if let Some(t) = settings.temperature {
        options.insert("temperature".into(), json!(t));
    }
    if let Some(n) = settings.max_tokens {
        options.insert("num_predict".into(), json!(n));
    }
    if !options.is_empty() {
        body.insert("options".into(), Value::Object(options));
    }
    serde_json::to_vec(&Value::Object(body)).unwrap_or_default()
}

/// An `{"error": …}` object as a provider error (class from the text when it says more).
fn error_in_body(value: &Value) -> ProviderError {
    let info = ErrorInfo::from_json(value);
    let text = info.message.as_deref().unwrap_or("").to_ascii_lowercase();
    let class = if text.contains("not found") {
        ErrorClass::ClientError
    } else {
        class_from_code(&info).unwrap_or(ErrorClass::BadResponse)
    };
    ProviderError::new(
        class,
        None,
        format!(
            "provider returned an error in a successful response: {}",
            info.message_excerpt()
        ),
    )
}

// Long: one pass over the wire format's fields in the order its documentation gives them.
pub(crate) fn decode_response(raw: &[u8]) -> Result<ModelTurn, ProviderError> {
    // `stream: false` gives one object; a server or proxy that streams anyway gives NDJSON,
    // whose lines are merged (and whose error line, sent with status 200, is the answer).
    let lines: Vec<Value> = match serde_json::from_slice::<Value>(raw) {
        Ok(v) => vec![v],
        Err(_) => {
            let text = String::from_utf8_lossy(raw);
            let parsed: Result<Vec<Value>, _> = text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(serde_json::from_str::<Value>)
                .collect();
            match parsed {
                Ok(lines) if !lines.is_empty() => lines,
                // Neither whole nor line by line: report it as the whole body's parse error.
                _ => {
                    return Err(parse_object(raw).err().unwrap_or_else(|| {
                        malformed("response body is neither JSON nor JSON lines".to_owned())
                    }));
                }
            }
        }
    };
    if let Some(err) = lines
        .iter()
        .find(|l| matches!(l.get("error"), Some(e) if !e.is_null()))
    {
        return Err(error_in_body(err));
    }
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    let mut saw_message = false;
    for line in &lines {
        let Some(message) = line.get("message").filter(|m| m.is_object()) else {
            continue;
        };
        saw_message = true;
        if let Some(t) = message.get("content").and_then(Value::as_str) {
            text.push_str(t);
        }
        match message.get("tool_calls") {
            None | Some(Value::Null) => {}
            Some(Value::Array(calls)) => {
                for (i, call) in calls.iter().enumerate() {
                    let function = call.get("function");
                    let name = function
                        .and_then(|f| f.get("name"))
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    if name.is_empty() {
                        return Err(malformed(format!("tool_calls[{i}] has no name")));
                    }
                    let id = call_id(call.get("id"));
                    tool_calls.push(decode_arguments(
                        id,
                        name.to_owned(),
                        function.and_then(|f| f.get("arguments")),
                    ));
                }
            }
            Some(other) => {
                return Err(malformed(format!(
                    "tool_calls is not an array: {}",
                    excerpt_text(&other.to_string())
                )));
            }
        }
    }
    let last = lines.last().unwrap_or(&Value::Null);
    if !saw_message {
        return Err(malformed(format!(
            "response has no message: {}",
            excerpt_text(&last.to_string())
        )));
    }
    let finish = last
        .get("done_reason")
        .and_then(Value::as_str)
        .map(|s| match s {
            "stop" => FinishReason::Stop,
            "length" => FinishReason::Length,
            other => FinishReason::Other(other.to_owned()),
        });
    Ok(ModelTurn {
        tool_calls,
        text: (!text.is_empty()).then_some(text),
        usage: Usage {
            input_tokens: last.get("prompt_eval_count").and_then(Value::as_u64),
            output_tokens: last.get("eval_count").and_then(Value::as_u64),
            ..Usage::default()
        },
        finish,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolscore_core::ToolCall;
    use toolscore_core::catalog::Tool;

    #[test]
    fn history_names_the_tool_and_keeps_arguments_as_objects() {
        let catalog = Catalog::new(
            vec![Tool {
                name: "get_weather".into(),
                description: "Get the weather in a given city".into(),
                input_schema: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
                ..Default::default()
            }],
            "t".into(),
        );
        let mut settings = ProviderSettings::new(KIND, "o", "http://localhost:11434", "qwen3");
        settings.temperature = Some(0.0);
        settings.max_tokens = Some(200);
        let messages = vec![
            Message::User {
                content: "What is the weather in Toronto?".into(),
            },
            Message::Assistant {
                content: None,
                tool_calls: vec![ToolCall {
                    id: None,
                    name: "get_weather".into(),
                    arguments: json!({"city": "Toronto"}),
                    unparsed_arguments: None,
                    thought_signature: None,
                }],
            },
            Message::Tool {
                call_id: String::new(),
                content: "11 degrees celsius".into(),
                is_error: false,
            },
        ];
        let body: Value =
            serde_json::from_slice(&encode_request(&settings, &messages, &catalog)).unwrap();
        assert_eq!(body["stream"], false);
        assert_eq!(
            body["options"],
            json!({"temperature": 0.0, "num_predict": 200})
        );
        assert!(body.get("tool_choice").is_none());
        let m = body["messages"].as_array().unwrap();
        assert_eq!(m[1]["content"], "");
        assert_eq!(
            m[1]["tool_calls"][0]["function"]["arguments"],
            json!({"city": "Toronto"})
        );
        assert_eq!(m[2]["role"], "tool");
        assert_eq!(m[2]["tool_name"], "get_weather");
        // The call came without an id: none is invented on either side.
        assert!(m[1]["tool_calls"][0].get("id").is_none(), "{}", m[1]);
        assert!(m[2].get("tool_call_id").is_none(), "{}", m[2]);
    }

    #[test]
    fn decodes_the_docs_example_and_errors_in_a_200() {
        let body = br#"{"model":"llama3.2","created_at":"2025-07-07T20:32:53.844124Z",
          "message":{"role":"assistant","content":"","tool_calls":[{"function":{"index":0,"name":"get_weather","arguments":{"city":"Tokyo"}}}]},
          "done_reason":"stop","done":true,"total_duration":3244883583,"load_duration":2969184542,
          "prompt_eval_count":169,"prompt_eval_duration":141656333,"eval_count":18,"eval_duration":133293625}"#;
        let turn = decode_response(body).unwrap();
        assert_eq!(turn.tool_calls.len(), 1);
        assert_eq!(turn.tool_calls[0].id, None);
        assert_eq!(turn.tool_calls[0].arguments, json!({"city": "Tokyo"}));
        assert_eq!(turn.finish, Some(FinishReason::Stop));
        assert_eq!(turn.usage.input_tokens, Some(169));
        assert_eq!(turn.usage.output_tokens, Some(18));
        assert_eq!(turn.text, None);

        let err =
            decode_response(br#"{"error":"the model failed to generate a response"}"#).unwrap_err();
        assert_eq!(err.class, ErrorClass::BadResponse);
        assert!(
            err.message.contains("failed to generate"),
            "{}",
            err.message
        );
        let stream = b"{\"message\":{\"role\":\"assistant\",\"content\":\"It is\"},\"done\":false}\n{\"error\":\"an error was encountered while running the model\"}\n";
        assert!(decode_response(stream).is_err());
        let stream = b"{\"message\":{\"role\":\"assistant\",\"content\":\"It is \"},\"done\":false}\n{\"message\":{\"role\":\"assistant\",\"content\":\"11 C\"},\"done\":true,\"done_reason\":\"stop\",\"eval_count\":4}\n";
        let turn = decode_response(stream).unwrap();
        assert_eq!(turn.text.as_deref(), Some("It is 11 C"));
        assert_eq!(turn.usage.output_tokens, Some(4));
        assert_eq!(
            decode_response(b"not json").unwrap_err().class,
            ErrorClass::BadResponse
        );
    }
}
