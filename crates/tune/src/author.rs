//! Public as a namespace: callers write `tune::author::prompt`, `author::candidate`.
//!
//! `--author`: a model rewrites the text of an implicated tool. What it is shown and what is
//! taken from its answer are plain functions here; `cli/tune` sends the request.
//!
//! The author reads the tool, the tools it is confused with, and what went wrong on
//! **training** cases only (the diagnosis never holds a held-out case), so its rewrite can
//! no more see the confirmation's cases than a deterministic operator can. Its answer is
//! untrusted text: only a JSON object's `description` and `properties` are taken, each a
//! string of bounded length, each property a parameter the schema has; the schema itself is
//! never taken from it.

use serde_json::Value;

use super::diagnose::{Diagnosis, property};
use toolscore_core::Message;
use toolscore_core::catalog::{Catalog, Tool};
use toolscore_summary::tune::{Candidate, Operator, TextEdit};

/// Longest description taken from an author, in characters: a rewrite is a few sentences.
pub(crate) const MAX_TEXT_CHARS: usize = 2_000;
/// Failing training requests quoted to the author, per tool, and characters of each.
const MAX_QUOTED_CASES: usize = 6;
const MAX_QUOTE_CHARS: usize = 300;

/// The tools worth rewriting: those the diagnosis implicates, the most evidence first, at most
/// `max`.
pub fn tools_to_rewrite(diagnosis: &Diagnosis, catalog: &Catalog, max: usize) -> Vec<String> {
    let mut weighted: Vec<(u64, usize, String)> = diagnosis
        .implicated(catalog)
        .into_iter()
        .enumerate()
        .map(|(i, tool)| (weight(diagnosis, &tool), i, tool))
        .collect();
    weighted.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    weighted.into_iter().take(max).map(|(_, _, t)| t).collect()
}

/// The trials a tool is confused or failing in: an author's candidate ranks by it beside the
/// operators'.
pub fn weight(d: &Diagnosis, tool: &str) -> u64 {
    let confused: u64 = d
        .confusions
        .iter()
        .filter(|c| c.tools.iter().any(|t| t == tool))
        .map(|c| c.count)
        .sum();
    let failed: u64 = d
        .arg_failures
        .iter()
        .filter(|f| f.tool == tool)
        .map(|f| f.count)
        .sum();
    let trajectories: u64 = d
        .trajectories
        .iter()
        .filter(|t| t.tool == tool)
        .map(super::diagnose::trajectory_weight)
        .sum();
    confused + failed + trajectories
}

/// What went wrong with `tool`, a line each, quoting the training requests by `request_of`
/// (case id → its last user message).
fn what_went_wrong(
    d: &Diagnosis,
    tool: &str,
    request_of: &dyn Fn(&str) -> Option<String>,
) -> Vec<String> {
    let mut lines = Vec::new();
    for pair in d
        .confusions
        .iter()
        .filter(|c| c.tools.iter().any(|t| t == tool))
    {
        for c in pair.cases.iter().take(MAX_QUOTED_CASES) {
            let request = request_of(&c.case_id).map_or_else(String::new, |r| {
                format!(
                    "\"{}\": ",
                    r.chars().take(MAX_QUOTE_CHARS).collect::<String>()
                )
            });
            lines.push(format!(
                "- {request}chose `{}` in {} of {} trials where `{}` was expected",
                c.chosen, c.count, c.of, c.expected
            ));
        }
    }
    for f in d.arg_failures.iter().filter(|f| f.tool == tool) {
        lines.push(if f.scenarios.is_empty() {
            format!(
                "- `{tool}.{}`: {} in {} trials that chose the right tool",
                f.path,
                f.kind.as_str(),
                f.count
            )
        } else {
            format!(
                "- `{tool}.{}`: {} in {} calls of multi-step conversations, answered with a validation error",
                f.path,
                f.kind.as_str(),
                f.count
            )
        });
    }
    for t in d.trajectories.iter().filter(|t| t.tool == tool) {
        if t.repeats_after_success > 0 {
            lines.push(format!(
                "- in multi-step conversations, called again with the same arguments after a success {} times",
                t.repeats_after_success
            ));
        }
        if t.recoveries < t.recovery_chances {
            lines.push(format!(
                "- in multi-step conversations, after {} of {} error results the next call sent the same arguments again or broke the schema",
                t.recovery_chances - t.recoveries,
                t.recovery_chances
            ));
        }
    }
    lines
}

/// The author's conversation for one tool.
pub fn prompt(
    tool: &Tool,
    diagnosis: &Diagnosis,
    catalog: &Catalog,
    request_of: &dyn Fn(&str) -> Option<String>,
) -> Vec<Message> {
    let others: Vec<String> = diagnosis
        .confusions
        .iter()
        .filter(|c| c.tools.contains(&tool.name))
        .flat_map(|c| c.tools.iter().filter(|t| **t != tool.name))
        .filter_map(|name| catalog.get(name))
        .map(|o| format!("- `{}`: {}", o.name, o.description))
        .collect();
    let mut user = format!(
        "Tool `{}`:\ndescription: {}\nparameters (JSON Schema): {}\n",
        tool.name, tool.description, tool.input_schema
    );
    if !others.is_empty() {
        user.push_str("\nThe tools it is confused with:\n");
        user.push_str(&others.join("\n"));
        user.push('\n');
    }
    user.push_str("\nWhat went wrong in trials:\n");
    user.push_str(&what_went_wrong(diagnosis, &tool.name, request_of).join("\n"));
    user.push_str(&format!(
        "\n\nRewrite the description of `{}` (and, where it helps, the descriptions of its parameters) so that a model chooses it exactly when it should and fills its arguments right. Keep what is true. Do not change names, types or the schema.\nReply with one JSON object only: {{\"description\": \"...\", \"properties\": {{\"PARAMETER\": \"...\"}}}}",
        tool.name
    ));
    vec![
        Message::System {
            content: "You improve the descriptions of tools that a language model chooses between. Reply with one JSON object only.".to_owned(),
        },
        Message::User { content: user },
    ]
}

/// The candidate an author's answer makes for `tool`, or why none: the first JSON object in
/// the text, its `description` and `properties` (dotted parameter paths) as strings of at
/// most [`MAX_TEXT_CHARS`], at least one of them changed.
pub fn candidate(text: &str, tool: &Tool, author: &str, weight: u64) -> Result<Candidate, String> {
    let start = text.find('{').ok_or("the answer holds no JSON object")?;
    let end = text.rfind('}').ok_or("the answer holds no JSON object")?;
    let value: Value = serde_json::from_str(text.get(start..=end).unwrap_or_default())
        .map_err(|e| format!("the answer's JSON does not parse: {e}"))?;
    let checked = |v: &Value, what: &str| -> Result<String, String> {
        let s = v.as_str().ok_or(format!("{what} is not a string"))?.trim();
        if s.is_empty() || s.chars().count() > MAX_TEXT_CHARS {
            return Err(format!(
                "{what} is empty or over {MAX_TEXT_CHARS} characters"
            ));
        }
        Ok(s.to_owned())
    };
    let mut edits = Vec::new();
    if let Some(d) = value.get("description") {
        let after = checked(d, "`description`")?;
        if after != tool.description {
            edits.push(TextEdit {
                tool: tool.name.clone(),
                property: None,
                before: tool.description.clone(),
                after,
            });
        }
    }
    if let Some(props) = value.get("properties").and_then(Value::as_object) {
        for (path, v) in props {
            let node = property(&tool.input_schema, path).ok_or(format!(
                "the schema of `{}` has no parameter `{path}`",
                tool.name
            ))?;
            let after = checked(v, &format!("`properties.{path}`"))?;
            let before = node
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if after != before {
                edits.push(TextEdit {
                    tool: tool.name.clone(),
                    property: Some(path.clone()),
                    before,
                    after,
                });
            }
        }
    }
    if edits.is_empty() {
        return Err("the answer changes nothing".to_owned());
    }
    Ok(Candidate {
        id: format!("author:{}", tool.name),
        operator: Operator::Author,
        tools: vec![tool.name.clone()],
        edits,
        weight,
        evidence: vec![format!(
            "rewritten by {author} from the training trials' confusions and argument failures of `{}`",
            tool.name
        )],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::{CaseConfusion, ConfusedPair};

    fn catalog() -> Catalog {
        toolscore_core::catalog::parse_catalog(
            r#"{"tools": [
              {"name": "job_status", "description": "Progress of a job.",
               "inputSchema": {"type": "object", "properties": {"job_id": {"type": "string", "description": "Id."}}}},
              {"name": "server_status", "description": "Health of the service.",
               "inputSchema": {"type": "object", "properties": {}}}
            ]}"#,
            "tools.json",
        )
        .unwrap()
    }

    fn diagnosis() -> Diagnosis {
        Diagnosis {
            scored_trials: 8,
            selection_right: 4,
            confusions: vec![ConfusedPair {
                tools: ["job_status".into(), "server_status".into()],
                count: 4,
                cases: vec![CaseConfusion {
                    case_id: "j1".into(),
                    expected: "job_status".into(),
                    chosen: "server_status".into(),
                    count: 4,
                    of: 4,
                }],
            }],
            ..Diagnosis::default()
        }
    }

    #[test]
    fn the_prompt_quotes_training_requests_and_the_confused_tool() {
        let c = catalog();
        let messages = prompt(c.get("job_status").unwrap(), &diagnosis(), &c, &|id| {
            (id == "j1").then(|| "how far along is my export?".to_owned())
        });
        let Message::User { content } = &messages[1] else {
            panic!("{messages:?}")
        };
        assert!(
            content.contains("- `server_status`: Health of the service."),
            "{content}"
        );
        assert!(
            content.contains("- \"how far along is my export?\": chose `server_status` in 4 of 4 trials where `job_status` was expected"),
            "{content}"
        );
        assert_eq!(tools_to_rewrite(&diagnosis(), &c, 1), vec!["job_status"]);
    }

    #[test]
    fn the_prompt_says_what_the_scenarios_show_and_they_weigh_in_the_choice_of_tools() {
        let c = catalog();
        let mut d = diagnosis();
        d.trajectories = vec![crate::diagnose::ToolTrajectory {
            tool: "server_status".into(),
            calls: 12,
            repeats_after_success: 5,
            repeats_after_error: 0,
            recovery_chances: 1,
            recoveries: 0,
            scenarios: vec!["health".into()],
        }];
        let messages = prompt(c.get("server_status").unwrap(), &d, &c, &|_| None);
        let Message::User { content } = &messages[1] else {
            panic!("{messages:?}")
        };
        assert!(
            content.contains("- in multi-step conversations, called again with the same arguments after a success 5 times"),
            "{content}"
        );
        assert!(
            content.contains("- in multi-step conversations, after 1 of 1 error results the next call sent the same arguments again or broke the schema"),
            "{content}"
        );
        // 4 confusions + 5 repeats + 1 missed recovery outweigh job_status's 4 confusions.
        assert_eq!(weight(&d, "server_status"), 10);
        assert_eq!(tools_to_rewrite(&d, &c, 1), vec!["server_status"]);
    }

    #[test]
    fn only_text_is_taken_from_an_answer() {
        let c = catalog();
        let tool = c.get("job_status").unwrap();
        let got = candidate(
            "Sure! ```json\n{\"description\": \"Progress of an export job; not the service's health.\", \"properties\": {\"job_id\": \"The job_xxxxxx id.\"}}\n```",
            tool,
            "p/m",
            4,
        )
        .unwrap();
        assert_eq!(got.id, "author:job_status");
        assert_eq!(got.edits.len(), 2);
        assert_eq!(got.edits[1].after, "The job_xxxxxx id.");
        for (text, why) in [
            ("no json here", "no JSON object"),
            ("{\"description\": 3}", "not a string"),
            (
                "{\"properties\": {\"colour\": \"red\"}}",
                "no parameter `colour`",
            ),
            (
                "{\"description\": \"Progress of a job.\"}",
                "changes nothing",
            ),
        ] {
            let e = candidate(text, tool, "p/m", 1).unwrap_err();
            assert!(e.contains(why), "{text}: {e}");
        }
        let long = format!(
            "{{\"description\": \"{}\"}}",
            "x".repeat(MAX_TEXT_CHARS + 1)
        );
        assert!(
            candidate(&long, tool, "p/m", 1)
                .unwrap_err()
                .contains("over")
        );
    }
}
