//! `toolscore.lock` at scale: a dataset whose catalog has N tools and two variants (each
//! rewording 1% of the tools), pinned, written, read back and compared with a catalog where one
//! tool changed. Prints each step's wall time and the lock's size, so a step that grows faster
//! than the catalog shows at once (10× the tools should cost about 10× the time).
//!
//! Run: `cargo bench --bench lock` (`BENCH_LOCK_TOOLS=1000,10000` for other sizes).

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test or benchmark program reports what it measured on the terminal"
)]

use std::time::Instant;

use serde_json::json;
use toolscore_core::catalog::lock::{self, Lock, Scope, Unit, UnitKind};
use toolscore_core::catalog::{Catalog, Tool};

fn tool(i: usize, wording: &str) -> Tool {
    Tool {
        name: format!("tool_{i:06}"),
        description: format!(
            "Returns record {i} of the ledger {wording}, with its lines, totals and the account it belongs to."
        ),
        input_schema: json!({"type": "object", "properties": {
            "id": {"type": "string", "description": format!("The id of record {i}.")},
            "expand": {"type": "boolean", "description": "Include the lines.", "default": false}
        }, "required": ["id"]}),
        ..Default::default()
    }
}

fn unit(tools: usize, changed: Option<usize>) -> Unit {
    let base: Vec<Tool> = (0..tools)
        .map(|i| {
            tool(
                i,
                if Some(i) == changed {
                    "now and then"
                } else {
                    "as kept"
                },
            )
        })
        .collect();
    let variant = |label: &str| {
        let tools = base
            .iter()
            .enumerate()
            .map(|(i, t)| {
                if i % 100 == 0 {
                    tool(i, label)
                } else {
                    t.clone()
                }
            })
            .collect();
        Catalog::new(tools, format!("data/variants/{label}.json"))
    };
    let base_catalog = Catalog::new(base.clone(), "data/tools.json".into());
    Unit {
        kind: UnitKind::Dataset,
        name: "data".into(),
        server: None,
        catalogs: vec![
            ("base".into(), base_catalog),
            ("terse".into(), variant("terse")),
            ("warm".into(), variant("warm")),
        ],
    }
}

fn timed<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    println!("  {what:<28} {:>8.3} s", start.elapsed().as_secs_f64());
    out
}

fn main() {
    let sizes: Vec<usize> = std::env::var("BENCH_LOCK_TOOLS")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 10_000, 50_000]);
    for n in sizes {
        println!("{n} tools, 2 variants rewording 1% each");
        let pinned = Lock::new(vec![unit(n, None)]);
        let text = timed("render", || lock::render(&pinned));
        println!("  {:<28} {:>8} bytes", "lock size", text.len());
        let parsed = timed("parse (every fingerprint)", || {
            lock::parse(&text, "toolscore.lock").expect("the lock parses")
        });
        assert_eq!(parsed.counts(), pinned.counts());
        let now = Lock::new(vec![unit(n, Some(n / 2))]);
        let changes = timed("compare, one tool changed", || {
            lock::compare(&parsed, &now, Scope::Evaluated)
        });
        let shown = timed("render the changes", || lock::render_changes(&changes));
        assert!(shown.contains(&format!("tool_{:06}", n / 2)), "{shown}");
    }
}
