//! Public as a namespace: callers write `behaviour::diff`, `behaviour::Explorer`, `behaviour::CaseKey`.
//!
//! What the trials of one case did, grouped: the answer to "0/40 — but what did the model do?".
//!
//! A **behaviour** is what the model did, normalised so that trials doing the same thing fall
//! together, with whether the trial passed:
//! - a fixture: the tools called (a parallel answer's calls in name order, as selection scores
//!   them as a set), or `(no call)`;
//! - a scenario: the tools in the order called, and how the loop ended.
//!
//! Within a behaviour its **variants** are what still differs: a fixture's distinct argument
//! sets (canonical JSON), or for an answer in words (no call, or a scenario's final answer)
//! its distinct texts, whitespace and case aside.
//! Each behaviour keeps one **example**, the trial of lowest index, with its text and calls as
//! decoded (and a scenario's tool results and final state), so the groups are a function of
//! the records' contents and not of their order: `run`, `report`, `merge` and `--resume` give
//! the same. Infrastructure errors are no behaviour: they are counted apart, by class, and
//! never in a share.
//!
//! Bounded: at most [`MAX_BEHAVIOURS`] behaviours and [`MAX_VARIANTS`] variants of each are
//! listed, the rest counted; every text, argument set and result is cut at [`EXAMPLE_BYTES`],
//! saying how much was cut. Computed from `results.jsonl` alone.

mod diff;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::RateStat;
use toolscore_core::cut_text;
use toolscore_core::{ArmId, CallKind, LoopStop, Outcome, TrialRecord};

pub use diff::{BehaviourChange, BehaviourDiff, ChangedBehaviour, ToBase, diff};

/// Most behaviours listed per case; the rest are counted in [`CaseBehaviours::not_listed`].
pub const MAX_BEHAVIOURS: usize = 8;
/// Most variants listed per behaviour; the rest are counted.
pub(crate) const MAX_VARIANTS: usize = 4;
/// Bytes an example's text, arguments, tool result or variant is cut to.
pub(crate) const EXAMPLE_BYTES: usize = 600;
/// What a fixture trial that called no tool did.
pub const NO_CALL: &str = "(no call)";

/// The behaviours of one case under one arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseBehaviours {
    pub dataset: String,
    pub case_id: String,
    pub arm: ArmId,
    /// What the case expects, as the records label it (`create_quote`, `(no call)`).
    pub expected: String,
    /// Two-sided confidence level of every share's interval.
    pub confidence: f64,
    /// Trials scored (infrastructure errors not counted).
    pub scored: u64,
    /// Passing trials of the scored ones, with the Wilson interval.
    pub pass: RateStat,
    /// Each tool called, and in how many scored trials (every trial, listed behaviours or
    /// not): what the catalog marks as chosen.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools_called: BTreeMap<String, u64>,
    /// Most trials first; at most [`MAX_BEHAVIOURS`].
    pub behaviours: Vec<Behaviour>,
    /// The behaviours past [`MAX_BEHAVIOURS`], counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_listed: Option<NotListed>,
    /// Trials with no usable answer, by error class: not scored, never in a share.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ErrorGroup>,
    /// An attacked unit's attack: how often its goal happened, and how often its payload
    /// reached the model, over the scored trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack: Option<AttackShare>,
}

/// What an attacked unit's scored trials did with its attack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttackShare {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// Trials whose attacker's goal happened, with the Wilson interval.
    pub succeeded: RateStat,
    /// Trials in which the model read the payload.
    pub delivered: u64,
    /// The goal in words (`send_email {"to":"eve@attacker.example"}`), when the run folder's
    /// attacks.jsonl still holds the attack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<String>,
}

/// One behaviour: what the model did, how often, and one example.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Behaviour {
    /// What the model did: `create_quote`, `get_job_status + get_job_status`, `(no call)`;
    /// a scenario's `find_customer → apply_credit · final answer`. With `passed`, the key
    /// that matches a behaviour across arms and runs.
    pub calls: String,
    pub passed: bool,
    /// Its trials out of the scored trials, with the Wilson interval.
    pub share: RateStat,
    /// Most trials first; at most [`MAX_VARIANTS`].
    pub variants: Vec<Variant>,
    /// Distinct variants past [`MAX_VARIANTS`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub variants_not_listed: u64,
    /// The trial of lowest index that did this.
    pub example: Example,
    /// An attacked unit: its trials in which the attacker's goal happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack_succeeded: Option<u64>,
}

/// What differs within a behaviour: an argument set, or the text of an answer that called no
/// tool (a scenario's final answer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    /// The arguments of each call as canonical JSON in the behaviour's call order (`; `
    /// between calls), or the answer's text (whitespace collapsed, lower-cased); cut at
    /// [`EXAMPLE_BYTES`].
    pub what: String,
    pub trials: u64,
    /// The trial of lowest index that did this.
    pub first_trial: u32,
    /// Why that trial failed, as scored (`args.amount_minor: expected 799, got 2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

/// Behaviours past the listed ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotListed {
    pub behaviours: u64,
    pub trials: u64,
}

/// Trials of one error class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorGroup {
    pub class: String,
    pub trials: u64,
    pub first_trial: u32,
    /// The first trial's error message, cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One trial as the model answered it: each turn's text and calls as decoded, and for a
/// scenario what each call was answered and the final state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Example {
    pub trial_index: u32,
    /// The trial's opening request: the key of its raw responses in a cassette.
    pub request_hash: String,
    pub turns: Vec<TurnShown>,
    /// A scenario's executed calls with the results fed back, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<ResultShown>,
    /// A scenario's state after the last call, compact JSON, cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_state: Option<String>,
    /// Each step's response body as the provider sent it, cut (`explain --raw`, from the
    /// cassette the arm replayed or recorded); empty unless asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub raw: Vec<String>,
}

/// One model turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnShown {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<CallShown>,
}

/// One call as the model made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallShown {
    pub tool: String,
    /// Compact JSON in the order the model wrote it, or the text that was not JSON; cut.
    pub arguments: String,
    /// The arguments were not JSON.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unparsed: bool,
}

/// One executed scenario call and the result the model was given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultShown {
    pub step: u32,
    pub tool: String,
    pub arguments: String,
    pub kind: CallKind,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// An attack's payload sat in this result.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub injected: bool,
    pub content: String,
    /// The scenario's state right after the call, compact JSON, cut; absent when the call
    /// changed nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

/// What `toolscore explain` prints, and writes with `--json`: each arm's behaviours of one
/// case beside the case as that arm's model read it, and how they moved between two arms.
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    pub arms: Vec<ArmExplanation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<ExplainedDiff>,
}

/// One arm's side of an explanation.
#[derive(Debug, Clone, Serialize)]
pub struct ArmExplanation {
    pub run_id: String,
    pub behaviours: CaseBehaviours,
    /// The case as this arm's model read it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shown: Option<CaseAsShown>,
    /// Why it is not shown (its files are gone, or its catalog is a live server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_shown: Option<String>,
    /// With `--raw`, why the examples carry no raw response (no cassette holds them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_not_shown: Option<String>,
}

/// A case's conversation and catalog exactly as an arm showed them.
#[derive(Debug, Clone, Serialize)]
pub struct CaseAsShown {
    /// `datasets/billing/cases.jsonl:28`, or the scenario file.
    pub source: String,
    pub messages: Vec<toolscore_core::Message>,
    /// In the author's order and wording, the variant's overlay applied.
    pub tools: Vec<toolscore_core::catalog::Tool>,
    /// What differs from what the run recorded, each a sentence; empty when nothing does.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed_since: Vec<String>,
}

/// A dataset's catalog as one variant showed it: the HTML report prints each once and links
/// every case to it.
#[derive(Debug, Clone, Serialize)]
pub struct ShownCatalog {
    pub dataset: String,
    pub variant: String,
    /// In the author's order and wording, the variant's overlay applied.
    pub tools: Vec<toolscore_core::catalog::Tool>,
    /// What differs from what the run recorded, each a sentence.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed_since: Vec<String>,
}

/// What the HTML report's case explorer shows beside the summary, read by the command: the
/// behaviours of the cases its charts show, each case's conversation, each catalog once, and
/// the comparison's cases diffed.
#[derive(Debug, Clone, Default)]
pub struct Explorer {
    pub cases: Vec<ExploredCase>,
    pub catalogs: Vec<ShownCatalog>,
    /// Why a catalog is not shown, by (dataset, variant).
    pub catalogs_not_shown: Vec<((String, String), String)>,
    /// The comparison's cases: (dataset, case id) and how their behaviours moved from A to B.
    pub diffs: Vec<(String, String, BehaviourDiff)>,
}

/// One case of one arm in the explorer.
#[derive(Debug, Clone)]
pub struct ExploredCase {
    pub behaviours: CaseBehaviours,
    /// Its conversation as the arm's model read it, or why it cannot be shown.
    pub shown: Result<ShownConversation, String>,
}

/// A case's conversation as an arm's model read it (its catalog is shown apart, once).
#[derive(Debug, Clone)]
pub struct ShownConversation {
    /// `datasets/billing/cases.jsonl:28`, or the scenario file.
    pub source: String,
    pub messages: Vec<toolscore_core::Message>,
    /// What differs from what the run recorded, each a sentence.
    pub changed_since: Vec<String>,
}

/// How a case's behaviours moved from arm A to arm B, with the case's difference as
/// `compare` reports it.
#[derive(Debug, Clone, Serialize)]
pub struct ExplainedDiff {
    pub a: super::ComparedArm,
    pub b: super::ComparedArm,
    /// The rate the case's difference is on (`compare`'s `--metric`).
    pub metric: super::Metric,
    /// B − A on `metric` with Newcombe's interval; absent when an arm scored no trial.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub case: Option<super::CaseComparison>,
    pub behaviours: BehaviourDiff,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Builds a case's behaviours from its records, in any order. Memory grows with the distinct
/// variants of the case, each cut at [`EXAMPLE_BYTES`], not with its trials.
#[derive(Debug, Default)]
pub struct BehaviourTally {
    expected: String,
    scored: u64,
    passed: u64,
    /// An attacked unit's attack (id, family), and its scored trials' successes and
    /// deliveries.
    attack: Option<(String, Option<String>, u64, u64)>,
    tools_called: BTreeMap<String, u64>,
    groups: BTreeMap<(String, bool), GroupTally>,
    errors: BTreeMap<String, ErrorGroup>,
}

#[derive(Debug)]
struct GroupTally {
    trials: u64,
    /// Attacked trials of the group whose goal happened (`None` for a clean case).
    attack_succeeded: Option<u64>,
    /// Keyed by the variant's full text (before cutting), so two long argument sets that
    /// share a prefix stay apart.
    variants: BTreeMap<String, Variant>,
    example: Example,
}

impl BehaviourTally {
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one record of the case.
    pub fn add(&mut self, record: &TrialRecord) {
        // Every record of a case and arm carries the same label; an error's may be older.
        if record.outcome != Outcome::Error || self.expected.is_empty() {
            self.expected.clone_from(&record.expected);
        }
        if record.outcome == Outcome::Error {
            self.add_error(record);
            return;
        }
        if !record.outcome.is_judged() {
            return;
        }
        self.scored += 1;
        let passed = record.outcome == Outcome::Pass;
        self.passed += u64::from(passed);
        if let Some(a) = &record.attack {
            let t = self
                .attack
                .get_or_insert_with(|| (a.id.clone(), a.family.clone(), 0, 0));
            t.2 += u64::from(a.succeeded);
            t.3 += u64::from(a.delivered.is_some());
        }
        let (calls, variant) = match &record.trajectory {
            Some(t) => (
                scenario_calls(t.calls.iter().map(|c| c.tool.as_str()), t.stop),
                final_answer(record),
            ),
            None => fixture_calls(record),
        };
        // A fixture that called no tool answered in words: those are what differ.
        let variant = if calls == NO_CALL {
            final_answer(record)
        } else {
            variant
        };
        let mut called: Vec<&str> = record
            .turns
            .iter()
            .flat_map(|t| &t.tool_calls)
            .map(|c| c.name.as_str())
            .collect();
        called.sort_unstable();
        called.dedup();
        for tool in called {
            *self.tools_called.entry(tool.to_owned()).or_default() += 1;
        }
        let failure = failure_of(record);
        let trial = record.trial_index;
        let group = self
            .groups
            .entry((calls, passed))
            .or_insert_with(|| GroupTally {
                trials: 0,
                attack_succeeded: None,
                variants: BTreeMap::new(),
                example: example_of(record),
            });
        group.trials += 1;
        if let Some(a) = &record.attack {
            *group.attack_succeeded.get_or_insert(0) += u64::from(a.succeeded);
        }
        if trial < group.example.trial_index {
            group.example = example_of(record);
        }
        let v = group
            .variants
            .entry(variant)
            .or_insert_with_key(|what| Variant {
                what: cut_text(what, EXAMPLE_BYTES),
                trials: 0,
                first_trial: trial,
                failure: failure.clone(),
            });
        v.trials += 1;
        if trial < v.first_trial {
            v.first_trial = trial;
            v.failure = failure;
        }
    }

    fn add_error(&mut self, record: &TrialRecord) {
        let class = record
            .error_class
            .map_or_else(|| "unknown".to_owned(), |c| c.as_str().to_owned());
        let message = record.error.as_deref().map(|m| cut_text(m, EXAMPLE_BYTES));
        let e = self
            .errors
            .entry(class.clone())
            .or_insert_with(|| ErrorGroup {
                class,
                trials: 0,
                first_trial: record.trial_index,
                message: message.clone(),
            });
        e.trials += 1;
        if record.trial_index < e.first_trial {
            e.first_trial = record.trial_index;
            e.message = message;
        }
    }

    /// The behaviours, most trials first (ties: passing first, then by calls), each share with
    /// its Wilson interval at `confidence`.
    pub fn finish(
        self,
        dataset: &str,
        case_id: &str,
        arm: &ArmId,
        confidence: f64,
    ) -> CaseBehaviours {
        let scored = self.scored;
        let mut groups: Vec<((String, bool), GroupTally)> = self.groups.into_iter().collect();
        groups.sort_by(|(ka, a), (kb, b)| {
            b.trials
                .cmp(&a.trials)
                .then(kb.1.cmp(&ka.1))
                .then_with(|| ka.0.cmp(&kb.0))
        });
        let not_listed = (groups.len() > MAX_BEHAVIOURS).then(|| NotListed {
            behaviours: (groups.len() - MAX_BEHAVIOURS) as u64,
            trials: groups[MAX_BEHAVIOURS..].iter().map(|(_, g)| g.trials).sum(),
        });
        let behaviours = groups
            .into_iter()
            .take(MAX_BEHAVIOURS)
            .map(|((calls, passed), g)| {
                let mut variants: Vec<Variant> = g.variants.into_values().collect();
                variants.sort_by(|a, b| {
                    b.trials
                        .cmp(&a.trials)
                        .then(a.first_trial.cmp(&b.first_trial))
                });
                let variants_not_listed = variants.len().saturating_sub(MAX_VARIANTS) as u64;
                variants.truncate(MAX_VARIANTS);
                Behaviour {
                    calls,
                    passed,
                    share: share(g.trials, scored, confidence),
                    variants,
                    variants_not_listed,
                    example: g.example,
                    attack_succeeded: g.attack_succeeded,
                }
            })
            .collect();
        let mut errors: Vec<ErrorGroup> = self.errors.into_values().collect();
        errors.sort_by(|a, b| b.trials.cmp(&a.trials).then_with(|| a.class.cmp(&b.class)));
        CaseBehaviours {
            dataset: dataset.to_owned(),
            case_id: case_id.to_owned(),
            arm: arm.clone(),
            expected: self.expected,
            confidence,
            scored,
            pass: share(self.passed, scored, confidence),
            tools_called: self.tools_called,
            behaviours,
            not_listed,
            errors,
            attack: self
                .attack
                .map(|(id, family, succeeded, delivered)| AttackShare {
                    id,
                    family,
                    succeeded: share(succeeded, scored, confidence),
                    delivered,
                    goal: None,
                }),
        }
    }
}

/// One case of one arm.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CaseKey {
    pub arm: ArmId,
    pub dataset: String,
    pub case_id: String,
}

/// The cases a pull-request report explains, at most `per_arm` of each arm: the cases a
/// case-level gate failed, then the weakest by pass rate (the weakest-cases table's order).
pub fn cases_to_explain(s: &super::Summary, per_arm: usize) -> Vec<CaseKey> {
    let mut out: Vec<CaseKey> = Vec::new();
    for a in &s.arms {
        let failed = s
            .gate
            .iter()
            .flat_map(|g| &g.gates)
            .filter(|g| g.arm == a.arm)
            .flat_map(|g| &g.not_passed)
            .filter(|c| c.verdict.failed())
            .map(|c| (c.dataset.clone(), c.case_id.clone()));
        let weakest = super::weakest_cases(a)
            .into_iter()
            .map(|c| (c.dataset.clone(), c.case_id.clone()));
        let mut mine: Vec<CaseKey> = Vec::new();
        for (dataset, case_id) in failed.chain(weakest) {
            let key = CaseKey {
                arm: a.arm.clone(),
                dataset,
                case_id,
            };
            if mine.len() == per_arm {
                break;
            }
            if !mine.contains(&key) {
                mine.push(key);
            }
        }
        out.extend(mine);
    }
    out
}

/// The behaviours of `cases`, in their order, from a run's `results.jsonl`, streamed once:
/// memory grows with the cases asked for, not with the run.
pub fn behaviours_of(
    results: &std::path::Path,
    cases: &[CaseKey],
    confidence: f64,
) -> Result<Vec<CaseBehaviours>, toolscore_core::Error> {
    Ok(cases
        .iter()
        .zip(tallies_of(results, cases)?)
        .map(|(k, t)| t.finish(&k.dataset, &k.case_id, &k.arm, confidence))
        .collect())
}

/// [`behaviours_of`] before it is finished: the tallies, which a diff reads.
pub fn tallies_of(
    results: &std::path::Path,
    cases: &[CaseKey],
) -> Result<Vec<BehaviourTally>, toolscore_core::Error> {
    let index: BTreeMap<(&ArmId, &str, &str), usize> = cases
        .iter()
        .enumerate()
        .map(|(i, k)| ((&k.arm, k.dataset.as_str(), k.case_id.as_str()), i))
        .collect();
    let mut tallies: Vec<BehaviourTally> = cases.iter().map(|_| BehaviourTally::new()).collect();
    super::for_each_record(results, &mut |r| {
        if let Some(&i) = index.get(&(&r.arm, r.dataset.as_str(), r.case_id.as_str())) {
            tallies[i].add(r);
        }
    })?;
    Ok(tallies)
}

/// `x` of `n` with the interval every single rate of the reports gets
/// ([`toolscore_stats::rate_interval`]: Wilson, widened at the edges), so a case's pass rate
/// here is the one its report row shows.
pub(crate) fn share(x: u64, n: u64, confidence: f64) -> RateStat {
    RateStat {
        x,
        n,
        rate: (n > 0).then(|| x as f64 / n as f64),
        interval: toolscore_stats::rate_interval(x, n, confidence),
        case_level: None,
    }
}

/// A fixture trial's calls (names in order, ` + ` between) and its argument sets.
fn fixture_calls(record: &TrialRecord) -> (String, String) {
    let mut calls: Vec<(&str, String)> = record
        .turns
        .iter()
        .flat_map(|t| &t.tool_calls)
        .map(|c| {
            let args = match &c.unparsed_arguments {
                Some(text) => format!("(not JSON) {text}"),
                None => toolscore_core::canonical_json(&c.arguments),
            };
            (c.name.as_str(), args)
        })
        .collect();
    if calls.is_empty() {
        return (NO_CALL.to_owned(), String::new());
    }
    calls.sort();
    let names: Vec<&str> = calls.iter().map(|(n, _)| *n).collect();
    let args: Vec<&str> = calls.iter().map(|(_, a)| a.as_str()).collect();
    (names.join(" + "), args.join("; "))
}

/// A scenario trial's tool sequence and how its loop ended.
fn scenario_calls<'a>(tools: impl Iterator<Item = &'a str>, stop: LoopStop) -> String {
    let sequence: Vec<&str> = tools.collect();
    let sequence = if sequence.is_empty() {
        NO_CALL.to_owned()
    } else {
        sequence.join(" → ")
    };
    let end = match stop {
        LoopStop::FinalAnswer => "final answer",
        LoopStop::StepLimit => "step limit",
        LoopStop::Error => "error",
        LoopStop::StateLimit => "state limit",
        LoopStop::Budget => "budget",
    };
    format!("{sequence} · {end}")
}

/// A trial's last text, whitespace collapsed and lower-cased: two answers that differ only so
/// are one variant.
fn final_answer(record: &TrialRecord) -> String {
    let text = record
        .turns
        .last()
        .and_then(|t| t.text.as_deref())
        .unwrap_or_default();
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Why a scored trial failed, as its score says.
fn failure_of(record: &TrialRecord) -> Option<String> {
    if let Some(s) = &record.scenario {
        return (!s.failures.is_empty()).then(|| cut_text(&s.failures.join("; "), EXAMPLE_BYTES));
    }
    record
        .score
        .as_ref()
        .and_then(|s| s.detail.as_deref())
        .map(|d| cut_text(d, EXAMPLE_BYTES))
}

/// A record as the model answered it, every text cut.
fn example_of(record: &TrialRecord) -> Example {
    let turns = record
        .turns
        .iter()
        .map(|t| TurnShown {
            text: t.text.as_deref().map(|s| cut_text(s, EXAMPLE_BYTES)),
            calls: t
                .tool_calls
                .iter()
                .map(|c| match &c.unparsed_arguments {
                    Some(text) => CallShown {
                        tool: c.name.clone(),
                        arguments: cut_text(text, EXAMPLE_BYTES),
                        unparsed: true,
                    },
                    None => CallShown {
                        tool: c.name.clone(),
                        arguments: cut_text(&c.arguments.to_string(), EXAMPLE_BYTES),
                        unparsed: false,
                    },
                })
                .collect(),
        })
        .collect();
    let (results, final_state) = match &record.trajectory {
        Some(t) => (
            t.calls
                .iter()
                .map(|c| ResultShown {
                    step: c.step,
                    tool: c.tool.clone(),
                    arguments: cut_text(
                        &c.unparsed_arguments
                            .clone()
                            .unwrap_or_else(|| c.arguments.to_string()),
                        EXAMPLE_BYTES,
                    ),
                    kind: c.kind,
                    is_error: c.is_error,
                    injected: c.injected,
                    content: cut_text(&c.content, EXAMPLE_BYTES),
                    state: c
                        .state
                        .as_ref()
                        .map(|s| cut_text(&s.to_string(), EXAMPLE_BYTES)),
                })
                .collect(),
            t.final_state
                .as_ref()
                .map(|s| cut_text(&s.to_string(), EXAMPLE_BYTES)),
        ),
        None => (Vec::new(), None),
    };
    Example {
        trial_index: record.trial_index,
        request_hash: record.request_hash.clone(),
        turns,
        results,
        final_state,
        raw: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolscore_core::ErrorClass;
    use toolscore_core::{ModelTurn, ToolCall, Usage};

    fn call(name: &str, args: serde_json::Value) -> ToolCall {
        ToolCall::for_test(name, args)
    }

    /// Trial `i` of case `c`, which made `calls` (or answered `text`) and passed or failed.
    fn trial(i: u32, calls: Vec<ToolCall>, text: Option<&str>, passed: bool) -> TrialRecord {
        let outcome = if passed { Outcome::Pass } else { Outcome::Fail };
        let mut r = TrialRecord::for_test("c", outcome, 1.0);
        r.trial_index = i;
        r.expected = "apply_credit".into();
        r.turns = vec![ModelTurn {
            tool_calls: calls,
            text: text.map(str::to_owned),
            usage: Usage::default(),
            finish: None,
        }];
        r
    }

    fn error(i: u32, class: ErrorClass) -> TrialRecord {
        let mut r = TrialRecord::for_test("c", Outcome::Error, 1.0);
        r.trial_index = i;
        r.error_class = Some(class);
        r.error = Some(format!("failure of trial {i}"));
        r
    }

    fn finish(records: &[TrialRecord]) -> CaseBehaviours {
        let mut t = BehaviourTally::new();
        for r in records {
            t.add(r);
        }
        t.finish("d", "c", &records[0].arm, 0.95)
    }

    /// 10 trials: 5× create_quote (two argument sets), 3× apply_credit passing, 2× no call;
    /// and one timeout.
    fn sample() -> Vec<TrialRecord> {
        let mut v = Vec::new();
        for i in 0..5 {
            let qty = if i < 3 { 1 } else { 2 };
            v.push(trial(
                i,
                vec![call("create_quote", json!({"qty": qty}))],
                None,
                false,
            ));
        }
        for i in 5..8 {
            v.push(trial(
                i,
                vec![call("apply_credit", json!({"amount": 799}))],
                None,
                true,
            ));
        }
        v.push(trial(8, vec![], Some("I  cannot do that."), false));
        v.push(trial(9, vec![], Some("i cannot do THAT."), false));
        v.push(error(10, ErrorClass::Timeout));
        v
    }

    #[test]
    fn behaviours_are_grouped_counted_and_ranked_with_wilson_shares() {
        let b = finish(&sample());
        assert_eq!((b.scored, b.pass.x, b.pass.n), (10, 3, 10));
        let calls: Vec<(&str, bool, u64)> = b
            .behaviours
            .iter()
            .map(|g| (g.calls.as_str(), g.passed, g.share.x))
            .collect();
        assert_eq!(
            calls,
            [
                ("create_quote", false, 5),
                ("apply_credit", true, 3),
                (NO_CALL, false, 2)
            ]
        );
        let iv = toolscore_stats::rate_interval(5, 10, 0.95).unwrap();
        assert_eq!(b.behaviours[0].share.interval, Some(iv));
        // Two argument sets, the more frequent first; answers in words differing only in
        // whitespace and case are one variant.
        let q = &b.behaviours[0].variants;
        assert_eq!((q[0].what.as_str(), q[0].trials), (r#"{"qty":1}"#, 3));
        assert_eq!(
            (q[1].what.as_str(), q[1].trials, q[1].first_trial),
            (r#"{"qty":2}"#, 2, 3)
        );
        assert_eq!(b.behaviours[2].variants.len(), 1);
        assert_eq!(b.behaviours[2].variants[0].what, "i cannot do that.");
        assert_eq!(b.tools_called.get("create_quote"), Some(&5));
        // The timeout is counted apart, in no share.
        assert_eq!(b.errors.len(), 1);
        assert_eq!(
            (b.errors[0].class.as_str(), b.errors[0].trials),
            ("timeout", 1)
        );
        assert!(b.behaviours.iter().all(|g| g.share.n == 10));
    }

    #[test]
    fn the_groups_and_examples_do_not_depend_on_the_order_of_the_records() {
        let forward = finish(&sample());
        let mut shuffled = sample();
        shuffled.reverse();
        shuffled.swap(2, 7);
        assert_eq!(finish(&shuffled), forward);
        // The example is the lowest trial index of its behaviour, whatever came first.
        assert_eq!(forward.behaviours[0].example.trial_index, 0);
        assert_eq!(forward.behaviours[1].example.trial_index, 5);
    }

    #[test]
    fn parallel_calls_in_either_order_are_one_behaviour() {
        let a = call("get_customer", json!({"id": 1}));
        let b = call("apply_credit", json!({"amount": 2}));
        let records = vec![
            trial(0, vec![a.clone(), b.clone()], None, false),
            trial(1, vec![b, a], None, false),
        ];
        let out = finish(&records);
        assert_eq!(out.behaviours.len(), 1);
        assert_eq!(out.behaviours[0].calls, "apply_credit + get_customer");
        assert_eq!(out.behaviours[0].variants[0].trials, 2);
    }

    #[test]
    fn listing_is_bounded_and_the_rest_is_counted() {
        // 12 distinct tools, tool k called by k+1 trials; one behaviour with 6 argument sets;
        // one answer far longer than an example keeps.
        let mut records = Vec::new();
        let mut i = 0;
        for k in 0..12u32 {
            for _ in 0..=k {
                records.push(trial(
                    i,
                    vec![call(&format!("tool_{k:02}"), json!({"k": i}))],
                    None,
                    false,
                ));
                i += 1;
            }
        }
        records.push(trial(
            i,
            vec![],
            Some(&"x".repeat(5 * EXAMPLE_BYTES)),
            false,
        ));
        let out = finish(&records);
        assert_eq!(out.behaviours.len(), MAX_BEHAVIOURS);
        assert_eq!(out.behaviours[0].calls, "tool_11");
        let rest = out.not_listed.expect("counted");
        // tool_00..tool_03 (1+2+3+4 trials) and the (no call): 5 behaviours, 11 trials.
        assert_eq!((rest.behaviours, rest.trials), (5, 11));
        assert_eq!(out.behaviours[0].variants.len(), MAX_VARIANTS);
        assert_eq!(
            out.behaviours[0].variants_not_listed,
            12 - MAX_VARIANTS as u64
        );
        let mut long = BehaviourTally::new();
        long.add(records.last().unwrap());
        let long = long.finish("d", "c", &records[0].arm, 0.95);
        let text = long.behaviours[0].example.turns[0].text.as_deref().unwrap();
        assert!(text.len() < EXAMPLE_BYTES + 40, "{}", text.len());
        assert!(text.ends_with("more bytes cut)"), "{text}");
    }

    #[test]
    fn a_diff_names_what_appeared_vanished_and_moved_beyond_noise() {
        let tally = |records: Vec<TrialRecord>| {
            let mut t = BehaviourTally::new();
            for r in &records {
                t.add(r);
            }
            t
        };
        let q = || call("create_quote", json!({}));
        let c = || call("apply_credit", json!({}));
        let s = || call("get_server_status", json!({}));
        // A: 20× create_quote, 10× apply_credit. B: 20× apply_credit, 10× get_server_status.
        let a = tally(
            (0..30)
                .map(|i| trial(i, vec![if i < 20 { q() } else { c() }], None, false))
                .collect(),
        );
        let b = tally(
            (0..30)
                .map(|i| trial(i, vec![if i < 20 { c() } else { s() }], None, false))
                .collect(),
        );
        let d = diff(&a, &b, 0.95, (&ToBase::new(), &ToBase::new()));
        let change = |calls: &str| d.changes.iter().find(|x| x.calls == calls).unwrap().change;
        assert_eq!(change("create_quote"), BehaviourChange::Vanished);
        assert_eq!(change("get_server_status"), BehaviourChange::New);
        assert_eq!(change("apply_credit"), BehaviourChange::Grew);
        let moved = d
            .changes
            .iter()
            .find(|x| x.calls == "apply_credit")
            .unwrap();
        let iv = toolscore_stats::newcombe_interval(20, 30, 10, 30, 0.95).unwrap();
        assert_eq!(moved.interval, Some(iv));
        // One trial more in B is within noise.
        let a = tally(vec![
            trial(0, vec![q()], None, false),
            trial(1, vec![c()], None, false),
        ]);
        let b = tally(vec![
            trial(0, vec![q()], None, false),
            trial(1, vec![s()], None, false),
        ]);
        let d = diff(&a, &b, 0.95, (&ToBase::new(), &ToBase::new()));
        assert!(
            d.changes
                .iter()
                .all(|x| x.change == BehaviourChange::WithinNoise)
        );
    }

    #[test]
    fn a_diff_matches_behaviours_across_a_rename() {
        let tally = |records: Vec<TrialRecord>| {
            let mut t = BehaviourTally::new();
            records.iter().for_each(|r| t.add(r));
            t
        };
        let a = tally(vec![trial(
            0,
            vec![call("get_job_status", json!({})), call("zeta", json!({}))],
            None,
            false,
        )]);
        let b = tally(vec![trial(
            0,
            vec![call("job_progress", json!({})), call("zeta", json!({}))],
            None,
            false,
        )]);
        let to_base: ToBase = [("job_progress".to_owned(), "get_job_status".to_owned())].into();
        let d = diff(&a, &b, 0.95, (&ToBase::new(), &to_base));
        assert_eq!(d.changes.len(), 1, "{d:?}");
        assert_eq!(d.changes[0].calls, "get_job_status + zeta");
        assert_eq!((d.changes[0].a.x, d.changes[0].b.x), (1, 1));
        // Without the map the two are different behaviours.
        let apart = diff(&a, &b, 0.95, (&ToBase::new(), &ToBase::new()));
        assert_eq!(apart.changes.len(), 2);
    }

    #[test]
    fn a_diff_counts_behaviours_past_the_listed_ones_in_both_arms() {
        // B does in 1 trial each what A never does, 9 times over: no behaviour vanishes just
        // because it was not among B's listed ones.
        let a: Vec<TrialRecord> = (0..9)
            .map(|i| trial(i, vec![call("x", json!({}))], None, false))
            .collect();
        let b: Vec<TrialRecord> = (0..9)
            .map(|i| trial(i, vec![call(&format!("t{i}"), json!({}))], None, false))
            .collect();
        let (mut ta, mut tb) = (BehaviourTally::new(), BehaviourTally::new());
        a.iter().for_each(|r| ta.add(r));
        b.iter().for_each(|r| tb.add(r));
        let d = diff(&ta, &tb, 0.95, (&ToBase::new(), &ToBase::new()));
        assert_eq!(d.changes[0].calls, "x");
        assert_eq!(d.changes[0].change, BehaviourChange::Vanished);
        assert_eq!(d.changes.len(), MAX_BEHAVIOURS);
        assert_eq!(d.not_listed.as_ref().map(|n| n.behaviours), Some(2));
    }
}
