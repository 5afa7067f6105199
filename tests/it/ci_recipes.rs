//! The CI recipes in examples/ci/ stay true to the binary: each file is valid YAML, and every
//! `toolscore` invocation in it parses with the CLI's own argument parser (a renamed flag or a
//! removed subcommand fails here, not in a user's pipeline); the steps that need no key and
//! no model (lint, the escape probe) run here too.

use std::path::Path;

use crate::support;

use clap::Parser;
use support::shell_words;
use toolscore::cli::Cli;

/// The `toolscore …` commands of a recipe, with `\` continuations joined and CI variables
/// (`${{ … }}`, `$VAR`) replaced by a plain word.
fn invocations(text: &str) -> Vec<Vec<String>> {
    let joined = text.replace("\\\n", " ");
    let mut out = Vec::new();
    for line in joined.lines().filter(|l| !l.trim_start().starts_with('#')) {
        let mut line = line.to_owned();
        while let (Some(a), Some(b)) = (line.find("${{"), line.find("}}")) {
            if b < a {
                break;
            }
            line.replace_range(a..b + 2, "X");
        }
        // A command: `toolscore …` as a script item, or the installed binary's path.
        let trimmed = line.trim_start().trim_start_matches("- ");
        let w = shell_words(trimmed);
        let Some(at) = w
            .iter()
            .position(|w| w.ends_with("/bin/toolscore"))
            .or_else(|| (w.first().is_some_and(|f| f == "toolscore")).then_some(0))
        else {
            continue;
        };
        let args: Vec<String> = w[at..]
            .iter()
            .map(|a| {
                if a.contains('$') {
                    "X".to_owned()
                } else {
                    a.clone()
                }
            })
            .collect();
        out.push(args);
    }
    out
}

#[test]
fn every_recipe_is_yaml_and_every_toolscore_command_in_it_parses() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/ci");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("examples/ci")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    assert!(
        files.len() >= 3,
        "the GitHub pull-request and weekly recipes and GitLab's"
    );
    let mut commands = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read");
        serde_saphyr::from_str::<serde_json::Value>(&text)
            .unwrap_or_else(|e| panic!("{} is not valid YAML: {e}", file.display()));
        for args in invocations(&text) {
            Cli::try_parse_from(&args).unwrap_or_else(|e| {
                panic!(
                    "{}: `{}` does not parse:\n{e}",
                    file.display(),
                    args.join(" ")
                )
            });
            commands += 1;
        }
    }
    assert!(commands >= 6, "only {commands} toolscore commands found");
}

/// The pull-request recipe's lint step needs no key and no model, so it runs here as written
/// (in a copy of the repository's datasets): it must exit 0 on the shipped catalog and leave
/// the SARIF file the upload step reads.
#[test]
fn the_pull_request_recipes_lint_step_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text =
        std::fs::read_to_string(root.join("examples/ci/github-pull-request.yml")).expect("recipe");
    let lint: Vec<Vec<String>> = invocations(&text)
        .into_iter()
        .filter(|args| args.get(1).is_some_and(|a| a == "lint"))
        .collect();
    assert_eq!(lint.len(), 1, "one lint step: {lint:?}");
    let dir = tempfile::tempdir().expect("tempdir");
    let billing = dir.path().join("datasets/billing");
    std::fs::create_dir_all(&billing).expect("mkdir");
    std::fs::copy(
        root.join("datasets/billing/tools.json"),
        billing.join("tools.json"),
    )
    .expect("copy");
    let args: Vec<&str> = lint[0][1..].iter().map(String::as_str).collect();
    let run = support::toolscore(dir.path(), &args);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let sarif: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("toolscore.sarif")).expect("toolscore.sarif"),
    )
    .expect("SARIF is JSON");
    assert_eq!(sarif["version"], "2.1.0");
    assert_eq!(sarif["runs"][0]["tool"]["driver"]["name"], "toolscore");
}

/// The pull-request recipe's escape probe, its placeholder server command replaced by the safe
/// twin of the test fixture: the flags as written give exit 0 and SARIF 2.1.0 on stdout, which
/// the recipe redirects into the file its upload step reads.
#[test]
fn the_pull_request_recipes_escape_probe_runs_on_a_test_instance() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text =
        std::fs::read_to_string(root.join("examples/ci/github-pull-request.yml")).expect("recipe");
    let probe: Vec<Vec<String>> = invocations(&text)
        .into_iter()
        .filter(|args| args.get(1).is_some_and(|a| a == "probe"))
        .collect();
    assert_eq!(probe.len(), 1, "one escape probe step: {probe:?}");
    let until_command = probe[0]
        .iter()
        .position(|a| a == "--")
        .expect("a server command after --");
    assert!(probe[0].contains(&"--security".to_owned()), "{probe:?}");
    let fixture = root.join("tests/data/mcp/escape_server.py");
    let fixture = fixture.display().to_string();
    let mut args: Vec<&str> = probe[0][1..until_command]
        .iter()
        .map(String::as_str)
        .collect();
    args.extend(["--", "python3", &fixture, "safe"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let run = support::toolscore(dir.path(), &args);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let sarif: serde_json::Value = serde_json::from_str(&run.stdout).expect("SARIF is JSON");
    assert_eq!(sarif["version"], "2.1.0");
    assert_eq!(
        sarif["runs"][0]["results"].as_array().map(Vec::len),
        Some(0)
    );
}
