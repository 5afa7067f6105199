//! Trial planning and execution.
//!
//! A plan holds **arms** (provider × catalog variant) and cases; [`decode_job`] turns a job
//! number into (arm, case, trial) in trial-major order (every case's trial 0 in every arm, then
//! every trial 1, …) so a run stopped early still covers every case and arm evenly.
//! `concurrency` workers pull job numbers from one atomic counter, so nothing is allocated per
//! planned trial. Finished trials flow through one channel to a single collector that emits
//! them as [`RunEvent`]s to the observer the command composed (results store, CSV, cassette,
//! progress, aggregator…). The runner knows none of them; an observer's `Stop` answer stops
//! scheduling a case, an arm or the run. `--max-cost` is checked by the scheduler itself
//! ([`budget`]), not by an observer: observers hear of a trial when it ends, but the cap must
//! count a trial's cost from the moment it starts, so each trial holds its worst case first and
//! settles each request as it is billed.

pub mod batch;
pub mod budget;
mod compile;
mod conversation;
mod error;
mod script;
mod shard;
mod store;

pub use shard::{Shard, shard_of, unit_seed};
pub use store::ResultsStore;

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::SystemTime;

use tokio::sync::{mpsc, oneshot};

use compile::{ArmUnit, CaseUnit, Judge};
use toolscore_core::Error;
use toolscore_core::ErrorClass;
use toolscore_core::SCENARIO_DATASET;
use toolscore_core::{ArmId, Outcome, TrialRecord};
use toolscore_core::{
    ArmStart, Control, Notice, Observer, RawResponse, RawStep, RunEvent, RunTotals, StopScope,
    TrialKey,
};
use toolscore_core::{ModelTurn, Usage};
use toolscore_provider::cassette::Cassette;
use toolscore_provider::{Backend, Cancel, PreparedRequest, ProviderSettings, StepKey};
use toolscore_score::score_trial;
use toolscore_suite::Dataset;
use toolscore_suite::Scenario;

pub use error::{BatchError, RunError};

/// One arm: a provider (live or replayed) and the catalog variant it is shown.
#[derive(Clone)]
pub struct Arm {
    /// The provider; its `name` (unique within a plan) names the arm in records.
    pub settings: ProviderSettings,
    pub variant: String,
    /// Serve this arm's responses from a cassette instead of calling the provider;
    /// `settings` then hold what the cassette was recorded with.
    pub replay: Option<std::sync::Arc<Cassette>>,
    /// What its tokens cost; `None`: unknown (the cost of its trials is not recorded).
    pub price: Option<toolscore_provider::prices::ArmPrice>,
}

impl Arm {
    pub fn id(&self) -> ArmId {
        ArmId {
            variant: self.variant.clone(),
            provider: self.settings.name.clone(),
            model: self.settings.model.clone(),
        }
    }
}

/// A validated run: everything is known before the first request.
pub struct RunPlan {
    pub run_id: String,
    pub trials: u32,
    pub concurrency: usize,
    pub arms: Vec<Arm>,
    pub datasets: Vec<Dataset>,
    /// Multi-step scenarios, run after the datasets' cases in every round.
    pub scenarios: Vec<Arc<Scenario>>,
    /// Trials already completed by an earlier process of this run (`--resume`): not run
    /// again, not reported again.
    pub done: HashSet<TrialKey>,
    /// `--shard i/n`: run only the trials whose key hashes into this slice ([`shard`]).
    pub shard: Option<shard::Shard>,
    /// `--batch`: the trials go to the providers' batch APIs ([`batch`]).
    pub batch: Option<batch::BatchMode>,
    /// `--max-cost`: stop starting trials once spend plus the trials in flight would pass
    /// this many dollars ([`budget`]).
    pub max_cost: Option<f64>,
}

/// Open descriptors a trial's live MCP session holds, at most: a stdio server's three pipes
/// and its process handle, or an HTTP server's connections.
pub const MCP_SESSION_DESCRIPTORS: u64 = 4;

impl RunPlan {
    /// Open descriptors the run may hold per trial in flight, at most, so a caller can check
    /// `concurrency` against the process's limit before anything is sent:
    ///
    /// - the trial's connection to its provider, and, for each provider host, one idle
    ///   connection the shared pool may keep beside it (the pool keeps up to `concurrency`
    ///   idle per host, [`execute`]), when an arm calls a provider (a replay calls none);
    /// - [`MCP_SESSION_DESCRIPTORS`] when a scenario has a live MCP server, whose session is
    ///   opened per trial: a stdio server's three pipes and its process handle, or an HTTP
    ///   server's connections.
    pub fn descriptors_per_trial(&self) -> u64 {
        let hosts: std::collections::BTreeSet<&str> = self
            .arms
            .iter()
            .filter(|a| a.replay.is_none())
            .map(|a| origin(&a.settings.base_url))
            .collect();
        let provider = if hosts.is_empty() {
            0
        } else {
            1 + hosts.len() as u64
        };
        let mcp = if self.scenarios.iter().any(|s| s.server.is_some()) {
            MCP_SESSION_DESCRIPTORS
        } else {
            0
        };
        provider + mcp
    }

    /// Trials of each case (then each scenario), in plan order: its own `trials` or the
    /// plan's.
    pub fn case_trials(&self) -> Vec<u32> {
        self.datasets
            .iter()
            .flat_map(|d| d.cases.iter().map(|c| c.trials.unwrap_or(self.trials)))
            .chain(
                self.scenarios
                    .iter()
                    .map(|s| s.trials.unwrap_or(self.trials)),
            )
            .collect()
    }

    /// The most trials any case has: the jobs span this many rounds.
    pub fn max_trials(&self) -> u32 {
        self.case_trials().into_iter().max().unwrap_or(0)
    }

    /// Trials the plan runs: with a shard, those of its slice.
    pub fn planned_trials(&self) -> u64 {
        let case_trials = self.case_trials();
        let Some(shard) = self.shard else {
            return self.arms.len() as u64 * case_trials.iter().map(|&t| u64::from(t)).sum::<u64>();
        };
        let seeds = self.shard_seeds();
        let cases = case_trials.len();
        (0..self.arms.len())
            .flat_map(|arm| (0..cases).map(move |case| (arm, case)))
            .map(|(arm, case)| {
                let seed = seeds[arm * cases + case];
                (0..case_trials[case])
                    .filter(|&t| shard.contains(seed, t))
                    .count() as u64
            })
            .sum()
    }

    /// The shard hash seed of every (arm, case), at `arm * case_count + case`.
    pub fn shard_seeds(&self) -> Vec<u64> {
        let units: Vec<(&str, &str)> = self
            .datasets
            .iter()
            .flat_map(|d| d.cases.iter().map(|c| (d.name.as_str(), c.id.as_str())))
            .chain(
                self.scenarios
                    .iter()
                    .map(|s| (SCENARIO_DATASET, s.name.as_str())),
            )
            .collect();
        self.arms
            .iter()
            .flat_map(|a| {
                units.iter().map(|(dataset, case)| {
                    shard::unit_seed(&a.settings.name, &a.variant, dataset, case)
                })
            })
            .collect()
    }
}

/// Job `job` of a plan with `arms` arms and `cases` cases: trial-major, then case, then arm,
/// so the arms of one case run side by side and a run stopped early is balanced.
fn decode_job(job: u64, arms: usize, cases: usize) -> TrialKey {
    let arms = arms.max(1) as u64;
    let cases = cases.max(1) as u64;
    TrialKey {
        arm: (job % arms) as usize,
        case: ((job / arms) % cases) as usize,
        trial: (job / (arms * cases)) as u32,
    }
}

/// Shared, read-only state of the workers, plus the stop flags observers set.
struct Shared {
    run_id: String,
    arms: Vec<ArmUnit>,
    units: Vec<CaseUnit>,
    /// Opening request of each (arm, case), at `arm * cases + case`: encoded once.
    prepared: Vec<PreparedRequest>,
    /// Rounds of jobs: the most trials any case has.
    trials: u32,
    /// Trials of each case; a round beyond a case's count has no job for it.
    case_trials: Vec<u32>,
    done: HashSet<TrialKey>,
    /// `--shard`: the slice, and the hash seed of every (arm, case).
    shard: Option<(shard::Shard, Vec<u64>)>,
    /// `--batch`: the answers, served in place of requests.
    batch: Option<batch::Answers>,
    /// Trials a batch returned no answer for: not run.
    not_returned: AtomicU64,
    keep_raw: bool,
    next_job: AtomicU64,
    skipped: AtomicU64,
    /// Cancelled by the caller's interrupt (Ctrl-C, SIGTERM) or by a sink that failed: no new
    /// trial starts, and requests in flight and backoff sleeps are abandoned. A run whose
    /// token is cancelled is `interrupted`.
    cancel: Cancel,
    stop_run: AtomicBool,
    stop_arm: Vec<AtomicBool>,
    stop_case: Vec<AtomicBool>,
    /// The scopes a sequential test decided (`Control::Decided`), laid out as the stop flags:
    /// a trial of one that finishes after the decision is marked `after_decision`.
    decided: Decided,
    /// Round boundaries, when an observer judges rounds.
    rounds: Option<Arc<RoundBarrier>>,
    /// `--max-cost`, and the trials it left unstarted.
    budget: Option<budget::Budget>,
    budget_not_run: AtomicU64,
}

/// The round boundaries of a run some observer judges by rounds
/// ([`Observer::judges_rounds`]). The observer sees the trials round by round: a trial of
/// round k is shown to it only once every job of the rounds before k is settled (observed
/// with its answer applied, or passed over), so a test that decides at the end of round k
/// has seen exactly rounds 1..=k, whatever the timing.
///
/// The workers may run ahead of the observer, so that a round's slowest trials do not idle
/// the others: a trial of a later round (at most enough rounds ahead to fill the workers)
/// starts while its earlier rounds finish, holding one of `concurrency` permits, and waits
/// with the collector until its turn. When the test decides at round k, every trial of a
/// later round is shown after the decision, so it is marked `after_decision`: kept in
/// results.jsonl with its cost, counted by no rate. At most [`AHEAD_PER_WORKER`] trials a
/// worker are ever ahead, so the waiting records are bounded as the trials in flight are,
/// and so is what a decision leaves uncounted.
/// Trials a worker may run ahead of their round's turn ([`RoundBarrier`]). Measured with
/// `cargo bench --bench rounds` (a provider's latency tail, rounds of 40 trials): one a
/// worker keeps 0.59–0.93 of the fixed design's trials per second, two 0.81–1.00, four
/// 1.00 at every concurrency from 8 to 64. A waiting trial holds its finished record: a few
/// KiB for a fixture, at most its snapshots, final state and answers for a scenario.
const AHEAD_PER_WORKER: usize = 4;

struct RoundBarrier {
    /// Jobs per round: arms × units (jobs are numbered trial-major, [`decode_job`]).
    per_round: u64,
    /// How many rounds past the lowest unsettled job's a worker may start a trial in.
    lookahead_rounds: u64,
    /// The trials started ahead of their turn and not yet observed.
    ahead: Arc<tokio::sync::Semaphore>,
    /// The lowest job not yet settled, and the settled jobs above it (at most the jobs in
    /// flight or waiting: they are fetched in order).
    settled: std::sync::Mutex<(u64, std::collections::BTreeSet<u64>)>,
    /// The lowest unsettled job, for the workers and the collector waiting on it.
    low: tokio::sync::watch::Sender<u64>,
}

impl RoundBarrier {
    /// Rounds of `per_round` jobs, run by `workers` workers: [`AHEAD_PER_WORKER`] trials a
    /// worker may run ahead, over as many rounds as they span.
    fn new(per_round: u64, workers: usize) -> Self {
        let per_round = per_round.max(1);
        let ahead = workers.max(1) * AHEAD_PER_WORKER;
        RoundBarrier {
            per_round,
            lookahead_rounds: (ahead as u64).div_ceil(per_round),
            ahead: Arc::new(tokio::sync::Semaphore::new(ahead)),
            settled: std::sync::Mutex::new((0, std::collections::BTreeSet::new())),
            low: tokio::sync::watch::Sender::new(0),
        }
    }

    fn first_of_round(&self, job: u64) -> u64 {
        job / self.per_round * self.per_round
    }

    /// Whether `job` must wait for its turn: a job of an earlier round is not yet settled.
    fn is_ahead(&self, job: u64) -> bool {
        *self.low.borrow() < self.first_of_round(job)
    }

    /// Marks `job` settled and moves the low mark past every settled job.
    fn settle(&self, job: u64) {
        let mut guard = self
            .settled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (low, above) = &mut *guard;
        if job != *low {
            above.insert(job);
            return;
        }
        *low += 1;
        while above.remove(low) {
            *low += 1;
        }
        self.low.send_replace(*low);
    }

    /// Waits until `job` may start: its round is the lowest unsettled job's, or within the
    /// lookahead and a permit to run ahead is free. The permit, if one was taken, is held
    /// until the trial is observed.
    async fn wait_to_start(&self, job: u64) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let first_of_round = self.first_of_round(job);
        let earliest = first_of_round.saturating_sub(self.lookahead_rounds * self.per_round);
        let mut low = self.low.subscribe();
        // The sender lives in `Shared` as long as any worker: the waits cannot fail.
        let _ = low.wait_for(|&low| low >= earliest).await;
        if *low.borrow() >= first_of_round {
            return None;
        }
        tokio::select! {
            _ = low.wait_for(|&low| low >= first_of_round) => None,
            permit = Arc::clone(&self.ahead).acquire_owned() => permit.ok(),
        }
    }
}

/// A job fetched by a worker: settled on the barrier when dropped, whichever way the job
/// ended (run and observed, passed over, abandoned). A finished trial's ticket travels with
/// its record to the collector and is dropped once the observer has seen it.
struct Ticket {
    barrier: Option<Arc<RoundBarrier>>,
    job: u64,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some(barrier) = &self.barrier {
            barrier.settle(self.job);
        }
    }
}

/// Which scopes a sequential test has decided, and with which trial: the run, each arm, each
/// (arm, case). Each holds the first trial index the decision does not cover (the deciding
/// trial's plus one; 0 when decided before any trial), [`UNDECIDED`] until then.
struct Decided {
    run: AtomicU32,
    arm: Vec<AtomicU32>,
    case: Vec<AtomicU32>,
}

/// A scope no test has decided.
const UNDECIDED: u32 = u32::MAX;

impl Decided {
    fn new(arms: usize, cases: usize) -> Self {
        Decided {
            run: AtomicU32::new(UNDECIDED),
            arm: (0..arms).map(|_| AtomicU32::new(UNDECIDED)).collect(),
            case: (0..arms * cases)
                .map(|_| AtomicU32::new(UNDECIDED))
                .collect(),
        }
    }
}

impl Shared {
    fn stopped(&self, key: TrialKey) -> bool {
        self.stop_run.load(Ordering::Relaxed)
            || self.stop_arm[key.arm].load(Ordering::Relaxed)
            || self.stop_case[key.arm * self.units.len() + key.case].load(Ordering::Relaxed)
    }

    /// Whether the trial `key`, shown to the observers now, comes after a decision of a scope
    /// that holds it, so no rate counts it. A design judged by rounds decides at the end of a
    /// round: a trial of that round or an earlier one is the decision's, whenever it is shown
    /// (the round's trials of other groups may come after its last); any other design decided
    /// on what it had seen, so every trial shown after the decision is after it.
    fn decided(&self, key: TrialKey) -> bool {
        let d = &self.decided;
        let covered = d
            .run
            .load(Ordering::Relaxed)
            .min(d.arm[key.arm].load(Ordering::Relaxed))
            .min(d.case[key.arm * self.units.len() + key.case].load(Ordering::Relaxed));
        match (covered, &self.rounds) {
            (UNDECIDED, _) => false,
            (covered, Some(_)) => key.trial >= covered,
            (_, None) => true,
        }
    }

    /// What an observer answered on seeing the trial `seen` (none for the run's start): stop
    /// scheduling, and, for a decision, remember its scope and the trials it covers.
    fn answer(&self, control: Control, seen: Option<TrialKey>) {
        match control {
            Control::Continue => {}
            Control::Stop(scope) => self.apply(scope),
            Control::Decided(scope) => {
                self.apply(scope);
                let covered = seen.map_or(0, |k| k.trial.saturating_add(1));
                let d = &self.decided;
                let flag = match scope {
                    StopScope::Run => Some(&d.run),
                    StopScope::Arm(a) => d.arm.get(a),
                    StopScope::Case { arm, case } => (case < self.units.len())
                        .then(|| d.case.get(arm * self.units.len() + case))
                        .flatten(),
                };
                if let Some(flag) = flag {
                    flag.fetch_min(covered, Ordering::SeqCst);
                }
            }
        }
    }

    fn apply(&self, scope: StopScope) {
        match scope {
            StopScope::Run => self.stop_run.store(true, Ordering::SeqCst),
            StopScope::Arm(a) => {
                if let Some(flag) = self.stop_arm.get(a) {
                    flag.store(true, Ordering::SeqCst);
                }
            }
            StopScope::Case { arm, case } => {
                if case < self.units.len()
                    && let Some(flag) = self.stop_case.get(arm * self.units.len() + case)
                {
                    flag.store(true, Ordering::SeqCst);
                }
            }
        }
    }
}

/// The scheme, host and port of a URL (what a connection pool keys its connections by).
fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let end = url[after_scheme..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| after_scheme + i);
    &url[..end]
}

/// Runs every planned trial and feeds each to `observer`. Cancelling `interrupt` (the command
/// does on Ctrl-C or SIGTERM) stops scheduling and abandons requests in flight; the run says
/// so with [`Notice::Interrupted`], and reports what completed (`interrupted: true`).
///
/// Three steps: compile the plan into case views and prepared requests ([`compile`]), schedule
/// the trials over the workers while the observer sees each one ([`schedule`]), then account
/// for what ran ([`finish`]).
pub async fn execute(
    plan: RunPlan,
    observer: &mut dyn Observer,
    interrupt: &Cancel,
) -> Result<RunTotals, RunError> {
    let client = toolscore_provider::http_client(plan.concurrency)?;
    let planned = plan.planned_trials();
    let case_trials = plan.case_trials();
    let max_trials = plan.max_trials();
    let shard = plan.shard.map(|s| (s, plan.shard_seeds()));
    let compiled = compile::compile(plan.arms, &plan.datasets, &plan.scenarios, &client)?;
    let budget = plan
        .max_cost
        .map(|max| budget::Budget::new(max, compiled.arms.len()));
    let batch = match &plan.batch {
        None => None,
        Some(mode) => {
            let wanted = wanted_trials(
                compiled.arms.len(),
                &case_trials,
                max_trials,
                shard.as_ref(),
                &plan.done,
            );
            Some(batch_answers(mode, &plan.run_id, &compiled, &wanted, observer, interrupt).await?)
        }
    };
    let first = announce(observer, &plan.run_id, planned, &compiled.arms)?;
    let cancel = interrupt.child_token();
    let workers = plan.concurrency.max(1).min(planned.max(1) as usize);
    let arm_count = compiled.arms.len();
    let case_count = compiled.units.len();
    let shared = Arc::new(Shared {
        run_id: plan.run_id,
        stop_arm: (0..arm_count).map(|_| AtomicBool::new(false)).collect(),
        stop_case: (0..arm_count * case_count)
            .map(|_| AtomicBool::new(false))
            .collect(),
        arms: compiled.arms,
        units: compiled.units,
        prepared: compiled.prepared,
        trials: max_trials,
        case_trials,
        done: plan.done,
        shard,
        batch,
        not_returned: AtomicU64::new(0),
        keep_raw: observer.wants_raw(),
        next_job: AtomicU64::new(0),
        skipped: AtomicU64::new(0),
        cancel,
        budget,
        budget_not_run: AtomicU64::new(0),
        stop_run: AtomicBool::new(false),
        decided: Decided::new(arm_count, case_count),
        rounds: observer
            .judges_rounds()
            .then(|| Arc::new(RoundBarrier::new((arm_count * case_count) as u64, workers))),
    });
    shared.answer(first, None);
    let (completed, handles) = schedule(&shared, workers, observer, interrupt).await?;
    Ok(finish(&shared, handles, planned, completed, observer).await?)
}

/// Every trial the plan still has to run: in the shard, not done by an earlier process.
fn wanted_trials(
    arms: usize,
    case_trials: &[u32],
    max_trials: u32,
    shard: Option<&(shard::Shard, Vec<u64>)>,
    done: &HashSet<TrialKey>,
) -> Vec<TrialKey> {
    let cases = case_trials.len();
    (0..(arms * cases) as u64 * u64::from(max_trials))
        .map(|job| decode_job(job, arms, cases))
        .filter(|k| k.trial < case_trials[k.case])
        .filter(|k| {
            shard.is_none_or(|(s, seeds)| s.contains(seeds[k.arm * cases + k.case], k.trial))
        })
        .filter(|k| !done.contains(k))
        .collect()
}

/// `--batch`: submits (or, on `--resume`, polls) the wanted trials' requests to the providers'
/// batch APIs and waits for the answers; Ctrl-C leaves the batches running.
async fn batch_answers(
    mode: &batch::BatchMode,
    run_id: &str,
    compiled: &compile::Compiled,
    wanted: &[TrialKey],
    observer: &mut dyn Observer,
    interrupt: &Cancel,
) -> Result<batch::Answers, RunError> {
    let batch_arms = compiled
        .arms
        .iter()
        .map(|a| match &a.backend {
            Backend::Live(provider) => Ok(batch::BatchArm {
                provider,
                name: &a.id.provider,
                variant: &a.id.variant,
            }),
            Backend::Replay(_) => Err(Error::Internal(format!(
                "arm `{}` replays a cassette; --batch sends to a provider",
                a.id.provider
            ))),
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let gathered = batch::gather(
        mode,
        run_id,
        &batch_arms,
        &compiled.prepared,
        compiled.units.len(),
        wanted,
        observer,
    );
    tokio::select! {
        answers = gathered => answers,
        () = interrupt.cancelled() => Err(Error::Interrupted(
            "the submitted batches keep running at their providers (ids in batches.json); `--resume` polls them and collects their answers",
        ).into()),
    }
}

/// The `Started` event: the plan's size and every arm's identity.
fn announce(
    observer: &mut dyn Observer,
    run_id: &str,
    planned: u64,
    arms: &[compile::ArmUnit],
) -> Result<Control, Error> {
    let arm_starts: Vec<ArmStart<'_>> = arms
        .iter()
        .map(|a| ArmStart {
            name: &a.id.provider,
            variant: &a.id.variant,
            identity: &a.identity,
        })
        .collect();
    observer.on_event(&RunEvent::Started {
        run_id,
        planned_trials: planned,
        arms: &arm_starts,
    })
}

/// Runs `workers` workers over the jobs and hands each finished trial to `observer`, applying
/// the stops it answers. A sink that fails stops the run (records that cannot be stored must
/// not be reported as measured) and is the error returned, once the workers have drained.
async fn schedule(
    shared: &Arc<Shared>,
    workers: usize,
    observer: &mut dyn Observer,
    interrupt: &Cancel,
) -> Result<(u64, Vec<tokio::task::JoinHandle<()>>), Error> {
    let (tx, mut rx) = mpsc::channel::<Finished>(workers);
    let mut handles = Vec::with_capacity(workers);
    for _ in 0..workers {
        let shared = Arc::clone(shared);
        let tx = tx.clone();
        handles.push(tokio::spawn(async move { worker(shared, tx).await }));
    }
    drop(tx);
    let mut completed = 0u64;
    let mut sink_error = None;
    let mut told_interrupted = false;
    // Trials that ran ahead of their round's turn ([`RoundBarrier`]), by job: at most
    // `AHEAD_PER_WORKER` a worker (the barrier's permits).
    let mut waiting: std::collections::BTreeMap<u64, Finished> = std::collections::BTreeMap::new();
    let mut low = shared.rounds.as_ref().map(|b| b.low.subscribe());
    loop {
        // The waiting trials whose turn has come, in job order.
        if let Some(barrier) = &shared.rounds {
            while let Some(entry) = waiting.first_entry() {
                if barrier.is_ahead(*entry.key()) {
                    break;
                }
                observe(shared, observer, entry.remove(), &mut sink_error);
            }
        }
        // The interrupt first: told as soon as it fires, before the trials it abandons drain.
        let next = tokio::select! {
            biased;
            () = interrupt.cancelled(), if !told_interrupted => {
                told_interrupted = true;
                if let Err(e) = observer.on_event(&RunEvent::Notice(&Notice::Interrupted)) {
                    sink_error.get_or_insert(e);
                }
                continue;
            }
            // A job settled (passed over by a worker): a waiting trial's turn may have come.
            _ = async { low.as_mut().map(|l| l.changed()).expect("waiting only with a barrier").await }, if !waiting.is_empty() => continue,
            next = rx.recv() => next,
        };
        let Some(mut finished) = next else {
            break;
        };
        completed += 1;
        match &shared.rounds {
            Some(barrier) if barrier.is_ahead(finished.ticket.job) => {
                // Its worker goes on; the observer sees it once its earlier rounds are settled.
                if let Some(observed) = finished.observed.take() {
                    let _ = observed.send(());
                }
                waiting.insert(finished.ticket.job, finished);
            }
            _ => observe(shared, observer, finished, &mut sink_error),
        }
    }
    // Every worker is done: the lowest waiting trial is the lowest unsettled job, and each
    // one observed settles the next.
    while let Some((_, finished)) = waiting.pop_first() {
        observe(shared, observer, finished, &mut sink_error);
    }
    // Fired as the last trial ended: the run still counts as interrupted, so it says so.
    if interrupt.is_cancelled()
        && !told_interrupted
        && let Err(e) = observer.on_event(&RunEvent::Notice(&Notice::Interrupted))
    {
        sink_error.get_or_insert(e);
    }
    match sink_error {
        Some(e) => Err(e),
        None => Ok((completed, handles)),
    }
}

/// Shows one finished trial to the observer and applies its answer, then settles its job on
/// the round barrier (the ticket is dropped here) and lets its worker go on. A sink that
/// fails cancels the run, and no later trial is shown.
fn observe(
    shared: &Shared,
    observer: &mut dyn Observer,
    finished: Finished,
    sink_error: &mut Option<Error>,
) {
    let Finished {
        key,
        mut record,
        raw,
        observed,
        ticket,
        ahead,
    } = finished;
    // In flight, or ahead of its round, when a sequential test decided its scope: kept, but
    // counted by no rate.
    record.after_decision = shared.decided(key);
    if sink_error.is_none() {
        match observer.on_event(&RunEvent::Trial {
            key,
            record: &record,
            raw: &raw,
        }) {
            Ok(control) => shared.answer(control, Some(key)),
            Err(e) => {
                shared.cancel.cancel();
                *sink_error = Some(e);
            }
        }
    }
    // Settled only now, with the answer applied: a stop holds for every trial of a later
    // round that has not started.
    drop((ticket, ahead));
    // The worker waits for this before it takes its next job, so a stop answered here
    // holds for every trial not yet started: none begins after it.
    if let Some(observed) = observed {
        let _ = observed.send(());
    }
}

/// Accounts for the run once the workers are done: batches marked collected, worker panics
/// named, skipped trials counted, and the `Finished` event.
async fn finish(
    shared: &Shared,
    handles: Vec<tokio::task::JoinHandle<()>>,
    planned: u64,
    completed: u64,
    observer: &mut dyn Observer,
) -> Result<RunTotals, Error> {
    if let Some(answers) = &shared.batch
        && !shared.cancel.is_cancelled()
    {
        answers.mark_collected()?;
        let trials = shared.not_returned.load(Ordering::SeqCst);
        if trials > 0 {
            observer.on_event(&RunEvent::Notice(&Notice::TrialsNotReturned { trials }))?;
        }
    }
    // A worker that panicked took its trial with it; the others went on with the remaining
    // jobs. Say so: the totals then do not account for every planned trial.
    let mut failures = Vec::new();
    for handle in handles {
        if let Err(e) = handle.await
            && e.is_panic()
        {
            let payload = e.into_panic();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            failures.push(format!("a worker failed: {message}"));
        }
    }
    let interrupted = shared.cancel.is_cancelled();
    let budget_not_run = shared.budget_not_run.load(Ordering::SeqCst);
    let mut skipped = shared.skipped.load(Ordering::SeqCst) + budget_not_run;
    if !interrupted && shared.stop_run.load(Ordering::SeqCst) {
        // An observer stopped the run: the jobs never taken were skipped on its word.
        skipped = planned.saturating_sub(completed + shared.done.len() as u64);
    }
    let totals = RunTotals {
        planned_trials: planned,
        completed_trials: completed,
        skipped_trials: skipped,
        budget_not_run,
        interrupted,
        failures,
    };
    observer.on_event(&RunEvent::Finished(&totals))?;
    Ok(totals)
}

/// One finished trial on its way to the collector.
struct Finished {
    key: TrialKey,
    record: TrialRecord,
    /// The raw steps, when an observer wants them.
    raw: Vec<RawStep>,
    /// Fired once the observer has seen the trial and its answer is applied, or, for a trial
    /// that ran ahead of its round's turn, once it is waiting with the collector.
    observed: Option<oneshot::Sender<()>>,
    /// Its job, settled once the observer has seen it.
    ticket: Ticket,
    /// The permit a trial that ran ahead of its round's turn holds until it is seen.
    ahead: Option<tokio::sync::OwnedSemaphorePermit>,
}

async fn worker(shared: Arc<Shared>, tx: mpsc::Sender<Finished>) {
    let cases = shared.units.len();
    let arms = shared.arms.len();
    let total = (cases * arms) as u64 * u64::from(shared.trials);
    loop {
        if shared.cancel.is_cancelled() || shared.stop_run.load(Ordering::Relaxed) {
            return;
        }
        let job = shared.next_job.fetch_add(1, Ordering::Relaxed);
        if job >= total {
            return;
        }
        let ticket = Ticket {
            barrier: shared.rounds.clone(),
            job,
        };
        let key = decode_job(job, arms, cases);
        if key.trial >= shared.case_trials[key.case] {
            continue;
        }
        if let Some((shard, seeds)) = &shared.shard
            && !shard.contains(seeds[key.arm * cases + key.case], key.trial)
        {
            continue;
        }
        if shared.done.contains(&key) {
            continue;
        }
        let mut ahead = None;
        if let Some(barrier) = &shared.rounds {
            tokio::select! {
                permit = barrier.wait_to_start(job) => ahead = permit,
                () = shared.cancel.cancelled() => return,
            }
        }
        if shared.stopped(key) {
            shared.skipped.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        if shared.batch.as_ref().is_some_and(|b| b.get(key).is_none()) {
            shared.not_returned.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        // The trial is held at its worst case over every request it may make before it
        // starts; each request then draws on the hold and is settled when billed.
        let mut hold = None;
        if let Some(budget) = &shared.budget {
            let opening = &shared.prepared[key.arm * cases + key.case];
            let worst = shared.arms[key.arm].worst_case_usd(opening);
            let requests = shared.units[key.case].views[shared.arms[key.arm].variant].requests();
            match budget.admit(key.arm, worst, requests, &shared.cancel).await {
                budget::Admission::Admitted(h) => hold = Some(h),
                budget::Admission::Refused => {
                    // The cap is reached: this trial and every later one are not run.
                    shared.budget_not_run.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                budget::Admission::Cancelled => return,
            }
            // The wait for room may have outlasted the case: a sequential gate stops cases.
            if shared.stopped(key) {
                shared.skipped.fetch_add(1, Ordering::Relaxed);
                continue;
            }
        }
        // A trial abandoned by Ctrl-C measured nothing: it is not reported (a resumed run
        // runs it again), and the run is marked interrupted.
        let finished = match run_trial(&shared, key, &mut hold).await {
            TrialRun::Ran(ran) => Some(*ran),
            TrialRun::NotRunByBudget => {
                shared.budget_not_run.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            TrialRun::Abandoned => None,
        };
        drop(hold);
        let Some((record, raw)) = finished else {
            return;
        };
        let (observed, seen) = oneshot::channel();
        let finished = Finished {
            key,
            record,
            raw,
            observed: Some(observed),
            ticket,
            ahead,
        };
        if tx.send(finished).await.is_err() || seen.await.is_err() {
            return;
        }
    }
}

/// How one trial's run ended.
enum TrialRun {
    /// Boxed: a record is large beside the other two outcomes.
    Ran(Box<(TrialRecord, Vec<RawStep>)>),
    /// `--max-cost` could not cover its first request: nothing was sent, the trial is not run.
    NotRunByBudget,
    /// Ctrl-C.
    Abandoned,
}

/// What a trial has gathered so far, passed whole to the code that runs its steps: its record,
/// the raw steps kept for recording, and its hold on `--max-cost`.
pub(crate) struct TrialState<'t, 'b> {
    pub(crate) record: &'t mut TrialRecord,
    pub(crate) raw: &'t mut Vec<RawStep>,
    pub(crate) hold: &'t mut Option<budget::TrialHold<'b>>,
}

/// Which arm asks, and the opening request of the case it asks.
struct ArmRequest<'a> {
    arm: &'a ArmUnit,
    opening: &'a PreparedRequest,
}

/// How a fixture's answer is judged: its expectation and the catalog's validators.
struct FixtureJudge<'a> {
    expect: &'a toolscore_score::Expectation,
    validators: &'a toolscore_score::ToolValidators,
}

/// Runs one trial as a conversation, one step at a time. A single-call fixture is one step:
/// its opening request, encoded once per case, answered and scored.
async fn run_trial(
    shared: &Shared,
    key: TrialKey,
    hold: &mut Option<budget::TrialHold<'_>>,
) -> TrialRun {
    let unit = &shared.units[key.case];
    let arm = &shared.arms[key.arm];
    let view = &unit.views[arm.variant];
    let opening = &shared.prepared[key.arm * shared.units.len() + key.case];
    let started_at = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
    let mut record = TrialRecord {
        run_id: shared.run_id.clone(),
        dataset: unit.dataset.clone(),
        case_id: unit.case_id.clone(),
        arm: arm.id.clone(),
        trial_index: key.trial,
        expected: view.expected.clone(),
        tags: unit.tags.clone(),
        outcome: Outcome::Error,
        score: None,
        turns: Vec::new(),
        usage: Usage::default(),
        latency_ms: 0.0,
        attempts: 0,
        error_class: None,
        error: None,
        started_at,
        request_hash: opening.request_hash.clone(),
        trajectory: None,
        scenario: None,
        attack: None,
        batch: None,
        cost: None,
        after_decision: false,
    };
    let mut raw = Vec::new();
    match &view.judge {
        Judge::Fixture(expect) => {
            let ran = run_fixture(
                shared,
                key,
                ArmRequest { arm, opening },
                FixtureJudge {
                    expect,
                    validators: &view.validators,
                },
                TrialState {
                    record: &mut record,
                    raw: &mut raw,
                    hold,
                },
            )
            .await;
            if ran.is_none() {
                return TrialRun::Abandoned;
            }
        }
        Judge::Scenario {
            scenario,
            catalog,
            variant,
        } => {
            let ran = conversation::run_scenario_loop(
                shared,
                key,
                (arm, opening),
                conversation::ScenarioView {
                    scenario,
                    catalog,
                    variant,
                    validators: &view.validators,
                },
                TrialState {
                    record: &mut record,
                    raw: &mut raw,
                    hold,
                },
            )
            .await;
            if ran.is_none() {
                return TrialRun::Abandoned;
            }
        }
    }
    if record.outcome == Outcome::BudgetStopped && record.turns.is_empty() {
        return TrialRun::NotRunByBudget;
    }
    record.cost = trial_cost(arm.price.as_ref(), &record);
    if let (Some(cost), Some(hold)) = (&mut record.cost, hold.as_ref()) {
        cost.worst_case_usd = Some(hold.worst_usd());
    }
    TrialRun::Ran(Box::new((record, raw)))
}

/// A single-call fixture's one step: the batch's answer or the provider's, scored.
async fn run_fixture(
    shared: &Shared,
    key: TrialKey,
    ArmRequest { arm, opening }: ArmRequest<'_>,
    FixtureJudge { expect, validators }: FixtureJudge<'_>,
    TrialState { record, raw, hold }: TrialState<'_, '_>,
) -> Option<()> {
    let step = StepKey {
        conversation: &opening.request_hash,
        trial: key.trial,
        step: 0,
    };
    let answered = shared.batch.as_ref().and_then(|b| b.get(key));
    let (result, latency) = match answered {
        Some((result, reference)) => {
            record.batch = Some(reference.clone());
            (result.clone(), std::time::Duration::ZERO)
        }
        None => {
            if !cover_request(hold, arm, opening, record, 0) {
                return Some(());
            }
            arm.backend.step(opening, step, &shared.cancel).await
        }
    };
    let answered = record_step(shared, record, raw, 0, result, latency)?;
    if record.batch.is_none() {
        settle_request(hold, arm, record, answered);
    }
    record.usage = total_usage(&record.turns);
    if record.error_class.is_none() {
        let score = score_trial(expect, &record.turns, validators);
        record.outcome = if score.passed {
            Outcome::Pass
        } else {
            Outcome::Fail
        };
        record.score = Some(score);
    }
    Some(())
}

/// What the trial cost at its arm's price; a trial a provider batch answered is billed at the
/// batch price.
/// Covers a request with the trial's hold on `--max-cost` before it is sent; when the cap
/// cannot, the trial ends here, stopped by the budget (`false`). Without a cap, every request
/// is covered.
fn cover_request(
    hold: &mut Option<budget::TrialHold<'_>>,
    arm: &ArmUnit,
    request: &PreparedRequest,
    record: &mut TrialRecord,
    step: u32,
) -> bool {
    let Some(hold) = hold.as_mut() else {
        return true;
    };
    let worst = arm.worst_case_usd(request);
    if hold.before_request(worst) {
        return true;
    }
    record.outcome = Outcome::BudgetStopped;
    record.error_class = Some(ErrorClass::Budget);
    record.error = Some(format!(
        "--max-cost: step {step} would cost up to ${worst:.6} and pass the cap; the trial ends here, neither judged nor an infrastructure error"
    ));
    false
}

/// Settles the request just answered (or failed) against the cap at what it was billed: its
/// turn's usage at the arm's price; nothing for an error, which reports no usage.
fn settle_request(
    hold: &mut Option<budget::TrialHold<'_>>,
    arm: &ArmUnit,
    record: &TrialRecord,
    answered: bool,
) {
    let Some(hold) = hold.as_mut() else {
        return;
    };
    let billed = match record.turns.last() {
        Some(turn) if answered => arm
            .price
            .as_ref()
            .and_then(|p| p.price.cost_of(&turn.usage)),
        _ => Some(0.0),
    };
    hold.after_request(billed);
}

fn trial_cost(
    price: Option<&toolscore_provider::prices::ArmPrice>,
    record: &TrialRecord,
) -> Option<toolscore_core::TrialCost> {
    price.and_then(|p| {
        let (discount, source) = match (&record.batch, p.batch_discount) {
            (Some(_), Some(d)) => (
                d,
                format!("{} at the batch price (-{:.0}%)", p.source, d * 100.0),
            ),
            _ => (0.0, p.source.clone()),
        };
        p.price
            .cost_of_turns(&record.turns)
            .map(|usd| toolscore_core::TrialCost {
                usd: usd * (1.0 - discount),
                price: p.price,
                price_source: source,
                worst_case_usd: None,
            })
    })
}

/// Records one step's answer (or error) in the trial record and the raw steps. `Some(true)`
/// when the step answered, `Some(false)` on an error, `None` when Ctrl-C abandoned it.
fn record_step(
    shared: &Shared,
    record: &mut TrialRecord,
    raw: &mut Vec<RawStep>,
    step: u32,
    result: Result<toolscore_provider::Exchange, toolscore_provider::ProviderError>,
    latency: std::time::Duration,
) -> Option<bool> {
    if result
        .as_ref()
        .is_err_and(|e| e.class == ErrorClass::Cancelled)
    {
        return None;
    }
    let latency_ms = latency.as_secs_f64() * 1000.0;
    record.latency_ms += latency_ms;
    let (attempts, response, answered) = match result {
        Ok(exchange) => {
            record.turns.push(exchange.turn);
            (
                exchange.attempts,
                RawResponse::Body(exchange.raw_body),
                true,
            )
        }
        Err(e) => {
            record.error_class = Some(e.class);
            record.error = Some(e.to_string());
            let response = RawResponse::Error {
                class: e.class,
                status: e.status,
                message: e.message,
            };
            (e.attempts, response, false)
        }
    };
    record.attempts += attempts;
    if shared.keep_raw {
        raw.push(RawStep {
            step,
            attempts,
            latency_ms,
            response,
        });
    }
    Some(answered)
}

/// Token counts summed over the turns; a count stays unknown when no turn reported it.
fn total_usage(turns: &[ModelTurn]) -> Usage {
    let sum = |pick: fn(&Usage) -> Option<u64>| {
        turns
            .iter()
            .filter_map(|t| pick(&t.usage))
            .reduce(|a, b| a + b)
    };
    Usage {
        input_tokens: sum(|u| u.input_tokens),
        output_tokens: sum(|u| u.output_tokens),
        cache_read_tokens: sum(|u| u.cache_read_tokens),
        cache_write_tokens: sum(|u| u.cache_write_tokens),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_keys_connections_by_origin() {
        assert_eq!(origin("http://127.0.0.1:9/v1"), "http://127.0.0.1:9");
        assert_eq!(
            origin("https://api.openai.com/v1?x=1"),
            "https://api.openai.com"
        );
        assert_eq!(origin("https://h.example"), "https://h.example");
    }

    #[test]
    fn jobs_decode_trial_major_then_case_then_arm_and_cover_the_plan_once() {
        // One arm: job = trial * cases + case, as before arms existed.
        assert_eq!(
            decode_job(7, 1, 3),
            TrialKey {
                arm: 0,
                case: 1,
                trial: 2
            }
        );
        let (arms, cases, trials) = (2usize, 3usize, 4u32);
        let mut seen = std::collections::HashSet::new();
        let mut last_trial = 0;
        for job in 0..(arms * cases) as u64 * u64::from(trials) {
            let k = decode_job(job, arms, cases);
            assert!(k.trial >= last_trial, "trial-major");
            last_trial = k.trial;
            assert!(seen.insert((k.arm, k.case, k.trial)));
        }
        assert_eq!(seen.len(), arms * cases * trials as usize);
        // The arms of one case are adjacent.
        assert_eq!(decode_job(0, 2, 3).case, decode_job(1, 2, 3).case);
    }

    #[test]
    fn usage_sums_known_counts_only() {
        let turn = |i: Option<u64>, o: Option<u64>| ModelTurn {
            tool_calls: Vec::new(),
            text: None,
            usage: Usage {
                input_tokens: i,
                output_tokens: o,
                ..Usage::default()
            },
            finish: None,
        };
        let u = total_usage(&[turn(Some(3), None), turn(Some(4), None)]);
        assert_eq!(u.input_tokens, Some(7));
        assert_eq!(u.output_tokens, None);
    }
}
