//! `--format`: which reports a command writes, and writing them.

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::report::Summary;

/// A report format. clap validates the names before any work starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Format {
    /// The plain-text report on stdout.
    Terminal,
    /// `summary.json` (`run`), or the summary as JSON on stdout (`report`).
    Json,
    /// `results.csv`, one row per trial (`run` only: `report` changes no record).
    Csv,
    /// `report.md`: Markdown for a pull-request comment or `$GITHUB_STEP_SUMMARY`.
    Md,
    /// `junit.xml`: one testsuite per arm, one testcase per case and per gate.
    Junit,
}

/// The formats asked for, deduplicated and in a fixed order, or `default` when none were.
pub fn chosen(asked: &[Format], default: &[Format]) -> Vec<Format> {
    let mut formats = if asked.is_empty() {
        default.to_vec()
    } else {
        asked.to_vec()
    };
    formats.sort();
    formats.dedup();
    formats
}

/// Writes the file formats among `formats` (`md`, `junit`) into `run_dir` and returns the
/// paths written; terminal, JSON and CSV output are the commands' own business because
/// `run` and `report` treat them differently.
pub fn write_files(
    summary: &Summary,
    run_dir: &Path,
    formats: &[Format],
) -> Result<Vec<PathBuf>, Error> {
    let mut written = Vec::new();
    for format in formats {
        let (name, text) = match format {
            Format::Md => {
                let mut out = Vec::new();
                crate::report::render_markdown(summary, &mut out)
                    .map_err(|e| Error::io("cannot render report.md", e))?;
                ("report.md", out)
            }
            Format::Junit => {
                let mut out = Vec::new();
                crate::report::render_junit(summary, &mut out)?;
                ("junit.xml", out)
            }
            Format::Terminal | Format::Json | Format::Csv => continue,
        };
        let path = run_dir.join(name);
        write_atomically(&path, &text)?;
        written.push(path);
    }
    Ok(written)
}

/// Via a temporary file and a rename, so CI never uploads half a report.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)
        .map_err(|e| Error::io(format!("cannot write {}", tmp.display()), e))?;
    std::fs::rename(&tmp, path)
        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))
}
