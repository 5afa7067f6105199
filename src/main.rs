//! The `toolscore` binary: parse flags, run, map the outcome to an exit code.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the binary is where toolscore talks to the terminal; the layer crates may not"
)]

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
    quiet_on_closed_pipe();
    let cli = toolscore::cli::Cli::parse();
    match toolscore::cli::run(cli) {
        Ok(code) => std::process::ExitCode::from(code as u8),
        Err(err) if err.is_broken_pipe() => std::process::ExitCode::from(CLOSED_PIPE),
        Err(err) => {
            eprintln!("error: {err}");
            std::process::ExitCode::from(err.exit_code() as u8)
        }
    }
}

/// The status of a process a closed pipe stopped (128 + SIGPIPE), as a shell reports it.
const CLOSED_PIPE: u8 = 141;

/// A reader that stops reading (`toolscore run … 2>&1 | head`) closes the pipe, and the next
/// print fails. Rust ignores SIGPIPE, so that print panics; toolscore keeps it ignored, since
/// it talks to MCP servers over pipes where EPIPE must stay an error it reports. So a panic
/// from printing to a closed stdout or stderr ends the process quietly with the status a
/// SIGPIPE would give, and any other panic goes to the default hook.
fn quiet_on_closed_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to std") && message.contains("Broken pipe") {
            #[expect(clippy::exit, reason = "a panic hook cannot return an exit code")]
            std::process::exit(i32::from(CLOSED_PIPE));
        }
        default(info);
    }));
}
