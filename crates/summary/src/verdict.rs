//! Gate verdicts as data: what `decide::gate` decided, for summary.json and every renderer.

use serde::{Deserialize, Serialize};

use super::Metric;
use toolscore_core::ArmId;
use toolscore_core::metric::AttackMetric;

/// The outcome of a gate, or of the whole run's gates. Ordered from best to worst, as
/// [`RunVerdict`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Inconclusive,
    /// A sequential case gate under `--fail-below P1` called the case (for the gate: each of
    /// its failed cases) below P1: an indifference-zone test the user asked for by name, which
    /// does not rule out the bar. Exit 1 as a failure, but never said FAIL, in any format.
    Below,
    /// The bar is ruled out.
    Fail,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Inconclusive => "INCONCLUSIVE",
            Verdict::Below => "BELOW",
            Verdict::Fail => "FAIL",
        }
    }

    /// A failure of the gate, whatever its test: FAIL, or BELOW under `--fail-below`. Both
    /// exit 1.
    pub fn failed(self) -> bool {
        matches!(self, Verdict::Below | Verdict::Fail)
    }
}

/// Where a gate looks: the suite's case-level rate, each case's rate, or each expected tool's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum GateLevel {
    /// The mean of case rates, with the suite interval (cases are the independent units).
    Suite,
    /// Every case on its own: the gate passes when every case passes.
    Case,
    /// Every expected tool on its own (its cases' rates, or its trials' latency): the gate
    /// passes when every tool passes.
    Tool,
    /// Against an earlier run (`--baseline`): non-inferiority of the paired difference.
    #[value(skip)]
    Baseline,
}

/// What a gate judges: a rate (`>=` a threshold) or a latency percentile in milliseconds
/// (`<=` a budget). Serialized as the metric's key (`args_exact`) or the percentile's name
/// (`p95_ms`), as summaries always spelled them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum GateMetric {
    Rate(Metric),
    Latency(LatencyQuantile),
    /// A rate of an attacked run, over its (scenario × attack) units.
    Attack(AttackMetric),
}

/// A latency percentile a gate can hold to a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LatencyQuantile {
    P50Ms,
    P95Ms,
    P99Ms,
}

impl LatencyQuantile {
    pub const ALL: [LatencyQuantile; 3] = [
        LatencyQuantile::P50Ms,
        LatencyQuantile::P95Ms,
        LatencyQuantile::P99Ms,
    ];

    /// As written on the command line and in summaries: `p95_ms`.
    pub fn name(self) -> &'static str {
        match self {
            LatencyQuantile::P50Ms => "p50_ms",
            LatencyQuantile::P95Ms => "p95_ms",
            LatencyQuantile::P99Ms => "p99_ms",
        }
    }

    pub fn quantile(self) -> f64 {
        match self {
            LatencyQuantile::P50Ms => 0.5,
            LatencyQuantile::P95Ms => 0.95,
            LatencyQuantile::P99Ms => 0.99,
        }
    }
}

impl From<Metric> for GateMetric {
    fn from(m: Metric) -> Self {
        GateMetric::Rate(m)
    }
}

impl GateMetric {
    /// The gate a user named: a metric's name or key, or a latency percentile's name.
    pub fn parse(name: &str) -> Option<GateMetric> {
        Metric::parse(name)
            .map(GateMetric::Rate)
            .or_else(|| {
                LatencyQuantile::ALL
                    .into_iter()
                    .find(|q| q.name() == name)
                    .map(GateMetric::Latency)
            })
            .or_else(|| AttackMetric::parse(name).map(GateMetric::Attack))
    }

    /// The fixture rate this gate judges, if it is one.
    pub fn rate(self) -> Option<Metric> {
        match self {
            GateMetric::Rate(m) => Some(m),
            GateMetric::Latency(_) | GateMetric::Attack(_) => None,
        }
    }

    /// The attacked run's rate this gate judges, if it is one.
    pub fn attack(self) -> Option<AttackMetric> {
        match self {
            GateMetric::Attack(m) => Some(m),
            GateMetric::Rate(_) | GateMetric::Latency(_) => None,
        }
    }

    /// The latency quantile this gate judges, if it is a latency gate.
    pub fn quantile(self) -> Option<f64> {
        match self {
            GateMetric::Rate(_) | GateMetric::Attack(_) => None,
            GateMetric::Latency(q) => Some(q.quantile()),
        }
    }

    /// As summaries spell it: `pass`, `args_exact`, `p95_ms`, `attack_success`.
    pub fn label(self) -> &'static str {
        match self {
            GateMetric::Rate(m) => m.key(),
            GateMetric::Latency(q) => q.name(),
            GateMetric::Attack(m) => m.name(),
        }
    }

    /// Whether the gate is a ceiling (lower is better: a latency, attack success): PASS when
    /// the upper bound is within it, FAIL when the lower bound is above it. Else a floor.
    pub fn ceiling(self) -> bool {
        match self {
            GateMetric::Rate(_) => false,
            GateMetric::Latency(_) => true,
            GateMetric::Attack(m) => m.lower_is_better(),
        }
    }

    /// `>=` for a floor, `<=` for a ceiling.
    pub fn op(self) -> &'static str {
        if self.ceiling() { "<=" } else { ">=" }
    }
}

/// Every gate of a run and their combined verdict (the worst).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateReport {
    pub verdict: Verdict,
    /// One-sided confidence level of every bound.
    pub confidence: f64,
    pub gates: Vec<GateResult>,
}

impl GateReport {
    /// The rate of `--fail-below` when the gates' verdict is BELOW (every gate that failed
    /// called its cases below that rate, not below the bar), for saying `BELOW P1`.
    pub fn below(&self) -> Option<f64> {
        if self.verdict != Verdict::Below {
            return None;
        }
        let rates: Vec<Option<f64>> = self
            .gates
            .iter()
            .filter(|g| g.verdict == Verdict::Below)
            .map(|g| g.sequential.as_ref().and_then(|q| q.fail_below))
            .collect();
        match rates.as_slice() {
            [first, rest @ ..] if rest.iter().all(|r| r == first) => *first,
            _ => None,
        }
    }

    /// The gates' word: `PASS`, `FAIL`, `INCONCLUSIVE`, or `BELOW 0.9` (see [`Self::below`]).
    pub fn label(&self) -> String {
        match self.below() {
            Some(rate) => format!("BELOW {rate}"),
            None => self.verdict.label().to_owned(),
        }
    }
}

/// One gate (`metric >= threshold`, or `p95_ms <= budget`) on one arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateResult {
    pub metric: GateMetric,
    /// The rate threshold, or the latency budget in milliseconds.
    pub threshold: f64,
    pub level: GateLevel,
    pub arm: ArmId,
    pub verdict: Verdict,
    /// How the bounds were computed.
    pub method: String,
    /// Suite level: the estimate (mean of case rates, or the latency percentile in ms) and its
    /// one-sided bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lower: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper: Option<f64>,
    /// Cases with data for this metric.
    pub cases: usize,
    /// Latency gates per arm: the answered trials behind the percentile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials: Option<u64>,
    /// Case level: how many cases passed, failed, were inconclusive.
    pub passed_cases: usize,
    pub failed_cases: usize,
    pub inconclusive_cases: usize,
    /// Case level: every case that did not pass, worst first (failures, then the lowest upper
    /// bounds).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_passed: Vec<CaseVerdict>,
    /// Tool level: every gated tool with its verdict and bounds, worst first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolVerdict>,
    /// What more evidence would likely settle an inconclusive gate, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// `--sequential`: the test's design and what it spent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<SequentialInfo>,
}

/// The design of a sequential gate and the trials it used against the fixed design.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequentialInfo {
    /// The gate is a ceiling (`attack_success <= t`), judged as the floor on its complement:
    /// `p1`, `pass_boundary` and `pass_at` are the floor's, at 1 − t; a unit passes with at
    /// most n − s goals met where the floor passes at s.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ceiling: bool,
    /// The test each case's PASS side ran (a summary from before the mixture existed reads as
    /// the SPRT).
    #[serde(default)]
    pub test: toolscore_stats::SequentialKind,
    /// At the gate's threshold: the SPRT's alternative (`--sprt-p1`, else t + (1 − t)/2), and
    /// the rate at which the fixed design's power is matched.
    pub p1: f64,
    /// Chance of passing a case whose rate is at most the threshold.
    pub alpha: f64,
    /// Chance of failing a case whose rate is at least the threshold (at least `fail_below`
    /// under `--fail-below`): β/m over the gated cases.
    pub beta_per_case: f64,
    /// `--fail-below P1`: FAIL was the indifference-zone SPRT of t against this rate, so a
    /// failed case is below it, not shown to be below the bar, and says `BELOW P1`. Absent, a
    /// FAIL rules out the bar (a summary written before this field existed is judged again
    /// that way by `report`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_below: Option<f64>,
    /// The cases' bounds are the anytime-valid ones the test decided by (lower at 1 − α,
    /// upper at 1 − β/m), not Wilson's (summaries written before they were).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub anytime_valid_bounds: bool,
    pub max_trials: u32,
    /// Scored trials the gated cases used.
    pub trials_used: u64,
    /// Trials the exact fixed-n gate (`stats::exact`) with the same α and power 1 − β at p₁
    /// needs for the same cases (reference/stats.md §2.3, the "first" n).
    pub fixed_design_trials: u64,
    /// The SPRT at the gate's threshold: PASS once successes ≥ slope·n + intercept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_boundary: Option<(f64, f64)>,
    /// The mixture at the gate's threshold: `(n, the fewest passes that PASS after n
    /// trials)` at a few n up to the trial budget.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_at: Vec<(u64, u64)>,
    /// The suite gate: complete rounds judged, and those skipped for an infrastructure error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<(u64, u64)>,
}

impl SequentialInfo {
    /// The test and its guarantees in words, the one wording every report uses:
    /// `SPRT, anytime-valid): p1 0.9, alpha 0.050, beta 0.0125 per case` after an opening
    /// parenthesis the caller writes.
    pub fn design(&self) -> String {
        let test = match self.test {
            toolscore_stats::SequentialKind::Sprt => "SPRT, anytime-valid",
            toolscore_stats::SequentialKind::Mixture => {
                "mixture SPRT, anytime-valid, no guess of the true rate"
            }
            toolscore_stats::SequentialKind::Betting => {
                let (rounds, skipped) = self.rounds.unwrap_or_default();
                return format!(
                    "betting confidence sequence over rounds of every case, anytime-valid; about this suite's cases, not a population of cases): alpha {:.3} each way; {rounds} of at most {} rounds judged{}",
                    self.alpha,
                    self.max_trials,
                    if skipped > 0 {
                        format!(", {skipped} skipped for an infrastructure error")
                    } else {
                        String::new()
                    }
                );
            }
        };
        // A summary from before the FAIL side ruled out the bar: its FAIL was the SPRT's at p₁.
        if !self.anytime_valid_bounds && self.fail_below.is_none() {
            return format!(
                "{test}): p1 {}, alpha {:.3}, beta {:.4} per case",
                self.p1, self.alpha, self.beta_per_case
            );
        }
        let pass = match self.test {
            toolscore_stats::SequentialKind::Sprt => {
                format!("p1 {}, passes a case at alpha {:.3}", self.p1, self.alpha)
            }
            _ => format!("passes a case at alpha {:.3}", self.alpha),
        };
        let fail = match self.fail_below {
            None if self.ceiling => format!(
                "fails one only when its anytime-valid lower bound is above the bar, beta {:.4} per case",
                self.beta_per_case
            ),
            None => format!(
                "fails one only when its anytime-valid upper bound is below the bar, beta {:.4} per case",
                self.beta_per_case
            ),
            Some(rate) => format!(
                "calls one BELOW {rate} when its upper bound is below {rate} (--fail-below: an indifference zone, not a test of the bar; such a case may still clear it), beta {:.4} per case at rates >= {rate}",
                self.beta_per_case
            ),
        };
        format!("{test}): {pass}; {fail}")
    }

    /// What the gate spent, against the fixed-n gate with the same guarantees when there is
    /// one: `trials used: 929 (at most 40 per case); the fixed-n gate with the same guarantees
    /// needs 7198 (7.7x as many)`.
    pub fn spent(&self) -> String {
        let used = format!(
            "trials used: {} (at most {} per case)",
            self.trials_used, self.max_trials
        );
        if self.fixed_design_trials == 0 {
            return used;
        }
        format!(
            "{used}; the fixed-n gate with the same guarantees needs {}{}",
            self.fixed_design_trials,
            if self.trials_used > 0 {
                format!(
                    " ({:.1}x as many)",
                    self.fixed_design_trials as f64 / self.trials_used as f64
                )
            } else {
                String::new()
            }
        )
    }

    /// When a case passes at the gate's threshold: the SPRT's line, or the mixture's
    /// boundary at a few trial counts; `None` when the summary carries neither.
    pub fn pass_rule(&self) -> Option<String> {
        if let Some((slope, intercept)) = self.pass_boundary {
            return Some(format!(
                "a case passes once successes >= {slope:.5}·n + {intercept:.5}"
            ));
        }
        (!self.pass_at.is_empty()).then(|| {
            let points: Vec<String> = self
                .pass_at
                .iter()
                .map(|&(n, s)| {
                    // A ceiling passes where its complement's floor does: at most n − s.
                    let x = if self.ceiling { n - s } else { s };
                    format!("{x} of {n}")
                })
                .collect();
            if self.ceiling {
                format!("a case passes at no more than {}", points.join(", "))
            } else {
                format!("a case passes at {} successes", points.join(", "))
            }
        })
    }
}

/// One case under a case-level gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseVerdict {
    pub dataset: String,
    pub case_id: String,
    pub x: u64,
    pub n: u64,
    pub lower: f64,
    pub upper: f64,
    /// The bar this case was held to (its fixture's `"gate"`, or the gate's threshold).
    #[serde(default)]
    pub threshold: f64,
    pub verdict: Verdict,
    /// Inconclusive: about how many more trials would settle it at the observed rate (under
    /// `--sequential`: the fewest further trials that could still decide it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more_trials: Option<u64>,
    /// `--fail-below P1`: the case failed the indifference-zone test, its rate below this
    /// rate (not shown below its bar); its line says `BELOW P1`, not FAIL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub below: Option<f64>,
}

impl CaseVerdict {
    /// The word a case's line starts with: `BELOW 0.9` for a case failed under
    /// `--fail-below`, else the verdict's (`FAIL`, `INCONCLUSIVE`, `PASS`).
    pub fn label(&self) -> String {
        match (self.verdict, self.below) {
            (Verdict::Below, Some(rate)) => format!("BELOW {rate}"),
            (v, _) => v.label().to_owned(),
        }
    }

    /// `[lower, upper]` to three decimals, or more where three would round a decided case's
    /// bound onto the rate it was decided at (`FAIL` with 0.7996 shown as 0.800 beside a bar
    /// of 0.8), so a line never reads as contradicting its verdict.
    pub fn bounds_text(&self) -> String {
        let clear = |v: f64, rate: f64, above: bool, digits: usize| {
            let shown: f64 = format!("{v:.digits$}").parse().unwrap_or(v);
            if above { shown >= rate } else { shown < rate }
        };
        let digits = |v: f64, rate: f64, above: bool| {
            (3..=9).find(|&d| clear(v, rate, above, d)).unwrap_or(3)
        };
        let (lo_digits, hi_digits) = match self.verdict {
            Verdict::Pass => (digits(self.lower, self.threshold, true), 3),
            Verdict::Fail | Verdict::Below => (
                3,
                digits(self.upper, self.below.unwrap_or(self.threshold), false),
            ),
            Verdict::Inconclusive => (3, 3),
        };
        format!("[{:.lo_digits$}, {:.hi_digits$}]", self.lower, self.upper)
    }
}

/// One expected tool under a tool-level gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolVerdict {
    pub tool: String,
    pub verdict: Verdict,
    /// Cases of this tool with data for the metric (latency: every case with answered trials).
    pub cases: usize,
    /// Trials behind the figure: scored trials with data (rates) or answered trials (latency).
    pub n: u64,
    /// Mean of case rates (one case: its rate), or the latency percentile in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<f64>,
    /// One-sided bounds at the gate's confidence; `None` when the data cannot bound that side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lower: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper: Option<f64>,
    /// The one-sided p-value of "this tool meets the bar" that Holm's procedure used for FAIL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    /// How this tool's bounds were computed.
    pub method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl GateResult {
    /// The tools of a tool-level gate that did not pass, in the gate's order (worst first).
    pub fn tools_not_passed(&self) -> Vec<&ToolVerdict> {
        self.tools
            .iter()
            .filter(|t| t.verdict != Verdict::Pass)
            .collect()
    }

    /// Whether the gate has anything to show beyond its line: tools or cases that did not
    /// pass, a hint, or a sequential design.
    pub fn has_details(&self) -> bool {
        self.tools.iter().any(|t| t.verdict != Verdict::Pass)
            || !self.not_passed.is_empty()
            || self.hint.is_some()
            || self.sequential.is_some()
    }

    /// The gate as written on the command line, `selection>=0.8` or `p95_ms<=2000`, so every
    /// renderer names it the same way.
    pub fn name(&self) -> String {
        format!(
            "{}{}{}",
            self.metric.label(),
            self.metric.op(),
            self.threshold
        )
    }

    /// A bound of this gate: rates to three decimals, latencies in ms to one; a missing end
    /// is `n/a` for a rate and `unbounded` for a latency (too few answers to bound it).
    pub fn format_bound(&self, v: Option<f64>) -> String {
        match (v, self.metric.quantile().is_some()) {
            (Some(v), false) => format!("{v:.3}"),
            (Some(v), true) => format!("{v:.1}"),
            (None, false) => "n/a".to_owned(),
            (None, true) => "unbounded".to_owned(),
        }
    }

    /// Why the verdict is what it is, in the terms the gate was given: the bound that cleared
    /// or missed the threshold (for Markdown and JUnit, which show one line per gate).
    pub fn clause(&self) -> String {
        let b = |v| self.format_bound(v);
        let t = self.threshold;
        if self.level == GateLevel::Baseline {
            return match self.verdict {
                Verdict::Pass => format!("lower bound {} above -{t}", b(self.lower)),
                Verdict::Fail | Verdict::Below => {
                    format!("upper bound {} below -{t}", b(self.upper))
                }
                Verdict::Inconclusive => format!("bounds straddle -{t}"),
            };
        }
        let ceiling = self.metric.ceiling();
        match self.verdict {
            Verdict::Pass if ceiling => format!("upper bound {} <= {t}", b(self.upper)),
            Verdict::Fail | Verdict::Below if ceiling => {
                format!("lower bound {} > {t}", b(self.lower))
            }
            Verdict::Pass => format!("lower bound {} >= {t}", b(self.lower)),
            Verdict::Fail | Verdict::Below => format!("upper bound {} < {t}", b(self.upper)),
            Verdict::Inconclusive => format!("bounds straddle {t}"),
        }
    }

    /// The verdict's grounds in one line: for a suite, latency or baseline gate the bound
    /// against the threshold with the estimate and both bounds; for a case or tool gate the
    /// count of each verdict (the cases and tools are listed apart).
    pub fn outcome(&self) -> String {
        match self.level {
            GateLevel::Case => format!(
                "{} passed, {} {}, {} inconclusive of {} {}",
                self.passed_cases,
                self.failed_cases,
                self.sequential
                    .as_ref()
                    .and_then(|q| q.fail_below)
                    .map_or("failed".to_owned(), |rate| format!("below {rate}")),
                self.inconclusive_cases,
                self.cases,
                // An attacked run's cases are its (scenario × attack) units.
                if self.metric.attack().is_some() {
                    "units"
                } else {
                    "cases"
                }
            ),
            GateLevel::Tool => {
                let count = |v: Verdict| self.tools.iter().filter(|t| t.verdict == v).count();
                format!(
                    "{} passed, {} failed, {} inconclusive of {} tools",
                    count(Verdict::Pass),
                    count(Verdict::Fail),
                    count(Verdict::Inconclusive),
                    self.tools.len()
                )
            }
            GateLevel::Suite | GateLevel::Baseline => format!(
                "{} — estimate {}, bounds [{}, {}]",
                self.clause(),
                self.format_bound(self.estimate),
                self.format_bound(self.lower),
                self.format_bound(self.upper)
            ),
        }
    }

    /// The gate's verdict word: `BELOW 0.9` for a sequential case gate that failed under
    /// `--fail-below` (its cases are below that rate, not shown below the bar), else the
    /// verdict's.
    pub fn verdict_label(&self) -> String {
        match (
            self.verdict,
            self.sequential.as_ref().and_then(|q| q.fail_below),
        ) {
            (Verdict::Below, Some(rate)) => format!("BELOW {rate}"),
            (v, _) => v.label().to_owned(),
        }
    }

    /// The level in one word: `suite`, `case`, `tool` or `baseline`.
    pub fn level_label(&self) -> &'static str {
        match self.level {
            GateLevel::Suite => "suite",
            GateLevel::Case => "case",
            GateLevel::Tool => "tool",
            GateLevel::Baseline => "baseline",
        }
    }
}

/// A run's one verdict: the one its exit code reports, and the one every surface (terminal,
/// report.md, report.html, junit.xml, summary.json, history) leads with. Ordered from best to
/// worst: the run's verdict is the worst of its grounds'.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunVerdict {
    /// Every gate passed and the comparison (if any) decided: exit 0.
    Pass,
    /// A gate or the comparison is not decided yet: exit 3.
    Inconclusive,
    /// A sequential case gate under `--fail-below P1` called a case below P1 (an
    /// indifference-zone test the user asked for by name, not a test of the bar): exit 1, and
    /// said `BELOW P1`, never FAIL.
    Below,
    /// A gate failed: its bar is ruled out. Exit 1.
    Fail,
    /// Too many infrastructure errors to judge, a provider stopped by an auth or quota error,
    /// or planned trials that were neither run nor skipped: exit 4.
    NotJudged,
    /// Stopped with Ctrl-C or SIGTERM before every planned trial finished: exit 130.
    Interrupted,
}

impl RunVerdict {
    pub fn label(self) -> &'static str {
        match self {
            RunVerdict::Pass => "PASS",
            RunVerdict::Inconclusive => "INCONCLUSIVE",
            RunVerdict::Below => "BELOW",
            RunVerdict::Fail => "FAIL",
            RunVerdict::NotJudged => "NOT JUDGED",
            RunVerdict::Interrupted => "INTERRUPTED",
        }
    }

    /// The exit code this verdict is reported with (docs/reference/exit-codes.md): the one
    /// place a run's verdict becomes a process status.
    pub fn exit_code(self) -> toolscore_core::ExitCode {
        use toolscore_core::ExitCode;
        match self {
            RunVerdict::Pass => ExitCode::Pass,
            RunVerdict::Below | RunVerdict::Fail => ExitCode::GateFailed,
            RunVerdict::Inconclusive => ExitCode::Inconclusive,
            RunVerdict::NotJudged => ExitCode::InfraErrors,
            RunVerdict::Interrupted => ExitCode::Interrupted,
        }
    }
}

impl From<Verdict> for RunVerdict {
    fn from(v: Verdict) -> Self {
        match v {
            Verdict::Pass => RunVerdict::Pass,
            Verdict::Inconclusive => RunVerdict::Inconclusive,
            Verdict::Below => RunVerdict::Below,
            Verdict::Fail => RunVerdict::Fail,
        }
    }
}

/// A run's decision (`decide::decision::decide`): its verdict and what made it, in the order
/// every surface lists them. Computed once from the summary (itself a function of the records
/// and the run's header) and the policy below, so `report` and `compare` on the run's folder
/// reproduce it exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub verdict: RunVerdict,
    /// The exit status the verdict is reported with.
    pub exit_code: u8,
    /// The share of trials that may end in infrastructure errors before the run is not judged
    /// (`--max-infra-error-rate`), kept so the folder is judged again by the same rule.
    pub max_infra_error_rate: f64,
    /// What the verdict rests on: an interruption or a run that cannot be trusted as a whole
    /// first, then gates, comparison, infrastructure and budget.
    pub grounds: Vec<Ground>,
}

/// One thing a run's verdict rests on, with the verdict it alone would give the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ground {
    pub verdict: RunVerdict,
    #[serde(flatten)]
    pub part: Part,
}

/// The parts of a run that are judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "part", rename_all = "snake_case")]
pub enum Part {
    /// The run was stopped before every planned trial finished.
    Interrupted { completed: u64, planned: u64 },
    /// Planned trials that were neither run nor skipped (a failed worker).
    Unaccounted { missing: u64, planned: u64 },
    /// Arms whose provider answered with an auth or quota error: their remaining trials were
    /// not run, so the run cannot be judged as a whole.
    ProvidersStopped { providers: Vec<StoppedProvider> },
    /// Trials (dataset and scenario) that ended in an infrastructure error, against the limit.
    Infrastructure {
        errors: u64,
        trials: u64,
        limit: f64,
        /// The run they are of, when a decision rests on two (`compare A_DIR B_DIR`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<String>,
    },
    /// The gates' combined verdict (the worst).
    Gates {
        gate_verdict: Verdict,
        gates: usize,
        passed: usize,
        failed: usize,
        inconclusive: usize,
        /// Every failed gate failed under `--fail-below` this rate: the gates' word is
        /// `BELOW` it, not FAIL.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        below: Option<f64>,
    },
    /// The comparison's overall verdict (`Comparison::overall`): decided (better, worse, no
    /// detectable difference, not better) or not.
    Comparison {
        comparison_verdict: super::ComparisonVerdict,
        /// B, named by what differs between the arms.
        b: String,
        min_effect: f64,
        /// Why the verdict is not the visible cases' own, when it is not.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// `run --attacks --compare`: B − A on attack success (lower is better), and on utility
    /// under attack, paired by (scenario × attack) unit. Decided when attack success is.
    AttackComparison {
        attack_success: super::ComparisonVerdict,
        utility_under_attack: super::ComparisonVerdict,
        /// The attack-success finding in words, B named.
        finding: String,
    },
    /// `--max-cost` stopped planned trials from being sent, or between two steps: counted
    /// apart, never failures or infrastructure errors; a budget stop does not change the
    /// verdict.
    Budget {
        not_run: u64,
        #[serde(default, skip_serializing_if = "super::is_zero")]
        stopped: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cap_usd: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spent_usd: Option<f64>,
    },
}

/// An arm stopped by its provider's auth or quota error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoppedProvider {
    pub provider: String,
    pub variant: String,
    /// `auth` or `quota_exceeded`.
    pub class: String,
}

impl Decision {
    /// `--max-infra-error-rate`'s default, also the rule for a folder written before decisions
    /// were recorded.
    pub const DEFAULT_MAX_INFRA_ERROR_RATE: f64 = 0.1;

    /// The line every surface leads with: `verdict: INCONCLUSIVE (exit 3)`.
    pub fn headline(&self) -> String {
        format!("verdict: {}", self.verdict_text())
    }

    /// The verdict with its exit code, `INCONCLUSIVE (exit 3)`: the headline without its word,
    /// for a heading or a badge.
    pub fn verdict_text(&self) -> String {
        format!("{} (exit {})", self.label(), self.exit_code)
    }

    /// The verdict's word: `BELOW 0.9` under `--fail-below 0.9`, else the verdict's label.
    pub fn label(&self) -> String {
        let below = self.grounds.iter().find_map(|g| match g.part {
            Part::Gates {
                below: Some(rate), ..
            } => Some(rate),
            _ => None,
        });
        match (self.verdict, below) {
            (RunVerdict::Below, Some(rate)) => format!("BELOW {rate}"),
            (v, _) => v.label().to_owned(),
        }
    }

    /// What made the verdict, one line each, in the decision's order.
    pub fn ground_lines(&self) -> Vec<String> {
        self.grounds.iter().map(Ground::line).collect()
    }

    /// Why the run was not judged, in one sentence (for stderr and the history), when it was
    /// not.
    pub fn not_judged_because(&self) -> Option<String> {
        if self.verdict != RunVerdict::NotJudged {
            return None;
        }
        self.grounds
            .iter()
            .find(|g| g.verdict == RunVerdict::NotJudged)
            .map(|g| g.part.sentence())
    }
}

/// How a comparison of utility under attack reads beside the attack-success finding.
fn utility_word(v: super::ComparisonVerdict) -> &'static str {
    match v {
        super::ComparisonVerdict::Better => "B keeps the task more often",
        super::ComparisonVerdict::Worse => "B keeps the task less often",
        super::ComparisonVerdict::Equivalent => "no detectable difference",
        super::ComparisonVerdict::Inconclusive => "inconclusive",
        super::ComparisonVerdict::NotBetter => "B not better",
    }
}

impl Ground {
    /// `gates: PASS (2 passed, …)`, `infrastructure: 0 of 1220 trials ended in …`, or
    /// `infrastructure (run week-49): …` when the decision rests on two runs.
    pub fn line(&self) -> String {
        match &self.part {
            Part::Infrastructure {
                run_id: Some(run), ..
            } => format!("{} (run {run}): {}", self.part.name(), self.part.sentence()),
            part => format!("{}: {}", part.name(), part.sentence()),
        }
    }
}

impl Part {
    /// What the part is called in every report.
    pub fn name(&self) -> &'static str {
        match self {
            Part::Interrupted { .. } => "interrupted",
            Part::Unaccounted { .. }
            | Part::ProvidersStopped { .. }
            | Part::Infrastructure { .. } => "infrastructure",
            Part::Gates { .. } => "gates",
            Part::Comparison { .. } => "comparison",
            Part::AttackComparison { .. } => "attack comparison",
            Part::Budget { .. } => "budget",
        }
    }

    /// The part's finding in words, the one wording every report uses.
    pub fn sentence(&self) -> String {
        match self {
            Part::Interrupted { completed, planned } => format!(
                "stopped before every planned trial finished ({completed} of {planned} completed)"
            ),
            Part::Unaccounted { missing, planned } => format!(
                "{missing} of {planned} planned trials were neither run nor skipped; the scores cannot be trusted"
            ),
            Part::ProvidersStopped { providers } => format!(
                "{} stopped by auth or quota errors; their remaining trials were not run",
                providers
                    .iter()
                    .map(|s| format!("provider `{}` ({})", s.provider, s.class))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Part::Infrastructure { trials: 0, .. } => {
                "no trial finished, so nothing was judged (trials the budget stopped are not counted)".to_owned()
            }
            Part::Infrastructure {
                errors,
                trials,
                limit,
                ..
            } => {
                let over = *trials == 0 || *errors as f64 / *trials as f64 > *limit;
                format!(
                    "{errors} of {trials} trials ended in infrastructure errors (limit {:.0}%){}",
                    limit * 100.0,
                    if over {
                        "; the scores cannot be trusted"
                    } else {
                        ""
                    }
                )
            }
            Part::Gates {
                gate_verdict,
                gates,
                passed,
                failed,
                inconclusive,
                below,
            } => format!(
                "{} ({passed} passed, {failed} {}, {inconclusive} inconclusive of {gates} gate{})",
                below.map_or_else(|| gate_verdict.label().to_owned(), |r| format!("BELOW {r}")),
                below.map_or_else(|| "failed".to_owned(), |r| format!("below {r}")),
                if *gates == 1 { "" } else { "s" }
            ),
            Part::Comparison {
                comparison_verdict,
                b,
                min_effect,
                reason,
            } => match reason {
                Some(reason) => format!("INCONCLUSIVE: {reason}"),
                None => comparison_verdict.describe(b, *min_effect),
            },
            Part::AttackComparison {
                utility_under_attack,
                finding,
                ..
            } => format!(
                "{finding}; utility under attack: {}",
                utility_word(*utility_under_attack)
            ),
            Part::Budget {
                not_run,
                stopped,
                cap_usd,
                spent_usd,
            } => format!(
                "{}; the verdict is the run's own",
                super::budget_stop_text(*not_run, *stopped, *cap_usd, *spent_usd)
            ),
        }
    }
}
