//! Helpers the `stats` unit tests share: the reference vectors (stats-vectors.json, the
//! machine-readable twin of reference/stats.md) and the comparison they use.

use serde_json::Value;

const VECTORS: &str = include_str!("testdata/stats-vectors.json");

pub(crate) fn vectors() -> Value {
    serde_json::from_str(VECTORS).expect("stats-vectors.json parses")
}

pub(crate) fn rows<'a>(v: &'a Value, key: &str) -> &'a Vec<Value> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key} is an array"))
}

pub(crate) fn f(row: &Value, key: &str) -> f64 {
    row[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is a number in {row}"))
}

pub(crate) fn u(row: &Value, key: &str) -> u64 {
    row[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is an integer in {row}"))
}

/// `|actual − expected| ≤ tol · max(1, |expected|)`: absolute for rates, relative for counts.
#[track_caller]
pub(crate) fn close(actual: f64, expected: f64, tol: f64, what: &str) {
    let scale = expected.abs().max(1.0);
    assert!(
        (actual - expected).abs() <= tol * scale,
        "{what}: got {actual}, expected {expected}"
    );
}
