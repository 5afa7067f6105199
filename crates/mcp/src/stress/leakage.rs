//! The leakage verdict (pure): whether the run tested for leakage at all and, when not, why;
//! for each leak the session, call, tool and argument its canary was written through; a count
//! per (writer, reader) pair of sessions.

use std::collections::BTreeMap;

use serde::Serialize;

use super::canary::{ArgPath, Canary, KeptReason, Placement};
use super::tally::{CallObservation, CallOutcome, StressRun};

/// A string a tool's calls send as the dataset wrote it, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeptField {
    /// The argument's shape, e.g. `entities[].entityType`.
    pub path: String,
    pub reason: KeptReason,
}

/// Where a tool's calls carry their canary, over every dataset call of the tool.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCanaries {
    pub tool: String,
    /// The shapes of the canaried strings, in the order first met.
    pub canaried: Vec<String>,
    pub kept: Vec<KeptField>,
}

impl ToolCanaries {
    /// Adds one call's placement: each shape once.
    pub fn add(&mut self, placement: &Placement) {
        for path in &placement.canaried {
            let shape = path.shape();
            if !self.canaried.contains(&shape) {
                self.canaried.push(shape);
            }
        }
        for (path, reason) in &placement.kept {
            let field = KeptField {
                path: path.shape(),
                reason: *reason,
            };
            if !self.kept.contains(&field) {
                self.kept.push(field);
            }
        }
    }
}

/// One of the calls the sessions make in turn: the tool, and the strings its canary goes in
/// (a canary's slot indexes them).
#[derive(Debug, Clone, PartialEq)]
pub struct CallPlan {
    pub tool: String,
    pub canaried: Vec<ArgPath>,
}

/// Which of `calls` calls the session's `call`-th call makes: sessions start on different
/// calls, so each tool is under concurrent load.
pub(crate) fn call_in_turn(session: u32, call: u64, calls: usize) -> usize {
    ((u64::from(session) + call) % calls.max(1) as u64) as usize
}

/// The call that wrote a canary found in another session's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeakWriter {
    pub session: u32,
    pub call: u64,
    pub tool: String,
    /// The argument the canary was written through, e.g. `entities[0].name`; `None` when the
    /// canary names no slot of that call.
    pub path: Option<String>,
}

/// A canary found in another session's answer and, when it is this run's, who wrote it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeakSource {
    pub canary: String,
    /// `None` for a canary of an earlier run (or of no session of this one).
    pub writer: Option<LeakWriter>,
}

/// Most sources listed for one leak (every canary found is in `found`).
pub(crate) const SOURCES_LISTED: usize = 8;

/// The answers a reader session got with canaries of a writer session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeakPair {
    /// `None`: an earlier run (or no session of this one).
    pub writer_session: Option<u32>,
    pub reader_session: u32,
    pub answers: u64,
}

/// Why a run did not test for leakage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Untested {
    /// No call was made at all.
    NoCallMade,
    /// No string in any call's arguments is free (see each tool's kept fields).
    NoFreeString,
    /// Every free string is covered by a `--no-canary` path.
    AllExcluded,
    /// Calls were made, but none of the calls with a free string came round.
    NoneSent,
    /// Calls carried a canary, but none ended in a result: the server may never have stored it.
    NoneAnswered,
}

/// Whether the run looked for leakage, and what it found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Leakage {
    /// Whether at least one call carried a canary and ended in a result.
    pub tested: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub untested_because: Option<Untested>,
    /// Whether `--require-leakage-test` makes an untested run fail.
    pub required: bool,
    pub answers_searched: u64,
    pub calls_with_canary: u64,
    /// Calls that carried a canary and ended in a result.
    pub results_with_canary: u64,
    pub leaked_answers: u64,
    /// Leaked answers per (writer, reader) pair, most first. An answer carrying two writers'
    /// canaries counts for both.
    pub pairs: Vec<LeakPair>,
}

/// The leakage verdict of a run.
pub(crate) fn judge_leakage(run: &StressRun, required: bool) -> Leakage {
    let observations = &run.observations;
    let calls_with_canary = observations.iter().filter(|o| o.planted).count() as u64;
    let results_with_canary = observations
        .iter()
        .filter(|o| o.planted && o.outcome == CallOutcome::Ok)
        .count() as u64;
    let untested_because = if observations.is_empty() {
        Some(Untested::NoCallMade)
    } else if run.tools.iter().all(|t| t.canaried.is_empty()) {
        let excluded = run
            .tools
            .iter()
            .flat_map(|t| &t.kept)
            .any(|k| k.reason == KeptReason::NoCanary);
        Some(if excluded {
            Untested::AllExcluded
        } else {
            Untested::NoFreeString
        })
    } else if calls_with_canary == 0 {
        Some(Untested::NoneSent)
    } else if results_with_canary == 0 {
        Some(Untested::NoneAnswered)
    } else {
        None
    };
    Leakage {
        tested: untested_because.is_none(),
        untested_because,
        required,
        answers_searched: observations.len() as u64,
        calls_with_canary,
        results_with_canary,
        leaked_answers: observations.iter().filter(|o| !o.leaked.is_empty()).count() as u64,
        pairs: count_pairs(run),
    }
}

/// Who wrote `canary`, when it is one of this run's sessions' canaries.
fn writer_of(canary: &Canary, run: &StressRun) -> Option<LeakWriter> {
    let ours = canary.run == run.run_id
        && (1..=run.session_log.planned).contains(&canary.session)
        && !run.calls.is_empty();
    if !ours {
        return None;
    }
    let plan = &run.calls[call_in_turn(canary.session, canary.call, run.calls.len())];
    let path = canary
        .slot
        .and_then(|slot| plan.canaried.get(slot as usize))
        .map(ArgPath::to_string);
    Some(LeakWriter {
        session: canary.session,
        call: canary.call,
        tool: plan.tool.clone(),
        path,
    })
}

/// The sources of one leaked answer, the first [`SOURCES_LISTED`].
pub(crate) fn sources_of(observation: &CallObservation, run: &StressRun) -> Vec<LeakSource> {
    observation
        .leaked
        .iter()
        .take(SOURCES_LISTED)
        .map(|c| LeakSource {
            canary: c.to_string(),
            writer: writer_of(c, run),
        })
        .collect()
}

fn count_pairs(run: &StressRun) -> Vec<LeakPair> {
    let mut counts: BTreeMap<(Option<u32>, u32), u64> = BTreeMap::new();
    for o in run.observations.iter().filter(|o| !o.leaked.is_empty()) {
        let mut writers: Vec<Option<u32>> = o
            .leaked
            .iter()
            .map(|c| writer_of(c, run).map(|w| w.session))
            .collect();
        writers.sort_unstable();
        writers.dedup();
        for writer in writers {
            *counts.entry((writer, o.session)).or_default() += 1;
        }
    }
    let mut pairs: Vec<LeakPair> = counts
        .into_iter()
        .map(|((writer_session, reader_session), answers)| LeakPair {
            writer_session,
            reader_session,
            answers,
        })
        .collect();
    pairs.sort_by_key(|p| std::cmp::Reverse(p.answers));
    pairs
}
