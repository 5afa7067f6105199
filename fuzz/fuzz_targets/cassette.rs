//! Cassettes, read from disk both as plain JSON Lines and through the gzip decoder.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use toolscore_provider::cassette::Cassette;

fn dir() -> &'static tempfile::TempDir {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("a temporary folder"))
}

fn load(name: &str, data: &[u8]) {
    let path: PathBuf = dir().path().join(name);
    std::fs::write(&path, data).expect("write the cassette");
    let _ = Cassette::load(&path);
}

fuzz_target!(|data: &[u8]| {
    load("c.jsonl", data);
    load("c.jsonl.gz", data);
});
