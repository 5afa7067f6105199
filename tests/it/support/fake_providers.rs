//! Scripted fakes of the native provider APIs (Anthropic Messages, OpenAI Responses, Gemini
//! generateContent, Ollama /api/chat, Azure OpenAI deployments), served by [`FakeServer`].
//!
//! Each `*_model` handler checks what the real API checks (path, auth headers, required
//! fields, how earlier tool calls and results must be laid out) and answers in that API's own
//! shape, bodies taken from the official examples in reference/providers.md: a conversation
//! that ends with a tool result gets the final text, any other gets a call to `get_weather`
//! for Paris. A request the real API would refuse gets that API's error body, so a test that
//! expects passes fails when an adapter encodes something wrong.
#![allow(dead_code)]

use serde_json::{Value, json};

use super::fake_openai::{FakeRequest, FakeResponse};

/// The key every fake expects.
pub(crate) const FAKE_KEY: &str = "fake-key-0123456789abcdef";
/// The final answer every fake gives once the tool result is in.
pub(crate) const FINAL_TEXT: &str = "It's 15 degrees in Paris.";
/// The arguments every fake calls `get_weather` with.
pub(crate) fn paris() -> Value {
    json!({"location": "Paris, France"})
}

// ---------------------------------------------------------------- Anthropic

pub(crate) fn anthropic_error(kind: &str, message: &str) -> String {
    json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}).to_string()
}

/// The docs' tool_use response (text block first, then the call; cache usage fields).
pub(crate) fn anthropic_tool_use_body(id: &str) -> String {
    json!({
        "id": "msg_01Aq9w938a90dw8q", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [
            {"type": "text", "text": "I'll check the current weather in Paris for you."},
            {"type": "tool_use", "id": id, "name": "get_weather", "input": paris()}
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 412, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1830,
          "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
          "output_tokens": 71, "service_tier": "standard"}
    })
    .to_string()
}

pub(crate) fn anthropic_text_body(text: &str) -> String {
    json!({"id": "msg_02", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
      "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": null,
      "usage": {"input_tokens": 520, "output_tokens": 14}})
    .to_string()
}

/// What the Messages API refuses, as its 400 / 401 bodies.
fn anthropic_refusal(req: &FakeRequest) -> Option<FakeResponse> {
    let bad = |m: &str| {
        Some(FakeResponse::status(
            400,
            anthropic_error("invalid_request_error", m),
        ))
    };
    if !req.path.ends_with("/messages") {
        return Some(FakeResponse::status(
            404,
            anthropic_error("not_found_error", "Not Found"),
        ));
    }
    if req.header("x-api-key") != Some(FAKE_KEY) {
        return Some(FakeResponse::status(
            401,
            anthropic_error("authentication_error", "invalid x-api-key"),
        ));
    }
    if req.header("anthropic-version") != Some("2023-06-01") {
        return bad("anthropic-version: header is required");
    }
    let b = &req.body;
    if !b["max_tokens"].is_u64() {
        return bad("max_tokens: Field required");
    }
    if b.get("system").is_some_and(|s| !s.is_string()) {
        return bad("system: Input should be a valid string");
    }
    for tool in b["tools"].as_array().into_iter().flatten() {
        if tool["input_schema"]["type"] != "object" {
            return bad("tools.0.input_schema.type: Input should be 'object'");
        }
    }
    let Some(messages) = b["messages"].as_array() else {
        return bad("messages: Field required");
    };
    let mut previous_tool_use_ids: Vec<String> = Vec::new();
    let mut last_role = "";
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or("");
        if role == last_role {
            return bad(&format!("messages.{i}: roles must alternate"));
        }
        last_role = role;
        let blocks: Vec<Value> = match &m["content"] {
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            Value::Array(a) => a.clone(),
            _ => return bad(&format!("messages.{i}.content: Field required")),
        };
        if role == "user" {
            let results: Vec<&str> = blocks
                .iter()
                .take_while(|b| b["type"] == "tool_result")
                .filter_map(|b| b["tool_use_id"].as_str())
                .collect();
            let total_results = blocks.iter().filter(|b| b["type"] == "tool_result").count();
            if total_results != results.len() {
                return bad(&format!(
                    "messages.{i}: tool_result blocks must come first in the user message"
                ));
            }
            if results.len() != previous_tool_use_ids.len()
                || previous_tool_use_ids
                    .iter()
                    .any(|id| !results.contains(&id.as_str()))
            {
                return bad(&format!(
                    "messages.{i}: tool_use ids were found without tool_result blocks immediately after: {previous_tool_use_ids:?}"
                ));
            }
            previous_tool_use_ids.clear();
        } else {
            previous_tool_use_ids = blocks
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| {
                    if !b["input"].is_object() {
                        return String::new();
                    }
                    b["id"].as_str().unwrap_or("").to_owned()
                })
                .collect();
            if previous_tool_use_ids.iter().any(String::is_empty) {
                return bad(&format!(
                    "messages.{i}: tool_use blocks need an id and an object input"
                ));
            }
        }
    }
    None
}

/// Answers like the Messages API.
pub(crate) fn anthropic_model(req: &FakeRequest) -> FakeResponse {
    if let Some(refused) = anthropic_refusal(req) {
        return refused;
    }
    let last = req.body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or(Value::Null);
    let after_result = last["content"]
        .as_array()
        .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"));
    if after_result {
        FakeResponse::ok(anthropic_text_body(FINAL_TEXT))
    } else {
        FakeResponse::ok(anthropic_tool_use_body("toolu_01A09q90qw90lq917835lq9"))
    }
}

// ---------------------------------------------------------------- OpenAI Responses

pub(crate) fn openai_error(message: &str, kind: &str, code: Option<&str>) -> String {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}}).to_string()
}

/// The spec's function_call response (two ids: `id` is the item, `call_id` the call).
pub(crate) fn responses_call_body(call_id: &str) -> String {
    json!({
        "id": "resp_67ca09c5efe0819096d0511c92b8c890096610f474011cc0", "object": "response",
        "created_at": 1741294021, "status": "completed", "completed_at": 1741294022,
        "error": null, "incomplete_details": null, "model": "gpt-5.4",
        "output": [{"type": "function_call", "id": "fc_67ca09c6bedc8190a7abfec07b1a1332096610f474011cc0",
          "call_id": call_id, "name": "get_weather",
          "arguments": "{\"location\":\"Paris, France\"}", "status": "completed"}],
        "parallel_tool_calls": true, "tool_choice": "auto",
        "usage": {"input_tokens": 291, "output_tokens": 23, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 314}
    })
    .to_string()
}

pub(crate) fn responses_text_body(text: &str) -> String {
    json!({"id": "resp_2", "object": "response", "status": "completed", "error": null, "incomplete_details": null,
      "output": [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}]}],
      "usage": {"input_tokens": 36, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": 87, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 123}})
    .to_string()
}

/// Answers like the Responses API.
pub(crate) fn responses_model(req: &FakeRequest) -> FakeResponse {
    let bad = |m: &str| FakeResponse::status(400, openai_error(m, "invalid_request_error", None));
    if !req.path.ends_with("/responses") {
        return FakeResponse::status(
            404,
            openai_error("Not found", "invalid_request_error", None),
        );
    }
    if req.header("authorization") != Some(&format!("Bearer {FAKE_KEY}")) {
        return FakeResponse::status(
            401,
            openai_error(
                "Incorrect API key provided",
                "invalid_request_error",
                Some("invalid_api_key"),
            ),
        );
    }
    for tool in req.body["tools"].as_array().into_iter().flatten() {
        if tool.get("function").is_some() || !tool["name"].is_string() {
            return bad("Missing required parameter: 'tools[0].name'.");
        }
    }
    let Some(input) = req.body["input"].as_array() else {
        return bad("Missing required parameter: 'input'.");
    };
    let mut open_calls: Vec<String> = Vec::new();
    for item in input {
        match item["type"].as_str() {
            Some("function_call") => {
                if !item["arguments"].is_string() {
                    return bad("Invalid type for 'input[].arguments': expected a string.");
                }
                open_calls.push(item["call_id"].as_str().unwrap_or("").to_owned());
            }
            Some("function_call_output") => {
                let id = item["call_id"].as_str().unwrap_or("");
                match open_calls.iter().position(|c| c == id) {
                    Some(i) => {
                        open_calls.remove(i);
                    }
                    None => {
                        return bad(&format!(
                            "No tool call found for function call output with call_id {id}."
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    let after_result = input
        .last()
        .is_some_and(|i| i["type"] == "function_call_output");
    if after_result {
        FakeResponse::ok(responses_text_body(FINAL_TEXT))
    } else {
        FakeResponse::ok(responses_call_body("call_unLAR8MvFNptuiZK6K6HCy5k"))
    }
}

// ---------------------------------------------------------------- Gemini

pub(crate) const THOUGHT_SIGNATURE: &str = "CiEBjz1rX0ilumvPg6k0sMMUtISoQCLJv2bPJ7Vv9r+Xw0o=";

pub(crate) fn gemini_error(code: u16, status: &str, message: &str) -> String {
    json!({"error": {"code": code, "message": message, "status": status}}).to_string()
}

/// The bad-key answer: a 400, not a 401.
pub(crate) fn gemini_bad_key() -> String {
    json!({"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT",
      "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com",
        "metadata": {"service": "generativelanguage.googleapis.com"}}]}})
    .to_string()
}

/// The cookbook's call shape: no id, `finishReason: STOP`, a thought signature beside the call.
pub(crate) fn gemini_call_body() -> String {
    json!({
        "candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "get_weather", "args": paris()}, "thoughtSignature": THOUGHT_SIGNATURE}
        ]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 8, "candidatesTokenCount": 11, "thoughtsTokenCount": 829,
          "totalTokenCount": 848, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 8}]},
        "modelVersion": "gemini-2.5-flash", "responseId": "6VFkaIDwEPXVjMcP4-XW6Qo"
    })
    .to_string()
}

pub(crate) fn gemini_text_body(text: &str) -> String {
    json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
      "usageMetadata": {"promptTokenCount": 30, "candidatesTokenCount": 9, "totalTokenCount": 39},
      "modelVersion": "gemini-2.5-flash"})
    .to_string()
}

/// Answers like generateContent.
pub(crate) fn gemini_model(req: &FakeRequest) -> FakeResponse {
    let bad = |m: &str| FakeResponse::status(400, gemini_error(400, "INVALID_ARGUMENT", m));
    if !req.path.ends_with(":generateContent") || !req.path.contains("/models/") {
        return FakeResponse::status(404, gemini_error(404, "NOT_FOUND", "not found"));
    }
    if req.header("x-goog-api-key") != Some(FAKE_KEY) {
        return FakeResponse::status(400, gemini_bad_key());
    }
    for d in req.body["tools"][0]["functionDeclarations"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if d.get("parameters").is_some() && d.get("parametersJsonSchema").is_some() {
            return bad("parameters and parametersJsonSchema cannot both be set");
        }
    }
    let Some(contents) = req.body["contents"].as_array() else {
        return bad("contents is required");
    };
    let mut open_calls: Vec<(String, bool)> = Vec::new();
    for (i, c) in contents.iter().enumerate() {
        let parts = c["parts"].as_array().cloned().unwrap_or_default();
        let responses: Vec<&Value> = parts
            .iter()
            .filter_map(|p| p.get("functionResponse"))
            .collect();
        if !responses.is_empty() {
            if c["role"] != "user" {
                return bad(&format!(
                    "contents[{i}]: function responses belong in a user turn"
                ));
            }
            if responses.len() != open_calls.len() {
                return bad(
                    "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
                );
            }
            for (r, (name, _)) in responses.iter().zip(&open_calls) {
                if r["name"].as_str() != Some(name) || !r["response"].is_object() {
                    return bad(&format!(
                        "contents[{i}]: function response for `{name}` has the wrong name or a non-object response"
                    ));
                }
            }
            open_calls.clear();
        }
        let calls: Vec<(String, bool)> = parts
            .iter()
            .filter_map(|p| {
                let call = p.get("functionCall")?;
                Some((
                    call["name"].as_str().unwrap_or("").to_owned(),
                    p.get("thoughtSignature").and_then(Value::as_str) == Some(THOUGHT_SIGNATURE)
                        && call["args"].is_object(),
                ))
            })
            .collect();
        if !calls.is_empty() {
            if c["role"] != "model" {
                return bad(&format!(
                    "contents[{i}]: function calls belong in a model turn"
                ));
            }
            open_calls = calls;
        }
    }
    let last_is_result = contents.last().is_some_and(|c| {
        c["parts"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p.get("functionResponse").is_some()))
    });
    if last_is_result {
        FakeResponse::ok(gemini_text_body(FINAL_TEXT))
    } else {
        FakeResponse::ok(gemini_call_body())
    }
}

// ---------------------------------------------------------------- Ollama

/// The docs' tool-call response: arguments an object, `done_reason: "stop"`; `id` only when
/// given (servers before November 2025 send none).
pub(crate) fn ollama_call_body(id: Option<&str>) -> String {
    let mut call = json!({"function": {"index": 0, "name": "get_weather", "arguments": paris()}});
    if let Some(id) = id {
        call["id"] = json!(id);
    }
    json!({"model": "qwen3", "created_at": "2025-07-07T20:32:53.844124Z",
      "message": {"role": "assistant", "content": "", "tool_calls": [call]},
      "done_reason": "stop", "done": true, "total_duration": 3244883583u64, "load_duration": 2969184542u64,
      "prompt_eval_count": 169, "prompt_eval_duration": 141656333, "eval_count": 18, "eval_duration": 133293625})
    .to_string()
}

pub(crate) fn ollama_text_body(text: &str) -> String {
    json!({"model": "qwen3", "created_at": "2025-07-07T20:33:00Z",
      "message": {"role": "assistant", "content": text}, "done_reason": "stop", "done": true,
      "prompt_eval_count": 190, "eval_count": 9})
    .to_string()
}

/// Answers like /api/chat.
pub(crate) fn ollama_model(req: &FakeRequest) -> FakeResponse {
    let bad = |m: &str| FakeResponse::status(400, json!({"error": m}).to_string());
    if req.path != "/api/chat" {
        return FakeResponse::status(404, "404 page not found");
    }
    if req.body["stream"] != false {
        return bad("this fake only answers stream: false");
    }
    let Some(messages) = req.body["messages"].as_array() else {
        return bad("messages is required");
    };
    let mut open: Vec<String> = Vec::new();
    for m in messages {
        match m["role"].as_str() {
            Some("assistant") => {
                open.clear();
                for c in m["tool_calls"].as_array().into_iter().flatten() {
                    if !c["function"]["arguments"].is_object() {
                        return bad(
                            "json: cannot unmarshal string into Go struct field ToolCallFunction.arguments",
                        );
                    }
                    open.push(c["function"]["name"].as_str().unwrap_or("").to_owned());
                }
            }
            Some("tool") => {
                if open.is_empty() || m["tool_name"].as_str() != Some(open[0].as_str()) {
                    return bad("tool message does not name the tool it answers");
                }
                open.remove(0);
            }
            _ => {}
        }
    }
    let after_result = messages.last().is_some_and(|m| m["role"] == "tool");
    if after_result {
        FakeResponse::ok(ollama_text_body(FINAL_TEXT))
    } else {
        FakeResponse::ok(ollama_call_body(None))
    }
}

// ---------------------------------------------------------------- Azure OpenAI

/// Answers like an Azure OpenAI deployment (the OpenAI Chat body).
pub(crate) fn azure_model(req: &FakeRequest, deployment: &str) -> FakeResponse {
    if req.path != format!("/openai/deployments/{deployment}/chat/completions") {
        return FakeResponse::status(
            404,
            json!({"error": {"code": "DeploymentNotFound", "message": "The API deployment for this resource does not exist."}}).to_string(),
        );
    }
    if !req.query.split('&').any(|p| p.starts_with("api-version=")) {
        return FakeResponse::status(
            404,
            json!({"error": {"code": "404", "message": "Resource not found"}}).to_string(),
        );
    }
    if req.header("api-key") != Some(FAKE_KEY) || req.header("authorization").is_some() {
        return FakeResponse::status(
            401,
            json!({"error": {"code": "401", "message": "Access denied due to invalid subscription key or wrong API endpoint."}}).to_string(),
        );
    }
    let messages = req.body["messages"].as_array().cloned().unwrap_or_default();
    if messages.last().is_some_and(|m| m["role"] == "tool") {
        FakeResponse::ok(super::fake_openai::text_body(FINAL_TEXT))
    } else {
        FakeResponse::ok(super::fake_openai::tool_call_body(&[(
            "get_weather",
            "{\"location\": \"Paris, France\"}",
        )]))
    }
}
