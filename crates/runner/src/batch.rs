//! Public as a namespace: callers write `batch::STATE_FILE`, `batch::uncollected`, `batch::BatchMode`.
//!
//! `run --batch`: the plan's single-step trials go to each provider's batch API instead of one
//! request each. Every trial is one batch request whose `custom_id` names its key (arm, case,
//! trial), so answers map back whatever order they return in. Each batch's id is written to
//! the run folder's `batches.json` before it is polled: a killed process resumed with
//! `--resume` polls the same batches instead of submitting again. Once every batch has ended,
//! the answers are served to the runner in place of requests, and trials are scored and
//! stored like any others.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

use toolscore_core::BatchRef;
use toolscore_core::ErrorClass;
use toolscore_core::{BatchProgress, Notice, Observer, RunEvent, TrialKey};
use toolscore_core::{Error, InputError};
use toolscore_provider::batch::{
    BatchApi, BatchClient, BatchEnd, BatchLine, BatchStatus, chunk_lines,
};
use toolscore_provider::{Exchange, PreparedRequest, Provider, ProviderError};

use crate::{BatchError, RunError};

/// The run folder's file of submitted batches.
pub const STATE_FILE: &str = "batches.json";

/// How a run uses batches.
#[derive(Debug, Clone)]
pub struct BatchMode {
    /// `RUN_DIR/batches.json`.
    pub state_file: PathBuf,
    /// Wait between two polls of a running batch.
    pub poll: Duration,
    /// The longest to poll before giving up: the batches keep running, `--resume` polls them.
    pub max_wait: Duration,
}

/// `batches.json`: every batch this run submitted.
#[derive(Debug, Default, Serialize, Deserialize)]
struct BatchFile {
    batches: Vec<Submitted>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Submitted {
    /// The arm: provider name and catalog variant.
    provider: String,
    variant: String,
    /// `openai`, `anthropic` or `gemini`.
    api: String,
    id: String,
    submitted_at: String,
    /// The custom ids sent, in order.
    requests: Vec<String>,
    /// Its answers are in results.jsonl: a resumed run does not poll it again.
    #[serde(default)]
    collected: bool,
}

/// The id a trial's request carries: `t{trial}-a{arm}-c{case}`, within every provider's
/// custom_id rules (Anthropic: `^[a-zA-Z0-9_-]{1,64}$`). Indices, not names: case ids may hold
/// any character, and `--resume` refuses a plan whose arms or cases changed.
pub fn custom_id(key: TrialKey) -> String {
    format!("t{}-a{}-c{}", key.trial, key.arm, key.case)
}

/// The trial key a custom id names, or `None` when it is not one [`custom_id`] makes.
fn parse_custom_id(id: &str) -> Option<TrialKey> {
    let rest = id.strip_prefix('t')?;
    let (trial, rest) = rest.split_once("-a")?;
    let (arm, case) = rest.split_once("-c")?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !(digits(trial) && digits(arm) && digits(case)) {
        return None;
    }
    Some(TrialKey {
        arm: arm.parse().ok()?,
        case: case.parse().ok()?,
        trial: trial.parse().ok()?,
    })
}

/// What the batches answered, served to the runner in place of requests.
#[derive(Default)]
pub struct Answers {
    by_key: HashMap<TrialKey, (Result<Exchange, ProviderError>, BatchRef)>,
    state_file: PathBuf,
}

impl Answers {
    pub fn get(&self, key: TrialKey) -> Option<&(Result<Exchange, ProviderError>, BatchRef)> {
        self.by_key.get(&key)
    }

    /// Marks every batch collected once the run has stored its trials, so a later `--resume`
    /// submits again only the trials still missing or errored.
    pub(crate) fn mark_collected(&self) -> Result<(), Error> {
        let mut file = read_state(&self.state_file)?;
        for b in &mut file.batches {
            b.collected = true;
        }
        write_state(&self.state_file, &file)
    }
}

/// The ids of the batches a run submitted and has not collected yet (none when it used no
/// batch).
pub fn uncollected(state_file: &Path) -> Result<Vec<String>, Error> {
    Ok(read_state(state_file)?
        .batches
        .into_iter()
        .filter(|b| !b.collected)
        .map(|b| b.id)
        .collect())
}

/// One arm as the batch phase needs it.
pub struct BatchArm<'a> {
    pub provider: &'a Provider,
    pub name: &'a str,
    pub variant: &'a str,
}

/// Submits what no batch holds yet, polls every batch of the run until it ends, and gathers
/// the answers. `wanted` are the trials to run, `prepared` the opening request of each
/// (arm, case) at `arm * cases + case`. What the batches do is told to `observer` as
/// [`Notice`]s.
pub async fn gather(
    mode: &BatchMode,
    run_id: &str,
    arms: &[BatchArm<'_>],
    prepared: &[PreparedRequest],
    cases: usize,
    wanted: &[TrialKey],
    observer: &mut dyn Observer,
) -> Result<Answers, RunError> {
    let mut file = read_state(&mode.state_file)?;
    let apis: Vec<BatchApi> = arms
        .iter()
        .map(|a| BatchApi::for_kind(a.provider.settings().kind).map_err(BatchError::from))
        .collect::<Result<_, _>>()?;
    let mut run = BatchRun {
        mode,
        arms,
        apis: &apis,
        observer,
    };
    run.submit_new(&mut file, run_id, prepared, cases, wanted)
        .await?;
    let open = run.open_batches(&file)?;
    let ended = run.poll_until_ended(&open).await?;
    let mut answers = Answers {
        by_key: HashMap::new(),
        state_file: mode.state_file.clone(),
    };
    let wanted: HashSet<TrialKey> = wanted.iter().copied().collect();
    for ((arm, b), status) in open.iter().zip(ended) {
        run.collect(*arm, b, &status, &wanted, &mut answers).await?;
    }
    Ok(answers)
}

/// One `--batch` run's arms and the batch API each uses.
struct BatchRun<'a> {
    mode: &'a BatchMode,
    arms: &'a [BatchArm<'a>],
    apis: &'a [BatchApi],
    observer: &'a mut dyn Observer,
}

impl BatchRun<'_> {
    /// Tells the observer; its answer to a notice is not a stop (trials have not begun).
    fn tell(&mut self, notice: Notice) -> Result<(), Error> {
        self.observer.on_event(&RunEvent::Notice(&notice)).map(drop)
    }

    /// Submits the wanted trials no running batch holds, arm by arm, each batch written to
    /// the state file before the next is sent.
    async fn submit_new(
        &mut self,
        file: &mut BatchFile,
        run_id: &str,
        prepared: &[PreparedRequest],
        cases: usize,
        wanted: &[TrialKey],
    ) -> Result<(), RunError> {
        let (mode, arms, apis) = (self.mode, self.arms, self.apis);
        let pending: HashSet<String> = file
            .batches
            .iter()
            .filter(|b| !b.collected)
            .flat_map(|b| b.requests.iter().cloned())
            .collect();
        let waiting = wanted
            .iter()
            .filter(|k| pending.contains(&custom_id(**k)))
            .count();
        if waiting > 0 {
            self.tell(Notice::BatchesResumed { trials: waiting })?;
        }
        for (arm_index, arm) in arms.iter().enumerate() {
            let lines: Vec<BatchLine> = wanted
                .iter()
                .filter(|k| k.arm == arm_index)
                .map(|&k| BatchLine {
                    custom_id: custom_id(k),
                    body: prepared[k.arm * cases + k.case].body.clone(),
                })
                .filter(|l| !pending.contains(&l.custom_id))
                .collect();
            let api = apis[arm_index];
            let (max_requests, max_bytes) = api.limits();
            let client = BatchClient::new(arm.provider, api);
            for chunk in chunk_lines(lines, max_requests, max_bytes) {
                let label = format!("toolscore-{run_id}");
                let id =
                    client
                        .submit(&chunk, &label)
                        .await
                        .map_err(|source| BatchError::Submit {
                            requests: chunk.len(),
                            provider: arm.name.to_owned(),
                            source,
                        })?;
                self.tell(Notice::BatchSubmitted {
                    api: api.name().to_owned(),
                    id: id.clone(),
                    arm: arm.name.to_owned(),
                    variant: arm.variant.to_owned(),
                    requests: chunk.len(),
                })?;
                file.batches.push(Submitted {
                    provider: arm.name.to_owned(),
                    variant: arm.variant.to_owned(),
                    api: api.name().to_owned(),
                    id,
                    submitted_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
                    requests: chunk.into_iter().map(|l| l.custom_id).collect(),
                    collected: false,
                });
                // On disk before the first poll: a process killed from here on leaves the batch
                // to `--resume`, which polls it rather than paying for it twice.
                write_state(&mode.state_file, file)?;
            }
        }

        Ok(())
    }

    /// Every batch not yet collected, with the arm it belongs to, refused when the plan no
    /// longer has that arm or the arm now uses another batch API.
    fn open_batches(&self, file: &BatchFile) -> Result<Vec<(usize, Submitted)>, Error> {
        let (mode, arms, apis) = (self.mode, self.arms, self.apis);
        let arm_of = |b: &Submitted| {
            arms.iter()
                .position(|a| a.name == b.provider && a.variant == b.variant)
                .ok_or_else(|| {
                    Error::Input(InputError::new(format!(
                        "{}: batch {} belongs to arm `{}` (variant {}), which this plan does not have",
                        mode.state_file.display(),
                        b.id,
                        b.provider,
                        b.variant
                    )))
                })
        };
        let open: Vec<(usize, Submitted)> = file
            .batches
            .iter()
            .filter(|b| !b.collected)
            .map(|b| arm_of(b).map(|a| (a, b.clone())))
            .collect::<Result<_, _>>()?;
        for (arm, b) in &open {
            if apis[*arm].name() != b.api {
                return Err(Error::Input(InputError::new(format!(
                    "{}: batch {} was submitted to the {} batch API, but arm `{}` now uses {}",
                    mode.state_file.display(),
                    b.id,
                    b.api,
                    b.provider,
                    apis[*arm].name()
                ))));
            }
        }
        Ok(open)
    }

    /// Polls every open batch until each has ended, printing each one's progress as it moves.
    async fn poll_until_ended(
        &mut self,
        open: &[(usize, Submitted)],
    ) -> Result<Vec<BatchStatus>, RunError> {
        let (mode, arms, apis) = (self.mode, self.arms, self.apis);
        let started = Instant::now();
        let mut ended: Vec<Option<BatchStatus>> = vec![None; open.len()];
        let mut last_seen: Vec<Option<BatchProgress>> = vec![None; open.len()];
        while ended.iter().any(Option::is_none) {
            for (i, (arm, b)) in open.iter().enumerate() {
                if ended[i].is_some() {
                    continue;
                }
                let client = BatchClient::new(arms[*arm].provider, apis[*arm]);
                let status = client
                    .status(&b.id)
                    .await
                    .map_err(|source| BatchError::Poll {
                        id: b.id.clone(),
                        source,
                    })?;
                let batch = progress_of(b, &status);
                if status.end.is_some() {
                    self.tell(Notice::BatchPolled {
                        batch,
                        ended_after: Some(Duration::from_secs(started.elapsed().as_secs())),
                    })?;
                    ended[i] = Some(status);
                } else if last_seen[i].as_ref() != Some(&batch) {
                    last_seen[i] = Some(batch.clone());
                    self.tell(Notice::BatchPolled {
                        batch,
                        ended_after: None,
                    })?;
                }
            }
            if ended.iter().any(Option::is_none) {
                if started.elapsed() >= mode.max_wait {
                    let ids = open
                        .iter()
                        .zip(&ended)
                        .filter(|(_, e)| e.is_none())
                        .map(|((_, b), _)| b.id.clone())
                        .collect();
                    return Err(BatchError::NotEnded {
                        ids,
                        waited: mode.max_wait,
                    }
                    .into());
                }
                tokio::time::sleep(mode.poll.min(mode.max_wait)).await;
            }
        }

        Ok(ended.into_iter().flatten().collect())
    }

    /// Gathers one ended batch's answers under their trial keys; a request it left unanswered
    /// is an error when the batch's end says why, and is not run otherwise.
    async fn collect(
        &mut self,
        arm: usize,
        b: &Submitted,
        status: &BatchStatus,
        wanted: &HashSet<TrialKey>,
        answers: &mut Answers,
    ) -> Result<(), RunError> {
        let client = BatchClient::new(self.arms[arm].provider, self.apis[arm]);
        let parsed = client
            .results(status, &b.requests)
            .await
            .map_err(|source| BatchError::Download {
                id: b.id.clone(),
                source,
            })?;
        for problem in &parsed.problems {
            self.tell(Notice::BatchUnreadableResult {
                batch: b.id.clone(),
                problem: problem.clone(),
            })?;
        }
        let reference = BatchRef {
            api: b.api.clone(),
            id: b.id.clone(),
        };
        let sent: HashSet<&str> = b.requests.iter().map(String::as_str).collect();
        let mut answered: HashSet<String> = HashSet::new();
        for (id, line) in parsed.answers {
            let Some(key) = parse_custom_id(&id).filter(|_| sent.contains(id.as_str())) else {
                self.tell(Notice::BatchStrayAnswer {
                    batch: b.id.clone(),
                    id,
                })?;
                continue;
            };
            if !answered.insert(id) {
                continue;
            }
            if wanted.contains(&key) {
                answers
                    .by_key
                    .insert(key, (client.exchange(line), reference.clone()));
            }
        }
        let unanswered: Vec<TrialKey> = b
            .requests
            .iter()
            .filter(|id| !answered.contains(*id))
            .filter_map(|id| parse_custom_id(id))
            .filter(|k| wanted.contains(k))
            .collect();
        match unanswered_error(status.end.as_ref()) {
            Some(error) => {
                for key in &unanswered {
                    answers
                        .by_key
                        .insert(*key, (Err(error.clone()), reference.clone()));
                }
            }
            None if !unanswered.is_empty() => self.tell(Notice::BatchUnanswered {
                batch: b.id.clone(),
                requests: unanswered.len(),
            })?,
            None => {}
        }
        Ok(())
    }
}

/// The error of a request a batch ended without answering, when its end says why: a batch
/// that expired, was cancelled or failed as a whole. A completed batch that left a request
/// out says nothing about it: that trial is not run.
fn unanswered_error(end: Option<&BatchEnd>) -> Option<ProviderError> {
    let (class, message) = match end? {
        BatchEnd::Completed => return None,
        BatchEnd::Expired => (
            ErrorClass::BatchExpired,
            "the batch expired before this request ran".to_owned(),
        ),
        BatchEnd::Cancelled => (
            ErrorClass::BatchCancelled,
            "the batch was cancelled before this request ran".to_owned(),
        ),
        BatchEnd::Failed(why) => (ErrorClass::ClientError, format!("the batch failed: {why}")),
    };
    Some(ProviderError {
        class,
        status: None,
        message,
        attempts: 1,
    })
}

/// `batch msgbatch_…: in_progress, 3 of 12 done (1 failed)`.
fn progress_of(b: &Submitted, s: &BatchStatus) -> BatchProgress {
    BatchProgress {
        id: b.id.clone(),
        api: b.api.clone(),
        provider: b.provider.clone(),
        state: s.state.clone(),
        done: s.counts.succeeded + s.counts.failed,
        failed: s.counts.failed,
        total: s.counts.total.unwrap_or(b.requests.len() as u64),
    }
}

fn read_state(path: &Path) -> Result<BatchFile, Error> {
    if !path.exists() {
        return Ok(BatchFile::default());
    }
    let text = toolscore_core::read_text(path)?;
    serde_json::from_str(&text)
        .map_err(|e| InputError::json(&path.display().to_string(), &e).into())
}

/// Written whole to a temporary file, then renamed: a kill leaves the old file or the new.
fn write_state(path: &Path, file: &BatchFile) -> Result<(), Error> {
    toolscore_core::write_json(path, file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_ids_round_trip_and_refuse_others() {
        let key = TrialKey {
            arm: 2,
            case: 17,
            trial: 49,
        };
        assert_eq!(custom_id(key), "t49-a2-c17");
        assert_eq!(parse_custom_id("t49-a2-c17"), Some(key));
        for bad in [
            "",
            "t1-a2",
            "x1-a2-c3",
            "t1-a2-c",
            "t-1-a2-c3",
            "t1-a2-c3x",
            "t1-a+2-c3",
        ] {
            assert_eq!(parse_custom_id(bad), None, "{bad}");
        }
        let anthropic_rule = regex::Regex::new("^[a-zA-Z0-9_-]{1,64}$").unwrap();
        assert!(anthropic_rule.is_match(&custom_id(TrialKey {
            arm: usize::MAX,
            case: usize::MAX,
            trial: u32::MAX
        })));
    }

    #[test]
    fn a_batch_that_ended_early_says_why_its_requests_have_no_answer() {
        assert!(unanswered_error(Some(&BatchEnd::Completed)).is_none());
        assert!(unanswered_error(None).is_none());
        assert_eq!(
            unanswered_error(Some(&BatchEnd::Expired)).unwrap().class,
            ErrorClass::BatchExpired
        );
        assert_eq!(
            unanswered_error(Some(&BatchEnd::Cancelled)).unwrap().class,
            ErrorClass::BatchCancelled
        );
        let failed = unanswered_error(Some(&BatchEnd::Failed("line 1: bad".into()))).unwrap();
        assert_eq!(failed.class, ErrorClass::ClientError);
        assert_eq!(failed.message, "the batch failed: line 1: bad");
    }

    #[test]
    fn the_state_file_round_trips_and_marks_batches_collected() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(STATE_FILE);
        assert!(read_state(&path).unwrap().batches.is_empty());
        let file = BatchFile {
            batches: vec![Submitted {
                provider: "p".into(),
                variant: "base".into(),
                api: "openai".into(),
                id: "batch_1".into(),
                submitted_at: "2026-12-03T00:00:00Z".into(),
                requests: vec!["t0-a0-c0".into()],
                collected: false,
            }],
        };
        write_state(&path, &file).unwrap();
        let answers = Answers {
            by_key: HashMap::new(),
            state_file: path.clone(),
        };
        answers.mark_collected().unwrap();
        let back = read_state(&path).unwrap();
        assert_eq!(back.batches[0].id, "batch_1");
        assert!(back.batches[0].collected);
        std::fs::write(&path, "{not json").unwrap();
        assert!(matches!(read_state(&path), Err(Error::Input(_))));
    }
}
