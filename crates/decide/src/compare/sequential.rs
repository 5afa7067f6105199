//! The sequential comparison (`run --compare --sequential`): two arms paired by case, judged
//! after every complete round by an anytime-valid confidence sequence for their mean
//! difference (`stats::PairedBetting`), and the run stopped the moment it decides.
//!
//! - A round is trial r of every visible case under both arms; its pairs are (A's trial r, B's
//!   trial r) of each case. The runner runs trial-major, arms of a case side by side, so rounds
//!   complete in order and a stop leaves a balanced design.
//! - The claim is about this suite's cases (the mean over them of B's rate − A's), not about a
//!   population of cases the suite samples; the report says so.
//! - A pair with an infrastructure error on either side, or where the metric does not apply,
//!   measures nothing: its whole round is skipped (counted), since dropping only that case
//!   would bias the round toward the cases that answered.
//! - Cases tagged `holdout` form a group of their own with its own rounds and verdict, as in
//!   `compare`: the run stops once both groups have decided, since a finding on the visible
//!   cases stands only when the held-out ones confirm it.
//!
//! The decision is a function of the records' outcomes by (case, arm, trial index), never of
//! the order they finished in: `toolscore compare RUN_DIR` and `report` replay `results.jsonl`
//! through the same observer and reach the same verdict.

use std::collections::HashMap;

use toolscore_core::Error;
use toolscore_core::metric::Metric;
use toolscore_core::{ArmId, TrialRecord};
use toolscore_core::{Control, Observer, RunEvent, StopScope};
use toolscore_stats::{PairCounts, PairedBetting, PairedDecision};
use toolscore_summary::{ComparisonVerdict, SequentialComparison};

use super::super::rounds::{Outcome, Rounds};

/// What the sequential comparison is asked for.
#[derive(Debug, Clone)]
pub struct SequentialCompareSpec {
    /// A, then B.
    pub arms: [ArmId; 2],
    pub metric: Metric,
    /// Two-sided confidence of the sequence: α = 1 − confidence.
    pub confidence: f64,
    /// What the rounds decide.
    pub rule: Rule,
    /// The visible cases, `(dataset, case id)`: every round holds each of them once. A
    /// scenario is a case of dataset `scenarios` (`SCENARIO_DATASET`), judged on its success.
    pub cases: Vec<(String, String)>,
    /// The cases tagged `holdout`, judged as a group of their own.
    pub holdout: Vec<(String, String)>,
    /// Rounds the run can hold: the fewest trials any compared case has.
    pub max_rounds: u32,
}

/// What a sequential comparison decides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    /// Better, worse, or within ±`min_effect` (`run --compare --sequential`), on the two-sided
    /// confidence sequence.
    Compare { min_effect: f64 },
    /// Not worse by more than `margin` ("better"), or worse by more ("worse"), one side at a
    /// time at 1/α (`--baseline --sequential`, the non-inferiority gate).
    NonInferiority { margin: f64 },
    /// Better, worse, or not better by `min_effect` (the sequence's upper end below it), on
    /// the two-sided sequence: a race drops a candidate as soon as it cannot improve enough.
    Improve { min_effect: f64 },
}

/// The rounds of one group of cases (the visible ones, or the held-out ones) and what they
/// decided.
struct Group {
    cases: usize,
    rounds: Rounds,
    skipped_rounds: u64,
    counts: PairCounts,
    decided: Option<PairedDecision>,
}

impl Group {
    fn new(cases: usize, max_rounds: u32) -> Self {
        Group {
            cases,
            rounds: Rounds::new(cases, 2, max_rounds),
            skipped_rounds: 0,
            counts: PairCounts::default(),
            decided: None,
        }
    }

    /// Stores one side of a pair and judges every round it completes, in order.
    fn add(&mut self, case: usize, arm: usize, trial: u32, outcome: Outcome, judge: &Judge) {
        self.rounds.add(case, arm, trial, outcome);
        while self.decided.is_none() {
            let Some(round) = self.rounds.next_round() else {
                break;
            };
            let pairs: Option<Vec<(bool, bool)>> = round
                .iter()
                .map(|sides| Some((sides[0]?, sides[1]?)))
                .collect();
            // A pair that measured nothing voids its round.
            let Some(pairs) = pairs else {
                self.skipped_rounds += 1;
                continue;
            };
            for (a, b) in pairs {
                self.counts.add(a, b);
            }
            match judge.decide(self.counts) {
                PairedDecision::Continue => {}
                d => self.decided = Some(d),
            }
        }
    }

    fn result(&self, judge: &Judge, max_rounds: u32) -> SequentialComparison {
        let (lower, upper) = judge.bounds(self.counts);
        SequentialComparison {
            verdict: match self.decided {
                Some(PairedDecision::Better) => ComparisonVerdict::Better,
                Some(PairedDecision::Worse) => ComparisonVerdict::Worse,
                Some(PairedDecision::Within) => ComparisonVerdict::Equivalent,
                Some(PairedDecision::NotBetter) => ComparisonVerdict::NotBetter,
                Some(PairedDecision::Continue) | None => ComparisonVerdict::Inconclusive,
            },
            rounds: self.rounds.taken(),
            skipped_rounds: self.skipped_rounds,
            max_rounds,
            cases: self.cases,
            counts: self.counts,
            alpha: judge.test.alpha(),
            lower,
            upper,
        }
    }
}

/// The test and the rule every group is judged by.
struct Judge {
    test: PairedBetting,
    rule: Rule,
}

impl Judge {
    fn decide(&self, c: PairCounts) -> PairedDecision {
        match self.rule {
            Rule::Compare { min_effect } => self.test.decide(c, min_effect),
            Rule::NonInferiority { margin } => self.test.decide_one_sided(c, -margin),
            Rule::Improve { min_effect } => self.test.decide_improvement(c, min_effect),
        }
    }

    /// The sequence's ends: two-sided for a comparison, each a one-sided bound for the gate.
    fn bounds(&self, c: PairCounts) -> (f64, f64) {
        match self.rule {
            Rule::Compare { .. } | Rule::Improve { .. } => self.test.interval(c),
            Rule::NonInferiority { .. } => self.test.one_sided_bounds(c),
        }
    }
}

/// The observer that judges the comparison after every complete round of each group, and
/// stops the run once every group has decided.
pub struct SequentialCompare {
    spec: SequentialCompareSpec,
    judge: Judge,
    /// `(dataset, case)` → (group, index in it): 0 the visible cases, 1 the held-out ones.
    index: HashMap<(String, String), (usize, usize)>,
    groups: Vec<Group>,
}

impl SequentialCompare {
    /// `None` when the confidence leaves no valid α, or there is no visible case.
    pub fn new(spec: SequentialCompareSpec) -> Option<Self> {
        if spec.cases.is_empty() {
            return None;
        }
        let test = PairedBetting::new(1.0 - spec.confidence)?;
        let mut index = HashMap::new();
        for (g, keys) in [&spec.cases, &spec.holdout].into_iter().enumerate() {
            for (i, key) in keys.iter().enumerate() {
                index.insert(key.clone(), (g, i));
            }
        }
        let mut groups = vec![Group::new(spec.cases.len(), spec.max_rounds)];
        if !spec.holdout.is_empty() {
            groups.push(Group::new(spec.holdout.len(), spec.max_rounds));
        }
        Some(SequentialCompare {
            judge: Judge {
                test,
                rule: spec.rule,
            },
            spec,
            index,
            groups,
        })
    }

    /// Feeds one finished trial of either arm; true once every group has decided.
    pub fn push(&mut self, record: &TrialRecord) -> bool {
        match self.spec.arms.iter().position(|a| *a == record.arm) {
            Some(arm) => self.push_as(record, arm),
            None => false,
        }
    }

    /// Feeds one finished trial as side `arm` (0 = A, 1 = B) whatever arm it names: a
    /// baseline run's trials and this run's may carry the same arm.
    pub(crate) fn push_as(&mut self, record: &TrialRecord, arm: usize) -> bool {
        if self.decided() || arm > 1 {
            return false;
        }
        let key = (record.dataset.clone(), record.case_id.clone());
        let Some(&(group, case)) = self.index.get(&key) else {
            return false;
        };
        // A scenario is judged on its success: the metric names a fixture's score.
        let outcome = match (&record.score, &record.scenario) {
            (Some(s), _) => self.spec.metric.of(s),
            (None, Some(scenario)) => Some(scenario.passed),
            (None, None) => None,
        };
        self.groups[group].add(case, arm, record.trial_index, outcome, &self.judge);
        self.decided()
    }

    /// Whether every group has decided.
    pub fn decided(&self) -> bool {
        self.groups.iter().all(|g| g.decided.is_some())
    }

    /// The visible cases' comparison as it stands (inconclusive while undecided).
    pub fn visible(&self) -> SequentialComparison {
        self.groups[0].result(&self.judge, self.spec.max_rounds)
    }

    /// The held-out cases' comparison, when the plan has any.
    pub fn holdout(&self) -> Option<SequentialComparison> {
        self.groups
            .get(1)
            .map(|g| g.result(&self.judge, self.spec.max_rounds))
    }

    /// Sets both groups' sequential results on a comparison of the same two arms, by identity:
    /// when the comparison names them the other way round, every B − A is mirrored (sign,
    /// bounds, counts, better ↔ worse), so no result is ever told with its arms swapped. A
    /// comparison of other arms is left as it is.
    pub fn apply_to(&self, comparison: &mut toolscore_summary::Comparison) {
        let [a, b] = &self.spec.arms;
        let mirror = if (a, b) == (&comparison.a.arm, &comparison.b.arm) {
            false
        } else if (a, b) == (&comparison.b.arm, &comparison.a.arm) {
            true
        } else {
            return;
        };
        let told = |s: SequentialComparison| if mirror { s.mirrored() } else { s };
        // The group's verdict is the sequential one; the fixed-n one is kept apart as
        // description (it does not hold its level after a data-dependent stop).
        let judge = |g: &mut toolscore_summary::GroupComparison,
                     s: Option<SequentialComparison>| {
            if let Some(s) = s {
                g.fixed_n_verdict.get_or_insert(g.verdict);
                g.verdict = s.verdict;
                g.sequential = Some(s);
            }
        };
        judge(&mut comparison.visible, Some(told(self.visible())));
        if let Some(h) = &mut comparison.holdout {
            judge(h, self.holdout().map(told));
        }
    }
}

impl Observer for SequentialCompare {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<Control, Error> {
        if let RunEvent::Trial { record, .. } = event
            && self.push(record)
        {
            return Ok(Control::Decided(StopScope::Run));
        }
        Ok(Control::Continue)
    }

    /// Decides at round boundaries only.
    fn judges_rounds(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolscore_core::Outcome;

    fn arm(variant: &str) -> ArmId {
        ArmId::for_test(variant)
    }

    fn spec(cases: usize, max_rounds: u32) -> SequentialCompareSpec {
        SequentialCompareSpec {
            arms: [arm("a"), arm("b")],
            metric: Metric::Selection,
            confidence: 0.95,
            rule: Rule::Compare { min_effect: 0.05 },
            cases: (0..cases)
                .map(|c| ("d".to_owned(), format!("c{c}")))
                .collect(),
            holdout: Vec::new(),
            max_rounds,
        }
    }

    /// Trial `trial` of case `c{case}` under variant `variant`: scored right or wrong, or an
    /// infrastructure error (`None`).
    fn record(variant: &str, case: usize, trial: u32, ok: Option<bool>) -> TrialRecord {
        let mut r =
            TrialRecord::scored_for_test(&format!("c{case}"), variant, trial, ok == Some(true));
        if ok.is_none() {
            r.outcome = Outcome::Error;
            r.score = None;
        }
        r
    }

    #[test]
    fn decides_only_at_complete_rounds_whatever_the_arrival_order() {
        // B always right, A always wrong, 3 cases: the verdict comes at the same round
        // whichever order the trials arrive in.
        let trials: Vec<(&str, usize, u32)> = (0..40u32)
            .flat_map(|t| (0..3).flat_map(move |c| [("a", c, t), ("b", c, t)]))
            .collect();
        let mut forward = SequentialCompare::new(spec(3, 40)).unwrap();
        let mut decided_at = None;
        for (i, &(v, c, t)) in trials.iter().enumerate() {
            if forward.push(&record(v, c, t, Some(v == "b"))) {
                decided_at = Some(i);
                break;
            }
        }
        let decided_at = decided_at.expect("decides");
        // Only at the last pair of a round.
        assert_eq!((decided_at + 1) % 6, 0, "{decided_at}");
        let f = forward.visible();
        assert_eq!(f.verdict, ComparisonVerdict::Better);
        let mut backward = SequentialCompare::new(spec(3, 40)).unwrap();
        for &(v, c, t) in trials.iter().rev() {
            backward.push(&record(v, c, t, Some(v == "b")));
        }
        let b = backward.visible();
        assert_eq!(
            (b.verdict, b.rounds, b.counts),
            (f.verdict, f.rounds, f.counts)
        );
    }

    #[test]
    fn a_void_pair_skips_its_round_and_other_cases_and_arms_are_ignored() {
        let mut c = SequentialCompare::new(spec(2, 10)).unwrap();
        // Round 0: case 1's B side is an infrastructure error.
        c.push(&record("a", 0, 0, Some(false)));
        c.push(&record("b", 0, 0, Some(true)));
        c.push(&record("a", 1, 0, Some(false)));
        c.push(&record("b", 1, 0, None));
        // Not in the comparison: a third arm, an unknown case, a trial beyond the rounds.
        c.push(&record("z", 0, 1, Some(true)));
        c.push(&record("a", 7, 1, Some(true)));
        c.push(&record("a", 0, 10, Some(true)));
        let r = c.visible();
        assert_eq!((r.rounds, r.skipped_rounds, r.counts.pairs()), (1, 1, 0));
        // Round 1 complete: two pairs counted.
        for case in 0..2 {
            c.push(&record("a", case, 1, Some(false)));
            c.push(&record("b", case, 1, Some(true)));
        }
        let r = c.visible();
        assert_eq!((r.rounds, r.counts.b_only), (2, 2));
        assert_eq!(r.verdict, ComparisonVerdict::Inconclusive);
    }

    #[test]
    fn the_run_stops_only_once_the_held_out_cases_have_decided_too() {
        // Cases c0, c1 visible, c2 held out; B always right, A always wrong. The evidence
        // after k pairs, all +1, is Σ_f (1 + f)^k / 4, which first reaches 2/α = 40 at k = 13
        // (54.9): the visible group (2 pairs a round) at round 7, the single held-out case at
        // round 13, where the run stops.
        let mut spec = spec(2, 40);
        spec.holdout = vec![("d".to_owned(), "c2".to_owned())];
        let mut c = SequentialCompare::new(spec).unwrap();
        let mut stopped_at = None;
        'rounds: for t in 0..40u32 {
            for case in 0..3 {
                c.push(&record("a", case, t, Some(false)));
                if c.push(&record("b", case, t, Some(true))) {
                    stopped_at = Some(t + 1);
                    break 'rounds;
                }
            }
        }
        assert_eq!(stopped_at, Some(13));
        let visible = c.visible();
        assert_eq!(visible.verdict, ComparisonVerdict::Better);
        assert_eq!(visible.rounds, 7);
        let held = c.holdout().expect("holdout group");
        assert_eq!(
            (held.verdict, held.rounds, held.cases),
            (ComparisonVerdict::Better, 13, 1)
        );
    }
}
