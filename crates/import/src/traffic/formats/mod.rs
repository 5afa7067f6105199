//! Logged model exchanges decoded into provider-neutral conversations: OpenAI Chat Completions
//! and Responses and Anthropic Messages request/response pairs (one JSON object per line,
//! `{"request": {...}, "response": {...}}`), and OpenTelemetry GenAI spans (OTLP JSON).
//!
//! A line that is not any of these is an input error; an exchange that is one of these but
//! cannot become a fixture (an HTTP error, an image in a message, a hosted tool) is skipped
//! with a reason shared by every exchange skipped for it, so they count together.

use serde_json::{Map, Value};

use toolscore_core::{Message, ToolCall};

mod otel;

use otel::decode_otlp;

/// The wire format an exchange was logged in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Format {
    OpenAiChat,
    OpenAiResponses,
    Anthropic,
    OtelGenAi,
}

impl Format {
    pub const ALL: [Format; 4] = [
        Format::OpenAiChat,
        Format::OpenAiResponses,
        Format::Anthropic,
        Format::OtelGenAi,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Format::OpenAiChat => "openai-chat",
            Format::OpenAiResponses => "openai-responses",
            Format::Anthropic => "anthropic",
            Format::OtelGenAi => "otel-genai",
        }
    }

    pub fn from_label(label: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.label() == label)
    }
}

/// One model call as logged: the conversation it was sent, the tools it was shown (as logged,
/// any catalog shape) and the calls it answered with (none: it answered in text).
#[derive(Debug, Clone)]
pub(crate) struct Exchange {
    pub format: Format,
    /// OTel only: the span's trace id and span id.
    pub span: Option<(String, String)>,
    pub messages: Vec<Message>,
    pub tools: Vec<Value>,
    pub calls: Vec<(String, Value)>,
}

/// An exchange that cannot become a fixture, and why; `tool` when the reply is known.
#[derive(Debug, Clone)]
pub(crate) struct Skip {
    pub reason: String,
}

/// What one log line holds: its exchanges (several for an OTLP export), the ones skipped, and
/// how many spans were not model calls at all.
#[derive(Debug, Default)]
pub(crate) struct Decoded {
    /// The record's format, as forced or detected.
    pub format: Option<Format>,
    pub exchanges: Vec<Exchange>,
    pub skipped: Vec<Skip>,
    pub other_spans: usize,
}

/// Decodes one log record. `Err` is a record that is none of the formats (or not the forced
/// one): the caller reports it with its file and line.
pub(crate) fn decode(record: &Value, forced: Option<Format>) -> Result<Decoded, String> {
    let format = match forced {
        Some(f) => f,
        None => detect(record).ok_or(
            "cannot tell the format: expected {\"request\", \"response\"} of OpenAI Chat Completions, OpenAI Responses or Anthropic Messages, or an OTLP JSON export with `resourceSpans` (or pass --format)",
        )?,
    };
    let (request, response) = match format {
        Format::OtelGenAi => {
            return decode_otlp(record).map(|d| Decoded {
                format: Some(format),
                ..d
            });
        }
        _ => pair(record, format)?,
    };
    let one = |r: Result<Exchange, String>| match r {
        Ok(e) => Decoded {
            format: Some(format),
            exchanges: vec![e],
            ..Decoded::default()
        },
        Err(reason) => Decoded {
            format: Some(format),
            skipped: vec![Skip { reason }],
            ..Decoded::default()
        },
    };
    let body = match response_body(response) {
        Ok(b) => b,
        Err(reason) => return Ok(one(Err(reason))),
    };
    let structural = |field: &str| format!("no `{field}` in the {} exchange", format.label());
    let decoded = match format {
        Format::OpenAiResponses => {
            if request.get("input").is_none() {
                return Err(structural("request.input"));
            }
            responses(request, body)
        }
        _ => {
            if !request.get("messages").is_some_and(Value::is_array) {
                return Err(structural("request.messages"));
            }
            if format == Format::Anthropic {
                anthropic(request, body)
            } else {
                chat(request, body)
            }
        }
    };
    Ok(one(decoded))
}

fn pair(record: &Value, format: Format) -> Result<(&Value, &Value), String> {
    let shape = format!(
        "a {} log line is {{\"request\": {{...}}, \"response\": {{...}}}}",
        format.label()
    );
    let request = record
        .get("request")
        .filter(|r| r.is_object())
        .ok_or_else(|| format!("no `request` object ({shape})"))?;
    let response = record
        .get("response")
        .ok_or_else(|| format!("no `response` ({shape})"))?;
    Ok((request, response))
}

fn detect(record: &Value) -> Option<Format> {
    if record.get("resourceSpans").is_some() {
        return Some(Format::OtelGenAi);
    }
    let request = record.get("request")?;
    record.get("response")?;
    if request.get("input").is_some() || request.get("instructions").is_some() {
        return Some(Format::OpenAiResponses);
    }
    request.get("messages")?;
    // Anthropic keeps the system prompt and max_tokens at the top level and nests tool
    // schemas under `input_schema`; Chat nests them under `function`.
    let anthropic_tools = request
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| t.iter().any(|t| t.get("input_schema").is_some()));
    let body = record.get("response").map(|r| r.get("body").unwrap_or(r));
    let anthropic_reply =
        body.is_some_and(|b| b.get("type").and_then(Value::as_str) == Some("message"));
    if anthropic_tools || anthropic_reply || request.get("system").is_some() {
        Some(Format::Anthropic)
    } else {
        Some(Format::OpenAiChat)
    }
}

/// The response body: the record's `response` itself, or its `body` when the log wraps it
/// with the HTTP status (`{"status_code": 200, "body": {...}}`, as batch output files do).
fn response_body(response: &Value) -> Result<&Value, String> {
    let (status, body) = match response.get("body") {
        Some(body) => (
            response
                .get("status_code")
                .or_else(|| response.get("status"))
                .and_then(Value::as_u64),
            body,
        ),
        None => (None, response),
    };
    if let Some(s) = status
        && !(200..300).contains(&s)
    {
        return Err(format!("the response is an HTTP error ({s})"));
    }
    if body.get("error").is_some_and(|e| !e.is_null())
        || body.get("type").and_then(Value::as_str) == Some("error")
    {
        return Err("the response is an error body".into());
    }
    if !body.is_object() {
        return Err("the response body is not a JSON object".into());
    }
    Ok(body)
}

/// Text of a content field: a string, null, or a list of text parts. Anything else (images,
/// files, audio) cannot be replayed as a toolscore message.
fn text_of(content: Option<&Value>) -> Result<String, String> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut texts = Vec::new();
            for p in parts {
                match p {
                    Value::String(s) => texts.push(s.clone()),
                    Value::Object(o) => {
                        let kind = o.get("type").and_then(Value::as_str).unwrap_or("text");
                        match kind {
                            "text" | "input_text" | "output_text" => texts.push(
                                o.get("text")
                                    .or_else(|| o.get("content"))
                                    .and_then(Value::as_str)
                                    .unwrap_or_default()
                                    .to_owned(),
                            ),
                            other => {
                                return Err(format!(
                                    "a message holds `{other}` content (only text is imported)"
                                ));
                            }
                        }
                    }
                    _ => return Err("a content part is not an object".into()),
                }
            }
            Ok(texts.join("\n"))
        }
        Some(_) => Err("a message's content is neither text nor a list of parts".into()),
    }
}

fn arguments_of(name: &str, raw: Option<&Value>) -> Result<Value, String> {
    let call = match raw {
        None | Some(Value::Null) => return Ok(Value::Object(Map::new())),
        Some(Value::String(s)) => ToolCall::from_encoded_arguments(None, name.to_owned(), s),
        Some(v @ Value::Object(_)) => return Ok(v.clone()),
        Some(_) => {
            return Err(format!(
                "the arguments of a `{name}` call are not an object"
            ));
        }
    };
    if call.arguments_not_json() || !call.arguments.is_object() {
        return Err(format!(
            "the arguments of a `{name}` call are not a JSON object"
        ));
    }
    Ok(call.arguments)
}

/// A provider adapter's decoder of a response body.
type ReplyDecoder =
    fn(&[u8]) -> Result<toolscore_core::ModelTurn, toolscore_provider::ProviderError>;

/// The calls of the logged reply, read by the decoder of the adapter that would have received
/// it, so an import sees a reply exactly as a run would.
fn reply_calls(decode: ReplyDecoder, body: &Value) -> Result<Vec<(String, Value)>, String> {
    let decoded = decode(body.to_string().as_bytes());
    let turn = decoded.map_err(|e| format!("the response cannot be read: {}", e.message))?;
    turn.tool_calls
        .into_iter()
        .map(|call| {
            if call.arguments_not_json() || !call.arguments.is_object() {
                return Err(format!(
                    "the arguments of a `{}` call are not a JSON object",
                    call.name
                ));
            }
            Ok((call.name, call.arguments))
        })
        .collect()
}

fn history_call(id: Option<&Value>, name: &str, args: Value) -> ToolCall {
    ToolCall {
        id: id.and_then(Value::as_str).map(str::to_owned),
        name: name.to_owned(),
        arguments: args,
        unparsed_arguments: None,
        thought_signature: None,
    }
}

/// Tools of an OpenAI request: function tools only; a hosted or custom tool was part of what
/// the model saw, and toolscore cannot show it, so such an exchange is skipped.
fn function_tools(request: &Value) -> Result<Vec<Value>, String> {
    let tools = request
        .get("tools")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for t in &tools {
        match t.get("type").and_then(Value::as_str) {
            Some("function") | None => {}
            Some(other) => {
                return Err(format!(
                    "the request offers a `{other}` tool (only function tools are imported)"
                ));
            }
        }
    }
    Ok(tools)
}

/// A request that took the decision away from the model (`tool_choice` forcing a call, a
/// named tool, or no call): its reply says what the request forced, not what the model chose,
/// and a fixture replayed with the choice left to the model would misstate it.
fn chosen_for_the_model(request: &Value) -> Result<(), String> {
    let choice = match request.get("tool_choice") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(o)) => match o.get("type").and_then(Value::as_str) {
            // Anthropic's `auto` (and its `disable_parallel_tool_use` flag) leaves the choice.
            Some("auto") => return Ok(()),
            Some("allowed_tools")
                if o.get("mode")
                    .or_else(|| o.get("allowed_tools").and_then(|a| a.get("mode")))
                    .and_then(Value::as_str)
                    == Some("auto") =>
            {
                return Ok(());
            }
            Some(t) => t.to_owned(),
            None => "an object".to_owned(),
        },
        Some(_) => "a non-string".to_owned(),
    };
    if choice == "auto" {
        return Ok(());
    }
    let shown = match choice.as_str() {
        "none" | "required" | "any" | "function" | "tool" | "allowed_tools" => choice.as_str(),
        _ => "other",
    };
    Err(format!(
        "the request set tool_choice `{shown}`: the model did not choose whether or which tool to call"
    ))
}

fn no_tools<T>(tools: &[T]) -> Result<(), String> {
    if tools.is_empty() {
        Err("the request offers no tools".into())
    } else {
        Ok(())
    }
}

fn chat(request: &Value, body: &Value) -> Result<Exchange, String> {
    let tools = function_tools(request)?;
    no_tools(&tools)?;
    chosen_for_the_model(request)?;
    let mut messages = Vec::new();
    for m in request["messages"].as_array().into_iter().flatten() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
        let content = text_of(m.get("content"))?;
        messages.push(match role {
            "system" | "developer" => Message::System { content },
            "user" => Message::User { content },
            "assistant" => {
                let mut calls = Vec::new();
                for c in m
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let name = c["function"]["name"]
                        .as_str()
                        .ok_or("an earlier tool call has no function.name")?;
                    let args = arguments_of(name, c["function"].get("arguments"))?;
                    calls.push(history_call(c.get("id"), name, args));
                }
                Message::Assistant {
                    content: Some(content).filter(|c| !c.is_empty()),
                    tool_calls: calls,
                }
            }
            "tool" => Message::Tool {
                call_id: m
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .ok_or("a tool message has no tool_call_id")?
                    .to_owned(),
                content,
                is_error: false,
            },
            other => return Err(format!("a `{other}` message (not imported)")),
        });
    }
    let calls = reply_calls(toolscore_provider::decode_openai_compat_response, body)?;
    Ok(Exchange {
        format: Format::OpenAiChat,
        span: None,
        messages,
        tools,
        calls,
    })
}

/// Appends a call to the assistant turn being built, or starts one: the Responses API and the
/// OTel parts list calls as separate items.
fn push_call(messages: &mut Vec<Message>, call: ToolCall) {
    if let Some(Message::Assistant { tool_calls, .. }) = messages.last_mut() {
        tool_calls.push(call);
    } else {
        messages.push(Message::Assistant {
            content: None,
            tool_calls: vec![call],
        });
    }
}

fn responses(request: &Value, body: &Value) -> Result<Exchange, String> {
    if request
        .get("previous_response_id")
        .is_some_and(|p| !p.is_null())
    {
        return Err(
            "the request continues a stored response (previous_response_id): the earlier turns are not in the log"
                .into(),
        );
    }
    let tools = function_tools(request)?;
    no_tools(&tools)?;
    chosen_for_the_model(request)?;
    let mut messages = Vec::new();
    if let Some(i) = request.get("instructions").and_then(Value::as_str) {
        messages.push(Message::System {
            content: i.to_owned(),
        });
    }
    match request.get("input") {
        Some(Value::String(s)) => messages.push(Message::User { content: s.clone() }),
        Some(Value::Array(items)) => {
            for item in items {
                let kind = item
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("message");
                match kind {
                    "message" => {
                        let content = text_of(item.get("content"))?;
                        match item.get("role").and_then(Value::as_str).unwrap_or_default() {
                            "system" | "developer" => messages.push(Message::System { content }),
                            "user" => messages.push(Message::User { content }),
                            "assistant" => messages.push(Message::Assistant {
                                content: Some(content).filter(|c| !c.is_empty()),
                                tool_calls: Vec::new(),
                            }),
                            other => return Err(format!("an input message with role `{other}`")),
                        }
                    }
                    "function_call" => {
                        let name = item
                            .get("name")
                            .and_then(Value::as_str)
                            .ok_or("an input function_call has no name")?;
                        let args = arguments_of(name, item.get("arguments"))?;
                        push_call(&mut messages, history_call(item.get("call_id"), name, args));
                    }
                    "function_call_output" => messages.push(Message::Tool {
                        call_id: item
                            .get("call_id")
                            .and_then(Value::as_str)
                            .ok_or("a function_call_output has no call_id")?
                            .to_owned(),
                        content: text_of(item.get("output"))?,
                        is_error: false,
                    }),
                    // Reasoning items carry no conversation text toolscore could replay.
                    "reasoning" => {}
                    other => return Err(format!("an input item of type `{other}` (not imported)")),
                }
            }
        }
        _ => return Err("`input` is neither text nor a list of items".into()),
    }
    if let Some(status) = body.get("status").and_then(Value::as_str)
        && status != "completed"
    {
        return Err(format!("the response did not complete (status {status})"));
    }
    let calls = reply_calls(toolscore_provider::decode_openai_responses_response, body)?;
    Ok(Exchange {
        format: Format::OpenAiResponses,
        span: None,
        messages,
        tools,
        calls,
    })
}

// Long: one pass over a logged Messages exchange, request then reply, as the API documents it.
fn anthropic(request: &Value, body: &Value) -> Result<Exchange, String> {
    let tools = request
        .get("tools")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for t in &tools {
        if t.get("input_schema").is_none() {
            let kind = t.get("type").and_then(Value::as_str).unwrap_or("unnamed");
            return Err(format!(
                "the request offers a `{kind}` server tool (only client tools are imported)"
            ));
        }
    }
    no_tools(&tools)?;
    chosen_for_the_model(request)?;
    let mut messages = Vec::new();
    if let Some(system) = request.get("system") {
        let content = text_of(Some(system))?;
        if !content.is_empty() {
            messages.push(Message::System { content });
        }
    }
    for m in request["messages"].as_array().into_iter().flatten() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
        let blocks = match m.get("content") {
            Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
            Some(Value::Array(b)) => b.clone(),
            _ => return Err("a message's content is neither text nor blocks".into()),
        };
        let mut texts = Vec::new();
        let mut calls = Vec::new();
        for b in &blocks {
            match b.get("type").and_then(Value::as_str).unwrap_or_default() {
                "text" => texts.push(
                    b.get("text")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                ),
                "tool_use" if role == "assistant" => {
                    let name = b
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or("an earlier tool_use has no name")?;
                    calls.push(history_call(
                        b.get("id"),
                        name,
                        arguments_of(name, b.get("input"))?,
                    ));
                }
                "tool_result" if role == "user" => messages.push(Message::Tool {
                    call_id: b
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .ok_or("a tool_result has no tool_use_id")?
                        .to_owned(),
                    content: text_of(b.get("content"))?,
                    is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                }),
                // Thinking is the model's own scratch work, not conversation to replay.
                "thinking" | "redacted_thinking" => {}
                other => return Err(format!("a `{other}` content block (not imported)")),
            }
        }
        let text = texts.join("\n");
        match role {
            "user" if !text.is_empty() => messages.push(Message::User { content: text }),
            "user" => {}
            "assistant" => messages.push(Message::Assistant {
                content: Some(text).filter(|t| !t.is_empty()),
                tool_calls: calls,
            }),
            other => return Err(format!("a message with role `{other}`")),
        }
    }
    let calls = reply_calls(toolscore_provider::decode_anthropic_response, body)?;
    Ok(Exchange {
        format: Format::Anthropic,
        span: None,
        messages,
        tools,
        calls,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn weather_tool_chat() -> Value {
        json!({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"location": {"type": "string"}}}}})
    }

    #[test]
    fn chat_history_and_reply_decode() {
        let record = json!({
            "request": {"model": "gpt-4.1", "tools": [weather_tool_chat()], "messages": [
                {"role": "system", "content": "You are a weather bot."},
                {"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\":\"Paris\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "15 degrees"},
                {"role": "user", "content": [{"type": "text", "text": "And Lyon?"}]}
            ]},
            "response": {"status_code": 200, "body": {"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [{"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\": \"Lyon\"}"}}]}}]}}
        });
        let d = decode(&record, None).unwrap();
        let e = &d.exchanges[0];
        assert_eq!(e.format, Format::OpenAiChat);
        assert_eq!(e.messages.len(), 5);
        assert_eq!(
            e.calls,
            vec![("get_weather".to_owned(), json!({"location": "Lyon"}))]
        );
        assert!(
            matches!(&e.messages[2], Message::Assistant { tool_calls, .. } if tool_calls[0].id.as_deref() == Some("call_1"))
        );
    }

    #[test]
    fn responses_merge_calls_into_one_turn_and_refuse_stored_state() {
        let record = json!({
            "request": {"instructions": "Be brief.", "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
              "input": [{"role": "user", "content": "Paris and Lyon?"},
                        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{\"location\":\"Paris\"}"},
                        {"type": "function_call", "call_id": "c2", "name": "get_weather", "arguments": "{\"location\":\"Lyon\"}"},
                        {"type": "function_call_output", "call_id": "c1", "output": "15"},
                        {"type": "function_call_output", "call_id": "c2", "output": "17"}]},
            "response": {"status": "completed", "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "15 and 17."}]}]}
        });
        let e = &decode(&record, None).unwrap().exchanges[0];
        assert_eq!(e.format, Format::OpenAiResponses);
        assert!(
            matches!(&e.messages[2], Message::Assistant { tool_calls, .. } if tool_calls.len() == 2)
        );
        assert!(e.calls.is_empty());
        let mut stored = record.clone();
        stored["request"]["previous_response_id"] = json!("resp_1");
        let d = decode(&stored, None).unwrap();
        assert!(d.skipped[0].reason.contains("previous_response_id"));
    }

    #[test]
    fn anthropic_tool_results_come_before_the_user_text() {
        let record = json!({
            "request": {"system": "Weather bot.", "max_tokens": 100,
              "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
              "messages": [{"role": "user", "content": "Paris?"},
                           {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"location": "Paris"}}]},
                           {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "15"}], "is_error": false}, {"type": "text", "text": "And Lyon?"}]}]},
            "response": {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "Checking."}, {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"location": "Lyon"}}], "stop_reason": "tool_use"}
        });
        let e = &decode(&record, None).unwrap().exchanges[0];
        assert_eq!(e.format, Format::Anthropic);
        assert!(
            matches!(&e.messages[3], Message::Tool { call_id, content, .. } if call_id == "toolu_1" && content == "15")
        );
        assert!(matches!(&e.messages[4], Message::User { content } if content == "And Lyon?"));
        assert_eq!(e.calls[0].1, json!({"location": "Lyon"}));
    }

    #[test]
    fn otlp_spans_with_string_and_structured_attributes() {
        let input =
            json!([{"role": "user", "parts": [{"type": "text", "content": "Paris?"}]}]).to_string();
        // The reply recorded in structured form: kvlists all the way down.
        let call = json!({"kvlistValue": {"values": [
            {"key": "type", "value": {"stringValue": "tool_call"}},
            {"key": "name", "value": {"stringValue": "get_weather"}},
            {"key": "arguments", "value": {"kvlistValue": {"values": [{"key": "location", "value": {"stringValue": "Paris"}}]}}}
        ]}});
        let message = json!({"kvlistValue": {"values": [
            {"key": "role", "value": {"stringValue": "assistant"}},
            {"key": "parts", "value": {"arrayValue": {"values": [call]}}}
        ]}});
        let output = json!({"arrayValue": {"values": [message]}});
        let record = json!({"resourceSpans": [{"scopeSpans": [{"spans": [
            {"traceId": "t1", "spanId": "s1", "name": "chat gpt-4.1", "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                {"key": "gen_ai.input.messages", "value": {"stringValue": input}},
                {"key": "gen_ai.output.messages", "value": output},
                {"key": "gen_ai.tool.definitions", "value": {"stringValue": json!([{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]).to_string()}}
            ]},
            {"traceId": "t1", "spanId": "s2", "name": "execute_tool get_weather", "attributes": []}
        ]}]}]});
        let d = decode(&record, None).unwrap();
        assert_eq!(d.other_spans, 1);
        assert_eq!(d.exchanges[0].span, Some(("t1".into(), "s1".into())));
        assert_eq!(d.exchanges[0].calls[0].1, json!({"location": "Paris"}));
    }

    #[test]
    fn older_prompt_and_completion_events_decode_when_tools_are_recorded() {
        let event = |name: &str, key: &str, value: String| json!({"name": name, "attributes": [{"key": key, "value": {"stringValue": value}}]});
        let prompt = json!([{"role": "system", "content": "Weather bot."}, {"role": "user", "content": "Paris?"}]).to_string();
        let completion = json!([{"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\":\"Paris\"}"}}]}]).to_string();
        let tools =
            json!([{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}])
                .to_string();
        let span = |with_tools: bool| {
            let attributes = if with_tools {
                json!([{"key": "gen_ai.tool.definitions", "value": {"stringValue": tools.clone()}}])
            } else {
                json!([])
            };
            json!({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "t", "spanId": "s", "attributes": attributes, "events": [
                event("gen_ai.content.prompt", "gen_ai.prompt", prompt.clone()),
                event("gen_ai.content.completion", "gen_ai.completion", completion.clone())
            ]}]}]}]})
        };
        let d = decode(&span(true), None).unwrap();
        let e = &d.exchanges[0];
        assert_eq!(e.format, Format::OtelGenAi);
        assert_eq!(e.messages.len(), 2);
        assert_eq!(
            e.calls,
            vec![("get_weather".to_owned(), json!({"location": "Paris"}))]
        );
        let d = decode(&span(false), None).unwrap();
        assert!(
            d.skipped[0]
                .reason
                .starts_with("no gen_ai.tool.definitions")
        );
    }

    #[test]
    fn a_forced_tool_choice_is_skipped_and_auto_is_kept() {
        let with = |choice: Value| {
            let record = json!({
                "request": {"tools": [weather_tool_chat()], "tool_choice": choice,
                            "messages": [{"role": "user", "content": "Paris?"}]},
                "response": {"choices": [{"message": {"role": "assistant", "content": "Sunny."}}]}
            });
            let d = decode(&record, None).unwrap();
            d.skipped.first().map(|s| s.reason.clone())
        };
        assert_eq!(with(json!("auto")), None);
        assert_eq!(with(json!({"type": "auto"})), None);
        let forced = with(json!({"type": "function", "function": {"name": "get_weather"}}));
        assert_eq!(
            forced.as_deref(),
            Some(
                "the request set tool_choice `function`: the model did not choose whether or which tool to call"
            )
        );
        assert!(with(json!("required")).unwrap().contains("`required`"));
        assert!(with(json!("none")).unwrap().contains("`none`"));
    }

    #[test]
    fn unknown_records_are_errors_and_failed_replies_are_skips() {
        assert!(
            decode(&json!({"hello": 1}), None)
                .unwrap_err()
                .contains("cannot tell the format")
        );
        assert!(
            decode(&json!({"request": {}}), Some(Format::OpenAiChat))
                .unwrap_err()
                .contains("no `response`")
        );
        let d = decode(
            &json!({"request": {"messages": [], "tools": [weather_tool_chat()]}, "response": {"status_code": 429, "body": {"error": {"message": "slow down"}}}}),
            None,
        )
        .unwrap();
        assert_eq!(d.skipped[0].reason, "the response is an HTTP error (429)");
    }
}
