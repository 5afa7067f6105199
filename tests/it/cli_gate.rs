//! `--gate` through the binary against the fake provider with known per-case rates: pass,
//! fail and inconclusive with exit codes 0, 1 and 3, bounds that are the statistics' own, and
//! the verdict in summary.json as data.

use crate::support;

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
    let dir = tempfile::tempdir().expect("tempdir");
    gated_run_in(dir.path(), gates)
}

/// [`gated_run`] in `dir`, which the caller keeps to look at the run afterwards.
fn gated_run_in(dir: &std::path::Path, gates: &[&str]) -> (Run, Value) {
    let server = server();
    std::fs::create_dir_all(dir.join("data")).expect("mkdir");
    std::fs::write(dir.join("data/tools.json"), TOOLS).expect("tools");
    std::fs::write(dir.join("data/cases.jsonl"), cases()).expect("cases");
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
    let run = toolscore(dir, &args);
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("out/g/summary.json")).expect("summary"),
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
        let iv = toolscore_stats::suite_interval(&counts, 0.90)
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
fn re_rendering_a_gated_run_keeps_its_gates_and_verdict() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().to_owned();
    let (run, summary) = gated_run_in(&dir, &["--gate", "selection>=0.7", "--gate-level", "case"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    let report = toolscore(
        &dir,
        &["report", "out/g", "--format", "html", "--format", "json"],
    );
    assert_eq!(report.code, 1, "{}", report.transcript());
    assert!(
        report.stderr.contains(
            "report: judged again by the run's own gates (--gate 'selection>=0.7' --gate-level case)"
        ),
        "{}",
        report.stderr
    );
    let again: Value = serde_json::from_str(&report.stdout).expect("json");
    assert_eq!(again["gate"], summary["gate"]);
    assert_eq!(again["decision"], summary["decision"]);
    let html = std::fs::read_to_string(dir.join("out/g/report.html")).expect("html");
    assert!(!html.contains("NO GATE"), "re-render lost the gate");
    assert!(
        html.contains(r#"<span class="badge fail">FAIL (exit 1)</span>"#),
        "{html}"
    );
    // A gate given to `report` judges by that gate instead.
    let other = toolscore(
        &dir,
        &[
            "report",
            "out/g",
            "--gate",
            "selection>=0.35",
            "--gate-level",
            "case",
        ],
    );
    assert_eq!(other.code, 0, "{}", other.transcript());
    assert!(!other.stderr.contains("judged again"), "{}", other.stderr);
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
        "error: --gate `speed>=0.9`: unknown metric `speed` (write METRIC>=THRESHOLD, METRIC one of selection, args, schema, pass, e.g. pass>=0.8; or LATENCY<=MS, LATENCY one of p50_ms, p95_ms, p99_ms, e.g. p95_ms<=2000; or, for a run with --attacks, attack_success<=THRESHOLD or utility_under_attack, utility>=THRESHOLD)"
    );
    assert!(!dir.path().join("out").exists());
}

/// Two expected tools with known rates and latencies: `ping` (three cases, always right,
/// answered at once) and `slow_lookup` (three cases, right in 2 of every 20 trials, every
/// answer delayed by 50 ms).
const TWO_TOOLS: &str = r#"{"tools": [
  {"name": "ping", "description": "Ping a host.", "inputSchema": {"type": "object", "properties": {"host": {"type": "string"}}}},
  {"name": "slow_lookup", "description": "Look a record up.", "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}}}
]}"#;
const SLOW_DELAY_MS: u64 = 50;
const SLOW_RIGHT_OF_20: u64 = 2;

fn two_tool_cases() -> String {
    let mut lines = Vec::new();
    for i in 0..3 {
        lines.push(format!(
            r#"{{"id": "ping-{i}", "messages": [{{"role": "user", "content": "ping {i}"}}], "expect": {{"tool": "ping"}}}}"#
        ));
        lines.push(format!(
            r#"{{"id": "lookup-{i}", "messages": [{{"role": "user", "content": "lookup {i}"}}], "expect": {{"tool": "slow_lookup"}}}}"#
        ));
    }
    lines.join("\n")
}

fn two_tool_server() -> FakeServer {
    let counters: Mutex<HashMap<String, u64>> = Mutex::new(HashMap::new());
    FakeServer::start_in_background(move |req: &FakeRequest| {
        let user = last_user_message(req).unwrap_or_default();
        let k = {
            let mut c = counters.lock().expect("lock");
            let n = c.entry(user.clone()).or_insert(0);
            *n += 1;
            *n - 1
        };
        if user.starts_with("ping") {
            return FakeResponse::ok(tool_call_body(&[("ping", r#"{"host":"h"}"#)]));
        }
        let body = if k % 20 < SLOW_RIGHT_OF_20 {
            tool_call_body(&[("slow_lookup", r#"{"key":"k"}"#)])
        } else {
            text_body("no")
        };
        FakeResponse::ok(body).delayed(std::time::Duration::from_millis(SLOW_DELAY_MS))
    })
}

/// Runs the two-tool suite (20 trials per case) with `gates`, into `dir/out/t`.
fn two_tool_run(dir: &std::path::Path, gates: &[&str]) -> Run {
    let server = two_tool_server();
    std::fs::create_dir_all(dir.join("data")).expect("mkdir");
    std::fs::write(dir.join("data/tools.json"), TWO_TOOLS).expect("tools");
    std::fs::write(dir.join("data/cases.jsonl"), two_tool_cases()).expect("cases");
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
        "20",
        "--out",
        "out",
        "--run-id",
        "t",
        "--progress",
        "off",
    ];
    args.extend_from_slice(gates);
    toolscore(dir, &args)
}

fn gate_of(dir: &std::path::Path) -> Value {
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("out/t/summary.json")).expect("summary"),
    )
    .expect("json");
    summary["gate"]["gates"][0].clone()
}

fn tool_verdict(gate: &Value, tool: &str) -> Value {
    gate["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["tool"] == tool)
        .cloned()
        .unwrap_or_else(|| panic!("{tool} in {gate}"))
}

#[test]
fn tool_level_rate_gate_names_the_failing_tool_and_passes_only_when_every_tool_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = two_tool_run(dir.path(), &["--gate", "pass>=0.8", "--gate-level", "tool"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    let g = gate_of(dir.path());
    assert_eq!(
        (g["level"].as_str(), g["verdict"].as_str()),
        (Some("tool"), Some("fail"))
    );
    let slow = tool_verdict(&g, "slow_lookup");
    assert_eq!(slow["verdict"], "fail", "{g}");
    assert_eq!(tool_verdict(&g, "ping")["verdict"], "pass", "{g}");
    // The slow tool's bounds are the suite interval of its three cases alone (never pooled
    // trials), two-sided at 90% = one-sided 95%.
    let iv = toolscore_stats::suite_interval(&[(SLOW_RIGHT_OF_20, 20); 3], 0.90)
        .expect("interval")
        .interval;
    assert!(
        (slow["lower"].as_f64().unwrap() - iv.lo).abs() < 1e-12,
        "{slow}"
    );
    assert!(
        (slow["upper"].as_f64().unwrap() - iv.hi).abs() < 1e-12,
        "{slow}"
    );
    assert_eq!(
        (slow["cases"].as_u64(), slow["n"].as_u64()),
        (Some(3), Some(60))
    );
    assert!(
        run.stdout
            .contains("FAIL pass>=0.8, every tool: 1 passed, 1 failed, 0 inconclusive of 2 tools"),
        "{}",
        run.stdout
    );
    let line = format!(
        "      FAIL         slow_lookup                        mean 0.100 of 3 cases (60 trials), bounds [{:.3}, {:.3}]",
        iv.lo, iv.hi
    );
    assert!(run.stdout.contains(&line), "{line}\n{}", run.stdout);
    assert!(
        !run.stdout.contains("      FAIL         ping"),
        "{}",
        run.stdout
    );

    // The same records judged again by `toolscore report`: a bar every tool clears (exit 0)
    // and one the slow tool's interval straddles (exit 3).
    assert!(iv.lo > 0.02 && iv.lo < 0.15 && iv.hi > 0.15, "{iv:?}");
    let report = |gate: &str| {
        toolscore(
            dir.path(),
            &["report", "out/t", "--gate", gate, "--gate-level", "tool"],
        )
    };
    let pass = report("pass>=0.02");
    assert_eq!(pass.code, 0, "{}", pass.transcript());
    assert!(
        pass.stdout
            .contains("PASS pass>=0.02, every tool: 2 passed"),
        "{}",
        pass.stdout
    );
    let unsure = report("pass>=0.15");
    assert_eq!(unsure.code, 3, "{}", unsure.transcript());
    assert!(
        unsure.stdout.contains("      INCONCLUSIVE slow_lookup"),
        "{}",
        unsure.stdout
    );
    assert!(
        unsure
            .stdout
            .contains("its cases agree; the interval rests on their trials"),
        "{}",
        unsure.stdout
    );
}

#[test]
fn latency_budgets_per_tool_pass_fail_and_ask_for_more_trials() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Every slow answer takes at least 50 ms: its median cannot be within 30 ms.
    let run = two_tool_run(
        dir.path(),
        &["--gate", "p50_ms<=30", "--gate-level", "tool"],
    );
    assert_eq!(run.code, 1, "{}", run.transcript());
    let g = gate_of(dir.path());
    assert_eq!(
        (g["metric"].as_str(), g["threshold"].as_f64()),
        (Some("p50_ms"), Some(30.0))
    );
    let slow = tool_verdict(&g, "slow_lookup");
    assert_eq!(slow["verdict"], "fail", "{g}");
    assert!(
        slow["lower"].as_f64().unwrap() >= SLOW_DELAY_MS as f64,
        "{slow}"
    );
    assert_eq!(slow["n"], 60);
    assert_ne!(tool_verdict(&g, "ping")["verdict"], "fail", "{g}");
    assert!(
        run.stdout.contains("FAIL p50_ms<=30, every tool:"),
        "{}",
        run.stdout
    );
    let line = format!(
        "      FAIL         slow_lookup                        p50 {:.1} ms of 60 answered trials, bounds [{:.1}, {:.1}]",
        slow["estimate"].as_f64().unwrap(),
        slow["lower"].as_f64().unwrap(),
        slow["upper"].as_f64().unwrap()
    );
    assert!(run.stdout.contains(&line), "{line}\n{}", run.stdout);

    let report = |args: &[&str]| {
        let mut all = vec!["report", "out/t"];
        all.extend_from_slice(args);
        toolscore(dir.path(), &all)
    };
    // A budget both medians keep: pass, per tool and per arm.
    let pass = report(&["--gate", "p50_ms<=10000", "--gate-level", "tool"]);
    assert_eq!(pass.code, 0, "{}", pass.transcript());
    let arm = report(&["--gate", "p95_ms<=10000"]);
    assert_eq!(arm.code, 0, "{}", arm.transcript());
    assert!(
        arm.stdout.contains("PASS p95_ms<=10000, arm: upper bound"),
        "{}",
        arm.stdout
    );
    assert!(
        arm.stdout.contains("of 120 answered trials"),
        "{}",
        arm.stdout
    );
    // 60 answers per tool cannot bound a p99 from above (299 are needed at one-sided 95%).
    let unsure = report(&["--gate", "p99_ms<=10000", "--gate-level", "tool"]);
    assert_eq!(unsure.code, 3, "{}", unsure.transcript());
    assert!(
        unsure
            .stdout
            .contains("p99 has no upper bound from 60 answered trials at 95% one-sided; passing needs at least 299"),
        "{}",
        unsure.stdout
    );
}

#[test]
fn a_gate_in_the_wrong_direction_is_bad_input_before_any_request() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("data")).expect("mkdir");
    std::fs::write(dir.path().join("data/tools.json"), TOOLS).expect("tools");
    std::fs::write(dir.path().join("data/cases.jsonl"), cases()).expect("cases");
    for (gate, why) in [
        (
            "p95_ms>=100",
            "a latency is gated with `<=` (a budget it must stay within), e.g. p95_ms<=100",
        ),
        (
            "pass<=0.8",
            "a rate is gated with `>=` (a floor it must clear), e.g. pass>=0.8",
        ),
        (
            "p95_ms<=-5",
            "the latency budget must be a positive number of milliseconds",
        ),
    ] {
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
                gate,
                "--gate-level",
                "tool",
            ],
        );
        assert_eq!(run.code, 2, "{}", run.transcript());
        assert!(
            run.stderr
                .starts_with(&format!("error: --gate `{gate}`: {why} (")),
            "{}",
            run.stderr
        );
        assert!(!dir.path().join("out").exists());
    }
}
