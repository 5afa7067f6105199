//! `--format md|junit`: the Markdown and JUnit reports of the fixed run in
//! `tests/data/report-run` (snapshots), the JUnit counts read back by an independent XML parser,
//! the Markdown size bound for a suite of 5,000 cases, and strings from fixtures and models
//! that try to break the table or inject HTML. The run folder is copied to a temp dir first:
//! `report --format md` writes into the run folder, and tests must not write into the repo.

use crate::support;

use std::path::{Path, PathBuf};

use support::toolscore;

const RUN: &str = "tests/data/report-run";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A copy of the fixed run, with `edit` applied to every record of results.jsonl.
fn copy_run(edit: &dyn Fn(&mut serde_json::Value)) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("run");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let src = root().join(RUN);
    std::fs::copy(src.join("summary.json"), dir.join("summary.json")).expect("copy");
    let records = std::fs::read_to_string(src.join("results.jsonl")).expect("records");
    let mut out = String::new();
    for line in records.lines() {
        let mut v: serde_json::Value = serde_json::from_str(line).expect("record");
        edit(&mut v);
        out.push_str(&v.to_string());
        out.push('\n');
    }
    std::fs::write(dir.join("results.jsonl"), out).expect("write");
    (tmp, dir)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn markdown_and_junit_of_a_fixed_run() {
    let (tmp, dir) = copy_run(&|_| {});
    let run = toolscore(
        tmp.path(),
        &["report", "run", "--format", "md", "--format", "junit"],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    // The files, one line each on stderr, and on stdout the verdict alone: with no gate, the
    // suite's rates (no terminal report was asked for).
    assert!(
        run.stdout
            .starts_with("verdict: PASS (exit 0)\n  infrastructure: 0 of 78 trials ended in infrastructure errors (limit 10%)\n\nsuite: 13 cases, 78 trials scored")
            && run.stdout.lines().count() == 2 + 7,
        "{}",
        run.transcript()
    );
    assert_eq!(
        run.stderr,
        "wrote run/report.md\nwrote run/junit.xml\n",
        "{}",
        run.transcript()
    );
    insta::assert_snapshot!("report_md", read(&dir.join("report.md")));
    insta::assert_snapshot!("junit_xml", read(&dir.join("junit.xml")));
}

#[test]
fn markdown_with_a_gate_leads_with_the_verdict() {
    let (tmp, dir) = copy_run(&|_| {});
    let run = toolscore(
        tmp.path(),
        &[
            "report",
            "run",
            "--format",
            "md",
            "--format",
            "junit",
            "--gate",
            "pass>=0.9",
            "--gate-level",
            "case",
        ],
    );
    assert_eq!(run.code, 1, "{}", run.transcript());
    // `--format md` alone still says the run's verdict and how the gate ended, on stdout, and
    // nothing else.
    assert!(
        run.stdout.starts_with("verdict: FAIL (exit 1)\n")
            && run
                .stdout
                .contains("\ngate (95% one-sided, fixed n): FAIL\n")
            && !run.stdout.contains("suite:"),
        "{}",
        run.transcript()
    );
    let md = read(&dir.join("report.md"));
    let verdict = md
        .find("## Verdict: FAIL (exit 1)")
        .expect("verdict section");
    let gate = md.find("## Gate: FAIL").expect("gate section");
    assert!(verdict < gate, "{md}");
    let arm = md.find("## Arm").expect("arm section");
    assert!(gate < arm, "{md}");
    insta::assert_snapshot!("report_md_case_gate", md);
    // Failed cases carry their failure details; the inconclusive one says what would settle it.
    insta::assert_snapshot!("junit_xml_case_gate", read(&dir.join("junit.xml")));
}

struct Counts {
    tests: usize,
    failures: usize,
    skipped: usize,
}

/// Counts testcases, failures and skips in the XML, checking each testsuite's attributes
/// agree with its elements.
fn junit_counts(xml: &str) -> Counts {
    let doc = roxmltree::Document::parse(xml).expect("junit.xml parses");
    let mut total = Counts {
        tests: 0,
        failures: 0,
        skipped: 0,
    };
    for suite in doc.descendants().filter(|n| n.has_tag_name("testsuite")) {
        let cases: Vec<_> = suite
            .children()
            .filter(|n| n.has_tag_name("testcase"))
            .collect();
        let count = |tag: &str| {
            cases
                .iter()
                .filter(|c| c.children().any(|n| n.has_tag_name(tag)))
                .count()
        };
        let attr = |name: &str| -> usize {
            suite
                .attribute(name)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("testsuite attribute {name}"))
        };
        assert_eq!(attr("tests"), cases.len());
        assert_eq!(attr("failures"), count("failure"));
        assert_eq!(attr("skipped"), count("skipped"));
        total.tests += cases.len();
        total.failures += count("failure");
        total.skipped += count("skipped");
    }
    total
}

#[test]
fn junit_counts_follow_the_gate_verdicts() {
    let (tmp, dir) = copy_run(&|_| {});
    // Without a gate every case passes: JUnit has no "measured". The run's verdict is one
    // testcase more, first, failed when the run fails.
    let run = toolscore(tmp.path(), &["report", "run", "--format", "junit"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let c = junit_counts(&read(&dir.join("junit.xml")));
    assert_eq!((c.tests, c.failures, c.skipped), (1 + 13, 0, 0));

    // A case-level gate decides each case; a suite-level gate adds one testcase.
    let run = toolscore(
        tmp.path(),
        &[
            "report",
            "run",
            "--format",
            "junit",
            "--format",
            "json",
            "--gate",
            "pass>=0.9",
            "--gate-level",
            "case",
        ],
    );
    assert_eq!(run.code, 1, "{}", run.transcript());
    let summary: serde_json::Value = serde_json::from_str(&run.stdout).expect("summary json");
    let gate = &summary["gate"]["gates"][0];
    let failed = gate["failed_cases"].as_u64().expect("failed") as usize;
    let inconclusive = gate["inconclusive_cases"].as_u64().expect("inconclusive") as usize;
    assert!(failed > 0, "{gate}");
    let xml = read(&dir.join("junit.xml"));
    let c = junit_counts(&xml);
    assert_eq!(
        (c.tests, c.failures, c.skipped),
        (1 + 13, 1 + failed, inconclusive)
    );
    assert!(xml.contains("pass rate 0/6 ["), "{xml}");

    let run = toolscore(
        tmp.path(),
        &[
            "report",
            "run",
            "--format",
            "junit",
            "--gate",
            "selection>=0.9",
        ],
    );
    assert_eq!(run.code, 1, "{}", run.transcript());
    let xml = read(&dir.join("junit.xml"));
    let c = junit_counts(&xml);
    assert_eq!((c.tests, c.failures, c.skipped), (1 + 14, 1 + 1, 0));
    assert!(
        xml.contains("name=\"gate selection&gt;=0.9 (suite)\""),
        "{xml}"
    );
}

const HOSTILE_ID: &str = "<script>alert(1)</script>|`x`\n| a | b |";
const HOSTILE_TOOL: &str = "get_<b>quote</b>|`y`";

#[test]
fn strings_from_fixtures_and_models_cannot_break_the_markdown_or_the_xml() {
    let (tmp, dir) = copy_run(&|v| {
        if v["case_id"] == "search-products-dock" {
            v["case_id"] = HOSTILE_ID.into();
            v["expected"] = HOSTILE_TOOL.into();
            v["score"]["detail"] = "expected <i>x</i> | got `rm -rf`".into();
            // What the model said and called, which report.md's behaviour block quotes: the
            // case fails every trial, so it is the weakest and is explained.
            v["outcome"] = "fail".into();
            v["score"]["passed"] = false.into();
            v["turns"] = serde_json::json!([{
                "text": "<script>alert(2)</script>|`z`\n| c |",
                "tool_calls": [{"name": HOSTILE_TOOL, "arguments": {"k": "<img src=x>|`w`"}}],
                "usage": {}
            }]);
        }
    });
    let run = toolscore(
        tmp.path(),
        &["report", "run", "--format", "md", "--format", "junit"],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let md = read(&dir.join("report.md"));
    assert!(
        md.contains(
            "<details><summary>What the model did in &lt;script&gt;alert(1)&lt;/script&gt;"
        ),
        "{md}"
    );
    for raw in ["<script>", "<b>", "<i>", "<img", "`x`", "`rm", "`z`", "`w`"] {
        assert!(!md.contains(raw), "{raw} reached the Markdown:\n{md}");
    }
    assert!(
        md.contains("&lt;script&gt;alert(1)&lt;/script&gt;\\|&#96;x&#96;"),
        "{md}"
    );
    // Every table row keeps its column count: escaped pipes are not cell borders.
    for table in md.split("\n\n").filter(|b| b.starts_with('|')) {
        let columns = |line: &str| line.replace("\\|", "").matches('|').count();
        let mut lines = table.lines();
        let header = columns(lines.next().expect("header"));
        for line in lines {
            assert_eq!(columns(line), header, "{line}");
        }
    }
    // The XML parses, and the case keeps its id (its line break as a space, which is what an
    // XML attribute can hold).
    let xml = read(&dir.join("junit.xml"));
    assert!(!xml.contains("<script>"), "{xml}");
    let doc = roxmltree::Document::parse(&xml).expect("parses");
    assert!(
        doc.descendants().any(|n| n.has_tag_name("testcase")
            && n.attribute("name") == Some(HOSTILE_ID.replace('\n', " ").as_str())),
        "{xml}"
    );
}

#[test]
fn markdown_of_5000_cases_stays_under_github_s_limit_and_says_what_it_cut() {
    let text = read(&root().join(RUN).join("summary.json"));
    let header: toolscore_summary::SummaryHeader = serde_json::from_str(&text).expect("header");
    let (confidence, precision) = (header.confidence, header.precision);
    let mut summary = toolscore_summary::reaggregate(
        &root().join(RUN).join("results.jsonl"),
        header,
        confidence,
        precision,
    )
    .expect("reaggregate");
    let arm = &mut summary.arms[0];
    let template = arm.cases[0].clone();
    let tool = arm.tools[0].clone();
    arm.cases = (0..5000)
        .map(|i| {
            let mut c = template.clone();
            c.case_id = format!("case-{i:05}-{}", "long|id<".repeat(40));
            c
        })
        .collect();
    arm.tools = (0..5000)
        .map(|i| {
            let mut t = tool.clone();
            t.name = format!("tool_{i}");
            t
        })
        .collect();
    let arm2 = summary.arms[0].clone();
    summary.arms = vec![arm2; 3];
    let mut out = Vec::new();
    toolscore_report::Render::render(&toolscore_report::Markdown::default(), &summary, &mut out)
        .expect("render");
    let md = String::from_utf8(out).expect("utf-8");
    assert!(
        md.chars().count() <= toolscore_report::MARKDOWN_MAX_CHARS,
        "{} characters",
        md.chars().count()
    );
    assert!(md.contains("… and 4990 more cases in summary.json"), "{md}");
    assert!(md.contains("… and 4970 more tools in summary.json"), "{md}");
}

#[test]
fn run_writes_the_formats_it_is_asked_for_and_refuses_unknown_ones() {
    let out = tempfile::tempdir().expect("tempdir");
    let out_dir = out.path().display().to_string();
    // The shipped recording, replayed offline from the project root; outputs in a temp dir.
    let run = toolscore(
        root(),
        &[
            "run",
            "--trials",
            "2",
            "--out",
            &out_dir,
            "--run-id",
            "fmt",
            "--progress",
            "off",
            "--format",
            "md",
            "--format",
            "junit",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    // The files are added to the terminal report, which stays whole (the same as a run with
    // no --format), and the files are named under it.
    let plain = toolscore(
        root(),
        &[
            "run",
            "--trials",
            "2",
            "--out",
            &out_dir,
            "--run-id",
            "plain",
            "--progress",
            "off",
        ],
    );
    let report_of = |stdout: &str| -> String {
        stdout
            .lines()
            .take_while(|l| !l.starts_with("more:"))
            .filter(|l| !l.contains(" · run "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        report_of(&run.stdout),
        report_of(&plain.stdout),
        "{}",
        run.transcript()
    );
    assert!(
        run.stdout.contains("/fmt/report.md and ") && run.stdout.contains("/fmt/junit.xml"),
        "{}",
        run.transcript()
    );
    let dir = out.path().join("fmt");
    let md = read(&dir.join("report.md"));
    assert!(md.starts_with("# toolscore report · run fmt\n"), "{md}");
    let c = junit_counts(&read(&dir.join("junit.xml")));
    assert_eq!((c.tests, c.failures, c.skipped), (1 + 61, 0, 0));
    // The run's record is written whatever the formats.
    assert!(dir.join("summary.json").is_file() && dir.join("results.csv").is_file());

    let run = toolscore(
        root(),
        &[
            "run", "--out", &out_dir, "--run-id", "bad", "--format", "pdf",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        !out.path().join("bad").exists(),
        "nothing is written on bad usage"
    );
    let run = toolscore(
        root(),
        &["report", "tests/data/report-run", "--format", "csv"],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
}
