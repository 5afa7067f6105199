//! `--format`: which reports a command writes, and writing them.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::cli::Error;
use toolscore_core::ArmId;
use toolscore_core::command;
use toolscore_core::metric::Metric;
use toolscore_report::history::{self, Trend};
use toolscore_report::{Html, HtmlContext, Junit, Markdown, Render};
use toolscore_summary::Summary;
use toolscore_summary::behaviour::{self, CaseKey, Explorer};

/// A report format. clap validates the names before any work starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Format {
    /// The plain-text report on stdout.
    Terminal,
    /// `summary.json` (`run`), or the summary as JSON on stdout (`report`).
    Json,
    /// `results.csv`, one row per trial (`run` only: `report` changes no record).
    Csv,
    /// `report.md`: Markdown for a pull-request comment or `$GITHUB_STEP_SUMMARY`.
    Md,
    /// `junit.xml`: one testsuite per arm, one testcase per case and per gate.
    Junit,
    /// `report.html`: one self-contained page with the verdict and charts (no network request).
    Html,
}

/// Cases per arm whose behaviours `report.md` folds under its weakest cases.
const MARKDOWN_EXPLAINED: usize = 3;

/// The formats asked for, deduplicated and in a fixed order, or `default` when none were.
pub(super) fn chosen(asked: &[Format], default: &[Format]) -> Vec<Format> {
    let mut formats = if asked.is_empty() {
        default.to_vec()
    } else {
        asked.to_vec()
    };
    formats.sort();
    formats.dedup();
    formats
}

/// Writes the file formats among `formats` (`md`, `junit`, `html`) into `run_dir` and returns the
/// paths written; terminal, JSON and CSV output are the commands' own business because
/// `run` and `report` treat them differently.
pub(super) fn write_files(
    summary: &Summary,
    run_dir: &Path,
    formats: &[Format],
) -> Result<Vec<PathBuf>, Error> {
    let mut written = Vec::new();
    for format in formats {
        let (name, renderer): (&str, Box<dyn Render>) = match format {
            Format::Md => (
                "report.md",
                Box::new(Markdown {
                    explained: toolscore_summary::behaviour::behaviours_of(
                        &run_dir.join("results.jsonl"),
                        &toolscore_summary::behaviour::cases_to_explain(
                            summary,
                            MARKDOWN_EXPLAINED,
                        ),
                        summary.confidence,
                    )?,
                }),
            ),
            Format::Junit => ("junit.xml", Box::new(Junit)),
            Format::Html => (
                "report.html",
                Box::new(Html {
                    context: html_context(summary, run_dir)?,
                }),
            ),
            Format::Terminal | Format::Json | Format::Csv => continue,
        };
        let mut text = Vec::new();
        renderer
            .render(summary, &mut text)
            .map_err(|e| Error::io(format!("cannot render {name}"), e))?;
        let path = run_dir.join(name);
        toolscore_core::write_file(&path, &text)?;
        written.push(path);
    }
    Ok(written)
}

/// What the HTML report shows beyond the summary: the comparison of a run with two
/// arms (`run --compare`'s, or the same comparison computed here, as `toolscore compare`
/// would), and each arm's trend from the history.jsonl beside the run folder. A history that
/// cannot be read is named on stderr and in the page, and the report is written without it:
/// the run's own figures do not depend on it.
fn html_context(summary: &Summary, run_dir: &Path) -> Result<HtmlContext, Error> {
    let mut ctx = HtmlContext::default();
    let computed = match (&summary.comparison, summary.arms.len()) {
        (None, 2) => {
            let side = |arm| toolscore_decide::CompareSide { summary, arm };
            match toolscore_decide::compare(
                side(0),
                side(1),
                toolscore_decide::CompareOptions {
                    metric: Metric::Selection,
                    confidence: summary.confidence,
                    min_effect: 0.05,
                    power: 0.8,
                    intersect: false,
                    holdout_apart: true,
                },
            ) {
                Ok(c) => Some(c),
                Err(e) => {
                    ctx.comparison_note = Some(format!("The two arms are not compared: {e}."));
                    None
                }
            }
        }
        (None, n) if n > 2 => {
            ctx.comparison_note = Some(format!(
                "{n} arms: `toolscore compare RUN_DIR --arm A --arm B` compares two of them."
            ));
            None
        }
        _ => None,
    };
    ctx.comparison = summary.comparison.clone().or(computed);
    match explorer(summary, run_dir, ctx.comparison.as_ref()) {
        Ok(explorer) => ctx.explorer = explorer,
        Err(e) => {
            errln!("warning: report.html has no case explorer: {e}")?;
            ctx.notes.push(format!("No case explorer: {e}"));
        }
    }
    let history = run_dir
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join(history::FILE_NAME);
    if history.is_file() {
        match trends(summary, &history) {
            Ok(trends) => {
                let dir = run_dir.parent().unwrap_or_else(|| Path::new("."));
                ctx.sibling_reports = trends
                    .iter()
                    .flat_map(|t| &t.points)
                    .map(|p| &p.line.run_id)
                    .filter(|run| super::history::report_in(dir, run).is_some())
                    .cloned()
                    .collect();
                ctx.trends = trends;
            }
            Err(e) => {
                errln!("warning: report.html shows no trend: {e}")?;
                ctx.notes.push(format!("No trend: {e}"));
            }
        }
    }
    Ok(ctx)
}

/// The HTML report's case explorer, read from the run folder: the behaviours of the cases
/// its forest plots show, their conversations and catalogs as the arms' models read them, and
/// a comparison's cases diffed (when both its arms are this run's).
fn explorer(
    summary: &Summary,
    run_dir: &Path,
    comparison: Option<&toolscore_summary::Comparison>,
) -> Result<Explorer, Error> {
    let mut keys = toolscore_report::explored_cases(summary);
    let explored = keys.len();
    let compared: Vec<(String, String)> = comparison
        .filter(|c| c.a.run_id == summary.run.run_id && c.b.run_id == summary.run.run_id)
        .map(toolscore_report::compared_cases)
        .unwrap_or_default();
    let (a, b) = match comparison {
        Some(c) => (Some(&c.a.arm), Some(&c.b.arm)),
        None => (None, None),
    };
    // The compared cases of both arms, after the explored ones (many are the same).
    for arm in [a, b].into_iter().flatten() {
        for (dataset, case_id) in &compared {
            let key = CaseKey {
                arm: arm.clone(),
                dataset: dataset.clone(),
                case_id: case_id.clone(),
            };
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    let tallies = behaviour::tallies_of(&run_dir.join("results.jsonl"), &keys)?;
    let at = |arm: &ArmId, d: &str, c: &str| {
        keys.iter()
            .position(|k| &k.arm == arm && k.dataset == d && k.case_id == c)
    };
    let mut out = Explorer::default();
    let mut files = super::shown::RunFiles::new(run_dir, &summary.run);
    if let (Some(a), Some(b)) = (a, b) {
        for (d, c) in &compared {
            if let (Some(i), Some(j)) = (at(a, d, c), at(b, d, c)) {
                let to_base = (
                    files.base_names(d, &a.variant),
                    files.base_names(d, &b.variant),
                );
                let moved = behaviour::diff(
                    &tallies[i],
                    &tallies[j],
                    summary.confidence,
                    (&to_base.0, &to_base.1),
                );
                out.diffs.push((d.clone(), c.clone(), moved));
            }
        }
    }
    for (k, tally) in keys.iter().zip(tallies).take(explored) {
        // The report says why in place of the case: the reason's text is what it shows.
        let shown = files
            .case(&k.dataset, &k.case_id, &k.arm.variant)
            .map(|c| behaviour::ShownConversation {
                source: c.source,
                messages: c.messages,
                changed_since: c.changed_since,
            })
            .map_err(|why| why.to_string());
        let catalog = (k.dataset.clone(), k.arm.variant.clone());
        let listed = out
            .catalogs
            .iter()
            .any(|c| (&c.dataset, &c.variant) == (&catalog.0, &catalog.1))
            || out.catalogs_not_shown.iter().any(|(c, _)| c == &catalog);
        if !listed && k.dataset != toolscore_core::SCENARIO_DATASET {
            match files.catalog(&k.dataset, &k.arm.variant) {
                Ok(c) => out.catalogs.push(c),
                Err(why) => out.catalogs_not_shown.push((catalog, why.to_string())),
            }
        }
        out.cases.push(behaviour::ExploredCase {
            behaviours: tally.finish(&k.dataset, &k.case_id, &k.arm, summary.confidence),
            shown,
        });
    }
    Ok(out)
}

/// The trends of the history file beside the run, for the HTML report.
fn trends(summary: &Summary, path: &Path) -> Result<Vec<Trend>, Error> {
    let text = toolscore_core::read_text(path)?;
    let lines = history::parse(&text, &path.display().to_string())?;
    Ok(history::trends(summary, &lines))
}

/// Refuses two formats that would both print to stdout.
pub(super) fn check_one_stdout(formats: &[Format]) -> Result<(), Error> {
    if formats.contains(&Format::Terminal) && formats.contains(&Format::Json) {
        return Err(super::usage(
            "--format terminal and --format json both print to stdout; choose one",
        ));
    }
    Ok(())
}

/// What a command prints on stdout: the summary as JSON; the terminal report (the decision,
/// and where the rest is, or with `detail` all of it); or, when the report went only to files,
/// the verdict, so a gated run still says how it ended.
pub(super) fn print_stdout(
    summary: &Summary,
    formats: &[Format],
    detail: bool,
    run_dir: &Path,
) -> Result<(), Error> {
    let failed = |e| Error::io("cannot write the report", e);
    let mut out = std::io::stdout().lock();
    if formats.contains(&Format::Json) {
        let text =
            serde_json::to_string_pretty(summary).map_err(|e| Error::encode("the summary", e))?;
        writeln!(out, "{text}").map_err(failed)?;
    } else if formats.contains(&Format::Terminal) {
        toolscore_report::Render::render(&toolscore_report::Terminal { detail }, summary, &mut out)
            .map_err(failed)?;
        // A compared run's comparison, as `run --compare` printed it.
        if let Some(c) = &summary.comparison {
            writeln!(out).map_err(failed)?;
            toolscore_report::render_comparison(c, &mut out).map_err(failed)?;
        }
        write_pointers(summary, run_dir, detail, &mut out).map_err(failed)?;
    } else {
        toolscore_report::render_verdict(summary, &mut out).map_err(failed)?;
    }
    Ok(())
}

/// The lines under the terminal report, after a blank line: where the rest is (unless it is
/// the `detail` report) and how to see what a case's trials did. `run` and `report` print the
/// same.
pub(super) fn write_pointers(
    summary: &Summary,
    run_dir: &Path,
    detail: bool,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let mut lines = Vec::new();
    if !detail {
        lines.push(more_detail(run_dir));
    }
    lines.extend(explain_hint(summary, run_dir));
    if lines.is_empty() {
        return Ok(());
    }
    writeln!(out, "\n{}", lines.join("\n"))
}

/// The line under the short report that says where the rest is.
fn more_detail(run_dir: &Path) -> String {
    format!(
        "more: per-tool rates, weakest cases, confusions, argument failures, latency by tool and tokens with --detail ({})",
        command([
            "toolscore",
            "report",
            &run_dir.display().to_string(),
            "--detail"
        ])
    )
}

/// The line that says how to see what a case's trials did, naming the run's weakest case;
/// `None` when no case was scored.
fn explain_hint(summary: &Summary, run_dir: &Path) -> Option<String> {
    let weakest = summary
        .arms
        .iter()
        .find_map(|a| toolscore_summary::weakest_cases(a).first().copied())?;
    Some(format!(
        "why: what the model did in a case, beside what it read (the weakest: {})",
        command([
            "toolscore",
            "explain",
            &run_dir.display().to_string(),
            &weakest.case_id
        ])
    ))
}

/// The line under a comparison that says how to see what the model did differently in its
/// first changed case (`dirs`: the one run folder, or A's then B's); `None` when no case
/// changed.
pub(super) fn compare_explain_hint(
    c: &toolscore_summary::Comparison,
    dirs: &[std::path::PathBuf],
) -> Option<String> {
    let case = c.changed_cases.first()?;
    let arm = |a: &toolscore_summary::ComparedArm| format!("{}/{}", a.arm.provider, a.arm.variant);
    let line = match dirs {
        [one] => command([
            "toolscore",
            "explain",
            &one.display().to_string(),
            &case.case_id,
            "--arm",
            &arm(&c.a),
            "--arm",
            &arm(&c.b),
        ]),
        [a, b, ..] => command([
            "toolscore",
            "explain",
            &a.display().to_string(),
            &case.case_id,
            "--arm",
            &arm(&c.a),
            "--against",
            &b.display().to_string(),
            "--arm",
            &arm(&c.b),
        ]),
        [] => return None,
    };
    Some(format!(
        "why: how the model's behaviour moved in a changed case, beside what each arm read ({line})"
    ))
}
