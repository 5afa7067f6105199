//! Azure OpenAI, classic deployment URLs (reference/providers.md §7): the Chat Completions
//! wire format of `openai_compat`, sent to
//! `{base_url}/openai/deployments/{model}/chat/completions?api-version=…` with an `api-key`
//! header. The model is the deployment name (the body's `model` is ignored by Azure).
//!
//! `base_url` is the resource, `https://RESOURCE.openai.azure.com`; an `api-version` in its
//! query string replaces the default [`API_VERSION`]. (Azure's newer v1 API,
//! `https://RESOURCE.openai.azure.com/openai/v1`, needs no api-version and speaks plain
//! OpenAI: use `openai-compat` or `openai-responses` with that base URL.)

use reqwest::header::{HeaderMap, HeaderName};

use super::openai_compat;
use super::{Adapter, InvalidHeader, ProviderError, ProviderKind, ProviderSettings};
use crate::batch::{BatchApi, NoBatchApi};
use toolscore_core::catalog::Catalog;
use toolscore_core::{Message, ModelTurn};

/// The Azure OpenAI adapter.
pub(crate) struct AzureOpenAi;

/// Its kind, for code that names it directly.
pub const KIND: ProviderKind = ProviderKind(&AzureOpenAi);

/// The GA data-plane version sent when the base URL names none.
pub(crate) const API_VERSION: &str = "2024-10-21";

impl Adapter for AzureOpenAi {
    fn batch_api(&self) -> Result<BatchApi, NoBatchApi> {
        Err(NoBatchApi::Unsupported(
            "azure-openai batches need a Global Batch deployment and Azure's own file API, which toolscore does not speak",
        ))
    }

    fn kind(&self) -> &'static str {
        "azure-openai"
    }

    fn endpoint(&self, base_url: &str, model: &str) -> String {
        let (resource, query) = base_url.split_once('?').unwrap_or((base_url, ""));
        let resource = resource.trim_end_matches('/');
        // Accept the resource with or without the `/openai` path the portal sometimes shows.
        let resource = resource.strip_suffix("/openai").unwrap_or(resource);
        let version = query
            .split('&')
            .find_map(|pair| pair.strip_prefix("api-version="))
            .filter(|v| !v.is_empty())
            .unwrap_or(API_VERSION);
        format!(
            "{resource}/openai/deployments/{}/chat/completions?api-version={version}",
            model.trim()
        )
    }

    fn default_key_env(&self) -> Option<&'static str> {
        Some("AZURE_OPENAI_API_KEY")
    }

    fn auth_headers(&self, api_key: &str, headers: &mut HeaderMap) -> Result<(), InvalidHeader> {
        super::key_header(HeaderName::from_static("api-key"), api_key, headers)?;
        Ok(())
    }

    fn encode_request(
        &self,
        settings: &ProviderSettings,
        messages: &[Message],
        catalog: &Catalog,
    ) -> Vec<u8> {
        openai_compat::encode_request(settings, messages, catalog)
    }

    fn decode_response(&self, body: &[u8]) -> Result<ModelTurn, ProviderError> {
        openai_compat::decode_response(body)
    }

    fn error_from_status(&self, status: u16, body: &[u8]) -> ProviderError {
        crate::wire::error_from_status(status, body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_url_and_api_version() {
        let a = KIND.adapter();
        assert_eq!(
            a.endpoint("https://res.openai.azure.com/", "gpt-4o-prod"),
            "https://res.openai.azure.com/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(
            a.endpoint(
                "https://res.openai.azure.com/openai?api-version=2025-04-01-preview",
                "d"
            ),
            "https://res.openai.azure.com/openai/deployments/d/chat/completions?api-version=2025-04-01-preview"
        );
        let mut headers = HeaderMap::new();
        a.auth_headers("k", &mut headers).unwrap();
        assert_eq!(headers["api-key"], "k");
        assert!(headers["api-key"].is_sensitive());
        assert!(headers.get("authorization").is_none());
    }
}
