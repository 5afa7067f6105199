//! Two fake models of the OpenAI wire format whose choice of tool follows a simple rule, so a
//! test can say which wording edits should move them and which must not:
//!
//! - [`word_matching_model`] reads the catalog as a bag of words: it calls the tool whose name
//!   and description share the most distinct words with the last user message (the first in
//!   catalog order on a tie). Every word a description gains pulls requests holding that word
//!   towards it, whatever the sentence around it says: "not", "belongs to" and "instead" are
//!   words like any other.
//! - [`description_blind_model`] never reads a description: it calls the tool a hash of the
//!   last user message picks among the tool names, sorted. No description edit can change a
//!   single one of its answers.
//!
//! Both send `{}` as the arguments: the tests that use them measure the choice of tool.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{FakeRequest, FakeResponse, last_user_message, text_body, tool_call_body};

/// The distinct lower-case words of a text: its runs of letters and digits
/// (`payment_history` is `payment` and `history`).
pub(crate) fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Each tool's name and description, in the request's order.
fn tools(req: &FakeRequest) -> Vec<(String, String)> {
    req.body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| {
                    let f = &t["function"];
                    (
                        f["name"].as_str().unwrap_or_default().to_owned(),
                        f["description"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The tool a word-matching model calls for `request` among `(name, description)` pairs.
pub(crate) fn word_match<'a>(tools: &'a [(String, String)], request: &str) -> Option<&'a str> {
    let asked = words(request);
    let mut best: Option<(&str, usize)> = None;
    for (name, description) in tools {
        let shared = words(&format!("{name} {description}"))
            .intersection(&asked)
            .count();
        if best.is_none_or(|(_, b)| shared > b) {
            best = Some((name, shared));
        }
    }
    best.map(|(name, _)| name)
}

pub(crate) fn word_matching_model(req: &FakeRequest) -> FakeResponse {
    answer(req, |tools, request| {
        word_match(tools, request).map(str::to_owned)
    })
}

pub(crate) fn description_blind_model(req: &FakeRequest) -> FakeResponse {
    answer(req, |tools, request| {
        let mut names: Vec<&str> = tools.iter().map(|(n, _)| n.as_str()).collect();
        names.sort_unstable();
        // FNV-1a: a fixed hash, the same in every process and on every platform.
        let hash = request.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        let i = usize::try_from(hash % names.len().max(1) as u64).unwrap_or(0);
        names.get(i).map(|n| (*n).to_owned())
    })
}

/// A tool call to the tool `choose` names, or a text answer when there is no tool or no user
/// message.
fn answer(
    req: &FakeRequest,
    choose: impl Fn(&[(String, String)], &str) -> Option<String>,
) -> FakeResponse {
    let tools = tools(req);
    let chosen = last_user_message(req).and_then(|request| choose(&tools, &request));
    FakeResponse::ok(match chosen {
        Some(name) => tool_call_body(&[(&name, "{}")]),
        None => text_body(&Value::Null.to_string()),
    })
}
