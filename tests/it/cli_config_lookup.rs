//! Finding the config from a subfolder, as cargo and git find theirs: the nearest
//! toolscore.yaml from the current folder up, never above a repository's top; the project's
//! `reports/` beside it; an explicit `--config` first; and no config as before.

use crate::support;

use support::{FakeResponse, FakeServer, tool_call_body, toolscore};

const TOOLS: &str = r#"{"tools": [{"name": "get_weather", "description": "Weather for a city.",
  "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]}"#;
const CASES: &str = r#"{"id": "paris", "messages": [{"role": "user", "content": "Weather in Paris?"}], "expect": {"tool": "get_weather", "args": {"city": "Paris"}}}"#;

fn history_lines(dir: &std::path::Path) -> usize {
    std::fs::read_to_string(dir.join("reports/history.jsonl")).map_or(0, |t| t.lines().count())
}

#[test]
fn a_run_from_a_subfolder_uses_the_projects_config_and_reports() {
    let server = FakeServer::start_in_background(|_| {
        FakeResponse::ok(tool_call_body(&[("get_weather", r#"{"city": "Paris"}"#)]))
    });
    let root = support::fake_project(&server.base_url, TOOLS, CASES, &[]);
    std::fs::create_dir(root.path().join(".git")).expect("mkdir");
    let sub = root.path().join("sub/dir");
    std::fs::create_dir_all(&sub).expect("mkdir");
    let args = [
        "run",
        "--provider",
        "fake",
        "--trials",
        "2",
        "--progress",
        "off",
    ];

    let run = toolscore(&sub, &args);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stderr.contains("note: using ../../toolscore.yaml\n"),
        "{}",
        run.stderr
    );
    // The dataset the config names (`data`) is read beside the config, and the run lands in
    // the project's reports/, not the subfolder's.
    assert!(!sub.join("reports").exists());
    let after_sub = history_lines(root.path());
    assert!(after_sub > 0, "{}", run.transcript());
    // A run from the root appends to the same history, with no note.
    let run = toolscore(root.path(), &args);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(!run.stderr.contains("note: using"), "{}", run.stderr);
    assert!(history_lines(root.path()) > after_sub);
    // `history` from the subfolder reads the project's too.
    let shown = toolscore(&sub, &["history"]);
    assert_eq!(shown.code, 0, "{}", shown.transcript());
    // A typed --out stays relative to the current folder.
    let run = toolscore(&sub, &[&args[..], &["--out", "mine"]].concat());
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(sub.join("mine/history.jsonl").is_file());
}

#[test]
fn the_search_stops_at_a_repository_and_an_explicit_config_wins() {
    let root = support::fake_project("http://127.0.0.1:9", TOOLS, CASES, &[]);
    let sub = root.path().join("repo/dir");
    std::fs::create_dir_all(&sub).expect("mkdir");

    // No repository in between: found two folders up.
    let found = toolscore(&sub, &["validate"]);
    assert_eq!(found.code, 0, "{}", found.transcript());
    assert!(
        found.stderr.contains("note: using ../../toolscore.yaml"),
        "{}",
        found.stderr
    );

    // `repo` is a repository: the config above it belongs to something else.
    std::fs::create_dir(root.path().join("repo/.git")).expect("mkdir");
    let stopped = toolscore(&sub, &["validate"]);
    assert_eq!(stopped.code, 2, "{}", stopped.transcript());
    assert!(
        stopped.stderr.contains("no toolscore.yaml in"),
        "{}",
        stopped.stderr
    );
    assert!(
        !stopped.stderr.contains("note: using"),
        "{}",
        stopped.stderr
    );

    // The nearest config is read (here a broken one, named as found)...
    std::fs::write(root.path().join("repo/toolscore.yaml"), "datasets: 3\n").expect("write");
    let nearest = toolscore(&sub, &["validate"]);
    assert_eq!(nearest.code, 2, "{}", nearest.transcript());
    assert!(
        nearest.stderr.contains("../toolscore.yaml"),
        "{}",
        nearest.stderr
    );
    // ...unless --config names another, read as typed, with no note.
    let given = toolscore(&sub, &["validate", "--config", "../../toolscore.yaml"]);
    assert_eq!(given.code, 0, "{}", given.transcript());
    assert!(!given.stderr.contains("note: using"), "{}", given.stderr);
}
