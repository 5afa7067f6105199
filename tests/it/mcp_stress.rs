//! `toolscore stress` through the binary: a short run against the published reference server
//! over stdio (installed by scripts/mcp-servers.sh), and against an in-process
//! streamable-HTTP server (rmcp's own) with deliberate faults: tools answered with HTTP 429
//! with and without Retry-After, with 503, with a dropped connection, and a tool that hands
//! each caller the previous caller's argument, so the leakage detector has something to find.

use crate::support;

use std::path::Path;

use support::{published_servers, toolscore};

const EVERYTHING: &str = "@modelcontextprotocol/server-everything";

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A cases.jsonl line expecting `tool` with `args`.
fn case(id: &str, tool: &str, args: serde_json::Value) -> String {
    serde_json::json!({
        "id": id,
        "messages": [{"role": "user", "content": format!("please {id}")}],
        "expect": {"tool": tool, "args": args},
    })
    .to_string()
        + "\n"
}

fn report(dir: &Path, file: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join(file)).unwrap()).unwrap()
}

fn tool<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == name)
        .unwrap_or_else(|| panic!("no tool {name} in {report}"))
}

fn count(v: &serde_json::Value, field: &str) -> u64 {
    v[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field} in {v}"))
}

#[test]
fn stress_of_the_published_server_over_stdio() {
    let Some(modules) = published_servers() else {
        return;
    };
    let entry = modules.join(EVERYTHING).join("dist/index.js");
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "everything/dataset.yaml",
        &format!("catalog:\n  command: node\n  args: [{}]\n", entry.display()),
    );
    write(
        dir.path(),
        "everything/cases.jsonl",
        &(case("echo-back", "echo", serde_json::json!({"message": "hello"}))
            + &case("add", "get-sum", serde_json::json!({"a": 17, "b": 25}))),
    );
    let run = toolscore(
        dir.path(),
        &[
            "stress",
            "everything",
            "--peak",
            "1.5",
            "--multiple",
            "2",
            "--duration",
            "2s",
            "--json",
            "stress.json",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stdout
            .contains("server: mcp-servers/everything 2.0.0 (protocol "),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "3 sessions (peak 1.5 × 2), each its own server process (stdio), 2.0 s, closed loop; "
        ),
        "{}",
        run.stdout
    );
    // echo's free string carries the canary; get-sum has none (its arguments are numbers).
    assert!(
        run.stdout.contains("\necho: ") && run.stdout.contains(" calls, canary in `message`\n"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("leakage: none; "), "{}", run.stdout);
    assert!(
        run.stdout.contains("sessions: 3 of 3 started, 0 reopened"),
        "{}",
        run.stdout
    );
    let json = report(dir.path(), "stress.json");
    assert_eq!(json["transport"], "stdio");
    assert_eq!(json["sessions"], 3);
    for name in ["echo", "get-sum"] {
        let t = tool(&json, name);
        // Two seconds of three closed-loop sessions on a local server: many calls, all fine.
        assert!(count(t, "calls") >= 20, "{t}");
        assert_eq!(count(t, "errors"), 0, "{t}");
        assert_eq!(count(t, "ok"), count(t, "calls"));
        assert_eq!(count(&t["latency_ms"], "n"), count(t, "calls"));
        assert!(t["latency_ms"]["p95"]["value"].as_f64().unwrap() > 0.0);
        assert_eq!(t["error_interval"]["lo"], 0.0);
    }
    assert_eq!(
        tool(&json, "get-sum")["canary_fields"],
        serde_json::json!([])
    );
    assert_eq!(json["leaked_answers"], 0);
    // No gate was asked for.
    assert!(json.get("gate").is_none());

    // The same calls with the error-rate gate at 50%: a clean run this long passes it.
    let gated = toolscore(
        dir.path(),
        &[
            "stress",
            "everything",
            "--sessions",
            "2",
            "--duration",
            "1s",
            "--max-error-rate",
            "0.5",
        ],
    );
    assert_eq!(gated.code, 0, "{}", gated.transcript());
    assert!(
        gated
            .stdout
            .contains("gate: PASS: the error rate's upper bound 0."),
        "{}",
        gated.stdout
    );
}

// ---------------------------------------------------------------------------------------------
// Streamable HTTP: rmcp's own server in process (tests/it/support/stress_servers.rs), with a
// faulty front and a leaky tool.

/// A dataset (no dataset.yaml: the server is the URL) with one case per tool of `tools`.
fn faulty_dataset(dir: &Path, tools: &[&str]) {
    let mut cases = String::new();
    for t in tools {
        cases += &case(t, t, serde_json::json!({"text": format!("{t} this")}));
    }
    write(dir, "faulty/cases.jsonl", &cases);
    // A catalog so the dataset loads on its own; stress lists the server's.
    let tools_json = serde_json::json!({"tools": tools.iter().map(|t| serde_json::json!({
        "name": t, "description": format!("{t} the text"), "inputSchema": support::text_schema()
    })).collect::<Vec<_>>()});
    write(dir, "faulty/tools.json", &tools_json.to_string());
}

#[test]
fn stress_over_http_counts_each_failure_and_catches_leakage() {
    let url = support::start_faulty_server();
    let dir = tempfile::tempdir().unwrap();
    faulty_dataset(dir.path(), &support::FAULTY_TOOLS);
    let run = toolscore(
        dir.path(),
        &[
            "stress",
            &url,
            "--dataset",
            "faulty",
            "--sessions",
            "4",
            "--duration",
            "2s",
            "--max-error-rate",
            "--json",
            "stress.json",
        ],
    );
    // Leakage and the failed gate: exit 1.
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert!(
        run.stdout
            .contains("4 sessions over streamable HTTP, 2.0 s, closed loop; "),
        "{}",
        run.stdout
    );
    let json = report(dir.path(), "stress.json");
    assert_eq!(json["transport"], "streamable HTTP");
    assert_eq!(json["server"]["name"], "faulty");
    let every = |name: &str, field: &str| {
        let t = tool(&json, name);
        assert!(count(t, "calls") > 0, "{t}");
        assert_eq!(count(t, field), count(t, "calls"), "{name}: {t}");
        assert_eq!(count(t, "errors"), count(t, "calls"), "{name}: {t}");
    };
    every("slow_down", "rate_limited_with_retry_after");
    every("throttle", "rate_limited_without_retry_after");
    every("broken", "server_errors");
    every("hang_up", "dropped");
    // A 400 is neither a rate limit, a server error nor a dropped connection.
    every("reject", "other");
    // Refused before the server answered: no latency to report.
    assert_eq!(count(&tool(&json, "broken")["latency_ms"], "n"), 0);
    for name in ["echo", "remember"] {
        let t = tool(&json, name);
        assert_eq!(count(t, "errors"), 0, "{t}");
        assert_eq!(t["canary_fields"], serde_json::json!(["text"]));
    }
    assert!(
        run.stdout.contains("slow_down: ")
            && run.stdout.contains("  errors      0 isError, 0 JSON-RPC, "),
        "{}",
        run.stdout
    );
    for (name, ending) in [
        (
            "slow_down",
            "tools/call slow_down answered with HTTP 429 (Retry-After: 1)",
        ),
        ("throttle", "tools/call throttle answered with HTTP 429"),
        ("broken", "answered with HTTP 503"),
        ("reject", "tools/call reject answered with HTTP 400"),
    ] {
        let first = tool(&json, name)["first_error"].as_str().unwrap();
        assert!(first.ends_with(ending), "{name}: {first}\n{json}");
    }
    // Every dropped connection is followed by a fresh session (until the time is up).
    let dropped = count(tool(&json, "hang_up"), "dropped");
    let reconnects = count(&json["session_log"], "reconnects");
    assert!(
        reconnects + 4 >= dropped && reconnects > 0,
        "{dropped} dropped, {reconnects} reconnects"
    );

    // echo answers each session its own text: never a leak. remember hands out the previous
    // caller's: with four sessions at once, other sessions' canaries.
    assert_eq!(count(tool(&json, "echo"), "leaked_answers"), 0);
    let leaked = count(tool(&json, "remember"), "leaked_answers");
    assert!(leaked > 0, "{json}");
    assert_eq!(count(&json, "leaked_answers"), leaked);
    let first = &json["leaks"][0];
    assert_eq!(first["tool"], "remember");
    let session = first["session"].as_u64().unwrap();
    let found = first["found"][0].as_str().unwrap();
    // The canary found belongs to another session: tscanary-<run>-<session>-<call>.
    let owner: u64 = found.split('-').nth(2).unwrap().parse().unwrap();
    assert_ne!(owner, session, "{first}");
    assert!(
        run.stdout.contains(&format!(
            "LEAKAGE: {leaked} answers carried another session's canary"
        )),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(&format!(
            "  session {session} call {} (remember) got {found}",
            first["call"]
        )),
        "{}",
        run.stdout
    );
    // Five of seven tools always fail: the gate's bound is far above 1%.
    assert_eq!(json["gate"]["passed"], false);
    assert!(
        run.stdout
            .contains("gate: FAIL: the error rate's upper bound "),
        "{}",
        run.stdout
    );
}

#[test]
fn stress_over_http_of_a_sound_tool_passes() {
    let url = support::start_faulty_server();
    let dir = tempfile::tempdir().unwrap();
    faulty_dataset(dir.path(), &["echo"]);
    let run = toolscore(
        dir.path(),
        &[
            "stress",
            &url,
            "--dataset",
            "faulty",
            "--sessions",
            "3",
            "--duration",
            "1s",
            "--rate",
            "20",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stdout
            .contains("3 sessions over streamable HTTP, 1.0 s, 20 calls/s per session; "),
        "{}",
        run.stdout
    );
    // Paced: 20 calls a second for one second, at most, per session.
    let calls: u64 = run
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("echo: "))
        .and_then(|l| l.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert!((3..=60).contains(&calls), "{calls}\n{}", run.stdout);
    assert!(run.stdout.contains("leakage: none; "), "{}", run.stdout);
}

#[test]
fn stress_refuses_bad_input_before_starting_anything() {
    let url = support::start_faulty_server();
    let dir = tempfile::tempdir().unwrap();
    faulty_dataset(dir.path(), &["echo"]);
    // Each refusal's whole message is the contract: one line naming the flag and what it takes.
    let cases: &[&[&str]] = &[
        &["stress", &url, "--sessions", "2"],
        &["stress", &url, "--dataset", "faulty"],
        &["stress", &url, "--dataset", "faulty", "--sessions", "0"],
        &["stress", &url, "--dataset", "faulty", "--peak", "200"],
        &[
            "stress",
            &url,
            "--dataset",
            "faulty",
            "--sessions",
            "2",
            "--duration",
            "soon",
        ],
        &[
            "stress",
            &url,
            "--dataset",
            "faulty",
            "--sessions",
            "2",
            "--max-error-rate",
            "2",
        ],
        &["stress", "--dataset", "faulty", "--sessions", "2"],
    ];
    let mut refusals = String::new();
    for args in cases {
        let run = toolscore(dir.path(), &[args, &["--json", "out.json"][..]].concat());
        assert_eq!(run.code, 2, "{args:?}\n{}", run.transcript());
        assert!(!dir.path().join("out.json").exists());
        refusals.push_str(&run.stderr.replace(&url, "[URL]"));
    }
    insta::assert_snapshot!(refusals, @r"
    error: stress makes a dataset's expected calls: give --dataset DIR, or a dataset folder as SOURCE
    error: give --sessions N, or --peak P (and --multiple M, default 2)
    error: --sessions must be between 1 and 256
    error: --peak 200 × --multiple 2 must come to between 1 and 256 sessions
    error: --duration soon: expected number at 0 (write e.g. 30s or 5m)
    error: --max-error-rate must be between 0 and 1
    error: name a server: a dataset folder with a dataset.yaml, a URL, or a command after `--`
    ");
    let stress_faulty = |extra: &[&str]| {
        let args = ["stress", &url, "--dataset", "faulty", "--sessions", "2"];
        toolscore(dir.path(), &[&args[..], extra].concat())
    };
    // A misspelt path would send a canary where the server needs the value as written.
    for (path, message) in [
        ("echo", "expected TOOL.PATH, e.g. read_text_file.path"),
        ("echo.text[0", "expected TOOL.PATH"),
        (
            "echo.txt",
            "no call of `echo` in faulty has a string at `txt`",
        ),
    ] {
        let run = stress_faulty(&["--no-canary", path]);
        assert_eq!(run.code, 2, "{path}\n{}", run.transcript());
        let message = format!("--no-canary {path}: {message}");
        assert!(run.stderr.contains(&message), "{path}\n{}", run.stderr);
    }
    // A tool the server does not list is named with the case that expects it.
    write(
        dir.path(),
        "faulty/cases.jsonl",
        &case("lookup", "lookup", serde_json::json!({"text": "x"})),
    );
    write(
        dir.path(),
        "faulty/tools.json",
        r#"{"tools": [{"name": "lookup", "description": "Look it up", "inputSchema": {"type": "object"}}]}"#,
    );
    let run = stress_faulty(&["--duration", "1s"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr
            .contains("the server does not list the tool `lookup` that case lookup expects"),
        "{}",
        run.stderr
    );
}

// ---------------------------------------------------------------------------------------------
// A knowledge graph whose strings are nested in an array of objects (tests/it/support/
// stress_servers.rs): shared between sessions, kept per session, or with no free string.

/// A graph server of `kind`, started, and a folder with a dataset of it (the server is the
/// URL): one case per call.
fn graph_fixture(
    kind: support::GraphServer,
    calls: &[(&str, serde_json::Value)],
) -> (tempfile::TempDir, String) {
    let url = support::start_graph_server(kind);
    let dir = tempfile::tempdir().unwrap();
    let cases: String = calls
        .iter()
        .enumerate()
        .map(|(i, (tool, args))| case(&format!("{tool}-{i}"), tool, args.clone()))
        .collect();
    write(dir.path(), "graph/cases.jsonl", &cases);
    let tools = serde_json::json!({ "tools": support::graph_tools(kind) });
    write(dir.path(), "graph/tools.json", &tools.to_string());
    (dir, url)
}

fn create_ada() -> (&'static str, serde_json::Value) {
    (
        "create_entities",
        serde_json::json!({"entities": [
            {"name": "Ada", "entityType": "person", "observations": ["likes engines"]}
        ]}),
    )
}

fn read_graph() -> (&'static str, serde_json::Value) {
    ("read_graph", serde_json::json!({}))
}

fn stress_graph(dir: &Path, url: &str, extra: &[&str]) -> support::Run {
    let args = [
        &["stress", url, "--dataset", "graph", "--sessions", "3"][..],
        extra,
        &["--json", "stress.json"][..],
    ]
    .concat();
    toolscore(dir, &args)
}

/// Every leak of a run against the shared graph came from another session of the run,
/// through `create_entities`' nested strings, and the report says so.
fn assert_leaks_name_their_writers(run: &support::Run, json: &serde_json::Value) {
    // Each pair is two different sessions of this run; an answer may carry several writers.
    let leaked = count(tool(json, "read_graph"), "leaked_answers");
    assert!(leaked > 0, "{json}");
    assert_eq!(count(tool(json, "create_entities"), "leaked_answers"), 0);
    let leakage = &json["leakage"];
    assert_eq!(leakage["tested"], true, "{leakage}");
    assert_eq!(count(leakage, "leaked_answers"), leaked);
    assert_eq!(json["leaked_answers"], leaked);
    let pairs = leakage["pairs"].as_array().unwrap();
    let mut per_pair = 0;
    for pair in pairs {
        let (writer, reader) = (count(pair, "writer_session"), count(pair, "reader_session"));
        assert!(writer != reader && (1..=3).contains(&writer) && (1..=3).contains(&reader));
        per_pair += count(pair, "answers");
    }
    assert!(per_pair >= leaked, "{leakage}");
    // Each leak names the writer's session, call, tool and the argument its canary went in.
    let first = &json["leaks"][0];
    assert_eq!(first["tool"], "read_graph");
    let source = &first["sources"][0];
    let writer = &source["writer"];
    assert_eq!(writer["tool"], "create_entities", "{first}");
    assert_ne!(writer["session"], first["session"], "{first}");
    let path = writer["path"].as_str().unwrap();
    assert!(
        ["entities[0].name", "entities[0].observations[0]"].contains(&path),
        "{first}"
    );
    assert!(
        run.stdout.contains(&format!(
            "  session {} call {} (read_graph) got {} from session {} call {} through \
             create_entities.{path}",
            first["session"],
            first["call"],
            source["canary"].as_str().unwrap(),
            writer["session"],
            writer["call"]
        )),
        "{}",
        run.stdout
    );
    let top = &pairs[0];
    assert!(
        run.stdout.contains(&format!(
            "  from session {} to session {}: {} answers\n",
            top["writer_session"], top["reader_session"], top["answers"]
        )),
        "{}",
        run.stdout
    );
}

#[test]
fn stress_catches_sessions_sharing_a_store_through_nested_fields_only() {
    let (dir, url) = graph_fixture(support::GraphServer::Shared, &[create_ada(), read_graph()]);
    let run = stress_graph(dir.path(), &url, &["--duration", "2s"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    let json = report(dir.path(), "stress.json");
    // No top-level string at all: the canary goes into the entity's name and observation,
    // never into its enum-typed kind.
    let create = tool(&json, "create_entities");
    assert_eq!(
        create["canary_fields"],
        serde_json::json!(["entities[].name", "entities[].observations[]"])
    );
    assert_eq!(
        create["kept_fields"],
        serde_json::json!([{"path": "entities[].entityType", "reason": "enum"}])
    );
    assert!(
        run.stdout.contains(
            " calls, canary in `entities[].name`, `entities[].observations[]`\n  \
             left alone  `entities[].entityType` (enum)\n"
        ),
        "{}",
        run.stdout
    );
    // read_graph takes no string; its answers carry the other sessions' entities.
    assert_eq!(
        tool(&json, "read_graph")["canary_fields"],
        serde_json::json!([])
    );
    assert_leaks_name_their_writers(&run, &json);

    // Again with every nested string excluded: nothing is tested, and the run says so
    // rather than "none" (and fails, asked to). The store still holds the first run's
    // entities, which the first read_graph answers carry: an earlier run's canaries.
    let run = stress_graph(
        dir.path(),
        &url,
        &[
            "--duration",
            "1s",
            "--no-canary",
            "create_entities.entities",
            "--require-leakage-test",
        ],
    );
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert!(
        run.stdout.contains(
            "leakage: not tested: no call carried a canary: every free string is excluded by \
             --no-canary; "
        ) && run
            .stdout
            .contains(" answers searched (FAIL: --require-leakage-test)\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("  from an earlier run to session "),
        "{}",
        run.stdout
    );
    let json = report(dir.path(), "stress.json");
    assert_eq!(json["leakage"]["tested"], false);
    assert_eq!(json["leakage"]["untested_because"], "all_excluded");
    assert_eq!(
        tool(&json, "create_entities")["kept_fields"],
        serde_json::json!([
            {"path": "entities[].name", "reason": "no_canary"},
            {"path": "entities[].entityType", "reason": "enum"},
            {"path": "entities[].observations[]", "reason": "no_canary"}
        ])
    );
}

#[test]
fn stress_of_sessions_with_stores_of_their_own_tests_and_finds_no_leak() {
    let (dir, url) = graph_fixture(
        support::GraphServer::PerSession,
        &[create_ada(), read_graph()],
    );
    let run = stress_graph(
        dir.path(),
        &url,
        &["--duration", "1s", "--require-leakage-test"],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(run.stdout.contains("leakage: none; "), "{}", run.stdout);
    let json = report(dir.path(), "stress.json");
    let leakage = &json["leakage"];
    assert_eq!(leakage["tested"], true, "{leakage}");
    assert!(leakage.get("untested_because").is_none(), "{leakage}");
    assert_eq!(count(leakage, "leaked_answers"), 0);
    let carried = count(leakage, "calls_with_canary");
    assert!(
        carried > 0 && count(leakage, "results_with_canary") == carried,
        "{leakage}"
    );
    assert_eq!(
        carried,
        count(tool(&json, "create_entities"), "calls"),
        "{json}"
    );
    assert_eq!(leakage["pairs"], serde_json::json!([]));
}

#[test]
fn stress_of_tools_without_a_free_string_reports_not_tested() {
    let (dir, url) = graph_fixture(
        support::GraphServer::NoFreeStrings,
        &[
            read_graph(),
            (
                "open_nodes",
                serde_json::json!({"ids": ["e1", "e2"], "kind": "person"}),
            ),
            (
                "tag_nodes",
                serde_json::json!({"tag": {"color": "red", "on": "2026-01-02", "count": 2}}),
            ),
        ],
    );
    let not_tested = "leakage: not tested: no call carried a canary: no call's arguments hold a \
                      free string (see each tool's strings left alone); ";
    // Without --require-leakage-test the exit is what the calls make it; the error-rate gate
    // is judged as ever.
    let run = stress_graph(
        dir.path(),
        &url,
        &["--duration", "1s", "--max-error-rate", "0.5"],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(run.stdout.contains(not_tested), "{}", run.stdout);
    assert!(!run.stdout.contains("leakage: none"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("gate: PASS: the error rate's upper bound "),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("open_nodes: ")
            && run
                .stdout
                .contains("  left alone  `ids[]` (pattern), `kind` (enum)\n")
            && run
                .stdout
                .contains("  left alone  `tag.color` (const), `tag.on` (format)\n"),
        "{}",
        run.stdout
    );
    let json = report(dir.path(), "stress.json");
    assert_eq!(json["leakage"]["tested"], false);
    assert_eq!(json["leakage"]["untested_because"], "no_free_string");
    assert_eq!(count(&json["leakage"], "calls_with_canary"), 0);
    assert!(count(&json["leakage"], "answers_searched") > 0);
    assert_eq!(json["gate"]["passed"], true);

    let run = stress_graph(
        dir.path(),
        &url,
        &["--duration", "1s", "--require-leakage-test"],
    );
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert!(
        run.stdout.contains(not_tested)
            && run
                .stdout
                .contains(" answers searched (FAIL: --require-leakage-test)\n"),
        "{}",
        run.stdout
    );
}

#[test]
fn stress_of_the_published_filesystem_server_keeps_paths_and_sees_shared_files() {
    let Some(modules) = published_servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("notes.txt"), "meeting at noon\n").unwrap();
    std::fs::write(root.join("shared.txt"), "nothing yet\n").unwrap();
    let root_path = root.display().to_string();
    let notes = root.join("notes.txt").display().to_string();
    let shared = root.join("shared.txt").display().to_string();
    let server = modules
        .join("@modelcontextprotocol/server-filesystem/dist/index.js")
        .display()
        .to_string();
    let cases = case(
        "read-notes",
        "read_text_file",
        serde_json::json!({"path": notes}),
    ) + &case(
        "find-notes",
        "search_files",
        serde_json::json!({"path": root_path, "pattern": "notes"}),
    ) + &case("where", "list_allowed_directories", serde_json::json!({}));
    write(dir.path(), "fs/cases.jsonl", &cases);
    write(
        dir.path(),
        "fs/dataset.yaml",
        &format!("catalog:\n  command: node\n  args: [{server}, {root_path}]\n"),
    );
    let run = toolscore(
        dir.path(),
        &[
            "stress",
            "fs",
            "--sessions",
            "2",
            "--duration",
            "2s",
            "--no-canary",
            "read_text_file.path",
            "--no-canary",
            "search_files.path",
            "--json",
            "fs.json",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let json = report(dir.path(), "fs.json");
    assert_eq!(json["server"]["name"], "secure-filesystem-server");
    for name in ["read_text_file", "search_files", "list_allowed_directories"] {
        let t = tool(&json, name);
        assert!(count(t, "calls") > 0, "{t}");
        assert_eq!(count(t, "errors"), 0, "{t}");
    }
    // The path is kept; the glob carries the canary (and so finds nothing, without error).
    assert_eq!(
        tool(&json, "read_text_file")["canary_fields"],
        serde_json::json!([])
    );
    assert_eq!(
        tool(&json, "search_files")["canary_fields"],
        serde_json::json!(["pattern"])
    );
    assert_eq!(json["leaked_answers"], 0);

    // Two sessions writing their canary to one file and reading it back: what one session
    // wrote, the other reads. The server shares the file by design, and stress reports
    // exactly that sharing as leakage.
    let cases = case(
        "write-shared",
        "write_file",
        serde_json::json!({"path": shared, "content": "hello"}),
    ) + &case(
        "read-shared",
        "read_text_file",
        serde_json::json!({"path": shared}),
    );
    write(dir.path(), "fs/cases.jsonl", &cases);
    let run = toolscore(
        dir.path(),
        &[
            "stress",
            "fs",
            "--sessions",
            "2",
            "--duration",
            "2s",
            "--no-canary",
            "write_file.path",
            "--no-canary",
            "read_text_file.path",
            "--json",
            "shared.json",
        ],
    );
    assert_eq!(run.code, 1, "{}", run.transcript());
    let json = report(dir.path(), "shared.json");
    assert_eq!(
        tool(&json, "write_file")["canary_fields"],
        serde_json::json!(["content"])
    );
    assert!(
        count(tool(&json, "read_text_file"), "leaked_answers") > 0,
        "{json}"
    );
    assert_eq!(count(tool(&json, "write_file"), "leaked_answers"), 0);
    assert!(
        run.stdout.contains("(read_text_file) got tscanary-"),
        "{}",
        run.stdout
    );

    // A parameter of a tool the dataset never calls is a mistake, refused.
    let run = toolscore(
        dir.path(),
        &[
            "stress",
            "fs",
            "--sessions",
            "1",
            "--no-canary",
            "read_file.path",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr
            .contains("--no-canary read_file.path: no case of fs expects a call of `read_file`"),
        "{}",
        run.stderr
    );
}

#[test]
fn sigterm_during_a_stdio_stress_reports_what_completed_and_ends_every_server() {
    let Some(modules) = published_servers() else {
        return;
    };
    let entry = modules.join(EVERYTHING).join("dist/index.js");
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let seen = dir.path().join("seen");
    // Each server process notes its pid, so the test can see that none outlives toolscore,
    // and reads its stdin through `tee`, so the test can see the calls arrive.
    let script = format!(
        "echo $$ >> {}; exec node {} < <(tee -a {})",
        pids.display(),
        entry.display(),
        seen.display()
    );
    write(
        dir.path(),
        "everything/dataset.yaml",
        &format!(
            "catalog:\n  command: bash\n  args: [-c, {}]\n",
            serde_json::to_string(&script).unwrap()
        ),
    );
    write(
        dir.path(),
        "everything/cases.jsonl",
        &case("echo-back", "echo", serde_json::json!({"message": "hello"})),
    );
    let child = support::toolscore_command()
        .current_dir(dir.path())
        .args([
            "stress",
            "everything",
            "--sessions",
            "2",
            "--duration",
            "120s",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    // One process lists the tools, then one per session.
    let lines = || {
        std::fs::read_to_string(&pids)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let calls_seen = || {
        std::fs::read_to_string(&seen)
            .unwrap_or_default()
            .matches("\"tools/call\"")
            .count()
    };
    // Both sessions are up and calling.
    while lines() < 3 || calls_seen() < 20 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the sessions never started calling"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SAFETY: signals the toolscore process this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stdout}\n{stderr}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(90),
        "{stdout}"
    );
    assert!(
        stdout.contains("interrupted before the duration ran out"),
        "{stdout}"
    );
    // What completed is reported: calls were made, and none failed.
    let calls: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("echo: "))
        .and_then(|l| l.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(calls > 0, "{stdout}");
    assert!(stdout.contains("error rate  0.0000 [0.0000, "), "{stdout}");
    for pid in std::fs::read_to_string(&pids).unwrap().lines() {
        let alive = std::process::Command::new("kill")
            .args(["-0", pid.trim()])
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap()
            .success();
        assert!(!alive, "the server (pid {pid}) outlived toolscore");
    }
}
