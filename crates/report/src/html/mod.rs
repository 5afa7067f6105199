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
//!   in `.html`, so every `{{ … }}` is escaped ([`escape_html`]: `<`, `>`, `&` and both quotes;
//!   not minijinja's own, which also writes `/` as `&#x2f;`, six bytes for one that means
//!   nothing in text or in a quoted attribute, on every path and fraction of a page of
//!   thousands),
//!   in text and in attributes alike; nothing is ever marked safe, no user string reaches a
//!   `style`, `href` or `src` as written, and the page carries no script. Its one link out
//!   is to the previous run's `report.html` beside this run's folder (`../RUN/report.html`,
//!   the run id percent-encoded by [`crate::history::overview::path_segment`], so it can
//!   neither leave that folder nor name a scheme), made only when the command found the file. A Content-Security-Policy that
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
use std::io::{self, Write};

use minijinja::{AutoEscape, Environment, UndefinedBehavior, value::Serde};
use serde::Serialize;

use super::history::{self, Move, Trend};
use super::wording::{case_verdict_notes, format_percentile, warning_text};
use super::{
    ArmSummary, CaseSummary, Comparison, GateLevel, GateReport, GateResult, GroupComparison,
    LatencySummary, Metric, Percentile, RateStat, Summary, Verdict,
};
use toolscore_core::ArmId;

mod charts;
mod comparison;
mod explorer;
mod history_page;
mod latency;
mod security;

pub use comparison::compared_cases;
pub(crate) use explorer::case_anchor;
pub use history_page::render_history_html;
mod trend;
mod tune;

pub use tune::render_tune_html;

use charts::{
    Bars, ChartFrame, Diamond, Forest, ForestRow, Heatmap, PLOT_X0, PLOT_X1, ROW_H, RefLine, TOP,
    Tick, WIDTH, case_forest, confusion_heatmap, diamond_points, tool_bars, worst_first,
};
use comparison::{ComparisonView, comparison_view};
use latency::{LatencyChart, latency_chart};
use trend::{TrendView, report_trend};

const TEMPLATE: &str = include_str!("../templates/report.html");

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
pub struct HtmlContext {
    /// B − A paired by case: `run --compare`'s, or the one computed for a two-arm run.
    pub comparison: Option<Comparison>,
    /// Why the arms are not compared, when a run has arms but no comparison.
    pub comparison_note: Option<String>,
    /// One trend per arm whose series OUT/history.jsonl holds.
    pub trends: Vec<Trend>,
    /// The runs of those trends whose folder, beside this run's, holds a report.html: the
    /// verdict's trend line links to the previous run's.
    pub sibling_reports: std::collections::BTreeSet<String>,
    /// What the reader should know that is not in the summary (a history file that could not
    /// be read).
    pub notes: Vec<String>,
    /// The case explorer: the behaviours and conversations of the cases
    /// [`explored_cases`] names, each catalog, and the comparison's cases diffed.
    pub explorer: toolscore_summary::behaviour::Explorer,
}

/// The cases the HTML report explores: the rows of each arm's forest plot (worst first on
/// the plot's metric, at most [`CASE_ROWS`]), which link to them, then each arm's scenarios
/// (at most [`CASE_ROWS`]), listed in the explorer's index, then the attacked units the
/// security section draws (highest attack success first, at most [`CASE_ROWS`]).
pub fn explored_cases(s: &Summary) -> Vec<toolscore_summary::behaviour::CaseKey> {
    let scenarios = s.scenarios.iter().flat_map(|a| {
        a.scenarios
            .iter()
            .take(CASE_ROWS)
            .map(|sc| toolscore_summary::behaviour::CaseKey {
                arm: a.arm.clone(),
                dataset: toolscore_core::SCENARIO_DATASET.to_owned(),
                case_id: sc.name.clone(),
            })
    });
    s.arms
        .iter()
        .flat_map(|a| {
            let metric = arm_gate(s.gate.as_ref(), &a.arm)
                .and_then(|g| g.metric.rate())
                .unwrap_or(Metric::Selection);
            worst_first(a, metric)
                .into_iter()
                .take(CASE_ROWS)
                .map(|c| toolscore_summary::behaviour::CaseKey {
                    arm: a.arm.clone(),
                    dataset: c.dataset.clone(),
                    case_id: c.case_id.clone(),
                })
                .collect::<Vec<_>>()
        })
        .chain(scenarios)
        .chain(s.security.iter().flat_map(|a| {
            security::units_shown(a)
                .into_iter()
                .map(|u| toolscore_summary::behaviour::CaseKey {
                    arm: a.arm.clone(),
                    dataset: toolscore_core::SCENARIO_DATASET.to_owned(),
                    case_id: u.case_id.clone(),
                })
        }))
        .collect()
}

/// `report.html`: one self-contained page, with what it shows beyond the summary.
pub struct Html {
    pub context: HtmlContext,
}

impl super::Render for Html {
    fn render(&self, s: &Summary, w: &mut dyn Write) -> io::Result<()> {
        let html = render_page(("report.html", TEMPLATE), &page(s, &self.context))?;
        w.write_all(html.as_bytes())
    }
}

/// The head every page includes (charset, content security policy, viewport).
const HEAD: &str = include_str!("../templates/head.html");
/// The trend chart report.html and history.html draw, and its styles.
const TREND: &str = include_str!("../templates/trend.html");

/// One page: `template` (named for auto-escaping, `.html`) rendered with `page`, beside the
/// shared head and trend chart; an undefined value is an error, never an empty string.
fn render_page((name, template): (&str, &str), page: &impl Serialize) -> io::Result<String> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_formatter(|out, state, value| match value.as_str() {
        Some(text) if *state.auto_escape() == AutoEscape::Html && !value.is_safe() => {
            out.write_str(&escape_html(text))?;
            Ok(())
        }
        _ => minijinja::escape_formatter(out, state, value),
    });
    let broken = |e: minijinja::Error| io::Error::other(format!("the HTML template: {e}"));
    env.add_template("head.html", HEAD).map_err(broken)?;
    env.add_template("trend.html", TREND).map_err(broken)?;
    env.add_template(name, template).map_err(broken)?;
    env.get_template(name)
        .and_then(|t| t.render(Serde(page)))
        .map_err(broken)
}

/// A string as HTML text or a double- or single-quoted attribute value: `&`, `<`, `>`, `"`
/// and `'` become entities, everything else is itself.
fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            c => out.push(c),
        }
    }
    out
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
    security: Vec<security::SecurityView>,
    security_comparison: Option<Table>,
    comparison: Option<ComparisonView>,
    comparison_note: Option<String>,
    trends: Vec<TrendView>,
    trend_note: Option<String>,
    /// Under the verdict: each arm's move against the run before it, the trend's question.
    trend_lines: Vec<trend::TrendLine>,
    warnings: Vec<String>,
    page_notes: Vec<String>,
    explorer: explorer::ExplorerView,
    explorer_caption: String,
}

#[derive(Serialize)]
struct VerdictView {
    /// `pass`, `fail`, `inconclusive` or `none` (a CSS class, never a user string).
    class: &'static str,
    label: String,
    subtitle: String,
    /// What made the run's verdict, one line each (`Decision::ground_lines`).
    grounds: Vec<String>,
    gates: Vec<GateRow>,
    details: Vec<Table>,
}

#[derive(Serialize)]
struct GateRow {
    class: &'static str,
    verdict: String,
    name: String,
    level: &'static str,
    arm: String,
    outcome: String,
    method: String,
}

/// A plain table: a caption, a header, rows of cells, and what was cut.
#[derive(Serialize, Default)]
struct Table {
    caption: String,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    notes: Vec<String>,
    /// Per row, the element its second cell (a gate table's case) links to: the case's
    /// explorer. Empty when no row links.
    links: Vec<Option<String>>,
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

/// A run that was not judged or was interrupted is shown as a failure: CI does not pass it.
fn run_verdict_class(v: crate::RunVerdict) -> &'static str {
    use crate::RunVerdict;
    match v {
        RunVerdict::Pass => "pass",
        RunVerdict::Inconclusive => "inconclusive",
        RunVerdict::Below | RunVerdict::Fail => "fail",
        // Nothing was decided: not the colour of a bar ruled out.
        RunVerdict::NotJudged | RunVerdict::Interrupted => "none",
    }
}

fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "pass",
        // Both exit 1: drawn as failures, worded apart.
        Verdict::Fail | Verdict::Below => "fail",
        Verdict::Inconclusive => "inconclusive",
    }
}

pub(super) fn arm_label(id: &ArmId) -> String {
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

fn page(s: &Summary, ctx: &HtmlContext) -> Page {
    let r = &s.run;
    let facts = run_facts(s);
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
    let replays = replay_lines(r);
    let anchors = explorer::anchors(&ctx.explorer);
    let arms = s
        .arms
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let mut view = arm_view(s, a, i);
            explorer::link_case_rows(&mut view.forest.rows, &a.arm, &anchors);
            view
        })
        .collect();
    let security = s
        .security
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let mut view = security::security_view(s, a, i);
            explorer::link_case_rows(&mut view.forest.rows, &a.arm, &anchors);
            view
        })
        .collect();
    let mut comparison = ctx.comparison.as_ref().map(comparison_view);
    if let Some(view) = &mut comparison {
        explorer::link_diff_rows(&mut view.forest.rows, &ctx.explorer);
    }
    let compared = ctx.comparison.as_ref().map(|c| (&c.a.arm, &c.b.arm));
    let explorer = explorer::explorer_view(s, &ctx.explorer, &anchors, compared);
    let trend_note = (ctx.trends.is_empty() && ctx.notes.is_empty()).then(|| {
        "No trend: the run folder's parent holds no history.jsonl with this run's series (every `toolscore run --out DIR` appends to DIR/history.jsonl)."
            .to_owned()
    });
    Page {
        run_id: r.run_id.clone(),
        facts,
        datasets,
        replays,
        verdict: verdict_view(s, &anchors),
        arms,
        security,
        security_comparison: s.attack_comparison.as_ref().map(security::comparison_table),
        comparison,
        comparison_note: ctx.comparison_note.clone(),
        trends: ctx
            .trends
            .iter()
            .enumerate()
            .map(|(i, t)| report_trend(t, i))
            .collect(),
        trend_lines: ctx
            .trends
            .iter()
            .enumerate()
            .filter_map(|(i, t)| trend::trend_line(t, i, &ctx.sibling_reports))
            .collect(),
        trend_note,
        warnings: s
            .warnings
            .iter()
            .take(TABLE_ROWS)
            .map(warning_text)
            .collect(),
        page_notes: ctx.notes.clone(),
        explorer,
        explorer_caption: explorer::index_caption(s),
    }
}

/// The run in a few facts: version, trials, completion, intervals, what was skipped or cut,
/// cost, and when it finished.
fn run_facts(s: &Summary) -> Vec<String> {
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
    if super::wording::shows_cost(s) {
        facts.push(format!(
            "cost {}",
            super::wording::describe_cost(&s.cost.total)
        ));
    }
    if let Some((b, headline)) = s.budget.as_ref().and_then(|b| Some((b, b.headline()?))) {
        facts.push(format!("{headline}: {}", b.stop_text()));
    }
    facts.push(format!("finished {}", r.finished_at));
    facts
}

/// One line per replayed arm: the model and recording its answers came from.
fn replay_lines(r: &super::RunInfo) -> Vec<String> {
    r
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
        .collect()
}

/// The run's decision leads: its badge is the verdict the exit code reports, with what made it
/// listed under it; the gates' table follows.
fn verdict_view(s: &Summary, anchors: &explorer::Anchors) -> VerdictView {
    let (class, label, grounds) = match &s.decision {
        Some(d) => (
            run_verdict_class(d.verdict),
            d.verdict_text(),
            d.ground_lines(),
        ),
        None => ("none", "NOT DECIDED".to_owned(), Vec::new()),
    };
    let Some(g) = &s.gate else {
        let subtitle = if s.comparison.is_some() {
            "The run's verdict rests on its comparison, below, and its infrastructure.".to_owned()
        } else {
            "This run measures and does not judge a bar: add --gate METRIC>=T (or LATENCY<=MS) to `run` or `report` to gate it.".to_owned()
        };
        return VerdictView {
            class,
            label,
            subtitle,
            grounds,
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
        class,
        label,
        subtitle: format!(
            "the run's verdict, the worst of what made it; {} gate(s), {} one-sided, {design}",
            g.gates.len(),
            pct(g.confidence)
        ),
        grounds,
        gates: g
            .gates
            .iter()
            .map(|r| GateRow {
                class: verdict_class(r.verdict),
                verdict: r.verdict_label(),
                name: r.name(),
                level: r.level_label(),
                arm: r.arm.provider.clone(),
                outcome: r.outcome(),
                method: r.method.clone(),
            })
            .collect(),
        details: g
            .gates
            .iter()
            .filter_map(|r| gate_details(r, anchors))
            .collect(),
    }
}

/// What did not pass under one gate: tools, then cases, worst first, with their bounds.
fn gate_details(r: &GateResult, anchors: &explorer::Anchors) -> Option<Table> {
    if !r.has_details() {
        return None;
    }
    let tools = r.tools_not_passed();
    let mut table = Table {
        caption: format!(
            "{} ({}, arm {})",
            r.name(),
            r.level_label(),
            cut(&r.arm.provider, TEXT_CHARS)
        ),
        ..Table::default()
    };
    if let Some(q) = &r.sequential {
        table
            .notes
            .push(format!("Sequential ({}; {}.", q.design(), q.spent()));
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
            let note = case_verdict_notes(c, r.threshold);
            table.links.push(
                anchors
                    .get(&(r.arm.clone(), c.dataset.clone(), c.case_id.clone()))
                    .cloned(),
            );
            table.rows.push(vec![
                c.label(),
                cut(&c.case_id, TEXT_CHARS),
                format!("{}/{}", c.x, c.n),
                c.bounds_text(),
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
                super::wording::format_rate(r),
                case_level,
            ]
        })
        .collect();
    let conf = pct(s.confidence);
    ArmView {
        id: format!("arm-{index}"),
        title: arm_label(&a.arm),
        facts: crate::wording::suite_sentence(a),
        suite: Table {
            caption: "Suite".to_owned(),
            header: vec![
                "metric".to_owned(),
                format!("rate [{conf} Wilson] (x/n)"),
                format!("case-level mean [{conf} t] (m cases)"),
            ],
            rows: suite_rows,
            ..Table::default()
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

#[cfg(test)]
mod tests {
    use super::charts::rate_scale;
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
        use toolscore_core::RunTotals;
        use toolscore_core::{Outcome, TrialRecord};
        use toolscore_summary::{Aggregator, RunInfo};
        let payload = "<script>document.title='x'</script>\"'/&";
        let mut agg = Aggregator::new();
        let mut record = TrialRecord::for_test(payload, Outcome::Pass, 5.0);
        record.expected = payload.to_owned();
        agg.add(&record);
        let totals = RunTotals::all_completed(1);
        let mut info = RunInfo::for_test(1);
        info.run_id = payload.to_owned();
        let s = agg.finish(info, &totals, 0.95, 0.05);
        let mut out = Vec::new();
        super::super::Render::render(
            &Html {
                context: HtmlContext::default(),
            },
            &s,
            &mut out,
        )
        .unwrap();
        let html = String::from_utf8(out).unwrap();
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("'x'"), "{html}");
        assert!(
            html.contains(
                "&lt;script&gt;document.title=&#x27;x&#x27;&lt;/script&gt;&quot;&#x27;/&amp;"
            ),
            "{html}"
        );
    }
}
