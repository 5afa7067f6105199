//! `cases.jsonl` fixtures, validated against the billing catalog.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use toolscore_core::catalog::{Catalog, parse_catalog};

const FIXED_TOOLS_JSON: &str = include_str!("../../datasets/billing/tools.json");

fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        parse_catalog(FIXED_TOOLS_JSON, "tools.json").expect("the billing catalog parses")
    })
}

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = toolscore_suite::parse_cases(text, "cases.jsonl", catalog());
    }
});
