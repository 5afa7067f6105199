//! Cost to decision: how many trials each sequential case gate spends before a verdict, and
//! how often it errs at the boundary, measured through the binary against a seeded random
//! fake provider whose every answer is right with a known probability p.
//!
//! For each procedure (the default of `--sequential`: PASS by the mixture SPRT, FAIL only when
//! the anytime-valid upper bound is below the bar; `--sprt-p1 0.9`: PASS by the SPRT, the same
//! FAIL; `--fail-below 0.9`: the mixture's PASS with the indifference-zone FAIL the default had
//! before issue 40) and each true rate of the grid t, t + 0.03, t + 0.07, t + 0.15, it runs
//! `toolscore run --gate pass>=t --gate-level case --sequential` on 4 cases until it has
//! `BENCH_REPS` case verdicts (2,000 by default: 500 runs), and prints the mean trials per case
//! with its Monte Carlo standard error and the share of PASS / FAIL / inconclusive verdicts
//! beside the exact figures of the same design (`stats::curtailed_operating_characteristics`,
//! the gate as it runs), and the fixed-n gate with the same guarantees (from `toolscore plan`).
//! Ratios are computed from the exact figures (the measured ones in brackets). It checks the
//! false FAIL at t, t + 0.03 and t + 0.07 against β per case and the PASS side's cost at t + 0.07
//! against 0.70 of the fixed design, and ends with the least any test with these guarantees
//! can spend at each rate (a Wald-type bound), so a goal below it can be seen to be out of
//! reach rather than missed.
//!
//! Then the sequential comparison of two catalog variants (`run --variant base --variant clear
//! --compare --sequential`) on 10 cases, A right with probability 0.8 and B with 0.7 (B worse
//! by 0.10), and both at 0.8: `BENCH_REPS` runs each, with the rounds to a verdict, how often
//! each verdict came, and the fixed-n paired comparison with the same α and the same power,
//! beside the exact figures of the same design (`stats::exact_comparison`).
//!
//! Run: `cargo bench --bench cost_to_decision` (env: BENCH_REPS=2000, BENCH_SEED=2026,
//! BENCH_PART=gates|compare|suite|all). Nothing else should run beside it: it is 18,000 runs
//! of the binary (about 15 minutes for the gates, 12 for the comparisons, 8 for the suite).

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test or benchmark program reports what it measured on the terminal"
)]

#[path = "../tests/it/support/mod.rs"]
mod support;

use std::sync::Mutex;

use serde_json::Value;
use support::{FakeResponse, FakeServer, fake_project, text_body, tool_call_body};
use toolscore_stats::{self as stats, SeededUniform, SequentialKind, SequentialTest};

const THRESHOLD: f64 = 0.8;
/// p₁: halfway from the threshold to 1, the SPRT's alternative in `--sprt-p1 0.9`, the rate of
/// `--fail-below 0.9`, and where the fixed design's power is matched.
const P1: f64 = 0.9;
const ALPHA: f64 = 0.05;
const CASES: usize = 4;
const MAX_TRIALS: u32 = 200;
const CONCURRENCY: &str = "4";

const TOOLS: &str = r#"{"tools": [
  {"name": "lookup", "description": "Look something up.", "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false}}
]}"#;

/// What one cell measured: per case verdict counts and the trials each run used.
#[derive(Default)]
struct Cell {
    pass: u64,
    fail: u64,
    inconclusive: u64,
    /// Trials used per run (all its cases), for the mean and its standard error.
    run_trials: Vec<f64>,
}

impl Cell {
    fn cases(&self) -> u64 {
        self.pass + self.fail + self.inconclusive
    }

    /// Mean trials per case and its Monte Carlo standard error (runs are the replications).
    fn mean_trials(&self) -> (f64, f64) {
        let runs = self.run_trials.len() as f64;
        let per_case: Vec<f64> = self.run_trials.iter().map(|t| t / CASES as f64).collect();
        let mean = per_case.iter().sum::<f64>() / runs;
        let var = per_case.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (runs - 1.0);
        (mean, (var / runs).sqrt())
    }

    fn share(&self, count: u64) -> f64 {
        count as f64 / self.cases() as f64
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // `cargo test --benches` runs benches with `--test`-like flags; do nothing then.
    if !args.iter().any(|a| a == "--bench") {
        return;
    }
    let reps: usize = env_or("BENCH_REPS", 2000);
    let seed: u64 = env_or("BENCH_SEED", 2026);
    let part: String = env_or("BENCH_PART", "all".to_owned());
    if part == "all" || part == "gates" {
        case_gates(reps, seed);
    }
    if part == "all" || part == "compare" {
        comparisons(reps, seed);
    }
    if part == "all" || part == "suite" {
        suite_gates(reps, seed);
    }
}

/// One case-gate design measured: its name, its PASS side, `--fail-below` when it uses the
/// indifference zone, and the flags that ask `run` for it.
struct Procedure {
    name: &'static str,
    kind: SequentialKind,
    fail_below: Option<f64>,
    flags: &'static [&'static str],
}

/// What the exact dynamic program and the binary measured for one design at one rate.
struct Measured {
    name: &'static str,
    p: f64,
    exact: stats::OperatingCharacteristics,
    mean: f64,
    /// The share of case verdicts that were FAIL.
    fail_share: f64,
}

/// The case gates, `reps` case verdicts per true rate: the default (mixture PASS, FAIL when the
/// anytime-valid upper bound is below the bar), `--sprt-p1` (SPRT PASS, the same FAIL), and
/// `--fail-below` (mixture PASS, the indifference-zone FAIL the default had before issue 40).
// Long: one table and the lines that read it, in the order the docs quote them.
fn case_gates(reps: usize, seed: u64) {
    let runs = reps.div_ceil(CASES);
    let beta_case = ALPHA / CASES as f64;
    let fixed = fixed_design_trials();
    println!(
        "cost to decision: gate pass>={THRESHOLD} per case, {CASES} cases, alpha {ALPHA} to pass, beta {beta_case} per case to fail, at most {MAX_TRIALS} trials a case (stopped once it cannot decide within them); {runs} runs ({} case verdicts) per cell, seed {seed}",
        runs * CASES
    );
    println!(
        "the fixed-n gate with the same alpha, the same FAIL guarantee and power 1 - beta at p1 {P1} (toolscore plan): {fixed} trials per case"
    );
    println!(
        "exact: the dynamic program of the same design (stats::curtailed_operating_characteristics); /fixed divides the exact trials by {fixed}\n"
    );
    println!(
        "{:<11} {:>6}  {:>16} {:>7} {:>6}  {:>14} {:>18} {:>14}",
        "test",
        "true p",
        "trials/case ± se",
        "exact",
        "/fixed",
        "PASS (exact)",
        "FAIL (exact)",
        "undecided (ex.)"
    );
    let procedures = [
        Procedure {
            name: "mixture",
            kind: SequentialKind::Mixture,
            fail_below: None,
            flags: &[],
        },
        Procedure {
            name: "sprt",
            kind: SequentialKind::Sprt,
            fail_below: None,
            flags: &["--sprt-p1", "0.9"],
        },
        Procedure {
            name: "fail-below",
            kind: SequentialKind::Mixture,
            fail_below: Some(P1),
            flags: &["--fail-below", "0.9"],
        },
    ];
    let rates = [0.0, 0.03, 0.07, 0.15].map(|d: f64| ((THRESHOLD + d) * 100.0).round() / 100.0);
    let mut measured = Vec::new();
    for proc in &procedures {
        let design =
            SequentialTest::new(proc.kind, THRESHOLD, P1, proc.fail_below, ALPHA, beta_case)
                .expect("design");
        for (i, &p) in rates.iter().enumerate() {
            let cell = measure(p, proc.flags, runs, seed.wrapping_add(i as u64));
            let exact =
                stats::curtailed_operating_characteristics(&design, p, u64::from(MAX_TRIALS))
                    .expect("exact");
            let (mean, se) = cell.mean_trials();
            println!(
                "{:<11} {p:>6.2}  {mean:>9.1} ± {se:>4.1} {:>7.1} {:>6.3}  {:>5.3} ({:.3}) {:>7.4} ({:.6}) {:>5.3} ({:.3})",
                proc.name,
                exact.expected_n,
                exact.expected_n / fixed as f64,
                cell.share(cell.pass),
                exact.p_pass,
                cell.share(cell.fail),
                exact.p_fail,
                cell.share(cell.inconclusive),
                exact.p_truncated,
            );
            if p == THRESHOLD {
                let se_pass = (ALPHA * (1.0 - ALPHA) / cell.cases() as f64).sqrt();
                println!(
                    "            false PASS at t: {:.4} (alpha {ALPHA}, Monte Carlo se {se_pass:.4}): {}",
                    cell.share(cell.pass),
                    if cell.share(cell.pass) <= ALPHA + 2.0 * se_pass {
                        "kept"
                    } else {
                        "EXCEEDED"
                    }
                );
            }
            measured.push(Measured {
                name: proc.name,
                p,
                exact,
                mean,
                fail_share: cell.share(cell.fail),
            });
        }
    }
    let of = |name: &str, p: f64| {
        measured
            .iter()
            .find(|m| m.name == name && m.p == p)
            .expect("measured")
    };
    println!(
        "\nfalse FAIL at and above the bar (exact; measured), against beta {beta_case} per case:"
    );
    for proc in &procedures {
        let line: Vec<String> = rates[..3]
            .iter()
            .map(|&p| {
                let m = of(proc.name, p);
                format!("p {p:.2}: {:.6} ({:.4})", m.exact.p_fail, m.fail_share)
            })
            .collect();
        let kept = rates[..3]
            .iter()
            .all(|&p| of(proc.name, p).exact.p_fail <= beta_case);
        println!(
            "  {:<11} {}: {}",
            proc.name,
            line.join(", "),
            match (kept, proc.fail_below) {
                (true, _) => "kept".to_owned(),
                (false, Some(rate)) =>
                    format!("not kept: it fails below {rate}, not below the bar"),
                (false, None) => "EXCEEDED".to_owned(),
            }
        );
    }
    println!(
        "\nthe mixture against the SPRT, exact expected trials per case (measured in brackets):"
    );
    for &p in &rates {
        let (m, s) = (of("mixture", p), of("sprt", p));
        println!(
            "  p {p:.2}: {:.3} of the SPRT's trials ({:.3}), {:.3} of the fixed design's ({:.3})",
            m.exact.expected_n / s.exact.expected_n,
            m.mean / s.mean,
            m.exact.expected_n / fixed as f64,
            m.mean / fixed as f64
        );
    }
    let pass_side = of("mixture", rates[2]).exact.expected_n / fixed as f64;
    println!(
        "  the PASS side at t + 0.07: {pass_side:.3} of the fixed design (goal <= 0.70): {}",
        if pass_side <= 0.70 { "kept" } else { "MISSED" }
    );
    println!(
        "\nthe least any test with P(PASS | p <= t) <= alpha can spend to pass a case at p as often as the default does (its exact P(PASS)), by Wald's bound E_p[N]·KL(p‖t) >= kl(P_p(PASS) ‖ alpha):"
    );
    for &p in &rates[1..] {
        let m = of("mixture", p);
        let least = least_expected_trials(p, m.exact.p_pass);
        println!(
            "  p {p:.2}: {least:.1} trials per case ({:.3} of the fixed design; the default spends {:.1}, {:.2}x the floor)",
            least / fixed as f64,
            m.exact.expected_n,
            m.exact.expected_n / least
        );
    }
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The fixed design's trials per case, as `toolscore plan` reports them for this gate.
fn fixed_design_trials() -> u64 {
    let server = FakeServer::start_in_background(|_| FakeResponse::ok(text_body("unused")));
    let dir = fake_project(&server.base_url, TOOLS, &cases(CASES), &[]);
    let plan = support::toolscore(
        dir.path(),
        &[
            "plan",
            "--gate",
            &format!("pass>={THRESHOLD}"),
            "--max-trials",
            &MAX_TRIALS.to_string(),
            "--json",
            "plan.json",
        ],
    );
    assert_eq!(plan.code, 0, "{}", plan.transcript());
    let json = support::read_json(&dir.path().join("plan.json"));
    json["gates"][0]["sequential_fixed_trials"]
        .as_u64()
        .expect("fixed design")
}

/// `n` cases that each expect `lookup`.
fn cases(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "{{\"id\": \"c{i}\", \"messages\": [{{\"role\": \"user\", \"content\": \"case {i}\"}}], \"expect\": {{\"tool\": \"lookup\"}}}}\n"
            )
        })
        .collect()
}

/// A fake provider that answers right with probability `rate_of(request)`, every draw from
/// one seeded stream (with several requests in flight the draws reach the cases in arrival
/// order, which keeps each case's outcomes independent).
fn seeded_fake(
    seed: u64,
    rate_of: impl Fn(&support::FakeRequest) -> f64 + Send + Sync + 'static,
) -> FakeServer {
    let stream = Mutex::new(SeededUniform::new(seed));
    let right = tool_call_body(&[("lookup", "{}")]);
    let wrong = text_body("no idea");
    FakeServer::start_in_background(move |req| {
        let u = stream.lock().expect("lock").unit();
        FakeResponse::ok(if u < rate_of(req) {
            right.clone()
        } else {
            wrong.clone()
        })
    })
}

/// Runs `toolscore run ARGS` `runs` times in `dir`, each into its own run folder, hands each
/// summary.json to `read`, and removes the folder.
fn run_many(dir: &std::path::Path, args: &[&str], runs: usize, mut read: impl FnMut(&Value)) {
    for r in 0..runs {
        let run_id = format!("r{r}");
        let mut all = vec![
            "run",
            "--out",
            "out",
            "--run-id",
            &run_id,
            "--progress",
            "off",
        ];
        all.extend_from_slice(args);
        let run = support::toolscore(dir, &all);
        assert!(matches!(run.code, 0 | 1 | 3), "{}", run.transcript());
        let run_dir = dir.join("out").join(&run_id);
        read(&support::read_json(&run_dir.join("summary.json")));
        std::fs::remove_dir_all(&run_dir).expect("remove the run");
    }
}

/// `runs` sequential runs at true rate `p`: every answer is right with probability p, drawn
/// from one seeded stream (with several requests in flight the draws reach the cases in
/// arrival order, which keeps each case's outcomes independent Bernoulli(p)).
fn measure(p: f64, flags: &[&str], runs: usize, seed: u64) -> Cell {
    let server = seeded_fake(seed, move |_| p);
    let dir = fake_project(&server.base_url, TOOLS, &cases(CASES), &[]);
    let gate = format!("pass>={THRESHOLD}");
    let max_trials = MAX_TRIALS.to_string();
    let mut args = vec![
        "--provider",
        "fake",
        "--gate",
        &gate,
        "--gate-level",
        "case",
        "--sequential",
        "--max-trials",
        &max_trials,
        "--concurrency",
        CONCURRENCY,
    ];
    args.extend_from_slice(flags);
    let mut cell = Cell::default();
    run_many(dir.path(), &args, runs, |summary| {
        let gate = &summary["gate"]["gates"][0];
        let count = |key: &str| gate[key].as_u64().expect(key);
        cell.pass += count("passed_cases");
        cell.fail += count("failed_cases");
        cell.inconclusive += count("inconclusive_cases");
        let used = gate["sequential"]["trials_used"]
            .as_f64()
            .expect("trials used");
        cell.run_trials.push(used);
    });
    cell
}

/// Binary Kullback–Leibler divergence kl(x ‖ y).
fn kl(x: f64, y: f64) -> f64 {
    let term = |a: f64, b: f64| if a > 0.0 { a * (a / b).ln() } else { 0.0 };
    term(x, y) + term(1.0 - x, 1.0 - y)
}

/// The least expected trials at true rate p of any test that passes a case at t at most α of
/// the time (however it stops) and passes one at p with probability `pass`:
/// `E_p[N]·KL(p‖t) ≥ kl(P_p(PASS) ‖ P_t(PASS)) ≥ kl(pass ‖ α)` (the data-processing inequality
/// at a stopping time, Wald's bound). No test that keeps P(FAIL | p ≥ t) small always decides
/// near t, so the bound is taken at the design's own chance of passing rather than minimised
/// over it; the FAIL guarantee would only raise it (a case at p > t seldom fails).
fn least_expected_trials(p: f64, pass: f64) -> f64 {
    if pass <= ALPHA {
        return 0.0;
    }
    kl(pass, ALPHA) / kl(p, THRESHOLD)
}

/// Cases of the comparison benchmark.
const COMPARE_CASES: usize = 10;
/// Rounds a comparison may use.
const COMPARE_ROUNDS: u32 = 100;
/// The base catalog's rate; the `clear` variant's is this plus the difference of the cell.
const COMPARE_A: f64 = 0.8;
/// `--min-effect` of the comparison (`run`'s default).
const COMPARE_EFFECT: f64 = 0.05;

const CLEAR: &str = r#"{"tools": {"lookup": {"description": "CLEAR: look something up."}}}"#;

/// The sequential comparison: rounds to a verdict at B − A = −0.10 and at 0, `reps` runs each,
/// beside the exact figures of the same design (`stats::exact_comparison`, the dynamic program
/// over the counts after each round). Ratios and bounds are computed from the exact figures
/// (the measured ones in brackets).
// Long: one table and the lines that read it, in the order the docs quote them.
fn comparisons(reps: usize, seed: u64) {
    println!(
        "\nsequential comparison: run --variant base --variant clear --compare --sequential on {COMPARE_CASES} cases, alpha {ALPHA}, --min-effect {COMPARE_EFFECT}, at most {COMPARE_ROUNDS} rounds; A right with probability {COMPARE_A}; {reps} runs per cell, seed {seed}"
    );
    println!(
        "exact: the dynamic program of the same design (stats::exact_comparison), every case at the same rates"
    );
    for (i, difference) in [-0.10, 0.0].into_iter().enumerate() {
        let b = COMPARE_A + difference;
        let cell = measure_comparisons(b, reps, seed.wrapping_add(100 + i as u64));
        let runs = cell.rounds.len() as f64;
        let mean = cell.rounds.iter().sum::<f64>() / runs;
        let var = cell.rounds.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (runs - 1.0);
        let share = |v: &str| cell.verdicts.iter().filter(|x| *x == v).count() as f64 / runs;
        let trials = 2.0 * COMPARE_CASES as f64 * mean;
        println!(
            "  B − A {difference:+.2}: {mean:.1} ± {:.1} rounds ({trials:.0} trials) to a verdict; better {:.4}, worse {:.4}, within ±{COMPARE_EFFECT} {:.4}, undecided {:.4}",
            (var / runs).sqrt(),
            share("better"),
            share("worse"),
            share("equivalent"),
            share("inconclusive")
        );
        let exact = stats::exact_comparison(
            ALPHA,
            COMPARE_EFFECT,
            COMPARE_CASES as u64,
            COMPARE_A,
            b,
            COMPARE_ROUNDS,
        )
        .expect("the benchmark's cell is within the exact work limit");
        let exact_trials = 2.0 * COMPARE_CASES as f64 * exact.expected_rounds;
        println!(
            "    exact: {:.2} rounds ({exact_trials:.1} trials); better {:.4}, worse {:.4}, within ±{COMPARE_EFFECT} {:.4}, undecided {:.4}",
            exact.expected_rounds, exact.better, exact.worse, exact.within, exact.undecided
        );
        if difference == 0.0 {
            let false_rate = share("better") + share("worse");
            let se = (ALPHA * (1.0 - ALPHA) / runs).sqrt();
            println!(
                "    false better/worse at equal rates: {:.4} exact ({false_rate:.4} measured, Monte Carlo se {se:.4}), alpha {ALPHA}: {}",
                exact.better + exact.worse,
                if exact.better + exact.worse <= ALPHA {
                    "kept"
                } else {
                    "EXCEEDED"
                }
            );
        } else {
            let power = share("worse");
            let fixed = fixed_paired_trials(COMPARE_A, b, exact.worse);
            let fixed_measured = fixed_paired_trials(COMPARE_A, b, power);
            println!(
                "    the fixed-n paired comparison with the same alpha and power {:.4} ({power:.4}) needs {fixed:.0} trials ({fixed_measured:.0}), {:.1} rounds: the sequential one uses {:.3} of it ({:.3})",
                exact.worse,
                fixed / (2.0 * COMPARE_CASES as f64),
                exact_trials / fixed,
                trials / fixed_measured
            );
            let least = 2.0 * least_pairs(COMPARE_A, b, exact.worse);
            let least_measured = 2.0 * least_pairs(COMPARE_A, b, power);
            println!(
                "    the least any test deciding `worse` this often at alpha/2 can spend: {least:.0} trials ({least_measured:.0}), {:.3} of the fixed design ({:.3})",
                least / fixed,
                least_measured / fixed_measured
            );
        }
    }
}

/// What one comparison cell measured: each run's rounds to its verdict, and the verdict.
#[derive(Default)]
struct CompareCell {
    rounds: Vec<f64>,
    verdicts: Vec<String>,
}

/// `runs` sequential comparisons: the base catalog is answered right with probability
/// `COMPARE_A`, the `clear` variant with `b`, every answer drawn from one seeded stream.
fn measure_comparisons(b: f64, runs: usize, seed: u64) -> CompareCell {
    let server = seeded_fake(seed, move |req| {
        if req.body["tools"].to_string().contains("CLEAR") {
            b
        } else {
            COMPARE_A
        }
    });
    let dir = fake_project(
        &server.base_url,
        TOOLS,
        &cases(COMPARE_CASES),
        &[("data/variants/clear.json", CLEAR)],
    );
    let rounds = COMPARE_ROUNDS.to_string();
    let args = [
        "--provider",
        "fake",
        "--variant",
        "base",
        "--variant",
        "clear",
        "--compare",
        "--sequential",
        "--max-trials",
        &rounds,
        "--concurrency",
        "4",
    ];
    let mut cell = CompareCell::default();
    run_many(dir.path(), &args, runs, |summary| {
        let seq = &summary["comparison"]["visible"]["sequential"];
        cell.rounds.push(seq["rounds"].as_f64().expect("rounds"));
        cell.verdicts
            .push(seq["verdict"].as_str().expect("verdict").to_owned());
    });
    cell
}

/// Trials (both arms) the fixed-n comparison of the mean pair difference needs to find B
/// worse at two-sided level α with probability `power`, by the normal approximation
/// `pairs = ((z_{1−α/2} + z_power)·σ_D / Δ)²`, `σ_D² = π₊ + π₋ − Δ²`.
fn fixed_paired_trials(a: f64, b: f64, power: f64) -> f64 {
    let normal = statrs::distribution::Normal::new(0.0, 1.0).expect("normal");
    use statrs::distribution::ContinuousCDF;
    let z = |q: f64| normal.inverse_cdf(q);
    let delta = b - a;
    let discordant = b * (1.0 - a) + a * (1.0 - b);
    let sd = (discordant - delta * delta).sqrt();
    let pairs = ((z(1.0 - ALPHA / 2.0) + z(power.min(0.9999))) * sd / delta).powi(2);
    2.0 * pairs
}

/// The least expected pairs of any test that says "worse" with probability `power` while
/// saying it at most α/2 of the time when B is not worse: `E[N]·KL_inf ≥ kl(power ‖ α/2)`,
/// where `KL_inf = max_λ E ln(1 − λD)` is the information per pair against every
/// distribution of the pair difference D with mean ≥ 0 (Honda and Takemura's dual form).
fn least_pairs(a: f64, b: f64, power: f64) -> f64 {
    let (up, down) = (b * (1.0 - a), a * (1.0 - b));
    let kl_inf = (1..1000)
        .map(|i| {
            let l = f64::from(i) / 1000.0;
            up * (1.0 - l).ln() + down * (1.0 + l).ln()
        })
        .fold(f64::NEG_INFINITY, f64::max);
    kl(power, ALPHA / 2.0) / kl_inf
}

/// Cases of the suite-gate benchmark.
const SUITE_CASES: usize = 10;
/// Rounds a suite gate may use.
const SUITE_ROUNDS: u32 = 100;

/// The sequential suite gate: rounds to a verdict at true suite rates t … t + 0.15.
fn suite_gates(reps: usize, seed: u64) {
    println!(
        "\nsequential suite gate: run --gate pass>={THRESHOLD} --sequential (suite level) on {SUITE_CASES} cases, alpha {ALPHA} each way, at most {SUITE_ROUNDS} rounds; {reps} runs per cell, seed {seed}"
    );
    let rates = [0.0, 0.03, 0.07, 0.15].map(|d: f64| ((THRESHOLD + d) * 100.0).round() / 100.0);
    for (i, &p) in rates.iter().enumerate() {
        let server = seeded_fake(seed.wrapping_add(200 + i as u64), move |_| p);
        let dir = fake_project(&server.base_url, TOOLS, &cases(SUITE_CASES), &[]);
        let gate = format!("pass>={THRESHOLD}");
        let rounds_cap = SUITE_ROUNDS.to_string();
        let args = [
            "--provider",
            "fake",
            "--gate",
            &gate,
            "--sequential",
            "--max-trials",
            &rounds_cap,
            "--concurrency",
            "4",
        ];
        let (mut rounds, mut verdicts) = (Vec::new(), Vec::new());
        run_many(dir.path(), &args, reps, |summary| {
            let g = &summary["gate"]["gates"][0];
            rounds.push(g["sequential"]["rounds"][0].as_f64().expect("rounds"));
            verdicts.push(g["verdict"].as_str().expect("verdict").to_owned());
        });
        let runs = rounds.len() as f64;
        let mean = rounds.iter().sum::<f64>() / runs;
        let var = rounds.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (runs - 1.0);
        let share = |v: &str| verdicts.iter().filter(|x| *x == v).count() as f64 / runs;
        let trials = SUITE_CASES as f64 * mean;
        println!(
            "  rate {p:.2}: {mean:.1} ± {:.1} rounds ({trials:.0} trials); pass {:.4}, fail {:.4}, undecided {:.4}",
            (var / runs).sqrt(),
            share("pass"),
            share("fail"),
            share("inconclusive")
        );
        if let Some(exact) = toolscore_decide::gate::sequential_suite::exact_characteristics(
            SUITE_CASES as u64,
            p,
            THRESHOLD,
            1.0 - ALPHA,
            SUITE_ROUNDS,
        ) {
            println!(
                "    exact: {:.2} rounds ({:.1} trials); pass {:.4}, fail {:.4}, undecided {:.4}",
                exact.expected_rounds,
                SUITE_CASES as f64 * exact.expected_rounds,
                exact.pass,
                exact.fail,
                exact.undecided
            );
        }
        if p == THRESHOLD {
            let se = (ALPHA * (1.0 - ALPHA) / runs).sqrt();
            println!(
                "    false PASS at t: {:.4} (alpha {ALPHA}, Monte Carlo se {se:.4}): {}",
                share("pass"),
                if share("pass") <= ALPHA + 2.0 * se {
                    "kept"
                } else {
                    "EXCEEDED"
                }
            );
        } else if share("pass") > 0.5 {
            // The fixed-n one-sided test of this suite's pooled rate with the same alpha and
            // the same chance of passing (normal approximation).
            let normal = statrs::distribution::Normal::new(0.0, 1.0).expect("normal");
            use statrs::distribution::ContinuousCDF;
            let z = |q: f64| normal.inverse_cdf(q);
            let power = share("pass").min(0.9999);
            let fixed = ((z(1.0 - ALPHA) * (THRESHOLD * (1.0 - THRESHOLD)).sqrt()
                + z(power) * (p * (1.0 - p)).sqrt())
                / (p - THRESHOLD))
                .powi(2);
            println!(
                "    the fixed-n test of this suite's rate with the same alpha and power {power:.4} needs {fixed:.0} trials: the sequential one uses {:.3} of it",
                trials / fixed
            );
        }
    }
}
