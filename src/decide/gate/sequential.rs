//! The sequential case gate (`--sequential`): Wald's one-sided SPRT with Ville's thresholds
//! (reference/stats.md §6.2), run on each case on its own after every finished trial.
//!
//! - H₀: p ≤ t (must not pass) against H₁: p ≥ p₁ (should pass), p₁ = t + (1 − t)/2 unless
//!   `--sprt-p1` says otherwise. PASS when the log-likelihood ratio reaches ln(1/α), FAIL when
//!   it falls to ln(β/m). Ville's inequality makes both guarantees hold however often the
//!   ratio is looked at, so a case stops the moment it decides (the runner stops scheduling
//!   it) without inflating α, unlike re-computing a Wilson bound after every trial (§6.1).
//! - The gate passes only when every case passes (an intersection–union test: its false-pass
//!   rate is at most α with no correction). A FAIL uses β/m with m the cases gated (Bonferroni,
//!   valid under Ville), so the chance of any false FAIL stays at most β.
//! - Never applied to trials pooled across cases: trials of different cases are not
//!   identically distributed (§6.2, condition 1).
//! - A case undecided at `--max-trials` is inconclusive (never a silent pass or fail).
//!
//! The decision of each case is a function of its trials in the order they finished, which is
//! the order of `results.jsonl`: `toolscore report --sequential` replays that file and reaches
//! the same verdicts.

use std::collections::HashMap;

use crate::error::Error;
use crate::event::{Control, Observer, RunEvent, StopScope};
use crate::record::{TrialRecord, TrialScore};
use crate::report::{CaseVerdict, GateLevel, GateResult, Metric, SequentialInfo, Verdict};
use crate::stats::{self, SprtDecision, SprtGate};

use super::GateSpec;

/// What `--sequential` was asked for.
#[derive(Debug, Clone)]
pub struct SequentialSpec {
    pub gates: Vec<GateSpec>,
    /// One-sided confidence of a PASS: α = 1 − confidence; β = α as well.
    pub confidence: f64,
    /// The design alternative p₁ for every case, instead of t + (1 − t)/2.
    pub p1: Option<f64>,
    /// Trials a case may use before it is called inconclusive.
    pub max_trials: u32,
}

impl SequentialSpec {
    /// p₁ for a threshold: halfway from t to 1 unless given.
    fn p1_for(&self, t: f64) -> f64 {
        self.p1.unwrap_or(t + (1.0 - t) / 2.0)
    }

    /// Checks the spec before any trial, so a p₁ that cannot work is bad input.
    pub fn check(&self, case_thresholds: &[f64]) -> Result<(), String> {
        if self.gates.is_empty() {
            return Err("--sequential needs at least one --gate METRIC>=T".to_owned());
        }
        if self.gates.iter().any(|g| g.metric.rate().is_none()) {
            return Err(
                "--sequential judges rates (selection, args, schema, pass), not latency budgets"
                    .to_owned(),
            );
        }
        if let Some(p1) = self.p1 {
            let highest = self
                .gates
                .iter()
                .map(|g| g.threshold)
                .chain(case_thresholds.iter().copied())
                .fold(0.0, f64::max);
            if !(p1 > highest && p1 < 1.0) {
                return Err(format!(
                    "--sprt-p1 {p1} must lie above every threshold (the highest is {highest}) and below 1"
                ));
            }
        }
        Ok(())
    }
}

/// One (arm, case) under one gate.
#[derive(Debug, Clone, Default)]
struct CaseState {
    n: u64,
    s: u64,
    /// Decided at `n` trials: never changes after.
    decided: Option<SprtDecision>,
    /// The metric does not apply to this case (args gate on a case without arguments).
    not_applicable: bool,
}

/// Where a case is, for naming it in the verdict.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CaseKey {
    provider: String,
    variant: String,
    dataset: String,
    case_id: String,
}

/// The observer that runs the SPRT of every (arm, case, gate) and stops a case once every
/// gate on it has decided.
pub struct SequentialGate {
    spec: SequentialSpec,
    /// Cases gated per arm (for β/m).
    cases_per_arm: usize,
    /// dataset/case → the fixture's own bar.
    case_gates: HashMap<(String, String), f64>,
    states: HashMap<CaseKey, Vec<CaseState>>,
    /// First-seen order of the keys, so verdicts list in run order.
    order: Vec<CaseKey>,
    arms: Vec<crate::record::ArmId>,
}

fn metric_value(score: &TrialScore, metric: Metric) -> Option<bool> {
    match metric {
        Metric::Selection => Some(score.selection_ok),
        Metric::ArgsExact => score.args_ok,
        Metric::SchemaValid => score.schema_ok,
        Metric::Pass => Some(score.passed),
    }
}

impl SequentialGate {
    pub fn new(
        spec: SequentialSpec,
        cases_per_arm: usize,
        case_gates: HashMap<(String, String), f64>,
    ) -> Self {
        SequentialGate {
            spec,
            cases_per_arm: cases_per_arm.max(1),
            case_gates,
            states: HashMap::new(),
            order: Vec::new(),
            arms: Vec::new(),
        }
    }

    fn threshold(&self, dataset: &str, case: &str, gate: &GateSpec) -> f64 {
        self.case_gates
            .get(&(dataset.to_owned(), case.to_owned()))
            .copied()
            .unwrap_or(gate.threshold)
    }

    fn sprt(&self, t: f64) -> Option<SprtGate> {
        let alpha = 1.0 - self.spec.confidence;
        SprtGate::new(
            t,
            self.spec.p1_for(t),
            alpha,
            alpha / self.cases_per_arm as f64,
        )
    }

    /// Feeds one finished trial; true when every gate on its case has decided.
    pub fn push(&mut self, record: &TrialRecord) -> bool {
        let key = CaseKey {
            provider: record.arm.provider.clone(),
            variant: record.arm.variant.clone(),
            dataset: record.dataset.clone(),
            case_id: record.case_id.clone(),
        };
        if !self.arms.contains(&record.arm) {
            self.arms.push(record.arm.clone());
        }
        let gates = self.spec.gates.clone();
        let thresholds: Vec<f64> = gates
            .iter()
            .map(|g| self.threshold(&record.dataset, &record.case_id, g))
            .collect();
        let sprts: Vec<Option<SprtGate>> = thresholds.iter().map(|&t| self.sprt(t)).collect();
        if !self.states.contains_key(&key) {
            self.order.push(key.clone());
        }
        let states = self
            .states
            .entry(key)
            .or_insert_with(|| vec![CaseState::default(); gates.len()]);
        // An infrastructure error measured nothing: it moves no test.
        let Some(score) = &record.score else {
            return false;
        };
        for ((state, gate), sprt) in states.iter_mut().zip(&gates).zip(&sprts) {
            if state.decided.is_some() {
                continue;
            }
            let Some(metric) = gate.metric.rate() else {
                continue;
            };
            let value = metric_value(score, metric);
            if metric == Metric::ArgsExact && value.is_none() {
                state.not_applicable = true;
                continue;
            }
            let Some(ok) = value else { continue };
            state.n += 1;
            state.s += u64::from(ok);
            if let Some(sprt) = sprt {
                match sprt.decide(state.s, state.n) {
                    Some(SprtDecision::Continue) | None => {}
                    d => state.decided = d,
                }
            }
        }
        states
            .iter()
            .all(|s| s.decided.is_some() || s.not_applicable)
    }

    /// The verdict of every gate on every arm, as data.
    pub fn results(&self) -> Vec<GateResult> {
        let mut out = Vec::new();
        for arm in &self.arms {
            for (g, gate) in self.spec.gates.iter().enumerate() {
                out.push(self.gate_result(arm, g, gate));
            }
        }
        out
    }

    /// One gate on one arm: each case's verdict, and the gate's, with its sequential design.
    fn gate_result(&self, arm: &crate::record::ArmId, g: usize, gate: &GateSpec) -> GateResult {
        let alpha = 1.0 - self.spec.confidence;
        let beta_case = alpha / self.cases_per_arm as f64;
        let mut cases = Vec::new();
        let mut used = 0u64;
        let mut fixed_total = 0u64;
        for key in self
            .order
            .iter()
            .filter(|k| k.provider == arm.provider && k.variant == arm.variant)
        {
            let state = &self.states[key][g];
            if state.not_applicable || state.n == 0 {
                continue;
            }
            let t = self.threshold(&key.dataset, &key.case_id, gate);
            let p1 = self.spec.p1_for(t);
            used += state.n;
            fixed_total +=
                stats::gate_sample_size(t, p1, self.spec.confidence, 1.0 - beta_case, 1_000_000)
                    .map_or(0, |s| s.first);
            cases.push(self.case_verdict(key, state, t));
        }
        let passed = cases.iter().filter(|c| c.verdict == Verdict::Pass).count();
        let failed = cases.iter().filter(|c| c.verdict == Verdict::Fail).count();
        let inconclusive = cases.len() - passed - failed;
        let verdict = if cases.is_empty() {
            Verdict::Inconclusive
        } else if failed > 0 {
            Verdict::Fail
        } else if inconclusive > 0 {
            Verdict::Inconclusive
        } else {
            Verdict::Pass
        };
        let sprt = self.sprt(gate.threshold);
        let not_passed = super::worst_first(&cases);
        GateResult {
                metric: gate.metric,
                threshold: gate.threshold,
                level: GateLevel::Case,
                arm: arm.clone(),
                verdict,
                method: format!(
                    "sequential: one-sided SPRT per case with Ville thresholds (anytime-valid), alpha {alpha:.3} to pass, beta {beta_case:.4} per case to fail (Bonferroni over {} cases); every case must pass",
                    self.cases_per_arm
                ),
                estimate: None,
                lower: None,
                upper: None,
                cases: cases.len(),
                passed_cases: passed,
                failed_cases: failed,
                inconclusive_cases: inconclusive,
                not_passed,
                hint: (inconclusive > 0).then(|| {
                    format!(
                        "{inconclusive} case(s) undecided after at most {} trials; a larger --max-trials lets them decide",
                        self.spec.max_trials
                    )
                }),
                tools: Vec::new(),
                trials: None,
                sequential: Some(SequentialInfo {
                    p1: self.spec.p1_for(gate.threshold),
                    alpha,
                    beta_per_case: beta_case,
                    max_trials: self.spec.max_trials,
                    trials_used: used,
                    fixed_design_trials: fixed_total,
                    pass_boundary: sprt.map(|s| (s.slope(), s.intercept())),
                }),
            }
    }

    /// A case's verdict as the SPRT decided it, with its Wilson bounds and, undecided, the
    /// fewest further trials that could decide it.
    fn case_verdict(&self, key: &CaseKey, state: &CaseState, t: f64) -> CaseVerdict {
        let verdict = match state.decided {
            Some(SprtDecision::Pass) => Verdict::Pass,
            Some(SprtDecision::Fail) => Verdict::Fail,
            _ => Verdict::Inconclusive,
        };
        let more_trials = (verdict == Verdict::Inconclusive)
            .then(|| self.sprt(t))
            .flatten()
            .map(|sprt| fewest_to_decide(&sprt, state));
        CaseVerdict {
            dataset: key.dataset.clone(),
            case_id: key.case_id.clone(),
            x: state.s,
            n: state.n,
            lower: stats::wilson_lower_bound(state.s, state.n, self.spec.confidence).unwrap_or(0.0),
            upper: stats::wilson_upper_bound(state.s, state.n, self.spec.confidence).unwrap_or(1.0),
            threshold: t,
            verdict,
            more_trials,
        }
    }
}

/// The fewest further trials that could still decide: all passes to the PASS boundary, or
/// all failures to the FAIL boundary (searched up to 100,000).
fn fewest_to_decide(sprt: &stats::SprtGate, state: &CaseState) -> u64 {
    let mut extra = 1u64;
    loop {
        let n = state.n + extra;
        if sprt.decide(state.s + extra, n) == Some(SprtDecision::Pass)
            || sprt.decide(state.s, n) == Some(SprtDecision::Fail)
            || extra >= 100_000
        {
            return extra;
        }
        extra += 1;
    }
}

impl Observer for SequentialGate {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<Control, Error> {
        if let RunEvent::Trial { key, record, .. } = event
            && self.push(record)
        {
            return Ok(Control::Stop(StopScope::Case {
                arm: key.arm,
                case: key.case,
            }));
        }
        Ok(Control::Continue)
    }
}
