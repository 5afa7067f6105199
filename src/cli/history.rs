//! `toolscore history`: the weekly trend from `history.jsonl` as text, JSON, Markdown or one
//! page (every format tells the one overview), and appending a run to it.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use toolscore_report::history::Followed;
use toolscore_report::history::overview::{self, Overview, RunFolders};

use super::usage;
use crate::cli::Error;
use toolscore_core::ExitCode;

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The --out folder of the runs, holding history.jsonl [default: reports, beside the
    /// toolscore.yaml found (the current folder's without one)].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// The rate followed: history.jsonl keeps these three.
    #[arg(long, value_enum, default_value_t = FollowedArg::Selection)]
    pub metric: FollowedArg,
    /// Show only the newest N runs of each series (each still compared with the run before it).
    #[arg(long, value_name = "N")]
    pub last: Option<usize>,
    /// Exit 1 when the newest run of any series dropped significantly (for attack_success,
    /// where lower is better: rose significantly).
    #[arg(long)]
    pub fail_on_drop: bool,
    /// What to write; repeat for several. terminal and json print to stdout, md and html are
    /// written into DIR [default: terminal].
    #[arg(long = "format", value_enum, value_name = "FORMAT")]
    pub formats: Vec<HistoryFormat>,
}

/// The rates history.jsonl keeps, and so the ones `history` can follow: the flag's spelling
/// of [`Followed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum FollowedArg {
    /// Right tool on the first call, or correctly no call, over fixture cases.
    Selection,
    /// Every check of the case passed, over fixture cases.
    Pass,
    /// The attacker's goal happened, over (scenario × attack) units of `run --attacks`; lower
    /// is better, so a significant rise is the regression.
    AttackSuccess,
}

impl FollowedArg {
    fn followed(self) -> Followed {
        match self {
            FollowedArg::Selection => Followed::Selection,
            FollowedArg::Pass => Followed::Pass,
            FollowedArg::AttackSuccess => Followed::AttackSuccess,
        }
    }
}

/// The forms `toolscore history` tells the trend in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum HistoryFormat {
    /// Every series as text on stdout.
    Terminal,
    /// The overview as JSON on stdout, for other dashboards.
    Json,
    /// DIR/history.md: Markdown for a pull-request or issue comment or `$GITHUB_STEP_SUMMARY`.
    Md,
    /// DIR/history.html: one self-contained page, a chart per series linked to each run's
    /// report.html.
    Html,
}

/// Appends the run's arms to `history.jsonl` in its --out folder (the parent of the run's
/// folder), after summary.json so a line never names a run whose summary is missing. An
/// interrupted run is left out: its cases ran fewer trials than planned and its next,
/// resumed, finish appends the whole run. Not named in the "wrote" line: it is the folder's
/// running log, not one of the run's files. `untrusted` is why the run exits 4, when it
/// does: its lines are kept, marked, and left out of every trend.
pub(super) fn append_history(
    run_dir: &Path,
    summary: &toolscore_summary::Summary,
) -> Result<(), Error> {
    // A shard is a slice of a run: the merged run is the one that enters the history.
    if summary.interrupted || summary.run.shard.is_some() {
        return Ok(());
    }
    let path = run_dir
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join(toolscore_report::history::FILE_NAME);
    let appended =
        toolscore_report::history::append(&path, &toolscore_report::history::lines_of(summary))
            .map_err(|e| Error::io(format!("cannot append to {}", path.display()), e))?;
    match appended {
        toolscore_report::history::Appended::AfterUnendedLine => errln!(
            "note: {} did not end with a line break (its last line was cut short or written by hand); this run's lines start on a new line",
            path.display()
        )?,
        toolscore_report::history::Appended::AlreadyThere => errln!(
            "note: {} already holds run {}: not appended again (a second point would be compared with itself)",
            path.display(),
            toolscore_core::inert(&summary.run.run_id, 200)
        )?,
        toolscore_report::history::Appended::Cleanly => {}
    }
    Ok(())
}

/// Reads DIR/history.jsonl and tells every series with its moves in each format asked for.
/// Exit 1 with --fail-on-drop when the newest run of a series moved significantly the worse
/// way (the overview's count, which every format leads with), else 0.
pub(super) fn run(args: &HistoryArgs) -> Result<ExitCode, Error> {
    let followed = args.metric.followed();
    if args.last == Some(0) {
        return Err(usage("--last must be at least 1"));
    }
    // The project's reports, as `run` writes them from any of its folders.
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| super::default_path(None, "reports"));
    let path = dir.join(toolscore_report::history::FILE_NAME);
    if !path.is_file() {
        return Err(usage(&format!(
            "{}: no history yet; every `{}` appends to it",
            path.display(),
            toolscore_core::command(["toolscore", "run", "--out", &dir.display().to_string()])
        )));
    }
    let mut formats = if args.formats.is_empty() {
        vec![HistoryFormat::Terminal]
    } else {
        args.formats.clone()
    };
    formats.sort();
    formats.dedup();
    if formats.contains(&HistoryFormat::Terminal) && formats.contains(&HistoryFormat::Json) {
        return Err(usage(
            "--format terminal and --format json both print to stdout; choose one",
        ));
    }
    let text = toolscore_core::read_text(&path)?;
    let lines = toolscore_report::history::parse(&text, &path.display().to_string())?;
    let line_count = lines.len();
    if !lines.iter().any(|l| l.measured(followed)) {
        // Not an error: the folder is fine, this rate is simply not in it (yet).
        let held: Vec<String> = Followed::ALL
            .into_iter()
            .filter(|f| lines.iter().any(|l| l.measured(*f)))
            .map(|f| format!("`toolscore history --metric {}`", f.name()))
            .collect();
        if held.is_empty() {
            errln!("note: {} holds no run yet", path.display())?;
        } else {
            errln!(
                "note: no run in {} measured {}; its runs are followed by {}",
                path.display(),
                followed.name(),
                held.join(" or ")
            )?;
        }
    }
    let series = toolscore_report::history::series(lines, followed);
    let overview = overview::overview(
        &series,
        &overview::Sources {
            dir: &dir.display().to_string(),
            file: &path.display().to_string(),
            lines: line_count,
            generated_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now())
                .to_string(),
            followed,
            last: args.last,
            folders: &run_folders(&dir, &series)?,
        },
    );
    for format in &formats {
        match format {
            HistoryFormat::Terminal => {
                let mut out = std::io::stdout().lock();
                toolscore_report::history::render(&series, args.last, &mut out)
                    .map_err(|e| Error::io("cannot write the history", e))?;
            }
            HistoryFormat::Json => {
                let mut out = std::io::stdout().lock();
                serde_json::to_writer_pretty(&mut out, &overview)
                    .map_err(|e| Error::encode("the history overview", e))?;
                outln!()?;
            }
            HistoryFormat::Md => write_page(&dir.join("history.md"), &overview, |o, w| {
                toolscore_report::render_history_markdown(o, w)
            })?,
            HistoryFormat::Html => write_page(&dir.join("history.html"), &overview, |o, w| {
                toolscore_report::render_history_html(o, w)
            })?,
        }
    }
    Ok(if overview.any_worsened() && args.fail_on_drop {
        ExitCode::GateFailed
    } else {
        ExitCode::Pass
    })
}

/// `DIR/RUN/report.html` when run `run_id`'s folder in `dir` holds one. A run id that is not one
/// plain folder name is never looked up.
pub(super) fn report_in(dir: &Path, run_id: &str) -> Option<PathBuf> {
    let mut parts = Path::new(run_id).components();
    match (parts.next(), parts.next()) {
        (Some(std::path::Component::Normal(_)), None) => {
            Some(dir.join(run_id).join("report.html")).filter(|p| p.is_file())
        }
        _ => None,
    }
}

/// Renders a page of the overview into `path` (whole or not at all) and says so on stderr.
fn write_page(
    path: &Path,
    overview: &Overview,
    render: impl Fn(&Overview, &mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), Error> {
    let mut text = Vec::new();
    render(overview, &mut text)
        .map_err(|e| Error::io(format!("cannot render {}", path.display()), e))?;
    toolscore_core::write_file(path, &text)?;
    errln!("wrote {}", path.display())
}

/// What the folder holds for links: which runs kept a report.html, and the element ids of
/// the newest trustworthy run's page in each series (the one its changed cases link into). A
/// run id that is not one plain folder name is never looked up; a page that cannot be read
/// is named on stderr and its cases are not linked.
fn run_folders(
    dir: &Path,
    series: &[toolscore_report::history::Series],
) -> Result<RunFolders, Error> {
    let report_of = |run_id: &str| report_in(dir, run_id);
    let mut folders = RunFolders::default();
    for s in series {
        for p in &s.points {
            if report_of(&p.line.run_id).is_some() {
                folders.reports.insert(p.line.run_id.clone());
            }
        }
        let Some(newest) = s.newest_trusted() else {
            continue;
        };
        let Some(page) = report_of(&newest.run_id) else {
            continue;
        };
        match toolscore_core::read_text(&page) {
            Ok(html) => {
                folders
                    .ids
                    .insert(newest.run_id.clone(), overview::element_ids(&html));
            }
            Err(e) => errln!(
                "warning: the cases of {} are not linked: {e}",
                newest.run_id
            )?,
        }
    }
    Ok(folders)
}
