//! Snapshots of what a user reads, for a fixed run (`tests/data/report-run`: 13 billing cases ×
//! 6 trials replayed from the shipped SmolLM2 recording): the terminal report that
//! `toolscore report` prints from its results.jsonl, and the summary re-aggregated from it.
//! A change in either is a reviewed diff (`cargo insta review`), not a broken `contains`.

use crate::support;
use crate::toolscore_snapshot;

use std::path::Path;

use support::toolscore;

const RUN: &str = "tests/data/report-run";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn terminal_report_of_a_fixed_run() {
    // The whole report, every section, with --detail.
    let run = toolscore(root(), &["report", RUN, "--detail"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    toolscore_snapshot!("terminal_report", run);
}

#[test]
fn the_short_report_is_the_whole_one_without_its_detail_sections() {
    let short = toolscore(root(), &["report", RUN]);
    let whole = toolscore(root(), &["report", RUN, "--detail"]);
    assert_eq!(short.code, 0, "{}", short.transcript());
    // Every line of the short report but the pointer is in the whole one, in the same order.
    let pointer = format!(
        "more: per-tool rates, weakest cases, confusions, argument failures, latency by tool and tokens with --detail (toolscore report {RUN} --detail)"
    );
    let kept: Vec<&str> = short
        .stdout
        .lines()
        .filter(|l| *l != pointer && !l.is_empty())
        .collect();
    assert!(short.stdout.contains(&pointer), "{}", short.stdout);
    let mut rest = whole.stdout.lines();
    for line in &kept {
        assert!(
            rest.any(|w| w == *line),
            "`{line}` is not in the whole report, in order:\n{}",
            whole.stdout
        );
    }
    // The detail sections are what the short one leaves out.
    for section in [
        "by expected tool (",
        "weakest cases by pass rate",
        "most frequent confusions",
        "latency ms by expected tool:",
        "tokens: input ",
    ] {
        assert!(whole.stdout.contains(section), "{section}");
        assert!(
            !short.stdout.contains(section),
            "{section}: {}",
            short.stdout
        );
    }
    assert!(
        kept.len() * 3 < whole.stdout.lines().count(),
        "{}",
        short.stdout
    );
}

#[test]
fn summary_of_a_fixed_run_reaggregated_from_its_records() {
    let text = std::fs::read_to_string(root().join(RUN).join("summary.json")).expect("summary");
    let header: toolscore_summary::SummaryHeader = serde_json::from_str(&text).expect("parses");
    let (confidence, precision) = (header.confidence, header.precision);
    // Only the header is read from summary.json; every figure comes from results.jsonl (the
    // equality with a fresh run's own summary is tested in cli_arms.rs).
    let summary = toolscore_summary::reaggregate(
        &root().join(RUN).join("results.jsonl"),
        header,
        confidence,
        precision,
    )
    .expect("reaggregate");
    insta::assert_json_snapshot!("summary", summary, {
        ".run.started_at" => "[TIME]",
        ".run.finished_at" => "[TIME]",
    });
}

#[test]
fn the_same_records_at_99_percent_move_every_threshold() {
    let run = toolscore(root(), &["report", RUN, "--confidence", "0.99", "--detail"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    toolscore_snapshot!("terminal_report_99", run);
}

/// results.jsonl is read as untrusted input: a line past the 64 MiB a record can take, or a
/// FIFO in its place, is exit 2 naming the file (and the line), never a hang or an exhausted
/// memory.
#[test]
fn an_endless_line_or_a_pipe_in_results_jsonl_is_refused() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::copy(
        root.join(RUN).join("summary.json"),
        run.join("summary.json"),
    )
    .unwrap();
    let mut text = std::fs::read_to_string(root.join(RUN).join("results.jsonl")).unwrap();
    let lines = text.lines().count();
    text.push_str(&"x".repeat((64 << 20) + 10));
    std::fs::write(run.join("results.jsonl"), text).unwrap();
    let out = toolscore(tmp.path(), &["report", "run"]);
    assert_eq!(out.code, 2, "{}", out.transcript());
    assert!(
        out.stderr
            .contains(&format!("run/results.jsonl:{}", lines + 1))
            && out.stderr.contains("longer than 64 MiB"),
        "{}",
        out.stderr
    );
    let explain = toolscore(tmp.path(), &["explain", "run", "get-customer-by-id"]);
    assert_eq!(explain.code, 2, "{}", explain.transcript());

    std::fs::remove_file(run.join("results.jsonl")).unwrap();
    let fifo = std::ffi::CString::new(run.join("results.jsonl").to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates the file.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let out = toolscore(tmp.path(), &["report", "run"]);
    assert_eq!(out.code, 2, "{}", out.transcript());
    assert!(out.stderr.contains("not a regular file"), "{}", out.stderr);
}
