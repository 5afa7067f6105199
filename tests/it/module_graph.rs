//! The library's module graph, read from the `crate::` paths in `src/`: it has no cycle, and
//! its arrows point the way docs/contributing/architecture.md says. A change that adds a
//! forbidden import fails here, naming the file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level module → the modules it refers to (outside its unit tests), with one file that
/// does, for the message.
fn module_graph() -> BTreeMap<String, BTreeMap<String, PathBuf>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let mut graph: BTreeMap<String, BTreeMap<String, PathBuf>> = BTreeMap::new();
    for path in files {
        let rel = path.strip_prefix(&src).expect("under src");
        let first = rel
            .components()
            .next()
            .expect("a component")
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_owned();
        if first == "lib" || first == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read source");
        // Unit tests may reach anywhere; only the code they test is held to the arrows.
        let code = match text.find("#[cfg(test)]\nmod tests") {
            Some(i) => &text[..i],
            None => &text,
        };
        let deps = graph.entry(first.clone()).or_default();
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && name != first {
                deps.entry(name).or_insert_with(|| rel.to_owned());
            }
        }
    }
    graph
}

#[test]
fn modules_form_no_cycle() {
    let graph = module_graph();
    // Depth-first search for a back edge; report the cycle it closes.
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeMap<String, PathBuf>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) {
        if done.contains(m) {
            return;
        }
        if let Some(i) = path.iter().position(|p| p == m) {
            panic!("module cycle: {} -> {m}", path[i..].join(" -> "));
        }
        path.push(m.to_owned());
        for dep in graph.get(m).into_iter().flat_map(|d| d.keys()) {
            visit(dep, graph, path, done);
        }
        path.pop();
        done.insert(m.to_owned());
    }
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        visit(m, &graph, &mut Vec::new(), &mut done);
    }
    assert!(done.len() >= 12, "the graph was read: {done:?}");
}

#[test]
fn arrows_point_one_way() {
    let graph = module_graph();
    // (module, modules it must not import)
    let forbidden: &[(&str, &[&str])] = &[
        ("json", &["*"]),
        ("atomic", &["*except error"]),
        ("stats", &["*"]),
        ("record", &["*except message"]),
        ("event", &["*except record error"]),
        ("score", &["provider", "runner", "report", "cli", "suite"]),
        (
            "catalog",
            &[
                "provider", "runner", "report", "cli", "score", "suite", "mcp",
            ],
        ),
        ("provider", &["score", "report", "runner", "cli", "suite"]),
        (
            "report",
            &["provider", "runner", "cli", "score", "suite", "decide"],
        ),
        // Decisions read summaries and the event stream, never the machinery that made them.
        (
            "decide",
            &["provider", "runner", "cli", "score", "suite", "lint"],
        ),
        ("runner", &["report", "cli"]),
        // MCP servers, live: the client, probe and stress know no model, run or report.
        (
            "mcp",
            &[
                "provider", "runner", "cli", "score", "suite", "decide", "report", "lint",
            ],
        ),
        ("suite", &["provider", "runner", "report", "cli"]),
        (
            "lint",
            &[
                "provider", "runner", "report", "cli", "suite", "score", "decide",
            ],
        ),
        // Importers make datasets without any run machinery; they read a logged reply with
        // the adapters' own decoders (pure functions of the body), nothing else of provider's.
        ("import", &["runner", "report", "cli", "decide"]),
        // Tuning's pure parts (split, diagnosis, proposals, budget shares): the phases that
        // call a model are cli/tune.rs's.
        ("tune", &["provider", "runner", "cli", "mcp", "import"]),
    ];
    let mut broken = Vec::new();
    for (module, rules) in forbidden {
        let deps = graph
            .get(*module)
            .unwrap_or_else(|| panic!("no module {module}"));
        for (dep, file) in deps {
            let bad = rules.iter().any(|r| match r.strip_prefix('*') {
                Some("") => true,
                Some(allowed) => !allowed
                    .trim_start_matches("except")
                    .split_whitespace()
                    .any(|a| a == dep),
                None => r == dep,
            });
            if bad {
                broken.push(format!("{module} imports {dep} (src/{})", file.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "forbidden arrows:\n{}",
        broken.join("\n")
    );
}
