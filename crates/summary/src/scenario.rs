//! Per-scenario figures, aggregated from scenario records alone (their `trajectory` and
//! `scenario` fields), so results.jsonl re-aggregates into the same numbers: task success,
//! retry rates (after a success, after an error), recovery, step efficiency, tokens and
//! latency per step and per trajectory, and pass@k / pass^k, each with its interval and
//! count. Suite values are clustered by scenario.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{LatencySummary, RateStat};
use toolscore_core::{ArmId, LoopStop, Outcome, TrialRecord};
use toolscore_stats::LatencyAgg;
use toolscore_stats::{self as stats, ClusteredEstimate, Interval};

/// The k values pass@k and pass^k are reported for, where the trials allow (k ≤ n).
const PASS_KS: [u64; 4] = [1, 2, 4, 8];

/// Most distinct failure reasons kept per scenario; the rest are counted as "(other)".
const MAX_FAILURE_REASONS: usize = 6;

/// Every scenario of one arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioArmSummary {
    pub arm: ArmId,
    pub scenarios: Vec<ScenarioSummary>,
    /// Task success over scenarios: the mean of scenario rates with a t(m−1) interval (absent
    /// for a single scenario, whose own interval is the one to quote).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success: Option<ClusteredEstimate>,
    /// pass@k and pass^k over scenarios: means of the per-scenario estimates, with t(m−1)
    /// intervals, for each k every scenario's trials allow.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_k: Vec<SuitePassK>,
}

/// One scenario's figures in one arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioSummary {
    pub name: String,
    /// What it expects (`find_customer → apply_credit`).
    pub expects: String,
    /// Trials judged (not infrastructure errors).
    pub trials: u64,
    /// Trials lost to infrastructure errors, by class: never judged, never dropped.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors: BTreeMap<String, u64>,
    /// Trials in which every stated assertion held.
    pub success: RateStat,
    /// When the success interval is wider than ±precision: about how many trials would bring
    /// it within (Wilson at the observed rate; reference/stats.md §2.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials_needed: Option<u64>,
    /// Calls repeating an earlier call of their trajectory, over all calls.
    pub retry: RateStat,
    pub retry_after_success: RateStat,
    pub retry_after_error: RateStat,
    /// After an error result, the next call to that tool was valid and different.
    pub recovery: RateStat,
    /// Calls made ÷ calls in the expected sequence, mean over trials (1.0 = no extra calls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_efficiency: Option<MeanStat>,
    pub calls_per_trial: MeanStat,
    pub steps_per_trial: MeanStat,
    /// Trials stopped by `max_steps` while still calling tools.
    pub step_limit: u64,
    /// Calls no scripted rule answered (a gap in the script, shown apart).
    pub unscripted_calls: u64,
    /// Input + output tokens, when the provider reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_trial: Option<MeanStat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_step: Option<MeanStat>,
    pub latency_per_trial_ms: LatencySummary,
    pub latency_per_step_ms: LatencySummary,
    pub pass_k: Vec<PassK>,
    /// Why failed trials failed, most frequent first: (reason, trials).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<(String, u64)>,
    /// The tool sequences judged trials made, most frequent first: (`a → b`, trials).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sequences: Vec<(String, u64)>,
    /// The final answers (lower case, whitespace collapsed, at most 120 characters), most
    /// frequent first: (answer, trials); trials that ended without one count as `(none)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<(String, u64)>,
}

/// A scenario whose most frequent tool sequence or final answer differs from a baseline run's
/// (`--baseline`): the post-merge check of an agent against a candidate server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioDrift {
    pub arm: ArmId,
    pub scenario: String,
    /// `sequence` or `answer`.
    pub what: String,
    /// The baseline's most frequent value, with the trials behind it and the trials judged.
    pub baseline: (String, u64, u64),
    pub current: (String, u64, u64),
}

/// Drift of every scenario both summaries ran, arm by arm (a baseline with one arm is compared
/// with every arm).
pub fn scenario_drift(
    current: &[ScenarioArmSummary],
    baseline: &[ScenarioArmSummary],
) -> Vec<ScenarioDrift> {
    let mut out = Vec::new();
    for arm in current {
        let base = match baseline.len() {
            1 => baseline.first(),
            _ => baseline.iter().find(|b| b.arm == arm.arm),
        };
        let Some(base) = base else { continue };
        for sc in &arm.scenarios {
            let Some(old) = base.scenarios.iter().find(|b| b.name == sc.name) else {
                continue;
            };
            for (what, now, was) in [
                ("sequence", &sc.sequences, &old.sequences),
                ("answer", &sc.answers, &old.answers),
            ] {
                if let (Some(n), Some(w)) = (now.first(), was.first())
                    && n.0 != w.0
                {
                    out.push(ScenarioDrift {
                        arm: arm.arm.clone(),
                        scenario: sc.name.clone(),
                        what: what.to_owned(),
                        baseline: (w.0.clone(), w.1, old.trials),
                        current: (n.0.clone(), n.1, sc.trials),
                    });
                }
            }
        }
    }
    out
}

/// Most distinct sequences or answers counted per scenario; the rest count as `(other)`.
const MAX_DISTINCT: usize = 32;

fn count_bounded(map: &mut BTreeMap<String, u64>, key: String) {
    if map.len() < MAX_DISTINCT || map.contains_key(&key) {
        *map.entry(key).or_default() += 1;
    } else {
        *map.entry("(other)".to_owned()).or_default() += 1;
    }
}

fn ranked(map: BTreeMap<String, u64>) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = map.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

/// A final answer as drift compares it: lower case, whitespace collapsed, 120 characters.
fn answer_key(text: &str) -> String {
    let collapsed = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    collapsed.chars().take(120).collect()
}

/// A mean with its t interval over trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeanStat {
    pub mean: f64,
    pub n: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
}

/// pass@k and pass^k of one scenario, each with the Wilson interval of its pass rate mapped
/// through the function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassK {
    pub k: u64,
    pub pass_at_k: f64,
    pub pass_at_k_interval: Option<Interval>,
    pub pass_hat_k: f64,
    pub pass_hat_k_interval: Option<Interval>,
}

/// pass@k and pass^k over scenarios.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuitePassK {
    pub k: u64,
    pub scenarios: usize,
    pub pass_at_k: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_at_k_interval: Option<Interval>,
    pub pass_hat_k: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_hat_k_interval: Option<Interval>,
}

/// Per (arm, scenario) accumulators: counts, and per-trial pairs for clustered intervals.
/// Per-trial pairs are a few integers per trial of a scenario, not the records.
#[derive(Default)]
pub(crate) struct ScenarioAggregator {
    arms: BTreeMap<ArmId, BTreeMap<String, ScenarioAgg>>,
}

struct ScenarioAgg {
    expects: String,
    passed: u64,
    judged: u64,
    errors: BTreeMap<String, u64>,
    /// Per judged trial: (calls, retries after success, retries after error, recoveries,
    /// recovery chances).
    per_trial: Vec<[u64; 5]>,
    efficiency: Vec<f64>,
    steps: Vec<f64>,
    tokens: Vec<f64>,
    tokens_steps: u64,
    step_limit: u64,
    unscripted: u64,
    latency_trial: LatencyAgg,
    latency_step: LatencyAgg,
    failures: BTreeMap<String, u64>,
    sequences: BTreeMap<String, u64>,
    answers: BTreeMap<String, u64>,
}

impl ScenarioAgg {
    fn new(expects: String) -> Self {
        ScenarioAgg {
            expects,
            passed: 0,
            judged: 0,
            errors: BTreeMap::new(),
            per_trial: Vec::new(),
            efficiency: Vec::new(),
            steps: Vec::new(),
            tokens: Vec::new(),
            tokens_steps: 0,
            step_limit: 0,
            unscripted: 0,
            latency_trial: LatencyAgg::new(),
            latency_step: LatencyAgg::new(),
            failures: BTreeMap::new(),
            sequences: BTreeMap::new(),
            answers: BTreeMap::new(),
        }
    }
}

impl ScenarioAggregator {
    /// Counts one scenario record (one with a `trajectory`).
    pub(crate) fn add(&mut self, record: &TrialRecord) {
        let agg = self
            .arms
            .entry(record.arm.clone())
            .or_default()
            .entry(record.case_id.clone())
            .or_insert_with(|| ScenarioAgg::new(record.expected.clone()));
        if record.outcome == Outcome::Error {
            let class = record
                .error_class
                .map_or_else(|| "unknown".to_owned(), |c| c.to_string());
            *agg.errors.entry(class).or_default() += 1;
            return;
        }
        let Some(score) = &record.scenario else {
            return;
        };
        agg.judged += 1;
        if score.passed {
            agg.passed += 1;
        } else {
            for f in &score.failures {
                // Group by the assertion, not the values it quotes.
                let key = f.split(':').next().unwrap_or(f).to_owned();
                if agg.failures.len() < MAX_FAILURE_REASONS || agg.failures.contains_key(&key) {
                    *agg.failures.entry(key).or_default() += 1;
                } else {
                    *agg.failures.entry("(other)".to_owned()).or_default() += 1;
                }
            }
        }
        agg.per_trial.push([
            u64::from(score.calls),
            u64::from(score.retries_after_success),
            u64::from(score.retries_after_error),
            u64::from(score.recoveries),
            u64::from(score.recovery_chances),
        ]);
        if let Some(e) = score.expected_calls.filter(|e| *e > 0) {
            agg.efficiency.push(f64::from(score.calls) / f64::from(e));
        }
        agg.unscripted += u64::from(score.unscripted_calls);
        if let Some(t) = &record.trajectory {
            let sequence = if t.calls.is_empty() {
                "(no call)".to_owned()
            } else {
                t.calls
                    .iter()
                    .map(|c| c.tool.as_str())
                    .collect::<Vec<_>>()
                    .join(" → ")
            };
            count_bounded(&mut agg.sequences, sequence);
            let answer = match t.stop {
                LoopStop::FinalAnswer => record
                    .turns
                    .last()
                    .map(|turn| answer_key(turn.text.as_deref().unwrap_or_default()))
                    .unwrap_or_default(),
                _ => "(none)".to_owned(),
            };
            count_bounded(&mut agg.answers, answer);
            agg.steps.push(t.step_latency_ms.len() as f64);
            if t.stop == LoopStop::StepLimit {
                agg.step_limit += 1;
            }
            for ms in &t.step_latency_ms {
                agg.latency_step.record(*ms);
            }
        }
        agg.latency_trial.record(record.latency_ms);
        if let (Some(i), Some(o)) = (record.usage.input_tokens, record.usage.output_tokens) {
            agg.tokens.push((i + o) as f64);
            agg.tokens_steps += record.turns.len() as u64;
        }
    }

    pub(crate) fn finish(self, conf: f64, precision: f64) -> Vec<ScenarioArmSummary> {
        self.arms
            .into_iter()
            .map(|(arm, scenarios)| {
                let scenarios: Vec<ScenarioSummary> = scenarios
                    .into_iter()
                    .map(|(name, agg)| agg.finish(name, conf, precision))
                    .collect();
                // Clustered by scenario, never narrower than Wilson at the effective sample
                // size: every scenario at 0/4 is not certainty.
                let counts: Vec<(u64, u64)> = scenarios
                    .iter()
                    .map(|s| (s.success.x, s.success.n))
                    .collect();
                let success = stats::suite_interval(&counts, conf);
                let pass_k = PASS_KS
                    .iter()
                    .filter_map(|&k| {
                        let at: Vec<f64> = scenarios
                            .iter()
                            .map(|s| s.pass_k.iter().find(|p| p.k == k).map(|p| p.pass_at_k))
                            .collect::<Option<Vec<_>>>()?;
                        let hat: Vec<f64> = scenarios
                            .iter()
                            .filter_map(|s| {
                                s.pass_k.iter().find(|p| p.k == k).map(|p| p.pass_hat_k)
                            })
                            .collect();
                        if at.is_empty() {
                            return None;
                        }
                        let m = at.len() as f64;
                        Some(SuitePassK {
                            k,
                            scenarios: at.len(),
                            pass_at_k: at.iter().sum::<f64>() / m,
                            pass_at_k_interval: spread_interval(&at, conf),
                            pass_hat_k: hat.iter().sum::<f64>() / m,
                            pass_hat_k_interval: spread_interval(&hat, conf),
                        })
                    })
                    .collect();
                ScenarioArmSummary {
                    arm,
                    scenarios,
                    success,
                    pass_k,
                }
            })
            .collect()
    }
}

impl ScenarioAgg {
    fn finish(self, name: String, conf: f64, precision: f64) -> ScenarioSummary {
        let ratio = |pick: &dyn Fn(&[u64; 5]) -> (u64, u64)| -> RateStat {
            let pairs: Vec<(u64, u64)> = self.per_trial.iter().map(pick).collect();
            let x: u64 = pairs.iter().map(|p| p.0).sum();
            let n: u64 = pairs.iter().map(|p| p.1).sum();
            let ci = stats::clustered_ratio_interval(&pairs, conf);
            RateStat {
                x,
                n,
                rate: ci.map(|(r, _)| r),
                interval: ci.map(|(_, i)| i),
                case_level: None,
            }
        };
        let success = RateStat {
            x: self.passed,
            n: self.judged,
            rate: (self.judged > 0).then(|| self.passed as f64 / self.judged as f64),
            interval: stats::rate_interval(self.passed, self.judged, conf),
            case_level: None,
        };
        let pass_k = pass_k_of(self.judged, self.passed, conf);
        let failures = ranked(self.failures);
        let tokens_per_trial = mean_stat(&self.tokens, conf);
        let tokens_per_step = (self.tokens_steps > 0).then(|| {
            let total: f64 = self.tokens.iter().sum();
            MeanStat {
                mean: total / self.tokens_steps as f64,
                n: self.tokens_steps,
                interval: None,
            }
        });
        let trials_needed = success
            .interval
            .filter(|iv| iv.half_width() > precision)
            .and(success.rate)
            .and_then(|p| stats::wilson_trials_for_half_width(p, precision, conf));
        ScenarioSummary {
            name,
            expects: self.expects,
            trials: self.judged,
            errors: self.errors,
            success,
            trials_needed,
            retry: ratio(&|t| (t[1] + t[2], t[0])),
            retry_after_success: ratio(&|t| (t[1], t[0])),
            retry_after_error: ratio(&|t| (t[2], t[0])),
            recovery: ratio(&|t| (t[3], t[4])),
            step_efficiency: mean_stat(&self.efficiency, conf),
            calls_per_trial: mean_stat(
                &self
                    .per_trial
                    .iter()
                    .map(|t| t[0] as f64)
                    .collect::<Vec<_>>(),
                conf,
            )
            .unwrap_or(NO_MEAN),
            steps_per_trial: mean_stat(&self.steps, conf).unwrap_or(NO_MEAN),
            step_limit: self.step_limit,
            unscripted_calls: self.unscripted,
            tokens_per_trial,
            tokens_per_step,
            latency_per_trial_ms: self.latency_trial.summary(conf),
            latency_per_step_ms: self.latency_step.summary(conf),
            pass_k,
            failures,
            sequences: ranked(self.sequences),
            answers: ranked(self.answers),
        }
    }
}

/// The mean of no value: what a scenario with no judged trial shows for its calls and steps.
const NO_MEAN: MeanStat = MeanStat {
    mean: 0.0,
    n: 0,
    interval: None,
};

/// pass@k and pass^k of one scenario, for each k in PASS_KS up to its `n` judged trials, `c`
/// of them successes.
fn pass_k_of(n: u64, c: u64, conf: f64) -> Vec<PassK> {
    PASS_KS
        .iter()
        .filter(|&&k| k <= n)
        .filter_map(|&k| {
            let intervals = stats::pass_k_intervals(n, c, k, conf);
            Some(PassK {
                k,
                pass_at_k: stats::pass_at_k(n, c, k)?,
                pass_at_k_interval: intervals.map(|i| i.0),
                pass_hat_k: stats::pass_hat_k(n, c, k)?,
                pass_hat_k_interval: intervals.map(|i| i.1),
            })
        })
        .collect()
}

/// The t(m−1) interval of a mean of per-scenario estimates, or none when they are all equal:
/// a zero-width interval would claim a certainty the trials do not give.
fn spread_interval(values: &[f64], conf: f64) -> Option<Interval> {
    stats::clustered_mean_interval(values, conf)
        .filter(|c| c.se > 0.0)
        .map(|c| c.interval)
}

/// A mean of non-negative per-trial values with its t(n−1) interval, the lower end clipped
/// at 0; none for fewer than two values or no spread (a zero-width interval would claim a
/// certainty the trials do not give).
fn mean_stat(values: &[f64], conf: f64) -> Option<MeanStat> {
    if values.is_empty() {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let interval = stats::paired_mean_difference(values, conf)
        .filter(|d| d.sd > 0.0)
        .map(|d| Interval {
            lo: d.interval.lo.max(0.0),
            hi: d.interval.hi,
        });
    Some(MeanStat {
        mean,
        n: values.len() as u64,
        interval,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolscore_core::{CallKind, ExecutedCall, ScenarioScore, Trajectory};

    fn record(passed: bool, calls: u32, retries: (u32, u32), recov: (u32, u32)) -> TrialRecord {
        let mut r = TrialRecord::for_test(
            "notes",
            if passed { Outcome::Pass } else { Outcome::Fail },
            10.0,
        );
        r.dataset = "scenarios".into();
        r.expected = "append_note".into();
        r.trajectory = Some(Trajectory {
            calls: (0..calls)
                .map(|i| ExecutedCall {
                    step: i,
                    tool: "append_note".into(),
                    arguments: serde_json::json!({}),
                    unparsed_arguments: None,
                    kind: CallKind::Scripted,
                    rule: Some(0),
                    content: "ok".into(),
                    structured: None,
                    is_error: false,
                    state: None,
                    injected: false,
                })
                .collect(),
            stop: LoopStop::FinalAnswer,
            final_state: None,
            step_latency_ms: vec![4.0, 6.0],
        });
        r.scenario = Some(ScenarioScore {
            passed,
            failures: if passed {
                vec![]
            } else {
                vec!["answer: does not contain \"x\"".into()]
            },
            calls,
            expected_calls: Some(1),
            retries_after_success: retries.0,
            retries_after_error: retries.1,
            recoveries: recov.0,
            recovery_chances: recov.1,
            unscripted_calls: 0,
        });
        r
    }

    /// `trials_needed` of one scenario passed in 3 of every 4 of `n` trials.
    fn agg_of_many(n: usize, conf: f64, precision: f64) -> Option<u64> {
        let mut agg = ScenarioAggregator::default();
        for i in 0..n {
            agg.add(&record(i % 4 != 0, 1, (0, 0), (0, 0)));
        }
        agg.finish(conf, precision)[0].scenarios[0].trials_needed
    }

    #[test]
    fn rates_come_from_the_records_counts() {
        let mut agg = ScenarioAggregator::default();
        agg.add(&record(true, 1, (0, 0), (0, 0)));
        agg.add(&record(false, 3, (2, 0), (0, 0)));
        agg.add(&record(true, 2, (0, 1), (1, 1)));
        agg.add(&record(true, 4, (0, 0), (0, 0)));
        let mut err = TrialRecord::for_test("notes", Outcome::Error, 10.0);
        err.error_class = Some(toolscore_core::ErrorClass::Timeout);
        err.trajectory = record(true, 0, (0, 0), (0, 0)).trajectory;
        agg.add(&err);
        let out = agg.finish(0.95, 0.05);
        let s = &out[0].scenarios[0];
        assert_eq!((s.success.x, s.success.n), (3, 4));
        // 3 of 4 is far wider than ±0.05: the summary says how many trials would do, so every
        // renderer can say it without computing it.
        assert_eq!(
            s.trials_needed,
            stats::wilson_trials_for_half_width(0.75, 0.05, 0.95)
        );
        assert!(s.trials_needed.is_some_and(|n| n > 4));
        let wide = agg_of_many(400, 0.95, 0.05);
        assert_eq!(wide, None, "400 trials at 0.75 are within ±0.05");
        assert_eq!((s.retry.x, s.retry.n), (3, 10));
        assert_eq!(s.retry.rate, Some(0.3));
        assert_eq!((s.retry_after_success.x, s.retry_after_error.x), (2, 1));
        assert_eq!((s.recovery.x, s.recovery.n), (1, 1));
        assert_eq!(s.errors.get("timeout"), Some(&1));
        assert_eq!(s.step_efficiency.as_ref().map(|e| e.mean), Some(2.5));
        assert_eq!(s.latency_per_step_ms.n, 8);
        assert_eq!(s.failures, vec![("answer".to_owned(), 1)]);
        let k2 = s.pass_k.iter().find(|p| p.k == 2).unwrap();
        assert_eq!(k2.pass_hat_k, stats::pass_hat_k(4, 3, 2).unwrap());
        assert!(s.pass_k.iter().all(|p| p.k <= 4));
        // One scenario: its own interval is the one to quote.
        assert!(out[0].success.is_none());
        assert_eq!(out[0].pass_k.len(), 3);
    }
}
