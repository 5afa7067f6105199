//! One decision, told the same way everywhere (issue 40), as metamorphic relations through the
//! binary on small runs:
//!
//! 1. swapping two arms' order mirrors every B − A (sign, interval, better ↔ worse, counts)
//!    and changes nothing else, fixed and sequential alike;
//! 2. `report` and `compare` on a run's folder reproduce its decision exactly;
//! 3. every surface (terminal, report.md, report.html, junit.xml, summary.json, history) leads
//!    with the verdict the exit code reports, for gates, a comparison, an infrastructure stop
//!    and a budget stop, alone and together;
//! 4. a merged run decides as the whole run does (`shards.rs` checks the merged summary,
//!    decision included, field by field; here with a gate failing on both).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{
    self, FakeResponse, FakeServer, last_user_message, read_json, text_body, tool_call_body,
    toolscore,
};

/// What each exit code means, as the decision's headline words it.
fn verdict_of(code: i32) -> &'static str {
    match code {
        0 => "PASS",
        1 => "FAIL",
        3 => "INCONCLUSIVE",
        4 => "NOT JUDGED",
        130 => "INTERRUPTED",
        other => panic!("no verdict exits {other}"),
    }
}

/// Every surface of a finished run leads with the verdict its exit code reports.
fn assert_every_surface_says(dir: &Path, run_dir: &Path, run: &support::Run) {
    let word = verdict_of(run.code);
    let headline = format!("verdict: {word} (exit {})", run.code);
    // The terminal: the decision block comes before any gate or comparison block.
    let first_verdict = run
        .stdout
        .lines()
        .find(|l| l.starts_with("verdict: ") || l.starts_with("gate ("))
        .unwrap_or_default();
    assert_eq!(first_verdict, headline, "{}", run.transcript());
    let summary = read_json(&run_dir.join("summary.json"));
    assert_eq!(summary["decision"]["exit_code"], run.code, "{summary:#}");
    let rel = run_dir
        .strip_prefix(dir)
        .expect("run dir under the project");
    let rel = rel.to_str().expect("utf-8");
    let report = toolscore(
        dir,
        &[
            "report", rel, "--format", "md", "--format", "html", "--format", "junit",
        ],
    );
    assert_eq!(report.code, run.code, "{}", report.transcript());
    let md = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
    let first_heading = md
        .lines()
        .find(|l| l.starts_with("## "))
        .unwrap_or_default();
    assert_eq!(
        first_heading,
        format!("## Verdict: {word} (exit {})", run.code),
        "{md}"
    );
    let html = std::fs::read_to_string(run_dir.join("report.html")).expect("report.html");
    let badge = html
        .split("<span class=\"badge ")
        .nth(1)
        .and_then(|b| b.split('>').nth(1))
        .and_then(|b| b.split('<').next())
        .unwrap_or_default();
    assert_eq!(badge, format!("{word} (exit {})", run.code), "first badge");
    // Its style says the same: only a FAIL (or BELOW) wears the fail colour; a run that was not
    // judged or was interrupted decided nothing, and wears none.
    let class = html
        .split("<span class=\"badge ")
        .nth(1)
        .and_then(|b| b.split('"').next())
        .unwrap_or_default();
    let expected_class = match run.code {
        0 => "pass",
        1 => "fail",
        3 => "inconclusive",
        _ => "none",
    };
    assert_eq!(class, expected_class, "the badge of {word}");
    let junit = std::fs::read_to_string(run_dir.join("junit.xml")).expect("junit.xml");
    let decision_case = junit
        .split("<testsuite name=\"toolscore decision\"")
        .nth(1)
        .expect("the decision is junit's first suite");
    assert!(
        junit.find("toolscore decision") < junit.find("<testcase name=\"")
            && decision_case.contains(&headline),
        "{junit}"
    );
    let (failure, skipped, error) = (
        decision_case.contains("<failure"),
        decision_case.contains("<skipped"),
        decision_case.contains("<error"),
    );
    let expected = match run.code {
        0 => (false, false, false),
        1 => (true, false, false),
        3 => (false, true, false),
        _ => (false, false, true),
    };
    let first_case_status = (
        failure && decision_case.find("<failure") < decision_case.find("</testsuite>"),
        skipped && decision_case.find("<skipped") < decision_case.find("</testsuite>"),
        error && decision_case.find("<error") < decision_case.find("</testsuite>"),
    );
    assert_eq!(first_case_status, expected, "{decision_case}");
    let history =
        std::fs::read_to_string(run_dir.parent().unwrap().join("history.jsonl")).expect("history");
    let last: Value = serde_json::from_str(history.lines().last().unwrap()).expect("line");
    assert_eq!(
        last["verdict"], summary["decision"]["verdict"],
        "history records the run's verdict"
    );
}

const TOOLS: &str = r#"{"tools": [
  {"name": "lookup", "description": "Look something up.", "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false}}
]}"#;

fn cases(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "{{\"id\": \"c{i}\", \"messages\": [{{\"role\": \"user\", \"content\": \"c{i}\"}}], \"expect\": {{\"tool\": \"lookup\"}}}}\n"
            )
        })
        .collect()
}

/// A project with providers `good` (always calls `lookup`), `bad` (never does), `half` (right in
/// cases c0…c{n/2-1} only) and `down` (HTTP 500 on every request), all one fake server told
/// apart by model name.
fn project(cases_n: usize) -> (FakeServer, tempfile::TempDir) {
    let server = FakeServer::start_in_background(move |req| {
        let model = req.body["model"].as_str().unwrap_or_default().to_owned();
        let case: usize = last_user_message(req)
            .unwrap_or_default()
            .trim_start_matches('c')
            .parse()
            .unwrap_or(0);
        let right = match model.as_str() {
            "good" => true,
            "half" => case < cases_n / 2,
            "down" => return FakeResponse::status(500, "{\"error\": {\"message\": \"down\"}}"),
            _ => false,
        };
        FakeResponse::ok(if right {
            tool_call_body(&[("lookup", "{}")])
        } else {
            text_body("no idea")
        })
    });
    let dir = support::fake_project(&server.base_url, TOOLS, &cases(cases_n), &[]);
    let providers: String = ["good", "bad", "half", "down"]
        .iter()
        .map(|m| {
            format!(
                "  {m}:\n    kind: openai-compat\n    base_url: {}\n    model: {m}\n    max_retries: 0\n    max_tokens: 10\n",
                server.base_url
            )
        })
        .collect();
    std::fs::write(
        dir.path().join("toolscore.yaml"),
        format!(
            "providers:\n{providers}prices:\n  good: {{input: 10000, output: 10000}}\n  bad: {{input: 10000, output: 10000}}\ndatasets: [data]\n"
        ),
    )
    .expect("config");
    (server, dir)
}

/// A cap between the estimate of `good`'s 48 trials and what they reserve at their worst case
/// (the request's bytes in, max_tokens out): the run is cut short.
const BUDGET: &str = "30";

fn run_in(dir: &Path, run_id: &str, args: &[&str]) -> (support::Run, PathBuf) {
    let mut all = vec![
        "run",
        "--out",
        "out",
        "--run-id",
        run_id,
        "--progress",
        "off",
        "--concurrency",
        "2",
    ];
    all.extend_from_slice(args);
    (toolscore(dir, &all), dir.join("out").join(run_id))
}

#[test]
fn every_surface_leads_with_the_verdict_the_exit_code_reports() {
    let (_server, project) = project(6);
    let dir = project.path();
    // (run id, flags, exit code): gates alone, a comparison alone, both, an infrastructure
    // stop under a passing gate, a budget stop.
    let runs: &[(&str, &[&str], i32)] = &[
        (
            "gate-pass",
            &[
                "--provider",
                "good",
                "--trials",
                "8",
                "--gate",
                "selection>=0.5",
            ],
            0,
        ),
        (
            "gate-fail",
            &[
                "--provider",
                "bad",
                "--trials",
                "8",
                "--gate",
                "selection>=0.5",
            ],
            1,
        ),
        (
            "gate-open",
            &[
                "--provider",
                "half",
                "--trials",
                "4",
                "--gate",
                "selection>=0.5",
            ],
            3,
        ),
        (
            "compare-decided",
            &[
                "--provider",
                "good",
                "--provider",
                "bad",
                "--trials",
                "8",
                "--compare",
            ],
            0,
        ),
        (
            "gate-pass-compare-open",
            &[
                "--provider",
                "half",
                "--provider",
                "good",
                "--trials",
                "2",
                "--compare",
                "--gate",
                "selection>=0.01",
            ],
            3,
        ),
        (
            "infra-under-a-gate",
            &[
                "--provider",
                "down",
                "--trials",
                "2",
                "--gate",
                "selection>=0.1",
            ],
            4,
        ),
        (
            "budget",
            &["--provider", "good", "--trials", "8", "--max-cost", BUDGET],
            0,
        ),
        (
            "budget-under-a-failing-gate",
            &[
                "--provider",
                "bad",
                "--trials",
                "8",
                "--max-cost",
                BUDGET,
                "--gate",
                "selection>=0.5",
            ],
            1,
        ),
    ];
    for (id, flags, code) in runs {
        let (run, run_dir) = run_in(dir, id, flags);
        assert_eq!(run.code, *code, "{id}: {}", run.transcript());
        assert_every_surface_says(dir, &run_dir, &run);
        let summary = read_json(&run_dir.join("summary.json"));
        let parts: Vec<&str> = summary["decision"]["grounds"]
            .as_array()
            .expect("grounds")
            .iter()
            .map(|g| g["part"].as_str().unwrap_or_default())
            .collect();
        match *id {
            "gate-pass-compare-open" => {
                assert_eq!(parts, ["gates", "comparison", "infrastructure"], "{id}");
                // The gate passed, the comparison did not decide: the run is inconclusive and
                // every surface says so before it shows the gate's PASS.
                assert!(run.stdout.contains("gates: PASS"), "{}", run.stdout);
            }
            "infra-under-a-gate" => assert!(
                run.stderr.contains(
                    "ended in infrastructure errors (limit 10%); the scores cannot be trusted"
                ),
                "{}",
                run.stderr
            ),
            "budget" => assert_eq!(parts, ["infrastructure", "budget"], "{id}: {summary:#}"),
            // A budget stop changes nothing: the failed gate is the verdict.
            "budget-under-a-failing-gate" => assert_eq!(
                parts,
                ["gates", "infrastructure", "budget"],
                "{id}: {summary:#}"
            ),
            _ => {}
        }
    }
}

/// `compare` on a run whose every request failed says what `run` said: nothing to judge, 4,
/// not an inconclusive comparison of no data.
#[test]
fn compare_on_a_run_that_was_not_judged_exits_4() {
    let (_server, project) = project(4);
    let dir = project.path();
    let (run, run_dir) = run_in(
        dir,
        "down",
        &[
            "--provider",
            "down",
            "--provider",
            "good",
            "--trials",
            "2",
            "--compare",
        ],
    );
    assert_eq!(run.code, 4, "{}", run.transcript());
    let compare = toolscore(dir, &["compare", "out/down", "--json", "compare.json"]);
    assert_eq!(compare.code, 4, "{}", compare.transcript());
    assert!(
        compare.stdout.starts_with("verdict: NOT JUDGED (exit 4)\n"),
        "{}",
        compare.stdout
    );
    assert!(
        compare.stderr.contains("infrastructure errors"),
        "{}",
        compare.stderr
    );
    let recorded = read_json(&run_dir.join("summary.json"))["decision"].clone();
    assert_eq!(read_json(&dir.join("compare.json"))["decision"], recorded);
}

fn seq(c: &Value, group: &str) -> (String, f64, f64, u64, u64, u64) {
    let s = &c[group]["sequential"];
    (
        s["verdict"].as_str().unwrap_or_default().to_owned(),
        s["lower"].as_f64().unwrap(),
        s["upper"].as_f64().unwrap(),
        s["counts"]["b_only"].as_u64().unwrap(),
        s["counts"]["a_only"].as_u64().unwrap(),
        s["counts"]["same"].as_u64().unwrap(),
    )
}

fn flip(v: &str) -> String {
    match v {
        "better" => "worse".to_owned(),
        "worse" => "better".to_owned(),
        other => other.to_owned(),
    }
}

/// The first arm named is A and the second B on every surface, so naming them the other way
/// round mirrors every B − A and changes nothing else; `compare` and `report` on the folder
/// reproduce the run's decision exactly.
#[test]
fn swapping_the_arms_mirrors_every_difference_and_changes_no_decision() {
    let (_server, project) = project(20);
    let dir = project.path();
    for sequential in [false, true] {
        let extra: &[&str] = if sequential { &["--sequential"] } else { &[] };
        let mut outputs = Vec::new();
        for (id, order) in [
            ("good-half", ["good", "half"]),
            ("half-good", ["half", "good"]),
        ] {
            let id = format!("{id}-{sequential}");
            let mut flags = vec![
                "--provider",
                order[0],
                "--provider",
                order[1],
                "--trials",
                "12",
                "--compare",
            ];
            flags.extend_from_slice(extra);
            let (run, run_dir) = run_in(dir, &id, &flags);
            let summary = read_json(&run_dir.join("summary.json"));
            let c = summary["comparison"].clone();
            assert_eq!(c["a"]["arm"]["provider"], order[0], "A is the first named");
            assert_eq!(c["b"]["arm"]["provider"], order[1], "B is the second named");
            // compare and report on the folder: the same decision, the same comparison.
            let rel = format!("out/{id}");
            let json = format!("{id}.json");
            let compare = toolscore(dir, &["compare", &rel, "--json", &json]);
            assert_eq!(compare.code, run.code, "{}", compare.transcript());
            let compared = read_json(&dir.join(&json));
            assert_eq!(
                compared["decision"], summary["decision"],
                "compare's decision"
            );
            let mut comparison = compared.clone();
            comparison.as_object_mut().unwrap().remove("decision");
            assert_eq!(comparison, c, "compare's comparison");
            let report = toolscore(dir, &["report", &rel, "--format", "json"]);
            assert_eq!(report.code, run.code, "{}", report.transcript());
            let reported: Value = serde_json::from_str(&report.stdout).expect("json");
            assert_eq!(
                reported["decision"], summary["decision"],
                "report's decision"
            );
            assert_eq!(reported["comparison"], c, "report's comparison");
            outputs.push((run, summary, c));
        }
        let [(run_ab, s_ab, ab), (run_ba, s_ba, ba)] = &outputs[..] else {
            unreachable!()
        };
        assert_eq!(run_ab.code, run_ba.code);
        assert_eq!(s_ab["decision"]["verdict"], s_ba["decision"]["verdict"]);
        let verdict = |c: &Value| {
            c["visible"]["verdict"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        assert_eq!(verdict(ab), "worse", "half scores below good: {ab:#}");
        assert_eq!(verdict(ba), flip(&verdict(ab)));
        // Every B − A mirrored: the paired mean and its interval, and each case's.
        let mean = |c: &Value| {
            let d = &c["visible"]["difference"];
            (
                d["mean"].as_f64().unwrap(),
                d["lo"].as_f64().unwrap(),
                d["hi"].as_f64().unwrap(),
            )
        };
        let (m, lo, hi) = mean(ab);
        assert_eq!(mean(ba), (-m, -hi, -lo), "{ab:#}\n{ba:#}");
        let cases = |c: &Value| c["case_differences"].as_array().unwrap().clone();
        for (x, y) in cases(ab).iter().zip(cases(ba)) {
            assert_eq!(x["case_id"], y["case_id"]);
            assert_eq!(
                x["difference"].as_f64().unwrap(),
                -y["difference"].as_f64().unwrap()
            );
        }
        if sequential {
            let (v, lo, hi, b_only, a_only, same) = seq(ab, "visible");
            assert_eq!(
                seq(ba, "visible"),
                (flip(&v), -hi, -lo, a_only, b_only, same),
                "the sequential comparison mirrors"
            );
            assert_eq!(v, "worse");
        }
        // The terminal names the first arm A on both.
        assert!(
            run_ab.stdout.contains("A = good (good) · B = half (half)"),
            "{}",
            run_ab.stdout
        );
        assert!(
            run_ba.stdout.contains("A = half (half) · B = good (good)"),
            "{}",
            run_ba.stdout
        );
    }
}

/// Two arms of one run that differ only in the provider's name (one recording replayed under
/// two names) are labelled by those names, not twice by the run's id.
#[test]
fn arms_that_differ_only_in_name_are_labelled_by_name() {
    let dir = support::project_copy();
    let run = toolscore(
        dir.path(),
        &[
            "run",
            "--provider",
            "demo",
            "--provider",
            "demo-priced",
            "--trials",
            "2",
            "--compare",
            "--progress",
            "off",
            "--out",
            "out",
            "--run-id",
            "names",
        ],
    );
    assert!(
        run.stdout.contains(
            "compare selection · A = demo (smollm2) · B = demo-priced (smollm2) · 95% intervals"
        ),
        "{}",
        run.transcript()
    );
    assert!(!run.stdout.contains("A = run names"), "{}", run.stdout);
    let compare = toolscore(dir.path(), &["compare", "out/names"]);
    assert!(
        compare
            .stdout
            .contains("A = demo (smollm2) · B = demo-priced (smollm2)"),
        "{}",
        compare.transcript()
    );
}
