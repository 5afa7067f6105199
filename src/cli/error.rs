//! Every error that ends a command early: the layers' own errors, each kept as it is, and the
//! two only the command line meets (a local server that does not answer, a tune phase that
//! cannot be judged). `main` prints it and exits with [`Error::exit_code`].

use std::fmt;
use std::path::PathBuf;

use toolscore_core::{Error as CoreError, ExitCode, InputError, is_broken_pipe};
use toolscore_mcp::McpError;
use toolscore_provider::ModelMapError;
use toolscore_provider::{HttpClientError, SettingsError};
use toolscore_runner::RunError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Core(#[from] CoreError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    HttpClient(#[from] HttpClientError),
    /// A provider setting no request can be built from (bad input: nothing was sent).
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// `model_map:` names a file that is not LiteLLM's model map (bad input: nothing was sent).
    #[error(transparent)]
    ModelMap(#[from] ModelMapError),
    /// Providers' servers on this machine that do not answer: found before the run starts, so
    /// nothing was sent or written.
    #[error("{}", ServersDown(.0))]
    Unreachable(Vec<LocalServerDown>),
    /// A step of a command that runs several (tune's phases) ended with too many
    /// infrastructure errors to judge; its folder keeps what it measured.
    #[error("tune's {phase} phase ({}): {why}", .folder.display())]
    Untrusted {
        phase: String,
        folder: PathBuf,
        /// The decision's own words for why it could not judge.
        why: String,
    },
}

/// A provider served from this machine that refused a connection.
#[derive(Debug, thiserror::Error)]
#[error("nothing answers at {base_url} (provider `{provider}`: {source}); {}", StartHint(.start.as_deref()))]
pub struct LocalServerDown {
    pub base_url: String,
    pub provider: String,
    #[source]
    pub source: std::io::Error,
    /// The command that starts it (the config's `start:`, else the kind's usual one).
    pub start: Option<String>,
}

struct StartHint<'a>(Option<&'a str>);

impl fmt::Display for StartHint<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(command) => write!(f, "start it with `{command}`"),
            None => f.write_str("start its server, or point --base-url at one that runs"),
        }
    }
}

/// One `error:` line per server (`main` writes the first prefix).
struct ServersDown<'a>(&'a [LocalServerDown]);

impl fmt::Display for ServersDown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, down) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\nerror: ")?;
            }
            write!(f, "{down}")?;
        }
        Ok(())
    }
}

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        CoreError::io(context, source).into()
    }

    pub(crate) fn encode(what: impl Into<String>, source: serde_json::Error) -> Self {
        CoreError::encode(what, source).into()
    }

    /// A bug in toolscore, said as such ([`CoreError::Internal`]).
    pub(crate) fn internal(what: String) -> Self {
        CoreError::Internal(what).into()
    }

    /// Interrupted before the command had anything to show; `left` says what was left behind.
    pub(crate) fn interrupted(left: &'static str) -> Self {
        CoreError::Interrupted(left).into()
    }

    pub fn exit_code(&self) -> ExitCode {
        match self {
            Error::Core(e) => e.exit_code(),
            Error::Settings(_) | Error::ModelMap(_) => ExitCode::BadInput,
            Error::Run(e) => e.exit_code(),
            // Failing to reach the machine's own resources is not a verdict on the model; 4
            // says "could not judge".
            Error::HttpClient(_) | Error::Unreachable(_) | Error::Untrusted { .. } => {
                ExitCode::InfraErrors
            }
        }
    }

    /// Writing to a reader that stopped reading (`| head`): not an error to report.
    pub fn is_broken_pipe(&self) -> bool {
        is_broken_pipe(self)
    }
}

impl From<InputError> for Error {
    fn from(e: InputError) -> Self {
        Error::Core(e.into())
    }
}

impl From<McpError> for Error {
    fn from(e: McpError) -> Self {
        Error::Core(e.into())
    }
}
