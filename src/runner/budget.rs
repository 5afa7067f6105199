//! What a plan should cost before it runs, and the `--max-cost` cap while it runs.
//!
//! The estimate prices each (arm, case) trial from what the model reads — the catalog's token
//! footprint (`lint::tokens`) and the case's messages, at 4 characters a token — and what it
//! may write: the arm's `max_tokens`, or [`ASSUMED_OUTPUT_TOKENS`] when none is set. A
//! scenario trial counts `max_steps` such requests.
//!
//! The cap reserves each request at its worst case before it is sent ([`worst_case_usd`]: every
//! byte of the body an input token, the whole output bound at the output rate) and settles a
//! trial's reservations with its real cost when it ends; a request is sent only if spend plus
//! every reservation in flight plus its own stays within the cap, so the cap holds whatever
//! usage the provider reports within those bounds. Once one is refused nothing more starts:
//! every trial not started is counted as not run, and a scenario trial refused between steps
//! ends as an infrastructure error of class `budget` (not scored).

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
        let reads = reads_per_case(plan, &arm.variant);
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
            let n = trials_to_run(plan, seeds.as_deref(), (a, case, cases), case_trials[case]);
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

/// What one request of each case (datasets' cases, then scenarios) reads under `variant`, in
/// tokens, and how many requests a trial of it makes.
fn reads_per_case(plan: &RunPlan, variant_name: &str) -> Vec<(u64, u64)> {
    let mut reads = Vec::new();
    for d in &plan.datasets {
        let variant = d.variant(variant_name);
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
            .catalog_for(variant_name)
            .map_or(0, |v| catalog_tokens(&v.catalog));
        reads.push((
            catalog + json_tokens(&sc.messages),
            u64::from(sc.max_steps.max(1)),
        ));
    }
    reads
}

/// How many of case `case`'s trials (of `cases` an arm) this run makes under arm `arm`: those
/// in the shard, when the run is one, and not done before a resume.
fn trials_to_run(
    plan: &RunPlan,
    seeds: Option<&[u64]>,
    (arm, case, cases): (usize, usize, usize),
    trials: u32,
) -> u64 {
    (0..trials)
        .filter(|&t| {
            let key = crate::event::TrialKey {
                arm,
                case,
                trial: t,
            };
            let in_shard = match (plan.shard, seeds) {
                (Some(s), Some(seeds)) => s.contains(seeds[arm * cases + case], t),
                _ => true,
            };
            in_shard && !plan.done.contains(&key)
        })
        .count() as u64
}

/// The most one request can cost: every byte of its body billed as an input token (no
/// tokenizer makes a token of less than one byte, and the framing is counted too) at the
/// dearer of the input and cache-write rates, plus its output bound at the output rate.
/// Whatever the provider then reports, the request cannot cost more.
pub fn worst_case_usd(price: &Price, body_bytes: usize, output_bound: u32) -> f64 {
    let input_rate = price.input.max(price.cache_write.unwrap_or(price.input));
    (body_bytes as f64 * input_rate + f64::from(output_bound) * price.output) / 1e6
}

/// The `--max-cost` cap, shared by the workers: each request is reserved at its worst case
/// ([`worst_case_usd`]) before it is sent, and a trial's reservations are settled with its real
/// cost when it ends, so spend stays within the cap whatever the usage turns out to be.
#[derive(Debug)]
pub struct Budget {
    max_usd: f64,
    state: Mutex<BudgetState>,
}

#[derive(Debug)]
struct BudgetState {
    spent: f64,
    in_flight: f64,
    /// A request was refused: nothing more starts.
    exhausted: bool,
}

impl Budget {
    pub fn new(max_usd: f64) -> Self {
        Budget {
            max_usd,
            state: Mutex::new(BudgetState {
                spent: 0.0,
                in_flight: 0.0,
                exhausted: false,
            }),
        }
    }

    /// Reserves `amount` for a request about to be sent, or refuses (and refuses every later
    /// request) when spend, the reservations in flight and this one would pass the cap.
    pub fn reserve(&self, amount: f64) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.exhausted {
            return false;
        }
        if s.spent + s.in_flight + amount > self.max_usd {
            s.exhausted = true;
            return false;
        }
        s.in_flight += amount;
        true
    }

    /// A trial ended: its real cost replaces what it reserved (the reservation itself when the
    /// cost is unknown, or the trial was abandoned).
    pub fn settle(&self, reserved: f64, actual: Option<f64>) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.in_flight = (s.in_flight - reserved).max(0.0);
        s.spent += actual.unwrap_or(reserved);
    }

    /// Whether a request was refused.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_admits_requests_while_spend_and_reservations_fit_then_refuses_for_good() {
        let b = Budget::new(1.0);
        assert!(b.reserve(0.3));
        assert!(b.reserve(0.3));
        // 0.6 in flight + 0.5 would pass 1.0.
        assert!(!b.reserve(0.5));
        assert!(b.exhausted());
        // Refused for good, even though a cheaper request would still fit.
        assert!(!b.reserve(0.01));
        b.settle(0.3, Some(0.25));
        b.settle(0.3, None);
        assert!((b.spent() - 0.55).abs() < 1e-12);
    }

    #[test]
    fn the_worst_case_bills_every_byte_and_the_whole_output_bound() {
        let p = Price {
            input: 3.0,
            output: 15.0,
            cache_read: Some(0.3),
            cache_write: Some(3.75),
        };
        // 1000 bytes at the cache-write rate (the dearer) + 128 tokens out.
        let w = worst_case_usd(&p, 1000, 128);
        assert!((w - (1000.0 * 3.75 + 128.0 * 15.0) / 1e6).abs() < 1e-15);
        // No request of that body and bound can be billed more, whatever the split.
        for (input, read, write, output) in [
            (1000, 0, 0, 128),
            (1000, 0, 1000, 128),
            (1000, 1000, 0, 128),
        ] {
            let usage = Usage {
                input_tokens: Some(input),
                output_tokens: Some(output),
                cache_read_tokens: Some(read),
                cache_write_tokens: Some(write),
            };
            assert!(p.cost_of(&usage).unwrap() <= w + 1e-15);
        }
    }
}
