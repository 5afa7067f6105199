//! The sequential suite gate (`--gate-level suite --sequential`): each arm's rate over a fixed
//! set of cases, judged after every complete round by an anytime-valid confidence sequence,
//! and the arm stopped the moment every gate on it has decided.
//!
//! - The claim is about this suite's cases: the mean over them of each case's rate, not the
//!   rate of a population of cases the suite samples (what the fixed-n suite gate's t
//!   interval estimates). The verdict's method says so.
//! - A round is trial r of every case. Each trial is a bet on its outcome against t
//!   (`stats::PairedBetting` on x ↦ 2x − 1, whose mean is 2·rate − 1): within a round the
//!   cases differ, but the round's expected factor is at most 1 whenever the suite's mean rate
//!   is at most t, so the evidence is a test supermartingale at round boundaries and PASS at
//!   1/α keeps its false-pass chance at most α (and FAIL likewise, against "rate ≥ t").
//! - A rate that does not apply to every trial (args, schema) cannot fill a fixed round and is
//!   refused; a round with an infrastructure error is skipped whole, and counted.
//! - Scenarios are not cases of the suite here; their trials are ignored.

use std::collections::HashMap;

use crate::record::{ArmId, SCENARIO_DATASET, TrialRecord};
use crate::report::{GateLevel, GateResult, Metric, SequentialInfo, Verdict};
use crate::stats::{PairCounts, PairedBetting, PairedDecision, SequentialKind};

use super::super::rounds::Rounds;
use super::GateSpec;

/// One gate on one arm: its rounds and what they decided.
struct SuiteState {
    rounds: Rounds,
    skipped_rounds: u64,
    /// Passes as `b_only`, failures as `a_only` (x ↦ 2x − 1).
    counts: PairCounts,
    decided: Option<Verdict>,
}

/// One arm: its cases' indices in first-seen order, and each gate's state.
struct ArmRounds {
    arm: ArmId,
    index: HashMap<(String, String), usize>,
    states: Vec<SuiteState>,
}

/// Every (arm, gate) of a sequential suite gate.
pub(super) struct SuiteRounds {
    gates: Vec<GateSpec>,
    test: PairedBetting,
    cases: usize,
    max_rounds: u32,
    arms: Vec<ArmRounds>,
}

impl SuiteRounds {
    /// `None` when α is not in (0, 1).
    pub(super) fn new(
        gates: Vec<GateSpec>,
        confidence: f64,
        cases: usize,
        max_rounds: u32,
    ) -> Option<Self> {
        Some(SuiteRounds {
            gates,
            test: PairedBetting::new(1.0 - confidence)?,
            cases,
            max_rounds,
            arms: Vec::new(),
        })
    }

    /// Why a gate cannot be judged this way, checked before any trial.
    pub(super) fn refusal(gates: &[GateSpec]) -> Option<String> {
        gates
            .iter()
            .find(|g| !matches!(g.metric.rate(), Some(Metric::Selection | Metric::Pass)))
            .map(|g| {
                format!(
                    "--gate-level suite --sequential judges selection and pass, which every trial has; {} does not apply to every trial, so its rounds are not fixed in advance (use --gate-level case)",
                    g.metric.label()
                )
            })
    }

    /// Feeds one finished trial; true when every gate on its arm has decided.
    pub(super) fn push(&mut self, record: &TrialRecord) -> bool {
        if record.dataset == SCENARIO_DATASET {
            return false;
        }
        let arm = match self.arms.iter().position(|a| a.arm == record.arm) {
            Some(i) => i,
            None => {
                let states = self
                    .gates
                    .iter()
                    .map(|_| SuiteState {
                        rounds: Rounds::new(self.cases, 1, self.max_rounds),
                        skipped_rounds: 0,
                        counts: PairCounts::default(),
                        decided: None,
                    })
                    .collect();
                self.arms.push(ArmRounds {
                    arm: record.arm.clone(),
                    index: HashMap::new(),
                    states,
                });
                self.arms.len() - 1
            }
        };
        let ArmRounds { index, states, .. } = &mut self.arms[arm];
        let key = (record.dataset.clone(), record.case_id.clone());
        let next = index.len();
        let case = *index.entry(key).or_insert(next);
        if case >= self.cases {
            return false;
        }
        for (state, gate) in states.iter_mut().zip(&self.gates) {
            if state.decided.is_some() {
                continue;
            }
            let outcome = match (&record.score, gate.metric.rate()) {
                (Some(score), Some(metric)) => metric.of(score),
                _ => None,
            };
            state.rounds.add(case, 0, record.trial_index, outcome);
            while state.decided.is_none() {
                let Some(round) = state.rounds.next_round() else {
                    break;
                };
                let Some(outcomes) = round
                    .iter()
                    .map(|sides| sides[0])
                    .collect::<Option<Vec<_>>>()
                else {
                    state.skipped_rounds += 1;
                    continue;
                };
                for ok in outcomes {
                    state.counts.add(!ok, ok);
                }
                state.decided = decide(&self.test, state.counts, gate.threshold);
            }
        }
        states.iter().all(|s| s.decided.is_some())
    }

    /// Every gate on every arm seen, as data.
    pub(super) fn results(&self, budget: super::sequential::TrialBudget) -> Vec<GateResult> {
        let alpha = self.test.alpha();
        let mut out = Vec::new();
        for ArmRounds { arm, states, .. } in &self.arms {
            for (state, gate) in states.iter().zip(&self.gates) {
                let (lower, upper) = bounds(&self.test, state.counts);
                let n = state.counts.pairs();
                let rounds = state.rounds.taken();
                out.push(GateResult {
                    metric: gate.metric,
                    threshold: gate.threshold,
                    level: GateLevel::Suite,
                    arm: arm.clone(),
                    verdict: state.decided.unwrap_or(Verdict::Inconclusive),
                    method: format!(
                        "sequential: betting confidence sequence over rounds of every case (anytime-valid), alpha {alpha:.3} each way; about these {} cases, not a population of cases",
                        self.cases
                    ),
                    estimate: (n > 0).then(|| state.counts.b_only as f64 / n as f64),
                    lower: Some(lower),
                    upper: Some(upper),
                    cases: self.cases,
                    passed_cases: 0,
                    failed_cases: 0,
                    inconclusive_cases: 0,
                    not_passed: Vec::new(),
                    hint: state.decided.is_none().then(|| {
                        format!(
                            "undecided after {rounds} of {} rounds; {}",
                            self.max_rounds,
                            budget.rounds_remedy()
                        )
                    }),
                    tools: Vec::new(),
                    trials: Some(n),
                    sequential: Some(SequentialInfo {
                        test: SequentialKind::Betting,
                        p1: gate.threshold,
                        alpha,
                        beta_per_case: alpha,
                        max_trials: self.max_rounds,
                        trials_used: n,
                        fixed_design_trials: 0,
                        pass_boundary: None,
                        pass_at: Vec::new(),
                        fail_below: None,
                        anytime_valid_bounds: false,
                        rounds: Some((rounds, state.skipped_rounds)),
                    }),
                });
            }
        }
        out
    }
}

/// PASS when the evidence against "rate ≤ t" reaches 1/α, FAIL when the evidence against
/// "rate ≥ t" does.
fn decide(test: &PairedBetting, counts: PairCounts, t: f64) -> Option<Verdict> {
    match test.decide_one_sided(counts, 2.0 * t - 1.0) {
        PairedDecision::Better => Some(Verdict::Pass),
        PairedDecision::Worse => Some(Verdict::Fail),
        PairedDecision::Within | PairedDecision::NotBetter | PairedDecision::Continue => None,
    }
}

/// The one-sided bounds of the suite's rate at the gate's confidence.
fn bounds(test: &PairedBetting, counts: PairCounts) -> (f64, f64) {
    let (lo, hi) = test.one_sided_bounds(counts);
    ((lo + 1.0) / 2.0, (hi + 1.0) / 2.0)
}
