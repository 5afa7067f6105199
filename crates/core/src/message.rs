//! Provider-neutral conversation types: what a fixture holds and what a model turn produces.
//!
//! Every provider adapter converts to and from these; nothing outside `provider` knows a wire
//! format.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of a conversation, as a fixture states it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase", deny_unknown_fields)]
pub enum Message {
    /// System prompt.
    System { content: String },
    /// What the user said.
    User { content: String },
    /// An earlier assistant turn: text, tool calls, or both.
    Assistant {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of an earlier tool call.
    Tool {
        call_id: String,
        content: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

/// A tool call, either expected history in a fixture or produced by a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id, when it sent one (some providers omit it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    /// Parsed arguments. `Value::Null` when the provider sent text that is not JSON; the text
    /// is then kept in `unparsed_arguments` and the trial is scored `arguments_not_json`.
    #[serde(default)]
    pub arguments: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unparsed_arguments: Option<String>,
    /// Gemini's opaque `thoughtSignature` from the part that carried this call. Gemini 3
    /// refuses a history whose function-call parts lost it, so the adapter echoes it back
    /// unchanged; every other provider leaves it `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
}

#[cfg(any(test, feature = "test-support"))]
impl ToolCall {
    /// A call of `name` with parsed `arguments` and no id: what unit tests build.
    pub fn for_test(name: &str, arguments: Value) -> Self {
        ToolCall {
            id: None,
            name: name.into(),
            arguments,
            unparsed_arguments: None,
            thought_signature: None,
        }
    }
}

impl ToolCall {
    /// Builds a call from arguments that arrived as a JSON-encoded string (OpenAI-style wire
    /// formats). An empty string means "no arguments" and becomes `{}`, as providers send it
    /// for parameterless tools.
    pub fn from_encoded_arguments(id: Option<String>, name: String, encoded: &str) -> Self {
        if encoded.trim().is_empty() {
            return ToolCall {
                id,
                name,
                arguments: Value::Object(Default::default()),
                unparsed_arguments: None,
                thought_signature: None,
            };
        }
        match serde_json::from_str::<Value>(encoded) {
            Ok(arguments) => ToolCall {
                id,
                name,
                arguments,
                unparsed_arguments: None,
                thought_signature: None,
            },
            Err(_) => ToolCall {
                id,
                name,
                arguments: Value::Null,
                unparsed_arguments: Some(encoded.to_owned()),
                thought_signature: None,
            },
        }
    }

    /// True when the provider's argument text did not parse as JSON.
    pub fn arguments_not_json(&self) -> bool {
        self.unparsed_arguments.is_some()
    }
}

/// Token counts as the provider reported them. `None` when the provider did not say.
///
/// `input_tokens` is every input token of the request, cached or not, whatever the provider
/// counts in its own field (Anthropic reports the cache reads and writes apart from
/// `input_tokens`; the adapter adds them back), so counts compare across providers. The cache
/// fields say how many of those were read from or written to the provider's prompt cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Input tokens served from the prompt cache (part of `input_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Input tokens written to the prompt cache (part of `input_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
}

/// Why the model stopped, normalized. Informational only: whether a tool was called is decided
/// from the presence of tool calls, never from this value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    ToolCalls,
    Length,
    ContentFilter,
    Other(String),
}

/// What one model request produced.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelTurn {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    pub usage: Usage,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish: Option<FinishReason>,
}
