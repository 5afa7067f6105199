//! The dollars and tokens of a run, summed per arm over every record (scenarios included).

use std::collections::BTreeMap;

use toolscore_core::{ArmId, TrialRecord};

/// Dollars and tokens summed over trials.
#[derive(Debug, Clone, Default)]
struct CostCounts {
    usd: f64,
    trials: u64,
    priced: u64,
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    /// Trials whose bill passed the worst case recorded for their requests, and by how much.
    beyond_trials: u64,
    beyond_usd: f64,
    budget_stopped: u64,
}

impl CostCounts {
    fn add(&mut self, record: &TrialRecord) {
        self.trials += 1;
        if let Some(c) = &record.cost {
            self.priced += 1;
            self.usd += c.usd;
            if let Some(worst) = c.worst_case_usd
                && c.usd > worst
            {
                self.beyond_trials += 1;
                self.beyond_usd += c.usd - worst;
            }
        }
        if record.outcome == toolscore_core::Outcome::BudgetStopped {
            self.budget_stopped += 1;
        }
        let u = &record.usage;
        self.input += u.input_tokens.unwrap_or(0);
        self.output += u.output_tokens.unwrap_or(0);
        self.cache_read += u.cache_read_tokens.unwrap_or(0);
        self.cache_write += u.cache_write_tokens.unwrap_or(0);
    }

    fn merge(&mut self, o: &CostCounts) {
        self.usd += o.usd;
        self.trials += o.trials;
        self.priced += o.priced;
        self.input += o.input;
        self.output += o.output;
        self.cache_read += o.cache_read;
        self.cache_write += o.cache_write;
        self.beyond_trials += o.beyond_trials;
        self.beyond_usd += o.beyond_usd;
        self.budget_stopped += o.budget_stopped;
    }

    fn usd(&self) -> Option<f64> {
        (self.priced > 0).then_some(self.usd)
    }

    fn figures(&self) -> super::CostFigures {
        super::CostFigures {
            usd: self.usd(),
            trials: self.trials,
            priced_trials: self.priced,
            input_tokens: self.input,
            output_tokens: self.output,
            cache_read_tokens: self.cache_read,
            cache_write_tokens: self.cache_write,
            budget_stopped_trials: self.budget_stopped,
            billed_beyond_worst_case: (self.beyond_trials > 0).then_some(super::BeyondWorstCase {
                trials: self.beyond_trials,
                usd: self.beyond_usd,
            }),
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct ArmCostAgg {
    all: CostCounts,
    /// (dataset, case) → counts.
    cases: BTreeMap<(String, String), CostCounts>,
    sources: Vec<String>,
}

impl ArmCostAgg {
    pub(super) fn add(&mut self, record: &TrialRecord) {
        self.all.add(record);
        self.cases
            .entry((record.dataset.clone(), record.case_id.clone()))
            .or_default()
            .add(record);
        if let Some(cost) = &record.cost
            && !self.sources.contains(&cost.price_source)
        {
            self.sources.push(cost.price_source.clone());
        }
    }

    pub(super) fn finish(self, arm: ArmId) -> super::ArmCost {
        let a = &self.all;
        super::ArmCost {
            arm,
            figures: a.figures(),
            usd_per_trial: (a.priced > 0).then(|| a.usd / a.priced as f64),
            price_sources: self.sources,
            cases: self
                .cases
                .into_iter()
                .map(|((dataset, case_id), c)| super::CaseCost {
                    dataset,
                    case_id,
                    usd: c.usd(),
                    trials: c.trials,
                    priced_trials: c.priced,
                })
                .collect(),
        }
    }
}

/// The run's cost from each arm's.
pub(super) fn cost_summary(arms: BTreeMap<ArmId, ArmCostAgg>) -> super::CostSummary {
    let mut all = CostCounts::default();
    for agg in arms.values() {
        all.merge(&agg.all);
    }
    super::CostSummary {
        total: all.figures(),
        arms: arms.into_iter().map(|(id, agg)| agg.finish(id)).collect(),
    }
}
