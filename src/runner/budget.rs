//! What a plan should cost before it runs, and the `--max-cost` cap while it runs.
//!
//! The estimate prices each (arm, case) trial from what the model reads — the catalog's token
//! footprint (`lint::tokens`) and the case's messages, at 4 characters a token — and what it
//! may write: the arm's `max_tokens`, or [`ASSUMED_OUTPUT_TOKENS`] when none is set. A
//! scenario trial counts `max_steps` such requests.
//!
//! The cap reserves a trial's estimate before the trial starts and settles it with the trial's
//! real cost when it ends; a trial starts only if spend plus every reservation in flight plus
//! its own stays within the cap. Once one is refused nothing more starts, so the run stops
//! cleanly and every trial it did not start is counted as not run. A reservation is the larger
//! of the estimate and the dearest trial of the same arm and case so far, so a model that
//! writes more than estimated is caught up after its first trial.

use std::sync::Mutex;

use crate::message::Usage;
use crate::record::Price;

use super::RunPlan;

/// Output tokens assumed per request when the arm sets no `max_tokens`.
pub const ASSUMED_OUTPUT_TOKENS: u64 = 512;

/// Characters per token of the estimate (the rule `lint` and `plan` use too).
const CHARS_PER_TOKEN: u64 = 4;

/// The plan's cost before any request.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// Per (arm, case), at `arm * cases + case`: tokens and dollars of one trial.
    pub per_trial: Vec<TrialEstimate>,
    pub arms: Vec<ArmEstimate>,
    /// Trials this process will run (without those done before a resume, only the shard's).
    pub trials: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// `None` when some arm has no price.
    pub usd: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrialEstimate {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub usd: Option<f64>,
}

/// One arm's share of the estimate.
#[derive(Debug, Clone, PartialEq)]
pub struct ArmEstimate {
    /// `NAME (variant)`.
    pub arm: String,
    /// `KIND:MODEL`, for the message that names a missing price.
    pub model: String,
    pub trials: u64,
    pub usd: Option<f64>,
    pub price_source: Option<String>,
    /// Output tokens assumed per request, and whether that is the arm's `max_tokens`.
    pub output_per_request: u64,
    pub output_is_max_tokens: bool,
}

/// Tokens of a JSON value at [`CHARS_PER_TOKEN`].
fn json_tokens<T: serde::Serialize>(value: &T) -> u64 {
    let chars = serde_json::to_string(value).map_or(0, |s| s.chars().count()) as u64;
    chars.div_ceil(CHARS_PER_TOKEN)
}

fn catalog_tokens(catalog: &crate::catalog::Catalog) -> u64 {
    catalog.tools.iter().map(crate::lint::tool_tokens).sum()
}

/// Prices every trial the plan will run (without those done before a resume, only the
/// shard's), at each arm's price.
pub fn estimate(plan: &RunPlan) -> Estimate {
    let case_trials = plan.case_trials();
    let cases = case_trials.len();
    let seeds = plan.shard.map(|_| plan.shard_seeds());
    let mut per_trial = Vec::with_capacity(plan.arms.len() * cases);
    let mut arms = Vec::with_capacity(plan.arms.len());
    let (mut trials, mut input_tokens, mut output_tokens) = (0u64, 0u64, 0u64);
    let mut usd = Some(0.0);
    for (a, arm) in plan.arms.iter().enumerate() {
        let output_per_request = arm
            .settings
            .max_tokens
            .map_or(ASSUMED_OUTPUT_TOKENS, u64::from);
        // What one request of each case reads under this arm's variant, and how many requests
        // a trial makes.
        let mut reads: Vec<(u64, u64)> = Vec::with_capacity(cases);
        for d in &plan.datasets {
            let variant = d.variant(&arm.variant);
            for c in &d.cases {
                let catalog = match (&c.catalog, variant) {
                    (Some((own, _)), _) => catalog_tokens(own),
                    (None, Some(v)) => catalog_tokens(&v.catalog),
                    (None, None) => catalog_tokens(&d.catalog),
                };
                let messages = match variant {
                    Some(v) => json_tokens(&v.messages(&c.messages)),
                    None => json_tokens(&c.messages),
                };
                reads.push((catalog + messages, 1));
            }
        }
        for sc in &plan.scenarios {
            let catalog = sc
                .catalog_for(&arm.variant)
                .map_or(0, |v| catalog_tokens(&v.catalog));
            reads.push((
                catalog + json_tokens(&sc.messages),
                u64::from(sc.max_steps.max(1)),
            ));
        }
        let mut arm_trials = 0u64;
        let mut arm_usd = Some(0.0);
        for (case, &(input, requests)) in reads.iter().enumerate() {
            let one = TrialEstimate {
                input_tokens: input * requests,
                output_tokens: output_per_request * requests,
                usd: arm.price.as_ref().and_then(|p| {
                    p.price.cost_of(&Usage {
                        input_tokens: Some(input * requests),
                        output_tokens: Some(output_per_request * requests),
                        ..Usage::default()
                    })
                }),
            };
            let n = (0..case_trials[case])
                .filter(|&t| {
                    let key = crate::event::TrialKey {
                        arm: a,
                        case,
                        trial: t,
                    };
                    let in_shard = match (plan.shard, &seeds) {
                        (Some(s), Some(seeds)) => s.contains(seeds[a * cases + case], t),
                        _ => true,
                    };
                    in_shard && !plan.done.contains(&key)
                })
                .count() as u64;
            arm_trials += n;
            input_tokens += n * one.input_tokens;
            output_tokens += n * one.output_tokens;
            arm_usd = arm_usd.zip(one.usd).map(|(sum, u)| sum + n as f64 * u);
            per_trial.push(one);
        }
        trials += arm_trials;
        usd = usd.zip(arm_usd).map(|(a, b)| a + b);
        arms.push(ArmEstimate {
            arm: format!("{} ({})", arm.settings.name, arm.variant),
            model: format!("{}:{}", arm.settings.kind, arm.settings.model),
            trials: arm_trials,
            usd: arm_usd,
            price_source: arm.price.as_ref().map(|p| p.source.clone()),
            output_per_request,
            output_is_max_tokens: arm.settings.max_tokens.is_some(),
        });
    }
    Estimate {
        per_trial,
        arms,
        trials,
        input_tokens,
        output_tokens,
        usd,
    }
}

/// The `--max-cost` cap, shared by the workers.
#[derive(Debug)]
pub struct Budget {
    max_usd: f64,
    state: Mutex<BudgetState>,
}

#[derive(Debug)]
struct BudgetState {
    spent: f64,
    in_flight: f64,
    /// What a trial of each (arm, case) reserves: its estimate, raised to the dearest trial
    /// seen.
    reserve: Vec<f64>,
    /// A trial was refused: nothing more starts.
    exhausted: bool,
}

impl Budget {
    /// `per_trial[unit]`: the estimated dollars of one trial of each (arm, case).
    pub fn new(max_usd: f64, per_trial: Vec<f64>) -> Self {
        Budget {
            max_usd,
            state: Mutex::new(BudgetState {
                spent: 0.0,
                in_flight: 0.0,
                reserve: per_trial,
                exhausted: false,
            }),
        }
    }

    /// Reserves one trial of `unit`, or refuses (and refuses every later trial) when spend,
    /// the trials in flight and this one would pass the cap.
    pub fn reserve(&self, unit: usize) -> Option<f64> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.exhausted {
            return None;
        }
        let amount = s.reserve.get(unit).copied().unwrap_or(0.0);
        if s.spent + s.in_flight + amount > self.max_usd {
            s.exhausted = true;
            return None;
        }
        s.in_flight += amount;
        Some(amount)
    }

    /// A reserved trial ended: its real cost replaces the reservation (the reservation itself
    /// when the cost is unknown, or the trial was abandoned).
    pub fn settle(&self, unit: usize, reserved: f64, actual: Option<f64>) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.in_flight = (s.in_flight - reserved).max(0.0);
        let cost = actual.unwrap_or(reserved);
        s.spent += cost;
        if let Some(r) = s.reserve.get_mut(unit)
            && cost > *r
        {
            *r = cost;
        }
    }

    /// Whether a trial was refused.
    pub fn exhausted(&self) -> bool {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .exhausted
    }

    pub fn spent(&self) -> f64 {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).spent
    }
}

/// The rates as a compact sentence: `$3/M in, $15/M out, $0.30/M cache read`.
pub fn describe_price(p: &Price) -> String {
    let mut out = format!("${}/M in, ${}/M out", p.input, p.output);
    if let Some(r) = p.cache_read {
        out.push_str(&format!(", ${r}/M cache read"));
    }
    if let Some(w) = p.cache_write {
        out.push_str(&format!(", ${w}/M cache write"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_admits_trials_while_spend_and_reservations_fit_then_refuses_for_good() {
        let b = Budget::new(1.0, vec![0.3, 0.5]);
        assert_eq!(b.reserve(0), Some(0.3));
        assert_eq!(b.reserve(0), Some(0.3));
        // 0.6 in flight + 0.5 would pass 1.0.
        assert_eq!(b.reserve(1), None);
        assert!(b.exhausted());
        // Refused for good, even though a cheaper trial would still fit.
        assert_eq!(b.reserve(0), None);
        b.settle(0, 0.3, Some(0.25));
        b.settle(0, 0.3, None);
        assert!((b.spent() - 0.55).abs() < 1e-12);
    }

    #[test]
    fn a_trial_dearer_than_estimated_raises_what_its_case_reserves() {
        let b = Budget::new(1.0, vec![0.1]);
        let r = b.reserve(0).unwrap();
        b.settle(0, r, Some(0.4));
        // Spent 0.4; the next trial reserves 0.4, not 0.1.
        assert_eq!(b.reserve(0), Some(0.4));
        assert_eq!(b.reserve(0), None);
    }
}
