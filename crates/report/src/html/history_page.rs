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

use super::trend::YTick;
use super::{cut, render_page};
use crate::history::Move;
use crate::history::overview::{CaseChanges, Overview, RunPoint, SeriesView, ToolTrend};
use crate::wording::{history_change, history_headline, history_marks, history_score};

const TEMPLATE: &str = include_str!("../templates/history.html");

/// Characters of a run id under the trend; the whole id is in the point's tooltip.
const RUN_LABEL_CHARS: usize = 14;
/// Characters of a tool name above its small multiple.
const TOOL_LABEL_CHARS: usize = 26;
/// Width a run label needs under the trend, in px at the chart's 11 px font: the longer of
/// a date and [`RUN_LABEL_CHARS`] characters, with a gap. Labels are thinned to fit it.
const RUN_LABEL_PX: f64 = 96.0;

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
    chart: Option<Chart>,
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

/// The trend of a series: every run's case-level mean, its interval as a band, a point per
/// run linking to its report.
#[derive(Serialize)]
struct Chart {
    width: f64,
    height: f64,
    plot_x0: f64,
    plot_x1: f64,
    plot_y0: f64,
    plot_y1: f64,
    y_ticks: Vec<YTick>,
    bands: Vec<String>,
    line: String,
    points: Vec<ChartPoint>,
    labels: Vec<RunLabel>,
    catalog_marks: Vec<i64>,
    label: String,
}

#[derive(Serialize)]
struct ChartPoint {
    x: i64,
    y: i64,
    /// `fixed` (a circle) or `sequential` (a diamond), a CSS class.
    shape: &'static str,
    /// `drop`, `rise` or `steady`, a CSS class.
    class: &'static str,
    /// `▼` over a drop, `▲` over a rise.
    flag: &'static str,
    /// `r` resumed, `m` merged, `rm` both: under the point.
    gathered: &'static str,
    href: Option<String>,
    title: String,
}

#[derive(Serialize)]
struct RunLabel {
    x: i64,
    date: String,
    run: String,
}

/// One tool's rate across the newest runs, as a small chart.
#[derive(Serialize)]
struct SmallMultiple {
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
    /// `drop` or `rise`, a CSS class.
    class: &'static str,
    explain: String,
}

fn page(o: &Overview) -> Page {
    Page {
        title: format!("toolscore history · {}", o.metric),
        facts: vec![
            format!(
                "made {} from {} ({} lines, {} series)",
                o.generated_at,
                o.source,
                o.lines,
                o.series.len()
            ),
            "each point is a run's case-level mean with its interval (band); ▼ marks a run whose paired difference from the run before lies wholly below 0 (the rule of `toolscore history --fail-on-drop`), ▲ one wholly above; a diamond is a sequential run (its cases stopped once decided), r a resumed run, m one merged from shards; a point links to its run's report".to_owned(),
        ],
        headline: history_headline(o),
        headline_class: if o.any_dropped() { "fail" } else { "pass" },
        rows: o.series.iter().enumerate().map(|(i, s)| summary_row(i, s)).collect(),
        series: o
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| series_section(i, s))
            .collect(),
    }
}

fn move_class(moved: Option<Move>) -> &'static str {
    match moved {
        Some(Move::Drop) => "drop",
        Some(Move::Rise) => "rise",
        _ => "steady",
    }
}

fn summary_row(i: usize, s: &SeriesView) -> SummaryRow {
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
            .map_or("–".to_owned(), change_text),
        class: move_class(newest.and_then(|r| r.change.as_ref()).map(|c| c.moved)),
        sampled: newest.map_or(String::new(), |r| r.sampled.clone()),
    }
}

fn change_text(c: &crate::history::overview::ChangeView) -> String {
    let mut text = history_change(c);
    for mark in history_marks(c) {
        text.push_str(" · ");
        text.push_str(mark);
    }
    text
}

fn series_section(i: usize, s: &SeriesView) -> SeriesSection {
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
        chart: (!s.runs.is_empty()).then(|| chart(s)),
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
        tools: s.tools.iter().filter_map(small_multiple).collect(),
        changed: s.most_changed.as_ref().and_then(changed_table),
    }
}

/// A whole pixel: a chart of a year of runs needs no finer, and the page stays small.
fn whole(v: f64) -> i64 {
    v.round() as i64
}

/// Interval bands over each stretch of consecutive points that all have an interval: the
/// upper ends forward, the lower ends back.
fn bands(ends: &[(i64, Option<(i64, i64)>)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut stretch: Vec<(i64, i64, i64)> = Vec::new();
    let mut close = |stretch: &mut Vec<(i64, i64, i64)>| {
        if stretch.len() > 1 {
            let upper = stretch.iter().map(|(x, _, hi)| format!("{x},{hi}"));
            let lower = stretch.iter().rev().map(|(x, lo, _)| format!("{x},{lo}"));
            out.push(upper.chain(lower).collect::<Vec<_>>().join(" "));
        }
        stretch.clear();
    };
    for &(x, interval) in ends {
        match interval {
            Some((lo, hi)) => stretch.push((x, lo, hi)),
            None => close(&mut stretch),
        }
    }
    close(&mut stretch);
    out
}

fn chart(s: &SeriesView) -> Chart {
    let (x0, x1, y0, y1) = (48.0, 890.0, 28.0, 228.0);
    let n = s.runs.len();
    let x_of = |i: usize| {
        if n > 1 {
            whole(x0 + (x1 - x0) * i as f64 / (n - 1) as f64)
        } else {
            whole((x0 + x1) / 2.0)
        }
    };
    let y_of = |v: f64| whole(y1 - (y1 - y0) * v.clamp(0.0, 1.0));
    let mut ends = Vec::new();
    let mut line = Vec::new();
    let mut points = Vec::new();
    let mut catalog_marks = Vec::new();
    for (i, r) in s.runs.iter().enumerate() {
        let x = x_of(i);
        let interval = r
            .score
            .lo
            .zip(r.score.hi)
            .map(|(lo, hi)| (y_of(lo), y_of(hi)));
        ends.push((x, interval));
        let Some(mean) = r.score.mean else { continue };
        let y = y_of(mean);
        line.push(format!("{x},{y}"));
        if r.change.as_ref().is_some_and(|c| c.catalog_changed) {
            catalog_marks.push(x);
        }
        points.push(chart_point(r, x, y));
    }
    let spacing = if n > 1 {
        (x1 - x0) / (n - 1) as f64
    } else {
        x1 - x0
    };
    let every = (RUN_LABEL_PX / spacing).ceil().max(1.0) as usize;
    let labelled = |i: usize| {
        i + 1 == n || (i.is_multiple_of(every) && (n - 1 - i) as f64 * spacing >= RUN_LABEL_PX)
    };
    let labels = s
        .runs
        .iter()
        .enumerate()
        .filter(|&(i, _)| labelled(i))
        .map(|(i, r)| RunLabel {
            x: x_of(i),
            date: r.finished_at.get(..10).unwrap_or(&r.finished_at).to_owned(),
            run: cut(&r.run_id, RUN_LABEL_CHARS),
        })
        .collect();
    Chart {
        width: 940.0,
        height: 280.0,
        plot_x0: x0,
        plot_x1: x1,
        plot_y0: y0,
        plot_y1: y1,
        y_ticks: [0.0, 0.25, 0.5, 0.75, 1.0]
            .iter()
            .map(|&v| YTick {
                y: y_of(v) as f64,
                label: format!("{v}"),
            })
            .collect(),
        bands: bands(&ends),
        line: line.join(" "),
        points,
        labels,
        catalog_marks,
        label: format!("trend of {}", cut(&s.label(), 200)),
    }
}

fn chart_point(r: &RunPoint, x: i64, y: i64) -> ChartPoint {
    let moved = r.change.as_ref().map(|c| c.moved);
    let interval = match (r.score.lo, r.score.hi) {
        (Some(lo), Some(hi)) => format!(" [{lo:.3}, {hi:.3}]"),
        _ => String::new(),
    };
    // Terse: a year of runs of many series is thousands of tooltips. The change is always
    // against the point before this one (runs kept out of the trend are not drawn).
    let change = r.change.as_ref().map_or(String::new(), |c| {
        let mut text = match &c.difference {
            Some(d) => format!(
                "; change {:+.3} [{:+.3}, {:+.3}]",
                d.mean, d.interval.lo, d.interval.hi
            ),
            None => "; too few shared cases to compare".to_owned(),
        };
        for mark in history_marks(c) {
            text.push_str(", ");
            text.push_str(mark);
        }
        text
    });
    let verdict = r
        .verdict
        .map_or(String::new(), |v| format!(" {}", v.label()));
    ChartPoint {
        x,
        y,
        shape: if r.sampling.sequential {
            "sequential"
        } else {
            "fixed"
        },
        class: move_class(moved),
        flag: match moved {
            Some(Move::Drop) => "▼",
            Some(Move::Rise) => "▲",
            _ => "",
        },
        gathered: match (r.sampling.resumed_trials > 0, r.sampling.merged_shards > 0) {
            (true, true) => "rm",
            (true, false) => "r",
            (false, true) => "m",
            (false, false) => "",
        },
        href: r.report.clone(),
        title: format!(
            "{} {}{verdict} {:.3}{interval}{}{change}",
            cut(&r.run_id, 60),
            r.finished_at.get(..10).unwrap_or(&r.finished_at),
            r.score.mean.unwrap_or_default(),
            sampling_note(r)
        ),
    }
}

/// How a point was sampled, for its tooltip: said on the first point, on every point not
/// sampled as a fixed run in one sitting (sequential, resumed, merged), and wherever the design
/// changed from the point before; the other points were sampled as the one before them.
fn sampling_note(r: &RunPoint) -> String {
    let plain = r.sampling == crate::history::Sampling::default();
    let same = r.change.as_ref().is_some_and(|c| !c.sampling_changed);
    if plain && same {
        String::new()
    } else {
        format!(" ({})", r.sampled)
    }
}

/// A tool's small multiple: 180 × 64 px, its rate from 0 (bottom) to 1 (top).
fn small_multiple(t: &ToolTrend) -> Option<SmallMultiple> {
    let (x0, x1, y0, y1) = (4.0, 136.0, 24.0, 56.0);
    let n = t.points.len();
    let last = t.points.last()?;
    let x_of = |i: usize| {
        if n > 1 {
            whole(x0 + (x1 - x0) * i as f64 / (n - 1) as f64)
        } else {
            whole(x1)
        }
    };
    let y_of = |v: f64| whole(y1 - (y1 - y0) * v.clamp(0.0, 1.0));
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
    Some(SmallMultiple {
        title: format!("{}: {}", cut(&t.tool, 120), interval_of(&last.rate)),
        label: cut(&t.tool, TOOL_LABEL_CHARS),
        band: bands(&ends).into_iter().next(),
        line: line.join(" "),
        last_x: x_of(n - 1),
        last_y: y_of(mean),
        value: format!("{mean:.2}"),
    })
}

/// `0.246 [0.098, 0.394]`, or the mean alone when there is no interval.
fn interval_of(p: &crate::history::MetricPoint) -> String {
    match (p.mean, p.lo, p.hi) {
        (Some(m), Some(lo), Some(hi)) => format!("{m:.3} [{lo:.3}, {hi:.3}]"),
        (Some(m), _, _) => format!("{m:.3}"),
        _ => "–".to_owned(),
    }
}

fn changed_table(m: &CaseChanges) -> Option<ChangedTable> {
    if m.cases.is_empty() {
        return None;
    }
    Some(ChangedTable {
        caption: format!(
            "The cases that changed most from {} to {} (a single case's change may be trial noise; `toolscore explain` shows what the model did)",
            cut(&m.previous_run, 60),
            cut(&m.run, 60)
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
                class: if c.difference < 0.0 { "drop" } else { "rise" },
                explain: cut(&c.explain, 300),
            })
            .collect(),
    })
}
