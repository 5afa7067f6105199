//! `history.md`: the weekly trend as Markdown, for a pull-request or issue comment or
//! `$GITHUB_STEP_SUMMARY`. It formats the [`Overview`] and nothing else: the headline first
//! (what `--fail-on-drop` exits on), a table of every series' newest run, then each series'
//! runs, the cases that changed most and its tools. Capped like `report.md`.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::{ROWS_SHOWN, cap_document, escape};
use crate::history::Followed;
use crate::history::overview::{Overview, SeriesView};
use crate::wording::{history_change, history_headline, history_marks, history_score};

/// Runs of a series listed (the newest); the page and `toolscore history` have them all.
const RUNS_SHOWN: usize = 12;

/// Writes `history.md`.
pub fn render_history_markdown(o: &Overview, w: &mut dyn Write) -> io::Result<()> {
    let mut doc = String::new();
    write_history(o, &mut doc);
    w.write_all(
        cap_document(doc, "every figure is in `toolscore history --format json`").as_bytes(),
    )
}

// `write!` to a String cannot fail: its results are ignored throughout.
fn write_history(o: &Overview, doc: &mut String) {
    let _ = writeln!(doc, "## toolscore history · {}\n", o.followed);
    // toolscore's own words, with a command in backticks: not escaped.
    let _ = writeln!(doc, "**{}.**\n", history_headline(o));
    let _ = writeln!(
        doc,
        "| series | newest run | its verdict | score | trend: vs previous run | sampled |\n|---|---|---|---|---|---|"
    );
    for s in &o.series {
        let Some(newest) = s.newest() else {
            let _ = writeln!(
                doc,
                "| {} | – | – | not in the trend | – | – |",
                escape(&s.label())
            );
            continue;
        };
        let _ = writeln!(
            doc,
            "| {} | {} | {} | {} | {} | {} |",
            escape(&s.label()),
            escape(&newest.run_id),
            newest.verdict.map_or("–", |v| v.label()),
            history_score(&newest.score),
            newest.change.as_ref().map_or("–".to_owned(), |c| {
                let marks =
                    history_marks(c.moved, c.worsened, c.catalog_changed, c.sampling_changed);
                if marks.is_empty() {
                    history_change(c, o.followed)
                } else {
                    format!("{} **{}**", history_change(c, o.followed), marks.join(", "))
                }
            }),
            escape(&newest.sampled),
        );
    }
    let _ = writeln!(
        doc,
        "\n{}\n\n<sub>made {} from `{}` ({} lines): a move is flagged only when the interval of the paired difference (by {}) excludes 0.</sub>",
        crate::wording::history_two_questions(o.followed),
        escape(&o.generated_at),
        escape(&o.source),
        o.lines,
        o.followed.case_word()
    );
    for s in &o.series {
        write_series(s, o.followed, doc);
    }
}

fn write_series(s: &SeriesView, followed: Followed, doc: &mut String) {
    let _ = writeln!(doc, "\n### {}\n", escape(&s.label()));
    let _ = writeln!(
        doc,
        "| run | finished | verdict | score | n | sampled | vs previous run |\n|---|---|---|---|---|---|---|"
    );
    let hidden = s.runs.len().saturating_sub(RUNS_SHOWN);
    for r in &s.runs[hidden..] {
        let change = r.change.as_ref().map_or("–".to_owned(), |c| {
            let mut text = format!(
                "vs {}: {}",
                escape(&c.previous_run),
                history_change(c, followed)
            );
            for mark in history_marks(c.moved, c.worsened, c.catalog_changed, c.sampling_changed) {
                let _ = write!(text, " **{mark}**");
            }
            text
        });
        let _ = writeln!(
            doc,
            "| {} | {} | {} | {} | {} | {} | {} |",
            escape(&r.run_id),
            escape(r.finished_at.get(..10).unwrap_or(&r.finished_at)),
            r.verdict.map_or("–", |v| v.label()),
            history_score(&r.score),
            r.score.n,
            escape(&r.sampled),
            change
        );
    }
    let older = hidden + s.older_runs_not_shown;
    if older > 0 {
        let _ = writeln!(doc, "\n{older} older runs not shown.");
    }
    for r in &s.runs {
        for g in &r.latency_growth {
            let _ = writeln!(
                doc,
                "\n{}: p95 latency of `{}` grew to {:.0} ms (lower bound {:.0} ms, above {:.0} ms, the highest upper bound of {} runs the week before).",
                escape(&r.run_id),
                escape(&g.tool),
                g.p95_ms,
                g.lo_ms,
                g.baseline_hi_ms,
                g.baseline_runs
            );
        }
    }
    if !s.not_in_trend.is_empty() {
        let _ = writeln!(
            doc,
            "\nNot in the trend (their scores cannot be trusted):\n"
        );
        for a in &s.not_in_trend {
            let _ = writeln!(
                doc,
                "- {} ({}): {}",
                escape(&a.run_id),
                escape(a.finished_at.get(..10).unwrap_or(&a.finished_at)),
                escape(&a.reason)
            );
        }
    }
    if let Some(m) = s.most_changed.as_ref().filter(|m| !m.cases.is_empty()) {
        let _ = writeln!(
            doc,
            "\n{} that changed most, {} → {} (a single {}'s change may be trial noise; `toolscore explain` shows what the model did):\n",
            match followed {
                Followed::Selection | Followed::Pass => "Cases",
                Followed::AttackSuccess => "Units",
            },
            escape(&m.previous_run),
            escape(&m.run),
            followed.case_word(),
        );
        let _ = writeln!(
            doc,
            "| {} | {} | {} | change |\n|---|---|---|---|",
            followed.case_word(),
            escape(&m.previous_run),
            escape(&m.run)
        );
        for c in m.cases.iter().take(ROWS_SHOWN) {
            let _ = writeln!(
                doc,
                "| {}/{} | {}/{} | {}/{} | {:+.3} |",
                escape(&c.dataset),
                escape(&c.case_id),
                c.previous[0],
                c.previous[1],
                c.current[0],
                c.current[1],
                c.difference
            );
        }
    }
    if let Some(last) = s.runs.last().filter(|_| !s.tools.is_empty()) {
        let previous = s.runs.len().checked_sub(2).map(|i| &s.runs[i]);
        let _ = writeln!(
            doc,
            "\nTools in {}{}:\n",
            escape(&last.run_id),
            previous.map_or(String::new(), |p| format!(" against {}", escape(&p.run_id)))
        );
        let _ = writeln!(
            doc,
            "| tool | previous | newest | change, paired by the tool's cases |\n|---|---|---|---|"
        );
        // The overview lists the tools by their change, the largest move the worse way first.
        for t in s.tools.iter().take(ROWS_SHOWN) {
            let at = |run: Option<&str>| {
                run.and_then(|id| t.points.iter().find(|p| p.run_id == id))
                    .map_or("–".to_owned(), |p| history_score(&p.rate))
            };
            let change = t.change.as_ref().map_or("–".to_owned(), |c| {
                let marks =
                    history_marks(c.moved, c.worsened, c.catalog_changed, c.sampling_changed);
                let text = history_change(c, followed);
                // Only the move itself is a mark here: the run's row says the rest.
                match marks
                    .first()
                    .filter(|_| c.moved != crate::history::Move::None)
                {
                    Some(mark) => format!("{text} **{mark}**"),
                    None => text,
                }
            });
            let _ = writeln!(
                doc,
                "| {} | {} | {} | {} |",
                escape(&t.tool),
                at(previous.map(|p| p.run_id.as_str())),
                at(Some(&last.run_id)),
                change
            );
        }
        if s.tools.len() > ROWS_SHOWN {
            let _ = writeln!(
                doc,
                "\n{} more tools on the page and in `toolscore history --format json`.",
                s.tools.len() - ROWS_SHOWN
            );
        }
    }
}
