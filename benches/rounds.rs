//! The price of judging by rounds, against a fake endpoint with a provider's latency.
//!
//! A suite-level sequential gate (like `--compare --sequential`, a baseline or a race) judges
//! after every complete round of units, and is shown a trial of round k + 1 only once round k
//! is judged, so no trial past the deciding round is counted. If no trial of round k + 1 could
//! start before then, the price would be wall time: the tail of each round, when fewer trials
//! than workers are left in it, and at a concurrency above the round's size, the workers the
//! round cannot use. The runner lets each worker run a few trials ahead instead; this
//! measures what is left of the price.
//!
//! Runs the release binary (as a user would) on 40 billing cases, 10 trials a case, against a
//! fake whose every answer takes a latency drawn from a shifted exponential (40 ms plus a mean
//! of 120 ms, at most 1.5 s: a provider's long tail), the same draws in the same order every
//! run. Each concurrency runs the fixed design, then the suite gate at a bar equal to the
//! suite's rate (the deterministic fake gives the same rate every round, so the gate never
//! decides and both runs make the same 400 trials), and prints trials per second of each.
//!
//! Run: `cargo bench --bench rounds`.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test or benchmark program reports what it measured on the terminal"
)]

#[path = "../tests/it/support/mod.rs"]
mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use support::{FakeResponse, FakeServer, tool_call_body};

const CASES_USED: usize = 40;
const TRIALS_PER_CASE: u64 = 10;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // `cargo test --benches` runs benches with `--test`-like flags; do nothing then.
    if !args.iter().any(|a| a == "--bench") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    support::measure::billing_bench_dataset(dir.path(), CASES_USED);

    let body = tool_call_body(&[("get_job_status", r#"{"job_id":"job_a1b2c3"}"#)]);
    let served = Arc::new(AtomicU64::new(0));
    let count = Arc::clone(&served);
    let server = FakeServer::start_in_background(move |_| {
        let n = count.fetch_add(1, Ordering::Relaxed);
        FakeResponse::ok(body.clone()).delayed(latency(n))
    });
    println!(
        "judging by rounds: {CASES_USED} billing cases × {TRIALS_PER_CASE} trials, latency 40 ms + Exp(mean 120 ms), at most 1.5 s"
    );
    for concurrency in [8u32, 16, 40, 64] {
        served.store(0, Ordering::Relaxed);
        let c = concurrency.to_string();
        let trials = TRIALS_PER_CASE.to_string();
        let plain = [
            "--dataset",
            "bench",
            "--trials",
            &trials,
            "--concurrency",
            &c,
        ];
        let (fixed_secs, out) = run_toolscore(dir.path(), &plain, "out-fixed", &server.base_url);
        let rate = suite_selection_rate(&out);
        let bar = format!("selection>={rate}");
        served.store(0, Ordering::Relaxed);
        let mut gated = plain.to_vec();
        gated.extend(["--sequential", "--gate-level", "suite", "--gate", &bar]);
        let (round_secs, _) = run_toolscore(dir.path(), &gated, "out-rounds", &server.base_url);
        let total = (CASES_USED as u64 * TRIALS_PER_CASE) as f64;
        println!(
            "  concurrency {concurrency:>2}: fixed {:>6.1} trials/s ({fixed_secs:.2} s), by rounds {:>6.1} trials/s ({round_secs:.2} s), rounds / fixed {:.2}",
            total / fixed_secs,
            total / round_secs,
            fixed_secs / round_secs
        );
    }
}

/// The `n`th answer's latency: 40 ms plus an exponential draw of mean 120 ms, at most 1.5 s,
/// from a fixed hash of `n` (splitmix64), so every run sees the same draws.
fn latency(n: u64) -> Duration {
    let mut z = n.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    let u = (z >> 11) as f64 / (1u64 << 53) as f64;
    let ms = 40.0 + (-(1.0 - u).ln() * 120.0).min(1_460.0);
    Duration::from_secs_f64(ms / 1_000.0)
}

/// The suite's selection rate in a run folder's summary.json.
fn suite_selection_rate(out: &Path) -> f64 {
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("summary.json")).expect("summary.json"),
    )
    .expect("summary JSON");
    summary["arms"][0]["suite"]["metrics"]["selection"]["rate"]
        .as_f64()
        .unwrap_or_else(|| panic!("no suite selection rate in {summary:#}"))
}

/// `toolscore run` against the fake at `base_url` in `dir` with `args`, writing to `out`: its
/// wall time in seconds and the run's folder. Panics when it fails (exit 3, the undecided
/// gate's, is what the gated run ends with).
fn run_toolscore(
    dir: &Path,
    args: &[&str],
    out: &str,
    base_url: &str,
) -> (f64, std::path::PathBuf) {
    let _ = std::fs::remove_dir_all(dir.join(out));
    let t0 = Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_toolscore"))
        .current_dir(dir)
        .args([
            "run",
            "--provider",
            "openai-compat",
            "--base-url",
            base_url,
            "--model",
            "bench",
            "--progress",
            "off",
            "--out",
            out,
            "--run-id",
            "r",
        ])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("spawn toolscore");
    let secs = t0.elapsed().as_secs_f64();
    assert!(
        matches!(status.code(), Some(0 | 3)),
        "toolscore {args:?} failed: {status:?}"
    );
    (secs, dir.join(out).join("r"))
}
