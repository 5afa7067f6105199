//! End-to-end tests of `toolscore run` through the real binary against the in-process fake
//! OpenAI-compatible server, whose answers follow a known scripted distribution.

use crate::support;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{
    FakeRequest, FakeResponse, FakeServer, Run, last_user_message, text_body, tool_call_body,
    toolscore, toolscore_env,
};
use toolscore_stats::rate_interval;

/// `toolscore run` against the fake server on the `data` dataset, writing under `out/`.
fn run_against(dir: &Path, server: &FakeServer, extra: &[&str]) -> Run {
    run_against_env(dir, server, extra, &[])
}

fn run_against_env(dir: &Path, server: &FakeServer, extra: &[&str], env: &[(&str, &str)]) -> Run {
    let mut args = vec![
        "run",
        "--provider",
        "openai-compat",
        "--base-url",
        &server.base_url,
        "--model",
        "m",
    ];
    args.extend_from_slice(&["--dataset", "data", "--out", "out", "--progress", "off"]);
    args.extend_from_slice(extra);
    toolscore_env(dir, &args, env)
}

/// The same run as `run_against`, as a child process the test can signal.
fn spawn_run(dir: &Path, server: &FakeServer, extra: &[&str]) -> std::process::Child {
    support::toolscore_command()
        .current_dir(dir)
        .args([
            "run",
            "--provider",
            "openai-compat",
            "--base-url",
            &server.base_url,
            "--model",
            "m",
            "--dataset",
            "data",
            "--out",
            "out",
            "--progress",
            "off",
        ])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn")
}

const TOOLS: &str = r#"{"tools": [
  {"name": "get_job_status", "description": "Status of an async billing job.", "inputSchema": {"type": "object", "properties": {"job_id": {"type": "string", "pattern": "^job_[a-z0-9]{6}$"}}, "required": ["job_id"], "additionalProperties": false}},
  {"name": "get_server_status", "description": "Health of the billing API.", "inputSchema": {"type": "object", "properties": {"region": {"type": "string", "enum": ["us", "eu"]}}, "additionalProperties": false}},
  {"name": "create_quote", "description": "Create a quote.", "inputSchema": {"type": "object", "properties": {"customer_id": {"type": "string"}, "amount_minor": {"type": "integer", "minimum": 1}}, "required": ["customer_id", "amount_minor"], "additionalProperties": false}}
]}"#;

const CASES: &str = r#"{"id": "job-status", "messages": [{"role": "user", "content": "Is job job_abc123 done?"}], "expect": {"tool": "get_job_status", "args": {"job_id": "job_abc123"}}, "tags": ["confusable"]}
{"id": "server-status", "messages": [{"role": "user", "content": "Is the billing API up in the EU?"}], "expect": {"tool": "get_server_status", "args": {"region": "eu"}}}
{"id": "small-talk", "messages": [{"role": "user", "content": "thanks, that is all"}], "expect": {"tool": null}}
"#;

/// A temp folder holding `data/tools.json` and `data/cases.jsonl`.
fn project(tools: &str, cases: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("data")).expect("mkdir");
    std::fs::write(dir.path().join("data/tools.json"), tools).expect("write tools");
    std::fs::write(dir.path().join("data/cases.jsonl"), cases).expect("write cases");
    dir
}

/// Right answer for 17 of every 20 requests of each case (per-case counter), wrong otherwise:
/// with a multiple of 20 trials each case scores exactly 85%.
fn scripted_85_percent() -> impl Fn(&FakeRequest) -> FakeResponse + Send + Sync + 'static {
    let counters: Mutex<HashMap<String, u64>> = Mutex::new(HashMap::new());
    move |req| {
        let user = last_user_message(req).unwrap_or_default();
        let k = {
            let mut c = counters.lock().expect("lock");
            let n = c.entry(user.clone()).or_insert(0);
            *n += 1;
            *n - 1
        };
        let right = k % 20 < 17;
        let body = match (user.as_str(), right) {
            (u, true) if u.contains("job_abc123") => {
                tool_call_body(&[("get_job_status", r#"{"job_id":"job_abc123"}"#)])
            }
            (u, false) if u.contains("job_abc123") => {
                tool_call_body(&[("get_server_status", "{}")])
            }
            (u, true) if u.contains("billing API") => {
                tool_call_body(&[("get_server_status", r#"{"region":"eu"}"#)])
            }
            (u, false) if u.contains("billing API") => {
                tool_call_body(&[("get_job_status", r#"{"job_id":"job_abc123"}"#)])
            }
            (_, true) => text_body("You're welcome!"),
            (_, false) => tool_call_body(&[("get_server_status", "{}")]),
        };
        FakeResponse::ok(body)
    }
}

fn assert_rate(stat: &Value, x: u64, n: u64) {
    assert_eq!(stat["x"], x, "{stat}");
    assert_eq!(stat["n"], n, "{stat}");
    let iv = rate_interval(x, n, 0.95).expect("n > 0");
    let lo = stat["interval"]["lo"].as_f64().expect("lo");
    let hi = stat["interval"]["hi"].as_f64().expect("hi");
    assert!(
        (lo - iv.lo).abs() < 1e-12 && (hi - iv.hi).abs() < 1e-12,
        "{stat} vs {iv:?}"
    );
    assert!((stat["rate"].as_f64().expect("rate") - x as f64 / n as f64).abs() < 1e-12);
}

#[test]
fn scripted_distribution_gives_exact_counts_rates_and_wilson_bounds() {
    let server = FakeServer::start_in_background(scripted_85_percent());
    let dir = project(TOOLS, CASES);
    let run = run_against(
        dir.path(),
        &server,
        &["--trials", "200", "--concurrency", "16"],
    );
    assert_eq!(
        run.code, 0,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    assert_eq!(server.requests_seen(), 600);

    let run_dir = support::only_run_dir(&dir.path().join("out"));
    let summary = support::read_json(&run_dir.join("summary.json"));
    assert_eq!(summary["planned_trials"], 600);
    assert_eq!(summary["completed_trials"], 600);
    assert_eq!(summary["interrupted"], false);
    let suite = &summary["arms"][0]["suite"]["metrics"];
    assert_rate(&suite["selection"], 510, 600);
    assert_rate(&suite["pass"], 510, 600);
    // Arguments are stated for the two tool cases; wrong-tool trials fail them.
    assert_rate(&suite["args_exact"], 340, 400);
    // Calls are made in 200 + 200 + 30 trials; `get_server_status {}` is schema-valid.
    assert_rate(&suite["schema_valid"], 430, 430);
    // Every case scores exactly 0.85, so the case-level spread is zero.
    let cl = &suite["selection"]["case_level"];
    assert_eq!(cl["cases"], 3);
    assert!((cl["mean"].as_f64().unwrap() - 0.85).abs() < 1e-12);
    for case in summary["arms"][0]["cases"].as_array().expect("cases") {
        assert_rate(&case["metrics"]["selection"], 170, 200);
    }
    let job = summary["arms"][0]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case_id"] == "job-status")
        .expect("job case");
    assert_eq!(
        job["failures"]["expected get_job_status, got get_server_status"], 30,
        "{job}"
    );
    let tools: Vec<&str> = summary["arms"][0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["(no call)", "get_job_status", "get_server_status"]);
    assert_eq!(summary["arms"][0]["tokens"]["input_total"], 600 * 50);
    assert_eq!(summary["arms"][0]["tokens"]["output_total"], 600 * 10);
    assert_eq!(summary["arms"][0]["infra"]["errors"], 0);
    assert!(
        summary["arms"][0]["latency_ms"]["p50"]["value"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    let warnings = summary["arms"][0]["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w["kind"] == "few_cases" && w["cases"] == 3 && w["min_cases"] == 30),
        "{warnings:?}"
    );

    // One self-describing record per trial.
    let text = std::fs::read_to_string(run_dir.join("results.jsonl")).expect("results");
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("record parses"))
        .collect();
    assert_eq!(records.len(), 600);
    let passes = records.iter().filter(|r| r["outcome"] == "pass").count();
    assert_eq!(passes, 510);
    let mut per_case: HashMap<&str, Vec<u64>> = HashMap::new();
    for r in &records {
        per_case
            .entry(r["case_id"].as_str().unwrap())
            .or_default()
            .push(r["trial_index"].as_u64().unwrap());
        assert_eq!(r["model"], "m");
        assert!(r["request_hash"].as_str().unwrap().len() >= 16);
    }
    for (_, mut idx) in per_case {
        idx.sort_unstable();
        assert_eq!(idx, (0..200).collect::<Vec<u64>>());
    }

    // The same trials as flat CSV rows.
    let csv = std::fs::read_to_string(run_dir.join("results.csv")).expect("results.csv");
    let mut rows = csv.lines();
    assert_eq!(
        rows.next(),
        Some(
            "dataset,case_id,trial_index,outcome,selection_ok,args_ok,schema_ok,failure,detail,latency_ms,attempts,input_tokens,output_tokens,error_class,variant,provider,model,cost_usd"
        )
    );
    assert_eq!(rows.clone().count(), 600);
    assert_eq!(
        rows.filter(|r| r.contains(
            ",fail,false,false,true,wrong_tool,\"expected get_job_status, got get_server_status\","
        ))
        .count(),
        30
    );

    // The terminal report shows rate, interval and count.
    assert!(
        run.stdout
            .contains("selection     0.850 [0.819, 0.876] (510/600)"),
        "{}",
        run.stdout
    );
}

#[test]
fn infrastructure_errors_are_counted_apart_and_exit_4_past_the_limit() {
    let server = FakeServer::start_in_background(|req| {
        let user = last_user_message(req).unwrap_or_default();
        if user.contains("billing API") {
            FakeResponse::status(
                503,
                r#"{"error":{"message":"overloaded","type":"server_error"}}"#,
            )
        } else if user.contains("job_abc123") {
            FakeResponse::ok(tool_call_body(&[(
                "get_job_status",
                r#"{"job_id":"job_abc123"}"#,
            )]))
        } else {
            FakeResponse::ok(text_body("ok"))
        }
    });
    let dir = project(TOOLS, CASES);
    let args = [
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
        "10",
        "--max-retries",
        "0",
        "--out",
        "out",
        "--progress",
        "off",
    ];
    let run = toolscore(dir.path(), &args);
    assert_eq!(run.code, 4, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains("10 of 30 trials ended in infrastructure errors (limit 10%)"),
        "{}",
        run.stderr
    );
    let summary =
        support::read_json(&support::only_run_dir(&dir.path().join("out")).join("summary.json"));
    assert_eq!(summary["arms"][0]["infra"]["errors"], 10);
    assert_eq!(summary["arms"][0]["infra"]["by_class"]["server_error"], 10);
    // Errors are not model failures: the 20 answered trials all pass.
    assert_rate(&summary["arms"][0]["suite"]["metrics"]["selection"], 20, 20);
    let server_case = summary["arms"][0]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case_id"] == "server-status")
        .unwrap();
    assert_eq!(server_case["infra_errors"], 10);
    assert_eq!(server_case["metrics"]["selection"]["n"], 0);

    let mut relaxed = args.to_vec();
    relaxed.extend(["--max-infra-error-rate", "0.5", "--run-id", "relaxed"]);
    let run = toolscore(dir.path(), &relaxed);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn rate_limits_are_retried_honouring_retry_after() {
    let server = FakeServer::start_in_background(|req| {
        // Every even arrival is rate limited once; the retry (odd arrival) succeeds.
        if req.seq.is_multiple_of(2) {
            FakeResponse::status(429, r#"{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}"#).header("retry-after", "0.05")
        } else {
            FakeResponse::ok(text_body("hello"))
        }
    });
    let dir = project(
        TOOLS,
        r#"{"id": "hi", "messages": [{"role": "user", "content": "hi"}], "expect": {"tool": null}}"#,
    );
    let run = run_against_env(
        dir.path(),
        &server,
        &["--trials", "6", "--concurrency", "1"],
        &[("TOOLSCORE_LOG", "toolscore=debug")],
    );
    assert!(
        run.stderr.contains("retrying"),
        "retries are logged at debug level: {}",
        run.stderr
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let summary =
        support::read_json(&support::only_run_dir(&dir.path().join("out")).join("summary.json"));
    assert_eq!(summary["arms"][0]["infra"]["errors"], 0);
    assert_eq!(summary["arms"][0]["infra"]["retried"]["x"], 6);
    assert_eq!(summary["arms"][0]["infra"]["retried"]["n"], 6);
    assert_eq!(server.requests_seen(), 12);
}

#[test]
fn unparseable_arguments_are_a_scored_failure_not_a_crash() {
    let server = FakeServer::start_in_background(|_| {
        FakeResponse::ok(tool_call_body(&[(
            "get_job_status",
            r#"{"job_id": "job_abc1"#,
        )]))
    });
    let dir = project(TOOLS, CASES.lines().next().unwrap());
    let run = run_against(dir.path(), &server, &["--trials", "5"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run_dir = support::only_run_dir(&dir.path().join("out"));
    let summary = support::read_json(&run_dir.join("summary.json"));
    let m = &summary["arms"][0]["suite"]["metrics"];
    assert_rate(&m["selection"], 5, 5);
    assert_rate(&m["args_exact"], 0, 5);
    assert_rate(&m["schema_valid"], 0, 5);
    let first: Value = serde_json::from_str(
        std::fs::read_to_string(run_dir.join("results.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(first["outcome"], "fail");
    assert_eq!(first["score"]["failure"], "arguments_not_json");
    assert_eq!(
        first["turns"][0]["tool_calls"][0]["unparsed_arguments"],
        r#"{"job_id": "job_abc1"#
    );
}

#[test]
fn api_key_comes_from_the_named_variable_and_never_reaches_outputs() {
    let key = "sk-test-SECRET-0123456789";
    let server = FakeServer::start_in_background(move |req| {
        if req.header("authorization") == Some(&format!("Bearer {key}")) {
            // Echo the key back in an error body, as some proxies do.
            FakeResponse::status(
                401,
                format!(
                    r#"{{"error":{{"message":"bad key {key}","type":"invalid_request_error"}}}}"#
                ),
            )
        } else {
            FakeResponse::status(400, r#"{"error":{"message":"no auth header"}}"#)
        }
    });
    let dir = project(TOOLS, CASES.lines().next().unwrap());
    let args = [
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
        "3",
        "--api-key-env",
        "MY_KEY",
        "--out",
        "out",
        "--progress",
        "off",
    ];
    let run = toolscore_env(dir.path(), &args, &[("MY_KEY", key)]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    let run_dir = support::only_run_dir(&dir.path().join("out"));
    let summary = support::read_json(&run_dir.join("summary.json"));
    // Every trial that ran failed on auth. The first auth error stops the arm
    // (provider::stop), so the trials not yet started then are skipped; how many were already
    // in flight depends on scheduling. All 3 are accounted for either way.
    let auth = summary["arms"][0]["infra"]["by_class"]["auth"]
        .as_u64()
        .unwrap_or_default();
    assert!(auth >= 1, "{summary}");
    assert_eq!(summary["completed_trials"], auth, "{summary}");
    assert_eq!(
        auth + summary["skipped_trials"].as_u64().unwrap_or_default(),
        3,
        "{summary}"
    );
    for text in [
        run.stdout,
        run.stderr,
        std::fs::read_to_string(run_dir.join("results.jsonl")).unwrap(),
        std::fs::read_to_string(run_dir.join("summary.json")).unwrap(),
    ] {
        assert!(!text.contains(key), "key leaked into: {text}");
        assert!(!text.contains("SECRET"), "key leaked into: {text}");
    }
}

#[test]
fn ctrl_c_stops_scheduling_and_writes_the_summary_of_what_completed() {
    let server = FakeServer::start_in_background(|_| {
        FakeResponse::ok(text_body("hi")).delayed(Duration::from_millis(100))
    });
    let dir = project(TOOLS, CASES.lines().nth(2).unwrap());
    let child = spawn_run(
        dir.path(),
        &server,
        &["--trials", "1000", "--concurrency", "2"],
    );
    // Once requests flow the run has begun (its handlers are in place); then a few trials more.
    let waited = Instant::now();
    while server.requests_seen() < 4 && waited.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(server.requests_seen() >= 4, "the run never started");
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted: no new trials will start"),
        "{stderr}"
    );
    let run_dir = support::only_run_dir(&dir.path().join("out"));
    let summary = support::read_json(&run_dir.join("summary.json"));
    assert_eq!(summary["interrupted"], true);
    // The run's one verdict says so, and `report` on the folder reproduces it.
    assert_eq!(summary["decision"]["verdict"], "interrupted", "{summary:#}");
    assert_eq!(summary["decision"]["exit_code"], 130);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("verdict: INTERRUPTED (exit 130)"),
        "{stdout}"
    );
    let rel = run_dir.strip_prefix(dir.path()).expect("under the project");
    let report = toolscore(
        dir.path(),
        &["report", rel.to_str().unwrap(), "--format", "json"],
    );
    assert_eq!(report.code, 130, "{}", report.transcript());
    let reported: serde_json::Value = serde_json::from_str(&report.stdout).expect("json");
    assert_eq!(reported["decision"], summary["decision"]);
    let completed = summary["completed_trials"].as_u64().unwrap();
    assert!(completed > 0 && completed < 1000, "completed {completed}");
    let lines = std::fs::read_to_string(run_dir.join("results.jsonl"))
        .unwrap()
        .lines()
        .count() as u64;
    assert_eq!(lines, completed);
    assert!(String::from_utf8_lossy(&out.stdout).contains("(INTERRUPTED)"));
}

#[test]
fn sigterm_reaches_backoff_sleeps_and_requests_in_flight() {
    // Every request is answered 503 with `Retry-After: 30`, or held for 30 s: without
    // cancellation the run would sit in backoff or in flight for half a minute after SIGTERM.
    let server = FakeServer::start_in_background(|req: &FakeRequest| {
        if req.seq.is_multiple_of(2) {
            FakeResponse::status(503, "busy").header("retry-after", "30")
        } else {
            FakeResponse::ok(text_body("slow")).delayed(Duration::from_secs(30))
        }
    });
    let dir = project(TOOLS, CASES);
    let child = spawn_run(
        dir.path(),
        &server,
        &["--trials", "5", "--concurrency", "4", "--timeout", "60"],
    );
    std::thread::sleep(Duration::from_millis(1000));
    let sent = std::time::Instant::now();
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let out = child.wait_with_output().expect("wait");
    let waited = sent.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        waited < Duration::from_secs(5),
        "exited {waited:?} after SIGTERM"
    );
    let run_dir = support::only_run_dir(&dir.path().join("out"));
    let summary = support::read_json(&run_dir.join("summary.json"));
    assert_eq!(summary["interrupted"], true);
    // Abandoned trials measured nothing: they are neither scored nor counted as errors.
    assert_eq!(summary["completed_trials"], 0, "{summary}");
}

#[test]
fn schema_violations_are_filed_under_the_tool_actually_called() {
    // The case expects get_job_status; the model calls get_server_status with a bad region.
    let server = FakeServer::start_in_background(|_| {
        FakeResponse::ok(tool_call_body(&[(
            "get_server_status",
            r#"{"region":"mars"}"#,
        )]))
    });
    let dir = project(TOOLS, CASES.lines().next().unwrap());
    let run = run_against(dir.path(), &server, &["--trials", "4", "--detail"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let summary =
        support::read_json(&support::only_run_dir(&dir.path().join("out")).join("summary.json"));
    assert_eq!(
        summary["arms"][0]["schema_violations"],
        serde_json::json!({"get_server_status: region failed enum": 4})
    );
    assert_rate(
        &summary["arms"][0]["suite"]["metrics"]["schema_valid"],
        0,
        4,
    );
    assert!(
        run.stdout
            .contains("4× get_server_status: region failed enum"),
        "{}",
        run.stdout
    );
}

#[test]
fn argument_failures_are_classified_counted_by_kind_and_recomputed_by_report() {
    const TOOLS: &str = r#"{"tools": [
      {"name": "book", "description": "Book a hotel.", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}, "nights": {"type": "integer"}}, "required": ["city", "nights"]}},
      {"name": "ping", "description": "Ping a host.", "inputSchema": {"type": "object", "properties": {"host": {"type": "string"}}, "required": ["host"]}}
    ]}"#;
    let cases = [
        r#"{"id": "c0", "messages": [{"role": "user", "content": "case 0"}], "expect": {"tool": "book", "args": {"city": "Paris", "nights": 2}}}"#,
        r#"{"id": "c1", "messages": [{"role": "user", "content": "case 1"}], "expect": {"tool": "book", "args": {"city": "Paris", "nights": 2}}}"#,
        r#"{"id": "c2", "messages": [{"role": "user", "content": "case 2"}], "expect": {"tool": "ping", "args": {"host": "a"}, "match": {"host": {"one_of": ["a", "A"]}}}}"#,
        r#"{"id": "c3", "messages": [{"role": "user", "content": "case 3"}], "expect": {"tool": "ping", "args": {"host": "a"}}}"#,
    ]
    .join("\n");
    // Per case, the k-th request (k = 0..3) gets known arguments:
    // c0: always `nights` as a string (wrong_type ×4);
    // c1: an invented `pet` key on even k (extra_parameter ×2), cut-off JSON on odd k
    //     (invalid_json ×2);
    // c2: right ("A", which the one_of matcher accepts), then `{}` (missing_required ×1), then
    //     "b" twice (wrong_value ×2);
    // c3: the wrong tool every time (outside the taxonomy).
    let counters: Mutex<HashMap<String, u64>> = Mutex::new(HashMap::new());
    let server = FakeServer::start_in_background(move |req| {
        let user = last_user_message(req).unwrap_or_default();
        let k = {
            let mut c = counters.lock().expect("lock");
            let n = c.entry(user.clone()).or_insert(0);
            *n += 1;
            *n - 1
        };
        let call = match (user.as_str(), k) {
            ("case 0", _) => ("book", r#"{"city":"Paris","nights":"2"}"#),
            ("case 1", k) if k % 2 == 0 => ("book", r#"{"city":"Paris","nights":2,"pet":true}"#),
            ("case 1", _) => ("book", r#"{"city": "Par"#),
            ("case 2", 0) => ("ping", r#"{"host":"A"}"#),
            ("case 2", 1) => ("ping", "{}"),
            ("case 2", _) => ("ping", r#"{"host":"b"}"#),
            _ => ("book", r#"{"city":"Paris","nights":2}"#),
        };
        FakeResponse::ok(tool_call_body(&[call]))
    });
    let dir = project(TOOLS, &cases);
    let run = run_against(
        dir.path(),
        &server,
        &["--trials", "4", "--run-id", "tax", "--detail"],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let run_dir = dir.path().join("out/tax");
    let summary = support::read_json(&run_dir.join("summary.json"));
    let t = &summary["arms"][0]["arg_failures"];
    assert_eq!(t["trials"], 12, "{t}");
    assert_eq!(t["unclassified_trials"], 0, "{t}");
    let share = |kinds: &Value, kind: &str| -> Value {
        kinds
            .as_array()
            .expect("kinds")
            .iter()
            .find(|k| k["kind"] == kind)
            .map(|k| k["share"].clone())
            .expect("kind listed")
    };
    for (kind, x) in [
        ("invalid_json", 2),
        ("missing_required", 1),
        ("extra_parameter", 2),
        ("wrong_type", 4),
        ("wrong_value", 2),
    ] {
        assert_rate(&share(&t["kinds"], kind), x, 12);
    }
    let tool = |name: &str| -> Value {
        t["by_tool"]
            .as_array()
            .expect("by_tool")
            .iter()
            .find(|b| b["tool"] == name)
            .cloned()
            .expect("tool listed")
    };
    let book = tool("book");
    assert_eq!(book["trials"], 8);
    assert_rate(&share(&book["kinds"], "wrong_type"), 4, 8);
    assert_rate(&share(&book["kinds"], "wrong_value"), 0, 8);
    let ping = tool("ping");
    // c3 chose the wrong tool: only c2's four trials are classified.
    assert_eq!(ping["trials"], 4);
    assert_rate(&share(&ping["kinds"], "wrong_value"), 2, 4);

    // Each record keeps its findings with their paths.
    let records: Vec<Value> = std::fs::read_to_string(run_dir.join("results.jsonl"))
        .expect("results")
        .lines()
        .map(|l| serde_json::from_str(l).expect("record"))
        .collect();
    let c0 = records.iter().find(|r| r["case_id"] == "c0").expect("c0");
    assert_eq!(
        c0["score"]["arg_failures"],
        serde_json::json!([{"kind": "wrong_type", "path": "nights"}])
    );

    let section = |text: &str| -> String {
        text.lines()
            .skip_while(|l| !l.starts_with("argument failures by kind"))
            .take(6)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let expected = "argument failures by kind (share of the 12 trials that chose the right tool, 95% Wilson; a trial counts once per kind):\n".to_owned()
        + &format!("  invalid_json      {:<34} book 2/8\n", fmt_rate(2, 12))
        + &format!("  missing_required  {:<34} ping 1/4\n", fmt_rate(1, 12))
        + &format!("  extra_parameter   {:<34} book 2/8\n", fmt_rate(2, 12))
        + &format!("  wrong_type        {:<34} book 4/8\n", fmt_rate(4, 12))
        + &format!("  wrong_value       {:<34} ping 2/4", fmt_rate(2, 12));
    assert_eq!(section(&run.stdout), expected, "{}", run.stdout);

    // `toolscore report` recomputes the same section from results.jsonl alone.
    let again = toolscore(dir.path(), &["report", "out/tax", "--detail"]);
    assert_eq!(again.code, 0, "{}", again.transcript());
    assert_eq!(section(&again.stdout), expected);
}

/// A rate as the terminal prints it.
fn fmt_rate(x: u64, n: u64) -> String {
    let iv = rate_interval(x, n, 0.95).expect("n > 0");
    format!(
        "{:.3} [{:.3}, {:.3}] ({x}/{n})",
        x as f64 / n as f64,
        iv.lo,
        iv.hi
    )
}

/// A port on this machine that nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

#[test]
fn a_local_server_that_is_down_is_one_line_with_its_url_and_how_to_start_it() {
    let dir = project(TOOLS, CASES);
    let port = closed_port();
    std::fs::write(
        dir.path().join("toolscore.yaml"),
        format!(
            "providers:\n  mine:\n    kind: openai-compat\n    base_url: http://127.0.0.1:{port}/v1\n    model: m\n    start: my-server --port {port}\n  llama:\n    kind: ollama\n    base_url: http://localhost:{port}\n    model: qwen3\n"
        ),
    )
    .unwrap();
    let started = std::time::Instant::now();
    for (provider, start) in [
        ("mine", format!("my-server --port {port}")),
        // The kind's usual command when the config names none.
        ("llama", "ollama serve".to_owned()),
    ] {
        let run = toolscore(
            dir.path(),
            &[
                "run",
                "--provider",
                provider,
                "--dataset",
                "data",
                "--out",
                "out",
            ],
        );
        assert_eq!(run.code, 4, "{}", run.transcript());
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{}", run.stderr);
        assert!(
            lines[0].starts_with("error: nothing answers at http://")
                && lines[0].contains(&format!(":{port}"))
                && lines[0].contains(&format!("(provider `{provider}`: "))
                && lines[0].ends_with(&format!("; start it with `{start}`")),
            "{}",
            run.stderr
        );
        assert_eq!(run.stdout, "");
        // Said before anything is sent or written.
        assert!(!dir.path().join("out").exists());
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

/// `toolscore run … 2>&1 | head -0`: the reader has closed the pipe before the first line, so
/// every print fails; each command ends quietly with the status a SIGPIPE gives (141), never a
/// panic (101) or "cannot write the report" (4). The commands are ones whose first words go to
/// stdout or stderr from different places: a run's cost estimate (stderr) and report, the
/// `validate` summary, `plan`'s table, and `lint --rules`.
#[test]
fn a_reader_that_stops_reading_ends_each_command_quietly() {
    let out = tempfile::tempdir().expect("tempdir");
    let run_dir = out.path().join("run");
    let run_dir = run_dir.to_str().expect("utf-8 path");
    let commands: [&[&str]; 4] = [
        &[
            "run",
            "--provider",
            "demo-priced",
            "--trials",
            "3",
            "--progress",
            "off",
            "--out",
            run_dir,
        ],
        &["validate"],
        &["plan", "--provider", "demo-priced"],
        &["lint", "--rules"],
    ];
    for args in commands {
        let (reader, writer) = std::io::pipe().expect("pipe");
        // The pipe's only reader is gone before the process starts.
        drop(reader);
        let status = support::toolscore_command()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(args)
            .stdout(writer.try_clone().expect("clone"))
            .stderr(writer)
            .status()
            .expect("run");
        assert_eq!(status.code(), Some(141), "{args:?}: {status:?}");
    }
}
