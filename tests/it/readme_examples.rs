//! The examples of `README.md` and of every page under `docs/` work when pasted: every `json`
//! block parses line by line (and the fixture and overlay examples pass `toolscore validate`
//! against the billing catalog), every `yaml` block parses as what it is (a config, a scenario,
//! or a `dataset.yaml`) through the crate's own parsers, and every `toolscore` command of a `sh`
//! block that needs neither a model server nor a key runs, in order, page by page, each page in
//! its own copy of the project, without a usage error. `console` blocks show output and are not
//! run.

use crate::docs::{Block, pages, read, split_blocks};
use crate::support;

use std::path::{Path, PathBuf};

use support::{project_copy, shell_words, toolscore};

/// Every page with its fenced blocks.
fn blocks_by_page() -> Vec<(PathBuf, Vec<Block>)> {
    pages()
        .into_iter()
        .map(|page| {
            let (blocks, _) = split_blocks(&read(&page));
            (page, blocks)
        })
        .collect()
}

fn parses_as_json(page: &Path, block: &Block) -> Vec<serde_json::Value> {
    block
        .text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| {
                panic!(
                    "{}:{}: a JSON line does not parse ({e}): {line}",
                    page.display(),
                    block.line
                )
            })
        })
        .collect()
}

#[test]
fn json_and_yaml_examples_parse_and_validate() {
    let dir = project_copy();
    let billing = dir.path().join("datasets/billing");
    let cases = std::fs::read_to_string(billing.join("cases.jsonl")).expect("cases");
    let (mut fixtures, mut overlays, mut configs, mut scenarios, mut servers) = (0, 0, 0, 0, 0);
    for (page, blocks) in blocks_by_page() {
        let at = |block: &Block| format!("{}:{}", page.display(), block.line);
        for block in &blocks {
            match block.lang.as_str() {
                "json" => {
                    let values = parses_as_json(&page, block);
                    // A block named after a file (```json cases.jsonl) belongs to a dataset
                    // the page describes; an unnamed one is an example for the billing dataset.
                    if block.name.is_some() {
                        continue;
                    }
                    if values.iter().all(|v| v.get("expect").is_some()) {
                        std::fs::write(billing.join("cases.jsonl"), &block.text).expect("write");
                        let v =
                            toolscore(dir.path(), &["validate", "--dataset", "datasets/billing"]);
                        assert_eq!(v.code, 0, "{}: {}", at(block), v.transcript());
                        let n = values.len();
                        assert!(v.stdout.contains(&format!("{n} cases")), "{}", v.stdout);
                        std::fs::write(billing.join("cases.jsonl"), &cases).expect("restore");
                        fixtures += 1;
                    } else if values.len() == 1 && values[0]["tools"].is_object() {
                        let overlay = billing.join("variants/example.json");
                        std::fs::write(&overlay, &block.text).expect("write overlay");
                        let v =
                            toolscore(dir.path(), &["validate", "--dataset", "datasets/billing"]);
                        assert_eq!(v.code, 0, "{}: {}", at(block), v.transcript());
                        assert!(v.stdout.contains("variant example"), "{}", v.stdout);
                        std::fs::remove_file(&overlay).expect("remove overlay");
                        overlays += 1;
                    }
                }
                "yaml" if block.name.as_deref() == Some("dataset.yaml") => {
                    toolscore_suite::parse_dataset_file(
                        &block.text,
                        Path::new("datasets/example/dataset.yaml"),
                        Path::new("datasets/example"),
                    )
                    .unwrap_or_else(|e| panic!("{}: dataset.yaml does not parse: {e}", at(block)));
                    servers += 1;
                }
                "yaml"
                    if block.text.starts_with("messages:")
                        || block.text.contains("\nmessages:") =>
                {
                    // A scenario file, read from where the shipped scenarios live, or from the
                    // folder of the shipped file the block is named after.
                    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
                    let base = match block.name.as_deref().map(|n| root.join(n)) {
                        Some(named) if named.is_file() => named
                            .parent()
                            .map_or_else(|| root.join("scenarios"), Path::to_path_buf),
                        _ => root.join("scenarios"),
                    };
                    let file = at(block);
                    toolscore_suite::parse_scenario(&block.text, &file, "example", &base)
                        .unwrap_or_else(|e| panic!("{file}: the scenario does not load: {e}"));
                    scenarios += 1;
                }
                "yaml" if block.text.starts_with("- uses:") => {
                    // GitHub workflow steps using the action: YAML, and the `args` given to
                    // it parse as `toolscore run`'s.
                    let file = at(block);
                    let steps: serde_json::Value = serde_saphyr::from_str(&block.text)
                        .unwrap_or_else(|e| panic!("{file}: not YAML: {e}"));
                    for step in steps.as_array().expect("a list of steps") {
                        if let Some(args) = step["with"]["args"].as_str() {
                            let mut argv = vec!["toolscore".to_owned(), "run".to_owned()];
                            argv.extend(support::shell_words(args));
                            <toolscore::cli::Cli as clap::Parser>::try_parse_from(&argv)
                                .unwrap_or_else(|e| panic!("{file}: the action's args: {e}"));
                        }
                    }
                }
                "yaml" => {
                    let file = at(block);
                    toolscore_suite::parse_config(&block.text, &file, Path::new("."))
                        .unwrap_or_else(|e| panic!("{file}: the config does not parse: {e}"));
                    configs += 1;
                }
                _ => {}
            }
        }
    }
    // What the docs show today, so that a block whose fence lost its language is noticed.
    assert!(fixtures >= 1, "no fixture example was validated");
    assert!(overlays >= 1, "no catalog overlay example was validated");
    assert!(
        configs >= 3,
        "only {configs} toolscore.yaml examples were parsed"
    );
    assert!(scenarios >= 1, "no scenario example was parsed");
    assert!(
        servers >= 3,
        "only {servers} dataset.yaml examples were parsed"
    );
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

/// The commands of a `sh` block: continued lines (`\` at the end) joined, comments (` #…`
/// outside quotes) dropped, and `a && b` split into `a` and `b`.
fn commands(block: &str) -> Vec<String> {
    let joined = block.replace("\\\n", " ");
    let mut out = Vec::new();
    for line in joined.lines() {
        let mut quote = None;
        let mut end = line.len();
        let mut previous = ' ';
        for (i, c) in line.char_indices() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (None, '\'' | '"') => quote = Some(c),
                (None, '#') if previous.is_whitespace() => {
                    end = i;
                    break;
                }
                _ => {}
            }
            previous = c;
        }
        out.extend(line[..end].split("&&").map(|c| c.trim().to_owned()));
    }
    out.retain(|c| !c.is_empty());
    out
}

#[test]
fn offline_shell_examples_run_in_order_page_by_page() {
    let mut ran_per_page = Vec::new();
    for (page, blocks) in blocks_by_page() {
        let sh: Vec<&Block> = blocks.iter().filter(|b| b.lang == "sh").collect();
        if sh.is_empty() {
            continue;
        }
        // Each page in a fresh copy: a page's commands may read what its earlier ones wrote,
        // never what another page's did.
        let dir = project_copy();
        let mut ran = 0;
        for block in sh {
            for command in commands(&block.text) {
                // `~/` is a home inside the copy, empty as on a fresh machine; `mkdir -p` and
                // `> FILE` act there as a shell would: an example that installs completions or
                // man pages writes nothing outside the test, and fails as it would for a user
                // when it writes into a folder nothing created.
                let home = dir.path().join("home");
                let w: Vec<String> = shell_words(&command)
                    .iter()
                    .map(|word| match word.strip_prefix("~/") {
                        Some(rest) => home.join(rest).display().to_string(),
                        None => word.clone(),
                    })
                    .collect();
                let Some(first) = w.first() else { continue };
                if first == "mkdir" && w.get(1).is_some_and(|flag| flag == "-p") {
                    for folder in &w[2..] {
                        std::fs::create_dir_all(dir.path().join(folder)).expect("mkdir -p");
                    }
                    continue;
                }
                if !(first == "toolscore" || first.ends_with("/toolscore")) {
                    continue;
                }
                if needs_more_than_the_repository(&w) {
                    continue;
                }
                let (w, redirect) = match w.iter().position(|word| word == ">") {
                    Some(i) => (&w[..i], w.get(i + 1)),
                    None => (&w[..], None),
                };
                let args: Vec<&str> = w[1..].iter().map(String::as_str).collect();
                let run = toolscore(dir.path(), &args);
                if let Some(target) = redirect {
                    let target = dir.path().join(target);
                    let folder = target.parent().expect("a folder");
                    assert!(
                        folder.is_dir(),
                        "{}:{}: `{command}` writes into {}, which no earlier command of the page creates; a shell would fail there (add `mkdir -p` first)",
                        page.display(),
                        block.line,
                        folder.display()
                    );
                    std::fs::write(&target, &run.stdout).expect("the redirect");
                }
                // Gates and comparisons may fail (1) or be inconclusive (3) by design; a usage
                // or input error (2) or lost trials (4) means the example is broken.
                assert!(
                    matches!(run.code, 0 | 1 | 3),
                    "{}:{}: the example failed with exit {}: {command}\n{}",
                    page.display(),
                    block.line,
                    run.code,
                    run.transcript()
                );
                ran += 1;
            }
        }
        ran_per_page.push((page, ran));
    }
    let count = |name: &str| {
        ran_per_page
            .iter()
            .find(|(p, _)| p == Path::new(name))
            .map_or(0, |(_, n)| *n)
    };
    // The README's set-up command, quick start and three jobs; the guides' measured examples.
    assert!(count("README.md") >= 7, "{ran_per_page:?}");
    assert!(
        count("docs/guides/gate-pull-request.md") >= 4,
        "{ran_per_page:?}"
    );
    assert!(
        count("docs/guides/past-one-machine.md") >= 6,
        "{ran_per_page:?}"
    );
    let total: usize = ran_per_page.iter().map(|(_, n)| n).sum();
    assert!(total >= 30, "only {total} commands ran: {ran_per_page:?}");
}

#[test]
fn shell_commands_are_read_as_a_shell_would_split_them() {
    let block = "a --x 'p#q' # a comment\nb \\\n  --y && c\n# only a comment\n";
    assert_eq!(commands(block), ["a --x 'p#q'", "b    --y", "c"]);
}

/// The README's commands, run in order by a new user, leave one point in the demo series of
/// reports/history.jsonl: the quick start's. The gate and comparison examples write to folders
/// of their own, so the weekly trend does not gain a FAIL gate run or a 10-trial run.
#[test]
fn the_readmes_examples_leave_the_demo_series_one_point() {
    let dir = support::project_copy();
    let d = dir.path();
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README");
    let commands: Vec<&str> = readme
        .split("```sh\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .flat_map(str::lines)
        .flat_map(|l| l.split(" && "))
        .filter(|c| c.starts_with("toolscore run") && !c.contains("--out weekly"))
        .collect();
    assert!(commands.len() >= 3, "{commands:?}");
    for command in &commands {
        let words = support::shell_words(command);
        let args: Vec<&str> = words.iter().skip(1).map(String::as_str).collect();
        let run = support::toolscore(d, &args);
        assert_ne!(run.code, 2, "{command}: {}", run.transcript());
    }
    let lines = support::read_jsonl(&d.join("reports/history.jsonl"));
    let runs: Vec<&serde_json::Value> = lines.iter().map(|l| &l["run_id"]).collect();
    assert_eq!(runs.len(), 1, "{commands:?} appended {runs:?}");
}
