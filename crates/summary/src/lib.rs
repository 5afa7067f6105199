//! What a run measured and what was decided of it: every type `summary.json` holds, and the
//! pure functions that build them from the `TrialRecord` stream.
//!
//! - [`Aggregator`] (an observer) and [`reaggregate`] turn records into a [`Summary`]: per arm
//!   and case, every rate with its interval and count, latency, tokens, cost, infrastructure
//!   errors, scenarios and attacked units, typed [`Warning`]s (data; each renderer words them);
//! - [`Decision`], [`GateReport`] and their verdicts and grounds, [`Comparison`] and
//!   [`AttackComparison`], and the tune result types ([`tune`]): what the deciders return;
//! - [`behaviour`]: what the trials of a case did, grouped, with their shares (`explain`, the
//!   HTML explorer), and [`weakest_cases`], the cases every report lists first;
//! - the policy defaults a decision is judged by (`Decision::DEFAULT_MAX_INFRA_ERROR_RATE`).
//!
//! `tune` and `behaviour` are public as namespaces; the other modules are private and the root
//! re-exports what other crates name.
//!
//! It sits between the layers that measure (`core`'s records, `stats`' formulas) and those that
//! decide and draw: `decide` and `tune` fill these types, `report` renders them, and neither
//! knows the other. Every interval comes from `stats`; nothing here prints or reads a flag.

mod aggregate;
pub mod behaviour;
mod comparison;
mod cost_agg;
mod money;
mod providers;
mod reaggregate;
mod run_info;
mod scenario;
mod security;
pub mod tune;
mod verdict;
mod warning;

pub use aggregate::{Aggregator, chosen_label};
pub use comparison::{AttackComparison, CaseComparison, ComparedArm, Comparison};
pub use comparison::{ComparisonVerdict, GroupComparison, McNemar, MeanDifference};
pub use comparison::{OverallVerdict, SequentialComparison, Substitution};
use money::budget_stop_text;
pub use money::format_usd;
pub use providers::{ArmChoice, ChoiceDiff, PairDifference, PassDiff, ProviderDiff};
pub use reaggregate::{for_each_record, for_each_record_mut, reaggregate};
pub use reaggregate::{reaggregate_rescored, reaggregate_with_latency};
pub use run_info::{ArmInfo, DatasetInfo, ReplayInfo, RunInfo};
pub use run_info::{ScenarioInfo, ShardInfo, VariantInfo};
pub use scenario::{MeanStat, PassK, ScenarioArmSummary, ScenarioDrift};
pub use scenario::{ScenarioSummary, SuitePassK, scenario_drift};
pub use security::{AttackUnit, SecurityArmSummary, SecurityGroup};
pub use verdict::{CaseVerdict, Decision, GateLevel, GateMetric, GateReport, GateResult};
pub use verdict::{Ground, LatencyQuantile, Part, RunVerdict, SequentialInfo};
pub use verdict::{StoppedProvider, ToolVerdict, Verdict};
pub use warning::Warning;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use toolscore_core::metric::{Metric, PerMetric};
use toolscore_core::{ArgFailureKind, ArmId};
use toolscore_stats::{ClusteredEstimate, Interval, LatencyDistribution, LatencySummary};

/// Everything a report shows, computed once from the records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub run: RunInfo,
    pub planned_trials: u64,
    pub completed_trials: u64,
    /// Planned trials not run because an observer (a gate) stopped their case, arm or run.
    #[serde(default)]
    pub skipped_trials: u64,
    /// True when the run was stopped (Ctrl-C) before every planned trial finished.
    pub interrupted: bool,
    pub confidence: f64,
    pub precision: f64,
    /// One per arm (provider × catalog variant), ordered by variant, provider, model.
    pub arms: Vec<ArmSummary>,
    /// About the run as a whole (an interruption); each arm has its own too.
    pub warnings: Vec<Warning>,
    /// The verdict of `--gate`, when gates were given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateReport>,
    /// `run --compare`: the two arms compared, paired by case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
    /// Multi-step scenarios, per arm: judged on their trajectories, apart from the datasets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenarios: Vec<ScenarioArmSummary>,
    /// `run --attacks`, per arm that ran attacked units: attack success, utility under attack
    /// and clean utility, by unit, scenario, attack and family.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security: Vec<SecurityArmSummary>,
    /// `run --attacks --compare`: the two arms' attacked units compared, paired by unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack_comparison: Option<AttackComparison>,
    /// `--baseline`: scenarios whose most frequent tool sequence or final answer changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenario_drift: Vec<scenario::ScenarioDrift>,
    /// Several providers shown the same catalog variant: where they disagree, case by case
    /// (`compare::provider_diffs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provider_diffs: Vec<ProviderDiff>,
    /// What the trials cost (datasets and scenarios), per arm and case, from the records.
    #[serde(default)]
    pub cost: CostSummary,
    /// The estimate printed before the first request and the `--max-cost` cap, when priced or
    /// capped; not in the records, so kept in the header `report` reads back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetReport>,
    /// The run's one verdict and what made it (`decide::decision::decide`): what its exit
    /// code reports and every renderer leads with. Set once everything it rests on is judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
}

/// Dollars and tokens of a group of trials. `usd` sums the trials whose cost is known
/// (`priced_trials` of `trials`); it is `None` when none is, never 0 for "unknown".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CostFigures {
    pub usd: Option<f64>,
    pub trials: u64,
    pub priced_trials: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    /// Trials `--max-cost` stopped between two steps (outcome `budget_stopped`): their spend is
    /// in `usd`, but they were neither judged nor infrastructure errors.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub budget_stopped_trials: u64,
    /// Trials billed more than the worst case recorded for their requests under `--max-cost`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub billed_beyond_worst_case: Option<BeyondWorstCase>,
}

/// Trials a provider billed beyond what their requests could cost (each byte of the body an
/// input token, the whole output bound): usage the `--max-cost` reservations cannot bound.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BeyondWorstCase {
    pub trials: u64,
    /// Dollars billed above the worst case, summed over those trials.
    pub usd: f64,
}

pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What the run cost, and each arm.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CostSummary {
    #[serde(flatten)]
    pub total: CostFigures,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arms: Vec<ArmCost>,
}

/// One arm's cost, and each of its cases'.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmCost {
    pub arm: ArmId,
    #[serde(flatten)]
    pub figures: CostFigures,
    /// Mean over the priced trials.
    pub usd_per_trial: Option<f64>,
    /// The prices the records were costed at (one, unless the run was resumed with another).
    pub price_sources: Vec<String>,
    pub cases: Vec<CaseCost>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseCost {
    pub dataset: String,
    pub case_id: String,
    pub usd: Option<f64>,
    pub trials: u64,
    pub priced_trials: u64,
}

/// The run's estimate and `--max-cost`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetReport {
    /// `--max-cost`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_usd: Option<f64>,
    /// The estimate of the trials this process was to run; `None` when an arm has no price.
    pub estimate_usd: Option<f64>,
    pub estimate_trials: u64,
    /// Planned trials the cap left unstarted (counted apart, never as failures).
    pub not_run: u64,
    /// Trials the cap stopped between two steps (outcome `budget_stopped`): neither judged nor
    /// infrastructure errors.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stopped: u64,
    /// Dollars spent, when some trial's cost is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spent_usd: Option<f64>,
    /// The cap stopped the run before every planned trial started or finished.
    pub cut_short: bool,
}

impl BudgetReport {
    /// How far spend passed the cap, when it did (a provider billed beyond the worst case of
    /// requests in flight).
    pub fn passed_by(&self) -> Option<f64> {
        let (spent, cap) = (self.spent_usd?, self.max_usd?);
        (spent > cap).then_some(spent - cap)
    }

    /// The word a report's budget line leads with, when there is one: the cap passed, or the
    /// run cut short by it.
    pub fn headline(&self) -> Option<&'static str> {
        if self.passed_by().is_some() {
            Some("OVER BUDGET")
        } else if self.cut_short {
            Some("CUT SHORT BY BUDGET")
        } else {
            None
        }
    }

    /// What the cap stopped, in the words every report uses.
    pub fn stop_text(&self) -> String {
        budget_stop_text(self.not_run, self.stopped, self.max_usd, self.spent_usd)
    }
}

/// What `toolscore report` reads from a run's summary.json: only what the records do not hold,
/// so a summary written by an older toolscore (other figures, other warnings) still works.
#[derive(Debug, Clone, Deserialize)]
pub struct SummaryHeader {
    pub run: RunInfo,
    pub planned_trials: u64,
    #[serde(default)]
    pub skipped_trials: u64,
    pub interrupted: bool,
    pub confidence: f64,
    pub precision: f64,
    /// The run's warnings, for the reasons trials went unaccounted.
    #[serde(default)]
    pub warnings: Vec<serde_json::Value>,
    #[serde(default)]
    pub budget: Option<BudgetReport>,
    /// The run's gate verdict, as written (read leniently: see [`SummaryHeader::gate`]).
    #[serde(default, rename = "gate")]
    gate_recorded: Option<serde_json::Value>,
    /// Whether the run compared its two arms (`run --compare`).
    #[serde(default, rename = "comparison")]
    comparison_recorded: Option<serde_json::Value>,
    /// Whether the run compared its two attacked arms (`run --attacks --compare`).
    #[serde(default, rename = "attack_comparison")]
    attack_comparison_recorded: Option<AttackComparison>,
    /// The run's decision, as written (read leniently: see [`SummaryHeader::max_infra_error_rate`]).
    #[serde(default, rename = "decision")]
    decision_recorded: Option<serde_json::Value>,
}

impl SummaryHeader {
    /// The gates the run was judged by, when it was and its summary still reads as a gate
    /// report (an older or hand-edited one that does not is treated as ungated).
    pub fn gate(&self) -> Option<GateReport> {
        serde_json::from_value(self.gate_recorded.clone()?).ok()
    }

    /// Whether a sequential test stopped the run's cases (or the run) on its data: a gate or
    /// a comparison run with `--sequential`.
    pub fn sampled_sequentially(&self) -> bool {
        self.gate()
            .is_some_and(|g| g.gates.iter().any(|g| g.sequential.is_some()))
            || self
                .comparison()
                .is_some_and(|c| c.visible.sequential.is_some())
    }

    /// Whether the run compared its two arms (their cases, or their attacked units).
    pub fn compared(&self) -> bool {
        self.comparison_recorded.is_some() || self.attack_comparison_recorded.is_some()
    }

    /// The `--min-effect` the run compared its arms by, when it did and its summary still says.
    pub fn min_effect(&self) -> Option<f64> {
        self.comparison().map(|c| c.min_effect).or_else(|| {
            self.attack_comparison_recorded
                .as_ref()
                .map(|c| c.min_effect)
        })
    }

    /// The comparison the run recorded, when it still reads as one.
    pub fn comparison(&self) -> Option<Comparison> {
        serde_json::from_value(self.comparison_recorded.clone()?).ok()
    }

    /// The limit of infrastructure errors the run was judged by (`--max-infra-error-rate`),
    /// so its folder is judged again by the same rule; the default for a folder written
    /// before decisions were recorded.
    pub fn max_infra_error_rate(&self) -> f64 {
        self.decision_recorded
            .as_ref()
            .and_then(|d| d["max_infra_error_rate"].as_f64())
            .filter(|r| (0.0..=1.0).contains(r))
            .unwrap_or(Decision::DEFAULT_MAX_INFRA_ERROR_RATE)
    }

    /// Why trials went unaccounted, as the run recorded it.
    pub fn failures(&self) -> Vec<String> {
        self.warnings
            .iter()
            .filter(|w| w["kind"] == "trials_unaccounted")
            .flat_map(|w| w["reasons"].as_array().cloned().unwrap_or_default())
            .filter_map(|r| r.as_str().map(str::to_owned))
            .collect()
    }
}

/// The figures of one arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmSummary {
    pub arm: ArmId,
    pub suite: GroupSummary,
    pub tools: Vec<GroupSummary>,
    pub cases: Vec<CaseSummary>,
    pub latency_ms: LatencySummary,
    /// Latency of each expected tool's answered trials (keyed by the case's expected-tool
    /// label, like `tools`), for per-tool budgets.
    #[serde(default)]
    pub tool_latency: Vec<ToolLatency>,
    pub tokens: TokenSummary,
    pub infra: InfraSummary,
    /// Schema violations of produced arguments, `tool: path failed keyword` → count.
    pub schema_violations: BTreeMap<String, u64>,
    /// Scored trials by (expected, chosen): what the model picks instead. "Chosen" is what
    /// selection judges: the first call's tool, "(no call)", or for parallel expectations the
    /// multiset of called tools.
    #[serde(default)]
    pub confusion: Vec<ConfusionCell>,
    /// Precision and recall of each tool (and of "(no call)") over scored trials.
    #[serde(default)]
    pub tool_accuracy: Vec<ToolAccuracy>,
    /// Cases whose pass-rate interval lies strictly inside (0.1, 0.9): the model gets them
    /// right sometimes and wrong sometimes, which is information, not noise.
    #[serde(default)]
    pub unstable_cases: Vec<UnstableCase>,
    /// Why right-tool arguments failed, by kind, for the arm and per expected tool.
    #[serde(default)]
    pub arg_failures: ArgFailureSummary,
    pub warnings: Vec<Warning>,
}

/// The argument-failure taxonomy of a group of trials. The denominator is the trials that
/// chose the right tool and made a call, the only trials whose arguments can be wrong in a
/// classifiable way: counting wrong-tool trials too would dilute every share by selection
/// errors. A trial counts once per kind however many fields show it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ArgFailureSummary {
    /// Scored trials that chose the right tool, made a call and are classified: the
    /// denominator of every share.
    pub trials: u64,
    /// Right-tool trials that failed their argument or schema check but carry no
    /// classification (scored by a toolscore older than the taxonomy): in no count, and not
    /// in `trials` either, so they do not read as "no failure".
    #[serde(default)]
    pub unclassified_trials: u64,
    /// Every kind, in a fixed order, with its share of `trials` and the Wilson interval.
    pub kinds: Vec<ArgFailureShare>,
    /// The same per expected tool (the case's expected-tool label).
    #[serde(default)]
    pub by_tool: Vec<ToolArgFailures>,
}

/// How many trials showed one kind of argument failure, out of the group's trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArgFailureShare {
    pub kind: ArgFailureKind,
    pub share: RateStat,
}

/// The argument-failure taxonomy of the cases expecting one tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolArgFailures {
    pub tool: String,
    pub trials: u64,
    #[serde(default)]
    pub unclassified_trials: u64,
    pub kinds: Vec<ArgFailureShare>,
}

/// One cell of the expected × chosen matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfusionCell {
    pub expected: String,
    pub chosen: String,
    pub count: u64,
}

/// How often a tool is chosen when it should be (recall), and right when chosen (precision).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolAccuracy {
    pub tool: String,
    pub precision: RateStat,
    pub recall: RateStat,
}

/// A case the model neither reliably passes nor reliably fails.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnstableCase {
    pub dataset: String,
    pub case_id: String,
    pub pass: RateStat,
}

/// Bounds between which a case's whole pass interval marks it unstable.
pub const UNSTABLE_BAND: (f64, f64) = (0.1, 0.9);

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

/// The rates of a group of trials, one per [`Metric`] (what each measures is on its variant).
pub(crate) type Metrics = PerMetric<RateStat>;

/// The suite, or the cases expecting one tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupSummary {
    pub name: String,
    pub cases: usize,
    pub scored_trials: u64,
    pub infra_errors: u64,
    pub metrics: Metrics,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// What the model chose in the scored trials, as selection judges it (a tool, `a + b` for
    /// parallel calls, `(no call)`), most frequent first up to eight, the rest as `(other)`:
    /// the majority choice a cross-provider diff compares.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub chosen: BTreeMap<String, u64>,
}

/// The latency distributions of a run, per arm and per expected tool, handed from the
/// aggregator to the gate beside the `Summary`. Kept out of the summary (and summary.json) on
/// purpose: it grows with the spread of latencies, up to an entry per trial, and the summary
/// must stay a plain function of the records that compares equal after a round trip through
/// JSON. `toolscore report` rebuilds it from results.jsonl like every other figure.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LatencyDistributions {
    pub arms: BTreeMap<ArmId, ArmLatencyDistribution>,
}

/// One arm's latency distributions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ArmLatencyDistribution {
    pub arm: LatencyDistribution,
    /// Keyed by the case's expected-tool label.
    pub tools: BTreeMap<String, LatencyDistribution>,
}

/// One expected tool's latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolLatency {
    pub tool: String,
    pub latency_ms: LatencySummary,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenSummary {
    pub input_total: u64,
    pub output_total: u64,
    /// Answered trials whose response reported usage.
    pub trials_with_usage: u64,
    pub input_mean: Option<f64>,
    pub output_mean: Option<f64>,
}

/// Failures of the machinery, never scored as model failures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// An arm's cases with a pass rate, lowest first (ties by case id): the weakest cases every
/// report lists.
pub fn weakest_cases(a: &ArmSummary) -> Vec<&CaseSummary> {
    let mut cases: Vec<_> = a
        .cases
        .iter()
        .filter(|c| c.metrics[Metric::Pass].rate.is_some())
        .collect();
    cases.sort_by(|a, b| {
        a.metrics[Metric::Pass]
            .rate
            .partial_cmp(&b.metrics[Metric::Pass].rate)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.case_id.cmp(&b.case_id))
    });
    cases
}
