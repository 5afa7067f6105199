//! The trend chart of report.html: each run of a series with its interval band.

use super::{Move, Serialize, TEXT_CHARS, TREND_RUNS, Tick, Trend, arm_label, cut, history, px};

#[derive(Serialize)]
pub(super) struct TrendView {
    id: String,
    title: String,
    caption: String,
    width: f64,
    height: f64,
    plot_x0: f64,
    plot_x1: f64,
    plot_y0: f64,
    plot_y1: f64,
    y_ticks: Vec<YTick>,
    bands: Vec<String>,
    line: String,
    points: Vec<TrendMark>,
    catalog_marks: Vec<Tick>,
    notes: Vec<String>,
}

#[derive(Serialize)]
pub(super) struct YTick {
    pub(super) y: f64,
    pub(super) label: String,
}

#[derive(Serialize)]
pub(super) struct TrendMark {
    x: f64,
    y: f64,
    lo: Option<f64>,
    hi: Option<f64>,
    class: &'static str,
    current: bool,
    date: String,
    flag: &'static str,
    title: String,
}

/// Where the trend's runs and rates fall: runs spread evenly from x0 to x1 (one run in the
/// middle), rates from y1 (0) up to y0 (1).
struct TrendAxes {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
    runs: usize,
}

impl TrendAxes {
    fn x_of(&self, i: usize) -> f64 {
        if self.runs > 1 {
            px(self.x0 + (self.x1 - self.x0) / (self.runs - 1) as f64 * i as f64)
        } else {
            px((self.x0 + self.x1) / 2.0)
        }
    }

    fn y_of(&self, v: f64) -> f64 {
        px(self.y1 - (self.y1 - self.y0) * v.clamp(0.0, 1.0))
    }

    /// Rate ticks at quarters.
    fn y_ticks(&self) -> Vec<YTick> {
        [0.0, 0.25, 0.5, 0.75, 1.0]
            .iter()
            .map(|&v| YTick {
                y: self.y_of(v),
                label: format!("{v}"),
            })
            .collect()
    }
}

/// A series' case-level means with their interval band, newest runs last.
pub(super) fn trend_view(t: &Trend, index: usize) -> TrendView {
    let metric_of = |p: &history::Point| p.line.metric(t.metric).clone();
    let skip = t.points.len().saturating_sub(TREND_RUNS);
    let points = &t.points[skip..];
    // Room on the left and below for the slanted run labels (date and run id).
    let axes = TrendAxes {
        x0: 170.0,
        x1: 860.0,
        y0: 24.0,
        y1: 224.0,
        runs: points.len(),
    };
    let (x0, x1, y0, y1) = (axes.x0, axes.x1, axes.y0, axes.y1);
    let y_of = |v: f64| axes.y_of(v);
    let x_of = |i: usize| axes.x_of(i);
    let mut bands = Vec::new();
    let mut line = Vec::new();
    let mut marks = Vec::new();
    let mut catalog_marks = Vec::new();
    for (i, point) in points.iter().enumerate() {
        let x = x_of(i);
        let p = metric_of(point);
        if let (Some(lo), Some(hi)) = (p.lo, p.hi)
            && let Some(next) = points.get(i + 1).map(metric_of)
            && let (Some(nlo), Some(nhi)) = (next.lo, next.hi)
        {
            let nx = x_of(i + 1);
            bands.push(format!(
                "{x},{} {nx},{} {nx},{} {x},{}",
                y_of(hi),
                y_of(nhi),
                y_of(nlo),
                y_of(lo)
            ));
        }
        let Some(mean) = p.mean else { continue };
        let y = y_of(mean);
        line.push(format!("{x},{y}"));
        if point.change.as_ref().is_some_and(|c| c.catalog_changed) {
            catalog_marks.push(Tick {
                x,
                label: "catalog changed".to_owned(),
            });
        }
        marks.push(trend_mark(t, point, &p, (x, y), &y_of));
    }
    let mut notes = Vec::new();
    if skip > 0 {
        notes.push(format!(
            "({skip} older runs not drawn; `toolscore history` lists them)"
        ));
    }
    let metric = t.metric.label();
    TrendView {
        id: format!("trend-{index}"),
        title: format!(
            "Trend: {metric} · {} · {}",
            t.datasets.join(", "),
            arm_label(&t.arm)
        ),
        caption: format!(
            "each run's case-level mean {metric} rate with its interval (band); a red point is a significant drop against the previous run (paired by case, the interval of the mean difference below 0), a green one a significant rise; the ringed point is this run"
        ),
        width: 940.0,
        height: 340.0,
        plot_x0: x0,
        plot_x1: x1,
        plot_y0: y0,
        plot_y1: y1,
        y_ticks: axes.y_ticks(),
        bands,
        line: line.join(" "),
        points: marks,
        catalog_marks,
        notes,
    }
}

/// One run's point on the trend: its mean and interval, whether it moved against the run
/// before, and the hover text.
fn trend_mark(
    t: &Trend,
    point: &history::Point,
    p: &history::MetricPoint,
    (x, y): (f64, f64),
    y_of: &dyn Fn(f64) -> f64,
) -> TrendMark {
    let mean = p.mean.unwrap_or_default();
    let moved = point.change.as_ref().map_or(Move::None, |c| c.moved);
    let interval = match (p.lo, p.hi) {
        (Some(lo), Some(hi)) => format!(" [{lo:.3}, {hi:.3}]"),
        _ => String::new(),
    };
    let change = match point
        .change
        .as_ref()
        .and_then(|c| c.difference.as_ref().map(|d| (c, d)))
    {
        Some((c, d)) => format!(
            " · vs previous: {:+.3} [{:+.3}, {:+.3}] on {} cases",
            d.mean, d.interval.lo, d.interval.hi, c.cases
        ),
        None => String::new(),
    };
    TrendMark {
        x,
        y,
        lo: p.lo.map(y_of),
        hi: p.hi.map(y_of),
        class: match moved {
            Move::Drop => "drop",
            Move::Rise => "rise",
            Move::None => "steady",
        },
        current: t.current_run.as_deref() == Some(point.line.run_id.as_str()),
        date: run_label(&point.line),
        flag: match moved {
            Move::Drop => "drop",
            Move::Rise => "rise",
            Move::None => "",
        },
        title: format!(
            "run {} · {} · {mean:.3}{interval} ({} cases, n {}){change}",
            cut(&point.line.run_id, TEXT_CHARS),
            point.line.finished_at,
            p.cases,
            p.n
        ),
    }
}

/// A run's label under the trend: the day it finished and its run id, cut to fit the slant.
fn run_label(line: &history::HistoryLine) -> String {
    let day = line.finished_at.get(..10).unwrap_or(&line.finished_at);
    cut(&format!("{day} {}", line.run_id), RUN_LABEL_CHARS)
}

/// The most characters a run label takes: 10 for the day, a space, and a run id of up to 21
/// (toolscore's own ids: `20261205T074133Z-a3ff`).
const RUN_LABEL_CHARS: usize = 32;
