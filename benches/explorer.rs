//! What the case explorer costs: `toolscore report --format html` (time, peak RSS, page size)
//! and headless Chromium loading the page (`--dump-dom`, wall time, next to an empty page's),
//! on the shipped recording (61 cases × 40 trials) and on a 5,000-case run.
//!
//! The 5,000-case run is made from the recording: a dataset `big` whose cases are the billing
//! cases repeated under new ids (case `k` is billing case `k mod 61`), and a results.jsonl
//! holding, for each, the first BENCH_TRIALS (default 8) trials of its billing case. The
//! explorer shows the 200 cases the forest plot shows (`report::explored_cases`).
//!
//! Run: `cargo bench --bench explorer` (needs /usr/bin/chromium for the load times).

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test or benchmark program reports what it measured on the terminal"
)]

#[path = "../tests/it/support/mod.rs"]
mod support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::Value;
use support::measure::wait_with_rusage;

const BIG_CASES: usize = 5_000;

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let trials: u64 = std::env::var("BENCH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let cassette =
        root.join("datasets/billing/recordings/smollm2-135m-2026-12-02.cassette.jsonl.gz");
    std::fs::create_dir_all(d.join("datasets")).expect("mkdir");
    copy_dir(&root.join("datasets/billing"), &d.join("datasets/billing"));
    let status = Command::new(env!("CARGO_BIN_EXE_toolscore"))
        .current_dir(d)
        .args(["run", "--dataset", "datasets/billing", "--provider"])
        .arg(format!("replay:{}", cassette.display()))
        .args(["--run-id", "small", "--out", "out", "--progress", "off"])
        .stdout(Stdio::null())
        .status()
        .expect("run");
    assert!(status.success());

    println!("case explorer: report --format html, then Chromium loading the page");
    report_and_load(d, "out/small", "61 cases × 40 trials");
    make_big(d, trials);
    report_and_load(
        d,
        "out/big",
        &format!("{BIG_CASES} cases × {trials} trials"),
    );
}

/// Times `report DIR --format html` and Chromium's load of the page.
fn report_and_load(d: &Path, run: &str, what: &str) {
    let t0 = Instant::now();
    #[expect(
        clippy::zombie_processes,
        reason = "reaped by wait_with_rusage, which also reads its rusage"
    )]
    let child = Command::new(env!("CARGO_BIN_EXE_toolscore"))
        .current_dir(d)
        .args(["report", run, "--format", "html"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn toolscore");
    let (status, rss) = wait_with_rusage(child.id() as libc::pid_t);
    let secs = t0.elapsed().as_secs_f64();
    assert!(status.success(), "report failed");
    let page = d.join(run).join("report.html");
    let html = std::fs::read_to_string(&page).expect("report.html");
    let sections = html.matches("<section class=\"explorer\"").count();
    println!(
        "  {what}: report {secs:.2} s wall, peak RSS {:.1} MiB; page {:.0} KiB, {sections} case sections",
        rss as f64 / 1024.0,
        html.len() as f64 / 1024.0
    );
    let chromium = Path::new("/usr/bin/chromium");
    if !chromium.is_file() {
        println!("  (no /usr/bin/chromium: load time not measured)");
        return;
    }
    let empty = d.join("empty.html");
    std::fs::write(&empty, "<!DOCTYPE html><html><body></body></html>").expect("write");
    let load = |p: &Path| {
        let t0 = Instant::now();
        let out = Command::new(chromium)
            .args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
            .arg(format!("file://{}", p.display()))
            .stderr(Stdio::null())
            .output()
            .expect("chromium");
        assert!(out.status.success());
        t0.elapsed().as_secs_f64()
    };
    let (base, full) = (load(&empty), load(&page));
    println!("  Chromium --dump-dom: {full:.2} s (an empty page: {base:.2} s)");
}

/// The 5,000-case run folder `out/big`, from `out/small`'s records.
fn make_big(d: &Path, trials: u64) {
    let cases: Vec<Value> = std::fs::read_to_string(d.join("datasets/billing/cases.jsonl"))
        .expect("cases")
        .lines()
        .map(|l| serde_json::from_str(l).expect("case"))
        .collect();
    let big = d.join("datasets/big");
    std::fs::create_dir_all(&big).expect("mkdir");
    std::fs::copy(
        d.join("datasets/billing/tools.json"),
        big.join("tools.json"),
    )
    .expect("tools");
    let id = |k: usize| {
        format!(
            "{}-{k:04}",
            cases[k % cases.len()]["id"].as_str().expect("id")
        )
    };
    let mut out =
        std::io::BufWriter::new(std::fs::File::create(big.join("cases.jsonl")).expect("create"));
    for k in 0..BIG_CASES {
        let mut c = cases[k % cases.len()].clone();
        c["id"] = id(k).into();
        writeln!(out, "{c}").expect("write");
    }
    drop(out);
    let records: Vec<Value> = std::fs::read_to_string(d.join("out/small/results.jsonl"))
        .expect("results")
        .lines()
        .map(|l| serde_json::from_str(l).expect("record"))
        .collect();
    let run = d.join("out/big");
    std::fs::create_dir_all(&run).expect("mkdir");
    let mut out =
        std::io::BufWriter::new(std::fs::File::create(run.join("results.jsonl")).expect("create"));
    for k in 0..BIG_CASES {
        let source = cases[k % cases.len()]["id"].as_str().expect("id");
        for r in records
            .iter()
            .filter(|r| r["case_id"] == source && r["trial_index"].as_u64() < Some(trials))
        {
            let mut r = r.clone();
            r["case_id"] = id(k).into();
            r["dataset"] = "big".into();
            r["run_id"] = "big".into();
            writeln!(out, "{r}").expect("write");
        }
    }
    drop(out);
    let mut summary: Value = serde_json::from_str(
        &std::fs::read_to_string(d.join("out/small/summary.json")).expect("summary"),
    )
    .expect("json");
    summary["run"]["run_id"] = "big".into();
    summary["run"]["trials_per_case"] = trials.into();
    summary["run"]["datasets"][0]["name"] = "big".into();
    summary["run"]["datasets"][0]["catalog_source"] = "datasets/big/tools.json".into();
    summary["run"]["datasets"][0]["cases"] = BIG_CASES.into();
    summary["planned_trials"] = (BIG_CASES as u64 * trials).into();
    summary["completed_trials"] = (BIG_CASES as u64 * trials).into();
    std::fs::write(run.join("summary.json"), summary.to_string()).expect("summary");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let path = entry.expect("entry").path();
        let target = to.join(path.file_name().expect("name"));
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).expect("copy");
        }
    }
}
