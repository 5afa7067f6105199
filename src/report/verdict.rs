//! Gate verdicts as data: what `gate` decided, for summary.json and every renderer.

use serde::{Deserialize, Serialize};

use super::Metric;
use crate::record::ArmId;

/// The outcome of a gate, or of the whole run's gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Inconclusive,
    Fail,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Inconclusive => "INCONCLUSIVE",
            Verdict::Fail => "FAIL",
        }
    }
}

/// Where a gate looks: the suite's case-level rate, or each case's rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum GateLevel {
    /// The mean of case rates, with the suite interval (cases are the independent units).
    Suite,
    /// Every case on its own: the gate passes when every case passes.
    Case,
    /// Against an earlier run (`--baseline`): non-inferiority of the paired difference.
    #[value(skip)]
    Baseline,
}

/// Every gate of a run and their combined verdict (the worst).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateReport {
    pub verdict: Verdict,
    /// One-sided confidence level of every bound.
    pub confidence: f64,
    pub gates: Vec<GateResult>,
}

/// One gate (`metric >= threshold`) on one arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateResult {
    pub metric: Metric,
    pub threshold: f64,
    pub level: GateLevel,
    pub arm: ArmId,
    pub verdict: Verdict,
    /// How the bounds were computed.
    pub method: String,
    /// Suite level: the estimate (mean of case rates) and its one-sided bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lower: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper: Option<f64>,
    /// Cases with data for this metric.
    pub cases: usize,
    /// Case level: how many cases passed, failed, were inconclusive.
    pub passed_cases: usize,
    pub failed_cases: usize,
    pub inconclusive_cases: usize,
    /// Case level: every case that did not pass, worst first (failures, then the lowest upper
    /// bounds).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_passed: Vec<CaseVerdict>,
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
    /// The design alternative p₁ at the gate's threshold.
    pub p1: f64,
    /// Chance of passing a case whose rate is at most the threshold.
    pub alpha: f64,
    /// Chance of failing a case whose rate is at least p₁ (β/m over the gated cases).
    pub beta_per_case: f64,
    pub max_trials: u32,
    /// Scored trials the gated cases used.
    pub trials_used: u64,
    /// Trials the fixed-n Wilson gate with the same α and power 1 − β at p₁ needs for the
    /// same cases (reference/stats.md §2.3, the "first" n).
    pub fixed_design_trials: u64,
    /// At the gate's threshold: PASS once successes ≥ slope·n + intercept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_boundary: Option<(f64, f64)>,
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
}
