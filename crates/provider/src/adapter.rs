//! What every provider kind implements (its wire format, endpoint, key header and quirks),
//! and the registry of kinds: one line per adapter.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use reqwest::header::HeaderMap;

use super::{
    InvalidHeader, ProviderError, ProviderSettings, RequestFields, anthropic, azure_openai,
    bearer_auth, gemini, ollama, openai_compat, openai_responses, transport,
};
use crate::batch::{BatchApi, NoBatchApi};
use toolscore_core::catalog::Catalog;
use toolscore_core::{Message, ModelTurn};

/// Every wire format toolscore speaks. The one registration line per adapter.
pub(super) static ADAPTERS: &[&dyn Adapter] = &[
    &openai_compat::OpenAiCompat,
    &openai_responses::OpenAiResponses,
    &anthropic::Anthropic,
    &gemini::Gemini,
    &ollama::Ollama,
    &azure_openai::AzureOpenAi,
];

/// One provider wire format: everything that differs between providers, and nothing else.
/// The transport (timeouts, retries, backoff, redaction) is shared and lives in [`Provider`].
pub trait Adapter: Send + Sync + 'static {
    /// The kind's name in configs, flags and cassettes (`openai-compat`).
    fn kind(&self) -> &'static str;

    /// The URL requests go to, from the configured base URL and model.
    fn endpoint(&self, base_url: &str, model: &str) -> String;

    /// The provider's public API, used when neither the config nor `--base-url` names one.
    /// `None` when there is no such thing (a self-hosted server, an Azure resource).
    fn default_base_url(&self) -> Option<&'static str> {
        None
    }

    /// The usual command that starts this kind's server on the user's machine, said when
    /// nothing answers at a local base URL; `None` for hosted APIs.
    fn local_start_command(&self) -> Option<&'static str> {
        None
    }

    /// The environment variable holding the API key when the config and `--api-key-env` name
    /// none. `None` for kinds that need no key or whose servers vary.
    fn default_key_env(&self) -> Option<&'static str> {
        None
    }

    /// Authentication headers for `api_key` (already trimmed, never empty). Mark them
    /// sensitive; an `Err` names no key material. By default the OpenAI convention, a bearer
    /// token (OpenAI, compatible servers, Ollama cloud and proxies).
    fn auth_headers(&self, api_key: &str, headers: &mut HeaderMap) -> Result<(), InvalidHeader> {
        bearer_auth(api_key, headers)
    }

    /// The request fields this API has, of those a user may configure: `tool_choice` and
    /// `parallel_tool_calls`. A configured field the API lacks is refused before the run.
    fn request_fields(&self) -> RequestFields {
        RequestFields {
            tool_choice: true,
            parallel_tool_calls: true,
        }
    }

    /// The most output tokens a request can be billed for: the `max_tokens` it sends, or
    /// `None` when it sends none and the API sets no bound of its own ([`Adapter::encode_request`]
    /// decides what is sent). `--max-cost` reserves each request at this bound.
    fn output_bound(&self, settings: &ProviderSettings) -> Option<u32> {
        settings.max_tokens
    }

    /// The batch API this kind's requests can go to (`run --batch`), or why there is none.
    fn batch_api(&self) -> Result<BatchApi, NoBatchApi> {
        Err(NoBatchApi::None { kind: self.kind() })
    }

    /// Whether a server of this kind at `base_url` bills nothing, so no price is looked up
    /// (a model on this machine).
    fn serves_free(&self, _base_url: &str) -> bool {
        false
    }

    /// The request body for a conversation over a catalog.
    fn encode_request(
        &self,
        settings: &ProviderSettings,
        messages: &[Message],
        catalog: &Catalog,
    ) -> Vec<u8>;

    /// A 2xx body as a neutral turn, or the error it carries.
    fn decode_response(&self, body: &[u8]) -> Result<ModelTurn, ProviderError>;

    /// A non-2xx response as an error with its class, read from the provider's error body
    /// (most adapters read it with [`crate::wire::error_from_status`]).
    fn error_from_status(&self, status: u16, body: &[u8]) -> ProviderError;

    /// The wait an error body asks for, for providers that say it in the body rather than in
    /// a `Retry-After` header (Gemini's `google.rpc.RetryInfo`). A header wins when both exist.
    fn retry_after_in_body(&self, _body: &[u8]) -> Option<Duration> {
        None
    }

    /// Whether a failed attempt is worth repeating.
    fn should_retry(&self, err: &ProviderError) -> bool {
        transport::should_retry(err)
    }
}

/// Which wire format a provider speaks: a handle on its registered [`Adapter`].
#[derive(Clone, Copy)]
pub struct ProviderKind(pub(super) &'static dyn Adapter);

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        self.0.kind()
    }

    pub fn adapter(self) -> &'static dyn Adapter {
        self.0
    }

    /// Every registered kind, for help and error messages.
    pub fn known() -> String {
        ADAPTERS
            .iter()
            .map(|a| a.kind())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl PartialEq for ProviderKind {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for ProviderKind {}

impl fmt::Debug for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ProviderKind({})", self.as_str())
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ProviderKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let name = s.trim();
        ADAPTERS
            .iter()
            .find(|a| a.kind() == name)
            .map(|a| ProviderKind(*a))
            .ok_or_else(|| {
                format!(
                    "unknown provider kind `{name}` (known: {})",
                    ProviderKind::known()
                )
            })
    }
}

impl serde::Serialize for ProviderKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for ProviderKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// A base URL on this machine (`localhost`, `127.x`, `::1`): a local model server.
pub(crate) fn is_loopback(base_url: &str) -> bool {
    let rest = base_url
        .split_once("://")
        .map_or(base_url, |(_, rest)| rest);
    let authority = rest.split('/').next().unwrap_or_default();
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}
