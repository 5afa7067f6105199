//! The `toolscore` binary: parse flags, run, map the outcome to an exit code.

use std::io::Write as _;

use clap::Parser;

fn main() -> std::process::ExitCode {
    // Diagnostics (retries, backoff) go to stderr; TOOLSCORE_LOG=debug shows them.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TOOLSCORE_LOG")
                // rmcp logs each failed connection at ERROR; toolscore reports them itself,
                // naming the server and quoting its stderr.
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,rmcp=off")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = toolscore::cli::Cli::parse();
    match toolscore::cli::run(cli) {
        Ok(code) => std::process::ExitCode::from(code as u8),
        // A reader that stopped reading (`toolscore … | head`): every print comes back as an
        // error (`cli::say`), and the command ends quietly as a SIGPIPE would end it.
        Err(err) if err.is_broken_pipe() => std::process::ExitCode::from(CLOSED_PIPE),
        Err(err) => {
            // Said if stderr still reads; the exit code says it either way.
            let _ = writeln!(std::io::stderr(), "error: {err}");
            std::process::ExitCode::from(err.exit_code() as u8)
        }
    }
}

/// The status of a process a closed pipe stopped (128 + SIGPIPE), as a shell reports it.
const CLOSED_PIPE: u8 = 141;
