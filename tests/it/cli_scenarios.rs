//! Multi-step scenarios through the binary, against a fake OpenAI-compatible model scripted per
//! step (it reads the tool results fed back to it): the recorded trajectory, each metric's
//! exact value on known scripts, the step limit, unscripted calls, state assertions, error
//! results, the tool-result feedback format, result-wording variants as arms, re-aggregation
//! from results.jsonl alone, and loading errors with exit 2.

use crate::support;

use serde_json::Value;
use support::{
    FakeRequest, FakeResponse, FakeServer, fake_project, first_user_message, text_body,
    tool_call_body, tool_results, toolscore,
};

const TOOLS: &str = r#"{"tools": [
  {"name": "append_note", "description": "Append a line to notes.md.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string", "minLength": 1}}, "required": ["text"], "additionalProperties": false}},
  {"name": "find_customer", "description": "Find a customer by email.", "inputSchema": {"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]}},
  {"name": "apply_credit", "description": "Credit an account.", "inputSchema": {"type": "object", "properties": {"customer_id": {"type": "string"}, "amount": {"type": "number", "exclusiveMinimum": 0}}, "required": ["customer_id", "amount"]}}
]}"#;

const CASES: &str = r#"{"id": "c", "messages": [{"role": "user", "content": "hello"}], "expect": {"tool": null}}
"#;

const ACK: &str = r#"description: Acknowledgement wording and the retry rate.
catalog: ../data/tools.json
max_steps: 6
messages:
  - role: user
    content: "Add 'buy milk' to my notes."
state:
  notes: []
tools:
  append_note:
    - effects:
        - append: {path: notes, value: "${args.text}"}
      content: '{"ok": true}'
      variants:
        verbose:
          content: "Saved. notes.md now has ${#state.notes} entry."
expect:
  sequence:
    mode: exact
    calls:
      - tool: append_note
        args: {text: buy milk}
  state:
    - {path: notes, length: 1}
"#;

const RECOVER: &str = r#"description: A validation error the model must correct.
catalog: ../data/tools.json
max_steps: 5
messages:
  - role: user
    content: "Credit C-1 five euros."
state: {}
tools:
  apply_credit:
    - effects:
        - set: {path: credited, value: "${args.amount}"}
      result: {ok: true, balance: 105}
expect:
  state:
    - {path: credited, equals: 5}
  answer:
    cites: [apply_credit.balance]
"#;

const CHAIN: &str = r#"description: The id from the first result feeds the second call.
catalog: ../data/tools.json
max_steps: 4
messages:
  - role: user
    content: "Give ana@example.com a 10 EUR credit."
tools:
  find_customer:
    - when: {args: {email: ana@example.com}}
      result: {customer_id: C-1042}
    - error: "No customer with that email."
  apply_credit:
    - when: {args: {customer_id: C-1042}}
      result: "Credited."
expect:
  sequence:
    mode: in_order
    calls:
      - tool: find_customer
      - tool: {any_of: [apply_credit]}
        uses: {customer_id: find_customer.customer_id}
  forbidden: [append_note]
  answer:
    contains: [credited]
"#;

const LOOPING: &str = r#"description: A model that never stops calling, and a call no rule covers.
catalog: ../data/tools.json
max_steps: 3
messages:
  - role: user
    content: "Look up bo@example.org forever."
tools:
  find_customer:
    - when: {args: {email: ana@example.com}}
      result: {customer_id: C-1042}
expect:
  max_calls: 5
"#;

/// A model scripted per step from what it has been told so far.
fn agent(req: &FakeRequest) -> FakeResponse {
    let user = first_user_message(req);
    let results = tool_results(req);
    let body = if user.contains("buy milk") {
        // `{"ok": true}` does not read as success to this model: it writes again, three
        // times in all; a result that says what happened is believed at once.
        match results.last() {
            Some(last) if last.starts_with("Saved") || results.len() >= 3 => {
                text_body("Added to your notes.")
            }
            _ => tool_call_body(&[("append_note", r#"{"text":"buy milk"}"#)]),
        }
    } else if user.contains("five euros") {
        match results.len() {
            0 => tool_call_body(&[("apply_credit", r#"{"customer_id":"C-1","amount":-5}"#)]),
            1 => tool_call_body(&[("apply_credit", r#"{"customer_id":"C-1","amount":5}"#)]),
            _ => text_body("Done: the balance is now 105."),
        }
    } else if user.contains("ana@example.com") {
        match results.len() {
            0 => tool_call_body(&[("find_customer", r#"{"email":"ana@example.com"}"#)]),
            1 if results[0].contains("C-1042") => {
                tool_call_body(&[("apply_credit", r#"{"customer_id":"C-1042","amount":10}"#)])
            }
            _ => text_body("Credited 10 EUR to C-1042."),
        }
    } else if user.contains("forever") {
        tool_call_body(&[("find_customer", r#"{"email":"bo@example.org"}"#)])
    } else {
        text_body("Hello!")
    };
    FakeResponse::ok(body)
}

fn project(server: &FakeServer) -> tempfile::TempDir {
    fake_project(
        &server.base_url,
        TOOLS,
        CASES,
        &[
            ("scenarios/ack.yaml", ACK),
            ("scenarios/recover.yaml", RECOVER),
            ("scenarios/chain.yaml", CHAIN),
            ("scenarios/looping.yaml", LOOPING),
        ],
    )
}

fn scenario<'a>(summary: &'a Value, variant: &str, name: &str) -> &'a Value {
    summary["scenarios"]
        .as_array()
        .and_then(|arms| arms.iter().find(|a| a["arm"]["variant"] == variant))
        .and_then(|a| a["scenarios"].as_array())
        .and_then(|s| s.iter().find(|s| s["name"] == name))
        .unwrap_or_else(|| panic!("scenario {name} in arm {variant}: {summary}"))
}

fn xn(stat: &Value) -> (u64, u64) {
    (
        stat["x"].as_u64().unwrap_or(99),
        stat["n"].as_u64().unwrap_or(99),
    )
}

#[test]
fn scenarios_run_beside_datasets_and_every_metric_has_its_exact_value() {
    let server = FakeServer::start_in_background(agent);
    let dir = project(&server);
    let out = dir.path().join("out");
    let run = toolscore(
        dir.path(),
        &[
            "run",
            "--dataset",
            "data",
            "--scenario",
            "scenarios",
            "--trials",
            "4",
            "--concurrency",
            "3",
            "--out",
            out.to_str().unwrap_or_default(),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let rd = support::only_run_dir(&out);
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(rd.join("summary.json")).expect("summary"))
            .expect("json");
    // The dataset is scored as before and the scenarios apart.
    assert_eq!(summary["arms"][0]["suite"]["metrics"]["pass"]["n"], 4);
    assert_eq!(summary["completed_trials"], 4 * 5);

    // ack: three identical writes, two of them repeats after a success; the state shows the
    // write happened three times, so the state assertion and the exact sequence fail.
    let ack = scenario(&summary, "base", "ack");
    assert_eq!(xn(&ack["success"]), (0, 4));
    assert_eq!(xn(&ack["retry"]), (8, 12));
    assert_eq!(xn(&ack["retry_after_success"]), (8, 12));
    assert_eq!(xn(&ack["retry_after_error"]), (0, 12));
    assert_eq!(ack["step_efficiency"]["mean"], 3.0);
    assert_eq!(ack["steps_per_trial"]["mean"], 4.0);

    // recover: an invalid amount gets a validation error naming the path, the model corrects
    // it (recovery 1 of 1 per trial) and cites the balance from the result.
    let rec = scenario(&summary, "base", "recover");
    assert_eq!(xn(&rec["success"]), (4, 4));
    assert_eq!(xn(&rec["recovery"]), (4, 4));
    assert_eq!(xn(&rec["retry"]), (0, 8));

    // chain: the id from find_customer is used by apply_credit.
    let chain = scenario(&summary, "base", "chain");
    assert_eq!(xn(&chain["success"]), (4, 4));
    let k2 = chain["pass_k"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["k"] == 2))
        .expect("k=2");
    assert_eq!(k2["pass_hat_k"], 1.0);

    // looping: three steps, each an unscripted call: the step limit and the gap both show.
    let lp = scenario(&summary, "base", "looping");
    assert_eq!(xn(&lp["success"]), (0, 4));
    assert_eq!(lp["step_limit"], 4);
    assert_eq!(lp["unscripted_calls"], 12);

    // Every step of every trial is in results.jsonl: the trajectory with the results fed back.
    let results = std::fs::read_to_string(rd.join("results.jsonl")).expect("results");
    let recs: Vec<Value> = results
        .lines()
        .map(|l| serde_json::from_str(l).expect("record"))
        .collect();
    let recover = recs
        .iter()
        .find(|r| r["case_id"] == "recover")
        .expect("recover record");
    let calls = recover["trajectory"]["calls"].as_array().expect("calls");
    assert_eq!(calls[0]["kind"], "invalid_arguments");
    assert_eq!(calls[0]["is_error"], true);
    assert!(
        calls[0]["content"].as_str().unwrap_or_default().starts_with("Invalid arguments for apply_credit: amount: -5 is less than or equal to the minimum of 0"),
        "{}",
        calls[0]["content"]
    );
    assert_eq!(calls[1]["kind"], "scripted");
    assert_eq!(
        recover["trajectory"]["final_state"],
        serde_json::json!({"credited": 5})
    );
    assert_eq!(recover["trajectory"]["stop"], "final_answer");
    assert_eq!(recover["turns"].as_array().map(Vec::len), Some(3));
    assert_eq!(recover["dataset"], "scenarios");
    let looping = recs
        .iter()
        .find(|r| r["case_id"] == "looping")
        .expect("looping");
    assert_eq!(looping["trajectory"]["stop"], "step_limit");
    assert_eq!(looping["trajectory"]["calls"][0]["kind"], "unscripted");

    // The terminal report shows each scenario's rates with intervals and counts.
    assert!(
        run.stdout
            .contains("scenario ack (expects append_note) · 4 trials judged"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("  retry            0.667 ["),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("  recovery         1.000 ["),
        "{}",
        run.stdout
    );

    // Re-aggregated from results.jsonl alone, the scenario figures are the same.
    let header: toolscore_summary::SummaryHeader =
        serde_json::from_value(summary.clone()).expect("header");
    let again = toolscore_summary::reaggregate(&rd.join("results.jsonl"), header, 0.95, 0.05)
        .expect("reaggregate");
    assert_eq!(
        serde_json::to_value(&again.scenarios).expect("json"),
        summary["scenarios"]
    );
}

#[test]
fn the_results_come_back_to_the_model_in_the_wire_format_and_wording_variants_run_as_arms() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let log = seen.clone();
    let server = FakeServer::start_in_background(move |req| {
        if let Ok(mut l) = log.lock() {
            l.push(req.body.clone());
        }
        agent(req)
    });
    let dir = project(&server);
    let out = dir.path().join("out");
    let run = toolscore(
        dir.path(),
        &[
            "run",
            "--scenario",
            "scenarios/ack.yaml",
            "--variant",
            "base",
            "--variant",
            "verbose",
            "--trials",
            "3",
            "--concurrency",
            "1",
            "--out",
            out.to_str().unwrap_or_default(),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(support::only_run_dir(&out).join("summary.json"))
            .expect("summary"),
    )
    .expect("json");
    // The wording that says what happened removes the retries.
    assert_eq!(xn(&scenario(&summary, "base", "ack")["retry"]), (6, 9));
    assert_eq!(xn(&scenario(&summary, "verbose", "ack")["retry"]), (0, 3));
    assert_eq!(xn(&scenario(&summary, "verbose", "ack")["success"]), (3, 3));

    // The second request of a trial carries the assistant's call and the tool result, answered
    // by id, in the chat-completions format.
    let bodies = seen.lock().map(|b| b.clone()).unwrap_or_default();
    let second = bodies
        .iter()
        .find(|b| b["messages"].as_array().is_some_and(|m| m.len() == 3))
        .expect("a second step");
    let m = &second["messages"];
    assert_eq!(m[1]["role"], "assistant");
    assert_eq!(m[1]["tool_calls"][0]["function"]["name"], "append_note");
    assert_eq!(m[2]["role"], "tool");
    assert_eq!(m[2]["tool_call_id"], m[1]["tool_calls"][0]["id"]);
    assert!(second["tools"].as_array().is_some_and(|t| t.len() == 3));
}

#[test]
fn a_scenario_replays_from_its_recording_and_validate_lists_it() {
    let server = FakeServer::start_in_background(agent);
    let dir = project(&server);
    let cassette = dir.path().join("rec.cassette.jsonl");
    let first = toolscore(
        dir.path(),
        &[
            "run",
            "--scenario",
            "scenarios",
            "--trials",
            "2",
            "--record",
            cassette.to_str().unwrap_or_default(),
            "--out",
            "out1",
        ],
    );
    assert_eq!(first.code, 0, "{}", first.transcript());
    drop(server);
    let replay = format!("replay:{}", cassette.display());
    let second = toolscore(
        dir.path(),
        &[
            "run",
            "--scenario",
            "scenarios",
            "--provider",
            &replay,
            "--out",
            "out2",
        ],
    );
    assert_eq!(second.code, 0, "{}", second.transcript());
    let read = |d: &str| -> Value {
        serde_json::from_str(
            &std::fs::read_to_string(
                support::only_run_dir(&dir.path().join(d)).join("summary.json"),
            )
            .expect("summary"),
        )
        .expect("json")
    };
    let (a, b) = (read("out1"), read("out2"));
    for name in ["ack", "recover", "chain", "looping"] {
        let pick = |s: &Value| {
            let sc = s["scenarios"][0]["scenarios"]
                .as_array()
                .and_then(|v| v.iter().find(|x| x["name"] == name))
                .cloned()
                .expect("scenario");
            (
                sc["success"].clone(),
                sc["retry"].clone(),
                sc["recovery"].clone(),
                sc["calls_per_trial"].clone(),
            )
        };
        assert_eq!(pick(&a), pick(&b), "{name}");
    }
    let v = toolscore(dir.path(), &["validate", "--scenario", "scenarios"]);
    assert_eq!(v.code, 0, "{}", v.transcript());
    assert!(v.stdout.contains("scenario chain, 2 scripted tools (3 rules), max 4 steps, expects find_customer → apply_credit"), "{}", v.stdout);
    assert!(
        v.stdout.contains("result variants: verbose"),
        "{}",
        v.stdout
    );
}

#[test]
fn broken_scenarios_stop_before_any_request_with_file_line_and_field() {
    let server = FakeServer::start_in_background(agent);
    let bad = ACK.replace("  append_note:\n", "  append_nope:\n");
    let dir = fake_project(
        &server.base_url,
        TOOLS,
        CASES,
        &[("scenarios/ack.yaml", &bad)],
    );
    let run = toolscore(dir.path(), &["run", "--scenario", "scenarios/ack.yaml"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains(
            "scenarios/ack.yaml:10: tools.append_nope: `append_nope` is not a tool of the catalog"
        ),
        "{}",
        run.stderr
    );
    let unknown_variant = toolscore(
        dir.path(),
        &["run", "--dataset", "data", "--variant", "loud"],
    );
    assert_eq!(unknown_variant.code, 2);
    assert_eq!(server.requests_seen(), 0);
}

#[test]
fn against_a_baseline_the_scenarios_whose_majority_sequence_drifted_are_named() {
    let server = FakeServer::start_in_background(agent);
    let dir = project(&server);
    let base = toolscore(
        dir.path(),
        &[
            "run",
            "--scenario",
            "scenarios",
            "--trials",
            "3",
            "--run-id",
            "base",
            "--out",
            "out",
        ],
    );
    assert_eq!(base.code, 0, "{}", base.transcript());
    drop(server);
    // The candidate: the chain now skips the lookup and credits an invented id.
    let skipping = FakeServer::start_in_background(|req| {
        if first_user_message(req).contains("ana@example.com") {
            return FakeResponse::ok(match tool_results(req).len() {
                0 => tool_call_body(&[("apply_credit", r#"{"customer_id":"C-1","amount":10}"#)]),
                _ => text_body("Credited."),
            });
        }
        agent(req)
    });
    std::fs::write(
        dir.path().join("toolscore.yaml"),
        format!(
            "providers:\n  fake:\n    kind: openai-compat\n    base_url: {}\n    model: m\n",
            skipping.base_url
        ),
    )
    .expect("config");
    let run = toolscore(
        dir.path(),
        &[
            "run",
            "--scenario",
            "scenarios",
            "--trials",
            "3",
            "--baseline",
            "out/base",
            "--format",
            "terminal",
            "--format",
            "md",
            "--run-id",
            "cand",
            "--out",
            "out",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stdout.contains("DRIFT against the baseline: scenario chain sequence: \"apply_credit\" in 3/3 trials, was \"find_customer → apply_credit\" in 3/3"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("DRIFT against the baseline: scenario chain answer"),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("scenario ack sequence"),
        "{}",
        run.stdout
    );
    let md = std::fs::read_to_string(dir.path().join("out/cand/report.md")).expect("report.md");
    assert!(
        md.contains("**Drift against the baseline**: chain sequence"),
        "{md}"
    );
    assert!(md.contains("| ack | 0.000 ["), "{md}");
    // Three trials cannot bring a rate within ±0.05: report.md says so, as the terminal does,
    // from the same summary field.
    let summary = support::read_json(&dir.path().join("out/cand/summary.json"));
    let ack = summary["scenarios"][0]["scenarios"]
        .as_array()
        .expect("scenarios")
        .iter()
        .find(|s| s["name"] == "ack")
        .expect("ack");
    let need = ack["trials_needed"].as_u64().expect("trials_needed");
    let warning = format!("about {need} trials would do");
    assert!(md.contains("> **ack**: too few trials: ±"), "{md}");
    assert!(md.contains(&warning), "{md}");
    assert!(run.stdout.contains(&warning), "{}", run.stdout);
}

#[test]
fn a_scenario_executes_its_live_tools_on_a_real_published_server_with_a_fresh_session_per_trial() {
    let Some(modules) = support::published_servers() else {
        return;
    };
    let command = support::server_command(&modules, "@modelcontextprotocol/server-everything");
    let server = FakeServer::start_in_background(|req| {
        let results = tool_results(req);
        FakeResponse::ok(match results.first() {
            None => tool_call_body(&[("echo", r#"{"message":"hello live"}"#)]),
            Some(r) => text_body(&format!("The server said: {r}")),
        })
    });
    let scenario = format!(
        "description: echo on the real server\ncatalog:\n  command: {}\n  args: [{}]\nlive: [echo]\nmax_steps: 3\nmessages:\n  - role: user\n    content: Echo hello live.\nexpect:\n  sequence:\n    mode: exact\n    calls:\n      - tool: echo\n        args: {{message: hello live}}\n  answer:\n    contains: [\"Echo: hello live\"]\n",
        command[0], command[1]
    );
    let dir = fake_project(&server.base_url, TOOLS, CASES, &[("live.yaml", &scenario)]);
    let run = toolscore(
        dir.path(),
        &[
            "run",
            "--scenario",
            "live.yaml",
            "--trials",
            "2",
            "--concurrency",
            "2",
            "--run-id",
            "r",
            "--out",
            "out",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let results = std::fs::read_to_string(dir.path().join("out/r/results.jsonl")).expect("results");
    let recs: Vec<Value> = results
        .lines()
        .map(|l| serde_json::from_str(l).expect("record"))
        .collect();
    assert_eq!(recs.len(), 2);
    for r in &recs {
        let call = &r["trajectory"]["calls"][0];
        assert_eq!(call["kind"], "live", "{r}");
        assert_eq!(call["content"], "Echo: hello live", "{r}");
        assert_eq!(r["outcome"], "pass", "{r}");
    }
    // The catalog came from the server itself.
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("out/r/summary.json")).expect("summary"),
    )
    .expect("json");
    assert!(
        summary["run"]["scenarios"][0]["catalog_source"]
            .as_str()
            .unwrap_or_default()
            .contains("server-everything"),
        "{}",
        summary["run"]["scenarios"]
    );

    // `live` without a server, and a tool both live and scripted, are refused before any request.
    let bad = scenario.replace(
        "live: [echo]\n",
        "live: [echo]\ntools:\n  echo:\n    - result: scripted\n",
    );
    std::fs::write(dir.path().join("bad.yaml"), bad).expect("write");
    let r = toolscore(dir.path(), &["validate", "--scenario", "bad.yaml"]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(
        r.stderr.contains("`echo` is both live and scripted"),
        "{}",
        r.stderr
    );
}

/// Scenario trials that end in infrastructure errors count toward `--max-infra-error-rate`
/// like any trial: a scenario-only run whose every request fails exits 4, and so does a run
/// whose dataset is fine but whose scenarios all failed.
#[test]
fn scenario_trials_lost_to_infrastructure_errors_make_the_run_exit_4() {
    let server = FakeServer::start_in_background(|req: &FakeRequest| {
        if first_user_message(req) == "hello" {
            FakeResponse::ok(text_body("hi"))
        } else {
            FakeResponse::status(500, r#"{"error":{"message":"down"}}"#)
        }
    });
    let dir = project(&server);
    for (id, with_dataset, said) in [
        (
            "scenarios-only",
            false,
            "8 of 8 trials ended in infrastructure errors",
        ),
        (
            "mixed",
            true,
            "8 of 10 trials ended in infrastructure errors",
        ),
    ] {
        let mut args = vec!["run", "--scenario", "scenarios", "--trials", "2"];
        args.extend(["--max-retries", "0", "--out", "out", "--run-id", id]);
        if with_dataset {
            args.extend(["--dataset", "data"]);
        }
        let run = toolscore(dir.path(), &args);
        assert_eq!(run.code, 4, "{id}: {}", run.transcript());
        assert!(run.stderr.contains(said), "{id}: {}", run.stderr);
    }
}

/// A scenario whose effect copies the state into itself doubles it on every call; at 40 steps
/// that is past any memory. The state is capped: the trial stops, fails with the reason, and
/// the run finishes with every trial accounted for.
#[test]
fn a_state_that_doubles_every_call_stops_its_trial_at_the_cap() {
    const DOUBLING: &str = r#"description: Each note appends the whole state to itself.
catalog: ../data/tools.json
max_steps: 40
messages:
  - role: user
    content: "Keep noting."
state:
  calls: [start]
tools:
  append_note:
    - effects:
        - append: {path: calls, value: "${state}"}
      content: '{"ok": true}'
expect:
  max_calls: 100
"#;
    let server = FakeServer::start_in_background(|_req: &FakeRequest| {
        FakeResponse::ok(tool_call_body(&[("append_note", r#"{"text":"again"}"#)]))
    });
    let dir = fake_project(
        &server.base_url,
        TOOLS,
        CASES,
        &[("scenarios/doubling.yaml", DOUBLING)],
    );
    let run = toolscore(
        dir.path(),
        &[
            "run",
            "--scenario",
            "scenarios",
            "--trials",
            "2",
            "--out",
            "out",
            "--run-id",
            "d",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let results = std::fs::read_to_string(dir.path().join("out/d/results.jsonl")).expect("results");
    let records: Vec<Value> = results
        .lines()
        .map(|l| serde_json::from_str(l).expect("record"))
        .collect();
    assert_eq!(records.len(), 2);
    for r in &records {
        assert_eq!(r["outcome"], "fail", "{r}");
        assert_eq!(r["trajectory"]["stop"], "state_limit");
        let failures = r["scenario"]["failures"].to_string();
        assert!(
            failures.contains("state limit: the trial stopped at step")
                && failures.contains("past the cap of 1048576"),
            "{failures}"
        );
        // 2^k copies of a short state pass 1 MiB in about 17 calls, far short of 40 steps.
        let steps = r["trajectory"]["calls"].as_array().expect("calls").len();
        assert!((10..30).contains(&steps), "{steps} calls");
    }
    // The records stay small: the dropped state is not written.
    assert!(results.len() < 4 << 20, "{} bytes", results.len());
}
