//! The HTML report (`report.html`): one self-contained, printable page with the verdict and
//! charts of a run, for a person to open from a CI artifact or a run folder.
//!
//! **Charts are hand-written SVG from a minijinja template** (`templates/report.html`), not
//! `plotters`: the page must be a single file with no network request of any kind, and the
//! template gives that with one small dependency that also escapes every value it prints.
//! plotters' SVG backend would add a slow-moving dependency for five simple chart shapes
//! (interval rows, bars, a heatmap, percentile marks, a banded line), and its text goes
//! through its own font layout instead of the page's CSS, so it would not follow the print
//! stylesheet. Here the geometry (pixel positions of numbers the [`Summary`] already holds)
//! is computed in Rust, and the template only places elements.
//!
//! Two rules shape the file:
//! - **Every string from a catalog, fixture or model is escaped.** The template's name ends
//!   in `.html`, so minijinja escapes every `{{ … }}` (`<`, `>`, `&`, both quotes and `/`),
//!   in text and in attributes alike; nothing is ever marked safe, no user string reaches a
//!   `style`, `href` or `src`, and the page carries no script. A Content-Security-Policy that
//!   forbids scripts and every fetch is a second wall, not the first (the browser test checks
//!   the page with it removed too).
//! - **No statistics here.** Every rate, interval, percentile, difference and verdict comes
//!   from the `Summary`, the `Comparison` or the history points a command hands over; this
//!   module only scales them to pixels, orders rows, shades each heatmap cell by its count's
//!   share of the row (a colour, printed beside the count) and cuts long lists with a count.
//!
//! The page is well-formed XML as well as HTML (every element closed, only XML's five
//! entities), so tests read it with an XML parser.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use minijinja::{Environment, UndefinedBehavior, value::Serde};
use serde::Serialize;

use super::history::{self, Move, Trend};
use super::terminal::{format_percentile, warning_text};
use super::{
    ArmSummary, CaseSummary, Comparison, GateLevel, GateReport, GateResult, GroupComparison,
    LatencySummary, Metric, Percentile, RateStat, Summary, Verdict,
};
use crate::error::Error;
use crate::record::ArmId;

const TEMPLATE: &str = include_str!("templates/report.html");

/// Rows of a per-case chart (forest plot, paired differences) before it is cut.
const CASE_ROWS: usize = 200;
/// Rows (expected tools) and columns (chosen tools) of the confusion heatmap.
const HEATMAP_ROWS: usize = 40;
const HEATMAP_COLS: usize = 30;
/// Tools in the per-tool and latency charts.
const TOOL_ROWS: usize = 60;
/// Rows of a table of gate details, substitutions or warnings.
const TABLE_ROWS: usize = 12;
/// Runs drawn in a trend (the newest).
const TREND_RUNS: usize = 30;
/// Characters of a label drawn in a chart; the whole string is in its tooltip.
const LABEL_CHARS: usize = 40;
/// Characters of any tooltip or table cell from a fixture or model.
const TEXT_CHARS: usize = 300;

/// What a command adds to the summary for the HTML report: the comparison of a two-arm run
/// and the history of the run's series, read by the command (the report module neither
/// compares nor reads files).
#[derive(Debug, Default)]
pub struct HtmlContext<'a> {
    /// B − A paired by case: `run --compare`'s, or the one computed for a two-arm run.
    pub comparison: Option<&'a Comparison>,
    /// Why the arms are not compared, when a run has arms but no comparison.
    pub comparison_note: Option<String>,
    /// One trend per arm whose series OUT/history.jsonl holds.
    pub trends: Vec<Trend>,
    /// What the reader should know that is not in the summary (a history file that could not
    /// be read).
    pub notes: Vec<String>,
}

/// Renders the report as one HTML page.
pub fn render_html(s: &Summary, ctx: &HtmlContext<'_>, w: &mut dyn Write) -> Result<(), Error> {
    let page = page(s, ctx);
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.add_template("report.html", TEMPLATE)
        .map_err(|e| Error::Fatal(format!("the HTML report template is broken: {e}")))?;
    let html = env
        .get_template("report.html")
        .and_then(|t| t.render(Serde(&page)))
        .map_err(|e| Error::Fatal(format!("cannot render report.html: {e}")))?;
    w.write_all(html.as_bytes())
        .map_err(|e| Error::io("cannot write report.html", e))
}

// ---------------------------------------------------------------------------------------
// The page as the template reads it: strings already worded, positions already in pixels.

#[derive(Serialize)]
struct Page {
    run_id: String,
    facts: Vec<String>,
    datasets: Vec<String>,
    replays: Vec<String>,
    verdict: VerdictView,
    arms: Vec<ArmView>,
    comparison: Option<ComparisonView>,
    comparison_note: Option<String>,
    trends: Vec<TrendView>,
    trend_note: Option<String>,
    warnings: Vec<String>,
    page_notes: Vec<String>,
}

#[derive(Serialize)]
struct VerdictView {
    /// `pass`, `fail`, `inconclusive` or `none` (a CSS class, never a user string).
    class: &'static str,
    label: String,
    subtitle: String,
    gates: Vec<GateRow>,
    details: Vec<Table>,
}

#[derive(Serialize)]
struct GateRow {
    class: &'static str,
    verdict: &'static str,
    name: String,
    level: &'static str,
    arm: String,
    outcome: String,
    method: String,
}

/// A plain table: a caption, a header, rows of cells, and what was cut.
#[derive(Serialize)]
struct Table {
    caption: String,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    notes: Vec<String>,
}

#[derive(Serialize)]
struct ArmView {
    id: String,
    title: String,
    facts: String,
    suite: Table,
    forest: Forest,
    tools: Option<Bars>,
    confusion: Option<Heatmap>,
    latency: Option<LatencyChart>,
    warnings: Vec<String>,
}

#[derive(Serialize)]
struct Tick {
    x: f64,
    label: String,
}

/// A vertical reference line across a chart (a gate threshold, zero, ±min-effect).
#[derive(Serialize)]
struct RefLine {
    x: f64,
    label: String,
    class: &'static str,
    /// Where the label sits: `middle` above the line, or `end`/`start` beside it one line
    /// lower (so the labels of close lines do not overlap).
    anchor: &'static str,
}

/// Rows of intervals on a horizontal axis, with summary diamonds under them.
#[derive(Serialize)]
struct Forest {
    id: String,
    title: String,
    caption: String,
    width: f64,
    height: f64,
    plot_x0: f64,
    plot_x1: f64,
    axis_y: f64,
    bottom_y: f64,
    text_x: f64,
    label_x: f64,
    ticks: Vec<Tick>,
    refs: Vec<RefLine>,
    rows: Vec<ForestRow>,
    diamonds: Vec<Diamond>,
    notes: Vec<String>,
}

#[derive(Serialize)]
struct ForestRow {
    y: f64,
    label: String,
    title: String,
    /// Absent when the case has no data for the metric.
    x: Option<f64>,
    lo: Option<f64>,
    hi: Option<f64>,
    text: String,
    class: &'static str,
}

#[derive(Serialize)]
struct Diamond {
    y: f64,
    points: String,
    label: String,
    text: String,
}

#[derive(Serialize)]
struct Bars {
    id: String,
    title: String,
    caption: String,
    width: f64,
    height: f64,
    plot_x0: f64,
    plot_x1: f64,
    axis_y: f64,
    bottom_y: f64,
    text_x: f64,
    label_x: f64,
    ticks: Vec<Tick>,
    refs: Vec<RefLine>,
    legend: Vec<LegendItem>,
    rows: Vec<BarRow>,
    notes: Vec<String>,
}

#[derive(Serialize)]
struct LegendItem {
    x: f64,
    class: &'static str,
    label: &'static str,
}

#[derive(Serialize)]
struct BarRow {
    y: f64,
    label: String,
    title: String,
    bars: Vec<Bar>,
}

#[derive(Serialize)]
struct Bar {
    class: &'static str,
    y: f64,
    height: f64,
    /// Bar end; absent (no bar) when the tool has no data for the metric.
    x: Option<f64>,
    lo: Option<f64>,
    hi: Option<f64>,
    text: String,
}

#[derive(Serialize)]
struct Heatmap {
    id: String,
    title: String,
    caption: String,
    width: f64,
    height: f64,
    cell_w: f64,
    cell_h: f64,
    grid_x: f64,
    grid_y: f64,
    total_x: f64,
    columns: Vec<HeatColumn>,
    rows: Vec<HeatRow>,
    notes: Vec<String>,
}

#[derive(Serialize)]
struct HeatColumn {
    x: f64,
    label: String,
    title: String,
}

#[derive(Serialize)]
struct HeatRow {
    y: f64,
    label: String,
    title: String,
    total: u64,
    cells: Vec<HeatCell>,
}

#[derive(Serialize)]
struct HeatCell {
    x: f64,
    count: u64,
    /// Share of the row's trials, as the cell's opacity.
    opacity: f64,
    /// `diag` (the right tool) or `off`; `dark` text on a pale cell.
    class: &'static str,
    text_class: &'static str,
    title: String,
}

#[derive(Serialize)]
struct LatencyChart {
    id: String,
    title: String,
    caption: String,
    width: f64,
    height: f64,
    plot_x0: f64,
    plot_x1: f64,
    axis_y: f64,
    bottom_y: f64,
    text_x: f64,
    label_x: f64,
    ticks: Vec<Tick>,
    refs: Vec<RefLine>,
    rows: Vec<LatencyRow>,
    notes: Vec<String>,
}

#[derive(Serialize)]
struct LatencyRow {
    y: f64,
    label: String,
    title: String,
    marks: Vec<LatencyMark>,
}

#[derive(Serialize)]
struct LatencyMark {
    /// `p50`, `p95` or `p99`: the marker's shape and colour.
    class: &'static str,
    name: &'static str,
    y: f64,
    x: f64,
    lo: f64,
    hi: f64,
    /// An end the data cannot bound: the whisker runs to the axis's end, dashed.
    lo_open: bool,
    hi_open: bool,
    text: String,
}

#[derive(Serialize)]
struct ComparisonView {
    title: String,
    lines: Vec<String>,
    verdict_class: &'static str,
    verdict_label: &'static str,
    /// What the badge rests on, or why it is inconclusive (`Comparison::overall`).
    verdict_reason: String,
    forest: Forest,
    substitutions: Option<Table>,
}

#[derive(Serialize)]
struct TrendView {
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
struct YTick {
    y: f64,
    label: String,
}

#[derive(Serialize)]
struct TrendMark {
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

// ---------------------------------------------------------------------------------------
// Small helpers.

/// One decimal: positions in pixels need no more, and the file stays small.
fn px(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// A label cut to [`LABEL_CHARS`] for a chart, with `…`.
fn short(text: &str) -> String {
    cut(text, LABEL_CHARS)
}

/// A string from a fixture or model cut to `max` characters, line breaks as spaces.
fn cut(text: &str, max: usize) -> String {
    let mut out: String = text
        .chars()
        .take(max)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().count() > max {
        out.pop();
        out.push('…');
    }
    out
}

/// A tick label in ms: `0.5`, `500`, `2k`, `100k`.
fn format_ms(v: f64) -> String {
    if v >= 1000.0 {
        format!("{}k", v / 1000.0)
    } else if v >= 1.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

fn pct(c: f64) -> String {
    format!("{:.0}%", c * 100.0)
}

/// An axis from `lo..hi` (data) onto `x0..x1` (pixels), linear or logarithmic, clamped to
/// the axis.
#[derive(Clone, Copy)]
struct Scale {
    lo: f64,
    hi: f64,
    x0: f64,
    x1: f64,
    log: bool,
}

impl Scale {
    fn linear(lo: f64, hi: f64, x0: f64, x1: f64) -> Self {
        Scale {
            lo,
            hi,
            x0,
            x1,
            log: false,
        }
    }

    fn at(&self, v: f64) -> f64 {
        let t = if self.log {
            (v.max(self.lo).ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        px(self.x0 + t.clamp(0.0, 1.0) * (self.x1 - self.x0))
    }
}

/// A tick step of 1, 2 or 5 × 10^k giving about `count` ticks up to `max`.
fn nice_step(max: f64, count: f64) -> f64 {
    let raw = (max / count).max(f64::MIN_POSITIVE);
    let magnitude = 10f64.powf(raw.log10().floor());
    let fraction = raw / magnitude;
    let nice = if fraction <= 1.0 {
        1.0
    } else if fraction <= 2.0 {
        2.0
    } else if fraction <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "pass",
        Verdict::Fail => "fail",
        Verdict::Inconclusive => "inconclusive",
    }
}

fn arm_label(id: &ArmId) -> String {
    format!(
        "provider {} · model {} · variant {}",
        id.provider, id.model, id.variant
    )
}

/// `0.361 [0.258, 0.469]` and its count, or `n/a`.
fn interval_text(value: f64, lo: f64, hi: f64) -> String {
    format!("{value:.3} [{lo:.3}, {hi:.3}]")
}

/// The interval to draw for a group's rate: the case-level mean with its t interval when
/// the summary has one (cases are the independent units), else the pooled Wilson interval;
/// with the words saying which.
fn group_interval(r: &RateStat) -> Option<(f64, f64, f64, String)> {
    if let Some(c) = &r.case_level {
        return Some((
            c.mean,
            c.interval.lo,
            c.interval.hi,
            format!(
                "{} ({} cases)",
                interval_text(c.mean, c.interval.lo, c.interval.hi),
                c.cases
            ),
        ));
    }
    match (r.rate, r.interval) {
        (Some(p), Some(iv)) => Some((
            p,
            iv.lo,
            iv.hi,
            format!("{} ({}/{})", interval_text(p, iv.lo, iv.hi), r.x, r.n),
        )),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------
// Building the page.

fn page(s: &Summary, ctx: &HtmlContext<'_>) -> Page {
    let r = &s.run;
    let mut facts = vec![
        format!("toolscore {}", r.toolscore_version),
        format!("{} trials per case", r.trials_per_case),
        format!(
            "{} of {} trials completed{}",
            s.completed_trials,
            s.planned_trials,
            if s.interrupted { " (interrupted)" } else { "" }
        ),
        format!("{} intervals", pct(s.confidence)),
    ];
    let not_run_by_budget = s.budget.as_ref().map_or(0, |b| b.not_run);
    if s.skipped_trials > not_run_by_budget {
        facts.push(format!(
            "{} trials skipped by a sequential gate",
            s.skipped_trials - not_run_by_budget
        ));
    }
    if super::terminal::shows_cost(s) {
        facts.push(format!(
            "cost {}",
            super::terminal::describe_cost(&s.cost.total)
        ));
    }
    if let Some(b) = s.budget.as_ref().filter(|b| b.cut_short) {
        facts.push(format!(
            "CUT SHORT BY BUDGET: --max-cost {} reached, {} planned trials not run (not failures)",
            super::format_usd(b.max_usd.unwrap_or_default()),
            b.not_run
        ));
    }
    facts.push(format!("finished {}", r.finished_at));
    let datasets = r
        .datasets
        .iter()
        .map(|d| {
            format!(
                "dataset {} · {} cases · catalog {} ({})",
                d.name,
                d.cases,
                d.catalog_source,
                d.catalog_fingerprint
                    .get(..19)
                    .unwrap_or(&d.catalog_fingerprint)
            )
        })
        .collect();
    let replays = r
        .arms
        .iter()
        .filter_map(|a| {
            a.replay.as_ref().map(|rp| {
                let legacy = if rp.legacy_requests {
                    format!(" ({})", super::LEGACY_REQUESTS)
                } else {
                    String::new()
                };
                format!(
                    "Replay: no model was called; responses of model {} recorded {} replayed from {}{legacy}",
                    a.identity.model, rp.recorded_at, rp.cassette
                )
            })
        })
        .collect();
    let arms = s
        .arms
        .iter()
        .enumerate()
        .map(|(i, a)| arm_view(s, a, i))
        .collect();
    let trend_note = (ctx.trends.is_empty() && ctx.notes.is_empty()).then(|| {
        "No trend: the run folder's parent holds no history.jsonl with this run's series (every `toolscore run --out DIR` appends to DIR/history.jsonl)."
            .to_owned()
    });
    Page {
        run_id: r.run_id.clone(),
        facts,
        datasets,
        replays,
        verdict: verdict_view(s),
        arms,
        comparison: ctx.comparison.map(comparison_view),
        comparison_note: ctx.comparison_note.clone(),
        trends: ctx
            .trends
            .iter()
            .enumerate()
            .map(|(i, t)| trend_view(t, i))
            .collect(),
        trend_note,
        warnings: s
            .warnings
            .iter()
            .take(TABLE_ROWS)
            .map(warning_text)
            .collect(),
        page_notes: ctx.notes.clone(),
    }
}

fn verdict_view(s: &Summary) -> VerdictView {
    let Some(g) = &s.gate else {
        return VerdictView {
            class: "none",
            label: "NO GATE".to_owned(),
            subtitle: "This run measures and does not decide: add --gate METRIC>=T (or LATENCY<=MS) to `run` or `report` for a verdict.".to_owned(),
            gates: Vec::new(),
            details: Vec::new(),
        };
    };
    let design = if g.gates.iter().any(|r| r.sequential.is_some()) {
        "sequential"
    } else {
        "fixed n"
    };
    VerdictView {
        class: verdict_class(g.verdict),
        label: g.verdict.label().to_owned(),
        subtitle: format!(
            "{} gate(s), {} one-sided, {design}; the run's verdict is the worst of them",
            g.gates.len(),
            pct(g.confidence)
        ),
        gates: g
            .gates
            .iter()
            .map(|r| GateRow {
                class: verdict_class(r.verdict),
                verdict: r.verdict.label(),
                name: r.name(),
                level: r.level_label(),
                arm: r.arm.provider.clone(),
                outcome: r.outcome(),
                method: r.method.clone(),
            })
            .collect(),
        details: g.gates.iter().filter_map(gate_details).collect(),
    }
}

/// What did not pass under one gate: tools, then cases, worst first, with their bounds.
fn gate_details(r: &GateResult) -> Option<Table> {
    let tools: Vec<_> = r
        .tools
        .iter()
        .filter(|t| t.verdict != Verdict::Pass)
        .collect();
    if tools.is_empty() && r.not_passed.is_empty() && r.hint.is_none() && r.sequential.is_none() {
        return None;
    }
    let mut table = Table {
        caption: format!(
            "{} ({}, arm {})",
            r.name(),
            r.level_label(),
            cut(&r.arm.provider, TEXT_CHARS)
        ),
        header: Vec::new(),
        rows: Vec::new(),
        notes: Vec::new(),
    };
    if let Some(q) = &r.sequential {
        table.notes.push(format!(
            "Sequential (SPRT, anytime-valid): p1 {}, alpha {:.3}, beta {:.4} per case; {} trials used, the fixed-n gate with the same guarantees needs {}.",
            q.p1, q.alpha, q.beta_per_case, q.trials_used, q.fixed_design_trials
        ));
    }
    if !tools.is_empty() {
        table.header = ["verdict", "tool", "estimate", "bounds", "cases", "trials"]
            .map(str::to_owned)
            .to_vec();
        for t in tools.iter().take(TABLE_ROWS) {
            table.rows.push(vec![
                t.verdict.label().to_owned(),
                cut(&t.tool, TEXT_CHARS),
                r.format_bound(t.estimate),
                format!("[{}, {}]", r.format_bound(t.lower), r.format_bound(t.upper)),
                t.cases.to_string(),
                t.n.to_string(),
            ]);
        }
        if tools.len() > TABLE_ROWS {
            table.notes.push(format!(
                "… and {} more tools that did not pass in summary.json",
                tools.len() - TABLE_ROWS
            ));
        }
    } else if !r.not_passed.is_empty() {
        table.header = ["verdict", "case", "x/n", "bounds", "note"]
            .map(str::to_owned)
            .to_vec();
        for c in r.not_passed.iter().take(TABLE_ROWS) {
            let mut note = Vec::new();
            if c.threshold > 0.0 && c.threshold != r.threshold {
                note.push(format!("its own bar {}", c.threshold));
            }
            if let Some(m) = c.more_trials {
                note.push(format!("~{m} more trials"));
            }
            table.rows.push(vec![
                c.verdict.label().to_owned(),
                cut(&c.case_id, TEXT_CHARS),
                format!("{}/{}", c.x, c.n),
                format!("[{:.3}, {:.3}]", c.lower, c.upper),
                note.join(" · "),
            ]);
        }
        if r.not_passed.len() > TABLE_ROWS {
            table.notes.push(format!(
                "… and {} more cases that did not pass in summary.json",
                r.not_passed.len() - TABLE_ROWS
            ));
        }
    }
    if let Some(hint) = &r.hint {
        table.notes.push(hint.clone());
    }
    Some(table)
}

/// The rate gate an arm's forest plot is drawn against: a case-level gate first (its
/// per-case verdicts colour the rows), else the first suite or tool gate on a rate.
fn arm_gate<'a>(gate: Option<&'a GateReport>, arm: &ArmId) -> Option<&'a GateResult> {
    let gates: Vec<&GateResult> = gate
        .map(|g| {
            g.gates
                .iter()
                .filter(|r| &r.arm == arm && r.metric.rate().is_some())
                .filter(|r| r.level != GateLevel::Baseline)
                .collect()
        })
        .unwrap_or_default();
    gates
        .iter()
        .find(|r| r.level == GateLevel::Case)
        .or_else(|| gates.first())
        .copied()
}

fn arm_view(s: &Summary, a: &ArmSummary, index: usize) -> ArmView {
    let gate = arm_gate(s.gate.as_ref(), &a.arm);
    let metric = gate
        .and_then(|g| g.metric.rate())
        .unwrap_or(Metric::Selection);
    let suite_rows = Metric::ALL
        .iter()
        .map(|&m| {
            let r = a.suite.metrics.get(m);
            let case_level = match &r.case_level {
                Some(c) => format!(
                    "{} ({} cases)",
                    interval_text(c.mean, c.interval.lo, c.interval.hi),
                    c.cases
                ),
                None if r.n == 0 => "n/a (no scored trials)".to_owned(),
                None => "n/a (fewer than 2 cases with data)".to_owned(),
            };
            vec![
                m.label().to_owned(),
                super::terminal::format_rate(r),
                case_level,
            ]
        })
        .collect();
    let conf = pct(s.confidence);
    ArmView {
        id: format!("arm-{index}"),
        title: arm_label(&a.arm),
        facts: format!(
            "{} cases, {} trials scored, {} infrastructure errors (not scored)",
            a.suite.cases, a.suite.scored_trials, a.infra.errors
        ),
        suite: Table {
            caption: "Suite".to_owned(),
            header: vec![
                "metric".to_owned(),
                format!("rate [{conf} Wilson] (x/n)"),
                format!("case-level mean [{conf} t] (m cases)"),
            ],
            rows: suite_rows,
            notes: Vec::new(),
        },
        forest: case_forest(s, a, index, metric, gate),
        tools: tool_bars(s, a, index, gate),
        confusion: confusion_heatmap(a, index),
        latency: latency_chart(s, a, index),
        warnings: a
            .warnings
            .iter()
            .take(TABLE_ROWS)
            .map(warning_text)
            .collect(),
    }
}

/// Layout shared by the horizontal charts: labels on the left, the plot, numbers on the
/// right.
const WIDTH: f64 = 940.0;
const LABEL_X: f64 = 292.0;
const PLOT_X0: f64 = 300.0;
const PLOT_X1: f64 = 640.0;
const TEXT_X: f64 = 652.0;
const TOP: f64 = 34.0;
const ROW_H: f64 = 16.0;

fn rate_scale() -> Scale {
    Scale::linear(0.0, 1.0, PLOT_X0, PLOT_X1)
}

fn rate_ticks(scale: Scale) -> Vec<Tick> {
    [0.0, 0.25, 0.5, 0.75, 1.0]
        .iter()
        .map(|&v| Tick {
            x: scale.at(v),
            label: format!("{v}"),
        })
        .collect()
}

fn threshold_line(scale: Scale, gate: Option<&GateResult>, metric: Metric) -> Vec<RefLine> {
    gate.filter(|g| g.metric.rate() == Some(metric))
        .map(|g| RefLine {
            x: scale.at(g.threshold),
            label: format!("gate {}", g.name()),
            class: "threshold",
            anchor: "middle",
        })
        .into_iter()
        .collect()
}

/// The forest plot: each case's rate with its Wilson interval, worst first, against the
/// gate's threshold, and the suite's case-level mean as a diamond.
fn case_forest(
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
    let mut cases: Vec<&CaseSummary> = a.cases.iter().collect();
    cases.sort_by(|x, y| {
        let (rx, ry) = (x.metrics.get(metric).rate, y.metrics.get(metric).rate);
        // Cases with data first, lowest rate first; then by name.
        ry.is_none()
            .cmp(&rx.is_none())
            .reverse()
            .then(rx.partial_cmp(&ry).unwrap_or(std::cmp::Ordering::Equal))
            .then_with(|| (&x.dataset, &x.case_id).cmp(&(&y.dataset, &y.case_id)))
    });
    let shown = cases.len().min(CASE_ROWS);
    let rows: Vec<ForestRow> = cases
        .iter()
        .take(shown)
        .enumerate()
        .map(|(i, c)| {
            let r = c.metrics.get(metric);
            let y = px(TOP + ROW_H * (i as f64 + 0.5));
            let class = match &verdicts {
                Some(v) => verdict_class(
                    v.get(&(c.dataset.as_str(), c.case_id.as_str()))
                        .copied()
                        .unwrap_or(Verdict::Pass),
                ),
                None => "neutral",
            };
            let full = name(c);
            match (r.rate, r.interval) {
                (Some(p), Some(iv)) => ForestRow {
                    y,
                    label: short(&full),
                    title: format!(
                        "{} · expected {} · {}",
                        cut(&full, TEXT_CHARS),
                        cut(&c.expected, TEXT_CHARS),
                        super::terminal::format_rate(r)
                    ),
                    x: Some(scale.at(p)),
                    lo: Some(scale.at(iv.lo)),
                    hi: Some(scale.at(iv.hi)),
                    text: super::terminal::format_rate(r),
                    class,
                },
                _ => ForestRow {
                    y,
                    label: short(&full),
                    title: format!(
                        "{} · no scored trial for this metric",
                        cut(&full, TEXT_CHARS)
                    ),
                    x: None,
                    lo: None,
                    hi: None,
                    text: format!("n/a ({}/{})", r.x, r.n),
                    class: "neutral",
                },
            }
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
    let suite = a.suite.metrics.get(metric);
    let diamonds: Vec<Diamond> = group_interval(suite)
        .map(|(m, lo, hi, text)| {
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
        .into_iter()
        .collect();
    let axis_y = px(rows_end + 18.0 * diamonds.len() as f64 + 12.0);
    let caption = format!(
        "{} rate of each case with its {} Wilson interval (trials of one case), lowest first; {}{}",
        metric.label(),
        pct(s.confidence),
        match gate {
            Some(g) if g.metric.rate() == Some(metric) => {
                format!("the line is gate {}", g.name())
            }
            _ => "no rate gate was given, so no threshold is drawn".to_owned(),
        },
        if verdicts.is_some() {
            "; colours are the case-level gate's verdicts"
        } else {
            ""
        }
    );
    Forest {
        id: format!("forest-{index}"),
        title: format!("Cases: {} rate", metric.label()),
        caption,
        width: WIDTH,
        height: px(axis_y + 24.0),
        plot_x0: PLOT_X0,
        plot_x1: PLOT_X1,
        axis_y,
        bottom_y: axis_y,
        text_x: TEXT_X,
        label_x: LABEL_X,
        ticks: rate_ticks(scale),
        refs: threshold_line(scale, gate, metric),
        rows,
        diamonds,
        notes,
    }
}

fn diamond_points(lo: f64, mid: f64, hi: f64, y: f64) -> String {
    format!(
        "{lo},{y} {mid},{} {hi},{y} {mid},{}",
        px(y - 6.0),
        px(y + 6.0)
    )
}

/// Per expected tool: selection and pass, each a bar to its rate with the interval.
fn tool_bars(s: &Summary, a: &ArmSummary, index: usize, gate: Option<&GateResult>) -> Option<Bars> {
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
                    let r = t.metrics.get(m);
                    let y = px(top + bar_h * k as f64);
                    match group_interval(r) {
                        Some((v, lo, hi, text)) => Bar {
                            class,
                            y,
                            height: bar_h - 3.0,
                            x: Some(scale.at(v)),
                            lo: Some(scale.at(lo)),
                            hi: Some(scale.at(hi)),
                            text: format!("{}: {text}", m.label()),
                        },
                        None => Bar {
                            class,
                            y,
                            height: bar_h - 3.0,
                            x: None,
                            lo: None,
                            hi: None,
                            text: format!("{}: n/a ({}/{})", m.label(), r.x, r.n),
                        },
                    }
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
        id: format!("tools-{index}"),
        title: "Expected tools: selection and pass".to_owned(),
        caption: format!(
            "each bar is the tool's mean of case rates with its {} t interval (cases are the independent units), or its pooled rate with the Wilson interval when it has one case",
            pct(s.confidence)
        ),
        width: WIDTH + 120.0,
        height: px(axis_y + 36.0),
        plot_x0: PLOT_X0,
        plot_x1: PLOT_X1,
        axis_y,
        bottom_y: axis_y,
        text_x: TEXT_X,
        label_x: LABEL_X,
        ticks: rate_ticks(scale),
        refs,
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
        notes,
    })
}

/// Expected × chosen: each row's trials across the tools the model chose.
fn confusion_heatmap(a: &ArmSummary, index: usize) -> Option<Heatmap> {
    if a.confusion.is_empty() {
        return None;
    }
    let expected: BTreeSet<&str> = a.confusion.iter().map(|c| c.expected.as_str()).collect();
    let mut chosen_totals: BTreeMap<&str, u64> = BTreeMap::new();
    for c in &a.confusion {
        *chosen_totals.entry(c.chosen.as_str()).or_default() += c.count;
    }
    // Columns: the expected labels in row order (so the right answers run down the
    // diagonal), then what else was chosen, most often first.
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
            let mut counts: Vec<u64> = vec![0; n_cols];
            for c in a.confusion.iter().filter(|c| c.expected == *e) {
                let k = columns
                    .iter()
                    .position(|col| *col == c.chosen)
                    .unwrap_or(columns.len());
                counts[k.min(n_cols - 1)] += c.count;
            }
            let total: u64 = counts.iter().sum();
            let y = px(grid_y + cell_h * i as f64);
            let cells = counts
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(k, &n)| {
                    let share = n as f64 / total.max(1) as f64;
                    let chosen = columns.get(k).copied();
                    HeatCell {
                        x: px(grid_x + cell_w * k as f64),
                        count: n,
                        opacity: (0.12 + 0.88 * share).min(1.0),
                        class: if chosen == Some(*e) { "diag" } else { "off" },
                        text_class: if share > 0.5 { "light" } else { "dark" },
                        title: format!(
                            "expected {} → chosen {}: {n} of {total} scored trials",
                            cut(e, TEXT_CHARS),
                            chosen.map_or_else(
                                || format!("one of {} other tools", folded.len()),
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
        width: px((total_x + 70.0).max(420.0)),
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

/// p50, p95 and p99 of each expected tool's answered trials (and of the arm's), each with
/// its order-statistic interval, against any latency gate's budget.
fn latency_chart(s: &Summary, a: &ArmSummary, index: usize) -> Option<LatencyChart> {
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
    let (scale, ticks) = if top / bottom > 10.0 {
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
        let max = (top / step).ceil().max(1.0) * step;
        let scale = Scale::linear(0.0, max, PLOT_X0, PLOT_X1);
        let ticks = (0..)
            .map(|k| k as f64 * step)
            .take_while(|v| *v <= max + step / 2.0)
            .map(|v| Tick {
                x: scale.at(v),
                label: format_ms(v),
            })
            .collect();
        (scale, ticks)
    };
    let mark_h = 12.0;
    let row_h = mark_h * 3.0 + 8.0;
    let rows = groups
        .iter()
        .enumerate()
        .map(|(i, (name, l))| {
            let top = TOP + row_h * i as f64 + 4.0;
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
        })
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
        id: format!("latency-{index}"),
        title: "Latency by expected tool (ms)".to_owned(),
        caption: format!(
            "nearest-rank p50 (circle), p95 (square) and p99 (triangle) of answered trials with their {} order-statistic intervals; a dashed whisker is an end too few trials can bound; {} axis",
            pct(s.confidence),
            if scale.log { "logarithmic" } else { "linear" }
        ),
        width: WIDTH + 120.0,
        height: px(axis_y + 24.0),
        plot_x0: PLOT_X0,
        plot_x1: PLOT_X1,
        axis_y,
        bottom_y: axis_y,
        text_x: TEXT_X,
        label_x: LABEL_X,
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
        rows,
        notes,
    })
}

fn comparison_view(c: &Comparison) -> ComparisonView {
    let a = c.a.label(&c.axis);
    let b = c.b.label(&c.axis);
    let group_line = |title: &str, g: &GroupComparison| {
        let difference = match &g.difference {
            Some(d) => format!(
                "B − A = {:+.3} [{:+.3}, {:+.3}] (paired t, {} df, p = {:.4})",
                d.mean, d.lo, d.hi, d.df, d.p_value
            ),
            None => "B − A: n/a (fewer than 2 cases with data in both arms)".to_owned(),
        };
        let needed = g.cases_needed.map_or(String::new(), |n| {
            format!(
                "; about {n} cases with this spread would detect {} with {} power",
                c.min_effect,
                pct(c.power)
            )
        });
        format!(
            "{title}: {} cases · {difference} · {}{needed}",
            g.cases,
            g.verdict.describe(&b, c.min_effect)
        )
    };
    let mut lines = vec![group_line("visible cases", &c.visible)];
    if let Some(h) = &c.holdout {
        lines.push(group_line("holdout cases (aggregate only)", h));
    }
    let scale = Scale::linear(-1.0, 1.0, PLOT_X0, PLOT_X1);
    let mut cases: Vec<_> = c.case_differences.iter().collect();
    cases.sort_by(|x, y| {
        x.difference
            .partial_cmp(&y.difference)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| (&x.dataset, &x.case_id).cmp(&(&y.dataset, &y.case_id)))
    });
    let shown = cases.len().min(CASE_ROWS);
    let rows: Vec<ForestRow> = cases
        .iter()
        .take(shown)
        .enumerate()
        .map(|(i, d)| {
            let class = if d.lo > 0.0 {
                "better"
            } else if d.hi < 0.0 {
                "worse"
            } else {
                "neutral"
            };
            ForestRow {
                y: px(TOP + ROW_H * (i as f64 + 0.5)),
                label: short(&d.case_id),
                title: format!(
                    "{} · A {}/{} · B {}/{}",
                    cut(&d.case_id, TEXT_CHARS),
                    d.a_x,
                    d.a_n,
                    d.b_x,
                    d.b_n
                ),
                x: Some(scale.at(d.difference)),
                lo: Some(scale.at(d.lo)),
                hi: Some(scale.at(d.hi)),
                text: format!(
                    "{:+.3} [{:+.3}, {:+.3}] ({}/{} → {}/{})",
                    d.difference, d.lo, d.hi, d.a_x, d.a_n, d.b_x, d.b_n
                ),
                class,
            }
        })
        .collect();
    let rows_end = TOP + ROW_H * shown as f64;
    let mut diamonds = Vec::new();
    for (label, g) in [
        ("visible cases: mean B − A", Some(&c.visible)),
        ("holdout cases: mean B − A", c.holdout.as_ref()),
    ] {
        if let Some(d) = g.and_then(|g| g.difference.as_ref()) {
            let y = px(rows_end + 18.0 * (diamonds.len() as f64 + 1.0));
            diamonds.push(Diamond {
                y,
                points: diamond_points(scale.at(d.lo), scale.at(d.mean), scale.at(d.hi), y),
                label: label.to_owned(),
                text: format!("{:+.3} [{:+.3}, {:+.3}]", d.mean, d.lo, d.hi),
            });
        }
    }
    let mut notes = Vec::new();
    if c.case_differences.is_empty() {
        notes.push("This comparison was written without its per-case differences (an older summary.json); `toolscore report` recomputes them.".to_owned());
    }
    if cases.len() > shown {
        notes.push(format!(
            "… and {} more cases (the largest gains) in the comparison's JSON",
            cases.len() - shown
        ));
    }
    let axis_y = px(rows_end + 18.0 * diamonds.len() as f64 + 12.0);
    let ticks = [-1.0, -0.5, 0.0, 0.5, 1.0]
        .iter()
        .map(|&v: &f64| Tick {
            x: scale.at(v),
            label: format!("{v:+}"),
        })
        .collect();
    let forest = Forest {
        id: "differences".to_owned(),
        title: format!("Paired differences by case: {} B − A", c.metric.label()),
        caption: format!(
            "each visible case's B − A with Newcombe's {} interval (per case, not adjusted for {} cases), lowest first; diamonds: the mean of the per-case differences with its t interval; dashed lines at ±{} (--min-effect); holdout cases appear only in aggregate",
            pct(c.confidence),
            c.visible.cases,
            c.min_effect
        ),
        width: WIDTH + 60.0,
        height: px(axis_y + 24.0),
        plot_x0: PLOT_X0,
        plot_x1: PLOT_X1,
        axis_y,
        bottom_y: axis_y,
        text_x: TEXT_X,
        label_x: LABEL_X,
        ticks,
        refs: vec![
            RefLine {
                x: scale.at(0.0),
                label: "no difference".to_owned(),
                class: "zero",
                anchor: "middle",
            },
            RefLine {
                x: scale.at(-c.min_effect),
                label: format!("−{} ", c.min_effect),
                class: "effect",
                anchor: "end",
            },
            RefLine {
                x: scale.at(c.min_effect),
                label: format!(" +{}", c.min_effect),
                class: "effect",
                anchor: "start",
            },
        ],
        rows,
        diamonds,
        notes,
    };
    let substitutions = (!c.substitutions.is_empty()).then(|| Table {
        caption: "Substitutions: expected → chosen instead (scored trials), largest change first"
            .to_owned(),
        header: vec![
            "expected → chosen".to_owned(),
            "A".to_owned(),
            "B".to_owned(),
        ],
        rows: c
            .substitutions
            .iter()
            .take(TABLE_ROWS)
            .map(|s| {
                vec![
                    format!(
                        "{} → {}",
                        cut(&s.expected, TEXT_CHARS),
                        cut(&s.chosen, TEXT_CHARS)
                    ),
                    s.a.to_string(),
                    s.b.to_string(),
                ]
            })
            .collect(),
        notes: if c.substitutions.len() > TABLE_ROWS {
            vec![format!(
                "… and {} more in the comparison's JSON",
                c.substitutions.len() - TABLE_ROWS
            )]
        } else {
            Vec::new()
        },
    });
    let overall = c.overall();
    let verdict_class = match overall.verdict {
        super::ComparisonVerdict::Better => "pass",
        super::ComparisonVerdict::Worse => "fail",
        super::ComparisonVerdict::Equivalent => "none",
        super::ComparisonVerdict::Inconclusive => "inconclusive",
    };
    let verdict_label = overall.label();
    let verdict_reason = overall
        .reason
        .unwrap_or_else(|| "visible cases, B − A paired by case".to_owned());
    ComparisonView {
        title: format!(
            "Comparison: {} · A = {} · B = {}",
            c.metric.label(),
            cut(&a, TEXT_CHARS),
            cut(&b, TEXT_CHARS)
        ),
        lines,
        verdict_class,
        verdict_label,
        verdict_reason,
        forest,
        substitutions,
    }
}

/// A series' case-level means with their interval band, newest runs last.
fn trend_view(t: &Trend, index: usize) -> TrendView {
    let metric_of = |p: &history::Point| p.line.metric(t.metric).clone();
    let skip = t.points.len().saturating_sub(TREND_RUNS);
    let points = &t.points[skip..];
    let (x0, x1, y0, y1) = (70.0, 860.0, 24.0, 224.0);
    let y_of = |v: f64| px(y1 - (y1 - y0) * v.clamp(0.0, 1.0));
    let step = if points.len() > 1 {
        (x1 - x0) / (points.len() - 1) as f64
    } else {
        0.0
    };
    let x_of = |i: usize| {
        if points.len() > 1 {
            px(x0 + step * i as f64)
        } else {
            px((x0 + x1) / 2.0)
        }
    };
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
        let moved = point.change.as_ref().map_or(Move::None, |c| c.moved);
        if point.change.as_ref().is_some_and(|c| c.catalog_changed) {
            catalog_marks.push(Tick {
                x,
                label: "catalog changed".to_owned(),
            });
        }
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
        marks.push(TrendMark {
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
            date: point
                .line
                .finished_at
                .get(..16)
                .unwrap_or(&point.line.finished_at)
                .replace('T', " "),
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
        });
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
        height: 290.0,
        plot_x0: x0,
        plot_x1: x1,
        plot_y0: y0,
        plot_y1: y1,
        y_ticks: [0.0, 0.25, 0.5, 0.75, 1.0]
            .iter()
            .map(|&v| YTick {
                y: y_of(v),
                label: format!("{v}"),
            })
            .collect(),
        bands,
        line: line.join(" "),
        points: marks,
        catalog_marks,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(nice_step(1000.0, 5.0), 200.0);
        assert_eq!(nice_step(13_000.0, 5.0), 5000.0);
        assert_eq!(nice_step(7.0, 5.0), 2.0);
        assert_eq!(nice_step(0.9, 5.0), 0.2);
    }

    #[test]
    fn a_scale_clamps_to_its_axis() {
        let s = rate_scale();
        assert_eq!(s.at(0.0), PLOT_X0);
        assert_eq!(s.at(1.0), PLOT_X1);
        assert_eq!(s.at(2.0), PLOT_X1);
        assert_eq!(s.at(-1.0), PLOT_X0);
        assert_eq!(s.at(0.5), px((PLOT_X0 + PLOT_X1) / 2.0));
    }

    #[test]
    fn labels_are_cut_with_an_ellipsis_and_lose_control_characters() {
        assert_eq!(cut("abc", 5), "abc");
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("a\nb", 5), "a b");
    }

    #[test]
    fn every_string_is_escaped_in_text_and_attributes() {
        use crate::event::RunTotals;
        use crate::record::{Outcome, TrialRecord};
        use crate::report::{Aggregator, RunInfo};
        let payload = "<script>document.title='x'</script>\"'/&";
        let mut agg = Aggregator::new();
        let mut record = TrialRecord::for_test(payload, Outcome::Pass, 5.0);
        record.expected = payload.to_owned();
        agg.add(&record);
        let totals = RunTotals {
            planned_trials: 1,
            completed_trials: 1,
            skipped_trials: 0,
            budget_not_run: 0,
            interrupted: false,
            failures: Vec::new(),
        };
        let mut info = RunInfo::for_test(1);
        info.run_id = payload.to_owned();
        let s = agg.finish(info, &totals, 0.95, 0.05);
        let mut out = Vec::new();
        render_html(&s, &HtmlContext::default(), &mut out).unwrap();
        let html = String::from_utf8(out).unwrap();
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("'x'"), "{html}");
        assert!(
            html.contains("&lt;script&gt;document.title=&#x27;x&#x27;&lt;&#x2f;script&gt;&quot;&#x27;&#x2f;&amp;"),
            "{html}"
        );
    }
}
