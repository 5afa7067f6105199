//! Cost and `--max-cost` through the real binary against the fake providers: each record's
//! cost is its usage times the price (the shipped table, or `prices:` in toolscore.yaml, which
//! wins), the summary adds them up per case, arm and run, the estimate is printed before the
//! first request, a cap below the estimate refuses the run with nothing written, a cap reached
//! mid-run stops starting trials (the rest reported as not run, never as failures), and a
//! model without a price costs "unknown", never 0.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::*;

const TOOLS: &str = r#"{"tools": [{"name": "get_weather", "description": "Get the current weather in a given location",
  "inputSchema": {"type": "object", "properties": {"location": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["location"]}}]}"#;

/// The fake Anthropic answers the first with a call (412 uncached + 1830 cache-read input
/// tokens, 71 output) and the second, whose tool result is in, with text (520 in, 14 out).
const CASES: &str = r#"{"id": "weather", "messages": [{"role": "user", "content": "What's the weather in Paris?"}], "expect": {"tool": "get_weather", "args": {"location": "Paris, France"}}}
{"id": "after-result", "messages": [{"role": "user", "content": "What's the weather in Berlin?"}, {"role": "assistant", "content": "Checking.", "tool_calls": [{"id": "call_fx1", "name": "get_weather", "arguments": {"location": "Berlin"}}]}, {"role": "tool", "call_id": "call_fx1", "content": "9 degrees"}], "expect": {"tool": null}}
"#;

fn project(config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("data")).expect("mkdir");
    std::fs::write(dir.path().join("data/tools.json"), TOOLS).expect("tools");
    std::fs::write(dir.path().join("data/cases.jsonl"), CASES).expect("cases");
    std::fs::write(dir.path().join("toolscore.yaml"), config).expect("config");
    dir
}

fn run_dir(dir: &Path) -> PathBuf {
    support::only_run_dir(&dir.join("out"))
}

fn records(dir: &Path) -> Vec<Value> {
    support::read_jsonl(&run_dir(dir).join("results.jsonl"))
}

fn summary(dir: &Path) -> Value {
    support::read_json(&run_dir(dir).join("summary.json"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

/// `toolscore run` on the project's data, 3 trials per case, with extra flags.
fn run(dir: &Path, provider: &str, extra: &[&str], env: &[(&str, &str)]) -> Run {
    let mut args = vec![
        "run",
        "--provider",
        provider,
        "--dataset",
        "data",
        "--out",
        "out",
        "--progress",
        "off",
    ];
    args.extend(extra);
    toolscore_env(dir, &args, env)
}

/// Per trial of each case, at $3 in, $0.30 cache read, $15 out per million (claude-sonnet-4-5
/// in LiteLLM's model map, the snapshot built in): 412·3 + 1830·0.30 + 71·15 = 2850 µ$, and 520·3 + 14·15 = 1770 µ$.
const WEATHER_USD: f64 = 2850e-6;
const AFTER_RESULT_USD: f64 = 1770e-6;

#[test]
fn cost_in_records_and_summary_is_usage_times_the_table_price() {
    let server = FakeServer::start_in_background(anthropic_model);
    let dir = project("datasets: []\n");
    let base = format!("http://{}/v1", server.addr);
    let r = run(
        dir.path(),
        "anthropic:claude-sonnet-4-5",
        &["--base-url", &base, "--trials", "3", "--max-tokens", "100"],
        &[("ANTHROPIC_API_KEY", FAKE_KEY)],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    // The estimate comes before the first request, with its price's source.
    assert!(
        r.stderr
            .contains("estimated cost before the first request: $"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("for 6 trials"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("output at its max_tokens, 100 per request"),
        "{}",
        r.stderr
    );
    let records = records(dir.path());
    assert_eq!(records.len(), 6);
    for rec in &records {
        let want = if rec["case_id"] == "weather" {
            WEATHER_USD
        } else {
            AFTER_RESULT_USD
        };
        let usd = rec["cost"]["usd"].as_f64().expect("a priced record");
        assert!(close(usd, want), "{usd} != {want}: {rec}");
        assert_eq!(rec["cost"]["price"]["input"], 3.0);
        assert_eq!(rec["cost"]["price"]["cache_read"], 0.3);
        let source = rec["cost"]["price_source"].as_str().unwrap();
        assert_eq!(
            source,
            "LiteLLM model map 1.110.2 of 2026-12-08 (claude-sonnet-4-5)"
        );
    }
    let s = summary(dir.path());
    let cost = &s["cost"];
    let total = 3.0 * WEATHER_USD + 3.0 * AFTER_RESULT_USD;
    assert!(close(cost["usd"].as_f64().unwrap(), total), "{cost}");
    assert_eq!(cost["trials"], 6);
    assert_eq!(cost["priced_trials"], 6);
    assert_eq!(cost["cache_read_tokens"], 3 * 1830);
    assert_eq!(cost["output_tokens"], 3 * 71 + 3 * 14);
    let arm = &cost["arms"][0];
    assert_eq!(arm["arm"]["provider"], "anthropic:claude-sonnet-4-5");
    assert!(close(arm["usd"].as_f64().unwrap(), total));
    assert!(close(arm["usd_per_trial"].as_f64().unwrap(), total / 6.0));
    let case = |id: &str| {
        arm["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["case_id"] == id)
            .unwrap()["usd"]
            .as_f64()
            .unwrap()
    };
    assert!(close(case("weather"), 3.0 * WEATHER_USD));
    assert!(close(case("after-result"), 3.0 * AFTER_RESULT_USD));
    assert!(s["budget"]["estimate_usd"].as_f64().unwrap() > 0.0);
    // results.csv carries each trial's cost in its last column.
    let csv = std::fs::read_to_string(run_dir(dir.path()).join("results.csv")).unwrap();
    assert!(csv.lines().next().unwrap().ends_with(",model,cost_usd"));
    let csv_total: f64 = csv
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().parse::<f64>().unwrap())
        .sum();
    assert!(close(csv_total, total), "{csv_total}");
    assert_eq!(s["budget"]["cut_short"], false);
    // The terminal report shows the arm's and the run's cost.
    assert!(
        r.stdout
            .contains("cost: $0.0139 over 6 trials ($0.00231 per trial) at LiteLLM model map 1.110.2 of 2026-12-08 (claude-sonnet-4-5)"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("cost of the run: $0.0139 over 6 trials"),
        "{}",
        r.stdout
    );
    // results.jsonl alone re-aggregates into the same figures.
    let again = toolscore(
        dir.path(),
        &["report", run_dir(dir.path()).to_str().unwrap()],
    );
    assert_eq!(again.code, 0, "{}", again.transcript());
    assert!(
        again
            .stdout
            .contains("cost of the run: $0.0139 over 6 trials"),
        "{}",
        again.stdout
    );
}

#[test]
fn a_price_in_the_config_wins_over_the_table() {
    let server = FakeServer::start_in_background(anthropic_model);
    let base = format!("http://{}/v1", server.addr);
    let dir = project(&format!(
        "providers:\n  claude:\n    kind: anthropic\n    model: claude-sonnet-4-5\n    base_url: {base}\nprices:\n  \"anthropic:claude-sonnet-4-5\": {{input: 1, output: 2, cache_read: 0.5, source: negotiated 2026-11}}\n"
    ));
    let r = run(
        dir.path(),
        "claude",
        &["--trials", "2"],
        &[("ANTHROPIC_API_KEY", FAKE_KEY)],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    // 412·1 + 1830·0.5 + 71·2 = 1469 µ$; 520·1 + 14·2 = 548 µ$.
    for rec in records(dir.path()) {
        let want = if rec["case_id"] == "weather" {
            1469e-6
        } else {
            548e-6
        };
        assert!(close(rec["cost"]["usd"].as_f64().unwrap(), want), "{rec}");
        assert_eq!(
            rec["cost"]["price_source"],
            "toolscore.yaml prices.anthropic:claude-sonnet-4-5 (negotiated 2026-11)"
        );
    }
    let usd = summary(dir.path())["cost"]["usd"].as_f64().unwrap();
    assert!(close(usd, 2.0 * (1469e-6 + 548e-6)), "{usd}");
    // Without max_tokens the estimate says what it assumed.
    assert!(
        r.stderr
            .contains("output assumed 512 tokens per request (set max_tokens for a bound)"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_cap_below_the_estimate_refuses_the_run_and_writes_nothing() {
    let server = FakeServer::start_in_background(anthropic_model);
    let dir = project("datasets: []\n");
    let base = format!("http://{}/v1", server.addr);
    let r = run(
        dir.path(),
        "anthropic:claude-sonnet-4-5",
        &["--base-url", &base, "--trials", "50", "--max-cost", "0.01"],
        &[("ANTHROPIC_API_KEY", FAKE_KEY)],
    );
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(
        r.stderr.contains("for 100 trials") && r.stderr.contains("is over --max-cost $0.0100"),
        "{}",
        r.stderr
    );
    assert!(!dir.path().join("out").exists(), "nothing is written");
    assert_eq!(server.requests_seen(), 0, "nothing is sent");
}

/// A provider that bills every request the most it could: each byte of the body an input
/// token, and the whole `max_tokens` as output.
fn heavy_usage_model(req: &FakeRequest) -> FakeResponse {
    answer_with_usage(req, false, req.raw_body.len() as u64)
}

#[test]
fn the_budget_cap_stops_scheduling_on_time_and_accounts_for_every_trial() {
    let server = FakeServer::start_in_background(heavy_usage_model);
    // $10 per million in and out, billed at the most each request could cost (its body's
    // bytes in, max_tokens out): far more than the estimate from the fixtures' tokens.
    let dir = project(&format!(
        "providers:\n  gateway:\n    kind: openai-compat\n    base_url: {}\n    model: m\n    max_tokens: 10\nprices:\n  gateway: {{input: 10, output: 10}}\n",
        server.base_url
    ));
    let cap = 0.1;
    let r = run(
        dir.path(),
        "gateway",
        &[
            "--trials",
            "20",
            "--concurrency",
            "2",
            "--max-cost",
            "0.1",
            "--format",
            "terminal",
            "--format",
            "md",
            "--format",
            "html",
        ],
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let records = records(dir.path());
    let s = summary(dir.path());
    let completed = records.len() as u64;
    let not_run = s["budget"]["not_run"].as_u64().unwrap();
    assert!((2..40).contains(&completed), "{completed}");
    // Every planned trial is accounted for: run, or not run because of the budget.
    assert_eq!(completed + not_run, 40, "{}", s["budget"]);
    assert_eq!(s["skipped_trials"].as_u64().unwrap(), not_run);
    assert_eq!(s["budget"]["cut_short"], true);
    assert_eq!(s["budget"]["max_usd"], cap);
    // Not run is not failed: every completed trial was scored, none counted as an error.
    assert!(records.iter().all(|r| r["outcome"] == "pass"));
    // No request after the stop: the server saw exactly the trials recorded.
    assert_eq!(server.requests_seen(), completed);
    // Each request was reserved at its worst case before it was sent, so spend stays within
    // the cap even though every request was billed that worst case.
    let spent = s["cost"]["usd"].as_f64().unwrap();
    let recorded: f64 = records
        .iter()
        .map(|r| r["cost"]["usd"].as_f64().unwrap())
        .sum();
    assert!(close(spent, recorded), "{spent} {recorded}");
    assert!(spent <= cap, "spent {spent} over the cap {cap}");
    assert!(
        r.stderr.contains(
            "budget: --max-cost $0.100: the next trials' worst case did not fit in what was left ($"
        ) && r
            .stderr
            .contains("(counted apart, not as failures or infrastructure errors)")
            && r.stderr
                .contains(&format!("{not_run} planned trials were not run")),
        "{}",
        r.stderr
    );
    assert!(
        r.stdout
            .contains("CUT SHORT BY BUDGET: --max-cost $0.100: the next trials' worst case did not fit in what was left ($")
            && r.stdout
                .contains(&format!("; {not_run} planned trials were not run (")),
        "{}",
        r.stdout
    );
    let md = std::fs::read_to_string(run_dir(dir.path()).join("report.md")).expect("report.md");
    assert!(
        md.contains("## Cost")
            && md.contains("**CUT SHORT BY BUDGET**: --max-cost $0.100: the next trials' worst case did not fit in what was left ($")
            && md.contains(&format!("; {not_run} planned trials were not run (")),
        "{md}"
    );
    let html =
        std::fs::read_to_string(run_dir(dir.path()).join("report.html")).expect("report.html");
    assert!(
        html.contains("CUT SHORT BY BUDGET: --max-cost $0.100: the next trials&#x27; worst case did not fit in what was left ($")
            && html.contains(&format!("; {not_run} planned trials were not run (")),
        "the HTML report says so too"
    );
    // `report` reads the budget back from the run folder.
    let again = toolscore(
        dir.path(),
        &["report", run_dir(dir.path()).to_str().unwrap()],
    );
    assert!(
        again.stdout.contains("CUT SHORT BY BUDGET"),
        "{}",
        again.stdout
    );
}

#[test]
fn a_local_model_costs_unknown_unless_the_config_prices_it_and_cannot_be_capped_without() {
    let server = FakeServer::start_in_background(heavy_usage_model);
    // gpt-4.1 is in the table, but a server on this machine is a local model, not OpenAI.
    let config = format!(
        "providers:\n  local:\n    kind: openai-compat\n    base_url: {}\n    model: gpt-4.1\n",
        server.base_url
    );
    let dir = project(&config);
    let r = run(dir.path(), "local", &["--trials", "2"], &[]);
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(records(dir.path()).iter().all(|r| r.get("cost").is_none()));
    let s = summary(dir.path());
    assert_eq!(s["cost"]["usd"], Value::Null, "unknown, not 0");
    assert_eq!(s["cost"]["priced_trials"], 0);
    assert!(
        !r.stdout.contains("cost"),
        "no cost lines without a price: {}",
        r.stdout
    );

    let capped = project(&config);
    let r = run(
        capped.path(),
        "local",
        &["--trials", "2", "--max-cost", "1"],
        &[],
    );
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(
        // gpt-4.1 is in the map, but this server is on this machine: that is why, said.
        r.stderr.contains(&format!(
            "provider `local` (openai-compat:gpt-4.1) is served from this machine ({}), which no price table prices",
            server.base_url
        )) && r.stderr.contains("prices:"),
        "{}",
        r.stderr
    );
    assert!(!capped.path().join("out").exists());
    assert_eq!(
        server.requests_seen(),
        4,
        "only the first run sent requests"
    );

    // Priced at 0 by the config: free, and cappable.
    let free = project(&format!(
        "{config}prices:\n  local: {{input: 0, output: 0}}\n"
    ));
    let r = run(
        free.path(),
        "local",
        &["--trials", "2", "--max-cost", "1"],
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let free_records = records(free.path());
    assert!(
        free_records.iter().all(|r| r["cost"]["usd"] == 0.0),
        "{free_records:?}"
    );
    assert_eq!(summary(free.path())["cost"]["usd"], 0.0);

    // Priced but sending no max_tokens: nothing bounds a request's cost, so no cap can hold.
    let unbounded = project(&format!(
        "{config}prices:\n  local: {{input: 1, output: 1}}\n"
    ));
    let r = run(
        unbounded.path(),
        "local",
        &["--trials", "2", "--max-cost", "1"],
        &[],
    );
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(
        r.stderr.contains("--max-cost: provider `local` sends no max_tokens, so nothing bounds what one request can cost"),
        "{}",
        r.stderr
    );
}

#[test]
fn plan_shows_each_option_in_dollars_at_the_providers_price() {
    let dir = project(
        "providers:\n  claude:\n    kind: anthropic\n    model: claude-sonnet-4-5\n    max_tokens: 100\n",
    );
    let r = toolscore(
        dir.path(),
        &[
            "plan",
            "--dataset",
            "data",
            "--provider",
            "claude",
            "--json",
            "plan.json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(
        r.stdout.contains(
            "dollars at the price of claude (anthropic:claude-sonnet-4-5): $3/M in, $15/M out"
        ) && r.stdout.contains("output assumed 100 tokens per request"),
        "{}",
        r.stdout
    );
    let plan: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("plan.json")).unwrap())
            .unwrap();
    let per_request_in = plan["tokens"]["input_per_request"].as_f64().unwrap();
    for row in plan["precision_rows"].as_array().unwrap() {
        let requests = row["cost"]["requests"].as_f64().unwrap();
        let want = requests * (per_request_in * 3.0 + 100.0 * 15.0) / 1e6;
        let usd = row["cost"]["usd"].as_f64().unwrap();
        assert!((usd - want).abs() < 1e-9 * want.max(1.0), "{usd} vs {want}");
    }
    // An unpriced provider: tokens only, and a note saying why.
    let r = toolscore(
        dir.path(),
        &["plan", "--dataset", "data", "--provider", "ollama:qwen3:8b"],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert!(!r.stdout.contains('$'), "{}", r.stdout);
    assert!(
        r.stderr.contains("no price for ollama:qwen3:8b"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_scenario_trial_costs_every_step_of_its_conversation() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("toolscore.yaml"),
        format!(
            "providers:\n  agent:\n    kind: replay\n    cassette: {}\nprices:\n  \"openai-compat:smollm2\": {{input: 1, output: 4, cache_read: 0.25}}\n",
            root.join("scenarios/recordings/smollm2-135m-scenarios-2026-12-03.cassette.jsonl.gz")
                .display()
        ),
    )
    .expect("config");
    let scenarios = root.join("scenarios");
    let r = toolscore(
        dir.path(),
        &[
            "run",
            "--provider",
            "agent",
            "--scenario",
            scenarios.to_str().unwrap(),
            "--trials",
            "2",
            "--out",
            "out",
            "--progress",
            "off",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    // Each scenario trial is max_steps requests in the estimate.
    assert!(r.stderr.contains("for 14 trials"), "{}", r.stderr);
    let records = records(dir.path());
    assert_eq!(records.len(), 14);
    let mut total = 0.0;
    let mut multi_step = 0;
    for rec in &records {
        // The turns' usage, step by step, at the configured price.
        let mut want = 0.0;
        for turn in rec["turns"].as_array().unwrap() {
            let u = &turn["usage"];
            let input = u["input_tokens"].as_f64().unwrap();
            let read = u["cache_read_tokens"].as_f64().unwrap_or(0.0);
            let output = u["output_tokens"].as_f64().unwrap();
            want += ((input - read) * 1.0 + read * 0.25 + output * 4.0) / 1e6;
        }
        if rec["turns"].as_array().unwrap().len() > 1 {
            multi_step += 1;
        }
        let usd = rec["cost"]["usd"].as_f64().expect("priced");
        assert!(
            (usd - want).abs() < 1e-12,
            "{usd} vs {want}: {}",
            rec["case_id"]
        );
        total += usd;
    }
    assert!(multi_step > 0, "some trial took several steps");
    let cost = &summary(dir.path())["cost"];
    assert!((cost["usd"].as_f64().unwrap() - total).abs() < 1e-12);
    assert_eq!(cost["priced_trials"], 14);
    assert_eq!(cost["arms"][0]["cases"].as_array().unwrap().len(), 7);
}

/// At concurrency 256 every trial could be in flight at once: each request is still reserved
/// at its worst case before it is sent, so spend stays within the cap (with reservations of
/// the estimate, a $5 cap spent $259 at this concurrency).
#[test]
fn the_cap_holds_with_256_requests_in_flight() {
    let server = FakeServer::start_in_background(|req: &FakeRequest| {
        heavy_usage_model(req).delayed(std::time::Duration::from_millis(50))
    });
    let dir = project(&format!(
        "providers:\n  gateway:\n    kind: openai-compat\n    base_url: {}\n    model: m\n    max_tokens: 10\nprices:\n  gateway: {{input: 10, output: 10}}\n",
        server.base_url
    ));
    // Above the estimate ($0.436 for 400 trials), far below what the trials really cost.
    let cap = 0.5;
    let r = run(
        dir.path(),
        "gateway",
        &[
            "--trials",
            "200",
            "--concurrency",
            "256",
            "--max-cost",
            "0.5",
        ],
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let s = summary(dir.path());
    let spent = s["cost"]["usd"].as_f64().unwrap();
    let completed = records(dir.path()).len();
    println!("concurrency 256: {completed} of 400 trials run, spent ${spent:.6} of a ${cap} cap");
    assert!(spent <= cap, "spent {spent} over the cap {cap}");
    assert!(completed > 0 && completed < 400, "{completed}");
    assert_eq!(server.requests_seen(), completed as u64);
}

/// An OpenAI-compatible answer carrying `usage`: a tool call until the request holds a tool
/// result (or always, with `keep_calling`), then text.
fn answer_with_usage(req: &FakeRequest, keep_calling: bool, prompt_tokens: u64) -> FakeResponse {
    let after_result = req.body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .is_some_and(|m| m["role"] == "tool");
    let message = if after_result && !keep_calling {
        json!({"role": "assistant", "content": "9 degrees in Berlin."})
    } else {
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_0", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"location\": \"Paris, France\"}"}}]})
    };
    // Without max_tokens there is no bound: 10 tokens stand in.
    let output = req.body["max_tokens"].as_u64().unwrap_or(10);
    FakeResponse::ok(
        json!({"id": "chatcmpl-fake", "object": "chat.completion", "created": 1_700_000_000u64, "model": "m",
          "choices": [{"index": 0, "message": message, "finish_reason": if message["content"].is_null() { "tool_calls" } else { "stop" }}],
          "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": output,
                    "total_tokens": prompt_tokens + output}})
        .to_string(),
    )
}

/// A provider that bills $1 a request at $10 per million tokens: 100,000 prompt tokens for a
/// request of a few hundred bytes, usage no request of that size can produce.
fn dollar_a_request(req: &FakeRequest) -> FakeResponse {
    answer_with_usage(req, false, 100_000 - 10).delayed(std::time::Duration::from_millis(100))
}

/// One provider `NAME: gateway` per name, all at the fake, priced $10 per million in and out.
fn priced_gateways(base_url: &str, names: &[&str]) -> String {
    let mut config = "providers:\n".to_owned();
    for n in names {
        config.push_str(&format!(
            "  {n}:\n    kind: openai-compat\n    base_url: {base_url}\n    model: m\n    max_tokens: 10\n"
        ));
    }
    config.push_str("prices:\n");
    for n in names {
        config.push_str(&format!("  {n}: {{input: 10, output: 10}}\n"));
    }
    config
}

fn spent(dir: &Path) -> f64 {
    summary(dir)["cost"]["usd"].as_f64().expect("priced")
}

/// A provider billing far beyond what any request could cost at concurrency 256: the arm's
/// first request goes alone, the bill scales every later reservation, so spend stops at the
/// cap (the old reservations let 260 requests through a $5 cap), and the run names the
/// provider and the dollars billed beyond the worst case.
#[test]
fn impossible_usage_stops_at_the_cap_and_the_run_names_the_provider() {
    let server = FakeServer::start_in_background(dollar_a_request);
    let dir = project(&priced_gateways(&server.base_url, &["gateway"]));
    let r = run(
        dir.path(),
        "gateway",
        &["--trials", "200", "--concurrency", "256", "--max-cost", "5"],
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let records = records(dir.path());
    let s = summary(dir.path());
    let spent = spent(dir.path());
    println!(
        "hostile provider at concurrency 256: spent ${spent:.2} of a $5 cap over {} requests",
        server.requests_seen()
    );
    assert!(spent <= 5.0 + 1e-9, "spent {spent} over the $5 cap");
    assert!(spent >= 1.0, "the probe at least was billed: {spent}");
    assert_eq!(server.requests_seen(), records.len() as u64);
    assert_eq!(
        records.len() as u64 + s["budget"]["not_run"].as_u64().unwrap(),
        400,
        "{}",
        s["budget"]
    );
    let warning = s["warnings"]
        .as_array()
        .and_then(|w| w.iter().find(|w| w["kind"] == "billed_beyond_worst_case"))
        .unwrap_or_else(|| panic!("no warning: {}", s["warnings"]));
    assert_eq!(warning["arm"]["provider"], "gateway");
    assert_eq!(warning["trials"], records.len());
    assert!(
        r.stdout.contains("provider `gateway` (m, base) billed $")
            && r.stdout.contains("beyond the worst case of"),
        "{}",
        r.stdout
    );
    // `report` on the folder says the same from the records alone.
    let again = toolscore(
        dir.path(),
        &["report", run_dir(dir.path()).to_str().unwrap()],
    );
    assert!(
        again
            .stdout
            .contains("provider `gateway` (m, base) billed $"),
        "{}",
        again.stdout
    );
}

/// Two arms' first requests go out together and each is billed $1 against a $1.50 cap: the
/// cap is passed, and every surface says by how much instead of printing the cap as if it held.
#[test]
fn a_cap_passed_by_requests_in_flight_is_said_to_be_passed() {
    let server = FakeServer::start_in_background(dollar_a_request);
    let dir = project(&priced_gateways(&server.base_url, &["a", "b"]));
    let r = run(
        dir.path(),
        "a",
        &[
            "--provider",
            "b",
            "--trials",
            "5",
            "--concurrency",
            "16",
            "--max-cost",
            "1.5",
            "--format",
            "terminal",
            "--format",
            "md",
        ],
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    assert_eq!(server.requests_seen(), 2, "one probe per arm, then nothing");
    assert!(close(spent(dir.path()), 2.0), "{}", spent(dir.path()));
    assert!(
        r.stdout.contains("--max-cost $1.50 (PASSED by $0.500)")
            && r.stdout
                .contains("OVER BUDGET: --max-cost $1.50 PASSED by $0.500 ($2.00 spent"),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr
            .contains("budget: --max-cost $1.50 PASSED by $0.500"),
        "{}",
        r.stderr
    );
    let md = std::fs::read_to_string(run_dir(dir.path()).join("report.md")).expect("report.md");
    assert!(
        md.contains("**OVER BUDGET**: --max-cost $1.50 PASSED by $0.500"),
        "{md}"
    );
    let ground = summary(dir.path())["decision"]["grounds"]
        .as_array()
        .and_then(|g| g.iter().find(|g| g["part"] == "budget").cloned())
        .expect("a budget ground");
    assert_eq!(ground["spent_usd"], 2.0);
}

/// A project with one scenario over get_weather (`max_steps` 5) besides the fixtures.
fn scenario_project(config: &str) -> tempfile::TempDir {
    let dir = project(config);
    std::fs::create_dir_all(dir.path().join("scenarios")).expect("mkdir");
    std::fs::write(
        dir.path().join("scenarios/weather.yaml"),
        "description: Ask for the weather, answer from the result.\ncatalog: ../data/tools.json\nmax_steps: 5\nmessages:\n  - role: user\n    content: \"Weather in Paris?\"\ntools:\n  get_weather:\n    - content: \"18 degrees\"\nexpect:\n  max_calls: 5\n",
    )
    .expect("scenario");
    dir
}

fn run_scenario(dir: &Path, extra: &[&str]) -> Run {
    let mut args = vec![
        "run",
        "--provider",
        "gateway",
        "--scenario",
        "scenarios",
        "--out",
        "out",
        "--progress",
        "off",
    ];
    args.extend(extra);
    toolscore(dir, &args)
}

/// Scenario steps billed $1 each (five a trial) against a $20 cap at concurrency 256: each
/// step is covered before it is sent and settled when billed, so spend stops at the cap (a $5
/// cap spent $200 when steps were settled only at the end of their trial), and a trial cut
/// between two steps is `budget_stopped`: neither judged nor an infrastructure error.
#[test]
fn scenario_steps_stop_at_the_cap_and_a_cut_trial_is_not_an_error() {
    let server = FakeServer::start_in_background(|req: &FakeRequest| {
        answer_with_usage(req, true, 100_000 - 10).delayed(std::time::Duration::from_millis(20))
    });
    let dir = scenario_project(&priced_gateways(&server.base_url, &["gateway"]));
    let r = run_scenario(
        dir.path(),
        &[
            "--trials",
            "100",
            "--concurrency",
            "256",
            "--max-cost",
            "20",
        ],
    );
    let records = records(dir.path());
    let s = summary(dir.path());
    let spent = spent(dir.path());
    println!(
        "$1 scenario steps at concurrency 256: spent ${spent:.2} of a $20 cap, {} requests, {} trials recorded",
        server.requests_seen(),
        records.len()
    );
    assert!(spent <= 20.0 + 1e-9, "spent {spent} over the $20 cap");
    assert!(
        records.iter().all(|r| r["outcome"] != "error"),
        "no infrastructure error"
    );
    assert!(
        records
            .iter()
            .any(|r| r["outcome"] == "fail" || r["outcome"] == "pass"),
        "some trial finished and was judged"
    );
    let stopped = records
        .iter()
        .filter(|r| r["outcome"] == "budget_stopped")
        .count() as u64;
    for r in records.iter().filter(|r| r["outcome"] == "budget_stopped") {
        assert_eq!(r["trajectory"]["stop"], "budget", "{r}");
        assert!(
            r["error"]
                .as_str()
                .unwrap()
                .starts_with("--max-cost: step "),
            "{r}"
        );
        assert!(r["scenario"].is_null(), "not judged: {r}");
    }
    assert_eq!(s["budget"]["stopped"].as_u64().unwrap_or(0), stopped);
    assert_eq!(
        records.len() as u64 + s["budget"]["not_run"].as_u64().unwrap(),
        100,
        "{}",
        s["budget"]
    );
    assert_eq!(
        r.code,
        0,
        "a budget stop is not an infrastructure failure: {}",
        r.transcript()
    );
}

/// At the realistic worst case (every byte of the body an input token, the whole max_tokens
/// out) a scenario trial is admitted only while the cap can hold every step it may make: the
/// trials that start finish and are judged, the rest are not run, and the run exits 0 (it used
/// to start all 12, cut each between steps as an infrastructure error, and exit 4).
#[test]
fn scenario_trials_under_a_cap_are_admitted_only_when_they_can_finish() {
    let server = FakeServer::start_in_background(heavy_usage_model);
    let dir = scenario_project(&priced_gateways(&server.base_url, &["gateway"]));
    // One trial, uncapped, for what a trial costs at this billing.
    let one = run_scenario(dir.path(), &["--trials", "1", "--run-id", "one"]);
    assert_eq!(one.code, 0, "{}", one.transcript());
    let per_trial = support::read_json(&dir.path().join("out/one/summary.json"))["cost"]["usd"]
        .as_f64()
        .expect("priced");
    std::fs::remove_dir_all(dir.path().join("out")).expect("rm");
    // Room for every step of a few trials, far from all 12.
    let cap = format!("{:.6}", per_trial * 12.0);
    let r = run_scenario(
        dir.path(),
        &["--trials", "12", "--concurrency", "256", "--max-cost", &cap],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let records = records(dir.path());
    let s = summary(dir.path());
    let judged = records
        .iter()
        .filter(|r| r["outcome"] == "pass" || r["outcome"] == "fail")
        .count();
    println!(
        "worst-case scenario at concurrency 256: {judged} judged, {} recorded, not run {}, spent ${:.6} of ${cap}",
        records.len(),
        s["budget"]["not_run"],
        spent(dir.path())
    );
    assert!(judged >= 2, "{judged} judged: {}", r.transcript());
    assert!(records.iter().all(|r| r["outcome"] != "error"));
    assert!(spent(dir.path()) <= per_trial * 12.0 + 1e-9);
    assert_eq!(s["decision"]["verdict"], "pass", "{}", s["decision"]);
}
