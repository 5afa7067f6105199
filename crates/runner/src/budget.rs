//! Public as a namespace: callers write `budget::estimate`, `budget::Estimate`, `budget::worst_case_usd`.
//!
//! What a plan should cost before it runs, and the `--max-cost` cap while it runs.
//!
//! The estimate prices each (arm, case) trial from what the model reads — the catalog's token
//! footprint (`lint::tokens`) and the case's messages, at 4 characters a token — and what it
//! may write: the arm's `max_tokens`, or [`ASSUMED_OUTPUT_TOKENS`] when none is set. A
//! scenario trial counts `max_steps` such requests.
//!
//! The cap ([`Budget`]) admits a trial only when it can hold the worst case of every request
//! the trial may make ([`worst_case_usd`]: every byte of the body an input token, the whole
//! output bound), settles each request at what it was billed as soon as it is answered, and
//! stops admitting once spend alone leaves no room: every trial not started is counted as not
//! run, and a scenario trial whose next step cannot be covered ends as `budget_stopped`
//! (neither judged nor an infrastructure error).

use std::sync::Mutex;

use toolscore_core::Price;
use toolscore_core::Usage;

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

fn catalog_tokens(catalog: &toolscore_core::catalog::Catalog) -> u64 {
    catalog.tools.iter().map(toolscore_lint::tool_tokens).sum()
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
            let unit = PlannedUnit {
                arm: a,
                case,
                shard_seed: seeds.as_deref().map(|s| s[a * cases + case]),
            };
            let n = trials_to_run(plan, &unit, case_trials[case]);
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

/// One case under one arm, as the estimate counts its trials.
struct PlannedUnit {
    arm: usize,
    case: usize,
    /// The seed that places the unit's trials in shards, when the run is one.
    shard_seed: Option<u64>,
}

/// How many of `unit`'s trials this run makes: those in the shard, when the run is one, and
/// not done before a resume.
fn trials_to_run(plan: &RunPlan, unit: &PlannedUnit, trials: u32) -> u64 {
    (0..trials)
        .filter(|&t| {
            let key = toolscore_core::TrialKey {
                arm: unit.arm,
                case: unit.case,
                trial: t,
            };
            let in_shard = match (plan.shard, unit.shard_seed) {
                (Some(s), Some(seed)) => s.contains(seed, t),
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

/// The `--max-cost` cap, shared by the workers.
///
/// A trial is admitted with a hold on the cap: its opening request's worst case
/// ([`worst_case_usd`]) times the requests it may make (`max_steps` for a scenario), so the run
/// does not start more trials than the cap can finish. Each request draws its own worst case
/// from the hold before it is sent (a later step of a scenario, whose body has grown, takes the
/// difference from the cap, or is refused), and is settled at what it was billed as soon as it
/// is answered, so recorded spend is current between the steps of a trial. A request is sent
/// only while spend plus every hold stays within the cap; once spend reaches the cap, or a
/// request cannot be covered, nothing more is sent.
///
/// Usage the worst case does not bound (a provider that bills more than every byte of the body
/// as a token plus the whole output bound) cannot be prevented once a request is on the wire,
/// only limited: an arm's first request goes alone, and every later request of the arm is
/// reserved at its worst case scaled by the largest factor the arm's requests were billed over
/// theirs, and never below the largest such bill. (The floor matters when bills do not grow
/// with the request: a provider billing $1 a request, probed on the largest case, would
/// otherwise reserve less than $1 for every smaller one.) Such a run passes the cap by at most
/// what its requests in flight were billed beyond their reservations, and the run says so (a
/// warning in its report, recomputed from the records).
#[derive(Debug)]
pub struct Budget {
    max_usd: f64,
    state: Mutex<BudgetState>,
    /// Woken whenever spend is settled or a hold released: an admission waiting for room, or for
    /// its arm's first bill, looks again.
    changed: tokio::sync::Notify,
}

#[derive(Debug)]
struct BudgetState {
    spent: f64,
    /// The sum of every admitted trial's hold not yet settled or released.
    held: f64,
    /// A trial could not be admitted, or spend reached the cap: no trial starts any more (those
    /// running go on while the cap covers their requests).
    exhausted: bool,
    arms: Vec<ArmBilling>,
}

/// What one arm's bills taught the cap.
#[derive(Debug, Clone, Copy)]
struct ArmBilling {
    /// The largest multiple of its worst case one of the arm's requests was billed (1 until a
    /// request is billed more): every later reservation of the arm is scaled by it.
    overrun: f64,
    /// The largest bill of one of the arm's requests billed beyond its worst case (0 until
    /// one is): no later request of the arm is reserved less.
    overbill: f64,
    /// A request of the arm has been answered and settled.
    billed: bool,
    /// The arm's first trial is in flight and its other trials wait for the first bill.
    probing: bool,
}

impl ArmBilling {
    /// What a request of the arm whose worst case is `worst` is reserved at.
    fn reserve(self, worst: f64) -> f64 {
        (worst * self.overrun).max(self.overbill)
    }
}

/// How an admission ended.
#[derive(Debug)]
pub(crate) enum Admission<'a> {
    Admitted(TrialHold<'a>),
    /// The cap cannot cover the trial: it is not run, nor is any later one.
    Refused,
    /// Ctrl-C came while the trial waited for room.
    Cancelled,
}

impl Budget {
    pub fn new(max_usd: f64, arms: usize) -> Self {
        Budget {
            max_usd,
            state: Mutex::new(BudgetState {
                spent: 0.0,
                held: 0.0,
                exhausted: false,
                arms: vec![
                    ArmBilling {
                        overrun: 1.0,
                        overbill: 0.0,
                        billed: false,
                        probing: false,
                    };
                    arms
                ],
            }),
            changed: tokio::sync::Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BudgetState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Admits a trial of `arm` whose opening request costs at most `opening_worst` and which
    /// makes at most `requests` requests, holding their worst case on the cap. Waits while
    /// the holds in flight leave no room but spend alone would (they settle at what was
    /// billed, usually far below their worst case), or while the arm's first request is out;
    /// refuses, for good, once spend alone leaves no room.
    pub(crate) async fn admit(
        &self,
        arm: usize,
        opening_worst: f64,
        requests: u32,
        cancel: &toolscore_provider::Cancel,
    ) -> Admission<'_> {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            // Registered before the state is read, so a release in between still wakes it.
            changed.as_mut().enable();
            {
                let mut s = self.lock();
                if s.exhausted {
                    return Admission::Refused;
                }
                let billing = s.arms[arm];
                let amount = billing.reserve(opening_worst) * f64::from(requests.max(1));
                if s.spent + amount > self.max_usd {
                    s.exhausted = true;
                    drop(s);
                    self.changed.notify_waiters();
                    return Admission::Refused;
                }
                let awaiting_first_bill = !billing.billed && billing.probing;
                if !awaiting_first_bill && s.spent + s.held + amount <= self.max_usd {
                    s.held += amount;
                    let probe = !billing.billed;
                    s.arms[arm].probing |= probe;
                    return Admission::Admitted(TrialHold {
                        budget: self,
                        arm,
                        held: amount,
                        probe,
                        step_amount: 0.0,
                        step_worst: 0.0,
                        worst_usd: 0.0,
                    });
                }
            }
            tokio::select! {
                () = &mut changed => {}
                () = cancel.cancelled() => return Admission::Cancelled,
            }
        }
    }

    /// Whether spend reached the cap or a request could not be covered.
    #[cfg(test)]
    fn exhausted(&self) -> bool {
        self.lock().exhausted
    }

    #[cfg(test)]
    fn spent(&self) -> f64 {
        self.lock().spent
    }
}

/// One admitted trial's share of the cap: what it still holds, and the worst case of the
/// requests it sent (recorded, so a bill beyond it shows in the run's files). Released when
/// dropped, however the trial ended.
#[derive(Debug)]
pub(crate) struct TrialHold<'a> {
    budget: &'a Budget,
    arm: usize,
    held: f64,
    /// The trial's first request is its arm's first: the arm's other trials wait for its bill.
    probe: bool,
    /// What the request in flight drew from the hold, and its unscaled worst case.
    step_amount: f64,
    step_worst: f64,
    worst_usd: f64,
}

impl TrialHold<'_> {
    /// Covers a request whose worst case is `worst` before it is sent: from the hold, and the
    /// difference from the cap when the hold is short. `false` when the cap cannot cover it:
    /// the trial ends, and no trial starts any more.
    pub(crate) fn before_request(&mut self, worst: f64) -> bool {
        let mut s = self.budget.lock();
        if s.spent >= self.budget.max_usd {
            return false;
        }
        let amount = s.arms[self.arm].reserve(worst);
        if amount > self.held {
            let extra = amount - self.held;
            if s.spent + s.held + extra > self.budget.max_usd {
                s.exhausted = true;
                drop(s);
                self.budget.changed.notify_waiters();
                return false;
            }
            s.held += extra;
            self.held += extra;
        }
        self.step_amount = amount;
        self.step_worst = worst;
        self.worst_usd += worst;
        true
    }

    /// The request covered by [`TrialHold::before_request`] was answered and billed `billed`
    /// dollars (`None`: answered with no usage to price, counted at what it drew). Spend is
    /// current from here on; a bill beyond the request's worst case scales the arm's later
    /// reservations.
    pub(crate) fn after_request(&mut self, billed: Option<f64>) {
        let mut s = self.budget.lock();
        let drawn = self.step_amount.min(self.held);
        self.held -= drawn;
        s.held = (s.held - drawn).max(0.0);
        s.spent += billed.unwrap_or(drawn);
        let arm = &mut s.arms[self.arm];
        arm.billed = true;
        if let Some(b) = billed
            && self.step_worst > 0.0
            && b > self.step_worst
        {
            arm.overrun = arm.overrun.max(b / self.step_worst);
            arm.overbill = arm.overbill.max(b);
        }
        if s.spent >= self.budget.max_usd {
            s.exhausted = true;
        }
        self.step_amount = 0.0;
        drop(s);
        self.budget.changed.notify_waiters();
    }

    /// The unscaled worst case of every request the trial sent.
    pub(crate) fn worst_usd(&self) -> f64 {
        self.worst_usd
    }
}

impl Drop for TrialHold<'_> {
    fn drop(&mut self) {
        let mut s = self.budget.lock();
        s.held = (s.held - self.held).max(0.0);
        if self.probe && !s.arms[self.arm].billed {
            // Nothing of the probe was billed (an error, Ctrl-C): the next trial probes.
            s.arms[self.arm].probing = false;
        }
        drop(s);
        self.budget.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use toolscore_provider::Cancel;

    fn admitted<'a>(a: Admission<'a>) -> TrialHold<'a> {
        match a {
            Admission::Admitted(h) => h,
            other => panic!("not admitted: {other:?}"),
        }
    }

    /// Polls an admission once: `None` while it waits.
    fn now<'a>(f: impl std::future::Future<Output = Admission<'a>>) -> Option<Admission<'a>> {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut f = std::pin::pin!(f);
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(a) => Some(a),
            std::task::Poll::Pending => None,
        }
    }

    #[test]
    fn a_trial_holds_its_worst_case_over_its_steps_and_settles_each_request_when_billed() {
        let cancel = Cancel::new();
        let b = Budget::new(1.0, 1);
        // Three requests at 0.2 each: 0.6 held.
        let mut first = admitted(now(b.admit(0, 0.2, 3, &cancel)).unwrap());
        assert!(first.before_request(0.2));
        first.after_request(Some(0.05));
        assert!((b.spent() - 0.05).abs() < 1e-12);
        // 0.05 spent + 0.4 still held + 0.6 would pass 1.0: the next trial waits for room…
        assert!(now(b.admit(0, 0.2, 3, &cancel)).is_none());
        // …and is admitted once the first trial ends and releases what it did not use.
        drop(first);
        let mut second = admitted(now(b.admit(0, 0.2, 3, &cancel)).unwrap());
        // A later step whose body grew takes the difference from the cap.
        assert!(second.before_request(0.2));
        second.after_request(Some(0.2));
        assert!(second.before_request(0.2));
        second.after_request(Some(0.2));
        assert!(second.before_request(0.5));
        second.after_request(Some(0.5));
        assert!((b.spent() - 0.95).abs() < 1e-12);
        assert!((second.worst_usd() - 0.9).abs() < 1e-12);
        // Spend alone leaves no room: refused, and nothing is admitted after.
        assert!(!second.before_request(0.2));
        assert!(b.exhausted());
        drop(second);
        assert!(matches!(
            now(b.admit(0, 0.01, 1, &cancel)),
            Some(Admission::Refused)
        ));
    }

    #[test]
    fn an_arms_first_request_goes_alone_and_a_bill_beyond_the_worst_case_scales_the_rest() {
        let cancel = Cancel::new();
        let b = Budget::new(5.0, 2);
        let mut probe = admitted(now(b.admit(0, 0.001, 1, &cancel)).unwrap());
        // The arm's other trials wait for the first bill; another arm probes on its own.
        assert!(now(b.admit(0, 0.001, 1, &cancel)).is_none());
        let other_arm = admitted(now(b.admit(1, 0.001, 1, &cancel)).unwrap());
        drop(other_arm);
        assert!(probe.before_request(0.001));
        // Billed $1 for a request that could cost at most $0.001: a factor of 1000.
        probe.after_request(Some(1.0));
        drop(probe);
        // Every later trial of the arm is held at $1: four more fit under $5, not 4,000.
        let holds: Vec<_> = (0..4)
            .map(|_| admitted(now(b.admit(0, 0.001, 1, &cancel)).unwrap()))
            .collect();
        assert!(
            now(b.admit(0, 0.001, 1, &cancel)).is_none(),
            "a fifth waits"
        );
        drop(holds);
    }

    /// The race `cli_cost::impossible_usage_stops_at_the_cap_and_the_run_names_the_provider`
    /// lost once in four runs: the probe was the largest case, so the factor alone reserved
    /// every smaller case below the $1 each request is billed, and five fitted under $4.
    #[test]
    fn a_flat_bill_is_reserved_in_full_whichever_case_probed() {
        let cancel = Cancel::new();
        let b = Budget::new(5.0, 1);
        let mut probe = admitted(now(b.admit(0, 0.001, 1, &cancel)).unwrap());
        assert!(probe.before_request(0.001));
        probe.after_request(Some(1.0));
        drop(probe);
        // A smaller case: a factor of 1000 would reserve $0.80 and admit five.
        let mut holds: Vec<_> = (0..4)
            .map(|_| admitted(now(b.admit(0, 0.0008, 1, &cancel)).unwrap()))
            .collect();
        assert!(
            now(b.admit(0, 0.0008, 1, &cancel)).is_none(),
            "a fifth waits"
        );
        for h in &mut holds {
            assert!(h.before_request(0.0008));
            h.after_request(Some(1.0));
        }
        assert!((b.spent() - 5.0).abs() < 1e-12, "{}", b.spent());
    }

    #[test]
    fn spend_reaching_the_cap_stops_everything_whatever_the_holds_said() {
        let cancel = Cancel::new();
        let b = Budget::new(1.0, 1);
        let mut probe = admitted(now(b.admit(0, 0.1, 1, &cancel)).unwrap());
        assert!(probe.before_request(0.1));
        // Billed beyond the cap in one answer: nothing more is sent.
        probe.after_request(Some(3.0));
        assert!(b.exhausted());
        drop(probe);
        assert!(matches!(
            now(b.admit(0, 0.0, 1, &cancel)),
            Some(Admission::Refused)
        ));
    }

    #[test]
    fn a_probe_that_was_never_billed_hands_the_probe_to_the_next_trial() {
        let cancel = Cancel::new();
        let b = Budget::new(1.0, 1);
        let probe = admitted(now(b.admit(0, 0.1, 1, &cancel)).unwrap());
        assert!(now(b.admit(0, 0.1, 1, &cancel)).is_none());
        drop(probe);
        let next = admitted(now(b.admit(0, 0.1, 1, &cancel)).unwrap());
        assert!(next.probe);
        // Ctrl-C ends a wait.
        cancel.cancel();
        assert!(matches!(
            now(b.admit(0, 0.1, 1, &cancel)),
            Some(Admission::Cancelled)
        ));
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
