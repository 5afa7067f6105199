//! Bad input gets a clear message naming file, line and field, exit code 2, no panic, and
//! nothing written.

mod support;

use std::path::Path;

use support::{Run, toolscore, toolscore_env};

const TOOLS: &str = r#"{"tools": [{"name": "get_quote", "description": "Fetch a quote.", "inputSchema": {"type": "object", "properties": {"quote_id": {"type": "string"}}, "required": ["quote_id"]}}]}"#;
const CASE: &str = r#"{"id": "q1", "messages": [{"role": "user", "content": "show quote qt_1"}], "expect": {"tool": "get_quote", "args": {"quote_id": "qt_1"}}}"#;

fn project(tools: &str, cases: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::write(dir.path().join("data/tools.json"), tools).unwrap();
    std::fs::write(dir.path().join("data/cases.jsonl"), cases).unwrap();
    dir
}

/// Runs against an address nothing listens on: every error here must stop the run before any
/// request is made.
fn run_args() -> Vec<&'static str> {
    vec![
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
    ]
}

fn expect_error(tools: &str, cases: &str, expected: &str) {
    let dir = project(tools, cases);
    let Run { code, stderr, .. } = toolscore(dir.path(), &run_args());
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stderr.trim_end(), expected);
    assert!(
        !dir.path().join("out").exists(),
        "nothing may be written on bad input"
    );
}

#[test]
fn invalid_json_in_cases_names_file_line_and_column() {
    expect_error(
        TOOLS,
        &format!("{CASE}\n{{\"id\": \"q2\", \"messages\": [}}\n"),
        "error: data/cases.jsonl:2:27: messages[0]: invalid fixture: expected value",
    );
}

#[test]
fn invalid_json_in_catalog_names_file_line_and_column() {
    expect_error(
        "{\"tools\": [\n  {\"name\": \"x\",}\n]}",
        CASE,
        "error: data/tools.json:2:16: invalid JSON: trailing comma",
    );
}

#[test]
fn fixture_naming_a_tool_not_in_the_catalog() {
    let case = CASE.replace("\"tool\": \"get_quote\"", "\"tool\": \"get_qoute\"");
    expect_error(
        TOOLS,
        &case,
        "error: data/cases.jsonl:1: expect.tool: case `q1`: tool `get_qoute` is not in the catalog data/tools.json (known: get_quote)",
    );
}

#[test]
fn schema_that_is_not_valid_json_schema() {
    let tools = TOOLS.replace(r#"{"type": "string"}"#, r#"{"type": "strin"}"#);
    let dir = project(&tools, CASE);
    let Run { code, stderr, .. } = toolscore(dir.path(), &run_args());
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.starts_with("error: data/tools.json:1: tools[0].inputSchema: tool `get_quote` has an invalid JSON Schema:"), "{stderr}");
}

#[test]
fn duplicate_case_ids() {
    expect_error(
        TOOLS,
        &format!("{CASE}\n\n{CASE}\n"),
        "error: data/cases.jsonl:3: id: duplicate case id `q1` (first used on line 1)",
    );
}

#[test]
fn unknown_field_is_named() {
    let case = CASE.replace("\"expect\"", "\"tags\": [], \"expected\"");
    let dir = project(TOOLS, &case);
    let Run { code, stderr, .. } = toolscore(dir.path(), &run_args());
    assert_eq!(code, 2);
    assert!(
        stderr.contains("data/cases.jsonl:1:") && stderr.contains("unknown field `expected`"),
        "{stderr}"
    );
}

#[test]
fn missing_api_key_variable_is_named_and_no_key_is_printed() {
    let dir = project(TOOLS, CASE);
    let mut args = run_args();
    args.extend(["--api-key-env", "MISSING_KEY_VAR"]);
    let Run { code, stderr, .. } = toolscore(dir.path(), &args);
    assert_eq!(code, 2);
    assert_eq!(
        stderr.trim_end(),
        "error: provider `openai-compat`: environment variable MISSING_KEY_VAR is not set (it should hold the API key)"
    );
    assert!(!dir.path().join("out").exists());
}

#[test]
fn invalid_yaml_config_names_line_and_column() {
    let dir = project(TOOLS, CASE);
    std::fs::write(
        dir.path().join("toolscore.yaml"),
        "defaults:\n  trials: many\n",
    )
    .unwrap();
    let Run { code, stderr, .. } = toolscore(dir.path(), &["validate"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.starts_with("error: toolscore.yaml:2:11: invalid config:"),
        "{stderr}"
    );
}

#[test]
fn unknown_provider_and_bad_flags_are_usage_errors() {
    let dir = project(TOOLS, CASE);
    let Run { code, stderr, .. } = toolscore(
        dir.path(),
        &["run", "--provider", "nope", "--dataset", "data"],
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains("--provider `nope` is neither a provider in the config"),
        "{stderr}"
    );
    let mut args = run_args();
    args.extend(["--trials", "0"]);
    let Run { code, stderr, .. } = toolscore(dir.path(), &args);
    assert_eq!(code, 2);
    assert_eq!(stderr.trim_end(), "error: --trials must be at least 1");
    let Run { code, .. } = toolscore(dir.path(), &["run", "--trials", "abc"]);
    assert_eq!(code, 2, "clap usage errors exit 2");
}

#[test]
fn validate_accepts_the_shipped_billing_dataset() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Run {
        code,
        stdout,
        stderr,
    } = toolscore(root, &["validate", "--dataset", "datasets/billing"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.starts_with("datasets/billing: 11 tools, 61 cases, catalog sha256:"),
        "{stdout}"
    );
}

#[test]
fn unusable_base_url_or_key_is_bad_input_not_an_error_per_trial() {
    let dir = project(TOOLS, CASE);
    let Run { code, stderr, .. } = toolscore(
        dir.path(),
        &[
            "run",
            "--provider",
            "openai-compat",
            "--base-url",
            "http://bad host/v1",
            "--model",
            "m",
            "--dataset",
            "data",
            "--out",
            "out",
        ],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("invalid base URL `http://bad host/v1` for provider `openai-compat`"),
        "{stderr}"
    );

    let mut args = run_args();
    args.extend(["--api-key-env", "MISSING_KEY_VAR"]);
    let Run { code, stderr, .. } = toolscore_env(
        dir.path(),
        &args,
        &[("MISSING_KEY_VAR", "sk-secret\nvalue")],
    );
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "error: the API key of provider `openai-compat` contains characters that cannot be sent in an HTTP header"
    );
    assert!(!dir.path().join("out").exists());
}
