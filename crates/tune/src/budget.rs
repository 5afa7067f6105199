//! How tune shares its budget among its phases, so the whole never passes `--budget-trials`
//! or `--max-cost`: each phase is planned within its share (trials) or capped at it (dollars,
//! by the runner, as `run --max-cost` caps a run), and what a phase leaves goes to the next.
//!
//! Before anything runs, the budget must pay for the baseline and [`MIN_ROUNDS`] rounds of
//! one candidate and of the confirmation; after the baseline, the race gets what the
//! confirmation's full rounds leave, or, when that is too little, a share in proportion to
//! what each would use, with the lightest candidates dropped until the race has
//! [`MIN_ROUNDS`] rounds.

/// The fewest rounds a race or a confirmation is given: the betting sequence cannot decide
/// in fewer.
pub(crate) const MIN_ROUNDS: u32 = 3;

/// What is left to spend, and on how many cases.
#[derive(Debug, Clone)]
pub struct Allowance {
    trials_left: Option<u64>,
    usd_left: Option<f64>,
    training: u64,
    holdout: u64,
    baseline_trials: u64,
    /// The baseline's rounds the race goes on from (its trials per case; 0 with `--from`): the
    /// base wording's first rounds of the race cost nothing more.
    baseline_rounds: u32,
}

/// A phase's share: at most this many trials, at most this many dollars.
pub type Share = (Option<u64>, Option<f64>);

impl Allowance {
    /// `baseline_trials`: trials per training case of the baseline tune runs, `None` with
    /// --from. Errors when the budget cannot pay for the smallest tune.
    pub fn new(
        budget_trials: Option<u64>,
        max_cost: Option<f64>,
        (training, holdout): (u64, u64),
        baseline_trials: Option<u32>,
    ) -> Result<Allowance, String> {
        let baseline_rounds = baseline_trials.unwrap_or(0);
        let baseline = training * u64::from(baseline_rounds);
        let shape = Allowance {
            trials_left: budget_trials,
            usd_left: max_cost,
            training,
            holdout,
            baseline_trials: baseline,
            baseline_rounds,
        };
        let race = shape.race_cost(1, MIN_ROUNDS, baseline_rounds);
        let confirm = shape.confirm_need(MIN_ROUNDS);
        let smallest = baseline + race + confirm;
        if let Some(b) = budget_trials
            && b < smallest
        {
            return Err(format!(
                "--budget-trials {b} cannot pay for the smallest tune: {smallest} trials ({baseline} for the baseline; {race} for {MIN_ROUNDS} rounds of one candidate on the {training} training units (cases, and scenarios when given){}; {confirm} for {MIN_ROUNDS} rounds of the confirmation on the {holdout} held-out ones, two arms each); raise it{}",
                if baseline_rounds >= MIN_ROUNDS {
                    ", the base wording's rounds taken from the baseline"
                } else {
                    ""
                },
                if baseline > 0 {
                    ", or diagnose an earlier run with --from"
                } else {
                    ""
                }
            ));
        }
        if let Some(usd) = max_cost
            && !(usd.is_finite() && usd > 0.0)
        {
            return Err(
                "--max-cost must be a positive amount of US dollars (e.g. 5 or 0.50)".into(),
            );
        }
        Ok(shape)
    }

    /// The trials a race of `candidates` sends in `rounds` rounds, the base wording's first
    /// `free_base_rounds` taken from the baseline.
    fn race_cost(&self, candidates: usize, rounds: u32, free_base_rounds: u32) -> u64 {
        let base = u64::from(rounds.saturating_sub(free_base_rounds));
        self.training * (candidates as u64 * u64::from(rounds) + base)
    }

    /// What the race and the confirmation need at the least, after the baseline.
    fn smallest_after_baseline(&self) -> u64 {
        self.race_cost(1, MIN_ROUNDS, self.baseline_rounds) + self.confirm_need(MIN_ROUNDS)
    }

    /// The most the confirmation would use at `max_rounds`.
    fn confirm_need(&self, max_rounds: u32) -> u64 {
        2 * self.holdout * u64::from(max_rounds)
    }

    /// The baseline's share: its trials, and the dollars in proportion to the trials it is
    /// of the least the whole tune needs.
    pub fn baseline(&self) -> Share {
        let rest = self.smallest_after_baseline();
        let fraction = self.baseline_trials as f64 / (self.baseline_trials + rest) as f64;
        (
            self.trials_left.map(|t| t.min(self.baseline_trials)),
            self.usd_left.map(|u| u * fraction),
        )
    }

    /// The race of `candidates` at up to `max_rounds`, the base's first `free_base_rounds`
    /// already run (the baseline it goes on from): how many candidates it keeps (the first,
    /// heaviest evidence first), its rounds, and its share of the trials it sends.
    pub fn race(
        &self,
        candidates: usize,
        max_rounds: u32,
        free_base_rounds: u32,
    ) -> (usize, u32, Share) {
        let cost = |k: usize, rounds: u32| self.race_cost(k, rounds, free_base_rounds);
        let Some(left) = self.trials_left else {
            let usd = self.usd_left.map(|u| {
                let race = cost(candidates, max_rounds);
                u * race as f64 / (race + self.confirm_need(max_rounds)).max(1) as f64
            });
            return (candidates, max_rounds, (None, usd));
        };
        let full_confirm = self.confirm_need(max_rounds);
        let mut kept = candidates;
        loop {
            let race_full = cost(kept, max_rounds);
            let for_race = if left >= race_full + full_confirm {
                race_full
            } else {
                // In proportion, the confirmation keeping at least its smallest share.
                let share =
                    (left as f64 * race_full as f64 / (race_full + full_confirm) as f64) as u64;
                share.min(left.saturating_sub(self.confirm_need(MIN_ROUNDS)))
            };
            let rounds = (0..=max_rounds)
                .rev()
                .find(|&r| cost(kept, r) <= for_race)
                .unwrap_or(0);
            if rounds >= MIN_ROUNDS || kept == 1 {
                let trials = cost(kept, rounds);
                let usd = self
                    .usd_left
                    .map(|u| u * trials as f64 / left.max(1) as f64);
                return (kept, rounds, (Some(trials), usd));
            }
            kept -= 1;
        }
    }

    /// The confirmation: its rounds (what is left, up to `max_rounds`) and its share (all of
    /// what is left).
    pub fn confirm(&self, max_rounds: u32) -> (u32, Share) {
        let rounds = match self.trials_left {
            Some(left) => (left / (2 * self.holdout).max(1)).min(u64::from(max_rounds)) as u32,
            None => max_rounds,
        };
        let trials = 2 * self.holdout * u64::from(rounds);
        (rounds, (self.trials_left.map(|_| trials), self.usd_left))
    }

    /// Whether `trials` more, costing at most `worst_usd`, fit in what is left (an author's
    /// requests, paid one at a time).
    pub fn afford(&self, trials: u64, worst_usd: f64) -> bool {
        self.trials_left
            .is_none_or(|t| t >= trials + self.reserved_for_phases())
            && self.usd_left.is_none_or(|u| u >= worst_usd)
    }

    /// The trials the race and confirmation must keep: their smallest tune.
    fn reserved_for_phases(&self) -> u64 {
        self.smallest_after_baseline()
    }

    /// Takes what a phase spent off what is left.
    pub fn spend(&mut self, trials: u64, usd: Option<f64>) {
        if let Some(t) = &mut self.trials_left {
            *t = t.saturating_sub(trials);
        }
        if let (Some(u), Some(spent)) = (&mut self.usd_left, usd) {
            *u = (*u - spent).max(0.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_phases_never_plan_past_the_budget() {
        // 10 training cases, 4 held out, a baseline of 5 trials per case: 50 trials; then 3
        // rounds of one candidate (the base's 3 come from the baseline) and of the
        // confirmation's two arms.
        let smallest = 50 + 3 * 10 + 3 * 2 * 4;
        assert!(Allowance::new(Some(smallest - 1), None, (10, 4), Some(5)).is_err());
        let mut a = Allowance::new(Some(400), None, (10, 4), Some(5)).unwrap();
        assert_eq!(a.baseline(), (Some(50), None));
        a.spend(50, None);
        // 350 left: 4 candidates × 40 rounds would take 2,000; the confirmation 320.
        let (kept, rounds, (trials, _)) = a.race(4, 40, 0);
        let trials = trials.unwrap();
        assert!(rounds >= MIN_ROUNDS && trials == (1 + kept as u64) * 10 * u64::from(rounds));
        // The base's first 5 rounds come from the baseline: the same trials buy more rounds.
        let (kept_free, rounds_free, (trials_free, _)) = a.race(4, 40, 5);
        assert_eq!(kept_free, kept);
        assert!(rounds_free > rounds, "{rounds_free} {rounds}");
        let base_sent = u64::from(rounds_free.saturating_sub(5));
        assert_eq!(
            trials_free.unwrap(),
            10 * (kept as u64 * u64::from(rounds_free) + base_sent)
        );
        assert!(trials_free.unwrap() <= trials + 10 * u64::from(rounds));
        assert!(
            trials + 2 * 4 * u64::from(MIN_ROUNDS) <= 350,
            "{kept} {rounds} {trials}"
        );
        a.spend(trials, None);
        let (confirm_rounds, (confirm_trials, _)) = a.confirm(40);
        assert!(confirm_rounds >= MIN_ROUNDS);
        assert!(50 + trials + confirm_trials.unwrap() <= 400);
    }

    #[test]
    fn without_a_budget_every_phase_gets_its_full_rounds() {
        let a = Allowance::new(None, None, (10, 4), Some(5)).unwrap();
        assert_eq!(a.race(6, 40, 5), (6, 40, (None, None)));
        assert_eq!(a.confirm(40), (40, (None, None)));
    }

    #[test]
    fn dollars_are_shared_and_what_is_left_goes_on() {
        let mut a = Allowance::new(None, Some(1.0), (10, 10), Some(6)).unwrap();
        let (_, usd) = a.baseline();
        // 60 baseline trials of the 60 + 30 + 60 the smallest tune needs.
        assert!((usd.unwrap() - 60.0 / 150.0).abs() < 1e-12);
        a.spend(60, Some(0.25));
        let (_, _, (_, race_usd)) = a.race(1, 10, 0);
        // The race: 2 × 10 × 10 = 200 of 200 + 200.
        assert!((race_usd.unwrap() - 0.375).abs() < 1e-12);
        a.spend(200, Some(0.30));
        assert!((a.confirm(10).1.1.unwrap() - 0.45).abs() < 1e-12);
    }
}
