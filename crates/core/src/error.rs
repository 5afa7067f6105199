//! Errors and the exit codes they map to.
//!
//! Library code returns typed errors; only `main` turns them into a message and an exit code.
//! User-input errors carry the file, the line (and column when known) and the field.

use std::fmt;
use std::path::Path;

/// Process exit codes, documented in `--help`, the README and docs/reference/exit-codes.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// The run completed (and any gate passed).
    Pass = 0,
    /// A gate failed or a regression was found.
    GateFailed = 1,
    /// Bad input or usage: nothing was run.
    BadInput = 2,
    /// Not enough evidence yet to decide.
    Inconclusive = 3,
    /// Too many infrastructure errors to judge.
    InfraErrors = 4,
    /// Stopped with Ctrl-C; the summary covers the trials that completed.
    Interrupted = 130,
}

/// A problem with something the user wrote: config, catalog, fixtures, flags, environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// `file`, `file:line` or `file:line:column`; empty for errors with no file (flags).
    pub location: String,
    /// JSON-path-like field (`cases[3].expect.tool`), when one is to blame.
    pub field: Option<String>,
    pub message: String,
}

impl InputError {
    pub fn new(message: impl Into<String>) -> Self {
        InputError {
            location: String::new(),
            field: None,
            message: message.into(),
        }
    }

    pub fn at(file: &str, line: Option<usize>, field: &str, message: &str) -> Self {
        let location = match line {
            Some(l) => format!("{file}:{l}"),
            None => file.to_owned(),
        };
        let field = if field.is_empty() {
            None
        } else {
            Some(field.to_owned())
        };
        InputError {
            location,
            field,
            message: message.to_owned(),
        }
    }

    pub fn at_column(
        file: &str,
        line: usize,
        column: usize,
        field: Option<String>,
        message: &str,
    ) -> Self {
        InputError {
            location: format!("{file}:{line}:{column}"),
            field,
            message: message.to_owned(),
        }
    }

    pub fn io(path: &Path, err: &std::io::Error) -> Self {
        InputError {
            location: path.display().to_string(),
            field: None,
            message: format!("cannot read: {err}"),
        }
    }

    /// A JSON Lines entry at 1-based `line` of `file` that does not parse as `what`.
    pub fn json_line(file: &str, line: usize, what: &str, err: &serde_json::Error) -> Self {
        InputError::at(
            file,
            Some(line),
            "",
            &format!("{what}: {}", strip_position(&err.to_string())),
        )
    }

    /// A serde_json error in `file`, whose positions are relative to the whole file.
    /// A YAML file that does not parse into `what` (a config, a scenario), at the line and
    /// column the parser names.
    pub fn yaml(file: &str, what: &str, err: &serde_saphyr::Error) -> Self {
        let message = format!("invalid {what}: {err}");
        match err.location() {
            Some(loc) => InputError::at_column(
                file,
                loc.line() as usize,
                loc.column() as usize,
                None,
                &message,
            ),
            None => InputError::at(file, None, "", &message),
        }
    }

    pub fn json(file: &str, err: &serde_json::Error) -> Self {
        InputError::at_column(
            file,
            err.line(),
            err.column(),
            None,
            &format!("invalid JSON: {}", strip_position(&err.to_string())),
        )
    }
}

/// serde_json appends " at line L column C" to its messages; the location says it already.
pub fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_owned(),
        None => msg.to_owned(),
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.location.is_empty() {
            write!(f, "{}: ", self.location)?;
        }
        if let Some(field) = &self.field {
            write!(f, "{field}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for InputError {}

/// The errors every layer shares; a layer with failures of its own has its own type, and the
/// command line's `cli::Error` wraps them all.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    /// A document toolscore made could not be encoded as JSON.
    #[error("cannot encode {what}: {source}")]
    Encode {
        what: String,
        source: serde_json::Error,
    },
    /// A state the checks before the run rule out: a bug in toolscore, said as such. The
    /// text is the data: what was found, for the bug report.
    #[error("internal error (a bug in toolscore): {0}")]
    Internal(String),
    /// Ctrl-C or SIGTERM before the command had anything to show, and what was left behind
    /// (a live MCP server being listed has been shut down; submitted batches keep running).
    #[error("interrupted; {0}")]
    Interrupted(&'static str),
}

impl Error {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    pub fn encode(what: impl Into<String>, source: serde_json::Error) -> Self {
        Error::Encode {
            what: what.into(),
            source,
        }
    }

    pub fn exit_code(&self) -> ExitCode {
        match self {
            Error::Input(_) => ExitCode::BadInput,
            // Failing to write reports or reach the machine's own resources is not a verdict on
            // the model; 4 says "could not judge".
            Error::Io { .. } | Error::Encode { .. } | Error::Internal(_) => ExitCode::InfraErrors,
            Error::Interrupted(_) => ExitCode::Interrupted,
        }
    }
}

/// Whether `err` or any error in its chain of sources is a write to a reader that stopped
/// reading (`toolscore … | head`), which ends a command quietly rather than as an error. Only
/// toolscore's own output reaches here as an I/O error of that kind: an MCP server's closed
/// pipe is an `McpError`, said in words, so it is still reported.
pub fn is_broken_pipe(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(e) = next {
        if e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
        {
            return true;
        }
        next = e.source();
    }
    false
}
