//! Several arms in one plan, through the binary: the same fake provider configured twice under
//! two names runs as two arms, every record names its arm, and `results.jsonl` alone
//! re-aggregates into the summary the run wrote.

use crate::support;

use std::collections::HashMap;

use serde_json::Value;
use support::{FakeResponse, FakeServer, last_user_message, text_body, tool_call_body, toolscore};

const TOOLS: &str = r#"{"tools": [
  {"name": "get_job_status", "description": "Status of an async billing job.", "inputSchema": {"type": "object", "properties": {"job_id": {"type": "string"}}, "required": ["job_id"], "additionalProperties": false}},
  {"name": "get_server_status", "description": "Health of the billing API.", "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false}}
]}"#;

const CASES: &str = r#"{"id": "job", "messages": [{"role": "user", "content": "Is job job_abc123 done?"}], "expect": {"tool": "get_job_status", "args": {"job_id": "job_abc123"}}}
{"id": "server", "messages": [{"role": "user", "content": "Is the billing API up?"}], "expect": {"tool": "get_server_status"}, "tags": ["health"]}
{"id": "thanks", "messages": [{"role": "user", "content": "thanks"}], "expect": {"tool": null}}
"#;

/// Answers by case and by the model the request names, so the two arms differ: model `a`
/// always answers right, model `b` gets the job case wrong.
fn scripted(req: &support::FakeRequest) -> FakeResponse {
    let user = last_user_message(req).unwrap_or_default();
    let model = req.body["model"].as_str().unwrap_or_default().to_owned();
    let body = if user.contains("job_abc123") {
        if model == "a" {
            tool_call_body(&[("get_job_status", r#"{"job_id":"job_abc123"}"#)])
        } else {
            tool_call_body(&[("get_server_status", "{}")])
        }
    } else if user.contains("billing API") {
        tool_call_body(&[("get_server_status", "{}")])
    } else {
        text_body("You're welcome!")
    };
    FakeResponse::ok(body)
}

fn project(server: &FakeServer) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("data")).expect("mkdir");
    std::fs::write(dir.path().join("data/tools.json"), TOOLS).expect("tools");
    std::fs::write(dir.path().join("data/cases.jsonl"), CASES).expect("cases");
    let config = format!(
        "providers:\n  first:\n    kind: openai-compat\n    base_url: {url}\n    model: a\n  second:\n    kind: openai-compat\n    base_url: {url}\n    model: b\ndatasets: [data]\n",
        url = server.base_url
    );
    std::fs::write(dir.path().join("toolscore.yaml"), config).expect("config");
    dir
}

#[test]
fn two_arms_run_in_one_plan_and_reaggregate_from_results_alone() {
    let server = FakeServer::start_in_background(scripted);
    let dir = project(&server);
    let run = toolscore(
        dir.path(),
        &[
            "run",
            "--detail",
            "--provider",
            "first",
            "--provider",
            "second",
            "--trials",
            "20",
            "--out",
            "out",
            "--run-id",
            "two",
            "--progress",
            "off",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(server.requests_seen(), 2 * 3 * 20);
    let run_dir = dir.path().join("out/two");

    // Every record names its arm; each arm has every case × trial exactly once.
    let text = std::fs::read_to_string(run_dir.join("results.jsonl")).expect("results");
    let mut per_arm: HashMap<(String, String, String), u32> = HashMap::new();
    for line in text.lines() {
        let r: Value = serde_json::from_str(line).expect("record");
        assert_eq!(r["variant"], "base");
        let key = (
            r["provider"].as_str().expect("provider").to_owned(),
            r["model"].as_str().expect("model").to_owned(),
            r["case_id"].as_str().expect("case").to_owned(),
        );
        *per_arm.entry(key).or_default() += 1;
    }
    assert_eq!(per_arm.len(), 6, "{per_arm:?}");
    assert!(per_arm.values().all(|&n| n == 20), "{per_arm:?}");
    assert!(per_arm.contains_key(&("first".into(), "a".into(), "job".into())));
    assert!(per_arm.contains_key(&("second".into(), "b".into(), "job".into())));

    // Two columns in the summary, each with its own figures.
    let summary = support::read_json(&run_dir.join("summary.json"));
    let arms = summary["arms"].as_array().expect("arms");
    assert_eq!(arms.len(), 2);
    assert_eq!(arms[0]["arm"]["provider"], "first");
    assert_eq!(arms[0]["suite"]["metrics"]["pass"]["x"], 60);
    assert_eq!(arms[1]["arm"]["provider"], "second");
    assert_eq!(arms[1]["suite"]["metrics"]["pass"]["x"], 40);
    assert_eq!(arms[1]["suite"]["metrics"]["pass"]["n"], 60);
    assert_eq!(summary["run"]["arms"][1]["model"], "b");
    assert!(
        run.stdout
            .contains("=== arm first · model a · variant base ===")
    );
    assert!(
        run.stdout
            .contains("=== arm second · model b · variant base ===")
    );

    // The summary is a function of results.jsonl: re-aggregated from the records alone (the
    // header aside), it is the same value, field for field.
    let header: toolscore_summary::Summary =
        serde_json::from_value(summary.clone()).expect("summary parses");
    let again = toolscore_summary::reaggregate(
        &run_dir.join("results.jsonl"),
        serde_json::from_value(summary.clone()).expect("header"),
        header.confidence,
        header.precision,
    )
    .expect("reaggregate");
    // The decision is judged from the re-aggregated summary by the run's own rule.
    let mut again = again;
    again.decision = Some(toolscore_decide::decide(
        &again,
        toolscore_summary::Decision::DEFAULT_MAX_INFRA_ERROR_RATE,
    ));
    assert_eq!(again, header);

    // And through the binary: `toolscore report` prints the report the run printed (the
    // lint findings `run` adds under it are `toolscore lint --from`'s business afterwards).
    let report = toolscore(dir.path(), &["report", "out/two", "--detail"]);
    assert_eq!(report.code, 0, "{}", report.transcript());
    assert!(
        run.stdout
            .contains("\nlint beside the most-missed tools · arm second"),
        "{}",
        run.stdout
    );
    let printed = run
        .stdout
        .split("\nlint beside the most-missed tools")
        .next()
        .and_then(|s| s.split("\nwrote ").next())
        .expect("report part")
        .to_owned();
    assert_eq!(report.stdout.trim_end(), printed.trim_end());
}

#[test]
fn report_at_another_confidence_recomputes_every_interval_from_the_records() {
    let server = FakeServer::start_in_background(scripted);
    let dir = project(&server);
    let run = toolscore(
        dir.path(),
        &[
            "run",
            "--provider",
            "second",
            "--trials",
            "10",
            "--out",
            "out",
            "--run-id",
            "one",
            "--progress",
            "off",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let report = toolscore(dir.path(), &["report", "out/one", "--confidence", "0.99"]);
    assert_eq!(report.code, 0, "{}", report.transcript());
    assert!(
        report.stdout.contains("rate [99% Wilson] (x/n)"),
        "{}",
        report.stdout
    );
    let iv = toolscore_stats::rate_interval(20, 30, 0.99).expect("interval");
    let want = format!("0.667 [{:.3}, {:.3}] (20/30)", iv.lo, iv.hi);
    assert!(report.stdout.contains(&want), "{want}\n{}", report.stdout);
    // Nothing was written by `report`.
    let files: Vec<_> = std::fs::read_dir(dir.path().join("out/one"))
        .expect("run dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(
        files.len(),
        4,
        "results.jsonl, results.csv, plan.json, summary.json: {files:?}"
    );

    let missing = toolscore(dir.path(), &["report", "out/none"]);
    assert_eq!(missing.code, 2, "{}", missing.transcript());
    assert!(
        missing
            .stderr
            .starts_with("error: no such run: out/none is not a folder"),
        "{}",
        missing.stderr
    );
}

#[test]
fn two_arms_with_one_name_and_recording_two_arms_are_refused() {
    let server = FakeServer::start_in_background(scripted);
    let dir = project(&server);
    let twice = toolscore(
        dir.path(),
        &[
            "run",
            "--provider",
            "first",
            "--provider",
            "first",
            "--out",
            "out",
        ],
    );
    assert_eq!(twice.code, 2, "{}", twice.transcript());
    assert!(
        twice.stderr.contains("two arms are named `first`"),
        "{}",
        twice.stderr
    );
    let record = toolscore(
        dir.path(),
        &[
            "run",
            "--provider",
            "first",
            "--provider",
            "second",
            "--record",
            "c.jsonl",
            "--out",
            "out",
        ],
    );
    assert_eq!(record.code, 2, "{}", record.transcript());
    assert!(
        record.stderr.contains("--record records one arm"),
        "{}",
        record.stderr
    );
    assert!(!dir.path().join("out").exists() && !dir.path().join("c.jsonl").exists());
    assert_eq!(server.requests_seen(), 0);
}
