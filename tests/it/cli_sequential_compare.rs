//! `run --compare --sequential`, through the binary, against a fake provider whose answers per
//! (variant, case) are known: the run stops at the complete round where the comparison
//! decides (a balanced design: every visible case has the same trials under both arms), the
//! verdict maps to exit 0 / 3, `compare RUN_DIR` and `report RUN_DIR` reach the same verdict
//! from the files, and the flags that cannot go together are refused before any request.

use crate::support;

use std::collections::HashMap;

use serde_json::Value;
use support::{
    FakeResponse, FakeServer, fake_project, last_user_message, text_body, tool_call_body, toolscore,
};

const TOOLS: &str = r#"{"tools": [
  {"name": "lookup", "description": "Look something up.", "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false}}
]}"#;

const CLEAR: &str = r#"{"tools": {"lookup": {"description": "CLEAR: look something up."}}}"#;

/// Four visible cases and one held out (last, so a stop in a round cuts it first).
fn cases() -> String {
    ["c0", "c1", "c2", "c3", "held"]
        .iter()
        .map(|id| {
            format!(
                "{{\"id\": \"{id}\", \"messages\": [{{\"role\": \"user\", \"content\": \"{id}\"}}], \"expect\": {{\"tool\": \"lookup\"}}{}}}\n",
                if *id == "held" { ", \"tags\": [\"holdout\"]" } else { "" }
            )
        })
        .collect()
}

/// `clear` answers right when `clear_right`, the base catalog never does; with `alike` both
/// are right in exactly 6 of every 10 requests of a (variant, case).
fn fake(alike: bool) -> impl Fn(&support::FakeRequest) -> FakeResponse + Send + Sync + 'static {
    let seen = std::sync::Mutex::new(HashMap::<(bool, String), u32>::new());
    move |req| {
        let clear = req.body["tools"].to_string().contains("CLEAR");
        let case = last_user_message(req).unwrap_or_default();
        let k = {
            let mut seen = seen.lock().expect("lock");
            let k = seen.entry((clear, case)).or_default();
            *k += 1;
            *k - 1
        };
        let right = if alike { k % 10 < 6 } else { clear };
        FakeResponse::ok(if right {
            tool_call_body(&[("lookup", "{}")])
        } else {
            text_body("no idea")
        })
    }
}

fn run(dir: &std::path::Path, run_id: &str, extra: &[&str]) -> support::Run {
    run_at(dir, run_id, "1", extra)
}

fn run_at(dir: &std::path::Path, run_id: &str, concurrency: &str, extra: &[&str]) -> support::Run {
    let mut args = vec![
        "run",
        "--provider",
        "fake",
        "--variant",
        "base",
        "--variant",
        "clear",
        "--compare",
        "--sequential",
        "--concurrency",
        concurrency,
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

/// The trials each (variant, case) counts: those not marked as after the decision.
fn trials_per_case(dir: &std::path::Path, run_id: &str) -> HashMap<(String, String), u64> {
    let text =
        std::fs::read_to_string(dir.join(format!("out/{run_id}/results.jsonl"))).expect("results");
    let mut counts = HashMap::new();
    for line in text.lines() {
        let r: Value = serde_json::from_str(line).expect("record");
        if r["after_decision"] == true {
            continue;
        }
        let key = (
            r["variant"].as_str().expect("variant").to_owned(),
            r["case_id"].as_str().expect("case").to_owned(),
        );
        *counts.entry(key).or_default() += 1;
    }
    counts
}

#[test]
fn a_clear_difference_stops_the_run_at_its_round_and_the_files_judge_it_again() {
    let server = FakeServer::start_in_background(fake(false));
    let dir = fake_project(
        &server.base_url,
        TOOLS,
        &cases(),
        &[("data/variants/clear.json", CLEAR)],
    );
    let r = run(dir.path(), "s", &[]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    // Every pair is +1 (clear right, base wrong), and the evidence after k such pairs is
    // Σ_f (1 + f)^k / 4 over f = 1/16, 1/8, 1/4, 1/2: 37.6 at k = 12, 54.9 at k = 13, against
    // 2/α = 40. The 4 visible cases decide at round 4 (16 pairs); the single held-out case, a
    // group of its own, at round 13, and the run stops there, once both have decided.
    let s = support::read_json(&dir.path().join("out/s/summary.json"));
    let seq = &s["comparison"]["visible"]["sequential"];
    assert_eq!(seq["verdict"], "better", "{seq}");
    assert_eq!(
        (seq["rounds"].as_u64(), seq["cases"].as_u64()),
        (Some(4), Some(4))
    );
    assert_eq!(seq["counts"]["b_only"], 16);
    assert!(seq["lower"].as_f64().expect("lower") > 0.0, "{seq}");
    let held = &s["comparison"]["holdout"]["sequential"];
    assert_eq!(
        (held["verdict"].as_str(), held["rounds"].as_u64()),
        (Some("better"), Some(13))
    );
    // With one request at a time the stop is exact and balanced: 13 rounds of all 5 cases
    // under both arms, nothing more.
    assert_eq!(server.requests_seen(), 13 * 5 * 2);
    let counts = trials_per_case(dir.path(), "s");
    assert_eq!(counts.len(), 10);
    assert!(counts.values().all(|&n| n == 13), "{counts:?}");
    assert_eq!(s["skipped_trials"], 2 * 5 * 200 - 130);
    // Eight requests at a time stop at the same round: the comparison is shown round 14 only
    // after judging round 13, so the at most 32 trials the workers ran ahead are kept as
    // after the decision, and the run and its counts are the same.
    let wide = run_at(dir.path(), "s8", "8", &[]);
    assert_eq!(wide.code, 0, "{}", wide.transcript());
    let sent = server.requests_seen() - 13 * 5 * 2;
    assert!((130..=130 + 32).contains(&sent), "{sent}");
    assert_eq!(trials_per_case(dir.path(), "s8"), counts);
    for r in support::read_jsonl(&dir.path().join("out/s8/results.jsonl")) {
        let past = r["trial_index"].as_u64().expect("trial_index") >= 13;
        assert_eq!(r["after_decision"] == true, past, "{r}");
    }
    let s8 = support::read_json(&dir.path().join("out/s8/summary.json"));
    assert_eq!(s8["comparison"]["visible"], s["comparison"]["visible"]);
    assert!(
        r.stdout.contains(
            "sequential (betting confidence sequence, anytime-valid; about these 4 cases, not a population of cases): decided after 4 rounds (32 trials)"
        ),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("verdict: BETTER"), "{}", r.stdout);

    // The verdict is a function of results.jsonl.
    let again = toolscore(dir.path(), &["compare", "out/s", "--json", "c.json"]);
    assert_eq!(again.code, 0, "{}", again.transcript());
    assert!(
        again.stdout.contains("decided after 4 rounds"),
        "{}",
        again.stdout
    );
    let c = support::read_json(&dir.path().join("c.json"));
    assert_eq!(c["visible"]["sequential"], *seq);
    assert_eq!(c["holdout"]["sequential"], *held);
    let report = toolscore(dir.path(), &["report", "out/s"]);
    assert_eq!(report.code, 0, "{}", report.transcript());
    assert!(
        report.stdout.contains("decided after 4 rounds"),
        "{}",
        report.stdout
    );
}

#[test]
fn equal_arms_stay_undecided_to_the_cap_and_exit_3() {
    let server = FakeServer::start_in_background(fake(true));
    let dir = fake_project(
        &server.base_url,
        TOOLS,
        &cases(),
        &[("data/variants/clear.json", CLEAR)],
    );
    let r = run(dir.path(), "e", &["--max-trials", "10"]);
    assert_eq!(r.code, 3, "{}", r.transcript());
    let s = support::read_json(&dir.path().join("out/e/summary.json"));
    let seq = &s["comparison"]["visible"]["sequential"];
    assert_eq!(seq["verdict"], "inconclusive");
    assert_eq!(
        (seq["rounds"].as_u64(), seq["max_rounds"].as_u64()),
        (Some(10), Some(10))
    );
    // Both arms right in the same 6 of 10: every pair alike.
    assert_eq!(seq["counts"]["same"], 40);
    assert!(
        r.stdout.contains("undecided after 10 of 10 rounds"),
        "{}",
        r.stdout
    );
}

#[test]
fn flags_that_cannot_go_together_are_refused_before_any_request() {
    let server = FakeServer::start_in_background(fake(false));
    let dir = fake_project(
        &server.base_url,
        TOOLS,
        &cases(),
        &[("data/variants/clear.json", CLEAR)],
    );
    let refused = |args: &[&str], says: &str| {
        let r = toolscore(dir.path(), args);
        assert_eq!(r.code, 2, "{}", r.transcript());
        assert!(r.stderr.contains(says), "{}", r.stderr);
    };
    refused(
        &["run", "--provider", "fake", "--sequential"],
        "--sequential judges gates",
    );
    refused(
        &[
            "run",
            "--provider",
            "fake",
            "--variant",
            "base",
            "--variant",
            "clear",
            "--compare",
            "--sequential",
            "--gate",
            "pass>=0.5",
            "--gate-level",
            "case",
        ],
        "not both",
    );
    refused(
        &[
            "run",
            "--provider",
            "fake",
            "--variant",
            "base",
            "--variant",
            "clear",
            "--compare",
            "--sequential",
            "--sprt-p1",
            "0.9",
        ],
        "needs no alternative",
    );
    refused(
        &["run", "--provider", "fake", "--compare", "--sequential"],
        "exactly two arms",
    );
    refused(
        &[
            "run",
            "--provider",
            "fake",
            "--variant",
            "base",
            "--variant",
            "clear",
            "--compare",
            "--min-effect",
            "1.5",
        ],
        "--min-effect must be between 0 and 1",
    );
    assert_eq!(server.requests_seen(), 0);
}

#[test]
fn a_baseline_gate_stops_each_arm_at_the_round_it_decides() {
    let server = FakeServer::start_in_background(fake(false));
    let dir = fake_project(
        &server.base_url,
        TOOLS,
        &cases(),
        &[("data/variants/clear.json", CLEAR)],
    );
    let run = |variant: &str, run_id: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            "--provider",
            "fake",
            "--variant",
            variant,
            "--trials",
            "20",
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
        toolscore(dir.path(), &args)
    };
    // The baselines: the base wording always wrong, the clear one always right.
    assert_eq!(run("base", "wrong", &[]).code, 0);
    assert_eq!(run("clear", "right", &[]).code, 0);
    let before = server.requests_seen();

    // Clear against the always-wrong baseline: every pair +1. Against "worse by 0.02 or
    // more" the evidence after k pairs is Σ_f (1 + f·1.02/0.98)^k / 4, 20.3 at k = 10 ≥ 1/α:
    // PASS after round 2 (5 cases a round), and the arm stops there.
    let pass = run("clear", "p", &["--baseline", "out/wrong", "--sequential"]);
    assert_eq!(pass.code, 0, "{}", pass.transcript());
    assert_eq!(server.requests_seen() - before, 10);
    let s = support::read_json(&dir.path().join("out/p/summary.json"));
    let gate = &s["gate"]["gates"][0];
    assert_eq!(
        (gate["level"].as_str(), gate["verdict"].as_str()),
        (Some("baseline"), Some("pass"))
    );
    assert_eq!(gate["sequential"]["rounds"], serde_json::json!([2, 0]));
    assert!(gate["lower"].as_f64().expect("lower") > -0.02, "{gate}");
    assert!(
        gate["method"]
            .as_str()
            .expect("method")
            .contains("not a population of cases"),
        "{gate}"
    );

    // Base against the always-right baseline: every pair −1; the evidence the other way,
    // Σ_f (1 + f·0.98/1.02)^k / 4, passes 20 at k = 11: FAIL after round 3.
    let before = server.requests_seen();
    let fail = run("base", "f", &["--baseline", "out/right", "--sequential"]);
    assert_eq!(fail.code, 1, "{}", fail.transcript());
    assert_eq!(server.requests_seen() - before, 15);
    let s = support::read_json(&dir.path().join("out/f/summary.json"));
    assert_eq!(
        s["gate"]["gates"][0]["sequential"]["rounds"],
        serde_json::json!([3, 0])
    );
    // `report` keeps a baseline verdict as judged.
    let again = toolscore(dir.path(), &["report", "out/f"]);
    assert_eq!(again.code, 1, "{}", again.transcript());

    // A case the baseline never ran (`--intersect`) takes no part in the rounds: they
    // complete on the five shared cases, and the verdict comes where it did, after the
    // shared cases of round 2 (the new case, last in a round, ran once).
    let mut cases_file =
        std::fs::read_to_string(dir.path().join("data/cases.jsonl")).expect("cases");
    cases_file.push_str(
        "{\"id\": \"new\", \"messages\": [{\"role\": \"user\", \"content\": \"new\"}], \"expect\": {\"tool\": \"lookup\"}}\n",
    );
    std::fs::write(dir.path().join("data/cases.jsonl"), cases_file).expect("write");
    let before = server.requests_seen();
    let new = run(
        "clear",
        "n",
        &["--baseline", "out/wrong", "--sequential", "--intersect"],
    );
    assert_eq!(new.code, 0, "{}", new.transcript());
    assert_eq!(server.requests_seen() - before, 11);
    let s = support::read_json(&dir.path().join("out/n/summary.json"));
    let gate = &s["gate"]["gates"][0];
    assert_eq!(
        (gate["cases"].as_u64(), gate["verdict"].as_str()),
        (Some(5), Some("pass"))
    );
}

/// A sequential comparison's verdict is the group's `verdict` in summary.json, where the exit
/// code and every headline read it; the fixed-n t interval's verdict is kept apart, and the
/// interval is labelled as description (here it excludes 0 while the run is undecided).
#[test]
fn the_sequential_verdict_is_the_groups_verdict_and_the_fixed_n_interval_is_labelled() {
    let dir = support::project_copy();
    let d = dir.path();
    let run = toolscore(
        d,
        &[
            "run",
            "--provider",
            "demo",
            "--provider",
            "demo-terse",
            "--trials",
            "10",
            "--compare",
            "--sequential",
            "--run-id",
            "seq",
            "--progress",
            "off",
        ],
    );
    assert_eq!(run.code, 3, "{}", run.transcript());
    let s = support::read_json(&d.join("reports/seq/summary.json"));
    let visible = &s["comparison"]["visible"];
    assert_eq!(visible["verdict"], "inconclusive", "{visible}");
    assert_eq!(visible["verdict"], visible["sequential"]["verdict"]);
    assert_eq!(visible["fixed_n_verdict"], "worse", "{visible}");
    assert!(
        visible["difference"]["hi"].as_f64().unwrap() < 0.0,
        "{visible}"
    );
    assert!(
        run.stdout.contains(
            "(paired t on 51 case differences, 50 df, sd 0.147, p = 0.0134) · fixed-n, descriptive only: not the decision's, and not valid after the run stopped on its data"
        ),
        "{}",
        run.stdout
    );
    let again = toolscore(d, &["compare", "reports/seq", "--json", "c.json"]);
    assert_eq!(again.code, 3, "{}", again.transcript());
    let json = support::read_json(&d.join("c.json"));
    assert_eq!(json["visible"]["verdict"], "inconclusive");
    // A fixed-n gate on trials the sequential comparison stopped is refused, not judged
    // quietly; the sequential gate is judged.
    let fixed = toolscore(d, &["report", "reports/seq", "--gate", "selection>=0.3"]);
    assert_eq!(fixed.code, 2, "{}", fixed.transcript());
    assert!(
        fixed.stderr.contains("this run was sampled sequentially"),
        "{}",
        fixed.transcript()
    );
    let sequential = toolscore(
        d,
        &[
            "report",
            "reports/seq",
            "--gate",
            "selection>=0.3",
            "--gate-level",
            "case",
            "--sequential",
        ],
    );
    assert_ne!(sequential.code, 2, "{}", sequential.transcript());
}
