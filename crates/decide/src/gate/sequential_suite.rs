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
//! - Scenarios are not cases of a fixture rate's suite; their trials are ignored. An attack
//!   gate's cases are the (scenario × attack) units (the attacked scenarios' clean units, for
//!   `utility`): a round is trial r of every unit, and a ceiling (`attack_success <= t`) is
//!   judged as the floor on its complement and told back mirrored, as at the case level.

use std::collections::HashMap;

use toolscore_core::metric::Metric;
use toolscore_core::{ArmId, SCENARIO_DATASET, TrialRecord};
use toolscore_stats::{PairCounts, PairedBetting, PairedDecision, SequentialKind};
use toolscore_summary::{GateLevel, GateResult, SequentialInfo, Verdict};

use super::super::rounds::Rounds;
use super::GateSpec;
use super::sequential::{AttackedUnits, GateOutcome, floor_of};

/// One gate on one arm: its rounds and what they decided.
struct SuiteState {
    rounds: Rounds,
    skipped_rounds: u64,
    /// Passes as `b_only`, failures as `a_only` (x ↦ 2x − 1).
    counts: PairCounts,
    decided: Option<Verdict>,
}

/// One arm: each gate's cases' indices in first-seen order, and each gate's state.
struct ArmRounds {
    arm: ArmId,
    index: Vec<HashMap<(String, String), usize>>,
    states: Vec<SuiteState>,
}

/// Every (arm, gate) of a sequential suite gate.
pub(super) struct SuiteRounds {
    gates: Vec<GateSpec>,
    test: PairedBetting,
    /// The fixture cases per arm.
    fixture_cases: usize,
    /// An attacked run's units, the cases of its attack gates.
    attacked: AttackedUnits,
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
            fixture_cases: cases,
            attacked: AttackedUnits::default(),
            max_rounds,
            arms: Vec::new(),
        })
    }

    /// The rounds with an attacked run's units, which its attack gates judge.
    pub(super) fn with_attacked(self, attacked: AttackedUnits) -> Self {
        SuiteRounds { attacked, ..self }
    }

    /// The cases `gate` judges per arm, so the trials of one round.
    fn cases(&self, gate: &GateSpec) -> usize {
        self.attacked.gated(gate, self.fixture_cases)
    }

    /// Why a gate cannot be judged this way, checked before any trial.
    pub(super) fn refusal(gates: &[GateSpec]) -> Option<String> {
        gates
            .iter()
            .find(|g| {
                g.metric.attack().is_none()
                    && !matches!(g.metric.rate(), Some(Metric::Selection | Metric::Pass))
            })
            .map(|g| {
                format!(
                    "--gate-level suite --sequential judges selection and pass, which every trial has, and an attacked run's rates; {} does not apply to every trial, so its rounds are not fixed in advance (use --gate-level case)",
                    g.metric.label()
                )
            })
    }

    /// Feeds one finished trial; true when every gate on its arm has decided.
    pub(super) fn push(&mut self, record: &TrialRecord) -> bool {
        let arm = match self.arms.iter().position(|a| a.arm == record.arm) {
            Some(i) => i,
            None => {
                let states = self
                    .gates
                    .iter()
                    .map(|g| SuiteState {
                        rounds: Rounds::new(self.cases(g), 1, self.max_rounds),
                        skipped_rounds: 0,
                        counts: PairCounts::default(),
                        decided: None,
                    })
                    .collect();
                self.arms.push(ArmRounds {
                    arm: record.arm.clone(),
                    index: vec![HashMap::new(); self.gates.len()],
                    states,
                });
                self.arms.len() - 1
            }
        };
        let cases: Vec<usize> = self.gates.iter().map(|g| self.cases(g)).collect();
        let ArmRounds { index, states, .. } = &mut self.arms[arm];
        for (g, (state, gate)) in states.iter_mut().zip(&self.gates).enumerate() {
            if state.decided.is_some() {
                continue;
            }
            let outcome = match self.attacked.outcome(gate, record) {
                GateOutcome::NotApplicable => continue,
                // A fixture rate's suite is its fixture cases; scenarios are not among them.
                _ if gate.metric.attack().is_none() && record.dataset == SCENARIO_DATASET => {
                    continue;
                }
                GateOutcome::Unscored => None,
                GateOutcome::Scored(ok) => Some(ok),
            };
            let key = (record.dataset.clone(), record.case_id.clone());
            let next = index[g].len();
            let case = *index[g].entry(key).or_insert(next);
            if case >= cases[g] {
                continue;
            }
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
                state.decided = decide(&self.test, state.counts, floor_of(gate));
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
                let estimate = (n > 0).then(|| state.counts.b_only as f64 / n as f64);
                // A ceiling was judged as the floor on its complement: told back mirrored.
                let ceiling = gate.metric.ceiling();
                let (estimate, lower, upper) = if ceiling {
                    (estimate.map(|e| 1.0 - e), 1.0 - upper, 1.0 - lower)
                } else {
                    (estimate, lower, upper)
                };
                let rounds = state.rounds.taken();
                let cases = self.cases(gate);
                let (what, population) = match gate.metric.attack() {
                    None => ("cases", "cases"),
                    Some(toolscore_core::metric::AttackMetric::Utility) => {
                        ("attacked scenarios' clean units", "scenarios")
                    }
                    Some(_) => ("(scenario × attack) units", "attacks"),
                };
                out.push(GateResult {
                    metric: gate.metric,
                    threshold: gate.threshold,
                    level: GateLevel::Suite,
                    arm: arm.clone(),
                    verdict: state.decided.unwrap_or(Verdict::Inconclusive),
                    method: format!(
                        "sequential: betting confidence sequence over rounds of every case (anytime-valid), alpha {alpha:.3} each way; about these {cases} {what}, not a population of {population}"
                    ),
                    estimate,
                    lower: Some(lower),
                    upper: Some(upper),
                    cases,
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
                        ceiling,
                        test: SequentialKind::Betting,
                        p1: floor_of(gate),
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

/// What a sequential suite gate does when every one of its cases is right with the same
/// probability: the design `cargo bench --bench cost_to_decision` measures (`BENCH_PART=suite`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SuiteCharacteristics {
    /// Rounds used, a run undecided at the cap counting the cap.
    pub expected_rounds: f64,
    pub pass: f64,
    pub fail: f64,
    pub undecided: f64,
}

/// The gate's exact operating characteristics for `cases` cases each right with probability
/// `p`, bar `t`, at most `max_rounds` rounds: a dynamic program over the passes after each
/// round (a round's passes are Binomial(cases, p)), judged at every round boundary by the same
/// rule as the gate, so no simulation error. `None` when α or p is not in (0, 1).
pub fn exact_characteristics(
    cases: u64,
    p: f64,
    t: f64,
    confidence: f64,
    max_rounds: u32,
) -> Option<SuiteCharacteristics> {
    let test = PairedBetting::new(1.0 - confidence)?;
    if !(p > 0.0 && p < 1.0) || cases == 0 {
        return None;
    }
    let round: Vec<f64> = (0..=cases)
        .map(|k| toolscore_stats::binomial_pmf(k, cases, p))
        .collect::<Option<_>>()?;
    // alive[s]: the chance of s passes so far with no verdict yet.
    let mut alive = vec![1.0];
    let (mut pass, mut fail, mut expected_rounds) = (0.0, 0.0, 0.0);
    for r in 1..=u64::from(max_rounds) {
        let mut next = vec![0.0; alive.len() + cases as usize];
        for (s, &mass) in alive.iter().enumerate() {
            for (k, &q) in round.iter().enumerate() {
                next[s + k] += mass * q;
            }
        }
        let n = r * cases;
        for (s, mass) in next.iter_mut().enumerate() {
            let counts = PairCounts {
                b_only: s as u64,
                a_only: n - s as u64,
                same: 0,
            };
            match decide(&test, counts, t) {
                Some(Verdict::Pass) => pass += *mass,
                Some(Verdict::Fail) => fail += *mass,
                _ => continue,
            }
            expected_rounds += r as f64 * *mass;
            *mass = 0.0;
        }
        alive = next;
    }
    let undecided: f64 = alive.iter().sum();
    Some(SuiteCharacteristics {
        expected_rounds: expected_rounds + undecided * f64::from(max_rounds),
        pass,
        fail,
        undecided,
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The same rule simulated: `runs` suites of `cases` cases at rate p, judged every round.
    fn simulated(cases: u64, p: f64, t: f64, max_rounds: u32, runs: u32) -> SuiteCharacteristics {
        let test = PairedBetting::new(0.05).unwrap();
        let mut rng = toolscore_stats::SeededUniform::new(7);
        let (mut pass, mut fail, mut rounds) = (0.0, 0.0, 0.0);
        for _ in 0..runs {
            let mut counts = PairCounts::default();
            let mut verdict = None;
            let mut used = max_rounds;
            for r in 1..=max_rounds {
                for _ in 0..cases {
                    let ok = rng.unit() < p;
                    counts.add(!ok, ok);
                }
                verdict = decide(&test, counts, t);
                if verdict.is_some() {
                    used = r;
                    break;
                }
            }
            rounds += f64::from(used);
            match verdict {
                Some(Verdict::Pass) => pass += 1.0,
                Some(Verdict::Fail) => fail += 1.0,
                _ => {}
            }
        }
        let n = f64::from(runs);
        SuiteCharacteristics {
            expected_rounds: rounds / n,
            pass: pass / n,
            fail: fail / n,
            undecided: 1.0 - (pass + fail) / n,
        }
    }

    #[test]
    fn the_exact_characteristics_agree_with_the_rule_simulated_and_keep_alpha_at_the_bar() {
        for p in [0.8, 0.83, 0.87] {
            let exact = exact_characteristics(10, p, 0.8, 0.95, 100).unwrap();
            assert!(
                (exact.pass + exact.fail + exact.undecided - 1.0).abs() < 1e-9,
                "{exact:?}"
            );
            let sim = simulated(10, p, 0.8, 100, 4000);
            // Four Monte Carlo standard errors (rounds' sd is at most the cap's half).
            let share_se = |q: f64| 4.0 * (q * (1.0 - q) / 4000.0).sqrt() + 1e-3;
            assert!(
                (sim.pass - exact.pass).abs() <= share_se(exact.pass),
                "{p}: {sim:?} {exact:?}"
            );
            assert!(
                (sim.fail - exact.fail).abs() <= share_se(exact.fail),
                "{p}: {sim:?} {exact:?}"
            );
            assert!(
                (sim.expected_rounds - exact.expected_rounds).abs() <= 4.0 * 50.0 / 4000f64.sqrt(),
                "{p}: {sim:?} {exact:?}"
            );
        }
        let at_bar = exact_characteristics(10, 0.8, 0.8, 0.95, 100).unwrap();
        assert!(at_bar.pass <= 0.05, "{at_bar:?}");
    }
}
