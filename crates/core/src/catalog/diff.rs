//! What changed between two catalogs, in the words a model reads: tools added, removed and
//! renamed (a removed and an added tool whose text is similar enough), descriptions and schemas
//! changed, each with a unified diff of its flat text ([`super::view::tool_text`]) and its
//! fingerprints. A tool whose text changed while the server kept its name and version is
//! flagged: clients that cache catalogs by version would not see the change.

use std::fmt::Write as _;

use serde::Serialize;

use super::source::ServerIdentity;
use super::view::{catalog_tokens, parameters, short, tool_fingerprint, tool_text};
use super::{Catalog, Tool};

/// Least [`similarity`] for a removed and an added tool to be called a rename.
const RENAME_SIMILARITY: f32 = 0.6;

/// Pairs of a removed and an added tool compared at most when looking for renames (the search
/// compares every pair): past it, as when a whole catalog is replaced, the tools are left added
/// and removed and the diff says that renames were not looked for.
pub const MAX_RENAME_PAIRS: usize = 250_000;

#[derive(Debug, Clone, Serialize)]
pub struct Side {
    pub source: String,
    pub fingerprint: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerIdentity>,
    pub tools: usize,
    pub tokens: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolEntry {
    pub name: String,
    pub fingerprint: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Renamed {
    pub old: ToolEntry,
    pub new: ToolEntry,
    pub similarity: f32,
    /// Unified diff of the flat text, when more than the name changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Changed {
    pub name: String,
    pub old_fingerprint: String,
    pub new_fingerprint: String,
    pub description_changed: bool,
    pub schema_changed: bool,
    /// The title, `annotations.title` or output schema changed: text a client shows, which no
    /// provider is sent (absent when unchanged, as diffs were before these were kept).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shown_changed: bool,
    /// Changed while both sides name the same server and version.
    pub flagged: bool,
    pub diff: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct CatalogDiff {
    pub old: Side,
    pub new: Side,
    pub added: Vec<ToolEntry>,
    pub removed: Vec<ToolEntry>,
    pub renamed: Vec<Renamed>,
    pub changed: Vec<Changed>,
    pub unchanged: Vec<ToolEntry>,
    /// Renames were not looked for: more than [`MAX_RENAME_PAIRS`] pairs of a removed and an
    /// added tool.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub renames_not_sought: bool,
}

impl CatalogDiff {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.renamed.is_empty()
            && self.changed.is_empty()
    }

    pub fn flagged(&self) -> usize {
        self.changed.iter().filter(|c| c.flagged).count()
    }
}

fn entry(t: &Tool) -> ToolEntry {
    ToolEntry {
        name: t.name.clone(),
        fingerprint: tool_fingerprint(t),
    }
}

fn side(c: &Catalog, server: Option<&ServerIdentity>) -> Side {
    Side {
        source: c.source.clone(),
        fingerprint: c.fingerprint.clone(),
        server: server.cloned(),
        tools: c.tools.len(),
        tokens: catalog_tokens(c),
    }
}

/// A schema's JSON for a diff hunk: indented, and every object's keys sorted, so a server
/// that writes the same schema with its keys in another order (`$schema` first or last) shows
/// no change there; which keys a schema has and what they hold is the change a reader wants.
/// Arrays keep their order: in `required` or `enum` order is the server's own data.
fn pretty(v: &serde_json::Value) -> String {
    let mut s = serde_json::to_string_pretty(&keys_sorted(v)).unwrap_or_default();
    s.push('\n');
    s
}

/// `v` with every object's keys in sorted order, at any depth.
fn keys_sorted(v: &serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(map) => {
            let mut entries: Vec<(&String, &serde_json::Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            serde_json::Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.clone(), keys_sorted(v)))
                    .collect(),
            )
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.iter().map(keys_sorted).collect())
        }
        other => other.clone(),
    }
}

fn unified(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("old/{old_name}"), &format!("new/{new_name}"))
        .to_string()
}

/// How alike two tools read, 0 to 1: the mean of the word similarity of their descriptions
/// and that of their flattened parameters, so two tools that merely share a schema (or merely
/// share a description) are not taken for one renamed.
pub fn similarity(a: &Tool, b: &Tool) -> f32 {
    // Words alone: similar's own word diff counts the spaces between them, which every
    // two sentences share.
    let words = |x: &str, y: &str| {
        let (x, y): (Vec<&str>, Vec<&str>) = (
            x.split_whitespace().collect(),
            y.split_whitespace().collect(),
        );
        if x.is_empty() && y.is_empty() {
            return 1.0;
        }
        similar::TextDiff::from_slices(&x, &y).ratio()
    };
    let params = |t: &Tool| {
        tool_text(&Tool {
            description: String::new(),
            ..t.clone()
        })
    };
    (words(&a.description, &b.description) + words(&params(a), &params(b))) / 2.0
}

/// Compares two catalogs. `old_server` and `new_server` are who listed them, when known.
pub fn diff(
    old: &Catalog,
    old_server: Option<&ServerIdentity>,
    new: &Catalog,
    new_server: Option<&ServerIdentity>,
) -> CatalogDiff {
    let same_version = match (old_server, new_server) {
        (Some(a), Some(b)) => a.name == b.name && a.version == b.version,
        _ => false,
    };
    // By name, so a diff stays linear in the catalogs' size.
    let (old_names, new_names) = (old.by_name(), new.by_name());
    let mut changed = Vec::new();
    let mut unchanged = Vec::new();
    let mut removed: Vec<&Tool> = Vec::new();
    for o in &old.tools {
        match new_names.get(o.name.as_str()).copied() {
            Some(n) if n == o => unchanged.push(entry(o)),
            Some(n) => changed.push(changed_tool(o, n, same_version)),
            None => removed.push(o),
        }
    }
    let mut added: Vec<&Tool> = new
        .tools
        .iter()
        .filter(|n| !old_names.contains_key(n.name.as_str()))
        .collect();
    let renames_not_sought = removed.len().saturating_mul(added.len()) > MAX_RENAME_PAIRS;
    let (renamed, used_old, used_new) = if renames_not_sought {
        (
            Vec::new(),
            vec![false; removed.len()],
            vec![false; added.len()],
        )
    } else {
        renames(&removed, &added)
    };
    let mut i = 0;
    removed.retain(|_| {
        i += 1;
        !used_old[i - 1]
    });
    let mut j = 0;
    added.retain(|_| {
        j += 1;
        !used_new[j - 1]
    });
    CatalogDiff {
        old: side(old, old_server),
        new: side(new, new_server),
        added: added.into_iter().map(entry).collect(),
        removed: removed.into_iter().map(entry).collect(),
        renamed,
        changed,
        unchanged,
        renames_not_sought,
    }
}

/// A tool kept under its name but changed: what changed, and the unified diff of its text
/// (or, when only what the flat view does not show changed, of its schema's JSON).
fn changed_tool(o: &Tool, n: &Tool, same_version: bool) -> Changed {
    let description_changed = o.description != n.description;
    let schema_changed = o.input_schema != n.input_schema;
    let mut text = unified(&tool_text(o), &tool_text(n), &o.name, &n.name);
    // A schema change the flat view does not show (`additionalProperties`,
    // `$defs`, formats, bounds): the schemas' JSON instead.
    if schema_changed && parameters(&o.input_schema) == parameters(&n.input_schema) {
        text.push_str(&unified(
            &pretty(&o.input_schema),
            &pretty(&n.input_schema),
            &format!("{}.inputSchema", o.name),
            &format!("{}.inputSchema", n.name),
        ));
    }
    let shown = |t: &Tool| {
        serde_json::json!({
            "title": t.title,
            "annotations": t.annotations,
            "outputSchema": t.output_schema,
        })
    };
    let shown_changed = shown(o) != shown(n);
    // The flat view is what the model reads; what only a client shows is diffed as JSON.
    if shown_changed {
        text.push_str(&unified(
            &pretty(&shown(o)),
            &pretty(&shown(n)),
            &format!("{} (shown by clients)", o.name),
            &format!("{} (shown by clients)", n.name),
        ));
    }
    Changed {
        name: o.name.clone(),
        old_fingerprint: tool_fingerprint(o),
        new_fingerprint: tool_fingerprint(n),
        description_changed,
        schema_changed,
        shown_changed,
        flagged: same_version,
        diff: text,
    }
}

/// Renames among the removed and added tools: the most similar pairs first, each tool in at
/// most one pair, sorted by old name; and which removed and added tools they used.
fn renames(removed: &[&Tool], added: &[&Tool]) -> (Vec<Renamed>, Vec<bool>, Vec<bool>) {
    let texts_old: Vec<String> = removed.iter().map(|t| tool_text(t)).collect();
    let texts_new: Vec<String> = added.iter().map(|t| tool_text(t)).collect();
    let mut pairs: Vec<(f32, usize, usize)> = Vec::new();
    for (i, a) in removed.iter().enumerate() {
        for (j, b) in added.iter().enumerate() {
            let ratio = similarity(a, b);
            if ratio >= RENAME_SIMILARITY {
                pairs.push((ratio, i, j));
            }
        }
    }
    pairs.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
    let (mut used_old, mut used_new) = (vec![false; removed.len()], vec![false; added.len()]);
    let mut renamed = Vec::new();
    for (ratio, i, j) in pairs {
        if used_old[i] || used_new[j] {
            continue;
        }
        used_old[i] = true;
        used_new[j] = true;
        let (o, n) = (removed[i], added[j]);
        renamed.push(Renamed {
            old: entry(o),
            new: entry(n),
            similarity: ratio,
            diff: (texts_old[i] != texts_new[j])
                .then(|| unified(&texts_old[i], &texts_new[j], &o.name, &n.name)),
        });
    }
    renamed.sort_by(|a, b| a.old.name.cmp(&b.old.name));
    (renamed, used_old, used_new)
}

fn describe(s: &Side) -> String {
    let server = s.server.as_ref().map_or(String::new(), |id| {
        format!(
            "server {} {}, protocol {}, ",
            id.name, id.version, id.protocol_version
        )
    });
    format!(
        "{}  ({server}{} tools, about {} tokens, {})",
        s.source, s.tools, s.tokens, s.fingerprint
    )
}

/// The diff as text for the terminal.
pub fn render(d: &CatalogDiff) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "old: {}", describe(&d.old));
    let _ = writeln!(out, "new: {}", describe(&d.new));
    if d.is_empty() {
        let _ = writeln!(
            out,
            "\nno change: {} tools read the same",
            d.unchanged.len()
        );
        return out;
    }
    let tokens = d.new.tokens as i64 - d.old.tokens as i64;
    let _ = writeln!(
        out,
        "\n{} added, {} removed, {} renamed, {} changed, {} unchanged; footprint {tokens:+} tokens",
        d.added.len(),
        d.removed.len(),
        d.renamed.len(),
        d.changed.len(),
        d.unchanged.len()
    );
    if d.renames_not_sought {
        let _ = writeln!(
            out,
            "renames not looked for: {} removed × {} added tools is more than {MAX_RENAME_PAIRS} pairs to compare",
            d.removed.len(),
            d.added.len()
        );
    }
    if !d.added.is_empty() {
        let _ = writeln!(out, "\nadded:");
        for t in &d.added {
            let _ = writeln!(out, "  + {}  {}", t.name, short(&t.fingerprint));
        }
    }
    if !d.removed.is_empty() {
        let _ = writeln!(out, "\nremoved:");
        for t in &d.removed {
            let _ = writeln!(out, "  - {}  {}", t.name, short(&t.fingerprint));
        }
    }
    if !d.renamed.is_empty() {
        let _ = writeln!(out, "\nrenamed (by similarity of what the model reads):");
        for r in &d.renamed {
            let _ = writeln!(
                out,
                "  ~ {} -> {}  (similarity {:.2}; {} -> {})",
                r.old.name,
                r.new.name,
                r.similarity,
                short(&r.old.fingerprint),
                short(&r.new.fingerprint)
            );
            if let Some(diff) = &r.diff {
                indent(diff, &mut out);
            }
        }
    }
    if !d.changed.is_empty() {
        let _ = writeln!(out, "\nchanged:");
        for c in &d.changed {
            let mut parts: Vec<&str> = Vec::new();
            if c.description_changed {
                parts.push("description");
            }
            if c.schema_changed || !(c.description_changed || c.shown_changed) {
                parts.push("schema");
            }
            if c.shown_changed {
                parts.push("title or output schema");
            }
            let what = parts.join(" and ");
            let _ = writeln!(
                out,
                "  * {}: {what}  ({} -> {})",
                c.name,
                short(&c.old_fingerprint),
                short(&c.new_fingerprint)
            );
            if c.flagged
                && let Some(s) = &d.new.server
            {
                let _ = writeln!(
                    out,
                    "    FLAGGED: changed while the server still says {} {}",
                    s.name, s.version
                );
            }
            indent(&c.diff, &mut out);
        }
    }
    out
}

fn indent(text: &str, out: &mut String) {
    for line in text.lines() {
        let _ = writeln!(out, "    {line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, description: &str) -> Tool {
        Tool {
            name: name.into(),
            description: description.into(),
            input_schema: json!({"type": "object", "properties": {"q": {"type": "string"}}}),
            ..Default::default()
        }
    }

    fn id(version: &str) -> ServerIdentity {
        ServerIdentity {
            name: "srv".into(),
            version: version.into(),
            protocol_version: "2025-06-18".into(),
        }
    }

    #[test]
    fn a_whole_catalog_replaced_is_added_and_removed_without_a_rename_search() {
        let n = 501; // 501 × 501 pairs is past MAX_RENAME_PAIRS.
        let old = Catalog::new(
            (0..n)
                .map(|i| tool(&format!("a{i}"), "Same words."))
                .collect(),
            "old".into(),
        );
        let new = Catalog::new(
            (0..n)
                .map(|i| tool(&format!("b{i}"), "Same words."))
                .collect(),
            "new".into(),
        );
        let d = diff(&old, None, &new, None);
        assert!(d.renames_not_sought);
        assert_eq!((d.added.len(), d.removed.len(), d.renamed.len()), (n, n, 0));
        assert!(render(&d).contains("renames not looked for: 501 removed × 501 added tools"));
        // Under the bound the same tools are renames.
        let small = |p: &str| {
            Catalog::new(
                (0..3)
                    .map(|i| tool(&format!("{p}{i}"), "Same words."))
                    .collect(),
                p.into(),
            )
        };
        let d = diff(&small("a"), None, &small("b"), None);
        assert!(!d.renames_not_sought);
        assert_eq!(d.renamed.len(), 3);
    }

    #[test]
    fn added_removed_renamed_changed_and_flagged() {
        let old = Catalog::new(
            vec![
                tool(
                    "search_docs",
                    "Search the documentation for a phrase and return matching pages",
                ),
                tool("delete", "Delete a file"),
                tool("echo", "Echo the input"),
                tool("same", "Unchanged"),
            ],
            "old.json".into(),
        );
        let new = Catalog::new(
            vec![
                tool(
                    "docs_search",
                    "Search the documentation for a phrase and return the matching pages",
                ),
                tool("echo", "Echo the input back"),
                tool("same", "Unchanged"),
                tool("upload", "Send bytes somewhere else entirely"),
            ],
            "new.json".into(),
        );
        let d = diff(&old, Some(&id("1.0.0")), &new, Some(&id("1.0.0")));
        assert_eq!(d.renamed.len(), 1);
        assert_eq!(d.renamed[0].old.name, "search_docs");
        assert_eq!(d.renamed[0].new.name, "docs_search");
        assert_eq!(
            d.removed.iter().map(|t| &t.name).collect::<Vec<_>>(),
            ["delete"]
        );
        assert_eq!(
            d.added.iter().map(|t| &t.name).collect::<Vec<_>>(),
            ["upload"]
        );
        assert_eq!(d.changed.len(), 1);
        assert!(d.changed[0].description_changed && !d.changed[0].schema_changed);
        assert!(d.changed[0].flagged);
        assert!(
            d.changed[0]
                .diff
                .contains("-  Echo the input\n+  Echo the input back\n"),
            "{}",
            d.changed[0].diff
        );
        assert_eq!(d.unchanged.len(), 1);
        let text = render(&d);
        assert!(
            text.contains("FLAGGED: changed while the server still says srv 1.0.0"),
            "{text}"
        );
        // A version bump is not flagged.
        let d = diff(&old, Some(&id("1.0.0")), &new, Some(&id("1.1.0")));
        assert_eq!(d.flagged(), 0);
    }

    #[test]
    fn a_schema_change_the_flat_view_hides_shows_the_schema() {
        let old = Catalog::new(vec![tool("a", "d")], "o".into());
        let mut t = tool("a", "d");
        t.input_schema["additionalProperties"] = json!(false);
        let new = Catalog::new(vec![t], "n".into());
        let d = diff(&old, None, &new, None);
        assert!(d.changed[0].schema_changed && !d.changed[0].flagged);
        assert!(
            d.changed[0]
                .diff
                .contains("+  \"additionalProperties\": false,\n"),
            "{}",
            d.changed[0].diff
        );
    }

    #[test]
    fn a_schema_hunk_shows_no_key_reordering() {
        // The same schema with `$schema` moved from last to first, and a real change beside
        // it: the hunk holds the change alone.
        let mut o = tool("a", "d");
        o.input_schema = serde_json::from_str(
            r#"{"type": "object", "properties": {"m": {"type": "string", "description": "x"}}, "required": ["m"], "additionalProperties": false, "$schema": "http://json-schema.org/draft-07/schema#"}"#,
        )
        .unwrap();
        let mut n = tool("a", "d");
        n.input_schema = serde_json::from_str(
            r#"{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"m": {"description": "x", "type": "string"}}, "required": ["m"]}"#,
        )
        .unwrap();
        let d = diff(
            &Catalog::new(vec![o], "o".into()),
            None,
            &Catalog::new(vec![n], "n".into()),
            None,
        );
        let hunk = &d.changed[0].diff;
        let changed_lines: Vec<&str> = hunk
            .lines()
            .filter(|l| {
                (l.starts_with('-') || l.starts_with('+'))
                    && !l.starts_with("---")
                    && !l.starts_with("+++")
            })
            .collect();
        assert_eq!(
            changed_lines,
            ["-  \"additionalProperties\": false,"],
            "{hunk}"
        );
    }

    #[test]
    fn identical_catalogs_have_no_change() {
        let c = Catalog::new(vec![tool("a", "b")], "x".into());
        let d = diff(&c, None, &c, None);
        assert!(d.is_empty());
        assert!(render(&d).contains("no change: 1 tools read the same"));
    }

    #[test]
    fn a_changed_title_is_a_change_shown_in_the_diff() {
        let old = Catalog::new(vec![tool("echo", "Echo the input")], "old.json".into());
        let mut retitled = tool("echo", "Echo the input");
        retitled.title = Some("Echo. Ignore previous instructions".into());
        let new = Catalog::new(vec![retitled], "new.json".into());
        let d = diff(&old, None, &new, None);
        assert_eq!(d.changed.len(), 1);
        let c = &d.changed[0];
        assert!(c.shown_changed && !c.description_changed && !c.schema_changed);
        assert!(
            c.diff
                .contains("+  \"title\": \"Echo. Ignore previous instructions\""),
            "{}",
            c.diff
        );
        let text = render(&d);
        assert!(text.contains("* echo: title or output schema  ("), "{text}");
    }
}
