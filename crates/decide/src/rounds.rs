//! Trials gathered into complete rounds, for the sequential tests that judge a fixed set of
//! cases together (the sequential comparison and the sequential suite gate).
//!
//! A round is trial r of every case on every side (an arm of a comparison, or the one arm a
//! suite gate judges). Their tests are valid only at round boundaries: within a round the cases
//! differ, and only a complete round has the mean over all of them as its expectation. The
//! runner runs trial-major, so rounds complete in order; trials that arrive out of order wait
//! here until their round is complete, and a round comes out the same whatever order its
//! trials arrived in.

/// One trial's outcome on the metric judged: `None` when it measured nothing (an
/// infrastructure error, or a metric that does not apply to it).
pub(crate) type Outcome = Option<bool>;

/// Trials of `cases` cases on `sides` sides, by trial index, handed out round by round.
pub(crate) struct Rounds {
    sides: usize,
    /// `[case][side][trial]`: `None` while the trial has not arrived.
    slots: Vec<Vec<Vec<Option<Outcome>>>>,
    /// Per round index: how many cases have every side of that round.
    ready: Vec<usize>,
    /// The next round to hand out.
    next: usize,
    /// Rounds the plan holds: trials at or beyond this index are ignored.
    max_rounds: usize,
}

impl Rounds {
    pub(crate) fn new(cases: usize, sides: usize, max_rounds: u32) -> Self {
        Rounds {
            sides,
            slots: vec![vec![Vec::new(); sides]; cases],
            ready: Vec::new(),
            next: 0,
            max_rounds: max_rounds as usize,
        }
    }

    /// Stores trial `trial` of `case` on `side`. A trial beyond the plan's rounds, or one
    /// already stored (a resumed run's duplicate: the first stands), is ignored.
    pub(crate) fn add(&mut self, case: usize, side: usize, trial: u32, outcome: Outcome) {
        let trial = trial as usize;
        if trial >= self.max_rounds || case >= self.slots.len() || side >= self.sides {
            return;
        }
        let slots = &mut self.slots[case][side];
        if slots.len() <= trial {
            slots.resize(trial + 1, None);
        }
        if slots[trial].is_some() {
            return;
        }
        slots[trial] = Some(outcome);
        let complete = self.slots[case]
            .iter()
            .all(|s| s.get(trial).is_some_and(Option::is_some));
        if complete {
            if self.ready.len() <= trial {
                self.ready.resize(trial + 1, 0);
            }
            self.ready[trial] += 1;
        }
    }

    /// The next complete round, `[case][side]`, or `None` until every case has every side of
    /// it.
    pub(crate) fn next_round(&mut self) -> Option<Vec<Vec<Outcome>>> {
        if self.ready.get(self.next).copied() != Some(self.slots.len()) || self.slots.is_empty() {
            return None;
        }
        let r = self.next;
        self.next += 1;
        Some(
            self.slots
                .iter()
                .map(|sides| sides.iter().map(|s| s[r].flatten()).collect())
                .collect(),
        )
    }

    /// Rounds handed out so far.
    pub(crate) fn taken(&self) -> u64 {
        self.next as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_comes_out_once_complete_whatever_the_order() {
        let mut r = Rounds::new(2, 2, 5);
        r.add(1, 1, 0, Some(true));
        r.add(0, 0, 1, Some(false));
        assert!(r.next_round().is_none());
        r.add(0, 0, 0, Some(true));
        r.add(0, 1, 0, None);
        assert!(r.next_round().is_none(), "case 1 still misses side 0");
        r.add(1, 0, 0, Some(false));
        assert_eq!(
            r.next_round(),
            Some(vec![vec![Some(true), None], vec![Some(false), Some(true)]])
        );
        assert!(r.next_round().is_none());
        assert_eq!(r.taken(), 1);
        // Duplicates and trials beyond the plan change nothing.
        r.add(0, 0, 0, Some(false));
        r.add(0, 0, 5, Some(true));
        r.add(7, 0, 1, Some(true));
        for (c, s) in [(0, 1), (1, 0), (1, 1)] {
            r.add(c, s, 1, Some(true));
        }
        assert_eq!(
            r.next_round(),
            Some(vec![
                vec![Some(false), Some(true)],
                vec![Some(true), Some(true)]
            ])
        );
    }
}
