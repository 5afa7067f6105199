//! The latency chart of report.html: p50, p95 and p99 per expected tool with their
//! order-statistic intervals, against any latency gate's budget.

use super::{
    ArmSummary, ChartFrame, GateResult, LatencySummary, PLOT_X0, PLOT_X1, Percentile, RefLine,
    Scale, Serialize, Summary, TEXT_CHARS, TOOL_ROWS, TOP, Tick, WIDTH, cut, format_ms,
    format_percentile, nice_step, pct, px, short,
};

#[derive(Serialize)]
pub(super) struct LatencyChart {
    #[serde(flatten)]
    pub(super) frame: ChartFrame,
    pub(super) rows: Vec<LatencyRow>,
}

#[derive(Serialize)]
pub(super) struct LatencyRow {
    pub(super) y: f64,
    pub(super) label: String,
    pub(super) title: String,
    pub(super) marks: Vec<LatencyMark>,
}

#[derive(Serialize)]
pub(super) struct LatencyMark {
    /// `p50`, `p95` or `p99`: the marker's shape and colour.
    pub(super) class: &'static str,
    pub(super) name: &'static str,
    pub(super) y: f64,
    pub(super) x: f64,
    pub(super) lo: f64,
    pub(super) hi: f64,
    /// An end the data cannot bound: the whisker runs to the axis's end, dashed.
    pub(super) lo_open: bool,
    pub(super) hi_open: bool,
    pub(super) text: String,
}

/// p50, p95 and p99 of each expected tool's answered trials (and of the arm's), each with
/// its order-statistic interval, against any latency gate's budget.
pub(super) fn latency_chart(s: &Summary, a: &ArmSummary, index: usize) -> Option<LatencyChart> {
    if a.latency_ms.n == 0 {
        return None;
    }
    let mut groups: Vec<(String, &LatencySummary)> =
        vec![("all answered trials".to_owned(), &a.latency_ms)];
    let shown = a.tool_latency.len().min(TOOL_ROWS);
    groups.extend(
        a.tool_latency
            .iter()
            .take(shown)
            .map(|t| (t.tool.clone(), &t.latency_ms)),
    );
    let budgets: Vec<&GateResult> = s
        .gate
        .iter()
        .flat_map(|g| &g.gates)
        .filter(|g| g.arm == a.arm && g.metric.quantile().is_some())
        .collect();
    // The axis spans every value and bound drawn, and any budget: logarithmic when they
    // spread over more than a decade (latencies are skewed, and a p99 ten times the median
    // would squeeze every median into the first tick).
    let drawn: Vec<f64> = groups
        .iter()
        .flat_map(|(_, l)| [&l.p50, &l.p95, &l.p99])
        .flatten()
        .flat_map(|p| [Some(p.value), p.lo, p.hi])
        .flatten()
        .chain(budgets.iter().map(|g| g.threshold))
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let top = drawn.iter().copied().fold(1.0_f64, f64::max);
    let bottom = drawn.iter().copied().fold(top, f64::min);
    let (scale, ticks) = latency_axis(bottom, top);
    let mark_h = 12.0;
    let row_h = mark_h * 3.0 + 8.0;
    let rows = groups
        .iter()
        .enumerate()
        .map(|(i, (name, l))| latency_row(name, l, &scale, TOP + row_h * i as f64 + 4.0))
        .collect();
    let mut notes = Vec::new();
    if a.tool_latency.len() > shown {
        notes.push(format!(
            "… and {} more tools in summary.json",
            a.tool_latency.len() - shown
        ));
    }
    let axis_y = px(TOP + row_h * groups.len() as f64 + 8.0);
    Some(LatencyChart {
        frame: ChartFrame {
            id: format!("latency-{index}"),
            title: "Latency by expected tool (ms)".to_owned(),
            caption: format!(
                "nearest-rank p50 (circle), p95 (square) and p99 (triangle) of answered trials with their {} order-statistic intervals; a dashed whisker is an end too few trials can bound; {} axis",
                pct(s.confidence),
                if scale.log { "logarithmic" } else { "linear" }
            ),
            width: WIDTH + 120.0,
            height: px(axis_y + 24.0),
            ticks,
            refs: budgets
                .iter()
                .map(|g| RefLine {
                    x: scale.at(g.threshold),
                    label: format!("gate {}", g.name()),
                    class: "threshold",
                    anchor: "middle",
                })
                .collect(),
            notes,
            ..ChartFrame::at(axis_y)
        },
        rows,
    })
}

/// The latency axis over `bottom..top` ms: logarithmic when the values spread over more than
/// a decade, linear otherwise.
fn latency_axis(bottom: f64, top: f64) -> (Scale, Vec<Tick>) {
    if top / bottom > 10.0 {
        let lo = 10f64.powf(bottom.log10().floor());
        let hi = 10f64.powf(top.log10().ceil());
        let scale = Scale {
            lo,
            hi,
            x0: PLOT_X0,
            x1: PLOT_X1,
            log: true,
        };
        // 1, 2 and 5 of each decade, or only the decades when there are many.
        let steps: &[f64] = if hi / lo > 1000.0 {
            &[1.0]
        } else {
            &[1.0, 2.0, 5.0]
        };
        let mut ticks = Vec::new();
        let mut decade = lo;
        while decade <= hi * 1.0001 {
            for &k in steps {
                let v = decade * k;
                if v <= hi * 1.0001 {
                    ticks.push(Tick {
                        x: scale.at(v),
                        label: format_ms(v),
                    });
                }
            }
            decade *= 10.0;
        }
        (scale, ticks)
    } else {
        let step = nice_step(top, 5.0);
        let steps = (top / step).ceil().max(1.0);
        let max = steps * step;
        let scale = Scale::linear(0.0, max, PLOT_X0, PLOT_X1);
        // One tick per step from 0 to the top: a count, so no step size can make it endless.
        let ticks = (0..=steps as u32)
            .map(|k| f64::from(k) * step)
            .map(|v| Tick {
                x: scale.at(v),
                label: format_ms(v),
            })
            .collect();
        (scale, ticks)
    }
}

/// One group's p50, p95 and p99 marks with their intervals, drawn from `top`.
fn latency_row(name: &str, l: &LatencySummary, scale: &Scale, top: f64) -> LatencyRow {
    let mark_h = 12.0;
    let marks = [("p50", &l.p50), ("p95", &l.p95), ("p99", &l.p99)]
        .into_iter()
        .enumerate()
        .filter_map(|(k, (class, p))| {
            let p: &Percentile = p.as_ref()?;
            Some(LatencyMark {
                class,
                name: class,
                y: px(top + mark_h * (k as f64 + 0.5)),
                x: scale.at(p.value),
                lo: p.lo.map_or(PLOT_X0, |v| scale.at(v)),
                hi: p.hi.map_or(PLOT_X1, |v| scale.at(v)),
                lo_open: p.lo.is_none(),
                hi_open: p.hi.is_none(),
                text: format!("{class} {} ms", format_percentile(&Some(p.clone()))),
            })
        })
        .collect();
    LatencyRow {
        y: px(top + mark_h * 1.5),
        label: short(name),
        title: format!("{} · {} answered trials", cut(name, TEXT_CHARS), l.n),
        marks,
    }
}
