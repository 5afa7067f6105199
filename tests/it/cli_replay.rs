//! Record a run against the fake server, then replay it with no server at all.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{
    FakeResponse, FakeServer, Run, last_user_message, text_body, tool_call_body, toolscore,
};

const TOOLS: &str = r#"{"tools": [
  {"name": "get_job_status", "description": "Status of an async billing job.", "inputSchema": {"type": "object", "properties": {"job_id": {"type": "string"}}, "required": ["job_id"]}},
  {"name": "get_server_status", "description": "Health of the billing API.", "inputSchema": {"type": "object", "properties": {}}}
]}"#;
const CASES: &str = r#"{"id": "job", "messages": [{"role": "user", "content": "Is job job_abc123 done?"}], "expect": {"tool": "get_job_status", "args": {"job_id": "job_abc123"}}}
{"id": "chat", "messages": [{"role": "user", "content": "thanks!"}], "expect": {"tool": null}}
"#;

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::write(dir.path().join("data/tools.json"), TOOLS).unwrap();
    std::fs::write(dir.path().join("data/cases.jsonl"), CASES).unwrap();
    dir
}

/// A varied answer stream: right, wrong, bad JSON, and an occasional 503 (recorded as an
/// infrastructure error, which replay must reproduce too).
fn record(dir: &Path) {
    let server = FakeServer::start_in_background(|req| {
        let job = last_user_message(req)
            .unwrap_or_default()
            .contains("job_abc123");
        match (req.seq % 7, job) {
            (3, _) => FakeResponse::status(503, r#"{"error":{"message":"busy"}}"#),
            (0..=2, true) => FakeResponse::ok(tool_call_body(&[(
                "get_job_status",
                r#"{"job_id":"job_abc123"}"#,
            )])),
            (4, true) => FakeResponse::ok(tool_call_body(&[("get_job_status", r#"{"job_id": "#)])),
            (_, true) => FakeResponse::ok(tool_call_body(&[("get_server_status", "{}")])),
            (0 | 1 | 5, false) => FakeResponse::ok(text_body("you're welcome")),
            (_, false) => FakeResponse::ok(tool_call_body(&[("get_server_status", "{}")])),
        }
    });
    let Run { code, stderr, .. } = toolscore(
        dir,
        &[
            "run",
            "--provider",
            "openai-compat",
            "--base-url",
            &server.base_url,
            "--model",
            "fake-1",
            "--temperature",
            "0.7",
            "--dataset",
            "data",
            "--trials",
            "30",
            "--max-retries",
            "0",
            "--max-infra-error-rate",
            "0.5",
            "--record",
            "rec/cassette.jsonl.gz",
            "--record-note",
            "fake server, scripted",
            "--run-id",
            "recorded",
            "--out",
            "out",
            "--progress",
            "off",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
}

fn summary_without_run(path: PathBuf) -> Value {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("run");
    // A replayed arm is named `replay`, whatever the recording provider was called.
    for arm in v["arms"].as_array_mut().unwrap() {
        arm["arm"].as_object_mut().unwrap().remove("provider");
    }
    for arm in v["cost"]["arms"].as_array_mut().unwrap() {
        arm["arm"].as_object_mut().unwrap().remove("provider");
    }
    v
}

/// Records keyed by (case, trial) with the fields that identify a run removed.
fn records(path: PathBuf) -> Vec<Value> {
    let mut out: Vec<Value> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            for k in ["run_id", "started_at", "provider"] {
                v.as_object_mut().unwrap().remove(k);
            }
            v
        })
        .collect();
    out.sort_by_key(|v| {
        (
            v["case_id"].as_str().unwrap().to_owned(),
            v["trial_index"].as_u64().unwrap(),
        )
    });
    out
}

#[test]
fn replay_reproduces_the_recorded_summary_exactly_without_a_server() {
    let dir = project();
    record(dir.path());
    let Run {
        code,
        stdout,
        stderr,
    } = toolscore(
        dir.path(),
        &[
            "run",
            "--provider",
            "replay:rec/cassette.jsonl.gz",
            "--dataset",
            "data",
            "--run-id",
            "replayed",
            "--out",
            "out",
            "--progress",
            "off",
            "--max-infra-error-rate",
            "0.5",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout
            .contains("REPLAY: no model was called. Responses replayed from rec/cassette.jsonl.gz"),
        "{stdout}"
    );
    assert!(
        stdout.contains("recorded ")
            && stdout.contains("from model `fake-1`")
            && stdout.contains("fake server, scripted"),
        "{stdout}"
    );

    let recorded = summary_without_run(dir.path().join("out/recorded/summary.json"));
    let replayed = summary_without_run(dir.path().join("out/replayed/summary.json"));
    assert_eq!(recorded, replayed);
    assert!(
        recorded["arms"][0]["infra"]["errors"].as_u64().unwrap() > 0,
        "the recording includes infrastructure errors"
    );
    assert!(
        recorded["arms"][0]["suite"]["metrics"]["selection"]["x"]
            .as_u64()
            .unwrap()
            > 0
    );
    let (a, b) = (
        records(dir.path().join("out/recorded/results.jsonl")),
        records(dir.path().join("out/replayed/results.jsonl")),
    );
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x, y);
    }

    let replay_run: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("out/replayed/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(replay_run["run"]["arms"][0]["model"], "fake-1");
    assert!(replay_run["run"]["arms"][0]["replay"]["cassette"].is_string());
    assert_eq!(
        replay_run["run"]["trials_per_case"], 30,
        "trials default to what was recorded"
    );
}

#[test]
fn replay_refuses_what_was_not_recorded() {
    let dir = project();
    record(dir.path());
    let replay = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--provider",
            "replay:rec/cassette.jsonl.gz",
            "--dataset",
            "data",
            "--out",
            "out2",
            "--progress",
            "off",
        ];
        args.extend_from_slice(extra);
        toolscore(dir.path(), &args)
    };

    let Run { code, stderr, .. } = replay(&["--trials", "31"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--trials 31 needs 31 recordings per case, but case `"),
        "{stderr}"
    );
    // Replaying fewer is the fix offered first; recording more goes to a new file, never over
    // the recording being replayed.
    assert!(stderr.contains("has 30 recorded trials in rec/cassette.jsonl.gz: replay at most 30 (--trials 30, the default when replaying), or record more into a new cassette with `toolscore run --provider <live provider> --model fake-1 --temperature 0.7 --trials N --record NEW.cassette.jsonl.gz`"), "{stderr}");

    // A recorded answer took at least one attempt: `attempts: 0` is named by line, exit 2.
    let text = {
        use std::io::Read;
        let file = std::fs::File::open(dir.path().join("rec/cassette.jsonl.gz")).unwrap();
        let mut text = String::new();
        flate2::read::MultiGzDecoder::new(file)
            .read_to_string(&mut text)
            .unwrap();
        text
    };
    assert!(text.contains("\"attempts\":1"), "{text}");
    let zeroed = text.replacen("\"attempts\":1", "\"attempts\":0", 1);
    let line = zeroed
        .lines()
        .position(|l| l.contains("\"attempts\":0"))
        .unwrap()
        + 1;
    std::fs::write(dir.path().join("rec/zero.jsonl"), zeroed).unwrap();
    let Run { code, stderr, .. } = toolscore(
        dir.path(),
        &[
            "run",
            "--provider",
            "replay:rec/zero.jsonl",
            "--dataset",
            "data",
            "--out",
            "out2",
        ],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!("rec/zero.jsonl:{line}"))
            && stderr.contains("attempts 0 is outside 1..=1000"),
        "{stderr}"
    );

    let Run { code, stderr, .. } = replay(&["--model", "other"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("--model cannot be used with --provider replay"),
        "{stderr}"
    );

    // A changed fixture has no recording.
    std::fs::write(
        dir.path().join("data/cases.jsonl"),
        CASES.replace("thanks!", "thank you!"),
    )
    .unwrap();
    let Run { code, stderr, .. } = replay(&[]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains(
            "no recording for data/chat: the fixture or the catalog changed since recording"
        ),
        "{stderr}"
    );

    // A changed catalog (another description variant) is refused outright.
    std::fs::write(dir.path().join("data/cases.jsonl"), CASES).unwrap();
    std::fs::write(
        dir.path().join("data/tools.json"),
        TOOLS.replace("Health of the billing API.", "Is the API up?"),
    )
    .unwrap();
    let Run { code, stderr, .. } = replay(&[]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("the cassette was recorded against another catalog for dataset `data`"),
        "{stderr}"
    );
    assert!(
        !dir.path().join("out2").exists(),
        "nothing is written when replay is refused"
    );

    let Run { code, stderr, .. } = toolscore(
        dir.path(),
        &[
            "run",
            "--provider",
            "replay:missing.jsonl",
            "--dataset",
            "data",
        ],
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("missing.jsonl: cannot read"), "{stderr}");
}
