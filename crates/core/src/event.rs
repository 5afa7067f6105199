//! The run's event stream: what the runner emits and how observers answer.
//!
//! The runner knows no sink. It emits [`RunEvent`]s to one [`Observer`] that the command
//! composes ([`Observers`] fans out to several): the results store, the CSV writer, the
//! cassette recorder, progress, the aggregator, and later a sequential gate. An observer may
//! answer [`Control::Stop`] for a case, an arm or the whole run; the runner then schedules no
//! more trials in that scope. This module sits beside `record` so that `runner`, `report` and
//! `provider` can all speak it without importing each other.

use bytes::Bytes;

use crate::error::Error;
use crate::record::{ErrorClass, ModelIdentity, TrialRecord};

/// Where a trial sits in the plan: indices into the plan's arms and cases (cases numbered
/// across datasets in plan order), and the trial number within its case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TrialKey {
    pub arm: usize,
    pub case: usize,
    pub trial: u32,
}

/// One arm as the plan holds it, announced in [`RunEvent::Started`].
#[derive(Debug, Clone)]
pub struct ArmStart<'a> {
    pub name: &'a str,
    pub variant: &'a str,
    pub identity: &'a ModelIdentity,
}

/// Something that happened in a run, in the order it happened.
#[derive(Debug)]
pub enum RunEvent<'a> {
    /// Before the first trial.
    Started {
        run_id: &'a str,
        planned_trials: u64,
        arms: &'a [ArmStart<'a>],
    },
    /// A trial finished (scored, or ended in an infrastructure error).
    Trial {
        key: TrialKey,
        record: &'a TrialRecord,
        /// The raw responses of its steps, only when some observer asked for them
        /// ([`Observer::wants_raw`]); empty otherwise.
        raw: &'a [RawStep],
    },
    /// Something the run has to tell that is not a trial: what its batches are doing, trials
    /// a batch left unanswered. It may come before `Started` (batches are submitted and
    /// polled before the first trial runs); the runner ignores an observer's answer to it.
    Notice(&'a Notice),
    /// Every scheduled trial has finished (or the run was stopped and in-flight trials ended).
    Finished(&'a RunTotals),
}

/// What the run tells its user between trials. Data, not text: the terminal observer words
/// it, so the runner never prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// `--batch`: trials already in batches an earlier attempt submitted; those are polled,
    /// not sent again.
    BatchesResumed { trials: usize },
    /// `--batch`: a batch was submitted for an arm.
    BatchSubmitted {
        api: String,
        id: String,
        arm: String,
        variant: String,
        requests: usize,
    },
    /// `--batch`: a poll of a running batch found it changed (`ended` once it is over).
    BatchPolled {
        batch: BatchProgress,
        /// Time since polling began, once the batch has ended.
        ended_after: Option<std::time::Duration>,
    },
    /// `--batch`: a line of a batch's results that could not be read.
    BatchUnreadableResult { batch: String, problem: String },
    /// `--batch`: an answer under a request id the batch did not send, ignored.
    BatchStrayAnswer { batch: String, id: String },
    /// `--batch`: requests of a completed batch that came back without an answer; their trials
    /// are not run (`--resume` submits them again).
    BatchUnanswered { batch: String, requests: usize },
    /// `--batch`: trials not run at the end because their batch returned no answer for them.
    TrialsNotReturned { trials: u64 },
    /// The command's interrupt fired (Ctrl-C, SIGTERM): no new trial starts, those in flight
    /// are abandoned, and the summary of what completed is written.
    Interrupted,
}

/// Where a batch stands, as the provider's status says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchProgress {
    pub id: String,
    pub api: String,
    /// The arm's provider name.
    pub provider: String,
    /// The provider's own word (`in_progress`, `ended`, `BATCH_STATE_RUNNING`).
    pub state: String,
    pub done: u64,
    pub failed: u64,
    pub total: u64,
}

/// How a run ended, as counted by the runner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunTotals {
    pub planned_trials: u64,
    pub completed_trials: u64,
    /// Planned trials never started because an observer stopped their case, arm or the run,
    /// or `--max-cost` was reached.
    pub skipped_trials: u64,
    /// Of those, the trials `--max-cost` left unstarted: the run was cut short by budget.
    pub budget_not_run: u64,
    /// Stopped by Ctrl-C (or a failed write) before every planned trial finished.
    pub interrupted: bool,
    /// Why planned trials were neither completed nor skipped in a run that was not
    /// interrupted (a worker that panicked, with its message). Empty when all is accounted.
    pub failures: Vec<String>,
}

impl RunTotals {
    /// A run that completed every one of its `n` planned trials.
    pub fn all_completed(n: u64) -> RunTotals {
        RunTotals {
            planned_trials: n,
            completed_trials: n,
            skipped_trials: 0,
            budget_not_run: 0,
            interrupted: false,
            failures: Vec::new(),
        }
    }

    /// Planned trials that were neither completed nor skipped.
    pub fn unaccounted(&self) -> u64 {
        self.planned_trials
            .saturating_sub(self.completed_trials + self.skipped_trials)
    }
}

/// The raw exchange of one step of a trial, for recording.
#[derive(Debug, Clone)]
pub struct RawStep {
    pub step: u32,
    pub attempts: u32,
    pub latency_ms: f64,
    pub response: RawResponse,
}

/// A response body exactly as received, or the infrastructure error the step ended in (its
/// message already redacted).
#[derive(Debug, Clone)]
pub enum RawResponse {
    Body(Bytes),
    Error {
        class: ErrorClass,
        status: Option<u16>,
        message: String,
    },
}

/// What an observer wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    Continue,
    Stop(StopScope),
    /// Stop scheduling `scope`: its evidence is decided. Trials of it still in flight finish
    /// and are reported marked `after_decision`, and no rate counts them.
    Decided(StopScope),
}

/// What to stop scheduling. Trials already in flight finish and are still reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopScope {
    /// The remaining trials of one case in one arm.
    Case { arm: usize, case: usize },
    /// Every remaining trial of one arm.
    Arm(usize),
    /// Every remaining trial.
    Run,
}

/// A sink or a decision-maker fed by the run's events.
pub trait Observer {
    /// Handles one event. An error (a file that cannot be written) stops the run: trials that
    /// cannot be stored must not be reported as measured.
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<Control, Error>;

    /// Whether this observer needs [`RunEvent::Trial::raw`] (a cassette recorder does);
    /// the runner keeps raw bodies only when someone does.
    fn wants_raw(&self) -> bool {
        false
    }

    /// Whether this observer judges complete rounds (trial r of every case) and decides only at
    /// their boundaries: the sequential suite gate, comparison, baseline gate and tune's race.
    /// The runner then shows it the trials round by round (a trial of round k only once every
    /// trial of the rounds before it has been observed), so a decision at the end of round k
    /// rests on exactly rounds 1..=k. Workers may run a few trials of later rounds meanwhile;
    /// shown after the decision, they are marked `after_decision` and counted by no rate, so
    /// what a run counts does not depend on timing.
    fn judges_rounds(&self) -> bool {
        false
    }
}

/// Fans every event out to several observers, in order, and merges their answers: the
/// widest stop wins, and every observer sees every event.
#[derive(Default)]
pub struct Observers<'o> {
    list: Vec<&'o mut dyn Observer>,
}

impl<'o> Observers<'o> {
    pub fn new() -> Self {
        Observers { list: Vec::new() }
    }

    pub fn push(&mut self, observer: &'o mut dyn Observer) -> &mut Self {
        self.list.push(observer);
        self
    }
}

impl Observer for Observers<'_> {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<Control, Error> {
        let mut control = Control::Continue;
        for o in &mut self.list {
            control = widest(control, o.on_event(event)?);
        }
        Ok(control)
    }

    fn wants_raw(&self) -> bool {
        self.list.iter().any(|o| o.wants_raw())
    }

    fn judges_rounds(&self) -> bool {
        self.list.iter().any(|o| o.judges_rounds())
    }
}

/// The wider of two answers: `Run` over `Arm` over `Case` over `Continue`. Two different
/// cases or arms cannot both be expressed in one answer, so the first one is kept; an
/// observer that needs several stops answers each on its own trial's event.
fn widest(a: Control, b: Control) -> Control {
    let rank = |c: &Control| match c {
        Control::Continue => 0,
        Control::Stop(StopScope::Case { .. }) | Control::Decided(StopScope::Case { .. }) => 1,
        Control::Stop(StopScope::Arm(_)) | Control::Decided(StopScope::Arm(_)) => 2,
        Control::Stop(StopScope::Run) | Control::Decided(StopScope::Run) => 3,
    };
    if rank(&b) > rank(&a) { b } else { a }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(Control, u32);

    impl Observer for Fixed {
        fn on_event(&mut self, _: &RunEvent<'_>) -> Result<Control, Error> {
            self.1 += 1;
            Ok(self.0)
        }
    }

    #[test]
    fn fan_out_reaches_everyone_and_the_widest_stop_wins() {
        let totals = RunTotals::all_completed(1);
        let mut a = Fixed(Control::Stop(StopScope::Case { arm: 0, case: 3 }), 0);
        let mut b = Fixed(Control::Stop(StopScope::Arm(1)), 0);
        let mut c = Fixed(Control::Continue, 0);
        let mut all = Observers::new();
        all.push(&mut a).push(&mut b).push(&mut c);
        let got = all.on_event(&RunEvent::Finished(&totals)).unwrap();
        assert_eq!(got, Control::Stop(StopScope::Arm(1)));
        assert!(!all.wants_raw());
        drop(all);
        assert_eq!((a.1, b.1, c.1), (1, 1, 1));
    }
}
