//! `toolscore cassette`: work with recorded cassettes.

use std::path::PathBuf;

use clap::Subcommand;

use super::usage;
use crate::cli::Error;
use toolscore_core::ExitCode;

#[derive(Debug, Subcommand)]
pub enum CassetteCommand {
    /// Convert a format-1 cassette to the current format
    ///
    /// No model is called; every response is kept byte for byte, so replays reproduce the
    /// recorded run exactly.
    Upgrade {
        /// The old cassette.
        from: PathBuf,
        /// Where to write the converted one (`.gz` = compressed); must not exist.
        to: PathBuf,
    },
}

pub(super) fn run(command: &CassetteCommand) -> Result<ExitCode, Error> {
    match command {
        CassetteCommand::Upgrade { from, to } => {
            if to.exists() {
                return Err(usage(&format!(
                    "{} already exists; choose another output path",
                    to.display()
                )));
            }
            let n = toolscore_provider::cassette::upgrade_v1(from, to)?;
            outln!(
                "converted {n} entries from {} to {} (format {})",
                from.display(),
                to.display(),
                toolscore_provider::cassette::CASSETTE_FORMAT
            )?;
            Ok(ExitCode::Pass)
        }
    }
}
