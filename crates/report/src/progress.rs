//! Progress while trials run, and the run's notices: an observer of the run, writing to the
//! stream the command gives it (stderr).
//!
//! On a terminal, an indicatif bar. Otherwise (a CI log, a pipe) a line every 5 seconds on a
//! timer, whether or not a trial finished in between, so a slow run still shows it is alive;
//! `--progress bar` off a terminal draws the bar as text on those lines. The last line is
//! printed once, when the run ends. The runner's [`Notice`]s (batches, interruption) are
//! worded here, whatever the mode: only a running batch's changes are left out with
//! `--progress off`.

use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use toolscore_core::Error;
use toolscore_core::Outcome;
use toolscore_core::{Control, Notice, Observer, RunEvent};

/// How progress is shown while trials run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProgressMode {
    /// A bar on a terminal, a line every 5 seconds otherwise.
    Auto,
    /// A bar: drawn in place on a terminal, as a text bar on a line every 5 seconds otherwise.
    Bar,
    /// A line every 5 seconds.
    Lines,
    Off,
}

/// Counts shared with the ticker thread.
struct Counts {
    planned: u64,
    done: AtomicU64,
    errors: AtomicU64,
    started: Instant,
    /// Draw a text bar on each line.
    text_bar: bool,
    /// The `done` count of the last line printed, so the final line is not printed twice.
    last_printed: Mutex<Option<u64>>,
    /// Provider-asked waits honoured so far (count, total), when the run can tell.
    waits: Option<RetryWaits>,
    out: Out,
    /// The first write the ticker thread could not make, for the next event to return.
    write_error: Mutex<Option<io::Error>>,
}

/// Where progress and notices go, shared with the ticker thread.
type Out = Arc<Mutex<Box<dyn Write + Send>>>;

fn write_line(out: &Out, line: &str) -> io::Result<()> {
    let mut w = out
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    writeln!(w, "{line}")?;
    w.flush()
}

/// Reads the waits providers asked for (Retry-After) that the run honoured: how many, and
/// how long in all. Given by the command, which knows the providers; progress does not.
type RetryWaits = fn() -> (u64, Duration);

impl Counts {
    fn line(&self) -> String {
        let done = self.done.load(Ordering::Relaxed);
        let errors = self.errors.load(Ordering::Relaxed);
        let secs = self.started.elapsed().as_secs_f64().max(1e-9);
        let share = done as f64 / self.planned.max(1) as f64;
        let bar = if self.text_bar {
            let filled = (share * 30.0).round().clamp(0.0, 30.0) as usize;
            format!("[{}{}] ", "#".repeat(filled), ".".repeat(30 - filled))
        } else {
            String::new()
        };
        // Waits a provider asked for (capped at 120 s each): a run sitting one out is alive.
        let (waits, waited) = self.waits.map_or((0, Duration::ZERO), |f| f());
        let waiting = if waits > 0 {
            format!(
                ", {:.0} s waited on Retry-After ({waits} waits)",
                waited.as_secs_f64()
            )
        } else {
            String::new()
        };
        format!(
            "progress: {bar}{done}/{} trials ({:.0}%), {errors} infra errors, {:.1} trials/s, {:.0} s{waiting}",
            self.planned,
            100.0 * share,
            done as f64 / secs,
            secs
        )
    }

    /// The line to print now, unless it would repeat the last one printed (`force` gives a
    /// line even when no trial finished since, which the timer wants: the run is alive).
    fn next_line(&self, force: bool) -> Option<String> {
        let done = self.done.load(Ordering::Relaxed);
        let mut last = self.last_printed.lock().ok()?;
        if !force && *last == Some(done) {
            return None;
        }
        *last = Some(done);
        Some(self.line())
    }

    fn print(&self, force: bool) -> io::Result<()> {
        match self.next_line(force) {
            Some(line) => write_line(&self.out, &line),
            None => Ok(()),
        }
    }
}

/// Progress on the command's stream: an indicatif bar on a terminal, a line every few seconds
/// otherwise.
pub struct Progress {
    mode: ProgressMode,
    out: Out,
    /// Whether `out` is a terminal (a bar is drawn in place only there).
    terminal: bool,
    bar: Option<indicatif::ProgressBar>,
    /// Infrastructure errors so far, for the bar's message.
    bar_errors: u64,
    counts: Option<Arc<Counts>>,
    waits: Option<RetryWaits>,
    /// Dropping it stops the ticker.
    ticker: Option<(mpsc::Sender<()>, std::thread::JoinHandle<()>)>,
}

const PROGRESS_LINE_EVERY: Duration = Duration::from_secs(5);

impl Progress {
    /// Progress on `out`, a terminal or not. The planned count is taken from the run's
    /// `Started` event; nothing is drawn before.
    pub fn new(mode: ProgressMode, out: Box<dyn Write + Send>, terminal: bool) -> Self {
        Progress {
            mode,
            out: Arc::new(Mutex::new(out)),
            terminal,
            bar: None,
            bar_errors: 0,
            counts: None,
            waits: None,
            ticker: None,
        }
    }

    /// Progress lines also say how long the run waited on providers' Retry-After.
    pub fn with_retry_waits(mut self, waits: RetryWaits) -> Self {
        self.waits = Some(waits);
        self
    }

    fn start(&mut self, planned: u64) {
        let tty = self.terminal;
        let draw_bar = match self.mode {
            ProgressMode::Bar | ProgressMode::Auto => tty,
            ProgressMode::Lines | ProgressMode::Off => false,
        };
        if draw_bar {
            let pb = indicatif::ProgressBar::new(planned);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} trials · {per_sec} · eta {eta} · {msg}",
            ) {
                pb.set_style(style);
            }
            self.bar = Some(pb);
            return;
        }
        if self.mode == ProgressMode::Off {
            return;
        }
        let counts = Arc::new(Counts {
            planned,
            done: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            started: Instant::now(),
            text_bar: self.mode == ProgressMode::Bar,
            last_printed: Mutex::new(None),
            waits: self.waits,
            out: Arc::clone(&self.out),
            write_error: Mutex::new(None),
        });
        let (stop, stopped) = mpsc::channel::<()>();
        let shared = Arc::clone(&counts);
        let handle = std::thread::Builder::new()
            .name("toolscore-progress".into())
            .spawn(move || {
                // Wakes every 5 s until told to stop (or the sender is dropped).
                while let Err(mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(PROGRESS_LINE_EVERY)
                {
                    if let Err(e) = shared.print(true) {
                        if let Ok(mut slot) = shared.write_error.lock() {
                            slot.get_or_insert(e);
                        }
                        break;
                    }
                }
            });
        if let Ok(handle) = handle {
            self.ticker = Some((stop, handle));
        }
        self.counts = Some(counts);
    }

    fn record(&mut self, error: bool) {
        if let Some(pb) = &self.bar {
            pb.inc(1);
            if error {
                self.bar_errors += 1;
                pb.set_message(format!("{} infra errors", self.bar_errors));
            }
        }
        if let Some(c) = &self.counts {
            c.done.fetch_add(1, Ordering::Relaxed);
            c.errors.fetch_add(u64::from(error), Ordering::Relaxed);
        }
    }

    fn finish(&mut self) -> io::Result<()> {
        if let Some(pb) = self.bar.take() {
            pb.finish_and_clear();
        }
        if let Some((stop, handle)) = self.ticker.take() {
            let _ = stop.send(());
            let _ = handle.join();
        }
        match &self.counts {
            Some(c) => c.print(false),
            None => Ok(()),
        }
    }

    /// A notice on its own line, above the bar when one is drawn.
    fn tell(&self, notice: &Notice) -> io::Result<()> {
        let Some(line) = notice_line(notice, self.mode) else {
            return Ok(());
        };
        match &self.bar {
            Some(pb) => pb.suspend(|| write_line(&self.out, &line)),
            None => write_line(&self.out, &line),
        }
    }

    /// A write the ticker thread could not make (a closed pipe), once.
    fn ticker_error(&self) -> Option<io::Error> {
        self.counts.as_ref()?.write_error.lock().ok()?.take()
    }
}

/// How a notice reads on the terminal; `None` for a running batch's change with progress off.
fn notice_line(notice: &Notice, mode: ProgressMode) -> Option<String> {
    Some(match notice {
        Notice::BatchesResumed { trials } => {
            format!("batch: {trials} trials are in batches submitted earlier; polling those")
        }
        Notice::BatchSubmitted {
            api,
            id,
            arm,
            variant,
            requests,
        } => format!("batch: submitted {api} {id} for arm {arm} ({variant}): {requests} requests"),
        Notice::BatchPolled { batch, ended_after } => {
            if ended_after.is_none() && mode == ProgressMode::Off {
                return None;
            }
            let failed = if batch.failed > 0 {
                format!(" ({} failed)", batch.failed)
            } else {
                String::new()
            };
            let after = ended_after
                .map(|d| format!(" after {}", humantime::format_duration(d)))
                .unwrap_or_default();
            format!(
                "batch {} ({}, arm {}): {}, {} of {} done{failed}{after}",
                batch.id, batch.api, batch.provider, batch.state, batch.done, batch.total
            )
        }
        Notice::BatchUnreadableResult { batch, problem } => {
            format!("warning: batch {batch}: unreadable result {problem}")
        }
        Notice::BatchStrayAnswer { batch, id } => format!(
            "warning: batch {batch}: an answer for `{id}`, which this batch did not send, was ignored"
        ),
        Notice::BatchUnanswered { batch, requests } => format!(
            "batch {batch}: {requests} requests came back without an answer; those trials are not run (`--resume` submits them again)"
        ),
        Notice::TrialsNotReturned { trials } => format!(
            "{trials} trials were not run: their batch returned no answer for them (`--resume` submits them again)"
        ),
        Notice::Interrupted => "interrupted: no new trials will start and those in flight are abandoned; writing the summary of what completed (again to abort at once)".to_owned(),
    })
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some((stop, handle)) = self.ticker.take() {
            let _ = stop.send(());
            let _ = handle.join();
        }
    }
}

impl Observer for Progress {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<Control, Error> {
        let written = match event {
            RunEvent::Started { planned_trials, .. } => {
                self.start(*planned_trials);
                Ok(())
            }
            RunEvent::Trial { record, .. } => {
                self.record(record.outcome == Outcome::Error);
                Ok(())
            }
            RunEvent::Notice(notice) => self.tell(notice),
            RunEvent::Finished(_) => self.finish(),
        };
        match written.err().or_else(|| self.ticker_error()) {
            Some(e) => Err(Error::io("cannot write progress", e)),
            None => Ok(Control::Continue),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(planned: u64, done: u64, text_bar: bool) -> Counts {
        Counts {
            planned,
            done: AtomicU64::new(done),
            errors: AtomicU64::new(1),
            started: Instant::now(),
            text_bar,
            last_printed: Mutex::new(None),
            waits: None,
            out: Arc::new(Mutex::new(Box::new(Vec::new()))),
            write_error: Mutex::new(None),
        }
    }

    #[test]
    fn a_line_counts_the_waits_providers_asked_for() {
        let mut c = counts(10, 3, false);
        assert!(!c.line().contains("Retry-After"));
        c.waits = Some(|| (2, Duration::from_secs(240)));
        assert!(
            c.line()
                .ends_with(", 240 s waited on Retry-After (2 waits)"),
            "{}",
            c.line()
        );
    }

    #[test]
    fn a_line_says_how_far_and_a_text_bar_fills_with_the_share_done() {
        let line = counts(200, 50, true).line();
        assert!(
            line.starts_with(&format!(
                "progress: [{}{}] 50/200 trials (25%), 1 infra errors,",
                "#".repeat(8),
                ".".repeat(22)
            )),
            "{line}"
        );
        assert!(
            counts(200, 50, false)
                .line()
                .starts_with("progress: 50/200 trials (25%)")
        );
    }

    #[test]
    fn the_last_line_is_not_printed_twice_but_the_timer_always_prints() {
        let c = counts(10, 10, false);
        // A timer tick at 10/10, then the run ends: the final line would repeat it.
        assert!(c.next_line(true).is_some());
        assert!(c.next_line(false).is_none());
        // The timer prints even when nothing finished since: the run is alive.
        assert!(c.next_line(true).is_some());
        c.done.store(11, Ordering::Relaxed);
        assert!(c.next_line(false).is_some());
    }
}
