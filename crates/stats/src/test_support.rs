//! Public (behind the `test-support` feature) as a namespace for other crates' unit tests: `test_support::vectors`.
//!
//! Helpers the `stats` unit tests share: the reference vectors (stats-vectors.json, the
//! machine-readable twin of reference/stats.md) the comparison they use, and a seeded uniform generator.

use serde_json::Value;

const VECTORS: &str = include_str!("testdata/stats-vectors.json");

pub fn vectors() -> Value {
    serde_json::from_str(VECTORS).expect("stats-vectors.json parses")
}

pub fn rows<'a>(v: &'a Value, key: &str) -> &'a Vec<Value> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key} is an array"))
}

pub fn f(row: &Value, key: &str) -> f64 {
    row[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is a number in {row}"))
}

pub fn u(row: &Value, key: &str) -> u64 {
    row[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is an integer in {row}"))
}

/// `|actual − expected| ≤ tol · max(1, |expected|)`: absolute for rates, relative for counts.
#[track_caller]
pub fn close(actual: f64, expected: f64, tol: f64, what: &str) {
    let scale = expected.abs().max(1.0);
    assert!(
        (actual - expected).abs() <= tol * scale,
        "{what}: got {actual}, expected {expected}"
    );
}
/// SplitMix64 uniforms in [0, 1), for seeded simulations (the generator gate.rs's tests use).
pub fn uniforms(mut state: u64) -> impl FnMut() -> f64 {
    move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `P(X = k)`, X ~ Bin(n, p), by the textbook formula in log space: an oracle independent of
/// the saddle-point tails the exact gate computes.
pub fn binomial_pmf(k: u64, n: u64, p: f64) -> f64 {
    use statrs::function::gamma::ln_gamma;
    let (k, n) = (k as f64, n as f64);
    (ln_gamma(n + 1.0) - ln_gamma(k + 1.0) - ln_gamma(n - k + 1.0)
        + k * p.ln()
        + (n - k) * (1.0 - p).ln())
    .exp()
}
