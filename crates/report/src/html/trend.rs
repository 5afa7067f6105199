//! The trend chart, the one both pages draw (`templates/trend.html`): report.html for each arm
//! of a run, history.html for each series. Each run of the trend is a point at its case-level
//! mean with its interval as a band; a point is marked ▼ when its paired difference from the
//! run before lies wholly below 0 and ▲ when wholly above, red when that is the worse way for the
//! rate (a drop; a rise of attack success: the rule of `history --fail-on-drop`) and green when
//! the better; a diamond is a sequential run, `r` marks a resumed run and `m` a merged one; a
//! dashed line, a change of catalog; the run a report is about is ringed. A point links to its
//! run's report.html when the caller found one.
//!
//! Pixel positions are whole numbers and run labels are thinned to the ones that fit without
//! touching: a year of weekly runs of many series is thousands of points on one page.

use serde::Serialize;

use super::{Move, Trend, cut, history};
use crate::history::overview::{self, RunPoint};

/// Characters of a run id under the trend; the whole id is in the point's tooltip.
const RUN_LABEL_CHARS: usize = 14;
/// Width a run label needs under the trend, in px at the labels' 10 px font: the longer of a
/// date and [`RUN_LABEL_CHARS`] characters, with a gap. Labels are thinned to fit it.
const RUN_LABEL_PX: f64 = 96.0;

#[derive(Serialize)]
pub(super) struct TrendView {
    id: String,
    /// Above the chart, with the caption; none on the history page, whose sections say it.
    title: Option<String>,
    caption: Option<String>,
    /// What a screen reader says for the chart.
    label: String,
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
    notes: Vec<String>,
}

#[derive(Serialize)]
pub(super) struct YTick {
    pub(super) y: f64,
    pub(super) label: String,
}

#[derive(Serialize)]
struct ChartPoint {
    x: i64,
    y: i64,
    /// `fixed` (a circle) or `sequential` (a diamond), a CSS class.
    shape: &'static str,
    /// `worse`, `better` or `steady`, a CSS class.
    class: &'static str,
    /// The run the page is about: drawn ringed.
    current: bool,
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

/// What a chart draws beyond its runs.
pub(super) struct TrendSpec<'a> {
    /// The figure's element id.
    pub(super) id: String,
    pub(super) title: Option<String>,
    pub(super) caption: Option<String>,
    pub(super) label: String,
    /// The runs, oldest first: those of the trend, drawn.
    pub(super) runs: &'a [RunPoint],
    /// Runs of the trend left out (older than the newest drawn), said under the chart.
    pub(super) older_not_drawn: usize,
    /// The run the page is about, ringed.
    pub(super) current: Option<&'a str>,
}

/// report.html's trend of an arm: the runs of its series up to this one (the newest
/// [`super::TREND_RUNS`]), unlinked, this run ringed.
pub(super) fn report_trend(t: &Trend, index: usize) -> TrendView {
    let skip = t.points.len().saturating_sub(super::TREND_RUNS);
    let runs: Vec<RunPoint> = t.points[skip..]
        .iter()
        .filter_map(|p| overview::run_point(p, t.followed, None))
        .collect();
    let metric = t.followed.label();
    let units = t.followed.cases_word();
    let unit = t.followed.case_word();
    let told = |m: Move| format!("{} ({})", m.word(), m.arrow());
    let (worse, better) = (told(t.followed.worse()), told(t.followed.better()));
    let title = format!(
        "Trend: {metric} · {} · {}",
        t.measured.join(", "),
        super::arm_label(&t.arm)
    );
    trend_chart(&TrendSpec {
        id: format!("trend-{index}"),
        label: title.clone(),
        title: Some(title),
        caption: Some(format!(
            "each run's mean {metric} rate over its {units} with its interval (band); a red point is a significant {worse} against the previous run (paired by {unit}, the interval of the mean difference excluding 0), a green one a significant {better}; a diamond is a sequential run, r a resumed one, m one merged from shards, a dashed line a change of catalog; the ringed point is this run"
        )),
        runs: &runs,
        older_not_drawn: skip,
        current: t.current_run.as_deref(),
    })
}

/// Under report.html's verdict: how this run moved against the run before it in an arm's
/// trend, a second question beside the verdict's (a run can pass its gates and still drop).
#[derive(Serialize)]
pub(super) struct TrendLine {
    text: String,
    /// `worse`, `better` or `steady` (a CSS class).
    class: &'static str,
    /// The trend figure's id on this page.
    trend_id: String,
    previous_run: String,
    /// `../RUN/report.html` of the previous run, when its folder holds one.
    previous_report: Option<String>,
}

/// The trend line of trend `index`, when this run is in it and has a run before it.
pub(super) fn trend_line(
    t: &Trend,
    index: usize,
    sibling_reports: &std::collections::BTreeSet<String>,
) -> Option<TrendLine> {
    let current = t.current_run.as_deref()?;
    let point = t.points.iter().rev().find(|p| p.line.run_id == current)?;
    let run = overview::run_point(point, t.followed, None)?;
    let change = run.change.as_ref()?;
    let mut text = format!(
        "Trend of {} · {}: {} against {}",
        t.followed.label(),
        super::arm_label(&t.arm),
        crate::wording::history_change(change, t.followed),
        cut(&change.previous_run, 60),
    );
    let marks = crate::wording::history_marks(
        change.moved,
        change.worsened,
        change.catalog_changed,
        change.sampling_changed,
    );
    if !marks.is_empty() {
        text.push_str(": ");
        text.push_str(&marks.join(", "));
    }
    text.push('.');
    Some(TrendLine {
        text,
        class: move_class(Some(change)),
        trend_id: format!("trend-{index}"),
        previous_run: cut(&change.previous_run, 60),
        previous_report: sibling_reports.contains(&change.previous_run).then(|| {
            format!(
                "../{}/report.html",
                overview::path_segment(&change.previous_run)
            )
        }),
    })
}

/// A whole pixel: a chart of a year of runs needs no finer, and the page stays small.
fn whole(v: f64) -> i64 {
    v.round() as i64
}

/// Interval bands over each stretch of consecutive points that all have an interval: the
/// upper ends forward, the lower ends back.
pub(super) fn bands(ends: &[(i64, Option<(i64, i64)>)]) -> Vec<String> {
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

/// The chart of `spec`'s runs: runs spread evenly over the plot, rates from 0 (bottom) to 1.
pub(super) fn trend_chart(spec: &TrendSpec) -> TrendView {
    let (x0, x1, y0, y1) = (48.0, 890.0, 28.0, 228.0);
    let runs = spec.runs;
    let n = runs.len();
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
    for (i, r) in runs.iter().enumerate() {
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
        let current = spec.current == Some(r.run_id.as_str());
        points.push(chart_point(r, x, y, current));
    }
    let spacing = if n > 1 {
        (x1 - x0) / (n - 1) as f64
    } else {
        x1 - x0
    };
    let every = (RUN_LABEL_PX / spacing).ceil().max(1.0) as usize;
    // The newest run is always labelled; another only every `every` runs, and not so close to
    // the newest that the two would touch.
    let labelled = |i: usize| {
        i + 1 == n || (i.is_multiple_of(every) && (n - 1 - i) as f64 * spacing >= RUN_LABEL_PX)
    };
    let labels = runs
        .iter()
        .enumerate()
        .filter(|&(i, _)| labelled(i))
        .map(|(i, r)| RunLabel {
            x: x_of(i),
            date: r.finished_at.get(..10).unwrap_or(&r.finished_at).to_owned(),
            run: cut(&r.run_id, RUN_LABEL_CHARS),
        })
        .collect();
    let mut notes = Vec::new();
    if spec.older_not_drawn > 0 {
        notes.push(format!(
            "({} older runs not drawn; `toolscore history` lists them)",
            spec.older_not_drawn
        ));
    }
    TrendView {
        id: spec.id.clone(),
        title: spec.title.clone(),
        caption: spec.caption.clone(),
        label: spec.label.clone(),
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
        notes,
    }
}

fn move_of(r: &RunPoint) -> Move {
    r.change.as_ref().map_or(Move::None, |c| c.moved)
}

/// `worse` (red), `better` (green) or `steady`: a CSS class of a run's move against the run
/// before it, by what the move means for the rate, not by its direction.
pub(super) fn move_class(change: Option<&overview::ChangeView>) -> &'static str {
    match change {
        Some(c) if c.worsened => "worse",
        Some(c) if c.moved != Move::None => "better",
        _ => "steady",
    }
}

fn chart_point(r: &RunPoint, x: i64, y: i64, current: bool) -> ChartPoint {
    let moved = move_of(r);
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
        for mark in crate::wording::history_marks(
            c.moved,
            c.worsened,
            c.catalog_changed,
            c.sampling_changed,
        ) {
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
        class: move_class(r.change.as_ref()),
        current,
        flag: moved.arrow(),
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
    let plain = r.sampling == history::Sampling::default();
    let same = r.change.as_ref().is_some_and(|c| !c.sampling_changed);
    if plain && same {
        String::new()
    } else {
        format!(" ({})", r.sampled)
    }
}

/// Whole pixels for a small chart's own scale: `(x, y)` of rate `v` at run `i` of `n`.
pub(super) fn small_scale(
    (x0, x1, y0, y1): (f64, f64, f64, f64),
    n: usize,
) -> (impl Fn(usize) -> i64, impl Fn(f64) -> i64) {
    let x_of = move |i: usize| {
        if n > 1 {
            whole(x0 + (x1 - x0) * i as f64 / (n - 1) as f64)
        } else {
            whole(x1)
        }
    };
    let y_of = move |v: f64| whole(y1 - (y1 - y0) * v.clamp(0.0, 1.0));
    (x_of, y_of)
}
