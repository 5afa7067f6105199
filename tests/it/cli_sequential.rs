//! `--sequential`, through the binary, against a fake provider with known per-case rates: a
//! clear case decides after exactly the trials its test's boundary says (the mixture SPRT by
//! default, the SPRT with `--sprt-p1`) and is not run further,
//! the verdicts map to exit codes 0 / 1 / 3, the fixed design's cost is reported beside the
//! trials used, and `report --sequential` reaches the same verdicts from the run's files.

use crate::support;

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;
use support::{
    FakeResponse, FakeServer, fake_project, last_user_message, text_body, tool_call_body, toolscore,
};

const TOOLS: &str = r#"{"tools": [
  {"name": "lookup", "description": "Look something up.", "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false}}
]}"#;

/// `good` (and every case named `good…`) is always right, `bad` never, `edge` 17 times in 20 (0.85: between t = 0.8 and
/// p₁ = 0.9, where the test needs many trials).
fn known_rates() -> impl Fn(&support::FakeRequest) -> FakeResponse + Send + Sync + 'static {
    let seen: Mutex<HashMap<String, u32>> = Mutex::new(HashMap::new());
    move |req| {
        let case = last_user_message(req).unwrap_or_default();
        let k = {
            let mut seen = seen.lock().expect("lock");
            let k = seen.entry(case.clone()).or_default();
            *k += 1;
            *k - 1
        };
        let right = match case.as_str() {
            c if c.starts_with("good") => true,
            "bad" => false,
            _ => k % 20 < 17,
        };
        if right {
            FakeResponse::ok(tool_call_body(&[("lookup", "{}")]))
        } else {
            FakeResponse::ok(text_body("no idea"))
        }
    }
}

fn project(server: &FakeServer, cases: &[&str]) -> tempfile::TempDir {
    let lines: String = cases
        .iter()
        .map(|id| {
            format!(
                "{{\"id\": \"{id}\", \"messages\": [{{\"role\": \"user\", \"content\": \"{id}\"}}], \"expect\": {{\"tool\": \"lookup\"}}}}\n"
            )
        })
        .collect();
    fake_project(&server.base_url, TOOLS, &lines, &[])
}

fn sequential(
    dir: &std::path::Path,
    run_id: &str,
    max_trials: &str,
    extra: &[&str],
) -> support::Run {
    let mut args = vec![
        "run",
        "--provider",
        "fake",
        "--gate",
        "pass>=0.8",
        "--gate-level",
        "case",
        "--sequential",
        "--max-trials",
        max_trials,
        "--concurrency",
        "1",
        "--out",
        "out",
        "--run-id",
        run_id,
        "--progress",
        "off",
    ];
    args.extend_from_slice(extra);
    toolscore(dir, &args)
}

fn summary(dir: &std::path::Path, run_id: &str) -> Value {
    support::read_json(&dir.join(format!("out/{run_id}/summary.json")))
}

#[test]
fn a_clear_pass_and_a_clear_fail_stop_at_their_boundaries() {
    let server = FakeServer::start_in_background(known_rates());
    let dir = project(&server, &["good", "bad"]);
    let run = sequential(dir.path(), "m", "300", &[]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    // The mixture SPRT (no --sprt-p1): t = 0.8, alternatives 0.9, 0.95, 0.975, 0.9875 with
    // weights 8, 4, 2, 1 (/15). After n straight successes its evidence is
    // Σ w_k (q_k/0.8)^n: 18.0 at n = 18, 21.3 at n = 19, so `good` passes at its 19th success
    // (the SPRT at p1 = 0.9 needs 26). FAIL is the SPRT's: beta per case = 0.05 / 2,
    // ln(0.025) / ln(0.1/0.2) = 5.3, so `bad` fails at its 6th straight failure. A trial
    // already started when its case decides still runs and is recorded (a worker runs ahead
    // of the collector by at most the channel's few slots), but it cannot change the
    // decision: `trials_used` counts up to the decision.
    let requests = server.requests_seen();
    assert!((25..=37).contains(&requests), "{requests} requests");
    let s = summary(dir.path(), "m");
    assert_eq!(s["completed_trials"], requests);
    assert_eq!(s["skipped_trials"], 600 - requests);
    let gate = &s["gate"]["gates"][0];
    assert_eq!(gate["verdict"], "fail");
    assert_eq!(
        (gate["passed_cases"].as_u64(), gate["failed_cases"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(gate["not_passed"][0]["case_id"], "bad");
    assert_eq!(gate["not_passed"][0]["n"], 6);
    let seq = &gate["sequential"];
    assert_eq!(seq["test"], "mixture");
    assert_eq!(seq["trials_used"], 25);
    assert_eq!(seq["p1"], 0.9);
    // The boundary the report prints: 25 of 25, 47 of 50, 90 of 100, 176 of 200.
    assert_eq!(seq["pass_at"][0], serde_json::json!([25, 25]));
    assert_eq!(seq["pass_at"][3], serde_json::json!([200, 176]));
    let fixed = seq["fixed_design_trials"].as_u64().expect("fixed");
    assert!(fixed > 25 * 4, "the fixed design needs {fixed}");
    assert!(run.stdout.contains("trials used: 25"), "{}", run.stdout);
    assert!(
        run.stdout.contains(
            "sequential (mixture SPRT, anytime-valid, no guess of the true rate): p1 0.9"
        ),
        "{}",
        run.stdout
    );

    // The same cases under the SPRT with p1 = 0.9: `good` passes at its 26th success, since
    // ln(20) / ln(0.9/0.8) = 25.4.
    let sprt = sequential(dir.path(), "s", "300", &["--sprt-p1", "0.9"]);
    assert_eq!(sprt.code, 1, "{}", sprt.transcript());
    let seq = &summary(dir.path(), "s")["gate"]["gates"][0]["sequential"];
    assert_eq!(
        (seq["test"].as_str(), seq["trials_used"].as_u64()),
        (Some("sprt"), Some(32))
    );
    assert!(
        sprt.stdout.contains("sequential (SPRT, anytime-valid)"),
        "{}",
        sprt.stdout
    );

    // Each verdict is a function of results.jsonl, in its order: `report` with the flags, or
    // with none (the run's own recorded test), reaches it again.
    let flags = [
        "--gate",
        "pass>=0.8",
        "--gate-level",
        "case",
        "--sequential",
    ];
    let again = toolscore(dir.path(), &[&["report", "out/m"][..], &flags].concat());
    assert_eq!(again.code, 1, "{}", again.transcript());
    assert!(again.stdout.contains("trials used: 25"), "{}", again.stdout);
    let recorded = toolscore(dir.path(), &["report", "out/s"]);
    assert_eq!(recorded.code, 1, "{}", recorded.transcript());
    assert!(
        recorded.stdout.contains("trials used: 32"),
        "{}",
        recorded.stdout
    );
    assert!(
        recorded.stderr.contains("--sequential --sprt-p1 0.9"),
        "{}",
        recorded.stderr
    );
    let recorded = toolscore(dir.path(), &["report", "out/m"]);
    assert!(
        recorded.stdout.contains("trials used: 25"),
        "{}",
        recorded.stdout
    );
}

#[test]
fn every_case_passing_exits_0_and_an_undecided_case_at_the_cap_exits_3() {
    let server = FakeServer::start_in_background(known_rates());
    let dir = project(&server, &["good"]);
    let pass = sequential(dir.path(), "p", "100", &[]);
    assert_eq!(pass.code, 0, "{}", pass.transcript());
    assert!((19..=24).contains(&server.requests_seen()));
    assert_eq!(
        summary(dir.path(), "p")["gate"]["gates"][0]["sequential"]["trials_used"],
        19
    );

    let server = FakeServer::start_in_background(known_rates());
    let dir = project(&server, &["edge"]);
    let undecided = sequential(dir.path(), "e", "40", &[]);
    assert_eq!(undecided.code, 3, "{}", undecided.transcript());
    let s = summary(dir.path(), "e");
    let case = &s["gate"]["gates"][0]["not_passed"][0];
    assert_eq!(case["verdict"], "inconclusive");
    assert_eq!(case["n"], 40);
    assert!(case["more_trials"].as_u64().expect("more") >= 1);
}

#[test]
fn sequential_refuses_pooled_levels_and_impossible_alternatives() {
    let server = FakeServer::start_in_background(known_rates());
    let dir = project(&server, &["good"]);
    let refused = |extra: &[&str], says: &str| {
        let mut args = vec!["run", "--provider", "fake", "--sequential"];
        args.extend_from_slice(extra);
        let r = toolscore(dir.path(), &args);
        assert_eq!(r.code, 2, "{}", r.transcript());
        assert!(r.stderr.contains(says), "{}", r.stderr);
    };
    // A tool's rate pools cases; args and schema cannot fill a fixed round of the suite.
    refused(
        &["--gate", "pass>=0.8", "--gate-level", "tool"],
        "--gate-level case",
    );
    refused(&["--gate", "args>=0.8"], "does not apply to every trial");
    refused(
        &["--gate", "pass>=0.8", "--sprt-p1", "0.9"],
        "the sequential suite gate needs no alternative",
    );
    let p1 = toolscore(
        dir.path(),
        &[
            "run",
            "--provider",
            "fake",
            "--gate",
            "pass>=0.8",
            "--gate-level",
            "case",
            "--sequential",
            "--sprt-p1",
            "0.7",
        ],
    );
    assert_eq!(p1.code, 2, "{}", p1.transcript());
    assert!(
        p1.stderr.contains("--sprt-p1 0.7 must lie above"),
        "{}",
        p1.stderr
    );
    assert_eq!(server.requests_seen(), 0);
}

/// Three cases always right and one never: the suite's rate is 0.75.
#[test]
fn the_suite_gate_stops_each_arm_at_the_round_it_decides() {
    let server = FakeServer::start_in_background(known_rates());
    let dir = project(&server, &["good", "good2", "good3", "bad"]);
    let suite = |run_id: &str, gate: &str| {
        toolscore(
            dir.path(),
            &[
                "run",
                "--provider",
                "fake",
                "--gate",
                gate,
                "--sequential",
                "--concurrency",
                "1",
                "--out",
                "out",
                "--run-id",
                run_id,
                "--progress",
                "off",
            ],
        )
    };
    // Each round adds 3 passes and 1 failure. Against 0.5 the evidence (the mean over the
    // betting fractions f = 1/16, 1/8, 1/4, 1/2 of (1 + f)^(3r)·(1 − f)^r) first reaches
    // 1/α = 20 at round 8 (23.8); against 0.9, the evidence the other way
    // ((1 − f)^(3r)·(1 + 9f)^r) at round 11 (24.2). Both from a separate Python computation
    // of the same sums.
    let pass = suite("p", "selection>=0.5");
    assert_eq!(pass.code, 0, "{}", pass.transcript());
    let gate = &support::read_json(&dir.path().join("out/p/summary.json"))["gate"]["gates"][0];
    assert_eq!(
        (gate["verdict"].as_str(), gate["level"].as_str()),
        (Some("pass"), Some("suite"))
    );
    assert_eq!(gate["sequential"]["rounds"], serde_json::json!([8, 0]));
    assert_eq!(gate["trials"], 32);
    assert!(gate["lower"].as_f64().expect("lower") > 0.5, "{gate}");
    assert!(
        gate["method"]
            .as_str()
            .expect("method")
            .contains("about these 4 cases, not a population of cases"),
        "{gate}"
    );
    // The arm stopped at its decision: 8 rounds of 4 cases, one request at a time.
    assert_eq!(server.requests_seen(), 32);
    assert!(
        pass.stdout.contains("sequential (betting confidence sequence over rounds of every case, anytime-valid; about this suite's cases, not a population of cases): alpha 0.050 each way; 8 of at most 200 rounds judged"),
        "{}",
        pass.stdout
    );

    let fail = suite("f", "selection>=0.9");
    assert_eq!(fail.code, 1, "{}", fail.transcript());
    let summary = support::read_json(&dir.path().join("out/f/summary.json"));
    let gate = &summary["gate"]["gates"][0];
    assert_eq!(gate["verdict"], "fail");
    assert_eq!(gate["sequential"]["rounds"], serde_json::json!([11, 0]));
    assert!(gate["upper"].as_f64().expect("upper") < 0.9, "{gate}");

    // `report` judges the files again by the recorded gate and reaches the same verdict.
    let again = toolscore(dir.path(), &["report", "out/f"]);
    assert_eq!(again.code, 1, "{}", again.transcript());
    let rejudged = support::read_json(&dir.path().join("out/f/summary.json"));
    assert_eq!(
        rejudged["gate"]["gates"][0]["sequential"],
        gate["sequential"]
    );
}

#[test]
fn a_recorded_sequential_run_replays_to_the_same_verdicts_at_any_concurrency() {
    let server = FakeServer::start_in_background(known_rates());
    let dir = project(&server, &["good", "bad", "good2"]);
    let recorded = sequential(dir.path(), "rec", "60", &["--record", "seq.jsonl"]);
    assert_eq!(recorded.code, 1, "{}", recorded.transcript());
    drop(server);
    // Cases passed, failed and inconclusive, and each case that did not pass with its trials.
    let verdicts = |run_id: &str| -> Value {
        let g = &summary(dir.path(), run_id)["gate"]["gates"][0];
        let not_passed: Vec<Value> = g["not_passed"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|c| serde_json::json!([c["case_id"], c["verdict"], c["n"]]))
                    .collect()
            })
            .unwrap_or_default();
        serde_json::json!([
            g["passed_cases"],
            g["failed_cases"],
            g["inconclusive_cases"],
            not_passed
        ])
    };
    let want = verdicts("rec");
    // Each case stopped at its own count: the replay must not cap them all at the fewest.
    assert_eq!(want[0], 2, "{want}");
    for concurrency in ["1", "8"] {
        let replayed = toolscore(
            dir.path(),
            &[
                "run",
                "--provider",
                "replay:seq.jsonl",
                "--gate",
                "pass>=0.8",
                "--gate-level",
                "case",
                "--sequential",
                "--concurrency",
                concurrency,
                "--out",
                "out",
                "--run-id",
                concurrency,
                "--progress",
                "off",
            ],
        );
        assert_eq!(replayed.code, 1, "{}", replayed.transcript());
        assert_eq!(verdicts(concurrency), want, "--concurrency {concurrency}");
        assert!(
            replayed.stdout.contains("trials used: 44")
                && replayed.stdout.contains("0 infrastructure errors"),
            "{}",
            replayed.stdout
        );
    }
}
