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
// Streamable HTTP: rmcp's own server in process, with a faulty front and a leaky tool.

mod faulty_server {
    use std::convert::Infallible;
    use std::sync::{Arc, Mutex};

    use bytes::Bytes;
    use http_body_util::{BodyExt as _, Full};
    use hyper_util::rt::TokioIo;
    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    };
    use rmcp::service::{MaybeSendFuture, RequestContext};
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    use rmcp::{ErrorData, RoleServer, ServerHandler};

    /// Every tool takes a free string `text`. `echo` answers it back; `remember` answers
    /// the text of the call before it, whichever session made it (a shared global, the bug
    /// stress looks for); the rest never reach the handler (see [`start`]).
    #[derive(Clone)]
    struct Faulty {
        last: Arc<Mutex<String>>,
    }

    pub const TOOLS: [&str; 7] = [
        "echo",
        "remember",
        "slow_down",
        "throttle",
        "broken",
        "hang_up",
        "reject",
    ];

    fn tool(name: &str) -> Tool {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"]
        });
        let serde_json::Value::Object(schema) = schema else {
            unreachable!()
        };
        Tool::new(
            name.to_owned(),
            format!("{name} the text"),
            Arc::new(schema),
        )
    }

    impl ServerHandler for Faulty {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
                .with_server_info(Implementation::new("faulty", "0.1.0"))
        }

        fn list_tools(
            &self,
            _request: Option<PaginatedRequestParams>,
            _context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<ListToolsResult, ErrorData>> + MaybeSendFuture + '_
        {
            std::future::ready(Ok(ListToolsResult::with_all_items(
                TOOLS.iter().map(|t| tool(t)).collect(),
            )))
        }

        fn call_tool(
            &self,
            request: CallToolRequestParams,
            _context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + MaybeSendFuture + '_
        {
            let text = request
                .arguments
                .as_ref()
                .and_then(|a| a.get("text"))
                .and_then(|t| t.as_str())
                .unwrap_or_default()
                .to_owned();
            let answer = match request.name.as_ref() {
                "remember" => {
                    let mut last = self.last.lock().unwrap();
                    let previous = std::mem::replace(&mut *last, text);
                    format!("last time: {previous}")
                }
                _ => format!("echo: {text}"),
            };
            std::future::ready(Ok(CallToolResponse::Complete(CallToolResult::success(
                vec![ContentBlock::text(answer)],
            ))))
        }
    }

    fn plain(
        status: hyper::StatusCode,
        retry_after: Option<&str>,
    ) -> hyper::Response<http_body_util::combinators::BoxBody<Bytes, Infallible>> {
        let body = Full::new(Bytes::from_static(b"try again later"))
            .map_err(|e: Infallible| match e {})
            .boxed();
        let mut resp = hyper::Response::new(body);
        *resp.status_mut() = status;
        resp.headers_mut()
            .insert("content-type", "text/plain".parse().unwrap());
        if let Some(r) = retry_after {
            resp.headers_mut().insert("retry-after", r.parse().unwrap());
        }
        resp
    }

    /// Serves on a free local port from a thread of its own and returns the URL. In front of
    /// the MCP service, a `tools/call` of `slow_down` gets 429 with `Retry-After: 1`,
    /// `throttle` 429 without it, `broken` 503, `reject` 400, and `hang_up` a closed
    /// connection.
    pub fn start() -> String {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                let last = Arc::new(Mutex::new(String::new()));
                let service = Arc::new(StreamableHttpService::new(
                    move || {
                        Ok(Faulty {
                            last: Arc::clone(&last),
                        })
                    },
                    Arc::new(LocalSessionManager::default()),
                    StreamableHttpServerConfig::default(),
                ));
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        continue;
                    };
                    let service = Arc::clone(&service);
                    tokio::spawn(async move {
                        let handler = hyper::service::service_fn(
                            move |req: hyper::Request<hyper::body::Incoming>| {
                                let service = Arc::clone(&service);
                                async move {
                                    let (parts, body) = req.into_parts();
                                    let bytes =
                                        body.collect().await.map_err(|e| e.to_string())?.to_bytes();
                                    let message: serde_json::Value =
                                        serde_json::from_slice(&bytes).unwrap_or_default();
                                    let called = (message["method"] == "tools/call")
                                        .then(|| message["params"]["name"].as_str())
                                        .flatten();
                                    match called {
                                        Some("slow_down") => {
                                            return Ok(plain(
                                                hyper::StatusCode::TOO_MANY_REQUESTS,
                                                Some("1"),
                                            ));
                                        }
                                        Some("throttle") => {
                                            return Ok(plain(
                                                hyper::StatusCode::TOO_MANY_REQUESTS,
                                                None,
                                            ));
                                        }
                                        Some("reject") => {
                                            return Ok(plain(hyper::StatusCode::BAD_REQUEST, None));
                                        }
                                        Some("broken") => {
                                            return Ok(plain(
                                                hyper::StatusCode::SERVICE_UNAVAILABLE,
                                                None,
                                            ));
                                        }
                                        // An error from the service makes hyper close the
                                        // connection without answering.
                                        Some("hang_up") => return Err("hung up".to_owned()),
                                        _ => {}
                                    }
                                    let req = hyper::Request::from_parts(parts, Full::new(bytes));
                                    Ok::<_, String>(service.handle(req).await)
                                }
                            },
                        );
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), handler)
                            .await;
                    });
                }
            });
        });
        let addr = rx.recv().unwrap();
        format!("http://{addr}/mcp")
    }
}

/// A dataset (no dataset.yaml: the server is the URL) with one case per tool of `tools`.
fn faulty_dataset(dir: &Path, tools: &[&str]) {
    let mut cases = String::new();
    for t in tools {
        cases += &case(t, t, serde_json::json!({"text": format!("{t} this")}));
    }
    write(dir, "faulty/cases.jsonl", &cases);
    // A catalog so the dataset loads on its own; stress lists the server's.
    let tools_json = serde_json::json!({"tools": tools.iter().map(|t| serde_json::json!({
        "name": t, "description": format!("{t} the text"),
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    })).collect::<Vec<_>>()});
    write(dir, "faulty/tools.json", &tools_json.to_string());
}

#[test]
fn stress_over_http_counts_each_failure_and_catches_leakage() {
    let url = faulty_server::start();
    let dir = tempfile::tempdir().unwrap();
    faulty_dataset(dir.path(), &faulty_server::TOOLS);
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
    assert!(
        tool(&json, "slow_down")["first_error"]
            .as_str()
            .unwrap()
            .ends_with("tools/call slow_down answered with HTTP 429 (Retry-After: 1)"),
        "{json}"
    );
    assert!(
        tool(&json, "throttle")["first_error"]
            .as_str()
            .unwrap()
            .ends_with("tools/call throttle answered with HTTP 429"),
        "{json}"
    );
    assert!(
        tool(&json, "broken")["first_error"]
            .as_str()
            .unwrap()
            .ends_with("answered with HTTP 503"),
        "{json}"
    );
    assert!(
        tool(&json, "reject")["first_error"]
            .as_str()
            .unwrap()
            .ends_with("tools/call reject answered with HTTP 400"),
        "{json}"
    );
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
    let url = faulty_server::start();
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
    let url = faulty_server::start();
    let dir = tempfile::tempdir().unwrap();
    faulty_dataset(dir.path(), &["echo"]);
    let cases: &[(&[&str], &str)] = &[
        (
            &["stress", &url, "--sessions", "2"],
            "stress makes a dataset's expected calls: give --dataset DIR",
        ),
        (
            &["stress", &url, "--dataset", "faulty"],
            "give --sessions N, or --peak P",
        ),
        (
            &["stress", &url, "--dataset", "faulty", "--sessions", "0"],
            "--sessions must be between 1 and 256",
        ),
        (
            &["stress", &url, "--dataset", "faulty", "--peak", "200"],
            "--peak 200 × --multiple 2 must come to between 1 and 256 sessions",
        ),
        (
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
            "--duration soon: ",
        ),
        (
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
            "--max-error-rate must be between 0 and 1",
        ),
        (
            &["stress", "--dataset", "faulty", "--sessions", "2"],
            "name a server",
        ),
    ];
    for (args, message) in cases {
        let run = toolscore(dir.path(), &[args, &["--json", "out.json"][..]].concat());
        assert_eq!(run.code, 2, "{args:?}\n{}", run.transcript());
        assert!(run.stderr.contains(message), "{args:?}\n{}", run.stderr);
        assert!(!dir.path().join("out.json").exists());
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
    let run = toolscore(
        dir.path(),
        &[
            "stress",
            &url,
            "--dataset",
            "faulty",
            "--sessions",
            "2",
            "--duration",
            "1s",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr
            .contains("the server does not list the tool `lookup` that case lookup expects"),
        "{}",
        run.stderr
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
