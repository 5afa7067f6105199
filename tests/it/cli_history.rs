//! `toolscore history`, through the binary, against a fake provider whose success rate per
//! case is set by the test: two runs at the same rates show no move, a third with a planted
//! drop is flagged and fails `--fail-on-drop`, and a malformed history line is bad input naming
//! its file and line.

use crate::support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use support::{
    FakeResponse, FakeServer, fake_project, last_user_message, text_body, tool_call_body, toolscore,
};

pub(crate) const TOOLS: &str = r#"{"tools": [
  {"name": "lookup", "description": "Look something up.", "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false}},
  {"name": "other", "description": "Something else.", "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false}}
]}"#;

const CASES: usize = 12;

pub(crate) fn cases() -> String {
    (0..CASES)
        .map(|k| {
            format!(
                "{{\"id\": \"c{k}\", \"messages\": [{{\"role\": \"user\", \"content\": \"case c{k}\"}}], \"expect\": {{\"tool\": \"lookup\"}}}}\n"
            )
        })
        .collect()
}

/// Right in exactly `tenths` of every 10 requests of a case, `tenths` read per request from the
/// shared dial (case ck at dial + k % 3, so cases differ): the test turns the dial between
/// runs. Request counters are per (dial, case), so every run at one setting gets the same
/// counts whatever order its requests arrive in.
fn dialled_rates(
    dial: Arc<AtomicU32>,
) -> impl Fn(&support::FakeRequest) -> FakeResponse + Send + Sync + 'static {
    let seen: Mutex<HashMap<(u32, String), u32>> = Mutex::new(HashMap::new());
    move |req| {
        let case = last_user_message(req)
            .unwrap_or_default()
            .trim_start_matches("case ")
            .to_owned();
        let base = dial.load(Ordering::SeqCst);
        if base == MODEL_SERVER_DOWN {
            return FakeResponse::status(503, r#"{"error":{"message":"down"}}"#);
        }
        let k = {
            let mut seen = seen.lock().expect("lock");
            let n = seen.entry((base, case.clone())).or_default();
            *n += 1;
            *n - 1
        };
        let spread: u32 = case
            .trim_start_matches('c')
            .parse::<u32>()
            .map_or(0, |k| k % 3);
        if k % 10 < base + spread {
            FakeResponse::ok(tool_call_body(&[("lookup", "{}")]))
        } else {
            FakeResponse::ok(text_body("I am not sure."))
        }
    }
}

/// The dial setting at which every request is answered 503: the model server is down.
const MODEL_SERVER_DOWN: u32 = 99;

fn run(dir: &std::path::Path, id: &str) -> support::Run {
    run_with(dir, id, &[])
}

fn run_with(dir: &std::path::Path, id: &str, extra: &[&str]) -> support::Run {
    let mut args = vec![
        "run",
        "--provider",
        "fake",
        "--out",
        "out",
        "--progress",
        "off",
        "--trials",
        "20",
        "--run-id",
        id,
    ];
    args.extend_from_slice(extra);
    toolscore(dir, &args)
}

#[test]
fn a_planted_drop_is_flagged_and_noise_free_repeats_are_not() {
    let dial = Arc::new(AtomicU32::new(7));
    let server = FakeServer::start_in_background(dialled_rates(dial.clone()));
    let dir = fake_project(&server.base_url, TOOLS, &cases(), &[]);
    for id in ["week-1", "week-2"] {
        // 20 trials of a case are two full turns of its 10-request cycle: the same counts.
        let r = run(dir.path(), id);
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    // 7/10 + spread → 4/10 + spread on every case: a drop of 0.3.
    dial.store(4, Ordering::SeqCst);
    let r = run(dir.path(), "week-3");
    assert_eq!(r.code, 0, "{}", r.transcript());

    let text = std::fs::read_to_string(dir.path().join("out/history.jsonl")).expect("history");
    assert_eq!(text.lines().count(), 3, "{text}");

    // The trend is the contract as a whole: the series, a row per run, the paired difference
    // with its interval against the run before, and the drop flagged on week 3 only.
    let h = toolscore(dir.path(), &["history", "--dir", "out"]);
    assert_eq!(h.code, 0, "{}", h.transcript());
    insta::with_settings!({filters => vec![
        (r"\b\d{4}-\d{2}-\d{2}\b", "[DATE]"),
        // Latency is the fake server's and the machine's (a few ms, so a busy machine can
        // flag growth): not part of this test's contract.
        (r"(?m)^    p95 LATENCY GREW: .*\n", ""),
    ]}, {
        insta::assert_snapshot!(h.stdout, @r"
        data · provider fake · model m · variant base · selection
          [DATE]  week-1  PASS  0.800 [0.737, 0.854] (12 cases)  n 240 (fixed, 20 per case)
          [DATE]  week-2  PASS  0.800 [0.737, 0.854] (12 cases)  n 240 (fixed, 20 per case)  vs week-1: +0.000 [+0.000, +0.000] on 12 cases
          [DATE]  week-3  PASS  0.500 [0.430, 0.570] (12 cases)  n 240 (fixed, 20 per case)  vs week-2: -0.300 [-0.300, -0.300] on 12 cases  SIGNIFICANT DROP
        ");
    });

    let fail = toolscore(dir.path(), &["history", "--dir", "out", "--fail-on-drop"]);
    assert_eq!(fail.code, 1, "{}", fail.transcript());
    assert_eq!(fail.stdout, h.stdout);

    let last = toolscore(dir.path(), &["history", "--dir", "out", "--last", "1"]);
    assert_eq!(last.code, 0, "{}", last.transcript());
    assert!(
        last.stdout.contains("(2 older runs not shown)"),
        "{}",
        last.stdout
    );
    assert!(!last.stdout.contains("  week-1  "), "{}", last.stdout);
}

#[test]
fn a_malformed_history_line_is_bad_input_naming_file_and_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("out")).expect("mkdir");
    std::fs::write(
        dir.path().join("out/history.jsonl"),
        "\n{\"run_id\": \"w\"}\n",
    )
    .expect("write");
    let h = toolscore(dir.path(), &["history", "--dir", "out"]);
    assert_eq!(h.code, 2, "{}", h.transcript());
    assert!(h.stderr.contains("history.jsonl:2"), "{}", h.stderr);

    let none = toolscore(dir.path(), &["history"]);
    assert_eq!(none.code, 2, "{}", none.transcript());
    assert!(none.stderr.contains("no history yet"), "{}", none.stderr);
}

#[test]
fn a_run_that_exits_4_stays_out_of_the_trend_and_a_drop_is_judged_against_the_last_good_run() {
    let dial = Arc::new(AtomicU32::new(7));
    let server = FakeServer::start_in_background(dialled_rates(dial.clone()));
    let dir = fake_project(&server.base_url, TOOLS, &cases(), &[]);
    let r = run(dir.path(), "week-1");
    assert_eq!(r.code, 0, "{}", r.transcript());

    // The model server is down all week: every trial an infrastructure error, exit 4.
    dial.store(MODEL_SERVER_DOWN, Ordering::SeqCst);
    let mut args = vec![
        "run",
        "--provider",
        "fake",
        "--out",
        "out",
        "--progress",
        "off",
    ];
    args.extend(["--trials", "2", "--max-retries", "0", "--run-id", "week-2"]);
    let r = toolscore(dir.path(), &args);
    assert_eq!(r.code, 4, "{}", r.transcript());
    let text = std::fs::read_to_string(dir.path().join("out/history.jsonl")).expect("history");
    let week2: serde_json::Value =
        serde_json::from_str(text.lines().nth(1).expect("line 2")).expect("json");
    assert!(
        week2["untrusted"]
            .as_str()
            .is_some_and(|r| r.contains("infrastructure errors")),
        "{week2}"
    );

    dial.store(4, Ordering::SeqCst);
    let r = run(dir.path(), "week-3");
    assert_eq!(r.code, 0, "{}", r.transcript());

    let h = toolscore(dir.path(), &["history", "--dir", "out", "--fail-on-drop"]);
    assert_eq!(h.code, 1, "{}", h.transcript());
    let row = |id: &str| {
        h.stdout
            .lines()
            .find(|r| r.contains(&format!("  {id}  ")))
            .unwrap_or_else(|| panic!("no row for {id}: {}", h.stdout))
            .to_owned()
    };
    assert!(
        row("week-2").contains("NOT IN THE TREND: 24 of 24 trials ended in infrastructure errors"),
        "{}",
        h.stdout
    );
    let week3 = row("week-3");
    assert!(week3.contains("vs week-1: -0.300"), "{week3}");
    assert!(week3.ends_with("SIGNIFICANT DROP"), "{week3}");
}

/// Three weekly runs with their report.html, the third with a planted drop of 0.3 on every
/// case.
fn three_weeks_with_a_drop() -> (FakeServer, tempfile::TempDir) {
    let dial = Arc::new(AtomicU32::new(7));
    let server = FakeServer::start_in_background(dialled_rates(dial.clone()));
    let dir = fake_project(&server.base_url, TOOLS, &cases(), &[]);
    for id in ["week-1", "week-2", "week-3"] {
        if id == "week-3" {
            dial.store(4, Ordering::SeqCst);
        }
        let r = run_with(
            dir.path(),
            id,
            &["--format", "terminal", "--format", "html"],
        );
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    (server, dir)
}

pub(crate) fn parse_page(html: &str) -> roxmltree::Document<'_> {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    roxmltree::Document::parse_with_options(html, options)
        .unwrap_or_else(|e| panic!("history.html is not well-formed: {e}"))
}

fn ids_of(doc: &roxmltree::Document<'_>) -> std::collections::BTreeSet<String> {
    doc.descendants()
        .filter_map(|n| n.attribute("id"))
        .map(str::to_owned)
        .collect()
}

/// The page, the Markdown and the JSON say what `--fail-on-drop` says: the drop is marked on
/// week 3 and nowhere else, and every link of the page resolves in the folder.
#[test]
fn the_trend_page_marks_the_drop_where_fail_on_drop_fails_and_every_link_resolves() {
    let (_server, dir) = three_weeks_with_a_drop();
    let h = toolscore(
        dir.path(),
        &[
            "history",
            "--dir",
            "out",
            "--format",
            "md",
            "--format",
            "html",
            "--fail-on-drop",
        ],
    );
    assert_eq!(h.code, 1, "{}", h.transcript());
    assert!(h.stdout.is_empty(), "files only: {}", h.stdout);
    assert!(
        h.stderr.contains("wrote out/history.md") && h.stderr.contains("wrote out/history.html"),
        "{}",
        h.stderr
    );

    let md = std::fs::read_to_string(dir.path().join("out/history.md")).expect("history.md");
    insta::with_settings!({filters => vec![
        (r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", "[TIME]"),
        (r"\b\d{4}-\d{2}-\d{2}\b", "[DATE]"),
        // Latency is the fake server's and the machine's: not part of the contract here.
        (r"(?m)^week-\d: p95 latency .*\n\n", ""),
    ]}, {
        insta::assert_snapshot!(md, @r"
        ## toolscore history · selection

        **DROP: 1 of 1 series dropped significantly in their newest run (`toolscore history --fail-on-drop` exits 1).**

        | series | newest run | its verdict | score | trend: vs previous run | sampled |
        |---|---|---|---|---|---|
        | data · provider fake · model m · variant base | week-3 | PASS | 0.500 [0.430, 0.570] (12 cases) | -0.300 [-0.300, -0.300] on 12 cases **SIGNIFICANT DROP** | fixed, 20 per case |

        Two questions: a run's verdict answers its own gates (did it clear the bar it was given?); the trend answers whether it moved against the run before (paired by case, flagged only when the interval excludes 0). A run can PASS its gates and still drop.

        <sub>made [TIME] from `out/history.jsonl` (3 lines): a move is flagged only when the interval of the paired difference (by case) excludes 0.</sub>

        ### data · provider fake · model m · variant base

        | run | finished | verdict | score | n | sampled | vs previous run |
        |---|---|---|---|---|---|---|
        | week-1 | [DATE] | PASS | 0.800 [0.737, 0.854] (12 cases) | 240 | fixed, 20 per case | – |
        | week-2 | [DATE] | PASS | 0.800 [0.737, 0.854] (12 cases) | 240 | fixed, 20 per case | vs week-1: +0.000 [+0.000, +0.000] on 12 cases |
        | week-3 | [DATE] | PASS | 0.500 [0.430, 0.570] (12 cases) | 240 | fixed, 20 per case | vs week-2: -0.300 [-0.300, -0.300] on 12 cases **SIGNIFICANT DROP** |

        Cases that changed most, week-2 → week-3 (a single case's change may be trial noise; `toolscore explain` shows what the model did):

        | case | week-2 | week-3 | change |
        |---|---|---|---|
        | data/c1 | 16/20 | 10/20 | -0.300 |
        | data/c10 | 16/20 | 10/20 | -0.300 |
        | data/c11 | 18/20 | 12/20 | -0.300 |
        | data/c2 | 18/20 | 12/20 | -0.300 |
        | data/c4 | 16/20 | 10/20 | -0.300 |

        Tools in week-3 against week-2:

        | tool | previous | newest | change, paired by the tool's cases |
        |---|---|---|---|
        | lookup | 0.800 [0.737, 0.854] (12 cases) | 0.500 [0.430, 0.570] (12 cases) | -0.300 [-0.300, -0.300] on 12 cases **SIGNIFICANT DROP** |
        ");
    });

    let html = std::fs::read_to_string(dir.path().join("out/history.html")).expect("history.html");
    for needle in ["<script", "url(", "@import", " src=", "<iframe", "<img"] {
        assert!(
            !html.to_lowercase().contains(needle),
            "history.html has {needle}"
        );
    }
    let doc = parse_page(&html);
    // One point per run, in order; only week 3's is a drop, flagged ▼ above it.
    let points: Vec<roxmltree::Node<'_, '_>> = doc
        .descendants()
        .filter(|n| {
            n.attribute("class")
                .is_some_and(|c| c == "run" || c.starts_with("run "))
        })
        .collect();
    let classes: Vec<&str> = points.iter().filter_map(|n| n.attribute("class")).collect();
    assert_eq!(classes, ["run", "run", "run worse"]);
    let flags: Vec<(&str, &str)> = doc
        .descendants()
        .filter(|n| n.attribute("class").is_some_and(|c| c.starts_with("flag ")))
        .map(|n| {
            (
                n.attribute("x").unwrap_or_default(),
                n.text().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(flags, [(points[2].attribute("cx").expect("cx"), "▼")]);
    let headline = doc
        .descendants()
        .find(|n| {
            n.attribute("class")
                .is_some_and(|c| c.starts_with("headline"))
        })
        .expect("headline");
    assert_eq!(headline.attribute("class"), Some("headline fail"));

    // 3 points, the summary row's run and series, the 5 changed cases.
    let out = dir.path().join("out");
    assert_eq!(links_resolve(&out, &html), (3 + 2 + 5, 5));

    // The overview as data says the same.
    let json = toolscore(dir.path(), &["history", "--dir", "out", "--format", "json"]);
    assert_eq!(json.code, 0, "{}", json.transcript());
    let v: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!(v["version"], 2);
    assert_eq!(v["worsened"], 1);
    assert_eq!(v["series"][0]["newest_worsened"], true);
    let moved: Vec<&serde_json::Value> = v["series"][0]["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| &r["change"]["moved"])
        .collect();
    assert_eq!(
        moved,
        [
            &serde_json::Value::Null,
            &serde_json::json!("none"),
            &serde_json::json!("drop")
        ]
    );
    assert_eq!(v["series"][0]["runs"][2]["report"], "week-3/report.html");

    let both = toolscore(
        dir.path(),
        &[
            "history", "--dir", "out", "--format", "json", "--format", "terminal",
        ],
    );
    assert_eq!(both.code, 2, "{}", both.transcript());
}

/// A year of weekly runs of 100 series: the page stays under 2 MB, and says what the terminal
/// and `--fail-on-drop` say (series 0 dropped in the last week).
#[test]
fn a_year_of_100_series_makes_a_page_under_2_mb() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lines = support::history::write_synthetic_history(dir.path(), 100, 52);
    let h = toolscore(
        dir.path(),
        &[
            "history",
            "--dir",
            ".",
            "--format",
            "html",
            "--format",
            "md",
            "--fail-on-drop",
        ],
    );
    assert_eq!(h.code, 1, "{}", h.transcript());
    let html = std::fs::read_to_string(dir.path().join("history.html")).expect("history.html");
    assert!(
        html.len() < 2_000_000,
        "history.html is {} bytes",
        html.len()
    );
    assert!(html.contains(&format!("({lines} lines, 100 series)")));
    // One point per trustworthy run: 52 × 100, less the 10 runs of week 30 that exited 4.
    assert_eq!(
        html.matches(" class=\"run\"").count() + html.matches(" class=\"run ").count(),
        52 * 100 - 10
    );
    let md = std::fs::read_to_string(dir.path().join("history.md")).expect("history.md");
    assert!(
        md.chars().count() <= toolscore_report::MARKDOWN_MAX_CHARS,
        "{}",
        md.len()
    );
    let json = toolscore(dir.path(), &["history", "--dir", ".", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    let dropped = v["worsened"].as_u64().expect("worsened");
    assert_eq!(v["series"][0]["newest_worsened"], true, "the planted drop");
    let runs = v["series"][0]["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 51, "week 30 exited 4: listed apart");
    assert_eq!(runs[50]["run_id"], "week-52");
    assert_eq!(v["series"][0]["not_in_trend"][0]["run_id"], "week-30");
    assert!(
        md.contains(&format!(
            "**DROP: {dropped} of 100 series dropped significantly in their newest run"
        )),
        "{}",
        &md[..400]
    );
}

/// Asserts every link of a history page in `out` resolves: an element of the page, or a file
/// of the folder (a relative path that stays in it) and, with a fragment, an element of that
/// file. Returns the links and the links into another page's element.
pub(crate) fn links_resolve(out: &std::path::Path, html: &str) -> (usize, usize) {
    let doc = parse_page(html);
    let page_ids = ids_of(&doc);
    let (mut links, mut case_links) = (0, 0);
    for node in doc.descendants().filter(|n| n.tag_name().name() == "a") {
        let href = node.attribute("href").expect("an <a> has an href");
        links += 1;
        if let Some(id) = href.strip_prefix('#') {
            assert!(page_ids.contains(id), "{href}: no such element");
            continue;
        }
        let (file, fragment) = href
            .split_once('#')
            .map_or((href, None), |(f, id)| (f, Some(id)));
        assert!(
            !file.contains(':') && !file.starts_with('/') && !file.contains(".."),
            "{href}"
        );
        let target = out.join(file);
        assert!(target.is_file(), "{href}: no such file");
        if let Some(id) = fragment {
            case_links += 1;
            let text = std::fs::read_to_string(&target).expect("target");
            assert!(
                ids_of(&parse_page(&text)).contains(id),
                "{href}: no such section"
            );
        }
    }
    (links, case_links)
}

/// `--resume` of a finished run appends no second point of it, which `history` would compare
/// with itself (+0.000) and which could hide a drop; it says so.
#[test]
fn resuming_a_finished_run_appends_no_second_history_point() {
    let dir = support::project_copy();
    let d = dir.path();
    let first = toolscore(
        d,
        &[
            "run",
            "--trials",
            "2",
            "--run-id",
            "once",
            "--progress",
            "off",
        ],
    );
    assert_eq!(first.code, 0, "{}", first.transcript());
    let count = || support::read_jsonl(&d.join("reports/history.jsonl")).len();
    let before = count();
    let again = toolscore(
        d,
        &[
            "run",
            "--trials",
            "2",
            "--resume",
            "reports/once",
            "--progress",
            "off",
        ],
    );
    assert_eq!(again.code, 0, "{}", again.transcript());
    assert_eq!(count(), before, "no second point");
    assert!(
        again
            .stderr
            .contains("already holds run once: not appended again"),
        "{}",
        again.stderr
    );
}

/// `history --metric` offers exactly the rates history.jsonl keeps: its help lists selection
/// and pass, and a rate it does not keep is refused by the parser with the choices.
#[test]
fn history_offers_only_the_rates_it_keeps() {
    let dir = support::project_copy();
    let help = toolscore(dir.path(), &["history", "--help"]);
    let values = help
        .stdout
        .split("--metric <METRIC>")
        .nth(1)
        .and_then(|m| m.split("[default: selection]").next())
        .unwrap_or_default();
    assert!(
        values.contains("- selection: ")
            && values.contains("- pass: ")
            && values.contains("- attack_success: "),
        "{}",
        help.stdout
    );
    assert!(
        !values.contains("- args") && !values.contains("- schema"),
        "{values}"
    );
    let args = toolscore(dir.path(), &["history", "--metric", "args"]);
    assert_eq!(args.code, 2, "{}", args.transcript());
    assert!(
        args.stderr
            .contains("[possible values: selection, pass, attack_success]"),
        "{}",
        args.stderr
    );
}
