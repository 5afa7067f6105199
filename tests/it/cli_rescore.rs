//! `toolscore report` re-scores a finished run from its records when the fixtures' expectations
//! changed since, says so at the top with how many verdicts changed, and refuses to when the
//! catalog the model read has changed.

use crate::support;

use serde_json::Value;
use support::{FakeResponse, FakeServer, fake_project, tool_call_body, toolscore};

const TOOLS: &str = r#"{"tools": [
  {"name": "get_job_status", "description": "Status of an async job.", "inputSchema": {"type": "object", "properties": {"job_id": {"type": "string"}}, "additionalProperties": false}},
  {"name": "get_server_status", "description": "Health of the service.", "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false}}
]}"#;

const CASES: &str = r#"{"id": "status", "messages": [{"role": "user", "content": "what's the status?"}], "expect": {"tool": "get_job_status"}}
{"id": "health", "messages": [{"role": "user", "content": "is it up?"}], "expect": {"tool": "get_server_status"}}
"#;

fn pass_rate(stdout: &str) -> String {
    stdout
        .lines()
        .find(|l| l.trim_start().starts_with("pass "))
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_corrected_expectation_rescores_the_run_and_a_changed_catalog_does_not() {
    // The model always asks for the server's health.
    let server = FakeServer::start_in_background(|_| {
        FakeResponse::ok(tool_call_body(&[("get_server_status", "{}")]))
    });
    let dir = fake_project(&server.base_url, TOOLS, CASES, &[]);
    let run = toolscore(
        dir.path(),
        &[
            "run",
            "--provider",
            "fake",
            "--trials",
            "5",
            "--out",
            "out",
            "--run-id",
            "r",
            "--progress",
            "off",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(pass_rate(&run.stdout).contains("(5/10)"), "{}", run.stdout);

    // Unchanged fixtures: nothing to say, the same figures.
    let same = toolscore(dir.path(), &["report", "out/r"]);
    assert!(!same.stdout.contains("RE-SCORED"), "{}", same.stdout);
    assert!(pass_rate(&same.stdout).contains("(5/10)"));

    // "What's the status?" was meant for the service: the fixture is corrected.
    std::fs::write(
        dir.path().join("data/cases.jsonl"),
        CASES.replace(
            "\"tool\": \"get_job_status\"",
            "\"tool\": \"get_server_status\"",
        ),
    )
    .expect("write");
    let rescored = toolscore(dir.path(), &["report", "out/r"]);
    assert_eq!(rescored.code, 0, "{}", rescored.transcript());
    assert!(
        rescored.stdout.starts_with(
            "RE-SCORED: the fixtures changed since this run; 5 of 10 scored trials changed verdict"
        ),
        "{}",
        rescored.stdout
    );
    assert!(
        pass_rate(&rescored.stdout).contains("(10/10)"),
        "{}",
        rescored.stdout
    );
    // The records on disk are the run's.
    let first: Value = serde_json::from_str(
        std::fs::read_to_string(dir.path().join("out/r/results.jsonl"))
            .expect("results")
            .lines()
            .next()
            .expect("a line"),
    )
    .expect("record");
    assert!(first["expected"] == "get_job_status" || first["case_id"] == "health");

    // A changed description means the model read another catalog: reported as recorded.
    std::fs::write(
        dir.path().join("data/tools.json"),
        TOOLS.replace("Health of the service.", "Health of the billing service."),
    )
    .expect("write");
    let other = toolscore(dir.path(), &["report", "out/r"]);
    assert!(
        other.stdout.contains(
            "not re-scored: dataset data (variant base): the catalog changed since the run"
        ),
        "{}",
        other.stdout
    );
    assert!(
        pass_rate(&other.stdout).contains("(5/10)"),
        "{}",
        other.stdout
    );
}
