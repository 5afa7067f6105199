//! How a case's behaviours moved between two arms or two runs: each behaviour's share in A
//! and in B, B − A with Newcombe's interval (the trials of one case under two arms are
//! independent samples, as `compare` treats them per case), and whether it appeared, vanished,
//! grew or shrank. Computed from the full tallies, so a behaviour past the listed ones in one
//! arm is never reported as vanished.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{BehaviourTally, MAX_BEHAVIOURS, NotListed, share};
use crate::RateStat;

/// A case's behaviours in arm A against arm B.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BehaviourDiff {
    pub confidence: f64,
    /// Every behaviour of either arm, the largest move first; at most [`MAX_BEHAVIOURS`].
    pub changes: Vec<ChangedBehaviour>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_listed: Option<NotListed>,
}

/// One behaviour's share in each arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangedBehaviour {
    pub calls: String,
    pub passed: bool,
    pub a: RateStat,
    pub b: RateStat,
    /// B − A.
    pub difference: f64,
    /// Newcombe's hybrid score interval of B − A; absent when an arm scored no trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<toolscore_stats::Interval>,
    pub change: BehaviourChange,
}

/// What happened to a behaviour from A to B.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BehaviourChange {
    /// Only B did it, and its interval excludes 0.
    New,
    /// Only A did it, and its interval excludes 0.
    Vanished,
    /// In both, and B's share is higher with an interval that excludes 0.
    Grew,
    /// In both, and B's share is lower with an interval that excludes 0.
    Shrank,
    /// The interval includes 0: within trial noise (it may still be only in one arm).
    WithinNoise,
}

impl BehaviourChange {
    /// The word the reports print.
    pub fn as_str(self) -> &'static str {
        match self {
            BehaviourChange::New => "new",
            BehaviourChange::Vanished => "vanished",
            BehaviourChange::Grew => "grew",
            BehaviourChange::Shrank => "shrank",
            BehaviourChange::WithinNoise => "within noise",
        }
    }
}

/// A tool's name under a catalog variant → its name in the base catalog, for the tools the
/// variant renames.
pub type ToBase = BTreeMap<String, String>;

/// How the behaviours of one case moved from `a` to `b`. A variant that renames tools calls
/// them by other names: `to_base` maps each arm's names back to the base catalog's, so a
/// behaviour is matched across the rename (and named as the base catalog names it).
pub fn diff(
    a: &BehaviourTally,
    b: &BehaviourTally,
    confidence: f64,
    to_base: (&ToBase, &ToBase),
) -> BehaviourDiff {
    let counts = |t: &BehaviourTally, names: &ToBase| {
        let mut out: BTreeMap<(String, bool), u64> = BTreeMap::new();
        for ((calls, passed), g) in &t.groups {
            *out.entry((base_names(calls, names), *passed)).or_default() += g.trials;
        }
        out
    };
    let (ca, cb) = (counts(a, to_base.0), counts(b, to_base.1));
    let keys: BTreeSet<&(String, bool)> = ca.keys().chain(cb.keys()).collect();
    let trials =
        |c: &BTreeMap<(String, bool), u64>, k: &(String, bool)| c.get(k).copied().unwrap_or(0);
    let mut changes: Vec<ChangedBehaviour> = keys
        .into_iter()
        .map(|k| {
            let (xa, xb) = (trials(&ca, k), trials(&cb, k));
            let (sa, sb) = (
                share(xa, a.scored, confidence),
                share(xb, b.scored, confidence),
            );
            let difference = sb.rate.unwrap_or(0.0) - sa.rate.unwrap_or(0.0);
            let interval =
                toolscore_stats::newcombe_interval(xb, b.scored, xa, a.scored, confidence);
            let change = match interval {
                Some(iv) if iv.lo > 0.0 && xa == 0 => BehaviourChange::New,
                Some(iv) if iv.hi < 0.0 && xb == 0 => BehaviourChange::Vanished,
                Some(iv) if iv.lo > 0.0 => BehaviourChange::Grew,
                Some(iv) if iv.hi < 0.0 => BehaviourChange::Shrank,
                _ => BehaviourChange::WithinNoise,
            };
            ChangedBehaviour {
                calls: k.0.clone(),
                passed: k.1,
                a: sa,
                b: sb,
                difference,
                interval,
                change,
            }
        })
        .collect();
    changes.sort_by(|x, y| {
        y.difference
            .abs()
            .total_cmp(&x.difference.abs())
            .then_with(|| x.calls.cmp(&y.calls))
            .then(y.passed.cmp(&x.passed))
    });
    let not_listed = (changes.len() > MAX_BEHAVIOURS).then(|| NotListed {
        behaviours: (changes.len() - MAX_BEHAVIOURS) as u64,
        trials: changes[MAX_BEHAVIOURS..]
            .iter()
            .map(|c| c.a.x + c.b.x)
            .sum(),
    });
    changes.truncate(MAX_BEHAVIOURS);
    BehaviourDiff {
        confidence,
        changes,
        not_listed,
    }
}

/// A behaviour's calls with each tool named as the base catalog names it: the tools of
/// `a + b` (then in name order again) or of `a → b · final answer`.
fn base_names(calls: &str, to_base: &ToBase) -> String {
    if to_base.is_empty() {
        return calls.to_owned();
    }
    let (sequence, end) = match calls.split_once(" · ") {
        Some((sequence, end)) => (sequence, Some(end)),
        None => (calls, None),
    };
    let name = |t: &str| to_base.get(t).cloned().unwrap_or_else(|| t.to_owned());
    let renamed = if sequence.contains(" → ") {
        sequence
            .split(" → ")
            .map(name)
            .collect::<Vec<_>>()
            .join(" → ")
    } else {
        let mut tools: Vec<String> = sequence.split(" + ").map(name).collect();
        tools.sort();
        tools.join(" + ")
    };
    match end {
        Some(end) => format!("{renamed} · {end}"),
        None => renamed,
    }
}
