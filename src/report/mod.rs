//! Aggregation of the `TrialRecord` stream into a `Summary`, and the renderers that print it.
//!
//! The aggregator keeps counters per case and one latency histogram, so memory depends on the
//! number of cases, not trials. Renderers only format numbers the `Summary` already holds; no
//! renderer computes statistics of its own.

mod aggregate;
mod terminal;

pub use aggregate::{Aggregator, CaseInfo, DatasetInfo, ReplayInfo, RunInfo};
pub use terminal::render_terminal;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::stats::{ClusteredEstimate, Interval};

/// Everything a report shows, computed once from the records.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub run: RunInfo,
    pub planned_trials: u64,
    pub completed_trials: u64,
    /// True when the run was stopped (Ctrl-C) before every planned trial finished.
    pub interrupted: bool,
    pub confidence: f64,
    pub precision: f64,
    pub suite: GroupSummary,
    pub tools: Vec<GroupSummary>,
    pub cases: Vec<CaseSummary>,
    pub latency_ms: LatencySummary,
    pub tokens: TokenSummary,
    pub infra: InfraSummary,
    /// Schema violations of produced arguments, `tool: path failed keyword` → count.
    pub schema_violations: BTreeMap<String, u64>,
    pub warnings: Vec<String>,
}

/// A rate with its interval and its count. `rate` and `interval` are absent when `n` is 0.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RateStat {
    pub x: u64,
    pub n: u64,
    pub rate: Option<f64>,
    /// Wilson interval over the pooled trials.
    pub interval: Option<Interval>,
    /// Mean of case-level rates with a t(m−1) interval: the interval to quote for a suite or a
    /// tool, because trials of one case are not independent. Absent for a single case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case_level: Option<ClusteredEstimate>,
}

/// The four scored metrics of a group of trials.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Metrics {
    /// Right tool on the first call, or correctly no call.
    pub selection: RateStat,
    /// Right tool(s) with arguments matching exactly (canonical JSON, per-field matchers), over
    /// trials of cases that state arguments.
    pub args_exact: RateStat,
    /// Every produced call names a catalog tool and its arguments validate against the tool's
    /// schema, over trials with at least one call.
    pub schema_valid: RateStat,
    /// Selection, arguments (where stated) and schema all correct.
    pub pass: RateStat,
}

/// The suite, or the cases expecting one tool.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GroupSummary {
    pub name: String,
    pub cases: usize,
    pub scored_trials: u64,
    pub infra_errors: u64,
    pub metrics: Metrics,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseSummary {
    pub dataset: String,
    pub case_id: String,
    pub expected: String,
    pub tags: Vec<String>,
    pub scored_trials: u64,
    pub infra_errors: u64,
    pub metrics: Metrics,
    /// Most frequent failure details (`expected X, got Y` …) with counts.
    pub failures: BTreeMap<String, u64>,
}

/// Latency of answered trials, nearest-rank percentiles with exact order-statistic intervals.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LatencySummary {
    pub n: u64,
    pub mean: Option<f64>,
    pub p50: Option<Percentile>,
    pub p95: Option<Percentile>,
    pub p99: Option<Percentile>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Percentile {
    pub value: f64,
    pub lo: f64,
    /// `None` when there are too few trials to bound this percentile from above.
    pub hi: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenSummary {
    pub input_total: u64,
    pub output_total: u64,
    /// Answered trials whose response reported usage.
    pub trials_with_usage: u64,
    pub input_mean: Option<f64>,
    pub output_mean: Option<f64>,
}

/// Failures of the machinery, never scored as model failures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InfraSummary {
    pub errors: u64,
    /// Keyed by error class (`timeout`, `rate_limited`, `server_error`, …).
    pub by_class: BTreeMap<String, u64>,
    /// Trials that needed more than one attempt (retried after 429/5xx/timeouts), over all
    /// completed trials.
    pub retried: RateStat,
    /// A few distinct error messages, for diagnosis.
    pub examples: Vec<String>,
}
