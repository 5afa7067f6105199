//! `toolscore compare`, through the binary, against a fake provider whose success rate per
//! (variant, case) is known exactly: the comparison finds exactly the cases that changed, the
//! right suite verdict, keeps holdout cases out of every per-case table, and refuses arms that
//! cannot be compared.

use crate::support;

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;
use support::{
    FakeResponse, FakeServer, fake_project, last_user_message, text_body, tool_call_body, toolscore,
};

const TOOLS: &str = r#"{"tools": [
  {"name": "lookup", "description": "Look something up.", "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false}},
  {"name": "other", "description": "Something else.", "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false}}
]}"#;

const CLEAR: &str = r#"{"tools": {"lookup": {"description": "CLEAR: look something up."}}}"#;

/// Cases `up0`…`up3` and holdout `hup` go from 2 in 10 right (base) to 9 in 10 (clear); the
/// others stay at 6 in 10 under both.
const CASE_IDS: [(&str, bool); 13] = [
    ("up0", false),
    ("up1", false),
    ("up2", false),
    ("up3", false),
    ("same0", false),
    ("same1", false),
    ("same2", false),
    ("same3", false),
    ("same4", false),
    ("same5", false),
    ("hup", true),
    ("hsame0", true),
    ("hsame1", true),
];

fn cases() -> String {
    CASE_IDS
        .iter()
        .map(|(id, holdout)| {
            format!(
                "{{\"id\": \"{id}\", \"messages\": [{{\"role\": \"user\", \"content\": \"case {id}\"}}], \"expect\": {{\"tool\": \"lookup\"}}{}}}\n",
                if *holdout { ", \"tags\": [\"holdout\"]" } else { "" }
            )
        })
        .collect()
}

/// Right in exactly `tenths` of every 10 requests of a (variant, case), whatever the order.
fn known_rates() -> impl Fn(&support::FakeRequest) -> FakeResponse + Send + Sync + 'static {
    let seen: Mutex<HashMap<(bool, String), u32>> = Mutex::new(HashMap::new());
    move |req| {
        let user = last_user_message(req).unwrap_or_default();
        let case = user.trim_start_matches("case ").to_owned();
        let clear = req.body["tools"].to_string().contains("CLEAR");
        let k = {
            let mut seen = seen.lock().expect("lock");
            let k = seen.entry((clear, case.clone())).or_default();
            *k += 1;
            *k - 1
        };
        let tenths = match (case.contains("up"), clear) {
            (true, false) => 2,
            (true, true) => 9,
            (false, _) => 6,
        };
        if k % 10 < tenths {
            FakeResponse::ok(tool_call_body(&[("lookup", "{}")]))
        } else if k % 2 == 0 {
            FakeResponse::ok(tool_call_body(&[("other", "{}")]))
        } else {
            FakeResponse::ok(text_body("I am not sure."))
        }
    }
}

fn project(server: &FakeServer) -> tempfile::TempDir {
    fake_project(
        &server.base_url,
        TOOLS,
        &cases(),
        &[("data/variants/clear.json", CLEAR)],
    )
}

fn run(dir: &std::path::Path, extra: &[&str]) -> support::Run {
    let trials = if extra.contains(&"--trials") {
        vec![]
    } else {
        vec!["--trials", "30"]
    };
    let mut args = vec![
        "run",
        "--provider",
        "fake",
        "--out",
        "out",
        "--progress",
        "off",
    ];
    args.extend_from_slice(&trials);
    args.extend_from_slice(extra);
    toolscore(dir, &args)
}

#[test]
fn a_comparison_finds_exactly_the_changed_cases_and_judges_holdout_apart() {
    let server = FakeServer::start_in_background(known_rates());
    let dir = project(&server);
    let r = run(
        dir.path(),
        &["--variant", "base", "--variant", "clear", "--run-id", "ab"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());

    let c = toolscore(dir.path(), &["compare", "out/ab", "--json", "cmp.json"]);
    // The visible verdict is decided; three holdout cases cannot decide theirs.
    assert_eq!(c.code, 3, "{}", c.transcript());
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("cmp.json")).expect("json"))
            .expect("parse");
    assert_eq!(json["axis"], "variant");
    assert_eq!(json["metric"], "selection");
    let changed: Vec<&str> = json["changed_cases"]
        .as_array()
        .expect("changed")
        .iter()
        .map(|c| c["case_id"].as_str().expect("id"))
        .collect();
    assert_eq!(changed, ["up0", "up1", "up2", "up3"]);
    for c in json["changed_cases"].as_array().expect("changed") {
        assert_eq!((c["a_x"].as_u64(), c["b_x"].as_u64()), (Some(6), Some(27)));
    }
    let visible = &json["visible"];
    assert_eq!(visible["cases"], 10);
    assert_eq!(visible["verdict"], "better");
    // Mean of the per-case differences: 4 × 0.7 / 10.
    assert!((visible["difference"]["mean"].as_f64().expect("mean") - 0.28).abs() < 1e-9);
    assert_eq!(visible["difference"]["df"], 9);
    let holdout = &json["holdout"];
    assert_eq!(holdout["cases"], 3);
    assert_eq!(holdout["verdict"], "inconclusive");
    assert!(holdout["cases_needed"].as_u64().expect("cases needed") > 3);
    // Holdout cases are named nowhere.
    assert!(!c.stdout.contains("hup") && !c.stdout.contains("hsame"));
    assert!(!json.to_string().contains("hup"));
    // The substitution table shows what base confuses lookup with.
    assert!(c.stdout.contains("lookup → other"), "{}", c.stdout);
    assert!(
        c.stdout.contains("BETTER: variant clear scores higher"),
        "{}",
        c.stdout
    );
    assert!(c.stdout.contains("cases that changed"), "{}", c.stdout);
}

#[test]
fn the_same_arm_measured_twice_shows_no_detectable_difference() {
    let server = FakeServer::start_in_background(known_rates());
    let dir = project(&server);
    for id in ["first", "second"] {
        let r = run(dir.path(), &["--run-id", id]);
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    // Both runs see exactly the same counts: every difference is 0.
    let c = toolscore(
        dir.path(),
        &["compare", "out/first", "out/second", "--min-effect", "0.1"],
    );
    assert!(
        c.stdout.contains("A = run first · B = run second"),
        "{}",
        c.stdout
    );
    assert!(c.stdout.contains("no visible case changed"), "{}", c.stdout);
    // Every paired difference is 0, so the interval is [0, 0]: inside ±0.1, the comparison is
    // decided (no difference as large as the minimum effect) and exits 0, on the visible cases
    // and on the holdout cases alike.
    assert_eq!(c.code, 0, "{}", c.transcript());
    let verdict =
        "verdict: NO DETECTABLE DIFFERENCE: any difference is smaller than 0.1 either way";
    // The run's decision leads, then the comparison's own verdict.
    assert!(
        c.stdout.starts_with("verdict: PASS (exit 0)\n"),
        "{}",
        c.stdout
    );
    let first = c
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("compare "))
        .find(|l| l.trim_start().starts_with("verdict:"));
    assert_eq!(first.map(str::trim), Some(verdict), "{}", c.stdout);
    assert_eq!(
        c.stdout.matches(verdict).count(),
        3,
        "overall, visible, holdout: {}",
        c.stdout
    );
    assert!(
        c.stdout
            .contains("B − A = +0.000 [+0.000, +0.000] (paired t on 10 case differences"),
        "{}",
        c.stdout
    );
}

#[test]
fn arms_that_cannot_be_compared_are_refused_with_exit_2() {
    let server = FakeServer::start_in_background(known_rates());
    let dir = project(&server);
    assert_eq!(run(dir.path(), &["--run-id", "one"]).code, 0);
    let c = toolscore(dir.path(), &["compare", "out/one"]);
    assert_eq!(c.code, 2, "{}", c.transcript());
    assert!(
        c.stderr.contains("compare needs exactly two"),
        "{}",
        c.stderr
    );

    assert_eq!(
        run(dir.path(), &["--run-id", "fewer", "--trials", "20"]).code,
        0
    );
    let t = toolscore(dir.path(), &["compare", "out/one", "out/fewer"]);
    assert_eq!(t.code, 2, "{}", t.transcript());
    assert!(
        t.stderr.contains("planned with 30 trials in A and 20 in B"),
        "{}",
        t.stderr
    );

    let m = toolscore(
        dir.path(),
        &["compare", "out/one", "out/one", "--metric", "speed"],
    );
    assert_eq!(m.code, 2, "{}", m.transcript());
}

/// `--baseline`: a run gated against an earlier one by the paired case-level difference.
#[test]
fn a_baseline_gate_fails_a_regression_passes_no_change_and_refuses_other_trials() {
    let server = FakeServer::start_in_background(known_rates());
    let dir = project(&server);
    assert_eq!(
        run(dir.path(), &["--variant", "clear", "--run-id", "main"]).code,
        0
    );
    // The base wording loses 0.7 on five of thirteen cases (holdout included: a gate judges
    // every case).
    let worse = run(
        dir.path(),
        &[
            "--variant",
            "base",
            "--run-id",
            "pr",
            "--baseline",
            "out/main",
            "--baseline-metric",
            "selection",
        ],
    );
    assert_eq!(worse.code, 1, "{}", worse.transcript());
    assert!(
        worse.stdout.contains("FAIL selection vs baseline"),
        "{}",
        worse.stdout
    );
    assert!(worse.stdout.contains("over 13 cases"), "{}", worse.stdout);
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("out/pr/summary.json")).expect("read"),
    )
    .expect("json");
    let gate = &summary["gate"]["gates"][0];
    assert_eq!(gate["level"], "baseline");
    assert_eq!(gate["threshold"], -0.02);
    assert!((gate["estimate"].as_f64().expect("estimate") + 5.0 * 0.7 / 13.0).abs() < 1e-9);

    // The same wording again: every case's counts are the same, so no loss at all.
    let same = run(
        dir.path(),
        &[
            "--variant",
            "clear",
            "--run-id",
            "pr2",
            "--baseline",
            "out/main",
        ],
    );
    assert_eq!(same.code, 0, "{}", same.transcript());
    // `report` judges a finished run against the baseline the same way.
    let again = toolscore(
        dir.path(),
        &[
            "report",
            "out/pr",
            "--baseline",
            "out/main",
            "--baseline-metric",
            "selection",
        ],
    );
    assert_eq!(again.code, 1, "{}", again.transcript());

    let before = server.requests_seen();
    let other = run(
        dir.path(),
        &[
            "--trials",
            "10",
            "--run-id",
            "pr3",
            "--baseline",
            "out/main",
        ],
    );
    assert_eq!(other.code, 2, "{}", other.transcript());
    assert!(
        other.stderr.contains("it ran 30 trials"),
        "{}",
        other.stderr
    );
    assert_eq!(server.requests_seen(), before);
}

/// `run --compare`: the same comparison at the end of a two-arm run, kept in summary.json.
#[test]
fn run_compare_keeps_the_comparison_in_the_summary() {
    let server = FakeServer::start_in_background(known_rates());
    let dir = project(&server);
    let r = run(
        dir.path(),
        &[
            "--variant",
            "base",
            "--variant",
            "clear",
            "--run-id",
            "rc",
            "--compare",
            "--format",
            "terminal",
            "--format",
            "html",
        ],
    );
    // One rule for run --compare, compare and the HTML badge: the visible cases say better,
    // the three held-out cases cannot confirm it, so the comparison is inconclusive (exit 3).
    assert_eq!(r.code, 3, "{}", r.transcript());
    let overall = "verdict: INCONCLUSIVE: the visible cases say better, not yet confirmed on the 3 held-out cases (undecided)";
    assert!(r.stdout.contains(overall), "{}", r.stdout);
    let c = toolscore(dir.path(), &["compare", "out/rc"]);
    assert_eq!(c.code, 3, "{}", c.transcript());
    assert!(c.stdout.contains(overall), "{}", c.stdout);
    let html = std::fs::read_to_string(dir.path().join("out/rc/report.html")).expect("html");
    assert!(
        html.contains(r#"<span class="badge inconclusive">INCONCLUSIVE</span><span>the visible cases say better, not yet confirmed on the 3 held-out cases (undecided)</span>"#),
        "{html}"
    );
    assert!(
        !html.contains("B BETTER"),
        "the badge is the overall verdict"
    );
    // Re-rendering keeps the comparison and its exit code.
    std::fs::remove_file(dir.path().join("out/rc/report.html")).expect("rm");
    let again = toolscore(dir.path(), &["report", "out/rc", "--format", "html"]);
    assert_eq!(again.code, 3, "{}", again.transcript());
    let html = std::fs::read_to_string(dir.path().join("out/rc/report.html")).expect("html");
    assert!(html.contains(r#"id="comparison""#), "{html}");
    assert!(
        html.contains("not yet confirmed on the 3 held-out cases"),
        "{html}"
    );
    assert!(
        r.stdout
            .contains("compare selection · A = variant base · B = variant clear"),
        "{}",
        r.stdout
    );
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("out/rc/summary.json")).expect("read"),
    )
    .expect("json");
    assert_eq!(summary["comparison"]["visible"]["verdict"], "better");
    assert_eq!(
        summary["comparison"]["changed_cases"]
            .as_array()
            .map(Vec::len),
        Some(4)
    );

    let one = run(dir.path(), &["--run-id", "rc1", "--compare"]);
    assert_eq!(one.code, 2, "{}", one.transcript());
    assert!(
        one.stderr.contains("--compare needs exactly two arms"),
        "{}",
        one.stderr
    );
}

/// `run --compare` with two arms that differ in both their catalog variant and their model is
/// refused before any trial (exit 2, no run folder), by the rule the comparison itself applies.
#[test]
fn run_compare_refuses_arms_that_differ_in_two_things_before_any_trial() {
    let dir = support::project_copy();
    let d = dir.path();
    let run = toolscore(
        d,
        &[
            "run",
            "--provider",
            "demo-greedy",
            "--provider",
            "demo-terse",
            "--trials",
            "3",
            "--compare",
            "--run-id",
            "both",
            "--progress",
            "off",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains(
            "error: --compare: the arms differ in both catalog variant (base vs terse) and provider or model"
        ),
        "{}",
        run.transcript()
    );
    assert!(!d.join("reports/both").exists(), "nothing written");
    assert!(run.stdout.is_empty(), "no trial ran: {}", run.stdout);
}

/// `compare RUN_DIR` on a run that compared its arms judges them again by the run's own
/// `--min-effect`, so its exit code is the run's; `--min-effect` still overrides it.
#[test]
fn compare_of_a_run_folder_judges_by_the_runs_own_min_effect() {
    let dir = support::project_copy();
    let d = dir.path();
    let run = toolscore(
        d,
        &[
            "run",
            "--provider",
            "demo-greedy",
            "--provider",
            "demo",
            "--trials",
            "3",
            "--compare",
            "--min-effect",
            "0.3",
            "--run-id",
            "me1",
            "--progress",
            "off",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let again = toolscore(d, &["compare", "reports/me1", "--json", "c.json"]);
    assert_eq!(again.code, run.code, "{}", again.transcript());
    let json = support::read_json(&d.join("c.json"));
    assert_eq!(json["min_effect"], 0.3, "{json}");
    let summary = support::read_json(&d.join("reports/me1/summary.json"));
    assert_eq!(json["decision"], summary["decision"]);
    let stricter = toolscore(d, &["compare", "reports/me1", "--min-effect", "0.05"]);
    assert_eq!(stricter.code, 3, "{}", stricter.transcript());
}

/// Two folders of one run id are two runs: the comparison's axis is `run`, and each arm is
/// named with its folder, in the comparison and in the decision's grounds.
#[test]
fn two_folders_of_one_run_id_are_told_apart_by_their_folder() {
    let server = FakeServer::start_in_background(known_rates());
    let dir = project(&server);
    let d = dir.path();
    for out in ["ra", "rb"] {
        let r = toolscore(
            d,
            &[
                "run",
                "--provider",
                "fake",
                "--trials",
                "4",
                "--out",
                out,
                "--run-id",
                "same",
                "--progress",
                "off",
            ],
        );
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    let c = toolscore(d, &["compare", "ra/same", "rb/same", "--json", "c.json"]);
    let json = support::read_json(&d.join("c.json"));
    assert_eq!(json["axis"], "run", "{json}");
    assert!(
        c.stdout
            .contains("A = run same (ra/same) · B = run same (rb/same)"),
        "{}",
        c.stdout
    );
    assert!(
        c.stdout.contains("infrastructure (run same (ra/same)): ")
            && c.stdout.contains("infrastructure (run same (rb/same)): "),
        "{}",
        c.stdout
    );
}
