//! `toolscore import traffic` through the binary, on the sample logs of tests/data/traffic (one
//! per format, written by its generate.py with secrets and personal data planted): counts and
//! skip reasons, every planted value absent from every file written, redacted arguments
//! matched by `any`, provenance, the datasets load in `validate`, no overwrite without --force,
//! a seeded sample, a bad log line located, `run` replaying the logged replies through a
//! fake OpenAI server passes every case, and secrets in ids, in keys of any naming style and in
//! JSON strings inside tool results are redacted with each result still answering its call.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::*;

/// Every secret and personal value generate.py plants in the logs.
const PLANTED: &[&str] = &[
    "sk-proj-Pl4ntedOpenAIKey0000aaaaBBBBccccDDDD",
    "sk-ant-api03-Pl4ntedAnthropicKey_0000-xyzXYZ",
    "AKIAZ7PLANTEDKEY0042",
    "ghp_Pl4ntedGitHubToken0123456789abcdefABCD",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
    "tok_live_Pl4ntedBearer7f3a9c2e1d",
    "maria.kowalski@example.org",
    "j.okafor@mailbox.example",
    "+44 20 7946 0958",
    "7946 0958",
    "14 Elm Row",
    "live_9f8e7d6c5b4a3921",
];

const REDACT: &str = "email,phone,$.customer.address";

fn log(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/traffic")
        .join(name)
        .display()
        .to_string()
}

fn import(dir: &Path, logs: &[&str], extra: &[&str]) -> Run {
    let paths: Vec<String> = logs.iter().map(|l| log(l)).collect();
    let mut args = vec!["import", "traffic"];
    args.extend(paths.iter().map(String::as_str));
    args.extend_from_slice(&["--redact", REDACT, "--name", "support"]);
    args.extend_from_slice(extra);
    toolscore(dir, &args)
}

/// Rows of the printed table, split on whitespace.
fn rows(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)
        .expect("read dir")
        .filter_map(Result::ok)
    {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

fn cases(dataset: &Path) -> Vec<Value> {
    std::fs::read_to_string(dataset.join("cases.jsonl"))
        .expect("cases.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a case"))
        .collect()
}

fn assert_nothing_planted(dir: &Path) {
    let files = files_under(dir);
    assert!(files.len() >= 2, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).expect("text");
        for secret in PLANTED {
            assert!(
                !text.contains(secret),
                "{} holds the planted {secret}",
                file.display()
            );
        }
    }
}

/// The case whose expected call is `tool`.
fn case_of<'a>(cases: &'a [Value], tool: &str) -> &'a Value {
    cases
        .iter()
        .find(|c| c["expect"]["tool"] == tool)
        .unwrap_or_else(|| panic!("no case expects {tool}"))
}

/// A log, its format, the cases imported, rows expected in the table, and the lines printed
/// before it (exchanges skipped before their catalog was read).
type Expected<'a> = (&'a str, &'a str, usize, &'a [&'a str], &'a [&'a str]);

#[test]
fn each_format_imports_redacted_located_and_valid() {
    let formats: &[Expected] = &[
        (
            "openai-chat.jsonl",
            "openai-chat",
            8,
            &[
                "(no call) 2 0 -",
                "lookup_customer 1 1 1 near-identical to an earlier conversation with the same expected tool",
                "get_order + get_order 1 0 -",
                "refund_order 1 0 -",
            ],
            &["skipped 1: the response is an HTTP error (429)"],
        ),
        (
            "openai-responses.jsonl",
            "openai-responses",
            8,
            &[
                "(no call) 2 0 -",
                "lookup_customer 1 1 1 near-identical to an earlier conversation with the same expected tool",
                "send_email 1 0 -",
            ],
            &[
                "skipped 1: the request continues a stored response (previous_response_id): the earlier turns are not in the log",
            ],
        ),
        (
            "anthropic.jsonl",
            "anthropic",
            8,
            &[
                "(no call) 2 0 -",
                "lookup_customer 1 1 1 near-identical to an earlier conversation with the same expected tool",
                "create_ticket 1 0 -",
            ],
            &[],
        ),
        (
            "otel-genai.jsonl",
            "otel-genai",
            7,
            &[
                "(no call) 1 0 -",
                "lookup_customer 1 1 1 near-identical to an earlier conversation with the same expected tool",
                "get_order 1 0 -",
            ],
            &[
                "skipped 1: no gen_ai.tool.definitions: the span does not record which tools the model saw",
                "ignored 9 spans that are not model calls (no gen_ai.input.messages)",
            ],
        ),
    ];
    for (file, format, imported, table, before) in formats {
        let dir = tempfile::tempdir().expect("tempdir");
        let run = import(dir.path(), &[file], &[]);
        assert_eq!(run.code, 0, "{file}: {}", run.transcript());
        let printed = rows(&run.stdout);
        for row in table.iter().chain(before.iter()) {
            assert!(
                printed.iter().any(|l| l == row),
                "{file}: no row `{row}` in\n{}",
                run.stdout
            );
        }
        assert!(run.stdout.contains("redacted "), "{}", run.stdout);
        for secret in PLANTED {
            assert!(!run.stdout.contains(secret) && !run.stderr.contains(secret));
        }

        // The Responses log has a second agent shown one tool: a second dataset.
        let datasets: Vec<PathBuf> = std::fs::read_dir(dir.path().join("datasets"))
            .expect("datasets")
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        let main = if *format == "openai-responses" {
            assert_eq!(datasets.len(), 2, "{datasets:?}");
            datasets
                .iter()
                .find(|d| cases(d).len() > 1)
                .expect("the five-tool dataset")
                .clone()
        } else {
            assert_eq!(datasets.len(), 1, "{datasets:?}");
            assert_eq!(datasets[0], dir.path().join("datasets/support"));
            datasets[0].clone()
        };
        let validate = toolscore(
            dir.path(),
            &["validate", "--dataset", &main.display().to_string()],
        );
        assert_eq!(validate.code, 0, "{file}: {}", validate.transcript());
        assert!(
            validate
                .stdout
                .contains(&format!("5 tools, {imported} cases")),
            "{}",
            validate.stdout
        );
        assert_nothing_planted(&dir.path().join("datasets"));

        let cases = cases(&main);
        assert_eq!(cases.len(), *imported);
        for c in &cases {
            assert_eq!(c["source"]["format"], *format, "{c}");
            assert!(c["source"]["line"].as_u64().is_some_and(|l| l >= 1), "{c}");
            assert!(
                c["source"]["catalog"]
                    .as_str()
                    .unwrap()
                    .starts_with("sha256:")
            );
            if *format == "otel-genai" {
                assert_eq!(c["source"]["trace_id"].as_str().map(str::len), Some(32));
                assert_eq!(c["source"]["span_id"].as_str().map(str::len), Some(16));
            }
        }
        // A redacted argument is accepted whatever the model sends there.
        let lookup = case_of(&cases, "lookup_customer");
        assert_eq!(lookup["expect"]["args"]["email"], "[REDACTED:email]");
        assert_eq!(lookup["expect"]["match"]["email"], "any");
        // An id copied from the conversation stays exact; a made-up key and a date do not.
        let refund = case_of(&cases, "refund_order");
        assert_eq!(refund["expect"]["args"]["order_id"], "ord_88123");
        assert!(refund["expect"]["match"].get("order_id").is_none());
        assert_eq!(refund["expect"]["match"]["idempotency_key"], "any");
        let ticket = case_of(&cases, "create_ticket");
        assert!(ticket["expect"]["match"]["due_at"]["regex"].is_string());
        // The tool result: the address at the named path and the CRM key are gone, the
        // customer id the next call needs is kept.
        let get_order = case_of(&cases, "get_order");
        let result = get_order["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool")
            .expect("a tool result");
        let content: Value = serde_json::from_str(result["content"].as_str().unwrap()).unwrap();
        assert_eq!(content["customer"]["address"], "[REDACTED:address]");
        assert_eq!(content["crm"]["api_key"], "[REDACTED:secret]");
        assert_eq!(content["customer"]["id"], "cus_4421");
        // A text reply is a no-call case.
        assert!(cases.iter().any(|c| c["expect"]["tool"].is_null()));
    }
}

#[test]
fn all_formats_at_once_share_a_catalog_and_a_second_one_gets_its_own_dataset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let logs = [
        "openai-chat.jsonl",
        "openai-responses.jsonl",
        "anthropic.jsonl",
        "otel-genai.jsonl",
    ];
    let run = import(dir.path(), &logs, &[]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    // The same conversations logged in four formats are one catalog and near-duplicates of
    // each other: only the first of each is kept.
    let printed = rows(&run.stdout);
    assert!(
        printed.contains(&"refund_order 1 3 3 near-identical to an earlier conversation with the same expected tool".to_owned()),
        "{}",
        run.stdout
    );
    let names: Vec<String> = std::fs::read_dir(dir.path().join("datasets"))
        .expect("datasets")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("support-") && n.len() == "support-".len() + 8),
        "{names:?}"
    );
    assert_nothing_planted(&dir.path().join("datasets"));
}

#[test]
fn never_overwrites_without_force() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert_eq!(import(dir.path(), &["anthropic.jsonl"], &[]).code, 0);
    let cases = dir.path().join("datasets/support/cases.jsonl");
    std::fs::write(&cases, "edited by hand\n").expect("edit");
    let again = import(dir.path(), &["anthropic.jsonl"], &[]);
    assert_eq!(again.code, 2, "{}", again.transcript());
    assert!(
        again
            .stderr
            .contains("datasets/support already exists; pass --force to replace it"),
        "{}",
        again.stderr
    );
    assert_eq!(std::fs::read_to_string(&cases).unwrap(), "edited by hand\n");
    let forced = import(dir.path(), &["anthropic.jsonl"], &["--force"]);
    assert_eq!(forced.code, 0, "{}", forced.transcript());
    assert_eq!(std::fs::read_to_string(&cases).unwrap().lines().count(), 8);
}

#[test]
fn the_sample_is_per_tool_and_the_same_for_the_same_seed() {
    let draw = |seed: &str, out: &str| {
        let dir = tempfile::tempdir().expect("tempdir");
        let run = import(
            dir.path(),
            &["openai-chat.jsonl"],
            &["--sample", "1", "--per-tool", "--seed", seed, "--out", out],
        );
        assert_eq!(run.code, 0, "{}", run.transcript());
        assert!(
            rows(&run.stdout).contains(&"(no call) 1 1 1 not drawn by --sample".to_owned()),
            "{}",
            run.stdout
        );
        let text = std::fs::read_to_string(dir.path().join(out).join("support/cases.jsonl"))
            .expect("cases");
        let ids: Vec<String> = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].to_string())
            .collect();
        (text, ids)
    };
    let (first, ids) = draw("3", "a");
    let (second, _) = draw("3", "b");
    assert_eq!(first, second);
    // One per tool: six tools (parallel counted as its own) and one text reply.
    assert_eq!(ids.len(), 7, "{ids:?}");
    // Some seed draws the other text reply.
    let others: Vec<Vec<String>> = (0..8).map(|s| draw(&s.to_string(), "c").1).collect();
    assert!(others.iter().any(|o| o != &ids), "{others:?}");
}

#[test]
fn a_bad_log_line_is_located_and_nothing_is_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = std::fs::read_to_string(log("openai-chat.jsonl")).expect("log");
    let first = good.lines().next().unwrap();
    std::fs::write(
        dir.path().join("bad.jsonl"),
        format!("{first}\n{{\"request\": {{\"messages\": [\n"),
    )
    .unwrap();
    let run = toolscore(dir.path(), &["import", "traffic", "bad.jsonl"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains("bad.jsonl:2: not a JSON line"),
        "{}",
        run.stderr
    );
    assert!(!dir.path().join("datasets").exists());

    std::fs::write(
        dir.path().join("odd.jsonl"),
        format!("{first}\n{first}\n{{\"prompt\": \"hi\", \"completion\": \"hello\"}}\n"),
    )
    .unwrap();
    let run = toolscore(dir.path(), &["import", "traffic", "odd.jsonl"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains("odd.jsonl:3: cannot tell the format"),
        "{}",
        run.stderr
    );
    let forced = toolscore(
        dir.path(),
        &["import", "traffic", "odd.jsonl", "--format", "anthropic"],
    );
    assert_eq!(forced.code, 2, "{}", forced.transcript());
    assert!(
        forced.stderr.contains("odd.jsonl:1: no `request.messages`")
            || forced.stderr.contains("odd.jsonl:3: no `request` object"),
        "{}",
        forced.stderr
    );
    assert!(!dir.path().join("datasets").exists());

    let bad_path = toolscore(
        dir.path(),
        &["import", "traffic", "odd.jsonl", "--redact", "$.a["],
    );
    assert_eq!(bad_path.code, 2, "{}", bad_path.transcript());
    assert!(
        bad_path.stderr.contains("--redact $.a["),
        "{}",
        bad_path.stderr
    );
}

/// Replays each case's logged reply: the expected calls as tool calls, or text.
fn replay_reply(cases: &[Value], req: &FakeRequest) -> FakeResponse {
    let last = req.body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    let Some(case) = cases.iter().find(|c| {
        c["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            == Some(last.as_str())
    }) else {
        return FakeResponse::ok(text_body("no case ends like this"));
    };
    let expect = &case["expect"];
    let calls: Vec<(String, String)> = match expect.get("calls").and_then(Value::as_array) {
        Some(calls) => calls
            .iter()
            .map(|c| {
                (
                    c["tool"].as_str().unwrap().to_owned(),
                    c["args"].to_string(),
                )
            })
            .collect(),
        None if expect["tool"].is_null() => Vec::new(),
        None => vec![(
            expect["tool"].as_str().unwrap().to_owned(),
            expect["args"].to_string(),
        )],
    };
    if calls.is_empty() {
        return FakeResponse::ok(text_body("Happy to help."));
    }
    let borrowed: Vec<(&str, &str)> = calls
        .iter()
        .map(|(n, a)| (n.as_str(), a.as_str()))
        .collect();
    FakeResponse::ok(tool_call_body(&borrowed))
}

#[test]
fn run_accepts_the_imported_dataset_and_the_logged_replies_pass() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert_eq!(import(dir.path(), &["openai-chat.jsonl"], &[]).code, 0);
    let imported = cases(&dir.path().join("datasets/support"));
    let server = FakeServer::start_in_background(move |req| replay_reply(&imported, req));
    let run = toolscore(
        dir.path(),
        &[
            "run",
            "--provider",
            "openai-compat",
            "--base-url",
            &server.base_url,
            "--model",
            "m",
            "--dataset",
            "datasets/support",
            "--trials",
            "2",
            "--out",
            "out",
            "--progress",
            "off",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let run_dir = std::fs::read_dir(dir.path().join("out"))
        .expect("out")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.join("results.jsonl").is_file())
        .expect("a run folder");
    let text = std::fs::read_to_string(run_dir.join("results.jsonl")).expect("results");
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 16);
    for r in &records {
        assert_eq!(r["score"]["passed"], true, "{r}");
    }
}

#[test]
fn a_pretty_printed_otlp_export_is_read_as_one_document() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = std::fs::read_to_string(log("otel-genai.jsonl")).expect("log");
    let export: Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    std::fs::write(
        dir.path().join("export.json"),
        serde_json::to_string_pretty(&export).unwrap(),
    )
    .unwrap();
    let run = toolscore(
        dir.path(),
        &["import", "traffic", "export.json", "--redact", REDACT],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stdout
            .contains("read 1 exchanges from export.json (1 otel-genai)"),
        "{}",
        run.stdout
    );
    let cases = cases(&dir.path().join("datasets/traffic"));
    assert_eq!(cases.len(), 1);
    assert_eq!(cases[0]["expect"]["tool"], "get_order");
    assert_eq!(cases[0]["source"]["line"], 1);
    assert_eq!(
        cases[0]["source"]["trace_id"],
        export["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    );
    assert_nothing_planted(&dir.path().join("datasets"));
}

/// Values an independent probe found written verbatim: a key used as a call id, camelCase
/// (and other styles of) secret keys, and secrets in JSON strings inside a tool result.
const PROBED: &[&str] = &[
    "sk-proj-IdPl4ntedKey0000111122223333444455",
    "sk-proj-RespIdPl4nted000011112222333344445",
    "cs_Pl4ntedCamelSecret_9a8b7c",
    "at-Pl4ntedCamelToken-5d4e3f",
    "ak_Pl4ntedPascalKey_31337",
    "Pl4ntedScreamingToken_4242",
    "Pl4ntedKebabKey-0101",
    "Pl4ntedDottedSecret.77",
    "abc123Pl4ntedNestedToken",
    "sess_Pl4ntedDoubleNested77",
];

fn probe_tools() -> Value {
    serde_json::json!([
        {"name": "get_order", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}},
        {"name": "connect_crm", "parameters": {"type": "object", "properties": {"crm": {"type": "string"}}}}
    ])
}

/// A Chat Completions line: the key is the first call's id, the second call's arguments hold
/// camelCase secrets next to a count, and the results hold secrets in (nested) JSON strings.
fn probe_chat_line() -> Value {
    let chat_tools: Vec<Value> = probe_tools()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| serde_json::json!({"type": "function", "function": t}))
        .collect();
    let connect_args = serde_json::json!({
        "crm": "acme", "clientSecret": PROBED[2], "accessToken": PROBED[3], "maxTokens": 512
    });
    // The body was JSON-encoded twice: the content is a JSON string holding an object.
    let body = format!("{{\"token\": \"{}\", \"status\": \"shipped\"}}", PROBED[8]);
    let token_result = Value::String(body).to_string();
    let inner = serde_json::json!({"Session-Id": PROBED[9]}).to_string();
    let double_result = serde_json::json!({"input_tokens": 7, "data": inner}).to_string();
    serde_json::json!({"request": {"messages": [
        {"role": "user", "content": "Is order ord_5512 shipped? Then reconnect the CRM."},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": PROBED[0], "type": "function", "function": {"name": "get_order", "arguments": "{\"order_id\": \"ord_5512\"}"}},
            {"id": "call_ok_2", "type": "function", "function": {"name": "connect_crm", "arguments": connect_args.to_string()}}
        ]},
        {"role": "tool", "tool_call_id": PROBED[0], "content": token_result},
        {"role": "tool", "tool_call_id": "call_ok_2", "content": double_result}
    ], "tools": chat_tools},
    "response": {"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_3", "type": "function", "function": {"name": "connect_crm", "arguments": serde_json::json!({
            "crm": "acme", "ApiKey": PROBED[4], "ACCESS_TOKEN": PROBED[5],
            "x-api-key": PROBED[6], "oauth.client.secret": PROBED[7], "tokens_per_minute": 900
        }).to_string()}}
    ]}}]}})
}

/// A Responses line: the key is a `call_id`.
fn probe_responses_line() -> Value {
    let tools: Vec<Value> = probe_tools()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let mut t = t.clone();
            t["type"] = "function".into();
            t
        })
        .collect();
    serde_json::json!({"request": {"input": [
        {"role": "user", "content": "Where is order ord_6613?"},
        {"type": "function_call", "call_id": PROBED[1], "name": "get_order", "arguments": "{\"order_id\": \"ord_6613\"}"},
        {"type": "function_call_output", "call_id": PROBED[1], "output": "{\"status\": \"late\"}"}
    ], "tools": tools},
    "response": {"object": "response", "status": "completed", "output": [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It is late."}]}
    ]}})
}

/// Each tool result's content, keyed by the name of the call it answers; panics when a result
/// answers no earlier call.
fn results_by_call(case: &Value) -> Vec<(String, String, String)> {
    let mut names = std::collections::BTreeMap::new();
    let mut out = Vec::new();
    for m in case["messages"].as_array().expect("messages") {
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            let id = c["id"].as_str().expect("every logged call has an id");
            names.insert(id.to_owned(), c["name"].as_str().unwrap().to_owned());
        }
        if m["role"] == "tool" {
            let id = m["call_id"].as_str().unwrap().to_owned();
            let name = names
                .get(&id)
                .unwrap_or_else(|| panic!("{id} answers no call"));
            out.push((id, name.clone(), m["content"].as_str().unwrap().to_owned()));
        }
    }
    out
}

#[test]
fn ids_keys_in_every_naming_style_and_json_inside_strings_are_redacted() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("probe.jsonl"),
        format!("{}\n{}\n", probe_chat_line(), probe_responses_line()),
    )
    .unwrap();
    let run = toolscore(dir.path(), &["import", "traffic", "probe.jsonl"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    for secret in PROBED {
        assert!(!run.stdout.contains(secret) && !run.stderr.contains(secret));
    }
    for file in files_under(&dir.path().join("datasets")) {
        let text = std::fs::read_to_string(&file).expect("text");
        for secret in PROBED {
            assert!(!text.contains(secret), "{} holds {secret}", file.display());
        }
    }
    let validate = toolscore(dir.path(), &["validate", "--dataset", "datasets/traffic"]);
    assert_eq!(validate.code, 0, "{}", validate.transcript());
    assert!(
        validate.stdout.contains("2 tools, 2 cases"),
        "{}",
        validate.stdout
    );

    let cases = cases(&dir.path().join("datasets/traffic"));
    let chat = case_of(&cases, "connect_crm");
    // Each result still answers its own call: the replaced id is the same on both sides,
    // and distinct from the id that was kept.
    let pairs = results_by_call(chat);
    assert_eq!(pairs.len(), 2, "{chat}");
    let (order_id, order_tool, order_result) = &pairs[0];
    assert_eq!(order_tool, "get_order");
    assert_ne!(order_id, "call_ok_2");
    assert_eq!(pairs[1].0, "call_ok_2");
    assert_eq!(pairs[1].1, "connect_crm");
    let body: String = serde_json::from_str(order_result).expect("still a JSON string");
    let token: Value = serde_json::from_str(&body).expect("holding an object");
    assert_eq!(token["token"], "[REDACTED:secret]");
    assert_eq!(token["status"], "shipped");
    let double: Value = serde_json::from_str(&pairs[1].2).expect("still JSON");
    assert_eq!(double["input_tokens"], 7, "a count is not a secret");
    let inner: Value = serde_json::from_str(double["data"].as_str().unwrap()).expect("inner");
    assert_eq!(inner["Session-Id"], "[REDACTED:secret]");
    let history = &chat["messages"][1]["tool_calls"][1]["arguments"];
    assert_eq!(history["clientSecret"], "[REDACTED:secret]");
    assert_eq!(history["accessToken"], "[REDACTED:secret]");
    assert_eq!(history["maxTokens"], 512);
    let args = &chat["expect"]["args"];
    for key in ["ApiKey", "ACCESS_TOKEN", "x-api-key", "oauth.client.secret"] {
        assert_eq!(args[key], "[REDACTED:secret]", "{key} in {args}");
    }
    assert_eq!(args["tokens_per_minute"], 900);
    assert_eq!(args["crm"], "acme");

    let text_reply = cases
        .iter()
        .find(|c| c["expect"]["tool"].is_null())
        .expect("the Responses case");
    let pairs = results_by_call(text_reply);
    assert_eq!(pairs.len(), 1, "{text_reply}");
    assert_eq!(pairs[0].1, "get_order");
    assert!(pairs[0].0.starts_with("redacted_"), "{text_reply}");
}

/// Keys glued to the text before them, as a probe found written whole: after `_` in a call
/// id and in text, and after the other separators (`-`, `.`, `:`, `/`, `=`) that never were.
const GLUED: &[&str] = &[
    "sk-proj-Glu3dCallId0000111122223333444455",
    "sk-proj-Glu3dTextKey000011112222333344446",
    "sk-proj-Glu3dHyphen000011112222333344447",
    "sk-proj-Glu3dDotted000011112222333344448",
    "sk-proj-Glu3dColon0000011112222333344449",
    "sk-proj-Glu3dSlash0000011112222333344450",
    "sk_live_Glu3dStripe0000111122223333",
];

#[test]
fn keys_glued_after_an_underscore_or_a_separator_are_redacted_and_words_stay() {
    let dir = tempfile::tempdir().expect("tempdir");
    let chat_tools: Vec<Value> = probe_tools()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| serde_json::json!({"type": "function", "function": t}))
        .collect();
    let call_id = format!("call_{}", GLUED[0]);
    let user = format!(
        "Is order ord_5512 shipped? My key_{} and id-{} and v1.{} and key:{} and \
         https://api.example/{} and stripe_{} leaked; the desk-mounted-monitor-stand-holder \
         and the task-force-alpha-bravo-charlie-delta are ordinary words.",
        GLUED[1], GLUED[2], GLUED[3], GLUED[4], GLUED[5], GLUED[6]
    );
    let line = serde_json::json!({"request": {"messages": [
        {"role": "user", "content": user},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "get_order", "arguments": "{\"order_id\": \"ord_5512\"}"}}
        ]},
        {"role": "tool", "tool_call_id": call_id, "content": "{\"status\": \"shipped\"}"}
    ], "tools": chat_tools},
    "response": {"choices": [{"message": {"role": "assistant", "content": "It shipped."}}]}});
    std::fs::write(dir.path().join("glued.jsonl"), format!("{line}\n")).unwrap();
    let run = toolscore(dir.path(), &["import", "traffic", "glued.jsonl"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    for file in files_under(&dir.path().join("datasets")) {
        let text = std::fs::read_to_string(&file).expect("text");
        for secret in GLUED {
            assert!(!text.contains(secret), "{} holds {secret}", file.display());
        }
    }
    let cases = cases(&dir.path().join("datasets/traffic"));
    assert_eq!(cases.len(), 1);
    let messages = &cases[0]["messages"];
    assert_eq!(
        messages[0]["content"],
        "Is order ord_5512 shipped? My key_[REDACTED:api_key] and id-[REDACTED:api_key] and \
         v1.[REDACTED:api_key] and key:[REDACTED:api_key] and \
         https://api.example/[REDACTED:api_key] and stripe_[REDACTED:api_key] leaked; the \
         desk-mounted-monitor-stand-holder and the task-force-alpha-bravo-charlie-delta are \
         ordinary words."
    );
    // The call id is replaced whole, and the result still answers the call.
    let pairs = results_by_call(&cases[0]);
    assert_eq!(pairs.len(), 1, "{}", cases[0]);
    assert!(pairs[0].0.starts_with("redacted_api_key_"), "{}", cases[0]);
    assert_eq!(pairs[0].1, "get_order");
}
