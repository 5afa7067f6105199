//! Replays the cargo-fuzz corpora in `fuzz/corpus/<target>/` under `cargo test`.
//!
//! Each test feeds every file of one target's corpus to the same library call, prepared the same
//! way, as the target in `fuzz/fuzz_targets/<target>.rs`. Ok or Err are both fine; a panic fails
//! the test and names the corpus file. Fuzzing itself runs outside CI:
//! `cd fuzz && cargo +nightly fuzz run <target>`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use toolscore_core::catalog::parse_catalog;
use toolscore_provider::Adapter;
use toolscore_provider::OPENAI_COMPAT_KIND;
use toolscore_provider::cassette::Cassette;
use toolscore_score::ToolValidators;
use toolscore_suite::{parse_cases, parse_config};

/// The catalog the `fixtures` target validates cases against.
const FIXED_TOOLS_JSON: &str = include_str!("../../datasets/billing/tools.json");

/// Every file in `fuzz/corpus/<target>/`, sorted; the folder must not be empty.
fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join("corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.expect("a corpus entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "the corpus folder {} is empty",
        dir.display()
    );
    files
}

/// Runs `call` on every corpus file of `target`; fails naming each file whose call panicked.
fn replay(target: &str, mut call: impl FnMut(&[u8])) {
    let mut panicked = Vec::new();
    for path in corpus(target) {
        let data =
            std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| call(&data))) {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(non-string panic payload)".to_owned());
            panicked.push(format!("{}: {message}", path.display()));
        }
    }
    assert!(
        panicked.is_empty(),
        "the {target} target panics on {} corpus file(s):\n{}",
        panicked.len(),
        panicked.join("\n")
    );
}

#[test]
fn fixtures_corpus_replays_without_panicking() {
    let catalog = parse_catalog(FIXED_TOOLS_JSON, "tools.json").expect("the billing catalog");
    replay("fixtures", |data| {
        if let Ok(text) = std::str::from_utf8(data) {
            let _ = parse_cases(text, "cases.jsonl", &catalog);
        }
    });
}

#[test]
fn catalog_corpus_replays_without_panicking() {
    replay("catalog", |data| {
        if let Ok(text) = std::str::from_utf8(data)
            && let Ok(catalog) = parse_catalog(text, "tools.json")
        {
            let _ = ToolValidators::compile(&catalog);
        }
    });
}

#[test]
fn config_corpus_replays_without_panicking() {
    replay("config", |data| {
        if let Ok(text) = std::str::from_utf8(data) {
            let _ = parse_config(text, "toolscore.yaml", Path::new("."));
        }
    });
}

#[test]
fn cassette_corpus_replays_without_panicking() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    replay("cassette", |data| {
        for name in ["c.jsonl", "c.jsonl.gz"] {
            let path = dir.path().join(name);
            std::fs::write(&path, data).expect("write the cassette");
            let _ = Cassette::load(&path);
        }
    });
}

#[test]
fn provider_response_corpus_replays_without_panicking() {
    let adapter: &dyn Adapter = OPENAI_COMPAT_KIND.adapter();
    replay("provider_response", |data| {
        let _ = adapter.decode_response(data);
        let _ = adapter.error_from_status(500, data);
    });
}
