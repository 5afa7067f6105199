//! Progress on stderr while trials run: an observer of the run.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::event::{Control, Observer, RunEvent};
use crate::record::Outcome;

/// How progress is shown while trials run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProgressMode {
    /// A bar on a terminal, periodic lines otherwise.
    Auto,
    Bar,
    Lines,
    Off,
}

/// Progress on stderr: an indicatif bar on a terminal, a line every few seconds otherwise.
pub struct Progress {
    mode: ProgressMode,
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
    /// The planned count is taken from the run's `Started` event.
    pub fn new(mode: ProgressMode) -> Self {
        let now = Instant::now();
        // Nothing is drawn until the run starts and says how many trials it plans.
        Progress {
            mode,
            bar: None,
            lines: false,
            planned: 0,
            done: 0,
            errors: 0,
            started: now,
            last_line: now,
        }
    }

    fn with_planned(mode: ProgressMode, planned: u64) -> Self {
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
            mode,
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

impl Observer for Progress {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<Control, Error> {
        match event {
            RunEvent::Started { planned_trials, .. } => {
                let mode = self.mode;
                *self = Progress::with_planned(mode, *planned_trials);
            }
            RunEvent::Trial { record, .. } => self.record(record.outcome == Outcome::Error),
            RunEvent::Finished(_) => self.finish(),
        }
        Ok(Control::Continue)
    }
}
