//! Candidates from a diagnosis: small, explained edits of the catalog's text, each an overlay
//! a variant file can hold, each tied to the evidence that motivated it. The operators are
//! deterministic (no model): the same diagnosis of the same catalog proposes the same
//! candidates, word for word, so a replayed tune replays its race.
//!
//! - **disambiguate**: both tools of a confused pair get a sentence naming the other
//!   ("Requests for what `server_status` does belong to `server_status`, not to this tool."):
//!   the same words whatever the catalog says, so it is grammatical in any catalog; it copies
//!   none of the other's description (quoting it made 698 of 759 neighbouring pairs of the
//!   shipped catalogs near-duplicates to lint) and gives no order naming another tool (which
//!   lint's `injection-conduct` reads as shadowing);
//! - **format**: a parameter with `wrong_value` or `wrong_type` failures gets what its schema
//!   already says about it in words: the allowed values, the pattern, the format, the range,
//!   the type, an example;
//! - **required**: a parameter the model omits (`missing_required`) is marked required in its
//!   description;
//! - **defaults**: an implicated tool's optional parameters get their schema `default` in
//!   words.
//!
//! Renames are never raced: a new name breaks every client that calls the tool by name (the MCP
//! versioning rules in docs/guides/mcp-server.md), so where lint finds names that collide the
//! tune report suggests one for the author to weigh.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};
pub use toolscore_report::tune::{Candidate, Operator, Suggestion, TextEdit};

use super::diagnose::{Diagnosis, is_required, property};
use toolscore_core::catalog::{Catalog, Tool};
use toolscore_core::error::InputError;
use toolscore_core::record::ArgFailureKind;

/// Every candidate the diagnosis supports, heaviest evidence first (ties by id), at most
/// `max`; and the suggestions for the author.
pub fn propose(
    diagnosis: &Diagnosis,
    catalog: &Catalog,
    max: usize,
) -> (Vec<Candidate>, Vec<Suggestion>) {
    let mut out = Vec::new();
    for pair in &diagnosis.confusions {
        if let Some(c) = disambiguate(pair, catalog) {
            out.push(c);
        }
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
    (out, suggestions(diagnosis))
}

/// Heaviest evidence first (ties by id), at most `max`.
pub fn rank(candidates: &mut Vec<Candidate>, max: usize) {
    candidates.sort_by(|a, b| b.weight.cmp(&a.weight).then_with(|| a.id.cmp(&b.id)));
    candidates.truncate(max);
}

fn disambiguate(pair: &super::diagnose::ConfusedPair, catalog: &Catalog) -> Option<Candidate> {
    let [a, b] = &pair.tools;
    let (ta, tb) = (catalog.get(a)?, catalog.get(b)?);
    let sentence = |other: &Tool| {
        format!(
            "Requests for what `{}` does belong to `{}`, not to this tool.",
            other.name, other.name
        )
    };
    let edits: Vec<TextEdit> = [(ta, tb), (tb, ta)]
        .into_iter()
        .filter_map(|(tool, other)| {
            let add = sentence(other);
            (!tool.description.contains(&add)).then(|| TextEdit {
                tool: tool.name.clone(),
                property: None,
                before: tool.description.clone(),
                after: append(&tool.description, &add),
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
pub fn disjoint(a: &Candidate, taken: &BTreeSet<String>) -> bool {
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

    #[test]
    fn each_operator_proposes_its_edit_with_its_evidence() {
        let c = catalog();
        let (cands, _) = propose(&diagnosis(), &c, 10);
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
        assert_eq!(
            d.edits[0].after,
            "Progress of an export job. Returns percent done. Requests for what `server_status` does belong to `server_status`, not to this tool."
        );
        assert_eq!(
            d.edits[1].after,
            "Health of the billing service. Requests for what `job_status` does belong to `job_status`, not to this tool."
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
        let (cands, _) = propose(&value_only, &c, 10);
        let f = cands
            .iter()
            .find(|c| c.operator == Operator::Format)
            .unwrap();
        assert_eq!(f.edits[0].after, "Amount in minor units. At least 1.");
        assert_eq!(f.weight, 1);
        // The cap keeps the heaviest evidence.
        assert_eq!(propose(&diagnosis(), &c, 1).0.len(), 1);
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
        let (cands, suggestions) = propose(&d, &c, 10);
        let format = cands
            .iter()
            .find(|c| c.id == "format:refund.amount_minor")
            .unwrap();
        assert_eq!(format.weight, 3 + 1 + 5);
        assert_eq!(
            format.evidence.last().unwrap(),
            "`refund.amount_minor`: wrong_type in 5 scenario calls answered with a validation error (scenarios refund-flow)"
        );
        let lines: Vec<String> = suggestions.iter().map(Suggestion::line).collect();
        assert_eq!(
            lines,
            [
                "job_status (repeated-call): The model called it again with the same arguments after a success 2 times (scenarios export). Say what one call returns, so the model need not ask again.",
                "job_status (no-recovery): After 2 of 3 error results the model's next call to it sent the same arguments again or broke its schema (scenarios export). Say what it needs, and what its errors mean.",
            ]
        );
        assert!(suggestions.iter().all(|s| !s.breaking));
    }

    #[test]
    fn overlays_apply_and_change_only_text() {
        let c = catalog();
        let (cands, _) = propose(&diagnosis(), &c, 10);
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

    #[test]
    fn the_disambiguating_sentence_names_the_other_tool() {
        let c = catalog();
        let tb = c.get("job_status").unwrap();
        let verb = Tool {
            name: "search_products".into(),
            description: "Search the product catalog by name. Returns SKUs.".into(),
            input_schema: serde_json::json!({"type": "object"}),
        };
        let pair = crate::diagnose::ConfusedPair {
            tools: ["job_status".into(), "search_products".into()],
            count: 1,
            cases: Vec::new(),
        };
        let both = Catalog::new(vec![tb.clone(), verb], "t".into());
        let d = disambiguate(&pair, &both).unwrap();
        assert_eq!(
            d.edits[0].after,
            "Progress of an export job. Returns percent done. Requests for what `search_products` does belong to `search_products`, not to this tool."
        );
        assert_eq!(
            d.edits[1].after,
            "Search the product catalog by name. Returns SKUs. Requests for what `job_status` does belong to `job_status`, not to this tool."
        );
        assert_eq!(append("Refund", "X."), "Refund. X.");
    }

    /// The sentence disambiguate adds for `other`, and the tool it was added to, as a catalog.
    fn disambiguated(tool: &Tool, other: &Tool) -> (String, Catalog) {
        let pair = crate::diagnose::ConfusedPair {
            tools: [tool.name.clone(), other.name.clone()],
            count: 1,
            cases: Vec::new(),
        };
        let both = Catalog::new(vec![tool.clone(), other.clone()], "t".into());
        let c = disambiguate(&pair, &both).expect("a candidate");
        let mut tuned = both.clone();
        for e in &c.edits {
            if let Some(t) = tuned.tools.iter_mut().find(|t| t.name == e.tool) {
                t.description = e.after.clone();
            }
        }
        (c.edits[0].after.clone(), tuned)
    }

    /// Whatever the other tool's description says (a verb phrase, a noun phrase, another
    /// language), the sentence is the same fixed one with its name: it never puts the author's
    /// words after "For" or "To" (which wrote "For change the shipping or postal address on
    /// file, use …" into a catalog).
    #[test]
    fn any_description_gets_the_same_grammatical_sentence() {
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
        let tool = Tool {
            name: "a".into(),
            description: "Does one thing.".into(),
            input_schema: serde_json::json!({"type": "object"}),
        };
        for description in descriptions {
            let other = Tool {
                name: "b".into(),
                description: description.clone(),
                input_schema: serde_json::json!({"type": "object"}),
            };
            let (after, _) = disambiguated(&tool, &other);
            assert_eq!(
                after,
                "Does one thing. Requests for what `b` does belong to `b`, not to this tool.",
                "{description}"
            );
        }
    }

    /// On every catalog the project ships, the disambiguating sentences of each pair of
    /// neighbours add no lint finding but, rarely, a near-duplicate warning (a tune must not
    /// write what toolscore's own lint flags: an order naming another tool is read as
    /// shadowing, and quoting each other's first sentence made 698 of 759 pairs
    /// near-duplicates).
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
                let (_, tuned) = disambiguated(tool, other);
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
        // The same nine words added to two short descriptions that already share boilerplate
        // ("Note that the provided function is in Python 3 syntax.") can reach the 0.8
        // similarity lint warns at: 26 of 759 BFCL pairs, never a billing one.
        assert!(
            near_duplicates * 20 < checked,
            "{near_duplicates} of {checked}"
        );
    }
}
