//! Public as a namespace: callers write `batch::BatchApi`, `batch::BatchClient`, `batch::DEFAULT_POLL`.
//!
//! Provider batch APIs (`run --batch`): the very request bodies the online path sends, handed
//! to the provider as one asynchronous job at its batch price, polled, and the answers matched
//! back by `custom_id` (a batch returns them in any order). Each API's wire shapes are pure
//! functions in its own file; this file holds the neutral types and the HTTP calls, which
//! reuse the provider's settings, key and error classes.

pub mod anthropic;
pub mod gemini;
pub mod openai;

use std::time::Duration;

use bytes::Bytes;
use reqwest::Method;
use reqwest::header::{CONTENT_TYPE, HeaderValue};
use serde_json::Value;

use super::{ErrorClass, Provider, ProviderError, ProviderKind, transport};

/// A provider's batch API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchApi {
    /// OpenAI Batch: a JSONL file uploaded, a batch created over it. `url` is the endpoint
    /// every line targets.
    OpenAi { url: &'static str },
    /// Anthropic Message Batches.
    Anthropic,
    /// Gemini `batchGenerateContent` with inline requests.
    Gemini,
}

/// A batch request toolscore could not encode, or a batch API answer it cannot read. It
/// reaches the run as a [`ProviderError`] of the class [`BatchWireError::class`] names, whose
/// message is this error's text.
#[derive(Debug, thiserror::Error)]
pub enum BatchWireError {
    #[error("request {custom_id} is not JSON: {source}")]
    RequestNotJson {
        custom_id: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("{what} is not JSON: {source}")]
    AnswerNotJson {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("{what} has no {field}")]
    NoField {
        what: &'static str,
        field: &'static str,
    },
    #[error("batch status has no `{field}`")]
    NoState { field: String },
    #[error("unknown batch {field} `{state}`")]
    UnknownState { field: &'static str, state: String },
}

impl BatchWireError {
    /// A request toolscore built is a client-side failure; an answer it cannot read is a bad
    /// response.
    pub fn class(&self) -> ErrorClass {
        match self {
            BatchWireError::RequestNotJson { .. } => ErrorClass::ClientError,
            BatchWireError::AnswerNotJson { .. }
            | BatchWireError::NoField { .. }
            | BatchWireError::NoState { .. }
            | BatchWireError::UnknownState { .. } => ErrorClass::BadResponse,
        }
    }
}

impl From<BatchWireError> for ProviderError {
    fn from(e: BatchWireError) -> Self {
        ProviderError::new(e.class(), None, e.to_string())
    }
}

/// Why a provider kind has no batch API toolscore can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NoBatchApi {
    /// The provider offers none.
    #[error("{kind} has no batch API")]
    None { kind: &'static str },
    /// The provider has one, in a form toolscore does not speak; the text says which.
    #[error("{0}")]
    Unsupported(&'static str),
}

impl BatchApi {
    /// The batch API of a provider kind, or why it has none toolscore can use: the kind's
    /// adapter says ([`crate::Adapter::batch_api`]).
    pub fn for_kind(kind: ProviderKind) -> Result<BatchApi, NoBatchApi> {
        kind.adapter().batch_api()
    }

    /// The API's name in records and messages.
    pub fn name(self) -> &'static str {
        match self {
            BatchApi::OpenAi { .. } => "openai",
            BatchApi::Anthropic => "anthropic",
            BatchApi::Gemini => "gemini",
        }
    }

    /// The most requests and bytes one batch may hold (providers.md: OpenAI 50,000 requests
    /// and 200 MB per file, Anthropic 100,000 requests or 256 MB). Gemini's inline requests
    /// are bounded by the create request's size; 20 MB is Google's documented inline limit.
    pub fn limits(self) -> (usize, usize) {
        match self {
            BatchApi::OpenAi { .. } => (50_000, 200 << 20),
            BatchApi::Anthropic => (100_000, 256 << 20),
            BatchApi::Gemini => (usize::MAX, 20 << 20),
        }
    }
}

/// One request of a batch: the encoded body and the id its answer comes back under.
#[derive(Debug, Clone)]
pub struct BatchLine {
    pub custom_id: String,
    pub body: Bytes,
}

/// Splits requests into batches within `max_requests` and `max_bytes` (a request larger than
/// `max_bytes` on its own goes alone, and the provider judges it).
pub fn chunk_lines(
    lines: Vec<BatchLine>,
    max_requests: usize,
    max_bytes: usize,
) -> Vec<Vec<BatchLine>> {
    // Room for each line's envelope (custom_id, url, method) besides its body.
    const ENVELOPE: usize = 256;
    let mut chunks: Vec<Vec<BatchLine>> = Vec::new();
    let mut bytes = 0usize;
    for line in lines {
        let size = line.body.len() + line.custom_id.len() + ENVELOPE;
        let full = chunks
            .last()
            .is_none_or(|c| c.len() >= max_requests.max(1) || bytes + size > max_bytes);
        if full {
            chunks.push(Vec::new());
            bytes = 0;
        }
        bytes += size;
        if let Some(last) = chunks.last_mut() {
            last.push(line);
        }
    }
    chunks
}

/// How a batch ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchEnd {
    /// Every request was processed (each result says how it went).
    Completed,
    /// The batch as a whole failed (e.g. its input did not validate), with the reason.
    Failed(String),
    /// The completion window passed; requests not run by then have no answer.
    Expired,
    Cancelled,
}

/// Requests counted by the provider.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    pub total: Option<u64>,
    pub succeeded: u64,
    pub failed: u64,
}

/// Where a finished batch's answers are.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    None,
    /// OpenAI: the output file (answered requests) and the error file (failed ones).
    OpenAiFiles {
        output: Option<String>,
        error: Option<String>,
    },
    /// Anthropic: a JSONL file to download.
    ResultsUrl(String),
    /// Gemini: the answers inside the polled operation.
    Inline(Vec<Value>),
    /// Gemini: a responses file (not requested by toolscore, which sends requests inline).
    File(String),
}

/// A batch's progress as the provider reports it, in neutral terms.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchStatus {
    /// The provider's own word (`in_progress`, `ended`, `BATCH_STATE_RUNNING`).
    pub state: String,
    /// `None` while the batch runs.
    pub end: Option<BatchEnd>,
    pub counts: Counts,
    pub output: Output,
}

/// One request's answer: the response body the online API would have sent, or its error.
#[derive(Debug, Clone)]
pub enum LineResult {
    Body(Bytes),
    Failed(ProviderError),
}

/// The answers read from a result file, and the lines that could not be read.
#[derive(Debug, Default)]
pub struct ParsedLines {
    pub answers: Vec<(String, LineResult)>,
    pub problems: Vec<String>,
}

/// The batch calls of one configured provider: its base URL, key, timeouts and retries.
pub struct BatchClient<'a> {
    provider: &'a Provider,
    api: BatchApi,
}

/// Largest result file read into memory: far above any batch a plan makes (a line is a few
/// KB), and a bound on what a misbehaving server can make toolscore hold.
const MAX_RESULTS_BYTES: usize = 1 << 30;

impl<'a> BatchClient<'a> {
    pub fn new(provider: &'a Provider, api: BatchApi) -> Self {
        BatchClient { provider, api }
    }

    pub fn api(&self) -> BatchApi {
        self.api
    }

    fn base(&self) -> &str {
        self.provider.settings.base_url.trim().trim_end_matches('/')
    }

    /// Submits the requests as one batch and returns its id. `label` names the run in the
    /// batch's metadata, so it can be found in the provider's console.
    pub async fn submit(&self, lines: &[BatchLine], label: &str) -> Result<String, ProviderError> {
        match self.api {
            BatchApi::OpenAi { url } => {
                let jsonl = openai::input_file(lines, url)?;
                let boundary = format!("toolscore-{:016x}", rand::random::<u64>());
                let (form, content_type) =
                    openai::upload_form(&format!("{label}.jsonl"), &jsonl, &boundary);
                let uploaded = self
                    .send(
                        Method::POST,
                        &format!("{}/files", self.base()),
                        Some((Bytes::from(form), content_type)),
                    )
                    .await?;
                let file_id = answer_id(&uploaded, "file upload answer")?;
                let body = openai::create_body(&file_id, url, label);
                let created = self
                    .send_json(Method::POST, &format!("{}/batches", self.base()), &body)
                    .await?;
                Ok(answer_id(&created, "batch answer")?)
            }
            BatchApi::Anthropic => {
                let body = anthropic::create_body(lines)?;
                let created = self
                    .send_json(
                        Method::POST,
                        &format!("{}/messages/batches", self.base()),
                        &body,
                    )
                    .await?;
                Ok(answer_id(&created, "batch answer")?)
            }
            BatchApi::Gemini => {
                let body = gemini::create_body(lines, label)?;
                let model = self
                    .provider
                    .settings
                    .model
                    .trim()
                    .trim_start_matches("models/");
                let created = self
                    .send_json(
                        Method::POST,
                        &format!("{}/models/{model}:batchGenerateContent", self.base()),
                        &body,
                    )
                    .await?;
                Ok(gemini::batch_name(&created)?)
            }
        }
    }

    /// The batch's status now.
    pub async fn status(&self, id: &str) -> Result<BatchStatus, ProviderError> {
        check_id(id)?;
        let url = match self.api {
            BatchApi::OpenAi { .. } => format!("{}/batches/{id}", self.base()),
            BatchApi::Anthropic => format!("{}/messages/batches/{id}", self.base()),
            BatchApi::Gemini => format!("{}/{id}", self.base()),
        };
        let body = self.send(Method::GET, &url, None).await?;
        let parsed = match self.api {
            BatchApi::OpenAi { .. } => openai::status(&body),
            BatchApi::Anthropic => anthropic::status(&body),
            BatchApi::Gemini => gemini::status(&body),
        };
        Ok(parsed?)
    }

    /// The answers of a finished batch. `submitted` is the batch's custom ids in the order
    /// they were sent (Gemini answers without a key are matched by position).
    pub async fn results(
        &self,
        status: &BatchStatus,
        submitted: &[String],
    ) -> Result<ParsedLines, ProviderError> {
        match &status.output {
            Output::None => Ok(ParsedLines::default()),
            Output::OpenAiFiles { output, error } => {
                let mut all = ParsedLines::default();
                for file in [output, error].into_iter().flatten() {
                    check_id(file)?;
                    let text = self
                        .send(
                            Method::GET,
                            &format!("{}/files/{file}/content", self.base()),
                            None,
                        )
                        .await?;
                    let parsed = openai::result_lines(&text, self.provider.settings.kind.adapter());
                    all.answers.extend(parsed.answers);
                    all.problems
                        .extend(parsed.problems.into_iter().map(|p| format!("{file} {p}")));
                }
                Ok(all)
            }
            Output::ResultsUrl(url) => {
                self.check_same_origin(url)?;
                let text = self.send(Method::GET, url, None).await?;
                Ok(anthropic::result_lines(&text))
            }
            Output::Inline(items) => Ok(gemini::inline_answers(items, submitted)),
            Output::File(file) => Err(ProviderError::new(
                ErrorClass::BadResponse,
                None,
                format!(
                    "the batch answered in a responses file ({file}) although its requests were sent inline"
                ),
            )),
        }
    }

    /// One answer as the online path would have had it: a body decoded by the provider's
    /// adapter (a body it cannot read is a `bad_response`), or the line's error. A batch
    /// measures no latency of its own requests, so none is given.
    pub fn exchange(&self, line: LineResult) -> Result<super::Exchange, ProviderError> {
        match line {
            LineResult::Body(body) => {
                let body = self.provider.scrub(body);
                let turn = self.provider.decode(&body)?;
                Ok(super::Exchange {
                    turn,
                    raw_body: body,
                    attempts: 1,
                    latency: Duration::ZERO,
                })
            }
            LineResult::Failed(mut e) => {
                e.message = self.provider.redact(&e.message);
                Err(e)
            }
        }
    }

    /// The key goes only where the configured API lives: a results URL elsewhere is refused.
    fn check_same_origin(&self, url: &str) -> Result<(), ProviderError> {
        let origin = |u: &str| {
            reqwest::Url::parse(u).ok().map(|u| {
                (
                    u.scheme().to_owned(),
                    u.host_str().map(str::to_owned),
                    u.port_or_known_default(),
                )
            })
        };
        match (origin(url), origin(self.base())) {
            (Some(a), Some(b)) if a == b => Ok(()),
            _ => Err(ProviderError::new(
                ErrorClass::BadResponse,
                None,
                format!(
                    "results_url {url} is not on the configured API's host ({}); the key is not sent there",
                    self.base()
                ),
            )),
        }
    }

    async fn send_json(
        &self,
        method: Method,
        url: &str,
        body: &Value,
    ) -> Result<Bytes, ProviderError> {
        self.send(
            method,
            url,
            Some((Bytes::from(body.to_string()), "application/json".to_owned())),
        )
        .await
    }

    /// One control call, retried on transient failures as trial requests are (the
    /// provider's --max-retries, backoff with full jitter, Retry-After honoured). Errors are
    /// classed by the provider's adapter and never carry the key.
    async fn send(
        &self,
        method: Method,
        url: &str,
        body: Option<(Bytes, String)>,
    ) -> Result<Bytes, ProviderError> {
        let p = self.provider;
        let s = &p.settings;
        p.validate()?;
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            let mut headers = p.headers.clone();
            let mut request = p.client.request(method.clone(), url).timeout(s.timeout);
            if let Some((bytes, content_type)) = &body {
                let value = HeaderValue::from_str(content_type).map_err(|_| {
                    ProviderError::new(ErrorClass::ClientError, None, "bad content type".into())
                })?;
                headers.insert(CONTENT_TYPE, value);
                request = request.body(bytes.clone());
            }
            request = request.headers(headers);
            let (mut err, hint) = match request.send().await {
                Ok(response) => {
                    let status = response.status().as_u16();
                    let hint =
                        transport::retry_after(response.headers(), std::time::SystemTime::now());
                    if response
                        .content_length()
                        .is_some_and(|n| n > MAX_RESULTS_BYTES as u64)
                    {
                        return Err(ProviderError::new(
                            ErrorClass::BadResponse,
                            Some(status),
                            format!("{url}: answer larger than {MAX_RESULTS_BYTES} bytes"),
                        ));
                    }
                    match response.bytes().await {
                        Ok(bytes) if (200..300).contains(&status) => return Ok(p.scrub(bytes)),
                        Ok(bytes) => {
                            let bytes = p.scrub(bytes);
                            let mut e = s.kind.adapter().error_from_status(status, &bytes);
                            e.message = format!("{method} {}: {}", path_of(url), e.message);
                            (e, hint)
                        }
                        Err(e) => (transport::classify_reqwest(&e, s.timeout), None),
                    }
                }
                Err(e) => (transport::classify_reqwest(&e, s.timeout), None),
            };
            err.attempts = attempt;
            err.message = p.redact(&err.message);
            if attempt > s.max_retries || !s.kind.adapter().should_retry(&err) {
                return Err(err);
            }
            let delay = hint
                .map(|d| d.min(transport::MAX_RETRY_AFTER))
                .unwrap_or_else(|| {
                    transport::backoff_delay(
                        attempt - 1,
                        s.retry_base,
                        s.retry_cap,
                        rand::random::<f64>(),
                    )
                });
            tracing::debug!(provider = %s.name, attempt, class = %err.class, delay_ms = delay.as_millis() as u64, "batch call retrying: {}", err.message);
            tokio::time::sleep(delay).await;
        }
    }
}

/// A URL's path, for error messages (the host is in the run header already).
/// A polled batch's body and its state, read at the first of `pointers` it has (JSON
/// pointers; the first one names the field in the error).
fn status_state(body: &[u8], pointers: &[&str]) -> Result<(Value, String), BatchWireError> {
    let value: Value =
        serde_json::from_slice(body).map_err(|source| BatchWireError::AnswerNotJson {
            what: "batch status",
            source,
        })?;
    let state = pointers
        .iter()
        .find_map(|p| value.pointer(p).and_then(Value::as_str))
        .map(str::to_owned)
        .ok_or_else(|| BatchWireError::NoState {
            field: pointers[0].trim_start_matches('/').replace('/', "."),
        })?;
    Ok((value, state))
}

fn path_of(url: &str) -> String {
    reqwest::Url::parse(url).map_or_else(|_| url.to_owned(), |u| u.path().to_owned())
}

/// Ids come from the provider and from the run folder's batch file: refuse anything that
/// would change the URL they are put in.
fn check_id(id: &str) -> Result<(), ProviderError> {
    let ok = !id.is_empty()
        && !id.contains("..")
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'));
    if ok {
        Ok(())
    } else {
        Err(ProviderError::new(
            ErrorClass::BadResponse,
            None,
            format!("`{id}` is not a batch or file id"),
        ))
    }
}

/// The default wait between polls.
pub const DEFAULT_POLL: Duration = Duration::from_secs(30);

/// How long `run --batch` polls by default: OpenAI, Anthropic and Gemini each end a batch
/// within 24 h (done or expired), and an hour more covers the last poll.
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(25 * 3600);

/// A result line of OpenAI's or Anthropic's batch output, and the `custom_id` that names its
/// trial.
fn line_with_custom_id(line: &[u8]) -> Result<(Value, String), String> {
    let value: Value = serde_json::from_slice(line).map_err(|e| format!("not JSON: {e}"))?;
    let custom_id = value
        .get("custom_id")
        .and_then(Value::as_str)
        .ok_or("no `custom_id`")?
        .to_owned();
    Ok((value, custom_id))
}

/// The `id` of an uploaded file or a created batch, as OpenAI and Anthropic both answer it.
fn answer_id(body: &[u8], what: &'static str) -> Result<String, BatchWireError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|source| BatchWireError::AnswerNotJson { what, source })?;
    value
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
        .ok_or(BatchWireError::NoField {
            what,
            field: "`id`",
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(id: &str, size: usize) -> BatchLine {
        BatchLine {
            custom_id: id.into(),
            body: Bytes::from(vec![b'x'; size]),
        }
    }

    #[test]
    fn kinds_with_and_without_a_batch_api() {
        use crate::{anthropic, gemini, ollama, openai_compat, openai_responses};
        assert_eq!(
            BatchApi::for_kind(openai_compat::KIND),
            Ok(BatchApi::OpenAi {
                url: "/v1/chat/completions"
            })
        );
        assert_eq!(
            BatchApi::for_kind(openai_responses::KIND),
            Ok(BatchApi::OpenAi {
                url: "/v1/responses"
            })
        );
        assert_eq!(BatchApi::for_kind(anthropic::KIND), Ok(BatchApi::Anthropic));
        assert_eq!(BatchApi::for_kind(gemini::KIND), Ok(BatchApi::Gemini));
        assert_eq!(
            BatchApi::for_kind(ollama::KIND),
            Err(NoBatchApi::None { kind: "ollama" })
        );
        assert!(
            BatchApi::for_kind(crate::azure_openai::KIND)
                .unwrap_err()
                .to_string()
                .contains("Global Batch")
        );
    }

    #[test]
    fn chunks_respect_request_and_byte_limits() {
        let lines: Vec<BatchLine> = (0..5).map(|i| line(&format!("l{i}"), 100)).collect();
        let sizes = |c: &[Vec<BatchLine>]| c.iter().map(Vec::len).collect::<Vec<_>>();
        assert_eq!(sizes(&chunk_lines(lines.clone(), 2, usize::MAX)), [2, 2, 1]);
        // Each line counts its body, id and envelope: 100 + 2 + 256 = 358 bytes.
        assert_eq!(sizes(&chunk_lines(lines.clone(), 100, 358 * 3)), [3, 2]);
        // A line larger than the limit on its own still goes, alone.
        assert_eq!(sizes(&chunk_lines(lines, 100, 10)), [1, 1, 1, 1, 1]);
        assert!(chunk_lines(Vec::new(), 10, 10).is_empty());
    }

    #[test]
    fn ids_that_would_change_the_url_are_refused() {
        assert!(check_id("batch_abc123").is_ok());
        assert!(check_id("batches/abc-1").is_ok());
        assert!(check_id("msgbatch_01HkcTjaV5uDC8jWR4ZsDV8d").is_ok());
        for bad in ["", "../files", "a?b", "a b", "x#y"] {
            assert!(check_id(bad).is_err(), "{bad}");
        }
    }
}
