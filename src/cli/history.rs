//! `toolscore history`: the weekly trend from `history.jsonl`, and appending a run to it.

use std::path::{Path, PathBuf};
use toolscore_core::metric::Metric;

use clap::Args;

use super::usage;
use crate::cli::Error;
use toolscore_core::error::ExitCode;

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The --out folder of the runs, holding history.jsonl.
    #[arg(long, default_value = "reports", value_name = "DIR")]
    pub dir: PathBuf,
    /// The rate followed; history.jsonl keeps two, selection and pass.
    #[arg(long, value_enum, default_value_t = Metric::Selection)]
    pub metric: Metric,
    /// Show only the newest N runs of each series (each still compared with the run before it).
    #[arg(long, value_name = "N")]
    pub last: Option<usize>,
    /// Exit 1 when the newest run of any series dropped significantly.
    #[arg(long)]
    pub fail_on_drop: bool,
}

/// Appends the run's arms to `history.jsonl` in its --out folder (the parent of the run's
/// folder), after summary.json so a line never names a run whose summary is missing. An
/// interrupted run is left out: its cases ran fewer trials than planned and its next,
/// resumed, finish appends the whole run. Not named in the "wrote" line: it is the folder's
/// running log, not one of the run's files. `untrusted` is why the run exits 4, when it
/// does: its lines are kept, marked, and left out of every trend.
pub(super) fn append_history(
    run_dir: &Path,
    summary: &toolscore_report::Summary,
) -> Result<(), Error> {
    // A shard is a slice of a run: the merged run is the one that enters the history.
    if summary.interrupted || summary.run.shard.is_some() {
        return Ok(());
    }
    let path = run_dir
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join(toolscore_report::history::FILE_NAME);
    toolscore_report::history::append(&path, &toolscore_report::history::lines_of(summary))
        .map_err(|e| Error::io(format!("cannot append to {}", path.display()), e))
}

/// Reads DIR/history.jsonl and prints every series with its moves. Exit 1 with --fail-on-drop
/// when the newest run of a series dropped significantly, else 0.
pub(super) fn run(args: &HistoryArgs) -> Result<ExitCode, Error> {
    // history.jsonl keeps the two rates a weekly score follows.
    let metric = match args.metric {
        m @ (Metric::Selection | Metric::Pass) => m,
        other => {
            return Err(usage(&format!(
                "--metric {}: history follows selection or pass",
                other.name()
            )));
        }
    };
    if args.last == Some(0) {
        return Err(usage("--last must be at least 1"));
    }
    let path = args.dir.join(toolscore_report::history::FILE_NAME);
    if !path.is_file() {
        return Err(usage(&format!(
            "{}: no history yet; every `toolscore run --out {}` appends to it",
            path.display(),
            args.dir.display()
        )));
    }
    let text = toolscore_core::input::read_text(&path)?;
    let lines = toolscore_report::history::parse(&text, &path.display().to_string())?;
    let series = toolscore_report::history::series(lines, metric);
    let mut out = std::io::stdout().lock();
    toolscore_report::history::render(&series, metric, args.last, &mut out)
        .map_err(|e| Error::io("cannot write the history", e))?;
    let dropped = series
        .iter()
        .any(toolscore_report::history::Series::newest_dropped);
    Ok(if dropped && args.fail_on_drop {
        ExitCode::GateFailed
    } else {
        ExitCode::Pass
    })
}
