//! Cost to decision: how many trials each sequential case gate spends before a verdict, and
//! how often it errs at the boundary, measured through the binary against a seeded random
//! fake provider whose every answer is right with a known probability p.
//!
//! For each procedure (the mixture SPRT, the default of `--sequential`; the SPRT with
//! `--sprt-p1`) and each true rate of the grid t, t + 0.03, t + 0.07, t + 0.15, it runs
//! `toolscore run --gate pass>=t --gate-level case --sequential` on 4 cases until it has
//! `BENCH_REPS` case verdicts (2,000 by default: 500 runs), and prints the mean trials per case
//! with its Monte Carlo standard error, the share of PASS / FAIL / inconclusive verdicts, the
//! exact figures of the same design (`stats::operating_characteristics`) beside them, and the
//! fixed-n gate with the same guarantees (from `toolscore plan`). It ends with the least any
//! test with these guarantees can spend at each rate (a Wald-type bound), so a goal below it
//! can be seen to be out of reach rather than missed.
//!
//! Then the sequential comparison of two catalog variants (`run --variant base --variant clear
//! --compare --sequential`) on 10 cases, A right with probability 0.8 and B with 0.7 (B worse
//! by 0.10), and both at 0.8: `BENCH_REPS` runs each, with the rounds to a verdict, how often
//! each verdict came, and the fixed-n paired comparison with the same α and the same power.
//!
//! Run: `cargo bench --bench cost_to_decision` (env: BENCH_REPS=2000, BENCH_SEED=2026,
//! BENCH_PART=gates|compare|suite|all). Nothing else should run beside it: it is 16,000 runs
//! of the binary (about 6 minutes for the gates, 12 for the comparisons, 8 for the suite).

#[path = "../tests/it/support/mod.rs"]
mod support;

use std::sync::Mutex;

use serde_json::Value;
use support::{FakeResponse, FakeServer, fake_project, text_body, tool_call_body};
use toolscore::stats::{self, SeededUniform, SequentialKind, SequentialTest};

const THRESHOLD: f64 = 0.8;
/// p₁ of both tests: halfway from the threshold to 1, the default.
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

/// The case gates: the mixture SPRT and the SPRT, `reps` case verdicts per true rate.
fn case_gates(reps: usize, seed: u64) {
    let runs = reps.div_ceil(CASES);
    let beta_case = ALPHA / CASES as f64;
    let fixed = fixed_design_trials();
    println!(
        "cost to decision: gate pass>={THRESHOLD} per case, {CASES} cases, alpha {ALPHA} to pass, beta {beta_case} per case to fail at p1 {P1}, at most {MAX_TRIALS} trials a case; {runs} runs ({} case verdicts) per cell, seed {seed}",
        runs * CASES
    );
    println!(
        "the fixed-n gate with the same guarantees (toolscore plan): {fixed} trials per case\n"
    );
    println!(
        "{:<9} {:>6}  {:>16} {:>7} {:>6}  {:>13} {:>13} {:>7}",
        "test",
        "true p",
        "trials/case ± se",
        "exact",
        "/fixed",
        "PASS (exact)",
        "FAIL (exact)",
        "undecid"
    );
    let procedures: [(&str, SequentialKind, &[&str]); 2] = [
        ("mixture", SequentialKind::Mixture, &[]),
        ("sprt", SequentialKind::Sprt, &["--sprt-p1", "0.9"]),
    ];
    let rates = [0.0, 0.03, 0.07, 0.15].map(|d: f64| ((THRESHOLD + d) * 100.0).round() / 100.0);
    let mut means = Vec::new();
    for (name, kind, flags) in procedures {
        let design =
            SequentialTest::new(kind, THRESHOLD, P1, None, ALPHA, beta_case).expect("design");
        for (i, &p) in rates.iter().enumerate() {
            let cell = measure(p, flags, runs, seed.wrapping_add(i as u64));
            let exact =
                stats::curtailed_operating_characteristics(&design, p, u64::from(MAX_TRIALS))
                    .expect("exact");
            let (mean, se) = cell.mean_trials();
            means.push((name, p, mean));
            println!(
                "{name:<9} {p:>6.2}  {mean:>9.1} ± {se:>4.1} {:>7.1} {:>6.3}  {:>5.3} ({:.3}) {:>5.3} ({:.3}) {:>7.3}",
                exact.expected_n,
                mean / fixed as f64,
                cell.share(cell.pass),
                exact.p_pass,
                cell.share(cell.fail),
                exact.p_fail,
                cell.share(cell.inconclusive),
            );
            if p == THRESHOLD {
                let se_pass = (ALPHA * (1.0 - ALPHA) / cell.cases() as f64).sqrt();
                println!(
                    "          false PASS at t: {:.4} (alpha {ALPHA}, Monte Carlo se {se_pass:.4}): {}",
                    cell.share(cell.pass),
                    if cell.share(cell.pass) <= ALPHA + 2.0 * se_pass {
                        "kept"
                    } else {
                        "EXCEEDED"
                    }
                );
            }
        }
    }
    println!("\nmixture against the SPRT (mean trials per case):");
    for &p in &rates {
        let of = |name: &str| {
            means
                .iter()
                .find(|(n, q, _)| *n == name && *q == p)
                .map(|m| m.2)
                .expect("measured")
        };
        println!(
            "  p {p:.2}: {:.3} of the SPRT's trials, {:.3} of the fixed design's",
            of("mixture") / of("sprt"),
            of("mixture") / fixed as f64
        );
    }
    println!(
        "\nthe least any test with these guarantees that always decides spends (Wald's bound):"
    );
    for &p in &rates[1..] {
        let least = least_expected_trials(p, beta_case);
        println!(
            "  p {p:.2}: {least:.1} trials per case, {:.3} of the fixed design",
            least / fixed as f64
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

/// The least expected trials at true rate p of any test that always decides, passes a case
/// at t at most α of the time and fails one at p₁ at most β of the time:
/// `E_p[N]·KL(p‖q) ≥ kl(P_p(A) ‖ P_q(A))` for q = t with A = PASS and q = p₁ with A = FAIL
/// (the data-processing inequality at a stopping time), minimised over the test's chance of
/// passing at p.
fn least_expected_trials(p: f64, beta: f64) -> f64 {
    (1..10_000)
        .map(|i| {
            let pass = f64::from(i) / 10_000.0;
            let by_t = if pass > ALPHA {
                kl(pass, ALPHA) / kl(p, THRESHOLD)
            } else {
                0.0
            };
            let by_p1 = if 1.0 - pass > beta && p != P1 {
                kl(1.0 - pass, beta) / kl(p, P1)
            } else {
                0.0
            };
            by_t.max(by_p1)
        })
        .fold(f64::INFINITY, f64::min)
}

/// Cases of the comparison benchmark.
const COMPARE_CASES: usize = 10;
/// Rounds a comparison may use.
const COMPARE_ROUNDS: u32 = 100;
/// The base catalog's rate; the `clear` variant's is this plus the difference of the cell.
const COMPARE_A: f64 = 0.8;

const CLEAR: &str = r#"{"tools": {"lookup": {"description": "CLEAR: look something up."}}}"#;

/// The sequential comparison: rounds to a verdict at B − A = −0.10 and at 0, `reps` runs each.
fn comparisons(reps: usize, seed: u64) {
    println!(
        "\nsequential comparison: run --variant base --variant clear --compare --sequential on {COMPARE_CASES} cases, alpha {ALPHA}, --min-effect 0.05, at most {COMPARE_ROUNDS} rounds; A right with probability {COMPARE_A}; {reps} runs per cell, seed {seed}"
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
            "  B − A {difference:+.2}: {mean:.1} ± {:.1} rounds ({trials:.0} trials) to a verdict; better {:.4}, worse {:.4}, within ±0.05 {:.4}, undecided {:.4}",
            (var / runs).sqrt(),
            share("better"),
            share("worse"),
            share("equivalent"),
            share("inconclusive")
        );
        if difference == 0.0 {
            let false_rate = share("better") + share("worse");
            let se = (ALPHA * (1.0 - ALPHA) / runs).sqrt();
            println!(
                "    false better/worse at equal rates: {false_rate:.4} (alpha {ALPHA}, Monte Carlo se {se:.4}): {}",
                if false_rate <= ALPHA + 2.0 * se {
                    "kept"
                } else {
                    "EXCEEDED"
                }
            );
        } else {
            let power = share("worse");
            let fixed = fixed_paired_trials(COMPARE_A, b, power);
            println!(
                "    the fixed-n paired comparison with the same alpha and power {power:.4} needs {fixed:.0} trials ({:.1} rounds): the sequential one uses {:.3} of it",
                fixed / (2.0 * COMPARE_CASES as f64),
                trials / fixed
            );
            let least = 2.0 * least_pairs(COMPARE_A, b, power);
            println!(
                "    the least any test deciding `worse` this often at alpha/2 can spend: {least:.0} trials ({:.3} of the fixed design)",
                least / fixed
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
