//! `toolscore explain`, through the binary, on the shipped recordings: its behaviour groups
//! against results.jsonl regrouped here independently, the case as the arm read it, the diff
//! of the terse-vs-base pair against `compare`'s own per-case figure, the bounds, and the
//! errors.

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{read_json, read_jsonl, toolscore};

const DEMO: &str = "datasets/billing/recordings/smollm2-135m-2026-12-02.cassette.jsonl.gz";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `toolscore run ARGS --run-id ID --out OUT` in the repository (the shipped config and
/// recordings) and returns the run folder.
fn replay(out: &Path, id: &str, args: &[&str]) -> PathBuf {
    let out_dir = out.to_str().expect("utf-8 temp path");
    let mut all = vec!["run", "--progress", "off", "--run-id", id, "--out", out_dir];
    all.extend_from_slice(args);
    let run = toolscore(root(), &all);
    assert_eq!(run.code, 0, "{}", run.transcript());
    out.join(id)
}

/// `toolscore explain ARGS --json -`, parsed.
fn explain_json(args: &[&str]) -> Value {
    let mut all = vec!["explain"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", "-"]);
    let run = toolscore(root(), &all);
    assert_eq!(run.code, 0, "{}", run.transcript());
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

/// What a fixture trial did, regrouped from its record with nothing of toolscore's: the
/// called tools sorted and joined with ` + `, or `(no call)`, and whether it passed.
fn behaviour_of(record: &Value) -> (String, bool) {
    let mut names: Vec<String> = record["turns"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|c| c["name"].as_str().unwrap_or_default().to_owned())
        .collect();
    names.sort();
    let calls = if names.is_empty() {
        "(no call)".to_owned()
    } else {
        names.join(" + ")
    };
    (calls, record["outcome"] == "pass")
}

/// Per behaviour of one (case, variant): trials and the lowest trial index.
fn regroup(results: &[Value], case: &str, variant: &str) -> BTreeMap<(String, bool), (u64, u64)> {
    let mut groups: BTreeMap<(String, bool), (u64, u64)> = BTreeMap::new();
    for r in results
        .iter()
        .filter(|r| r["case_id"] == case && r["variant"] == variant && r["outcome"] != "error")
    {
        let trial = r["trial_index"].as_u64().expect("trial_index");
        let g = groups.entry(behaviour_of(r)).or_insert((0, u64::MAX));
        g.0 += 1;
        g.1 = g.1.min(trial);
    }
    groups
}

/// The interval every rate of the reports gets, written out here from reference/stats.md
/// (§1, Wilson's score interval, and the Brown–Cai–DasGupta edge rule: for 1 ≤ x ≤ 2 when
/// n ≤ 50, else 3, the lower bound is the Poisson one where lower; symmetrically above)
/// rather than taken from the crate.
fn report_interval(x: f64, n: f64) -> (f64, f64) {
    use statrs::distribution::{ChiSquared, ContinuousCDF};
    let z = 1.959_963_984_540_054_f64;
    let p = x / n;
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z / (1.0 + z * z / n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    let (mut lo, mut hi) = (centre - half, centre + half);
    let edge = if n <= 50.0 { 2.0 } else { 3.0 };
    let poisson = |k: f64| ChiSquared::new(2.0 * k).unwrap().inverse_cdf(0.025) / 2.0 / n;
    if (1.0..=edge).contains(&x) {
        lo = lo.min(poisson(x));
    }
    if (1.0..=edge).contains(&(n - x)) {
        hi = hi.max(1.0 - poisson(n - x));
    }
    (lo.max(0.0), hi.min(1.0))
}

#[test]
fn behaviours_agree_with_results_jsonl_regrouped_independently() {
    let out = tempfile::tempdir().unwrap();
    let dir = replay(out.path(), "week-49", &["--provider", "demo"]);
    let results = read_jsonl(&dir.join("results.jsonl"));
    let dir_arg = dir.to_str().unwrap();
    let text = toolscore(root(), &["explain", dir_arg, "apply-credit-eur-decimal"]);
    assert_eq!(text.code, 0, "{}", text.transcript());
    insta::assert_snapshot!("explain_case", text.stdout);
    support::assert_guide_quotes(
        "docs/guides/weekly-score.md",
        "toolscore explain weekly/week-49 apply-credit-eur-decimal",
        &text.stdout,
    );
    for case in [
        "apply-credit-eur-decimal",
        "no-call-thanks",
        "parallel-two-quotes",
        "create-quote-basic",
        "server-status-region",
    ] {
        let json = explain_json(&[dir_arg, case]);
        let b = &json["arms"][0]["behaviours"];
        let expected = regroup(&results, case, "base");
        let scored: u64 = expected.values().map(|g| g.0).sum();
        assert_eq!(b["scored"], scored, "{case}");
        let listed = b["behaviours"].as_array().unwrap();
        assert!(listed.len() <= 8, "{case}: at most 8 behaviours listed");
        let mut counted = 0;
        for g in listed {
            let key = (g["calls"].as_str().unwrap().to_owned(), g["passed"] == true);
            let (trials, first) = expected[&key];
            let share = &g["share"];
            assert_eq!(
                (share["x"].as_u64(), share["n"].as_u64()),
                (Some(trials), Some(scored)),
                "{case} {key:?}"
            );
            let (lo, hi) = report_interval(trials as f64, scored as f64);
            assert!(
                (share["interval"]["lo"].as_f64().unwrap() - lo).abs() < 1e-9,
                "{case} {key:?}"
            );
            assert!(
                (share["interval"]["hi"].as_f64().unwrap() - hi).abs() < 1e-9,
                "{case} {key:?}"
            );
            // The example is the behaviour's lowest trial, with that trial's calls as recorded.
            assert_eq!(g["example"]["trial_index"], first, "{case} {key:?}");
            let record = results
                .iter()
                .find(|r| r["case_id"] == case && r["trial_index"] == first)
                .unwrap();
            let shown: Vec<&str> = g["example"]["turns"][0]["calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| c["tool"].as_str().unwrap())
                .collect();
            let recorded: Vec<&str> = record["turns"][0]["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| c["name"].as_str().unwrap())
                .collect();
            assert_eq!(shown, recorded, "{case} {key:?}");
            counted += trials;
        }
        // Listed by trials, most first; the rest counted, none lost.
        let trials: Vec<u64> = listed
            .iter()
            .map(|g| g["share"]["x"].as_u64().unwrap())
            .collect();
        assert!(
            trials.windows(2).all(|w| w[0] >= w[1]),
            "{case}: {trials:?}"
        );
        let rest = b["not_listed"]["trials"].as_u64().unwrap_or(0);
        assert_eq!(counted + rest, scored, "{case}");
        assert_eq!(
            listed.len() as u64 + b["not_listed"]["behaviours"].as_u64().unwrap_or(0),
            expected.len() as u64,
            "{case}"
        );
    }
}

#[test]
fn the_case_is_shown_as_each_arm_read_it_and_the_diff_matches_compare() {
    let out = tempfile::tempdir().unwrap();
    let dir = replay(
        out.path(),
        "terse-vs-base",
        &[
            "--provider",
            "demo",
            "--provider",
            "demo-terse",
            "--trials",
            "10",
        ],
    );
    let dir_arg = dir.to_str().unwrap();
    let case = "server-status-region";
    let text = toolscore(
        root(),
        &["explain", dir_arg, case, "--arm", "base", "--arm", "terse"],
    );
    assert_eq!(text.code, 0, "{}", text.transcript());
    // Each arm's catalog: the expected tool marked, its description in that arm's wording.
    let terse: Value = read_json(&root().join("datasets/billing/variants/terse.json"));
    let terse_words = terse["tools"]["get_server_status"]["description"]
        .as_str()
        .unwrap();
    let base: Value = read_json(&root().join("datasets/billing/tools.json"));
    let base_words = base["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "get_server_status")
        .unwrap()["description"]
        .as_str()
        .unwrap();
    let stdout = &text.stdout;
    insta::assert_snapshot!("explain_diff", stdout);
    support::assert_guide_quotes(
        "docs/guides/compare-descriptions.md",
        "toolscore explain reports/terse-vs-base server-status-region --arm base --arm terse",
        stdout,
    );
    assert!(stdout.contains("▸ get_server_status"), "{stdout}");
    assert!(
        stdout.contains(&format!("get_server_status: {base_words}")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("get_server_status: {terse_words}")),
        "{stdout}"
    );
    let cases = read_jsonl(&root().join("datasets/billing/cases.jsonl"));
    let fixture = cases.iter().find(|c| c["id"] == case).unwrap();
    let user = fixture["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap();
    assert!(stdout.contains(&format!("user       {user}")), "{stdout}");
    assert!(
        !stdout.contains("NOTE:"),
        "nothing changed since the run: {stdout}"
    );

    // The case's difference is compare's own line for it.
    let compared = out.path().join("compare.json");
    let run = toolscore(
        root(),
        &["compare", dir_arg, "--json", compared.to_str().unwrap()],
    );
    assert!(
        run.stdout
            .contains(&format!("toolscore explain {dir_arg} ")),
        "{}",
        run.stdout
    );
    let compare = read_json(&compared);
    let line = compare["case_differences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case_id"] == case)
        .unwrap();
    let json = explain_json(&[dir_arg, case, "--arm", "base", "--arm", "terse"]);
    let diff = &json["diff"];
    for field in ["a_x", "a_n", "b_x", "b_n", "difference", "lo", "hi"] {
        assert_eq!(diff["case"][field], line[field], "{field}");
    }
    // Every behaviour's counts in each arm, as regrouped here.
    let results = read_jsonl(&dir.join("results.jsonl"));
    let (a, b) = (
        regroup(&results, case, "base"),
        regroup(&results, case, "terse"),
    );
    for c in diff["behaviours"]["changes"].as_array().unwrap() {
        let key = (c["calls"].as_str().unwrap().to_owned(), c["passed"] == true);
        assert_eq!(
            c["a"]["x"].as_u64().unwrap(),
            a.get(&key).map_or(0, |g| g.0),
            "{key:?}"
        );
        assert_eq!(
            c["b"]["x"].as_u64().unwrap(),
            b.get(&key).map_or(0, |g| g.0),
            "{key:?}"
        );
        let change = c["change"].as_str().unwrap();
        let (lo, hi) = (
            c["interval"]["lo"].as_f64().unwrap(),
            c["interval"]["hi"].as_f64().unwrap(),
        );
        match change {
            "within_noise" => assert!(lo <= 0.0 && hi >= 0.0, "{key:?}"),
            "grew" | "new" => assert!(lo > 0.0, "{key:?}"),
            _ => assert!(hi < 0.0, "{key:?} {change}"),
        }
    }
}

#[test]
fn against_another_run_diffs_the_same_case() {
    let out = tempfile::tempdir().unwrap();
    let demo = replay(
        out.path(),
        "demo",
        &["--provider", "demo", "--trials", "10"],
    );
    let greedy = replay(
        out.path(),
        "greedy",
        &["--provider", "demo-greedy", "--trials", "3"],
    );
    let json = explain_json(&[
        demo.to_str().unwrap(),
        "get-customer-by-id",
        "--against",
        greedy.to_str().unwrap(),
    ]);
    assert_eq!(json["arms"][0]["run_id"], "demo");
    assert_eq!(json["arms"][1]["run_id"], "greedy");
    assert_eq!(json["diff"]["a"]["run_id"], "demo");
    assert_eq!(json["diff"]["b"]["run_id"], "greedy");
    assert_eq!(json["diff"]["case"]["a_n"], 10);
    assert_eq!(json["diff"]["case"]["b_n"], 3);
}

#[test]
fn a_scenario_shows_each_step_its_result_and_the_final_state() {
    let out = tempfile::tempdir().unwrap();
    let dir = replay(
        out.path(),
        "scenarios",
        &[
            "--scenario",
            "scenarios",
            "--provider",
            "demo-scenarios",
            "--format",
            "html",
        ],
    );
    // report.html's explorer has a section for each scenario, linked from its index, with
    // the steps' results and the final state.
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let sections = html.matches("<section class=\"explorer\"").count();
    assert_eq!(sections, 7, "one per shipped scenario");
    let at = html
        .find("credit-by-email · dataset scenarios")
        .expect("its section");
    let section = &html[at..at + html[at..].find("</section>").unwrap()];
    assert!(section.contains("final state: "), "{section}");
    assert!(section.contains("<ol class=\"conversation\">"), "{section}");
    let results = read_jsonl(&dir.join("results.jsonl"));
    let mut states_shown = 0;
    for scenario in [
        "credit-by-email",
        "export-then-status",
        "no-tool-needed",
        "notes-ack",
        "parallel-status",
        "refund-validation",
        "unknown-account",
    ] {
        let json = explain_json(&[dir.to_str().unwrap(), scenario]);
        let mine: Vec<&Value> = results
            .iter()
            .filter(|r| r["case_id"] == scenario)
            .collect();
        let b = &json["arms"][0]["behaviours"];
        assert_eq!(b["scored"].as_u64().unwrap(), mine.len() as u64);
        for g in b["behaviours"].as_array().unwrap() {
            let first = g["example"]["trial_index"].as_u64().unwrap();
            let record = mine.iter().find(|r| r["trial_index"] == first).unwrap();
            let executed = record["trajectory"]["calls"].as_array().unwrap();
            let tools: Vec<&str> = executed
                .iter()
                .map(|c| c["tool"].as_str().unwrap())
                .collect();
            let calls = g["calls"].as_str().unwrap();
            let sequence = if tools.is_empty() {
                "(no call)".to_owned()
            } else {
                tools.join(" → ")
            };
            assert!(
                calls.starts_with(&format!("{sequence} · ")),
                "{calls} vs {sequence}"
            );
            // Each executed call with its result and, when it changed the state, the state
            // right after it; then the final state.
            let shown = g["example"]["results"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            assert_eq!(shown.len(), tools.len(), "{scenario}");
            for (r, c) in shown.iter().zip(executed) {
                assert_eq!(r["tool"], c["tool"]);
                match c.get("state") {
                    Some(state) => {
                        assert_eq!(r["state"], state.to_string(), "{scenario}");
                        states_shown += 1;
                    }
                    None => assert!(r.get("state").is_none(), "{scenario}"),
                }
            }
            let recorded = &record["trajectory"]["final_state"];
            let expected = match recorded {
                Value::Null => Value::Null,
                state => state.to_string().into(),
            };
            assert_eq!(g["example"]["final_state"], expected, "{scenario}");
        }
    }
    assert!(states_shown > 0, "some example changed the state");
    let json = explain_json(&[dir.to_str().unwrap(), "credit-by-email"]);
    let shown = &json["arms"][0]["shown"];
    assert_eq!(shown["source"], "scenarios/credit-by-email.yaml");
    assert_eq!(shown["tools"].as_array().unwrap().len(), 11);
}

#[test]
fn a_changed_catalog_is_said_and_an_unknown_case_names_the_closest() {
    let project = tempfile::tempdir().unwrap();
    let copy = |rel: &str| {
        let to = project.path().join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(root().join(rel), to).unwrap();
    };
    for rel in [
        "datasets/billing/tools.json",
        "datasets/billing/cases.jsonl",
        DEMO,
    ] {
        copy(rel);
    }
    let run = toolscore(
        project.path(),
        &[
            "run",
            "--provider",
            &format!("replay:{DEMO}"),
            "--dataset",
            "datasets/billing",
            "--run-id",
            "r",
            "--progress",
            "off",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let explain = |case: &str| toolscore(project.path(), &["explain", "reports/r", case]);
    let before = explain("get-customer-by-id");
    assert_eq!(before.code, 0, "{}", before.transcript());
    assert!(!before.stdout.contains("NOTE:"), "{}", before.stdout);

    let tools = project.path().join("datasets/billing/tools.json");
    let text = std::fs::read_to_string(&tools).unwrap();
    std::fs::write(
        &tools,
        text.replacen("Look up one customer", "Find one customer", 1),
    )
    .unwrap();
    let after = explain("get-customer-by-id");
    assert_eq!(after.code, 0, "{}", after.transcript());
    assert!(
        after
            .stdout
            .contains("NOTE: the catalog changed since the run"),
        "{}",
        after.stdout
    );

    let unknown = explain("get-customer-id");
    assert_eq!(unknown.code, 2, "{}", unknown.transcript());
    assert!(
        unknown.stderr.contains("run r has no case get-customer-id"),
        "{}",
        unknown.stderr
    );
    assert!(
        unknown.stderr.contains("get-customer-by-id"),
        "{}",
        unknown.stderr
    );
    let arm = toolscore(
        project.path(),
        &[
            "explain",
            "reports/r",
            "get-customer-by-id",
            "--arm",
            "nope",
        ],
    );
    assert_eq!(arm.code, 2, "{}", arm.transcript());
    assert!(
        arm.stderr.contains("--arm nope: no arm of run r"),
        "{}",
        arm.stderr
    );
}

#[test]
fn raw_responses_are_the_cassette_s_own_bodies_or_said_to_be_missing() {
    let out = tempfile::tempdir().unwrap();
    let dir = replay(out.path(), "demo", &["--provider", "demo", "--trials", "5"]);
    let json = explain_json(&[dir.to_str().unwrap(), "get-customer-by-id", "--raw"]);
    // The cassette, read here: (request hash, trial, step) → body.
    let file = std::fs::File::open(root().join(DEMO)).unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::MultiGzDecoder::new(file), &mut text).unwrap();
    let bodies: BTreeMap<(String, u64, u64), String> = text
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|e| {
            let key = (
                e["request_hash"].as_str().unwrap().to_owned(),
                e["trial_index"].as_u64().unwrap(),
                e["step"].as_u64().unwrap(),
            );
            (key, e["body"].as_str().unwrap_or_default().to_owned())
        })
        .collect();
    let behaviours = json["arms"][0]["behaviours"]["behaviours"]
        .as_array()
        .unwrap();
    assert!(!behaviours.is_empty());
    for b in behaviours {
        let e = &b["example"];
        let key = (
            e["request_hash"].as_str().unwrap().to_owned(),
            e["trial_index"].as_u64().unwrap(),
            0,
        );
        assert_eq!(e["raw"][0].as_str().unwrap(), bodies[&key], "{key:?}");
    }

    // A live run kept no body: said, not invented.
    let server = support::FakeServer::start_in_background(|_| {
        support::FakeResponse::ok(support::tool_call_body(&[("lookup", "{}")]))
    });
    let tools = r#"{"tools": [{"name": "lookup", "description": "Look it up.", "inputSchema": {"type": "object"}}]}"#;
    let cases = r#"{"id": "c1", "messages": [{"role": "user", "content": "look"}], "expect": {"tool": "lookup"}}"#;
    let project = support::fake_project(&server.base_url, tools, &format!("{cases}\n"), &[]);
    let run = toolscore(
        project.path(),
        &[
            "run",
            "--trials",
            "2",
            "--run-id",
            "live",
            "--progress",
            "off",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let text = toolscore(project.path(), &["explain", "reports/live", "c1", "--raw"]);
    assert_eq!(text.code, 0, "{}", text.transcript());
    assert!(
        text.stdout
            .contains("raw responses: not available: the run kept no raw response"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("1. lookup  pass"), "{}", text.stdout);
}

/// A model that answers every trial differently and at length: 30 trials, each calling a tool
/// of its own with a 200 KB argument, or answering 1 MB of text. Everything the explainers
/// print stays within their stated bounds, and says what it cut.
#[test]
fn every_listing_and_example_is_bounded_however_the_model_answers() {
    let seen = std::sync::atomic::AtomicUsize::new(0);
    let server = support::FakeServer::start_in_background(move |_| {
        let n = seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if n.is_multiple_of(3) {
            support::FakeResponse::ok(support::text_body(&format!(
                "{n} {}",
                "words ".repeat(170_000)
            )))
        } else {
            let args = format!(r#"{{"q": "{n}{}"}}"#, "x".repeat(200_000));
            support::FakeResponse::ok(support::tool_call_body(&[(&format!("tool_{n}"), &args)]))
        }
    });
    let tools: Vec<String> = (0..40)
        .map(|i| format!(r#"{{"name": "tool_{i}", "description": "Tool {i}.", "inputSchema": {{"type": "object"}}}}"#))
        .collect();
    let tools = format!(r#"{{"tools": [{}]}}"#, tools.join(","));
    let cases = r#"{"id": "c1", "messages": [{"role": "user", "content": "go"}], "expect": {"tool": "tool_0"}}"#;
    let project = support::fake_project(&server.base_url, &tools, &format!("{cases}\n"), &[]);
    let run = toolscore(
        project.path(),
        &[
            "run",
            "--trials",
            "30",
            "--concurrency",
            "1",
            "--run-id",
            "big",
            "--progress",
            "off",
            "--format",
            "md",
            "--format",
            "html",
        ],
    );
    assert!(run.code <= 1, "{}", run.transcript());
    let out = toolscore(
        project.path(),
        &["explain", "reports/big", "c1", "--json", "-"],
    );
    assert_eq!(out.code, 0, "{}", out.transcript());
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    let b = &json["arms"][0]["behaviours"];
    let listed = b["behaviours"].as_array().unwrap();
    assert_eq!(listed.len(), 8, "at most 8 behaviours listed");
    let rest = &b["not_listed"];
    let counted: u64 = listed
        .iter()
        .map(|g| g["share"]["x"].as_u64().unwrap())
        .sum::<u64>()
        + rest["trials"].as_u64().unwrap();
    assert_eq!(counted, 30, "every trial listed or counted");
    for g in listed {
        for v in g["variants"].as_array().unwrap() {
            let what = v["what"].as_str().unwrap();
            assert!(what.len() <= 600 + 40, "a variant of {} bytes", what.len());
        }
        for turn in g["example"]["turns"].as_array().unwrap() {
            let text = turn["text"].as_str().unwrap_or_default();
            assert!(
                text.len() <= 600 + 40,
                "an example text of {} bytes",
                text.len()
            );
            for c in turn["calls"].as_array().into_iter().flatten() {
                let args = c["arguments"].as_str().unwrap();
                assert!(
                    args.len() <= 600 + 40 && args.ends_with("more bytes cut)"),
                    "{}",
                    args.len()
                );
            }
        }
    }
    // The terminal says what it left out; the reports stay small.
    let text = toolscore(project.path(), &["explain", "reports/big", "c1"]);
    assert!(
        text.stdout.contains("more behaviours in"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.len() < 20_000,
        "explain printed {} bytes",
        text.stdout.len()
    );
    let md = std::fs::read_to_string(project.path().join("reports/big/report.md")).unwrap();
    assert!(md.chars().count() <= 65_000);
    assert!(
        md.contains("<details><summary>What the model did in c1"),
        "{md}"
    );
    let html = std::fs::read_to_string(project.path().join("reports/big/report.html")).unwrap();
    assert!(html.len() < 200_000, "report.html is {} bytes", html.len());
}

/// A variant that renames the tool: the model calls it by each arm's name, and the diff
/// matches the two as one behaviour, named as the base catalog names it.
#[test]
fn a_diff_matches_behaviours_across_a_variant_s_rename() {
    // Calls the first tool of whatever catalog it is sent.
    let server = support::FakeServer::start_in_background(|req| {
        let name = req.body["tools"][0]["function"]["name"]
            .as_str()
            .unwrap_or("none")
            .to_owned();
        support::FakeResponse::ok(support::tool_call_body(&[(&name, "{}")]))
    });
    let tools = r#"{"tools": [{"name": "lookup", "description": "Look it up.", "inputSchema": {"type": "object"}}]}"#;
    let cases = r#"{"id": "c1", "messages": [{"role": "user", "content": "look"}], "expect": {"tool": "lookup"}}"#;
    let overlay = r#"{"tools": {"lookup": {"rename": "find"}}}"#;
    let project = support::fake_project(
        &server.base_url,
        tools,
        &format!("{cases}\n"),
        &[("data/variants/renamed.json", overlay)],
    );
    let run = toolscore(
        project.path(),
        &[
            "run",
            "--variant",
            "base",
            "--variant",
            "renamed",
            "--trials",
            "4",
            "--run-id",
            "r",
            "--progress",
            "off",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let out = toolscore(
        project.path(),
        &[
            "explain",
            "reports/r",
            "c1",
            "--arm",
            "base",
            "--arm",
            "renamed",
            "--json",
            "-",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.transcript());
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    // Each arm shows what its model called.
    assert_eq!(
        json["arms"][0]["behaviours"]["behaviours"][0]["calls"],
        "lookup"
    );
    assert_eq!(
        json["arms"][1]["behaviours"]["behaviours"][0]["calls"],
        "find"
    );
    let changes = json["diff"]["behaviours"]["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0]["calls"], "lookup");
    assert_eq!(
        (changes[0]["a"]["x"].as_u64(), changes[0]["b"]["x"].as_u64()),
        (Some(4), Some(4))
    );
    assert_eq!(changes[0]["change"], "within_noise");
}

/// Behaviours are a function of the records, not of how a run was split or in which order
/// its trials finished: the run in one piece and the same plan run as 3 shards and merged
/// explain every case alike.
#[test]
fn a_merged_run_explains_every_case_as_the_whole_run_does() {
    let out = tempfile::tempdir().unwrap();
    let whole = replay(
        out.path(),
        "whole",
        &["--provider", "demo", "--trials", "6"],
    );
    let mut shards = Vec::new();
    for i in 0..3 {
        let shard = format!("{i}/3");
        let dir = replay(
            out.path(),
            &format!("s{i}"),
            &["--provider", "demo", "--trials", "6", "--shard", &shard],
        );
        shards.push(dir.to_str().unwrap().to_owned());
    }
    let merged = out.path().join("merged");
    let mut args: Vec<&str> = vec!["merge"];
    args.extend(shards.iter().map(String::as_str));
    args.extend(["--out", merged.to_str().unwrap()]);
    let run = toolscore(root(), &args);
    assert_eq!(run.code, 0, "{}", run.transcript());
    for case in [
        "apply-credit-eur-decimal",
        "parallel-two-quotes",
        "no-call-thanks",
        "get-customer-by-id",
    ] {
        let a = explain_json(&[whole.to_str().unwrap(), case]);
        let b = explain_json(&[merged.to_str().unwrap(), case]);
        assert_eq!(
            a["arms"][0]["behaviours"], b["arms"][0]["behaviours"],
            "{case}"
        );
    }
}

/// `explain RUN CASE` from another folder: the paths a run records are relative to where it
/// was made, and are found from the run folder's ancestors (the project that holds it).
#[test]
fn a_run_is_explained_from_any_folder() {
    let project = support::project_copy();
    let run = toolscore(
        project.path(),
        &[
            "run",
            "--provider",
            "demo",
            "--trials",
            "2",
            "--run-id",
            "r",
            "--progress",
            "off",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let run_dir = project.path().join("reports/r");
    let elsewhere = tempfile::tempdir().unwrap();
    let text = toolscore(
        elsewhere.path(),
        &["explain", run_dir.to_str().unwrap(), "server-status-region"],
    );
    assert_eq!(text.code, 0, "{}", text.transcript());
    assert!(!text.stdout.contains("not available"), "{}", text.stdout);
    assert!(
        text.stdout.contains("▸ get_server_status"),
        "{}",
        text.stdout
    );
}
