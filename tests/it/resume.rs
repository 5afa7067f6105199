//! `--resume`: a run killed with SIGKILL at random points, resumed again and again, ends with
//! the summary an uninterrupted run writes, with no trial lost or duplicated.

use crate::support;

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use support::{
    FakeRequest, FakeResponse, FakeServer, last_user_message, text_body, tool_call_body, toolscore,
};

const TOOLS: &str = r#"{"tools": [
  {"name": "get_job_status", "description": "Status of a job.", "inputSchema": {"type": "object", "properties": {"job_id": {"type": "string"}}, "required": ["job_id"]}},
  {"name": "get_server_status", "description": "Health of the API.", "inputSchema": {"type": "object", "properties": {}}}
]}"#;

const CASES: &str = r#"{"id": "job", "messages": [{"role": "user", "content": "Is job job_1 done?"}], "expect": {"tool": "get_job_status", "args": {"job_id": "job_1"}}}
{"id": "server", "messages": [{"role": "user", "content": "Is the API up?"}], "expect": {"tool": "get_server_status"}}
{"id": "thanks", "messages": [{"role": "user", "content": "thanks"}], "expect": {"tool": null}}
"#;

/// The answer depends only on the case, so any order of trials gives the same counts; a short
/// delay keeps the run long enough to be killed in the middle.
fn server() -> FakeServer {
    FakeServer::start_in_background(|req: &FakeRequest| {
        let user = last_user_message(req).unwrap_or_default();
        let body = if user.contains("job_1") {
            tool_call_body(&[("get_job_status", r#"{"job_id":"job_1"}"#)])
        } else if user.contains("API") {
            // Wrong: no call where one is expected.
            text_body("It is up")
        } else {
            // Wrong: a call where none is expected.
            tool_call_body(&[("get_server_status", "{}")])
        };
        FakeResponse::ok(body).delayed(Duration::from_millis(15))
    })
}

fn base_args(server: &FakeServer, trials: &str) -> Vec<String> {
    [
        "run",
        "--provider",
        "openai-compat",
        "--base-url",
        &server.base_url,
        "--model",
        "m",
        "--dataset",
        "data",
        "--trials",
        trials,
        "--concurrency",
        "3",
        "--out",
        "out",
        "--progress",
        "off",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

/// [`base_args`] with a case gate: the resumed run must decide as the whole run did.
fn gated_args(server: &FakeServer) -> Vec<String> {
    let mut args = base_args(server, "60");
    args.extend(["--gate", "selection>=0.5", "--gate-level", "case"].map(str::to_owned));
    args
}

/// The summary without what differs between any two runs: the header and latencies.
fn comparable(dir: &Path, run: &str) -> Value {
    let mut v: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("out").join(run).join("summary.json")).expect("summary"),
    )
    .expect("json");
    v.as_object_mut().unwrap().remove("run");
    for arm in v["arms"].as_array_mut().unwrap() {
        arm.as_object_mut().unwrap().remove("latency_ms");
        arm.as_object_mut().unwrap().remove("tool_latency");
        let warnings = arm["warnings"].as_array_mut().unwrap();
        warnings.retain(|w| w["kind"] != "latency_p99_unbounded");
    }
    v
}

#[test]
fn a_run_killed_again_and_again_resumes_to_the_uninterrupted_summary() {
    let server = server();
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("data")).expect("mkdir");
    std::fs::write(dir.path().join("data/tools.json"), TOOLS).expect("tools");
    std::fs::write(dir.path().join("data/cases.jsonl"), CASES).expect("cases");

    let mut reference = gated_args(&server);
    reference.extend(["--run-id".into(), "reference".into()]);
    let refs: Vec<&str> = reference.iter().map(String::as_str).collect();
    let run = toolscore(dir.path(), &refs);
    // The case gate fails `server` and `thanks` (always wrong): the run's decision is FAIL.
    assert_eq!(run.code, 1, "{}", run.transcript());

    // Killed at pseudo-random moments (seeded), then resumed, several times.
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut kills = 0;
    for round in 0..5 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let wait = Duration::from_millis(80 + seed % 220);
        let mut args = gated_args(&server);
        if round == 0 {
            args.extend(["--run-id".into(), "killed".into()]);
        } else {
            args.extend(["--resume".into(), "out/killed".into()]);
        }
        let mut child = support::toolscore_command()
            .current_dir(dir.path())
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        std::thread::sleep(wait);
        if child.try_wait().expect("wait").is_none() {
            child.kill().expect("SIGKILL");
            kills += 1;
        }
        child.wait().expect("reap");
    }
    assert!(kills >= 3, "the test must really kill runs ({kills} kills)");

    let mut args = gated_args(&server);
    args.extend(["--resume".into(), "out/killed".into()]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let last = toolscore(dir.path(), &refs);
    assert_eq!(
        last.code,
        1,
        "decides as the whole run: {}",
        last.transcript()
    );
    assert!(last.stderr.contains("resuming: "), "{}", last.stderr);

    // Every planned trial exactly once.
    let text =
        std::fs::read_to_string(dir.path().join("out/killed/results.jsonl")).expect("results");
    let mut seen: HashMap<(String, u64), u32> = HashMap::new();
    for line in text.lines() {
        let r: Value = serde_json::from_str(line).expect("whole record");
        *seen
            .entry((
                r["case_id"].as_str().unwrap().to_owned(),
                r["trial_index"].as_u64().unwrap(),
            ))
            .or_default() += 1;
    }
    assert_eq!(seen.len(), 3 * 60);
    assert!(seen.values().all(|&n| n == 1), "duplicated trials");
    let csv = std::fs::read_to_string(dir.path().join("out/killed/results.csv")).expect("csv");
    assert_eq!(
        csv.lines().count(),
        1 + 3 * 60,
        "results.csv rebuilt with the kept trials"
    );

    // The same summary, the gates and the decision included.
    let (killed, reference) = (
        comparable(dir.path(), "killed"),
        comparable(dir.path(), "reference"),
    );
    assert_eq!(killed["decision"]["verdict"], "fail", "{killed:#}");
    assert_eq!(killed, reference);

    // The history marks the run as gathered in several sittings, with the trials the last
    // one kept; the run that ran in one sitting carries no mark.
    let history = std::fs::read_to_string(dir.path().join("out/history.jsonl")).expect("history");
    let line_of = |id: &str| -> Value {
        history
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("line"))
            .find(|l| l["run_id"] == id)
            .unwrap_or_else(|| panic!("no history line for {id}: {history}"))
    };
    let kept = line_of("killed")["sampling"]["resumed_trials"]
        .as_u64()
        .expect("resumed_trials");
    assert!(kept > 0 && kept <= 180, "{kept}");
    assert_eq!(line_of("reference").get("sampling"), None);
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("out/killed/summary.json")).expect("summary"),
    )
    .expect("json");
    assert_eq!(summary["run"]["resumed_trials"], kept);
    let trend = toolscore(dir.path(), &["history", "--dir", "out"]);
    assert!(
        trend.stdout.contains(&format!(
            "(fixed, 60 per case; resumed, {kept} trials kept)"
        )),
        "{}",
        trend.stdout
    );
}

#[test]
fn resuming_with_a_different_plan_names_the_difference() {
    let server = server();
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("data")).expect("mkdir");
    std::fs::write(dir.path().join("data/tools.json"), TOOLS).expect("tools");
    std::fs::write(dir.path().join("data/cases.jsonl"), CASES).expect("cases");
    let mut args = base_args(&server, "2");
    args.extend(["--run-id".into(), "r".into()]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(toolscore(dir.path(), &refs).code, 0);

    let mut args = base_args(&server, "60");
    args.extend(["--resume".into(), "out/r".into()]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = toolscore(dir.path(), &refs);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert_eq!(
        run.stderr.trim_end(),
        "error: --resume out/r: the run planned 2 trials per case, these flags plan 60 (pass --trials 2); resume with the flags the run was started with"
    );
}

#[test]
fn resuming_refuses_fixtures_edited_since_the_run() {
    let server = server();
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("data")).expect("mkdir");
    std::fs::write(dir.path().join("data/tools.json"), TOOLS).expect("tools");
    std::fs::write(dir.path().join("data/cases.jsonl"), CASES).expect("cases");
    let mut args = base_args(&server, "2");
    args.extend(["--run-id".into(), "r".into()]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(toolscore(dir.path(), &refs).code, 0);
    let mut args = base_args(&server, "2");
    args.extend(["--resume".into(), "out/r".into()]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();

    // Whitespace and key order are not edits: the same fixtures as data resume.
    let respaced = CASES
        .replace(r#"{"id": "job", "messages""#, r#"{ "messages""#)
        .replace(
            r#""content": "Is job job_1 done?"}], "expect""#,
            r#""content": "Is job job_1 done?"}], "id":   "job", "expect""#,
        );
    assert_ne!(respaced, CASES);
    std::fs::write(dir.path().join("data/cases.jsonl"), &respaced).expect("cases");
    let run = toolscore(dir.path(), &refs);
    assert_eq!(run.code, 0, "{}", run.transcript());

    // A changed expectation, then a changed message: same ids, same count, refused.
    for edited in [
        CASES.replace(
            r#""args": {"job_id": "job_1"}"#,
            r#""args": {"job_id": "job_2"}"#,
        ),
        CASES.replace("Is the API up?", "Is the API down?"),
    ] {
        std::fs::write(dir.path().join("data/cases.jsonl"), &edited).expect("cases");
        let before = std::fs::read(dir.path().join("out/r/results.jsonl")).expect("results");
        let run = toolscore(dir.path(), &refs);
        assert_eq!(run.code, 2, "{}", run.transcript());
        assert!(
            run.stderr.contains(
                "the fixtures of dataset `data` were edited since the run (a message, an expectation, a tag or a bar: sha256:"
            ),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("start a new run"), "{}", run.stderr);
        let after = std::fs::read(dir.path().join("out/r/results.jsonl")).expect("results");
        assert_eq!(before, after, "a refused resume must write nothing");
    }
}
