//! One way to run the binary in tests (uv's `TestContext` in miniature): the process
//! environment is cleaned of keys and log settings, output is captured, and the parts of it
//! that change from run to run (temp folders, run ids, timestamps) are replaced by stable
//! placeholders so tests can compare whole outputs and snapshot them.

use std::path::Path;
use std::process::Command;

/// Exit code, stdout and stderr of one invocation, filtered by [`filter`].
#[derive(Debug)]
pub(crate) struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Exit code, stdout and stderr in one text, the shape snapshots take.
    pub(crate) fn transcript(&self) -> String {
        format!(
            "exit code: {}\n----- stdout -----\n{}\n----- stderr -----\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Environment variables a developer's shell may set that would change what the binary does.
const CLEARED_ENV: &[&str] = &[
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "TOOLSCORE_LOG",
    "MISSING_KEY_VAR",
];

/// The binary as a `Command` with the developer's keys and log settings cleared, for tests that
/// drive the process themselves (stdin, signals, timing); the others use [`toolscore`].
pub(crate) fn toolscore_command() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolscore"));
    clear_user_env(&mut cmd);
    cmd
}

/// Removes the developer's keys and log settings from what `cmd` (a shell or a measuring
/// parent that runs toolscore) passes on.
pub(crate) fn clear_user_env(cmd: &mut Command) -> &mut Command {
    for var in CLEARED_ENV {
        cmd.env_remove(var);
    }
    cmd
}

/// Runs `toolscore ARGS` in `dir`.
pub(crate) fn toolscore(dir: &Path, args: &[&str]) -> Run {
    toolscore_env(dir, args, &[])
}

/// Runs `toolscore ARGS` in `dir` with extra environment variables. Fails the test if the
/// binary panicked: a panic is a bug whatever the input.
pub(crate) fn toolscore_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = toolscore_command();
    cmd.current_dir(dir).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run toolscore");
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: filter(&String::from_utf8_lossy(&out.stdout), dir),
        stderr: filter(&String::from_utf8_lossy(&out.stderr), dir),
    };
    assert!(!run.stderr.contains("panicked"), "{}", run.transcript());
    run
}

/// Replaces `dir` with `[TMP]`, generated run ids with `[RUN_ID]` and RFC 3339 timestamps
/// with `[TIME]`.
pub(crate) fn filter(text: &str, dir: &Path) -> String {
    let text = text.replace(&dir.display().to_string(), "[TMP]");
    let run_id = regex::Regex::new(r"\b\d{8}T\d{6}Z-[0-9a-f]{4}\b").expect("regex");
    let time =
        regex::Regex::new(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z\b").expect("regex");
    let text = run_id.replace_all(&text, "[RUN_ID]");
    time.replace_all(&text, "[TIME]").into_owned()
}

/// Snapshot of a [`Run`]'s whole transcript (exit code, stdout, stderr), reviewed with
/// `cargo insta review`.
#[macro_export]
macro_rules! toolscore_snapshot {
    ($name:expr, $run:expr) => {
        insta::assert_snapshot!($name, $run.transcript())
    };
}

/// A project folder for the binary: `data/tools.json`, `data/cases.jsonl`, any `extra` files
/// (path relative to the folder, text), and a toolscore.yaml naming one provider, `fake`, at
/// `base_url` (model `m`) and the dataset `data`.
pub(crate) fn fake_project(
    base_url: &str,
    tools: &str,
    cases: &str,
    extra: &[(&str, &str)],
) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |rel: &str, text: &str| {
        let path = dir.path().join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(path, text).expect("write");
    };
    write("data/tools.json", tools);
    write("data/cases.jsonl", cases);
    for (rel, text) in extra {
        write(rel, text);
    }
    write(
        "toolscore.yaml",
        &format!(
            "providers:\n  fake:\n    kind: openai-compat\n    base_url: {base_url}\n    model: m\ndatasets: [data]\n"
        ),
    );
    dir
}

/// Splits a command line into words, honouring single and double quotes (enough for the
/// commands the README, docs/ and the CI recipes show; no escapes or expansions).
pub(crate) fn shell_words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(word);
    }
    out
}
