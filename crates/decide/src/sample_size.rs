//! `toolscore plan`: how many trials (and cases) to buy before spending anything.
//!
//! - Trials per case for a target half-width at planning rates (Wilson closed form,
//!   reference/stats.md §2.2): the observed case rates of an earlier run when given, else the
//!   conservative p = 0.5 and the rates tool selection usually lives at.
//! - Trials per case for a `--gate` at a requested power (exact binomial search, §2.3, the
//!   "first" and "stable" n), and the expected trials of the sequential gate at several true
//!   rates (exact dynamic programming, §6.3, of the gate as it runs: a case also stops once it
//!   cannot decide within `--max-trials`).
//! - Cases for a suite-level claim at the precision, from the between-case spread of an
//!   earlier run (§3.3): more trials per case cannot shrink that spread.
//! - Requests and tokens of each option, from an earlier run's usage or the fixtures'
//!   footprint.
//!
//! Pure: takes numbers, returns a `TrialPlan`; `render_plan` prints it to any writer.

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use toolscore_stats as stats;
use toolscore_summary::format_usd;

/// What the plan is asked for.
#[derive(Debug, Clone)]
pub struct PlanRequest {
    pub confidence: f64,
    /// Target half-width of a case's interval.
    pub precision: f64,
    pub power: f64,
    /// `--gate` thresholds, with the metric name for display.
    pub gates: Vec<(String, f64)>,
    /// Cases in the suite.
    pub cases: usize,
    /// Observed per-case rates of the gated (or first) metric in an earlier run, if any.
    pub observed_case_rates: Vec<f64>,
    /// The earlier run's case-level interval of the mean, for the cases a suite claim needs.
    pub observed_suite: Option<stats::ClusteredEstimate>,
    /// Where the token figures come from, and the mean tokens per request.
    pub tokens: TokenBasis,
    /// Trials per case the sequential gate may use.
    pub max_trials: u32,
    /// The provider's price, to show each option in dollars.
    pub price: Option<PlanPrice>,
    /// `--compare`: plan the sequential comparison of two arms at this `--min-effect`.
    pub compare: Option<f64>,
    /// Gates on an attacked run's rates (`attack_success<=T`, `utility_under_attack>=T`,
    /// `utility>=T`), each over the units it judges.
    pub attack_gates: Vec<AttackGateRequest>,
}

/// One gate on an attacked run's rate, to plan over the units it judges.
#[derive(Debug, Clone)]
pub struct AttackGateRequest {
    pub metric: String,
    pub threshold: f64,
    /// Lower is better (`attack_success`): judged as the floor on the complement at 1 − T.
    pub ceiling: bool,
    /// The (scenario × attack) units, or the attacked scenarios for `utility`.
    pub units: usize,
}

/// Replications behind each simulated row: enough for a standard error of a few tenths of a
/// round, few enough that `plan` answers in about a second.
const SIMULATED_REPS: u32 = 400;

/// The most trials one simulated row may draw (replications × rounds × cases at worst): a
/// suite of thousands of cases gets fewer replications, and a wider standard error that says
/// so, rather than a `plan` that takes minutes.
const SIMULATED_DRAWS: u64 = 40_000_000;

/// Replications for a row whose replications each draw at most `rounds × cases` trials: 400,
/// or fewer within [`SIMULATED_DRAWS`], and never fewer than 40.
fn simulated_reps(rounds: u32, cases: usize) -> u32 {
    let per_rep = u64::from(rounds.max(1)) * cases.max(1) as u64;
    (SIMULATED_DRAWS / per_rep).clamp(40, u64::from(SIMULATED_REPS)) as u32
}

/// A provider's price for the plan, and the output it assumes when the token basis has no
/// measured output.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PlanPrice {
    /// `NAME (KIND:MODEL)`.
    pub provider: String,
    pub price: toolscore_core::Price,
    pub source: String,
    /// Output tokens per request the dollars assume when the token basis measured none: the
    /// provider's `max_tokens`, or the run estimate's assumption.
    pub assumed_output_per_request: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TokenBasis {
    /// `run RUN_ID` (measured usage) or `fixtures` (characters / 4).
    pub source: String,
    pub input_per_request: f64,
    pub output_per_request: Option<f64>,
}

/// The plan, as data.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TrialPlan {
    pub confidence: f64,
    pub precision: f64,
    pub power: f64,
    pub cases: usize,
    pub tokens: TokenBasis,
    /// The price the options' dollars use, when the provider has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<PlanPrice>,
    /// Trials per case for ±precision at each planning rate.
    pub precision_rows: Vec<PrecisionRow>,
    pub gates: Vec<GatePlan>,
    /// Cases a suite-level claim at ±precision needs, from the earlier run's spread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite_cases: Option<SuiteCases>,
    /// `--compare`: the sequential comparison's expected rounds at several differences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<ComparisonPlan>,
    /// Gates on an attacked run's rates, per unit, in each metric's own terms.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attack_gates: Vec<AttackGatePlan>,
}

/// A gate on an attacked run's rate at `--gate-level case`: every unit must pass on its exact
/// bound, so each row is the trials one unit needs; rates and counts in the metric's own terms
/// (for a ceiling, the true attack success rate and the most goals a passing unit may have met).
/// No cost column: an attacked unit is a multi-step conversation, which the fixtures' tokens
/// per request do not price.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AttackGatePlan {
    pub metric: String,
    pub threshold: f64,
    pub ceiling: bool,
    pub units: usize,
    /// The fixed-n gate at a few true rates on the passing side of the bar.
    pub rows: Vec<AttackGateRow>,
    /// `--sequential --gate-level case`: expected trials per unit at rates either side.
    pub sequential: Vec<AttackSequentialRow>,
    /// β/m over the units.
    pub sequential_beta: f64,
    /// `--sequential --gate-level suite`: the mean over the units judged round by round,
    /// every unit at the row's true rate (in the metric's own terms); simulated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suite_sequential: Vec<RoundsRow>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AttackGateRow {
    pub true_rate: f64,
    /// Smallest n per unit with the power, and the n from which it keeps it.
    pub first: u64,
    pub stable: u64,
    /// At `first` trials: the fewest successes that pass a floor, or the most goals met that
    /// pass a ceiling.
    pub passing_count: u64,
    /// `first` × units.
    pub total_trials: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AttackSequentialRow {
    pub true_rate: f64,
    pub expected_trials: f64,
    pub p90_trials: u64,
    pub p_pass: f64,
    pub p_fail: f64,
}

/// A sequential design judged by rounds, at one true rate (or difference): its expected rounds
/// (simulated, with their Monte Carlo standard error, or exact), how often each verdict comes,
/// and the fixed-n design with the same α and the same power, when there is a power to match.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RoundsRow {
    /// The true suite rate, or B − A.
    pub true_value: f64,
    pub expected_rounds: f64,
    /// The Monte Carlo standard error of `expected_rounds`; 0 for an exact row.
    pub se_rounds: f64,
    /// Simulated replications; 0 for an exact row.
    pub reps: u32,
    /// Pass (or B better), fail (or B worse), no difference as large as the effect, undecided.
    pub shares: [f64; 4],
    /// Trials (all cases, both arms) the fixed-n test needs for the same α and the same chance
    /// of the verdict this row expects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed_trials: Option<f64>,
    pub cost: Cost,
}

/// The sequential comparison of two arms, planned.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ComparisonPlan {
    pub min_effect: f64,
    /// A's rate on every case.
    pub a_rate: f64,
    /// Whether the rows are exact (`stats::exact_comparison`, within its work limit) rather
    /// than simulated.
    #[serde(default)]
    pub exact: bool,
    pub rows: Vec<RoundsRow>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PrecisionRow {
    /// `p = 0.5 (worst case)`, `observed median case rate`, ….
    pub basis: String,
    pub rate: f64,
    pub trials_per_case: u64,
    pub cost: Cost,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GatePlan {
    pub metric: String,
    pub threshold: f64,
    pub rows: Vec<GateRow>,
    /// Expected trials per case of `--sequential` (PASS by the mixture SPRT, FAIL when the
    /// anytime-valid upper bound is below t) at several true rates.
    pub sequential: Vec<SequentialRow>,
    /// The same for `--sequential --sprt-p1 P1` at the default p₁ (PASS by the SPRT).
    pub sprt: Vec<SequentialRow>,
    /// `--sequential --sprt-p1 P1 --fail-below P1` at the default p₁: Wald's SPRT on both
    /// sides, whose FAIL means "below p₁" (the indifference zone, stats.md §6.3's design).
    #[serde(default)]
    pub sprt_fail_below: Vec<SequentialRow>,
    /// t + (1 − t)/2: the SPRT's default alternative, and the rate at which the fixed design
    /// matches power 1 − β/m.
    pub sequential_p1: f64,
    /// β/m: the most chance any case at or above t has of failing (under `--fail-below P1`, at
    /// or above p₁).
    pub sequential_beta: f64,
    /// Trials per case of the fixed-n gate with the sequential tests' guarantees (α at t,
    /// power 1 − β/m at p₁).
    pub sequential_fixed_trials: Option<u64>,
    /// `--gate-level suite --sequential`: this suite's rate judged round by round, every case
    /// at the row's rate (simulated).
    #[serde(default)]
    pub suite_sequential: Vec<RoundsRow>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GateRow {
    /// The true rate the power is computed at.
    pub true_rate: f64,
    /// Smallest n with the power (the exact power is sawtoothed in n).
    pub first: u64,
    /// Smallest n after which the power never drops below the target again.
    pub stable: u64,
    /// Successes needed at `first` trials.
    pub min_successes: u64,
    pub cost: Cost,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SequentialRow {
    pub true_rate: f64,
    pub expected_trials: f64,
    pub p90_trials: u64,
    pub p_pass: f64,
    pub p_fail: f64,
    /// Expected cost over the suite.
    pub cost: Cost,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SuiteCases {
    /// Sample standard deviation of the earlier run's case rates.
    pub spread: f64,
    pub cases_now: usize,
    pub cases_needed: u64,
}

/// Requests and tokens of running every case `trials` times (one request per trial: a
/// single-step fixture).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Cost {
    pub requests: u64,
    pub input_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// US dollars at the plan's price (output at the measured or assumed figure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd: Option<f64>,
}

fn cost(requests: f64, req: &PlanRequest) -> Cost {
    let tokens = &req.tokens;
    let input = requests * tokens.input_per_request;
    Cost {
        requests: requests.round() as u64,
        input_tokens: input.round() as u64,
        output_tokens: tokens
            .output_per_request
            .map(|o| (requests * o).round() as u64),
        usd: req.price.as_ref().map(|p| {
            let output = requests
                * tokens
                    .output_per_request
                    .unwrap_or(p.assumed_output_per_request);
            (input * p.price.input + output * p.price.output) / 1e6
        }),
    }
}

/// Rates tool selection usually lives at, beside the conservative 0.5.
const PLANNING_RATES: [f64; 4] = [0.5, 0.8, 0.9, 0.95];

/// The largest n the gate search tries.
const GATE_N_CAP: u64 = 200_000;

/// Computes the plan.
pub fn plan(req: &PlanRequest) -> TrialPlan {
    let conf2 = req.confidence;
    let precision_rows = precision_rows(req);
    let gates = req
        .gates
        .iter()
        .map(|(metric, t)| gate_plan(req, metric, *t))
        .collect();

    let suite_cases = req.observed_suite.as_ref().and_then(|est| {
        let spread = est.se * (est.cases as f64).sqrt();
        Some(SuiteCases {
            spread,
            cases_now: est.cases,
            cases_needed: stats::cases_for_half_width(est, req.precision, conf2)?,
        })
    });

    TrialPlan {
        confidence: req.confidence,
        precision: req.precision,
        power: req.power,
        cases: req.cases,
        tokens: req.tokens.clone(),
        price: req.price.clone(),
        precision_rows,
        gates,
        suite_cases,
        comparison: req.compare.map(|min_effect| {
            // A at the earlier run's mean case rate when there is one, else 0.8.
            let a_rate = req
                .observed_suite
                .as_ref()
                .map_or(0.8, |est| round4(est.mean));
            comparison_plan(req, min_effect, a_rate)
        }),
        attack_gates: req
            .attack_gates
            .iter()
            .map(|g| attack_gate_plan(req, g))
            .collect(),
    }
}

/// One attack gate per unit, planned as the floor it is judged as (a ceiling T at 1 − T) and
/// told back in the metric's terms: the fixed-n gate's trials at true rates a quarter, half
/// and three quarters of the way from the bar to the best rate, and at the best rate itself
/// (no goal ever met), and the sequential case gate's expected trials either side of the bar.
fn attack_gate_plan(req: &PlanRequest, g: &AttackGateRequest) -> AttackGatePlan {
    let own = |floor_rate: f64| {
        round4(if g.ceiling {
            1.0 - floor_rate
        } else {
            floor_rate
        })
    };
    let t = if g.ceiling {
        1.0 - g.threshold
    } else {
        g.threshold
    };
    let rows = [
        t + (1.0 - t) / 4.0,
        t + (1.0 - t) / 2.0,
        t + 3.0 * (1.0 - t) / 4.0,
        1.0,
    ]
    .into_iter()
    .filter_map(|p| {
        let s = stats::gate_sample_size(t, p, req.confidence, req.power, GATE_N_CAP)?;
        Some(AttackGateRow {
            true_rate: own(p),
            first: s.first,
            stable: s.stable,
            passing_count: if g.ceiling {
                s.first - s.min_successes_at_first
            } else {
                s.min_successes_at_first
            },
            total_trials: s.first * g.units as u64,
        })
    })
    .collect();
    let alpha = 1.0 - req.confidence;
    let beta = alpha / g.units.max(1) as f64;
    let p1 = t + (1.0 - t) / 2.0;
    let sequential =
        sequential_characteristics(req, stats::SequentialKind::Mixture, (t, p1, None), beta)
            .into_iter()
            .map(|(p, oc)| AttackSequentialRow {
                true_rate: own(p),
                expected_trials: oc.expected_n,
                p90_trials: oc.p90_n,
                p_pass: oc.p_pass,
                p_fail: oc.p_fail,
            })
            .collect();
    // The suite's rounds are rounds of units, judged on the floor (the complement of a
    // ceiling), told back in the metric's own terms.
    let suite_sequential = suite_rows(req, t, g.units)
        .into_iter()
        .map(|r| RoundsRow {
            true_value: own(r.true_value),
            ..r
        })
        .collect();
    AttackGatePlan {
        metric: g.metric.clone(),
        threshold: g.threshold,
        ceiling: g.ceiling,
        units: g.units,
        rows,
        sequential,
        sequential_beta: beta,
        suite_sequential,
    }
}

/// Trials per case for the precision asked, at the observed case rates and at planning rates.
fn precision_rows(req: &PlanRequest) -> Vec<PrecisionRow> {
    let m = req.cases as f64;
    let conf2 = req.confidence;
    let mut precision_rows = Vec::new();
    let mut observed = req.observed_case_rates.clone();
    observed.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    if !observed.is_empty() {
        // The case rate needing the most trials is the one nearest 0.5.
        let hardest = observed
            .iter()
            .copied()
            .min_by(|a, b| {
                (a - 0.5)
                    .abs()
                    .partial_cmp(&(b - 0.5).abs())
                    .unwrap_or(std::cmp::Ordering::Equal)
            })
            .unwrap_or(0.5);
        let median = observed[observed.len() / 2];
        for (basis, rate) in [
            ("observed median case rate", median),
            ("observed rate nearest 0.5 (every case within ±)", hardest),
        ] {
            if let Some(n) = stats::wilson_trials_for_half_width(rate, req.precision, conf2) {
                precision_rows.push(PrecisionRow {
                    basis: basis.to_owned(),
                    rate,
                    trials_per_case: n,
                    cost: cost(n as f64 * m, req),
                });
            }
        }
    }
    for rate in PLANNING_RATES {
        if let Some(n) = stats::wilson_trials_for_half_width(rate, req.precision, conf2) {
            precision_rows.push(PrecisionRow {
                basis: if rate == 0.5 {
                    "p = 0.5 (worst case)".to_owned()
                } else {
                    format!("p = {rate}")
                },
                rate,
                trials_per_case: n,
                cost: cost(n as f64 * m, req),
            });
        }
    }

    precision_rows
}

/// One gate's plan: the fixed-n trials at three true rates above its bar, and the sequential
/// design's expected trials at four.
fn gate_plan(req: &PlanRequest, metric: &str, t: f64) -> GatePlan {
    let m = req.cases as f64;
    let alpha = 1.0 - req.confidence;
    let p1 = t + (1.0 - t) / 2.0;
    let rows = [t + (1.0 - t) / 4.0, p1, t + 3.0 * (1.0 - t) / 4.0]
        .into_iter()
        .filter_map(|p| {
            let s = stats::gate_sample_size(t, p, req.confidence, req.power, GATE_N_CAP)?;
            Some(GateRow {
                true_rate: round4(p),
                first: s.first,
                stable: s.stable,
                min_successes: s.min_successes_at_first,
                cost: cost(s.first as f64 * m, req),
            })
        })
        .collect();
    let beta_case = alpha / m.max(1.0);
    let rows_of = |kind, fail_below| sequential_rows(req, kind, t, p1, fail_below, beta_case);
    GatePlan {
        metric: metric.to_owned(),
        threshold: t,
        rows,
        sequential: rows_of(stats::SequentialKind::Mixture, None),
        sprt: rows_of(stats::SequentialKind::Sprt, None),
        sprt_fail_below: rows_of(stats::SequentialKind::Sprt, Some(p1)),
        sequential_p1: p1,
        sequential_beta: beta_case,
        sequential_fixed_trials: stats::gate_sample_size(
            t,
            p1,
            req.confidence,
            1.0 - beta_case,
            GATE_N_CAP,
        )
        .map(|s| s.first),
        suite_sequential: suite_rows(req, t, req.cases),
    }
}

/// The sequential suite gate simulated with every case at each of five true rates.
fn suite_rows(req: &PlanRequest, t: f64, cases: usize) -> Vec<RoundsRow> {
    let alpha = 1.0 - req.confidence;
    [
        t - 0.1,
        t,
        t + (1.0 - t) / 4.0,
        t + (1.0 - t) / 2.0,
        t + 3.0 * (1.0 - t) / 4.0,
    ]
    .into_iter()
    .filter(|p| *p > 0.0 && *p < 1.0)
    .enumerate()
    .filter_map(|(i, p)| {
        let rates = vec![p; cases.max(1)];
        let oc = stats::simulate_suite_gate(
            t,
            alpha,
            &rates,
            req.max_trials,
            simulated_reps(req.max_trials, rates.len()),
            i as u64 + 1,
        )?;
        // The one-sided normal test of the pooled rate with the same α and power.
        let fixed = if p > t && oc.p_up > 0.5 {
            let (za, zb) = (
                stats::normal_quantile(1.0 - alpha)?,
                stats::normal_quantile(oc.p_up.min(0.9999))?,
            );
            Some(((za * (t * (1.0 - t)).sqrt() + zb * (p * (1.0 - p)).sqrt()) / (p - t)).powi(2))
        } else {
            None
        };
        Some(rounds_row(
            req,
            round4(p),
            &Characteristics::from(&oc),
            fixed,
            cases as f64,
        ))
    })
    .collect()
}

/// The sequential comparison with A at `a_rate` on every case and B at A + each difference:
/// none, the effect either way, twice the effect lower. Exact when every row is within
/// `stats::exact_comparison`'s work limit (the first row, no difference, is the costliest:
/// its undecided mass lasts longest, so a refusal comes there and costs little), else every
/// row simulated, so the rows read alike.
fn comparison_plan(req: &PlanRequest, min_effect: f64, a_rate: f64) -> ComparisonPlan {
    let alpha = 1.0 - req.confidence;
    let cases = req.cases.max(1);
    let differences: Vec<f64> = [0.0, -min_effect, min_effect, -2.0 * min_effect]
        .into_iter()
        .filter(|d| (0.0..=1.0).contains(&(a_rate + d)))
        .collect();
    let exact: Option<Vec<Characteristics>> = differences
        .iter()
        .map(|d| {
            let oc = stats::exact_comparison(
                alpha,
                min_effect,
                cases as u64,
                a_rate,
                a_rate + d,
                req.max_trials,
            )?;
            Some(Characteristics {
                mean_rounds: oc.expected_rounds,
                se_rounds: 0.0,
                reps: 0,
                shares: [oc.better, oc.worse, oc.within, oc.undecided],
            })
        })
        .collect();
    let is_exact = exact.is_some();
    let characteristics = exact.unwrap_or_else(|| {
        differences
            .iter()
            .enumerate()
            .filter_map(|(i, d)| {
                let rates = vec![(a_rate, a_rate + d); cases];
                let oc = stats::simulate_comparison(
                    alpha,
                    min_effect,
                    &rates,
                    req.max_trials,
                    simulated_reps(req.max_trials, 2 * rates.len()),
                    i as u64 + 101,
                )?;
                Some(Characteristics::from(&oc))
            })
            .collect()
    });
    let rows = differences
        .iter()
        .zip(&characteristics)
        .map(|(&d, oc)| {
            let b = a_rate + d;
            let [p_up, p_down, ..] = oc.shares;
            let power = if d < 0.0 { p_down } else { p_up };
            let fixed = if d != 0.0 && power > 0.5 {
                stats::normal_quantile(1.0 - alpha / 2.0)
                    .zip(stats::normal_quantile(power.min(0.9999)))
                    .map(|(za, zb)| {
                        let discordant = b * (1.0 - a_rate) + a_rate * (1.0 - b);
                        let sd = (discordant - d * d).sqrt();
                        2.0 * ((za + zb) * sd / d).powi(2)
                    })
            } else {
                None
            };
            rounds_row(req, round4(d), oc, fixed, 2.0 * req.cases as f64)
        })
        .collect();
    ComparisonPlan {
        min_effect,
        a_rate,
        exact: is_exact,
        rows,
    }
}

/// What a row reports of a design judged by rounds, simulated or exact.
struct Characteristics {
    mean_rounds: f64,
    se_rounds: f64,
    reps: u32,
    /// Pass (or better), fail (or worse), within, undecided.
    shares: [f64; 4],
}

impl From<&stats::SimulatedOc> for Characteristics {
    fn from(oc: &stats::SimulatedOc) -> Self {
        Characteristics {
            mean_rounds: oc.mean_rounds,
            se_rounds: oc.se_rounds,
            reps: oc.reps,
            shares: [oc.p_up, oc.p_down, oc.p_within, oc.p_undecided],
        }
    }
}

/// One row, its cost for `trials_per_round` trials a round.
fn rounds_row(
    req: &PlanRequest,
    true_value: f64,
    oc: &Characteristics,
    fixed_trials: Option<f64>,
    trials_per_round: f64,
) -> RoundsRow {
    RoundsRow {
        true_value,
        expected_rounds: oc.mean_rounds,
        se_rounds: oc.se_rounds,
        reps: oc.reps,
        shares: oc.shares,
        fixed_trials,
        cost: cost(oc.mean_rounds * trials_per_round, req),
    }
}

/// A sequential test's exact expected trials per case at true rates from below the bar to
/// well above it, as the gate runs it (curtailed at `--max-trials`).
fn sequential_rows(
    req: &PlanRequest,
    kind: stats::SequentialKind,
    t: f64,
    p1: f64,
    fail_below: Option<f64>,
    beta_case: f64,
) -> Vec<SequentialRow> {
    sequential_characteristics(req, kind, (t, p1, fail_below), beta_case)
        .into_iter()
        .map(|(p, oc)| SequentialRow {
            true_rate: round4(p),
            expected_trials: oc.expected_n,
            p90_trials: oc.p90_n,
            p_pass: oc.p_pass,
            p_fail: oc.p_fail,
            cost: cost(oc.expected_n * req.cases as f64, req),
        })
        .collect()
}

/// A sequential case test's exact operating characteristics within the plan's trial budget at
/// the planning rates either side of its bar t: t − 0.1, t, and a quarter, half (p₁) and
/// three quarters of the way from t to 1.
fn sequential_characteristics(
    req: &PlanRequest,
    kind: stats::SequentialKind,
    (t, p1, fail_below): (f64, f64, Option<f64>),
    beta_case: f64,
) -> Vec<(f64, stats::OperatingCharacteristics)> {
    let alpha = 1.0 - req.confidence;
    let Some(test) = stats::SequentialTest::new(kind, t, p1, fail_below, alpha, beta_case) else {
        return Vec::new();
    };
    [
        t - 0.1,
        t,
        t + (1.0 - t) / 4.0,
        p1,
        t + 3.0 * (1.0 - t) / 4.0,
    ]
    .into_iter()
    .filter(|p| *p > 0.0 && *p < 1.0)
    .filter_map(|p| {
        let oc = stats::curtailed_operating_characteristics(&test, p, u64::from(req.max_trials))?;
        Some((p, oc))
    })
    .collect()
}

/// Rows judged by rounds: expected rounds (with their standard error when simulated, bare when
/// `exact`), the shares of each verdict, the fixed-n design with the same α and power where
/// there is one, and the cost.
/// `priced`: whether the cost column means anything (the fixtures' tokens price a round of
/// cases, not a round of multi-step attacked units).
fn write_rounds_rows(
    w: &mut dyn Write,
    label: &str,
    [up, down]: [&str; 2],
    rows: &[RoundsRow],
    exact: bool,
    priced: bool,
) -> io::Result<()> {
    for r in rows {
        let [p_up, p_down, within, undecided] = r.shares;
        writeln!(
            w,
            "  {label} {:<6}  {}, {up} {p_up:.3} / {down} {p_down:.3}{} / undecided {undecided:.3}{}{}",
            if label == "B − A" {
                format!("{:+}", r.true_value)
            } else {
                r.true_value.to_string()
            },
            if exact {
                format!("{:>6.1} expected rounds", r.expected_rounds)
            } else {
                format!("{:>6.1} ± {:.1} rounds", r.expected_rounds, r.se_rounds)
            },
            // Shown when it would not print as 0 (an exact share is never quite 0).
            if within >= 0.0005 {
                format!(" / within {within:.3}")
            } else {
                String::new()
            },
            r.fixed_trials.map_or(String::new(), |n| format!(
                "; fixed-n with the same alpha and power: {n:.0} trials"
            )),
            if priced {
                format!("  {}", fmt_cost(&r.cost))
            } else {
                String::new()
            }
        )?;
    }
    Ok(())
}

/// One sequential test's rows under its heading (nothing when the test is undefined).
fn write_sequential_rows(
    w: &mut dyn Write,
    heading: &str,
    rows: &[SequentialRow],
) -> io::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(
        w,
        "  {heading}: expected trials per case, stops as soon as a case decides:"
    )?;
    for r in rows {
        writeln!(
            w,
            "  true rate {:<6}  {:>8.1} expected (90% within {}), pass {:.3} / fail {:.3}  {}",
            r.true_rate,
            r.expected_trials,
            r.p90_trials,
            r.p_pass,
            r.p_fail,
            fmt_cost(&r.cost)
        )?;
    }
    Ok(())
}

/// One attack gate's rows, in the metric's own terms.
fn write_attack_gate(w: &mut dyn Write, g: &AttackGatePlan, p: &TrialPlan) -> io::Result<()> {
    let (op, bound, count) = if g.ceiling {
        ("<=", "upper bound is within it", "goals met at most")
    } else {
        (">=", "lower bound clears it", "successes at least")
    };
    writeln!(
        w,
        "\ngate {}{op}{} per unit ({} units; every unit must pass: its exact one-sided {bound}), {:.0}% power per unit:",
        g.metric,
        g.threshold,
        g.units,
        p.power * 100.0
    )?;
    for r in &g.rows {
        writeln!(
            w,
            "  true rate {:<6}  {:>6} trials a unit (stable from {:>6}; pass needs {count} {})  {} trials over the units",
            r.true_rate, r.first, r.stable, r.passing_count, r.total_trials
        )?;
    }
    if !g.sequential.is_empty() {
        writeln!(
            w,
            "  --sequential --gate-level case (mixture SPRT, anytime-valid; fails a unit at most {:.4} of the time on the passing side of the bar): expected trials per unit:",
            g.sequential_beta
        )?;
        for r in &g.sequential {
            writeln!(
                w,
                "  true rate {:<6}  {:>8.1} expected (90% within {}), pass {:.3} / fail {:.3}",
                r.true_rate, r.expected_trials, r.p90_trials, r.p_pass, r.p_fail
            )?;
        }
    }
    write_suite_rounds(
        w,
        &format!(
            "--sequential --gate-level suite (the mean over these {} units judged round by round, every unit at the true rate",
            g.units
        ),
        &g.suite_sequential,
        false,
    )
}

/// The sequential suite gate's simulated rows under `heading` (nothing when there are none).
fn write_suite_rounds(
    w: &mut dyn Write,
    heading: &str,
    rows: &[RoundsRow],
    priced: bool,
) -> io::Result<()> {
    let Some(first) = rows.first() else {
        return Ok(());
    };
    writeln!(
        w,
        "  {heading}; {} simulated runs a row, ± Monte Carlo se):",
        first.reps
    )?;
    write_rounds_rows(w, "true rate", ["pass", "fail"], rows, false, priced)
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

fn fmt_cost(c: &Cost) -> String {
    let tokens = |n: u64| {
        if n >= 10_000_000 {
            format!("{:.0}M", n as f64 / 1e6)
        } else if n >= 10_000 {
            format!("{:.0}k", n as f64 / 1e3)
        } else {
            n.to_string()
        }
    };
    format!(
        "{} requests, {} in{}{}",
        c.requests,
        tokens(c.input_tokens),
        c.output_tokens
            .map_or(String::new(), |o| format!(" / {} out", tokens(o))),
        c.usd
            .map_or(String::new(), |usd| format!(", {}", format_usd(usd)))
    )
}

/// Prints the plan for a terminal.
// Long: one line per figure, in the order the report shows them.
pub fn render_plan(p: &TrialPlan, w: &mut dyn Write) -> io::Result<()> {
    writeln!(
        w,
        "plan for {} cases · {:.0}% confidence · tokens per request from {} ({:.0} in{})",
        p.cases,
        p.confidence * 100.0,
        p.tokens.source,
        p.tokens.input_per_request,
        p.tokens
            .output_per_request
            .map_or(String::new(), |o| format!(", {o:.0} out"))
    )?;
    if let Some(price) = &p.price {
        writeln!(
            w,
            "dollars at the price of {}: ${}/M in, ${}/M out ({}){}",
            price.provider,
            price.price.input,
            price.price.output,
            price.source,
            if p.tokens.output_per_request.is_some() {
                String::new()
            } else {
                format!(
                    "; output assumed {:.0} tokens per request",
                    price.assumed_output_per_request
                )
            }
        )?;
    }
    writeln!(
        w,
        "\ntrials per case for a case interval of ±{} (Wilson):",
        p.precision
    )?;
    for r in &p.precision_rows {
        writeln!(
            w,
            "  {:>6} trials  at {:<56} {}",
            r.trials_per_case,
            format!("{} ({:.3})", r.basis, r.rate),
            fmt_cost(&r.cost)
        )?;
    }
    for g in &p.gates {
        writeln!(
            w,
            "\ngate {}>={} per case (pass when the one-sided lower bound clears it), {:.0}% power:",
            g.metric,
            g.threshold,
            p.power * 100.0
        )?;
        for r in &g.rows {
            writeln!(
                w,
                "  true rate {:<6}  {:>6} trials (stable from {:>6}; pass needs {} successes)  {}",
                r.true_rate,
                r.first,
                r.stable,
                r.min_successes,
                fmt_cost(&r.cost)
            )?;
        }
        write_sequential_rows(
            w,
            "--sequential (mixture SPRT, no guess of the true rate)",
            &g.sequential,
        )?;
        write_sequential_rows(
            w,
            &format!("--sequential --sprt-p1 {} (SPRT)", round4(g.sequential_p1)),
            &g.sprt,
        )?;
        if !g.sequential.is_empty() {
            writeln!(
                w,
                "  both: pass a case at or below {} at most {:.3} of the time, fail one at or above it at most {:.4} (anytime-valid){}",
                g.threshold,
                1.0 - p.confidence,
                g.sequential_beta,
                g.sequential_fixed_trials.map_or(String::new(), |n| format!(
                    "; the fixed-n gate with these guarantees and power {:.4} at {} needs {n} trials per case",
                    1.0 - g.sequential_beta,
                    round4(g.sequential_p1)
                ))
            )?;
        }
        write_sequential_rows(
            w,
            &format!(
                "--sequential --sprt-p1 {p1} --fail-below {p1} (Wald's SPRT; an indifference zone: a case below {p1} may be called BELOW {p1} though it clears {})",
                g.threshold,
                p1 = round4(g.sequential_p1)
            ),
            &g.sprt_fail_below,
        )?;
        write_suite_rounds(
            w,
            "--gate-level suite --sequential (this suite's rate, every case at the true rate",
            &g.suite_sequential,
            true,
        )?;
    }
    for g in &p.attack_gates {
        write_attack_gate(w, g, p)?;
    }
    if let Some(c) = &p.comparison {
        writeln!(
            w,
            "\nrun --compare --sequential at --min-effect {}, A at {} on every case ({}):",
            c.min_effect,
            c.a_rate,
            if c.exact {
                "exact: a dynamic program over the counts after each round".to_owned()
            } else {
                format!(
                    "{} simulated runs a row, ± Monte Carlo se",
                    c.rows.first().map_or(0, |r| r.reps)
                )
            }
        )?;
        write_rounds_rows(w, "B − A", ["better", "worse"], &c.rows, c.exact, true)?;
    }
    match &p.suite_cases {
        Some(s) => writeln!(
            w,
            "\nsuite mean within ±{}: case rates spread {:.3} in the earlier run, so about {} cases are needed ({} now); more trials per case cannot shrink that spread",
            p.precision, s.spread, s.cases_needed, s.cases_now
        )?,
        None => writeln!(
            w,
            "\nsuite mean: give --from RUN_DIR (an earlier run) for the cases a suite-level claim at ±{} needs",
            p.precision
        )?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compare_request(cases: usize, max_trials: u32) -> PlanRequest {
        PlanRequest {
            confidence: 0.95,
            precision: 0.05,
            power: 0.8,
            gates: Vec::new(),
            cases,
            observed_case_rates: Vec::new(),
            observed_suite: None,
            tokens: TokenBasis {
                source: "fixtures".to_owned(),
                input_per_request: 100.0,
                output_per_request: None,
            },
            max_trials,
            price: None,
            compare: Some(0.05),
            attack_gates: Vec::new(),
        }
    }

    #[test]
    fn the_comparison_is_exact_within_the_work_limit_and_simulated_past_it() {
        // A small cell: exact, and the same figures as stats::exact_comparison.
        let small = plan(&compare_request(3, 60));
        let c = small.comparison.as_ref().expect("comparison");
        assert!(c.exact);
        let deltas: Vec<f64> = c.rows.iter().map(|r| r.true_value).collect();
        assert_eq!(deltas, [0.0, -0.05, 0.05, -0.1]);
        // B at A + the row's difference, as the plan computes it.
        let worse = stats::exact_comparison(0.05, 0.05, 3, 0.8, 0.8 + -2.0 * 0.05, 60).unwrap();
        let row = &c.rows[3];
        assert_eq!(
            (row.expected_rounds, row.shares[1], row.se_rounds, row.reps),
            (worse.expected_rounds, worse.worse, 0.0, 0)
        );
        let mut text = Vec::new();
        render_plan(&small, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains(
                "on every case (exact: a dynamic program over the counts after each round):"
            ),
            "{text}"
        );
        // No "±" on an exact row.
        assert!(
            text.contains("  B − A -0.1      53.8 expected rounds, better 0.000 / worse 0.272 / undecided 0.728  323 requests"),
            "{text}"
        );
        // 61 cases, 1,000 rounds: past the limit, every row simulated.
        let large = plan(&compare_request(61, 1000));
        let c = large.comparison.as_ref().expect("comparison");
        assert!(!c.exact && c.rows.iter().all(|r| r.reps > 0), "{c:?}");
        let mut text = Vec::new();
        render_plan(&large, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("simulated runs a row, ± Monte Carlo se"),
            "{text}"
        );
    }

    #[test]
    fn large_suites_get_fewer_replications_within_the_draw_budget() {
        assert_eq!(simulated_reps(1000, 61), 400);
        assert_eq!(simulated_reps(1000, 200), 200);
        // Never fewer than 40, however large the suite: the standard error says the rest.
        assert_eq!(simulated_reps(1000, 5000), 40);
        assert_eq!(simulated_reps(0, 0), 400);
    }
}
