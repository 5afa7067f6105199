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
        // The command ends where the shell's next one, or its redirection, begins.
        let end = w[at..]
            .iter()
            .position(|a| matches!(a.as_str(), "|" | "||" | "&&" | ";" | ">" | ">>" | "2>"))
            .map_or(w.len(), |i| at + i);
        let args: Vec<String> = w[at..end]
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

/// The steps of the composite action at the repository's root, by name: its `run` scripts.
fn action_steps() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("action.yml")).expect("action.yml");
    let action: serde_json::Value =
        serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("action.yml is not YAML: {e}"));
    assert_eq!(action["runs"]["using"], "composite");
    action["runs"]["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter_map(|s| {
            let name = s["name"].as_str()?.to_owned();
            Some((name, s["run"].as_str()?.to_owned()))
        })
        .collect()
}

/// The example arguments the action's header gives (`args: …`).
const ACTION_EXAMPLE_ARGS: &str =
    "--provider openai --trials 50 --gate 'pass>=0.8' --gate-level suite";

/// Every `toolscore` command the action runs parses with the CLI's own parser, the gate's with
/// the example arguments of its header in place of the user's.
#[test]
fn every_toolscore_command_of_the_action_parses() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let header = std::fs::read_to_string(root.join("action.yml")).expect("action.yml");
    assert!(
        header.contains(&format!("args: {ACTION_EXAMPLE_ARGS}")),
        "the header's example is the one tested"
    );
    let mut subcommands = Vec::new();
    for (name, script) in action_steps() {
        let script = script.replace("\"${args[@]}\"", ACTION_EXAMPLE_ARGS);
        for args in invocations(&script) {
            match Cli::try_parse_from(&args) {
                Ok(_) => {}
                Err(e) if e.kind() == clap::error::ErrorKind::DisplayVersion => {}
                Err(e) => panic!("step `{name}`: `{}` does not parse:\n{e}", args.join(" ")),
            }
            subcommands.push(args.get(1).cloned().unwrap_or_default());
        }
    }
    assert_eq!(subcommands, ["--version", "lock", "run"]);
}

/// Runs the action's step `name` as the runner would: bash, in `dir`, with `env`, the
/// test's toolscore first on PATH, and GITHUB_OUTPUT and RUNNER_TEMP set. Its exit code and
/// the outputs it wrote.
fn run_action_step(
    name: &str,
    dir: &Path,
    env: &[(&str, &str)],
) -> (i32, std::collections::BTreeMap<String, String>) {
    let script = action_steps()
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no step `{name}`"))
        .1;
    let bin = Path::new(env!("CARGO_BIN_EXE_toolscore"))
        .parent()
        .expect("bin folder")
        .to_owned();
    let temp = tempfile::tempdir().expect("runner temp");
    let outputs = temp.path().join("github_output");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // As GitHub runs a composite action's bash step.
    let status = std::process::Command::new("bash")
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script])
        .current_dir(dir)
        .env("PATH", path)
        .env("GITHUB_OUTPUT", &outputs)
        .env("RUNNER_TEMP", temp.path())
        .envs(env.iter().copied())
        .status()
        .expect("bash");
    let written = std::fs::read_to_string(&outputs).unwrap_or_default();
    let outputs = written
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    (status.code().unwrap_or(-1), outputs)
}

/// The action's gate step, run as written against the demo replay: it passes the user's
/// arguments as a shell would split them, never evaluating them, and names the exit code
/// and the run's folder (with report.md) for the steps after it; the decide step ends the
/// job as the exit code says.
#[test]
fn the_actions_gate_step_runs_and_names_its_exit_code_and_run_folder() {
    let dir = support::project_copy();
    let (code, outputs) = run_action_step(
        "Run the gate",
        dir.path(),
        &[
            (
                "TOOLSCORE_ACTION_ARGS",
                "--provider demo --trials 3 --gate 'pass>=0.05' --gate-level suite",
            ),
            ("RUN_ID", "pr-1-1"),
        ],
    );
    assert_eq!(code, 0, "the step itself succeeds whatever the gate says");
    assert_eq!(
        outputs.get("exit-code").map(String::as_str),
        Some("0"),
        "{outputs:?}"
    );
    let run_dir = Path::new(outputs.get("run-dir").expect("run-dir"));
    assert!(run_dir.is_absolute(), "{}", run_dir.display());
    assert!(run_dir.ends_with("reports/pr-1-1"), "{}", run_dir.display());
    assert!(run_dir.join("report.md").is_file());

    // A word that a shell would run stays a word: toolscore refuses it (exit 2) and nothing
    // is executed; no run folder is named.
    let (code, outputs) = run_action_step(
        "Run the gate",
        dir.path(),
        &[
            (
                "TOOLSCORE_ACTION_ARGS",
                "--provider demo '$(touch pwned)' `touch pwned2`",
            ),
            ("RUN_ID", "pr-2-1"),
        ],
    );
    assert_eq!(code, 0);
    assert_eq!(
        outputs.get("exit-code").map(String::as_str),
        Some("2"),
        "{outputs:?}"
    );
    assert!(!outputs.contains_key("run-dir"), "{outputs:?}");
    assert!(!dir.path().join("pwned").exists() && !dir.path().join("pwned2").exists());

    for (exit, inconclusive, job) in [
        ("0", "warn", 0),
        ("3", "warn", 0),
        ("3", "fail", 1),
        ("1", "warn", 1),
        ("2", "warn", 1),
        ("4", "warn", 1),
    ] {
        let (code, _) = run_action_step(
            "Decide",
            dir.path(),
            &[("CODE", exit), ("INCONCLUSIVE", inconclusive)],
        );
        assert_eq!(code, job, "exit {exit}, inconclusive: {inconclusive}");
    }
}
