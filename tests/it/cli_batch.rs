//! `run --batch` through the binary, against fakes of the three batch APIs
//! (tests/support/fake_batch.rs): the same answers as an online run, partial failures counted
//! apart as infrastructure errors, requests left out reported as not run and picked up by
//! `--resume`, expired batches, a process killed while polling resumed without a second
//! submission, and the refusals.

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::fake_batch::{BatchApi, BatchScript, FakeBatch};
use support::{FAKE_KEY, Run, toolscore_env};

/// The two cases of examples/batch/weather. The fakes always call get_weather for Paris:
/// `paris` passes, `thanks` fails.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("data")).expect("mkdir");
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/batch/weather");
    for file in ["tools.json", "cases.jsonl"] {
        std::fs::copy(shipped.join(file), dir.path().join("data").join(file)).expect("copy");
    }
    dir
}

/// `--provider` and `--base-url` for each API's fake.
fn provider_args(api: BatchApi, fake: &FakeBatch) -> Vec<String> {
    let addr = fake.server.addr;
    let (provider, base) = match api {
        BatchApi::OpenAi => ("openai-compat".to_owned(), format!("http://{addr}/v1")),
        BatchApi::Anthropic => (
            "anthropic:claude-sonnet-4-5".to_owned(),
            format!("http://{addr}/v1"),
        ),
        BatchApi::Gemini => (
            "gemini:gemini-2.5-flash".to_owned(),
            format!("http://{addr}/v1beta"),
        ),
    };
    let mut args = vec!["--provider".to_owned(), provider, "--base-url".into(), base];
    if api == BatchApi::OpenAi {
        args.extend(["--model".into(), "gpt-4o-mini".into()]);
    }
    args
}

fn run_args(api: BatchApi, fake: &FakeBatch, trials: u32, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "run",
        "--dataset",
        "data",
        "--out",
        "out",
        "--progress",
        "off",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    args.extend(provider_args(api, fake));
    args.extend([
        "--api-key-env".into(),
        "FAKE_BATCH_KEY".into(),
        "--trials".into(),
        trials.to_string(),
        "--max-retries".into(),
        "0".into(),
    ]);
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args
}

fn toolscore(dir: &Path, args: &[String]) -> Run {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    toolscore_env(dir, &refs, &[("FAKE_BATCH_KEY", FAKE_KEY)])
}

fn records(dir: &Path, run: &str) -> Vec<Value> {
    support::read_jsonl(&dir.join("out").join(run).join("results.jsonl"))
}

/// (case, trial) → record.
fn by_trial(records: &[Value]) -> BTreeMap<(String, u64), Value> {
    records
        .iter()
        .map(|r| {
            (
                (
                    r["case_id"].as_str().unwrap_or("").to_owned(),
                    r["trial_index"].as_u64().unwrap_or(0),
                ),
                r.clone(),
            )
        })
        .collect()
}

fn summary(dir: &Path, run: &str) -> Value {
    support::read_json(&dir.join("out").join(run).join("summary.json"))
}

fn batch_file(dir: &Path, run: &str) -> Value {
    support::read_json(&dir.join("out").join(run).join("batches.json"))
}

#[test]
fn openai_batch_scores_what_the_online_run_scores() {
    equal_runs(BatchApi::OpenAi, "openai");
}

#[test]
fn openai_responses_batch_scores_what_the_online_run_scores() {
    equal_runs_as(BatchApi::OpenAi, "openai", Some("openai-responses"));
}

#[test]
fn anthropic_batch_scores_what_the_online_run_scores() {
    equal_runs(BatchApi::Anthropic, "anthropic");
}

#[test]
fn gemini_batch_scores_what_the_online_run_scores() {
    equal_runs(BatchApi::Gemini, "gemini");
}

/// A batch run scores exactly what an online run against the same fake scores, trial by
/// trial, with each record naming its batch and no latency counted.
fn equal_runs(api: BatchApi, api_name: &str) {
    equal_runs_as(api, api_name, None);
}

/// [`equal_runs`] with another provider kind on the same fake (`openai-responses` on OpenAI's).
fn equal_runs_as(api: BatchApi, api_name: &str, kind: Option<&str>) {
    let fake = FakeBatch::start(
        api,
        BatchScript {
            polls_before_end: 2,
            ..Default::default()
        },
    );
    let args = |extra: &[&str]| {
        let mut args = run_args(api, &fake, 3, extra);
        if let Some(kind) = kind
            && let Some(i) = args.iter().position(|a| a == "--provider")
        {
            args[i + 1] = kind.to_owned();
        }
        args
    };
    let dir = project();
    // Half the cases fail by design: no gate, so both runs exit 0.
    let online = toolscore(dir.path(), &args(&["--run-id", "online"]));
    assert_eq!(online.code, 0, "{}", online.transcript());
    let batch = toolscore(
        dir.path(),
        &args(&["--run-id", "batch", "--batch", "--batch-poll", "10ms"]),
    );
    assert_eq!(batch.code, 0, "{}", batch.transcript());
    assert!(
        batch
            .stderr
            .contains(&format!("batch: submitted {api_name} ")),
        "{}",
        batch.stderr
    );
    assert!(batch.stderr.contains(": 6 requests"), "{}", batch.stderr);
    fake.with(|s| {
        assert_eq!(s.submissions, 1);
        assert!(s.polls >= 3, "polled until it ended: {}", s.polls);
        let mut sent = s.submitted[0].clone();
        sent.sort();
        assert_eq!(
            sent,
            [
                "t0-a0-c0", "t0-a0-c1", "t1-a0-c0", "t1-a0-c1", "t2-a0-c0", "t2-a0-c1"
            ]
        );
    });

    let online = by_trial(&records(dir.path(), "online"));
    let batched = by_trial(&records(dir.path(), "batch"));
    assert_eq!(online.len(), 6);
    assert_eq!(
        online.keys().collect::<Vec<_>>(),
        batched.keys().collect::<Vec<_>>()
    );
    for (key, o) in &online {
        let b = &batched[key];
        for field in [
            "outcome",
            "turns",
            "usage",
            "score",
            "request_hash",
            "expected",
        ] {
            assert_eq!(o[field], b[field], "{key:?} {field}");
        }
        assert!(o.get("batch").is_none());
        if let Some(kind) = kind {
            assert_eq!(b["provider"], kind, "{b}");
        }
        assert_eq!(b["batch"]["api"], api_name, "{b}");
        assert!(b["batch"]["id"].as_str().is_some_and(|id| !id.is_empty()));
        assert_eq!(b["latency_ms"], 0.0);
        // A priced model is billed at the table's batch price: half the online cost.
        if api == BatchApi::Anthropic {
            assert!(
                o["cost"]["usd"].is_f64(),
                "claude-sonnet-4-5 is in the price table: {o}"
            );
        }
        if let Some(online_usd) = o["cost"]["usd"].as_f64() {
            let batch_usd = b["cost"]["usd"]
                .as_f64()
                .expect("a batch trial has a cost too");
            assert!(
                (batch_usd - online_usd * 0.5).abs() < 1e-12,
                "{online_usd} online, {batch_usd} in a batch"
            );
            assert!(
                b["cost"]["price_source"]
                    .as_str()
                    .is_some_and(|s| s.ends_with("at the batch price (-50%)")),
                "{b}"
            );
        }
    }
    let outcomes: Vec<&str> = batched
        .values()
        .map(|r| r["outcome"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(outcomes, ["pass", "pass", "pass", "fail", "fail", "fail"]);

    let (o, b) = (summary(dir.path(), "online"), summary(dir.path(), "batch"));
    assert_eq!(o["arms"][0]["suite"], b["arms"][0]["suite"]);
    assert_eq!(o["arms"][0]["cases"], b["arms"][0]["cases"]);
    assert_eq!(
        b["arms"][0]["latency_ms"]["n"], 0,
        "a batch measures no latency"
    );
    assert!(
        batch_file(dir.path(), "batch")["batches"][0]["collected"]
            .as_bool()
            .unwrap_or(false)
    );
    for entry in std::fs::read_dir(dir.path().join("out/batch")).expect("run folder") {
        let text = std::fs::read_to_string(entry.expect("entry").path()).expect("read");
        assert!(!text.contains(FAKE_KEY), "the key is in the run folder");
    }
    assert!(!batch.stderr.contains(FAKE_KEY) && !batch.stdout.contains(FAKE_KEY));
}

/// Error classes of the records, by (case, trial).
fn error_classes(dir: &Path, run: &str) -> BTreeMap<(String, u64), Option<String>> {
    by_trial(&records(dir, run))
        .into_iter()
        .map(|(k, r)| (k, r["error_class"].as_str().map(str::to_owned)))
        .collect()
}

fn key(case: &str, trial: u64) -> (String, u64) {
    (case.to_owned(), trial)
}

#[test]
fn openai_partial_failures_are_infrastructure_errors_and_missing_answers_are_not_run() {
    let fake = FakeBatch::start(
        BatchApi::OpenAi,
        BatchScript {
            fail: ["t1-a0-c0".to_owned()].into(),
            drop: ["t2-a0-c1".to_owned()].into(),
            ..Default::default()
        },
    );
    let dir = project();
    let args = run_args(
        BatchApi::OpenAi,
        &fake,
        3,
        &[
            "--run-id",
            "partial",
            "--batch",
            "--batch-poll",
            "10ms",
            "--max-infra-error-rate",
            "0.5",
        ],
    );
    let run = toolscore(dir.path(), &args);
    // One trial never came back: the run did not account for every planned trial.
    assert_eq!(run.code, 4, "{}", run.transcript());
    assert!(
        run.stderr
            .contains("1 requests came back without an answer"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("1 trials were not run: their batch returned no answer"),
        "{}",
        run.stderr
    );
    let classes = error_classes(dir.path(), "partial");
    assert_eq!(classes.len(), 5, "the dropped trial has no record");
    assert!(!classes.contains_key(&key("thanks", 2)));
    assert_eq!(classes[&key("paris", 1)].as_deref(), Some("server_error"));
    assert_eq!(
        classes.values().filter(|c| c.is_some()).count(),
        1,
        "{classes:?}"
    );
    let s = summary(dir.path(), "partial");
    assert_eq!(
        s["arms"][0]["infra"]["errors"], 1,
        "{}",
        s["arms"][0]["infra"]
    );
    assert_eq!(s["completed_trials"], 5);

    // Resumed: only the errored and the missing trial go in a new batch.
    fake.with(|s| {
        s.fail.clear();
        s.drop.clear();
    });
    let mut args = run_args(
        BatchApi::OpenAi,
        &fake,
        3,
        &["--batch", "--batch-poll", "10ms", "--resume", "out/partial"],
    );
    args.retain(|a| a != "--run-id" && a != "partial");
    let resumed = toolscore(dir.path(), &args);
    assert_eq!(resumed.code, 0, "{}", resumed.transcript());
    fake.with(|s| {
        assert_eq!(s.submissions, 2);
        let mut second = s.submitted[1].clone();
        second.sort();
        assert_eq!(second, ["t1-a0-c0", "t2-a0-c1"]);
    });
    let classes = error_classes(dir.path(), "partial");
    assert_eq!(classes.len(), 6);
    assert!(classes.values().all(Option::is_none), "{classes:?}");
    let file = batch_file(dir.path(), "partial");
    assert_eq!(file["batches"].as_array().map(Vec::len), Some(2));
}

#[test]
fn anthropic_errored_and_expired_results_are_classed_apart() {
    let fake = FakeBatch::start(
        BatchApi::Anthropic,
        BatchScript {
            fail: ["t0-a0-c1".to_owned()].into(),
            expire: true,
            // Results list the requests in reverse; the last two sent expired.
            answered_before_expiry: 4,
            ..Default::default()
        },
    );
    let dir = project();
    let run = toolscore(
        dir.path(),
        &run_args(
            BatchApi::Anthropic,
            &fake,
            3,
            &["--run-id", "expired", "--batch", "--batch-poll", "10ms"],
        ),
    );
    // Three of six trials ended in infrastructure errors, over the 10% limit.
    assert_eq!(run.code, 4, "{}", run.transcript());
    assert!(
        run.stderr
            .contains("3 of 6 trials ended in infrastructure errors"),
        "{}",
        run.stderr
    );
    let classes = error_classes(dir.path(), "expired");
    assert_eq!(classes.len(), 6);
    let sent = fake.with(|s| s.submitted[0].clone());
    for (i, id) in sent.iter().enumerate() {
        let k = parse(id);
        let want = if i >= 4 {
            Some("batch_expired")
        } else if id == "t0-a0-c1" {
            Some("server_error")
        } else {
            None
        };
        assert_eq!(classes[&k].as_deref(), want, "{id}");
    }
    let s = summary(dir.path(), "expired");
    let by_class = &s["arms"][0]["infra"]["by_class"];
    assert_eq!(by_class["batch_expired"], 2, "{by_class}");
    assert_eq!(by_class["server_error"], 1, "{by_class}");
    // Errors are never scored: the rates count the three answered trials only.
    let scored: u64 = records(dir.path(), "expired")
        .iter()
        .filter(|r| r["outcome"] != "error")
        .count() as u64;
    assert_eq!(scored, 3);
}

/// `t{trial}-a0-c{case}` → (case id, trial).
fn parse(id: &str) -> (String, u64) {
    let (trial, rest) = id[1..].split_once("-a0-c").expect("custom id");
    let case = if rest == "0" { "paris" } else { "thanks" };
    key(case, trial.parse().expect("trial"))
}

#[test]
fn gemini_failed_requests_and_an_expired_batch() {
    let fake = FakeBatch::start(
        BatchApi::Gemini,
        BatchScript {
            fail: ["t1-a0-c1".to_owned()].into(),
            ..Default::default()
        },
    );
    let dir = project();
    let run = toolscore(
        dir.path(),
        &run_args(
            BatchApi::Gemini,
            &fake,
            3,
            &[
                "--run-id",
                "partial",
                "--batch",
                "--batch-poll",
                "10ms",
                "--max-infra-error-rate",
                "0.5",
            ],
        ),
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let classes = error_classes(dir.path(), "partial");
    assert_eq!(classes[&key("thanks", 1)].as_deref(), Some("rate_limited"));
    assert_eq!(classes.values().filter(|c| c.is_some()).count(), 1);

    // A batch that expires with no answers: every trial is a batch_expired error.
    let fake = FakeBatch::start(
        BatchApi::Gemini,
        BatchScript {
            expire: true,
            ..Default::default()
        },
    );
    let run = toolscore(
        dir.path(),
        &run_args(
            BatchApi::Gemini,
            &fake,
            2,
            &["--run-id", "expired", "--batch", "--batch-poll", "10ms"],
        ),
    );
    assert_eq!(run.code, 4, "{}", run.transcript());
    assert!(run.stderr.contains("BATCH_STATE_EXPIRED"), "{}", run.stderr);
    let classes = error_classes(dir.path(), "expired");
    assert_eq!(classes.len(), 4);
    assert!(
        classes
            .values()
            .all(|c| c.as_deref() == Some("batch_expired")),
        "{classes:?}"
    );
}

#[test]
fn a_run_killed_while_polling_resumes_the_same_batch() {
    let fake = held_batch(BatchApi::Anthropic);
    let dir = project();
    let args = run_args(
        BatchApi::Anthropic,
        &fake,
        3,
        &["--run-id", "killed", "--batch", "--batch-poll", "20ms"],
    );
    let mut child = support::toolscore_command()
        .current_dir(dir.path())
        .args(&args)
        .env("FAKE_BATCH_KEY", FAKE_KEY)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(60);
    while fake.with(|s| s.polls) < 3 {
        assert!(Instant::now() < deadline, "the run never polled");
        assert!(
            child.try_wait().expect("wait").is_none(),
            "the run ended while the batch ran"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    let file = batch_file(dir.path(), "killed");
    let id = file["batches"][0]["id"]
        .as_str()
        .expect("batch id kept")
        .to_owned();
    assert_eq!(file["batches"][0]["collected"], false);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out/killed/results.jsonl")).expect("results"),
        "",
        "nothing is scored before the batch ends"
    );

    // Resumed without --batch, the trials would be paid for twice: refused, nothing changed.
    let mut online = run_args(BatchApi::Anthropic, &fake, 3, &["--resume", "out/killed"]);
    online.retain(|a| a != "--run-id" && a != "killed");
    let refused = toolscore(dir.path(), &online);
    assert_eq!(refused.code, 2, "{}", refused.transcript());
    assert!(
        refused.stderr.contains(&format!(
            "its batches {id} were submitted and not collected yet; resume with --batch"
        )),
        "{}",
        refused.stderr
    );

    let resumed = release_and_resume(&fake, BatchApi::Anthropic, dir.path(), "killed", 3, &id);
    assert!(
        resumed
            .stderr
            .contains("batch: 6 trials are in batches submitted earlier; polling those"),
        "{}",
        resumed.stderr
    );
    assert!(
        records(dir.path(), "killed")
            .iter()
            .all(|r| r["outcome"] != "error")
    );
}

/// A fake batch API whose batches run until the test lets them end (`hold = false`).
fn held_batch(api: BatchApi) -> FakeBatch {
    FakeBatch::start(
        api,
        BatchScript {
            hold: true,
            ..Default::default()
        },
    )
}

/// Lets the held batch end, resumes run `run` with --batch, and checks it collected the same
/// batch `id`, every trial of it, with no second submission.
fn release_and_resume(
    fake: &FakeBatch,
    api: BatchApi,
    dir: &Path,
    run: &str,
    trials: u32,
    id: &str,
) -> Run {
    fake.with(|s| s.hold = false);
    let resume_dir = format!("out/{run}");
    let mut args = run_args(
        api,
        fake,
        trials,
        &["--batch", "--batch-poll", "20ms", "--resume", &resume_dir],
    );
    args.retain(|a| a != "--run-id" && a != run);
    let resumed = toolscore(dir, &args);
    assert_eq!(resumed.code, 0, "{}", resumed.transcript());
    fake.with(|s| assert_eq!(s.submissions, 1, "no second submission"));
    let recs = records(dir, run);
    assert_eq!(
        recs.len(),
        2 * trials as usize,
        "every trial of the two cases"
    );
    assert!(recs.iter().all(|r| r["batch"]["id"] == id));
    resumed
}

#[test]
fn polling_stops_at_the_max_wait_and_a_resume_collects_the_same_batch() {
    let fake = held_batch(BatchApi::OpenAi);
    let dir = project();
    let waited = std::time::Instant::now();
    let run = toolscore(
        dir.path(),
        &run_args(
            BatchApi::OpenAi,
            &fake,
            2,
            &[
                "--run-id",
                "slow",
                "--batch",
                "--batch-poll",
                "20ms",
                "--batch-max-wait",
                "300ms",
            ],
        ),
    );
    assert_eq!(run.code, 4, "{}", run.transcript());
    assert!(waited.elapsed() < Duration::from_secs(30));
    let file = batch_file(dir.path(), "slow");
    let id = file["batches"][0]["id"]
        .as_str()
        .expect("batch id kept")
        .to_owned();
    assert_eq!(file["batches"][0]["collected"], false);
    assert!(
        run.stderr.contains(&format!(
            "batches {id} have not ended after 300ms (--batch-max-wait); they keep running at the provider"
        )),
        "{}",
        run.stderr
    );
    let polls = fake.with(|s| s.polls);
    assert!(
        (2..=40).contains(&polls),
        "{polls} polls in 300 ms at 20 ms"
    );

    release_and_resume(&fake, BatchApi::OpenAi, dir.path(), "slow", 2, &id);
}

#[test]
fn what_a_batch_cannot_run_is_refused_before_anything_is_sent() {
    let fake = FakeBatch::start(BatchApi::OpenAi, BatchScript::default());
    let dir = project();
    let cases = [
        (
            vec!["--provider", "ollama:qwen3", "--batch"],
            "has no batch API toolscore can use: ollama has no batch API",
        ),
        (
            vec![
                "--provider",
                "openai-compat",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "m",
                "--batch",
                "--gate",
                "selection>=0.5",
                "--gate-level",
                "case",
                "--sequential",
            ],
            "--batch cannot be used with --sequential",
        ),
        (
            vec![
                "--provider",
                "openai-compat",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "m",
                "--batch",
                "--gate",
                "p95_ms<=500",
            ],
            "--batch cannot be used with a latency --gate",
        ),
        (
            vec![
                "--provider",
                "openai-compat",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "m",
                "--batch-poll",
                "1s",
            ],
            "--batch-poll needs --batch",
        ),
        (
            vec![
                "--provider",
                "openai-compat",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "m",
                "--batch",
                "--batch-poll",
                "soon",
            ],
            "--batch-poll soon: expected a duration",
        ),
        (
            vec![
                "--provider",
                "openai-compat",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "m",
                "--batch-max-wait",
                "1h",
            ],
            "--batch-max-wait needs --batch",
        ),
        (
            vec![
                "--provider",
                "openai-compat",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "m",
                "--batch",
                "--batch-max-wait",
                "0s",
            ],
            "--batch-max-wait 0s: expected a duration",
        ),
    ];
    for (extra, message) in cases {
        let mut args: Vec<&str> = vec!["run", "--dataset", "data", "--out", "out"];
        args.extend(extra);
        let run = toolscore_env(dir.path(), &args, &[]);
        assert_eq!(run.code, 2, "{}", run.transcript());
        assert!(run.stderr.contains(message), "{message}\n{}", run.stderr);
        assert!(!dir.path().join("out").exists(), "nothing written");
    }
    // A multi-step scenario: refused by name.
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/no-tool-needed.yaml");
    let scenario = scenario.display().to_string();
    let run = toolscore_env(
        dir.path(),
        &[
            "run",
            "--scenario",
            &scenario,
            "--provider",
            "openai-compat",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--batch",
        ],
        &[],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr
            .contains("--batch runs single-step fixtures; scenario"),
        "{}",
        run.stderr
    );
    assert_eq!(fake.with(|s| s.submissions + s.polls), 0);
}

#[test]
fn an_interrupt_while_polling_exits_130_and_a_refused_key_submits_nothing() {
    let fake = held_batch(BatchApi::OpenAi);
    let dir = project();
    let args = run_args(
        BatchApi::OpenAi,
        &fake,
        2,
        &["--run-id", "interrupted", "--batch", "--batch-poll", "20ms"],
    );
    let child = support::toolscore_command()
        .current_dir(dir.path())
        .args(&args)
        .env("FAKE_BATCH_KEY", FAKE_KEY)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(60);
    while fake.with(|s| s.polls) < 2 {
        assert!(Instant::now() < deadline, "the run never polled");
        std::thread::sleep(Duration::from_millis(10));
    }
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(sent.success());
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted; the submitted batches keep running at their providers"),
        "{stderr}"
    );
    assert_eq!(
        batch_file(dir.path(), "interrupted")["batches"][0]["collected"],
        false
    );

    // A key the provider refuses: the upload fails, nothing is submitted, the key is not shown.
    let args = run_args(
        BatchApi::OpenAi,
        &fake,
        2,
        &["--run-id", "refused", "--batch"],
    );
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = toolscore_env(
        dir.path(),
        &refs,
        &[("FAKE_BATCH_KEY", "a-revoked-key-material")],
    );
    assert_eq!(run.code, 4, "{}", run.transcript());
    assert!(
        run.stderr
            .contains("submitting a batch of 4 requests to provider `openai-compat`: auth"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("revoked-key-material"),
        "{}",
        run.stderr
    );
    assert_eq!(fake.with(|s| s.submissions), 1);
}

#[test]
fn each_arm_gets_its_own_batch_and_its_own_answers() {
    let fake = FakeBatch::start(BatchApi::Anthropic, BatchScript::default());
    let dir = project();
    let args = run_args(
        BatchApi::Anthropic,
        &fake,
        2,
        &[
            "--provider",
            "anthropic:claude-haiku-4-5",
            "--run-id",
            "arms",
            "--batch",
            "--batch-poll",
            "10ms",
        ],
    );
    // run_args names the first arm; the second is added above.
    assert_eq!(args.iter().filter(|a| *a == "--provider").count(), 2);
    let run = toolscore(dir.path(), &args);
    assert_eq!(run.code, 0, "{}", run.transcript());
    fake.with(|s| {
        assert_eq!(s.submissions, 2);
        assert!(s.submitted[0].iter().all(|id| id.contains("-a0-")));
        assert!(s.submitted[1].iter().all(|id| id.contains("-a1-")));
    });
    let file = batch_file(dir.path(), "arms");
    let owner: BTreeMap<String, String> = file["batches"]
        .as_array()
        .expect("batches")
        .iter()
        .map(|b| {
            (
                b["id"].as_str().unwrap_or("").to_owned(),
                b["provider"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(owner.len(), 2);
    let recs = records(dir.path(), "arms");
    assert_eq!(recs.len(), 8);
    for r in &recs {
        let id = r["batch"]["id"].as_str().expect("batch id");
        assert_eq!(r["provider"].as_str(), Some(owner[id].as_str()), "{r}");
    }
}
