//! Pairing tool results with the calls they answer, for wire formats that need more than the
//! neutral `call_id` (Gemini and Ollama name the tool; Anthropic needs an id on every call).

use std::collections::VecDeque;

use toolscore_core::ToolCall;

use crate::wire::fallback_call_id;

/// One wire message being built: its role and its blocks (Anthropic content blocks, Gemini
/// parts).
pub(crate) struct RoleRun {
    pub role: &'static str,
    pub items: Vec<serde_json::Value>,
}

/// Appends `item` to the last message when it has the same role, else starts a message.
/// Anthropic wants user and assistant turns alternating (a user text after tool results joins
/// their message, after them); Gemini wants all responses to one call turn in one content.
pub(crate) fn push_grouped(runs: &mut Vec<RoleRun>, role: &'static str, item: serde_json::Value) {
    match runs.last_mut() {
        Some(last) if last.role == role => last.items.push(item),
        _ => runs.push(RoleRun {
            role,
            items: vec![item],
        }),
    }
}

/// A call of the latest assistant turn that no tool result has answered yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PendingCall {
    /// The id sent on the wire: the call's own, or [`fallback_call_id`] when it has none.
    pub wire_id: String,
    /// The id the call came with (from the model or the fixture), if any.
    pub given_id: Option<String>,
    pub name: String,
}

/// The calls of the latest assistant turn, in order, as tool results answer them.
#[derive(Debug, Default)]
pub(crate) struct PendingCalls {
    pending: VecDeque<PendingCall>,
    /// Calls seen so far in the conversation, for fallback ids unique across it.
    seen: usize,
}

impl PendingCalls {
    /// Starts a new assistant turn; returns each call's wire id, in order.
    pub(crate) fn open_turn(&mut self, calls: &[ToolCall]) -> Vec<String> {
        self.pending.clear();
        calls
            .iter()
            .map(|call| {
                let given_id = call.id.clone().filter(|id| !id.is_empty());
                let wire_id = given_id
                    .clone()
                    .unwrap_or_else(|| fallback_call_id(self.seen));
                self.seen += 1;
                self.pending.push_back(PendingCall {
                    wire_id: wire_id.clone(),
                    given_id,
                    name: call.name.clone(),
                });
                wire_id
            })
            .collect()
    }

    /// The call a tool result answers: the one with its `call_id` when there is one, else the
    /// oldest unanswered call (position order, for ids the provider never sent).
    pub(crate) fn answer(&mut self, call_id: &str) -> Option<PendingCall> {
        let by_id = (!call_id.is_empty())
            .then(|| {
                self.pending
                    .iter()
                    .position(|p| p.wire_id == call_id || p.given_id.as_deref() == Some(call_id))
            })
            .flatten();
        match by_id {
            Some(i) => self.pending.remove(i),
            None => self.pending.pop_front(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: Option<&str>, name: &str) -> ToolCall {
        ToolCall {
            id: id.map(str::to_owned),
            name: name.into(),
            arguments: json!({}),
            unparsed_arguments: None,
            thought_signature: None,
        }
    }

    #[test]
    fn results_match_by_id_then_by_position() {
        let mut p = PendingCalls::default();
        let ids = p.open_turn(&[call(None, "a"), call(Some("x"), "b"), call(None, "c")]);
        assert_eq!(ids, ["call_0", "x", "call_2"]);
        assert_eq!(p.answer("x").unwrap().name, "b");
        assert_eq!(p.answer("").unwrap().name, "a");
        assert_eq!(p.answer("unknown").unwrap().name, "c");
        assert_eq!(p.answer(""), None);
        // Fallback ids keep counting across turns so they stay unique in one conversation.
        assert_eq!(p.open_turn(&[call(None, "d")]), ["call_3"]);
    }
}
