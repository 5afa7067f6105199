//! Warnings as data: what is wrong with the evidence, with its numbers. `summary.json` keeps
//! them typed; each renderer words them (the terminal's wording is in `terminal.rs`).

use serde::{Deserialize, Serialize};

use toolscore_core::metric::Metric;

/// One thing the reader must know before trusting a figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Warning {
    /// Stopped (Ctrl-C) before every planned trial finished.
    RunInterrupted { completed: u64, planned: u64 },
    /// Planned trials neither completed nor skipped in a run that was not interrupted: the
    /// figures cover only what completed, and the run does not exit 0.
    TrialsUnaccounted {
        missing: u64,
        planned: u64,
        reasons: Vec<String>,
    },
    /// Under `--max-cost`, trials an arm's provider billed beyond the worst case of their
    /// requests (each byte of the body an input token, the whole output bound): usage no
    /// request of that size can produce, which reservations cannot bound, so spend may pass
    /// the cap by what the requests in flight were billed beyond it.
    BilledBeyondWorstCase {
        arm: toolscore_core::ArmId,
        trials: u64,
        /// Dollars billed above the worst case, summed over those trials.
        usd: f64,
    },
    /// Trials that ended in infrastructure errors: counted apart, not scored.
    InfraErrors { errors: u64 },
    /// Trials in flight when a sequential test decided their case (or arm, or run): kept in
    /// results.jsonl marked `after_decision`, their cost counted, no rate counting them.
    TrialsAfterDecision { trials: u64 },
    /// Too few cases behind the suite-level rates for their case-level interval.
    FewCases { cases: usize, min_cases: usize },
    /// Cases whose per-case interval is wider than the requested precision, and the trials
    /// per case that would reach it at the observed rates (for schema validity, which counts
    /// only trials that made a call, converted to trials at each case's observed call rate).
    CasesImprecise {
        metric: Metric,
        wide_cases: usize,
        cases_with_data: usize,
        confidence: f64,
        precision: f64,
        trials_per_case_needed: u64,
    },
    /// The suite's case-level t interval is wider than the precision; more cases (not trials)
    /// would narrow it. `half_width` is `t_{m−1} · se`, before any clipping to [0, 1].
    SuiteImprecise {
        metric: Metric,
        half_width: f64,
        /// Whether the reported interval was clipped to [0, 1] (so it looks narrower).
        clipped: bool,
        precision: f64,
        cases_needed: u64,
    },
    /// A request setting the user configured was not sent to an arm's model, which refuses
    /// it (the capability table): the arm ran at the provider's default instead.
    SettingNotSent {
        provider: String,
        model: String,
        /// The request field (`temperature`, `tool_choice`, `parallel_tool_calls`).
        field: String,
        /// The value configured.
        configured: serde_json::Value,
        /// Why: the capability table's date and source.
        reason: String,
    },
    /// Too few answered trials to bound latency p99 from above at this confidence.
    LatencyP99Unbounded {
        answered: u64,
        min_answered: u64,
        confidence: f64,
    },
}
