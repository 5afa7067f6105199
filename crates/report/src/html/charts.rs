//! The charts of report.html drawn as SVG from the summary: the forest plot of case rates,
//! per-tool bars, the confusion heatmap and the latency chart.

use super::{
    ArmSummary, BTreeMap, BTreeSet, CASE_ROWS, CaseSummary, GateLevel, GateResult, HEATMAP_COLS,
    HEATMAP_ROWS, Metric, RateStat, Scale, Serialize, Summary, TEXT_CHARS, TOOL_ROWS, Verdict, cut,
    group_interval, pct, px, short, verdict_class,
};

#[derive(Serialize)]
pub(super) struct Tick {
    pub(super) x: f64,
    pub(super) label: String,
}

/// A vertical reference line across a chart (a gate threshold, zero, ±min-effect).
#[derive(Serialize)]
pub(super) struct RefLine {
    pub(super) x: f64,
    pub(super) label: String,
    pub(super) class: &'static str,
    /// Where the label sits: `middle` above the line, or `end`/`start` beside it one line
    /// lower (so the labels of close lines do not overlap).
    pub(super) anchor: &'static str,
}

/// What every horizontal chart has: its title and caption, its size, where the plot, the
/// labels and the numbers sit, its axis ticks, reference lines and notes.
#[derive(Serialize, Default)]
pub(super) struct ChartFrame {
    pub(super) id: String,
    pub(super) title: String,
    pub(super) caption: String,
    pub(super) width: f64,
    pub(super) height: f64,
    pub(super) plot_x0: f64,
    pub(super) plot_x1: f64,
    pub(super) axis_y: f64,
    pub(super) bottom_y: f64,
    pub(super) text_x: f64,
    pub(super) label_x: f64,
    pub(super) ticks: Vec<Tick>,
    pub(super) refs: Vec<RefLine>,
    pub(super) notes: Vec<String>,
}

impl ChartFrame {
    /// The shared layout with the axis at `axis_y`; the rest is the chart's to fill.
    pub(super) fn at(axis_y: f64) -> Self {
        ChartFrame {
            plot_x0: PLOT_X0,
            plot_x1: PLOT_X1,
            axis_y,
            bottom_y: axis_y,
            text_x: TEXT_X,
            label_x: LABEL_X,
            ..ChartFrame::default()
        }
    }
}

/// Rows of intervals on a horizontal axis, with summary diamonds under them.
#[derive(Serialize)]
pub(super) struct Forest {
    #[serde(flatten)]
    pub(super) frame: ChartFrame,
    pub(super) rows: Vec<ForestRow>,
    pub(super) diamonds: Vec<Diamond>,
}

#[derive(Serialize)]
pub(super) struct ForestRow {
    pub(super) y: f64,
    pub(super) label: String,
    pub(super) title: String,
    /// Absent when the case has no data for the metric.
    pub(super) x: Option<f64>,
    pub(super) lo: Option<f64>,
    pub(super) hi: Option<f64>,
    pub(super) text: String,
    pub(super) class: &'static str,
    /// The case the row shows: (dataset, case id).
    #[serde(skip)]
    pub(super) case: Option<(String, String)>,
    /// The element the row links to (its case's explorer), set by the page.
    pub(super) href: Option<String>,
}

#[derive(Serialize)]
pub(super) struct Diamond {
    pub(super) y: f64,
    pub(super) points: String,
    pub(super) label: String,
    pub(super) text: String,
}

#[derive(Serialize)]
pub(super) struct Bars {
    #[serde(flatten)]
    pub(super) frame: ChartFrame,
    pub(super) legend: Vec<LegendItem>,
    pub(super) rows: Vec<BarRow>,
}

#[derive(Serialize)]
pub(super) struct LegendItem {
    pub(super) x: f64,
    pub(super) class: &'static str,
    pub(super) label: &'static str,
}

#[derive(Serialize)]
pub(super) struct BarRow {
    pub(super) y: f64,
    pub(super) label: String,
    pub(super) title: String,
    pub(super) bars: Vec<Bar>,
}

#[derive(Serialize)]
pub(super) struct Bar {
    pub(super) class: &'static str,
    pub(super) y: f64,
    pub(super) height: f64,
    /// Bar end; absent (no bar) when the tool has no data for the metric.
    pub(super) x: Option<f64>,
    pub(super) lo: Option<f64>,
    pub(super) hi: Option<f64>,
    pub(super) text: String,
}

#[derive(Serialize)]
pub(super) struct Heatmap {
    pub(super) id: String,
    pub(super) title: String,
    pub(super) caption: String,
    pub(super) width: f64,
    pub(super) height: f64,
    pub(super) cell_w: f64,
    pub(super) cell_h: f64,
    pub(super) grid_x: f64,
    pub(super) grid_y: f64,
    pub(super) total_x: f64,
    pub(super) columns: Vec<HeatColumn>,
    pub(super) rows: Vec<HeatRow>,
    pub(super) notes: Vec<String>,
}

#[derive(Serialize)]
pub(super) struct HeatColumn {
    pub(super) x: f64,
    pub(super) label: String,
    pub(super) title: String,
}

#[derive(Serialize)]
pub(super) struct HeatRow {
    pub(super) y: f64,
    pub(super) label: String,
    pub(super) title: String,
    pub(super) total: u64,
    pub(super) cells: Vec<HeatCell>,
}

#[derive(Serialize)]
pub(super) struct HeatCell {
    pub(super) x: f64,
    pub(super) count: u64,
    /// Share of the row's trials, as the cell's opacity.
    pub(super) opacity: f64,
    /// `diag` (the right tool) or `off`; `dark` text on a pale cell.
    pub(super) class: &'static str,
    pub(super) text_class: &'static str,
    pub(super) title: String,
}

/// Layout shared by the horizontal charts: labels on the left, the plot, numbers on the
/// right.
pub(super) const WIDTH: f64 = 940.0;
pub(super) const LABEL_X: f64 = 292.0;
pub(super) const PLOT_X0: f64 = 300.0;
pub(super) const PLOT_X1: f64 = 640.0;
pub(super) const TEXT_X: f64 = 652.0;
pub(super) const TOP: f64 = 34.0;
pub(super) const ROW_H: f64 = 16.0;

pub(super) fn rate_scale() -> Scale {
    Scale::linear(0.0, 1.0, PLOT_X0, PLOT_X1)
}

pub(super) fn rate_ticks(scale: Scale) -> Vec<Tick> {
    [0.0, 0.25, 0.5, 0.75, 1.0]
        .iter()
        .map(|&v| Tick {
            x: scale.at(v),
            label: format!("{v}"),
        })
        .collect()
}

pub(super) fn threshold_line(
    scale: Scale,
    gate: Option<&GateResult>,
    metric: Metric,
) -> Vec<RefLine> {
    gate.filter(|g| g.metric.rate() == Some(metric))
        .map(|g| gate_line(scale, g))
        .into_iter()
        .collect()
}

/// A gate's bar as a reference line on a rate axis.
pub(super) fn gate_line(scale: Scale, g: &GateResult) -> RefLine {
    RefLine {
        x: scale.at(g.threshold),
        label: format!("gate {}", g.name()),
        class: "threshold",
        anchor: "middle",
    }
}

/// The forest plot: each case's rate with its Wilson interval, worst first, against the
/// gate's threshold, and the suite's case-level mean as a diamond.
pub(super) fn case_forest(
    s: &Summary,
    a: &ArmSummary,
    index: usize,
    metric: Metric,
    gate: Option<&GateResult>,
) -> Forest {
    let scale = rate_scale();
    let several_datasets = s.run.datasets.len() > 1;
    let name = |c: &CaseSummary| {
        if several_datasets {
            format!("{}/{}", c.dataset, c.case_id)
        } else {
            c.case_id.clone()
        }
    };
    // Under a case-level gate, each case's verdict colours its row.
    let verdicts: Option<BTreeMap<(&str, &str), Verdict>> =
        gate.filter(|g| g.level == GateLevel::Case).map(|g| {
            g.not_passed
                .iter()
                .map(|c| ((c.dataset.as_str(), c.case_id.as_str()), c.verdict))
                .collect()
        });
    let cases = worst_first(a, metric);
    let shown = cases.len().min(CASE_ROWS);
    let rows: Vec<ForestRow> = cases
        .iter()
        .take(shown)
        .enumerate()
        .map(|(i, c)| {
            let y = px(TOP + ROW_H * (i as f64 + 0.5));
            let class = match &verdicts {
                Some(v) => verdict_class(
                    v.get(&(c.dataset.as_str(), c.case_id.as_str()))
                        .copied()
                        .unwrap_or(Verdict::Pass),
                ),
                None => "neutral",
            };
            case_row(c, metric, &name(c), y, class, scale)
        })
        .collect();
    let mut notes = Vec::new();
    if cases.len() > shown {
        notes.push(format!(
            "… and {} more cases (the highest rates) in summary.json",
            cases.len() - shown
        ));
    }
    let rows_end = TOP + ROW_H * shown as f64;
    let diamonds: Vec<Diamond> = suite_diamond(a.suite.metrics.get(metric), rows_end, scale)
        .into_iter()
        .collect();
    let axis_y = px(rows_end + 18.0 * diamonds.len() as f64 + 12.0);
    let caption = forest_caption(s, metric, gate, verdicts.is_some());
    Forest {
        frame: ChartFrame {
            id: format!("forest-{index}"),
            title: format!("Cases: {} rate", metric.label()),
            caption,
            width: WIDTH,
            height: px(axis_y + 24.0),
            ticks: rate_ticks(scale),
            refs: threshold_line(scale, gate, metric),
            notes,
            ..ChartFrame::at(axis_y)
        },
        rows,
        diamonds,
    }
}

/// The arm's cases with data first, lowest rate first; then by name.
pub(super) fn worst_first(a: &ArmSummary, metric: Metric) -> Vec<&CaseSummary> {
    let mut cases: Vec<&CaseSummary> = a.cases.iter().collect();
    cases.sort_by(|x, y| {
        let (rx, ry) = (x.metrics.get(metric).rate, y.metrics.get(metric).rate);
        ry.is_none()
            .cmp(&rx.is_none())
            .reverse()
            .then(rx.partial_cmp(&ry).unwrap_or(std::cmp::Ordering::Equal))
            .then_with(|| (&x.dataset, &x.case_id).cmp(&(&y.dataset, &y.case_id)))
    });
    cases
}

/// The suite's rate under the case rows: a diamond over its interval, when it has one.
fn suite_diamond(suite: &RateStat, rows_end: f64, scale: Scale) -> Option<Diamond> {
    group_interval(suite).map(|(m, lo, hi, text)| {
        let y = px(rows_end + 18.0);
        Diamond {
            y,
            points: diamond_points(scale.at(lo), scale.at(m), scale.at(hi), y),
            label: if suite.case_level.is_some() {
                "suite: mean of case rates".to_owned()
            } else {
                "suite: pooled rate".to_owned()
            },
            text,
        }
    })
}

/// What the forest shows, and what its line and colours mean.
fn forest_caption(
    s: &Summary,
    metric: Metric,
    gate: Option<&GateResult>,
    coloured: bool,
) -> String {
    format!(
        "{} rate of each case with its {} Wilson interval (trials of one case), lowest first; {}{}",
        metric.label(),
        pct(s.confidence),
        match gate {
            Some(g) if g.metric.rate() == Some(metric) => {
                format!("the line is gate {}", g.name())
            }
            _ => "no rate gate was given, so no threshold is drawn".to_owned(),
        },
        if coloured {
            "; colours are the case-level gate's verdicts"
        } else {
            ""
        }
    )
}

/// One case's row of the forest: its rate and interval, or "n/a" without a scored trial.
fn case_row(
    c: &CaseSummary,
    metric: Metric,
    full: &str,
    y: f64,
    class: &'static str,
    scale: Scale,
) -> ForestRow {
    let r = c.metrics.get(metric);
    match (r.rate, r.interval) {
        (Some(p), Some(iv)) => ForestRow {
            y,
            label: short(full),
            title: format!(
                "{} · expected {} · {}",
                cut(full, TEXT_CHARS),
                cut(&c.expected, TEXT_CHARS),
                crate::wording::format_rate(r)
            ),
            x: Some(scale.at(p)),
            lo: Some(scale.at(iv.lo)),
            hi: Some(scale.at(iv.hi)),
            text: crate::wording::format_rate(r),
            class,
            case: Some((c.dataset.clone(), c.case_id.clone())),
            href: None,
        },
        _ => ForestRow {
            y,
            label: short(full),
            title: format!(
                "{} · no scored trial for this metric",
                cut(full, TEXT_CHARS)
            ),
            x: None,
            lo: None,
            hi: None,
            text: format!("n/a ({}/{})", r.x, r.n),
            class: "neutral",
            case: Some((c.dataset.clone(), c.case_id.clone())),
            href: None,
        },
    }
}

pub(super) fn diamond_points(lo: f64, mid: f64, hi: f64, y: f64) -> String {
    format!(
        "{lo},{y} {mid},{} {hi},{y} {mid},{}",
        px(y - 6.0),
        px(y + 6.0)
    )
}

/// Per expected tool: selection and pass, each a bar to its rate with the interval.
pub(super) fn tool_bars(
    s: &Summary,
    a: &ArmSummary,
    index: usize,
    gate: Option<&GateResult>,
) -> Option<Bars> {
    if a.tools.is_empty() {
        return None;
    }
    let scale = rate_scale();
    let metrics = [(Metric::Selection, "selection"), (Metric::Pass, "pass")];
    let bar_h = 12.0;
    let row_h = bar_h * metrics.len() as f64 + 8.0;
    let shown = a.tools.len().min(TOOL_ROWS);
    let rows = a
        .tools
        .iter()
        .take(shown)
        .enumerate()
        .map(|(i, t)| {
            let top = TOP + row_h * i as f64 + 4.0;
            let bars = metrics
                .iter()
                .enumerate()
                .map(|(k, &(m, class))| {
                    let y = px(top + bar_h * k as f64);
                    tool_bar(t.metrics.get(m), m, class, y, bar_h - 3.0, scale)
                })
                .collect();
            BarRow {
                y: px(top + bar_h),
                label: short(&t.name),
                title: format!("{} · {} cases", cut(&t.name, TEXT_CHARS), t.cases),
                bars,
            }
        })
        .collect();
    let mut notes = Vec::new();
    if a.tools.len() > shown {
        notes.push(format!(
            "… and {} more tools in summary.json",
            a.tools.len() - shown
        ));
    }
    let axis_y = px(TOP + row_h * shown as f64 + 8.0);
    let mut refs = threshold_line(scale, gate, Metric::Selection);
    refs.extend(threshold_line(scale, gate, Metric::Pass));
    Some(Bars {
        frame: ChartFrame {
            id: format!("tools-{index}"),
            title: "Expected tools: selection and pass".to_owned(),
            caption: format!(
                "each bar is the tool's rate over its trials with the {} Wilson interval, as the terminal shows it; trials of one case are not independent, so the tool's case-level interval, wider, is in summary.json (arms[].tools)",
                pct(s.confidence)
            ),
            width: WIDTH + 120.0,
            height: px(axis_y + 36.0),
            ticks: rate_ticks(scale),
            refs,
            notes,
            ..ChartFrame::at(axis_y)
        },
        legend: vec![
            LegendItem {
                x: PLOT_X0,
                class: "selection",
                label: "selection",
            },
            LegendItem {
                x: PLOT_X0 + 110.0,
                class: "pass",
                label: "pass",
            },
        ],
        rows,
    })
}

/// One bar of a tool's row: the metric's rate pooled over the tool's trials to its Wilson
/// interval, as the terminal's table shows it, or "n/a" without a scored trial.
fn tool_bar(
    r: &RateStat,
    m: Metric,
    class: &'static str,
    y: f64,
    height: f64,
    scale: Scale,
) -> Bar {
    match (r.rate, r.interval) {
        (Some(v), Some(iv)) => Bar {
            class,
            y,
            height,
            x: Some(scale.at(v)),
            lo: Some(scale.at(iv.lo)),
            hi: Some(scale.at(iv.hi)),
            text: format!("{}: {}", m.label(), crate::wording::format_rate(r)),
        },
        _ => Bar {
            class,
            y,
            height,
            x: None,
            lo: None,
            hi: None,
            text: format!("{}: n/a ({}/{})", m.label(), r.x, r.n),
        },
    }
}

/// Expected × chosen: each row's trials across the tools the model chose.
pub(super) fn confusion_heatmap(a: &ArmSummary, index: usize) -> Option<Heatmap> {
    if a.confusion.is_empty() {
        return None;
    }
    let expected: BTreeSet<&str> = a.confusion.iter().map(|c| c.expected.as_str()).collect();
    let (columns, folded) = heat_columns_of(a, &expected);
    let rows_shown: Vec<&str> = expected.iter().copied().take(HEATMAP_ROWS).collect();
    let (cell_w, cell_h) = (30.0, 20.0);
    let grid_x = 250.0;
    let grid_y = 170.0;
    let n_cols = columns.len() + usize::from(!folded.is_empty());
    let total_x = px(grid_x + cell_w * n_cols as f64 + 8.0);
    let mut heat_columns: Vec<HeatColumn> = columns
        .iter()
        .enumerate()
        .map(|(k, c)| HeatColumn {
            x: px(grid_x + cell_w * (k as f64 + 0.5)),
            label: cut(c, 28),
            title: format!("chosen: {}", cut(c, TEXT_CHARS)),
        })
        .collect();
    if !folded.is_empty() {
        heat_columns.push(HeatColumn {
            x: px(grid_x + cell_w * (columns.len() as f64 + 0.5)),
            label: format!("({} others)", folded.len()),
            title: format!("{} other tools chosen, summed", folded.len()),
        });
    }
    let rows = rows_shown
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let grid = HeatGrid {
                columns: &columns,
                folded: folded.len(),
                n_cols,
                grid_x,
                cell_w,
            };
            heat_row(a, e, &grid, px(grid_y + cell_h * i as f64))
        })
        .collect();
    let mut notes = Vec::new();
    if expected.len() > rows_shown.len() {
        notes.push(format!(
            "… and {} more expected tools in summary.json",
            expected.len() - rows_shown.len()
        ));
    }
    let height = px(grid_y + cell_h * rows_shown.len() as f64 + 12.0);
    Some(Heatmap {
        id: format!("confusion-{index}"),
        title: "Confusion: expected tool × chosen tool".to_owned(),
        caption: "scored trials by the tool each case expects (rows) and the tool the model chose first (columns); the colour is the share of the row's trials, green on the right tool, red elsewhere".to_owned(),
        // A 28-character column label slanted at 60° reaches about 90 px past its column.
        width: px((total_x + 110.0).max(420.0)),
        height,
        cell_w,
        cell_h,
        grid_x,
        grid_y,
        total_x,
        columns: heat_columns,
        rows,
        notes,
    })
}

/// The heatmap's columns: the expected tools in row order (so the right answers run down
/// the diagonal), then what else was chosen, most often first; past [`HEATMAP_COLS`] the
/// rest fold into one column.
fn heat_columns_of<'a>(
    a: &'a ArmSummary,
    expected: &BTreeSet<&'a str>,
) -> (Vec<&'a str>, BTreeSet<&'a str>) {
    let mut chosen_totals: BTreeMap<&str, u64> = BTreeMap::new();
    for c in &a.confusion {
        *chosen_totals.entry(c.chosen.as_str()).or_default() += c.count;
    }
    let mut columns: Vec<&str> = expected
        .iter()
        .copied()
        .filter(|e| chosen_totals.contains_key(e))
        .collect();
    let mut others: Vec<(&str, u64)> = chosen_totals
        .iter()
        .filter(|(c, _)| !expected.contains(*c))
        .map(|(c, n)| (*c, *n))
        .collect();
    others.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(y.0)));
    columns.extend(others.iter().map(|(c, _)| *c));
    let folded: BTreeSet<&str> = if columns.len() > HEATMAP_COLS {
        columns.split_off(HEATMAP_COLS - 1).into_iter().collect()
    } else {
        BTreeSet::new()
    };
    (columns, folded)
}

/// Where the heatmap's columns are.
struct HeatGrid<'a> {
    columns: &'a [&'a str],
    /// How many tools the last column folds together (0: no such column).
    folded: usize,
    n_cols: usize,
    grid_x: f64,
    cell_w: f64,
}

/// One expected tool's row: its trials across the columns, each cell shaded by its share.
fn heat_row(a: &ArmSummary, e: &str, g: &HeatGrid<'_>, y: f64) -> HeatRow {
    let mut counts: Vec<u64> = vec![0; g.n_cols];
    for c in a.confusion.iter().filter(|c| c.expected == *e) {
        let k = g
            .columns
            .iter()
            .position(|col| *col == c.chosen)
            .unwrap_or(g.columns.len());
        counts[k.min(g.n_cols - 1)] += c.count;
    }
    let total: u64 = counts.iter().sum();
    let cells = counts
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(k, &n)| {
            let share = n as f64 / total.max(1) as f64;
            let chosen = g.columns.get(k).copied();
            HeatCell {
                x: px(g.grid_x + g.cell_w * k as f64),
                count: n,
                opacity: (0.12 + 0.88 * share).min(1.0),
                class: if chosen == Some(e) { "diag" } else { "off" },
                text_class: if share > 0.5 { "light" } else { "dark" },
                title: format!(
                    "expected {} → chosen {}: {n} of {total} scored trials",
                    cut(e, TEXT_CHARS),
                    chosen.map_or_else(
                        || format!("one of {} other tools", g.folded),
                        |c| cut(c, TEXT_CHARS)
                    )
                ),
            }
        })
        .collect();
    HeatRow {
        y,
        label: cut(e, 36),
        title: format!("expected {}", cut(e, TEXT_CHARS)),
        total,
        cells,
    }
}
