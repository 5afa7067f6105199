//! `run --shard i/n` and `merge`: four shards merged equal the same plan run in one piece, field
//! by field; a missing, duplicated or foreign shard is refused by name; the flags that need the
//! whole plan are refused with shards; adding a case moves no trial between shards.

use crate::support;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use support::{
    FakeRequest, FakeResponse, FakeServer, Run, fake_project, last_user_message, text_body,
    tool_call_body, toolscore, toolscore_env,
};

const TOOLS: &str = r#"{"tools": [
  {"name": "get_job_status", "description": "Status of a job.", "inputSchema": {"type": "object", "properties": {"job_id": {"type": "string"}}, "required": ["job_id"]}},
  {"name": "get_server_status", "description": "Health of the API.", "inputSchema": {"type": "object", "properties": {}}}
]}"#;

const CASES: &str = r#"{"id": "job", "messages": [{"role": "user", "content": "Is job job_1 done?"}], "expect": {"tool": "get_job_status", "args": {"job_id": "job_1"}}}
{"id": "server", "messages": [{"role": "user", "content": "Is the API up?"}], "expect": {"tool": "get_server_status"}}
{"id": "flaky", "messages": [{"role": "user", "content": "Is job job_2 stuck?"}], "expect": {"tool": "get_job_status", "args": {"job_id": "job_2"}}}
{"id": "thanks", "messages": [{"role": "user", "content": "thanks"}], "expect": {"tool": null}}
"#;

const EXTRA_CASE: &str = r#"{"id": "extra", "messages": [{"role": "user", "content": "Is job job_3 done?"}], "expect": {"tool": "get_job_status", "args": {"job_id": "job_3"}}}
"#;

/// Right on `job`, wrong on `server` and `thanks`, and right on every third request for
/// `flaky` (so its rate is neither 0 nor 1).
fn server() -> FakeServer {
    let seq = AtomicU64::new(0);
    FakeServer::start_in_background(move |req: &FakeRequest| {
        let user = last_user_message(req).unwrap_or_default();
        let body = if user.contains("job_1") || user.contains("job_3") {
            tool_call_body(&[("get_job_status", r#"{"job_id":"job_1"}"#)])
        } else if user.contains("job_2") {
            if seq.fetch_add(1, Ordering::SeqCst).is_multiple_of(3) {
                tool_call_body(&[("get_job_status", r#"{"job_id":"job_2"}"#)])
            } else {
                tool_call_body(&[("get_server_status", "{}")])
            }
        } else if user.contains("API") {
            text_body("It is up")
        } else {
            tool_call_body(&[("get_server_status", "{}")])
        };
        FakeResponse::ok(body)
    })
}

fn ok(run: &Run) {
    assert_eq!(run.code, 0, "{}", run.transcript());
}

/// Records 30 trials per case from the fake in one cassette: replays of it are the same plan
/// with the same answers and latencies, run in one piece or in shards.
fn recorded_project() -> (FakeServer, tempfile::TempDir) {
    let server = server();
    let dir = fake_project(&server.base_url, TOOLS, CASES, &[]);
    ok(&toolscore(
        dir.path(),
        &[
            "run",
            "--provider",
            "fake",
            "--trials",
            "30",
            "--record",
            "rec.cassette.jsonl",
            "--out",
            "out",
            "--run-id",
            "recorded",
            "--progress",
            "off",
            "--format",
            "json",
        ],
    ));
    (server, dir)
}

fn replay<'a>(run_id: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "run",
        "--provider",
        "replay:rec.cassette.jsonl",
        "--trials",
        "30",
        "--concurrency",
        "4",
        "--out",
        "out",
        "--run-id",
        run_id,
        "--progress",
        "off",
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    args
}

/// Asserts `a` and `b` are equal, naming the first field (JSON path) that differs.
fn assert_same(a: &Value, b: &Value, path: &str) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                assert_same(
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                    &format!("{path}.{k}"),
                );
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{path}: lengths differ");
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                assert_same(u, v, &format!("{path}[{i}]"));
            }
        }
        _ => assert_eq!(a, b, "{path} differs"),
    }
}

#[test]
fn four_shards_merged_equal_the_same_plan_run_in_one_piece() {
    let (_server, dir) = recorded_project();
    let d = dir.path();
    ok(&toolscore(d, &replay("whole", &[])));
    let mut planned = Vec::new();
    for i in 0..4 {
        let shard = format!("{i}/4");
        let id = format!("shard-{i}");
        ok(&toolscore(d, &replay(&id, &["--shard", &shard])));
        let s = support::read_json(&d.join("out").join(&id).join("summary.json"));
        assert_eq!(s["run"]["shard"]["index"], i);
        assert_eq!(s["run"]["shard"]["count"], 4);
        assert!(
            s["run"]["shard"]["plan"]
                .as_str()
                .unwrap()
                .starts_with("sha256:")
        );
        // The planned trials of a shard are those of its slice, and it ran them all.
        assert_eq!(s["planned_trials"], s["completed_trials"]);
        planned.push(s["planned_trials"].as_u64().unwrap());
    }
    // 4 cases × 30 trials split into 4 hashed slices: every trial once, none empty or lopsided.
    assert_eq!(planned.iter().sum::<u64>(), 120, "{planned:?}");
    assert!(
        planned.iter().all(|&p| (15..=45).contains(&p)),
        "{planned:?}"
    );
    // Every shard records the same plan digest.
    let digest = |i: usize| {
        support::read_json(&d.join(format!("out/shard-{i}/summary.json")))["run"]["shard"]["plan"]
            .clone()
    };
    assert!((1..4).all(|i| digest(i) == digest(0)));

    // Given in any order.
    let merge = toolscore(
        d,
        &[
            "merge",
            "out/shard-3",
            "out/shard-1",
            "out/shard-0",
            "out/shard-2",
            "--out",
            "out/merged",
            "--format",
            "json",
        ],
    );
    ok(&merge);
    assert!(
        merge.stderr.contains("merged 4 shards (120 trials)"),
        "{}",
        merge.transcript()
    );

    let mut whole = support::read_json(&d.join("out/whole/summary.json"));
    let mut merged = support::read_json(&d.join("out/merged/summary.json"));
    for s in [&mut whole, &mut merged] {
        let run = s["run"].as_object_mut().unwrap();
        for field in ["run_id", "started_at", "finished_at"] {
            assert!(run.remove(field).is_some(), "{field}");
        }
    }
    assert_eq!(merged["completed_trials"], 120);
    assert!(merged["run"].get("shard").is_none());
    // The one thing the header adds: how the run was gathered.
    assert_eq!(merged["run"]["merged_shards"], 4);
    let mut one_piece = merged.clone();
    one_piece["run"]
        .as_object_mut()
        .unwrap()
        .remove("merged_shards");
    assert_same(&whole, &one_piece, "summary");
    // The merged summary is what `report` re-aggregates from the merged results.jsonl.
    let stdout_of = |args: &[&str]| {
        let run = toolscore(d, args);
        (run.code, run.stdout)
    };
    let (code, reported) = stdout_of(&["report", "out/merged", "--format", "json"]);
    assert_eq!(code, 0);
    let mut reported: Value = serde_json::from_str(&reported).expect("report json");
    for field in ["run_id", "started_at", "finished_at"] {
        reported["run"].as_object_mut().unwrap().remove(field);
    }
    // (The test helper replaces timestamps in output with placeholders: compare alike.)
    let filtered: Value =
        serde_json::from_str(&support::filter(&merged.to_string(), d)).expect("json");
    assert_same(&filtered, &reported, "report");

    // Gates, report and compare work on the merged folder as on the one-piece run.
    for gate in ["selection>=0.3", "selection>=0.9", "pass>=0.45"] {
        let on = |run: &str| {
            let r = toolscore(d, &["report", run, "--gate", gate, "--format", "json"]);
            let v: Value = serde_json::from_str(&r.stdout).expect("gate json");
            (r.code, v["gate"].clone(), v["decision"].clone())
        };
        assert_eq!(on("out/merged"), on("out/whole"), "{gate}");
    }
    let (code, _) = stdout_of(&["report", "out/merged", "--gate", "selection>=0.9"]);
    assert_eq!(code, 1, "selection is about 0.33: the gate fails");
    let md = toolscore(d, &["report", "out/merged", "--format", "md"]);
    ok(&md);
    assert!(d.join("out/merged/report.md").is_file());
    let compare = toolscore(d, &["compare", "out/whole", "out/merged"]);
    assert_ne!(compare.code, 2, "{}", compare.transcript());

    // The history holds the recording, the whole run and the merged run, never a shard.
    let history = std::fs::read_to_string(d.join("out/history.jsonl")).expect("history");
    let ids: Vec<String> = history
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("line")["run_id"].to_string())
        .collect();
    assert_eq!(
        ids,
        ["\"recorded\"", "\"whole\"", "\"merged\""],
        "{history}"
    );
    // The merged run says it was gathered by four processes; the whole run says nothing.
    let sampling: Vec<Value> = history
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("line")["sampling"].clone())
        .collect();
    assert_eq!(sampling[1], Value::Null, "{history}");
    assert_eq!(sampling[2]["merged_shards"], 4, "{history}");
    // Provenance beside the merged run.
    let shards: Value = serde_json::from_str(
        &std::fs::read_to_string(d.join("out/merged/shards.json")).expect("shards.json"),
    )
    .expect("json");
    assert_eq!(shards["shards"].as_array().unwrap().len(), 4);
    assert_eq!(shards["plan"], digest(0));
}

#[test]
fn a_missing_duplicated_or_foreign_shard_is_refused_by_name() {
    let (_server, dir) = recorded_project();
    let d = dir.path();
    for i in 0..3 {
        let (shard, id) = (format!("{i}/3"), format!("s{i}"));
        ok(&toolscore(d, &replay(&id, &["--shard", &shard])));
    }
    // Same suite, another trial count: another plan.
    ok(&toolscore(
        d,
        &[
            "run",
            "--provider",
            "replay:rec.cassette.jsonl",
            "--trials",
            "20",
            "--out",
            "out",
            "--run-id",
            "other-1",
            "--progress",
            "off",
            "--format",
            "json",
            "--shard",
            "1/3",
        ],
    ));
    ok(&toolscore(d, &replay("four-1", &["--shard", "1/4"])));
    ok(&toolscore(d, &replay("unsharded", &[])));

    let refused = |args: &[&str], says: &[&str]| {
        let run = toolscore(d, args);
        assert_eq!(run.code, 2, "{}", run.transcript());
        for s in says {
            assert!(run.stderr.contains(s), "{s:?} in {}", run.transcript());
        }
        assert!(!d.join("out/m").exists(), "nothing written");
    };
    refused(
        &["merge", "out/s0", "out/s2", "--out", "out/m"],
        &["shard 1/3 of the plan is missing", "given: 0/3, 2/3"],
    );
    refused(
        &[
            "merge", "out/s0", "out/s1", "out/s1", "out/s2", "--out", "out/m",
        ],
        &["shard 1/3 is given twice: out/s1 and out/s1"],
    );
    refused(
        &["merge", "out/s0", "out/other-1", "out/s2", "--out", "out/m"],
        &[
            "out/other-1 (shard 1/3) is not of the same plan as out/s0",
            "20 trials per case, not 30",
        ],
    );
    refused(
        &["merge", "out/s0", "out/four-1", "out/s2", "--out", "out/m"],
        &["out/four-1 (shard 1/4)", "split into 4 shards, not 3"],
    );
    refused(
        &["merge", "out/s0", "out/unsharded", "--out", "out/m"],
        &["out/unsharded is not a shard"],
    );

    // A shard whose records were tampered with: a trial of another slice, then a duplicate.
    let copy = |from: &str, to: &str| {
        std::fs::create_dir_all(d.join(to)).unwrap();
        for f in ["plan.json", "summary.json", "results.jsonl"] {
            std::fs::copy(d.join(from).join(f), d.join(to).join(f)).unwrap();
        }
    };
    copy("out/s1", "out/bad-1");
    let foreign_line = std::fs::read_to_string(d.join("out/s2/results.jsonl"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    let mut text = std::fs::read_to_string(d.join("out/bad-1/results.jsonl")).unwrap();
    text.push_str(&foreign_line);
    text.push('\n');
    std::fs::write(d.join("out/bad-1/results.jsonl"), &text).unwrap();
    refused(
        &["merge", "out/s0", "out/bad-1", "out/s2", "--out", "out/m"],
        &["out/bad-1/results.jsonl", "belongs to shard 2/3"],
    );
    copy("out/s1", "out/dup-1");
    let mut text = std::fs::read_to_string(d.join("out/dup-1/results.jsonl")).unwrap();
    let first = text.lines().next().unwrap().to_owned();
    text.push_str(&first);
    text.push('\n');
    std::fs::write(d.join("out/dup-1/results.jsonl"), &text).unwrap();
    refused(
        &["merge", "out/s0", "out/dup-1", "out/s2", "--out", "out/m"],
        &["out/dup-1/results.jsonl", "is recorded twice"],
    );
    // A shard missing trials (a line lost).
    copy("out/s1", "out/short-1");
    let text = std::fs::read_to_string(d.join("out/short-1/results.jsonl")).unwrap();
    let kept: Vec<&str> = text.lines().skip(1).collect();
    std::fs::write(d.join("out/short-1/results.jsonl"), kept.join("\n") + "\n").unwrap();
    refused(
        &["merge", "out/s0", "out/short-1", "out/s2", "--out", "out/m"],
        &["shard 1/3 (out/short-1) holds"],
    );
    // A shard whose results.jsonl is not a file to read: a pipe, which would block forever.
    copy("out/s1", "out/pipe-1");
    let results = d.join("out/pipe-1/results.jsonl");
    std::fs::remove_file(&results).unwrap();
    let path = std::ffi::CString::new(results.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates the file.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    refused(
        &["merge", "out/s0", "out/pipe-1", "out/s2", "--out", "out/m"],
        &["out/pipe-1/results.jsonl", "not a regular file"],
    );
    // The good three merge.
    ok(&toolscore(
        d,
        &["merge", "out/s0", "out/s1", "out/s2", "--out", "out/m"],
    ));
}

#[test]
fn shards_refuse_what_needs_the_whole_plan_and_auto_reads_the_job_index() {
    let server = server();
    let dir = fake_project(&server.base_url, TOOLS, CASES, &[]);
    let d = dir.path();
    let base = [
        "run",
        "--provider",
        "fake",
        "--trials",
        "8",
        "--out",
        "out",
        "--progress",
        "off",
        "--format",
        "json",
    ];
    let with = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        toolscore(d, &args)
    };
    for (extra, says) in [
        (
            &[
                "--shard",
                "0/2",
                "--gate",
                "selection>=0.5",
                "--gate-level",
                "case",
                "--sequential",
            ][..],
            "--shard cannot be used with --sequential",
        ),
        (
            &["--shard", "0/2", "--record", "x.cassette.jsonl"][..],
            "--shard cannot be used with --record",
        ),
        (
            &["--shard", "0/2", "--gate", "selection>=0.5"][..],
            "--shard cannot be used with --gate",
        ),
        (&["--shard", "2/2"][..], "counts from 0"),
        (&["--shard", "auto"][..], "--shard auto needs --shard-count"),
        (
            &["--shard", "auto", "--shard-count", "3"][..],
            "JOB_COMPLETION_INDEX is not set",
        ),
        (
            &["--shard", "1/3", "--shard-count", "4"][..],
            "--shard 1/3 says 3 shards but --shard-count says 4",
        ),
    ] {
        let run = with(extra);
        assert_eq!(run.code, 2, "{extra:?}: {}", run.transcript());
        assert!(run.stderr.contains(says), "{extra:?}: {}", run.transcript());
    }
    assert!(!d.join("x.cassette.jsonl").exists());

    let mut args = base.to_vec();
    args.extend(["--shard", "auto", "--shard-count", "3", "--run-id", "pod-2"]);
    let run = toolscore_env(d, &args, &[("JOB_COMPLETION_INDEX", "2")]);
    ok(&run);
    let s = support::read_json(&d.join("out/pod-2/summary.json"));
    assert_eq!(s["run"]["shard"]["index"], 2);
    assert_eq!(s["run"]["shard"]["count"], 3);
    let run = toolscore_env(d, &args, &[("JOB_COMPLETION_INDEX", "3")]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr
            .contains("JOB_COMPLETION_INDEX 3 with --shard-count 3")
    );
}

/// The (case, trial) keys a shard ran.
fn keys(path: &Path) -> BTreeSet<(String, u64)> {
    std::fs::read_to_string(path)
        .expect("results")
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("record");
            (
                v["case_id"].as_str().unwrap().to_owned(),
                v["trial_index"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn adding_a_case_moves_no_trial_between_shards() {
    let server = server();
    let dir = fake_project(&server.base_url, TOOLS, CASES, &[]);
    let d = dir.path();
    let args = |id: &'static str| {
        [
            "run",
            "--provider",
            "fake",
            "--trials",
            "20",
            "--out",
            "out",
            "--progress",
            "off",
            "--format",
            "json",
            "--shard",
            "1/3",
            "--run-id",
            id,
        ]
    };
    ok(&toolscore(d, &args("before")));
    let mut cases = CASES.to_owned();
    cases.push_str(EXTRA_CASE);
    std::fs::write(d.join("data/cases.jsonl"), cases).unwrap();
    ok(&toolscore(d, &args("after")));
    let before = keys(&d.join("out/before/results.jsonl"));
    let after = keys(&d.join("out/after/results.jsonl"));
    let after_old: BTreeSet<_> = after
        .iter()
        .filter(|(c, _)| c != "extra")
        .cloned()
        .collect();
    assert_eq!(before, after_old);
    assert!(
        after.len() > before.len(),
        "the new case has trials in this shard too"
    );
}
