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

const TOOLS: &str = r#"{"tools": [
  {"name": "lookup", "description": "Look something up.", "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false}},
  {"name": "other", "description": "Something else.", "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false}}
]}"#;

const CASES: usize = 12;

fn cases() -> String {
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
    toolscore(
        dir,
        &[
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
        ],
    )
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
    insta::with_settings!({filters => vec![(r"\b\d{4}-\d{2}-\d{2}\b", "[DATE]")]}, {
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
