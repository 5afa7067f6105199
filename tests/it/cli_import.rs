//! `toolscore import bfcl` through the binary, on a few real BFCL lines (tests/data/bfcl-mini):
//! counts and skip reasons, no overwrite without --force, the datasets load in `validate`, and a
//! `run` against a fake OpenAI server shows each case only its own functions and scores it by
//! BFCL's rules.

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use support::*;

fn mini() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/bfcl-mini")
        .display()
        .to_string()
}

fn import(dir: &Path, extra: &[&str]) -> Run {
    let data = mini();
    let mut args = vec![
        "import",
        "bfcl",
        "--data",
        &data,
        "--category",
        "simple_python",
        "--category",
        "parallel",
        "--category",
        "live_irrelevance",
    ];
    args.extend_from_slice(extra);
    toolscore(dir, &args)
}

#[test]
fn import_counts_refuses_to_overwrite_and_validates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = import(dir.path(), &[]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let lines: Vec<Vec<&str>> = run
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(
        lines.contains(&vec!["simple_python", "2", "0", "-"]),
        "{}",
        run.stdout
    );
    assert!(
        lines.contains(&vec!["parallel", "1", "0", "-"]),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "live_irrelevance                1        1  1 the question offers no function"
        ),
        "{}",
        run.stdout
    );

    let cases = dir.path().join("datasets/bfcl_simple_python/cases.jsonl");
    let before = std::fs::read_to_string(&cases).expect("cases written");
    std::fs::write(&cases, "edited by hand\n").expect("edit");
    let again = import(dir.path(), &[]);
    assert_eq!(again.code, 2, "{}", again.transcript());
    assert!(
        again
            .stderr
            .contains("datasets/bfcl_simple_python already exists; pass --force to replace it"),
        "{}",
        again.stderr
    );
    assert_eq!(std::fs::read_to_string(&cases).unwrap(), "edited by hand\n");

    let forced = import(dir.path(), &["--force"]);
    assert_eq!(forced.code, 0, "{}", forced.transcript());
    assert_eq!(std::fs::read_to_string(&cases).unwrap(), before);

    let validate = toolscore(
        dir.path(),
        &[
            "validate",
            "--dataset",
            "datasets/bfcl_simple_python",
            "--dataset",
            "datasets/bfcl_parallel",
            "--dataset",
            "datasets/bfcl_live_irrelevance",
        ],
    );
    assert_eq!(validate.code, 0, "{}", validate.transcript());
    assert!(
        validate
            .stdout
            .contains("datasets/bfcl_simple_python: 2 tools, 2 cases")
    );

    let bad = toolscore(
        dir.path(),
        &["import", "bfcl", "--data", "nope", "--out", "x"],
    );
    assert_eq!(bad.code, 2, "{}", bad.transcript());
    assert!(
        bad.stderr.contains("--data nope: folder not found"),
        "{}",
        bad.stderr
    );
}

/// The tool names a request offers.
fn offered(req: &FakeRequest) -> Vec<String> {
    req.body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// `toolscore run` of imported datasets against a fake server, 2 trials each: the scores of
/// each case's trials, by case id.
fn run_scores(dir: &Path, base_url: &str, datasets: &[&str]) -> BTreeMap<String, Vec<Value>> {
    let mut args = vec![
        "run",
        "--provider",
        "openai-compat",
        "--base-url",
        base_url,
        "--model",
        "m",
        "--trials",
        "2",
        "--out",
        "out",
        "--progress",
        "off",
    ];
    for d in datasets {
        args.extend(["--dataset", d]);
    }
    let run = toolscore(dir, &args);
    // Never a usage error (2) or too many infrastructure errors (4); the plain run has no
    // gate, and 1 or 3 would only say what its figures say.
    assert!(matches!(run.code, 0 | 1 | 3), "{}", run.transcript());
    let run_dir = std::fs::read_dir(dir.join("out"))
        .expect("out")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.join("results.jsonl").is_file())
        .expect("a run folder");
    let text = std::fs::read_to_string(run_dir.join("results.jsonl")).expect("results");
    let mut scores: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for line in text.lines() {
        let r: Value = serde_json::from_str(line).expect("record");
        let id = r["case_id"].as_str().unwrap_or_default().to_owned();
        scores.entry(id).or_default().push(r["score"].clone());
    }
    scores
}

#[test]
fn imported_cases_run_with_their_own_catalog_and_bfcl_verdicts() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert_eq!(import(dir.path(), &[]).code, 0);
    let server = FakeServer::start_in_background(|req| {
        let tools = offered(req);
        let body = match tools
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice()
        {
            // An int for a float-free integer parameter and an omitted optional: passes.
            ["calculate_triangle_area"] => {
                tool_call_body(&[("calculate_triangle_area", r#"{"base":10,"height":5}"#)])
            }
            // A float for an integer: BFCL fails it, though JSON Schema's integer accepts 5.0.
            ["math_factorial"] => tool_call_body(&[("math_factorial", r#"{"number":5.0}"#)]),
            // The two parallel calls in swapped order: passes.
            ["spotify_play"] => tool_call_body(&[
                ("spotify_play", r#"{"artist":"maroon 5","duration":15}"#),
                ("spotify_play", r#"{"artist":"Taylor Swift","duration":20}"#),
            ]),
            // Irrelevance: unparseable arguments do not decode to a call, so BFCL passes it.
            [_] => tool_call_body(&[(tools[0].as_str(), r#"{"q": "#)]),
            // Any request offering another set of tools than its case's own fails the case.
            _ => text_body("wrong catalog"),
        };
        FakeResponse::ok(body)
    });
    let scores = run_scores(
        dir.path(),
        &server.base_url,
        &[
            "datasets/bfcl_simple_python",
            "datasets/bfcl_parallel",
            "datasets/bfcl_live_irrelevance",
        ],
    );
    let verdicts: BTreeMap<String, Vec<(bool, &Value)>> = scores
        .iter()
        .map(|(id, s)| {
            let v = s
                .iter()
                .map(|s| (s["passed"] == true, &s["schema_ok"]))
                .collect();
            (id.clone(), v)
        })
        .collect();
    assert_eq!(verdicts.len(), 4, "{verdicts:?}");
    assert!(
        verdicts["simple_python_0"].iter().all(|(p, _)| *p),
        "{verdicts:?}"
    );
    // Fails by BFCL's rule while the schema (integer accepts 5.0) is still valid.
    assert!(
        verdicts["simple_python_1"]
            .iter()
            .all(|(p, s)| !*p && *s == &Value::Bool(true)),
        "{verdicts:?}"
    );
    assert!(
        verdicts["parallel_0"].iter().all(|(p, _)| *p),
        "{verdicts:?}"
    );
    // Passes by BFCL's rule while the schema check fails on the unparseable arguments.
    let irrelevance = verdicts
        .iter()
        .find(|(id, _)| id.starts_with("live_irrelevance"))
        .map(|(_, v)| v)
        .expect("the irrelevance case");
    assert!(
        irrelevance
            .iter()
            .all(|(p, s)| *p && *s == &Value::Bool(false)),
        "{verdicts:?}"
    );
}

/// Java and JavaScript: the model sees every parameter as a string of source code, its type in
/// the description, and is judged by BFCL's converters of that code.
#[test]
fn java_and_javascript_cases_take_source_code_strings() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = mini();
    let import = toolscore(
        dir.path(),
        &[
            "import",
            "bfcl",
            "--data",
            &data,
            "--category",
            "simple_java",
            "--category",
            "simple_javascript",
        ],
    );
    assert_eq!(import.code, 0, "{}", import.transcript());
    let lines: Vec<Vec<&str>> = import
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(
        lines.contains(&vec!["simple_java", "2", "0", "-"]),
        "{}",
        import.stdout
    );
    assert!(
        lines.contains(&vec!["simple_javascript", "2", "0", "-"]),
        "{}",
        import.stdout
    );

    let tool_of = |dataset: &str, id: &str| -> Value {
        let text =
            std::fs::read_to_string(dir.path().join(format!("datasets/{dataset}/cases.jsonl")))
                .expect("cases written");
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("case"))
            .find(|c| c["id"] == id)
            .map(|c| c["catalog"]["tools"][0]["function"].clone())
            .expect("the case")
    };
    let ids = &tool_of("bfcl_simple_java", "simple_java_22")["parameters"]["properties"]["ids"];
    assert_eq!(ids["type"], "string");
    assert_eq!(ids.get("items"), None);
    assert_eq!(
        ids["description"],
        "A list of product IDs to update the new status for. Product ID is Long type This is Java \
         ArrayList type parameter in string representation. The list elements are of type long; \
         they are not in string representation."
    );
    let chart = tool_of("bfcl_simple_javascript", "simple_javascript_14");
    assert!(
        chart["description"].as_str().is_some_and(
            |d| d.ends_with("Note that the provided function is in JavaScript syntax.")
        ),
        "{chart}"
    );
    // The dict's schema as Python's json.dumps prints it, keys in the file's order (nm, mn).
    assert_eq!(
        chart["parameters"]["properties"]["chart"]["description"],
        "The details of the chart component. This is JavaScript dict type parameter in string \
         representation. The dictionary entries have the following schema; they are not in \
         string representation. {\"nm\": {\"type\": \"String\", \"description\": \"The name of \
         the chart component.\"}, \"mn\": {\"type\": \"String\", \"description\": \"The module \
         name of the chart component.\"}}"
    );

    let server = FakeServer::start_in_background(|req| {
        let tools = offered(req);
        let body = match tools.first().map(String::as_str) {
            Some("SQLCompletionAnalyzer_makeProposalsFromObject") => tool_call_body(&[(
                "SQLCompletionAnalyzer_makeProposalsFromObject",
                r#"{"object":"Customers","useShortName":"true","params":"new HashMap<String, Object>() {{ put(\"limit\", 50); put(\"schemaFilter\", \"public\"); }}"}"#,
            )]),
            // Longs without their `L`: BFCL's converter keeps them strings, so a fail.
            Some("PmsProductServiceImpl_updateNewStatus") => tool_call_body(&[(
                "PmsProductServiceImpl_updateNewStatus",
                r#"{"ids":"new ArrayList<>(Arrays.asList(101, 202, 303))","newStatus":"2"}"#,
            )]),
            Some("submitAtCoordinate") => tool_call_body(&[(
                "submitAtCoordinate",
                r#"{"action":"submit","formId":"loginForm","coordinates":"[60, 30]"}"#,
            )]),
            Some("chartDataAccessorFactory") => tool_call_body(&[(
                "chartDataAccessorFactory",
                r#"{"chart":"{nm: 'BarChart', mn: 'chartModule'}","library":"visualizationLibrary","configObject":"config"}"#,
            )]),
            _ => text_body("wrong catalog"),
        };
        FakeResponse::ok(body)
    });
    let scores = run_scores(
        dir.path(),
        &server.base_url,
        &[
            "datasets/bfcl_simple_java",
            "datasets/bfcl_simple_javascript",
        ],
    );
    let passed: BTreeMap<String, Vec<Option<bool>>> = scores
        .iter()
        .map(|(id, s)| {
            (
                id.clone(),
                s.iter().map(|s| s["passed"].as_bool()).collect(),
            )
        })
        .collect();
    let want = |id: &str, p: bool| passed.get(id) == Some(&vec![Some(p), Some(p)]);
    assert!(want("simple_java_1", true), "{passed:?}");
    assert!(want("simple_java_22", false), "{passed:?}");
    assert!(want("simple_javascript_3", true), "{passed:?}");
    assert!(want("simple_javascript_14", true), "{passed:?}");
}
