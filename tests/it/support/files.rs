//! Reading what a run leaves behind (JSON files, JSON-lines files, the run folder), copies of
//! the project for commands that write into it, and the guides' quoted outputs.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// A JSON file, parsed; panics naming the file.
pub(crate) fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// A JSON-lines file (results.jsonl, history.jsonl), one value a line; panics naming the file
/// and line.
pub(crate) fn read_jsonl(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("{}:{} is not JSON: {e}", path.display(), i + 1))
        })
        .collect()
}

/// The one run folder in `out` (beside the history.jsonl every run appends to).
pub(crate) fn only_run_dir(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", out.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(
        dirs.len(),
        1,
        "one run folder in {}: {dirs:?}",
        out.display()
    );
    dirs[0].clone()
}

/// Copies a folder and everything under it.
pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

/// A copy of what the docs' commands read: the config, the datasets, the scenarios, the
/// lint corpora and the small MCP servers of tests/data/mcp; commands that write into a dataset (`tune`) write into the copy.
pub(crate) fn project_copy() -> tempfile::TempDir {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(
        root.join("toolscore.yaml"),
        dir.path().join("toolscore.yaml"),
    )
    .expect("config");
    for folder in ["datasets", "scenarios", "tests/data/lint", "tests/data/mcp"] {
        copy_dir(&root.join(folder), &dir.path().join(folder));
    }
    dir
}

/// The lines of the `console` block after the last mention of `command` in a guide appear in
/// `actual`, in order (a line `…` stands for lines left out): the guide quotes what the
/// command prints. The last mention, because a guide may give the command first and name it
/// again where it shows the output.
pub(crate) fn assert_guide_quotes(page: &str, command: &str, actual: &str) {
    assert_guide_quotes_normalized(page, command, actual, str::to_owned);
}

/// [`assert_guide_quotes`] for output that differs from run to run (ports, random tokens):
/// `normalize` is applied to each quoted line; `actual` is given normalized.
pub(crate) fn assert_guide_quotes_normalized(
    page: &str,
    command: &str,
    actual: &str,
    normalize: fn(&str) -> String,
) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join(page)).expect("the guide");
    let after = &text[text
        .rfind(command)
        .unwrap_or_else(|| panic!("{page} runs no `{command}`"))..];
    let block = after
        .split("```console\n")
        .nth(1)
        .expect("a console block after the command");
    let block = &block[..block.find("```").expect("closed")];
    let mut lines = actual.lines();
    for quoted in block.lines().filter(|l| l.trim() != "…").map(normalize) {
        assert!(
            lines.any(|l| l == quoted),
            "{page} quotes a line that `{command}` does not print (or not in this order):\n{quoted}\n--- actual ---\n{actual}"
        );
    }
}
