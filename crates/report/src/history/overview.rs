//! The weekly overview: every series of the history with its runs, their moves, each tool's
//! rate across the runs and the cases that changed most — what `toolscore history --format
//! json` writes and what the Markdown and HTML pages draw. Every figure is computed here (or
//! earlier, in [`super::series`]); the renderers only format it.
//!
//! Links are relative to the folder that holds `history.jsonl` (`run_id/report.html`), so the
//! folder can be published as it is. A link is made only to a file the command found there,
//! and a case's link only to an element id its run's `report.html` holds, so every link of a
//! page resolves in the folder it was made from.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;

use super::{Followed, LatencyGrowth, MetricPoint, Move, Point, Sampling, Series};
use crate::{ArmId, RunVerdict};
use toolscore_stats as stats;

/// The version of the JSON `history --format json` writes; a consumer checks it. 2: the
/// regression count is `worsened` (it was `dropped`), since on attack success the regression
/// is a rise; series of attacked scenarios name them in `scenarios`.
pub const OVERVIEW_VERSION: u32 = 2;

/// Cases listed as the ones that changed most between a series' last two runs.
pub const MOST_CHANGED_CASES: usize = 5;

/// Runs each tool's small multiple draws (the newest): two months of weekly runs, enough to
/// see which tool moved, and few enough that a year of 100 series stays a page under 2 MB.
pub const TOOL_RUNS: usize = 8;

/// What the command found beside `history.jsonl`, for links: the runs whose folder holds a
/// `report.html`, and the element ids of the pages it read (the newest run of each series,
/// whose changed cases link into its case explorer).
#[derive(Debug, Default, Clone)]
pub struct RunFolders {
    pub reports: BTreeSet<String>,
    pub ids: BTreeMap<String, BTreeSet<String>>,
}

/// What the overview is made from, beside the series.
pub struct Sources<'a> {
    /// The folder of the runs as the user named it (`--dir`).
    pub dir: &'a str,
    /// `history.jsonl` as the user named it.
    pub file: &'a str,
    /// Its lines (runs × arms).
    pub lines: usize,
    /// When the page was made (RFC 3339, UTC).
    pub generated_at: String,
    pub followed: Followed,
    /// `--last N`: the newest N runs of each series (each still compared with the one before).
    pub last: Option<usize>,
    pub folders: &'a RunFolders,
}

/// The whole history, as every format of `toolscore history` tells it.
#[derive(Debug, Clone, Serialize)]
pub struct Overview {
    pub version: u32,
    pub generated_at: String,
    /// The file the overview was read from, and its lines.
    pub source: String,
    pub lines: usize,
    /// The rate followed: `selection`, `pass` or `attack_success`.
    #[serde(rename = "metric")]
    pub followed: Followed,
    /// Series whose newest trustworthy run moved significantly the worse way against the one
    /// before it (dropped; for attack success, rose): what `--fail-on-drop` exits 1 on.
    pub worsened: usize,
    pub series: Vec<SeriesView>,
}

impl Overview {
    /// True when `history --fail-on-drop` fails: some series' newest run moved the worse way.
    pub fn any_worsened(&self) -> bool {
        self.worsened > 0
    }
}

/// One series: the same datasets (or attacked scenarios), provider, model and variant, oldest
/// run first.
#[derive(Debug, Clone, Serialize)]
pub struct SeriesView {
    /// The fixture datasets; empty for a series of attacked scenarios.
    pub datasets: Vec<String>,
    /// The attacked scenarios of an attack-success series; absent otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scenarios: Vec<String>,
    pub provider: String,
    pub model: String,
    pub variant: String,
    /// Runs left out by `--last`.
    pub older_runs_not_shown: usize,
    /// The trend: runs whose scores can be trusted, oldest first.
    pub runs: Vec<RunPoint>,
    /// Runs kept out of the trend (they exited 4), with why.
    pub not_in_trend: Vec<ApartRun>,
    /// Its newest trustworthy run moved significantly the worse way against the one before it.
    pub newest_worsened: bool,
    /// Each expected tool's rate over the newest [`TOOL_RUNS`] runs of the trend (none for
    /// attack success, which is measured per unit, not per tool).
    pub tools: Vec<ToolTrend>,
    /// The cases (or attacked units) whose rate changed most between the last two runs of the
    /// trend.
    pub most_changed: Option<CaseChanges>,
}

impl SeriesView {
    /// `billing · provider demo · model smollm2 · variant base`.
    pub fn label(&self) -> String {
        let measured = if self.scenarios.is_empty() {
            &self.datasets
        } else {
            &self.scenarios
        };
        format!(
            "{} · provider {} · model {} · variant {}",
            measured.join(", "),
            self.provider,
            self.model,
            self.variant
        )
    }

    /// The newest run of the trend.
    pub fn newest(&self) -> Option<&RunPoint> {
        self.runs.last()
    }
}

/// One run of the trend.
#[derive(Debug, Clone, Serialize)]
pub struct RunPoint {
    pub run_id: String,
    pub finished_at: String,
    /// The run's verdict, the one its exit code reported (absent for lines written before
    /// runs recorded one).
    pub verdict: Option<RunVerdict>,
    /// The case-level mean on the metric with its interval, and the pooled count.
    pub score: MetricPoint,
    pub trials_per_case: u32,
    pub sampling: Sampling,
    /// `fixed, 40 per case`, and how the trials were gathered when not in one sitting.
    pub sampled: String,
    /// Against the previous run of the trend (none for the first).
    pub change: Option<ChangeView>,
    /// Tools whose p95 latency grew against the runs of the week before.
    pub latency_growth: Vec<LatencyGrowthView>,
    /// `run_id/report.html`, when the run's folder holds one.
    pub report: Option<String>,
}

/// A run against the previous one of its series, paired by case.
#[derive(Debug, Clone, Serialize)]
pub struct ChangeView {
    pub previous_run: String,
    /// Mean of the per-case rate differences (this − previous) with its t interval; absent
    /// when fewer than two cases are shared.
    pub difference: Option<stats::PairedDifference>,
    /// Shared cases with trials in both runs.
    pub cases: usize,
    /// `drop`, `rise` or `none`: whether the interval lies wholly below or above 0.
    pub moved: Move,
    /// The move is the worse way for the rate (a drop; a rise of attack success).
    pub worsened: bool,
    pub catalog_changed: bool,
    pub sampling_changed: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct LatencyGrowthView {
    pub tool: String,
    pub p95_ms: f64,
    pub lo_ms: f64,
    pub baseline_hi_ms: f64,
    pub baseline_runs: usize,
}

/// A run kept out of the trend.
#[derive(Debug, Clone, Serialize)]
pub struct ApartRun {
    pub run_id: String,
    pub finished_at: String,
    pub verdict: Option<RunVerdict>,
    pub reason: String,
    pub report: Option<String>,
}

/// One expected tool's rate across the newest runs of a series.
#[derive(Debug, Clone, Serialize)]
pub struct ToolTrend {
    pub tool: String,
    /// Oldest first; a run whose line kept no tool rates (written before they were kept) or
    /// whose cases did not include the tool is absent.
    pub points: Vec<ToolPoint>,
    /// The newest run against the run it was compared with, paired over this tool's cases by
    /// the run's own rule; absent when either line did not keep its cases' tools.
    pub change: Option<ChangeView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolPoint {
    pub run_id: String,
    pub rate: MetricPoint,
}

/// The cases that changed most between two runs.
#[derive(Debug, Clone, Serialize)]
pub struct CaseChanges {
    pub previous_run: String,
    pub run: String,
    /// Largest absolute change first (case key order among equals); at most
    /// [`MOST_CHANGED_CASES`], cases with trials in both runs whose rate moved only.
    pub cases: Vec<CaseChange>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CaseChange {
    pub dataset: String,
    pub case_id: String,
    /// `[x, n]` of the metric in the previous run and in this one.
    pub previous: [u64; 2],
    pub current: [u64; 2],
    /// This run's rate minus the previous run's.
    pub difference: f64,
    /// The command that shows what the model did in the case in this run.
    pub explain: String,
    /// The case's section of the case explorer in this run's `report.html`, when it has one.
    pub link: Option<String>,
}

/// The overview of `series` (from [`super::series`]) with what `sources` says.
pub fn overview(series: &[Series], sources: &Sources) -> Overview {
    let views: Vec<SeriesView> = series
        .iter()
        .filter(|s| !s.points.is_empty())
        .map(|s| series_view(s, sources))
        .collect();
    Overview {
        version: OVERVIEW_VERSION,
        generated_at: sources.generated_at.clone(),
        source: sources.file.to_owned(),
        lines: sources.lines,
        followed: sources.followed,
        worsened: views.iter().filter(|s| s.newest_worsened).count(),
        series: views,
    }
}

fn series_view(s: &Series, sources: &Sources) -> SeriesView {
    let followed = s.followed;
    let first = &s.points[0].line;
    let skip = sources.last.map_or(0, |n| s.points.len().saturating_sub(n));
    let shown = &s.points[skip..];
    let report = |run_id: &str| {
        sources
            .folders
            .reports
            .contains(run_id)
            .then(|| format!("{}/report.html", path_segment(run_id)))
    };
    let (trusted, apart): (Vec<&Point>, Vec<&Point>) =
        shown.iter().partition(|p| p.line.trusted(followed));
    let runs: Vec<RunPoint> = trusted
        .iter()
        .filter_map(|p| run_point(p, followed, report(&p.line.run_id)))
        .collect();
    let not_in_trend = apart
        .iter()
        .map(|p| ApartRun {
            run_id: p.line.run_id.clone(),
            finished_at: p.line.finished_at.clone(),
            verdict: p.line.verdict,
            reason: p.line.untrusted_reason(followed).unwrap_or_default(),
            report: report(&p.line.run_id),
        })
        .collect();
    let arm = ArmId {
        variant: first.variant.clone(),
        provider: first.provider.clone(),
        model: first.model.clone(),
    };
    let attacked = followed == Followed::AttackSuccess;
    SeriesView {
        datasets: if attacked {
            Vec::new()
        } else {
            first.datasets.clone()
        },
        scenarios: if attacked {
            first.series_key(followed).0
        } else {
            Vec::new()
        },
        provider: first.provider.clone(),
        model: first.model.clone(),
        variant: first.variant.clone(),
        older_runs_not_shown: skip,
        tools: tool_trends(s, &trusted),
        most_changed: most_changed(s, &arm, sources),
        newest_worsened: s.newest_worsened(),
        runs,
        not_in_trend,
    }
}

/// A run of the trend on the followed rate; none for a line that has no figure on it.
pub(crate) fn run_point(p: &Point, followed: Followed, report: Option<String>) -> Option<RunPoint> {
    let line = &p.line;
    Some(RunPoint {
        run_id: line.run_id.clone(),
        finished_at: line.finished_at.clone(),
        verdict: line.verdict,
        score: line.metric(followed)?.clone(),
        trials_per_case: line.trials_per_case,
        sampling: line.sampling.clone(),
        sampled: line.sampling.describe(line.trials_per_case, followed),
        change: p.change.as_ref().map(change_view),
        latency_growth: p.latency_growth.iter().map(growth_view).collect(),
        report,
    })
}

fn change_view(c: &super::Change) -> ChangeView {
    ChangeView {
        previous_run: c.previous_run.clone(),
        difference: c.difference,
        cases: c.cases,
        moved: c.moved,
        worsened: c.worsened,
        catalog_changed: c.catalog_changed,
        sampling_changed: c.sampling_changed,
    }
}

fn growth_view(g: &LatencyGrowth) -> LatencyGrowthView {
    LatencyGrowthView {
        tool: g.tool.clone(),
        p95_ms: g.p95,
        lo_ms: g.lo,
        baseline_hi_ms: g.baseline_hi,
        baseline_runs: g.baseline_runs,
    }
}

/// Each tool of the newest [`TOOL_RUNS`] trustworthy runs with its rate in every one of them
/// that kept it and its newest change, sorted by that change, the largest move the worse way
/// first, tools with no change last, by name among equals: the grid leads with what to look at.
fn tool_trends(s: &Series, trusted: &[&Point]) -> Vec<ToolTrend> {
    let followed = s.followed;
    if followed == Followed::AttackSuccess {
        return Vec::new();
    }
    let recent = &trusted[trusted.len().saturating_sub(TOOL_RUNS)..];
    let newest = trusted.last().map(|p| &p.line);
    let previous = trusted
        .last()
        .and_then(|p| p.change.as_ref())
        .and_then(|c| trusted.iter().find(|p| p.line.run_id == c.previous_run))
        .map(|p| &p.line);
    let tools: BTreeSet<&String> = recent.iter().flat_map(|p| p.line.tools.keys()).collect();
    let mut trends: Vec<ToolTrend> = tools
        .into_iter()
        .map(|tool| ToolTrend {
            tool: tool.clone(),
            points: recent
                .iter()
                .filter_map(|p| {
                    let rate = p.line.tools.get(tool)?.get(followed)?;
                    (rate.n > 0).then(|| ToolPoint {
                        run_id: p.line.run_id.clone(),
                        rate: rate.clone(),
                    })
                })
                .collect(),
            change: newest.zip(previous).and_then(|(now, before)| {
                // Both lines must say which cases expect the tool, or nothing is paired.
                if now.case_tools.is_empty() || before.case_tools.is_empty() {
                    return None;
                }
                let mine = |case: &str| now.case_tools.get(case) == Some(tool);
                Some(change_view(&super::change_over(
                    before, now, followed, mine,
                )))
            }),
        })
        .collect();
    // The move of the tool's rate from the previous run to the newest, in the worse
    // direction (larger is worse): every tool has one, even one whose single case cannot give
    // a paired interval.
    let rate_in = |t: &ToolTrend, line: Option<&super::HistoryLine>| {
        let run = &line?.run_id;
        t.points.iter().find(|p| &p.run_id == run)?.rate.mean
    };
    let worsening =
        |t: &ToolTrend| Some(followed.worsening(rate_in(t, newest)? - rate_in(t, previous)?));
    trends.sort_by(|a, b| {
        let order = match (worsening(a), worsening(b)) {
            (Some(x), Some(y)) => y.total_cmp(&x),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        };
        order.then_with(|| a.tool.cmp(&b.tool))
    });
    trends
}

/// The cases (or attacked units) whose rate changed most between the newest trustworthy run
/// and the one it was compared with.
fn most_changed(s: &Series, arm: &ArmId, sources: &Sources) -> Option<CaseChanges> {
    let followed = s.followed;
    let newest = s.points.iter().rev().find(|p| p.line.trusted(followed))?;
    let previous_run = &newest.change.as_ref()?.previous_run;
    let previous = s
        .points
        .iter()
        .map(|p| &p.line)
        .find(|l| &l.run_id == previous_run)?;
    let before: BTreeMap<&String, (u64, u64)> = previous
        .case_counts(followed)
        .map(|(k, x, n)| (k, (x, n)))
        .collect();
    let mut changes: Vec<(&String, [u64; 2], [u64; 2], f64)> = newest
        .line
        .case_counts(followed)
        .filter_map(|(k, x, n)| {
            let &(px, pn) = before.get(k)?;
            let difference = x as f64 / n as f64 - px as f64 / pn as f64;
            // A case whose rate did not move is not a change to list.
            (n > 0 && pn > 0 && difference != 0.0).then_some((k, [px, pn], [x, n], difference))
        })
        .collect();
    changes.sort_by(|a, b| b.3.abs().total_cmp(&a.3.abs()).then_with(|| a.0.cmp(b.0)));
    let run_id = &newest.line.run_id;
    let ids = sources.folders.ids.get(run_id);
    let cases = changes
        .into_iter()
        .take(MOST_CHANGED_CASES)
        .map(|(key, previous, current, difference)| {
            // A unit's key is its case id in the scenarios' records; a case's, `dataset/case`.
            let (dataset, case_id) = match followed {
                Followed::AttackSuccess => (toolscore_core::SCENARIO_DATASET, key.as_str()),
                Followed::Selection | Followed::Pass => {
                    key.split_once('/').unwrap_or(("", key.as_str()))
                }
            };
            let anchor = crate::html::case_anchor(arm, dataset, case_id);
            CaseChange {
                dataset: dataset.to_owned(),
                case_id: case_id.to_owned(),
                previous,
                current,
                difference,
                explain: toolscore_core::command([
                    "toolscore",
                    "explain",
                    &Path::new(sources.dir).join(run_id).display().to_string(),
                    case_id,
                ]),
                link: ids
                    .filter(|ids| ids.contains(&anchor))
                    .map(|_| format!("{}/report.html#{anchor}", path_segment(run_id))),
            }
        })
        .collect();
    Some(CaseChanges {
        previous_run: previous_run.clone(),
        run: run_id.clone(),
        cases,
    })
}

/// A run id as one segment of a relative URL: every byte but ASCII letters, digits, `-` and
/// `_` percent-encoded, so no run id can make a link leave the folder (`.` is encoded) or
/// name a scheme (`:` is encoded).
pub fn path_segment(run_id: &str) -> String {
    let mut out = String::with_capacity(run_id.len());
    for b in run_id.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The element ids of a page toolscore wrote (`id="…"` attributes), to link only to sections
/// a run's `report.html` holds. toolscore's pages quote every attribute with `"` and escape
/// `"` inside values, so a scan for ` id="` finds exactly the ids.
pub fn element_ids(html: &str) -> BTreeSet<String> {
    html.split(" id=\"")
        .skip(1)
        .filter_map(|rest| rest.split_once('"').map(|(id, _)| id.to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::series;
    use crate::history::tests::{exact, line, true_rates};

    fn sources<'a>(folders: &'a RunFolders) -> Sources<'a> {
        Sources {
            dir: "reports",
            file: "reports/history.jsonl",
            lines: 3,
            generated_at: "2026-12-06T12:00:00Z".to_owned(),
            followed: Followed::Selection,
            last: None,
            folders,
        }
    }

    /// Two tools over the 20 cases, `aardvark` on the even ones and `zebra` on the odd ones;
    /// in the second week every even case falls by 0.3 and the odd ones stay.
    #[test]
    fn the_tool_that_dropped_leads_the_grid_marked_and_a_steady_tool_follows() {
        let counts = exact(&true_rates());
        let fallen: Vec<u64> = counts
            .iter()
            .enumerate()
            .map(|(k, &x)| if k % 2 == 0 { x - 15 } else { x })
            .collect();
        let with_tools = |mut l: crate::history::HistoryLine| {
            l.case_tools = l
                .cases
                .keys()
                .enumerate()
                .map(|(k, case)| {
                    (
                        case.clone(),
                        if k % 2 == 0 { "aardvark" } else { "zebra" }.to_owned(),
                    )
                })
                .collect();
            for tool in ["aardvark", "zebra"] {
                let (x, n) = l
                    .cases
                    .iter()
                    .filter(|(case, _)| l.case_tools[*case] == tool)
                    .fold((0, 0), |(x, n), (_, c)| (x + c[0], n + c[1]));
                let point = MetricPoint {
                    x,
                    n,
                    mean: Some(x as f64 / n as f64),
                    lo: None,
                    hi: None,
                    cases: 10,
                };
                l.tools.insert(
                    tool.to_owned(),
                    crate::history::HistoryMetrics {
                        selection: point.clone(),
                        pass: point,
                    },
                );
            }
            l
        };
        let s = series(
            vec![
                with_tools(line("w1", 1, &counts, "fp")),
                with_tools(line("w2", 8, &fallen, "fp")),
            ],
            Followed::Selection,
        );
        let folders = RunFolders::default();
        let o = overview(&s, &sources(&folders));
        let tools = &o.series[0].tools;
        let names: Vec<&str> = tools.iter().map(|t| t.tool.as_str()).collect();
        assert_eq!(names, ["aardvark", "zebra"]);
        let dropped = tools[0].change.as_ref().expect("paired over its cases");
        assert_eq!(
            (dropped.moved, dropped.worsened, dropped.cases),
            (Move::Drop, true, 10)
        );
        assert!((dropped.difference.expect("10 cases").mean + 0.3).abs() < 1e-9);
        let steady = tools[1].change.as_ref().expect("paired over its cases");
        assert_eq!((steady.moved, steady.worsened), (Move::None, false));
        // Reversed, the tool that rose is good news and sorts after the steady one.
        let s = series(
            vec![
                with_tools(line("w1", 1, &fallen, "fp")),
                with_tools(line("w2", 8, &counts, "fp")),
            ],
            Followed::Selection,
        );
        let o = overview(&s, &sources(&folders));
        let names: Vec<&str> = o.series[0].tools.iter().map(|t| t.tool.as_str()).collect();
        assert_eq!(names, ["zebra", "aardvark"]);
    }

    /// Three weeks; in the third, case 0 falls from 50/50 to 0/50 and case 1 from 45/50 to
    /// 40/50, every other case unchanged.
    fn weeks() -> Vec<Series> {
        let counts = exact(&true_rates());
        let mut third = counts.clone();
        third[0] = 0;
        third[1] = counts[1] - 5;
        series(
            vec![
                line("w1", 1, &counts, "fp"),
                line("w2", 8, &counts, "fp"),
                line("w3", 15, &third, "fp"),
            ],
            Followed::Selection,
        )
    }

    #[test]
    fn the_cases_that_moved_most_come_first_and_unmoved_cases_are_not_listed() {
        let folders = RunFolders::default();
        let o = overview(&weeks(), &sources(&folders));
        let m = o.series[0].most_changed.as_ref().expect("changes");
        assert_eq!((m.previous_run.as_str(), m.run.as_str()), ("w2", "w3"));
        let listed: Vec<&str> = m.cases.iter().map(|c| c.case_id.as_str()).collect();
        assert_eq!(listed, vec!["c00", "c01"]);
        let counts = exact(&true_rates());
        assert!((m.cases[0].difference + counts[0] as f64 / 50.0).abs() < 1e-12);
        assert!((m.cases[1].difference + 0.1).abs() < 1e-12);
        assert_eq!(m.cases[1].previous, [counts[1], 50]);
        assert_eq!(m.cases[1].current, [counts[1] - 5, 50]);
        assert_eq!(m.cases[0].explain, "toolscore explain reports/w3 c00");
        // No report.html was found: nothing links.
        assert!(m.cases.iter().all(|c| c.link.is_none()));
        assert!(o.series[0].runs.iter().all(|r| r.report.is_none()));
    }

    #[test]
    fn links_go_only_to_pages_and_sections_the_folder_holds() {
        let arm = ArmId {
            variant: "base".into(),
            provider: "p".into(),
            model: "m".into(),
        };
        let held = crate::html::case_anchor(&arm, "d", "c00");
        let folders = RunFolders {
            reports: BTreeSet::from(["w1".to_owned(), "w3".to_owned()]),
            ids: BTreeMap::from([("w3".to_owned(), BTreeSet::from([held.clone()]))]),
        };
        let o = overview(&weeks(), &sources(&folders));
        let links: Vec<Option<&str>> = o.series[0]
            .runs
            .iter()
            .map(|r| r.report.as_deref())
            .collect();
        assert_eq!(
            links,
            vec![Some("w1/report.html"), None, Some("w3/report.html")]
        );
        let m = o.series[0].most_changed.as_ref().expect("changes");
        assert_eq!(
            m.cases[0].link.as_deref(),
            Some(format!("w3/report.html#{held}").as_str())
        );
        assert_eq!(m.cases[1].link, None, "c01 has no section in w3's page");
    }

    #[test]
    fn the_overview_counts_the_series_whose_newest_run_dropped() {
        let folders = RunFolders::default();
        let o = overview(&weeks(), &sources(&folders));
        // A drop of case 0 alone is within the noise of 20 cases: nothing is flagged.
        assert_eq!(o.worsened, 0);
        let counts = exact(&true_rates());
        let lower = exact(&true_rates().iter().map(|r| r - 0.3).collect::<Vec<_>>());
        let dropped = series(
            vec![line("w1", 1, &counts, "fp"), line("w2", 8, &lower, "fp")],
            Followed::Selection,
        );
        let o = overview(&dropped, &sources(&folders));
        assert_eq!(o.worsened, 1);
        assert!(o.any_worsened() && o.series[0].newest_worsened);
        let change = o.series[0].runs[1].change.as_ref().expect("change");
        assert_eq!(change.moved, Move::Drop);
        let json = serde_json::to_value(&o).expect("json");
        assert_eq!(json["series"][0]["runs"][1]["change"]["moved"], "drop");
        assert_eq!(json["version"], OVERVIEW_VERSION);
    }

    #[test]
    fn last_keeps_the_newest_runs_and_says_how_many_were_left_out() {
        let folders = RunFolders::default();
        let mut s = sources(&folders);
        s.last = Some(1);
        let o = overview(&weeks(), &s);
        assert_eq!(o.series[0].older_runs_not_shown, 2);
        let runs: Vec<&str> = o.series[0].runs.iter().map(|r| r.run_id.as_str()).collect();
        assert_eq!(runs, vec!["w3"]);
        // Still compared with the run before it.
        assert_eq!(
            o.series[0].runs[0]
                .change
                .as_ref()
                .map(|c| c.previous_run.as_str()),
            Some("w2")
        );
    }

    #[test]
    fn a_run_id_becomes_one_harmless_path_segment() {
        assert_eq!(path_segment("week-49_b"), "week-49_b");
        assert_eq!(path_segment(".."), "%2E%2E");
        assert_eq!(
            path_segment("javascript:alert(1)"),
            "javascript%3Aalert%281%29"
        );
        assert_eq!(path_segment("a/b c\"<"), "a%2Fb%20c%22%3C");
        assert_eq!(path_segment("é"), "%C3%A9");
    }

    #[test]
    fn element_ids_are_read_from_a_page() {
        let ids = element_ids(r#"<section id="case-1"><p class="x" id="b">"id=" <a id="c"></a>"#);
        assert_eq!(
            ids,
            BTreeSet::from(["case-1".to_owned(), "b".to_owned(), "c".to_owned()])
        );
    }
}
