//! `toolscore run` through the real binary against fakes of each native provider API, named
//! on the command line as KIND:MODEL or in toolscore.yaml: every case (a fresh question, and a
//! conversation holding an earlier tool call and its result) passes only when the adapter
//! speaks the provider's wire format as the fake checks it.

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use support::*;

const TOOLS: &str = r#"{"tools": [{"name": "get_weather", "description": "Get the current weather in a given location",
  "inputSchema": {"type": "object", "properties": {"location": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["location"]}}]}"#;

/// A fresh question (the fake calls get_weather for Paris) and a conversation whose tool
/// result is already in (the fake answers in text only if the history is laid out right).
const CASES: &str = r#"{"id": "weather", "messages": [{"role": "system", "content": "You are a weather bot."}, {"role": "user", "content": "What's the weather in Paris?"}], "expect": {"tool": "get_weather", "args": {"location": "Paris, France"}}}
{"id": "after-result", "messages": [{"role": "user", "content": "What's the weather in Berlin?"}, {"role": "assistant", "content": "Checking.", "tool_calls": [{"id": "call_fx1", "name": "get_weather", "arguments": {"location": "Berlin"}}]}, {"role": "tool", "call_id": "call_fx1", "content": "9 degrees"}], "expect": {"tool": null}}
"#;

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("data")).expect("mkdir");
    std::fs::write(dir.path().join("data/tools.json"), TOOLS).expect("tools");
    std::fs::write(dir.path().join("data/cases.jsonl"), CASES).expect("cases");
    dir
}

fn records(dir: &Path) -> Vec<Value> {
    support::read_jsonl(&run_dir(dir).join("results.jsonl"))
}

/// `toolscore run --provider PROVIDER [--base-url URL]` on the project, 3 trials per case.
fn run(dir: &Path, provider: &str, base_url: Option<&str>, env: &[(&str, &str)]) -> Run {
    let mut args = vec!["run", "--provider", provider];
    if let Some(url) = base_url {
        args.extend(["--base-url", url]);
    }
    args.extend([
        "--dataset",
        "data",
        "--trials",
        "3",
        "--out",
        "out",
        "--progress",
        "off",
    ]);
    toolscore_env(dir, &args, env)
}

/// `run` with one trial in flight at a time, so how many requests go out does not depend on
/// the machine's speed.
fn run_one_at_a_time(
    dir: &Path,
    provider: &str,
    base_url: &str,
    trials: &str,
    env: &[(&str, &str)],
) -> Run {
    let args = [
        "run",
        "--provider",
        provider,
        "--base-url",
        base_url,
        "--dataset",
        "data",
        "--trials",
        trials,
        "--concurrency",
        "1",
        "--out",
        "out",
        "--progress",
        "off",
    ];
    toolscore_env(dir, &args, env)
}

/// A scripted fake of one provider's API.
type FakeModel = fn(&FakeRequest) -> FakeResponse;

fn assert_all_pass(dir: &Path, run: &Run, kind: &str) {
    assert_eq!(run.code, 0, "{kind}: {}", run.transcript());
    let records = records(dir);
    assert_eq!(records.len(), 6, "{kind}");
    for r in &records {
        assert_eq!(r["outcome"], "pass", "{kind}: {r}");
    }
}

#[test]
fn each_native_provider_passes_by_kind_and_model() {
    let cases: [(&str, &str, FakeModel, &str, &str); 4] = [
        (
            "anthropic",
            "anthropic:claude-sonnet-4-5",
            anthropic_model,
            "/v1",
            "ANTHROPIC_API_KEY",
        ),
        (
            "openai-responses",
            "openai-responses:gpt-5.4",
            responses_model,
            "/v1",
            "OPENAI_API_KEY",
        ),
        (
            "gemini",
            "gemini:gemini-2.5-flash",
            gemini_model,
            "/v1beta",
            "GEMINI_API_KEY",
        ),
        ("ollama", "ollama:qwen3:8b", ollama_model, "", "UNUSED_KEY"),
    ];
    for (kind, provider, model, path, key_var) in cases {
        let server = FakeServer::start_in_background(model);
        let dir = project();
        let base = format!("http://{}{path}", server.addr);
        let r = run(dir.path(), provider, Some(&base), &[(key_var, FAKE_KEY)]);
        assert_all_pass(dir.path(), &r, kind);
        let records = records(dir.path());
        assert_eq!(records[0]["provider"], provider, "{kind}");
        // Each request answered once: no retries hid a refused request.
        assert_eq!(server.requests_seen(), 6, "{kind}");
        let fresh = records.iter().find(|r| r["case_id"] == "weather").unwrap();
        assert!(
            fresh["usage"]["input_tokens"].as_u64().unwrap() > 0,
            "{kind}: {fresh}"
        );
    }
}

#[test]
fn azure_and_anthropic_from_the_config_with_default_key_variables() {
    let azure = FakeServer::start_in_background(|req| azure_model(req, "gpt-4o-prod"));
    let anthropic = FakeServer::start_in_background(anthropic_model);
    let dir = project();
    std::fs::write(
        dir.path().join("toolscore.yaml"),
        format!(
            "providers:\n  azure:\n    kind: azure-openai\n    base_url: http://{}\n    model: gpt-4o-prod\n  claude:\n    kind: anthropic\n    base_url: {}\n    model: claude-sonnet-4-5\n",
            azure.addr, anthropic.base_url
        ),
    )
    .unwrap();
    let r = run(
        dir.path(),
        "azure",
        None,
        &[("AZURE_OPENAI_API_KEY", FAKE_KEY)],
    );
    assert_all_pass(dir.path(), &r, "azure-openai");
    std::fs::remove_dir_all(dir.path().join("out")).unwrap();
    let r = run(
        dir.path(),
        "claude",
        None,
        &[("ANTHROPIC_API_KEY", FAKE_KEY)],
    );
    assert_all_pass(dir.path(), &r, "anthropic");
    let claude = records(dir.path());
    // Anthropic's input_tokens (412) plus its cache reads (1830).
    let fresh = claude.iter().find(|r| r["case_id"] == "weather").unwrap();
    assert_eq!(fresh["usage"]["input_tokens"], 412 + 1830);
    assert_eq!(fresh["usage"]["cache_read_tokens"], 1830);
}

#[test]
fn a_missing_key_variable_is_named_before_anything_is_sent() {
    let server = FakeServer::start_in_background(anthropic_model);
    let dir = project();
    let r = run(
        dir.path(),
        "anthropic:claude-sonnet-4-5",
        Some(&server.base_url),
        &[],
    );
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(r.stderr.contains("ANTHROPIC_API_KEY"), "{}", r.stderr);
    assert_eq!(server.requests_seen(), 0);
    let r = run(dir.path(), "azure-openai:gpt-4o", None, &[]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(r.stderr.contains("base URL"), "{}", r.stderr);
    let r = run(dir.path(), "bedrock:claude", None, &[]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(r.stderr.contains("KIND:MODEL"), "{}", r.stderr);
}

#[test]
fn error_classes_reach_the_records() {
    // Anthropic: a 529 once per request, then the answer: every trial passes on attempt 2.
    let n = AtomicU64::new(0);
    let server = FakeServer::start_in_background(move |req| {
        if n.fetch_add(1, Ordering::SeqCst).is_multiple_of(2) {
            FakeResponse::status(529, anthropic_error("overloaded_error", "Overloaded"))
                .header("retry-after", "0")
        } else {
            anthropic_model(req)
        }
    });
    let dir = project();
    let r = run_one_at_a_time(
        dir.path(),
        "anthropic:claude-sonnet-4-5",
        &server.base_url,
        "2",
        &[("ANTHROPIC_API_KEY", FAKE_KEY)],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    for rec in records(dir.path()) {
        assert_eq!(rec["outcome"], "pass", "{rec}");
        assert_eq!(rec["attempts"], 2, "{rec}");
    }

    // Gemini: a bad key is a 400 here; the record says auth, after one attempt.
    let server = FakeServer::start_in_background(gemini_model);
    let dir = project();
    let r = run(
        dir.path(),
        "gemini:gemini-2.5-flash",
        Some(&format!("http://{}/v1beta", server.addr)),
        &[("GEMINI_API_KEY", "not-the-right-key")],
    );
    assert_eq!(r.code, 4, "{}", r.transcript());
    let recs = records(dir.path());
    assert!(!recs.is_empty(), "{}", r.transcript());
    for rec in recs {
        assert_eq!(rec["outcome"], "error", "{rec}");
        assert_eq!(rec["error_class"], "auth", "{rec}");
        assert_eq!(rec["attempts"], 1, "{rec}");
        assert!(
            rec["error"].as_str().unwrap().contains("API key not valid"),
            "{rec}"
        );
    }
    assert!(!r.stdout.contains("not-the-right-key") && !r.stderr.contains("not-the-right-key"));

    // OpenAI Responses: insufficient_quota is a 429 that is not retried.
    let server = FakeServer::start_in_background(|_| {
        FakeResponse::status(
            429,
            openai_error(
                "You exceeded your current quota, please check your plan and billing details.",
                "insufficient_quota",
                Some("insufficient_quota"),
            ),
        )
    });
    // The arm stops at its first quota error (provider/stop.rs): with one trial in flight at a
    // time exactly one request is sent, whatever the machine's speed.
    let dir = project();
    let r = run_one_at_a_time(
        dir.path(),
        "openai-responses:gpt-5.4",
        &server.base_url,
        "3",
        &[("OPENAI_API_KEY", FAKE_KEY)],
    );
    assert_eq!(r.code, 4, "{}", r.transcript());
    let recs = records(dir.path());
    assert_eq!(recs.len(), 1, "{}", r.transcript());
    assert_eq!(recs[0]["error_class"], "quota_exceeded", "{}", recs[0]);
    assert_eq!(recs[0]["attempts"], 1, "{}", recs[0]);
    assert!(
        r.stderr
            .contains("stopped at its first quota_exceeded error"),
        "{}",
        r.stderr
    );
    assert_eq!(server.requests_seen(), 1);
}

#[test]
fn a_native_provider_records_and_replays() {
    let server = FakeServer::start_in_background(gemini_model);
    let dir = project();
    let base = format!("http://{}/v1beta", server.addr);
    let args = [
        "run",
        "--provider",
        "gemini:gemini-2.5-flash",
        "--base-url",
        &base,
        "--dataset",
        "data",
        "--trials",
        "2",
        "--out",
        "live",
        "--progress",
        "off",
        "--record",
        "gemini.cassette.jsonl.gz",
    ];
    let live = toolscore_env(dir.path(), &args, &[("GEMINI_API_KEY", FAKE_KEY)]);
    assert_eq!(live.code, 0, "{}", live.transcript());
    drop(server);
    let replay = toolscore(
        dir.path(),
        &[
            "run",
            "--provider",
            "replay:gemini.cassette.jsonl.gz",
            "--dataset",
            "data",
            "--out",
            "out",
            "--progress",
            "off",
        ],
    );
    assert_eq!(replay.code, 0, "{}", replay.transcript());
    let replayed = records(dir.path());
    assert_eq!(replayed.len(), 4);
    let call = replayed
        .iter()
        .find(|r| r["case_id"] == "weather")
        .map(|r| r["turns"][0]["tool_calls"][0].clone())
        .unwrap();
    assert_eq!(call["thought_signature"], THOUGHT_SIGNATURE, "{call}");
    assert!(replayed.iter().all(|r| r["outcome"] == "pass"));
}

#[test]
fn an_auth_failure_stops_only_its_provider() {
    let claude = FakeServer::start_in_background(anthropic_model);
    let gpt = FakeServer::start_in_background(responses_model);
    let dir = project();
    std::fs::write(
        dir.path().join("toolscore.yaml"),
        format!(
            "providers:\n  claude:\n    kind: anthropic\n    base_url: {}\n    model: claude-sonnet-4-5\n  gpt:\n    kind: openai-responses\n    base_url: {}\n    model: gpt-5.4\n",
            claude.base_url, gpt.base_url
        ),
    )
    .unwrap();
    let r = toolscore_env(
        dir.path(),
        &[
            "run",
            "--provider",
            "claude",
            "--provider",
            "gpt",
            "--dataset",
            "data",
            "--trials",
            "20",
            "--concurrency",
            "2",
            "--out",
            "out",
            "--progress",
            "off",
            // Not the share of errors: the stop alone decides the exit code here.
            "--max-infra-error-rate",
            "1",
        ],
        &[
            ("ANTHROPIC_API_KEY", "a-revoked-key"),
            ("OPENAI_API_KEY", FAKE_KEY),
        ],
    );
    assert!(
        r.stderr.contains("provider `claude` (variant base) stopped at its first auth error; check the key in ANTHROPIC_API_KEY"),
        "{}",
        r.transcript()
    );
    assert_eq!(r.code, 4, "{}", r.transcript());
    assert!(
        r.stderr.contains(
            "error: provider `claude` (auth) stopped by auth or quota errors; their remaining trials were not run"
        ),
        "{}",
        r.stderr
    );
    let records = records(dir.path());
    let (claude_records, gpt_records): (Vec<&Value>, Vec<&Value>) =
        records.iter().partition(|r| r["provider"] == "claude");
    // Only the trials started before the first 401 was handled were sent (a 401 comes back in
    // about a millisecond, so a few more than the two in flight may have started).
    assert!(
        !claude_records.is_empty() && claude_records.len() < 10,
        "{} claude trials ran",
        claude_records.len()
    );
    assert!(claude_records.iter().all(|r| r["error_class"] == "auth"));
    assert_eq!(gpt_records.len(), 40, "the other provider ran every trial");
    assert!(gpt_records.iter().all(|r| r["outcome"] == "pass"));
    // Every planned trial is accounted for: run, or skipped (not run, not a failure).
    let run_dir = dir
        .path()
        .join("out")
        .join(records[0]["run_id"].as_str().unwrap());
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap())
            .unwrap();
    let skipped = summary["skipped_trials"].as_u64().unwrap();
    assert_eq!(skipped + records.len() as u64, 80, "{summary}");
    assert!(
        r.stderr
            .contains(&format!("{skipped} planned trials were not run")),
        "{}",
        r.stderr
    );
}

/// Three providers in one run, each an arm: the summary puts them side by side and lists the
/// cases where they disagree. Gemini's fake here answers every question in text, so on the
/// weather case it never calls the tool the other two call every time.
#[test]
fn three_providers_side_by_side_with_a_cross_provider_diff() {
    let anthropic = FakeServer::start_in_background(anthropic_model);
    let ollama = FakeServer::start_in_background(ollama_model);
    let gemini = FakeServer::start_in_background(|req| {
        if req.header("x-goog-api-key") != Some(FAKE_KEY) {
            return FakeResponse::status(400, gemini_bad_key());
        }
        FakeResponse::ok(gemini_text_body("I cannot look that up."))
    });
    let dir = project();
    std::fs::write(
        dir.path().join("toolscore.yaml"),
        format!(
            "providers:\n  claude:\n    kind: anthropic\n    base_url: {}\n    model: claude-sonnet-4-5\n  gemini:\n    kind: gemini\n    base_url: http://{}/v1beta\n    model: gemini-2.5-flash\n  qwen:\n    kind: ollama\n    base_url: http://{}\n    model: qwen3:8b\n",
            anthropic.base_url, gemini.addr, ollama.addr
        ),
    )
    .unwrap();
    let run = toolscore_env(
        dir.path(),
        &[
            "run",
            "--provider",
            "claude",
            "--provider",
            "gemini",
            "--provider",
            "qwen",
            "--dataset",
            "data",
            "--trials",
            "10",
            "--out",
            "out",
            "--progress",
            "off",
            "--format",
            "terminal",
            "--format",
            "md",
        ],
        &[
            ("ANTHROPIC_API_KEY", FAKE_KEY),
            ("GEMINI_API_KEY", FAKE_KEY),
        ],
    );
    // Gemini fails the weather case every time: a gate-free run still exits 0.
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(records(dir.path()).len(), 60);
    let table = run
        .stdout
        .split("=== providers side by side · variant base · 95% intervals ===\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no side-by-side table:\n{}", run.stdout));
    let header = table.lines().next().unwrap();
    let columns: Vec<&str> = header
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(
        columns,
        [
            "metric",
            "claude (claude-sonnet-4-5)",
            "gemini (gemini-2.5-flash)",
            "qwen (qwen3:8b)"
        ],
        "{table}"
    );
    let selection = table
        .lines()
        .find(|l| l.trim_start().starts_with("selection"))
        .unwrap();
    assert!(
        selection.contains("(20/20)") && selection.contains("(10/20)"),
        "{selection}"
    );
    assert!(
        table.contains(
            "    data/weather (expects get_weather): claude → get_weather 10/10 · gemini → (no call) 10/10 · qwen → get_weather 10/10"
        ),
        "{table}"
    );
    assert!(table.contains("in 2 of 6 case comparisons"), "{table}");
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(run_dir(dir.path()).join("summary.json")).unwrap(),
    )
    .unwrap();
    let diff = &summary["provider_diffs"][0];
    assert_eq!(diff["cases_compared"], 2);
    assert_eq!(diff["choice_differs"].as_array().unwrap().len(), 1);
    let pass = &diff["pass_differs"][0];
    assert_eq!(pass["case_id"], "weather");
    assert_eq!(
        pass["pass"],
        serde_json::json!([[10, 10], [0, 10], [10, 10]])
    );
    let pairs: Vec<(u64, u64)> = pass["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["a"].as_u64().unwrap(), p["b"].as_u64().unwrap()))
        .collect();
    assert_eq!(pairs, [(0, 1), (1, 2)]);
    // The same diff comes back from results.jsonl alone.
    let again = toolscore(
        dir.path(),
        &[
            "report",
            run_dir(dir.path()).to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert_eq!(again.code, 0, "{}", again.transcript());
    let reaggregated: Value = serde_json::from_str(&again.stdout).expect("report --format json");
    assert_eq!(reaggregated["provider_diffs"], summary["provider_diffs"]);
    let markdown = std::fs::read_to_string(run_dir(dir.path()).join("report.md")).unwrap();
    assert!(
        markdown.contains("## Providers side by side · variant base · 95% intervals"),
        "{markdown}"
    );
    assert!(
        markdown.contains(
            r"| weather | get\_weather | get\_weather 10/10 | (no call) 10/10 | get\_weather 10/10 |"
        ),
        "{markdown}"
    );
}

fn run_dir(dir: &Path) -> PathBuf {
    support::only_run_dir(&dir.join("out"))
}

/// Requests carry only the fields the user configured: no `tool_choice` or
/// `parallel_tool_calls` unless the config or a flag sets them; what was sent is recorded in
/// every record's model identity and in a cassette, whose replay then matches; a field the
/// provider's API lacks is refused before any request.
#[test]
fn only_configured_request_fields_are_sent_and_recorded() {
    let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::<serde_json::Value>::new()));
    let seen = bodies.clone();
    let server = support::FakeServer::start_in_background(move |req: &support::FakeRequest| {
        seen.lock().expect("lock").push(req.body.clone());
        support::FakeResponse::ok(support::tool_call_body(&[("ping", r#"{"host":"h"}"#)]))
    });
    const TOOLS: &str = r#"{"tools": [{"name": "ping", "description": "Ping a host.", "inputSchema": {"type": "object", "properties": {"host": {"type": "string"}}}}]}"#;
    const CASE: &str = r#"{"id": "c", "messages": [{"role": "user", "content": "ping h"}], "expect": {"tool": "ping"}}
"#;
    let dir = support::fake_project(&server.base_url, TOOLS, CASE, &[]);
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--provider",
            "fake",
            "--trials",
            "2",
            "--progress",
            "off",
        ];
        args.extend_from_slice(extra);
        support::toolscore(dir.path(), &args)
    };
    let plain = run(&["--out", "plain"]);
    assert_eq!(plain.code, 0, "{}", plain.transcript());
    for b in bodies.lock().expect("lock").drain(..) {
        assert!(
            b.get("tool_choice").is_none() && b.get("parallel_tool_calls").is_none(),
            "{b}"
        );
    }
    let set = run(&[
        "--out",
        "set",
        "--run-id",
        "s",
        "--tool-choice",
        "required",
        "--parallel-tool-calls",
        "false",
        "--record",
        "rec.cassette.jsonl",
    ]);
    assert_eq!(set.code, 0, "{}", set.transcript());
    for b in bodies.lock().expect("lock").drain(..) {
        assert_eq!(
            (&b["tool_choice"], &b["parallel_tool_calls"]),
            (&"required".into(), &false.into()),
            "{b}"
        );
    }
    let record_dir = dir.path().join("set/s");
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(record_dir.join("summary.json")).expect("summary"),
    )
    .expect("json");
    let arm = &summary["run"]["arms"][0];
    assert_eq!(
        (&arm["tool_choice"], &arm["parallel_tool_calls"]),
        (&"required".into(), &false.into()),
        "{arm}"
    );
    // The recording names what was sent, and replays.
    let replay = support::toolscore(
        dir.path(),
        &[
            "run",
            "--provider",
            "replay:rec.cassette.jsonl",
            "--out",
            "replayed",
            "--progress",
            "off",
        ],
    );
    assert_eq!(replay.code, 0, "{}", replay.transcript());
    let header = std::fs::read_to_string(dir.path().join("rec.cassette.jsonl")).expect("cassette");
    assert!(
        header
            .lines()
            .next()
            .is_some_and(|h| h.contains(r#""tool_choice":"required""#)),
        "{header}"
    );

    let ollama = support::toolscore(
        dir.path(),
        &[
            "run",
            "--provider",
            "ollama:qwen3",
            "--base-url",
            &server.base_url,
            "--tool-choice",
            "auto",
        ],
    );
    assert_eq!(ollama.code, 2, "{}", ollama.transcript());
    assert_eq!(
        ollama.stderr.trim_end(),
        "error: provider `ollama:qwen3`: the ollama API has no tool_choice; remove tool_choice (--tool-choice)"
    );
}

/// In a scenario, a call Gemini sent without an id goes back without one: toolscore pairs the
/// result by position rather than inventing ids the model never issued.
#[test]
fn a_gemini_scenario_sends_back_no_call_id_the_model_did_not_issue() {
    let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let seen = bodies.clone();
    let server = FakeServer::start_in_background(move |req: &FakeRequest| {
        seen.lock().expect("lock").push(req.body.clone());
        gemini_model(req)
    });
    const SCENARIO: &str = r#"description: One lookup, then an answer.
catalog: ../data/tools.json
max_steps: 3
messages:
  - role: user
    content: "Weather in Paris?"
tools:
  get_weather:
    - result: {temperature: 18}
expect:
  max_calls: 2
"#;
    let dir = project();
    std::fs::create_dir_all(dir.path().join("scenarios")).expect("mkdir");
    std::fs::write(dir.path().join("scenarios/weather.yaml"), SCENARIO).expect("scenario");
    let url = format!("http://{}/v1beta", server.addr);
    let r = toolscore_env(
        dir.path(),
        &[
            "run",
            "--provider",
            "gemini:gemini-2.5-flash",
            "--base-url",
            &url,
            "--scenario",
            "scenarios",
            "--trials",
            "1",
            "--out",
            "out",
            "--progress",
            "off",
        ],
        &[("GEMINI_API_KEY", FAKE_KEY)],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let bodies = bodies.lock().expect("lock");
    assert_eq!(bodies.len(), 2, "a call, then the answer after its result");
    let history = bodies[1]["contents"].to_string();
    assert!(
        history.contains("functionCall") && history.contains("functionResponse"),
        "{history}"
    );
    for part in bodies[1]["contents"]
        .as_array()
        .expect("contents")
        .iter()
        .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
    {
        for key in ["functionCall", "functionResponse"] {
            if let Some(p) = part.get(key) {
                assert!(
                    p.get("id").is_none(),
                    "an id the model never issued: {part}"
                );
            }
        }
    }
}

/// In a scenario, a call Ollama sent without an id (servers before November 2025) goes back
/// without one, on the assistant's call and on the tool result, which names the tool; a call
/// that came with an id goes back with that id on both.
#[test]
fn an_ollama_scenario_sends_back_no_call_id_the_model_did_not_issue() {
    const SCENARIO: &str = r#"description: One lookup, then an answer.
catalog: ../data/tools.json
max_steps: 3
messages:
  - role: user
    content: "Weather in Paris?"
tools:
  get_weather:
    - result: {temperature: 18}
expect:
  max_calls: 2
"#;
    for issued in [None, Some("call_k3x9v2")] {
        let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
        let seen = bodies.clone();
        let server = FakeServer::start_in_background(move |req: &FakeRequest| {
            seen.lock().expect("lock").push(req.body.clone());
            let answer = ollama_model(req);
            let after_result = req.body["messages"]
                .as_array()
                .and_then(|m| m.last())
                .is_some_and(|m| m["role"] == "tool");
            match issued {
                Some(id) if answer.status == 200 && !after_result => {
                    FakeResponse::ok(ollama_call_body(Some(id)))
                }
                _ => answer,
            }
        });
        let dir = project();
        std::fs::create_dir_all(dir.path().join("scenarios")).expect("mkdir");
        std::fs::write(dir.path().join("scenarios/weather.yaml"), SCENARIO).expect("scenario");
        let url = format!("http://{}", server.addr);
        let r = toolscore(
            dir.path(),
            &[
                "run",
                "--provider",
                "ollama:qwen3",
                "--base-url",
                &url,
                "--scenario",
                "scenarios",
                "--trials",
                "1",
                "--out",
                "out",
                "--progress",
                "off",
            ],
        );
        assert_eq!(r.code, 0, "{issued:?}: {}", r.transcript());
        let bodies = bodies.lock().expect("lock");
        assert_eq!(bodies.len(), 2, "a call, then the answer after its result");
        let messages = bodies[1]["messages"].as_array().expect("messages");
        let call = messages
            .iter()
            .find(|m| m["role"] == "assistant")
            .and_then(|m| m["tool_calls"].get(0))
            .unwrap_or_else(|| panic!("no assistant call sent back: {}", bodies[1]));
        let result = messages
            .iter()
            .find(|m| m["role"] == "tool")
            .unwrap_or_else(|| panic!("no tool result sent: {}", bodies[1]));
        assert_eq!(call["function"]["name"], "get_weather");
        assert_eq!(result["tool_name"], "get_weather");
        match issued {
            None => {
                assert!(
                    call.get("id").is_none(),
                    "an id the model never issued: {call}"
                );
                assert!(
                    result.get("tool_call_id").is_none(),
                    "an id the model never issued: {result}"
                );
            }
            Some(id) => {
                assert_eq!(call["id"], id, "{call}");
                assert_eq!(result["tool_call_id"], id, "{result}");
            }
        }
    }
}

/// A model the capability table says refuses `temperature` is not sent one, and the run says
/// so before its first request; other models get the temperature configured.
#[test]
fn a_field_the_model_refuses_is_omitted_and_said() {
    let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let seen = bodies.clone();
    let server = FakeServer::start_in_background(move |req: &FakeRequest| {
        seen.lock().expect("lock").push(req.body.clone());
        anthropic_model(req)
    });
    for (model, sent) in [("claude-opus-4-7", false), ("claude-sonnet-4-5", true)] {
        let dir = project();
        let provider = format!("anthropic:{model}");
        let r = toolscore_env(
            dir.path(),
            &[
                "run",
                "--provider",
                &provider,
                "--base-url",
                &server.base_url,
                "--dataset",
                "data",
                "--trials",
                "1",
                "--temperature",
                "0.5",
                "--out",
                "out",
                "--progress",
                "off",
            ],
            &[("ANTHROPIC_API_KEY", FAKE_KEY)],
        );
        assert_eq!(r.code, 0, "{model}: {}", r.transcript());
        let note = format!(
            "note: provider `{provider}`: model {model} refuses `temperature`, so it is not sent"
        );
        assert_eq!(r.stderr.contains(&note), !sent, "{model}: {}", r.stderr);
        for b in bodies.lock().expect("lock").drain(..) {
            assert_eq!(b.get("temperature").is_some(), sent, "{model}: {b}");
        }
        let summary: Value = serde_json::from_str(
            &std::fs::read_to_string(run_dir(dir.path()).join("summary.json")).expect("summary"),
        )
        .expect("json");
        // What was sent is what the run records.
        assert_eq!(
            summary["run"]["arms"][0]["temperature"].is_null(),
            !sent,
            "{summary}"
        );
    }
}

/// Opus from 4.7 on, matched by the version in the model's name (later versions, dated
/// snapshots), is not sent `temperature`; earlier Opus and other Claude models are. A setting
/// not sent is recorded in plan.json and summary.json (the arm's `omitted`, and a
/// `setting_not_sent` warning naming the provider, the model and why) and said by `report`
/// in the terminal and in report.md.
#[test]
fn sampling_settings_are_dropped_for_opus_from_4_7_on_and_every_output_says_so() {
    let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let seen = bodies.clone();
    let server = FakeServer::start_in_background(move |req: &FakeRequest| {
        seen.lock().expect("lock").push(req.body.clone());
        anthropic_model(req)
    });
    let models = [
        ("claude-opus-4-7", false),
        ("claude-opus-4-7-20260101", false),
        ("claude-opus-4-8", false),
        ("claude-opus-5", false),
        ("claude-opus-5-1-20270301", false),
        ("claude-opus-4-6", true),
        ("claude-opus-4-1-20250805", true),
        // Opus 4's dated snapshot: the date is not a minor version.
        ("claude-opus-4-20250514", true),
        ("claude-sonnet-4-5", true),
        // Not in the capability table, but LiteLLM's model map says they take no sampling
        // parameters (and Anthropic refuses them).
        ("claude-sonnet-5", false),
        ("claude-haiku-5-5", false),
    ];
    for (model, sent) in models {
        let dir = project();
        let provider = format!("anthropic:{model}");
        let r = toolscore_env(
            dir.path(),
            &[
                "run",
                "--provider",
                &provider,
                "--base-url",
                &server.base_url,
                "--dataset",
                "data",
                "--trials",
                "1",
                "--temperature",
                "0.5",
                "--out",
                "out",
                "--progress",
                "off",
            ],
            &[("ANTHROPIC_API_KEY", FAKE_KEY)],
        );
        assert_eq!(r.code, 0, "{model}: {}", r.transcript());
        let sent_bodies: Vec<Value> = bodies.lock().expect("lock").drain(..).collect();
        assert_eq!(sent_bodies.len(), 2, "{model}");
        for b in &sent_bodies {
            assert_eq!(b.get("temperature").is_some(), sent, "{model}: {b}");
            if sent {
                assert_eq!(b["temperature"], 0.5, "{model}: {b}");
            }
        }
        let folder = run_dir(dir.path());
        let read = |name: &str| -> Value {
            serde_json::from_str(&std::fs::read_to_string(folder.join(name)).expect(name))
                .expect(name)
        };
        let summary = read("summary.json");
        let plan = read("plan.json");
        // The models the map lists are priced from it (claude-sonnet-4-5 and later; the
        // capability table's future names are in neither).
        if matches!(
            model,
            "claude-sonnet-5" | "claude-haiku-5-5" | "claude-opus-4-7"
        ) {
            let record = &support::read_jsonl(&folder.join("results.jsonl"))[0];
            assert_eq!(
                record["cost"]["price_source"],
                format!("LiteLLM model map 1.110.2 of 2026-12-08 ({model})"),
                "{model}: {record}"
            );
        }
        let warnings: Vec<&Value> = summary["warnings"]
            .as_array()
            .expect("warnings")
            .iter()
            .filter(|w| w["kind"] == "setting_not_sent")
            .collect();
        let folder_arg = folder.display().to_string();
        let report = toolscore(dir.path(), &["report", &folder_arg]);
        assert_eq!(report.code, 0, "{model}: {}", report.transcript());
        let md = toolscore(dir.path(), &["report", &folder_arg, "--format", "md"]);
        assert_eq!(md.code, 0, "{model}: {}", md.transcript());
        let markdown = std::fs::read_to_string(folder.join("report.md")).expect("report.md");
        let said = format!(
            "provider `{provider}`, model {model}: `temperature` 0.5 was configured but not sent: the model refuses it"
        );
        if sent {
            assert!(warnings.is_empty(), "{model}: {summary}");
            assert!(
                summary["run"]["arms"][0].get("omitted").is_none(),
                "{model}"
            );
            assert!(plan["arms"][0].get("omitted").is_none(), "{model}: {plan}");
            assert!(
                !report.stdout.contains("not sent"),
                "{model}: {}",
                report.stdout
            );
            assert!(!markdown.contains("not sent"), "{model}");
            continue;
        }
        let omitted = serde_json::json!([{"field": "temperature", "configured": 0.5}]);
        for (file, arm) in [
            ("summary.json", &summary["run"]["arms"][0]),
            ("plan.json", &plan["arms"][0]),
        ] {
            let got = &arm["omitted"];
            assert_eq!(
                got[0]["field"], omitted[0]["field"],
                "{model} {file}: {arm}"
            );
            assert_eq!(
                got[0]["configured"], omitted[0]["configured"],
                "{model} {file}: {arm}"
            );
            let map_says = format!(
                "LiteLLM model map 1.110.2 of 2026-12-08: supports_sampling_params false ({model})"
            );
            let why = if model.starts_with("claude-opus") {
                "Opus 4.7"
            } else {
                map_says.as_str()
            };
            assert!(
                got[0]["reason"].as_str().is_some_and(|r| r.contains(why)),
                "{model} {file}: {arm}"
            );
            assert!(arm["temperature"].is_null(), "{model} {file}: {arm}");
        }
        assert_eq!(warnings.len(), 1, "{model}: {summary}");
        assert_eq!(warnings[0]["provider"], provider.as_str());
        assert_eq!(warnings[0]["model"], model);
        assert_eq!(warnings[0]["field"], "temperature");
        assert_eq!(warnings[0]["configured"], 0.5);
        // The run's own terminal report, `report` in the terminal, and report.md say it.
        assert!(r.stdout.contains(&said), "{model}: {}", r.stdout);
        assert!(report.stdout.contains(&said), "{model}: {}", report.stdout);
        // report.md writes a backtick as an entity, so a name cannot open a code span.
        assert!(
            markdown.contains(&said.replace('`', "&#96;")),
            "{model}: {markdown}"
        );
    }
}
