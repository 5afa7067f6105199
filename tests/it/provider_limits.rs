//! Per-provider limits against fake servers: requests in flight, requests per minute, and
//! pauses when the provider's rate-limit headers say the budget is spent or a 429 asks for a
//! wait, through the library and through the binary.

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::json;
use support::*;
use toolscore_core::Message;
use toolscore_core::catalog::{Catalog, Tool};
use toolscore_provider::{Provider, ProviderKind, ProviderSettings, SecretString, http_client};

fn catalog() -> Catalog {
    Catalog::new(
        vec![Tool {
            name: "get_weather".into(),
            description: String::new(),
            input_schema: json!({"type": "object", "properties": {"location": {"type": "string"}}}),
            ..Default::default()
        }],
        "test".into(),
    )
}

fn provider(
    kind: &str,
    name: &str,
    base_url: &str,
    tune: impl FnOnce(&mut ProviderSettings),
) -> Provider {
    let kind: ProviderKind = kind.parse().unwrap();
    let mut s = ProviderSettings::new(kind, name, base_url, "m");
    s.api_key = Some(SecretString::new(FAKE_KEY.into()));
    s.timeout = Duration::from_secs(5);
    s.retry_base = Duration::from_millis(10);
    s.retry_cap = Duration::from_millis(40);
    tune(&mut s);
    Provider::new(s, http_client(8).unwrap())
}

fn ask() -> Vec<Message> {
    vec![Message::User {
        content: "What's the weather in Paris?".into(),
    }]
}

/// A fake answering with `answer(seq)`, logging each arrival time.
async fn timed(
    answer: impl Fn(u64) -> FakeResponse + Send + Sync + 'static,
) -> (FakeServer, Arc<Mutex<Vec<Instant>>>) {
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let log = arrivals.clone();
    let server = FakeServer::start(move |req: &FakeRequest| {
        log.lock().unwrap().push(Instant::now());
        answer(req.seq)
    })
    .await;
    (server, arrivals)
}

fn gap(arrivals: &Mutex<Vec<Instant>>, a: usize, b: usize) -> Duration {
    let t = arrivals.lock().unwrap();
    t[b].duration_since(t[a])
}

#[tokio::test]
async fn openai_headers_announcing_a_spent_budget_pause_the_next_request() {
    let (server, arrivals) = timed(|seq| {
        let r = FakeResponse::ok(text_body("ok"));
        if seq == 0 {
            r.header("x-ratelimit-remaining-requests", "0")
                .header("x-ratelimit-reset-requests", "400ms")
        } else {
            r.header("x-ratelimit-remaining-requests", "59")
        }
    })
    .await;
    let p = provider("openai-compat", "limits-openai", &server.base_url, |_| {});
    let req = p.prepare(&ask(), &catalog());
    for _ in 0..3 {
        p.complete(&req).await.unwrap();
    }
    assert!(
        gap(&arrivals, 0, 1) >= Duration::from_millis(390),
        "{:?}",
        gap(&arrivals, 0, 1)
    );
    // The second answer says 59 requests remain: the third goes at once. A limiter that
    // paused every request would fail here.
    assert!(
        gap(&arrivals, 1, 2) < Duration::from_millis(200),
        "{:?}",
        gap(&arrivals, 1, 2)
    );
}

#[tokio::test]
async fn anthropic_headers_announcing_a_spent_budget_pause_the_next_request() {
    let (server, arrivals) = timed(|seq| {
        let r = FakeResponse::ok(anthropic_text_body("ok"));
        if seq == 0 {
            let reset =
                humantime::format_rfc3339_millis(SystemTime::now() + Duration::from_millis(500));
            r.header("anthropic-ratelimit-requests-remaining", "0")
                .header("anthropic-ratelimit-requests-reset", &reset.to_string())
        } else {
            r
        }
    })
    .await;
    let p = provider("anthropic", "limits-anthropic", &server.base_url, |_| {});
    let req = p.prepare(&ask(), &catalog());
    for _ in 0..3 {
        p.complete(&req).await.unwrap();
    }
    assert!(
        gap(&arrivals, 0, 1) >= Duration::from_millis(400),
        "{:?}",
        gap(&arrivals, 0, 1)
    );
    // The second answer announces nothing spent: the third goes at once.
    assert!(
        gap(&arrivals, 1, 2) < Duration::from_millis(200),
        "{:?}",
        gap(&arrivals, 1, 2)
    );
}

#[tokio::test]
async fn a_429_asking_for_a_wait_holds_the_other_requests_too() {
    let (server, arrivals) = timed(|seq| {
        if seq == 0 {
            FakeResponse::status(
                429,
                openai_error("slow down", "requests", Some("rate_limit_exceeded")),
            )
            .header("retry-after-ms", "500")
        } else {
            FakeResponse::ok(text_body("ok"))
        }
    })
    .await;
    let p = provider("openai-compat", "limits-429", &server.base_url, |_| {});
    let req = p.prepare(&ask(), &catalog());
    let first = p.complete(&req);
    let second = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        p.complete(&req).await
    };
    let (a, b) = tokio::join!(first, second);
    assert_eq!(a.unwrap().attempts, 2);
    assert_eq!(b.unwrap().attempts, 1);
    // The second request, started 100 ms in, waited out the first one's 500 ms.
    assert!(
        gap(&arrivals, 0, 1) >= Duration::from_millis(490),
        "{:?}",
        gap(&arrivals, 0, 1)
    );
}

#[tokio::test]
async fn requests_in_flight_are_capped() {
    let (server, arrivals) =
        timed(|_| FakeResponse::ok(text_body("ok")).delayed(Duration::from_millis(300))).await;
    let p = provider("openai-compat", "limits-in-flight", &server.base_url, |s| {
        s.max_in_flight = Some(2);
    });
    let req = p.prepare(&ask(), &catalog());
    let tasks: Vec<_> = (0..6)
        .map(|_| {
            let (p, req) = (p.clone(), req.clone());
            tokio::spawn(async move { p.complete(&req).await })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let t = arrivals.lock().unwrap().clone();
    assert_eq!(t.len(), 6);
    // Never more than 2 arrivals within one 300 ms answer time (250 ms leaves room for jitter)…
    let mut most = 0;
    for (i, start) in t.iter().enumerate() {
        let within = t[i..]
            .iter()
            .filter(|x| x.duration_since(*start) < Duration::from_millis(250))
            .count();
        assert!(within <= 2, "{within} requests in flight at once");
        most = most.max(within);
    }
    // …and the cap is used, not undercut: two at a time, three waves of 300 ms (a cap of 1
    // would take five gaps, 1.5 s).
    assert_eq!(most, 2, "never two requests in flight together");
    let span = t[5].duration_since(t[0]);
    assert!(
        span >= Duration::from_millis(550) && span < Duration::from_millis(1100),
        "{span:?} from the first arrival to the last"
    );
}

#[test]
fn the_binary_spaces_requests_per_minute() {
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let log = arrivals.clone();
    let server = FakeServer::start_in_background(move |req: &FakeRequest| {
        log.lock().unwrap().push(Instant::now());
        anthropic_model(req)
    });
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::write(
        dir.path().join("data/tools.json"),
        r#"[{"name": "get_weather", "description": "Weather.", "inputSchema": {"type": "object", "properties": {"location": {"type": "string"}}}}]"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("data/cases.jsonl"),
        "{\"id\": \"weather\", \"messages\": [{\"role\": \"user\", \"content\": \"What's the weather in Paris?\"}], \"expect\": {\"tool\": \"get_weather\"}}\n",
    )
    .unwrap();
    let r = toolscore_env(
        dir.path(),
        &[
            "run",
            "--provider",
            "anthropic:claude-sonnet-4-5",
            "--base-url",
            &server.base_url,
            "--dataset",
            "data",
            "--trials",
            "5",
            "--concurrency",
            "8",
            "--requests-per-minute",
            "600",
            "--out",
            "out",
            "--progress",
            "off",
        ],
        &[("ANTHROPIC_API_KEY", FAKE_KEY)],
    );
    assert_eq!(r.code, 0, "{}", r.transcript());
    let mut t = arrivals.lock().unwrap().clone();
    t.sort();
    assert_eq!(t.len(), 5);
    // 600 a minute: one every 100 ms, however many trials are in flight; not faster, and not
    // much slower (four gaps of 100 ms; ten times too slow would take 4 s).
    for w in t.windows(2) {
        let gap = w[1].duration_since(w[0]);
        assert!(gap >= Duration::from_millis(90), "{gap:?}");
    }
    let span = t[4].duration_since(t[0]);
    assert!(
        span < Duration::from_millis(1200),
        "{span:?} for four gaps of 100 ms"
    );
}

/// A 429 halves the requests in flight before the retries go out: eight requests meet a 429
/// together, and their retries go four at a time, the window widening only as answers come
/// back.
#[tokio::test]
async fn a_429_halves_the_requests_in_flight() {
    let (server, arrivals) = timed(|seq| {
        if seq < 8 {
            FakeResponse::status(
                429,
                r#"{"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}"#,
            )
            .delayed(Duration::from_millis(100))
        } else {
            FakeResponse::ok(text_body("ok")).delayed(Duration::from_millis(300))
        }
    })
    .await;
    let p = provider("openai-compat", "limits-adaptive", &server.base_url, |_| {});
    let req = p.prepare(&ask(), &catalog());
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (p, req) = (p.clone(), req.clone());
            tokio::spawn(async move { p.complete(&req).await })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let mut t = arrivals.lock().unwrap().clone();
    t.sort();
    assert_eq!(t.len(), 16, "8 refused, 8 retried");
    // All eight first attempts went out together (no limit before a push-back)…
    assert!(t[7].duration_since(t[0]) < Duration::from_millis(100));
    // …and of the retries only four were in flight at once: the fifth waited for an answer.
    let retries = &t[8..];
    let together = retries
        .iter()
        .filter(|x| x.duration_since(retries[0]) < Duration::from_millis(250))
        .count();
    assert_eq!(together, 4, "{retries:?}");
}

#[test]
fn tokens_per_minute_of_zero_is_refused() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let r = toolscore_env(
        root,
        &[
            "run",
            "--provider",
            "anthropic:claude-sonnet-4-5",
            "--tokens-per-minute",
            "0",
        ],
        &[("ANTHROPIC_API_KEY", FAKE_KEY)],
    );
    assert_eq!(r.code, 2, "{}", r.transcript());
    assert!(
        r.stderr
            .contains("tokens_per_minute (--tokens-per-minute) must be at least 1"),
        "{}",
        r.stderr
    );
}
