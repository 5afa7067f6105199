//! The aftermath of a run at scale: `toolscore report` re-aggregating a 1,000,000-trial
//! results.jsonl, and `toolscore merge` joining 100 shards of the same plan.
//!
//! Records are the shipped recording's (billing, 61 cases), replayed once through the release
//! binary; each case's trial 0 is then repeated with new trial indices up to BENCH_TRIALS_PER_CASE
//! (default 16,394: 1,000,034 trials). For the merge, 100 real shard folders are made by
//! `run --shard i/100` on the recording and their results.jsonl replaced by the 1M trials, each
//! written to the shard its key hashes to (`toolscore_runner::shard_of`), with plan.json and
//! summary.json set to the larger plan. Prints wall time and the child's peak RSS (`wait4`).
//!
//! Run: `cargo bench --bench aftermath` (needs about 2 GB of free disk).

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test or benchmark program reports what it measured on the terminal"
)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

#[path = "../tests/it/support/mod.rs"]
mod support;

use serde_json::Value;
use support::measure::wait_with_rusage;
use toolscore_runner::{shard_of, unit_seed};

const SHARDS: u32 = 100;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        return;
    }
    let per_case: u32 = std::env::var("BENCH_TRIALS_PER_CASE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16_394);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let dataset = root.join("datasets/billing");
    let cassette = format!(
        "replay:{}",
        root.join("datasets/billing/recordings/smollm2-135m-2026-12-02.cassette.jsonl.gz")
            .display()
    );
    let dataset = dataset.display().to_string();
    let run = |extra: &[&str]| {
        let status = Command::new(env!("CARGO_BIN_EXE_toolscore"))
            .current_dir(d)
            .args([
                "run",
                "--dataset",
                &dataset,
                "--provider",
                &cassette,
                "--trials",
                "40",
            ])
            .args(["--out", "out", "--progress", "off", "--format", "json"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run");
        assert!(status.success(), "{extra:?}");
    };
    run(&["--run-id", "whole"]);

    // One template line per case (its trial 0), with a placeholder for the trial index.
    let text = std::fs::read_to_string(d.join("out/whole/results.jsonl")).expect("results");
    let mut templates: Vec<(String, String, String)> = Vec::new();
    for line in text.lines() {
        let mut v: Value = serde_json::from_str(line).expect("record");
        if v["trial_index"] != 0 {
            continue;
        }
        v["trial_index"] = Value::from(4_000_000_000u64);
        let case = v["case_id"].as_str().unwrap().to_owned();
        templates.push((
            v["dataset"].as_str().unwrap().to_owned(),
            case,
            v.to_string(),
        ));
    }
    let plan: Value = serde_json::from_str(
        &std::fs::read_to_string(d.join("out/whole/plan.json")).expect("plan"),
    )
    .expect("json");
    let order: Vec<String> = plan["datasets"][0]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_owned())
        .collect();
    templates.sort_by_key(|(_, c, _)| order.iter().position(|o| o == c));
    let total = u64::from(per_case) * templates.len() as u64;
    let line_of = |t: &str, trial: u32| t.replace("4000000000", &trial.to_string());

    // The one-piece folder: trial-major, as a run writes it.
    let big = d.join("out/big");
    std::fs::create_dir_all(&big).unwrap();
    {
        let mut f =
            std::io::BufWriter::new(std::fs::File::create(big.join("results.jsonl")).unwrap());
        for trial in 0..per_case {
            for (_, _, t) in &templates {
                writeln!(f, "{}", line_of(t, trial)).unwrap();
            }
        }
    }
    let patch_summary = |from: &Path, to: &Path, trials: u64| {
        let mut s: Value = serde_json::from_str(&std::fs::read_to_string(from).unwrap()).unwrap();
        s["run"]["trials_per_case"] = Value::from(per_case);
        s["planned_trials"] = Value::from(trials);
        s["completed_trials"] = Value::from(trials);
        std::fs::write(to, s.to_string()).unwrap();
    };
    patch_summary(
        &d.join("out/whole/summary.json"),
        &big.join("summary.json"),
        total,
    );
    let bytes = std::fs::metadata(big.join("results.jsonl")).unwrap().len();
    println!(
        "aftermath: {total} trials ({} cases × {per_case}), results.jsonl {:.0} MiB",
        templates.len(),
        bytes as f64 / 1048576.0
    );
    measure(
        d,
        &["report", "out/big", "--format", "json"],
        "report (re-aggregate)",
    );

    // 100 shards of the same plan.
    for i in 0..SHARDS {
        run(&[
            "--shard",
            &format!("{i}/{SHARDS}"),
            "--run-id",
            &format!("s{i:03}"),
        ]);
    }
    let arm = &plan["arms"][0];
    let (provider, variant) = (
        arm["provider"].as_str().unwrap(),
        arm["variant"].as_str().unwrap(),
    );
    let mut writers: Vec<_> = (0..SHARDS)
        .map(|i| {
            std::io::BufWriter::new(
                std::fs::File::create(d.join(format!("out/s{i:03}/results.jsonl"))).unwrap(),
            )
        })
        .collect();
    let mut sizes = vec![0u64; SHARDS as usize];
    let seeds: Vec<u64> = templates
        .iter()
        .map(|(ds, c, _)| unit_seed(provider, variant, ds, c))
        .collect();
    for trial in 0..per_case {
        for ((_, _, t), seed) in templates.iter().zip(&seeds) {
            let s = shard_of(*seed, trial, SHARDS) as usize;
            writeln!(writers[s], "{}", line_of(t, trial)).unwrap();
            sizes[s] += 1;
        }
    }
    drop(writers);
    for i in 0..SHARDS {
        let folder = d.join(format!("out/s{i:03}"));
        let mut p: Value =
            serde_json::from_str(&std::fs::read_to_string(folder.join("plan.json")).unwrap())
                .unwrap();
        p["trials"] = Value::from(per_case);
        std::fs::write(folder.join("plan.json"), p.to_string()).unwrap();
        patch_summary(
            &folder.join("summary.json"),
            &folder.join("summary.json"),
            sizes[i as usize],
        );
    }
    let mut merge: Vec<String> = vec!["merge".into()];
    merge.extend((0..SHARDS).map(|i| format!("out/s{i:03}")));
    merge.extend([
        "--out".into(),
        "out/merged".into(),
        "--format".into(),
        "json".into(),
    ]);
    let merge: Vec<&str> = merge.iter().map(String::as_str).collect();
    measure(d, &merge, "merge of 100 shards");
    let merged: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("out/merged/summary.json")).unwrap())
            .unwrap();
    assert_eq!(merged["completed_trials"], total);
}

/// Runs the release binary, prints wall time and peak RSS.
fn measure(dir: &Path, args: &[&str], what: &str) {
    let t0 = Instant::now();
    #[expect(
        clippy::zombie_processes,
        reason = "reaped by wait4 below, which also reads its rusage"
    )]
    let child = Command::new(env!("CARGO_BIN_EXE_toolscore"))
        .current_dir(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn toolscore");
    let (status, max_rss_kib) = wait_with_rusage(child.id() as libc::pid_t);
    let secs = t0.elapsed().as_secs_f64();
    assert!(status.success(), "{what} failed");
    println!(
        "  {what}: {secs:.2} s wall, peak RSS {:.1} MiB",
        max_rss_kib as f64 / 1024.0
    );
}
