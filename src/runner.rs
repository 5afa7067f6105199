//! Trial planning and execution.
//!
//! A run expands cases × trials into jobs numbered `0..total`, taken in trial-major order
//! (every case's trial 0, then every case's trial 1, …) so a run stopped early still covers
//! all cases evenly. `concurrency` workers pull job numbers from one atomic counter, so nothing
//! is allocated per planned trial. Finished trials flow through one channel to a single
//! collector that appends each `TrialRecord` to `results.jsonl` (flushed per record: a killed
//! run loses at most the trials in flight), folds it into the `Aggregator` and drives progress.

use std::io::{BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::error::Error;
use crate::message::{ModelTurn, Usage};
use crate::provider::cassette::{Cassette, CassetteEntry, CassetteHeader, CassetteWriter, Replay};
use crate::provider::{Backend, ErrorClass, PreparedRequest, Provider, ProviderSettings};
use crate::report::{Aggregator, CaseInfo, RunInfo, Summary};
use crate::score::{ToolValidators, TrialScore, score_turn};
use crate::suite::{Dataset, Expectation};

/// How a trial ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The model did what the fixture expects.
    Pass,
    /// The model answered and got it wrong (see `score.failure`).
    Fail,
    /// No usable answer (timeout, 5xx after retries, quota…): not scored.
    Error,
}

/// One line of `results.jsonl`: self-describing, enough to re-score and re-report a run
/// without calling the model again.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrialRecord {
    pub run_id: String,
    pub dataset: String,
    pub case_id: String,
    /// Which catalog variant the model saw; `base` until variants exist.
    pub variant: String,
    pub provider: String,
    pub model: String,
    pub trial_index: u32,
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<TrialScore>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<ModelTurn>,
    pub usage: Usage,
    /// Latency of the successful attempt (for errors: time until giving up).
    pub latency_ms: f64,
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_class: Option<ErrorClass>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub started_at: String,
    pub request_hash: String,
}

/// How progress is shown while trials run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProgressMode {
    /// A bar on a terminal, periodic lines otherwise.
    Auto,
    Bar,
    Lines,
    Off,
}

/// A validated run: everything is known before the first request.
pub struct RunPlan {
    pub run_id: String,
    pub out_dir: PathBuf,
    pub trials: u32,
    pub concurrency: usize,
    pub provider: ProviderSettings,
    pub datasets: Vec<Dataset>,
    pub confidence: f64,
    pub precision: f64,
    pub progress: ProgressMode,
    /// Serve responses from this cassette instead of calling the provider; `provider` then
    /// holds the settings the cassette was recorded with.
    pub replay: Option<Cassette>,
    /// Record every response to this cassette.
    pub record: Option<Recording>,
}

/// Where and how to record a cassette.
pub struct Recording {
    pub path: PathBuf,
    pub note: Option<String>,
}

impl RunPlan {
    pub fn case_count(&self) -> usize {
        self.datasets.iter().map(|d| d.cases.len()).sum()
    }

    pub fn planned_trials(&self) -> u64 {
        self.case_count() as u64 * u64::from(self.trials)
    }
}

/// What `execute` hands back.
pub struct RunResult {
    pub summary: Summary,
    pub out_dir: PathBuf,
}

/// A case ready to run: its request encoded once, shared by all its trials.
struct CaseUnit {
    dataset: String,
    case_id: String,
    expect: Expectation,
    validators: Arc<ToolValidators>,
    prepared: PreparedRequest,
}

/// Shared, read-only state of the workers.
struct Shared {
    run_id: String,
    backend: Backend,
    recording: bool,
    units: Vec<CaseUnit>,
    trials: u32,
    next_job: AtomicU64,
    stop: Arc<AtomicBool>,
}

/// Runs every planned trial, streaming records to `out_dir/results.jsonl`, and writes
/// `out_dir/summary.json`. Ctrl-C stops scheduling; in-flight trials finish or time out and the
/// summary covers what completed (`interrupted: true`).
pub async fn execute(mut plan: RunPlan) -> Result<RunResult, Error> {
    let started = SystemTime::now();
    let client = crate::provider::http_client(plan.concurrency).map_err(Error::Fatal)?;
    let provider = Provider::new(plan.provider.clone(), client);
    let replay_info = plan.replay.as_ref().map(|c| crate::report::ReplayInfo {
        cassette: c.path.display().to_string(),
        recorded_at: c.header.recorded_at.clone(),
        model: c.header.model.clone(),
        base_url: c.header.base_url.clone(),
        note: c.header.note.clone(),
    });
    let backend = match plan.replay.take() {
        Some(cassette) => Backend::Replay(Replay::new(cassette, provider)),
        None => Backend::Live(provider),
    };

    let mut units = Vec::with_capacity(plan.case_count());
    let mut infos = Vec::with_capacity(plan.case_count());
    for d in &plan.datasets {
        for c in &d.cases {
            units.push(CaseUnit {
                dataset: d.name.clone(),
                case_id: c.id.clone(),
                expect: c.expect.clone(),
                validators: Arc::clone(&d.validators),
                prepared: backend.prepare(&c.messages, &d.catalog),
            });
            infos.push(CaseInfo {
                dataset: d.name.clone(),
                case_id: c.id.clone(),
                expected: c.expect.tool_label(),
                tags: c.tags.clone(),
            });
        }
    }
    let planned = plan.planned_trials();

    std::fs::create_dir_all(&plan.out_dir)
        .map_err(|e| Error::io(format!("cannot create {}", plan.out_dir.display()), e))?;
    let results_path = plan.out_dir.join("results.jsonl");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&results_path)
        .map_err(|e| Error::io(format!("cannot open {}", results_path.display()), e))?;
    let mut results = BufWriter::new(file);
    let csv_path = plan.out_dir.join("results.csv");
    let mut csv_rows = ResultsCsv::create(&csv_path)
        .map_err(|e| Error::io(format!("cannot create {}", csv_path.display()), e))?;
    let mut cassette = match &plan.record {
        Some(rec) => {
            let header = CassetteHeader {
                toolscore_cassette: crate::provider::cassette::CASSETTE_FORMAT,
                provider_kind: plan.provider.kind,
                model: plan.provider.model.clone(),
                temperature: plan.provider.temperature,
                max_tokens: plan.provider.max_tokens,
                base_url: plan.provider.base_url.clone(),
                recorded_at: humantime::format_rfc3339_seconds(started).to_string(),
                toolscore_version: env!("CARGO_PKG_VERSION").to_owned(),
                variant: "base".to_owned(),
                catalogs: plan
                    .datasets
                    .iter()
                    .map(|d| (d.name.clone(), d.catalog.fingerprint.clone()))
                    .collect(),
                note: rec.note.clone(),
            };
            Some(CassetteWriter::create(&rec.path, &header).map_err(|e| {
                Error::io(format!("cannot create cassette {}", rec.path.display()), e)
            })?)
        }
        None => None,
    };

    let stop = Arc::new(AtomicBool::new(false));
    spawn_ctrl_c_handler(Arc::clone(&stop));

    let shared = Arc::new(Shared {
        run_id: plan.run_id.clone(),
        backend,
        recording: cassette.is_some(),
        units,
        trials: plan.trials,
        next_job: AtomicU64::new(0),
        stop: Arc::clone(&stop),
    });
    let workers = plan.concurrency.max(1).min(planned.max(1) as usize);
    let (tx, mut rx) = mpsc::channel::<Finished>(workers * 4);
    for _ in 0..workers {
        let shared = Arc::clone(&shared);
        let tx = tx.clone();
        tokio::spawn(async move { worker(shared, tx).await });
    }
    drop(tx);

    let mut aggregator = Aggregator::new(infos);
    let mut progress = Progress::new(plan.progress, planned);
    let mut write_error = None;
    while let Some(Finished {
        case_index,
        record,
        entry,
    }) = rx.recv().await
    {
        if write_error.is_none() {
            let recorded = match (&mut cassette, &entry) {
                (Some(w), Some(entry)) => w.append(entry),
                _ => Ok(()),
            };
            if let Err(e) = write_record(&mut results, &record)
                .and(recorded)
                .and(csv_rows.append(&record))
            {
                // Keep draining so workers finish, but stop the run: records that cannot be
                // stored must not be reported as measured.
                stop.store(true, Ordering::SeqCst);
                write_error = Some(e);
            }
        }
        progress.record(record.outcome == Outcome::Error);
        aggregator.add(case_index, &record);
    }
    progress.finish();
    if let Some(e) = write_error {
        return Err(Error::io(
            format!("cannot write {} or the cassette", results_path.display()),
            e,
        ));
    }
    let recorded_to = match cassette {
        Some(w) => {
            let path = w.path().display().to_string();
            w.finish()
                .map_err(|e| Error::io(format!("cannot finish cassette {path}"), e))?;
            Some(path)
        }
        None => None,
    };

    let interrupted = stop.load(Ordering::SeqCst);
    let run = RunInfo {
        run_id: plan.run_id.clone(),
        toolscore_version: env!("CARGO_PKG_VERSION").to_owned(),
        started_at: humantime::format_rfc3339_seconds(started).to_string(),
        finished_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        provider: plan.provider.name.clone(),
        provider_kind: plan.provider.kind.to_string(),
        model: plan.provider.model.clone(),
        base_url: plan.provider.base_url.clone(),
        trials_per_case: plan.trials,
        concurrency: plan.concurrency,
        temperature: plan.provider.temperature,
        replay: replay_info,
        recorded_to,
        datasets: plan
            .datasets
            .iter()
            .map(|d| crate::report::DatasetInfo {
                name: d.name.clone(),
                catalog_source: d.catalog.source.clone(),
                catalog_fingerprint: d.catalog.fingerprint.clone(),
                cases: d.cases.len(),
            })
            .collect(),
    };
    let summary = aggregator.finish(run, planned, interrupted, plan.confidence, plan.precision);
    write_json_atomically(&plan.out_dir.join("summary.json"), &summary)?;
    Ok(RunResult {
        summary,
        out_dir: plan.out_dir,
    })
}

/// One finished trial on its way to the collector.
struct Finished {
    case_index: usize,
    record: TrialRecord,
    /// The raw response (or error) to record, when recording.
    entry: Option<CassetteEntry>,
}

async fn worker(shared: Arc<Shared>, tx: mpsc::Sender<Finished>) {
    let cases = shared.units.len() as u64;
    let total = cases * u64::from(shared.trials);
    loop {
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        let job = shared.next_job.fetch_add(1, Ordering::Relaxed);
        if job >= total {
            return;
        }
        let case_index = (job % cases) as usize;
        let trial_index = (job / cases) as u32;
        let (record, entry) = run_trial(&shared, case_index, trial_index).await;
        if tx
            .send(Finished {
                case_index,
                record,
                entry,
            })
            .await
            .is_err()
        {
            return;
        }
    }
}

async fn run_trial(
    shared: &Shared,
    case_index: usize,
    trial_index: u32,
) -> (TrialRecord, Option<CassetteEntry>) {
    let unit = &shared.units[case_index];
    let settings = shared.backend.settings();
    let started_at = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
    let mut record = TrialRecord {
        run_id: shared.run_id.clone(),
        dataset: unit.dataset.clone(),
        case_id: unit.case_id.clone(),
        variant: "base".to_owned(),
        provider: settings.name.clone(),
        model: settings.model.clone(),
        trial_index,
        outcome: Outcome::Error,
        score: None,
        turns: Vec::new(),
        usage: Usage::default(),
        latency_ms: 0.0,
        attempts: 0,
        error_class: None,
        error: None,
        started_at,
        request_hash: unit.prepared.request_hash.clone(),
    };
    let (result, latency) = shared.backend.complete(&unit.prepared, trial_index).await;
    let latency_ms = latency.as_secs_f64() * 1000.0;
    let entry = shared.recording.then(|| {
        CassetteEntry::from_result(
            &unit.prepared.request_hash,
            &unit.dataset,
            &unit.case_id,
            trial_index,
            &result,
            latency_ms,
        )
    });
    record.latency_ms = latency_ms;
    match result {
        Ok(exchange) => {
            let score = score_turn(&unit.expect, &exchange.turn, &unit.validators);
            record.outcome = if score.passed {
                Outcome::Pass
            } else {
                Outcome::Fail
            };
            record.usage = exchange.turn.usage;
            record.attempts = exchange.attempts;
            record.score = Some(score);
            record.turns.push(exchange.turn);
        }
        Err(e) => {
            record.attempts = e.attempts;
            record.error_class = Some(e.class);
            record.error = Some(e.to_string());
        }
    }
    (record, entry)
}

fn write_record(w: &mut BufWriter<std::fs::File>, record: &TrialRecord) -> std::io::Result<()> {
    serde_json::to_writer(&mut *w, record)?;
    w.write_all(b"\n")?;
    w.flush()
}

/// `results.csv`: one flat row per trial for spreadsheets, written beside `results.jsonl`.
struct ResultsCsv(csv::Writer<std::fs::File>);

impl ResultsCsv {
    const HEADER: [&'static str; 14] = [
        "dataset",
        "case_id",
        "trial_index",
        "outcome",
        "selection_ok",
        "args_ok",
        "schema_ok",
        "failure",
        "detail",
        "latency_ms",
        "attempts",
        "input_tokens",
        "output_tokens",
        "error_class",
    ];

    fn create(path: &Path) -> std::io::Result<Self> {
        let mut w = csv::Writer::from_path(path).map_err(std::io::Error::other)?;
        w.write_record(Self::HEADER)
            .map_err(std::io::Error::other)?;
        Ok(ResultsCsv(w))
    }

    fn append(&mut self, r: &TrialRecord) -> std::io::Result<()> {
        let opt = |v: Option<bool>| v.map_or(String::new(), |b| b.to_string());
        let num = |v: Option<u64>| v.map_or(String::new(), |n| n.to_string());
        let score = r.score.as_ref();
        let label = |v: Option<String>| v.unwrap_or_default();
        let row = [
            r.dataset.clone(),
            r.case_id.clone(),
            r.trial_index.to_string(),
            label(
                serde_json::to_value(r.outcome)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned)),
            ),
            opt(score.map(|s| s.selection_ok)),
            opt(score.and_then(|s| s.args_ok)),
            opt(score.and_then(|s| s.schema_ok)),
            label(
                score
                    .and_then(|s| s.failure)
                    .and_then(|f| serde_json::to_value(f).ok()?.as_str().map(str::to_owned)),
            ),
            label(
                score
                    .and_then(|s| s.detail.clone())
                    .or_else(|| r.error.clone()),
            ),
            format!("{:.3}", r.latency_ms),
            r.attempts.to_string(),
            num(r.usage.input_tokens),
            num(r.usage.output_tokens),
            r.error_class
                .map_or(String::new(), |c| c.as_str().to_owned()),
        ];
        self.0.write_record(&row).map_err(std::io::Error::other)?;
        self.0.flush()
    }
}

/// Writes via a temporary file and a rename, so a reader never sees half a summary.
pub fn write_json_atomically<T: Serialize>(path: &Path, value: &T) -> Result<(), Error> {
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_vec_pretty(value)
        .map_err(|e| Error::Fatal(format!("cannot encode {}: {e}", path.display())))?;
    std::fs::write(&tmp, text)
        .map_err(|e| Error::io(format!("cannot write {}", tmp.display()), e))?;
    std::fs::rename(&tmp, path)
        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))
}

/// First Ctrl-C: stop scheduling, let in-flight trials end. Second: exit at once.
fn spawn_ctrl_c_handler(stop: Arc<AtomicBool>) {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_err() {
            return;
        }
        stop.store(true, Ordering::SeqCst);
        eprintln!(
            "\ninterrupted: no new trials will start; waiting for those in flight (Ctrl-C again to abort at once)"
        );
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!(
                "aborted: results.jsonl holds every trial finished so far; no summary was written"
            );
            std::process::exit(130);
        }
    });
}

/// Progress on stderr: an indicatif bar on a terminal, a line every few seconds otherwise.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    lines: bool,
    planned: u64,
    done: u64,
    errors: u64,
    started: Instant,
    last_line: Instant,
}

const PROGRESS_LINE_EVERY: Duration = Duration::from_secs(5);

impl Progress {
    fn new(mode: ProgressMode, planned: u64) -> Self {
        let tty = std::io::stderr().is_terminal();
        let bar = match mode {
            ProgressMode::Bar => true,
            ProgressMode::Auto => tty,
            ProgressMode::Lines | ProgressMode::Off => false,
        };
        let bar = bar.then(|| {
            let pb = indicatif::ProgressBar::new(planned);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} trials · {per_sec} · eta {eta} · {msg}",
            ) {
                pb.set_style(style);
            }
            pb
        });
        let lines = bar.is_none() && mode != ProgressMode::Off;
        let now = Instant::now();
        Progress {
            bar,
            lines,
            planned,
            done: 0,
            errors: 0,
            started: now,
            last_line: now,
        }
    }

    fn record(&mut self, error: bool) {
        self.done += 1;
        self.errors += u64::from(error);
        if let Some(pb) = &self.bar {
            pb.inc(1);
            if error {
                pb.set_message(format!("{} infra errors", self.errors));
            }
        } else if self.lines && self.last_line.elapsed() >= PROGRESS_LINE_EVERY {
            self.last_line = Instant::now();
            self.print_line();
        }
    }

    fn print_line(&self) {
        let secs = self.started.elapsed().as_secs_f64().max(1e-9);
        eprintln!(
            "progress: {}/{} trials ({:.0}%), {} infra errors, {:.1} trials/s",
            self.done,
            self.planned,
            100.0 * self.done as f64 / self.planned.max(1) as f64,
            self.errors,
            self.done as f64 / secs
        );
    }

    fn finish(&mut self) {
        if let Some(pb) = self.bar.take() {
            pb.finish_and_clear();
        }
        if self.lines {
            self.print_line();
        }
    }
}
