//! Sequential (early-stopping) case gates, stats.md §6: tests that may be checked after every
//! trial and stopped at the first decision without inflating their error rates.
//!
//! Peeking at a fixed-n Wilson bound after every trial passes a case at the threshold a
//! quarter of the time instead of 5% (§6.1). Both tests here are read as test martingales, so
//! Ville's inequality keeps `P(PASS | p ≤ t) ≤ α` and `P(FAIL | p ≥ p₁) ≤ β` however often
//! they are looked at:
//!
//! - [`MixtureGate`] (the default): needs no guess of the true rate. Its PASS evidence mixes
//!   the likelihood ratios of several alternatives above t, so it is about as fast as the
//!   best of them at whatever rate the case really has.
//! - [`SprtGate`]: Wald's SPRT for a user who knows the rate a case should pass at.
//!
//! [`PairedBetting`] is the sequential comparison of two arms paired by case: a confidence
//! sequence for their mean difference that may stop at any complete round.
//!
//! The case gates decide on integer boundaries of the counts (S passes of n), so a decision depends
//! only on the counts, never on the order trials arrived in, and [`operating_characteristics`]
//! computes either test's expected trials and error rates exactly.

mod exact;
mod mixture;
mod paired;
mod simulate;
mod sprt;

use serde::{Deserialize, Serialize};

pub use exact::{OperatingCharacteristics, operating_characteristics};
pub use mixture::MixtureGate;
pub use paired::{PairCounts, PairedBetting, PairedDecision};
pub use simulate::{SeededUniform, SimulatedOc, simulate_comparison, simulate_suite_gate};
pub use sprt::SprtGate;

/// What a sequential test says after n trials with S passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SequentialDecision {
    /// The PASS evidence reached 1/α: the rate is above t (false-pass probability ≤ α).
    Pass,
    /// The FAIL evidence reached 1/β: the rate is below p₁ (false-fail probability ≤ β when
    /// p ≥ p₁).
    Fail,
    /// Neither boundary reached: run more trials (or, at the trial budget, report
    /// inconclusive, which the safe side treats as FAIL).
    Continue,
}

/// A sequential test written as its two integer boundaries on the passes S after n trials.
pub trait Boundaries {
    /// The fewest passes that PASS after `n` trials; `None` when no run of n trials can pass
    /// yet.
    fn pass_boundary(&self, n: u64) -> Option<u64>;

    /// The most passes that FAIL after `n` trials; `None` when not even 0 of n fails yet.
    fn fail_boundary(&self, n: u64) -> Option<u64>;

    /// The decision after `successes` passes in `n` trials. Valid at every n however often it
    /// is asked; the trial budget is the caller's, and `Continue` at the budget means
    /// inconclusive.
    ///
    /// `None` when `successes > n`.
    fn decide(&self, successes: u64, n: u64) -> Option<SequentialDecision> {
        if successes > n {
            return None;
        }
        Some(if self.pass_boundary(n).is_some_and(|b| successes >= b) {
            SequentialDecision::Pass
        } else if self.fail_boundary(n).is_some_and(|b| successes <= b) {
            SequentialDecision::Fail
        } else {
            SequentialDecision::Continue
        })
    }

    /// The fewest further trials that could still decide from `successes` of `n`: all
    /// passes to the PASS boundary, or all failures to the FAIL boundary. `None` when nothing
    /// decides within `limit` more trials.
    fn fewest_to_decide(&self, successes: u64, n: u64, limit: u64) -> Option<u64> {
        (1..=limit).find(|&extra| {
            self.decide(successes + extra, n + extra) == Some(SequentialDecision::Pass)
                || self.decide(successes, n + extra) == Some(SequentialDecision::Fail)
        })
    }
}

/// Which sequential test a case gate runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SequentialKind {
    /// [`MixtureGate`]: no p₁ to guess (the default of `--sequential`).
    Mixture,
    /// [`SprtGate`] at a given p₁ (`--sprt-p1`). The default when reading a summary written
    /// before the mixture existed, when every sequential gate was an SPRT.
    #[default]
    Sprt,
    /// [`PairedBetting`] over rounds of every case: the sequential suite gate, no case test.
    Betting,
}

/// A case gate's sequential test, either kind.
#[derive(Debug, Clone, PartialEq)]
pub enum SequentialTest {
    Mixture(MixtureGate),
    Sprt(SprtGate),
}

impl SequentialTest {
    /// The test of `kind` for threshold `t`, with its FAIL guarantee at `p1` (for the SPRT
    /// also its alternative), false-pass bound `alpha` and false-fail bound `beta`.
    /// `None` for parameters either test refuses.
    pub fn new(kind: SequentialKind, t: f64, p1: f64, alpha: f64, beta: f64) -> Option<Self> {
        match kind {
            SequentialKind::Mixture => MixtureGate::new(t, p1, alpha, beta).map(Self::Mixture),
            SequentialKind::Sprt => SprtGate::new(t, p1, alpha, beta).map(Self::Sprt),
            SequentialKind::Betting => None,
        }
    }

    pub fn kind(&self) -> SequentialKind {
        match self {
            SequentialTest::Mixture(_) => SequentialKind::Mixture,
            SequentialTest::Sprt(_) => SequentialKind::Sprt,
        }
    }
}

impl Boundaries for SequentialTest {
    fn pass_boundary(&self, n: u64) -> Option<u64> {
        match self {
            SequentialTest::Mixture(g) => g.pass_boundary(n),
            SequentialTest::Sprt(g) => g.pass_boundary(n),
        }
    }

    fn fail_boundary(&self, n: u64) -> Option<u64> {
        match self {
            SequentialTest::Mixture(g) => g.fail_boundary(n),
            SequentialTest::Sprt(g) => g.fail_boundary(n),
        }
    }
}
