//! The openai-compat adapter against an in-process fake Chat Completions server.

use crate::support;

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{
    FakeRequest, FakeResponse, FakeServer, error_body, last_user_message, text_body, tool_call_body,
};
use toolscore_core::ErrorClass;
use toolscore_core::catalog::{Catalog, Tool};
use toolscore_core::{FinishReason, Message, ToolCall};
use toolscore_provider::{Provider, ProviderSettings, SecretString, http_client};

const KEY: &str = "sk-test-0123456789abcdef-SECRET";

fn catalog() -> Catalog {
    Catalog::new(
        vec![
            Tool {
                name: "get_weather".into(),
                description: "Get the current weather in a given location".into(),
                input_schema: json!({"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}),
                ..Default::default()
            },
            Tool {
                name: "get_time".into(),
                description: "Current time in a city".into(),
                input_schema: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
                ..Default::default()
            },
        ],
        "test".into(),
    )
}

fn ask(text: &str) -> Vec<Message> {
    vec![
        Message::System {
            content: "You are a weather bot.".into(),
        },
        Message::User {
            content: text.into(),
        },
    ]
}

fn settings(base_url: &str) -> ProviderSettings {
    let mut s = ProviderSettings::new(
        toolscore_provider::OPENAI_COMPAT_KIND,
        "fake",
        base_url,
        "fake-model",
    );
    s.timeout = Duration::from_secs(5);
    s.max_retries = 2;
    s.retry_base = Duration::from_millis(10);
    s.retry_cap = Duration::from_millis(40);
    s
}

fn provider(s: ProviderSettings) -> Provider {
    Provider::new(s, http_client(8).expect("client"))
}

/// A server that always answers `body` with 200.
async fn serve(body: String) -> FakeServer {
    FakeServer::start(move |_| FakeResponse::ok(body.clone())).await
}

async fn complete_once(body: String) -> toolscore_core::ModelTurn {
    let server = serve(body).await;
    let p = provider(settings(&server.base_url));
    let req = p.prepare(&ask("Weather in Paris?"), &catalog());
    let ex = p.complete(&req).await.expect("success");
    assert_eq!(ex.attempts, 1);
    ex.turn
}

/// The error of one "hi" asked of the server with the default settings.
async fn asked_once_failing(server: &FakeServer) -> toolscore_provider::ProviderError {
    let p = provider(settings(&server.base_url));
    p.complete(&p.prepare(&ask("hi"), &catalog()))
        .await
        .unwrap_err()
}

#[tokio::test]
async fn decodes_a_tool_call_with_parsed_arguments() {
    let turn = complete_once(tool_call_body(&[(
        "get_weather",
        "{\n\"location\": \"Paris, France\"\n}",
    )]))
    .await;
    assert_eq!(turn.tool_calls.len(), 1);
    let call = &turn.tool_calls[0];
    assert_eq!(call.name, "get_weather");
    assert_eq!(call.id.as_deref(), Some("call_0"));
    assert_eq!(call.arguments, json!({"location": "Paris, France"}));
    assert!(!call.arguments_not_json());
    assert_eq!(turn.text, None);
    assert_eq!(turn.finish, Some(FinishReason::ToolCalls));
    assert_eq!(turn.usage.input_tokens, Some(50));
    assert_eq!(turn.usage.output_tokens, Some(10));
}

#[tokio::test]
async fn decodes_two_parallel_calls_in_order() {
    let turn = complete_once(tool_call_body(&[
        ("get_weather", r#"{"location":"Paris"}"#),
        ("get_time", r#"{"city":"Tokyo"}"#),
    ]))
    .await;
    let names: Vec<&str> = turn.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["get_weather", "get_time"]);
    assert_eq!(turn.tool_calls[1].id.as_deref(), Some("call_1"));
    assert_eq!(turn.tool_calls[1].arguments, json!({"city": "Tokyo"}));
}

#[tokio::test]
async fn decodes_a_text_answer() {
    let turn = complete_once(text_body("It's 15 °C in Paris.")).await;
    assert!(turn.tool_calls.is_empty());
    assert_eq!(turn.text.as_deref(), Some("It's 15 °C in Paris."));
    assert_eq!(turn.finish, Some(FinishReason::Stop));
}

fn with_message(message: Value, finish: Value) -> String {
    json!({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": finish}]}).to_string()
}

#[tokio::test]
async fn empty_content_with_tool_calls_is_no_text() {
    let body = with_message(
        json!({"role": "assistant", "content": "", "tool_calls": [{"id": "call_a", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]}),
        json!("tool_calls"),
    );
    let turn = complete_once(body).await;
    assert_eq!(turn.text, None);
    assert_eq!(turn.tool_calls.len(), 1);
    assert_eq!(turn.tool_calls[0].arguments, json!({}));
    // No usage in the body: reported as unknown, not zero.
    assert_eq!(turn.usage.input_tokens, None);
}

#[tokio::test]
async fn missing_or_empty_call_id_becomes_none() {
    let body = with_message(
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"type": "function", "function": {"name": "get_time", "arguments": "{\"city\":\"Oslo\"}"}},
            {"id": "", "type": "function", "function": {"name": "get_time", "arguments": "{\"city\":\"Rome\"}"}}
        ]}),
        json!("tool_calls"),
    );
    let turn = complete_once(body).await;
    assert_eq!(turn.tool_calls.len(), 2);
    assert!(turn.tool_calls.iter().all(|c| c.id.is_none()));
    assert_eq!(turn.tool_calls[1].arguments, json!({"city": "Rome"}));
}

#[tokio::test]
async fn unparseable_arguments_keep_the_call() {
    let turn = complete_once(tool_call_body(&[(
        "get_weather",
        "{\"location\": \"Paris\"",
    )]))
    .await;
    assert_eq!(turn.tool_calls.len(), 1);
    let call = &turn.tool_calls[0];
    assert_eq!(call.name, "get_weather");
    assert!(call.arguments_not_json());
    assert_eq!(call.arguments, Value::Null);
    assert_eq!(
        call.unparsed_arguments.as_deref(),
        Some("{\"location\": \"Paris\"")
    );
}

#[tokio::test]
async fn arguments_sent_as_an_object_are_accepted() {
    let body = with_message(
        json!({"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"location": "Lima"}}}]}),
        json!("tool_calls"),
    );
    let turn = complete_once(body).await;
    assert_eq!(turn.tool_calls[0].arguments, json!({"location": "Lima"}));
    assert!(!turn.tool_calls[0].arguments_not_json());
}

#[tokio::test]
async fn finish_reason_stop_with_tool_calls_still_counts_as_a_call() {
    let body = with_message(
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\":\"Bern\"}"}}]}),
        json!("stop"),
    );
    let turn = complete_once(body).await;
    assert_eq!(turn.finish, Some(FinishReason::Stop));
    assert_eq!(turn.tool_calls.len(), 1);
    assert_eq!(turn.tool_calls[0].name, "get_weather");
}

#[tokio::test]
async fn tool_calls_null_or_empty_and_unknown_finish_reason() {
    let turn = complete_once(with_message(
        json!({"role": "assistant", "content": "hi", "tool_calls": null}),
        json!("eos_token"),
    ))
    .await;
    assert!(turn.tool_calls.is_empty());
    assert_eq!(turn.finish, Some(FinishReason::Other("eos_token".into())));
    let turn = complete_once(with_message(
        json!({"role": "assistant", "content": "hi", "tool_calls": []}),
        Value::Null,
    ))
    .await;
    assert!(turn.tool_calls.is_empty());
    assert_eq!(turn.text.as_deref(), Some("hi"));
    assert_eq!(turn.finish, None);
}

#[tokio::test]
async fn honours_retry_after_on_429_then_succeeds() {
    let server = FakeServer::start(|req: &FakeRequest| {
        if req.seq == 0 {
            FakeResponse::status(
                429,
                error_body(
                    "Rate limit reached for requests",
                    "requests",
                    Some("rate_limit_exceeded"),
                ),
            )
            .header("Retry-After", "0.2")
        } else {
            FakeResponse::ok(text_body("ok"))
        }
    })
    .await;
    let mut s = settings(&server.base_url);
    // Without the header the backoff would be at most 1 ms.
    s.retry_base = Duration::from_millis(1);
    s.retry_cap = Duration::from_millis(1);
    let p = provider(s);
    let req = p.prepare(&ask("hi"), &catalog());
    let start = Instant::now();
    let ex = p.complete(&req).await.expect("success after a retry");
    let elapsed = start.elapsed();
    assert_eq!(ex.attempts, 2);
    assert!(
        elapsed >= Duration::from_millis(180),
        "waited only {elapsed:?}"
    );
    assert!(ex.latency < elapsed);
    assert_eq!(ex.turn.text.as_deref(), Some("ok"));
    assert_eq!(server.requests_seen(), 2);
    assert!(
        std::str::from_utf8(&ex.raw_body)
            .unwrap()
            .contains("\"ok\"")
    );
}

#[tokio::test]
async fn retry_after_ms_is_honoured() {
    let server = FakeServer::start(|req: &FakeRequest| {
        if req.seq == 0 {
            FakeResponse::status(503, "overloaded").header("retry-after-ms", "150")
        } else {
            FakeResponse::ok(text_body("ok"))
        }
    })
    .await;
    let p = provider(settings(&server.base_url));
    let start = Instant::now();
    let ex = p
        .complete(&p.prepare(&ask("hi"), &catalog()))
        .await
        .expect("success");
    assert_eq!(ex.attempts, 2);
    assert!(
        start.elapsed() >= Duration::from_millis(140),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test]
async fn server_error_every_time_gives_up_after_max_retries() {
    let server = FakeServer::start(|_| {
        FakeResponse::status(
            503,
            error_body("The server is overloaded", "server_error", None),
        )
    })
    .await;
    let err = asked_once_failing(&server).await;
    assert_eq!(err.class, ErrorClass::ServerError);
    assert_eq!(err.attempts, 3);
    assert_eq!(err.status, Some(503));
    assert_eq!(server.requests_seen(), 3);
    assert!(
        err.message.contains("503") && err.message.contains("overloaded"),
        "{err}"
    );
}

#[tokio::test]
async fn unauthorized_is_auth_and_not_retried() {
    let server = FakeServer::start(|_| {
        FakeResponse::status(
            401,
            error_body(
                "Incorrect API key provided: sk-…",
                "invalid_request_error",
                Some("invalid_api_key"),
            ),
        )
    })
    .await;
    let err = asked_once_failing(&server).await;
    assert_eq!(err.class, ErrorClass::Auth);
    assert_eq!(err.attempts, 1);
    assert_eq!(err.status, Some(401));
    assert_eq!(server.requests_seen(), 1);
}

#[tokio::test]
async fn insufficient_quota_is_not_retried() {
    let server = FakeServer::start(|_| {
        FakeResponse::status(
            429,
            error_body(
                "You exceeded your current quota, please check your plan and billing details.",
                "insufficient_quota",
                Some("insufficient_quota"),
            ),
        )
        .header("retry-after", "0")
    })
    .await;
    let err = asked_once_failing(&server).await;
    assert_eq!(err.class, ErrorClass::QuotaExceeded);
    assert_eq!(err.attempts, 1);
    assert_eq!(server.requests_seen(), 1);
    assert!(err.message.contains("exceeded your current quota"), "{err}");
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = FakeServer::start(|_| {
        FakeResponse::status(
            400,
            error_body(
                "Invalid schema for function 'x'",
                "invalid_request_error",
                Some("invalid_function_parameters"),
            ),
        )
    })
    .await;
    let err = asked_once_failing(&server).await;
    assert_eq!(err.class, ErrorClass::ClientError);
    assert_eq!(err.attempts, 1);
    assert!(err.message.contains("Invalid schema"), "{err}");
}

#[tokio::test]
async fn slow_server_times_out() {
    let server =
        FakeServer::start(|_| FakeResponse::ok(text_body("late")).delayed(Duration::from_secs(2)))
            .await;
    let mut s = settings(&server.base_url);
    s.timeout = Duration::from_millis(150);
    s.max_retries = 1;
    let p = provider(s);
    let start = Instant::now();
    let err = p
        .complete(&p.prepare(&ask("hi"), &catalog()))
        .await
        .unwrap_err();
    assert_eq!(err.class, ErrorClass::Timeout);
    assert_eq!(err.attempts, 2);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test]
async fn connection_refused_is_a_connect_error() {
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let mut s = settings(&format!("http://{addr}/v1"));
    s.max_retries = 1;
    let p = provider(s);
    let err = p
        .complete(&p.prepare(&ask("hi"), &catalog()))
        .await
        .unwrap_err();
    assert_eq!(err.class, ErrorClass::Connect);
    assert_eq!(err.attempts, 2);
}

#[tokio::test]
async fn non_json_200_is_a_bad_response() {
    let server = FakeServer::start(|_| {
        FakeResponse::ok("<html>gateway says hi</html>").header("content-type", "text/html")
    })
    .await;
    let err = asked_once_failing(&server).await;
    assert_eq!(err.class, ErrorClass::BadResponse);
    assert_eq!(err.attempts, 1);
    assert!(err.message.contains("gateway says hi"), "{err}");
}

#[tokio::test]
async fn errors_inside_200_bodies_are_errors() {
    for (body, class) in [
        (
            r#"{"object":"error","message":"model not found","type":"NotFoundError","param":null,"code":404}"#,
            ErrorClass::ClientError,
        ),
        (
            r#"{"error":{"message":"upstream overloaded","type":"server_error","param":null,"code":null}}"#,
            ErrorClass::ServerError,
        ),
        (
            r#"{"id":"x","object":"chat.completion","choices":[]}"#,
            ErrorClass::BadResponse,
        ),
        (r#"[1,2,3]"#, ErrorClass::BadResponse),
    ] {
        let server = serve(body.to_owned()).await;
        let p = provider(settings(&server.base_url));
        let err = p
            .complete(&p.prepare(&ask("hi"), &catalog()))
            .await
            .unwrap_err();
        assert_eq!(err.class, class, "{body}: {err}");
        assert_eq!(server.requests_seen(), u64::from(err.attempts));
    }
}

#[tokio::test]
async fn a_body_past_the_cap_is_a_bad_response_read_no_further() {
    let big = format!(r#"{{"pad":"{}"}}"#, "x".repeat(3 << 20));
    let server = serve(big).await;
    let mut s = settings(&server.base_url);
    s.max_response_bytes = 1 << 20;
    let p = provider(s);
    let err = p
        .complete(&p.prepare(&ask("hi"), &catalog()))
        .await
        .unwrap_err();
    assert_eq!(err.class, ErrorClass::BadResponse, "{err}");
    assert_eq!(err.attempts, 1, "not retried");
    assert!(err.message.contains("larger than 1048576 bytes"), "{err}");
}

#[tokio::test]
async fn malformed_tool_calls_are_bad_responses_not_model_failures() {
    let wrap = |calls: &str| {
        format!(
            r#"{{"id":"x","object":"chat.completion","choices":[{{"index":0,"message":{{"role":"assistant","content":null,"tool_calls":{calls}}},"finish_reason":"tool_calls"}}]}}"#
        )
    };
    for (calls, says) in [
        (
            r#"{"id":"c","type":"function","function":{"name":"get_weather","arguments":"{}"}}"#,
            "malformed tool_calls: expected an array",
        ),
        (r#"["get_weather"]"#, "tool_calls[0] is not an object"),
        (
            r#"[{"id":"c","type":"function","function":{"arguments":"{}"}}]"#,
            "tool_calls[0] has no name",
        ),
    ] {
        let server = serve(wrap(calls)).await;
        let p = provider(settings(&server.base_url));
        let err = p
            .complete(&p.prepare(&ask("hi"), &catalog()))
            .await
            .unwrap_err();
        assert_eq!(err.class, ErrorClass::BadResponse, "{calls}: {err}");
        assert!(err.message.contains(says), "{calls}: {err}");
    }
    // An explicit null is "no calls", as some servers send it.
    let turn = complete_once(wrap("null")).await;
    assert!(turn.tool_calls.is_empty());
}

#[tokio::test]
async fn request_body_and_headers_have_the_wire_shape() {
    let seen: Arc<Mutex<Vec<FakeRequest>>> = Arc::default();
    let log = seen.clone();
    let server = FakeServer::start(move |req: &FakeRequest| {
        log.lock().unwrap().push(req.clone());
        FakeResponse::ok(text_body("fine"))
    })
    .await;
    let messages = vec![
        Message::System {
            content: "You are a weather bot.".into(),
        },
        Message::User {
            content: "What's the weather in Paris?".into(),
        },
        Message::Assistant {
            content: None,
            tool_calls: vec![ToolCall {
                id: Some("call_abc123".into()),
                name: "get_weather".into(),
                arguments: json!({"location": "Paris, France"}),
                unparsed_arguments: None,
                thought_signature: None,
            }],
        },
        Message::Tool {
            call_id: "call_abc123".into(),
            content: "15 degrees".into(),
            is_error: false,
        },
        Message::User {
            content: "And in Rome?".into(),
        },
    ];
    // With a key, and a trailing slash on the base URL.
    let mut s = settings(&format!("{}/", server.base_url));
    s.api_key = Some(SecretString::new(KEY.into()));
    s.temperature = Some(0.5);
    s.max_tokens = Some(256);
    s.tool_choice = Some(toolscore_core::ToolChoice::Required);
    s.parallel_tool_calls = Some(false);
    let p = provider(s);
    p.complete(&p.prepare(&messages, &catalog()))
        .await
        .expect("success");
    // Without a key.
    let p2 = provider(settings(&server.base_url));
    p2.complete(&p2.prepare(&messages, &catalog()))
        .await
        .expect("success");

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    let r = &seen[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(r.header("content-type"), Some("application/json"));
    let b = &r.body;
    assert_eq!(b["model"], "fake-model");
    assert_eq!(b["temperature"], 0.5);
    assert_eq!(b["max_tokens"], 256);
    assert_eq!(b["tool_choice"], "required");
    assert_eq!(b["parallel_tool_calls"], false);
    // Unconfigured, neither is sent: the request an application that sets nothing sends.
    let unset = &seen[1].body;
    assert!(unset.get("tool_choice").is_none(), "{unset}");
    assert!(unset.get("parallel_tool_calls").is_none(), "{unset}");
    assert_eq!(b["tools"][0]["type"], "function");
    assert_eq!(b["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(
        b["tools"][0]["function"]["description"],
        "Get the current weather in a given location"
    );
    assert_eq!(
        b["tools"][0]["function"]["parameters"]["required"],
        json!(["location"])
    );
    assert_eq!(b["tools"].as_array().unwrap().len(), 2);
    let m = b["messages"].as_array().unwrap();
    let roles: Vec<&str> = m.iter().map(|x| x["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "user"]);
    assert!(
        m[2]["content"].is_null(),
        "assistant content must be null: {}",
        m[2]
    );
    assert_eq!(m[2]["tool_calls"][0]["id"], "call_abc123");
    assert_eq!(m[2]["tool_calls"][0]["type"], "function");
    let args = m[2]["tool_calls"][0]["function"]["arguments"]
        .as_str()
        .expect("arguments must be a JSON string");
    assert_eq!(
        serde_json::from_str::<Value>(args).unwrap(),
        json!({"location": "Paris, France"})
    );
    assert_eq!(m[3]["tool_call_id"], "call_abc123");
    assert_eq!(m[3]["content"], "15 degrees");
    assert_eq!(last_user_message(r).as_deref(), Some("And in Rome?"));

    let r2 = &seen[1];
    assert_eq!(r2.header("authorization"), None);
    assert!(r2.body.get("temperature").is_none());
    assert!(r2.body.get("max_tokens").is_none());
}

#[tokio::test]
async fn the_api_key_never_appears_in_errors() {
    // The server echoes the Authorization header back in every error body.
    let server = FakeServer::start(|req: &FakeRequest| {
        let auth = req.header("authorization").unwrap_or("").to_owned();
        let msg = format!("Incorrect API key provided: {auth}. header was {auth}");
        match req.seq % 4 {
            0 => FakeResponse::status(
                401,
                error_body(&msg, "invalid_request_error", Some("invalid_api_key")),
            ),
            1 => FakeResponse::status(
                500,
                format!("internal error, key={}", auth.trim_start_matches("Bearer ")),
            ),
            2 => FakeResponse::ok(error_body(&msg, "invalid_request_error", None)),
            _ => FakeResponse::ok(format!("not json {auth}")),
        }
    })
    .await;
    let mut s = settings(&server.base_url);
    s.api_key = Some(SecretString::new(KEY.into()));
    s.max_retries = 0;
    let p = provider(s);
    let req = p.prepare(&ask("hi"), &catalog());
    for _ in 0..4 {
        let err = p.complete(&req).await.unwrap_err();
        let shown = format!("{err} | {err:?} | {}", err.message);
        assert!(!shown.contains(KEY), "key leaked: {shown}");
        assert!(!shown.contains("0123456789abcdef"), "key leaked: {shown}");
        assert!(shown.contains("[REDACTED]"), "{shown}");
    }
    assert_eq!(server.requests_seen(), 4);
    // The provider and its settings do not print the key either.
    let shown = format!("{p:?} {:?}", p.settings());
    assert!(!shown.contains(KEY), "{shown}");
    // Nor does decode() of a recorded body.
    let err = p.decode(format!("garbage {KEY}").as_bytes()).unwrap_err();
    assert!(!format!("{err:?}").contains(KEY));
}

#[test]
fn prepare_is_deterministic_and_hash_tracks_inputs() {
    let p = Provider::new(settings("http://127.0.0.1:9/v1"), reqwest::Client::new());
    let messages = ask("Weather in Paris?");
    let a = p.prepare(&messages, &catalog());
    let b = p.prepare(&messages, &catalog());
    assert_eq!(a.request_hash, b.request_hash);
    assert_eq!(a.body, b.body);
    assert_eq!(a.request_hash.len(), 64);
    assert!(a.request_hash.chars().all(|c| c.is_ascii_hexdigit()));

    // A different catalog (fingerprint) changes the hash.
    let mut tools = catalog().tools;
    tools[0].description = "Weather lookup".into();
    let other = Catalog::new(tools, "test".into());
    assert_ne!(other.fingerprint, catalog().fingerprint);
    assert_ne!(p.prepare(&messages, &other).request_hash, a.request_hash);

    // A different temperature changes the hash.
    let mut s = settings("http://127.0.0.1:9/v1");
    s.temperature = Some(0.0);
    let p_t = Provider::new(s, reqwest::Client::new());
    assert_ne!(
        p_t.prepare(&messages, &catalog()).request_hash,
        a.request_hash
    );

    // The messages change it; the base URL and key do not.
    assert_ne!(
        p.prepare(&ask("Weather in Rome?"), &catalog()).request_hash,
        a.request_hash
    );
    let mut s = settings("http://other.example/v1");
    s.api_key = Some(SecretString::new(KEY.into()));
    let p_u = Provider::new(s, reqwest::Client::new());
    assert_eq!(
        p_u.prepare(&messages, &catalog()).request_hash,
        a.request_hash
    );
}

#[tokio::test]
async fn many_concurrent_requests_share_the_client() {
    let server = FakeServer::start(|req: &FakeRequest| {
        let who = last_user_message(req).unwrap_or_default();
        FakeResponse::ok(tool_call_body(&[(
            "get_weather",
            &json!({"location": who}).to_string(),
        )]))
    })
    .await;
    let p = Arc::new(provider(settings(&server.base_url)));
    let done = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for i in 0..200 {
        let p = p.clone();
        let done = done.clone();
        tasks.push(tokio::spawn(async move {
            let city = format!("city-{i}");
            let req = p.prepare(&ask(&city), &catalog());
            let ex = p.complete(&req).await.expect("success");
            assert_eq!(ex.turn.tool_calls[0].arguments, json!({"location": city}));
            done.fetch_add(1, Ordering::SeqCst);
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(done.load(Ordering::SeqCst), 200);
    assert_eq!(server.requests_seen(), 200);
}

#[test]
fn background_server_works_without_a_runtime() {
    let server = FakeServer::start_in_background(|_| FakeResponse::ok(text_body("bg")));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let p = Provider::new(settings(&server.base_url), http_client(2).unwrap());
    let ex = rt
        .block_on(p.complete(&p.prepare(&ask("hi"), &catalog())))
        .expect("success");
    assert_eq!(ex.turn.text.as_deref(), Some("bg"));
    assert_eq!(server.requests_seen(), 1);
}
