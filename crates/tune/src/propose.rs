//! Candidates from a diagnosis: small, explained edits of the catalog's text, each an overlay
//! a variant file can hold, each tied to the evidence that motivated it. The operators are
//! deterministic (no model): the same diagnosis of the same catalog proposes the same
//! candidates, word for word, so a replayed tune replays its race.
//!
//! - **disambiguate**: the tools of a confused pair get the evidence that tells them apart,
//!   as full sentences of quoted words (grammatical whatever the words are): the tool that
//!   lost requests gets their words (`Its requests often use these words: "paid", "pay".`);
//!   the tool that took them gets the words of its own description that are neither the other
//!   tool's nor those requests' (`Its distinguishing words are these: "invoice", "due".`).
//!   No sentence names the other tool, and the tool that took requests gains none of their
//!   words: a model that matches words reads "not", "belong to" and a name as words that pull
//!   requests towards the tool they are written on, so ``Requests for what `b` does belong to
//!   `b`, not to this tool.`` (this operator's sentence until issue 54) pulled `b`'s requests
//!   the wrong way and told the model nothing the two tools differ in;
//! - **format**: a parameter with `wrong_value` or `wrong_type` failures gets what its schema
//!   already says about it in words: the allowed values, the pattern, the format, the range,
//!   the type, an example;
//! - **required**: a parameter the model omits (`missing_required`) is marked required in its
//!   description;
//! - **defaults**: an implicated tool's optional parameters get their schema `default` in
//!   words.
//!
//! Renames are never raced: a new name breaks every client that calls the tool by name (the MCP
//! versioning rules in docs/guides/mcp-server.md), and a catalog variant that renames a tool
//! cannot run the scenarios that name it. Where a name is part of a confusion (two names
//! sharing a word, or the chosen tool's name sharing words with the requests the other lost)
//! and where lint finds names that collide, the tune report suggests one for the author to
//! weigh, with its evidence.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};
pub(crate) use toolscore_summary::tune::{Candidate, Operator, Suggestion, TextEdit};

use super::diagnose::{Diagnosis, is_required, property};
use toolscore_core::ArgFailureKind;
use toolscore_core::InputError;
use toolscore_core::catalog::{Catalog, Tool};

/// Every candidate the diagnosis supports, heaviest evidence first (ties by id), at most
/// `max`; and the suggestions for the author.
pub fn propose(
    diagnosis: &Diagnosis,
    catalog: &Catalog,
    max: usize,
    request_of: RequestOf<'_>,
) -> (Vec<Candidate>, Vec<Suggestion>) {
    let mut out = Vec::new();
    let mut renames = Vec::new();
    for pair in &diagnosis.confusions {
        if let Some(c) = disambiguate(pair, catalog, request_of) {
            out.push(c);
        }
        renames.extend(rename_suggestions(pair, catalog, request_of));
    }
    // The parameters sent with the wrong JSON type: only their format states the type.
    let wrong_type: BTreeSet<(&str, &str)> = diagnosis
        .arg_failures
        .iter()
        .filter(|f| f.kind == ArgFailureKind::WrongType)
        .map(|f| (f.tool.as_str(), f.path.as_str()))
        .collect();
    for failure in &diagnosis.arg_failures {
        let c = match failure.kind {
            ArgFailureKind::WrongValue | ArgFailureKind::WrongType => format_of(
                failure,
                catalog,
                wrong_type.contains(&(failure.tool.as_str(), failure.path.as_str())),
            ),
            ArgFailureKind::MissingRequired => required(failure, catalog),
            _ => None,
        };
        // One candidate per parameter and operator: wrong_type and wrong_value on the same
        // parameter state the same format.
        if let Some(c) = c {
            match out.iter_mut().find(|o: &&mut Candidate| o.id == c.id) {
                Some(o) => {
                    o.weight += c.weight;
                    o.evidence.extend(c.evidence);
                }
                None => out.push(c),
            }
        }
    }
    for tool in diagnosis.implicated(catalog) {
        if let Some(c) = defaults(&tool, diagnosis, catalog) {
            out.push(c);
        }
    }
    rank(&mut out, max);
    let mut suggested = suggestions(diagnosis);
    suggested.extend(renames);
    (out, suggested)
}

/// Heaviest evidence first (ties by id), at most `max`.
pub fn rank(candidates: &mut Vec<Candidate>, max: usize) {
    candidates.sort_by(|a, b| b.weight.cmp(&a.weight).then_with(|| a.id.cmp(&b.id)));
    candidates.truncate(max);
}

/// The training requests of cases, by case id (each case's last user message); `None` for a
/// case it does not know, and for every held-out case: no edit is shaped by a case that will
/// confirm it.
pub(crate) type RequestOf<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Words an evidence sentence quotes at most.
const MAX_QUOTED_WORDS: usize = 5;

/// Words that say nothing about what a tool is for: function words, and the verbs every
/// description uses ("Returns …", "Use it to …"). Never quoted as evidence.
const GENERIC_WORDS: &[&str] = &[
    "about", "after", "all", "also", "and", "any", "are", "been", "before", "but", "can", "could",
    "did", "does", "for", "from", "get", "gets", "had", "has", "have", "her", "his", "how", "into",
    "its", "just", "may", "new", "not", "now", "off", "one", "our", "out", "please", "return",
    "returns", "should", "some", "than", "that", "the", "their", "them", "then", "there", "these",
    "they", "this", "those", "too", "use", "used", "uses", "using", "was", "were", "what", "when",
    "where", "which", "who", "whom", "why", "will", "with", "would", "you", "your",
];

/// A text's words as they are written: its runs of letters and digits.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
}

/// A request's words: its runs of letters and digits, leaving out every whitespace-separated
/// word with a digit in it (`cus_8f3k2`, `12.50`, `2024`) and every capitalised word that does
/// not start a sentence (`Oslo`, `March`, `Acme`): an identifier, an amount or a name says
/// which thing the request is about, not which tool it is for, and the next request names
/// another.
fn request_words(text: &str) -> impl Iterator<Item = &str> {
    let mut sentence_start = true;
    text.split_whitespace()
        .filter(move |w| {
            let starts = std::mem::replace(&mut sentence_start, w.ends_with(['.', '!', '?']));
            !w.chars().any(|c| c.is_ascii_digit())
                && (starts || !w.chars().next().is_some_and(char::is_uppercase))
        })
        .flat_map(words)
}

/// The lower-cased words of a tool's name and description: what it already says.
fn said_by(tool: &Tool) -> BTreeSet<String> {
    words(&tool.name)
        .flat_map(camel_words)
        .chain(words(&tool.description))
        .map(str::to_lowercase)
        .collect()
}

/// `getInvoice` is `get` and `Invoice`.
fn camel_words(word: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    for pair in chars.windows(2) {
        let [(_, a), (i, b)] = pair else { continue };
        if a.is_lowercase() && b.is_uppercase() {
            out.push(&word[start..*i]);
            start = *i;
        }
    }
    out.push(&word[start..]);
    out
}

/// A word worth quoting: three or more characters, not only digits, not a generic word.
fn is_content(word: &str) -> bool {
    word.chars().count() >= 3
        && !word.chars().all(|c| c.is_ascii_digit())
        && !GENERIC_WORDS.contains(&word.to_lowercase().as_str())
}

/// `"a", "b", "c"`: each word in double quotes, so the sentence around them stays grammatical
/// whatever the words are.
fn quoted(words: &[String]) -> String {
    words
        .iter()
        .map(|w| format!("\"{w}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The words of the requests `tool` lost, the most lost trials first (ties in the order they
/// were first seen), leaving out what its name and description already say.
fn lost_words(tool: &Tool, lost: &[(&str, u64)]) -> Vec<String> {
    let said = said_by(tool);
    ranked_words(lost)
        .into_iter()
        .filter(|w| !said.contains(w))
        .take(MAX_QUOTED_WORDS)
        .collect()
}

/// The lower-cased content words of requests, each weighed by the trials of the requests that
/// say it, the heaviest first (ties in the order they were first seen).
fn ranked_words(requests: &[(&str, u64)]) -> Vec<String> {
    let mut weight: BTreeMap<String, u64> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for (request, trials) in requests {
        let distinct: BTreeSet<String> = request_words(request)
            .filter(|w| is_content(w))
            .map(str::to_lowercase)
            .collect();
        for w in request_words(request).map(str::to_lowercase) {
            if distinct.contains(&w) && !order.contains(&w) {
                order.push(w);
            }
        }
        for w in distinct {
            *weight.entry(w).or_default() += trials;
        }
    }
    let mut ranked: Vec<(usize, String)> = order.into_iter().enumerate().collect();
    ranked.sort_by_key(|(i, w)| (std::cmp::Reverse(weight.get(w).copied().unwrap_or(0)), *i));
    ranked.into_iter().map(|(_, w)| w).collect()
}

/// The words of `tool`'s description that set it apart from `from` and from the requests it
/// took from `from`, as the description writes them, in its order.
fn distinguishing_words(tool: &Tool, from: &Tool, took: &[(&str, u64)]) -> Vec<String> {
    let mut shared = said_by(from);
    shared.extend(
        took.iter()
            .flat_map(|(r, _)| words(r))
            .map(str::to_lowercase),
    );
    let mut out: Vec<String> = Vec::new();
    for w in words(&tool.description).filter(|w| is_content(w)) {
        let lower = w.to_lowercase();
        if !shared.contains(&lower) && !out.iter().any(|o| o.to_lowercase() == lower) {
            out.push(w.to_owned());
        }
    }
    out.truncate(MAX_QUOTED_WORDS);
    out
}

/// For a confused pair, each tool's description gains the evidence that tells them apart, in
/// sentences that pull only the right requests towards it (a model that matches words reads
/// "not", "belong to" and another tool's name as words like any other, so no sentence names
/// the other tool, and the tool that took requests gains none of their words):
///
/// - a tool that lost requests to the other gets the words of those requests: "Its requests
///   often use these words: …";
/// - a tool that took requests from the other gets the words of its own description that are
///   neither the other's nor the requests' it took: "Its distinguishing words are these: …".
///
/// Quoted words keep each sentence grammatical whatever they are. The held-out cases never
/// reach `request_of`, so the words come from training requests only.
fn disambiguate(
    pair: &super::diagnose::ConfusedPair,
    catalog: &Catalog,
    request_of: RequestOf<'_>,
) -> Option<Candidate> {
    let [a, b] = &pair.tools;
    let (ta, tb) = (catalog.get(a)?, catalog.get(b)?);
    let requests: Vec<(String, String, u64)> = pair
        .cases
        .iter()
        .filter_map(|c| Some((c.expected.clone(), request_of(&c.case_id)?, c.count)))
        .collect();
    let lost_by = |tool: &Tool| -> Vec<(&str, u64)> {
        requests
            .iter()
            .filter(|(expected, _, _)| *expected == tool.name)
            .map(|(_, r, n)| (r.as_str(), *n))
            .collect()
    };
    let edits: Vec<TextEdit> = [(ta, tb), (tb, ta)]
        .into_iter()
        .filter_map(|(tool, other)| {
            let mut add = Vec::new();
            let lost = lost_words(tool, &lost_by(tool));
            if !lost.is_empty() {
                add.push(format!(
                    "Its requests often use these words: {}.",
                    quoted(&lost)
                ));
            }
            let took = lost_by(other);
            if !took.is_empty() {
                let own = distinguishing_words(tool, other, &took);
                if !own.is_empty() {
                    add.push(format!(
                        "Its distinguishing words are these: {}.",
                        quoted(&own)
                    ));
                }
            }
            (!add.is_empty()).then(|| TextEdit {
                tool: tool.name.clone(),
                property: None,
                before: tool.description.clone(),
                after: append(&tool.description, &add.join(" ")),
            })
        })
        .collect();
    if edits.is_empty() {
        return None;
    }
    Some(Candidate {
        id: format!("disambiguate:{a}/{b}"),
        operator: Operator::Disambiguate,
        tools: vec![a.clone(), b.clone()],
        edits,
        weight: pair.count,
        evidence: pair
            .cases
            .iter()
            .map(|c| {
                format!(
                    "case {}: chose `{}` in {} of {} trials where `{}` was expected",
                    c.case_id, c.chosen, c.count, c.of, c.expected
                )
            })
            .collect(),
    })
}

/// Where a name is part of a confusion, a rename for the author to weigh, with its evidence:
/// the two names share a word, or the name of the tool chosen shares words with the requests
/// the other lost to it (a model reads names as it reads descriptions). Never raced: a new
/// name breaks every client that calls the tool by name, and a catalog variant that renames
/// a tool cannot run the scenarios that name it.
fn rename_suggestions(
    pair: &super::diagnose::ConfusedPair,
    catalog: &Catalog,
    request_of: RequestOf<'_>,
) -> Vec<Suggestion> {
    let name_words = |t: &Tool| -> BTreeSet<String> {
        words(&t.name)
            .flat_map(camel_words)
            .map(str::to_lowercase)
            .collect()
    };
    let mut out = Vec::new();
    for (lost, took) in [
        (&pair.tools[0], &pair.tools[1]),
        (&pair.tools[1], &pair.tools[0]),
    ] {
        let (Some(tool), Some(other)) = (catalog.get(lost), catalog.get(took)) else {
            continue;
        };
        let cases: Vec<&super::diagnose::CaseConfusion> =
            pair.cases.iter().filter(|c| c.expected == *lost).collect();
        if cases.is_empty() {
            continue;
        }
        let trials: u64 = cases.iter().map(|c| c.count).sum();
        let requests: Vec<(String, u64)> = cases
            .iter()
            .filter_map(|c| Some((request_of(&c.case_id)?, c.count)))
            .collect();
        let other_name = name_words(other);
        let shared: Vec<String> = name_words(tool)
            .intersection(&other_name)
            .filter(|w| is_content(w))
            .cloned()
            .collect();
        let pulled: Vec<String> = other_name
            .iter()
            .filter(|w| is_content(w))
            .filter(|w| {
                requests
                    .iter()
                    .any(|(r, _)| request_words(r).any(|x| x.to_lowercase() == **w))
            })
            .cloned()
            .collect();
        if shared.is_empty() && pulled.is_empty() {
            continue;
        }
        let mut why = Vec::new();
        if !shared.is_empty() {
            why.push(format!("its name shares {} with `{took}`", quoted(&shared)));
        }
        if !pulled.is_empty() {
            why.push(format!(
                "the requests it lost say {}, {} of the name `{took}`",
                quoted(&pulled),
                if pulled.len() == 1 { "a word" } else { "words" }
            ));
        }
        // A word both the lost requests and its own description say, that neither name nor
        // the other's description has: what the requests ask for in the tool's own terms.
        let own: BTreeSet<String> = words(&tool.description).map(str::to_lowercase).collect();
        let (other_said, named) = (said_by(other), name_words(tool));
        let as_requests: Vec<(&str, u64)> =
            requests.iter().map(|(r, n)| (r.as_str(), *n)).collect();
        let example = ranked_words(&as_requests)
            .into_iter()
            .find(|w| own.contains(w) && !other_said.contains(w) && !named.contains(w))
            .map(|w| {
                format!(
                    " A name with a word of its own that the requests use, such as `{}`, would tell them apart.",
                    renamed(&tool.name, &w)
                )
            })
            .unwrap_or_default();
        out.push(Suggestion {
            tool: lost.clone(),
            rule: "confused-name".to_owned(),
            text: format!(
                "The model chose `{took}` in {trials} training trial{} of cases that expected it ({}), and {}.{example} A rename is breaking: clients that call `{lost}` by name must change, and tune does not race it.",
                if trials == 1 { "" } else { "s" },
                cases
                    .iter()
                    .map(|c| c.case_id.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                why.join("; ")
            ),
            breaking: true,
        });
    }
    out
}

/// `name` with `word` in front, in the name's own style (`export_job_status`, `exportJobStatus`).
fn renamed(name: &str, word: &str) -> String {
    if name.contains('-') && !name.contains('_') {
        format!("{word}-{name}")
    } else if name.contains('_') || name.chars().all(|c| !c.is_uppercase()) {
        format!("{word}_{name}")
    } else {
        let mut chars = name.chars();
        let first: String = chars
            .next()
            .map(|c| c.to_uppercase().collect())
            .unwrap_or_default();
        format!("{word}{first}{}", chars.as_str())
    }
}

fn format_of(
    failure: &super::diagnose::ParamFailure,
    catalog: &Catalog,
    state_type: bool,
) -> Option<Candidate> {
    let tool = catalog.get(&failure.tool)?;
    let node = property(&tool.input_schema, &failure.path)?;
    let before = description_of(node);
    let statement = format_statement(node, &before, state_type)?;
    Some(param_candidate(
        Operator::Format,
        tool,
        &failure.path,
        before.clone(),
        append(&before, &statement),
        failure,
    ))
}

fn required(failure: &super::diagnose::ParamFailure, catalog: &Catalog) -> Option<Candidate> {
    let tool = catalog.get(&failure.tool)?;
    let node = property(&tool.input_schema, &failure.path)?;
    let before = description_of(node);
    if !is_required(&tool.input_schema, &failure.path) || before.to_lowercase().contains("required")
    {
        return None;
    }
    Some(param_candidate(
        Operator::Required,
        tool,
        &failure.path,
        before.clone(),
        append(&before, "Required: always give it."),
        failure,
    ))
}

fn param_candidate(
    operator: Operator,
    tool: &Tool,
    path: &str,
    before: String,
    after: String,
    failure: &super::diagnose::ParamFailure,
) -> Candidate {
    Candidate {
        id: format!("{}:{}.{path}", operator.as_str(), tool.name),
        operator,
        tools: vec![tool.name.clone()],
        edits: vec![TextEdit {
            tool: tool.name.clone(),
            property: Some(path.to_owned()),
            before,
            after,
        }],
        weight: failure.count,
        evidence: vec![if failure.scenarios.is_empty() {
            format!(
                "`{}.{path}`: {} in {} right-tool trials (cases {})",
                tool.name,
                failure.kind.as_str(),
                failure.count,
                failure.cases.join(", ")
            )
        } else {
            format!(
                "`{}.{path}`: {} in {} scenario calls answered with a validation error (scenarios {})",
                tool.name,
                failure.kind.as_str(),
                failure.count,
                failure.scenarios.join(", ")
            )
        }],
    }
}

/// The optional parameters of an implicated tool whose schema `default` its description
/// does not state.
fn defaults(tool_name: &str, diagnosis: &Diagnosis, catalog: &Catalog) -> Option<Candidate> {
    let tool = catalog.get(tool_name)?;
    let props = tool.input_schema.get("properties")?.as_object()?;
    let edits: Vec<TextEdit> = props
        .iter()
        .filter(|(name, _)| !is_required(&tool.input_schema, name))
        .filter_map(|(name, node)| {
            let default = node.get("default")?;
            let before = description_of(node);
            (!before.to_lowercase().contains("default")).then(|| TextEdit {
                tool: tool.name.clone(),
                property: Some(name.clone()),
                after: append(&before, &format!("Default: `{}`.", plain(default))),
                before,
            })
        })
        .collect();
    if edits.is_empty() {
        return None;
    }
    let confused: u64 = diagnosis
        .confusions
        .iter()
        .filter(|c| c.tools.iter().any(|t| t == tool_name))
        .map(|c| c.count)
        .sum();
    let failed: u64 = diagnosis
        .arg_failures
        .iter()
        .filter(|f| f.tool == tool_name)
        .map(|f| f.count)
        .sum();
    // Ranked after every operator whose evidence points at the text it changes: no trial
    // shows an unstated default was the trouble.
    let weight = 0;
    Some(Candidate {
        id: format!("defaults:{tool_name}"),
        operator: Operator::Defaults,
        tools: vec![tool.name.clone()],
        evidence: vec![format!(
            "`{tool_name}` is in {} confused or failing training trials, and its description leaves {} optional parameter default{} unstated",
            confused + failed,
            edits.len(),
            if edits.len() == 1 { "" } else { "s" }
        )],
        edits,
        weight,
    })
}

/// What the author should act on by hand: lint's renames (breaking) and unstated behaviour
/// when a parameter is omitted; and what the scenarios show no operator can write, since
/// only the author knows what a result holds or an error means.
fn suggestions(diagnosis: &Diagnosis) -> Vec<Suggestion> {
    let from_lint = diagnosis.lint.iter().filter_map(|n| {
        let breaking = n.rule.starts_with("name-");
        (breaking || n.rule == "optional-no-default").then(|| Suggestion {
            tool: n.tool.clone(),
            rule: n.rule.clone(),
            text: if breaking {
                format!(
                    "{} {} A rename is breaking: clients that call `{}` by name must change.",
                    sentence(&n.message),
                    n.fix,
                    n.tool
                )
            } else {
                format!("{} {}", sentence(&n.message), n.fix)
            },
            breaking,
        })
    });
    let from_scenarios = diagnosis.trajectories.iter().flat_map(|t| {
        let scenarios = t.scenarios.join(", ");
        let missed = t.recovery_chances - t.recoveries;
        let repeated = (t.repeats_after_success > 0).then(|| Suggestion {
            tool: t.tool.clone(),
            rule: "repeated-call".to_owned(),
            text: format!(
                "The model called it again with the same arguments after a success {} time{} (scenarios {scenarios}). Say what one call returns, so the model need not ask again.",
                t.repeats_after_success,
                if t.repeats_after_success == 1 { "" } else { "s" }
            ),
            breaking: false,
        });
        let unrecovered = (missed > 0).then(|| Suggestion {
            tool: t.tool.clone(),
            rule: "no-recovery".to_owned(),
            text: format!(
                "After {missed} of {} error results the model's next call to it sent the same arguments again or broke its schema (scenarios {scenarios}). Say what it needs, and what its errors mean.",
                t.recovery_chances
            ),
            breaking: false,
        });
        repeated.into_iter().chain(unrecovered)
    });
    from_lint.chain(from_scenarios).collect()
}

/// What a parameter's schema says that its description does not, in words; `None` when the
/// description already says all of it.
fn format_statement(node: &Value, description: &str, state_type: bool) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(values) = node.get("enum").and_then(Value::as_array) {
        let listed: Vec<String> = values.iter().map(|v| format!("`{}`", plain(v))).collect();
        if !values.iter().all(|v| description.contains(&plain(v))) {
            parts.push(format!("One of {}.", listed.join(", ")));
        }
    }
    if let Some(p) = node.get("pattern").and_then(Value::as_str)
        && !description.contains(p)
    {
        parts.push(format!("Must match `{p}`."));
    }
    if let Some(f) = node.get("format").and_then(Value::as_str)
        && !description.contains(f)
    {
        parts.push(match f {
            "date" => "A date, YYYY-MM-DD.".to_owned(),
            "date-time" => "A date and time, RFC 3339 (2025-03-14T09:30:00Z).".to_owned(),
            other => format!("Format: {other}."),
        });
    }
    let (min, max) = (node.get("minimum"), node.get("maximum"));
    match (min, max) {
        (Some(lo), Some(hi))
            if !description.contains(&lo.to_string()) || !description.contains(&hi.to_string()) =>
        {
            parts.push(format!("From {lo} to {hi}."));
        }
        (Some(lo), None) if !description.contains(&lo.to_string()) => {
            parts.push(format!("At least {lo}."))
        }
        (None, Some(hi)) if !description.contains(&hi.to_string()) => {
            parts.push(format!("At most {hi}."))
        }
        _ => {}
    }
    if let Some(t) = node.get("type").and_then(Value::as_str)
        && state_type
        && t != "string"
        && !description.to_lowercase().contains(t)
    {
        parts.push(match t {
            "integer" => "A JSON integer, not a string.".to_owned(),
            "number" => "A JSON number, not a string.".to_owned(),
            "boolean" => "A JSON boolean (true or false), not a string.".to_owned(),
            other => format!("A JSON {other}."),
        });
    }
    if let Some(example) = node
        .get("examples")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
        && !description.contains(&plain(example))
    {
        parts.push(format!("Example: `{}`.", plain(example)));
    }
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// `text` ending in a full stop (lint's messages are phrases; its fixes are sentences).
fn sentence(text: &str) -> String {
    let text = text.trim_end();
    if text.ends_with(['.', '!', '?']) {
        text.to_owned()
    } else {
        format!("{text}.")
    }
}

/// A JSON value as text: strings without their quotes.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn description_of(node: &Value) -> String {
    node.get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// `text` then `add`, one space between (a full stop first when `text` has none).
fn append(text: &str, add: &str) -> String {
    let text = text.trim_end();
    if text.is_empty() {
        add.to_owned()
    } else if text.ends_with(['.', '!', '?', ':']) {
        format!("{text} {add}")
    } else {
        format!("{text}. {add}")
    }
}

/// The overlay (`variants/<name>.json`) of a set of candidates on disjoint tools, with its
/// note.
pub fn overlay(candidates: &[&Candidate], note: &str) -> Value {
    let mut tools: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    for c in candidates {
        for e in &c.edits {
            let entry = tools.entry(e.tool.clone()).or_default();
            match &e.property {
                None => {
                    entry.insert("description".into(), Value::String(e.after.clone()));
                }
                Some(p) => {
                    let props = entry
                        .entry("properties")
                        .or_insert_with(|| Value::Object(Map::new()));
                    if let Value::Object(props) = props {
                        props.insert(p.clone(), Value::String(e.after.clone()));
                    }
                }
            }
        }
    }
    let mut top = Map::new();
    top.insert("note".into(), Value::String(note.to_owned()));
    top.insert(
        "tools".into(),
        Value::Object(
            tools
                .into_iter()
                .map(|(k, v)| (k, Value::Object(v)))
                .collect(),
        ),
    );
    Value::Object(top)
}

/// Whether two sets of candidates touch disjoint tools (so their overlays combine).
pub(crate) fn disjoint(a: &Candidate, taken: &BTreeSet<String>) -> bool {
    a.tools.iter().all(|t| !taken.contains(t))
}

/// Why an overlay tune made is not tried: tune lists it with this reason and goes on.
#[derive(Debug, thiserror::Error)]
pub enum OverlayRefused {
    /// It does not apply to the base catalog as an overlay file would.
    #[error(transparent)]
    NotAnOverlay(#[from] InputError),
    #[error("{name} renames a tool; tune proposes renames only as suggestions")]
    Renames { name: String },
    #[error("{name} changes the schema of `{tool}`, not only its text")]
    ChangesSchema { name: String, tool: String },
}

/// Applies an overlay to the base catalog and checks it changed only text: every schema equal
/// to the base's once descriptions are set aside, every tool kept under its name.
pub fn validate(base: &Catalog, overlay: &Value, name: &str) -> Result<Catalog, OverlayRefused> {
    // A Value always encodes; the overlay is read back as the file tune writes would be.
    let text = serde_json::to_string_pretty(overlay).unwrap_or_default();
    let (catalog, _, renames) = toolscore_suite::apply_overlay(base, &text, name)?;
    if !renames.is_empty() {
        return Err(OverlayRefused::Renames {
            name: name.to_owned(),
        });
    }
    for (b, c) in base.tools.iter().zip(&catalog.tools) {
        if b.name != c.name
            || without_descriptions(&b.input_schema) != without_descriptions(&c.input_schema)
        {
            return Err(OverlayRefused::ChangesSchema {
                name: name.to_owned(),
                tool: b.name.clone(),
            });
        }
    }
    Ok(catalog)
}

fn without_descriptions(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| k.as_str() != "description")
                .map(|(k, v)| (k.clone(), without_descriptions(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_descriptions).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::{CaseConfusion, ConfusedPair, ParamFailure};

    fn catalog() -> Catalog {
        toolscore_core::catalog::parse_catalog(
            r#"{"tools": [
              {"name": "job_status", "description": "Progress of an export job. Returns percent done.",
               "inputSchema": {"type": "object", "properties": {"job_id": {"type": "string", "description": "The job id."}}, "required": ["job_id"]}},
              {"name": "server_status", "description": "Health of the billing service.",
               "inputSchema": {"type": "object", "properties": {"region": {"type": "string", "default": "eu"}}}},
              {"name": "refund", "description": "Refund a payment",
               "inputSchema": {"type": "object", "properties": {
                 "amount_minor": {"type": "integer", "minimum": 1, "description": "Amount in minor units."},
                 "currency": {"type": "string", "enum": ["USD", "EUR"], "description": "Currency."}},
                 "required": ["amount_minor", "currency"]}}
            ]}"#,
            "tools.json",
        )
        .unwrap()
    }

    fn diagnosis() -> Diagnosis {
        Diagnosis {
            scored_trials: 20,
            selection_right: 12,
            confusions: vec![ConfusedPair {
                tools: ["job_status".into(), "server_status".into()],
                count: 6,
                cases: vec![CaseConfusion {
                    case_id: "j1".into(),
                    expected: "job_status".into(),
                    chosen: "server_status".into(),
                    count: 6,
                    of: 10,
                }],
            }],
            arg_failures: vec![
                ParamFailure {
                    tool: "refund".into(),
                    path: "amount_minor".into(),
                    kind: ArgFailureKind::WrongType,
                    count: 3,
                    cases: vec!["r1".into()],
                    scenarios: Vec::new(),
                },
                ParamFailure {
                    tool: "refund".into(),
                    path: "amount_minor".into(),
                    kind: ArgFailureKind::WrongValue,
                    count: 1,
                    cases: vec!["r2".into()],
                    scenarios: Vec::new(),
                },
                ParamFailure {
                    tool: "refund".into(),
                    path: "currency".into(),
                    kind: ArgFailureKind::MissingRequired,
                    count: 2,
                    cases: vec!["r3".into()],
                    scenarios: Vec::new(),
                },
            ],
            ..Diagnosis::default()
        }
    }

    /// The training requests of the diagnosis' cases.
    fn requests(id: &str) -> Option<String> {
        (id == "j1").then(|| "How far along is my export job? The server seems slow.".to_owned())
    }

    #[test]
    fn each_operator_proposes_its_edit_with_its_evidence() {
        let c = catalog();
        let (cands, _) = propose(&diagnosis(), &c, 10, &requests);
        let ids: Vec<&str> = cands.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "disambiguate:job_status/server_status",
                "format:refund.amount_minor",
                "required:refund.currency",
                "defaults:server_status"
            ]
        );
        let d = &cands[0];
        // The tool that lost j1 gets its request's words (not those it already says); the one
        // that took it, the words of its own that neither j1 nor `job_status` has.
        assert_eq!(
            d.edits[0].after,
            r#"Progress of an export job. Returns percent done. Its requests often use these words: "far", "along", "server", "seems", "slow"."#
        );
        assert_eq!(
            d.edits[1].after,
            r#"Health of the billing service. Its distinguishing words are these: "Health", "billing", "service"."#
        );
        assert_eq!(
            d.evidence,
            ["case j1: chose `server_status` in 6 of 10 trials where `job_status` was expected"]
        );
        // wrong_type and wrong_value on one parameter: one candidate, both counted.
        assert_eq!(cands[1].weight, 4);
        assert_eq!(
            cands[1].edits[0].after,
            "Amount in minor units. At least 1. A JSON integer, not a string."
        );
        assert_eq!(
            cands[2].edits[0].after,
            "Currency. Required: always give it."
        );
        assert_eq!(cands[3].edits[0].after, "Default: `eu`.");
        // wrong_value alone: the schema's type is not what went wrong, so it is not stated.
        let mut value_only = diagnosis();
        value_only.arg_failures.remove(0);
        let (cands, _) = propose(&value_only, &c, 10, &requests);
        let f = cands
            .iter()
            .find(|c| c.operator == Operator::Format)
            .unwrap();
        assert_eq!(f.edits[0].after, "Amount in minor units. At least 1.");
        assert_eq!(f.weight, 1);
        // The cap keeps the heaviest evidence.
        assert_eq!(propose(&diagnosis(), &c, 1, &requests).0.len(), 1);
    }

    #[test]
    fn scenario_evidence_joins_the_format_edit_and_becomes_suggestions() {
        let c = catalog();
        let mut d = diagnosis();
        d.arg_failures.push(ParamFailure {
            tool: "refund".into(),
            path: "amount_minor".into(),
            kind: ArgFailureKind::WrongType,
            count: 5,
            cases: Vec::new(),
            scenarios: vec!["refund-flow".into()],
        });
        d.trajectories = vec![crate::diagnose::ToolTrajectory {
            tool: "job_status".into(),
            calls: 9,
            repeats_after_success: 2,
            repeats_after_error: 0,
            recovery_chances: 3,
            recoveries: 1,
            scenarios: vec!["export".into()],
        }];
        let (cands, suggestions) = propose(&d, &c, 10, &requests);
        let format = cands
            .iter()
            .find(|c| c.id == "format:refund.amount_minor")
            .unwrap();
        assert_eq!(format.weight, 3 + 1 + 5);
        assert_eq!(
            format.evidence.last().unwrap(),
            "`refund.amount_minor`: wrong_type in 5 scenario calls answered with a validation error (scenarios refund-flow)"
        );
        let lines: Vec<String> = suggestions
            .iter()
            .filter(|s| s.rule != "confused-name")
            .map(Suggestion::line)
            .collect();
        assert_eq!(
            lines,
            [
                "job_status (repeated-call): The model called it again with the same arguments after a success 2 times (scenarios export). Say what one call returns, so the model need not ask again.",
                "job_status (no-recovery): After 2 of 3 error results the model's next call to it sent the same arguments again or broke its schema (scenarios export). Say what it needs, and what its errors mean.",
            ]
        );
        assert!(
            suggestions
                .iter()
                .all(|s| !s.breaking || s.rule == "confused-name")
        );
    }

    #[test]
    fn overlays_apply_and_change_only_text() {
        let c = catalog();
        let (cands, _) = propose(&diagnosis(), &c, 10, &requests);
        let all: Vec<&Candidate> = cands.iter().collect();
        let o = overlay(&all, "tuned");
        let tuned = validate(&c, &o, "tuned.json").unwrap();
        assert_eq!(
            tuned.get("refund").unwrap().input_schema["properties"]["currency"]["description"],
            "Currency. Required: always give it."
        );
        let bad = serde_json::json!({"tools": {"refund": {"input_schema": {"type": "object"}}}});
        assert!(matches!(
            validate(&c, &bad, "bad.json"),
            Err(OverlayRefused::ChangesSchema { tool, .. }) if tool == "refund"
        ));
        let rename = serde_json::json!({"tools": {"refund": {"rename": "refund_payment"}}});
        assert!(matches!(
            validate(&c, &rename, "r.json"),
            Err(OverlayRefused::Renames { .. })
        ));
    }

    /// A pair where `tool` lost `request` to `other`, and the candidate's text of each tool.
    fn disambiguated(
        tool: &Tool,
        other: &Tool,
        request: &str,
    ) -> (Option<String>, Option<String>, Catalog) {
        let pair = crate::diagnose::ConfusedPair {
            tools: [tool.name.clone(), other.name.clone()],
            count: 3,
            cases: vec![CaseConfusion {
                case_id: "lost".into(),
                expected: tool.name.clone(),
                chosen: other.name.clone(),
                count: 3,
                of: 4,
            }],
        };
        let both = Catalog::new(vec![tool.clone(), other.clone()], "t".into());
        let requests = |id: &str| (id == "lost").then(|| request.to_owned());
        let mut tuned = both.clone();
        let Some(c) = disambiguate(&pair, &both, &requests) else {
            return (None, None, tuned);
        };
        for e in &c.edits {
            if let Some(t) = tuned.tools.iter_mut().find(|t| t.name == e.tool) {
                t.description = e.after.clone();
            }
        }
        let added = |t: &Tool| {
            c.edits.iter().find(|e| e.tool == t.name).map(|e| {
                e.after[e.before.len()..]
                    .trim_start_matches(['.', ' '])
                    .to_owned()
            })
        };
        (added(tool), added(other), tuned)
    }

    /// The words a sentence quotes.
    fn quoted_words(sentence: &str) -> Vec<String> {
        sentence
            .split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    }

    /// Whatever the descriptions and the request say (verb phrases, noun phrases, another
    /// language, nothing), each added text is one of the two fixed sentences with quoted words:
    /// never the author's words after "For" or "To" (which wrote "For change the shipping or
    /// postal address on file, use …" into a catalog), never the other tool's name; the tool
    /// that lost gains only words of the request, the one that took it only words of its own
    /// description that neither the other tool nor the request has.
    #[test]
    fn any_description_gets_grammatical_sentences_that_never_name_the_other_tool() {
        let verbs = [
            "Change",
            "Email",
            "Archive",
            "Summarize",
            "Refund",
            "Ping",
            "Escalate",
            "Snooze",
            "Reconcile",
            "Text",
            "Bulk-update",
            "Re-send",
        ];
        let objects = [
            "the shipping or postal address on file",
            "a nudge about an overdue balance",
            "every open ticket older than a week",
            "the customer",
        ];
        let mut descriptions: Vec<String> = verbs
            .iter()
            .flat_map(|v| {
                objects
                    .iter()
                    .map(move |o| format!("{v} {o}. More about it."))
            })
            .collect();
        descriptions.extend(
            [
                "Progress of an export job.",
                "Health of the billing service",
                "MCP server health v1.2 here",
                "Données météo actuelles pour une ville.",
                "",
            ]
            .map(str::to_owned),
        );
        let requests = [
            "please change where my parcel goes",
            "¿dónde está mi pedido?",
            "ticket #4411 — any news?",
            "",
        ];
        let tool = Tool {
            name: "send_reminder".into(),
            description: "Does one thing.".into(),
            input_schema: serde_json::json!({"type": "object"}),
            ..Default::default()
        };
        let lower = |t: &str| words(t).map(str::to_lowercase).collect::<BTreeSet<_>>();
        let mut both_said = 0;
        for description in &descriptions {
            for request in requests {
                let other = Tool {
                    name: "update_address".into(),
                    description: description.clone(),
                    input_schema: serde_json::json!({"type": "object"}),
                    ..Default::default()
                };
                let (on_tool, on_other, _) = disambiguated(&tool, &other, request);
                if let Some(text) = &on_tool {
                    let words = quoted_words(text);
                    assert_eq!(
                        *text,
                        format!("Its requests often use these words: {}.", quoted(&words)),
                        "{description} / {request}"
                    );
                    assert!(
                        words
                            .iter()
                            .all(|w| lower(request).contains(&w.to_lowercase()))
                    );
                    assert!(!text.contains("update_address"));
                }
                if let Some(text) = &on_other {
                    let words = quoted_words(text);
                    assert_eq!(
                        *text,
                        format!("Its distinguishing words are these: {}.", quoted(&words)),
                        "{description} / {request}"
                    );
                    for w in &words {
                        let w = w.to_lowercase();
                        assert!(lower(description).contains(&w), "{w}: {description}");
                        assert!(!lower(request).contains(&w), "{w}: {request}");
                        assert!(!said_by(&tool).contains(&w), "{w}");
                    }
                    assert!(!text.contains("send_reminder"));
                }
                both_said += usize::from(on_tool.is_some() && on_other.is_some());
            }
        }
        assert!(both_said > 50, "{both_said}");
    }

    /// The words of the lost requests, the most lost trials first; a word the tool already
    /// says, a generic word, a name, a number or a two-letter word is never quoted.
    #[test]
    fn the_lost_requests_words_are_ranked_by_the_trials_lost() {
        let tool = Tool {
            name: "payment_history".into(),
            description: "Every charge made to a card.".into(),
            input_schema: serde_json::json!({"type": "object"}),
            ..Default::default()
        };
        let lost = [
            ("what did the customer pay in March 2024?", 1),
            ("show me what the customer paid, every charge", 5),
        ];
        assert_eq!(
            lost_words(&tool, &lost),
            // "March" is a name; "2024" a number; "every" and "charge" the tool's own words.
            ["customer", "show", "paid", "pay"]
        );
        // Identifiers, amounts and names are not quoted; a sentence's first word is.
        assert_eq!(
            request_words("Refund 12.50 on cus_8f3k2 to Acme. Then email Bo! Thanks")
                .collect::<Vec<_>>(),
            ["Refund", "on", "to", "Then", "email", "Thanks"]
        );
        assert_eq!(camel_words("getInvoice"), ["get", "Invoice"]);
        assert_eq!(renamed("job_status", "export"), "export_job_status");
        assert_eq!(renamed("jobStatus", "export"), "exportJobStatus");
        assert_eq!(renamed("job-status", "export"), "export-job-status");
        assert_eq!(append("Refund", "X."), "Refund. X.");
    }

    /// A name is part of the confusion when it shares a word with the other's, or the requests
    /// lost say a word of the chosen tool's name: a rename is suggested, breaking, with its
    /// evidence and an example built on the requests' words; never a candidate.
    #[test]
    fn a_name_in_the_confusion_gets_a_rename_suggestion_not_a_candidate() {
        let c = catalog();
        let (cands, suggestions) = propose(&diagnosis(), &c, 10, &requests);
        assert!(cands.iter().all(|c| {
            c.edits.iter().all(|e| {
                e.property.is_some() || e.tool == "job_status" || e.tool == "server_status"
            })
        }));
        let renames: Vec<&Suggestion> = suggestions
            .iter()
            .filter(|s| s.rule == "confused-name")
            .collect();
        assert_eq!(renames.len(), 1, "{suggestions:?}");
        assert!(renames[0].breaking);
        assert_eq!(
            renames[0].line(),
            r#"job_status (confused-name): The model chose `server_status` in 6 training trials of cases that expected it (j1), and its name shares "status" with `server_status`; the requests it lost say "server", a word of the name `server_status`. A name with a word of its own that the requests use, such as `export_job_status`, would tell them apart. A rename is breaking: clients that call `job_status` by name must change, and tune does not race it."#
        );
        // Names that share nothing with each other or with the requests: no suggestion.
        let mut d = diagnosis();
        d.confusions[0].tools = ["job_status".into(), "refund".into()];
        d.confusions[0].cases[0].chosen = "refund".into();
        let (_, suggestions) = propose(&d, &c, 10, &requests);
        assert!(
            suggestions.iter().all(|s| s.rule != "confused-name"),
            "{suggestions:?}"
        );
    }

    /// On every catalog the project ships, the disambiguating sentences of each pair of
    /// neighbours add no lint finding, not even a near-duplicate warning (a tune must not write
    /// what toolscore's own lint flags: an order naming another tool is read as shadowing, and
    /// quoting each other's first sentence made 698 of 759 pairs near-duplicates).
    #[test]
    fn on_every_shipped_catalog_the_sentence_adds_no_lint_error() {
        // The workspace's root, two folders above this crate's.
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let catalogs = [
            "datasets/billing/tools.json",
            "examples/batch/weather/tools.json",
            "examples/bfcl/bfcl_irrelevance/tools.json",
            "examples/bfcl/bfcl_simple_python/tools.json",
            "examples/bfcl/bfcl_simple_java/tools.json",
            "examples/bfcl/bfcl_simple_javascript/tools.json",
        ];
        let options = toolscore_lint::LintOptions::default();
        let findings = |c: &Catalog| -> BTreeSet<(String, Option<String>)> {
            toolscore_lint::lint(c, &options)
                .findings
                .into_iter()
                .map(|f| (f.rule.as_str().to_owned(), f.tool))
                .collect()
        };
        let (mut checked, mut near_duplicates) = (0, 0);
        for file in catalogs {
            let catalog = toolscore_core::catalog::load_catalog_file(&root.join(file)).expect(file);
            for pair in catalog.tools.windows(2) {
                let [tool, other] = pair else { continue };
                if tool.name == other.name {
                    continue;
                }
                // The worst request for a near-duplicate: one in the other tool's words, all
                // of which the tool that lost it could gain.
                let (_, _, tuned) = disambiguated(tool, other, &other.description);
                let before = Catalog::new(vec![tool.clone(), other.clone()], "t".into());
                let added: Vec<_> = findings(&tuned)
                    .difference(&findings(&before))
                    .cloned()
                    .collect();
                let (near, other_rules): (Vec<_>, Vec<_>) = added
                    .into_iter()
                    .partition(|(rule, _)| rule == "description-near-duplicate");
                assert!(
                    other_rules.is_empty(),
                    "{file}: {} and {}: {other_rules:?}",
                    tool.name,
                    other.name
                );
                near_duplicates += usize::from(!near.is_empty());
                checked += 1;
            }
        }
        assert!(checked > 700, "{checked} pairs");
        // Five quoted words at most, none of them the other's on the tool that took the
        // request: no pair becomes a near-duplicate (the fixed sentence naming the other tool
        // made 26 of 759 BFCL pairs that share boilerplate near-duplicates).
        assert_eq!(near_duplicates, 0, "of {checked}");
    }
}
