//! The `toolscore` binary: parse flags, run, map the outcome to an exit code.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = toolscore::cli::Cli::parse();
    match toolscore::cli::run(cli) {
        Ok(code) => std::process::ExitCode::from(code as u8),
        Err(err) => {
            eprintln!("error: {err}");
            std::process::ExitCode::from(err.exit_code() as u8)
        }
    }
}
