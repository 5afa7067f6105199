//! Reading what a run leaves behind: JSON files, JSON-lines files, the run folder.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// A JSON file, parsed; panics naming the file.
pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// A JSON-lines file (results.jsonl, history.jsonl), one value a line; panics naming the file
/// and line.
pub fn read_jsonl(path: &Path) -> Vec<Value> {
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
pub fn only_run_dir(out: &Path) -> PathBuf {
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
