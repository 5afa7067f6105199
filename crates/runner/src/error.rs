//! What ends a run early: an error of a layer below (bad input, a file it cannot write), or
//! one of the runner's own (the HTTP client, a batch API).

use std::time::Duration;

use toolscore_core::{Error, ExitCode};
use toolscore_provider::batch::NoBatchApi;
use toolscore_provider::{HttpClientError, ProviderError};

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Core(#[from] Error),
    #[error(transparent)]
    HttpClient(#[from] HttpClientError),
    #[error(transparent)]
    Batch(#[from] BatchError),
}

impl RunError {
    pub fn exit_code(&self) -> ExitCode {
        match self {
            RunError::Core(e) => e.exit_code(),
            // The machine's resources or a provider's batch API, not the model: 4 says "could
            // not judge".
            RunError::HttpClient(_) | RunError::Batch(_) => ExitCode::InfraErrors,
        }
    }
}

/// A provider's batch API refused or failed a submission, a poll or a download; the message
/// says what `--resume` does about it.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error(transparent)]
    NoApi(#[from] NoBatchApi),
    #[error("submitting a batch of {requests} requests to provider `{provider}`: {source}")]
    Submit {
        requests: usize,
        provider: String,
        #[source]
        source: ProviderError,
    },
    #[error(
        "polling batch {id}: {source}; it keeps running at the provider: `--resume` polls it again"
    )]
    Poll {
        id: String,
        #[source]
        source: ProviderError,
    },
    #[error(
        "batches {} have not ended after {} (--batch-max-wait); they keep running at the provider: `--resume` with --batch polls them again",
        .ids.join(", "),
        humantime::format_duration(*.waited)
    )]
    NotEnded { ids: Vec<String>, waited: Duration },
    #[error("downloading the results of batch {id}: {source}; `--resume` tries again")]
    Download {
        id: String,
        #[source]
        source: ProviderError,
    },
}
