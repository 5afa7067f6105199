//! The native adapters (anthropic, openai-responses, gemini, ollama, azure-openai) against
//! in-process fakes of their APIs: a multi-step exchange (tool call, result fed back, final
//! text) for each, and the error shapes of reference/providers.md §10.

use crate::support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use support::*;
use toolscore_core::ErrorClass;
use toolscore_core::catalog::{Catalog, Tool};
use toolscore_core::{FinishReason, Message, ModelTurn};
use toolscore_provider::{
    Provider, ProviderError, ProviderKind, ProviderSettings, SecretString, http_client,
};

fn catalog() -> Catalog {
    Catalog::new(
        vec![Tool {
            name: "get_weather".into(),
            description: "Get the current weather in a given location".into(),
            input_schema: json!({"type": "object", "properties": {"location": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["location"]}),
            ..Default::default()
        }],
        "test".into(),
    )
}

fn provider(kind: &str, base_url: &str, model: &str) -> Provider {
    let kind: ProviderKind = kind.parse().expect("registered kind");
    let mut s = ProviderSettings::new(kind, "fake", base_url, model);
    s.api_key = Some(SecretString::new(FAKE_KEY.into()));
    s.timeout = Duration::from_secs(5);
    s.max_retries = 2;
    s.retry_base = Duration::from_millis(10);
    s.retry_cap = Duration::from_millis(40);
    Provider::new(s, http_client(4).expect("client"))
}

/// A fake that records every request and answers with `answer`.
fn recording(
    answer: impl Fn(&FakeRequest) -> FakeResponse + Send + Sync + 'static,
) -> (
    impl Fn(&FakeRequest) -> FakeResponse + Send + Sync + 'static,
    Arc<Mutex<Vec<FakeRequest>>>,
) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    (
        move |req: &FakeRequest| {
            log.lock().unwrap().push(req.clone());
            answer(req)
        },
        seen,
    )
}

/// Asks about Paris, expects the call, feeds "15 degrees" back the way the scenario loop
/// does (the turn's calls as an assistant message, one tool message per call, with the call's
/// id or an empty id when the provider sent none), and returns both turns.
async fn round_trip(p: &Provider) -> (ModelTurn, ModelTurn) {
    let mut messages = vec![
        Message::System {
            content: "You are a weather bot.".into(),
        },
        Message::User {
            content: "What's the weather in Paris?".into(),
        },
    ];
    let first = p
        .complete(&p.prepare(&messages, &catalog()))
        .await
        .expect("first step");
    assert_eq!(first.turn.tool_calls.len(), 1, "{:?}", first.turn);
    let call = &first.turn.tool_calls[0];
    assert_eq!(call.name, "get_weather");
    assert_eq!(call.arguments, paris());
    messages.push(Message::Assistant {
        content: first.turn.text.clone(),
        tool_calls: first.turn.tool_calls.clone(),
    });
    messages.push(Message::Tool {
        call_id: call.id.clone().unwrap_or_default(),
        content: "15 degrees".into(),
        is_error: false,
    });
    let second = p
        .complete(&p.prepare(&messages, &catalog()))
        .await
        .unwrap_or_else(|e| panic!("second step refused by the fake: {e}"));
    assert!(second.turn.tool_calls.is_empty(), "{:?}", second.turn);
    assert_eq!(second.turn.text.as_deref(), Some(FINAL_TEXT));
    (first.turn, second.turn)
}

#[tokio::test]
async fn anthropic_round_trip() {
    let (handler, seen) = recording(anthropic_model);
    let server = FakeServer::start(handler).await;
    let p = provider("anthropic", &server.base_url, "claude-sonnet-4-5");
    let (first, second) = round_trip(&p).await;
    assert_eq!(
        first.text.as_deref(),
        Some("I'll check the current weather in Paris for you.")
    );
    assert_eq!(first.finish, Some(FinishReason::ToolCalls));
    assert_eq!(first.usage.input_tokens, Some(412 + 1830));
    assert_eq!(first.usage.cache_read_tokens, Some(1830));
    assert_eq!(second.finish, Some(FinishReason::Stop));
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0].path, "/v1/messages");
    assert_eq!(seen[0].header("x-api-key"), Some(FAKE_KEY));
    assert!(seen[0].header("authorization").is_none());
    assert_eq!(seen[0].body["system"], "You are a weather bot.");
    let history = &seen[1].body["messages"];
    assert_eq!(history[1]["content"][1]["type"], "tool_use");
    assert_eq!(
        history[2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9", "content": "15 degrees"})
    );
}

#[tokio::test]
async fn openai_responses_round_trip() {
    let (handler, seen) = recording(responses_model);
    let server = FakeServer::start(handler).await;
    let p = provider("openai-responses", &server.base_url, "gpt-5.4");
    let (first, _) = round_trip(&p).await;
    assert_eq!(
        first.tool_calls[0].id.as_deref(),
        Some("call_unLAR8MvFNptuiZK6K6HCy5k"),
        "matched on call_id, not the item id"
    );
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {FAKE_KEY}").as_str())
    );
    let input = seen[1].body["input"].as_array().unwrap();
    assert_eq!(input[1]["type"], "function_call");
    assert_eq!(input[2]["type"], "function_call_output");
    assert_eq!(input[2]["call_id"], "call_unLAR8MvFNptuiZK6K6HCy5k");
}

#[tokio::test]
async fn gemini_round_trip_matches_by_name_and_position_and_echoes_the_signature() {
    let (handler, seen) = recording(gemini_model);
    let server = FakeServer::start(handler).await;
    let p = provider(
        "gemini",
        &server.base_url.replace("/v1", "/v1beta"),
        "gemini-2.5-flash",
    );
    let (first, second) = round_trip(&p).await;
    assert_eq!(first.tool_calls[0].id, None, "Gemini sent no id");
    assert_eq!(first.finish, Some(FinishReason::Stop), "STOP on a call");
    assert_eq!(first.usage.output_tokens, Some(11 + 829));
    assert_eq!(second.finish, Some(FinishReason::Stop));
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen[0].path,
        "/v1beta/models/gemini-2.5-flash:generateContent"
    );
    assert_eq!(seen[0].header("x-goog-api-key"), Some(FAKE_KEY));
    let contents = seen[1].body["contents"].as_array().unwrap();
    assert_eq!(
        contents[1]["parts"][0]["thoughtSignature"],
        THOUGHT_SIGNATURE
    );
    assert_eq!(
        contents[2]["parts"][0]["functionResponse"],
        json!({"name": "get_weather", "response": {"output": "15 degrees"}})
    );
}

#[tokio::test]
async fn ollama_round_trip_without_ids() {
    let (handler, seen) = recording(ollama_model);
    let server = FakeServer::start(handler).await;
    let p = provider("ollama", &format!("http://{}", server.addr), "qwen3");
    let (first, _) = round_trip(&p).await;
    assert_eq!(first.tool_calls[0].id, None);
    assert_eq!(first.finish, Some(FinishReason::Stop), "done_reason stop");
    assert_eq!(first.usage.input_tokens, Some(169));
    let seen = seen.lock().unwrap();
    let m = seen[1].body["messages"].as_array().unwrap();
    assert_eq!(m[2]["tool_calls"][0]["function"]["arguments"], paris());
    assert_eq!(m[3]["role"], "tool");
    assert_eq!(m[3]["tool_name"], "get_weather");
}

#[tokio::test]
async fn azure_round_trip() {
    let (handler, seen) = recording(|req| azure_model(req, "gpt-4o-prod"));
    let server = FakeServer::start(handler).await;
    let p = provider(
        "azure-openai",
        &format!("http://{}", server.addr),
        "gpt-4o-prod",
    );
    round_trip(&p).await;
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0].query, "api-version=2024-10-21");
    let m = seen[1].body["messages"].as_array().unwrap();
    assert_eq!(m[3]["role"], "tool");
    assert_eq!(m[3]["tool_call_id"], m[2]["tool_calls"][0]["id"]);
}

/// One request's outcome against a fake that answers `script[i]` to the i-th request (the
/// last entry repeated), with the number of requests the fake saw.
async fn scripted(
    kind: &str,
    model: &str,
    script: Vec<FakeResponse>,
) -> (Result<ModelTurn, ProviderError>, u64) {
    let n = AtomicU64::new(0);
    let server = FakeServer::start(move |_| {
        let i = n.fetch_add(1, Ordering::SeqCst) as usize;
        script[i.min(script.len() - 1)].clone()
    })
    .await;
    let base = if kind == "ollama" {
        format!("http://{}", server.addr)
    } else {
        server.base_url.clone()
    };
    let p = provider(kind, &base, model);
    let messages = vec![Message::User {
        content: "What's the weather in Paris?".into(),
    }];
    let result = p
        .complete(&p.prepare(&messages, &catalog()))
        .await
        .map(|e| e.turn);
    (result, server.requests_seen())
}

#[tokio::test]
async fn anthropic_529_is_overloaded_and_retried() {
    let (r, seen) = scripted(
        "anthropic",
        "claude-sonnet-4-5",
        vec![
            FakeResponse::status(529, anthropic_error("overloaded_error", "Overloaded")),
            FakeResponse::ok(anthropic_text_body("ok")),
        ],
    )
    .await;
    assert_eq!(r.unwrap().text.as_deref(), Some("ok"));
    assert_eq!(seen, 2);
    let (r, seen) = scripted(
        "anthropic",
        "claude-sonnet-4-5",
        vec![FakeResponse::status(
            529,
            anthropic_error("overloaded_error", "Overloaded"),
        )],
    )
    .await;
    let e = r.unwrap_err();
    assert_eq!(e.class, ErrorClass::Overloaded);
    assert_eq!((e.attempts, seen), (3, 3));
}

#[tokio::test]
async fn anthropic_spend_limit_429_is_not_retried_but_a_rate_limit_is() {
    let spend = json!({"type": "error", "error": {"type": "rate_limit_error", "message": "You have reached your specified API usage limits.",
        "details": {"error_code": "enforced_spend_limit_reached"}}}).to_string();
    let (r, seen) = scripted(
        "anthropic",
        "claude-sonnet-4-5",
        vec![FakeResponse::status(429, spend)],
    )
    .await;
    assert_eq!(r.unwrap_err().class, ErrorClass::QuotaExceeded);
    assert_eq!(seen, 1);
    let (r, seen) = scripted(
        "anthropic",
        "claude-sonnet-4-5",
        vec![
            FakeResponse::status(
                429,
                anthropic_error(
                    "rate_limit_error",
                    "Number of request tokens has exceeded your per-minute rate limit",
                ),
            )
            .header("retry-after", "0"),
            FakeResponse::ok(anthropic_text_body("ok")),
        ],
    )
    .await;
    // The rate-limit 429 is retried (after its Retry-After of 0) and the second answer is the
    // one returned, decoded: not a quota error, not a retry that gave up.
    let turn = r.expect("the rate-limited request is retried and answered");
    assert_eq!(turn.text.as_deref(), Some("ok"));
    assert!(turn.tool_calls.is_empty());
    assert_eq!(seen, 2);
}

#[tokio::test]
async fn openai_responses_two_kinds_of_429() {
    let rate = openai_error(
        "Rate limit reached for gpt-4 in organization org-x on tokens per min (TPM): Limit 10000, Used 9348, Requested 5086. Please try again in 26.604s.",
        "tokens",
        Some("rate_limit_exceeded"),
    );
    let quota = openai_error(
        "You exceeded your current quota, please check your plan and billing details.",
        "insufficient_quota",
        Some("insufficient_quota"),
    );
    let (r, seen) = scripted(
        "openai-responses",
        "gpt-5.4",
        vec![FakeResponse::status(429, rate)],
    )
    .await;
    assert_eq!(r.unwrap_err().class, ErrorClass::RateLimited);
    assert_eq!(seen, 3, "retried");
    let (r, seen) = scripted(
        "openai-responses",
        "gpt-5.4",
        vec![FakeResponse::status(429, quota)],
    )
    .await;
    assert_eq!(r.unwrap_err().class, ErrorClass::QuotaExceeded);
    assert_eq!(seen, 1, "not retried");
}

#[tokio::test]
async fn gemini_bad_key_400_is_auth_and_not_retried() {
    let (r, seen) = scripted(
        "gemini",
        "gemini-2.5-flash",
        vec![FakeResponse::status(400, gemini_bad_key())],
    )
    .await;
    let e = r.unwrap_err();
    assert_eq!(e.class, ErrorClass::Auth);
    assert!(e.message.contains("API key not valid"), "{}", e.message);
    assert!(!e.message.contains(FAKE_KEY));
    assert_eq!(seen, 1);
}

#[tokio::test]
async fn errors_inside_a_200_are_errors() {
    let (r, _) = scripted(
        "ollama",
        "qwen3",
        vec![FakeResponse::ok(
            json!({"error": "the model failed to generate a response"}).to_string(),
        )],
    )
    .await;
    let e = r.unwrap_err();
    assert_eq!(e.class, ErrorClass::BadResponse);
    assert!(e.message.contains("failed to generate"), "{}", e.message);
    let (r, _) = scripted(
        "anthropic",
        "claude-sonnet-4-5",
        vec![FakeResponse::ok(anthropic_error(
            "overloaded_error",
            "Overloaded",
        ))],
    )
    .await;
    assert_eq!(r.unwrap_err().class, ErrorClass::Overloaded);
    let (r, _) = scripted(
        "gemini",
        "gemini-2.5-flash",
        vec![FakeResponse::ok(gemini_error(
            500,
            "INTERNAL",
            "An internal error has occurred.",
        ))],
    )
    .await;
    assert_eq!(r.unwrap_err().class, ErrorClass::ServerError);
    let failed = json!({"id": "resp_1", "object": "response", "status": "failed",
        "error": {"code": "server_error", "message": "The model failed."}, "output": []});
    let (r, seen) = scripted(
        "openai-responses",
        "gpt-5.4",
        vec![FakeResponse::ok(failed.to_string())],
    )
    .await;
    assert_eq!(r.unwrap_err().class, ErrorClass::ServerError);
    assert_eq!(seen, 3, "a server error is retried");
}

#[tokio::test]
async fn chat_sends_max_completion_tokens_to_reasoning_models_only() {
    let (handler, seen) = recording(|_| FakeResponse::ok(text_body("ok")));
    let server = FakeServer::start(handler).await;
    for model in ["gpt-5-mini", "o3", "gpt-4.1"] {
        let kind: ProviderKind = "openai-compat".parse().unwrap();
        let mut s = ProviderSettings::new(kind, "fake", server.base_url.as_str(), model);
        s.max_tokens = Some(256);
        let p = Provider::new(s, http_client(1).unwrap());
        let messages = vec![Message::User {
            content: "hi".into(),
        }];
        p.complete(&p.prepare(&messages, &catalog())).await.unwrap();
    }
    let seen = seen.lock().unwrap();
    let field = |i: usize| {
        let b: &Value = &seen[i].body;
        (
            b.get("max_tokens").cloned(),
            b.get("max_completion_tokens").cloned(),
        )
    };
    assert_eq!(field(0), (None, Some(json!(256))));
    assert_eq!(field(1), (None, Some(json!(256))));
    assert_eq!(field(2), (Some(json!(256)), None));
}

#[tokio::test]
async fn gemini_429_waits_the_retry_info_delay() {
    let limited = serde_json::json!({"error": {"code": 429, "message": "You exceeded your current quota, please check your plan and billing details.",
        "status": "RESOURCE_EXHAUSTED", "details": [
          {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.4s"}]}})
    .to_string();
    let started = std::time::Instant::now();
    let (r, seen) = scripted(
        "gemini",
        "gemini-2.5-flash",
        vec![
            FakeResponse::status(429, limited),
            FakeResponse::ok(gemini_text_body("ok")),
        ],
    )
    .await;
    assert_eq!(r.unwrap().text.as_deref(), Some("ok"));
    assert_eq!(seen, 2);
    // The backoff alone is at most 40 ms here.
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "{:?}",
        started.elapsed()
    );
}
