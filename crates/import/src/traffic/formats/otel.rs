//! OpenTelemetry GenAI spans (OTLP JSON): the exchange read from a span's attributes and
//! events, in the current semantic conventions and the older ones.

use super::{
    Decoded, Exchange, Format, Map, Message, Skip, Value, arguments_of, chat, history_call,
    no_tools, push_call,
};

/// An OTLP `AnyValue` as plain JSON: `{"stringValue": "x"}` is `"x"`, a kvlist an object.
pub(super) fn any_value(v: &Value) -> Value {
    let Some(obj) = v.as_object() else {
        return Value::Null;
    };
    if let Some(s) = obj.get("stringValue") {
        return s.clone();
    }
    if let Some(b) = obj.get("boolValue") {
        return b.clone();
    }
    if let Some(i) = obj.get("intValue") {
        // OTLP JSON writes 64-bit integers as strings.
        return match i {
            Value::String(s) => s.parse::<i64>().map(Value::from).unwrap_or(Value::Null),
            other => other.clone(),
        };
    }
    if let Some(d) = obj.get("doubleValue") {
        return d.clone();
    }
    if let Some(a) = obj.get("arrayValue") {
        return Value::Array(
            a.get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(any_value)
                .collect(),
        );
    }
    if let Some(kv) = obj.get("kvlistValue") {
        return Value::Object(attributes(kv.get("values")));
    }
    Value::Null
}

pub(super) fn attributes(list: Option<&Value>) -> Map<String, Value> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|kv| {
            Some((
                kv.get("key")?.as_str()?.to_owned(),
                any_value(kv.get("value")?),
            ))
        })
        .collect()
}

/// A structured attribute: recorded as structure, or (as the conventions allow on spans) as
/// a JSON string.
pub(super) fn structured(attrs: &Map<String, Value>, key: &str) -> Result<Option<Value>, String> {
    match attrs.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => serde_json::from_str(s)
            .map(Some)
            .map_err(|_| format!("`{key}` is not JSON")),
        Some(v) => Ok(Some(v.clone())),
    }
}

pub(super) fn decode_otlp(record: &Value) -> Result<Decoded, String> {
    let resource_spans = record
        .get("resourceSpans")
        .and_then(Value::as_array)
        .ok_or("`resourceSpans` is not a list (an OTLP JSON trace export)")?;
    let mut out = Decoded::default();
    for rs in resource_spans {
        for ss in rs
            .get("scopeSpans")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for span in ss
                .get("spans")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let attrs = attributes(span.get("attributes"));
                let prompt_event = event_attribute(span, "gen_ai.content.prompt", "gen_ai.prompt");
                if !attrs.contains_key("gen_ai.input.messages") && prompt_event.is_none() {
                    out.other_spans += 1;
                    continue;
                }
                let ids = (
                    span.get("traceId")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    span.get("spanId")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                );
                let decoded = match prompt_event {
                    Some(prompt) if !attrs.contains_key("gen_ai.input.messages") => {
                        older_genai_span(span, &attrs, &prompt)
                    }
                    _ => genai_span(span, &attrs),
                };
                match decoded {
                    Ok(mut e) => {
                        e.span = Some(ids);
                        out.exchanges.push(e);
                    }
                    Err(reason) => out.skipped.push(Skip { reason }),
                }
            }
        }
    }
    Ok(out)
}

/// The string attribute `key` of the span's first event named `event`.
pub(super) fn event_attribute(span: &Value, event: &str, key: &str) -> Option<String> {
    span.get("events")
        .and_then(Value::as_array)?
        .iter()
        .find(|e| e.get("name").and_then(Value::as_str) == Some(event))
        .and_then(|e| attributes(e.get("attributes")).get(key).cloned())
        .and_then(|v| v.as_str().map(str::to_owned))
}

/// The tools a span that did not fail says the model saw (`gen_ai.tool.definitions`).
fn span_tools(span: &Value, attrs: &Map<String, Value>) -> Result<Vec<Value>, String> {
    if span_failed(span) {
        return Err("the span ended in error".into());
    }
    match structured(attrs, "gen_ai.tool.definitions")? {
        Some(Value::Array(t)) => Ok(t),
        Some(_) => Err("`gen_ai.tool.definitions` is not a list".into()),
        None => Err(
            "no gen_ai.tool.definitions: the span does not record which tools the model saw".into(),
        ),
    }
}

/// A span of the older conventions: the prompt as a `gen_ai.content.prompt` event holding
/// `gen_ai.prompt` (Chat Completions messages as JSON), the reply as a
/// `gen_ai.content.completion` event holding `gen_ai.completion` (assistant messages as JSON,
/// or bare text). The tools still come from `gen_ai.tool.definitions`: those conventions did
/// not record them, so such spans import only where the instrumentation adds it.
pub(super) fn older_genai_span(
    span: &Value,
    attrs: &Map<String, Value>,
    prompt: &str,
) -> Result<Exchange, String> {
    let tools = span_tools(span, attrs)?;
    let messages: Value = serde_json::from_str(prompt)
        .ok()
        .filter(Value::is_array)
        .ok_or("`gen_ai.prompt` is not a JSON list of messages")?;
    let completion = event_attribute(span, "gen_ai.content.completion", "gen_ai.completion")
        .ok_or("no gen_ai.content.completion event: the span does not record the reply")?;
    let reply = match serde_json::from_str::<Value>(&completion) {
        Ok(Value::Array(m)) => m.into_iter().next().ok_or("`gen_ai.completion` is empty")?,
        Ok(m @ Value::Object(_)) => m,
        _ => serde_json::json!({"role": "assistant", "content": completion}),
    };
    let request = serde_json::json!({"messages": messages, "tools": tools});
    let body = serde_json::json!({"choices": [{"message": reply}]});
    let mut exchange = chat(&request, &body)?;
    exchange.format = Format::OtelGenAi;
    Ok(exchange)
}

pub(super) fn span_failed(span: &Value) -> bool {
    match span.get("status").and_then(|s| s.get("code")) {
        Some(Value::Number(n)) => n.as_u64() == Some(2),
        Some(Value::String(s)) => s == "STATUS_CODE_ERROR",
        _ => false,
    }
}

pub(super) fn parts_of(message: &Value) -> Vec<Value> {
    message
        .get("parts")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

pub(super) fn part_text(part: &Value) -> String {
    part.get("content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

// Long: one pass over the OTel GenAI span attributes, in the order the semantic conventions list them.
pub(super) fn genai_span(span: &Value, attrs: &Map<String, Value>) -> Result<Exchange, String> {
    let tools = span_tools(span, attrs)?;
    for t in &tools {
        if let Some(kind) = t.get("type").and_then(Value::as_str)
            && kind != "function"
        {
            return Err(format!(
                "the span offers a `{kind}` tool (only function tools are imported)"
            ));
        }
    }
    no_tools(&tools)?;
    let mut messages = Vec::new();
    if let Some(instructions) = structured(attrs, "gen_ai.system_instructions")? {
        let parts = match instructions {
            Value::Array(p) => p,
            Value::String(s) => vec![serde_json::json!({"type": "text", "content": s})],
            _ => return Err("`gen_ai.system_instructions` is not a list of parts".into()),
        };
        let text: Vec<String> = parts.iter().map(part_text).collect();
        messages.push(Message::System {
            content: text.join("\n"),
        });
    }
    let input = match structured(attrs, "gen_ai.input.messages")? {
        Some(Value::Array(m)) => m,
        _ => return Err("`gen_ai.input.messages` is not a list of messages".into()),
    };
    for m in &input {
        let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
        let mut texts = Vec::new();
        for part in parts_of(m) {
            match part.get("type").and_then(Value::as_str).unwrap_or_default() {
                "text" => texts.push(part_text(&part)),
                "tool_call" => {
                    let name = part
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or("an earlier tool_call part has no name")?;
                    let args = arguments_of(name, part.get("arguments"))?;
                    push_call(&mut messages, history_call(part.get("id"), name, args));
                }
                "tool_call_response" => messages.push(Message::Tool {
                    call_id: part
                        .get("id")
                        .and_then(Value::as_str)
                        .ok_or("a tool_call_response part has no id")?
                        .to_owned(),
                    content: match part.get("response") {
                        Some(Value::String(s)) => s.clone(),
                        Some(v) => v.to_string(),
                        None => String::new(),
                    },
                    is_error: false,
                }),
                "reasoning" => {}
                other => return Err(format!("a `{other}` message part (not imported)")),
            }
        }
        let text = texts.join("\n");
        if text.is_empty() {
            continue;
        }
        match role {
            "system" => messages.push(Message::System { content: text }),
            "user" => messages.push(Message::User { content: text }),
            "assistant" => {
                // Text of an assistant turn goes with the calls of that turn, if any.
                match messages.last_mut() {
                    Some(Message::Assistant { content, .. }) if content.is_none() => {
                        *content = Some(text);
                    }
                    _ => messages.push(Message::Assistant {
                        content: Some(text),
                        tool_calls: Vec::new(),
                    }),
                }
            }
            "tool" => return Err("a tool message without a tool_call_response part".into()),
            other => return Err(format!("a message with role `{other}`")),
        }
    }
    let output = match structured(attrs, "gen_ai.output.messages")? {
        Some(Value::Array(m)) => m,
        _ => return Err("no gen_ai.output.messages: the span does not record the reply".into()),
    };
    let reply = output.first().ok_or("`gen_ai.output.messages` is empty")?;
    let mut calls = Vec::new();
    for part in parts_of(reply) {
        if part.get("type").and_then(Value::as_str) == Some("tool_call") {
            let name = part
                .get("name")
                .and_then(Value::as_str)
                .ok_or("a tool_call part of the reply has no name")?;
            calls.push((name.to_owned(), arguments_of(name, part.get("arguments"))?));
        }
    }
    Ok(Exchange {
        format: Format::OtelGenAi,
        span: None,
        messages,
        tools,
        calls,
    })
}
