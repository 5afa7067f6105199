//! How a case's behaviours moved between two arms or two runs: each behaviour's share in A
//! and in B, B − A with Newcombe's interval (the trials of one case under two arms are
//! independent samples, as `compare` treats them per case), and whether it appeared, vanished,
//! grew or shrank. Computed from the full tallies, so a behaviour past the listed ones in one
//! arm is never reported as vanished.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{BehaviourTally, MAX_BEHAVIOURS, NotListed, share};
use crate::report::RateStat;

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
    pub interval: Option<crate::stats::Interval>,
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

/// How the behaviours of one case moved from `a` to `b`.
pub fn diff(a: &BehaviourTally, b: &BehaviourTally, confidence: f64) -> BehaviourDiff {
    let keys: BTreeSet<&(String, bool)> = a.groups.keys().chain(b.groups.keys()).collect();
    let trials = |t: &BehaviourTally, k: &(String, bool)| t.groups.get(k).map_or(0, |g| g.trials);
    let mut changes: Vec<ChangedBehaviour> = keys
        .into_iter()
        .map(|k| {
            let (xa, xb) = (trials(a, k), trials(b, k));
            let (sa, sb) = (
                share(xa, a.scored, confidence),
                share(xb, b.scored, confidence),
            );
            let difference = sb.rate.unwrap_or(0.0) - sa.rate.unwrap_or(0.0);
            let interval = crate::stats::newcombe_interval(xb, b.scored, xa, a.scored, confidence);
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
