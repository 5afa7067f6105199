//! `toolscore.yaml`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = toolscore_suite::parse_config(text, "toolscore.yaml", std::path::Path::new("."));
    }
});
