//! The layers are crates (docs/contributing/architecture.md), so an import against the arrows
//! does not compile. Two things the compiler cannot keep are checked here: that no crate's
//! Cargo.toml gains a dependency the page does not draw, and the arrows between the modules of
//! the core crate, which share one crate.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Layer crate (its folder under crates/) → the layer crates its `[dependencies]` name.
fn crate_graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    for entry in std::fs::read_dir(workspace().join("crates")).expect("read crates/") {
        let dir = entry.expect("dir entry").path();
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("read Cargo.toml");
        let mut section = "";
        let mut deps = BTreeSet::new();
        for line in manifest.lines() {
            if line.starts_with('[') {
                section = line;
            } else if section == "[dependencies]"
                && let Some(rest) = line.strip_prefix("toolscore-")
            {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                deps.insert(name);
            }
        }
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        graph.insert(name, deps);
    }
    graph
}

/// The arrows of the architecture page's table, crate by crate: each layer and the layers it
/// may use. A new arrow is a decision to write on the page first, then here.
const LAYERS: &[(&str, &[&str])] = &[
    ("stats", &[]),
    ("core", &[]),
    ("mcp", &["core", "stats"]),
    ("provider", &["core"]),
    ("score", &["core"]),
    ("lint", &["core", "stats"]),
    ("suite", &["core", "lint", "mcp", "score"]),
    (
        "runner",
        &["core", "lint", "mcp", "provider", "score", "suite"],
    ),
    ("summary", &["core", "stats"]),
    ("report", &["core", "mcp", "stats", "summary"]),
    ("decide", &["core", "stats", "summary"]),
    (
        "tune",
        &["core", "decide", "score", "stats", "suite", "summary"],
    ),
    ("import", &["core", "provider", "score", "suite"]),
];

#[test]
fn each_crate_depends_only_on_the_layers_the_architecture_page_draws() {
    let graph = crate_graph();
    let drawn: BTreeMap<String, BTreeSet<String>> = LAYERS
        .iter()
        .map(|(c, deps)| {
            (
                (*c).to_owned(),
                deps.iter().map(|d| (*d).to_owned()).collect(),
            )
        })
        .collect();
    assert_eq!(
        graph.keys().collect::<Vec<_>>(),
        drawn.keys().collect::<Vec<_>>(),
        "the crates under crates/ are the layers the page names"
    );
    let mut broken = Vec::new();
    for (name, deps) in &graph {
        for extra in deps.difference(&drawn[name]) {
            broken.push(format!(
                "crates/{name}/Cargo.toml depends on toolscore-{extra}"
            ));
        }
    }
    assert!(
        broken.is_empty(),
        "arrows the page does not draw:\n{}",
        broken.join("\n")
    );
}

/// Module of the core crate → the other core modules its code names (outside unit tests), with
/// one file that does, for the message.
fn core_module_graph() -> BTreeMap<String, BTreeMap<String, String>> {
    let src = workspace().join("crates/core/src");
    let mut graph: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let module = rel.split(['/', '.']).next().unwrap().to_owned();
            if module == "lib" {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("read source");
            let code = text.split("#[cfg(test)]\nmod tests").next().unwrap();
            let deps = graph.entry(module.clone()).or_default();
            for (i, _) in code.match_indices("crate::") {
                let name: String = code[i + "crate::".len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() && name != module {
                    deps.entry(name).or_insert_with(|| rel.clone());
                }
            }
        }
    }
    graph
}

#[test]
fn core_modules_point_one_way() {
    let graph = core_module_graph();
    // (module, the core modules it may use)
    let allowed: &[(&str, &[&str])] = &[
        ("json", &[]),
        ("message", &[]),
        ("error", &[]),
        ("input", &["error"]),
        ("atomic", &["error"]),
        ("record", &["message"]),
        ("event", &["record", "error"]),
        ("catalog", &["json", "input", "error"]),
        ("metric", &["record"]),
        ("text", &[]),
        ("suggest", &[]),
    ];
    assert_eq!(
        graph.keys().collect::<BTreeSet<_>>(),
        allowed
            .iter()
            .map(|(m, _)| m.to_string())
            .collect::<BTreeSet<_>>()
            .iter()
            .collect(),
        "every core module has its row"
    );
    let mut broken = Vec::new();
    for (module, may) in allowed {
        for (dep, file) in &graph[*module] {
            if !may.contains(&dep.as_str()) {
                broken.push(format!("{module} uses {dep} (crates/core/src/{file})"));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "forbidden arrows:\n{}",
        broken.join("\n")
    );
}
