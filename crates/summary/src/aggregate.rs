//! Incremental aggregation: one `add` per finished trial, `finish` once at the end. Keyed by
//! what each record says (arm, dataset, case), never by its position in a plan, so a
//! `results.jsonl` alone re-aggregates into the same summary (`summary::reaggregate`).

use std::collections::BTreeMap;
use toolscore_core::metric::PerMetric;

use super::cost_agg::{ArmCostAgg, cost_summary};
use super::run_info::RunInfo;
use super::{
    ArgFailureShare, ArgFailureSummary, ArmLatencyDistribution, ArmSummary, CaseSummary,
    ConfusionCell, GroupSummary, InfraSummary, LatencyDistributions, Metric, Metrics, RateStat,
    Summary, TokenSummary, ToolAccuracy, ToolArgFailures, Warning,
};
use toolscore_core::Error;
use toolscore_core::{ArgFailureKind, ArmId, Outcome, TrialRecord, TrialScore};
use toolscore_core::{Control, Observer, RunEvent, RunTotals};
use toolscore_stats as stats;

/// Distinct failure details shown per case: the most frequent (ties by text), the rest summed
/// under "(other)". Chosen at the end from up to [`MAX_FAILURE_TRACKED`] counted details, so
/// the figures do not depend on the order trials finished in (a run at concurrency 8, its
/// `report`, and a `merge` of its shards agree) while memory stays bounded whatever the model
/// produces.
const MAX_FAILURE_DETAILS: usize = 8;
const MAX_FAILURE_TRACKED: usize = 64;
const MAX_SCHEMA_KEYS: usize = 64;
const MAX_ERROR_EXAMPLES: usize = 5;

#[derive(Debug, Clone, Copy, Default)]
struct Count {
    x: u64,
    n: u64,
}

impl Count {
    fn add(&mut self, ok: Option<bool>) {
        if let Some(ok) = ok {
            self.n += 1;
            self.x += u64::from(ok);
        }
    }
}

#[derive(Debug, Clone, Default)]
struct CaseCounts {
    scored: u64,
    errors: u64,
    metrics: PerMetric<Count>,
    failures: BTreeMap<String, u64>,
    /// What the model chose (as selection judges it) → scored trials.
    chosen: BTreeMap<String, u64>,
}

/// One case's counters and what its records say about it.
#[derive(Debug, Clone, Default)]
struct CaseAgg {
    expected: String,
    tags: Vec<String>,
    counts: CaseCounts,
}

/// One arm's counters.
struct ArmAgg {
    /// dataset → case id → counters.
    cases: BTreeMap<String, BTreeMap<String, CaseAgg>>,
    latency: stats::LatencyAgg,
    /// Expected label → latency of its answered trials (one histogram per expected tool, so
    /// memory is bounded by the dataset's tools, not by the trials).
    tool_latency: BTreeMap<String, stats::LatencyAgg>,
    input_tokens: u64,
    output_tokens: u64,
    with_usage: u64,
    completed: u64,
    retried: u64,
    errors_by_class: BTreeMap<String, u64>,
    error_examples: Vec<String>,
    schema_violations: BTreeMap<String, u64>,
    /// (expected label, chosen label) → scored trials.
    confusion: BTreeMap<(String, String), u64>,
    /// Expected label → argument-failure counts (one entry per expected tool, so bounded by
    /// the dataset, not by what the model produces).
    arg_failures: BTreeMap<String, ArgFailureCounts>,
}

/// Argument-failure counts of a group: right-tool trials whose arguments are classified (the
/// denominator), per kind the trials that showed it, and failing trials that carry no
/// classification (kept out of the denominator, which would otherwise read as "no failure").
#[derive(Debug, Clone, Copy, Default)]
struct ArgFailureCounts {
    trials: u64,
    unclassified: u64,
    kinds: [u64; ArgFailureKind::ALL.len()],
}

impl ArgFailureCounts {
    fn add(&mut self, score: &TrialScore) {
        // The right tool was chosen and a call made: the trials whose arguments were judged.
        if !(score.selection_ok && score.schema_ok.is_some()) {
            return;
        }
        match &score.arg_failures {
            None if !score.passed => self.unclassified += 1,
            None => self.trials += 1,
            Some(found) => {
                self.trials += 1;
                for (i, kind) in ArgFailureKind::ALL.iter().enumerate() {
                    if found.iter().any(|f| f.kind == *kind) {
                        self.kinds[i] += 1;
                    }
                }
            }
        }
    }

    fn merge(&mut self, other: &ArgFailureCounts) {
        self.trials += other.trials;
        self.unclassified += other.unclassified;
        for (a, b) in self.kinds.iter_mut().zip(other.kinds) {
            *a += b;
        }
    }

    fn shares(&self, conf: f64) -> Vec<ArgFailureShare> {
        ArgFailureKind::ALL
            .iter()
            .zip(self.kinds)
            .map(|(&kind, x)| ArgFailureShare {
                kind,
                share: rate(Count { x, n: self.trials }, conf, None),
            })
            .collect()
    }
}

/// Distinct (expected, chosen) pairs kept per arm; the rest are counted under "(other)" so a
/// model that invents tool names cannot grow memory.
const MAX_CONFUSION_CELLS: usize = 512;

/// What the model chose, as selection judges it: for one expected call, the first call's tool
/// (or "(no call)"); for parallel calls, the sorted multiset of called tools.
pub fn chosen_label(record: &TrialRecord) -> String {
    let calls = record
        .turns
        .first()
        .map(|t| t.tool_calls.as_slice())
        .unwrap_or_default();
    let label = if calls.is_empty() {
        NO_CALL.to_owned()
    } else if record.expected.contains(" + ") {
        let mut names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
        names.sort_unstable();
        names.join(" + ")
    } else {
        calls[0].name.clone()
    };
    match label.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &label[..cut]),
        None => label,
    }
}

/// The label of "the model made no tool call", as expectations write it.
const NO_CALL: &str = "(no call)";

impl ArmAgg {
    fn new() -> Self {
        ArmAgg {
            cases: BTreeMap::new(),
            latency: stats::LatencyAgg::new(),
            tool_latency: BTreeMap::new(),
            input_tokens: 0,
            output_tokens: 0,
            with_usage: 0,
            completed: 0,
            retried: 0,
            errors_by_class: BTreeMap::new(),
            error_examples: Vec::new(),
            schema_violations: BTreeMap::new(),
            confusion: BTreeMap::new(),
            arg_failures: BTreeMap::new(),
        }
    }

    fn case(&mut self, record: &TrialRecord) -> &mut CaseAgg {
        // Look up by reference first: the keys are only cloned the first time a case is seen.
        if !self
            .cases
            .get(&record.dataset)
            .is_some_and(|d| d.contains_key(&record.case_id))
        {
            self.cases
                .entry(record.dataset.clone())
                .or_default()
                .insert(
                    record.case_id.clone(),
                    CaseAgg {
                        expected: record.expected.clone(),
                        tags: record.tags.clone(),
                        counts: CaseCounts::default(),
                    },
                );
        }
        self.cases
            .get_mut(&record.dataset)
            .and_then(|d| d.get_mut(&record.case_id))
            .expect("inserted above")
    }

    fn add(&mut self, record: &TrialRecord) {
        self.completed += 1;
        if record.attempts > 1 {
            self.retried += 1;
        }
        if record.outcome == Outcome::Error {
            self.add_error(record);
            return;
        }
        if record.score.is_some() {
            let label = chosen_label(record);
            let chosen = &mut self.case(record).counts.chosen;
            let case_key = if chosen.len() < MAX_FAILURE_TRACKED || chosen.contains_key(&label) {
                label.clone()
            } else {
                "(other)".to_owned()
            };
            *chosen.entry(case_key).or_default() += 1;
            let mut key = (record.expected.clone(), label);
            if self.confusion.len() >= MAX_CONFUSION_CELLS && !self.confusion.contains_key(&key) {
                key.1 = "(other)".to_owned();
            }
            *self.confusion.entry(key).or_default() += 1;
        }
        if let Some(score) = &record.score {
            self.add_score(record, score);
        }
        let usage = record.usage;
        if usage.input_tokens.is_some() || usage.output_tokens.is_some() {
            self.with_usage += 1;
            self.input_tokens += usage.input_tokens.unwrap_or(0);
            self.output_tokens += usage.output_tokens.unwrap_or(0);
        }
        if record.batch.is_some() {
            // A batch answers whenever the provider gets to it: no latency of the model's.
            return;
        }
        self.latency.record(record.latency_ms);
        if !self.tool_latency.contains_key(&record.expected) {
            self.tool_latency
                .insert(record.expected.clone(), stats::LatencyAgg::new());
        }
        if let Some(tool) = self.tool_latency.get_mut(&record.expected) {
            tool.record(record.latency_ms);
        }
    }

    /// An infrastructure error: counted by class, its message kept among the examples.
    fn add_error(&mut self, record: &TrialRecord) {
        self.case(record).counts.errors += 1;
        let class = record
            .error_class
            .map_or_else(|| "unknown".to_owned(), |c| c.as_str().to_owned());
        *self.errors_by_class.entry(class).or_default() += 1;
        // The first distinct messages in text order, not in finishing order: the same
        // examples whatever order the trials finished in.
        if let Some(msg) = &record.error
            && !self.error_examples.contains(msg)
            && (self.error_examples.len() < MAX_ERROR_EXAMPLES
                || self.error_examples.last().is_some_and(|last| msg < last))
        {
            let at = self.error_examples.partition_point(|m| m < msg);
            self.error_examples.insert(at, msg.clone());
            self.error_examples.truncate(MAX_ERROR_EXAMPLES);
        }
    }

    /// A scored trial's verdicts, failure details and schema violations.
    fn add_score(&mut self, record: &TrialRecord, score: &TrialScore) {
        if !self.arg_failures.contains_key(&record.expected) {
            self.arg_failures
                .insert(record.expected.clone(), ArgFailureCounts::default());
        }
        if let Some(counts) = self.arg_failures.get_mut(&record.expected) {
            counts.add(score);
        }
        let c = &mut self.case(record).counts;
        c.scored += 1;
        for metric in Metric::ALL {
            c.metrics[metric].add(metric.of(score));
        }
        if let Some(detail) = score.detail.as_ref().filter(|_| !score.passed) {
            let key = if c.failures.len() < MAX_FAILURE_TRACKED || c.failures.contains_key(detail) {
                detail.clone()
            } else {
                "(other)".to_owned()
            };
            *c.failures.entry(key).or_default() += 1;
        }
        for v in &score.schema_violations {
            let key = format!(
                "{}: {} failed {}",
                v.tool,
                if v.path.is_empty() { "(root)" } else { &v.path },
                v.keyword
            );
            if self.schema_violations.len() < MAX_SCHEMA_KEYS
                || self.schema_violations.contains_key(&key)
            {
                *self.schema_violations.entry(key).or_default() += 1;
            }
        }
    }

    fn finish(self, arm: ArmId, conf: f64, precision: f64) -> ArmSummary {
        let (cases, infos, counts) = case_summaries(self.cases, conf);
        let all: Vec<usize> = (0..counts.len()).collect();
        let suite = group("suite", &all, &counts, conf);
        let mut by_tool: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, expected) in infos.iter().enumerate() {
            by_tool.entry(expected.as_str()).or_default().push(i);
        }
        let tools = by_tool
            .iter()
            .map(|(name, idx)| group(name, idx, &counts, conf))
            .collect();
        let latency_ms = self.latency.summary(conf);
        let tool_latency = self
            .tool_latency
            .iter()
            .map(|(tool, l)| super::ToolLatency {
                tool: tool.clone(),
                latency_ms: l.summary(conf),
            })
            .collect();
        let tokens = token_summary(self.input_tokens, self.output_tokens, self.with_usage);
        let infra = InfraSummary {
            errors: self.errors_by_class.values().sum(),
            by_class: self.errors_by_class,
            retried: rate(
                Count {
                    x: self.retried,
                    n: self.completed,
                },
                conf,
                None,
            ),
            examples: self.error_examples,
        };
        let mut summary = ArmSummary {
            arm,
            suite,
            tools,
            cases,
            latency_ms,
            tool_latency,
            tokens,
            infra,
            schema_violations: self.schema_violations,
            confusion: self
                .confusion
                .iter()
                .map(|((expected, chosen), &count)| ConfusionCell {
                    expected: expected.clone(),
                    chosen: chosen.clone(),
                    count,
                })
                .collect(),
            tool_accuracy: tool_accuracy(&self.confusion, conf),
            unstable_cases: Vec::new(),
            arg_failures: arg_failure_summary(&self.arg_failures, conf),
            warnings: Vec::new(),
        };
        summary.unstable_cases = unstable_cases(&summary.cases);
        summary.warnings = arm_warnings(&summary, conf, precision);
        summary
    }
}

/// Folds `TrialRecord`s into counters per arm and case; memory is flat in the number of
/// trials. An observer of the run, or fed from a `results.jsonl` by `summary::reaggregate`.
#[derive(Default)]
pub struct Aggregator {
    arms: BTreeMap<ArmId, ArmAgg>,
    /// Scenario records are judged on their trajectory and aggregated apart: they carry no
    /// single-call score and must not move a dataset's rates.
    scenarios: super::scenario::ScenarioAggregator,
    /// Attacked scenario trials by unit, and clean scenario trials for utility (`run
    /// --attacks`): attacked units are kept out of the scenario figures, which stay the clean
    /// scenarios' own.
    security: super::security::SecurityAggregator,
    /// Cost of every record, scenarios included.
    cost: BTreeMap<ArmId, ArmCostAgg>,
    /// Trials that finished after a sequential test decided their case: paid for, not counted.
    after_decision: u64,
}

impl Aggregator {
    pub fn new() -> Self {
        Aggregator::default()
    }

    /// Counts one finished trial.
    pub fn add(&mut self, record: &TrialRecord) {
        if !self.cost.contains_key(&record.arm) {
            self.cost.insert(record.arm.clone(), ArmCostAgg::default());
        }
        if let Some(c) = self.cost.get_mut(&record.arm) {
            c.add(record);
        }
        // In flight when its case was decided: counting it would make the rates depend on
        // timing (how many trials happened to be running), not on the decided trials.
        if record.after_decision {
            self.after_decision += 1;
            return;
        }
        if record.trajectory.is_some() {
            self.security.add(record);
            if record.attack.is_none() {
                self.scenarios.add(record);
            }
            return;
        }
        if !self.arms.contains_key(&record.arm) {
            self.arms.insert(record.arm.clone(), ArmAgg::new());
        }
        if let Some(arm) = self.arms.get_mut(&record.arm) {
            arm.add(record);
        }
    }

    /// The latency distributions a latency gate reads (per arm and per expected tool), as
    /// they stand: call before [`Aggregator::finish`].
    pub fn latency_distributions(&self) -> LatencyDistributions {
        LatencyDistributions {
            arms: self
                .arms
                .iter()
                .map(|(id, agg)| {
                    (
                        id.clone(),
                        ArmLatencyDistribution {
                            arm: agg.latency.distribution(),
                            tools: agg
                                .tool_latency
                                .iter()
                                .map(|(tool, l)| (tool.clone(), l.distribution()))
                                .collect(),
                        },
                    )
                })
                .collect(),
        }
    }

    /// Computes every rate, interval and warning.
    pub fn finish(
        self,
        run: RunInfo,
        totals: &RunTotals,
        confidence: f64,
        precision: f64,
    ) -> Summary {
        let arms: Vec<ArmSummary> = self
            .arms
            .into_iter()
            .map(|(id, agg)| agg.finish(id, confidence, precision))
            .collect();
        let provider_diffs = super::providers::provider_diffs(&arms, confidence);
        let scenarios = self.scenarios.finish(confidence, precision);
        let security = self.security.finish(confidence);
        let cost = cost_summary(self.cost);
        let mut warnings = settings_not_sent(&run);
        if totals.interrupted {
            warnings.push(Warning::RunInterrupted {
                completed: totals.completed_trials,
                planned: totals.planned_trials,
            });
        } else if totals.unaccounted() > 0 {
            warnings.push(Warning::TrialsUnaccounted {
                missing: totals.unaccounted(),
                planned: totals.planned_trials,
                reasons: totals.failures.clone(),
            });
        }
        if self.after_decision > 0 {
            warnings.push(Warning::TrialsAfterDecision {
                trials: self.after_decision,
            });
        }
        for arm in &cost.arms {
            if let Some(beyond) = arm.figures.billed_beyond_worst_case {
                warnings.push(Warning::BilledBeyondWorstCase {
                    arm: arm.arm.clone(),
                    trials: beyond.trials,
                    usd: beyond.usd,
                });
            }
        }
        Summary {
            run,
            planned_trials: totals.planned_trials,
            completed_trials: totals.completed_trials,
            skipped_trials: totals.skipped_trials,
            interrupted: totals.interrupted,
            confidence,
            precision,
            arms,
            warnings,
            gate: None,
            comparison: None,
            scenarios,
            security,
            attack_comparison: None,
            scenario_drift: Vec::new(),
            provider_diffs,
            cost,
            budget: None,
            decision: None,
        }
    }
}

impl Observer for Aggregator {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<Control, Error> {
        if let RunEvent::Trial { record, .. } = event {
            self.add(record);
        }
        Ok(Control::Continue)
    }
}

/// The [`MAX_FAILURE_DETAILS`] most frequent details (or choices; ties by text), the rest under
/// "(other)".
fn most_frequent_failures(counted: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    let mut ranked: Vec<(&String, u64)> = counted
        .iter()
        .filter(|(k, _)| k.as_str() != "(other)")
        .map(|(k, &v)| (k, v))
        .collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    let mut out: BTreeMap<String, u64> = ranked
        .iter()
        .take(MAX_FAILURE_DETAILS)
        .map(|(k, v)| ((*k).clone(), *v))
        .collect();
    let other: u64 = ranked
        .iter()
        .skip(MAX_FAILURE_DETAILS)
        .map(|(_, v)| v)
        .sum::<u64>()
        + counted.get("(other)").copied().unwrap_or(0);
    if other > 0 {
        out.insert("(other)".to_owned(), other);
    }
    out
}

/// Every case's rates, in dataset and case order, with its expected tool and counters for
/// the groups built from them.
fn case_summaries(
    by_dataset: BTreeMap<String, BTreeMap<String, CaseAgg>>,
    conf: f64,
) -> (Vec<CaseSummary>, Vec<String>, Vec<CaseCounts>) {
    let mut infos = Vec::new();
    let mut counts = Vec::new();
    let mut cases = Vec::new();
    for (dataset, by_id) in by_dataset {
        for (case_id, agg) in by_id {
            let c = &agg.counts;
            cases.push(CaseSummary {
                dataset: dataset.clone(),
                case_id,
                expected: agg.expected.clone(),
                tags: agg.tags,
                scored_trials: c.scored,
                infra_errors: c.errors,
                metrics: PerMetric::from_fn(|m| rate(c.metrics[m], conf, None)),
                failures: most_frequent_failures(&c.failures),
                chosen: most_frequent_failures(&c.chosen),
            });
            infos.push(agg.expected);
            counts.push(agg.counts);
        }
    }
    (cases, infos, counts)
}

fn token_summary(input: u64, output: u64, with_usage: u64) -> TokenSummary {
    let mean = |total: u64| (with_usage > 0).then(|| total as f64 / with_usage as f64);
    TokenSummary {
        input_total: input,
        output_total: output,
        trials_with_usage: with_usage,
        input_mean: mean(input),
        output_mean: mean(output),
    }
}

/// Cases right sometimes and wrong sometimes: a pass interval inside [`super::UNSTABLE_BAND`].
fn unstable_cases(cases: &[CaseSummary]) -> Vec<super::UnstableCase> {
    cases
        .iter()
        .filter(|c| {
            c.metrics[Metric::Pass]
                .interval
                .is_some_and(|iv| iv.lo > super::UNSTABLE_BAND.0 && iv.hi < super::UNSTABLE_BAND.1)
        })
        .map(|c| super::UnstableCase {
            dataset: c.dataset.clone(),
            case_id: c.case_id.clone(),
            pass: c.metrics[Metric::Pass].clone(),
        })
        .collect()
}

/// Precision and recall of every tool (and of "no call") from the confusion counts: recall
/// falls when a description drifts from how users ask, precision when it over-promises.
fn tool_accuracy(confusion: &BTreeMap<(String, String), u64>, conf: f64) -> Vec<ToolAccuracy> {
    let mut expected: BTreeMap<&str, u64> = BTreeMap::new();
    let mut chosen: BTreeMap<&str, u64> = BTreeMap::new();
    let mut right: BTreeMap<&str, u64> = BTreeMap::new();
    for ((e, c), &n) in confusion {
        *expected.entry(e).or_default() += n;
        *chosen.entry(c).or_default() += n;
        if e == c {
            *right.entry(e).or_default() += n;
        }
    }
    let tools: std::collections::BTreeSet<&str> = expected
        .keys()
        .chain(chosen.keys())
        .copied()
        .filter(|t| !t.contains(" + ") && *t != "(other)")
        .collect();
    tools
        .into_iter()
        .map(|t| {
            let hits = right.get(t).copied().unwrap_or(0);
            ToolAccuracy {
                tool: t.to_owned(),
                precision: rate(
                    Count {
                        x: hits,
                        n: chosen.get(t).copied().unwrap_or(0),
                    },
                    conf,
                    None,
                ),
                recall: rate(
                    Count {
                        x: hits,
                        n: expected.get(t).copied().unwrap_or(0),
                    },
                    conf,
                    None,
                ),
            }
        })
        .collect()
}

/// The arm's taxonomy and each expected tool's.
fn arg_failure_summary(
    by_tool: &BTreeMap<String, ArgFailureCounts>,
    conf: f64,
) -> ArgFailureSummary {
    let mut all = ArgFailureCounts::default();
    for c in by_tool.values() {
        all.merge(c);
    }
    ArgFailureSummary {
        trials: all.trials,
        unclassified_trials: all.unclassified,
        kinds: all.shares(conf),
        by_tool: by_tool
            .iter()
            .filter(|(_, c)| c.trials > 0)
            .map(|(tool, c)| ToolArgFailures {
                tool: tool.clone(),
                trials: c.trials,
                unclassified_trials: c.unclassified,
                kinds: c.shares(conf),
            })
            .collect(),
    }
}

fn rate(c: Count, conf: f64, case_level: Option<stats::ClusteredEstimate>) -> RateStat {
    RateStat {
        x: c.x,
        n: c.n,
        rate: (c.n > 0).then(|| c.x as f64 / c.n as f64),
        interval: stats::rate_interval(c.x, c.n, conf),
        case_level,
    }
}

/// Pooled counts plus the case-level (clustered) estimate over the cases in `idx`.
fn group(name: &str, idx: &[usize], counts: &[CaseCounts], conf: f64) -> GroupSummary {
    let metric = |metric: Metric| {
        let mut pooled = Count::default();
        let mut case_counts = Vec::with_capacity(idx.len());
        for &i in idx {
            let c = counts[i].metrics[metric];
            pooled.x += c.x;
            pooled.n += c.n;
            case_counts.push((c.x, c.n));
        }
        rate(pooled, conf, stats::suite_interval(&case_counts, conf))
    };
    GroupSummary {
        name: name.to_owned(),
        cases: idx.len(),
        scored_trials: idx.iter().map(|&i| counts[i].scored).sum(),
        infra_errors: idx.iter().map(|&i| counts[i].errors).sum(),
        metrics: PerMetric::from_fn(metric),
    }
}

/// Cases below which a suite-level interval is not to be trusted (stats.md §3.3).
const MIN_CASES_FOR_SUITE_CLAIM: usize = 30;

/// A warning for each configured setting an arm did not send (its model refuses it), from the
/// run header, so `report` on the folder says it as the run did. Once per provider and model:
/// the arms of several catalog variants share their settings.
fn settings_not_sent(run: &RunInfo) -> Vec<Warning> {
    let mut warnings: Vec<Warning> = Vec::new();
    for arm in &run.arms {
        for o in &arm.identity.omitted {
            let warning = Warning::SettingNotSent {
                provider: arm.identity.provider.clone(),
                model: arm.identity.model.clone(),
                field: o.field.clone(),
                configured: o.configured.clone(),
                reason: o.reason.clone(),
            };
            if !warnings.contains(&warning) {
                warnings.push(warning);
            }
        }
    }
    warnings
}

fn arm_warnings(s: &ArmSummary, conf: f64, e: f64) -> Vec<Warning> {
    let mut w = Vec::new();
    if s.infra.errors > 0 {
        w.push(Warning::InfraErrors {
            errors: s.infra.errors,
        });
    }
    if s.suite.cases < MIN_CASES_FOR_SUITE_CLAIM {
        w.push(Warning::FewCases {
            cases: s.suite.cases,
            min_cases: MIN_CASES_FOR_SUITE_CLAIM,
        });
    }
    for metric in Metric::ALL {
        let pick = |m: &Metrics| -> RateStat { m[metric].clone() };
        // Per case: how many trials per case would bring each interval within ±precision.
        let mut wide = 0;
        let mut with_data = 0;
        let mut needed: u64 = 0;
        for c in &s.cases {
            let r = pick(&c.metrics);
            let (Some(p), Some(iv)) = (r.rate, r.interval) else {
                continue;
            };
            with_data += 1;
            if iv.half_width() > e {
                wide += 1;
                let mut n = stats::wilson_trials_for_half_width(p, e, conf).unwrap_or(0);
                // Schema validity is judged on trials that made a call: convert the calls
                // needed into trials at the case's observed call rate.
                if metric == Metric::SchemaValid && r.n > 0 {
                    n = (n as f64 * c.scored_trials as f64 / r.n as f64).ceil() as u64;
                }
                needed = needed.max(n);
            }
        }
        if wide > 0 {
            w.push(Warning::CasesImprecise {
                metric,
                wide_cases: wide,
                cases_with_data: with_data,
                confidence: conf,
                precision: e,
                trials_per_case_needed: needed,
            });
        }
        // Suite: the spread between cases shrinks with more cases, not more trials.
        if let Some(cl) = pick(&s.suite.metrics).case_level
            && cl.t_half_width > e
            && let Some(cases_needed) = stats::cases_for_half_width(&cl, e, conf)
        {
            w.push(Warning::SuiteImprecise {
                metric,
                half_width: cl.t_half_width,
                clipped: cl.clipped,
                precision: e,
                cases_needed,
            });
        }
    }
    let answered = s.latency_ms.n;
    if answered > 0 && s.latency_ms.p99.as_ref().is_some_and(|p| p.hi.is_none()) {
        w.push(Warning::LatencyP99Unbounded {
            answered,
            min_answered: stats::min_trials_for_upper_bound(0.99, conf).unwrap_or(0),
            confidence: conf,
        });
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolscore_stats::Percentile;

    fn record(latency_ms: f64, outcome: Outcome) -> TrialRecord {
        let mut r = TrialRecord::for_test("c", outcome, latency_ms);
        r.usage.input_tokens = Some(10);
        r
    }

    fn run_info() -> RunInfo {
        RunInfo::for_test(100)
    }

    fn totals(planned: u64, completed: u64) -> RunTotals {
        RunTotals {
            planned_trials: planned,
            completed_trials: completed,
            skipped_trials: 0,
            budget_not_run: 0,
            interrupted: false,
            failures: Vec::new(),
        }
    }

    #[test]
    fn latency_percentiles_are_nearest_rank_with_order_statistic_bounds() {
        let mut agg = Aggregator::new();
        // Arrival order must not matter.
        for ms in (1..=100).rev() {
            agg.add(&record(f64::from(ms), Outcome::Pass));
        }
        agg.add(&record(5000.0, Outcome::Error));
        let s = agg.finish(run_info(), &totals(101, 101), 0.95, 0.05);
        let arm = &s.arms[0];
        let l = &arm.latency_ms;
        assert_eq!(l.n, 100, "errors are not part of the latency distribution");
        assert_eq!(l.mean, Some(50.5));
        // n = 100: ranks from stats.md §7.3 — p50 [40, 61], p95 [90, 100], p99 [97, unbounded].
        // Values are within the histogram's 0.1% quantisation of the exact order statistics.
        let close = |got: f64, want: f64| (got - want).abs() <= want * 1e-3;
        let check = |p: &Option<Percentile>, value: f64, lo: f64, hi: Option<f64>| {
            let p = p.as_ref().expect("percentile");
            assert!(close(p.value, value) && close(p.lo.unwrap(), lo), "{p:?}");
            match (p.hi, hi) {
                (Some(got), Some(want)) => assert!(close(got, want), "{p:?}"),
                (got, want) => assert_eq!(got, want),
            }
        };
        check(&l.p50, 50.0, 40.0, Some(61.0));
        check(&l.p95, 95.0, 90.0, Some(100.0));
        check(&l.p99, 99.0, 97.0, None);
        assert_eq!(arm.tokens.input_total, 1000);
        assert_eq!(arm.tokens.trials_with_usage, 100);
        assert_eq!(arm.infra.by_class.get("unknown"), Some(&1));
        assert!(arm.warnings.contains(&Warning::LatencyP99Unbounded {
            answered: 100,
            min_answered: 368,
            confidence: 0.95
        }));
    }

    #[test]
    fn the_p99_threshold_follows_the_confidence() {
        let mut agg = Aggregator::new();
        for ms in 1..=400 {
            agg.add(&record(f64::from(ms), Outcome::Pass));
        }
        // 400 answered trials bound p99 at 95% (368 needed) but not at 99% (528 needed).
        let at95 = Aggregator::finish(
            std::mem::take(&mut agg),
            run_info(),
            &totals(400, 400),
            0.95,
            0.05,
        );
        assert!(at95.arms[0].latency_ms.p99.as_ref().unwrap().hi.is_some());
        let mut agg = Aggregator::new();
        for ms in 1..=400 {
            agg.add(&record(f64::from(ms), Outcome::Pass));
        }
        let at99 = agg.finish(run_info(), &totals(400, 400), 0.99, 0.05);
        assert!(
            at99.arms[0]
                .warnings
                .contains(&Warning::LatencyP99Unbounded {
                    answered: 400,
                    min_answered: 528,
                    confidence: 0.99
                })
        );
    }

    fn scored(selection_ok: bool, called: bool) -> TrialRecord {
        let mut r = record(10.0, Outcome::Pass);
        r.score = Some(toolscore_core::TrialScore {
            selection_ok,
            args_ok: None,
            schema_ok: called.then_some(true),
            passed: selection_ok,
            failure: None,
            detail: None,
            schema_violations: Vec::new(),
            arg_failures: None,
        });
        if !selection_ok {
            r.outcome = Outcome::Fail;
        }
        r
    }

    #[test]
    fn a_percentile_keeps_its_value_when_its_ends_cannot_be_bounded() {
        let mut agg = Aggregator::new();
        for ms in [30.0, 10.0, 20.0] {
            agg.add(&record(ms, Outcome::Pass));
        }
        let s = agg.finish(run_info(), &totals(3, 3), 0.95, 0.05);
        let l = &s.arms[0].latency_ms;
        // Three answers bound neither end of the median at 95%, but the median is 20 ms.
        let p50 = l.p50.as_ref().expect("value reported");
        assert!((p50.value - 20.0).abs() < 0.05, "{p50:?}");
        assert_eq!((p50.lo, p50.hi), (None, None));
        let json = serde_json::to_value(p50).unwrap();
        assert!(json["lo"].is_null() && json["hi"].is_null(), "{json}");
        assert!(l.p99.is_some());
    }

    #[test]
    fn schema_advice_counts_trials_not_calls() {
        // 40 trials, of which 4 made a call (all schema-valid): the per-case interval of
        // schema validity rests on 4 calls, so reaching ±0.05 takes ten times more trials
        // than calls.
        let mut agg = Aggregator::new();
        for i in 0..40 {
            agg.add(&scored(i % 2 == 0, i % 10 == 0));
        }
        let s = agg.finish(run_info(), &totals(40, 40), 0.95, 0.05);
        let calls_needed = stats::wilson_trials_for_half_width(1.0, 0.05, 0.95).unwrap();
        let w = s.arms[0]
            .warnings
            .iter()
            .find_map(|w| match w {
                Warning::CasesImprecise {
                    metric: Metric::SchemaValid,
                    trials_per_case_needed,
                    ..
                } => Some(*trials_per_case_needed),
                _ => None,
            })
            .expect("schema warning");
        assert_eq!(w, calls_needed * 10);
    }

    #[test]
    fn suite_warning_quotes_the_unclipped_half_width() {
        // Five cases, four always right and one always wrong: the t interval reaches past 1.
        let mut agg = Aggregator::new();
        for case in 0..5 {
            for _ in 0..20 {
                let mut r = scored(case != 0, true);
                r.case_id = format!("c{case}");
                agg.add(&r);
            }
        }
        let s = agg.finish(run_info(), &totals(100, 100), 0.95, 0.05);
        let cl = s.arms[0].suite.metrics[Metric::Selection]
            .case_level
            .expect("case level");
        assert!(cl.clipped && cl.interval.hi == 1.0, "{cl:?}");
        let (half, clipped) = s.arms[0]
            .warnings
            .iter()
            .find_map(|w| match w {
                Warning::SuiteImprecise {
                    metric: Metric::Selection,
                    half_width,
                    clipped,
                    ..
                } => Some((*half_width, *clipped)),
                _ => None,
            })
            .expect("suite warning");
        assert!(clipped);
        assert!((half - cl.t_half_width).abs() < 1e-12);
        assert!(
            half > cl.interval.half_width(),
            "{half} vs {:?}",
            cl.interval
        );
    }

    #[test]
    fn cases_passed_sometimes_and_failed_sometimes_are_listed_as_unstable() {
        let mut agg = Aggregator::new();
        for (case, right_of_20) in [("steady", 20), ("coin", 10), ("mostly", 19)] {
            for i in 0..20 {
                let mut r = scored(i < right_of_20, true);
                r.case_id = case.into();
                agg.add(&r);
            }
        }
        let s = agg.finish(run_info(), &totals(60, 60), 0.95, 0.05);
        let unstable: Vec<&str> = s.arms[0]
            .unstable_cases
            .iter()
            .map(|u| u.case_id.as_str())
            .collect();
        // 10/20 has [0.30, 0.70]; 19/20's interval reaches past 0.9 and 20/20's is [0.84, 1].
        assert_eq!(unstable, ["coin"]);
    }

    fn chose(expected: &str, calls: &[&str], ok: bool) -> TrialRecord {
        let mut r = scored(ok, !calls.is_empty());
        r.case_id = format!("{expected}-case");
        r.expected = expected.into();
        r.turns = vec![toolscore_core::ModelTurn {
            tool_calls: calls
                .iter()
                .map(|n| toolscore_core::ToolCall {
                    id: None,
                    name: (*n).into(),
                    arguments: serde_json::json!({}),
                    unparsed_arguments: None,
                    thought_signature: None,
                })
                .collect(),
            ..Default::default()
        }];
        r
    }

    #[test]
    fn confusion_counts_what_selection_judged_and_recall_equals_selection() {
        let mut agg = Aggregator::new();
        for _ in 0..3 {
            agg.add(&chose("a", &["a", "b"], true)); // first call decides: a
        }
        agg.add(&chose("a", &["b"], false));
        agg.add(&chose("a", &[], false));
        agg.add(&chose("(no call)", &["a"], false));
        agg.add(&chose("a + b", &["b", "a"], true));
        let s = agg.finish(run_info(), &totals(7, 7), 0.95, 0.05);
        let arm = &s.arms[0];
        let cell = |e: &str, c: &str| {
            arm.confusion
                .iter()
                .find(|x| x.expected == e && x.chosen == c)
                .map_or(0, |x| x.count)
        };
        assert_eq!(cell("a", "a"), 3);
        assert_eq!(cell("a", "b"), 1);
        assert_eq!(cell("a", "(no call)"), 1);
        assert_eq!(cell("(no call)", "a"), 1);
        assert_eq!(cell("a + b", "a + b"), 1);
        let a = arm.tool_accuracy.iter().find(|t| t.tool == "a").unwrap();
        assert_eq!((a.recall.x, a.recall.n), (3, 5));
        assert_eq!((a.precision.x, a.precision.n), (3, 4));
        let tool_a = arm.tools.iter().find(|t| t.name == "a").unwrap();
        assert_eq!(
            (a.recall.x, a.recall.n),
            (
                tool_a.metrics[Metric::Selection].x,
                tool_a.metrics[Metric::Selection].n
            )
        );
    }

    #[test]
    fn argument_failures_count_once_per_kind_per_trial_by_expected_tool() {
        use toolscore_core::{ArgFailure, ArgFailureKind::*};
        let finding = |kind, path: &str| ArgFailure {
            kind,
            path: path.into(),
        };
        let trial = |expected: &str, found: Option<Vec<ArgFailure>>, passed: bool| {
            let mut r = scored(true, true);
            r.expected = expected.into();
            r.case_id = format!("{expected}-case");
            let s = r.score.as_mut().unwrap();
            s.passed = passed;
            s.arg_failures = found;
            r
        };
        let mut agg = Aggregator::new();
        // Two wrong values in one trial count once.
        agg.add(&trial(
            "a",
            Some(vec![finding(WrongValue, "x"), finding(WrongValue, "y")]),
            false,
        ));
        agg.add(&trial(
            "a",
            Some(vec![finding(MissingRequired, "z"), finding(WrongType, "w")]),
            false,
        ));
        agg.add(&trial("a", None, true));
        agg.add(&trial("b", Some(vec![finding(InvalidJson, "")]), false));
        // Scored before the taxonomy: failing, unclassified, in no count.
        agg.add(&trial("b", None, false));
        // The wrong tool: outside the taxonomy.
        let mut wrong = chose("b", &["a"], false);
        wrong.score.as_mut().unwrap().selection_ok = false;
        agg.add(&wrong);
        let s = agg.finish(run_info(), &totals(6, 6), 0.95, 0.05);
        let t = &s.arms[0].arg_failures;
        assert_eq!((t.trials, t.unclassified_trials), (4, 1));
        let count = |kinds: &[ArgFailureShare], kind| {
            let k = kinds.iter().find(|k| k.kind == kind).unwrap();
            (k.share.x, k.share.n)
        };
        assert_eq!(count(&t.kinds, WrongValue), (1, 4));
        assert_eq!(count(&t.kinds, InvalidJson), (1, 4));
        assert_eq!(count(&t.kinds, ExtraParameter), (0, 4));
        let a = t.by_tool.iter().find(|b| b.tool == "a").unwrap();
        assert_eq!(a.trials, 3);
        assert_eq!(count(&a.kinds, MissingRequired), (1, 3));
        let iv = t.kinds[0].share.interval.unwrap();
        assert_eq!(Some(iv), stats::rate_interval(1, 4, 0.95));
        let b = t.by_tool.iter().find(|b| b.tool == "b").unwrap();
        assert_eq!((b.trials, b.unclassified_trials), (1, 1));
    }

    #[test]
    fn records_of_two_arms_aggregate_apart_whatever_their_order() {
        let mut a = record(10.0, Outcome::Pass);
        a.score = Some(toolscore_core::TrialScore {
            selection_ok: true,
            args_ok: None,
            schema_ok: Some(true),
            passed: true,
            failure: None,
            detail: None,
            schema_violations: Vec::new(),
            arg_failures: None,
        });
        let mut b = a.clone();
        b.arm.provider = "q".into();
        b.outcome = Outcome::Fail;
        b.score.as_mut().unwrap().selection_ok = false;
        b.score.as_mut().unwrap().passed = false;
        let mut forward = Aggregator::new();
        let mut backward = Aggregator::new();
        let records = [a.clone(), b.clone(), a, b];
        for r in &records {
            forward.add(r);
        }
        for r in records.iter().rev() {
            backward.add(r);
        }
        let f = forward.finish(run_info(), &totals(4, 4), 0.95, 0.05);
        let g = backward.finish(run_info(), &totals(4, 4), 0.95, 0.05);
        assert_eq!(f, g);
        assert_eq!(f.arms.len(), 2);
        assert_eq!(f.arms[0].arm.provider, "p");
        assert_eq!(f.arms[0].suite.metrics[Metric::Pass].x, 2);
        assert_eq!(f.arms[1].suite.metrics[Metric::Pass].x, 0);
        assert_eq!(f.arms[1].suite.metrics[Metric::Pass].n, 2);
    }

    /// A scored trial of `provider` on `case` whose first call is `chosen` (None: no call).
    fn chose_as(provider: &str, case: &str, chosen: Option<&str>) -> TrialRecord {
        let ok = chosen == Some("t");
        let mut r = scored(ok, chosen.is_some());
        r.case_id = case.into();
        r.arm.provider = provider.into();
        r.turns = vec![toolscore_core::ModelTurn {
            tool_calls: chosen
                .map(|name| toolscore_core::ToolCall {
                    id: None,
                    name: name.into(),
                    arguments: serde_json::json!({}),
                    unparsed_arguments: None,
                    thought_signature: None,
                })
                .into_iter()
                .collect(),
            text: None,
            usage: Default::default(),
            finish: None,
        }];
        r
    }

    #[test]
    fn providers_are_compared_case_by_case_on_majority_choice_and_pass_rate() {
        let mut agg = Aggregator::new();
        for _ in 0..10 {
            agg.add(&chose_as("p1", "a", Some("t")));
            agg.add(&chose_as("p2", "a", Some("t")));
            agg.add(&chose_as("p3", "a", Some("wrong_tool")));
        }
        for i in 0..10 {
            let pick = if i % 2 == 0 { Some("t") } else { None };
            for p in ["p1", "p2", "p3"] {
                agg.add(&chose_as(p, "b", pick));
            }
        }
        let s = agg.finish(run_info(), &totals(60, 60), 0.95, 0.05);
        assert_eq!(s.provider_diffs.len(), 1);
        let d = &s.provider_diffs[0];
        let names: Vec<&str> = d.arms.iter().map(|a| a.provider.as_str()).collect();
        assert_eq!(names, ["p1", "p2", "p3"]);
        assert_eq!(d.cases_compared, 2);
        // Case b is split 5/5 under every provider: no majority anywhere, so no difference.
        assert_eq!(d.choice_differs.len(), 1, "{d:?}");
        let c = &d.choice_differs[0];
        assert_eq!(c.case_id, "a");
        assert_eq!(
            (
                c.choices[2].top.as_str(),
                c.choices[2].count,
                c.choices[2].scored
            ),
            ("wrong_tool", 10, 10)
        );
        assert!(c.choices.iter().all(|ch| ch.majority));
        // Three pairs on each of two cases; only p3 against p1 and p2 on case a differ.
        assert_eq!(d.pass_comparisons, 6);
        assert_eq!(d.pass_differs.len(), 1);
        let p = &d.pass_differs[0];
        assert_eq!(p.pass, vec![(10, 10), (10, 10), (0, 10)]);
        let pairs: Vec<(usize, usize)> = p.pairs.iter().map(|q| (q.a, q.b)).collect();
        assert_eq!(pairs, [(0, 2), (1, 2)]);
        // p3 − p1 = −1 with Newcombe's interval (stats.md §3.1), which excludes 0.
        let q = &p.pairs[0];
        assert_eq!(q.difference, -1.0);
        let iv = stats::newcombe_interval(0, 10, 10, 10, 0.95).unwrap();
        assert_eq!((q.lo, q.hi), (iv.lo, iv.hi));
        assert!(q.hi < 0.0);
        // The chosen distribution is in the case summary, so `report` re-derives the same.
        let case_a = s.arms[2].cases.iter().find(|c| c.case_id == "a").unwrap();
        assert_eq!(case_a.chosen.get("wrong_tool"), Some(&10));
        // How the terminal words these diffs: `report`'s providers tests.
    }

    #[test]
    fn one_provider_or_arms_of_different_variants_make_no_provider_diff() {
        let mut agg = Aggregator::new();
        agg.add(&chose_as("p1", "a", Some("t")));
        let mut other_variant = chose_as("p2", "a", Some("t"));
        other_variant.arm.variant = "terse".into();
        agg.add(&other_variant);
        let s = agg.finish(run_info(), &totals(2, 2), 0.95, 0.05);
        assert!(s.provider_diffs.is_empty());
    }

    #[test]
    fn batch_answers_count_in_rates_but_not_in_latency() {
        let mut agg = Aggregator::new();
        let online = scored(true, true);
        let mut batched = scored(true, true);
        batched.trial_index = 1;
        batched.latency_ms = 0.0;
        batched.batch = Some(toolscore_core::BatchRef {
            api: "anthropic".into(),
            id: "msgbatch_01".into(),
        });
        agg.add(&online);
        agg.add(&batched);
        let summary = agg.finish(run_info(), &totals(2, 2), 0.95, 0.05);
        let arm = &summary.arms[0];
        assert_eq!(arm.latency_ms.n, 1);
        assert_eq!(arm.cases[0].metrics[Metric::Pass].n, 2);
    }
}
