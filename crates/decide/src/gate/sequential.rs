//! The sequential gates (`--sequential`). At the case level, an anytime-valid test
//! (reference/stats.md §6) run on each case on its own after every finished trial, below; at
//! the suite level, this suite's rate judged round by round (`sequential_suite`), behind the
//! same observer.
//!
//! What a case gate guarantees, with m the cases gated per arm, α = 1 − confidence and β = α:
//!
//! - **PASS** means the rate is above t: `P(PASS | p ≤ t) ≤ α` for each case. The PASS side is
//!   the mixture SPRT (`stats::MixtureGate`), which needs no guess of the true rate, or with
//!   `--sprt-p1 P1` Wald's SPRT with p₁ as its alternative (`stats::SprtGate`). The gate
//!   passes only when every case passes (an intersection–union test), so its false-pass rate
//!   is at most α with no correction.
//! - **FAIL** means the bar is ruled out, as in the fixed-n gate: `P(FAIL | p ≥ t) ≤ β/m` for
//!   each case, so the chance that any case clearing its bar is failed is at most β
//!   (Bonferroni over the m cases). The FAIL side is `stats::BelowMixture`, a mixture of
//!   likelihood ratios of four alternatives below t; a case FAILs exactly when its
//!   anytime-valid upper confidence bound (level 1 − β/m) is below t.
//! - **`--fail-below P1`**, asked for by name, puts back the indifference-zone FAIL: the SPRT
//!   of t against p₁, with `P(FAIL | p ≥ p₁) ≤ β/m` and no promise between t and p₁ (with
//!   t = 0.8, p₁ = 0.9, 4 cases and 200 trials it fails a case at 0.83 58% of the time, one at
//!   0.87 11%). Its cases and its gate say `BELOW P1`, never FAIL, and the exit code is still
//!   1, since the user asked for a case below p₁ to stop the gate.
//! - Each guarantee holds at every n at once (Ville's inequality on a test supermartingale),
//!   however often the evidence is looked at, so a case stops the moment it decides (the
//!   runner stops scheduling it) without inflating either rate, unlike re-computing a Wilson
//!   bound after every trial (§6.1); and it holds whatever the trial budget, since stopping at
//!   the budget only leaves cases undecided.
//! - The bounds printed beside a case are the anytime-valid bounds the decision used (lower
//!   at 1 − α from the PASS evidence, upper at 1 − β/m from the FAIL evidence, the same
//!   evidence with the bar moved), so a PASS line's lower bound is at or above t, a FAIL
//!   line's upper bound below t, and a BELOW line's upper bound below p₁.
//! - A case undecided at its trial budget (`--max-trials`, or its fixture's own `"trials"`) is
//!   inconclusive, never a silent pass or fail. A case is stopped as soon as neither boundary
//!   is reachable within that budget (curtailment): it would end inconclusive whatever its
//!   remaining trials said, so no verdict's probability changes, only trials are saved.
//! - Never applied to trials pooled across cases: trials of different cases are not
//!   identically distributed (§6.2, condition 1).
//!
//! The decision of each case is a function of its trials in the order they finished, which is
//! the order of `results.jsonl`: `toolscore report --sequential` replays that file and reaches
//! the same verdicts.

use std::collections::HashMap;
use toolscore_stats as stats;

use toolscore_core::Error;
use toolscore_core::metric::{AttackMetric, Metric};
use toolscore_core::{Control, Observer, RunEvent, StopScope};
use toolscore_core::{SCENARIO_DATASET, TrialRecord};
use toolscore_stats::{
    self, Boundaries, PassSide, SequentialDecision, SequentialKind, SequentialTest,
};
use toolscore_summary::{CaseVerdict, GateLevel, GateResult, SequentialInfo, Verdict};

use super::GateSpec;
use super::sequential_suite::SuiteRounds;

/// What `--sequential` was asked for.
#[derive(Debug, Clone)]
pub struct SequentialSpec {
    pub gates: Vec<GateSpec>,
    /// One-sided confidence of a PASS: α = 1 − confidence; β = α as well.
    pub confidence: f64,
    /// The PASS side every case runs.
    pub kind: SequentialKind,
    /// The SPRT's alternative (`--sprt-p1`), for every case, instead of t + (1 − t)/2.
    pub p1: Option<f64>,
    /// `--fail-below P1`: FAIL by the indifference-zone SPRT of t against this rate instead
    /// of by the anytime-valid test that the rate is below t.
    pub fail_below: Option<f64>,
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

    /// The spec of `--sequential [--sprt-p1 P1] [--fail-below P1]`: the SPRT's PASS side
    /// when p₁ is given, else the mixture's; the indifference-zone FAIL when `--fail-below`
    /// names its rate, else the FAIL that rules out the bar.
    pub fn from_flags(
        gates: Vec<GateSpec>,
        confidence: f64,
        p1: Option<f64>,
        fail_below: Option<f64>,
        max_trials: u32,
    ) -> Self {
        SequentialSpec {
            gates,
            confidence,
            kind: kind_for(p1),
            p1,
            fail_below,
            max_trials,
            level: GateLevel::Case,
        }
    }

    /// Checks the spec before any trial, so a p₁ that cannot work is bad input.
    pub fn check(&self, case_thresholds: &[f64]) -> Result<(), String> {
        if self.gates.is_empty() {
            return Err("--sequential needs at least one --gate METRIC>=T".to_owned());
        }
        if self.gates.iter().any(|g| g.metric.quantile().is_some()) {
            return Err(
                "--sequential judges rates (selection, args, schema, pass), not latency budgets"
                    .to_owned(),
            );
        }
        if let Some(g) = self.gates.iter().find(|g| g.metric.attack().is_some()) {
            if !matches!(self.level, GateLevel::Case | GateLevel::Suite) {
                return Err(format!(
                    "--sequential judges {} on each (scenario × attack) unit (--gate-level case) or over all of them (--gate-level suite)",
                    g.metric.label()
                ));
            }
            if self.p1.is_some() || self.fail_below.is_some() {
                return Err(format!(
                    "--sprt-p1 and --fail-below set the case gates' alternatives on fixture rates; the sequential {} gate runs the mixture, which needs none",
                    g.metric.label()
                ));
            }
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
                if self.fail_below.is_some() {
                    return Err(
                        "--fail-below sets the case gates' indifference-zone FAIL; the sequential suite gate fails only when its bound rules out the bar"
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
        let highest = self
            .gates
            .iter()
            .map(|g| g.threshold)
            .chain(case_thresholds.iter().copied())
            .fold(0.0, f64::max);
        if let Some(p1) = self.p1
            && !(p1 > highest && p1 < 1.0)
        {
            return Err(format!(
                "--sprt-p1 {p1} must lie above every threshold (the highest is {highest}) and below 1"
            ));
        }
        if let Some(rate) = self.fail_below
            && !(rate > highest && rate < 1.0)
        {
            return Err(format!(
                "--fail-below {rate} must lie above every threshold (the highest is {highest}) and below 1: it names the indifference zone between the bar and that rate; without it a case FAILs only when its upper bound is below the bar"
            ));
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
    /// Stopped undecided at `n` trials: no decision was reachable within the case's budget.
    curtailed: bool,
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
    /// dataset/case → the trials it may use, where not `spec.max_trials`.
    case_caps: HashMap<(String, String), u32>,
    states: HashMap<CaseKey, Vec<CaseState>>,
    /// First-seen order of the keys, so verdicts list in run order.
    order: Vec<CaseKey>,
    arms: Vec<toolscore_core::ArmId>,
    /// `--gate-level suite`: the rounds of every (arm, gate); the case states stay empty.
    suite: Option<SuiteRounds>,
    /// Where the cases' trial budgets come from, for saying what would let an undecided case
    /// decide.
    budget: TrialBudget,
    /// An attacked run's units, which the attack gates judge as their cases.
    attacked: AttackedUnits,
}

/// What an attack gate judges (`run --attacks`): its Bonferroni m is the units it gates, not
/// the fixture cases.
#[derive(Debug, Clone, Default)]
pub struct AttackedUnits {
    /// The (scenario × attack) units per arm: `attack_success` and `utility_under_attack`.
    pub units: usize,
    /// The attacked scenarios, whose clean units `utility` judges.
    pub scenarios: std::collections::HashSet<String>,
}

impl AttackedUnits {
    /// The cases `gate` judges per arm: the fixture cases (`fixture_cases`), the attacked
    /// units, or the attacked scenarios.
    pub(super) fn gated(&self, gate: &GateSpec, fixture_cases: usize) -> usize {
        match gate.metric.attack() {
            None => fixture_cases,
            Some(AttackMetric::Utility) => self.scenarios.len(),
            Some(AttackMetric::AttackSuccess | AttackMetric::UtilityUnderAttack) => self.units,
        }
    }

    /// What `record` says to `gate`: the one reading of a trial for the case and the suite
    /// gates alike.
    pub(super) fn outcome(&self, gate: &GateSpec, record: &TrialRecord) -> GateOutcome {
        if let Some(metric) = gate.metric.attack() {
            let applies = match metric {
                AttackMetric::AttackSuccess | AttackMetric::UtilityUnderAttack => {
                    record.attack.is_some()
                }
                AttackMetric::Utility => {
                    record.attack.is_none()
                        && record.dataset == SCENARIO_DATASET
                        && self.scenarios.contains(&record.case_id)
                }
            };
            if !applies {
                return GateOutcome::NotApplicable;
            }
            return match metric.of(record) {
                Some(happened) => GateOutcome::Scored(happened != metric.lower_is_better()),
                None => GateOutcome::Unscored,
            };
        }
        // Attacked units are judged by the attack gates only (summaries keep them apart).
        if record.attack.is_some() {
            return GateOutcome::NotApplicable;
        }
        let (Some(score), Some(metric)) = (&record.score, gate.metric.rate()) else {
            return GateOutcome::Unscored;
        };
        match metric.of(score) {
            Some(ok) => GateOutcome::Scored(ok),
            None if metric == Metric::ArgsExact => GateOutcome::NotApplicable,
            None => GateOutcome::Unscored,
        }
    }
}

/// What one trial says to one gate.
pub(super) enum GateOutcome {
    /// The gate does not judge this case (an attacked unit under a fixture rate, a clean case
    /// under `attack_success`, a case without arguments under `args`).
    NotApplicable,
    /// An infrastructure error or a budget stop: it moves no test.
    Unscored,
    /// Whether the trial counts as a success of the test's floor (for a ceiling such as
    /// `attack_success`, that the goal did not happen).
    Scored(bool),
}

/// What caps the trials of a case, and so what a user changes to let an undecided case decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TrialBudget {
    /// `--max-trials` (or the fixtures' own `"trials"`).
    #[default]
    Flags,
    /// A replay: each case runs up to the trials its recording holds, whatever `--max-trials`
    /// says.
    Recording,
}

impl TrialBudget {
    /// What lets a test judged over rounds decide when its rounds ran out: `undecided after 10
    /// of 10 rounds; {remedy}`.
    pub(crate) fn rounds_remedy(self) -> &'static str {
        match self {
            TrialBudget::Flags => "a larger --max-trials lets it decide",
            TrialBudget::Recording => {
                "the recording holds no more rounds, and --max-trials cannot raise a replay: a live run or a longer recording lets it decide"
            }
        }
    }
}

impl SequentialGate {
    /// The gate for `spec` over `cases_per_arm` cases, with the fixtures' own bars
    /// (`case_gates`) and their own trial budgets (`case_caps`, else `spec.max_trials`).
    pub fn new(
        spec: SequentialSpec,
        cases_per_arm: usize,
        case_gates: HashMap<(String, String), f64>,
        case_caps: HashMap<(String, String), u32>,
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
            case_caps,
            states: HashMap::new(),
            order: Vec::new(),
            arms: Vec::new(),
            budget: TrialBudget::Flags,
            attacked: AttackedUnits::default(),
        }
    }

    /// The gate with an attacked run's units, which its attack gates judge (at the suite
    /// level too: their rounds are rounds of units).
    pub fn with_attacked(self, attacked: AttackedUnits) -> Self {
        SequentialGate {
            suite: self.suite.map(|s| s.with_attacked(attacked.clone())),
            attacked,
            ..self
        }
    }

    /// The cases a gate judges per arm (its Bonferroni m): the fixture cases, the attacked
    /// units, or the attacked scenarios.
    fn gated_per_arm(&self, gate: &GateSpec) -> usize {
        self.attacked.gated(gate, self.cases_per_arm).max(1)
    }

    /// What `record` says to `gate`.
    fn outcome(&self, gate: &GateSpec, record: &TrialRecord) -> GateOutcome {
        self.attacked.outcome(gate, record)
    }

    /// The gate with its cases' budgets coming from `budget` (a replay's recording).
    pub fn with_budget(self, budget: TrialBudget) -> Self {
        SequentialGate { budget, ..self }
    }

    /// The floor a case's test runs at: a ceiling's bar mirrored (`attack_success <= t` is
    /// `1 − attack_success >= 1 − t`), an attack gate's bar as given, else the fixture's own
    /// bar or the gate's.
    fn threshold(&self, dataset: &str, case: &str, gate: &GateSpec) -> f64 {
        if gate.metric.attack().is_some() {
            return floor_of(gate);
        }
        self.case_gates
            .get(&(dataset.to_owned(), case.to_owned()))
            .copied()
            .unwrap_or(gate.threshold)
    }

    /// The trials a case may use.
    fn cap(&self, dataset: &str, case: &str) -> u64 {
        u64::from(
            self.case_caps
                .get(&(dataset.to_owned(), case.to_owned()))
                .copied()
                .unwrap_or(self.spec.max_trials),
        )
    }

    /// The test of one case at floor `t`, failing at β/m over the `m` cases its gate judges.
    fn test(&self, t: f64, m: usize) -> Option<SequentialTest> {
        let alpha = 1.0 - self.spec.confidence;
        SequentialTest::new(
            self.spec.kind,
            t,
            self.spec.p1_for(t),
            self.spec.fail_below,
            alpha,
            alpha / m as f64,
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
        let tests: Vec<Option<SequentialTest>> = thresholds
            .iter()
            .zip(&gates)
            .map(|(&t, g)| self.test(t, self.gated_per_arm(g)))
            .collect();
        let outcomes: Vec<GateOutcome> = gates.iter().map(|g| self.outcome(g, record)).collect();
        let cap = self.cap(&record.dataset, &record.case_id);
        if !self.states.contains_key(&key) {
            self.order.push(key.clone());
        }
        let states = self
            .states
            .entry(key)
            .or_insert_with(|| vec![CaseState::default(); gates.len()]);
        for ((state, outcome), test) in states.iter_mut().zip(outcomes).zip(&tests) {
            if state.decided.is_some() || state.curtailed {
                continue;
            }
            let ok = match outcome {
                GateOutcome::NotApplicable => {
                    state.not_applicable = true;
                    continue;
                }
                // An infrastructure error measured nothing: it moves no test.
                GateOutcome::Unscored => continue,
                GateOutcome::Scored(ok) => ok,
            };
            state.n += 1;
            state.s += u64::from(ok);
            if let Some(test) = test {
                match test.decide(state.s, state.n) {
                    Some(SequentialDecision::Continue) => {
                        state.curtailed = !test.can_decide_by(state.s, state.n, cap);
                    }
                    None => {}
                    d => state.decided = d,
                }
            }
        }
        states
            .iter()
            .all(|s| s.decided.is_some() || s.curtailed || s.not_applicable)
    }

    /// The verdict of every gate on every arm, as data.
    pub fn results(&self) -> Vec<GateResult> {
        if let Some(suite) = &self.suite {
            return suite.results(self.budget);
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
    fn gate_result(&self, arm: &toolscore_core::ArmId, g: usize, gate: &GateSpec) -> GateResult {
        let alpha = 1.0 - self.spec.confidence;
        let m = self.gated_per_arm(gate);
        let beta_case = alpha / m as f64;
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
            cases.push(self.case_verdict(key, state, t, m));
        }
        let passed = cases.iter().filter(|c| c.verdict == Verdict::Pass).count();
        let failed = cases.iter().filter(|c| c.verdict.failed()).count();
        let inconclusive = cases.len() - passed - failed;
        let verdict = if cases.is_empty() {
            Verdict::Inconclusive
        } else if failed > 0 {
            // Every failed case of one gate ran the same test: BELOW under --fail-below.
            if self.spec.fail_below.is_some() {
                Verdict::Below
            } else {
                Verdict::Fail
            }
        } else if inconclusive > 0 {
            Verdict::Inconclusive
        } else {
            Verdict::Pass
        };
        let mut not_passed = super::worst_first(&cases);
        if gate.metric.ceiling() {
            // Judged as the floor on the complement; told back in the metric's own terms.
            not_passed = not_passed
                .into_iter()
                .map(|c| super::attack::mirrored_case(c, gate.threshold))
                .collect();
        }
        GateResult {
            metric: gate.metric,
            threshold: gate.threshold,
            level: GateLevel::Case,
            arm: arm.clone(),
            verdict,
            method: self.method(gate, alpha, beta_case, m),
            estimate: None,
            lower: None,
            upper: None,
            cases: cases.len(),
            passed_cases: passed,
            failed_cases: failed,
            inconclusive_cases: inconclusive,
            not_passed,
            hint: (inconclusive > 0).then(|| {
                match self.budget {
                    TrialBudget::Flags => format!(
                        "{inconclusive} case(s) undecided: none could decide within at most {} trials (each stopped once it could not); a larger --max-trials lets them decide",
                        self.spec.max_trials
                    ),
                    TrialBudget::Recording => format!(
                        "{inconclusive} case(s) undecided: none could decide within the trials its recording holds (each stopped once it could not); --max-trials cannot raise a replay: a live run or a longer recording lets them decide"
                    ),
                }
            }),
            tools: Vec::new(),
            trials: None,
            sequential: Some(self.design(gate, used, fixed_total)),
        }
    }

    /// The gate's method line.
    fn method(&self, gate: &GateSpec, alpha: f64, beta_case: f64, m: usize) -> String {
        let test = match self.spec.kind {
            SequentialKind::Sprt => "one-sided SPRT per case with Ville thresholds (anytime-valid)",
            // The case gates run the mixture unless --sprt-p1 names the SPRT.
            SequentialKind::Mixture | SequentialKind::Betting => {
                "mixture SPRT per case (anytime-valid, no guess of the true rate)"
            }
        };
        let fail = match self.spec.fail_below {
            None if gate.metric.ceiling() => format!(
                "beta {beta_case:.4} per case to fail a case at or below its bar (anytime-valid lower bound above it"
            ),
            None => format!(
                "beta {beta_case:.4} per case to fail a case at or above its bar (anytime-valid upper bound below it"
            ),
            Some(rate) => format!(
                "beta {beta_case:.4} per case to call a case at or above {rate} below it (--fail-below: an indifference zone, not a test of the bar"
            ),
        };
        let cases = match gate.metric.attack() {
            None => "",
            Some(AttackMetric::Utility) => "; the cases are the attacked scenarios' clean units",
            Some(_) => "; the cases are the (scenario × attack) units",
        };
        format!(
            "sequential: {test}, alpha {alpha:.3} to pass, {fail}; Bonferroni over {m} cases); every case must pass{cases}"
        )
    }

    /// The test's design at the gate's threshold (for a ceiling, at the floor it is judged
    /// as) and what the gated cases spent.
    fn design(
        &self,
        gate: &GateSpec,
        trials_used: u64,
        fixed_design_trials: u64,
    ) -> SequentialInfo {
        let alpha = 1.0 - self.spec.confidence;
        let m = self.gated_per_arm(gate);
        let t = floor_of(gate);
        let test = self.test(t, m);
        SequentialInfo {
            ceiling: gate.metric.ceiling(),
            test: self.spec.kind,
            p1: self.spec.p1_for(t),
            alpha,
            beta_per_case: alpha / m as f64,
            fail_below: self.spec.fail_below,
            anytime_valid_bounds: true,
            max_trials: self.spec.max_trials,
            trials_used,
            fixed_design_trials,
            pass_boundary: match test.as_ref().map(SequentialTest::pass_side) {
                Some(PassSide::Sprt(s)) => Some((s.slope(), s.intercept())),
                _ => None,
            },
            pass_at: match &test {
                Some(t) if t.kind() == SequentialKind::Mixture => {
                    pass_table(t, self.spec.max_trials)
                }
                _ => Vec::new(),
            },
            rounds: None,
        }
    }

    /// A case's verdict as its test decided it, with the anytime-valid bounds it decided by
    /// and, undecided, the fewest further trials that could decide it.
    fn case_verdict(&self, key: &CaseKey, state: &CaseState, t: f64, m: usize) -> CaseVerdict {
        let verdict = match state.decided {
            Some(SequentialDecision::Pass) => Verdict::Pass,
            Some(SequentialDecision::Fail) if self.spec.fail_below.is_some() => Verdict::Below,
            Some(SequentialDecision::Fail) => Verdict::Fail,
            _ => Verdict::Inconclusive,
        };
        let test = self.test(t, m);
        let more_trials = test
            .as_ref()
            .filter(|_| verdict == Verdict::Inconclusive)
            .map(|test| {
                test.fewest_to_decide(state.s, state.n, FEWEST_TO_DECIDE_LIMIT)
                    .unwrap_or(FEWEST_TO_DECIDE_LIMIT)
            });
        let bound = |side: fn(&SequentialTest, u64, u64) -> Option<f64>| {
            test.as_ref().and_then(|test| side(test, state.s, state.n))
        };
        CaseVerdict {
            dataset: key.dataset.clone(),
            case_id: key.case_id.clone(),
            x: state.s,
            n: state.n,
            lower: bound(SequentialTest::lower_bound).unwrap_or(0.0),
            upper: bound(SequentialTest::upper_bound).unwrap_or(1.0),
            threshold: t,
            verdict,
            more_trials,
            below: self.spec.fail_below.filter(|_| verdict == Verdict::Below),
        }
    }
}

/// The bar of the floor a gate is judged as: a ceiling's mirrored (`attack_success <= t` is
/// `1 − attack_success >= 1 − t`), else its own.
pub(super) fn floor_of(gate: &GateSpec) -> f64 {
    if gate.metric.ceiling() {
        1.0 - gate.threshold
    } else {
        gate.threshold
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
            return Ok(Control::Decided(match self.spec.level {
                GateLevel::Suite => StopScope::Arm(key.arm),
                _ => StopScope::Case {
                    arm: key.arm,
                    case: key.case,
                },
            }));
        }
        Ok(Control::Continue)
    }

    /// The suite level judges rounds; the case level judges each case after every trial.
    fn judges_rounds(&self) -> bool {
        self.suite.is_some()
    }
}
