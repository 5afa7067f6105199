//! `history.html`: the weekly trend as one self-contained page, drawn from the
//! [`Overview`] (`toolscore history --format html`).
//!
//! The page follows report.html's rules (module doc of `html`): every string is escaped by
//! the template, no script, the same content security policy, no statistics here. One thing
//! differs: the page links to each run's `report.html`. Those links are relative paths the
//! overview built from a run id by percent-encoding every byte but letters, digits, `-` and
//! `_` ([`crate::history::overview::path_segment`]), and only to files the command found,
//! so a link can neither leave the folder, name a scheme, nor dangle.
//!
//! Sizes are bounded for a year of weekly runs of many series (the page for 100 series of 52
//! runs stays under 2 MB): pixel positions are whole numbers, intervals are one band polygon
//! per series, and each tool's small multiple draws only the newest runs the overview gives.

use std::io;

use serde::Serialize;

use super::trend::{TrendSpec, TrendView, bands, move_class, small_scale, trend_chart};
use super::{cut, render_page};
use crate::history::overview::{CaseChanges, Overview, SeriesView, ToolTrend};
use crate::history::{Followed, Move};
use crate::wording::{
    history_change, history_headline, history_interval, history_marks, history_score,
};

const TEMPLATE: &str = include_str!("../templates/history.html");

/// Characters of a tool name above its small multiple.
const TOOL_LABEL_CHARS: usize = 26;

/// Writes `history.html`.
pub fn render_history_html(o: &Overview, w: &mut dyn io::Write) -> io::Result<()> {
    let html = render_page(("history.html", TEMPLATE), &page(o))?;
    w.write_all(html.as_bytes())
}

#[derive(Serialize)]
struct Page {
    title: String,
    facts: Vec<String>,
    headline: String,
    /// `pass` or `fail` (a CSS class).
    headline_class: &'static str,
    rows: Vec<SummaryRow>,
    two_questions: String,
    series: Vec<SeriesSection>,
}

#[derive(Serialize)]
struct SummaryRow {
    id: String,
    label: String,
    run: String,
    report: Option<String>,
    verdict: String,
    score: String,
    change: String,
    /// `drop`, `rise` or `steady` (a CSS class).
    class: &'static str,
    sampled: String,
}

#[derive(Serialize)]
struct SeriesSection {
    id: String,
    title: String,
    chart: Option<TrendView>,
    notes: Vec<String>,
    apart: Vec<ApartView>,
    tools: Vec<SmallMultiple>,
    tools_caption: String,
    changed: Option<ChangedTable>,
}

#[derive(Serialize)]
struct ApartView {
    text: String,
    report: Option<String>,
}

/// One tool's rate across the newest runs, as a small chart.
#[derive(Serialize)]
struct SmallMultiple {
    /// `worse`, `better` or `steady` (a CSS class): the tool's newest paired change.
    class: &'static str,
    title: String,
    label: String,
    band: Option<String>,
    line: String,
    last_x: i64,
    last_y: i64,
    value: String,
}

#[derive(Serialize)]
struct ChangedTable {
    heading: String,
    /// `case` or `unit`: the first column's header.
    unit: &'static str,
    caption: String,
    previous: String,
    current: String,
    rows: Vec<ChangedRow>,
}

#[derive(Serialize)]
struct ChangedRow {
    case: String,
    link: Option<String>,
    previous: String,
    current: String,
    change: String,
    /// `worse` or `better`, a CSS class.
    class: &'static str,
    explain: String,
}

fn page(o: &Overview) -> Page {
    Page {
        title: format!("toolscore history · {}", o.followed),
        facts: vec![
            format!(
                "made {} from {} ({} lines, {} series)",
                o.generated_at,
                o.source,
                o.lines,
                o.series.len()
            ),
            format!(
                "each point is a run's mean over its {} with its interval (band); ▼ marks a run whose paired difference from the run before lies wholly below 0, ▲ one wholly above, in red when that is the worse way for {} (the rule of `toolscore history --fail-on-drop`) and in green when the better; a diamond is a sequential run (its cases stopped once decided), r a resumed run, m one merged from shards; a point links to its run's report",
                o.followed.cases_word(),
                o.followed.label()
            ),
        ],
        headline: history_headline(o),
        headline_class: if o.any_worsened() { "fail" } else { "pass" },
        two_questions: crate::wording::history_two_questions(o.followed),
        rows: o
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| summary_row(i, s, o.followed))
            .collect(),
        series: o
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| series_section(i, s, o.followed))
            .collect(),
    }
}

fn summary_row(i: usize, s: &SeriesView, followed: Followed) -> SummaryRow {
    let newest = s.newest();
    SummaryRow {
        id: format!("series-{i}"),
        label: cut(&s.label(), 200),
        run: newest.map_or("–".to_owned(), |r| cut(&r.run_id, 60)),
        report: newest.and_then(|r| r.report.clone()),
        verdict: newest
            .and_then(|r| r.verdict)
            .map_or("–".to_owned(), |v| v.label().to_owned()),
        score: newest.map_or("not in the trend".to_owned(), |r| history_score(&r.score)),
        change: newest
            .and_then(|r| r.change.as_ref())
            .map_or("–".to_owned(), |c| change_text(c, followed)),
        class: move_class(newest.and_then(|r| r.change.as_ref())),
        sampled: newest.map_or(String::new(), |r| r.sampled.clone()),
    }
}

fn change_text(c: &crate::history::overview::ChangeView, followed: Followed) -> String {
    let mut text = history_change(c, followed);
    for mark in history_marks(c.moved, c.worsened, c.catalog_changed, c.sampling_changed) {
        text.push_str(" · ");
        text.push_str(mark);
    }
    text
}

fn series_section(i: usize, s: &SeriesView, followed: Followed) -> SeriesSection {
    let mut notes = Vec::new();
    if s.older_runs_not_shown > 0 {
        notes.push(format!(
            "{} older runs not shown (--last)",
            s.older_runs_not_shown
        ));
    }
    for r in &s.runs {
        for g in &r.latency_growth {
            notes.push(format!(
                "{}: p95 latency of {} grew to {:.0} ms (lower bound {:.0} ms, above {:.0} ms, the highest upper bound of {} runs the week before)",
                cut(&r.run_id, 60),
                cut(&g.tool, 60),
                g.p95_ms,
                g.lo_ms,
                g.baseline_hi_ms,
                g.baseline_runs
            ));
        }
    }
    SeriesSection {
        id: format!("series-{i}"),
        title: cut(&s.label(), 300),
        chart: (!s.runs.is_empty()).then(|| {
            trend_chart(&TrendSpec {
                id: format!("trend-{i}"),
                title: None,
                caption: None,
                label: format!("trend of {}", cut(&s.label(), 200)),
                runs: &s.runs,
                older_not_drawn: 0,
                current: None,
            })
        }),
        notes,
        apart: s
            .not_in_trend
            .iter()
            .map(|a| ApartView {
                text: format!(
                    "{} ({}): {}",
                    cut(&a.run_id, 60),
                    a.finished_at.get(..10).unwrap_or(&a.finished_at),
                    cut(&a.reason, 300)
                ),
                report: a.report.clone(),
            })
            .collect(),
        tools_caption: format!(
            "each expected tool's rate (the mean over its cases, with its interval as a band) in the newest {} runs of the trend, on a scale from 0 to 1; the figure is the newest run's",
            s.tools.iter().map(|t| t.points.len()).max().unwrap_or(0)
        ),
        tools: s
            .tools
            .iter()
            .filter_map(|t| small_multiple(t, followed))
            .collect(),
        changed: s
            .most_changed
            .as_ref()
            .and_then(|m| changed_table(m, followed)),
    }
}

/// A tool's small multiple: 180 × 64 px, its rate from 0 (bottom) to 1 (top); a tool whose
/// newest paired change is the worse way is drawn red with ▼ (▲ for a rate where lower is
/// better) before its name.
fn small_multiple(t: &ToolTrend, followed: Followed) -> Option<SmallMultiple> {
    let n = t.points.len();
    let last = t.points.last()?;
    let (x_of, y_of) = small_scale((4.0, 136.0, 24.0, 56.0), n);
    let ends: Vec<(i64, Option<(i64, i64)>)> = t
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            (
                x_of(i),
                p.rate
                    .lo
                    .zip(p.rate.hi)
                    .map(|(lo, hi)| (y_of(lo), y_of(hi))),
            )
        })
        .collect();
    let line: Vec<String> = t
        .points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.rate.mean.map(|m| format!("{},{}", x_of(i), y_of(m))))
        .collect();
    let mean = last.rate.mean?;
    let class = move_class(t.change.as_ref());
    // Only a move is told in the tooltip: a year of many series is thousands of tools.
    let change = t
        .change
        .as_ref()
        .filter(|c| c.moved != Move::None)
        .map_or(String::new(), |c| format!("; {}", change_text(c, followed)));
    let flag = match t.change.as_ref().filter(|c| c.worsened) {
        Some(c) => format!("{} ", c.moved.arrow()),
        None => String::new(),
    };
    Some(SmallMultiple {
        class,
        title: format!(
            "{}: {}{change}",
            cut(&t.tool, 120),
            history_interval(&last.rate)
        ),
        label: format!("{flag}{}", cut(&t.tool, TOOL_LABEL_CHARS)),
        band: bands(&ends).into_iter().next(),
        line: line.join(" "),
        last_x: x_of(n - 1),
        last_y: y_of(mean),
        value: format!("{mean:.2}"),
    })
}

fn changed_table(m: &CaseChanges, followed: Followed) -> Option<ChangedTable> {
    if m.cases.is_empty() {
        return None;
    }
    Some(ChangedTable {
        heading: match followed {
            Followed::Selection | Followed::Pass => "Cases that changed most".to_owned(),
            Followed::AttackSuccess => "Units that changed most".to_owned(),
        },
        unit: followed.case_word(),
        caption: format!(
            "The {} that changed most from {} to {} (a single {}'s change may be trial noise; `toolscore explain` shows what the model did)",
            followed.cases_word(),
            cut(&m.previous_run, 60),
            cut(&m.run, 60),
            followed.case_word()
        ),
        previous: cut(&m.previous_run, 40),
        current: cut(&m.run, 40),
        rows: m
            .cases
            .iter()
            .map(|c| ChangedRow {
                case: cut(&format!("{}/{}", c.dataset, c.case_id), 120),
                link: c.link.clone(),
                previous: format!("{}/{}", c.previous[0], c.previous[1]),
                current: format!("{}/{}", c.current[0], c.current[1]),
                change: format!("{:+.3}", c.difference),
                class: if followed.worsening(c.difference) > 0.0 {
                    "worse"
                } else {
                    "better"
                },
                explain: cut(&c.explain, 300),
            })
            .collect(),
    })
}
