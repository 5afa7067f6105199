//! Bad input gets a clear message naming file, line and field, exit code 2, no panic, and
//! nothing written.

use crate::support;

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
        "error: data/cases.jsonl:2:27: messages[0]: this line is not valid JSON (expected value); each fixture is one JSON object on one line",
    );
}

/// A fixture pretty-printed over several lines (as a README might show it) is the first thing a
/// newcomer pastes: say plainly that a fixture must fit on one line, and name no field.
#[test]
fn a_fixture_wrapped_over_several_lines_says_to_write_it_on_one() {
    expect_error(
        TOOLS,
        "{\"id\": \"q1\",\n \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}],\n \"expect\": {\"tool\": \"get_quote\"}}\n",
        "error: data/cases.jsonl:1:12: this line is not a complete JSON object: cases.jsonl is JSON Lines, so each fixture must fit on one line (write it without line breaks)",
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
    // A timeout too small to answer in is refused, not left to time out requests at random.
    for (timeout, shown) in [("1e-300", "1e-300"), ("0.05", "0.05"), ("3601", "3601.0")] {
        let mut args = run_args();
        args.extend(["--timeout", timeout]);
        let Run { code, stderr, .. } = toolscore(dir.path(), &args);
        assert_eq!(code, 2, "{stderr}");
        assert_eq!(
            stderr.trim_end(),
            format!("error: --timeout must be between 0.1 and 3600 seconds (got {shown})")
        );
    }
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

/// `run_args()` with `--out` and extra flags replaced/added.
fn run_with(out: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = run_args().into_iter().map(str::to_owned).collect();
    let at = args.iter().position(|a| a == "--out").expect("--out");
    args[at + 1] = out.to_owned();
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args
}

fn run_strs(dir: &Path, args: &[String]) -> Run {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    toolscore(dir, &refs)
}

#[test]
fn output_locations_that_cannot_hold_a_run_are_bad_input() {
    let dir = project(TOOLS, CASE);
    std::fs::write(dir.path().join("a-file"), "x").unwrap();
    std::os::unix::fs::symlink(dir.path().join("nowhere"), dir.path().join("dangling")).unwrap();
    std::fs::create_dir(dir.path().join("a-folder")).unwrap();
    let long_id = "r".repeat(300);
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            run_with("a-file", &[]),
            "error: --out a-file: a-file is not a folder",
        ),
        (
            run_with("a-file/sub", &[]),
            "error: --out a-file/sub: a-file is not a folder",
        ),
        (
            run_with("dangling", &[]),
            "error: --out dangling: dangling is a link to something that does not exist",
        ),
        (
            run_with("out", &["--run-id", &long_id]),
            "error: --run-id may be at most 128 characters (got 300)",
        ),
        (
            run_with("out", &["--record", "a-folder"]),
            "error: --record a-folder: is a folder; name a cassette file (e.g. my.cassette.jsonl.gz)",
        ),
        (
            run_with("out", &["--record", "a-file/c.jsonl"]),
            "error: --record a-file: a-file is not a folder",
        ),
    ];
    for (args, expected) in cases {
        let run = run_strs(dir.path(), &args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.transcript());
        assert_eq!(run.stderr.trim_end(), expected, "{args:?}");
        assert!(
            !dir.path().join("out").exists(),
            "{args:?}: nothing written"
        );
    }
    // Nothing was left behind anywhere (no probe files, no half-made folders).
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a-file", "a-folder", "dangling", "data"]);
}

#[test]
fn record_refuses_to_overwrite_a_file_without_force() {
    let dir = project(TOOLS, CASE);
    let run = run_strs(
        dir.path(),
        &run_with("out", &["--record", "data/cases.jsonl"]),
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert_eq!(
        run.stderr.trim_end(),
        "error: --record data/cases.jsonl: the file exists; choose another name, or add --force to overwrite it"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("data/cases.jsonl")).unwrap(),
        CASE
    );
    assert!(!dir.path().join("out").exists());
}

#[test]
fn a_base_url_without_a_host_is_refused() {
    let dir = project(TOOLS, CASE);
    let mut args = run_with("out", &[]);
    let at = args.iter().position(|a| a == "--base-url").unwrap();
    args[at + 1] = "http://".to_owned();
    let run = run_strs(dir.path(), &args);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr
            .starts_with("error: invalid base URL `http://` for provider `openai-compat`"),
        "{}",
        run.stderr
    );
    assert!(!dir.path().join("out").exists());
}

#[test]
fn a_concurrency_the_open_file_limit_cannot_serve_is_refused() {
    let dir = project(TOOLS, CASE);
    let out = support::clear_user_env(&mut std::process::Command::new("bash"))
        .current_dir(dir.path())
        .arg("-c")
        .arg(format!(
            "ulimit -n 200 && exec {} {} --concurrency 1024",
            env!("CARGO_BIN_EXE_toolscore"),
            run_args().join(" ")
        ))
        .output()
        .expect("bash");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "error: --concurrency 1024 needs up to 2117 open files (2 per trial in flight: its connection to the provider, one the connection pool may keep idle per provider host; 5 for the run's files and standard streams; 64 for the runtime and the files written at the end), but this process may open 200 (ulimit -n; hard limit 200): at most 65 trials in flight fit; lower --concurrency or raise the hard limit"
    );
    assert!(!dir.path().join("out").exists());
}

#[test]
fn a_pipe_or_a_byte_order_mark_as_input_is_named_not_waited_on() {
    let dir = project(TOOLS, CASE);
    std::fs::remove_file(dir.path().join("data/tools.json")).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(dir.path().join("data/tools.json"))
        .status()
        .expect("mkfifo");
    assert!(status.success());
    let run = toolscore(dir.path(), &["validate", "--dataset", "data"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert_eq!(
        run.stderr.trim_end(),
        "error: data/tools.json: not a regular file (a folder, a pipe or a device cannot be read as input)"
    );

    let dir = project(TOOLS, &format!("\u{feff}{CASE}"));
    let run = toolscore(dir.path(), &["validate", "--dataset", "data"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert_eq!(
        run.stderr.trim_end(),
        "error: data/cases.jsonl:1: starts with a UTF-8 byte-order mark (bytes EF BB BF); save the file as UTF-8 without a BOM"
    );
}

/// Every numeric setting of a config that `run` would refuse is refused when the config is
/// read, by `validate` and `run` alike, naming the file, the line and the field (`run` used to
/// name the flag, and `validate` said nothing).
#[test]
fn numeric_settings_of_a_config_are_refused_by_validate_and_run_alike() {
    let provider = |fields: &str| {
        format!(
            "providers:\n  local:\n    kind: openai-compat\n    base_url: http://127.0.0.1:9/v1\n    model: m\n{fields}"
        )
    };
    // (config, the error's first line)
    let cases = [
        (
            "defaults:\n  trials: 3\n  timeout_s: 1e-300\n".to_owned(),
            "error: toolscore.yaml:3: defaults.timeout_s: 1e-300 is not a timeout: between 0.1 and 3600 seconds",
        ),
        (
            provider("    timeout_s: 3601\n"),
            "error: toolscore.yaml:6: providers.local.timeout_s: 3601 is not a timeout: between 0.1 and 3600 seconds",
        ),
        (
            provider("    temperature: 2.5\n"),
            "error: toolscore.yaml:6: providers.local.temperature: 2.5 is not a temperature: between 0 and 2",
        ),
        (
            "defaults:\n  temperature: -1\n".to_owned(),
            "error: toolscore.yaml:2: defaults.temperature: -1 is not a temperature: between 0 and 2",
        ),
        (
            provider("    max_tokens: 0\n"),
            "error: toolscore.yaml:6: providers.local.max_tokens: must be at least 1",
        ),
        (
            "defaults:\n  max_tokens: 0\n".to_owned(),
            "error: toolscore.yaml:2: defaults.max_tokens: must be at least 1",
        ),
        (
            provider("    max_in_flight: 0\n"),
            "error: toolscore.yaml:6: providers.local.max_in_flight: must be at least 1",
        ),
        (
            provider("    requests_per_minute: 0\n"),
            "error: toolscore.yaml:6: providers.local.requests_per_minute: must be at least 1",
        ),
        (
            provider("    tokens_per_minute: 0\n"),
            "error: toolscore.yaml:6: providers.local.tokens_per_minute: must be at least 1",
        ),
        (
            "defaults:\n  trials: 0\n".to_owned(),
            "error: toolscore.yaml:2: defaults.trials: must be at least 1",
        ),
        (
            "defaults:\n  concurrency: 5000\n".to_owned(),
            "error: toolscore.yaml:2: defaults.concurrency: 5000 is not a concurrency: between 1 and 4096",
        ),
        (
            "defaults:\n  confidence: 95\n".to_owned(),
            "error: toolscore.yaml:2: defaults.confidence: 95 is not a confidence level: above 0.5 and below 1 (e.g. 0.95)",
        ),
        (
            "defaults:\n  precision: 0.5\n".to_owned(),
            "error: toolscore.yaml:2: defaults.precision: 0.5 is not a precision: a half-width above 0 and below 0.5 (e.g. 0.05)",
        ),
    ];
    for (config, expected) in &cases {
        let dir = project(TOOLS, CASE);
        std::fs::write(dir.path().join("toolscore.yaml"), config).unwrap();
        let validate = toolscore(dir.path(), &["validate", "--dataset", "data"]);
        assert_eq!(validate.code, 2, "{config}{}", validate.transcript());
        assert_eq!(
            validate.stderr.lines().next().unwrap_or_default(),
            *expected,
            "{config}"
        );
        let mut args = vec!["run", "--dataset", "data", "--out", "out"];
        if config.contains("providers:") {
            args.extend(["--provider", "local"]);
        } else {
            args.extend([
                "--provider",
                "openai-compat",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "m",
            ]);
        }
        let run = toolscore(dir.path(), &args);
        assert_eq!(run.code, 2, "{config}{}", run.transcript());
        assert_eq!(
            run.stderr.lines().next().unwrap_or_default(),
            *expected,
            "{config}"
        );
        assert!(!dir.path().join("out").exists(), "{config}");
    }
    // The flag is held to the same rule as the field.
    let dir = project(TOOLS, CASE);
    let mut args = run_args();
    args.extend(["--max-tokens", "0"]);
    let run = toolscore(dir.path(), &args);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert_eq!(
        run.stderr.trim_end(),
        "error: --max-tokens must be at least 1"
    );
}

#[test]
fn outside_a_project_says_no_toolscore_yaml_was_found_and_how_to_start_one() {
    let dir = tempfile::tempdir().unwrap();
    for command in ["run", "validate", "plan"] {
        let run = toolscore(dir.path(), &[command]);
        assert_eq!(run.code, 2, "{command}\n{}", run.transcript());
        assert_eq!(
            run.stderr,
            "error: no dataset: no toolscore.yaml in [TMP] or the folders above it (up to a repository's top) and no --dataset or --scenario; run this in your project, pass --dataset DIR, or start a project here with `toolscore init` (from an MCP server or a tool list: `toolscore help init`)\n",
            "{command}"
        );
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    // A config that lists nothing is named instead.
    std::fs::write(
        dir.path().join("toolscore.yaml"),
        "defaults:\n  trials: 5\n",
    )
    .unwrap();
    let run = toolscore(dir.path(), &["run"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert_eq!(
        run.stderr,
        "error: no dataset: toolscore.yaml lists no `datasets` (or `scenarios`); list one there, or pass --dataset DIR (or --scenario FILE)\n"
    );
}

/// A mistyped provider or dataset gets the near name it most likely meant, and a folder that
/// is no run says so (not "summary.json: cannot read").
#[test]
fn a_mistyped_name_suggests_the_near_one_and_a_missing_run_says_so() {
    let dir = support::project_copy();
    let d = dir.path();
    let provider = toolscore(d, &["run", "--provider", "dmeo"]);
    assert_eq!(provider.code, 2, "{}", provider.transcript());
    assert!(
        provider.stderr.contains("; did you mean `demo`?"),
        "{}",
        provider.stderr
    );
    let dataset = toolscore(d, &["run", "--dataset", "datasets/biling"]);
    assert_eq!(dataset.code, 2, "{}", dataset.transcript());
    assert!(
        dataset
            .stderr
            .contains("dataset folder not found (expected DIR/tools.json and DIR/cases.jsonl); did you mean datasets/billing?"),
        "{}",
        dataset.stderr
    );
    let stranger = toolscore(d, &["run", "--provider", "anthropicc-x"]);
    assert!(
        !stranger.stderr.contains("did you mean"),
        "{}",
        stranger.stderr
    );
    let nope = toolscore(d, &["report", "reports/nope"]);
    assert_eq!(nope.code, 2, "{}", nope.transcript());
    assert!(
        nope.stderr
            .contains("no such run: reports/nope is not a folder"),
        "{}",
        nope.stderr
    );
    let not_a_run = toolscore(d, &["report", "datasets"]);
    assert_eq!(not_a_run.code, 2, "{}", not_a_run.transcript());
    assert!(
        not_a_run
            .stderr
            .contains("datasets is not a run folder: it has no summary.json"),
        "{}",
        not_a_run.stderr
    );
}
