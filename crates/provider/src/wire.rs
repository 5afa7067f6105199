//! What every wire format shares: a 2xx body read as a JSON object, a tool call's id and
//! arguments in whichever form an API sends them, and an error body read whatever its shape
//! (OpenAI's, Anthropic's, Google's, vLLM's, FastAPI's), classified and worded one way
//! (`HTTP 429 Too Many Requests (code): message`). Each adapter's module holds only what is
//! its own format's.

use std::borrow::Cow;

use serde_json::Value;

use super::{ErrorClass, ProviderError};
use toolscore_core::ToolCall;

/// Longest excerpt of a provider's error text kept in an error message (characters).
pub(crate) const EXCERPT_CHARS: usize = 300;

/// The id sent for a history tool call that has none: `call_<n>`, where `n` is the 0-based
/// index of the call among all tool calls of the conversation.
pub(crate) fn fallback_call_id(index: usize) -> String {
    format!("call_{index}")
}

/// A call's arguments as the JSON text OpenAI-style APIs carry: the model's own text when it
/// did not parse (sent back as it was), `{}` for none.
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

    #[test]
    fn excerpt_is_bounded_and_char_safe() {
        let long = "é".repeat(1000);
        let e = excerpt_text(&long);
        assert_eq!(e.chars().count(), EXCERPT_CHARS + 1);
        assert!(e.ends_with('…'));
        assert_eq!(excerpt_text("  a \n\n b  "), "a b");
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
