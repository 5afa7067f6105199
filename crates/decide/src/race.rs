//! The race of `toolscore tune`: several candidate arms, each compared with one base arm on
//! the same cases by its own sequential paired comparison (`compare::sequential`), run side by
//! side. A candidate is dropped (its arm stopped) the moment its comparison decides, whichever
//! way; the base runs while any candidate is undecided, and the run stops once all are.
//!
//! Each comparison holds at its own confidence. The race only chooses what to confirm: the
//! claim tune makes is the confirmation on held-out cases, one comparison, so the race's
//! several looks do not enter it.

use toolscore_core::ArmId;
use toolscore_core::Error;
use toolscore_core::metric::Metric;
use toolscore_core::{Control, Observer, RunEvent, StopScope};
use toolscore_summary::SequentialComparison;

use super::compare::sequential::{Rule, SequentialCompare, SequentialCompareSpec};

/// What the race is asked for.
#[derive(Debug, Clone)]
pub struct RaceSpec {
    /// The base arm, and its index in the plan.
    pub base: (ArmId, usize),
    /// Each candidate's arm and its index in the plan.
    pub candidates: Vec<(ArmId, usize)>,
    pub confidence: f64,
    pub min_effect: f64,
    /// `(dataset, case id)` of every case raced on.
    pub cases: Vec<(String, String)>,
    pub max_rounds: u32,
}

/// The observer: one comparison per candidate, fed the base's trials and its own.
pub struct Race {
    spec: RaceSpec,
    comparisons: Vec<SequentialCompare>,
    stopped: Vec<bool>,
}

impl Race {
    /// `None` when the confidence leaves no valid α or there is no case.
    pub fn new(spec: RaceSpec) -> Option<Race> {
        let comparisons = spec
            .candidates
            .iter()
            .map(|(arm, _)| {
                SequentialCompare::new(SequentialCompareSpec {
                    arms: [spec.base.0.clone(), arm.clone()],
                    metric: Metric::Selection,
                    confidence: spec.confidence,
                    rule: Rule::Improve {
                        min_effect: spec.min_effect,
                    },
                    cases: spec.cases.clone(),
                    holdout: Vec::new(),
                    max_rounds: spec.max_rounds,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Race {
            stopped: vec![false; comparisons.len()],
            spec,
            comparisons,
        })
    }

    /// Each candidate's comparison with the base, as it stands.
    pub fn results(&self) -> Vec<SequentialComparison> {
        self.comparisons
            .iter()
            .map(SequentialCompare::visible)
            .collect()
    }

    /// Feeds one trial; the arms to stop now (a candidate that just decided), or the whole
    /// run once every candidate has.
    fn push(&mut self, record: &toolscore_core::TrialRecord) -> Option<StopScope> {
        if record.arm == self.spec.base.0 {
            for (i, c) in self.comparisons.iter_mut().enumerate() {
                if !self.stopped[i] {
                    c.push_as(record, 0);
                }
            }
        } else if let Some(i) = self
            .spec
            .candidates
            .iter()
            .position(|(a, _)| *a == record.arm)
        {
            self.comparisons[i].push_as(record, 1);
        } else {
            return None;
        }
        // A base trial can complete the deciding round of several candidates at once: the
        // first is stopped now, the others at the next trial, before they are scheduled far.
        for (i, c) in self.comparisons.iter().enumerate() {
            if !self.stopped[i] && c.decided() {
                self.stopped[i] = true;
                if self.stopped.iter().all(|s| *s) {
                    return Some(StopScope::Run);
                }
                return Some(StopScope::Arm(self.spec.candidates[i].1));
            }
        }
        None
    }
}

impl Observer for Race {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<Control, Error> {
        if let RunEvent::Trial { record, .. } = event
            && let Some(scope) = self.push(record)
        {
            // Decided: a trial of the stopped arm that ran ahead of the deciding round is
            // marked and counted by no rate.
            return Ok(Control::Decided(scope));
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
    use toolscore_core::TrialRecord;

    fn arm(variant: &str) -> ArmId {
        ArmId::for_test(variant)
    }

    fn record(variant: &str, case: usize, trial: u32, right: bool) -> TrialRecord {
        TrialRecord::scored_for_test(&format!("c{case}"), variant, trial, right)
    }

    /// `good` is always right where the base never is; `same` answers as the base does.
    #[test]
    fn a_decided_candidate_is_stopped_and_the_run_once_all_are() {
        let mut race = Race::new(RaceSpec {
            base: (arm("base"), 0),
            candidates: vec![(arm("good"), 1), (arm("same"), 2)],
            confidence: 0.95,
            min_effect: 0.3,
            cases: (0..4).map(|c| ("d".to_owned(), format!("c{c}"))).collect(),
            max_rounds: 100,
        })
        .unwrap();
        let mut stops = Vec::new();
        for trial in 0..100 {
            for case in 0..4 {
                for (variant, right) in [("base", false), ("good", true), ("same", false)] {
                    if let Some(s) = race.push(&record(variant, case, trial, right)) {
                        stops.push((trial, s));
                    }
                }
            }
            if matches!(stops.last(), Some((_, StopScope::Run))) {
                break;
            }
        }
        let r = race.results();
        assert_eq!(r[0].verdict, toolscore_summary::ComparisonVerdict::Better);
        assert_eq!(
            r[1].verdict,
            toolscore_summary::ComparisonVerdict::NotBetter
        );
        assert!(r[1].upper < 0.3 && r[1].lower < 0.0, "{:?}", r[1]);
        // `good` decides first (13 pairs of +1 pass 2/α), and only its arm stops; the run
        // stops when `same` is ruled out too.
        assert_eq!(stops[0].1, StopScope::Arm(1));
        assert_eq!(stops.last().map(|s| s.1), Some(StopScope::Run));
        assert_eq!(stops.len(), 2);
        assert!(stops[0].0 < stops[1].0);
    }
}
