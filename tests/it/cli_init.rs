//! `toolscore init` starts a dataset from what a user has: a published MCP server (its
//! catalog frozen to tools.json, or named live in dataset.yaml), an OpenAI or Anthropic tool
//! list; one starter case per tool in the catalog's order, a toolscore.yaml only when there is
//! none, `validate` passing on what it wrote, and nothing written or replaced on bad input.

use std::path::Path;

use serde_json::Value;

use crate::support::{
    FakeServer, project_copy, published_servers, read_json, read_jsonl, server_command,
    shell_words, toolscore, toolscore_env,
};

const EVERYTHING: &str = "@modelcontextprotocol/server-everything";

fn init(dir: &Path, args: &[&str], command: &[String]) -> crate::support::Run {
    let mut all = vec!["init"];
    all.extend_from_slice(args);
    if !command.is_empty() {
        all.push("--");
        all.extend(command.iter().map(String::as_str));
    }
    toolscore(dir, &all)
}

/// The command that starts the published "everything" server, or None where Node.js is missing
/// outside CI (the test then returns early, as the support module says).
fn everything() -> Option<Vec<String>> {
    published_servers().map(|modules| server_command(&modules, EVERYTHING))
}

/// The tool names of a tools.json, in its order.
fn tool_names(tools: &Value) -> Vec<&str> {
    tools["tools"]
        .as_array()
        .expect("a tools list")
        .iter()
        .map(|t| t["name"].as_str().expect("a name"))
        .collect()
}

/// Every file under `dir`, with its bytes, for "nothing changed" checks.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push((path.display().to_string(), std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_published_server_becomes_a_dataset_that_validates() {
    let Some(command) = everything() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let run = init(dir.path(), &[], &command);
    assert_eq!(run.code, 0, "{}", run.transcript());
    // The dataset is named for the server, and the next three commands are printed.
    let dataset = dir.path().join("datasets/everything");
    for expected in [
        "wrote datasets/everything (tools.json, cases.jsonl with",
        "wrote toolscore.yaml (provider `openai`",
        "1. edit datasets/everything/cases.jsonl",
        "2. toolscore validate --dataset datasets/everything",
        "3. toolscore run --dataset datasets/everything --trials 10",
    ] {
        assert!(run.stdout.contains(expected), "{expected}\n{}", run.stdout);
    }
    // One starter case per tool, in the server's order, each naming its tool and marked.
    let tools = read_json(&dataset.join("tools.json"));
    let names = tool_names(&tools);
    assert!(names.contains(&"echo"), "{names:?}");
    assert_eq!(tools["serverInfo"]["name"], "mcp-servers/everything");
    let cases = read_jsonl(&dataset.join("cases.jsonl"));
    let expected: Vec<&str> = cases
        .iter()
        .map(|c| c["expect"]["tool"].as_str().unwrap())
        .collect();
    assert_eq!(expected, names);
    for c in &cases {
        assert_eq!(c["tags"], serde_json::json!(["starter"]), "{c}");
        assert!(c["expect"].get("args").is_none(), "{c}");
        let ask = c["messages"][0]["content"].as_str().unwrap();
        assert!(ask.starts_with("EDIT ME: "), "{ask}");
    }
    // `validate` with no flags reads the config init wrote, and passes.
    let validate = toolscore(dir.path(), &["validate"]);
    assert_eq!(validate.code, 0, "{}", validate.transcript());
    assert!(
        validate.stdout.contains(&format!(
            "datasets/everything: {n} tools, {n} cases",
            n = names.len()
        )),
        "{}",
        validate.stdout
    );
    // A second init refuses to replace it, and changes nothing.
    let before = snapshot(dir.path());
    let again = init(dir.path(), &[], &command);
    assert_eq!(again.code, 2, "{}", again.transcript());
    assert!(
        again
            .stderr
            .contains("datasets/everything already exists; pass --force"),
        "{}",
        again.stderr
    );
    assert_eq!(snapshot(dir.path()), before);
    // --force replaces it, and the config, which exists now, is left as it is.
    let forced = init(dir.path(), &["--force"], &command);
    assert_eq!(forced.code, 0, "{}", forced.transcript());
    assert!(forced.stdout.contains("left toolscore.yaml as it is"));
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn a_live_dataset_names_the_server_and_lists_it_on_every_load() {
    let Some(command) = everything() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let run = init(dir.path(), &["--live", "--name", "ev"], &command);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let dataset = dir.path().join("datasets/ev");
    assert!(!dataset.join("tools.json").exists());
    let yaml = std::fs::read_to_string(dataset.join("dataset.yaml")).unwrap();
    assert!(yaml.contains("  command: \"node\"\n"), "{yaml}");
    // The server runs from where init ran, whatever folder the dataset is in.
    assert!(yaml.contains("  cwd: \"../..\"\n"), "{yaml}");
    let validate = toolscore(dir.path(), &["validate", "--dataset", "datasets/ev"]);
    assert_eq!(validate.code, 0, "{}", validate.transcript());
    assert!(
        validate.stdout.contains("listed live from node "),
        "{}",
        validate.stdout
    );
}

#[test]
fn openai_and_anthropic_tool_lists_keep_their_order_and_wording() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("app-tools.json"),
        r#"[{"type": "function", "function": {"name": "search_orders", "description": "Find orders.  Two spaces kept.", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}},
            {"type": "function", "function": {"name": "cancel_order", "description": "Cancel one order.", "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}}]"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("claude.json"),
        r#"[{"name": "zeta", "description": "Last letter first.", "input_schema": {"type": "object", "properties": {}}},
            {"name": "alpha", "description": "First letter last.", "input_schema": {"type": "object", "properties": {}}}]"#,
    )
    .unwrap();
    // A config of the user's own, naming no provider: left alone, and the run command names
    // a KIND:MODEL that calls a model, and says why.
    std::fs::write(
        dir.path().join("toolscore.yaml"),
        "defaults:\n  trials: 5\n",
    )
    .unwrap();
    for (file, name, order, first_description) in [
        (
            "app-tools.json",
            "app-tools",
            ["search_orders", "cancel_order"],
            "Find orders.  Two spaces kept.",
        ),
        (
            "claude.json",
            "claude",
            ["zeta", "alpha"],
            "Last letter first.",
        ),
    ] {
        let run = init(dir.path(), &[file], &[]);
        assert_eq!(run.code, 0, "{}", run.transcript());
        assert!(
            run.stdout.contains(&format!(
                "3. toolscore run --dataset datasets/{name} --provider openai-responses:gpt-4.1-mini --trials 10\n     (toolscore.yaml names no default provider, and no provider of it calls a model; openai-responses:gpt-4.1-mini reads OPENAI_API_KEY, and any KIND:MODEL will do (docs/guides/providers.md))\n"
            )),
            "{}",
            run.stdout
        );
        let tools = read_json(&dir.path().join(format!("datasets/{name}/tools.json")));
        assert_eq!(tool_names(&tools), order);
        assert_eq!(tools["tools"][0]["description"], first_description);
        let validate = toolscore(
            dir.path(),
            &["validate", "--dataset", &format!("datasets/{name}")],
        );
        assert_eq!(validate.code, 0, "{}", validate.transcript());
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("toolscore.yaml")).unwrap(),
        "defaults:\n  trials: 5\n"
    );
}

#[test]
fn bad_input_is_a_usage_error_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("empty.json"), "[]").unwrap();
    std::fs::write(dir.path().join("broken.json"), "[{\"name\": ").unwrap();
    std::fs::write(
        dir.path().join("one.json"),
        r#"[{"name": "a", "input_schema": {"type": "object"}}]"#,
    )
    .unwrap();
    for (args, says) in [
        (vec![], "name what the tools come from"),
        (
            vec!["one.json", "--name", "../up"],
            "a dataset name is one folder name",
        ),
        (
            vec!["one.json", "--name", ".hidden"],
            "a dataset name is one folder name",
        ),
        (vec!["one.json", "--live"], "--live names a server"),
        (vec!["empty.json"], "the catalog has no tools"),
        (vec!["broken.json"], "broken.json"),
        (vec!["missing.json"], "missing.json"),
        (
            vec![
                "http://127.0.0.1:9/mcp",
                "--live",
                "--header",
                "Authorization: Bearer s3cret",
            ],
            "header values may be credentials",
        ),
    ] {
        let run = init(dir.path(), &args, &[]);
        assert_eq!(run.code, 2, "{args:?}\n{}", run.transcript());
        assert!(run.stderr.contains(says), "{args:?}: {}", run.stderr);
        assert!(!run.stderr.contains("s3cret"), "{}", run.stderr);
        assert!(!dir.path().join("datasets").exists(), "{args:?}");
        assert!(!dir.path().join("toolscore.yaml").exists(), "{args:?}");
    }
    // Both a source and a command.
    let run = init(dir.path(), &["one.json"], &["node".to_owned()]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(run.stderr.contains("not both"), "{}", run.stderr);
}

/// A project whose dataset `init` started from a two-tool list, with a config naming a fake
/// OpenAI-compatible server that always calls `search_orders`.
fn starter_project(server: &crate::support::FakeServer) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("app-tools.json"),
        r#"[{"type": "function", "function": {"name": "search_orders", "description": "Find orders.", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}},
            {"type": "function", "function": {"name": "cancel_order", "description": "Cancel one order.", "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}}]"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("toolscore.yaml"),
        format!(
            "defaults:\n  provider: fake\n  trials: 2\nproviders:\n  fake:\n    kind: openai-compat\n    base_url: {}\n    model: m\ndatasets: [datasets/app-tools]\n",
            server.base_url
        ),
    )
    .unwrap();
    let run = init(dir.path(), &["app-tools.json"], &[]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    dir
}

#[test]
fn unedited_starter_cases_are_named_by_validate_and_refused_by_run_and_tune() {
    let server = crate::support::FakeServer::start_in_background(|_| {
        crate::support::FakeResponse::ok(crate::support::tool_call_body(&[(
            "search_orders",
            r#"{"q": "x"}"#,
        )]))
    });
    let dir = starter_project(&server);
    let cases = dir.path().join("datasets/app-tools/cases.jsonl");
    // validate passes, and names each unedited case with its file and line.
    let validate = toolscore(dir.path(), &["validate"]);
    assert_eq!(validate.code, 0, "{}", validate.transcript());
    assert_eq!(
        validate.stderr,
        "warning: 2 unedited starter cases (tagged `starter` and the request still beginning \"EDIT ME:\", as `toolscore init` wrote it); `run` and `tune` refuse to score them until the request is written (or with --allow-starter-cases):\n  datasets/app-tools/cases.jsonl:1  starter-search_orders\n  datasets/app-tools/cases.jsonl:2  starter-cancel_order\n"
    );
    // run and tune refuse, naming them, before any request or file.
    for args in [
        vec!["run", "--out", "out"],
        vec!["tune", "--out", "out", "--budget-trials", "100"],
    ] {
        let refused = toolscore(dir.path(), &args);
        assert_eq!(refused.code, 2, "{args:?}\n{}", refused.transcript());
        assert!(
            refused.stderr.starts_with(
                "error: 2 unedited starter cases (tagged `starter` and the request still beginning \"EDIT ME:\", as `toolscore init` wrote it) would be scored as if real:\n  datasets/app-tools/cases.jsonl:1  starter-search_orders\n  datasets/app-tools/cases.jsonl:2  starter-cancel_order\n"
            ),
            "{args:?}\n{}",
            refused.stderr
        );
        assert!(refused.stderr.contains("pass --allow-starter-cases"));
        assert!(!dir.path().join("out").exists(), "{args:?}");
    }
    assert_eq!(server.requests_seen(), 0);

    // The first request written, its tag kept: it counts; the other is still named.
    let text = std::fs::read_to_string(&cases).unwrap();
    let edited = text.replacen(
        "EDIT ME: write what a user would ask that needs search_orders (Find orders)",
        "Where is my order for the blue lamp?",
        1,
    );
    assert_ne!(edited, text);
    std::fs::write(&cases, edited).unwrap();
    let refused = toolscore(dir.path(), &["run", "--out", "out"]);
    assert_eq!(refused.code, 2, "{}", refused.transcript());
    assert!(
        refused.stderr.starts_with(
            "error: 1 unedited starter case (tagged `starter` and the request still beginning \"EDIT ME:\", as `toolscore init` wrote it) would be scored as if real:\n  datasets/app-tools/cases.jsonl:2  starter-cancel_order\n"
        ),
        "{}",
        refused.stderr
    );

    // Said explicitly, they are scored, and the run says so.
    let allowed = toolscore(
        dir.path(),
        &[
            "run",
            "--out",
            "out",
            "--allow-starter-cases",
            "--progress",
            "off",
        ],
    );
    assert_eq!(allowed.code, 0, "{}", allowed.transcript());
    assert!(
        allowed
            .stderr
            .contains("warning: scoring 1 unedited starter case as it is (--allow-starter-cases)"),
        "{}",
        allowed.stderr
    );
    assert_eq!(server.requests_seen(), 4);
}

/// Step 3 of what `init` printed, as words after `toolscore`.
fn printed_run_command(stdout: &str) -> Vec<String> {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("  3. toolscore "))
        .unwrap_or_else(|| panic!("no step 3 in:\n{stdout}"));
    shell_words(line)
}

/// Writes a request into every starter case of `cases` (the step 1 `init` asks for), keeping
/// the `starter` tag.
fn write_every_request(cases: &Path) {
    let mut text = String::new();
    for mut case in read_jsonl(cases) {
        let tool = case["expect"]["tool"].as_str().unwrap().to_owned();
        case["messages"][0]["content"] = format!("Please use {tool} for me.").into();
        text.push_str(&format!("{case}\n"));
    }
    std::fs::write(cases, text).unwrap();
}

/// The printed command, pointed at `base_url` (the tests' fake in place of the provider's
/// real address; every other word as printed), with its output kept in the project.
fn at_fake(command: &[String], base_url: &str) -> Vec<String> {
    let mut words = command.to_vec();
    words.extend(["--base-url", base_url, "--progress", "off", "--out", "out"].map(str::to_owned));
    words
}

#[test]
fn the_printed_run_command_runs_where_init_printed_it() {
    let Some(command) = everything() else {
        return;
    };
    // In the repository: its config's default provider is a replay, which has nothing for a
    // new dataset, so the command names a provider of the config that calls a model.
    let repo = project_copy();
    let run = init(repo.path(), &[], &command);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stdout.contains(
            "  3. toolscore run --dataset datasets/everything --provider local --trials 10\n     (`demo`, toolscore.yaml's default provider, replays recorded responses, and has none for this dataset; `local` calls a model (start it first: `scripts/local-model.sh start`); so do `local-greedy` and `openai`)\n"
        ),
        "{}",
        run.stdout
    );
    write_every_request(&repo.path().join("datasets/everything/cases.jsonl"));
    let chat = FakeServer::start_in_background(|_| {
        crate::support::FakeResponse::ok(crate::support::tool_call_body(&[(
            "echo",
            r#"{"message": "hi"}"#,
        )]))
    });
    let printed = printed_run_command(&run.stdout);
    let words = at_fake(&printed, &chat.base_url);
    let args: Vec<&str> = words.iter().map(String::as_str).collect();
    let scored = toolscore(repo.path(), &args);
    assert_eq!(scored.code, 0, "{args:?}\n{}", scored.transcript());
    assert_eq!(chat.requests_seen(), 13 * 10);

    // In an empty folder: init writes the config, whose provider needs OPENAI_API_KEY; as
    // printed, the command says so, and with a key it runs.
    let empty = tempfile::tempdir().unwrap();
    let run = init(empty.path(), &[], &command);
    assert_eq!(run.code, 0, "{}", run.transcript());
    write_every_request(&empty.path().join("datasets/everything/cases.jsonl"));
    let printed = printed_run_command(&run.stdout);
    let args: Vec<&str> = printed.iter().map(String::as_str).collect();
    let keyless = toolscore(empty.path(), &args);
    assert_eq!(keyless.code, 2, "{}", keyless.transcript());
    assert!(
        keyless
            .stderr
            .contains("environment variable OPENAI_API_KEY is not set"),
        "{}",
        keyless.stderr
    );
    let responses = FakeServer::start_in_background(crate::support::responses_model);
    let words = at_fake(&printed, &responses.base_url);
    let args: Vec<&str> = words.iter().map(String::as_str).collect();
    let scored = toolscore_env(
        empty.path(),
        &args,
        &[("OPENAI_API_KEY", crate::support::FAKE_KEY)],
    );
    assert_eq!(scored.code, 0, "{}", scored.transcript());
    assert_eq!(responses.requests_seen(), 13 * 10);
}

/// An OpenAI tool list of `(name, parameters)`.
fn tool_list(tools: &[(&str, &str)]) -> String {
    let items: Vec<String> = tools
        .iter()
        .map(|(name, parameters)| {
            format!(
                r#"{{"type": "function", "function": {{"name": "{name}", "description": "{name} things.", "parameters": {parameters}}}}}"#
            )
        })
        .collect();
    format!("[{}]", items.join(",\n"))
}

#[test]
fn a_refresh_keeps_every_written_case_and_names_those_that_no_longer_fit() {
    let dir = tempfile::tempdir().unwrap();
    let id_string =
        r#"{"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}"#;
    let id_integer =
        r#"{"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}"#;
    let none = r#"{"type": "object", "properties": {}}"#;
    std::fs::write(
        dir.path().join("v1.json"),
        tool_list(&[
            ("search_orders", none),
            ("cancel_order", id_string),
            ("refund", none),
            ("gift_wrap", none),
        ]),
    )
    .unwrap();
    let run = init(dir.path(), &["v1.json", "--name", "shop"], &[]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    // The user writes two starter requests (refund's among them), leaves gift_wrap's and
    // cancel_order's as init wrote them, adds a case of their own, and a note.
    let dataset = dir.path().join("datasets/shop");
    let cases = dataset.join("cases.jsonl");
    let written = std::fs::read_to_string(&cases)
        .unwrap()
        .replace(
            "EDIT ME: write what a user would ask that needs search_orders (search_orders things)",
            "Where is my lamp?",
        )
        .replace(
            "EDIT ME: write what a user would ask that needs refund (refund things)",
            "I want my money back",
        )
        + "{\"id\": \"cancel-42\", \"messages\": [{\"role\": \"user\", \"content\": \"Cancel order 42\"}], \"expect\": {\"tool\": \"cancel_order\", \"args\": {\"id\": \"42\"}}}\n";
    std::fs::write(&cases, &written).unwrap();
    std::fs::write(dataset.join("NOTES.md"), "why these cases\n").unwrap();

    // The server changed: refund and gift_wrap are gone, cancel_order takes an integer, track
    // is new.
    std::fs::write(
        dir.path().join("v2.json"),
        tool_list(&[
            ("search_orders", none),
            ("cancel_order", id_integer),
            ("track", none),
        ]),
    )
    .unwrap();
    let refreshed = init(dir.path(), &["v2.json", "--name", "shop", "--force"], &[]);
    assert_eq!(refreshed.code, 0, "{}", refreshed.transcript());
    assert!(
        refreshed.stdout.starts_with(
            "refreshed datasets/shop/tools.json: 3 tools (was 4; new: track; gone: refund, gift_wrap)\n\
             kept datasets/shop/cases.jsonl: 4 cases as they were; removed 1 unedited starter case of a tool that is gone (starter-gift_wrap); added a starter case for each tool no case expects (track)\n\
             2 cases do not fit the new catalog (fix or delete each):\n  \
             datasets/shop/cases.jsonl:3  starter-refund  tool `refund`: gone from the catalog\n  \
             datasets/shop/cases.jsonl:4  cancel-42  tool `cancel_order`: its args do not fit the tool's input schema: `args.id`: \"42\" is not of type \"integer\"\n"
        ),
        "{}",
        refreshed.stdout
    );
    assert!(
        refreshed.stdout.contains(
            "  1. edit datasets/shop/cases.jsonl: fix or delete each case above that does not fit; in each new starter case, write the request and add the expected \"args\"\n"
        ),
        "{}",
        refreshed.stdout
    );
    // Every line the user wrote or kept is there byte for byte, in order; gift_wrap's
    // untouched starter is gone and track's is added at the end.
    let after = std::fs::read_to_string(&cases).unwrap();
    let kept: String = written
        .lines()
        .filter(|l| !l.contains("\"starter-gift_wrap\""))
        .map(|l| format!("{l}\n"))
        .collect();
    let added = after
        .strip_prefix(&kept)
        .unwrap_or_else(|| panic!("{after}"));
    assert_eq!(added.lines().count(), 1, "{added}");
    let starter: Value = serde_json::from_str(added).unwrap();
    assert_eq!(starter["id"], "starter-track");
    assert_eq!(starter["tags"], serde_json::json!(["starter"]));
    assert_eq!(
        std::fs::read_to_string(dataset.join("NOTES.md")).unwrap(),
        "why these cases\n"
    );
    assert_eq!(
        tool_names(&read_json(&dataset.join("tools.json"))),
        ["search_orders", "cancel_order", "track"]
    );
    // validate then names the case whose tool is gone, with its file and line.
    let validate = toolscore(dir.path(), &["validate", "--dataset", "datasets/shop"]);
    assert_eq!(validate.code, 2, "{}", validate.transcript());
    assert!(
        validate
            .stderr
            .starts_with("error: datasets/shop/cases.jsonl:3: expect.tool: case `starter-refund`: tool `refund` is not in the catalog"),
        "{}",
        validate.stderr
    );
}

#[test]
fn a_refresh_from_a_newer_release_of_a_server_keeps_the_cases() {
    let Some(modules) = published_servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let old = server_command(&modules, "server-everything-2026.1.26");
    let run = init(dir.path(), &["--name", "everything"], &old);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let cases = dir.path().join("datasets/everything/cases.jsonl");
    let written = std::fs::read_to_string(&cases).unwrap()
        + "{\"id\": \"add\", \"messages\": [{\"role\": \"user\", \"content\": \"What is 2 + 3?\"}], \"expect\": {\"tool\": \"get-sum\", \"args\": {\"a\": 2, \"b\": 3}}}\n";
    std::fs::write(&cases, &written).unwrap();
    let new = everything().expect("installed above");
    let refreshed = init(dir.path(), &["--name", "everything", "--force"], &new);
    assert_eq!(refreshed.code, 0, "{}", refreshed.transcript());
    assert!(
        refreshed.stdout.starts_with(
            "refreshed datasets/everything/tools.json: 13 tools (was 13; new: none; gone: none)\n\
             kept datasets/everything/cases.jsonl: 14 cases as they were\n\
             every case fits the new catalog\n"
        ),
        "{}",
        refreshed.stdout
    );
    assert_eq!(std::fs::read_to_string(&cases).unwrap(), written);
    // The catalog is the new release's.
    let listed = toolscore(dir.path(), &["catalog", "datasets/everything"]);
    assert!(
        listed.stdout.contains(
            "fingerprint sha256:3da0ce6cbf98781682f46de631183574b44d8c79f36cc33f102910097ed41769"
        ),
        "{}",
        listed.stdout
    );
}
