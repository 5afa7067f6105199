//! Catalog variants and per-case overrides, through the binary: `--variant base --variant
//! clear` runs one arm per variant on the same cases, the model reads each variant's wording, a
//! rename carries the expectation along, a fixture's `"trials"` and `"gate"` change only that
//! case, and broken overlays stop before any request with exit 2.

use crate::support;

use std::collections::HashMap;

use serde_json::Value;
use support::{
    FakeResponse, FakeServer, fake_project, last_user_message, text_body, tool_call_body, toolscore,
};

const TOOLS: &str = r#"{"tools": [
  {"name": "get_job_status", "description": "Status.", "inputSchema": {"type": "object", "properties": {"job_id": {"type": "string", "description": "Id."}}, "required": ["job_id"], "additionalProperties": false}},
  {"name": "get_server_status", "description": "Status of the service.", "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false}}
]}"#;

const CLEAR: &str = r#"{
  "note": "say which status",
  "tools": {
    "get_job_status": {"description": "Progress of an async export job.", "rename": "job_progress",
                       "properties": {"job_id": "The job_xxxxxx id."}}
  }
}"#;

const CASES: &str = r#"{"id": "job", "messages": [{"role": "user", "content": "Is job job_abc123 done?"}], "expect": {"tool": "get_job_status", "args": {"job_id": "job_abc123"}}, "trials": 7, "gate": 0.99}
{"id": "server", "messages": [{"role": "user", "content": "Is the billing API up?"}], "expect": {"tool": "get_server_status"}}
{"id": "thanks", "messages": [{"role": "user", "content": "thanks"}], "expect": {"tool": null}}
"#;

/// The model picks the job tool only when its description says "job": under the base wording
/// ("Status.") it calls get_server_status instead.
fn reads_descriptions(req: &support::FakeRequest) -> FakeResponse {
    let user = last_user_message(req).unwrap_or_default();
    let tools = req.body["tools"].as_array().cloned().unwrap_or_default();
    let job_tool = tools.iter().find_map(|t| {
        let f = &t["function"];
        f["description"]
            .as_str()
            .is_some_and(|d| d.contains("job"))
            .then(|| f["name"].as_str().unwrap_or_default().to_owned())
    });
    let body = if user.contains("job_abc123") {
        match job_tool {
            Some(name) => tool_call_body(&[(&name, r#"{"job_id":"job_abc123"}"#)]),
            None => tool_call_body(&[("get_server_status", "{}")]),
        }
    } else if user.contains("billing API") {
        tool_call_body(&[("get_server_status", "{}")])
    } else {
        text_body("You're welcome!")
    };
    FakeResponse::ok(body)
}

fn project(server: &FakeServer) -> tempfile::TempDir {
    fake_project(
        &server.base_url,
        TOOLS,
        CASES,
        &[("data/variants/clear.json", CLEAR)],
    )
}

#[test]
fn each_variant_is_an_arm_on_the_same_cases_and_a_rename_follows_the_expectation() {
    let server = FakeServer::start_in_background(reads_descriptions);
    let dir = project(&server);
    let run = toolscore(
        dir.path(),
        &[
            "run",
            "--provider",
            "fake",
            "--variant",
            "base",
            "--variant",
            "clear",
            "--trials",
            "4",
            "--out",
            "out",
            "--run-id",
            "v",
            "--progress",
            "off",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    // `job` runs its own 7 trials, the others 4, in both arms.
    assert_eq!(server.requests_seen(), 2 * (7 + 4 + 4));
    let text = std::fs::read_to_string(dir.path().join("out/v/results.jsonl")).expect("results");
    let mut counts: HashMap<(String, String), (u32, u32)> = HashMap::new();
    for line in text.lines() {
        let r: Value = serde_json::from_str(line).expect("record");
        let key = (
            r["variant"].as_str().expect("variant").to_owned(),
            r["case_id"].as_str().expect("case").to_owned(),
        );
        let e = counts.entry(key).or_default();
        e.0 += 1;
        e.1 += u32::from(r["outcome"] == "pass");
        if r["variant"] == "clear" && r["case_id"] == "job" {
            assert_eq!(r["expected"], "job_progress", "the rename follows: {line}");
        }
    }
    assert_eq!(counts[&("base".into(), "job".into())], (7, 0));
    assert_eq!(counts[&("clear".into(), "job".into())], (7, 7));
    assert_eq!(counts[&("clear".into(), "server".into())], (4, 4));
    assert_eq!(counts[&("base".into(), "thanks".into())], (4, 4));

    let summary = support::read_json(&dir.path().join("out/v/summary.json"));
    assert_eq!(summary["planned_trials"], 30);
    assert_eq!(summary["arms"][0]["arm"]["variant"], "base");
    assert_eq!(summary["arms"][1]["arm"]["variant"], "clear");
    let data = &summary["run"]["datasets"][0];
    assert_eq!(data["variants"][0]["name"], "clear");
    assert_eq!(data["variants"][0]["note"], "say which status");
    assert_eq!(data["case_trials"]["job"], 7);
    assert_eq!(data["case_gates"]["job"], 0.99);
    assert!(run.stdout.contains("variant clear"), "{}", run.stdout);
}

#[test]
fn a_fixture_gate_holds_its_case_to_its_own_bar() {
    let server = FakeServer::start_in_background(reads_descriptions);
    let dir = project(&server);
    // Under `clear` every case passes every trial. At 7/7 the one-sided 95% Wilson lower bound
    // is 0.721, above 0.7 but below the job case's own 0.99, so the gate cannot pass on it;
    // nor can it fail (7/7 is no evidence of a rate below 0.99).
    let run = toolscore(
        dir.path(),
        &[
            "run",
            "--provider",
            "fake",
            "--variant",
            "clear",
            "--trials",
            "40",
            "--gate",
            "pass>=0.7",
            "--gate-level",
            "case",
            "--out",
            "out",
            "--run-id",
            "g",
            "--progress",
            "off",
        ],
    );
    assert_eq!(run.code, 3, "{}", run.transcript());
    assert!(run.stdout.contains("its own bar 0.99"), "{}", run.stdout);
    let summary = support::read_json(&dir.path().join("out/g/summary.json"));
    let gate = &summary["gate"]["gates"][0];
    assert_eq!(gate["passed_cases"], 2);
    assert_eq!(gate["inconclusive_cases"], 1);
    assert_eq!(gate["not_passed"][0]["case_id"], "job");
    assert_eq!(gate["not_passed"][0]["threshold"], 0.99);
    // `report` judges the finished run the same way from its files.
    let again = toolscore(
        dir.path(),
        &[
            "report",
            "out/g",
            "--gate",
            "pass>=0.7",
            "--gate-level",
            "case",
        ],
    );
    assert_eq!(again.code, 3, "{}", again.transcript());
}

#[test]
fn validate_lists_variants_and_bad_overlays_stop_with_file_line_and_field() {
    let server = FakeServer::start_in_background(reads_descriptions);
    let dir = project(&server);
    let ok = toolscore(dir.path(), &["validate"]);
    assert_eq!(ok.code, 0, "{}", ok.transcript());
    assert!(
        ok.stdout
            .contains("variant clear: data/variants/clear.json"),
        "{}",
        ok.stdout
    );

    let missing = toolscore(
        dir.path(),
        &["run", "--provider", "fake", "--variant", "terse"],
    );
    assert_eq!(missing.code, 2, "{}", missing.transcript());
    assert!(
        missing
            .stderr
            .contains("dataset `data` has no data/variants/terse.json (its variants: base, clear)"),
        "{}",
        missing.stderr
    );

    std::fs::write(
        dir.path().join("data/variants/broken.json"),
        "{\"tools\": {\n  \"get_job_status\": {\"properties\": {\"jobid\": \"x\"}}}}",
    )
    .expect("write");
    let bad = toolscore(dir.path(), &["run", "--provider", "fake"]);
    assert_eq!(bad.code, 2, "{}", bad.transcript());
    assert!(
        bad.stderr.contains("data/variants/broken.json:2")
            && bad.stderr.contains("tools.get_job_status.properties.jobid")
            && bad.stderr.contains("no property `jobid`"),
        "{}",
        bad.stderr
    );
    assert_eq!(server.requests_seen(), 0);
    assert!(!dir.path().join("reports").exists());

    std::fs::remove_file(dir.path().join("data/variants/broken.json")).expect("rm");
    std::fs::write(
        dir.path().join("data/cases.jsonl"),
        CASES.replace("\"gate\": 0.99", "\"gate\": 1.5"),
    )
    .expect("write");
    let bad_gate = toolscore(dir.path(), &["validate"]);
    assert_eq!(bad_gate.code, 2, "{}", bad_gate.transcript());
    assert!(
        bad_gate.stderr.contains("cases.jsonl:1") && bad_gate.stderr.contains("gate"),
        "{}",
        bad_gate.stderr
    );
}

/// The shipped config's default provider replays a recording of one wording: `--variant`
/// with it is refused, and the error names the replay providers that hold each wording, a
/// command that then works offline.
#[test]
fn variants_with_the_shipped_replay_say_which_recordings_to_replay_instead() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().expect("tempdir");
    let out_dir = out.path().to_str().expect("utf-8");
    let refused = toolscore(
        root,
        &[
            "run",
            "--variant",
            "base",
            "--variant",
            "terse",
            "--out",
            out_dir,
        ],
    );
    assert_eq!(refused.code, 2, "{}", refused.transcript());
    assert_eq!(
        refused.stderr.trim_end(),
        "error: --variant cannot be used with a replay provider: the config's default provider `demo` replays a cassette, which holds the answers to the one catalog variant it was recorded with; to compare these wordings offline, replay one recording of each: --provider demo --provider demo-terse (recorded with variants base, terse)"
    );
    assert_eq!(std::fs::read_dir(out.path()).expect("out").count(), 0);
    let suggested = toolscore(
        root,
        &[
            "run",
            "--provider",
            "demo",
            "--provider",
            "demo-terse",
            "--out",
            out_dir,
            "--progress",
            "off",
            "--run-id",
            "ab",
        ],
    );
    assert_eq!(suggested.code, 0, "{}", suggested.transcript());
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("ab/summary.json")).expect("summary"),
    )
    .expect("json");
    let variants: Vec<&str> = summary["arms"]
        .as_array()
        .expect("arms")
        .iter()
        .map(|a| a["arm"]["variant"].as_str().expect("variant"))
        .collect();
    assert_eq!(variants, ["base", "terse"]);
}
