//! The sequential gates (`--sequential`). At the case level, an anytime-valid test
//! (reference/stats.md §6) run on each case on its own after every finished trial, below; at
//! the suite level, this suite's rate judged round by round (`sequential_suite`), behind the
//! same observer.
//!
//! - PASS means the rate is above t (false-pass chance ≤ α); FAIL means it is below p₁
//!   (false-fail chance ≤ β/m when p ≥ p₁), p₁ = t + (1 − t)/2 unless `--sprt-p1` says
//!   otherwise.
//! - The test is the mixture SPRT (`stats::MixtureGate`), which needs no guess of the true
//!   rate, unless `--sprt-p1` is given: then Wald's SPRT with p₁ as its alternative
//!   (`stats::SprtGate`). Ville's inequality makes both guarantees hold however often the
//!   evidence is looked at, so a case stops the moment it decides (the runner stops
//!   scheduling it) without inflating α, unlike re-computing a Wilson bound after every
//!   trial (§6.1).
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
use crate::record::TrialRecord;
use crate::report::{CaseVerdict, GateLevel, GateResult, Metric, SequentialInfo, Verdict};
use crate::stats::{self, Boundaries, SequentialDecision, SequentialKind, SequentialTest};

use super::GateSpec;
use super::sequential_suite::SuiteRounds;

/// What `--sequential` was asked for.
#[derive(Debug, Clone)]
pub struct SequentialSpec {
    pub gates: Vec<GateSpec>,
    /// One-sided confidence of a PASS: α = 1 − confidence; β = α as well.
    pub confidence: f64,
    /// The test every case runs.
    pub kind: SequentialKind,
    /// The rate whose false FAIL is bounded by β, for every case, instead of t + (1 − t)/2
    /// (for the SPRT also its alternative).
    pub p1: Option<f64>,
    /// Trials a case may use before it is called inconclusive.
    pub max_trials: u32,
    /// Case (each case on its own) or suite (the arm's rate over this suite's cases).
    pub level: GateLevel,
}

impl SequentialSpec {
    /// p₁ for a threshold: halfway from t to 1 unless given.
    fn p1_for(&self, t: f64) -> f64 {
        self.p1.unwrap_or(t + (1.0 - t) / 2.0)
    }

    /// The spec of `--sequential [--sprt-p1 P1]`: the SPRT when p₁ is given, else the
    /// mixture.
    pub fn from_flags(
        gates: Vec<GateSpec>,
        confidence: f64,
        p1: Option<f64>,
        max_trials: u32,
    ) -> Self {
        SequentialSpec {
            gates,
            confidence,
            kind: kind_for(p1),
            p1,
            max_trials,
            level: GateLevel::Case,
        }
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
        match self.level {
            GateLevel::Case => {}
            GateLevel::Suite => {
                if let Some(why) = SuiteRounds::refusal(&self.gates) {
                    return Err(why);
                }
                if self.p1.is_some() {
                    return Err(
                        "--sprt-p1 sets the case gates' SPRT; the sequential suite gate needs no alternative"
                            .to_owned(),
                    );
                }
            }
            GateLevel::Tool | GateLevel::Baseline => {
                return Err(
                    "--sequential judges each case (--gate-level case) or this suite's rate (--gate-level suite); a tool's rate pools cases in ways a round cannot fix in advance"
                        .to_owned(),
                );
            }
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
    decided: Option<SequentialDecision>,
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
    /// `--gate-level suite`: the rounds of every (arm, gate); the case states stay empty.
    suite: Option<SuiteRounds>,
}

impl SequentialGate {
    pub fn new(
        spec: SequentialSpec,
        cases_per_arm: usize,
        case_gates: HashMap<(String, String), f64>,
    ) -> Self {
        let suite = (spec.level == GateLevel::Suite)
            .then(|| {
                SuiteRounds::new(
                    spec.gates.clone(),
                    spec.confidence,
                    cases_per_arm,
                    spec.max_trials,
                )
            })
            .flatten();
        SequentialGate {
            suite,
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

    fn test(&self, t: f64) -> Option<SequentialTest> {
        let alpha = 1.0 - self.spec.confidence;
        SequentialTest::new(
            self.spec.kind,
            t,
            self.spec.p1_for(t),
            alpha,
            alpha / self.cases_per_arm as f64,
        )
    }

    /// Feeds one finished trial; true when every gate on its case (at the suite level: on its
    /// arm) has decided.
    pub fn push(&mut self, record: &TrialRecord) -> bool {
        if let Some(suite) = &mut self.suite {
            return suite.push(record);
        }
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
        let tests: Vec<Option<SequentialTest>> = thresholds.iter().map(|&t| self.test(t)).collect();
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
        for ((state, gate), test) in states.iter_mut().zip(&gates).zip(&tests) {
            if state.decided.is_some() {
                continue;
            }
            let Some(metric) = gate.metric.rate() else {
                continue;
            };
            let value = metric.of(score);
            if metric == Metric::ArgsExact && value.is_none() {
                state.not_applicable = true;
                continue;
            }
            let Some(ok) = value else { continue };
            state.n += 1;
            state.s += u64::from(ok);
            if let Some(test) = test {
                match test.decide(state.s, state.n) {
                    Some(SequentialDecision::Continue) | None => {}
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
        if let Some(suite) = &self.suite {
            return suite.results();
        }
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
        let not_passed = super::worst_first(&cases);
        GateResult {
            metric: gate.metric,
            threshold: gate.threshold,
            level: GateLevel::Case,
            arm: arm.clone(),
            verdict,
            method: self.method(alpha, beta_case),
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
            sequential: Some(self.design(gate.threshold, used, fixed_total)),
        }
    }

    /// The gate's method line.
    fn method(&self, alpha: f64, beta_case: f64) -> String {
        let test = match self.spec.kind {
            SequentialKind::Sprt => "one-sided SPRT per case with Ville thresholds (anytime-valid)",
            // The case gates run the mixture unless --sprt-p1 names the SPRT.
            SequentialKind::Mixture | SequentialKind::Betting => {
                "mixture SPRT per case (anytime-valid, no guess of the true rate)"
            }
        };
        format!(
            "sequential: {test}, alpha {alpha:.3} to pass, beta {beta_case:.4} per case to fail (Bonferroni over {} cases); every case must pass",
            self.cases_per_arm
        )
    }

    /// The test's design at the gate's threshold and what the gated cases spent.
    fn design(&self, t: f64, trials_used: u64, fixed_design_trials: u64) -> SequentialInfo {
        let alpha = 1.0 - self.spec.confidence;
        let test = self.test(t);
        SequentialInfo {
            test: self.spec.kind,
            p1: self.spec.p1_for(t),
            alpha,
            beta_per_case: alpha / self.cases_per_arm as f64,
            max_trials: self.spec.max_trials,
            trials_used,
            fixed_design_trials,
            pass_boundary: match &test {
                Some(SequentialTest::Sprt(s)) => Some((s.slope(), s.intercept())),
                _ => None,
            },
            pass_at: match &test {
                Some(t @ SequentialTest::Mixture(_)) => pass_table(t, self.spec.max_trials),
                _ => Vec::new(),
            },
            rounds: None,
        }
    }

    /// A case's verdict as its test decided it, with its Wilson bounds and, undecided, the
    /// fewest further trials that could decide it.
    fn case_verdict(&self, key: &CaseKey, state: &CaseState, t: f64) -> CaseVerdict {
        let verdict = match state.decided {
            Some(SequentialDecision::Pass) => Verdict::Pass,
            Some(SequentialDecision::Fail) => Verdict::Fail,
            _ => Verdict::Inconclusive,
        };
        let more_trials = (verdict == Verdict::Inconclusive)
            .then(|| self.test(t))
            .flatten()
            .map(|test| {
                test.fewest_to_decide(state.s, state.n, FEWEST_TO_DECIDE_LIMIT)
                    .unwrap_or(FEWEST_TO_DECIDE_LIMIT)
            });
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

/// The test `--sequential` runs: the SPRT when `--sprt-p1` gives its alternative, else the
/// mixture, which needs none.
pub fn kind_for(sprt_p1: Option<f64>) -> SequentialKind {
    if sprt_p1.is_some() {
        SequentialKind::Sprt
    } else {
        SequentialKind::Mixture
    }
}

/// How far `fewest_to_decide` looks for an undecided case's next possible decision.
const FEWEST_TO_DECIDE_LIMIT: u64 = 100_000;

/// Where the mixture's PASS boundary lies at a few trial counts up to `max_trials`, for the
/// report to print (it is no straight line): `(n, fewest passes that PASS)`.
fn pass_table(test: &SequentialTest, max_trials: u32) -> Vec<(u64, u64)> {
    [25u64, 50, 100, 200, 500, 1000]
        .into_iter()
        .filter(|&n| n <= u64::from(max_trials))
        .filter_map(|n| test.pass_boundary(n).map(|s| (n, s)))
        .collect()
}

impl Observer for SequentialGate {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<Control, Error> {
        if let RunEvent::Trial { key, record, .. } = event
            && self.push(record)
        {
            return Ok(Control::Stop(match self.spec.level {
                GateLevel::Suite => StopScope::Arm(key.arm),
                _ => StopScope::Case {
                    arm: key.arm,
                    case: key.case,
                },
            }));
        }
        Ok(Control::Continue)
    }
}
