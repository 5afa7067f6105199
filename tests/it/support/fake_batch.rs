//! Fakes of the three batch APIs (reference/providers.md, the Batch API sections): OpenAI Batch
//! (file upload, batch over it, output and error files), Anthropic Message Batches (inline
//! requests, `results_url` JSONL) and Gemini batch mode (inline requests, inline answers).
//!
//! Each checks what the real API checks (paths, auth headers, the shapes of lines and
//! requests, unique custom ids) and answers every request as the online fake of its provider
//! does (`fake_providers.rs`), so a batch run and an online run see the same answers. Results
//! come back in reverse order, to prove nothing relies on it. A test sets which requests fail,
//! which are left out, whether the batch expires, and can hold a batch running until it says.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::fake_openai::{FakeRequest, FakeResponse, FakeServer, tool_call_body};
use super::fake_providers::{
    FAKE_KEY, anthropic_error, anthropic_model, gemini_error, gemini_model, openai_error,
    responses_model,
};

/// Which batch API a fake speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BatchApi {
    OpenAi,
    Anthropic,
    Gemini,
}

/// What a test controls, and what the fake saw.
#[derive(Debug, Default)]
pub(crate) struct BatchScript {
    /// Keep every batch running (polls answer in progress) until set to false.
    pub hold: bool,
    /// Polls a batch answers "running" before it ends.
    pub polls_before_end: u32,
    /// Custom ids whose request fails inside the batch (a 500 / `errored` / an RPC error).
    pub fail: HashSet<String>,
    /// Custom ids the finished batch leaves out of its results.
    pub drop: HashSet<String>,
    /// The batch expires: only the first `answered_before_expiry` requests ran.
    pub expire: bool,
    pub answered_before_expiry: usize,
    /// Batches created, and polls answered.
    pub submissions: u32,
    pub polls: u32,
    /// Requests per batch created, in order.
    pub submitted: Vec<Vec<String>>,
    /// The fake's own state: uploaded and output files, and the batches by id.
    pub files: BTreeMap<String, String>,
    pub batches: BTreeMap<String, Job>,
}

#[derive(Debug, Clone)]
pub(crate) struct Job {
    /// (custom id, request body), in the order sent.
    requests: Vec<(String, Value)>,
    polls: u32,
    /// OpenAI: the endpoint each line targets.
    url: String,
}

/// A running fake batch API; `script` is shared with the server.
pub(crate) struct FakeBatch {
    pub server: FakeServer,
    pub script: Arc<Mutex<BatchScript>>,
}

impl FakeBatch {
    pub(crate) fn start(api: BatchApi, script: BatchScript) -> FakeBatch {
        let script = Arc::new(Mutex::new(script));
        let shared = Arc::clone(&script);
        let server = FakeServer::start_in_background(move |req: &FakeRequest| {
            let mut s = shared.lock().expect("script lock");
            match api {
                BatchApi::OpenAi => openai(&mut s, req),
                BatchApi::Anthropic => anthropic(&mut s, req),
                BatchApi::Gemini => gemini(&mut s, req),
            }
        });
        FakeBatch { server, script }
    }

    pub(crate) fn with<T>(&self, f: impl FnOnce(&mut BatchScript) -> T) -> T {
        f(&mut self.script.lock().expect("script lock"))
    }
}

/// Whether a batch still runs at this poll (and counts the poll).
fn running(s: &mut BatchScript, id: &str) -> Option<bool> {
    s.polls += 1;
    let hold = s.hold;
    let before = s.polls_before_end;
    let job = s.batches.get_mut(id)?;
    job.polls += 1;
    Some(hold || job.polls <= before)
}

/// What happened to each request of a finished batch, in reverse order of sending.
enum Fate {
    Answered(Value),
    Failed,
    Expired,
}

fn fates(s: &BatchScript, job: &Job, answer: &dyn Fn(&Value) -> Value) -> Vec<(String, Fate)> {
    job.requests
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, (id, _))| !s.drop.contains(id))
        .map(|(i, (id, body))| {
            let fate = if s.expire && i >= s.answered_before_expiry {
                Fate::Expired
            } else if s.fail.contains(id) {
                Fate::Failed
            } else {
                Fate::Answered(answer(body))
            };
            (id.clone(), fate)
        })
        .collect()
}

/// The online fake's answer to a body sent to `path` with the batch call's headers.
fn online(
    req: &FakeRequest,
    path: &str,
    body: &Value,
    model: fn(&FakeRequest) -> FakeResponse,
) -> Value {
    let inner = FakeRequest {
        method: "POST".into(),
        path: path.into(),
        query: String::new(),
        headers: req.headers.clone(),
        body: body.clone(),
        raw_body: body.to_string(),
        seq: req.seq,
    };
    let answer = model(&inner);
    assert_eq!(
        answer.status, 200,
        "the online fake refused a batch line: {}",
        answer.body
    );
    serde_json::from_str(&answer.body).expect("online fake answers JSON")
}

/// The chat-completions answer the other fakes give: a call to get_weather for Paris.
fn chat_model(_req: &FakeRequest) -> FakeResponse {
    FakeResponse::ok(tool_call_body(&[(
        "get_weather",
        "{\"location\": \"Paris, France\"}",
    )]))
}

// ---------------------------------------------------------------- OpenAI Batch

fn openai(s: &mut BatchScript, req: &FakeRequest) -> FakeResponse {
    let bad = |m: &str| FakeResponse::status(400, openai_error(m, "invalid_request_error", None));
    if req.header("authorization") != Some(&format!("Bearer {FAKE_KEY}")) {
        return FakeResponse::status(
            401,
            openai_error(
                "Incorrect API key provided",
                "invalid_request_error",
                Some("invalid_api_key"),
            ),
        );
    }
    let path = req.path.as_str();
    match (req.method.as_str(), path) {
        // The online endpoint, for runs to compare with.
        ("POST", "/v1/chat/completions") => chat_model(req),
        ("POST", "/v1/responses") => responses_model(req),
        ("POST", "/v1/files") => {
            let Some(boundary) = req
                .header("content-type")
                .and_then(|c| c.strip_prefix("multipart/form-data; boundary="))
            else {
                return bad("Expected a multipart/form-data upload");
            };
            let parts = multipart_parts(&req.raw_body, boundary);
            if parts.get("purpose").map(String::as_str) != Some("batch") {
                return bad("Missing required parameter: 'purpose'.");
            }
            let Some(file) = parts.get("file") else {
                return bad("Missing required parameter: 'file'.");
            };
            let id = format!("file-{}", s.files.len() + 1);
            s.files.insert(id.clone(), file.clone());
            FakeResponse::ok(
                json!({"id": id, "object": "file", "bytes": file.len(), "created_at": 1_764_720_000u64,
                  "filename": "input.jsonl", "purpose": "batch"})
                .to_string(),
            )
        }
        ("POST", "/v1/batches") => {
            let b = &req.body;
            if b["completion_window"] != "24h" {
                return bad("completion_window must be 24h");
            }
            let endpoint = b["endpoint"].as_str().unwrap_or("");
            if !["/v1/chat/completions", "/v1/responses"].contains(&endpoint) {
                return bad("Invalid endpoint");
            }
            let Some(text) = b["input_file_id"].as_str().and_then(|f| s.files.get(f)) else {
                return FakeResponse::status(
                    404,
                    openai_error("No such File object", "invalid_request_error", None),
                );
            };
            let mut requests = Vec::new();
            let mut seen = HashSet::new();
            for (n, line) in text.lines().enumerate() {
                let Ok(v) = serde_json::from_str::<Value>(line) else {
                    return bad(&format!("line {}: invalid JSON", n + 1));
                };
                let id = v["custom_id"].as_str().unwrap_or("").to_owned();
                if id.is_empty() || !seen.insert(id.clone()) {
                    return bad(&format!("line {}: custom_id missing or duplicated", n + 1));
                }
                if v["method"] != "POST" || v["url"] != endpoint || !v["body"].is_object() {
                    return bad(&format!("line {}: method, url or body wrong", n + 1));
                }
                requests.push((id, v["body"].clone()));
            }
            let id = format!("batch_{}", s.batches.len() + 1);
            s.submissions += 1;
            s.submitted
                .push(requests.iter().map(|(i, _)| i.clone()).collect());
            let total = requests.len();
            s.batches.insert(
                id.clone(),
                Job {
                    requests,
                    polls: 0,
                    url: endpoint.to_owned(),
                },
            );
            FakeResponse::ok(
                json!({"id": id, "object": "batch", "endpoint": endpoint, "status": "validating",
                  "input_file_id": b["input_file_id"], "completion_window": "24h",
                  "request_counts": {"total": total, "completed": 0, "failed": 0}})
                .to_string(),
            )
        }
        ("GET", p) if p.starts_with("/v1/batches/") => {
            let id = &p["/v1/batches/".len()..];
            let Some(still) = running(s, id) else {
                return FakeResponse::status(
                    404,
                    openai_error("No such Batch", "invalid_request_error", None),
                );
            };
            let job = s.batches[id].clone();
            let total = job.requests.len();
            if still {
                return FakeResponse::ok(
                    json!({"id": id, "object": "batch", "status": "in_progress",
                      "request_counts": {"total": total, "completed": total / 2, "failed": 0}})
                    .to_string(),
                );
            }
            let model: fn(&FakeRequest) -> FakeResponse = if job.url == "/v1/responses" {
                responses_model
            } else {
                chat_model
            };
            let fates = fates(s, &job, &|body| online(req, &job.url, body, model));
            let (mut output, mut errors) = (String::new(), String::new());
            let (mut completed, mut failed) = (0, 0);
            for (n, (custom_id, fate)) in fates.into_iter().enumerate() {
                let line = match fate {
                    Fate::Answered(body) => {
                        completed += 1;
                        json!({"id": format!("batch_req_{n}"), "custom_id": custom_id,
                          "response": {"status_code": 200, "request_id": format!("req_{n}"), "body": body}, "error": null})
                    }
                    Fate::Failed => {
                        failed += 1;
                        json!({"id": format!("batch_req_{n}"), "custom_id": custom_id,
                          "response": {"status_code": 500, "request_id": format!("req_{n}"),
                            "body": serde_json::from_str::<Value>(&openai_error("The server had an error while processing your request.", "server_error", None)).unwrap_or_default()},
                          "error": null})
                    }
                    Fate::Expired => {
                        failed += 1;
                        let line = json!({"id": format!("batch_req_{n}"), "custom_id": custom_id, "response": null,
                          "error": {"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}});
                        errors.push_str(&line.to_string());
                        errors.push('\n');
                        continue;
                    }
                };
                let target = if matches!(line["response"]["status_code"].as_u64(), Some(200)) {
                    &mut output
                } else {
                    &mut errors
                };
                target.push_str(&line.to_string());
                target.push('\n');
            }
            let output_id = format!("file-out-{id}");
            let error_id = format!("file-err-{id}");
            s.files.insert(output_id.clone(), output);
            let has_errors = !errors.is_empty();
            s.files.insert(error_id.clone(), errors);
            FakeResponse::ok(
                json!({"id": id, "object": "batch", "status": if s.expire { "expired" } else { "completed" },
                  "output_file_id": output_id, "error_file_id": if has_errors { Value::from(error_id) } else { Value::Null },
                  "request_counts": {"total": total, "completed": completed, "failed": failed}})
                .to_string(),
            )
        }
        ("GET", p) if p.starts_with("/v1/files/") && p.ends_with("/content") => {
            let id = &p["/v1/files/".len()..p.len() - "/content".len()];
            match s.files.get(id) {
                Some(text) => FakeResponse::ok(text.clone())
                    .header("content-type", "application/octet-stream"),
                None => FakeResponse::status(
                    404,
                    openai_error("No such File object", "invalid_request_error", None),
                ),
            }
        }
        _ => FakeResponse::status(
            404,
            openai_error("Not found", "invalid_request_error", None),
        ),
    }
}

/// The named parts of a multipart/form-data body.
fn multipart_parts(body: &str, boundary: &str) -> BTreeMap<String, String> {
    let mut parts = BTreeMap::new();
    for part in body.split(&format!("--{boundary}")) {
        let Some((head, content)) = part.split_once("\r\n\r\n") else {
            continue;
        };
        let Some(name) = head
            .split("name=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
        else {
            continue;
        };
        let content = content.strip_suffix("\r\n").unwrap_or(content);
        parts.insert(name.to_owned(), content.to_owned());
    }
    parts
}

// ---------------------------------------------------------------- Anthropic Message Batches

fn anthropic(s: &mut BatchScript, req: &FakeRequest) -> FakeResponse {
    let bad = |m: &str| FakeResponse::status(400, anthropic_error("invalid_request_error", m));
    if req.header("x-api-key") != Some(FAKE_KEY) {
        return FakeResponse::status(
            401,
            anthropic_error("authentication_error", "invalid x-api-key"),
        );
    }
    if req.header("anthropic-version") != Some("2023-06-01") {
        return bad("anthropic-version: header is required");
    }
    let path = req.path.as_str();
    let id_rule = regex::Regex::new("^[a-zA-Z0-9_-]{1,64}$").expect("regex");
    match (req.method.as_str(), path) {
        ("POST", "/v1/messages") => anthropic_model(req),
        ("POST", "/v1/messages/batches") => {
            let Some(list) = req.body["requests"].as_array() else {
                return bad("requests: Field required");
            };
            let mut requests = Vec::new();
            let mut seen = HashSet::new();
            for (i, r) in list.iter().enumerate() {
                let id = r["custom_id"].as_str().unwrap_or("");
                if !id_rule.is_match(id) || !seen.insert(id.to_owned()) {
                    return bad(&format!("requests.{i}.custom_id: invalid or duplicated"));
                }
                if !r["params"].is_object() {
                    return bad(&format!("requests.{i}.params: Field required"));
                }
                requests.push((id.to_owned(), r["params"].clone()));
            }
            let id = format!("msgbatch_0{}", s.batches.len() + 1);
            s.submissions += 1;
            s.submitted
                .push(requests.iter().map(|(i, _)| i.clone()).collect());
            let total = requests.len();
            s.batches.insert(
                id.clone(),
                Job {
                    requests,
                    polls: 0,
                    url: String::new(),
                },
            );
            FakeResponse::ok(
                message_batch(&id, "in_progress", total, (0, 0, 0, 0), None).to_string(),
            )
        }
        ("GET", p) if p.starts_with("/v1/messages/batches/") && p.ends_with("/results") => {
            let id = &p["/v1/messages/batches/".len()..p.len() - "/results".len()];
            let Some(job) = s.batches.get(id).cloned() else {
                return FakeResponse::status(404, anthropic_error("not_found_error", "Not Found"));
            };
            let fates = fates(s, &job, &|body| {
                online(req, "/v1/messages", body, anthropic_model)
            });
            let mut text = String::new();
            for (custom_id, fate) in fates {
                let result = match fate {
                    Fate::Answered(message) => json!({"type": "succeeded", "message": message}),
                    Fate::Failed => {
                        json!({"type": "errored", "error": serde_json::from_str::<Value>(&anthropic_error("api_error", "Internal server error")).unwrap_or_default()})
                    }
                    Fate::Expired => json!({"type": "expired"}),
                };
                text.push_str(&json!({"custom_id": custom_id, "result": result}).to_string());
                text.push('\n');
            }
            FakeResponse::ok(text).header("content-type", "application/binary")
        }
        ("GET", p) if p.starts_with("/v1/messages/batches/") => {
            let id = &p["/v1/messages/batches/".len()..];
            let Some(still) = running(s, id) else {
                return FakeResponse::status(404, anthropic_error("not_found_error", "Not Found"));
            };
            let job = s.batches[id].clone();
            let total = job.requests.len();
            if still {
                return FakeResponse::ok(
                    message_batch(id, "in_progress", total, (0, 0, 0, 0), None).to_string(),
                );
            }
            let fates = fates(s, &job, &|_| Value::Null);
            let count = |f: fn(&Fate) -> bool| fates.iter().filter(|(_, x)| f(x)).count();
            let counts = (
                count(|f| matches!(f, Fate::Answered(_))),
                count(|f| matches!(f, Fate::Failed)),
                0,
                count(|f| matches!(f, Fate::Expired)),
            );
            let host = req.header("host").unwrap_or("127.0.0.1");
            let url = format!("http://{host}/v1/messages/batches/{id}/results");
            FakeResponse::ok(message_batch(id, "ended", total, counts, Some(&url)).to_string())
        }
        _ => FakeResponse::status(404, anthropic_error("not_found_error", "Not Found")),
    }
}

/// A `MessageBatch`; `counts` = (succeeded, errored, canceled, expired).
fn message_batch(
    id: &str,
    status: &str,
    total: usize,
    counts: (usize, usize, usize, usize),
    results_url: Option<&str>,
) -> Value {
    let (succeeded, errored, canceled, expired) = counts;
    let processing = if status == "ended" { 0 } else { total };
    json!({"id": id, "type": "message_batch", "processing_status": status,
      "request_counts": {"processing": processing, "succeeded": succeeded, "errored": errored, "canceled": canceled, "expired": expired},
      "ended_at": if status == "ended" { Value::from("2026-12-03T12:00:00Z") } else { Value::Null },
      "created_at": "2026-12-03T11:00:00Z", "expires_at": "2026-12-04T11:00:00Z",
      "cancel_initiated_at": null, "results_url": results_url})
}

// ---------------------------------------------------------------- Gemini batch mode

fn gemini(s: &mut BatchScript, req: &FakeRequest) -> FakeResponse {
    let bad = |m: &str| FakeResponse::status(400, gemini_error(400, "INVALID_ARGUMENT", m));
    if req.header("x-goog-api-key") != Some(FAKE_KEY) {
        return FakeResponse::status(400, super::fake_providers::gemini_bad_key());
    }
    let path = req.path.as_str();
    match req.method.as_str() {
        "POST" if path.ends_with(":generateContent") => gemini_model(req),
        "POST" if path.ends_with(":batchGenerateContent") && path.contains("/models/") => {
            let Some(list) = req
                .body
                .pointer("/batch/inputConfig/requests/requests")
                .and_then(Value::as_array)
            else {
                return bad("batch.inputConfig: requests or fileName is required");
            };
            let mut requests = Vec::new();
            for (i, r) in list.iter().enumerate() {
                if !r["request"].is_object() {
                    return bad(&format!("requests[{i}].request is required"));
                }
                requests.push((
                    r["metadata"]["key"].as_str().unwrap_or("").to_owned(),
                    r["request"].clone(),
                ));
            }
            let id = format!("batches/{}", s.batches.len() + 1);
            s.submissions += 1;
            s.submitted
                .push(requests.iter().map(|(i, _)| i.clone()).collect());
            s.batches.insert(
                id.clone(),
                Job {
                    requests,
                    polls: 0,
                    url: String::new(),
                },
            );
            FakeResponse::ok(
                json!({"name": id, "metadata": {"@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
                  "model": "models/gemini-2.5-flash", "displayName": req.body["batch"]["displayName"], "state": "BATCH_STATE_PENDING"}})
                .to_string(),
            )
        }
        "GET" => {
            let Some(id) = path
                .split_once("/batches/")
                .map(|(_, n)| format!("batches/{n}"))
            else {
                return FakeResponse::status(404, gemini_error(404, "NOT_FOUND", "not found"));
            };
            let Some(still) = running(s, &id) else {
                return FakeResponse::status(404, gemini_error(404, "NOT_FOUND", "not found"));
            };
            let job = s.batches[&id].clone();
            let total = job.requests.len().to_string();
            if still {
                return FakeResponse::ok(
                    json!({"name": id, "metadata": {"state": "BATCH_STATE_RUNNING",
                      "batchStats": {"requestCount": total, "pendingRequestCount": total}}})
                    .to_string(),
                );
            }
            if s.expire {
                return FakeResponse::ok(
                    json!({"name": id, "done": true, "metadata": {"state": "BATCH_STATE_EXPIRED",
                      "batchStats": {"requestCount": total}}})
                    .to_string(),
                );
            }
            // Inline answers come in request order, each with its request's metadata.
            let mut fates = fates(s, &job, &|body| {
                online(
                    req,
                    "/v1beta/models/gemini-2.5-flash:generateContent",
                    body,
                    gemini_model,
                )
            });
            fates.reverse();
            let (mut ok, mut failed) = (0, 0);
            let items: Vec<Value> = fates
                .into_iter()
                .map(|(key, fate)| match fate {
                    Fate::Answered(response) => {
                        ok += 1;
                        json!({"response": response, "metadata": {"key": key}})
                    }
                    _ => {
                        failed += 1;
                        json!({"error": {"code": 8, "message": "Resource has been exhausted (e.g. check quota)."}, "metadata": {"key": key}})
                    }
                })
                .collect();
            FakeResponse::ok(
                json!({"name": id, "done": true, "metadata": {"state": "BATCH_STATE_SUCCEEDED",
                  "batchStats": {"requestCount": total, "successfulRequestCount": ok.to_string(), "failedRequestCount": failed.to_string()},
                  "output": {"inlinedResponses": {"inlinedResponses": items}}}})
                .to_string(),
            )
        }
        _ => FakeResponse::status(404, gemini_error(404, "NOT_FOUND", "not found")),
    }
}
