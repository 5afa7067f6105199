//! Incremental aggregation: one `add` per finished trial, `finish` once at the end.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::{
    CaseSummary, GroupSummary, InfraSummary, LatencySummary, Metrics, Percentile, RateStat,
    Summary, TokenSummary,
};
use crate::runner::{Outcome, TrialRecord};
use crate::stats;

/// What was run, for the report header and for telling runs apart later.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInfo {
    pub run_id: String,
    pub toolscore_version: String,
    pub started_at: String,
    pub finished_at: String,
    pub provider: String,
    pub provider_kind: String,
    pub model: String,
    pub base_url: String,
    pub trials_per_case: u32,
    pub concurrency: usize,
    pub temperature: Option<f64>,
    /// Set when responses were replayed from a cassette instead of fetched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayInfo>,
    /// The cassette this run recorded, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_to: Option<String>,
    pub datasets: Vec<DatasetInfo>,
}

/// Provenance of replayed responses, shown at the top of every report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReplayInfo {
    pub cassette: String,
    pub recorded_at: String,
    pub model: String,
    pub base_url: String,
    pub note: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DatasetInfo {
    pub name: String,
    pub catalog_source: String,
    pub catalog_fingerprint: String,
    pub cases: usize,
}

/// What the aggregator needs to know about each case, in plan order.
#[derive(Debug, Clone)]
pub struct CaseInfo {
    pub dataset: String,
    pub case_id: String,
    pub expected: String,
    pub tags: Vec<String>,
}

/// Distinct failure details kept per case; the rest are counted under "(other)" so memory
/// stays bounded whatever the model produces.
const MAX_FAILURE_DETAILS: usize = 8;
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
    selection: Count,
    args: Count,
    schema: Count,
    pass: Count,
    failures: BTreeMap<String, u64>,
}

/// Folds `TrialRecord`s into counters; memory is flat in the number of trials.
pub struct Aggregator {
    cases: Vec<CaseInfo>,
    counts: Vec<CaseCounts>,
    latency_us: Histogram<u64>,
    /// Integer microseconds, so the mean does not depend on the order trials finish in.
    latency_sum_us: u64,
    input_tokens: u64,
    output_tokens: u64,
    with_usage: u64,
    completed: u64,
    retried: u64,
    errors_by_class: BTreeMap<String, u64>,
    error_examples: Vec<String>,
    schema_violations: BTreeMap<String, u64>,
}

impl Aggregator {
    pub fn new(cases: Vec<CaseInfo>) -> Self {
        let counts = vec![CaseCounts::default(); cases.len()];
        // 1 µs to 1 hour at 3 significant figures: at most 0.1% quantisation (stats.md §7.2).
        let latency_us = Histogram::new_with_bounds(1, 3_600_000_000, 3)
            .expect("static histogram bounds are valid");
        Aggregator {
            cases,
            counts,
            latency_us,
            latency_sum_us: 0,
            input_tokens: 0,
            output_tokens: 0,
            with_usage: 0,
            completed: 0,
            retried: 0,
            errors_by_class: BTreeMap::new(),
            error_examples: Vec::new(),
            schema_violations: BTreeMap::new(),
        }
    }

    /// Counts one finished trial of the case at `case_index` (plan order).
    pub fn add(&mut self, case_index: usize, record: &TrialRecord) {
        let Some(c) = self.counts.get_mut(case_index) else {
            return;
        };
        self.completed += 1;
        if record.attempts > 1 {
            self.retried += 1;
        }
        if record.outcome == Outcome::Error {
            c.errors += 1;
            let class = record
                .error_class
                .map_or_else(|| "unknown".to_owned(), class_name);
            *self.errors_by_class.entry(class).or_default() += 1;
            if let Some(msg) = &record.error
                && self.error_examples.len() < MAX_ERROR_EXAMPLES
                && !self.error_examples.contains(msg)
            {
                self.error_examples.push(msg.clone());
            }
            return;
        }
        if let Some(score) = &record.score {
            c.scored += 1;
            c.selection.add(Some(score.selection_ok));
            c.args.add(score.args_ok);
            c.schema.add(score.schema_ok);
            c.pass.add(Some(score.passed));
            if let Some(detail) = score.detail.as_ref().filter(|_| !score.passed) {
                let key =
                    if c.failures.len() < MAX_FAILURE_DETAILS || c.failures.contains_key(detail) {
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
        let usage = record.usage;
        if usage.input_tokens.is_some() || usage.output_tokens.is_some() {
            self.with_usage += 1;
            self.input_tokens += usage.input_tokens.unwrap_or(0);
            self.output_tokens += usage.output_tokens.unwrap_or(0);
        }
        let us = (record.latency_ms * 1000.0).round().max(1.0) as u64;
        self.latency_us.saturating_record(us);
        self.latency_sum_us += us;
    }

    /// Computes every rate, interval and warning.
    pub fn finish(
        self,
        run: RunInfo,
        planned_trials: u64,
        interrupted: bool,
        confidence: f64,
        precision: f64,
    ) -> Summary {
        let conf = confidence;
        let mut cases = Vec::with_capacity(self.cases.len());
        for (info, c) in self.cases.iter().zip(&self.counts) {
            cases.push(CaseSummary {
                dataset: info.dataset.clone(),
                case_id: info.case_id.clone(),
                expected: info.expected.clone(),
                tags: info.tags.clone(),
                scored_trials: c.scored,
                infra_errors: c.errors,
                metrics: Metrics {
                    selection: rate(c.selection, conf, None),
                    args_exact: rate(c.args, conf, None),
                    schema_valid: rate(c.schema, conf, None),
                    pass: rate(c.pass, conf, None),
                },
                failures: c.failures.clone(),
            });
        }
        let all: Vec<usize> = (0..self.cases.len()).collect();
        let suite = group("suite", &all, &self.counts, conf);
        let mut by_tool: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, info) in self.cases.iter().enumerate() {
            by_tool.entry(info.expected.as_str()).or_default().push(i);
        }
        let tools = by_tool
            .iter()
            .map(|(name, idx)| group(name, idx, &self.counts, conf))
            .collect();
        let latency_ms = latency_summary(&self.latency_us, self.latency_sum_us, conf);
        let answered = self.latency_us.len();
        let tokens = TokenSummary {
            input_total: self.input_tokens,
            output_total: self.output_tokens,
            trials_with_usage: self.with_usage,
            input_mean: (self.with_usage > 0)
                .then(|| self.input_tokens as f64 / self.with_usage as f64),
            output_mean: (self.with_usage > 0)
                .then(|| self.output_tokens as f64 / self.with_usage as f64),
        };
        let errors: u64 = self.errors_by_class.values().sum();
        let infra = InfraSummary {
            errors,
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
        let mut summary = Summary {
            run,
            planned_trials,
            completed_trials: self.completed,
            interrupted,
            confidence,
            precision,
            suite,
            tools,
            cases,
            latency_ms,
            tokens,
            infra,
            schema_violations: self.schema_violations,
            warnings: Vec::new(),
        };
        summary.warnings = warnings(&summary, answered);
        summary
    }
}

/// The snake_case name an error class has in records.
pub fn class_name(class: crate::provider::ErrorClass) -> String {
    serde_json::to_value(class)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{class:?}"))
}

fn rate(c: Count, conf: f64, case_level: Option<stats::ClusteredEstimate>) -> RateStat {
    RateStat {
        x: c.x,
        n: c.n,
        rate: (c.n > 0).then(|| c.x as f64 / c.n as f64),
        interval: stats::wilson_interval(c.x, c.n, conf),
        case_level,
    }
}

/// Pooled counts plus the case-level (clustered) estimate over the cases in `idx`.
fn group(name: &str, idx: &[usize], counts: &[CaseCounts], conf: f64) -> GroupSummary {
    let metric = |pick: fn(&CaseCounts) -> Count| {
        let mut pooled = Count::default();
        let mut case_rates = Vec::with_capacity(idx.len());
        for &i in idx {
            let c = pick(&counts[i]);
            pooled.x += c.x;
            pooled.n += c.n;
            if c.n > 0 {
                case_rates.push(c.x as f64 / c.n as f64);
            }
        }
        rate(
            pooled,
            conf,
            stats::clustered_mean_interval(&case_rates, conf),
        )
    };
    GroupSummary {
        name: name.to_owned(),
        cases: idx.len(),
        scored_trials: idx.iter().map(|&i| counts[i].scored).sum(),
        infra_errors: idx.iter().map(|&i| counts[i].errors).sum(),
        metrics: Metrics {
            selection: metric(|c| c.selection),
            args_exact: metric(|c| c.args),
            schema_valid: metric(|c| c.schema),
            pass: metric(|c| c.pass),
        },
    }
}

/// The value at 1-based `rank` among the recorded latencies, in milliseconds.
fn value_at_rank(h: &Histogram<u64>, rank: u64) -> Option<f64> {
    let mut seen = 0;
    for v in h.iter_recorded() {
        seen += v.count_at_value();
        if seen >= rank {
            return Some(h.highest_equivalent(v.value_iterated_to()) as f64 / 1000.0);
        }
    }
    None
}

fn latency_summary(h: &Histogram<u64>, sum_us: u64, conf: f64) -> LatencySummary {
    let n = h.len();
    let pct = |q: f64| -> Option<Percentile> {
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n.max(1));
        let value = value_at_rank(h, rank)?;
        let (l, u) = stats::order_statistic_ci_ranks(n, q, conf)?;
        Some(Percentile {
            value,
            lo: value_at_rank(h, l.max(1))?,
            hi: u.and_then(|u| value_at_rank(h, u)),
        })
    };
    LatencySummary {
        n,
        mean: (n > 0).then(|| sum_us as f64 / n as f64 / 1000.0),
        p50: if n > 0 { pct(0.5) } else { None },
        p95: if n > 0 { pct(0.95) } else { None },
        p99: if n > 0 { pct(0.99) } else { None },
    }
}

/// Cases below which a suite-level interval is not to be trusted (stats.md §3.3).
const MIN_CASES_FOR_SUITE_CLAIM: usize = 30;

fn warnings(s: &Summary, answered: u64) -> Vec<String> {
    let mut w = Vec::new();
    let e = s.precision;
    let pct = |c: f64| format!("{:.0}%", c * 100.0);
    if s.interrupted {
        w.push(format!(
            "run interrupted: {} of {} planned trials completed; the figures cover only those",
            s.completed_trials, s.planned_trials
        ));
    }
    if s.infra.errors > 0 {
        w.push(format!(
            "{} trials ended in infrastructure errors; they are counted apart and not scored",
            s.infra.errors
        ));
    }
    if s.suite.cases < MIN_CASES_FOR_SUITE_CLAIM {
        w.push(format!(
            "only {} cases back the suite-level rates; case-level intervals need at least {MIN_CASES_FOR_SUITE_CLAIM} cases to be reliable, so treat suite figures as indicative",
            s.suite.cases
        ));
    }
    type Pick = fn(&Metrics) -> &RateStat;
    let metrics: [(&str, Pick); 4] = [
        ("selection", |m| &m.selection),
        ("args exact", |m| &m.args_exact),
        ("schema valid", |m| &m.schema_valid),
        ("pass", |m| &m.pass),
    ];
    for (label, pick) in metrics {
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
                needed = needed
                    .max(stats::wilson_trials_for_half_width(p, e, s.confidence).unwrap_or(0));
            }
        }
        if wide > 0 {
            w.push(format!(
                "{label}: {wide} of {with_data} cases have a {} interval wider than ±{e}; about {needed} trials per case would reach ±{e} at the observed rates",
                pct(s.confidence)
            ));
        }
        // Suite: the case-level interval shrinks with more cases, not more trials.
        if let Some(cl) = pick(&s.suite.metrics).case_level {
            let half = (cl.interval.hi - cl.interval.lo) / 2.0;
            if half > e {
                let z = stats::z_two_sided(s.confidence);
                let sd = cl.se * (cl.cases as f64).sqrt();
                let cases_needed = ((z * sd / e).powi(2)).ceil() as u64;
                w.push(format!(
                    "{label}: the suite's case-level interval is ±{half:.3}, wider than ±{e}; between-case spread dominates, so about {cases_needed} cases (not more trials) would be needed"
                ));
            }
        }
    }
    if answered > 0 && s.latency_ms.p99.as_ref().is_some_and(|p| p.hi.is_none()) {
        w.push(format!("latency p99 has no upper confidence bound with {answered} answered trials (needs at least 368 at 95%)"));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Usage;

    fn record(latency_ms: f64, outcome: Outcome) -> TrialRecord {
        TrialRecord {
            run_id: "r".into(),
            dataset: "d".into(),
            case_id: "c".into(),
            variant: "base".into(),
            provider: "p".into(),
            model: "m".into(),
            trial_index: 0,
            outcome,
            score: None,
            turns: Vec::new(),
            usage: Usage {
                input_tokens: Some(10),
                output_tokens: None,
            },
            latency_ms,
            attempts: 1,
            error_class: None,
            error: None,
            started_at: String::new(),
            request_hash: String::new(),
        }
    }

    fn run_info() -> RunInfo {
        RunInfo {
            run_id: "r".into(),
            toolscore_version: "0".into(),
            started_at: String::new(),
            finished_at: String::new(),
            provider: "p".into(),
            provider_kind: "openai-compat".into(),
            model: "m".into(),
            base_url: String::new(),
            trials_per_case: 100,
            concurrency: 1,
            temperature: None,
            replay: None,
            recorded_to: None,
            datasets: Vec::new(),
        }
    }

    #[test]
    fn latency_percentiles_are_nearest_rank_with_order_statistic_bounds() {
        let case = CaseInfo {
            dataset: "d".into(),
            case_id: "c".into(),
            expected: "t".into(),
            tags: Vec::new(),
        };
        let mut agg = Aggregator::new(vec![case]);
        // Arrival order must not matter.
        for ms in (1..=100).rev() {
            agg.add(0, &record(ms as f64, Outcome::Pass));
        }
        agg.add(0, &record(5000.0, Outcome::Error));
        let s = agg.finish(run_info(), 101, false, 0.95, 0.05);
        let l = &s.latency_ms;
        assert_eq!(l.n, 100, "errors are not part of the latency distribution");
        assert_eq!(l.mean, Some(50.5));
        // n = 100: ranks from stats.md §7.3 — p50 [40, 61], p95 [90, 100], p99 [97, unbounded].
        // Values are within the histogram's 0.1% quantisation of the exact order statistics.
        let close = |got: f64, want: f64| (got - want).abs() <= want * 1e-3;
        let check = |p: &Option<Percentile>, value: f64, lo: f64, hi: Option<f64>| {
            let p = p.as_ref().expect("percentile");
            assert!(close(p.value, value) && close(p.lo, lo), "{p:?}");
            match (p.hi, hi) {
                (Some(got), Some(want)) => assert!(close(got, want), "{p:?}"),
                (got, want) => assert_eq!(got, want),
            }
        };
        check(&l.p50, 50.0, 40.0, Some(61.0));
        check(&l.p95, 95.0, 90.0, Some(100.0));
        check(&l.p99, 99.0, 97.0, None);
        assert_eq!(s.tokens.input_total, 1000);
        assert_eq!(s.tokens.trials_with_usage, 100);
        assert_eq!(s.infra.by_class.get("unknown"), Some(&1));
        assert!(
            s.warnings
                .iter()
                .any(|w| w.starts_with("latency p99 has no upper confidence bound"))
        );
    }
}
