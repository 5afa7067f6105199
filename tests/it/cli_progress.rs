//! Progress off a terminal, through the binary: a line every 5 seconds on a timer even while no
//! trial finishes, the last line printed once, and `--progress bar` drawn as a text bar.

use crate::support;

use std::time::Duration;

use support::{FakeResponse, FakeServer, fake_project, tool_call_body, toolscore};

const TOOLS: &str = r#"{"tools": [{"name": "lookup", "description": "Look it up.", "inputSchema": {"type": "object", "properties": {}}}]}"#;
const CASES: &str = r#"{"id": "only", "messages": [{"role": "user", "content": "look it up"}], "expect": {"tool": "lookup"}}
"#;

#[test]
fn a_slow_trial_still_gets_progress_lines_and_the_last_line_is_printed_once() {
    // One trial that takes 5.5 s: the 5-second timer prints 0/1 while it runs.
    let server = FakeServer::start_in_background(|_| {
        FakeResponse::ok(tool_call_body(&[("lookup", "{}")])).delayed(Duration::from_millis(5500))
    });
    let dir = fake_project(&server.base_url, TOOLS, CASES, &[]);
    let run = toolscore(
        dir.path(),
        &[
            "run",
            "--provider",
            "fake",
            "--trials",
            "1",
            "--progress",
            "bar",
            "--out",
            "out",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("progress: "))
        .collect();
    assert_eq!(lines.len(), 2, "{}", run.stderr);
    assert!(
        lines[0].starts_with(&format!("progress: [{}] 0/1 trials (0%)", ".".repeat(30))),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with(&format!("progress: [{}] 1/1 trials (100%)", "#".repeat(30))),
        "{}",
        lines[1]
    );
}

#[test]
fn a_quick_run_prints_its_last_line_once() {
    let server =
        FakeServer::start_in_background(|_| FakeResponse::ok(tool_call_body(&[("lookup", "{}")])));
    let dir = fake_project(&server.base_url, TOOLS, CASES, &[]);
    let run = toolscore(
        dir.path(),
        &[
            "run",
            "--provider",
            "fake",
            "--trials",
            "3",
            "--progress",
            "lines",
            "--out",
            "out",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("progress: "))
        .collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].starts_with("progress: 3/3 trials (100%)"),
        "{}",
        lines[0]
    );
}

/// A wait a provider asks for (429 with Retry-After) is counted on the progress line, so a run
/// sitting one out says so instead of looking stalled.
#[test]
fn the_progress_line_counts_retry_after_waits() {
    let server = FakeServer::start_in_background(|req| {
        if req.seq == 0 {
            FakeResponse::status(
                429,
                r#"{"error":{"message":"slow down","type":"rate_limit"}}"#,
            )
            .header("retry-after", "1")
        } else {
            FakeResponse::ok(tool_call_body(&[("lookup", "{}")]))
        }
    });
    let dir = fake_project(&server.base_url, TOOLS, CASES, &[]);
    let run = toolscore(
        dir.path(),
        &[
            "run",
            "--provider",
            "fake",
            "--trials",
            "1",
            "--progress",
            "lines",
            "--out",
            "out",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let last = run
        .stderr
        .lines()
        .rfind(|l| l.starts_with("progress: "))
        .unwrap_or_default();
    assert!(
        last.starts_with("progress: 1/1 trials (100%)")
            && last.ends_with(", 1 s waited on Retry-After (1 waits)"),
        "{}",
        run.stderr
    );
}
