//! The `toolscore` binary: parse flags, run, map the outcome to an exit code.

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
        Err(err) => {
            eprintln!("error: {err}");
            std::process::ExitCode::from(err.exit_code() as u8)
        }
    }
}
