//! `toolscore lint` at scale: a generated catalog of 10,000 and 100,000 tools, and one tool
//! with a 50 MB description. Prints the wall time of `lint::lint` and the process's peak RSS
//! so far (cases run smallest first, so each peak is that case's or an earlier one's).
//!
//! Descriptions are 8 to 30 words drawn with a skewed (Zipf-like) frequency from 5,000 made-up
//! words, like a real catalog's mix of common and rare words; every 200th tool copies an
//! earlier description with one word changed, so near-duplicates exist to be found.
//!
//! Run: `cargo bench --bench lint` (`BENCH_LINT_TOOLS=10000,20000` for other sizes).

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test or benchmark program reports what it measured on the terminal"
)]

use std::time::Instant;

use serde_json::json;
use toolscore_core::catalog::{Catalog, Tool};
use toolscore_lint::{LintOptions, lint};

const VOCABULARY: usize = 5_000;

/// A small deterministic generator (splitmix64), so every run lints the same catalog.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Skewed towards small indices: the word `u³·n` for uniform u.
    fn zipfish(&mut self, n: usize) -> usize {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((u * u * u) * n as f64) as usize
    }
}

fn word(i: usize) -> String {
    const SYLLABLES: &[&str] = &[
        "ka", "lo", "mi", "ter", "van", "so", "re", "pu", "dex", "ion",
    ];
    let mut w = String::new();
    let mut n = i + 1;
    while n > 0 {
        w.push_str(SYLLABLES[n % SYLLABLES.len()]);
        n /= SYLLABLES.len();
    }
    w
}

fn generated(tools: usize) -> Catalog {
    let words: Vec<String> = (0..VOCABULARY).map(word).collect();
    let mut rng = Rng(42);
    let mut descriptions: Vec<String> = Vec::with_capacity(tools);
    let mut out = Vec::with_capacity(tools);
    for i in 0..tools {
        let description = if i > 0 && i % 200 == 0 {
            let mut w: Vec<&str> = descriptions[rng.below(i)].split(' ').collect();
            let at = rng.below(w.len());
            w[at] = "changed";
            w.join(" ")
        } else {
            let n = 8 + rng.below(23);
            (0..n)
                .map(|_| words[rng.zipfish(VOCABULARY)].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        };
        out.push(Tool {
            name: format!("tool_{i}_{}", words[rng.below(VOCABULARY)]),
            description: format!("{description}. Returns the result."),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "record_id": {"type": "string", "description": "The record's id, e.g. rec_123."},
                    "limit": {"type": "integer", "description": "How many to return.", "default": 20, "maximum": 100}
                },
                "required": ["record_id"]
            }),
            ..Default::default()
        });
        descriptions.push(description);
    }
    Catalog::new(out, "generated".to_owned())
}

fn peak_rss_mib() -> f64 {
    // SAFETY: `rusage` is plain old data; getrusage fills it for this process.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage.ru_maxrss as f64 / 1024.0
}

fn time_lint(label: &str, catalog: &Catalog) {
    let t0 = Instant::now();
    let report = lint(catalog, &LintOptions::default());
    let secs = t0.elapsed().as_secs_f64();
    let near = report
        .findings
        .iter()
        .filter(|f| f.rule == toolscore_lint::RuleId::DescriptionNearDuplicate)
        .count();
    println!(
        "  {label:>24}: {secs:>7.2} s, {} findings ({near} near-duplicates), peak RSS {:.0} MiB",
        report.findings.len(),
        peak_rss_mib()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        return;
    }
    let sizes: Vec<usize> = std::env::var("BENCH_LINT_TOOLS")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000]);
    println!("lint of a generated catalog (release build)");
    for n in sizes {
        time_lint(&format!("{n} tools"), &generated(n));
    }
    let huge = Catalog::new(
        vec![Tool {
            name: "get_invoice".to_owned(),
            description: "Look up an invoice by its id. ".repeat(50 * 1024 * 1024 / 30),
            input_schema: json!({"type": "object"}),
            ..Default::default()
        }],
        "generated".to_owned(),
    );
    time_lint("one 50 MB description", &huge);
}
