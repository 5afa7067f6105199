//! Precision and recall of `toolscore lint`'s injection rules, measured on two corpora kept in
//! the repository (tests/data/lint/*/README.md say where each file came from):
//!
//! - adversarial: tools we poisoned by hand, across the techniques the issue lists (instructions
//!   to the model, hidden Unicode, homoglyphs, directive tags, exfiltration, secrets, tool
//!   shadowing), many of them obfuscated. Recall = poisoned tools with at least one
//!   injection-category error / poisoned tools. Goal ≥ 0.95.
//! - benign: real published catalogs (BFCL's public function docs from the PyPI package
//!   bfcl-eval, and the tool lists of MCP servers published on npm). False-positive rate =
//!   benign tools with at least one injection-category error / benign tools. Goal ≤ 1%. Every
//!   other error-level finding on the benign set is counted and printed by rule too.
//!
//! `cargo test --release --test it lint_corpus:: -- --nocapture` prints the figures with their 95%
//! Wilson intervals.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toolscore_core::catalog::{Catalog, parse_catalog};
use toolscore_lint::{Category, LintOptions, Severity, lint};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lint")
}

/// Every file under a corpus folder, sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("corpus folder") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Every catalog of a corpus folder (and its subfolders): `*.json` files are one catalog each,
/// `*.jsonl` files one catalog a line.
fn catalogs(dir: &Path) -> Vec<Catalog> {
    let files = files_under(dir);
    let mut out = Vec::new();
    for f in files {
        let name = f.display().to_string();
        match f.extension().and_then(|e| e.to_str()) {
            Some("json") => {
                let text = std::fs::read_to_string(&f).expect("read");
                out.push(parse_catalog(&text, &name).unwrap_or_else(|e| panic!("{e}")));
            }
            Some("jsonl") => {
                let text = std::fs::read_to_string(&f).expect("read");
                for (i, line) in text
                    .lines()
                    .enumerate()
                    .filter(|(_, l)| !l.trim().is_empty())
                {
                    let source = format!("{name}:{}", i + 1);
                    out.push(parse_catalog(line, &source).unwrap_or_else(|e| panic!("{e}")));
                }
            }
            _ => {}
        }
    }
    out
}

/// Per tool: whether it got an injection-category error, and every error rule it got.
fn per_tool(catalogs: &[Catalog]) -> Vec<(String, bool, Vec<&'static str>, Vec<String>)> {
    let options = LintOptions::default();
    let mut out = Vec::new();
    for c in catalogs {
        let report = lint(c, &options);
        for t in &c.tools {
            let mine: Vec<_> = report
                .findings
                .iter()
                .filter(|f| {
                    f.tool.as_deref() == Some(t.name.as_str()) && f.severity == Severity::Error
                })
                .collect();
            let injection = mine.iter().any(|f| f.category == Category::Injection);
            let rules = mine.iter().map(|f| f.rule.as_str()).collect();
            let messages = mine
                .iter()
                .filter(|f| f.category == Category::Injection)
                .map(|f| format!("{} {}: {}", f.rule, f.location(), f.message))
                .collect();
            out.push((
                format!("{}#{}", c.source, t.name),
                injection,
                rules,
                messages,
            ));
        }
    }
    out
}

fn interval(x: u64, n: u64) -> String {
    let iv = toolscore_stats::wilson_interval(x, n, 0.95).expect("n > 0");
    format!(
        "{x}/{n} = {:.4} (95% Wilson {:.4}-{:.4})",
        x as f64 / n as f64,
        iv.lo,
        iv.hi
    )
}

/// Caught of the 40 tools of holdout-2026-12-04.json: 23 when first measured; 40 since the
/// conduct scan, whose signals were checked against it (in-sample now).
const FRESH_HELD_OUT_CAUGHT: u64 = 40;
/// Caught of the 60 tools of adversarial-blind/ (written by a helper who never saw the rules),
/// measured once at commit 936766f with the rules frozen: 30 (14 by the phrase rules alone).
const BLIND_HELD_OUT_CAUGHT: u64 = 30;

#[test]
fn recall_on_the_adversarial_corpus_and_false_positives_on_the_benign_corpus() {
    let all = per_tool(&catalogs(&data().join("adversarial")));
    // Held-out sets, each reported apart and guarded against regressions only:
    // - adversarial-blind/ was written by a helper who never saw the rules and measured once
    //   with them frozen: the out-of-sample figure;
    // - holdout-2026-12-04.json (23/40 when measured) and holdout.json (21/30) were written
    //   by the rules' author after freezing them; their misses shaped later rules, so both
    //   are in-sample now.
    let (fresh, rest): (Vec<_>, Vec<_>) = all
        .into_iter()
        .partition(|t| t.0.contains("holdout-2026-12-04.json#"));
    let (holdout, adversarial): (Vec<_>, Vec<_>) = rest
        .into_iter()
        .partition(|t| t.0.contains("holdout.json#"));
    let benign = per_tool(&catalogs(&data().join("benign")));
    assert!(
        adversarial.len() >= 100,
        "{} poisoned tools",
        adversarial.len()
    );
    assert!(benign.len() >= 1000, "{} benign tools", benign.len());

    let caught = adversarial.iter().filter(|t| t.1).count() as u64;
    let missed: Vec<&String> = adversarial.iter().filter(|t| !t.1).map(|t| &t.0).collect();
    let flagged: Vec<_> = benign.iter().filter(|t| t.1).collect();
    let mut errors_by_rule: BTreeMap<&str, usize> = BTreeMap::new();
    let mut any_error = 0u64;
    for t in &benign {
        if !t.2.is_empty() {
            any_error += 1;
        }
        let mut rules = t.2.clone();
        rules.sort_unstable();
        rules.dedup();
        for r in rules {
            *errors_by_rule.entry(r).or_default() += 1;
        }
    }
    let recall = interval(caught, adversarial.len() as u64);
    let held = holdout.iter().filter(|t| t.1).count() as u64;
    assert_eq!(holdout.len(), 30, "the first held-out file");
    println!(
        "first held-out set (in-sample since 2026-12-04): {}",
        interval(held, holdout.len() as u64)
    );
    let fresh_caught = fresh.iter().filter(|t| t.1).count() as u64;
    assert_eq!(fresh.len(), 40, "the 2026-12-04 held-out file");
    println!(
        "second held-out set (holdout-2026-12-04.json, in-sample since the conduct scan): {}",
        interval(fresh_caught, fresh.len() as u64)
    );
    for t in holdout.iter().chain(&fresh).filter(|t| !t.1) {
        println!("held-out missed: {}", t.0);
    }
    assert!(held >= 30, "the first held-out set fell below 30/30");
    assert!(
        fresh_caught >= FRESH_HELD_OUT_CAUGHT,
        "held-out recall fell below the {FRESH_HELD_OUT_CAUGHT}/40 first measured"
    );
    let blind = per_tool(&catalogs(&data().join("adversarial-blind")));
    let blind_caught = blind.iter().filter(|t| t.1).count() as u64;
    assert_eq!(blind.len(), 60, "the blind held-out file");
    println!(
        "blind held-out recall (adversarial-blind/, written by a helper who never saw the rules): {}",
        interval(blind_caught, blind.len() as u64)
    );
    for t in blind.iter().filter(|t| !t.1) {
        println!("blind held-out missed: {}", t.0);
    }
    assert!(
        blind_caught >= BLIND_HELD_OUT_CAUGHT,
        "blind held-out recall fell below the {BLIND_HELD_OUT_CAUGHT}/60 first measured"
    );
    let fp = interval(flagged.len() as u64, benign.len() as u64);
    println!("adversarial recall (poisoned tools with an injection error): {recall}");
    println!("benign false positives (tools with an injection error): {fp}");
    println!(
        "benign tools with any error-level finding: {}",
        interval(any_error, benign.len() as u64)
    );
    println!("benign tools with an error, by rule: {errors_by_rule:?}");
    for m in &missed {
        println!("missed: {m}");
    }
    for t in &flagged {
        println!("false positive: {} — {}", t.0, t.3.join(" | "));
    }
    assert!(
        caught as f64 / adversarial.len() as f64 >= 0.95,
        "recall {recall}; missed {missed:?}"
    );
    assert!(
        flagged.len() as f64 / benign.len() as f64 <= 0.01,
        "false positives {fp}"
    );
}
