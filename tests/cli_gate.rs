//! `--gate` through the binary against the fake provider with known per-case rates: pass,
//! fail and inconclusive with exit codes 0, 1 and 3, bounds that are the statistics' own, and
//! the verdict in summary.json as data.

mod support;

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;
use support::{
    FakeRequest, FakeResponse, FakeServer, Run, last_user_message, text_body, tool_call_body,
    toolscore,
};

const TOOLS: &str = r#"{"tools": [{"name": "ping", "description": "Ping a host.", "inputSchema": {"type": "object", "properties": {"host": {"type": "string"}}}}]}"#;

/// Six cases: right in 19, 19, 18, 18, 17 and 10 of every 20 trials.
const RIGHT_OF_20: [u64; 6] = [19, 19, 18, 18, 17, 10];

fn cases() -> String {
    (0..RIGHT_OF_20.len())
        .map(|i| {
            format!(
                r#"{{"id": "c{i}", "messages": [{{"role": "user", "content": "ping host{i}"}}], "expect": {{"tool": "ping"}}}}"#
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn server() -> FakeServer {
    let counters: Mutex<HashMap<String, u64>> = Mutex::new(HashMap::new());
    FakeServer::start_in_background(move |req: &FakeRequest| {
        let user = last_user_message(req).unwrap_or_default();
        let case: usize = user.trim_start_matches("ping host").parse().unwrap_or(0);
        let k = {
            let mut c = counters.lock().expect("lock");
            let n = c.entry(user).or_insert(0);
            *n += 1;
            *n - 1
        };
        if k % 20 < RIGHT_OF_20[case] {
            FakeResponse::ok(tool_call_body(&[("ping", r#"{"host":"h"}"#)]))
        } else {
            FakeResponse::ok(text_body("no"))
        }
    })
}

fn gated_run(gates: &[&str]) -> (Run, Value) {
    let server = server();
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("data")).expect("mkdir");
    std::fs::write(dir.path().join("data/tools.json"), TOOLS).expect("tools");
    std::fs::write(dir.path().join("data/cases.jsonl"), cases()).expect("cases");
    let mut args = vec![
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
        "40",
        "--out",
        "out",
        "--run-id",
        "g",
        "--progress",
        "off",
    ];
    args.extend_from_slice(gates);
    let run = toolscore(dir.path(), &args);
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("out/g/summary.json")).expect("summary"),
    )
    .expect("json");
    (run, summary)
}

#[test]
fn suite_gate_passes_fails_and_is_inconclusive_with_its_exit_codes() {
    // Mean of case rates 0.842 over 6 cases.
    for (threshold, verdict, code) in [
        ("0.6", "pass", 0),
        ("0.99", "fail", 1),
        ("0.8", "inconclusive", 3),
    ] {
        let gate = format!("pass>={threshold}");
        let (run, summary) = gated_run(&["--gate", &gate]);
        assert_eq!(run.code, code, "{gate}: {}", run.transcript());
        let g = &summary["gate"];
        assert_eq!(g["verdict"], verdict, "{g}");
        let r = &g["gates"][0];
        assert_eq!(r["level"], "suite");
        assert_eq!(r["cases"], 6);
        // The bounds are the suite interval of the case counts, two-sided at 90% = one-sided 95%.
        let counts: Vec<(u64, u64)> = RIGHT_OF_20.iter().map(|&r| (2 * r, 40)).collect();
        let iv = toolscore::stats::suite_interval(&counts, 0.90)
            .expect("interval")
            .interval;
        assert!((r["lower"].as_f64().unwrap() - iv.lo).abs() < 1e-12, "{r}");
        assert!((r["upper"].as_f64().unwrap() - iv.hi).abs() < 1e-12, "{r}");
        let line = format!("{} pass>={threshold}, suite", verdict.to_uppercase());
        assert!(run.stdout.contains(&line), "{line}\n{}", run.stdout);
    }
}

#[test]
fn case_gate_needs_every_case_and_fails_only_under_holm() {
    // At 0.7 the 10-in-20 case (20 of 40) is clearly below (Holm over 6 cases): it fails.
    let (run, summary) = gated_run(&["--gate", "selection>=0.7", "--gate-level", "case"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    let r = &summary["gate"]["gates"][0];
    assert_eq!(
        (r["passed_cases"].as_u64(), r["failed_cases"].as_u64()),
        (Some(5), Some(1)),
        "{r}"
    );
    assert_eq!(r["not_passed"][0]["case_id"], "c5");
    assert_eq!(r["not_passed"][0]["verdict"], "fail");
    assert!(
        run.stdout.contains(
            "FAIL selection>=0.7, every case: 5 passed, 1 failed, 0 inconclusive of 6 cases"
        ),
        "{}",
        run.stdout
    );

    // At 0.35 every case's lower bound clears the bar (20 of 40: 0.374): the gate passes.
    let (run, summary) = gated_run(&["--gate", "selection>=0.35", "--gate-level", "case"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(summary["gate"]["gates"][0]["passed_cases"], 6);

    // At 0.5 the 20/40 case sits on the bar: neither bound decides, exit 3.
    let (run, summary) = gated_run(&["--gate", "selection>=0.5", "--gate-level", "case"]);
    assert_eq!(run.code, 3, "{}", run.transcript());
    assert_eq!(summary["gate"]["gates"][0]["inconclusive_cases"], 1);
}

#[test]
fn a_malformed_gate_is_bad_input_before_any_request() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("data")).expect("mkdir");
    std::fs::write(dir.path().join("data/tools.json"), TOOLS).expect("tools");
    std::fs::write(dir.path().join("data/cases.jsonl"), cases()).expect("cases");
    let run = toolscore(
        dir.path(),
        &[
            "run",
            "--provider",
            "openai-compat",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--dataset",
            "data",
            "--out",
            "out",
            "--gate",
            "speed>=0.9",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert_eq!(
        run.stderr.trim_end(),
        "error: --gate `speed>=0.9`: unknown metric `speed` (write METRIC>=THRESHOLD, METRIC one of selection, args, schema, pass, e.g. pass>=0.8; or LATENCY<=MS, LATENCY one of p50_ms, p95_ms, p99_ms, e.g. p95_ms<=2000)"
    );
    assert!(!dir.path().join("out").exists());
}
