//! What goes wrong on the training cases, read from the base arm's trials: the tool pairs the
//! model confuses, the argument failures of each tool's parameters, and the lint findings on
//! the tools involved; with scenarios, each tool's repeated calls and missed recoveries, and
//! the arguments its validation errors named. Nothing here reads a held-out case: the caller
//! feeds training trials only, so no candidate is shaped by the cases that will confirm it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

pub(crate) use toolscore_summary::tune::{
    CaseConfusion, ConfusedPair, Diagnosis, LintNote, ParamFailure, ToolTrajectory,
};

use toolscore_core::Error;
use toolscore_core::catalog::Catalog;
use toolscore_core::{
    ArgFailureKind, ArmId, CallKind, ExecutedCall, ScenarioScore, Trajectory, TrialRecord,
};
use toolscore_core::{Control, Observer, RunEvent};
use toolscore_score::ToolValidators;

/// Counts the base arm's training trials, one at a time: memory grows with the cases, tools
/// and parameters, never with the trials.
#[derive(Debug)]
pub struct Tally {
    /// As an observer of a run: the arm and the `(dataset, case)` units it counts (every
    /// other trial is ignored).
    only: Option<(ArmId, BTreeSet<(String, String)>)>,
    /// The base catalog's: a scenario call's arguments are judged against them.
    validators: Arc<ToolValidators>,
    scored: u64,
    right: u64,
    /// (case, expected) → chosen → trials, and the case's scored trials.
    chosen: BTreeMap<(String, String), (BTreeMap<String, u64>, u64)>,
    /// (tool, path, kind) → (trials, cases).
    args: FailureCounts,
    /// (tool, path, kind) → (calls, scenarios): scenario calls answered with a validation
    /// error.
    scenario_args: FailureCounts,
    scenario_trials: u64,
    scenario_passed: u64,
    /// Tool → what the scenario trajectories show about it.
    tools: BTreeMap<String, ToolTrajectory>,
    /// (dataset, case) → trials counted, infrastructure errors included.
    trials: BTreeMap<(String, String), u32>,
}

/// (tool, path, kind) → (observations, the cases or scenarios they were seen in).
type FailureCounts = BTreeMap<(String, String, ArgFailureKind), (u64, BTreeSet<String>)>;

/// Distinct (case, expected), (tool, path, kind) or tool keys kept: a model inventing
/// parameter or tool names cannot grow memory past it.
const MAX_KEYS: usize = 4096;

impl Tally {
    /// A tally of every trial it is given, judging scenario calls against `validators`.
    pub fn new(validators: Arc<ToolValidators>) -> Tally {
        Tally {
            only: None,
            validators,
            scored: 0,
            right: 0,
            chosen: BTreeMap::new(),
            args: BTreeMap::new(),
            scenario_args: BTreeMap::new(),
            scenario_trials: 0,
            scenario_passed: 0,
            tools: BTreeMap::new(),
            trials: BTreeMap::new(),
        }
    }

    /// A tally that, observing a run, counts only `arm`'s trials of the `(dataset, case)`
    /// units `units`.
    pub fn for_arm(
        arm: ArmId,
        units: Vec<(String, String)>,
        validators: Arc<ToolValidators>,
    ) -> Tally {
        Tally {
            only: Some((arm, units.into_iter().collect())),
            ..Tally::new(validators)
        }
    }

    /// Counts one judged trial (an unjudged one, an infrastructure error, counts nowhere).
    pub fn add(&mut self, record: &TrialRecord) {
        let unit = (record.dataset.clone(), record.case_id.clone());
        if self.trials.len() < MAX_KEYS || self.trials.contains_key(&unit) {
            *self.trials.entry(unit).or_default() += 1;
        }
        if let (Some(trajectory), Some(score)) = (&record.trajectory, &record.scenario) {
            self.add_scenario(&record.case_id, trajectory, score);
            return;
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
                    .entry(toolscore_summary::chosen_label(record))
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
            count_in(&mut self.args, key, &record.case_id);
        }
    }

    /// One scenario trial: its verdict, and each call's repeats, recoveries and validation
    /// errors, per tool.
    fn add_scenario(&mut self, scenario: &str, trajectory: &Trajectory, score: &ScenarioScore) {
        self.scenario_trials += 1;
        self.scenario_passed += u64::from(score.passed);
        let signals = toolscore_score::call_signals(&trajectory.calls, &self.validators);
        for (call, signal) in trajectory.calls.iter().zip(signals) {
            if call.kind == CallKind::InvalidArguments {
                for failure in invalid_arguments(call, &self.validators) {
                    let key = (call.tool.clone(), schema_path(&failure.path), failure.kind);
                    count_in(&mut self.scenario_args, key, scenario);
                }
            }
            if self.tools.len() >= MAX_KEYS && !self.tools.contains_key(&call.tool) {
                continue;
            }
            let t = self
                .tools
                .entry(call.tool.clone())
                .or_insert_with(|| ToolTrajectory {
                    tool: call.tool.clone(),
                    calls: 0,
                    repeats_after_success: 0,
                    repeats_after_error: 0,
                    recovery_chances: 0,
                    recoveries: 0,
                    scenarios: Vec::new(),
                });
            t.calls += 1;
            match signal.repeats_after_error {
                Some(true) => t.repeats_after_error += 1,
                Some(false) => t.repeats_after_success += 1,
                None => {}
            }
            if let Some(recovered) = signal.recovered {
                t.recovery_chances += 1;
                t.recoveries += u64::from(recovered);
            }
            let signalled = signal.repeats_after_error.is_some() || signal.recovered == Some(false);
            if signalled && !t.scenarios.iter().any(|s| s == scenario) {
                t.scenarios.push(scenario.to_owned());
            }
        }
    }

    /// The share of pairs of two trials of the same case that would disagree on the tool
    /// chosen, at each case's observed rate (`2·p·(1 − p)`, unbiased: `·t/(t − 1)`), averaged
    /// over the cases with two or more scored trials; `None` without one. What a comparison
    /// of two wordings the model reads alike would see.
    pub fn pair_disagreement(&self) -> Option<f64> {
        let per_case: Vec<f64> = self
            .chosen
            .values()
            .filter(|(_, t)| *t >= 2)
            .map(|(wrong, t)| {
                let t = *t as f64;
                let p = (t - wrong.values().sum::<u64>() as f64) / t;
                (2.0 * p * (1.0 - p) * t / (t - 1.0)).min(1.0)
            })
            .collect();
        (!per_case.is_empty()).then(|| per_case.iter().sum::<f64>() / per_case.len() as f64)
    }

    /// The rounds every one of the `(dataset, case)` units has complete: the fewest trials
    /// any of them has (a run goes trial-major, so each unit's trials are its first ones).
    pub fn complete_rounds(&self, units: &[(String, String)]) -> u32 {
        units
            .iter()
            .map(|u| self.trials.get(u).copied().unwrap_or(0))
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
        let arg_failures = param_failures(self.args, self.scenario_args, catalog);
        // Tools of the catalog only (a tool the model invented has no text to edit), the
        // most repeats and missed recoveries first.
        let mut trajectories: Vec<ToolTrajectory> = self
            .tools
            .into_values()
            .filter(|t| t.is_signal() && catalog.get(&t.tool).is_some())
            .collect();
        for t in &mut trajectories {
            // Trials arrive in any order at concurrency > 1.
            t.scenarios.sort();
        }
        trajectories.sort_by_key(|t| std::cmp::Reverse(trajectory_weight(t)));
        let mut d = Diagnosis {
            scored_trials: self.scored,
            selection_right: self.right,
            confusions,
            arg_failures,
            lint: Vec::new(),
            scenario_trials: self.scenario_trials,
            scenario_passed: self.scenario_passed,
            trajectories,
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
            && self.only.as_ref().is_none_or(|(arm, units)| {
                record.arm == *arm
                    && units.contains(&(record.dataset.clone(), record.case_id.clone()))
            })
        {
            self.add(record);
        }
        Ok(Control::Continue)
    }
}

/// The argument failures at parameters the tool's schema has (a parameter the model invented
/// has no description to fix), from the cases and from the scenarios, the most frequent first.
fn param_failures(
    from_cases: FailureCounts,
    from_scenarios: FailureCounts,
    catalog: &Catalog,
) -> Vec<ParamFailure> {
    let in_schema = |(tool, path, _): &(String, String, ArgFailureKind)| {
        catalog
            .get(tool)
            .is_some_and(|t| property(&t.input_schema, path).is_some())
    };
    let from_cases = from_cases.into_iter().filter(|(k, _)| in_schema(k)).map(
        |((tool, path, kind), (count, cases))| ParamFailure {
            tool,
            path,
            kind,
            count,
            cases: cases.into_iter().collect(),
            scenarios: Vec::new(),
        },
    );
    let from_scenarios = from_scenarios
        .into_iter()
        .filter(|(k, _)| in_schema(k))
        .map(|((tool, path, kind), (count, scenarios))| ParamFailure {
            tool,
            path,
            kind,
            count,
            cases: Vec::new(),
            scenarios: scenarios.into_iter().collect(),
        });
    let mut arg_failures: Vec<ParamFailure> = from_cases.chain(from_scenarios).collect();
    arg_failures.sort_by_key(|f| std::cmp::Reverse(f.count));
    arg_failures
}

/// The repeats and missed recoveries of a tool: its weight as evidence.
pub(crate) fn trajectory_weight(t: &ToolTrajectory) -> u64 {
    t.repeats_after_success + t.repeats_after_error + (t.recovery_chances - t.recoveries)
}

/// Adds one observation of `key` in `unit`, unless the map is full of other keys.
fn count_in(map: &mut FailureCounts, key: (String, String, ArgFailureKind), unit: &str) {
    if map.len() >= MAX_KEYS && !map.contains_key(&key) {
        return;
    }
    let entry = map.entry(key).or_default();
    entry.0 += 1;
    if !entry.1.contains(unit) {
        entry.1.insert(unit.to_owned());
    }
}

/// Why a scenario call's arguments were refused, as the fixtures' taxonomy names it (the
/// schema's findings alone: a scenario states no expected arguments per call).
fn invalid_arguments(
    call: &ExecutedCall,
    validators: &ToolValidators,
) -> Vec<toolscore_core::ArgFailure> {
    let expected = toolscore_score::ExpectedCall {
        tool: call.tool.clone(),
        family: None,
        args: None,
        matchers: BTreeMap::new(),
    };
    let as_made = toolscore_core::ToolCall {
        id: None,
        name: call.tool.clone(),
        arguments: call.arguments.clone(),
        unparsed_arguments: call.unparsed_arguments.clone(),
        thought_signature: None,
    };
    toolscore_score::classify_call(&expected, &as_made, validators)
}

/// An argument path as the schema names it: `lines.0.sku` → `lines.sku`.
pub(crate) fn schema_path(path: &str) -> String {
    path.split('.')
        .filter(|p| !p.is_empty() && !p.bytes().all(|b| b.is_ascii_digit()))
        .collect::<Vec<_>>()
        .join(".")
}

/// The schema of the property at a dotted path, walking `properties` of objects and `items`
/// of arrays (as a variant overlay names properties).
pub(crate) fn property<'a>(
    schema: &'a serde_json::Value,
    path: &str,
) -> Option<&'a serde_json::Value> {
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
pub(crate) fn is_required(schema: &serde_json::Value, path: &str) -> bool {
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
    use toolscore_core::{ArgFailure, Outcome, TrialScore};

    fn catalog() -> Catalog {
        toolscore_core::catalog::parse_catalog(
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

    fn validators() -> Arc<ToolValidators> {
        Arc::new(ToolValidators::compile(&catalog()).unwrap())
    }

    fn trial(
        case: &str,
        expected: &str,
        chose: Option<&str>,
        failures: &[(ArgFailureKind, &str)],
    ) -> TrialRecord {
        let mut r = TrialRecord::for_test(case, Outcome::Pass, 1.0);
        r.expected = expected.to_owned();
        r.turns = vec![toolscore_core::ModelTurn {
            tool_calls: chose
                .map(|name| toolscore_core::ToolCall::for_test(name, serde_json::json!({})))
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
        let mut t = Tally::new(validators());
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

    fn call(tool: &str, args: serde_json::Value, is_error: bool) -> ExecutedCall {
        ExecutedCall {
            step: 0,
            tool: tool.to_owned(),
            arguments: args,
            unparsed_arguments: None,
            kind: if is_error {
                CallKind::InvalidArguments
            } else {
                CallKind::Scripted
            },
            rule: None,
            content: String::new(),
            structured: None,
            is_error,
            state: None,
            injected: false,
        }
    }

    fn scenario_trial(name: &str, calls: Vec<ExecutedCall>) -> TrialRecord {
        let mut r = TrialRecord::for_test(name, Outcome::Fail, 1.0);
        r.dataset = toolscore_core::SCENARIO_DATASET.to_owned();
        r.trajectory = Some(Trajectory {
            calls,
            stop: toolscore_core::LoopStop::FinalAnswer,
            final_state: None,
            step_latency_ms: Vec::new(),
        });
        r.scenario = Some(ScenarioScore::default());
        r
    }

    #[test]
    fn scenario_trials_give_each_tool_its_repeats_missed_recoveries_and_refused_arguments() {
        use serde_json::json;
        let mut t = Tally::new(validators());
        // A repeat after a success; then a refused call (job_id a number) that the next call
        // corrects: a recovery.
        t.add(&scenario_trial(
            "chain",
            vec![
                call("server_status", json!({}), false),
                call("server_status", json!({}), false),
                call("job_status", json!({"job_id": 7}), true),
                call("job_status", json!({"job_id": "job_7"}), false),
            ],
        ));
        // The refused call sent again unchanged: a repeat after an error, no recovery (the
        // second refusal, with no call after it, offers no chance). A tool
        // the catalog lacks has no text to edit and is left out.
        t.add(&scenario_trial(
            "stuck",
            vec![
                call("job_status", json!({"job_id": 7}), true),
                call("job_status", json!({"job_id": 7}), true),
                call("invented", json!({}), false),
                call("invented", json!({}), false),
            ],
        ));
        let mut unjudged = scenario_trial("stuck", Vec::new());
        unjudged.scenario = None;
        t.add(&unjudged);
        let d = t.diagnose(&catalog(), Vec::new());
        assert_eq!(
            (d.scenario_trials, d.scenario_passed, d.scored_trials),
            (2, 0, 0)
        );
        let line = |t: &ToolTrajectory| {
            format!(
                "{} calls {} after-success {} after-error {} recovered {}/{} in {:?}",
                t.tool,
                t.calls,
                t.repeats_after_success,
                t.repeats_after_error,
                t.recoveries,
                t.recovery_chances,
                t.scenarios
            )
        };
        assert_eq!(
            d.trajectories.iter().map(line).collect::<Vec<_>>(),
            [
                "job_status calls 4 after-success 0 after-error 1 recovered 1/2 in [\"stuck\"]",
                "server_status calls 2 after-success 1 after-error 0 recovered 0/0 in [\"chain\"]",
            ]
        );
        // Three refused calls, all a wrong type at job_id, in both scenarios.
        assert_eq!(d.arg_failures.len(), 1, "{:?}", d.arg_failures);
        let f = &d.arg_failures[0];
        assert_eq!(
            (f.tool.as_str(), f.path.as_str(), f.kind, f.count),
            ("job_status", "job_id", ArgFailureKind::WrongType, 3)
        );
        assert_eq!(
            (f.cases.len(), f.scenarios.clone()),
            (0, vec!["chain".to_owned(), "stuck".to_owned()])
        );
        assert_eq!(
            d.implicated(&catalog()),
            vec!["job_status", "server_status"]
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
