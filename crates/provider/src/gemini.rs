//! Google Gemini API `generateContent` (`POST /v1beta/models/{model}:generateContent`,
//! `x-goog-api-key`) (reference/providers.md §4).
//!
//! - **Schemas are sent untranslated as `parametersJsonSchema`**, which takes standard JSON
//!   Schema. The older `parameters` field takes an OpenAPI subset that refuses
//!   `additionalProperties`, `const`, `$schema`, type arrays and exclusive bounds (§9 rows
//!   3–7); translating into it would change what a correct argument is, so it is not used.
//! - Earlier calls are `functionCall` parts of a `model` content, each with the
//!   `thoughtSignature` it came with (Gemini 3 refuses a history without it); results are
//!   `functionResponse` parts (`{"output": …}`, or `{"error": …}` for a failed tool) in one
//!   `user` content, one part per call. Gemini often sends no call id, so results are paired
//!   with calls by id when there is one and by position otherwise, and carry the call's name.
//! - `finishReason` is `STOP` for tool calls too; whether a tool was called is decided from
//!   the `functionCall` parts, as everywhere.
//! - Output tokens are `candidatesTokenCount + thoughtsTokenCount` (what is billed); cached
//!   tokens are part of `promptTokenCount`.
//! - A bad key is a 400 `API_KEY_INVALID` (class `auth`); a 429 `RESOURCE_EXHAUSTED` is a
//!   rate limit, retried, unless its `QuotaFailure` names a per-day quota, which waiting
//!   minutes will not lift (`quota_exceeded`); a 503 `UNAVAILABLE` is `overloaded`. Gemini
//!   sends no `Retry-After`: the wait of a `google.rpc.RetryInfo` detail is used instead.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName};
use serde_json::{Map, Value, json};

use super::pairing::{PendingCalls, RoleRun, push_grouped};
use super::{Adapter, ErrorClass, InvalidHeader, ProviderError, ProviderSettings};
use crate::batch::{BatchApi, NoBatchApi};
use crate::wire::{
    ErrorInfo, call_id, classify_status, decode_arguments, excerpt_text, http_error, malformed,
    parse_object,
};
use toolscore_core::catalog::Catalog;
use toolscore_core::{FinishReason, Message, ModelTurn, Usage};

/// The generateContent adapter.
pub(crate) struct Gemini;

/// Its kind, for code that names it directly.
#[cfg(test)]
pub(crate) const KIND: crate::ProviderKind = crate::ProviderKind(&Gemini);

impl Adapter for Gemini {
    fn batch_api(&self) -> Result<BatchApi, NoBatchApi> {
        Ok(BatchApi::Gemini)
    }

    fn kind(&self) -> &'static str {
        "gemini"
    }

    fn request_fields(&self) -> super::RequestFields {
        // `toolConfig.functionCallingConfig.mode` is tool_choice; there is no parallel switch.
        super::RequestFields {
            tool_choice: true,
            parallel_tool_calls: false,
        }
    }

    fn endpoint(&self, base_url: &str, model: &str) -> String {
        // `models/gemini-2.5-flash` and `gemini-2.5-flash` name the same model.
        let model = model.trim().trim_start_matches("models/");
        format!(
            "{}/models/{model}:generateContent",
            base_url.trim_end_matches('/')
        )
    }

    fn default_base_url(&self) -> Option<&'static str> {
        Some("https://generativelanguage.googleapis.com/v1beta")
    }

    fn default_key_env(&self) -> Option<&'static str> {
        Some("GEMINI_API_KEY")
    }

    fn auth_headers(&self, api_key: &str, headers: &mut HeaderMap) -> Result<(), InvalidHeader> {
        super::key_header(HeaderName::from_static("x-goog-api-key"), api_key, headers)?;
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

    fn retry_after_in_body(&self, body: &[u8]) -> Option<Duration> {
        retry_delay(body)
    }
}

/// `retryDelay` of a `google.rpc.RetryInfo` detail (a protobuf Duration in JSON: `"19s"`,
/// `"0.5s"`), which Gemini sends on a 429 instead of a `Retry-After` header.
pub(crate) fn retry_delay(body: &[u8]) -> Option<Duration> {
    let value: Value = serde_json::from_slice(body).ok()?;
    value
        .pointer("/error/details")?
        .as_array()?
        .iter()
        .filter(|d| {
            d.get("@type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.ends_with("google.rpc.RetryInfo"))
        })
        .find_map(|d| {
            d.get("retryDelay")?
                .as_str()?
                .strip_suffix('s')?
                .parse::<f64>()
                .ok()
        })
        .filter(|secs| secs.is_finite() && *secs >= 0.0)
        .map(|secs| Duration::from_secs_f64(secs.min(3600.0)))
}

// Long: one pass over the wire format's fields in the order its documentation gives them.
pub(crate) fn encode_request(
    settings: &ProviderSettings,
    messages: &[Message],
    catalog: &Catalog,
) -> Vec<u8> {
    let mut system: Vec<Value> = Vec::new();
    let mut contents: Vec<RoleRun> = Vec::new();
    let mut pending = PendingCalls::default();
    for message in messages {
        match message {
            Message::System { content } => system.push(json!({"text": content})),
            Message::User { content } => {
                push_grouped(&mut contents, "user", json!({"text": content}))
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                if let Some(text) = content.as_deref().filter(|t| !t.is_empty()) {
                    push_grouped(&mut contents, "model", json!({"text": text}));
                }
                pending.open_turn(tool_calls);
                for call in tool_calls {
                    let mut function_call = Map::new();
                    function_call.insert("name".into(), json!(call.name));
                    function_call.insert(
                        "args".into(),
                        match &call.arguments {
                            v @ Value::Object(_) => v.clone(),
                            _ => json!({}),
                        },
                    );
                    // Only an id the call came with: Gemini's own, or the fixture's.
                    if let Some(id) = call.id.as_deref().filter(|id| !id.is_empty()) {
                        function_call.insert("id".into(), json!(id));
                    }
                    let mut part = Map::new();
                    part.insert("functionCall".into(), Value::Object(function_call));
                    if let Some(sig) = &call.thought_signature {
                        part.insert("thoughtSignature".into(), json!(sig));
                    }
                    push_grouped(&mut contents, "model", Value::Object(part));
                }
            }
            Message::Tool {
                call_id,
                content,
                is_error,
            } => {
                let answered = pending.answer(call_id);
                let mut response = Map::new();
                response.insert(
                    "name".into(),
                    json!(answered.as_ref().map_or("", |p| p.name.as_str())),
                );
                if let Some(id) = answered.as_ref().and_then(|p| p.given_id.as_deref()) {
                    response.insert("id".into(), json!(id));
                }
                let key = if *is_error { "error" } else { "output" };
                response.insert("response".into(), json!({ key: content }));
                push_grouped(
                    &mut contents,
                    "user",
                    json!({"functionResponse": Value::Object(response)}),
                );
            }
        }
    }
    let mut body = Map::new();
    if !system.is_empty() {
        body.insert("systemInstruction".into(), json!({"parts": system}));
    }
    body.insert(
        "contents".into(),
        Value::Array(
            contents
                .into_iter()
                .map(|c| json!({"role": c.role, "parts": c.items}))
                .collect(),
        ),
    );
    let declarations: Vec<Value> = catalog
        .tools
        .iter()
        .map(|t| {
            let mut d = Map::new();
            d.insert("name".into(), json!(t.name));
            if !t.description.is_empty() {
                d.insert("description".into(), json!(t.description));
            }
            d.insert("parametersJsonSchema".into(), t.input_schema.clone());
            Value::Object(d)
        })
        .collect();
    if !declarations.is_empty() {
        body.insert(
            "tools".into(),
            json!([{ "functionDeclarations": declarations }]),
        );
        // Only what the user configured; Gemini has no parallel-calls switch (refused when
        // the run is set up).
        if let Some(choice) = settings.tool_choice {
            let mode = match choice {
                super::ToolChoice::Auto => "AUTO",
                super::ToolChoice::Required => "ANY",
                super::ToolChoice::None => "NONE",
            };
            body.insert(
                "toolConfig".into(),
                json!({"functionCallingConfig": {"mode": mode}}),
            );
        }
    }
    let mut generation = Map::new();
    if let Some(t) = settings.temperature {
        generation.insert("temperature".into(), json!(t));
    }
    if let Some(n) = settings.max_tokens {
        generation.insert("maxOutputTokens".into(), json!(n));
    }
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    serde_json::to_vec(&Value::Object(body)).unwrap_or_default()
}

// Long: one pass over the wire format's fields in the order its documentation gives them.
pub(crate) fn decode_response(raw: &[u8]) -> Result<ModelTurn, ProviderError> {
    let value = parse_object(raw)?;
    if matches!(value.get("error"), Some(e) if !e.is_null()) {
        let info = ErrorInfo::from_json(&value);
        let status = info.numeric_code;
        let class = classify(status, &info, &value);
        return Err(ProviderError::new(
            class,
            status,
            format!(
                "provider returned an error in a successful response{}: {}",
                status_suffix(&value),
                info.message_excerpt()
            ),
        ));
    }
    let usage = decode_usage(value.get("usageMetadata"));
    let candidate = match value.get("candidates") {
        Some(Value::Array(c)) if !c.is_empty() => &c[0],
        _ => {
            // A blocked prompt: no candidates, `promptFeedback.blockReason` says why. The
            // provider refused to answer, which is the model side's answer, not a fault.
            if let Some(reason) = value
                .pointer("/promptFeedback/blockReason")
                .and_then(Value::as_str)
            {
                return Ok(ModelTurn {
                    tool_calls: Vec::new(),
                    text: None,
                    usage,
                    finish: Some(FinishReason::Other(format!("blocked:{reason}"))),
                });
            }
            return Err(malformed(format!(
                "response has no candidates: {}",
                excerpt_text(&value.to_string())
            )));
        }
    };
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    let parts = match candidate.pointer("/content/parts") {
        Some(Value::Array(parts)) => parts.as_slice(),
        // A candidate stopped by safety or length may have no content at all.
        None | Some(Value::Null) => &[],
        Some(other) => {
            return Err(malformed(format!(
                "candidates[0].content.parts is not an array: {}",
                excerpt_text(&other.to_string())
            )));
        }
    };
    for (i, part) in parts.iter().enumerate() {
        if let Some(call) = part.get("functionCall") {
            let name = call.get("name").and_then(Value::as_str).unwrap_or("");
            if name.is_empty() {
                return Err(malformed(format!("parts[{i}].functionCall has no name")));
            }
            let id = call_id(call.get("id"));
            let mut decoded = decode_arguments(id, name.to_owned(), call.get("args"));
            decoded.thought_signature = part
                .get("thoughtSignature")
                .and_then(Value::as_str)
                .map(str::to_owned);
            tool_calls.push(decoded);
        } else if part.get("thought").and_then(Value::as_bool) != Some(true)
            && let Some(t) = part.get("text").and_then(Value::as_str)
        {
            text.push_str(t);
        }
    }
    let finish = candidate
        .get("finishReason")
        .and_then(Value::as_str)
        .map(|s| match s {
            "STOP" => FinishReason::Stop,
            "MAX_TOKENS" => FinishReason::Length,
            "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" => {
                FinishReason::ContentFilter
            }
            other => FinishReason::Other(other.to_ascii_lowercase()),
        });
    Ok(ModelTurn {
        tool_calls,
        text: (!text.is_empty()).then_some(text),
        usage,
        finish,
    })
}

fn decode_usage(meta: Option<&Value>) -> Usage {
    let Some(m) = meta.filter(|m| m.is_object()) else {
        return Usage::default();
    };
    let count = |k: &str| m.get(k).and_then(Value::as_u64);
    let prompt = count("promptTokenCount");
    let tool_prompt = count("toolUsePromptTokenCount");
    let candidates = count("candidatesTokenCount");
    let thoughts = count("thoughtsTokenCount");
    let sum = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    Usage {
        input_tokens: sum(prompt, tool_prompt),
        output_tokens: sum(candidates, thoughts),
        cache_read_tokens: count("cachedContentTokenCount"),
        cache_write_tokens: None,
    }
}

/// Whether the error's details carry `reason` (`google.rpc.ErrorInfo`).
fn has_reason(body: &Value, reason: &str) -> bool {
    body.pointer("/error/details")
        .and_then(Value::as_array)
        .is_some_and(|details| {
            details
                .iter()
                .any(|d| d.get("reason").and_then(Value::as_str) == Some(reason))
        })
}

/// Whether a `google.rpc.QuotaFailure` names a per-day quota.
fn per_day_quota(body: &Value) -> bool {
    body.pointer("/error/details")
        .and_then(Value::as_array)
        .is_some_and(|details| {
            details.iter().any(|d| {
                d.get("violations")
                    .and_then(Value::as_array)
                    .is_some_and(|vs| {
                        vs.iter().any(|v| {
                            v.get("quotaId")
                                .and_then(Value::as_str)
                                .is_some_and(|q| q.contains("PerDay"))
                        })
                    })
            })
        })
}

fn rpc_status(body: &Value) -> Option<&str> {
    body.pointer("/error/status").and_then(Value::as_str)
}

fn status_suffix(body: &Value) -> String {
    rpc_status(body).map_or_else(String::new, |s| format!(" ({s})"))
}

fn classify(status: Option<u16>, info: &ErrorInfo, body: &Value) -> ErrorClass {
    let rpc = rpc_status(body);
    let message = info.message.as_deref().unwrap_or("");
    // A bad key is a 400 INVALID_ARGUMENT here, not a 401.
    if has_reason(body, "API_KEY_INVALID") || message.contains("API key not valid") {
        return ErrorClass::Auth;
    }
    match (status, rpc) {
        (_, Some("UNAUTHENTICATED" | "PERMISSION_DENIED")) => ErrorClass::Auth,
        (_, Some("RESOURCE_EXHAUSTED")) | (Some(429), _) if per_day_quota(body) => {
            ErrorClass::QuotaExceeded
        }
        (_, Some("RESOURCE_EXHAUSTED")) | (Some(429), _) => ErrorClass::RateLimited,
        (_, Some("UNAVAILABLE")) | (Some(503), _) => ErrorClass::Overloaded,
        (_, Some("DEADLINE_EXCEEDED")) => ErrorClass::Timeout,
        (Some(s), _) => classify_status(s, info),
        (None, Some("INVALID_ARGUMENT" | "NOT_FOUND" | "FAILED_PRECONDITION")) => {
            ErrorClass::ClientError
        }
        (None, Some("INTERNAL")) => ErrorClass::ServerError,
        (None, _) => ErrorClass::BadResponse,
    }
}

/// The `error` of a batch's inlined response, a `google.rpc.Status` (`code` is a gRPC code),
/// classed as the same status from generateContent would be.
pub(crate) fn batch_error(status: &Value) -> ProviderError {
    let name = status.get("status").and_then(Value::as_str).or_else(|| {
        status
            .get("code")
            .and_then(Value::as_u64)
            .and_then(grpc_name)
    });
    let mut error = status.clone();
    if let (Some(name), Some(obj)) = (name, error.as_object_mut()) {
        obj.insert("status".to_owned(), Value::String(name.to_owned()));
    }
    let body = serde_json::json!({ "error": error });
    let info = ErrorInfo::from_json(&body);
    ProviderError::new(
        classify(None, &info, &body),
        None,
        format!(
            "batch request failed{}: {}",
            status_suffix(&body),
            info.message_excerpt()
        ),
    )
}

/// The canonical name of a gRPC status code (google.rpc.Code).
fn grpc_name(code: u64) -> Option<&'static str> {
    Some(match code {
        1 => "CANCELLED",
        2 => "UNKNOWN",
        3 => "INVALID_ARGUMENT",
        4 => "DEADLINE_EXCEEDED",
        5 => "NOT_FOUND",
        7 => "PERMISSION_DENIED",
        8 => "RESOURCE_EXHAUSTED",
        9 => "FAILED_PRECONDITION",
        13 => "INTERNAL",
        14 => "UNAVAILABLE",
        16 => "UNAUTHENTICATED",
        _ => return None,
    })
}

pub(crate) fn error_from_status(status: u16, body: &[u8]) -> ProviderError {
    let info = ErrorInfo::from_body(body);
    let value = serde_json::from_slice::<Value>(body).unwrap_or(Value::Null);
    let class = classify(Some(status), &info, &value);
    http_error(class, status, &status_suffix(&value), &info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolscore_core::ToolCall;
    use toolscore_core::catalog::Tool;

    fn catalog() -> Catalog {
        Catalog::new(
            vec![Tool {
                name: "get_weather".into(),
                description: "Get the current weather".into(),
                input_schema: json!({"type": "object", "properties": {"location": {"type": "string"}, "unit": {"type": ["string", "null"]}}, "required": ["location"], "additionalProperties": false}),
                ..Default::default()
            }],
            "t".into(),
        )
    }

    #[test]
    fn history_pairs_results_by_position_and_echoes_signatures() {
        let mut settings =
            ProviderSettings::new(KIND, "g", "http://x/v1beta", "models/gemini-2.5-flash");
        settings.temperature = Some(0.0);
        settings.max_tokens = Some(1024);
        let call = |name: &str, sig: Option<&str>| ToolCall {
            id: None,
            name: name.into(),
            arguments: json!({"location": "Paris, France"}),
            unparsed_arguments: None,
            thought_signature: sig.map(str::to_owned),
        };
        let messages = vec![
            Message::System {
                content: "You are a weather bot.".into(),
            },
            Message::User {
                content: "Weather and time in Paris?".into(),
            },
            Message::Assistant {
                content: None,
                tool_calls: vec![
                    call(
                        "get_weather",
                        Some("CiEBjz1rX0ilumvPg6k0sMMUtISoQCLJv2bPJ7Vv9r+Xw0o="),
                    ),
                    call("get_time", None),
                ],
            },
            Message::Tool {
                call_id: String::new(),
                content: "15 degrees".into(),
                is_error: false,
            },
            Message::Tool {
                call_id: String::new(),
                content: "clock unavailable".into(),
                is_error: true,
            },
        ];
        let body: Value =
            serde_json::from_slice(&encode_request(&settings, &messages, &catalog())).unwrap();
        assert_eq!(
            body["systemInstruction"]["parts"][0]["text"],
            "You are a weather bot."
        );
        assert_eq!(body["generationConfig"]["temperature"], 0.0);
        assert_eq!(body["generationConfig"]["maxOutputTokens"], 1024);
        let decl = &body["tools"][0]["functionDeclarations"][0];
        assert_eq!(decl["parametersJsonSchema"]["additionalProperties"], false);
        assert!(decl.get("parameters").is_none());
        // Only configured fields are sent; `required` is Gemini's `ANY`.
        assert!(body.get("toolConfig").is_none(), "{body}");
        let mut configured = settings.clone();
        configured.tool_choice = Some(super::super::ToolChoice::Required);
        let sent: Value =
            serde_json::from_slice(&encode_request(&configured, &messages, &catalog())).unwrap();
        assert_eq!(sent["toolConfig"]["functionCallingConfig"]["mode"], "ANY");
        let c = body["contents"].as_array().unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(c[1]["role"], "model");
        assert_eq!(
            c[1]["parts"][0]["thoughtSignature"],
            "CiEBjz1rX0ilumvPg6k0sMMUtISoQCLJv2bPJ7Vv9r+Xw0o="
        );
        assert!(c[1]["parts"][0]["functionCall"].get("id").is_none());
        assert!(c[1]["parts"][1].get("thoughtSignature").is_none());
        assert_eq!(c[2]["role"], "user");
        let responses = c[2]["parts"].as_array().unwrap();
        assert_eq!(responses.len(), 2, "one response part per call part");
        assert_eq!(responses[0]["functionResponse"]["name"], "get_weather");
        assert_eq!(
            responses[0]["functionResponse"]["response"],
            json!({"output": "15 degrees"})
        );
        assert_eq!(responses[1]["functionResponse"]["name"], "get_time");
        assert_eq!(
            responses[1]["functionResponse"]["response"],
            json!({"error": "clock unavailable"})
        );
        assert_eq!(
            KIND.adapter().endpoint("http://x/v1beta/", &settings.model),
            "http://x/v1beta/models/gemini-2.5-flash:generateContent"
        );
    }

    #[test]
    fn decodes_the_cookbook_call_and_usage() {
        let body = br#"{"candidates":[{"content":{"role":"model","parts":[
            {"functionCall":{"name":"find_theaters","args":{"movie":"Barbie","location":"Mountain View, CA"}},"thoughtSignature":"c2ln"}]},
            "finishReason":"STOP","index":0}],
          "usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":11,"thoughtsTokenCount":829,"totalTokenCount":848,"cachedContentTokenCount":4},
          "modelVersion":"gemini-2.5-flash","responseId":"6VFkaIDwEPXVjMcP4-XW6Qo"}"#;
        let turn = decode_response(body).unwrap();
        assert_eq!(turn.tool_calls.len(), 1);
        assert_eq!(turn.tool_calls[0].id, None);
        assert_eq!(turn.tool_calls[0].arguments["movie"], "Barbie");
        assert_eq!(
            turn.tool_calls[0].thought_signature.as_deref(),
            Some("c2ln")
        );
        // STOP even though a function was called.
        assert_eq!(turn.finish, Some(FinishReason::Stop));
        assert_eq!(turn.usage.input_tokens, Some(8));
        assert_eq!(turn.usage.output_tokens, Some(11 + 829));
        assert_eq!(turn.usage.cache_read_tokens, Some(4));
        let thinking = br#"{"candidates":[{"content":{"role":"model","parts":[{"text":"secret plan","thought":true},{"text":"It's 15 C."}]},"finishReason":"STOP"}]}"#;
        assert_eq!(
            decode_response(thinking).unwrap().text.as_deref(),
            Some("It's 15 C.")
        );
    }

    #[test]
    fn error_shapes_are_classified() {
        let bad_key = br#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT",
          "details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}}]}}"#;
        assert_eq!(error_from_status(400, bad_key).class, ErrorClass::Auth);
        let quota = br#"{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED",
          "details":[{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]}]}}"#;
        assert_eq!(error_from_status(429, quota).class, ErrorClass::RateLimited);
        let per_day = br#"{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED",
          "details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]}}"#;
        assert_eq!(
            error_from_status(429, per_day).class,
            ErrorClass::QuotaExceeded
        );
        let schema = br#"{"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"const\"","status":"INVALID_ARGUMENT"}}"#;
        let e = error_from_status(400, schema);
        assert_eq!(e.class, ErrorClass::ClientError);
        assert!(e.message.contains("Unknown name"), "{}", e.message);
        assert_eq!(
            error_from_status(503, br#"{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}"#).class,
            ErrorClass::Overloaded
        );
        let in_200 = decode_response(bad_key).unwrap_err();
        assert_eq!(in_200.class, ErrorClass::Auth);
    }

    #[test]
    fn retry_info_gives_the_wait() {
        let body = br#"{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[
          {"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},
          {"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"19s"}]}}"#;
        assert_eq!(retry_delay(body), Some(Duration::from_secs(19)));
        assert_eq!(error_from_status(429, body).class, ErrorClass::RateLimited);
        let half = br#"{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"0.5s"}]}}"#;
        assert_eq!(retry_delay(half), Some(Duration::from_millis(500)));
        assert_eq!(
            retry_delay(br#"{"error":{"details":[{"retryDelay":"5s"}]}}"#),
            None
        );
        assert_eq!(retry_delay(b"nope"), None);
    }
}
