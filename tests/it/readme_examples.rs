//! The README's examples work when pasted: every `json` block parses (and the fixture and
//! overlay examples pass `toolscore validate` against the billing catalog), the `yaml` config
//! parses, and every `toolscore` command of a `sh` block that needs neither a model server nor
//! a key runs, in order, in a copy of the project, without a usage error.

use crate::support;

use std::path::Path;

use support::{shell_words, toolscore};

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md")
}

/// The fenced blocks of a language, in order.
fn blocks(text: &str, lang: &str) -> Vec<String> {
    let fence = format!("```{lang}\n");
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(&fence) {
        let body = &rest[start + fence.len()..];
        let Some(end) = body.find("```") else { break };
        out.push(body[..end].to_owned());
        rest = &body[end + 3..];
    }
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let path = entry.path();
        if path.is_dir() {
            copy_dir(&path, &to.join(entry.file_name()));
        } else {
            std::fs::copy(&path, to.join(entry.file_name())).expect("copy");
        }
    }
}

/// A copy of what the README's commands read: the config and the datasets.
fn project_copy() -> tempfile::TempDir {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(
        root.join("toolscore.yaml"),
        dir.path().join("toolscore.yaml"),
    )
    .expect("config");
    copy_dir(&root.join("datasets"), &dir.path().join("datasets"));
    // The lint examples read the corpora.
    copy_dir(
        &root.join("tests/data/lint"),
        &dir.path().join("tests/data/lint"),
    );
    dir
}

#[test]
fn json_and_yaml_examples_parse_and_validate() {
    let text = readme();
    let json = blocks(&text, "json");
    assert!(json.len() >= 2, "the README shows a fixture and an overlay");
    for block in &json {
        for line in block.lines().filter(|l| !l.trim().is_empty()) {
            serde_json::from_str::<serde_json::Value>(line)
                .unwrap_or_else(|e| panic!("README JSON line does not parse ({e}): {line}"));
        }
    }
    // The fixture example is a valid case of the billing dataset, and the overlay example a
    // valid variant of its catalog.
    let dir = project_copy();
    let billing = dir.path().join("datasets/billing");
    let fixture = json
        .iter()
        .find(|b| b.contains("\"expect\""))
        .expect("a fixture example");
    let overlay = json
        .iter()
        .find(|b| b.contains("\"tools\""))
        .expect("an overlay example");
    std::fs::write(billing.join("cases.jsonl"), fixture).expect("write fixture");
    std::fs::write(billing.join("variants/readme.json"), overlay).expect("write overlay");
    let v = toolscore(dir.path(), &["validate", "--dataset", "datasets/billing"]);
    assert_eq!(v.code, 0, "{}", v.transcript());
    assert!(v.stdout.contains("1 cases"), "{}", v.stdout);
    assert!(v.stdout.contains("variant readme"), "{}", v.stdout);

    for block in blocks(&text, "yaml") {
        if block.contains("\nmessages:") {
            // A scenario file, read from where the examples live.
            let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
            toolscore::suite::scenario::parse_scenario(&block, "README.md", "readme", &base)
                .unwrap_or_else(|e| panic!("README scenario does not load: {e}\n{block}"));
            continue;
        }
        toolscore::suite::parse_config(&block, "README.md", Path::new("."))
            .unwrap_or_else(|e| panic!("README config does not parse: {e}\n{block}"));
    }
}

/// Commands that need a live model, a key, or files only the reader has.
fn needs_more_than_the_repository(words: &[String]) -> bool {
    words.iter().any(|w| {
        matches!(w.as_str(), "local" | "local-greedy" | "openai")
            || [
                "openai-responses:",
                "anthropic:",
                "gemini:",
                "ollama:",
                "azure-openai:",
            ]
            .iter()
            .any(|kind| w.starts_with(kind))
            || w.starts_with("replay:my.")
            || w.starts_with("reports/2026")
            || w.contains("<run-id>")
    })
}

#[test]
fn offline_shell_examples_run_in_order() {
    let text = readme();
    let dir = project_copy();
    let mut ran = 0;
    for block in blocks(&text, "sh") {
        for line in block.lines() {
            for command in line.split("&&") {
                let w = shell_words(command);
                let Some(first) = w.first() else { continue };
                if !(first == "toolscore" || first.ends_with("/toolscore")) {
                    continue;
                }
                if needs_more_than_the_repository(&w) {
                    continue;
                }
                let args: Vec<&str> = w[1..].iter().map(String::as_str).collect();
                let run = toolscore(dir.path(), &args);
                // Gates and comparisons may fail (1) or be inconclusive (3) by design; a usage
                // or input error (2) or lost trials (4) means the example is broken.
                assert!(
                    matches!(run.code, 0 | 1 | 3),
                    "README example failed with exit {}: {}\n{}",
                    run.code,
                    command.trim(),
                    run.transcript()
                );
                ran += 1;
            }
        }
    }
    assert!(ran >= 8, "only {ran} README commands ran");
}
