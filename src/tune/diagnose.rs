//! What goes wrong on the training cases, read from the base arm's trials: the tool pairs the
//! model confuses, the argument failures of each tool's parameters, and the lint findings on
//! the tools involved. Nothing here reads a held-out case: the caller feeds training trials
//! only, so no candidate is shaped by the cases that will confirm it.

use std::collections::{BTreeMap, BTreeSet};

pub use crate::report::tune::{CaseConfusion, ConfusedPair, Diagnosis, LintNote, ParamFailure};

use crate::catalog::Catalog;
use crate::error::Error;
use crate::event::{Control, Observer, RunEvent};
use crate::record::{ArgFailureKind, ArmId, TrialRecord};

impl Diagnosis {
    /// The tools any confusion or argument failure names, in catalog order.
    pub fn implicated(&self, catalog: &Catalog) -> Vec<String> {
        let named: BTreeSet<&str> = self
            .confusions
            .iter()
            .flat_map(|c| c.tools.iter().map(String::as_str))
            .chain(self.arg_failures.iter().map(|f| f.tool.as_str()))
            .collect();
        catalog
            .tools
            .iter()
            .filter(|t| named.contains(t.name.as_str()))
            .map(|t| t.name.clone())
            .collect()
    }
}

/// Counts the base arm's training trials, one at a time: memory grows with the cases and
/// parameters, never with the trials.
#[derive(Debug, Default)]
pub struct Tally {
    /// As an observer of a run: the arm and the cases it counts (every other trial is
    /// ignored).
    only: Option<(ArmId, BTreeSet<String>)>,
    scored: u64,
    right: u64,
    /// (case, expected) → chosen → trials, and the case's scored trials.
    chosen: BTreeMap<(String, String), (BTreeMap<String, u64>, u64)>,
    /// (tool, path, kind) → (trials, cases).
    args: BTreeMap<(String, String, ArgFailureKind), (u64, BTreeSet<String>)>,
    /// Case → trials counted, infrastructure errors included.
    trials: BTreeMap<String, u32>,
}

/// Distinct (case, expected) or (tool, path, kind) keys kept: a model inventing parameter
/// names cannot grow memory past it.
const MAX_KEYS: usize = 4096;

impl Tally {
    /// A tally that, observing a run, counts only `arm`'s trials of `cases`.
    pub fn for_arm(arm: ArmId, cases: Vec<String>) -> Tally {
        Tally {
            only: Some((arm, cases.into_iter().collect())),
            ..Tally::default()
        }
    }

    /// Counts one scored trial (an unscored one, an infrastructure error, counts nowhere).
    pub fn add(&mut self, record: &TrialRecord) {
        if self.trials.len() < MAX_KEYS || self.trials.contains_key(&record.case_id) {
            *self.trials.entry(record.case_id.clone()).or_default() += 1;
        }
        let Some(score) = &record.score else { return };
        self.scored += 1;
        self.right += u64::from(score.selection_ok);
        let key = (record.case_id.clone(), record.expected.clone());
        if self.chosen.len() < MAX_KEYS || self.chosen.contains_key(&key) {
            let entry = self.chosen.entry(key).or_default();
            entry.1 += 1;
            if !score.selection_ok {
                *entry
                    .0
                    .entry(crate::report::chosen_label(record))
                    .or_default() += 1;
            }
        }
        if !score.selection_ok {
            return;
        }
        for failure in score.arg_failures.iter().flatten() {
            let key = (
                record.expected.clone(),
                schema_path(&failure.path),
                failure.kind,
            );
            if self.args.len() >= MAX_KEYS && !self.args.contains_key(&key) {
                continue;
            }
            let entry = self.args.entry(key).or_default();
            entry.0 += 1;
            entry.1.insert(record.case_id.clone());
        }
    }

    /// The rounds every one of `cases` has complete: the fewest trials any of them has (a
    /// run goes trial-major, so each case's trials are its first ones).
    pub fn complete_rounds(&self, cases: &[String]) -> u32 {
        cases
            .iter()
            .map(|c| self.trials.get(c).copied().unwrap_or(0))
            .min()
            .unwrap_or(0)
    }

    /// The diagnosis: confusions between two tools of the catalog, argument failures at
    /// parameters the tool's schema has, and `lint` findings on the tools either names.
    pub fn diagnose(self, catalog: &Catalog, lint: Vec<LintNote>) -> Diagnosis {
        let index = |name: &str| catalog.tools.iter().position(|t| t.name == name);
        let mut pairs: BTreeMap<(usize, usize), ConfusedPair> = BTreeMap::new();
        for ((case_id, expected), (chosen, of)) in &self.chosen {
            let Some(a) = index(expected) else { continue };
            for (tool, &count) in chosen {
                let Some(b) = index(tool).filter(|&b| b != a) else {
                    continue;
                };
                let key = (a.min(b), a.max(b));
                let pair = pairs.entry(key).or_insert_with(|| ConfusedPair {
                    tools: [
                        catalog.tools[key.0].name.clone(),
                        catalog.tools[key.1].name.clone(),
                    ],
                    count: 0,
                    cases: Vec::new(),
                });
                pair.count += count;
                pair.cases.push(CaseConfusion {
                    case_id: case_id.clone(),
                    expected: expected.clone(),
                    chosen: tool.clone(),
                    count,
                    of: *of,
                });
            }
        }
        let mut confusions: Vec<ConfusedPair> = pairs.into_values().collect();
        confusions.sort_by_key(|c| std::cmp::Reverse(c.count));
        for c in &mut confusions {
            c.cases.sort_by_key(|c| std::cmp::Reverse(c.count));
        }
        let mut arg_failures: Vec<ParamFailure> = self
            .args
            .into_iter()
            .filter(|((tool, path, _), _)| {
                catalog
                    .get(tool)
                    .is_some_and(|t| property(&t.input_schema, path).is_some())
            })
            .map(|((tool, path, kind), (count, cases))| ParamFailure {
                tool,
                path,
                kind,
                count,
                cases: cases.into_iter().collect(),
            })
            .collect();
        arg_failures.sort_by_key(|f| std::cmp::Reverse(f.count));
        let mut d = Diagnosis {
            scored_trials: self.scored,
            selection_right: self.right,
            confusions,
            arg_failures,
            lint: Vec::new(),
        };
        let implicated = d.implicated(catalog);
        d.lint = lint
            .into_iter()
            .filter(|n| implicated.contains(&n.tool))
            .collect();
        d
    }
}

impl Observer for Tally {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<Control, Error> {
        if let RunEvent::Trial { record, .. } = event
            && self
                .only
                .as_ref()
                .is_none_or(|(arm, cases)| record.arm == *arm && cases.contains(&record.case_id))
        {
            self.add(record);
        }
        Ok(Control::Continue)
    }
}

/// An argument path as the schema names it: `lines.0.sku` → `lines.sku`.
pub fn schema_path(path: &str) -> String {
    path.split('.')
        .filter(|p| !p.is_empty() && !p.bytes().all(|b| b.is_ascii_digit()))
        .collect::<Vec<_>>()
        .join(".")
}

/// The schema of the property at a dotted path, walking `properties` of objects and `items`
/// of arrays (as a variant overlay names properties).
pub fn property<'a>(schema: &'a serde_json::Value, path: &str) -> Option<&'a serde_json::Value> {
    if path.is_empty() {
        return None;
    }
    let mut node = schema;
    for part in path.split('.') {
        if node.get("properties").is_none() && node.get("items").is_some() {
            node = &node["items"];
        }
        node = node
            .get("properties")?
            .get(part)
            .filter(|p| p.is_object())?;
    }
    Some(node)
}

/// Whether the property at `path` is required by its parent object.
pub fn is_required(schema: &serde_json::Value, path: &str) -> bool {
    let (parent, name) = match path.rsplit_once('.') {
        Some((parent, name)) => match property(schema, parent) {
            Some(p) => (
                p.get("items")
                    .filter(|_| p.get("properties").is_none())
                    .unwrap_or(p),
                name,
            ),
            None => return false,
        },
        None => (schema, path),
    };
    parent
        .get("required")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|r| r.iter().any(|v| v == name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ArgFailure, Outcome, TrialScore};

    fn catalog() -> Catalog {
        crate::catalog::parse_catalog(
            r#"{"tools": [
              {"name": "job_status", "description": "Progress of an export job.",
               "inputSchema": {"type": "object", "properties": {"job_id": {"type": "string"}}, "required": ["job_id"]}},
              {"name": "server_status", "description": "Health of the service.",
               "inputSchema": {"type": "object", "properties": {"region": {"type": "string"}}}},
              {"name": "quote", "description": "Make a quote.",
               "inputSchema": {"type": "object", "properties": {"lines": {"type": "array",
                 "items": {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]}}}}}
            ]}"#,
            "tools.json",
        )
        .unwrap()
    }

    fn trial(
        case: &str,
        expected: &str,
        chose: Option<&str>,
        failures: &[(ArgFailureKind, &str)],
    ) -> TrialRecord {
        let mut r = TrialRecord::for_test(case, Outcome::Pass, 1.0);
        r.expected = expected.to_owned();
        r.turns = vec![crate::message::ModelTurn {
            tool_calls: chose
                .map(|name| crate::message::ToolCall::for_test(name, serde_json::json!({})))
                .into_iter()
                .collect(),
            ..Default::default()
        }];
        let ok = chose == Some(expected);
        r.score = Some(TrialScore {
            selection_ok: ok,
            args_ok: Some(failures.is_empty()),
            schema_ok: None,
            passed: ok && failures.is_empty(),
            failure: None,
            detail: None,
            schema_violations: Vec::new(),
            arg_failures: Some(
                failures
                    .iter()
                    .map(|(kind, path)| ArgFailure {
                        kind: *kind,
                        path: (*path).to_owned(),
                    })
                    .collect(),
            ),
        });
        r
    }

    #[test]
    fn confusions_pair_both_directions_and_arg_failures_name_schema_paths() {
        let mut t = Tally::default();
        for _ in 0..3 {
            t.add(&trial("j1", "job_status", Some("server_status"), &[]));
        }
        t.add(&trial("s1", "server_status", Some("job_status"), &[]));
        t.add(&trial("s1", "server_status", None, &[]));
        t.add(&trial(
            "q1",
            "quote",
            Some("quote"),
            &[(ArgFailureKind::MissingRequired, "lines.0.sku")],
        ));
        t.add(&trial(
            "q2",
            "quote",
            Some("quote"),
            &[
                (ArgFailureKind::MissingRequired, "lines.1.sku"),
                (ArgFailureKind::ExtraParameter, "colour"),
            ],
        ));
        let mut errored = trial("q2", "quote", Some("quote"), &[]);
        errored.score = None;
        t.add(&errored);
        let d = t.diagnose(&catalog(), Vec::new());
        assert_eq!((d.scored_trials, d.selection_right), (7, 2));
        assert_eq!(d.confusions.len(), 1, "{:?}", d.confusions);
        let c = &d.confusions[0];
        assert_eq!(
            c.tools,
            ["job_status".to_owned(), "server_status".to_owned()]
        );
        assert_eq!(c.count, 4);
        assert_eq!(
            (c.cases[0].case_id.as_str(), c.cases[0].count, c.cases[0].of),
            ("j1", 3, 3)
        );
        // `colour` is no parameter of the schema: a hallucination has no description to fix.
        assert_eq!(d.arg_failures.len(), 1);
        let f = &d.arg_failures[0];
        assert_eq!(
            (f.tool.as_str(), f.path.as_str(), f.count),
            ("quote", "lines.sku", 2)
        );
        assert_eq!(f.cases, vec!["q1", "q2"]);
        assert_eq!(
            d.implicated(&catalog()),
            vec!["job_status", "server_status", "quote"]
        );
    }

    #[test]
    fn required_is_read_from_the_parent_object() {
        let c = catalog();
        assert!(is_required(
            &c.get("job_status").unwrap().input_schema,
            "job_id"
        ));
        assert!(!is_required(
            &c.get("server_status").unwrap().input_schema,
            "region"
        ));
        assert!(is_required(
            &c.get("quote").unwrap().input_schema,
            "lines.sku"
        ));
        assert_eq!(schema_path("lines.12.sku"), "lines.sku");
    }
}
