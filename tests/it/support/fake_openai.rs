//! An in-process fake of an OpenAI-compatible Chat Completions server (HTTP/1.1, keep-alive),
//! for integration tests and the throughput benchmark.
//!
//! The handler sees every request (path, lower-case headers, parsed JSON body, arrival number)
//! and returns the status, headers, body and an optional delay. The server stops when the
//! `FakeServer` is dropped.
#![allow(dead_code)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};

/// One request as the fake received it.
#[derive(Debug, Clone)]
pub(crate) struct FakeRequest {
    /// The method (`GET`, `POST`).
    pub method: String,
    pub path: String,
    /// The query string without `?` (empty when there is none).
    pub query: String,
    /// Header names in lower case, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Value::Null` when it was not JSON).
    pub body: Value,
    /// The body as text (a multipart upload is not JSON).
    pub raw_body: String,
    /// 0-based global arrival count.
    pub seq: u64,
}

impl FakeRequest {
    /// The first value of a header (name compared case-insensitively).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the fake answers.
#[derive(Debug, Clone)]
pub(crate) struct FakeResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Wait this long before answering.
    pub delay: Option<Duration>,
}

impl FakeResponse {
    /// 200 with a JSON body.
    pub(crate) fn ok(body: impl Into<String>) -> Self {
        FakeResponse {
            status: 200,
            headers: Vec::new(),
            body: body.into(),
            delay: None,
        }
    }

    pub(crate) fn status(status: u16, body: impl Into<String>) -> Self {
        FakeResponse {
            status,
            headers: Vec::new(),
            body: body.into(),
            delay: None,
        }
    }

    pub(crate) fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub(crate) fn delayed(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }
}

type Handler = dyn Fn(&FakeRequest) -> FakeResponse + Send + Sync + 'static;

struct State {
    handler: Box<Handler>,
    seq: AtomicU64,
}

enum Guard {
    /// Runs on the caller's runtime: dropping the sender stops every connection task.
    InRuntime {
        _shutdown: watch::Sender<()>,
        accept: tokio::task::JoinHandle<()>,
    },
    /// Runs on its own runtime thread, which exits when `stop` is dropped.
    Background { _stop: oneshot::Sender<()> },
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Guard::InRuntime { accept, .. } = self {
            accept.abort();
        }
    }
}

/// A running fake server; stops when dropped.
pub(crate) struct FakeServer {
    /// `http://127.0.0.1:PORT/v1`
    pub base_url: String,
    pub addr: SocketAddr,
    state: Arc<State>,
    _guard: Guard,
}

impl FakeServer {
    /// Starts on the current tokio runtime, on a free local port.
    pub(crate) async fn start(
        handler: impl Fn(&FakeRequest) -> FakeResponse + Send + Sync + 'static,
    ) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a local port for the fake server");
        let addr = listener
            .local_addr()
            .expect("local address of the fake server");
        let state = Arc::new(State {
            handler: Box::new(handler),
            seq: AtomicU64::new(0),
        });
        let (shutdown, rx) = watch::channel(());
        let accept = tokio::spawn(accept_loop(listener, state.clone(), rx));
        FakeServer {
            base_url: format!("http://{addr}/v1"),
            addr,
            state,
            _guard: Guard::InRuntime {
                _shutdown: shutdown,
                accept,
            },
        }
    }

    /// Starts on a background thread with its own runtime, for tests that drive a child
    /// process or otherwise have no runtime of their own.
    pub(crate) fn start_in_background(
        handler: impl Fn(&FakeRequest) -> FakeResponse + Send + Sync + 'static,
    ) -> FakeServer {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let workers = std::thread::available_parallelism()
            .map(|n| n.get().min(4))
            .unwrap_or(2);
        std::thread::Builder::new()
            .name("fake-openai".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(workers)
                    .enable_all()
                    .build()
                    .expect("fake server runtime");
                rt.block_on(async move {
                    let server = FakeServer::start(handler).await;
                    let _ =
                        ready_tx.send((server.base_url.clone(), server.addr, server.state.clone()));
                    // Resolves when the `FakeServer` (holding the sender) is dropped.
                    let _ = stop_rx.await;
                    drop(server);
                });
            })
            .expect("spawn the fake server thread");
        let (base_url, addr, state) = ready_rx.recv().expect("fake server thread started");
        FakeServer {
            base_url,
            addr,
            state,
            _guard: Guard::Background { _stop: stop_tx },
        }
    }

    /// How many requests have arrived so far.
    pub(crate) fn requests_seen(&self) -> u64 {
        self.state.seq.load(Ordering::SeqCst)
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<State>, mut shutdown: watch::Receiver<()>) {
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // E.g. too many open files: back off briefly instead of spinning.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                }
            },
            _ = shutdown.changed() => return,
        };
        let _ = stream.set_nodelay(true);
        let state = state.clone();
        let mut shutdown = shutdown.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| handle(state.clone(), req));
            let conn = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                _ = conn => {}
                _ = shutdown.changed() => {}
            }
        });
    }
}

async fn handle(
    state: Arc<State>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let seq = state.seq.fetch_add(1, Ordering::SeqCst);
    let method = req.method().as_str().to_owned();
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or("").to_owned();
    let headers = req
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let raw = match req.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    let request = FakeRequest {
        method,
        path,
        query,
        headers,
        body,
        raw_body: String::from_utf8_lossy(&raw).into_owned(),
        seq,
    };
    let answer = (state.handler)(&request);
    if let Some(delay) = answer.delay {
        tokio::time::sleep(delay).await;
    }
    let mut response = Response::new(Full::new(Bytes::from(answer.body)));
    *response.status_mut() =
        StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    for (name, value) in &answer.headers {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.append(n, v);
        }
    }
    if !headers.contains_key(CONTENT_TYPE) {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    }
    Ok(response)
}

fn usage() -> Value {
    json!({"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60})
}

/// An OpenAI-shaped response with these tool calls (`(name, raw arguments string)`), ids
/// `call_0`, `call_1`, …, finish_reason `tool_calls`.
pub(crate) fn tool_call_body(calls: &[(&str, &str)]) -> String {
    let tool_calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| json!({"id": format!("call_{i}"), "type": "function", "function": {"name": name, "arguments": args}}))
        .collect();
    json!({
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 1_700_000_000u64, "model": "fake-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": tool_calls}, "logprobs": null, "finish_reason": "tool_calls"}],
        "usage": usage(),
    })
    .to_string()
}

/// An OpenAI-shaped text answer, finish_reason `stop`.
pub(crate) fn text_body(text: &str) -> String {
    json!({
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 1_700_000_000u64, "model": "fake-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": null}, "logprobs": null, "finish_reason": "stop"}],
        "usage": usage(),
    })
    .to_string()
}

/// An OpenAI error envelope `{"error": {message, type, param, code}}`.
pub(crate) fn error_body(message: &str, kind: &str, code: Option<&str>) -> String {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}}).to_string()
}

/// The text of the last `role: "user"` message of the request (string or text parts).
pub(crate) fn last_user_message(req: &FakeRequest) -> Option<String> {
    let messages = req.body.get("messages")?.as_array()?;
    let last = messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))?;
    match last.get("content")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect(),
        ),
        _ => None,
    }
}

/// The contents of the tool results the request carries (role `tool` messages), in order: what
/// a scripted fake model reads back of a multi-step trial.
pub(crate) fn tool_results(req: &FakeRequest) -> Vec<String> {
    req.body["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The text of the first `role: "user"` message of the request (a string content), or "".
pub(crate) fn first_user_message(req: &FakeRequest) -> String {
    req.body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}
