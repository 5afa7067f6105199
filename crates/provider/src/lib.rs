//! Model providers: settings, the neutral request/response boundary, one adapter per wire
//! format behind the [`Adapter`] trait, and the transport (timeouts, retries with full jitter
//! honouring `Retry-After`, error classes).
//!
//! A case's opening request is encoded once by [`Provider::prepare`] and reused by every
//! trial; [`Provider::complete`] only sends bytes and decodes the answer. Adding a wire format
//! means one file implementing [`Adapter`] and one line in `adapter::ADAPTERS`.
//!
//! `batch`, `cassette`, `capabilities` and `prices` are public as namespaces; the other modules
//! are private and the root re-exports what other crates name (a wire format's kind and
//! response decoder under its format's name: [`OPENAI_COMPAT_KIND`],
//! [`decode_anthropic_response`]…).

mod adapter;
mod anthropic;
mod auth;
mod azure_openai;
pub mod batch;
pub mod capabilities;
pub mod cassette;
mod gemini;
mod limits;
mod model_map;
mod ollama;
mod openai_compat;
mod openai_responses;
mod pairing;
pub mod prices;
mod secret;
mod stop;
mod transport;
mod wire;

pub use anthropic::decode_response as decode_anthropic_response;
pub use azure_openai::KIND as AZURE_OPENAI_KIND;
pub use limits::retry_after_waits;
pub use model_map::{
    MapEntry, MapOrigin, ModelMap, ModelMapError, find_model, omit_unsupported_sampling,
    snapshot_version,
};
pub use openai_compat::{
    KIND as OPENAI_COMPAT_KIND, decode_response as decode_openai_compat_response,
};
pub use openai_responses::decode_response as decode_openai_responses_response;
pub use stop::ProviderStops;

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::json;
use sha2::{Digest, Sha256};

pub use adapter::{Adapter, ProviderKind};
use auth::key_header;
pub use auth::{InvalidHeader, bearer_auth};
use toolscore_core::ToolChoice;
use toolscore_core::catalog::Catalog;
use toolscore_core::{Message, ModelTurn};
use toolscore_core::{ModelIdentity, OmittedSetting};

pub use secret::SecretString;
use toolscore_core::ErrorClass;
pub use transport::{HttpClientError, http_client};

/// Everything needed to talk to one configured provider.
#[derive(Debug, Clone)]
pub struct ProviderSettings {
    pub kind: ProviderKind,
    /// Whether and how the model must call a tool; `None` sends nothing, so the provider's
    /// default applies (the request an application that sets nothing sends).
    pub tool_choice: Option<ToolChoice>,
    /// Whether several calls per turn are allowed; `None` sends nothing.
    pub parallel_tool_calls: Option<bool>,
    /// The name the user gave this provider in the config.
    pub name: String,
    /// E.g. `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1` (a trailing `/` is fine).
    pub base_url: String,
    pub model: String,
    pub api_key: Option<SecretString>,
    /// The environment variable the key was read from (its name only), for error messages.
    pub api_key_env: Option<String>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    /// Per attempt, from sending the request to having read the whole response.
    pub timeout: Duration,
    /// Retries after the first attempt (so at most `max_retries + 1` attempts).
    pub max_retries: u32,
    pub retry_base: Duration,
    pub retry_cap: Duration,
    /// Largest response body read; a larger one is a `bad_response`.
    pub max_response_bytes: usize,
    /// Requests to this provider in flight at once, over every arm that calls it.
    pub max_in_flight: Option<usize>,
    /// Requests started per minute, evenly spaced, over every arm that calls it.
    pub requests_per_minute: Option<u32>,
    /// Tokens per minute (estimated input plus `max_tokens`), over every arm that calls it.
    pub tokens_per_minute: Option<u32>,
    /// Configured fields not sent because the model refuses them
    /// ([`capabilities::CapabilityTable::omit_rejected`]); recorded in the arm's identity.
    pub omitted: Vec<OmittedSetting>,
}

/// Default cap on a response body: far above any tool-calling answer, far below what would
/// strain memory with hundreds of requests in flight.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 8 << 20;

impl ProviderSettings {
    /// Settings with the default limits: 60 s timeout, 4 retries, backoff 500 ms base, 30 s cap.
    pub fn new(
        kind: ProviderKind,
        name: impl Into<String>,
        base_url: impl Into<String>,
        model: impl Into<String>,
    ) -> Self {
        ProviderSettings {
            kind,
            tool_choice: None,
            parallel_tool_calls: None,
            name: name.into(),
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            api_key_env: None,
            temperature: None,
            max_tokens: None,
            timeout: Duration::from_secs(60),
            max_retries: 4,
            retry_base: Duration::from_millis(500),
            retry_cap: Duration::from_secs(30),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_in_flight: None,
            requests_per_minute: None,
            tokens_per_minute: None,
            omitted: Vec::new(),
        }
    }

    /// Whether requests can be built at all (a parseable endpoint, a key usable in a header),
    /// so a bad setting is reported as bad input before a run rather than as an error on every
    /// trial.
    pub fn check(&self) -> Result<(), SettingsError> {
        self.endpoint_url()?;
        self.request_headers().map(drop)
    }

    fn endpoint_url(&self) -> Result<reqwest::Url, SettingsError> {
        let bad_url = |problem| SettingsError::BaseUrl {
            provider: self.name.clone(),
            base_url: self.base_url.clone(),
            problem,
        };
        // `http://` alone would otherwise become `http:///chat/completions`, whose first path
        // segment a URL parser takes for the host.
        match reqwest::Url::parse(self.base_url.trim()) {
            Ok(base) if base.host_str().is_some_and(|h| !h.is_empty()) => {}
            Ok(_) => return Err(bad_url(UrlProblem::NoHost)),
            Err(e) => return Err(bad_url(UrlProblem::Unparsable(e))),
        }
        let text = self
            .kind
            .adapter()
            .endpoint(self.base_url.trim(), &self.model);
        reqwest::Url::parse(&text).map_err(|e| bad_url(UrlProblem::Unparsable(e)))
    }

    fn request_headers(&self) -> Result<HeaderMap, SettingsError> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        if let Some(key) = &self.api_key {
            let key = key.expose().trim();
            if !key.is_empty() {
                self.kind
                    .adapter()
                    .auth_headers(key, &mut headers)
                    .map_err(|_| SettingsError::KeyNotAHeader {
                        provider: self.name.clone(),
                    })?;
            }
        }
        Ok(headers)
    }

    /// Who answers, for records and report headers.
    pub fn identity(&self) -> ModelIdentity {
        ModelIdentity {
            provider: self.name.clone(),
            provider_kind: self.kind.to_string(),
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            tool_choice: self.tool_choice.map(|c| c.as_str().to_owned()),
            parallel_tool_calls: self.parallel_tool_calls,
            omitted: self.omitted.clone(),
        }
    }
}

/// A provider setting no request can be built from, found before anything is sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error("invalid base URL `{base_url}` for provider `{provider}`: {problem}")]
    BaseUrl {
        provider: String,
        base_url: String,
        #[source]
        problem: UrlProblem,
    },
    #[error(
        "the API key of provider `{provider}` contains characters that cannot be sent in an HTTP header"
    )]
    KeyNotAHeader { provider: String },
}

/// What is wrong with a base URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlProblem {
    #[error("it names no host")]
    NoHost,
    #[error(transparent)]
    Unparsable(url::ParseError),
}

/// Which optional request fields a provider's API has ([`Adapter::request_fields`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestFields {
    pub tool_choice: bool,
    pub parallel_tool_calls: bool,
}

/// The request body for one case, encoded ONCE and reused for every trial.
#[derive(Debug, Clone)]
pub struct PreparedRequest {
    pub body: Bytes,
    /// sha256 hex of the canonical JSON of `{kind, model, catalog fingerprint, messages,
    /// temperature, max_tokens}`: identifies the normalized request for record/replay.
    pub request_hash: String,
}

/// A failed provider request. `message` names the status and quotes (at most 300 characters
/// of) the provider's error text; it never contains the API key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{class}{}: {message}", attempts_suffix(*.attempts))]
pub struct ProviderError {
    pub class: ErrorClass,
    pub status: Option<u16>,
    pub message: String,
    /// Attempts made, including the first (0 when nothing was sent).
    pub attempts: u32,
}

fn attempts_suffix(attempts: u32) -> String {
    match attempts {
        0 | 1 => String::new(),
        n => format!(" after {n} attempts"),
    }
}

impl ProviderError {
    pub fn new(class: ErrorClass, status: Option<u16>, message: String) -> Self {
        ProviderError {
            class,
            status,
            message,
            attempts: 1,
        }
    }
}

/// A successful exchange with a provider.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub turn: ModelTurn,
    /// The response body exactly as received (for recording and re-decoding).
    pub raw_body: Bytes,
    pub attempts: u32,
    /// Of the successful attempt.
    pub latency: Duration,
}

/// One configured provider: settings, the run's shared HTTP client, and the precomputed
/// endpoint URL and headers.
#[derive(Clone)]
pub struct Provider {
    settings: ProviderSettings,
    client: reqwest::Client,
    endpoint: Result<reqwest::Url, SettingsError>,
    headers: HeaderMap,
    /// A configuration problem found in `new` (bad URL, key not usable in a header).
    setup_error: Option<SettingsError>,
    /// Shared with every other `Provider` of the same name, base URL and caps.
    limits: std::sync::Arc<limits::Limits>,
}

impl fmt::Debug for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Provider")
            .field("settings", &self.settings)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl Provider {
    pub fn new(settings: ProviderSettings, client: reqwest::Client) -> Provider {
        let endpoint = settings.endpoint_url();
        let (headers, key_error) = match settings.request_headers() {
            Ok(h) => (h, None),
            Err(e) => (HeaderMap::new(), Some(e)),
        };
        let setup_error = endpoint.as_ref().err().cloned().or(key_error);
        let limits = limits::shared(
            &settings.name,
            &settings.base_url,
            settings.max_in_flight,
            settings.requests_per_minute,
            settings.tokens_per_minute,
        );
        Provider {
            settings,
            client,
            endpoint,
            headers,
            setup_error,
            limits,
        }
    }

    pub fn settings(&self) -> &ProviderSettings {
        &self.settings
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> Option<&str> {
        self.endpoint.as_ref().ok().map(reqwest::Url::as_str)
    }

    /// Reports a configuration problem (invalid base URL, unusable key) without sending anything.
    pub fn validate(&self) -> Result<(), ProviderError> {
        match &self.setup_error {
            Some(msg) => Err(ProviderError {
                class: ErrorClass::ClientError,
                status: None,
                message: self.redact(&msg.to_string()),
                attempts: 0,
            }),
            None => Ok(()),
        }
    }

    /// Encodes the request body for one case, and its identifying hash.
    pub fn prepare(&self, messages: &[Message], catalog: &Catalog) -> PreparedRequest {
        let body = self
            .settings
            .kind
            .adapter()
            .encode_request(&self.settings, messages, catalog);
        PreparedRequest {
            body: Bytes::from(body),
            request_hash: request_hash(&self.settings, messages, catalog),
        }
    }

    /// Sends with retries and decodes. Never panics on network data.
    pub async fn complete(&self, req: &PreparedRequest) -> Result<Exchange, ProviderError> {
        self.complete_until(req, &Cancel::new()).await
    }

    /// [`Provider::complete`], abandoned as soon as `cancel` fires: in the middle of a request
    /// or of a backoff sleep. The error is then of class `cancelled`.
    async fn complete_until(
        &self,
        req: &PreparedRequest,
        cancel: &Cancel,
    ) -> Result<Exchange, ProviderError> {
        self.validate()?;
        let Ok(url) = &self.endpoint else {
            return Err(ProviderError {
                class: ErrorClass::ClientError,
                status: None,
                message: "invalid endpoint".into(),
                attempts: 0,
            });
        };
        let s = &self.settings;
        // What the tokens-per-minute budget is charged: the body's characters / 4 (the same
        // estimate as lint's footprint) plus the most the answer may take.
        let tokens = u32::try_from(req.body.len().div_ceil(4))
            .unwrap_or(u32::MAX)
            .saturating_add(s.max_tokens.unwrap_or(0));
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            let Some(sent) = self.send_attempt(req, url, tokens, cancel).await else {
                return Err(cancelled(attempt));
            };
            let (mut err, hint) = match self.read_answer(sent, attempt) {
                Ok(exchange) => return Ok(exchange),
                Err(failed) => failed,
            };
            err.attempts = attempt;
            err.message = self.redact(&err.message);
            // A wait asked for by a 429 or an overload holds every request to this provider:
            // the others would only meet the same answer.
            if let (Some(wait), ErrorClass::RateLimited | ErrorClass::Overloaded) =
                (hint, err.class)
            {
                self.limits.pause_for(wait);
            }
            if let Some(wait) = hint
                && attempt <= s.max_retries
                && s.kind.adapter().should_retry(&err)
            {
                limits::RETRY_AFTER_WAITS.note(wait);
            }
            if attempt > s.max_retries || !s.kind.adapter().should_retry(&err) {
                return Err(err);
            }
            let delay = hint.unwrap_or_else(|| {
                transport::backoff_delay(
                    attempt - 1,
                    s.retry_base,
                    s.retry_cap,
                    rand::random::<f64>(),
                )
            });
            tracing::debug!(provider = %s.name, attempt, class = %err.class, status = ?err.status, delay_ms = delay.as_millis() as u64, "retrying: {}", err.message);
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = cancel.cancelled() => return Err(cancelled(attempt)),
            }
        }
    }

    /// One attempt: a slot of the provider's limits held while the request is sent (never
    /// across a backoff sleep), and a spent budget the answer's headers name paused for.
    /// `None` when `cancel` fired first.
    async fn send_attempt(
        &self,
        req: &PreparedRequest,
        url: &reqwest::Url,
        tokens: u32,
        cancel: &Cancel,
    ) -> Option<Result<transport::RawResponse, ProviderError>> {
        let s = &self.settings;
        // The slot is held for the attempt only, never across a backoff sleep.
        let slot = tokio::select! {
            slot = self.limits.acquire(tokens) => slot,
            () = cancel.cancelled() => return None,
        };
        let sent = tokio::select! {
            sent = transport::send_once(
                &self.client,
                url,
                &self.headers,
                req.body.clone(),
                s.timeout,
                s.max_response_bytes,
            ) => sent,
            () = cancel.cancelled() => return None,
        };
        match &sent {
            Ok(raw) if raw.status == 429 || raw.status == 529 => slot.pushed_back(),
            Ok(raw) if (200..300).contains(&raw.status) => slot.succeeded(),
            _ => {}
        }
        drop(slot);
        if let Ok(raw) = &sent
            && let Some(wait) = raw.budget_spent
        {
            tracing::debug!(provider = %s.name, wait_ms = wait.as_millis() as u64, "rate-limit headers say the budget is spent: pausing");
            self.limits.pause_for(wait);
        }
        Some(sent)
    }

    /// A 2xx answer decoded into an exchange; anything else as the error it is, with the wait
    /// the provider asked for (its header, or its body).
    fn read_answer(
        &self,
        sent: Result<transport::RawResponse, ProviderError>,
        attempt: u32,
    ) -> Result<Exchange, (ProviderError, Option<Duration>)> {
        let s = &self.settings;
        let failed = match sent.map(|mut raw| {
            raw.body = self.scrub(raw.body);
            raw
        }) {
            Ok(raw) if (200..300).contains(&raw.status) => match self.decode_inner(&raw.body) {
                Ok(turn) => {
                    return Ok(Exchange {
                        turn,
                        raw_body: raw.body,
                        attempts: attempt,
                        latency: raw.elapsed,
                    });
                }
                Err(e) => (e, raw.retry_after),
            },
            Ok(raw) => (
                s.kind.adapter().error_from_status(raw.status, &raw.body),
                raw.retry_after.or_else(|| {
                    s.kind
                        .adapter()
                        .retry_after_in_body(&raw.body)
                        .map(|d| d.min(transport::MAX_RETRY_AFTER))
                }),
            ),
            Err(e) => (e, None),
        };
        Err(failed)
    }

    /// Decodes a raw response body (also used to replay recorded bodies).
    pub fn decode(&self, raw_body: &[u8]) -> Result<ModelTurn, ProviderError> {
        self.decode_inner(raw_body).map_err(|mut e| {
            e.message = self.redact(&e.message);
            e
        })
    }

    fn decode_inner(&self, raw_body: &[u8]) -> Result<ModelTurn, ProviderError> {
        self.settings.kind.adapter().decode_response(raw_body)
    }

    /// The body with the key (as configured and as sent) removed.
    fn scrub(&self, body: Bytes) -> Bytes {
        let Some(key) = &self.settings.api_key else {
            return body;
        };
        let body = secret::scrub_bytes(body, Some(key));
        let sent = key.expose().trim();
        if sent != key.expose() {
            secret::scrub_bytes(body, Some(&SecretString::new(sent.to_owned())))
        } else {
            body
        }
    }

    fn redact(&self, text: &str) -> String {
        let once = secret::redact(text, self.settings.api_key.as_ref());
        // The key as sent (trimmed) may differ from the configured text.
        match &self.settings.api_key {
            Some(k) if k.expose().trim() != k.expose() => secret::redact(
                &once,
                Some(&SecretString::new(k.expose().trim().to_owned())),
            ),
            _ => once,
        }
    }
}

/// A signal that abandons every request and backoff sleep it is handed to (Ctrl-C, SIGTERM):
/// `cancel()` fires it, and every current and later `cancelled()` completes.
pub type Cancel = tokio_util::sync::CancellationToken;

fn cancelled(attempts: u32) -> ProviderError {
    ProviderError {
        class: ErrorClass::Cancelled,
        status: None,
        message: "cancelled (Ctrl-C or SIGTERM)".to_owned(),
        attempts,
    }
}

/// Which step of which trial of a conversation a request is: the opening request's hash
/// (which names the arm's settings, the catalog and the case's messages), the trial, and the
/// step within the trial (0 for the opening request).
#[derive(Debug, Clone, Copy)]
pub struct StepKey<'a> {
    pub conversation: &'a str,
    pub trial: u32,
    pub step: u32,
}

/// Where trial responses come from: a live provider, or a cassette recorded from one.
pub enum Backend {
    Live(Provider),
    Replay(cassette::Replay),
}

impl Backend {
    pub fn settings(&self) -> &ProviderSettings {
        match self {
            Backend::Live(p) => p.settings(),
            Backend::Replay(r) => r.decoder().settings(),
        }
    }

    /// Encodes a request: once per case for the opening step, on demand for later steps
    /// (whose messages depend on earlier answers).
    pub fn prepare(&self, messages: &[Message], catalog: &Catalog) -> PreparedRequest {
        match self {
            Backend::Live(p) => p.prepare(messages, catalog),
            Backend::Replay(r) => r.decoder().prepare(messages, catalog),
        }
    }

    /// One step of one trial: sent live, or served from its recording. The duration is the
    /// latency to report: of the successful attempt, or the time until giving up (recorded,
    /// when replaying), so a replay reproduces the recorded run exactly.
    pub async fn step(
        &self,
        req: &PreparedRequest,
        key: StepKey<'_>,
        cancel: &Cancel,
    ) -> (Result<Exchange, ProviderError>, Duration) {
        match self {
            Backend::Live(p) => {
                let started = std::time::Instant::now();
                let result = p.complete_until(req, cancel).await;
                let latency = result
                    .as_ref()
                    .map_or_else(|_| started.elapsed(), |ex| ex.latency);
                (result, latency)
            }
            Backend::Replay(r) => r.serve(key),
        }
    }
}

/// Identifies a normalized request (provider kind, model, catalog fingerprint, messages,
/// sampling parameters) for record and replay; independent of base URL and key.
pub fn request_hash(
    settings: &ProviderSettings,
    messages: &[Message],
    catalog: &Catalog,
) -> String {
    let identity = json!({
        "kind": settings.kind.as_str(),
        "model": settings.model,
        "catalog": catalog.fingerprint,
        "messages": messages,
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
    });
    // Added only when configured, so recordings made before these fields existed keep
    // their hashes (they were recorded sending tool_choice auto and parallel calls).
    let mut identity = identity;
    if let Some(choice) = settings.tool_choice {
        identity["tool_choice"] = json!(choice.as_str());
    }
    if let Some(parallel) = settings.parallel_tool_calls {
        identity["parallel_tool_calls"] = json!(parallel);
    }
    let canonical = toolscore_core::canonical_json(&identity);
    toolscore_core::hex(&Sha256::digest(canonical.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_round_trips() {
        assert_eq!(
            "openai-compat".parse::<ProviderKind>(),
            Ok(openai_compat::KIND)
        );
        assert_eq!(openai_compat::KIND.to_string(), "openai-compat");
        assert!("anthropic-ish".parse::<ProviderKind>().is_err());
        for kind in [
            "openai-compat",
            "openai-responses",
            "anthropic",
            "gemini",
            "ollama",
            "azure-openai",
        ] {
            assert_eq!(kind.parse::<ProviderKind>().map(|k| k.as_str()), Ok(kind));
        }
        assert_eq!(
            serde_json::to_string(&ErrorClass::Overloaded).unwrap(),
            "\"overloaded\""
        );
        // Every name a results.jsonl in the wild may hold still parses.
        for name in [
            "timeout",
            "connect",
            "rate_limited",
            "server_error",
            "auth",
            "quota_exceeded",
            "client_error",
            "bad_response",
            "cancelled",
            "batch_expired",
            "batch_cancelled",
        ] {
            let class: ErrorClass = serde_json::from_str(&format!("\"{name}\"")).unwrap();
            assert_eq!(class.as_str(), name);
        }
        assert_eq!(
            serde_json::to_string(&openai_compat::KIND).unwrap(),
            "\"openai-compat\""
        );
        assert_eq!(
            serde_json::to_string(&ErrorClass::QuotaExceeded).unwrap(),
            "\"quota_exceeded\""
        );
    }

    #[test]
    fn retryable_classes() {
        for c in [
            ErrorClass::Timeout,
            ErrorClass::Connect,
            ErrorClass::RateLimited,
            ErrorClass::ServerError,
            ErrorClass::Overloaded,
        ] {
            assert!(c.is_retryable(), "{c}");
        }
        for c in [
            ErrorClass::Auth,
            ErrorClass::QuotaExceeded,
            ErrorClass::ClientError,
            ErrorClass::BadResponse,
            ErrorClass::Cancelled,
            ErrorClass::BatchExpired,
            ErrorClass::BatchCancelled,
        ] {
            assert!(!c.is_retryable(), "{c}");
        }
    }

    #[test]
    fn endpoint_tolerates_trailing_slash_and_reports_bad_urls() {
        let client = reqwest::Client::new();
        for base in ["http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1/"] {
            let p = Provider::new(
                ProviderSettings::new(openai_compat::KIND, "t", base, "m"),
                client.clone(),
            );
            assert_eq!(
                p.endpoint(),
                Some("http://127.0.0.1:8080/v1/chat/completions")
            );
            assert!(p.validate().is_ok());
        }
        let p = Provider::new(
            ProviderSettings::new(openai_compat::KIND, "t", "not a url", "m"),
            client.clone(),
        );
        assert_eq!(p.validate().unwrap_err().class, ErrorClass::ClientError);
        for hostless in ["http://", "http://:8080/v1"] {
            let s = ProviderSettings::new(openai_compat::KIND, "t", hostless, "m");
            let err = s.check().unwrap_err();
            assert!(
                err.to_string().contains("invalid base URL"),
                "{hostless}: {err}"
            );
        }
        let mut s = ProviderSettings::new(openai_compat::KIND, "t", "http://x/v1", "m");
        s.api_key = Some(SecretString::new("bad\nkey-material".into()));
        let err = Provider::new(s, client).validate().unwrap_err();
        assert!(!format!("{err} {err:?}").contains("key-material"));
    }

    #[test]
    fn history_ids_and_tool_messages_are_encoded() {
        use toolscore_core::ToolCall;
        use toolscore_core::catalog::Tool;
        let catalog = Catalog::new(
            vec![Tool {
                name: "f".into(),
                description: String::new(),
                input_schema: json!({"type":"object"}),
                ..Default::default()
            }],
            "t".into(),
        );
        let messages = vec![
            Message::User {
                content: "hi".into(),
            },
            Message::Assistant {
                content: Some(String::new()),
                tool_calls: vec![
                    ToolCall {
                        id: None,
                        name: "f".into(),
                        arguments: json!({"a": 1}),
                        unparsed_arguments: None,
                        thought_signature: None,
                    },
                    ToolCall {
                        id: Some("x".into()),
                        name: "f".into(),
                        arguments: serde_json::Value::Null,
                        unparsed_arguments: Some("{bad".into()),
                        thought_signature: None,
                    },
                ],
            },
            Message::Tool {
                call_id: String::new(),
                content: "r0".into(),
                is_error: false,
            },
            Message::Tool {
                call_id: "x".into(),
                content: "r1".into(),
                is_error: true,
            },
        ];
        let p = Provider::new(
            ProviderSettings::new(openai_compat::KIND, "t", "http://x/v1", "m"),
            reqwest::Client::new(),
        );
        let body: serde_json::Value =
            serde_json::from_slice(&p.prepare(&messages, &catalog).body).unwrap();
        let m = &body["messages"];
        assert_eq!(m[1]["content"], serde_json::Value::Null);
        assert_eq!(m[1]["tool_calls"][0]["id"], "call_0");
        assert_eq!(m[1]["tool_calls"][0]["type"], "function");
        assert_eq!(m[1]["tool_calls"][0]["function"]["arguments"], "{\"a\":1}");
        assert_eq!(m[1]["tool_calls"][1]["function"]["arguments"], "{bad");
        assert_eq!(m[2]["tool_call_id"], "call_0");
        assert_eq!(m[3]["tool_call_id"], "x");
        // Neither was configured: neither is sent.
        assert!(body.get("tool_choice").is_none(), "{body}");
        assert!(body.get("parallel_tool_calls").is_none(), "{body}");
        assert!(body.get("temperature").is_none());
        assert!(body["tools"][0]["function"].get("description").is_none());
    }

    #[test]
    fn every_adapter_sends_the_catalog_in_the_authors_order() {
        // Written `query, limit, cursor` and `zeta, alpha`: not alphabetical, so a sorted
        // encoding would show.
        let schema: serde_json::Value = serde_json::from_str(
            r#"{"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}, "cursor": {"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "string"}}}}, "required": ["query"]}"#,
        )
        .unwrap();
        let catalog = Catalog::new(
            vec![
                toolscore_core::catalog::Tool {
                    name: "search_products".into(),
                    description: "Search.".into(),
                    input_schema: schema,
                    ..Default::default()
                },
                toolscore_core::catalog::Tool {
                    name: "add_item".into(),
                    description: "Add.".into(),
                    input_schema: json!({"type": "object"}),
                    ..Default::default()
                },
            ],
            "t".into(),
        );
        let messages = [Message::User {
            content: "find socks".into(),
        }];
        for adapter in adapter::ADAPTERS {
            let settings = ProviderSettings::new(ProviderKind(*adapter), "t", "http://x/v1", "m");
            let body = adapter.encode_request(&settings, &messages, &catalog);
            let text = String::from_utf8(body).unwrap();
            let at = |needle: &str| {
                text.find(needle)
                    .unwrap_or_else(|| panic!("{}: no {needle} in {text}", adapter.kind()))
            };
            assert!(
                at("\"query\"") < at("\"limit\""),
                "{}: {text}",
                adapter.kind()
            );
            assert!(
                at("\"limit\"") < at("\"cursor\""),
                "{}: {text}",
                adapter.kind()
            );
            assert!(
                at("\"zeta\"") < at("\"alpha\""),
                "{}: {text}",
                adapter.kind()
            );
            assert!(
                at("search_products") < at("add_item"),
                "{}: {text}",
                adapter.kind()
            );
        }
    }
}
