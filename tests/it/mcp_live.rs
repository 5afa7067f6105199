//! Live MCP servers through the binary: two published servers over stdio (installed by
//! scripts/mcp-servers.sh), servers that die, hang or send a broken catalog, and an
//! in-process streamable-HTTP server (rmcp's own server) for the HTTP transport.

use crate::support;

use std::path::Path;
use std::time::{Duration, Instant};

use support::{published_servers, server_command, toolscore, toolscore_env};

const EVERYTHING: &str = "@modelcontextprotocol/server-everything";
const FILESYSTEM: &str = "@modelcontextprotocol/server-filesystem";
/// The same server, published seven months earlier under the same name and version.
const EVERYTHING_OLD: &str = "server-everything-2026.1.26";

fn catalog_of(dir: &Path, before: &[&str], command: &[String]) -> support::Run {
    let mut args = vec!["catalog"];
    args.extend_from_slice(before);
    args.push("--");
    args.extend(command.iter().map(String::as_str));
    toolscore(dir, &args)
}

/// The `tools: N, about T tokens …, fingerprint F` line.
fn summary_line(stdout: &str) -> &str {
    stdout
        .lines()
        .find(|l| l.starts_with("tools: "))
        .unwrap_or_else(|| panic!("no tools line in:\n{stdout}"))
}

/// Everything from the tools line on: what does not depend on where the catalog came from.
fn body(stdout: &str) -> &str {
    let start = stdout.find("tools: ").expect("tools line");
    &stdout[start..]
}

#[test]
fn lists_two_published_servers_over_stdio() {
    let Some(modules) = published_servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let run = catalog_of(dir.path(), &[], &server_command(&modules, EVERYTHING));
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stdout
            .contains("server: mcp-servers/everything 2.0.0 (protocol "),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("(stdio)"), "{}", run.stdout);
    // The tool every version of the server has, with its parameter in full.
    assert!(
        run.stdout
            .contains("\necho  (~61 tokens, 396b6140849b)\n  Echoes back the input string\n  parameters:\n    message: string, required\n      Message to echo\n"),
        "{}",
        run.stdout
    );
    assert!(
        summary_line(&run.stdout).starts_with("tools: 13, about 1234 tokens"),
        "{}",
        run.stdout
    );

    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let mut fs = server_command(&modules, FILESYSTEM);
    fs.push(root.display().to_string());
    let run = catalog_of(dir.path(), &[], &fs);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stdout
            .contains("server: secure-filesystem-server 0.2.0"),
        "{}",
        run.stdout
    );
    for tool in [
        "read_text_file",
        "write_file",
        "list_directory",
        "search_files",
    ] {
        assert!(
            run.stdout.contains(&format!("\n{tool}  (~")),
            "{tool} missing:\n{}",
            run.stdout
        );
    }
    assert!(
        run.stdout.contains("    path: string, required\n"),
        "{}",
        run.stdout
    );
}

#[test]
fn fingerprints_are_stable_across_two_listings() {
    let Some(modules) = published_servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let command = server_command(&modules, EVERYTHING);
    let first = catalog_of(dir.path(), &[], &command);
    let second = catalog_of(dir.path(), &[], &command);
    assert_eq!(first.code, 0, "{}", first.transcript());
    assert_eq!(second.code, 0, "{}", second.transcript());
    assert!(summary_line(&first.stdout).contains("fingerprint sha256:"));
    // Every tool's fingerprint and the catalog's, byte for byte.
    assert_eq!(first.stdout, second.stdout);
}

#[test]
fn json_round_trips_through_catalog_on_the_file() {
    let Some(modules) = published_servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let live = catalog_of(
        dir.path(),
        &["--json", "tools.json"],
        &server_command(&modules, EVERYTHING),
    );
    assert_eq!(live.code, 0, "{}", live.transcript());
    assert!(live.stderr.contains("wrote tools.json"), "{}", live.stderr);
    let file = toolscore(dir.path(), &["catalog", "tools.json"]);
    assert_eq!(file.code, 0, "{}", file.transcript());
    assert_eq!(body(&live.stdout), body(&file.stdout));
    assert!(
        file.stdout.starts_with(
            "source: tools.json\nformat: MCP tools\nserver: mcp-servers/everything 2.0.0 (protocol "
        ),
        "{}",
        file.stdout
    );
    // The file is a tools.json a dataset can use as it is.
    let text = std::fs::read_to_string(dir.path().join("tools.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["serverInfo"]["name"], "mcp-servers/everything");
    assert_eq!(doc["tools"].as_array().map(Vec::len), Some(13));
    // And again through --json: the same file.
    let again = toolscore(
        dir.path(),
        &["catalog", "tools.json", "--json", "again.json"],
    );
    assert_eq!(again.code, 0, "{}", again.transcript());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("again.json")).unwrap(),
        text
    );
}

#[test]
fn diff_of_two_published_versions_flags_changes_under_the_same_version() {
    let Some(modules) = published_servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (package, file) in [(EVERYTHING_OLD, "old.json"), (EVERYTHING, "new.json")] {
        let run = catalog_of(
            dir.path(),
            &["--json", file],
            &server_command(&modules, package),
        );
        assert_eq!(run.code, 0, "{}", run.transcript());
    }
    let run = toolscore(dir.path(), &["catalog", "diff", "old.json", "new.json"]);
    // Both say mcp-servers/everything 2.0.0, yet nine input schemas changed.
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert!(
        run.stdout.contains(
            "0 added, 0 removed, 0 renamed, 9 changed, 4 unchanged; footprint -64 tokens"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "  * echo: schema  (e08772e2f04b -> 396b6140849b)\n    FLAGGED: changed while the server still says mcp-servers/everything 2.0.0\n"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("    -  \"additionalProperties\": false,\n"),
        "{}",
        run.stdout
    );
    // The new release also writes `$schema` first instead of last: key order is no change, so
    // no hunk line adds or removes it.
    let moved: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| {
            let l = l.trim_start();
            (l.starts_with("-  ") || l.starts_with("+  ")) && l.contains("\"$schema\"")
        })
        .collect();
    assert!(moved.is_empty(), "{moved:?}\n{}", run.stdout);
    assert!(
        run.stderr
            .contains("error: 9 tool(s) changed while the server kept its name and version"),
        "{}",
        run.stderr
    );

    // A rename, an addition and a description change, in a copy edited by hand (no server
    // identity, so nothing is flagged and the exit code is 0).
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("new.json")).unwrap())
            .unwrap();
    doc.as_object_mut().unwrap().remove("serverInfo");
    let tools = doc["tools"].as_array_mut().unwrap();
    tools[0]["name"] = "echo_text".into();
    tools[1]["description"] = "Shows annotations.".into();
    tools.push(serde_json::json!({"name": "ping", "description": "Ping", "inputSchema": {"type": "object"}}));
    std::fs::write(
        dir.path().join("edited.json"),
        serde_json::to_string(&doc).unwrap(),
    )
    .unwrap();
    let run = toolscore(
        dir.path(),
        &[
            "catalog",
            "diff",
            "new.json",
            "edited.json",
            "--json",
            "diff.json",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stdout.contains("\nadded:\n  + ping  "),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("\nrenamed (by similarity of what the model reads):\n  ~ echo -> echo_text  (similarity 1.00; "),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("  * get-annotated-message: description  ("),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "    -  Demonstrates how annotations can be used to provide metadata about content.\n    +  Shows annotations.\n"
        ),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("FLAGGED"), "{}", run.stdout);
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("diff.json")).unwrap())
            .unwrap();
    assert_eq!(d["renamed"][0]["new"]["name"], "echo_text");
    assert_eq!(d["changed"][0]["description_changed"], true);
}

#[test]
fn a_server_that_exits_at_once_is_a_clear_error_quoting_its_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let run = toolscore(
        dir.path(),
        &[
            "catalog",
            "--",
            "sh",
            "-c",
            "echo 'fatal: DATABASE_URL is not set' >&2; exit 3",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert_eq!(
        run.stderr,
        "error: MCP server sh -c 'echo '\\''fatal: DATABASE_URL is not set'\\'' >&2; exit 3': failed to start: the process closed its stdout before answering initialize (it exited or crashed)\n  its stderr ended with:\n  | fatal: DATABASE_URL is not set\n"
    );
    assert_eq!(run.stdout, "");

    let run = toolscore(dir.path(), &["catalog", "--", "no-such-mcp-server-here"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains(
            "MCP server no-such-mcp-server-here: failed to start: cannot run `no-such-mcp-server-here`: no such program"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn a_url_nothing_listens_at_says_it_cannot_connect_and_why() {
    // A port that was free a moment ago: connecting to it is refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let dir = tempfile::tempdir().unwrap();
    let said = format!(
        "error: MCP server {url}: cannot connect: connection refused: nothing is listening at that host and port (is the server running, and is the URL right?)\n"
    );
    // Listing it, starting a dataset from it and probing it say the same, and nothing about
    // a stderr an HTTP server does not have.
    for args in [
        vec!["catalog", url.as_str()],
        vec!["init", url.as_str()],
        vec!["probe", url.as_str()],
    ] {
        let run = toolscore(dir.path(), &args);
        assert_eq!(run.code, 2, "{args:?}\n{}", run.transcript());
        assert_eq!(run.stderr, said, "{args:?}");
    }
    assert!(!dir.path().join("datasets").exists());
}

#[test]
fn a_server_that_never_answers_times_out_and_is_shut_down() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let script = format!(
        "echo starting >&2; echo $$ > {}; exec sleep 60",
        pid_file.display()
    );
    let started = Instant::now();
    let run = toolscore(
        dir.path(),
        &["catalog", "--timeout", "1", "--", "sh", "-c", &script],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains(
            ": no answer to initialize within 1s\n  its stderr ended with:\n  | starting\n"
        ),
        "{}",
        run.stderr
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let alive = std::process::Command::new("kill")
        .args(["-0", pid.trim()])
        .status()
        .unwrap()
        .success();
    assert!(!alive, "the server (pid {pid}) outlived toolscore");
}

#[test]
fn a_malformed_catalog_names_the_server_and_the_fault() {
    if published_servers().is_none() {
        // Node.js runs the broken server.
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mcp/broken_server.js");
    let server = server.display().to_string();
    let run = toolscore(dir.path(), &["catalog", "--", "node", &server, "duplicate"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains(
            "malformed tools/list result: tools[1].name: duplicate tool name `a`\n  its stderr ended with:\n  | listing tools in mode duplicate\n"
        ),
        "{}",
        run.stderr
    );
    let run = toolscore(dir.path(), &["catalog", "--", "node", &server, "no-schema"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr
            .contains("malformed tools/list result: the result is not a list of tools"),
        "{}",
        run.stderr
    );
}

// ---------------------------------------------------------------------------------------------
// Streamable HTTP: rmcp's own server, in process, behind a bearer-token check.

mod http_server {
    use std::sync::{Arc, Mutex};

    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    };
    use rmcp::service::{MaybeSendFuture, RequestContext};
    use rmcp::{ErrorData, RoleServer, ServerHandler};

    use crate::support::mcp_http::{Front, FrontAnswer, mcp_tool, serve_mcp};

    /// Three tools over two pages, so the client must follow the cursor.
    #[derive(Clone)]
    pub(super) struct Pager;

    fn tool(name: &str, description: &str) -> Tool {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"]
        });
        mcp_tool(name, description, schema)
    }

    impl ServerHandler for Pager {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
                .with_server_info(Implementation::new("pager", "1.2.3"))
        }

        fn list_tools(
            &self,
            request: Option<PaginatedRequestParams>,
            _context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<ListToolsResult, ErrorData>> + MaybeSendFuture + '_
        {
            let cursor = request.and_then(|r| r.cursor);
            let result = match cursor.as_deref() {
                None => {
                    let mut page = ListToolsResult::with_all_items(vec![
                        tool("get_weather", "Current weather for a city"),
                        tool("get_forecast", "Five-day forecast for a city"),
                    ]);
                    page.next_cursor = Some("page-2".into());
                    Ok(page)
                }
                Some("page-2") => Ok(ListToolsResult::with_all_items(vec![tool(
                    "get_alerts",
                    "Weather alerts for a city",
                )])),
                Some(other) => Err(ErrorData::invalid_params(
                    format!("unknown cursor {other}"),
                    None,
                )),
            };
            std::future::ready(result)
        }

        /// Each tool answers bad arguments its own way, so the probe meets every verdict:
        /// get_weather names the field, get_forecast says nothing useful, get_alerts answers
        /// with a JSON-RPC error; an unknown tool gets -32602.
        fn call_tool(
            &self,
            request: CallToolRequestParams,
            _context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + MaybeSendFuture + '_
        {
            let city = request
                .arguments
                .as_ref()
                .and_then(|a| a.get("city"))
                .and_then(|c| c.as_str())
                .map(str::to_owned);
            let done = |r: CallToolResult| Ok(CallToolResponse::Complete(r));
            let answer = match (request.name.as_ref(), city) {
                ("get_weather" | "get_forecast" | "get_alerts", Some(city)) => done(
                    CallToolResult::success(vec![ContentBlock::text(format!("Sunny in {city}"))]),
                ),
                ("get_weather", None) => done(CallToolResult::error(vec![ContentBlock::text(
                    "`city` must be a string naming a city",
                )])),
                ("get_forecast", None) => done(CallToolResult::error(vec![ContentBlock::text(
                    "Something went wrong",
                )])),
                ("get_alerts", None) => Err(ErrorData::invalid_params("bad city", None)),
                (other, _) => Err(ErrorData::invalid_params(
                    format!("Unknown tool: {other}"),
                    None,
                )),
            };
            std::future::ready(answer)
        }
    }

    /// (Authorization, X-Team) of every request the server received.
    pub(super) type SeenHeaders = Arc<Mutex<Vec<(String, String)>>>;

    /// Serves on a free local port from a thread of its own, answering 401 to a request
    /// without `Bearer {token}`; returns the URL and the headers it sees.
    pub(super) fn start(token: &'static str) -> (String, SeenHeaders) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let seen_by_server = Arc::clone(&seen);
        let front: Front = Arc::new(move |parts, _| {
            let header = |name: &str| {
                parts
                    .headers
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned()
            };
            let auth = header("authorization");
            seen_by_server
                .lock()
                .unwrap()
                .push((auth.clone(), header("x-team")));
            (auth != format!("Bearer {token}"))
                .then_some(FrontAnswer::Status(hyper::StatusCode::UNAUTHORIZED, None))
        });
        (serve_mcp(|| Pager, front), seen)
    }
}

#[test]
fn lists_a_streamable_http_server_following_cursors_with_token_and_headers() {
    let (url, seen) = http_server::start("s3cret-token");
    let dir = tempfile::tempdir().unwrap();
    let run = toolscore_env(
        dir.path(),
        &[
            "catalog",
            &url,
            "--token-env",
            "WEATHER_TOKEN",
            "--header",
            "X-Team: evals",
        ],
        &[("WEATHER_TOKEN", "s3cret-token")],
    );
    assert_eq!(
        run.code,
        0,
        "{}\n{:?}",
        run.transcript(),
        seen.lock().unwrap()
    );
    assert!(
        run.stdout.starts_with(&format!(
            "source: {url} (streamable HTTP)\nserver: pager 1.2.3 (protocol "
        )),
        "{}",
        run.stdout
    );
    assert!(
        summary_line(&run.stdout).starts_with("tools: 3, "),
        "{}",
        run.stdout
    );
    for tool in ["get_weather", "get_forecast", "get_alerts"] {
        assert!(
            run.stdout.contains(&format!("\n{tool}  (~")),
            "{}",
            run.stdout
        );
    }
    assert!(!run.stdout.contains("s3cret") && !run.stderr.contains("s3cret"));
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty());
    assert!(
        seen.iter()
            .all(|(auth, team)| auth == "Bearer s3cret-token" && team == "evals"),
        "{seen:?}"
    );

    // Without the token: a clear error that names the server, never the token.
    let run = toolscore_env(
        dir.path(),
        &["catalog", &url, "--token-env", "WEATHER_TOKEN"],
        &[("WEATHER_TOKEN", "wrong-token")],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr
            .starts_with(&format!("error: MCP server {url}: failed to start: ")),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("wrong-token"), "{}", run.stderr);
    let run = toolscore(
        dir.path(),
        &["catalog", &url, "--token-env", "UNSET_TOKEN_VAR"],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr
            .contains("the bearer token variable UNSET_TOKEN_VAR is not set"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_dataset_can_name_a_live_server_and_the_run_records_it() {
    let Some(modules) = published_servers() else {
        return;
    };
    let server = support::FakeServer::start_in_background(|req| {
        let _ = req;
        support::FakeResponse::ok(support::tool_call_body(&[(
            "echo",
            r#"{"message":"hello"}"#,
        )]))
    });
    let entry = modules.join(EVERYTHING).join("dist/index.js");
    let dir = support::fake_project(
        &server.base_url,
        "[]",
        r#"{"id":"say-hello","messages":[{"role":"user","content":"Echo hello"}],"expect":{"tool":"echo","args":{"message":"hello"}}}"#,
        &[(
            "data/dataset.yaml",
            &format!("catalog:\n  command: node\n  args: [{}]\n", entry.display()),
        )],
    );
    // tools.json and dataset.yaml together are ambiguous.
    let run = toolscore(dir.path(), &["validate"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(run.stderr.contains("keep one"), "{}", run.stderr);
    std::fs::remove_file(dir.path().join("data/tools.json")).unwrap();

    let run = toolscore(dir.path(), &["validate"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stdout
            .contains("data: 13 tools, 1 cases, catalog sha256:3da0ce6cbf98"),
        "{}",
        run.stdout
    );
    let run = toolscore(
        dir.path(),
        &[
            "run",
            "--trials",
            "3",
            "--out",
            "out",
            "--run-id",
            "live",
            "--progress",
            "off",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("out/live/summary.json")).unwrap(),
    )
    .unwrap();
    let d = &summary["run"]["datasets"][0];
    assert_eq!(d["catalog_source"], "data/dataset.yaml");
    assert!(
        d["catalog_fingerprint"]
            .as_str()
            .unwrap()
            .starts_with("sha256:3da0ce6cbf98")
    );
    assert_eq!(d["catalog_server"]["name"], "mcp-servers/everything");
    assert_eq!(d["catalog_server"]["version"], "2.0.0");
    assert!(d["catalog_server"]["protocol_version"].as_str().is_some());
    assert_eq!(
        d["catalog_server"]["source"],
        format!("node {}", entry.display())
    );
    // `catalog` reads the dataset's live catalog too.
    let run = toolscore(dir.path(), &["catalog", "data"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stdout.starts_with("dataset: data/dataset.yaml\n"),
        "{}",
        run.stdout
    );

    // A server that cannot start stops the run before any request: exit 2.
    std::fs::write(
        dir.path().join("data/dataset.yaml"),
        "catalog:\n  command: sh\n  args: [-c, 'echo no license key >&2; exit 1']\n",
    )
    .unwrap();
    let before = server.requests_seen();
    let run = toolscore(
        dir.path(),
        &["run", "--trials", "3", "--out", "out", "--progress", "off"],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains("  | no license key\n"),
        "{}",
        run.stderr
    );
    assert_eq!(server.requests_seen(), before);
}

#[test]
fn ctrl_c_or_sigterm_while_listing_shuts_the_server_down() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let script = format!("echo $$ > {}; exec sleep 60", pid_file.display());
        let child = support::toolscore_command()
            .current_dir(dir.path())
            .args(["catalog", "--timeout", "30", "--", "sh", "-c", &script])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while !pid_file.is_file() || std::fs::read_to_string(&pid_file).unwrap().is_empty() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the server never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // toolscore listens for signals from the moment it starts the server; leave it a
        // moment so the test does not race the registration on a loaded machine.
        std::thread::sleep(Duration::from_millis(200));
        // SAFETY: signals the toolscore process this test started.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{stderr}");
        assert_eq!(stderr, "error: interrupted; the MCP server was shut down\n");
        assert!(started.elapsed() < Duration::from_secs(15));
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let alive = std::process::Command::new("kill")
            .args(["-0", pid.trim()])
            .status()
            .unwrap()
            .success();
        assert!(!alive, "the server (pid {pid}) outlived toolscore");
    }
}

#[test]
fn the_readme_dataset_yaml_example_parses() {
    // The example lives on the page that documents the file.
    let page = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/reference/file-formats.md"),
    )
    .unwrap();
    let fence = "```yaml dataset.yaml\n";
    let start = page.find(fence).expect("a dataset.yaml example") + fence.len();
    let end = start + page[start..].find("```").unwrap();
    let spec = toolscore_suite::parse_dataset_file(
        &page[start..end],
        Path::new("datasets/everything/dataset.yaml"),
        Path::new("datasets/everything"),
    )
    .unwrap();
    assert_eq!(
        spec.spec.label(),
        "npx -y @modelcontextprotocol/server-everything@2026.8.31"
    );
    assert_eq!(spec.timeout, Duration::from_secs(120));
}

/// The session type scenarios and probes use: one server, several calls, a clean shutdown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_calls_tools_on_a_published_server() {
    use toolscore_mcp::{McpError, McpSession, ServerSpec};
    let Some(modules) = published_servers() else {
        return;
    };
    let spec = ServerSpec::command_line(&server_command(&modules, EVERYTHING)).unwrap();
    let session = McpSession::connect(&spec, Duration::from_secs(30), &|_| None)
        .await
        .unwrap();
    assert_eq!(session.server().name, "mcp-servers/everything");
    let catalog = session.list_tools().await.unwrap();
    assert_eq!(catalog.tools.len(), 13);

    let echo = session
        .call_tool("echo", &serde_json::json!({"message": "hi there"}))
        .await
        .unwrap();
    assert!(!echo.is_error);
    assert_eq!(echo.text(), "Echo: hi there");
    let sum = session
        .call_tool("get-sum", &serde_json::json!({"a": 17, "b": 25}))
        .await
        .unwrap();
    assert!(sum.text().contains("42"), "{sum:?}");
    let weather = session
        .call_tool(
            "get-structured-content",
            &serde_json::json!({"location": "Chicago"}),
        )
        .await
        .unwrap();
    assert!(weather.structured_content.is_some(), "{weather:?}");

    // Arguments that break the schema, and an unknown tool: this release answers both with a
    // tool-execution error (isError) that names the fault, not with a JSON-RPC error.
    let bad = session
        .call_tool("get-sum", &serde_json::json!({"a": "seventeen"}))
        .await
        .unwrap();
    assert!(bad.is_error, "{bad:?}");
    assert!(
        bad.text().contains("expected number, received string at a"),
        "{bad:?}"
    );
    let unknown = session
        .call_tool("no_such_tool", &serde_json::json!({}))
        .await
        .unwrap();
    assert!(unknown.is_error, "{unknown:?}");
    assert!(
        unknown.text().contains("Tool no_such_tool not found"),
        "{unknown:?}"
    );
    // Arguments must be an object: refused before anything is sent.
    assert!(matches!(
        session.call_tool("echo", &serde_json::json!([1])).await,
        Err(McpError::Config { .. })
    ));
    session.shutdown().await;
}

#[test]
fn probe_of_a_published_server_with_a_dataset() {
    let Some(modules) = published_servers() else {
        return;
    };
    let entry = modules.join(EVERYTHING).join("dist/index.js");
    let dir = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "everything/dataset.yaml",
        &format!("catalog:\n  command: node\n  args: [{}]\n", entry.display()),
    );
    write(
        "everything/cases.jsonl",
        concat!(
            r#"{"id":"add","messages":[{"role":"user","content":"17 plus 25?"}],"expect":{"tool":"get-sum","args":{"a":17,"b":25}}}"#,
            "\n",
            r#"{"id":"add-again","messages":[{"role":"user","content":"Add 17 and 25"}],"expect":{"tool":"get-sum","args":{"b":25,"a":17}}}"#,
            "\n",
            r#"{"id":"weather","messages":[{"role":"user","content":"Weather in Chicago?"}],"expect":{"tool":"get-structured-content","args":{"location":"Chicago"}}}"#,
            "\n",
            r#"{"id":"nothing","messages":[{"role":"user","content":"Hi"}],"expect":{"tool":null}}"#,
            "\n",
        ),
    );
    let run = toolscore(dir.path(), &["probe", "everything", "--json", "probe.json"]);
    // One tool cannot be called without task augmentation, so its check fails: exit 1.
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert!(
        run.stdout.contains(
            "PASS result get-sum (case add)\n     1 well-formed content block(s); no outputSchema declared\n"
        ),
        "{}",
        run.stdout
    );
    // The same call twice (keys in another order) is made once.
    assert!(!run.stdout.contains("case add-again"), "{}", run.stdout);
    assert!(
        run.stdout.contains(
            "PASS result get-structured-content (case weather)\n     structuredContent is valid against the outputSchema\n"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("WARN unknown-tool toolscore_probe_no_such_tool\n     a tool-execution error instead of the JSON-RPC error -32602: "),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("PASS invalid-arguments get-sum.a\n     isError naming `a`: "),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("FAIL invalid-arguments simulate-research-query.topic\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "PASS protocol-version 1999-01-01\n     answered with a version it supports instead: "
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .ends_with("\n17 checks: 11 pass, 1 warn, 1 fail, 4 skipped\n"),
        "{}",
        run.stdout
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("probe.json")).unwrap())
            .unwrap();
    assert_eq!(report["server"]["name"], "mcp-servers/everything");
    assert_eq!(report["checks"].as_array().map(Vec::len), Some(17));
    // Without a dataset the result check is skipped, and says why.
    let run = toolscore(
        dir.path(),
        &["probe", "--", "node", &entry.display().to_string()],
    );
    assert!(
        run.stdout
            .contains("SKIP result\n     no dataset: give --dataset DIR"),
        "{}",
        run.stdout
    );
}

#[test]
fn probe_of_a_streamable_http_server_meets_every_verdict() {
    let (url, _) = http_server::start("probe-token");
    let dir = tempfile::tempdir().unwrap();
    let run = toolscore_env(
        dir.path(),
        &["probe", &url, "--token-env", "PROBE_TOKEN"],
        &[("PROBE_TOKEN", "probe-token")],
    );
    assert_eq!(run.code, 1, "{}", run.transcript());
    let expected = [
        "PASS unknown-tool toolscore_probe_no_such_tool\n     JSON-RPC error -32602: \"Unknown tool: toolscore_probe_no_such_tool\"\n",
        "PASS invalid-arguments get_weather.city\n     isError naming `city`: \"`city` must be a string naming a city\"\n",
        "FAIL invalid-arguments get_forecast.city\n     isError, but the message does not name `city`: \"Something went wrong\"\n",
        "WARN invalid-arguments get_alerts.city\n     JSON-RPC error -32602 instead of isError (a model never reads it): \"bad city\"\n",
    ];
    for line in expected {
        assert!(run.stdout.contains(line), "{line}\n{}", run.stdout);
    }
    assert!(
        run.stdout.contains("PASS protocol-version 1999-01-01\n"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("probe-token"));
}

/// `toolscore lint` reads a catalog from the server itself: a published server over stdio
/// (a command after `--`) and a streamable-HTTP server by URL, with its token from an env var.
#[test]
fn lint_of_a_published_server_and_of_a_url() {
    let Some(modules) = published_servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let command = server_command(&modules, "@modelcontextprotocol/server-everything");
    let mut args = vec!["lint", "--"];
    args.extend(command.iter().map(String::as_str));
    let run = toolscore(dir.path(), &args);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let first = run.stdout.lines().next().unwrap_or_default();
    assert!(
        first.contains("server-everything/dist/index.js: 13 tools, catalog sha256:"),
        "{}",
        run.stdout
    );
    // A name many servers expose, and a 28-character description.
    assert!(
        run.stdout
            .contains("warning name-common-collision  echo.name"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("warning description-too-short  echo.description"),
        "{}",
        run.stdout
    );
    // SARIF of a live catalog points into the listing written as a tools.json.
    let mut sarif_args = vec!["lint", "--format", "sarif", "--"];
    sarif_args.extend(command.iter().map(String::as_str));
    let sarif = toolscore(dir.path(), &sarif_args);
    assert_eq!(sarif.code, 0, "{}", sarif.transcript());
    let v: serde_json::Value = serde_json::from_str(&sarif.stdout).unwrap();
    let results = v["runs"][0]["results"].as_array().unwrap();
    assert!(!results.is_empty());
    assert!(
        results.iter().all(
            |r| r["locations"][0]["physicalLocation"]["region"]["startLine"].as_u64() > Some(0)
        ),
        "{}",
        sarif.stdout
    );

    let (url, _) = http_server::start("lint-token");
    let over_http = toolscore_env(
        dir.path(),
        &["lint", &url, "--token-env", "PAGER_TOKEN"],
        &[("PAGER_TOKEN", "lint-token")],
    );
    assert_eq!(over_http.code, 0, "{}", over_http.transcript());
    assert!(
        over_http
            .stdout
            .starts_with(&format!("{url}: 3 tools, catalog sha256:")),
        "{}",
        over_http.stdout
    );
    for tool in ["get_weather", "get_forecast", "get_alerts"] {
        assert!(
            over_http.stdout.contains(&format!(
                "warning description-too-short  {tool}.description"
            )),
            "{}",
            over_http.stdout
        );
    }
    assert!(!over_http.stdout.contains("lint-token") && !over_http.stderr.contains("lint-token"));
    // Both at once is ambiguous: refused before any server starts.
    let both = toolscore(dir.path(), &["lint", "tools.json", "--", "node", "x.js"]);
    assert_eq!(both.code, 2, "{}", both.transcript());
}
