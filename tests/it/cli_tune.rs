//! `toolscore tune`, through the binary, against a scripted fake model whose choice depends on
//! the description text: it tells `job_status` from `server_status` only when the catalog
//! carries the sentence tune's disambiguate operator writes, and ignores every other edit
//! (`word_matching` tunes against models that follow a rule instead of a script).
//! tune must find that edit, confirm it on the held-out cases, write the overlay; reject the
//! same edit when it helps on training cases only; and never send more trials than allowed.

use crate::support;

use std::path::Path;

use serde_json::Value;
use support::{
    FakeResponse, FakeServer, fake_project, last_user_message, tool_call_body, toolscore,
};

const TOOLS: &str = r#"{"tools": [
  {"name": "job_status", "description": "Progress of an export job.",
   "inputSchema": {"type": "object", "properties": {"job_id": {"type": "string", "description": "The job id."}}, "required": ["job_id"], "additionalProperties": false}},
  {"name": "server_status", "description": "Health of the billing service.",
   "inputSchema": {"type": "object", "properties": {"region": {"type": "string", "description": "Region.", "default": "eu"}}, "additionalProperties": false}},
  {"name": "refund", "description": "Refund a payment.",
   "inputSchema": {"type": "object", "properties": {"amount_minor": {"type": "integer", "description": "Amount."}}, "required": ["amount_minor"], "additionalProperties": false}}
]}"#;

/// Job questions j1–j6, service questions s1–s3, refunds r1–r3; j5, j6 and s3 held out.
fn cases() -> String {
    let mut out = String::new();
    let held = ["j5", "j6", "s3"];
    let mut case = |id: &str, text: &str, expect: &str| {
        let tags = if held.contains(&id) {
            ", \"tags\": [\"holdout\"]"
        } else {
            ""
        };
        out.push_str(&format!(
            "{{\"id\": \"{id}\", \"messages\": [{{\"role\": \"user\", \"content\": \"[{id}] {text}\"}}], \"expect\": {expect}{tags}}}\n"
        ));
    };
    for i in 1..=6 {
        case(
            &format!("j{i}"),
            "how far along is my export?",
            r#"{"tool": "job_status"}"#,
        );
    }
    for i in 1..=3 {
        case(
            &format!("s{i}"),
            "is billing up?",
            r#"{"tool": "server_status"}"#,
        );
    }
    for i in 1..=3 {
        case(
            &format!("r{i}"),
            "refund 12.50",
            r#"{"tool": "refund", "args": {"amount_minor": 1250}}"#,
        );
    }
    out
}

/// The sentence tune's disambiguate operator adds to `job_status`, which loses the job
/// questions to `server_status`: the words of those requests.
const PHRASE: &str = "Its requests often use these words";

/// The scripted model. Job questions go to `job_status` only when PHRASE is in the catalog
/// (and, with `training_only`, only for the training ids); service questions always go right;
/// refunds always send the amount as a string (a wrong_type failure no wording fixes here).
fn fake(training_only: bool) -> impl Fn(&support::FakeRequest) -> FakeResponse + Send + Sync {
    move |req| {
        let clear = req.body["tools"].to_string().contains(PHRASE);
        let text = last_user_message(req).unwrap_or_default();
        let id = text
            .split(']')
            .next()
            .unwrap_or_default()
            .trim_start_matches('[');
        let held = ["j5", "j6"].contains(&id);
        FakeResponse::ok(if id.starts_with('j') {
            if clear && !(training_only && held) {
                tool_call_body(&[("job_status", r#"{"job_id": "job_000001"}"#)])
            } else {
                tool_call_body(&[("server_status", "{}")])
            }
        } else if id.starts_with('s') {
            tool_call_body(&[("server_status", "{}")])
        } else {
            tool_call_body(&[("refund", r#"{"amount_minor": "1250"}"#)])
        })
    }
}

fn tune(dir: &Path, extra: &[&str]) -> support::Run {
    let mut args = vec![
        "tune",
        "--provider",
        "fake",
        "--trials",
        "4",
        "--max-rounds",
        "20",
        "--concurrency",
        "2",
        "--out",
        "out",
        "--tune-id",
        "t",
        "--progress",
        "off",
        "--format",
        "terminal",
        "--format",
        "md",
        "--format",
        "html",
    ];
    args.extend_from_slice(extra);
    toolscore(dir, &args)
}

/// (case id, variant) of every record in a phase's results.jsonl.
fn records(dir: &Path, phase: &str) -> Vec<(String, String)> {
    support::read_jsonl(&dir.join(format!("out/t/{phase}/results.jsonl")))
        .iter()
        .map(|r| {
            (
                r["case_id"].as_str().expect("case").to_owned(),
                r["variant"].as_str().expect("variant").to_owned(),
            )
        })
        .collect()
}

fn variants_written(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir.join("data/variants")) else {
        return Vec::new();
    };
    entries
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn tune_finds_the_disambiguating_edit_confirms_it_on_held_out_cases_and_writes_it() {
    let server = FakeServer::start_in_background(fake(false));
    let dir = fake_project(&server.base_url, TOOLS, &cases(), &[]);
    let r = tune(dir.path(), &["--budget-trials", "1500"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let t = support::read_json(&dir.path().join("out/t/tune.json"));
    assert_eq!(t["outcome"], "confirmed", "{t:#}");
    assert_eq!(t["split"]["method"], "tagged");
    let raced: Vec<(&str, &str)> = t["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .map(|c| {
            (
                c["candidate"]["id"].as_str().expect("id"),
                c["status"].as_str().expect("status"),
            )
        })
        .collect();
    assert!(
        raced.contains(&("disambiguate:job_status/server_status", "better")),
        "{raced:?}"
    );
    // The refund's format edit is proposed from its wrong_type failures, and the fake
    // ignores it: never better.
    let format = raced
        .iter()
        .find(|(id, _)| *id == "format:refund.amount_minor")
        .expect("a format candidate");
    assert_ne!(format.1, "better");
    assert_eq!(
        t["confirmation"]["candidates"],
        serde_json::json!(["disambiguate:job_status/server_status"])
    );
    let held = &t["confirmation"]["held_out"];
    assert_eq!(held["verdict"], "better");
    assert!(held["lower"].as_f64().expect("lower") > 0.0);

    // The held-out cases never reach the baseline or the race; only they reach the confirmation.
    let holdout = ["j5", "j6", "s3"];
    for phase in ["baseline", "race"] {
        assert!(
            records(dir.path(), phase)
                .iter()
                .all(|(c, _)| !holdout.contains(&c.as_str())),
            "{phase} ran a held-out case"
        );
    }
    let confirm = records(dir.path(), "confirm");
    assert!(confirm.iter().all(|(c, _)| holdout.contains(&c.as_str())));
    assert!(confirm.iter().any(|(_, v)| v == "tuned"));

    // Every trial is counted once, and the budget holds. The race goes on from the baseline:
    // the base wording's first 4 rounds are the baseline's trials, in both folders, sent once.
    let sent = ["baseline", "race", "confirm"]
        .iter()
        .map(|p| records(dir.path(), p).len() as u64)
        .sum::<u64>()
        - records(dir.path(), "baseline").len() as u64;
    let phases = t["baseline"]["trials"].as_u64().unwrap()
        + t["race"]["trials"].as_u64().unwrap()
        + t["confirmation"]["phase"]["trials"].as_u64().unwrap();
    assert_eq!(phases, sent);
    assert_eq!(server.requests_seen(), sent);
    assert!(sent <= 1500);
    let race = support::read_jsonl(&dir.path().join("out/t/race/results.jsonl"));
    let base_in_race = race.iter().filter(|r| r["variant"] == "base").count();
    let candidate_in_race = race
        .iter()
        .filter(|r| r["variant"] == "candidate-1")
        .count();
    assert!(
        base_in_race >= candidate_in_race,
        "{base_in_race} {candidate_in_race}"
    );

    // The overlay: the words of the requests it lost on `job_status`, the words that set it
    // apart on `server_status`, nothing else changed.
    let written = variants_written(dir.path());
    assert_eq!(written.len(), 1, "{written:?}");
    assert!(
        written[0].starts_with("tuned-")
            && std::path::Path::new(&written[0])
                .extension()
                .is_some_and(|e| e == "json")
    );
    let overlay = support::read_json(&dir.path().join("data/variants").join(&written[0]));
    assert_eq!(
        overlay["tools"]["job_status"]["description"],
        r#"Progress of an export job. Its requests often use these words: "far", "along"."#
    );
    assert_eq!(
        overlay["tools"]["server_status"]["description"],
        r#"Health of the billing service. Its distinguishing words are these: "Health", "billing", "service"."#
    );
    assert_eq!(
        overlay["tools"].as_object().unwrap().len(),
        2,
        "{overlay:#}"
    );
    // The dataset validates with it, and the reports say what happened.
    let v = toolscore(dir.path(), &["validate"]);
    assert_eq!(v.code, 0, "{}", v.transcript());
    assert!(
        r.stdout.contains("held-out confirmation: BETTER"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("training (optimistic"), "{}", r.stdout);
    assert!(
        r.stdout.contains("check it again later: toolscore run"),
        "{}",
        r.stdout
    );
    let md = std::fs::read_to_string(dir.path().join("out/t/report.md")).expect("report.md");
    assert!(
        md.contains("+Progress of an export job. Its requests often use these words"),
        "{md}"
    );
    // The page is well-formed XML, escapes the catalog's text, and fetches nothing.
    let html = std::fs::read_to_string(dir.path().join("out/t/report.html")).expect("report.html");
    let doc = roxmltree::Document::parse_with_options(
        &html,
        roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        },
    )
    .expect("well-formed");
    let text: String = doc
        .descendants()
        .filter(|n| n.is_text())
        .map(|n| n.text().unwrap_or_default())
        .collect();
    assert!(text.contains("held-out confirmation: BETTER"), "{text}");
    assert!(text.contains(
        r#"+ Progress of an export job. Its requests often use these words: "far", "along"."#
    ));
    assert!(!html.contains("<script") && !html.contains("src=") && !html.contains("href="));
}

#[test]
fn an_edit_that_helps_only_on_training_cases_is_not_confirmed_or_written() {
    let server = FakeServer::start_in_background(fake(true));
    let dir = fake_project(&server.base_url, TOOLS, &cases(), &[]);
    let r = tune(dir.path(), &[]);
    let t = support::read_json(&dir.path().join("out/t/tune.json"));
    let outcome = t["outcome"].as_str().expect("outcome");
    assert!(
        ["no_difference", "undecided"].contains(&outcome),
        "{outcome}: {}",
        r.transcript()
    );
    assert_eq!(r.code, if outcome == "undecided" { 3 } else { 1 });
    // It raced better on training: the training figure alone would have shipped it.
    assert_eq!(t["candidates"][0]["status"], "better", "{t:#}");
    assert!(variants_written(dir.path()).is_empty());
    assert!(t.get("written").is_none());
    assert!(r.stdout.contains("training (optimistic"), "{}", r.stdout);
}

#[test]
fn a_budget_too_small_for_the_smallest_tune_is_refused_before_any_request() {
    let server = FakeServer::start_in_background(fake(false));
    let dir = fake_project(&server.base_url, TOOLS, &cases(), &[]);
    let r = tune(dir.path(), &["--budget-trials", "60"]);
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(
        r.stderr
            .contains("--budget-trials 60 cannot pay for the smallest tune: 81 trials"),
        "{}",
        r.stderr
    );
    assert_eq!(server.requests_seen(), 0);
    assert!(!dir.path().join("out/t").exists());
}

#[test]
fn a_tight_budget_shrinks_the_race_and_is_never_passed() {
    let server = FakeServer::start_in_background(fake(false));
    let dir = fake_project(&server.base_url, TOOLS, &cases(), &[]);
    let r = tune(dir.path(), &["--budget-trials", "130"]);
    assert!([0, 1, 3].contains(&r.code), "{}", r.transcript());
    let t = support::read_json(&dir.path().join("out/t/tune.json"));
    let sent = server.requests_seen();
    assert!(sent <= 130, "{sent}");
    assert_eq!(
        t["baseline"]["trials"].as_u64().unwrap()
            + t["race"]["trials"].as_u64().unwrap()
            + t["confirmation"]["phase"]["trials"].as_u64().unwrap_or(0),
        sent
    );
    assert!(
        r.stdout
            .contains(&format!("spent {sent} trials of --budget-trials 130")),
        "{}",
        r.stdout
    );
    // 130 trials pay for fewer candidates than were proposed: the others are named, not
    // silently dropped.
    let raced = t["candidates"].as_array().expect("candidates").len();
    let left_out: Vec<&str> = t["invalid"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(raced < 3, "{raced}");
    assert_eq!(left_out.len(), 3 - raced, "{left_out:?}");
    assert!(
        left_out
            .iter()
            .all(|l| l.contains(&format!("the budget pays for {raced} of 3 candidates"))),
        "{left_out:?}"
    );
}

#[test]
fn a_recorded_tune_replays_offline_to_the_same_decisions() {
    let server = FakeServer::start_in_background(fake(false));
    let dir = fake_project(&server.base_url, TOOLS, &cases(), &[]);
    assert_a_recorded_tune_replays(dir.path(), server, &[]);
    // A recording without an author's rewrites cannot serve one.
    let cassette = format!(
        "replay:{}",
        dir.path().join("tune.cassette.jsonl.gz").display()
    );
    let r = toolscore(
        dir.path(),
        &[
            "tune",
            "--provider",
            &cassette,
            "--author",
            "fake",
            "--progress",
            "off",
        ],
    );
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(
        r.stderr
            .contains("holds no author's rewrites (it was recorded without --author)"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_recorded_tune_with_scenarios_replays_offline_to_the_same_decisions() {
    let server = FakeServer::start_in_background(scenario_fake());
    let dir = scenario_project(&server, &[]);
    assert_a_recorded_tune_replays(dir.path(), server, WITH_SCENARIOS);
}

/// Records a tune with `suite` flags, stops the server, replays the cassette with the same
/// flags: the same split, diagnosis, decisions and confirmation, and no infrastructure error.
fn assert_a_recorded_tune_replays(dir: &Path, server: FakeServer, suite: &[&str]) {
    let mut record = vec!["--record", "tune.cassette.jsonl.gz"];
    record.extend_from_slice(suite);
    let r = tune(dir, &record);
    assert_eq!(r.code, 0, "{}", r.transcript());
    drop(server);
    let cassette = format!("replay:{}", dir.join("tune.cassette.jsonl.gz").display());
    let mut args = vec![
        "tune",
        "--provider",
        &cassette,
        "--trials",
        "4",
        "--max-rounds",
        "20",
        "--out",
        "out",
        "--tune-id",
        "again",
        "--progress",
        "off",
    ];
    args.extend_from_slice(suite);
    let replayed = toolscore(dir, &args);
    assert_eq!(replayed.code, 0, "{}", replayed.transcript());
    let a = support::read_json(&dir.join("out/t/tune.json"));
    let b = support::read_json(&dir.join("out/again/tune.json"));
    for field in ["outcome", "split", "diagnosis"] {
        assert_eq!(a[field], b[field], "{field}");
    }
    let decisions = |t: &Value| -> Vec<Value> {
        t["candidates"]
            .as_array()
            .expect("candidates")
            .iter()
            .map(|c| {
                serde_json::json!([
                    c["candidate"],
                    c["status"],
                    c["race"]["rounds"],
                    c["race"]["counts"]
                ])
            })
            .collect()
    };
    assert_eq!(decisions(&a), decisions(&b));
    assert_eq!(a["confirmation"]["held_out"], b["confirmation"]["held_out"]);
    // Replay asks only for recorded trials: no infrastructure error anywhere.
    for phase in ["baseline", "race", "confirm"] {
        let s = support::read_json(&dir.join(format!("out/again/{phase}/summary.json")));
        for arm in s["arms"].as_array().expect("arms") {
            assert_eq!(arm["infra"]["errors"], 0, "{phase}: {arm:#}");
        }
    }
}

/// With the config under another name (`--config`), one holding a space, the command a
/// confirmed tune prints to check it again later names that config, shell-quoted, and runs as
/// printed.
#[test]
fn the_printed_recheck_runs_as_printed_with_another_config() {
    let server = FakeServer::start_in_background(fake(false));
    let dir = fake_project(&server.base_url, TOOLS, &cases(), &[]);
    std::fs::rename(
        dir.path().join("toolscore.yaml"),
        dir.path().join("my eval.yaml"),
    )
    .expect("rename");
    let r = tune(
        dir.path(),
        &["--config", "my eval.yaml", "--budget-trials", "1500"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let line = r
        .stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("check it again later: "))
        .unwrap_or_else(|| panic!("no re-check command: {}", r.stdout));
    assert!(
        line.starts_with("toolscore run --config 'my eval.yaml' "),
        "{line}"
    );
    let mut args: Vec<String> = support::shell_words(line).into_iter().skip(1).collect();
    args.extend(["--max-trials", "4", "--progress", "off"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let again = toolscore(dir.path(), &args);
    assert!(
        [0, 1, 3].contains(&again.code),
        "{line}\n{}",
        again.transcript()
    );
}

#[test]
fn max_cost_caps_the_whole_tune_as_run_counts_it() {
    let server = FakeServer::start_in_background(fake(false));
    let dir = fake_project(&server.base_url, TOOLS, &cases(), &[]);
    // Every fake answer uses 50 input and 10 output tokens: $0.0006 at $10 per million.
    std::fs::write(
        dir.path().join("toolscore.yaml"),
        format!(
            "providers:\n  fake:\n    kind: openai-compat\n    base_url: {}\n    model: m\n    max_tokens: 10\nprices:\n  fake: {{input: 10, output: 10}}\ndatasets: [data]\n",
            server.base_url
        ),
    )
    .expect("config");
    let r = tune(dir.path(), &["--max-cost", "0.1"]);
    assert!([0, 1, 3].contains(&r.code), "{}", r.transcript());
    let t = support::read_json(&dir.path().join("out/t/tune.json"));
    let usd: f64 = [&t["baseline"], &t["race"], &t["confirmation"]["phase"]]
        .iter()
        .filter_map(|p| p["usd"].as_f64())
        .sum();
    let sent = server.requests_seen() as f64;
    assert!((usd - sent * 0.0006).abs() < 1e-9, "{usd} {sent}");
    assert!(usd <= 0.1, "{usd}");
    // Without the cap the same tune sends more than $0.1 would pay for.
    assert!(sent < 400.0 && sent > 50.0, "{sent}");
}

/// The guide's example: the shipped recording of a tune of the billing dataset against the
/// local SmolLM2 (2026-12-07, three candidates raced), replayed offline in a copy of the
/// project (a confirmed tune writes into the dataset), prints what the guide quotes.
#[test]
fn the_guide_s_tune_replays_the_shipped_recording() {
    let dir = support::project_copy();
    let command = "toolscore tune --provider demo-tune --trials 4 --max-candidates 3 --max-rounds 20 --budget-trials 1000 --tune-id billing-tune";
    let mut args: Vec<String> = support::shell_words(command).into_iter().skip(1).collect();
    args.extend(["--progress", "off"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = toolscore(dir.path(), &args);
    assert!([0, 1, 3].contains(&r.code), "{}", r.transcript());
    support::assert_guide_quotes("docs/guides/tune-descriptions.md", command, &r.stdout);
    let t = support::read_json(&dir.path().join("reports/billing-tune/tune.json"));
    // Every phase replayed from the recording: nothing was lost to a missing recording.
    for phase in ["baseline", "race", "confirm"] {
        let path = dir
            .path()
            .join(format!("reports/billing-tune/{phase}/summary.json"));
        if !path.exists() {
            continue;
        }
        for arm in support::read_json(&path)["arms"].as_array().expect("arms") {
            assert_eq!(arm["infra"]["errors"], 0, "{phase}: {arm:#}");
        }
    }
    assert!(t["baseline"]["trials"].as_u64().expect("trials") > 0);
}

/// `--author`: the same fake answers a request without tools as the author, with a rewrite of
/// `server_status` that carries the disambiguating sentence. Its rewrite is raced beside the
/// operators' edits, and it is never shown a held-out case.
#[test]
fn an_author_rewrite_races_beside_the_operators_and_never_sees_a_held_out_case() {
    let prompts = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let server = FakeServer::start_in_background(with_author(std::sync::Arc::clone(&prompts)));
    let dir = fake_project(&server.base_url, TOOLS, &cases(), &[]);
    let r = tune(dir.path(), &["--author", "fake", "--budget-trials", "1500"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    let t = support::read_json(&dir.path().join("out/t/tune.json"));
    let ids: Vec<&str> = t["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .map(|c| c["candidate"]["id"].as_str().expect("id"))
        .collect();
    assert!(ids.contains(&"author:server_status"), "{ids:?}");
    let prompts = prompts.lock().expect("lock");
    assert_eq!(t["author"]["requests"].as_u64(), Some(prompts.len() as u64));
    assert!(!prompts.is_empty());
    for p in prompts.iter() {
        for held in ["[j5]", "[j6]", "[s3]"] {
            assert!(
                !p.contains(held),
                "the author saw held-out case {held}: {p}"
            );
        }
    }
    // The author's requests are counted in what tune spent.
    let sent = server.requests_seen();
    assert!(
        r.stdout
            .contains(&format!("spent {sent} trials of --budget-trials 1500")),
        "{}",
        r.stdout
    );
}

/// `fake(false)` for trials (requests with tools); as the author (a request without tools),
/// a rewrite of `server_status` carrying PHRASE, each prompt kept in `prompts`.
fn with_author(
    prompts: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) -> impl Fn(&support::FakeRequest) -> FakeResponse + Send + Sync {
    let model = fake(false);
    move |req| {
        if req.body.get("tools").is_some() {
            return model(req);
        }
        prompts
            .lock()
            .expect("lock")
            .push(req.body["messages"].to_string());
        let rewrite = serde_json::json!({
            "description": format!("Health of the billing service only, never an export job's progress. {PHRASE}: \"health\", \"billing\".")
        });
        support::FakeResponse::ok(support::text_body(&rewrite.to_string()))
    }
}

#[test]
fn an_author_s_rewrites_are_recorded_and_replayed_with_the_tune() {
    let prompts = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let server = FakeServer::start_in_background(with_author(std::sync::Arc::clone(&prompts)));
    let dir = fake_project(&server.base_url, TOOLS, &cases(), &[]);
    assert_a_recorded_tune_replays(dir.path(), server, &["--author", "fake"]);
    let t = support::read_json(&dir.path().join("out/again/tune.json"));
    assert!(
        t["candidates"]
            .as_array()
            .expect("candidates")
            .iter()
            .any(|c| c["candidate"]["id"] == "author:server_status"),
        "{t:#}"
    );
    let asked = prompts.lock().expect("lock").len() as u64;
    assert!(asked > 0);
    assert_eq!(t["author"]["requests"].as_u64(), Some(asked), "{t:#}");

    // The recording names its author: another, or none, is refused before anything runs.
    let cassette = format!(
        "replay:{}",
        dir.path().join("tune.cassette.jsonl.gz").display()
    );
    for (author, says) in [
        (
            Some("someone"),
            "recorded the rewrites of author `fake`; replay it with --author fake",
        ),
        (None, "was recorded with --author fake"),
    ] {
        let mut args = vec![
            "tune",
            "--provider",
            &cassette,
            "--out",
            "out",
            "--progress",
            "off",
        ];
        if let Some(a) = author {
            args.extend(["--author", a]);
        }
        let r = toolscore(dir.path(), &args);
        assert_eq!(r.code, 2, "{}", r.transcript());
        assert!(r.stderr.contains(says), "{}", r.stderr);
    }
}

/// A refund scenario (`catalog: ../data`, the dataset's own catalog); `sc-c` is held out.
fn scenario(name: &str, held: bool) -> String {
    format!(
        r#"description: Refund 12.50 of a payment.
catalog: ../data
max_steps: 4
{tags}messages:
  - role: user
    content: "[{name}] refund 12.50 of payment pay_1"
tools:
  refund:
    - result: {{status: pending}}
expect:
  sequence:
    calls:
      - tool: refund
        args: {{amount_minor: 1250}}
"#,
        tags = if held { "tags: [holdout]\n" } else { "" }
    )
}

/// tune's flags for the dataset with its scenarios.
const WITH_SCENARIOS: &[&str] = &["--dataset", "data", "--scenario", "scen"];

/// The dataset with scenarios `scen/sc-a`, `sc-b` and the held-out `sc-c`, and `extra` files.
fn scenario_project(server: &FakeServer, extra: &[(&str, &str)]) -> tempfile::TempDir {
    let scenarios: Vec<(String, String)> = [("sc-a", false), ("sc-b", false), ("sc-c", true)]
        .iter()
        .map(|(name, held)| (format!("scen/{name}.yaml"), scenario(name, *held)))
        .collect();
    let mut files: Vec<(&str, &str)> = scenarios
        .iter()
        .map(|(path, text)| (path.as_str(), text.as_str()))
        .collect();
    files.extend_from_slice(extra);
    fake_project(&server.base_url, TOOLS, &cases(), &files)
}

/// The statement tune's format operator adds to `refund.amount_minor` on wrong_type evidence.
const INTEGER: &str = "A JSON integer, not a string.";

/// Fixtures as `fake(false)`, except that refunds are right; in a scenario the model sends the
/// amount as a string unless the catalog says it is an integer, repeats the refused call once
/// (no recovery), then gives up in text.
fn scenario_fake() -> impl Fn(&support::FakeRequest) -> FakeResponse + Send + Sync {
    let fixtures = fake(false);
    move |req| {
        let text = last_user_message(req).unwrap_or_default();
        if !text.starts_with("[sc-") {
            if text.contains("refund") {
                return FakeResponse::ok(tool_call_body(&[(
                    "refund",
                    r#"{"amount_minor": 1250}"#,
                )]));
            }
            return fixtures(req);
        }
        let results: Vec<&Value> = req.body["messages"]
            .as_array()
            .map(|m| m.iter().filter(|m| m["role"] == "tool").collect())
            .unwrap_or_default();
        let told = req.body["tools"].to_string().contains(INTEGER);
        FakeResponse::ok(match results.len() {
            0 if told => tool_call_body(&[("refund", r#"{"amount_minor": 1250}"#)]),
            0 => tool_call_body(&[("refund", r#"{"amount_minor": "1250"}"#)]),
            1 if results[0]["content"]
                .to_string()
                .contains("Invalid arguments") =>
            {
                tool_call_body(&[("refund", r#"{"amount_minor": "1250"}"#)])
            }
            1 => support::text_body("Refunded."),
            _ => support::text_body("I could not refund it."),
        })
    }
}

#[test]
fn scenarios_tuned_with_the_dataset_are_diagnosed_raced_and_held_out_like_cases() {
    let server = FakeServer::start_in_background(scenario_fake());
    let dir = scenario_project(&server, &[]);
    let r = tune(
        dir.path(),
        &[WITH_SCENARIOS, &["--budget-trials", "3000"]].concat(),
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let t = support::read_json(&dir.path().join("out/t/tune.json"));
    assert_eq!(
        t["split"]["training_scenarios"],
        serde_json::json!(["sc-a", "sc-b"])
    );
    assert_eq!(t["split"]["holdout_scenarios"], serde_json::json!(["sc-c"]));
    assert_eq!(t["split"]["scenario_method"]["method"], "tagged");

    // The diagnosis: 4 baseline trials of each training scenario, none succeeded; each made
    // one refused call and repeated it, so refund has 8 repeats after an error and 8 missed
    // recoveries; the refused arguments are a wrong_type at amount_minor, seen only there.
    let d = &t["diagnosis"];
    assert_eq!(
        (d["scenario_trials"].as_u64(), d["scenario_passed"].as_u64()),
        (Some(8), Some(0)),
        "{d:#}"
    );
    let refund = &d["trajectories"][0];
    assert_eq!(refund["tool"], "refund");
    assert_eq!(
        (
            refund["calls"].as_u64(),
            refund["repeats_after_error"].as_u64(),
            refund["recovery_chances"].as_u64(),
            refund["recoveries"].as_u64()
        ),
        (Some(16), Some(8), Some(8), Some(0)),
        "{refund:#}"
    );
    let failure = d["arg_failures"]
        .as_array()
        .expect("arg_failures")
        .iter()
        .find(|f| f["tool"] == "refund")
        .expect("the scenarios' refused arguments");
    assert_eq!(
        (
            failure["path"].as_str(),
            failure["kind"].as_str(),
            failure["count"].as_u64()
        ),
        (Some("amount_minor"), Some("wrong_type"), Some(16))
    );
    assert_eq!(failure["scenarios"], serde_json::json!(["sc-a", "sc-b"]));

    // The format edit comes from the scenarios alone (the fixtures' refunds are right), and
    // only the scenarios can show it better: the race measured them.
    let format = t["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .find(|c| c["candidate"]["id"] == "format:refund.amount_minor")
        .expect("a format candidate from the scenarios");
    assert_eq!(format["status"], "better", "{format:#}");
    assert!(
        format["candidate"]["evidence"][0]
            .as_str()
            .unwrap()
            .contains("16 scenario calls answered with a validation error (scenarios sc-a, sc-b)"),
        "{format:#}"
    );
    let suggested: Vec<&str> = t["suggestions"]
        .as_array()
        .expect("suggestions")
        .iter()
        .map(|s| s["rule"].as_str().unwrap())
        .collect();
    assert!(suggested.contains(&"no-recovery"), "{suggested:?}");

    // The held-out scenario reaches the confirmation only; the training ones never do.
    for phase in ["baseline", "race"] {
        assert!(!records(dir.path(), phase).iter().any(|(c, _)| c == "sc-c"));
    }
    let confirm = records(dir.path(), "confirm");
    assert!(confirm.iter().any(|(c, v)| c == "sc-c" && v == "tuned"));
    assert!(!confirm.iter().any(|(c, _)| c == "sc-a" || c == "sc-b"));
    assert_eq!(
        t["confirmation"]["held_out"]["cases"], 4,
        "3 cases and 1 scenario"
    );
    let overlay = support::read_json(
        &dir.path()
            .join("data/variants")
            .join(&variants_written(dir.path())[0]),
    );
    assert!(
        overlay["tools"]["refund"]["properties"]["amount_minor"]
            .as_str()
            .unwrap()
            .contains(INTEGER),
        "{overlay:#}"
    );
    support::assert_guide_quotes(
        "docs/guides/tune-descriptions.md",
        "toolscore tune --dataset data --scenario scen --provider fake",
        &r.stdout,
    );
    assert!(
        r.stdout.contains(
            "`refund` in scenarios (sc-a, sc-b): repeated a call that had failed 8 times; recovered after 0 of 8 error results over 16 calls"
        ),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("0 of 8 training scenario trials succeeded"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("on 3 held-out cases and 1 held-out scenario,"),
        "{}",
        r.stdout
    );
}

#[test]
fn from_reads_a_run_s_scenario_trials_and_a_scenario_on_another_catalog_is_refused() {
    let server = FakeServer::start_in_background(scenario_fake());
    let other = r#"{"tools": [{"name": "refund", "description": "Refund a payment, in cents.",
      "inputSchema": {"type": "object", "properties": {"amount_minor": {"type": "integer"}}}}]}"#;
    let elsewhere = scenario("sc-d", false).replace("catalog: ../data", "catalog: tools.json");
    let dir = scenario_project(
        &server,
        &[
            ("elsewhere/sc-d.yaml", &elsewhere),
            ("elsewhere/tools.json", other),
        ],
    );
    let r = tune(
        dir.path(),
        &["--dataset", "data", "--scenario", "elsewhere/sc-d.yaml"],
    );
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(
        r.stderr.contains(
            "--scenario elsewhere/sc-d.yaml: it shows the model another catalog than dataset `data`"
        ),
        "{}",
        r.stderr
    );
    assert_eq!(server.requests_seen(), 0);

    let run = toolscore(
        dir.path(),
        &[
            "run",
            "--dataset",
            "data",
            "--scenario",
            "scen",
            "--provider",
            "fake",
            "--trials",
            "2",
            "--out",
            "runs",
            "--run-id",
            "weekly",
            "--progress",
            "off",
        ],
    );
    assert!([0, 1].contains(&run.code), "{}", run.transcript());
    let r = tune(
        dir.path(),
        &[
            WITH_SCENARIOS,
            &["--from", "runs/weekly", "--budget-trials", "3000"],
        ]
        .concat(),
    );
    assert!([0, 1, 3].contains(&r.code), "{}", r.transcript());
    let t = support::read_json(&dir.path().join("out/t/tune.json"));
    // The run's two trials of each training scenario, not of the held-out one.
    let d = &t["diagnosis"];
    assert_eq!(d["scenario_trials"], 4, "{d:#}");
    assert_eq!(d["trajectories"][0]["recovery_chances"], 4, "{d:#}");
    assert_eq!(t["baseline"]["trials"], 9 * 2 + 4);
}

#[test]
fn the_provider_flags_of_run_reach_every_request_of_a_tune() {
    let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let seen = std::sync::Arc::clone(&bodies);
    let model = fake(false);
    let server = FakeServer::start_in_background(move |req| {
        seen.lock().expect("lock").push(req.body.clone());
        model(req)
    });
    let dir = fake_project(&server.base_url, TOOLS, &cases(), &[]);
    let r = tune(
        dir.path(),
        &[
            "--max-tokens",
            "77",
            "--tool-choice",
            "required",
            "--budget-trials",
            "400",
        ],
    );
    assert!([0, 1, 3].contains(&r.code), "{}", r.transcript());
    let bodies = bodies.lock().expect("lock");
    assert!(!bodies.is_empty());
    for b in bodies.iter() {
        assert_eq!(b["max_tokens"], 77, "{b}");
        assert_eq!(b["tool_choice"], "required", "{b}");
    }
}

/// The smallest tune is what the guide says: the baseline, then 3 rounds of one candidate
/// (the base wording's rounds come from the baseline) and of the confirmation's two arms. On
/// the project's 51 training and 10 held-out units at 4 trials: 204 + 153 + 60 = 417 (the
/// check once asked for 570, pricing the base's race rounds the baseline already ran).
#[test]
fn the_smallest_tune_is_the_guides_rule() {
    let dir = support::project_copy();
    let args = |budget: &str| {
        vec![
            "tune",
            "--provider",
            "demo-tune",
            "--trials",
            "4",
            "--budget-trials",
            budget,
            "--progress",
            "off",
            "--out",
            "out",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect::<Vec<_>>()
    };
    let short = args("416");
    let r = toolscore(
        dir.path(),
        &short.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(
        r.stderr.contains("--budget-trials 416 cannot pay for the smallest tune: 417 trials (204 for the baseline; 153 for 3 rounds of one candidate on the 51 training units (cases, and scenarios when given), the base wording's rounds taken from the baseline; 60 for 3 rounds of the confirmation on the 10 held-out ones"),
        "{}",
        r.stderr
    );
    assert!(!dir.path().join("out").exists(), "nothing written");
}

/// Before anything is spent, a held-out set too small to ever confirm "no difference" is said
/// so, with what would be enough; after the baseline, one too small at the disagreement its
/// trials showed (a model that picks a job question's tool at random).
#[test]
fn the_confirmation_is_planned_before_the_trials_are_spent() {
    let server = FakeServer::start_in_background(fake(false));
    let dir = fake_project(&server.base_url, TOOLS, &cases(), &[]);
    let r = tune(dir.path(), &[]);
    let note = r
        .stderr
        .lines()
        .find(|l| l.starts_with("note: the held-out set cannot confirm"))
        .unwrap_or_else(|| panic!("no plan: {}", r.transcript()));
    assert!(
        note.contains(
            "3 held-out units × --max-rounds 20 = 60 pairs, and ruling out ±0.1 takes at least "
        ) && note.contains(" even if every pair agrees; "),
        "{note}"
    );
    let plan = &support::read_json(&dir.path().join("out/t/tune.json"))["confirmation_plan"];
    let needed = plan["pairs_needed"].as_u64().expect("pairs");
    assert!(needed > 60, "{plan}");
    assert!(
        note.contains(&format!(
            "; {} held-out units would at --max-rounds 20, or --max-rounds {} with these 3",
            needed.div_ceil(20),
            needed.div_ceil(3)
        )),
        "{note}"
    );
    assert!(r.stdout.contains(&note["note: ".len()..]), "{}", r.stdout);

    // A model that answers each job question with either tool in turn: half of a case's trials
    // choose each, however the requests of different cases interleave, so two trials of a
    // case disagree about half the time and 3 held-out units at 40 rounds cannot keep up. (A
    // turn shared by every case let the interleaving skew a case's split: flaky.)
    let turns = std::sync::Mutex::new(std::collections::HashMap::<String, u64>::new());
    let coin = FakeServer::start_in_background(move |req: &support::FakeRequest| {
        let text = last_user_message(req).unwrap_or_default();
        let body = if text.contains("export") {
            let mut turns = turns.lock().unwrap();
            let turn = turns.entry(text.clone()).or_default();
            *turn += 1;
            if turn.is_multiple_of(2) {
                tool_call_body(&[("job_status", r#"{"job_id": "job_000001"}"#)])
            } else {
                tool_call_body(&[("server_status", "{}")])
            }
        } else {
            fake(false)(req).body
        };
        FakeResponse::ok(body)
    });
    let dir = fake_project(&coin.base_url, TOOLS, &cases(), &[]);
    let r = toolscore(
        dir.path(),
        &[
            "tune",
            "--provider",
            "fake",
            "--trials",
            "6",
            "--max-rounds",
            "40",
            "--budget-trials",
            "300",
            "--out",
            "out",
            "--tune-id",
            "t",
            "--progress",
            "off",
        ],
    );
    assert!(
        r.stderr.contains("note: the held-out set is unlikely to confirm \"no difference\": 3 held-out units × --max-rounds 40 = 120 pairs, and ruling out ±0.1 takes about "),
        "{}",
        r.transcript()
    );
    assert!(
        r.stderr
            .contains("% of pairs disagree, as the baseline's trials did")
    );
}

/// `explain TUNE/race CASE` shows each candidate's wording as its arm read it, from the overlay
/// the race recorded (in the tune's `candidates/`, not the dataset's `variants/`).
#[test]
fn a_race_is_explained_with_the_candidates_wording() {
    let server = FakeServer::start_in_background(fake(false));
    let dir = fake_project(&server.base_url, TOOLS, &cases(), &[]);
    let r = tune(dir.path(), &["--budget-trials", "1500"]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    // Every candidate the race ran, one at a time; the disambiguating one says PHRASE.
    let candidates: Vec<String> = std::fs::read_dir(dir.path().join("out/t/candidates"))
        .expect("candidates")
        .map(|e| e.expect("entry").path())
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_owned()))
        .filter(|n| n.starts_with("candidate-"))
        .collect();
    assert!(candidates.len() >= 2, "{candidates:?}");
    let mut said = 0;
    for c in &candidates {
        let text = toolscore(dir.path(), &["explain", "out/t/race", "j1", "--arm", c]);
        assert_eq!(text.code, 0, "{}", text.transcript());
        assert!(
            !text.stdout.contains("not available"),
            "{c}: {}",
            text.stdout
        );
        said += usize::from(text.stdout.contains(PHRASE));
    }
    assert_eq!(said, 1, "one candidate disambiguates");
}

/// tune against models that follow a rule: one that matches words, one blind to descriptions.
mod word_matching;
