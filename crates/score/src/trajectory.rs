//! Judging a multi-step scenario trial on its whole trajectory: the calls it made (sequence,
//! forbidden tools, call budget), the final state, the final answer, whether results were
//! used, and the counts behind retry and recovery rates. Pure: a [`Trajectory`] and the final
//! answer in, a [`ScenarioScore`] out.

use std::collections::BTreeMap;

use serde_json::Value;

use super::expect::ToolPattern;
use super::expect::{ArgMatcher, ExpectedCall};
use super::{ToolValidators, check_matcher, match_args};
use toolscore_core::{CallKind, ExecutedCall, LoopStop, ScenarioScore, Trajectory};
use toolscore_core::{json_equal, value_at_path};

/// How the expected sequence is compared with the calls made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceMode {
    /// Exactly these calls, in this order, nothing else.
    Exact,
    /// These calls in this order, other calls allowed between them (a subsequence).
    InOrder,
    /// Each of these calls somewhere, in any order, other calls allowed.
    AnyOrder,
}

impl SequenceMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SequenceMode::Exact => "exact",
            SequenceMode::InOrder => "in_order",
            SequenceMode::AnyOrder => "any_order",
        }
    }
}

/// One expected call of a sequence.
#[derive(Debug, Clone)]
pub struct SequenceItem {
    pub tool: ToolPattern,
    /// Arguments and per-field matchers, as in fixtures (`args: None` = any arguments).
    pub call: ExpectedCall,
    /// Chain progression: argument path → `TOOL.PATH` of an earlier result whose value this
    /// argument must carry (`customer_id: find_customer.customer_id`).
    pub uses: BTreeMap<String, ResultRef>,
}

/// A value inside an earlier tool result: the latest successful result of `tool`, at `path`
/// (into its structured content, or its text parsed as JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultRef {
    pub tool: String,
    pub path: String,
}

impl ResultRef {
    /// Parses `TOOL.PATH` (`find_customer.customer_id`, `search.results.0.id`).
    pub fn parse(text: &str) -> Result<ResultRef, String> {
        match text.split_once('.') {
            Some((tool, path)) if !tool.is_empty() && !path.is_empty() => Ok(ResultRef {
                tool: tool.to_owned(),
                path: path.to_owned(),
            }),
            _ => Err(format!(
                "`{text}`: expected TOOL.PATH into a tool's result (e.g. find_customer.customer_id)"
            )),
        }
    }

    fn label(&self) -> String {
        format!("{}.{}", self.tool, self.path)
    }
}

/// A final-state assertion at a dotted path.
#[derive(Debug, Clone)]
pub enum StateCheck {
    Equals(Value),
    Matches(ArgMatcher),
    /// An array, object or string of this length.
    Length(usize),
    Absent,
}

/// Everything a scenario states about a trial; a trial passes when all of it holds.
#[derive(Debug, Clone, Default)]
pub struct ScenarioExpect {
    pub sequence: Option<(SequenceMode, Vec<SequenceItem>)>,
    pub forbidden: Vec<ToolPattern>,
    pub max_calls: Option<u32>,
    pub state: Vec<(String, StateCheck)>,
    /// Each must occur in the final answer, ignoring case.
    pub answer_contains: Vec<String>,
    pub answer_regex: Option<regex::Regex>,
    /// Values from earlier results that the final answer must cite.
    pub cites: Vec<ResultRef>,
    /// Unscripted calls do not fail the trial (they are still counted).
    pub allow_unscripted: bool,
}

impl ScenarioExpect {
    /// A short label of what is expected, for grouping in reports: the sequence's tools joined
    /// by `→`, `(no call)` when no call is allowed, or `(outcome)` when only the outcome is
    /// stated.
    pub fn label(&self) -> String {
        match &self.sequence {
            Some((mode, items)) if !items.is_empty() => items
                .iter()
                .map(|i| i.tool.label())
                .collect::<Vec<_>>()
                .join(if *mode == SequenceMode::AnyOrder {
                    " + "
                } else {
                    " → "
                }),
            Some(_) => "(no call)".to_owned(),
            None if self.max_calls == Some(0) => "(no call)".to_owned(),
            None => "(outcome)".to_owned(),
        }
    }
}

/// Judges one finished trajectory. `answer` is the final text (when the loop ended on one).
pub fn score_trajectory(
    expect: &ScenarioExpect,
    trajectory: &Trajectory,
    answer: Option<&str>,
    validators: &ToolValidators,
) -> ScenarioScore {
    let calls = &trajectory.calls;
    let mut failures = Vec::new();

    if trajectory.stop == LoopStop::StepLimit {
        failures.push(format!(
            "step limit: still calling tools after {} steps",
            trajectory.step_latency_ms.len()
        ));
    }
    if trajectory.stop == LoopStop::StateLimit {
        let why = calls.last().map_or("", |c| c.content.as_str());
        failures.push(format!(
            "state limit: the trial stopped at step {}: {why}",
            calls.last().map_or(0, |c| c.step)
        ));
    }
    if let Some((mode, items)) = &expect.sequence
        && let Err(why) = check_sequence(*mode, items, calls)
    {
        failures.push(format!("sequence ({}): {why}", mode.as_str()));
    }
    for pattern in &expect.forbidden {
        if let Some(c) = calls.iter().find(|c| pattern.matches(&c.tool)) {
            failures.push(format!(
                "forbidden: called {} (step {})",
                c.tool,
                c.step + 1
            ));
        }
    }
    if let Some(max) = expect.max_calls
        && calls.len() as u64 > u64::from(max)
    {
        failures.push(format!(
            "max_calls: {} calls, at most {max} allowed",
            calls.len()
        ));
    }
    if !expect.state.is_empty() {
        let state = trajectory.final_state.as_ref().unwrap_or(&Value::Null);
        for (path, check) in &expect.state {
            if let Err(why) = check_state(state, path, check) {
                failures.push(format!("state.{path}: {why}"));
            }
        }
    }
    check_answer(expect, calls, answer, &mut failures);
    let counts = call_counts(calls, validators);
    if counts.unscripted_calls > 0 && !expect.allow_unscripted {
        failures.push(format!(
            "unscripted: {} call{} no rule answered",
            counts.unscripted_calls,
            if counts.unscripted_calls == 1 {
                ""
            } else {
                "s"
            }
        ));
    }
    ScenarioScore {
        passed: failures.is_empty(),
        failures,
        calls: calls.len() as u32,
        expected_calls: expect
            .sequence
            .as_ref()
            .map(|(_, items)| items.len() as u32),
        ..counts
    }
}

/// The final answer against `answer_contains`, `answer_regex` and `cites`, when any is set.
fn check_answer(
    expect: &ScenarioExpect,
    calls: &[ExecutedCall],
    answer: Option<&str>,
    failures: &mut Vec<String>,
) {
    let wants_answer = !expect.answer_contains.is_empty()
        || expect.answer_regex.is_some()
        || !expect.cites.is_empty();
    if !wants_answer {
        return;
    }
    match answer {
        None => failures.push("answer: the loop ended without a final answer".to_owned()),
        Some(text) => {
            let lower = text.to_lowercase();
            for needle in &expect.answer_contains {
                if !lower.contains(&needle.to_lowercase()) {
                    failures.push(format!("answer: does not contain {needle:?}"));
                }
            }
            if let Some(re) = &expect.answer_regex
                && !re.is_match(text)
            {
                failures.push(format!("answer: does not match /{}/", re.as_str()));
            }
            for cite in &expect.cites {
                match latest_result_value(calls, cite, calls.len()) {
                    None => failures.push(format!(
                        "answer: cites {} but no successful {} result has it",
                        cite.label(),
                        cite.tool
                    )),
                    Some(v) => {
                        let shown = plain_text(&v);
                        if shown.is_empty() || !lower.contains(&shown.to_lowercase()) {
                            failures
                                .push(format!("answer: does not cite {} ({shown})", cite.label()));
                        }
                    }
                }
            }
        }
    }
}

/// What one call of a trajectory shows about the model's handling of results: whether it
/// repeats an earlier call, and, when its own result was an error, whether the model's next
/// call to that tool recovered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CallSignal {
    /// It repeats an earlier call (same tool, equivalent arguments): `Some(true)` when that
    /// call's latest result was an error, `Some(false)` when it was a success.
    pub repeats_after_error: Option<bool>,
    /// Its result was an error and a later call to the same tool followed: whether that next
    /// call had valid arguments different from this one.
    pub recovered: Option<bool>,
}

/// Each call's [`CallSignal`], in call order: the one source of the retry and recovery
/// counts (a scenario's score, and tune's diagnosis per tool).
pub fn call_signals(calls: &[ExecutedCall], validators: &ToolValidators) -> Vec<CallSignal> {
    calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            // A retry repeats an earlier call; what it follows is that call's latest result.
            let repeats_after_error = calls[..i]
                .iter()
                .rev()
                .find(|p| p.tool == call.tool && same_arguments(p, call))
                .map(|prev| prev.is_error);
            let recovered = if call.is_error {
                calls[i + 1..]
                    .iter()
                    .find(|n| n.tool == call.tool)
                    .map(|next| {
                        let valid = next.unparsed_arguments.is_none()
                            && validators
                                .validate(&next.tool, &next.arguments)
                                .is_some_and(|v| v.is_empty());
                        valid && !same_arguments(call, next)
                    })
            } else {
                None
            };
            CallSignal {
                repeats_after_error,
                recovered,
            }
        })
        .collect()
}

/// The retry, recovery and unscripted counts of a trajectory (everything but the verdict).
fn call_counts(calls: &[ExecutedCall], validators: &ToolValidators) -> ScenarioScore {
    let mut s = ScenarioScore::default();
    for (call, signal) in calls.iter().zip(call_signals(calls, validators)) {
        if call.kind == CallKind::Unscripted {
            s.unscripted_calls += 1;
        }
        match signal.repeats_after_error {
            Some(true) => s.retries_after_error += 1,
            Some(false) => s.retries_after_success += 1,
            None => {}
        }
        if let Some(recovered) = signal.recovered {
            s.recovery_chances += 1;
            s.recoveries += u32::from(recovered);
        }
    }
    s
}

fn same_arguments(a: &ExecutedCall, b: &ExecutedCall) -> bool {
    match (&a.unparsed_arguments, &b.unparsed_arguments) {
        (Some(x), Some(y)) => x == y,
        (None, None) => json_equal(&a.arguments, &b.arguments),
        _ => false,
    }
}

fn item_matches(
    item: &SequenceItem,
    call: &ExecutedCall,
    earlier: &[ExecutedCall],
) -> Result<(), String> {
    if !item.tool.matches(&call.tool) {
        return Err(format!("expected {}, got {}", item.tool.label(), call.tool));
    }
    if let Err((path, why)) = match_args(&item.call, &call.arguments) {
        let at = if path.is_empty() {
            String::new()
        } else {
            format!(".{path}")
        };
        return Err(format!("{}{at}: {why}", call.tool));
    }
    for (arg_path, source) in &item.uses {
        let Some(want) = latest_result_value(earlier, source, earlier.len()) else {
            return Err(format!(
                "{}.{arg_path} should use {} but no earlier {} result has it",
                call.tool,
                source.label(),
                source.tool
            ));
        };
        match value_at_path(&call.arguments, arg_path) {
            Some(got) if values_agree(&want, got) => {}
            got => {
                return Err(format!(
                    "{}.{arg_path}: expected {} from {}, got {}",
                    call.tool,
                    plain_text(&want),
                    source.label(),
                    got.map_or_else(|| "nothing".to_owned(), plain_text)
                ));
            }
        }
    }
    Ok(())
}

/// Whether an argument carries a value from a result: equal as JSON, or the same text (a
/// model passes the id `42` as `"42"` as often as not).
fn values_agree(want: &Value, got: &Value) -> bool {
    json_equal(want, got) || plain_text(want) == plain_text(got)
}

// Long: one matching pass per sequence mode (exact, in order, any order), side by side.
fn check_sequence(
    mode: SequenceMode,
    items: &[SequenceItem],
    calls: &[ExecutedCall],
) -> Result<(), String> {
    match mode {
        SequenceMode::Exact => {
            for (i, item) in items.iter().enumerate() {
                let Some(call) = calls.get(i) else {
                    return Err(format!(
                        "call {} missing: expected {} ({} call{} made)",
                        i + 1,
                        item.tool.label(),
                        calls.len(),
                        if calls.len() == 1 { "" } else { "s" }
                    ));
                };
                item_matches(item, call, &calls[..i])
                    .map_err(|e| format!("call {}: {e}", i + 1))?;
            }
            if calls.len() > items.len() {
                return Err(format!(
                    "{} calls made, {} expected (first extra: {})",
                    calls.len(),
                    items.len(),
                    calls[items.len()].tool
                ));
            }
            Ok(())
        }
        SequenceMode::InOrder => {
            // Greedy earliest match is optimal for a subsequence test.
            let mut next = 0;
            for (k, item) in items.iter().enumerate() {
                let mut last_why = None;
                let found = (next..calls.len()).find(|&j| {
                    match item_matches(item, &calls[j], &calls[..j]) {
                        Ok(()) => true,
                        Err(why) => {
                            if item.tool.matches(&calls[j].tool) {
                                last_why = Some(why);
                            }
                            false
                        }
                    }
                });
                match found {
                    Some(j) => next = j + 1,
                    None => {
                        let after = if k == 0 {
                            String::new()
                        } else {
                            format!(" after {}", items[k - 1].tool.label())
                        };
                        return Err(match last_why {
                            Some(why) => format!("expected {}{after}: {why}", item.tool.label()),
                            None => format!("expected {}{after}, never called", item.tool.label()),
                        });
                    }
                }
            }
            Ok(())
        }
        SequenceMode::AnyOrder => {
            // Each item needs a distinct call: try items in order, backtracking over the few
            // calls a trajectory has.
            let mut used = vec![false; calls.len()];
            if assign(items, calls, &mut used) {
                Ok(())
            } else {
                let missing = items
                    .iter()
                    .find(|item| {
                        !calls
                            .iter()
                            .enumerate()
                            .any(|(j, c)| item_matches(item, c, &calls[..j]).is_ok())
                    })
                    .map_or_else(
                        || "the calls cannot cover every expected call once".to_owned(),
                        |item| format!("no call matches {}", item.tool.label()),
                    );
                Err(missing)
            }
        }
    }
}

fn assign(items: &[SequenceItem], calls: &[ExecutedCall], used: &mut [bool]) -> bool {
    let Some((item, rest)) = items.split_first() else {
        return true;
    };
    for j in 0..calls.len() {
        if !used[j] && item_matches(item, &calls[j], &calls[..j]).is_ok() {
            used[j] = true;
            if assign(rest, calls, used) {
                return true;
            }
            used[j] = false;
        }
    }
    false
}

fn check_state(state: &Value, path: &str, check: &StateCheck) -> Result<(), String> {
    let got = value_at_path(state, path);
    match check {
        StateCheck::Absent => match got {
            None => Ok(()),
            Some(v) => Err(format!(
                "expected absent, got {}",
                toolscore_core::canonical_json(v)
            )),
        },
        StateCheck::Equals(want) => match got {
            Some(v) if json_equal(want, v) => Ok(()),
            Some(v) => Err(format!(
                "expected {}, got {}",
                toolscore_core::canonical_json(want),
                toolscore_core::canonical_json(v)
            )),
            None => Err(format!(
                "expected {}, got nothing",
                toolscore_core::canonical_json(want)
            )),
        },
        StateCheck::Matches(m) => check_matcher(path, m, None, got).map_err(|(_, why)| why),
        StateCheck::Length(n) => {
            let len = match got {
                Some(Value::Array(a)) => Some(a.len()),
                Some(Value::Object(o)) => Some(o.len()),
                Some(Value::String(s)) => Some(s.chars().count()),
                _ => None,
            };
            match len {
                Some(l) if l == *n => Ok(()),
                Some(l) => Err(format!("expected length {n}, got {l}")),
                None => Err(format!(
                    "expected length {n}, got no array, object or string"
                )),
            }
        }
    }
}

/// The value at `r.path` in the latest successful result of `r.tool` among `calls[..before]`.
fn latest_result_value(calls: &[ExecutedCall], r: &ResultRef, before: usize) -> Option<Value> {
    calls[..before.min(calls.len())]
        .iter()
        .rev()
        .filter(|c| c.tool == r.tool && !c.is_error)
        .find_map(|c| {
            let doc = match &c.structured {
                Some(s) => s.clone(),
                None => serde_json::from_str::<Value>(&c.content).ok()?,
            };
            value_at_path(&doc, &r.path).cloned()
        })
}

/// A value as it would read in text: strings bare, everything else as compact JSON.
fn plain_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => toolscore_core::canonical_json(other),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use toolscore_core::catalog::{Catalog, Tool};

    fn validators() -> Arc<ToolValidators> {
        let catalog = Catalog::new(
            vec![
                Tool {
                    name: "write".into(),
                    description: String::new(),
                    input_schema: json!({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}),
                    ..Default::default()
                },
                Tool {
                    name: "find".into(),
                    description: String::new(),
                    input_schema: json!({"type":"object"}),
                    ..Default::default()
                },
                Tool {
                    name: "credit".into(),
                    description: String::new(),
                    input_schema: json!({"type":"object","properties":{"id":{"type":"string"},"amount":{"type":"number","minimum":0}},"required":["id","amount"]}),
                    ..Default::default()
                },
            ],
            "t".into(),
        );
        Arc::new(ToolValidators::compile(&catalog).unwrap())
    }

    fn call(tool: &str, args: Value, result: &str, is_error: bool) -> ExecutedCall {
        ExecutedCall {
            step: 0,
            tool: tool.into(),
            arguments: args,
            unparsed_arguments: None,
            kind: CallKind::Scripted,
            rule: Some(0),
            content: result.into(),
            structured: None,
            is_error,
            state: None,
            injected: false,
        }
    }

    fn trajectory(calls: Vec<ExecutedCall>) -> Trajectory {
        Trajectory {
            calls,
            stop: LoopStop::FinalAnswer,
            final_state: None,
            step_latency_ms: vec![1.0],
        }
    }

    fn item(tool: &str, args: Option<Value>) -> SequenceItem {
        SequenceItem {
            tool: ToolPattern::Name(tool.into()),
            call: ExpectedCall {
                tool: tool.into(),
                args,
                matchers: BTreeMap::new(),
                family: None,
            },
            uses: BTreeMap::new(),
        }
    }

    #[test]
    fn three_repeats_in_ten_calls_is_a_retry_rate_of_three_tenths() {
        // w(a) ok, w(a) again ×2 after success, w(b) err, w(b) again after error, then others.
        let mut calls = vec![
            call("write", json!({"text":"a"}), "{\"ok\":true}", false),
            call("write", json!({"text":"a"}), "{\"ok\":true}", false),
            call("write", json!({"text":"a"}), "{\"ok\":true}", false),
            call("write", json!({"text":"b"}), "disk full", true),
            call("write", json!({"text":"b"}), "ok", false),
        ];
        for t in ["c", "d", "e", "f", "g"] {
            calls.push(call("write", json!({ "text": t }), "ok", false));
        }
        let s = call_counts(&calls, &validators());
        assert_eq!(calls.len(), 10);
        assert_eq!(s.retries_after_success, 2);
        assert_eq!(s.retries_after_error, 1);
        assert_eq!(
            f64::from(s.retries_after_success + s.retries_after_error) / calls.len() as f64,
            0.3
        );
        // The error was followed by the same arguments again: a chance, not a recovery.
        assert_eq!((s.recoveries, s.recovery_chances), (0, 1));
    }

    #[test]
    fn an_error_followed_by_a_valid_different_call_is_one_recovery() {
        let calls = vec![
            call(
                "credit",
                json!({"id":"C-1","amount":-5}),
                "amount: -5 is less than the minimum of 0",
                true,
            ),
            call("credit", json!({"id":"C-1","amount":5}), "ok", false),
        ];
        let s = call_counts(&calls, &validators());
        assert_eq!((s.recoveries, s.recovery_chances), (1, 1));
        // A different but still invalid call is no recovery.
        let calls = vec![
            call("credit", json!({"id":"C-1","amount":-5}), "bad", true),
            call("credit", json!({"id":"C-1","amount":-6}), "bad", true),
        ];
        let s = call_counts(&calls, &validators());
        assert_eq!((s.recoveries, s.recovery_chances), (0, 1));
        // An error never followed by the same tool offers no chance (ending the loop on a
        // domain error is right).
        let s = call_counts(
            &[call("find", json!({}), "unknown account", true)],
            &validators(),
        );
        assert_eq!(s.recovery_chances, 0);
    }

    #[test]
    fn sequence_modes() {
        let calls = vec![
            call("find", json!({"q":"x"}), "{\"id\":\"C-9\"}", false),
            call("write", json!({"text":"n"}), "ok", false),
            call("credit", json!({"id":"C-9","amount":5}), "ok", false),
        ];
        let items = vec![
            item("find", None),
            item("credit", Some(json!({"id":"C-9","amount":5}))),
        ];
        let v = validators();
        let judge = |mode, items: &[SequenceItem]| {
            let e = ScenarioExpect {
                sequence: Some((mode, items.to_vec())),
                ..Default::default()
            };
            score_trajectory(&e, &trajectory(calls.clone()), Some("done"), &v)
        };
        assert!(judge(SequenceMode::InOrder, &items).passed);
        let exact = judge(SequenceMode::Exact, &items);
        assert!(!exact.passed);
        assert!(
            exact.failures[0].contains("call 2: expected credit, got write"),
            "{:?}",
            exact.failures
        );
        let reversed: Vec<_> = items.iter().rev().cloned().collect();
        assert!(!judge(SequenceMode::InOrder, &reversed).passed);
        assert!(judge(SequenceMode::AnyOrder, &reversed).passed);
        let wrong_args = vec![item("credit", Some(json!({"id":"C-9","amount":6})))];
        let s = judge(SequenceMode::AnyOrder, &wrong_args);
        assert!(!s.passed);
        assert_eq!(s.expected_calls, Some(1));
        assert_eq!(s.calls, 3);
    }

    #[test]
    fn chains_must_use_values_from_earlier_results() {
        let mut chained = item("credit", None);
        chained
            .uses
            .insert("id".into(), ResultRef::parse("find.id").unwrap());
        let e = ScenarioExpect {
            sequence: Some((SequenceMode::InOrder, vec![item("find", None), chained])),
            ..Default::default()
        };
        let v = validators();
        let good = vec![
            call("find", json!({}), "{\"id\":\"C-9\"}", false),
            call("credit", json!({"id":"C-9","amount":1}), "ok", false),
        ];
        assert!(score_trajectory(&e, &trajectory(good), None, &v).passed);
        let invented = vec![
            call("find", json!({}), "{\"id\":\"C-9\"}", false),
            call("credit", json!({"id":"C-1","amount":1}), "ok", false),
        ];
        let s = score_trajectory(&e, &trajectory(invented), None, &v);
        assert!(
            s.failures[0].contains("expected C-9 from find.id, got C-1"),
            "{:?}",
            s.failures
        );
    }

    #[test]
    fn outcome_assertions_state_answer_citations_and_budgets() {
        let v = validators();
        let mut t = trajectory(vec![call(
            "find",
            json!({}),
            "{\"id\":\"C-9\",\"balance\":42}",
            false,
        )]);
        t.final_state = Some(json!({"credits":[{"amount":10}]}));
        let e = ScenarioExpect {
            state: vec![
                ("credits.0.amount".into(), StateCheck::Equals(json!(10))),
                ("credits".into(), StateCheck::Length(1)),
                ("missing".into(), StateCheck::Absent),
            ],
            answer_contains: vec!["BALANCE".into()],
            answer_regex: Some(regex::Regex::new(r"\d+").unwrap()),
            cites: vec![ResultRef::parse("find.balance").unwrap()],
            max_calls: Some(1),
            forbidden: vec![ToolPattern::AnyOf(vec!["write".into(), "credit".into()])],
            ..Default::default()
        };
        assert!(score_trajectory(&e, &t, Some("Your balance is 42."), &v).passed);
        let s = score_trajectory(&e, &t, Some("Your balance is 41."), &v);
        assert_eq!(
            s.failures,
            vec!["answer: does not cite find.balance (42)".to_owned()]
        );
        let s = score_trajectory(&e, &t, None, &v);
        assert_eq!(
            s.failures,
            vec!["answer: the loop ended without a final answer".to_owned()]
        );
        t.final_state = Some(json!({"credits":[{"amount":5},{"amount":10}]}));
        t.calls
            .push(call("write", json!({"text":"x"}), "ok", false));
        let s = score_trajectory(&e, &t, Some("balance 42"), &v);
        assert_eq!(s.failures.len(), 4, "{:?}", s.failures);
        assert!(
            s.failures
                .iter()
                .any(|f| f == "forbidden: called write (step 1)")
        );
        assert!(
            s.failures
                .iter()
                .any(|f| f.starts_with("max_calls: 2 calls"))
        );
        assert!(
            s.failures
                .iter()
                .any(|f| f == "state.credits.0.amount: expected 10, got 5")
        );
    }

    #[test]
    fn the_step_limit_and_unscripted_calls_fail_a_trial() {
        let v = validators();
        let mut t = trajectory(vec![call("find", json!({}), "no rule", true)]);
        t.calls[0].kind = CallKind::Unscripted;
        t.stop = LoopStop::StepLimit;
        let s = score_trajectory(&ScenarioExpect::default(), &t, None, &v);
        assert_eq!(s.unscripted_calls, 1);
        assert_eq!(s.failures.len(), 2, "{:?}", s.failures);
        let allow = ScenarioExpect {
            allow_unscripted: true,
            ..Default::default()
        };
        t.stop = LoopStop::FinalAnswer;
        assert!(score_trajectory(&allow, &t, Some("x"), &v).passed);
    }

    #[test]
    fn tool_patterns() {
        assert!(ToolPattern::AnyOf(vec!["a".into(), "b".into()]).matches("b"));
        let re = ToolPattern::Regex(regex::Regex::new("^(?:.*_credit)$").unwrap());
        assert!(re.matches("apply_credit"));
        assert!(!re.matches("apply_credit_note"));
        assert_eq!(re.label(), "/.*_credit/");
    }
}
