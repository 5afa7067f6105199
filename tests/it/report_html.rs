//! `--format html`: report.html of the fixed run in `tests/data/report-run` read back as a
//! document (its structure checked against the summary, its text snapshotted with timestamps
//! redacted), and of a two-arm run with a history, which must show the paired differences and
//! the trend. No page may name anything to fetch: no `src`, `url()` or `@import`, and no
//! `href` but a `#id` link to an element of the page itself (the case explorer).
//! The page is well-formed XML by design, so an XML parser reads it.

use crate::support;

use std::path::{Path, PathBuf};

use support::toolscore;

const RUN: &str = "tests/data/report-run";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A copy of the fixed run in a temp dir: `report --format html` writes into the run folder.
fn copy_run() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("run");
    std::fs::create_dir_all(&dir).expect("mkdir");
    for name in ["summary.json", "results.jsonl"] {
        std::fs::copy(root().join(RUN).join(name), dir.join(name)).expect("copy");
    }
    (tmp, dir)
}

fn parse(html: &str) -> roxmltree::Document<'_> {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    roxmltree::Document::parse_with_options(html, options)
        .unwrap_or_else(|e| panic!("report.html is not well-formed: {e}"))
}

/// Asserts the page asks for nothing outside itself and can run nothing: no attribute that
/// loads or links elsewhere (`src`, `href` but `#id` of one of its own elements, …), no
/// `url()` or `@import` in any style, no element that embeds or scripts, and no
/// event-handler attribute.
fn assert_self_contained(html: &str) {
    let lower = html.to_lowercase();
    for needle in [
        "url(", "@import", "<script", "<iframe", "<object", "<embed", "<link", "<img",
    ] {
        assert!(!lower.contains(needle), "report.html contains {needle}");
    }
    let doc = parse(html);
    // The one link out: the previous run's page beside this run's folder, its id
    // percent-encoded into one plain segment.
    let sibling = regex::Regex::new(r"^\.\./[A-Za-z0-9_%-]+/report\.html$").expect("a fixed regex");
    let ids: std::collections::BTreeSet<&str> = doc
        .descendants()
        .filter_map(|n| n.attribute("id"))
        .collect();
    for node in doc.descendants().filter(|n| n.is_element()) {
        for attr in node.attributes() {
            let name = attr.name().to_lowercase();
            if name == "href" {
                if sibling.is_match(attr.value()) {
                    continue;
                }
                let target = attr.value().strip_prefix('#');
                assert!(
                    target.is_some_and(|id| ids.contains(id)),
                    "<{} href=\"{}\">: not a link to an element of the page",
                    node.tag_name().name(),
                    attr.value()
                );
                continue;
            }
            assert!(
                ![
                    "src",
                    "href",
                    "srcset",
                    "action",
                    "formaction",
                    "poster",
                    "background",
                    "data",
                    "style"
                ]
                .contains(&name.as_str()),
                "<{} {}=\"{}\"> in report.html",
                node.tag_name().name(),
                attr.name(),
                attr.value()
            );
            assert!(
                !name.starts_with("on"),
                "event handler {name} in report.html"
            );
        }
        let tag = node.tag_name().name();
        assert!(
            ![
                "script",
                "iframe",
                "object",
                "embed",
                "link",
                "img",
                "foreignObject"
            ]
            .contains(&tag),
            "<{tag}> in report.html"
        );
    }
}

/// The chart `<svg>` of the figure with this id.
fn chart<'a>(doc: &'a roxmltree::Document<'a>, id: &str) -> roxmltree::Node<'a, 'a> {
    doc.descendants()
        .find(|n| n.has_tag_name("figure") && n.attribute("id") == Some(id))
        .and_then(|f| f.children().find(|n| n.has_tag_name("svg")))
        .unwrap_or_else(|| panic!("no chart {id}"))
}

fn class_has(n: &roxmltree::Node<'_, '_>, class: &str) -> bool {
    n.attribute("class")
        .is_some_and(|c| c.split_whitespace().any(|c| c == class))
}

/// The page's readable text in document order, one line per block, for a snapshot: what a
/// reader sees, without the geometry.
fn outline(doc: &roxmltree::Document<'_>) -> String {
    let blocks = [
        "h1",
        "h2",
        "h3",
        "p",
        "div",
        "li",
        "caption",
        "tr",
        "figcaption",
        "text",
        "title",
    ];
    let mut out = String::new();
    for node in doc.descendants().filter(|n| n.is_element()) {
        let tag = node.tag_name().name();
        if !blocks.contains(&tag) {
            continue;
        }
        // A block's text once: skip blocks inside another listed block.
        if node
            .ancestors()
            .skip(1)
            .any(|a| a.is_element() && blocks.contains(&a.tag_name().name()))
        {
            continue;
        }
        let text: Vec<&str> = node
            .descendants()
            .filter(|n| n.is_text())
            .filter_map(|n| n.text())
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .collect();
        if !text.is_empty() {
            out.push_str(&format!("{tag}: {}\n", text.join(" | ")));
        }
    }
    out
}

#[test]
fn html_of_a_fixed_run() {
    let (tmp, dir) = copy_run();
    let run = toolscore(tmp.path(), &["report", "run", "--format", "html"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    // The page is the report; stdout has only the verdict (no gate: the suite's rates).
    assert!(
        run.stdout
            .starts_with("verdict: PASS (exit 0)\n  infrastructure: 0 of 78 trials ended in infrastructure errors (limit 10%)\n\nsuite: 13 cases, 78 trials scored"),
        "{}",
        run.transcript()
    );
    assert_eq!(
        run.stderr,
        "wrote run/report.html\n",
        "{}",
        run.transcript()
    );
    let html = read(&dir.join("report.html"));
    assert_self_contained(&html);
    let doc = parse(&html);
    // The figures the page must show: the summary `report` re-aggregates from the records.
    let json = toolscore(tmp.path(), &["report", "run", "--format", "json"]);
    assert_eq!(json.code, 0, "{}", json.transcript());
    let summary: serde_json::Value = serde_json::from_str(&json.stdout).expect("summary");
    let arm = &summary["arms"][0];

    // One forest row per case, each with its interval, and the suite's diamond.
    let forest = chart(&doc, "forest-0");
    let rows: Vec<_> = forest
        .children()
        .filter(|n| n.has_tag_name("g") && class_has(n, "row"))
        .collect();
    assert_eq!(rows.len(), arm["cases"].as_array().expect("cases").len());
    for row in &rows {
        assert!(
            row.descendants()
                .any(|n| n.has_tag_name("line") && class_has(&n, "whisker")),
            "a case without its interval"
        );
        // Each row opens its case's explorer: a section whose heading names the case.
        let label = row
            .descendants()
            .find(|n| n.has_tag_name("text") && class_has(n, "label"))
            .and_then(|n| n.text())
            .expect("a label");
        let href = row
            .descendants()
            .find(|n| n.has_tag_name("a"))
            .and_then(|a| a.attribute("href"))
            .unwrap_or_else(|| panic!("row {label} links nowhere"));
        let section = doc
            .descendants()
            .find(|n| n.attribute("id") == href.strip_prefix('#'))
            .expect("the linked section");
        assert!(class_has(&section, "explorer"), "{href}");
        let heading = section
            .children()
            .find(|n| n.has_tag_name("h3"))
            .and_then(|n| n.text())
            .expect("a heading");
        assert!(
            heading.starts_with(label.trim_end_matches('…')),
            "{heading} vs {label}"
        );
    }
    assert!(forest.children().any(|n| class_has(&n, "diamond")));

    // One bar row per expected tool, two bars each.
    let tools = chart(&doc, "tools-0");
    let bar_rows = tools
        .children()
        .filter(|n| n.has_tag_name("g") && class_has(n, "row"))
        .count();
    assert_eq!(bar_rows, arm["tools"].as_array().expect("tools").len());

    // The heatmap shows every scored trial once: its cells add up to the confusion counts.
    let heat = chart(&doc, "confusion-0");
    let shown: u64 = heat
        .descendants()
        .filter(|n| n.has_tag_name("text") && class_has(n, "count"))
        .map(|n| n.text().expect("count").parse::<u64>().expect("a number"))
        .sum();
    let counted: u64 = arm["confusion"]
        .as_array()
        .expect("confusion")
        .iter()
        .map(|c| c["count"].as_u64().expect("count"))
        .sum();
    assert_eq!(shown, counted);
    assert_eq!(counted, arm["suite"]["scored_trials"].as_u64().expect("n"));

    // p50, p95 and p99 for the arm and each expected tool, with the summary's figures.
    let latency = chart(&doc, "latency-0");
    let marks: Vec<String> = latency
        .descendants()
        .filter(|n| n.has_tag_name("g") && class_has(n, "mark"))
        .filter_map(|n| n.children().find(|c| c.has_tag_name("title")))
        .filter_map(|t| t.text().map(str::to_owned))
        .collect();
    let p95 = arm["latency_ms"]["p95"]["value"].as_f64().expect("p95");
    assert!(
        marks[1].starts_with(&format!("p95 {p95:.1} [")),
        "{marks:?}"
    );
    assert_eq!(
        marks.len(),
        3 * (1 + arm["tool_latency"].as_array().expect("tools").len())
    );

    // No gate, no comparison, no history beside this run: said, not drawn.
    let text = outline(&doc);
    assert!(text.contains("does not judge a bar"), "{text}");
    assert!(text.contains("No trend:"), "{text}");
    insta::assert_snapshot!("report_html_outline", support::filter(&text, tmp.path()));
}

#[test]
fn html_with_a_case_gate_colours_each_case_by_its_verdict_against_the_threshold() {
    let (tmp, dir) = copy_run();
    let run = toolscore(
        tmp.path(),
        &[
            "report",
            "run",
            "--format",
            "html",
            "--format",
            "json",
            "--gate",
            "pass>=0.9",
            "--gate-level",
            "case",
        ],
    );
    assert_eq!(run.code, 1, "{}", run.transcript());
    let summary: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    let gate = &summary["gate"]["gates"][0];
    let html = read(&dir.join("report.html"));
    assert_self_contained(&html);
    let doc = parse(&html);
    let badge = doc
        .descendants()
        .find(|n| class_has(n, "badge"))
        .expect("badge");
    assert_eq!(badge.text(), Some("FAIL (exit 1)"));
    // The forest plot is of the gate's metric, with its threshold drawn.
    let forest = chart(&doc, "forest-0");
    let threshold = forest
        .children()
        .find(|n| class_has(n, "threshold"))
        .expect("threshold line");
    assert!(
        threshold
            .descendants()
            .any(|n| n.text() == Some("gate pass>=0.9")),
        "threshold label"
    );
    let count = |class: &str| {
        forest
            .children()
            .filter(|n| n.has_tag_name("g") && class_has(n, "row") && class_has(n, class))
            .count() as u64
    };
    assert_eq!(
        count("fail"),
        gate["failed_cases"].as_u64().expect("failed")
    );
    assert_eq!(
        count("inconclusive"),
        gate["inconclusive_cases"].as_u64().expect("inconclusive")
    );
    assert_eq!(
        count("pass"),
        gate["passed_cases"].as_u64().expect("passed")
    );
    // Each case of the gate's table (in the verdict section) opens its explorer.
    let verdict = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("verdict"))
        .expect("the verdict section");
    let linked: Vec<(&str, &str)> = verdict
        .descendants()
        .filter(|n| n.has_tag_name("td"))
        .filter_map(|td| td.children().find(|n| n.has_tag_name("a")))
        .map(|a| (a.attribute("href").expect("href"), a.text().expect("case")))
        .collect();
    let not_passed = gate["not_passed"].as_array().expect("not passed");
    assert_eq!(linked.len(), not_passed.len().min(12), "{linked:?}");
    for (href, case) in linked {
        let section = doc
            .descendants()
            .find(|n| n.attribute("id") == href.strip_prefix('#'))
            .expect("the linked section");
        let heading = section
            .children()
            .find(|n| n.has_tag_name("h3"))
            .and_then(|n| n.text())
            .expect("a heading");
        assert!(heading.starts_with(case), "{heading} vs {case}");
    }
}

#[test]
fn a_two_arm_run_with_history_shows_paired_differences_and_the_trend() {
    let out = tempfile::tempdir().expect("tempdir");
    let out_dir = out.path().display().to_string();
    // The shipped recordings, replayed offline; run twice so the history holds a series.
    for id in ["first", "second"] {
        let run = toolscore(
            root(),
            &[
                "run",
                "--provider",
                "demo",
                "--provider",
                "demo-terse",
                "--trials",
                "2",
                "--out",
                &out_dir,
                "--run-id",
                id,
                "--progress",
                "off",
                "--format",
                "html",
            ],
        );
        assert_eq!(run.code, 0, "{}", run.transcript());
        // Named in the "wrote" line under the terminal report, which --format html keeps.
        assert!(
            run.stdout.contains(&format!("/{id}/report.html")),
            "{}",
            run.transcript()
        );
    }
    let html = read(&out.path().join("second").join("report.html"));
    assert_self_contained(&html);
    let doc = parse(&html);

    // One row per visible case (the billing dataset tags 10 of its 61 cases holdout) and a
    // diamond for each group's mean difference.
    let diffs = chart(&doc, "differences");
    let rows = diffs
        .children()
        .filter(|n| n.has_tag_name("g") && class_has(n, "row"))
        .count();
    assert_eq!(rows, 51);
    assert_eq!(
        diffs.children().filter(|n| class_has(n, "diamond")).count(),
        2
    );
    // The same comparison `toolscore compare` computes, read back from its JSON.
    let json = out.path().join("cmp.json");
    let cmp = toolscore(
        root(),
        &[
            "compare",
            &out.path().join("second").display().to_string(),
            "--json",
            &json.display().to_string(),
        ],
    );
    assert!(cmp.code == 0 || cmp.code == 3, "{}", cmp.transcript());
    let comparison: serde_json::Value = serde_json::from_str(&read(&json)).expect("json");
    let d = &comparison["visible"]["difference"];
    let expected = format!(
        "{:+.3} [{:+.3}, {:+.3}]",
        d["mean"].as_f64().expect("mean"),
        d["lo"].as_f64().expect("lo"),
        d["hi"].as_f64().expect("hi")
    );
    assert!(
        diffs
            .descendants()
            .any(|n| n.text() == Some(expected.as_str())),
        "{expected} not in the differences chart"
    );
    assert_eq!(
        comparison["case_differences"]
            .as_array()
            .expect("case differences")
            .len(),
        51
    );

    // A trend per arm, two runs each, this run ringed.
    for (i, arm) in ["trend-0", "trend-1"].into_iter().enumerate() {
        let trend = chart(&doc, arm);
        let runs: Vec<_> = trend
            .children()
            .filter(|n| n.has_tag_name("circle") && class_has(n, "run"))
            .collect();
        assert_eq!(runs.len(), 2, "trend {i}");
        assert!(class_has(&runs[1], "current"), "trend {i}");
        assert!(
            trend
                .children()
                .any(|n| n.has_tag_name("polygon") && class_has(&n, "band")),
            "trend {i} has no interval band"
        );
    }
    // Under the verdict, each arm's move against the run before, linked to its trend and to
    // that run's page beside this one.
    let lines: Vec<roxmltree::Node<'_, '_>> = doc
        .descendants()
        .filter(|n| n.has_tag_name("p") && class_has(n, "trendline"))
        .collect();
    assert_eq!(lines.len(), 2, "one line per arm");
    for (i, line) in lines.iter().enumerate() {
        let text: String = line.descendants().filter_map(|n| n.text()).collect();
        assert!(
            text.starts_with("Trend of selection · ")
                && text.contains(" on 61 cases against first"),
            "{text}"
        );
        let hrefs: Vec<&str> = line
            .descendants()
            .filter_map(|n| n.attribute("href"))
            .collect();
        assert_eq!(
            hrefs,
            [format!("#trend-{i}").as_str(), "../first/report.html"]
        );
    }
}

#[test]
fn an_unreadable_history_is_named_and_the_report_is_still_written() {
    let (tmp, dir) = copy_run();
    std::fs::write(
        tmp.path().join("history.jsonl"),
        "{\"not\": \"a history line\"}\n",
    )
    .expect("write");
    let run = toolscore(tmp.path(), &["report", "run", "--format", "html"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stderr
            .contains("warning: report.html shows no trend: history.jsonl:1"),
        "{}",
        run.transcript()
    );
    let text = outline(&parse(&read(&dir.join("report.html"))));
    assert!(text.contains("No trend: history.jsonl:1"), "{text}");
}
