//! The documentation holds together: every relative link and `#anchor` in `README.md` and
//! `docs/**/*.md` reaches an existing file and heading (anchors as GitHub spells them),
//! `docs/SUMMARY.md` lists every page and nothing else, and `README.md` stays a front door: at
//! most 300 lines, with each of the three jobs under its heading, with a command and a link to
//! its guide. The page list and the fenced-block reader are shared with `readme_examples`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `README.md` and every Markdown page under `docs/`, as paths relative to the repository,
/// README first, then the pages in path order.
pub(crate) fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read docs/") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(&root().join("docs"), &mut found);
    let mut pages: Vec<PathBuf> = found
        .iter()
        .map(|p| {
            p.strip_prefix(root())
                .expect("under the repository")
                .to_owned()
        })
        .collect();
    pages.sort();
    pages.insert(0, PathBuf::from("README.md"));
    pages
}

pub(crate) fn read(page: &Path) -> String {
    std::fs::read_to_string(root().join(page)).unwrap_or_else(|e| panic!("{}: {e}", page.display()))
}

/// One fenced code block: the first word of its info string (`sh`, `json`, `yaml`, …), the
/// second if any (a file name: ```` ```yaml dataset.yaml ````), and its text, with the fence's
/// own indentation removed (blocks inside list items are indented).
#[derive(Debug)]
pub(crate) struct Block {
    pub lang: String,
    pub name: Option<String>,
    pub text: String,
    /// 1-based line of the opening fence, for messages.
    pub line: usize,
}

/// The fenced blocks of a page, in order; and the page with every block's lines blanked, for
/// readers of the prose.
pub(crate) fn split_blocks(text: &str) -> (Vec<Block>, String) {
    let mut blocks = Vec::new();
    let mut prose = String::new();
    let mut open: Option<(usize, Block)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match &mut open {
            None if trimmed.starts_with("```") => {
                let indent = line.len() - trimmed.len();
                let mut info = trimmed.trim_start_matches('`').split_whitespace();
                let lang = info.next().unwrap_or("").to_owned();
                let name = info.next().map(str::to_owned);
                let block = Block {
                    lang,
                    name,
                    text: String::new(),
                    line: i + 1,
                };
                open = Some((indent, block));
                prose.push('\n');
            }
            None => {
                prose.push_str(line);
                prose.push('\n');
            }
            Some((_, _)) if trimmed.starts_with("```") && trimmed.trim_matches('`').is_empty() => {
                let (_, block) = open.take().expect("an open block");
                blocks.push(block);
                prose.push('\n');
            }
            Some((indent, block)) => {
                let strip = line.len() - line.trim_start().len();
                block.text.push_str(&line[strip.min(*indent)..]);
                block.text.push('\n');
                prose.push('\n');
            }
        }
    }
    assert!(open.is_none(), "a fenced block is never closed");
    (blocks, prose)
}

/// GitHub's anchor for a heading: the text as rendered (code marks and link targets gone),
/// lower-cased, every character but letters, digits, `_`, `-` and spaces dropped, spaces
/// turned into `-`.
fn slug(heading: &str) -> String {
    let text = strip_code_spans(heading, true);
    let text = regex::Regex::new(r"\[([^\]]*)\]\([^)]*\)")
        .expect("regex")
        .replace_all(&text, "$1")
        .into_owned();
    text.to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors a page's headings get, with GitHub's `-1`, `-2` suffixes for repeats.
fn anchors(text: &str) -> BTreeSet<String> {
    let (_, prose) = split_blocks(text);
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for line in prose.lines() {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(line[hashes..].trim());
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// Inline code spans (a run of backticks up to the next run of the same length) removed, or,
/// with `keep_text`, replaced by their text. An unmatched run stays as it is.
fn strip_code_spans(text: &str, keep_text: bool) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let run = rest[start..].chars().take_while(|c| *c == '`').count();
        let after = &rest[start + run..];
        let fence = "`".repeat(run);
        // The closing run has exactly `run` backticks.
        let mut search = 0;
        let close = loop {
            match after[search..].find(&fence) {
                None => break None,
                Some(at) => {
                    let at = search + at;
                    let len = after[at..].chars().take_while(|c| *c == '`').count();
                    if len == run {
                        break Some(at);
                    }
                    search = at + len;
                }
            }
        };
        match close {
            Some(at) => {
                if keep_text {
                    out.push_str(after[..at].trim());
                } else {
                    // Keep the line breaks, so that positions after the span keep their line.
                    out.extend(after[..at].matches('\n').map(|_| '\n'));
                }
                rest = &after[at + run..];
            }
            None => {
                out.push_str(&rest[start..start + run]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The link targets of a page's prose (`[text](target)` and `![alt](target)`), outside code
/// blocks and code spans, with the line each is on.
fn links(text: &str) -> Vec<(usize, String)> {
    let (_, prose) = split_blocks(text);
    let mut out = Vec::new();
    let mut line_no = 1;
    // Code spans may run over a line break but never over a blank line: read paragraph by
    // paragraph.
    for paragraph in prose.split("\n\n") {
        let plain = strip_code_spans(paragraph, false);
        let mut from = 0;
        while let Some(at) = plain[from..].find("](") {
            let start = from + at + 2;
            let end = plain[start..].find(')').map_or(plain.len(), |e| start + e);
            let target = plain[start..end].split_whitespace().next().unwrap_or("");
            out.push((
                line_no + plain[..start].matches('\n').count(),
                target.to_owned(),
            ));
            from = end;
        }
        line_no += paragraph.matches('\n').count() + 2;
    }
    out
}

fn is_external(target: &str) -> bool {
    ["http://", "https://", "mailto:"]
        .iter()
        .any(|scheme| target.starts_with(scheme))
}

/// Every broken relative link and anchor of the pages, as `page:line: target: why`.
fn broken_links(pages: &[PathBuf]) -> Vec<String> {
    let mut anchors_of: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    let mut broken = Vec::new();
    for page in pages {
        let text = read(page);
        for (line, target) in links(&text) {
            if target.is_empty() || is_external(&target) {
                continue;
            }
            let (path, fragment) = match target.split_once('#') {
                Some((path, fragment)) => (path, Some(fragment)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                page.clone()
            } else {
                normalize(&page.parent().unwrap_or(Path::new("")).join(path))
            };
            let at = format!("{}:{line}: {target}", page.display());
            if file.starts_with("..") || !root().join(&file).exists() {
                broken.push(format!("{at}: no such file {}", file.display()));
                continue;
            }
            let Some(fragment) = fragment else { continue };
            if file.extension().is_none_or(|e| e != "md") {
                broken.push(format!("{at}: an anchor into a file that is not Markdown"));
                continue;
            }
            let known = anchors_of
                .entry(file.clone())
                .or_insert_with(|| anchors(&read(&file)));
            if !known.contains(fragment) {
                broken.push(format!(
                    "{at}: {} has no heading with the anchor #{fragment}",
                    file.display()
                ));
            }
        }
    }
    broken
}

/// `a/b/../c` as `a/c`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir if out.file_name().is_some() => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let pages = pages();
    assert!(pages.len() > 20, "README.md and the docs: {pages:?}");
    let broken = broken_links(&pages);
    assert!(
        broken.is_empty(),
        "{} broken link(s):\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn summary_lists_every_page_and_only_pages_that_exist() {
    let summary = read(Path::new("docs/SUMMARY.md"));
    let listed: BTreeSet<PathBuf> = links(&summary)
        .into_iter()
        .map(|(_, target)| PathBuf::from("docs").join(target))
        .collect();
    for page in &listed {
        assert!(
            root().join(page).is_file(),
            "docs/SUMMARY.md lists {}, which does not exist",
            page.display()
        );
    }
    let unlisted: Vec<_> = pages()
        .into_iter()
        .filter(|p| p.starts_with("docs") && p != Path::new("docs/SUMMARY.md"))
        .filter(|p| !listed.contains(p))
        .collect();
    assert!(
        unlisted.is_empty(),
        "pages missing from docs/SUMMARY.md: {unlisted:?}"
    );
}

/// The three jobs toolscore is for: the README's heading for each and its guide.
const JOBS: [(&str, &str); 3] = [
    (
        "### Score a tool catalog every week",
        "docs/guides/weekly-score.md",
    ),
    (
        "### Gate a pull request",
        "docs/guides/gate-pull-request.md",
    ),
    (
        "### Compare two descriptions",
        "docs/guides/compare-descriptions.md",
    ),
];

/// Every `cargo install` the pages show builds with the versions Cargo.lock pins (`--locked`):
/// without it Cargo resolves the newest compatible crates, which the tests never ran with.
#[test]
fn every_cargo_install_is_locked() {
    let mut unlocked = Vec::new();
    for page in pages() {
        for (i, line) in read(&page).lines().enumerate() {
            if line.contains("cargo install") && !line.contains("--locked") {
                unlocked.push(format!("{}:{}: {line}", page.display(), i + 1));
            }
        }
    }
    assert!(unlocked.is_empty(), "{}", unlocked.join("\n"));
}

#[test]
fn readme_is_a_front_door() {
    let readme = read(Path::new("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines; keep it at most 300 and move the detail to docs/"
    );
    for command in [
        "cargo install --path . --locked",
        "cargo build --release && ./target/release/toolscore run",
        "cargo test --all-targets",
    ] {
        assert!(
            readme.contains(command),
            "README.md lost the set-up command `{command}`"
        );
    }
    for (heading, guide) in JOBS {
        let start = readme
            .lines()
            .position(|l| l == heading)
            .unwrap_or_else(|| panic!("README.md lost the job heading `{heading}`"));
        // The section runs to the next heading of any level.
        let section: Vec<&str> = readme
            .lines()
            .skip(start + 1)
            .take_while(|l| !l.starts_with('#'))
            .collect();
        let section = section.join("\n");
        assert!(
            section.contains(&format!("]({guide})")),
            "README.md's `{heading}` no longer links to its guide {guide}"
        );
        assert!(
            section.contains("```sh\ntoolscore "),
            "README.md's `{heading}` no longer shows its command"
        );
        assert!(
            root().join(guide).is_file(),
            "{guide} is the guide of `{heading}`"
        );
    }
}

#[test]
fn anchors_are_spelled_as_github_spells_them() {
    assert_eq!(
        slug("`toolscore catalog SOURCE`"),
        "toolscore-catalog-source"
    );
    assert_eq!(
        slug("`datasets/<name>/cases.jsonl`"),
        "datasetsnamecasesjsonl"
    );
    assert_eq!(
        slug("Report formats (`--format`)"),
        "report-formats---format"
    );
    assert_eq!(
        slug("A case's own bar and trials"),
        "a-cases-own-bar-and-trials"
    );
    assert_eq!(
        slug("While a run goes: progress, Ctrl-C and what is on disk"),
        "while-a-run-goes-progress-ctrl-c-and-what-is-on-disk"
    );
    let twice = anchors("# A\n\n## Notes\n\n```sh\n# not a heading\n```\n\n## Notes\n");
    assert_eq!(
        twice,
        BTreeSet::from(["a".to_owned(), "notes".to_owned(), "notes-1".to_owned()])
    );
}

#[test]
fn links_in_code_are_not_links() {
    let text = "See [a](a.md) and `[b](b.md)`.\n\n```sh\n[c](c.md)\n```\n\n![d](d.png)\n";
    let targets: Vec<String> = links(text).into_iter().map(|(_, t)| t).collect();
    assert_eq!(targets, ["a.md", "d.png"]);
}

/// Where a `module::path::Item` the architecture page names would be: the deepest module file
/// its leading segments reach, and the item names left after them. The first segment is a
/// layer crate (`report::…` is crates/report/src/lib.rs and below), a module of the core crate
/// (`record::…` is crates/core/src/record.rs) or the binary's `cli`.
fn resolve_code_path(path: &str) -> Option<(PathBuf, Vec<String>)> {
    let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let crate_root = root().join("crates").join(segments.first()?).join("src");
    let (src, first) = if crate_root.join("lib.rs").is_file() {
        (crate_root, 1)
    } else if segments[0] == "cli" {
        (root().join("src"), 0)
    } else {
        (root().join("crates/core/src"), 0)
    };
    let mut file = (first == 1).then(|| src.join("lib.rs"));
    let mut used = first;
    for i in first + 1..=segments.len() {
        let rel = segments[first..i].join("/");
        let candidates = [src.join(format!("{rel}.rs")), src.join(&rel).join("mod.rs")];
        match candidates.into_iter().find(|c| c.is_file()) {
            Some(found) => {
                file = Some(found);
                used = i;
            }
            None => break,
        }
    }
    Some((
        file?,
        segments[used..].iter().map(|s| (*s).to_owned()).collect(),
    ))
}

/// Whether `text` re-exports `item`: a `pub use` statement (to its `;`, across wrapped lines)
/// that names it as a whole word.
fn reexports(text: &str, item: &str) -> bool {
    let word = regex::Regex::new(&format!(r"\b{}\b", regex::escape(item))).expect("regex");
    text.match_indices("pub use ").any(|(at, _)| {
        let statement = &text[at..];
        let end = statement.find(';').unwrap_or(statement.len());
        word.is_match(&statement[..end])
    })
}

/// Every `module::Item` docs/contributing/architecture.md names exists: the module as a file
/// of the workspace, each item after it defined (or re-exported) in that module's file.
#[test]
fn every_path_the_architecture_page_names_exists() {
    let page = std::fs::read_to_string(root().join("docs/contributing/architecture.md")).unwrap();
    let mut checked = 0;
    let mut missing = Vec::new();
    for span in page.split('`').skip(1).step_by(2) {
        let looks_like_path = span.contains("::")
            && span
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
        if !looks_like_path || span == "crate::" {
            continue;
        }
        checked += 1;
        let Some((file, items)) = resolve_code_path(span) else {
            missing.push(format!("`{span}`: no module file in the workspace"));
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap();
        for item in &items {
            let defined = [
                "fn", "struct", "enum", "trait", "const", "static", "type", "mod",
            ]
            .iter()
            .any(|kind| text.contains(&format!("{kind} {item}")))
                || reexports(&text, item);
            if !defined {
                missing.push(format!("`{span}`: no `{item}` in {}", file.display()));
            }
        }
    }
    assert!(checked >= 20, "the page was read: {checked} paths");
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
