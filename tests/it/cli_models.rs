//! LiteLLM's model map through the binary: `toolscore models` says what toolscore knows of a
//! model and where each fact comes from; `plan` prices a model only the map knows; a map file
//! named by `model_map:` in toolscore.yaml wins over the snapshot built in, and a file that is
//! not a map is refused (exit 2) naming it.

use crate::support;

use serde_json::Value;
use support::toolscore;

/// The snapshot's name in every source it gives (crates/provider/model-map/VERSION).
const SNAPSHOT: &str = "LiteLLM model map 1.110.2 of 2026-12-08";

fn models_json(dir: &std::path::Path, names: &[&str]) -> Vec<Value> {
    let mut args = vec!["models"];
    args.extend_from_slice(names);
    args.extend(["--format", "json"]);
    let r = toolscore(dir, &args);
    assert_eq!(r.code, 0, "{}", r.transcript());
    serde_json::from_str::<Vec<Value>>(&r.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", r.stdout))
}

#[test]
fn models_says_each_fact_and_its_source() {
    let dir = tempfile::tempdir().expect("tempdir");
    let facts = models_json(
        dir.path(),
        &[
            "anthropic:claude-opus-4-7",
            "anthropic:claude-sonnet-4",
            "openai-compat:no-such-model",
        ],
    );
    let opus = &facts[0];
    assert_eq!(
        (opus["kind"].as_str(), opus["model"].as_str()),
        (Some("anthropic"), Some("claude-opus-4-7"))
    );
    assert_eq!(
        (
            opus["price"]["input"].as_f64(),
            opus["price"]["output"].as_f64()
        ),
        (Some(5.0), Some(25.0))
    );
    assert_eq!(opus["price"]["batch_discount"], 0.5);
    assert_eq!(
        opus["price"]["source"],
        format!("{SNAPSHOT} (claude-opus-4-7)")
    );
    assert_eq!(opus["map"]["function_calling"], true);
    assert_eq!(opus["map"]["sampling_params"], false);
    assert_eq!(opus["map"]["max_input_tokens"], 1_000_000);
    assert_eq!(opus["refuses"][0]["field"], "temperature");
    assert!(
        opus["refuses"][0]["source"]
            .as_str()
            .is_some_and(|s| s.starts_with("capability table ")),
        "{opus}"
    );
    // Absent from the map under its name: the hand-kept table prices it.
    let sonnet4 = &facts[1];
    assert!(sonnet4["map"].is_null(), "{sonnet4}");
    assert!(
        sonnet4["price"]["source"]
            .as_str()
            .is_some_and(|s| s.starts_with("price table 2026-")),
        "{sonnet4}"
    );
    // Unknown everywhere: said, not guessed.
    assert!(
        facts[2]["price"].is_null() && facts[2]["map"].is_null(),
        "{}",
        facts[2]
    );

    let text = toolscore(dir.path(), &["models", "anthropic:claude-opus-4-7"]);
    assert_eq!(text.code, 0, "{}", text.transcript());
    for line in [
        "anthropic:claude-opus-4-7",
        "  price              $5.00 in, $25.00 out a million tokens; cache read $0.500, cache write $6.25; batch 50% off",
        "  sampling params    no",
    ] {
        assert!(
            text.stdout.lines().any(|l| l == line),
            "{line:?} in:\n{}",
            text.stdout
        );
    }
}

/// `plan --provider anthropic:claude-opus-4-7` was unpriced by the hand-kept table; the map
/// prices it.
#[test]
fn plan_prices_a_model_only_the_map_knows() {
    let dir = support::project_copy();
    let r = toolscore(
        dir.path(),
        &[
            "plan",
            "--dataset",
            "datasets/billing",
            "--provider",
            "anthropic:claude-opus-4-7",
            "--gate",
            "selection>=0.8",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(!r.stderr.contains("no price"), "{}", r.stderr);
    assert!(r.stdout.contains(SNAPSHOT), "{}", r.stdout);
}

/// A map file named in toolscore.yaml wins over the snapshot for the models it lists, and the
/// snapshot still prices the rest; a file that is not LiteLLM's map is refused, naming it.
#[test]
fn a_map_file_in_the_config_overrides_the_snapshot() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("map.json"),
        r#"{"claude-sonnet-5": {"litellm_provider": "anthropic", "mode": "chat",
             "input_cost_per_token": 7e-06, "output_cost_per_token": 3.5e-05,
             "supports_function_calling": true}}"#,
    )
    .expect("map");
    std::fs::write(dir.path().join("toolscore.yaml"), "model_map: map.json\n").expect("config");
    let facts = models_json(
        dir.path(),
        &["anthropic:claude-sonnet-5", "anthropic:claude-haiku-5-5"],
    );
    assert_eq!(facts[0]["price"]["input"], 7.0);
    let source = facts[0]["price"]["source"].as_str().expect("source");
    assert!(
        source.contains("map.json") && source.ends_with("(claude-sonnet-5)"),
        "{source}"
    );
    assert!(
        facts[0]["map"]["source"]
            .as_str()
            .is_some_and(|s| s.contains("map.json"))
    );
    // Not in the user's map: the snapshot's.
    assert!(
        facts[1]["price"]["source"]
            .as_str()
            .is_some_and(|s| s.starts_with(SNAPSHOT)),
        "{}",
        facts[1]
    );

    std::fs::write(dir.path().join("map.json"), "[]").expect("not a map");
    let r = toolscore(dir.path(), &["models", "anthropic:claude-sonnet-5"]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(
        r.stderr.contains("map.json") && r.stderr.contains("is not a JSON object of models"),
        "{}",
        r.stderr
    );
}

/// What the map says a model cannot take is refused before any request (exit 2, no request
/// sent): a model that calls no functions, and `tool_choice` for a model without it. A model
/// the map says nothing of is run as before.
#[test]
fn what_the_map_says_a_model_cannot_take_is_refused_before_any_request() {
    let server = support::FakeServer::start_in_background(|_| {
        support::FakeResponse::ok(support::tool_call_body(&[("lookup", "{}")]))
    });
    let tools = r#"{"tools": [{"name": "lookup", "description": "Look something up.", "inputSchema": {"type": "object", "properties": {}}}]}"#;
    let cases = r#"{"id": "c1", "messages": [{"role": "user", "content": "look it up"}], "expect": {"tool": "lookup"}}"#;
    let map = r#"{"text-only": {"mode": "chat", "supports_function_calling": false},
                  "no-choice": {"mode": "chat", "supports_function_calling": true, "supports_tool_choice": false}}"#;
    let dir = support::fake_project(&server.base_url, tools, cases, &[("map.json", map)]);
    let config = dir.path().join("toolscore.yaml");
    let text = std::fs::read_to_string(&config).expect("config") + "model_map: map.json\n";
    std::fs::write(&config, text).expect("config");
    let run = |model: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            "--provider",
            "fake",
            "--model",
            model,
            "--trials",
            "1",
            "--progress",
            "off",
        ];
        args.extend_from_slice(extra);
        toolscore(dir.path(), &args)
    };
    let r = run("text-only", &[]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(
        r.stderr
            .contains("provider `fake`: model text-only calls no functions (the model map ")
            && r.stderr
                .contains("map.json: supports_function_calling false, text-only)"),
        "{}",
        r.stderr
    );
    let r = run("no-choice", &["--tool-choice", "required"]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(
        r.stderr.contains("model no-choice takes no tool_choice (")
            && r.stderr.contains("remove tool_choice (--tool-choice)"),
        "{}",
        r.stderr
    );
    assert_eq!(server.requests_seen(), 0, "refused before any request");
    // Without the field it lacks, the model runs.
    let r = run("no-choice", &[]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(server.requests_seen(), 1);
}

/// A map file's keys and a price's source reach the terminal inert: an escape code in a key
/// is written out, never sent to the terminal.
#[test]
fn what_a_map_file_says_is_printed_inert() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("map.json"),
        "{\"openai/x\\u001b[2J\": {\"input_cost_per_token\": 1e-06, \"output_cost_per_token\": 2e-06}}",
    )
    .expect("map");
    std::fs::write(dir.path().join("toolscore.yaml"), "model_map: map.json\n").expect("config");
    let r = toolscore(dir.path(), &["models", "openai-compat:x\u{1b}[2J"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(!r.stdout.contains('\u{1b}'), "{:?}", r.stdout);
    assert!(r.stdout.contains("\\u{1b}[2J"), "{}", r.stdout);
}
