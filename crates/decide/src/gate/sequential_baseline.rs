//! `--baseline RUN_DIR --sequential`: the non-inferiority gate against an earlier run, judged
//! round by round while this run goes, each arm stopped the moment it decides.
//!
//! Trial r of a case in the baseline run and trial r of the same case in this run make a pair;
//! a round is that pair for every case. The baseline's trials are all there before the run
//! starts, so each round completes when this run's trials of it have finished. The rounds are
//! judged by the paired betting confidence sequence of the sequential comparison
//! (`decide::compare::sequential`, rule `NonInferiority`): PASS when the evidence that this run
//! is worse by at least the margin is rejected at 1/α, FAIL when the evidence that it is worse
//! by less is. Like the comparison, the claim is about these cases, not a population of cases,
//! and every case takes part (held-out cases too, as in the fixed baseline gate).

use crate::compare::sequential::{Rule, SequentialCompare, SequentialCompareSpec};
use toolscore_core::metric::Metric;
use toolscore_core::{ArmId, TrialRecord};
use toolscore_core::{Control, Observer, RunEvent, StopScope};
use toolscore_core::{Error, InputError};
use toolscore_stats::SequentialKind;
use toolscore_summary::{
    ComparisonVerdict, GateLevel, GateResult, SequentialInfo, Summary, Verdict,
};

use super::baseline::baseline_arm;

/// What `--baseline --sequential` is asked for.
#[derive(Debug, Clone)]
pub struct SequentialBaselineSpec {
    pub metric: Metric,
    pub margin: f64,
    /// One-sided confidence of each verdict.
    pub confidence: f64,
    /// This run's arms, in plan order.
    pub arms: Vec<ArmId>,
    /// Every case, `(dataset, case id)`.
    pub cases: Vec<(String, String)>,
    pub max_rounds: u32,
    /// What caps the rounds: the flags, or a replay's recordings.
    pub budget: super::sequential::TrialBudget,
}

/// The observer: one paired comparison per arm of this run, against its baseline arm.
pub struct SequentialBaseline {
    baseline_run: String,
    spec: SequentialBaselineSpec,
    /// Per arm of this run: the baseline arm it is held against, and the comparison.
    arms: Vec<(ArmId, SequentialCompare)>,
}

impl SequentialBaseline {
    /// Pairs every arm of this run with its baseline arm (the baseline's only arm, or the one
    /// of the same name and variant); exit 2 when one has none.
    pub fn new(spec: SequentialBaselineSpec, baseline: &Summary) -> Result<Self, InputError> {
        let mut arms = Vec::with_capacity(spec.arms.len());
        for arm in &spec.arms {
            let base = baseline.arms[baseline_arm(baseline, arm)?].arm.clone();
            let compare = SequentialCompare::new(SequentialCompareSpec {
                arms: [base.clone(), arm.clone()],
                metric: spec.metric,
                confidence: spec.confidence,
                rule: Rule::NonInferiority {
                    margin: spec.margin,
                },
                cases: spec.cases.clone(),
                holdout: Vec::new(),
                max_rounds: spec.max_rounds,
            })
            .ok_or_else(|| InputError::new("--baseline --sequential: no case to compare on"))?;
            arms.push((base, compare));
        }
        Ok(SequentialBaseline {
            baseline_run: baseline.run.run_id.clone(),
            spec,
            arms,
        })
    }

    /// Feeds one trial of the baseline run to every arm held against its arm.
    pub fn push_baseline(&mut self, record: &TrialRecord) {
        for (base, compare) in &mut self.arms {
            if *base == record.arm {
                compare.push_as(record, 0);
            }
        }
    }

    /// Feeds one finished trial of this run; true when its arm has just decided.
    pub fn push(&mut self, record: &TrialRecord) -> bool {
        match self.spec.arms.iter().position(|a| *a == record.arm) {
            Some(i) => self.arms[i].1.push_as(record, 1),
            None => false,
        }
    }

    /// Every arm's verdict, as data.
    pub fn results(&self) -> Vec<GateResult> {
        let margin = self.spec.margin;
        self.spec
            .arms
            .iter()
            .zip(&self.arms)
            .map(|(arm, (_, compare))| {
                let q = compare.visible();
                let pairs = q.counts.pairs();
                let verdict = match q.verdict {
                    ComparisonVerdict::Better => Verdict::Pass,
                    ComparisonVerdict::Worse => Verdict::Fail,
                    _ => Verdict::Inconclusive,
                };
                GateResult {
                    metric: self.spec.metric.into(),
                    threshold: -margin,
                    level: GateLevel::Baseline,
                    arm: arm.clone(),
                    verdict,
                    method: format!(
                        "sequential non-inferiority to run {}: betting confidence sequence over rounds of every case (anytime-valid), one-sided; about these {} cases, not a population of cases; pass when the lower bound > -{margin}",
                        self.baseline_run, q.cases
                    ),
                    estimate: (pairs > 0)
                        .then(|| (q.counts.b_only as f64 - q.counts.a_only as f64) / pairs as f64),
                    lower: Some(q.lower),
                    upper: Some(q.upper),
                    cases: q.cases,
                    passed_cases: 0,
                    failed_cases: 0,
                    inconclusive_cases: 0,
                    not_passed: Vec::new(),
                    hint: (verdict == Verdict::Inconclusive).then(|| {
                        format!(
                            "undecided after {} of {} rounds; {}",
                            q.rounds,
                            q.max_rounds,
                            self.spec.budget.rounds_remedy()
                        )
                    }),
                    tools: Vec::new(),
                    trials: Some(2 * pairs),
                    sequential: Some(SequentialInfo {
                        ceiling: false,
                        test: SequentialKind::Betting,
                        p1: -margin,
                        alpha: q.alpha,
                        beta_per_case: q.alpha,
                        max_trials: q.max_rounds,
                        trials_used: pairs,
                        fixed_design_trials: 0,
                        pass_boundary: None,
                        pass_at: Vec::new(),
                        fail_below: None,
                        anytime_valid_bounds: false,
                        rounds: Some((q.rounds, q.skipped_rounds)),
                    }),
                }
            })
            .collect()
    }
}

impl Observer for SequentialBaseline {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<Control, Error> {
        if let RunEvent::Trial { key, record, .. } = event
            && self.push(record)
        {
            return Ok(Control::Decided(StopScope::Arm(key.arm)));
        }
        Ok(Control::Continue)
    }

    /// Decides at round boundaries only.
    fn judges_rounds(&self) -> bool {
        true
    }
}
