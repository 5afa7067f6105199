//! Writing an imported dataset: staged beside its destination, loaded back with the loader
//! `validate` uses, and only then put in place, so a refused or broken import leaves nothing.

use std::path::{Path, PathBuf};

use serde_json::Value;

use toolscore_core::{Error, InputError};

/// Where a written dataset's catalog comes from: a tools.json, or a dataset.yaml that names a
/// live server (listed again when the dataset is loaded back).
pub enum CatalogFile<'a> {
    Tools(&'a Value),
    Live(&'a str),
}

/// Writes the dataset into a sibling temporary folder, loads it with the loader `validate`
/// uses, and only then puts it in place: a dataset that would not load is never left behind.
pub fn write_dataset(
    dest: &Path,
    catalog: CatalogFile<'_>,
    cases: &[Value],
    force: bool,
) -> Result<(), Error> {
    let staging = stage_dataset(dest, catalog, cases)?;
    put_in_place(&staging, dest, force)
}

fn io_error(what: &str, e: std::io::Error) -> Error {
    Error::Io {
        context: what.to_owned(),
        source: e,
    }
}

/// Writes the dataset beside `dest` (`.NAME.importing`) and loads it back as `validate` does;
/// returns the staging folder. Nothing is left behind when it does not load.
pub fn stage_dataset(
    dest: &Path,
    catalog: CatalogFile<'_>,
    cases: &[Value],
) -> Result<PathBuf, Error> {
    let io = io_error;
    if cases.is_empty() {
        return Err(Error::Input(toolscore_core::InputError::new(format!(
            "nothing to import into {}: every case was skipped",
            dest.display()
        ))));
    }
    let parent = dest.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| io(&parent.display().to_string(), e))?;
    let file_name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "dataset".into());
    let staging = parent.join(format!(".{file_name}.importing"));
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(|e| io(&staging.display().to_string(), e))?;
    }
    std::fs::create_dir_all(&staging).map_err(|e| io(&staging.display().to_string(), e))?;
    match catalog {
        CatalogFile::Tools(tools) => {
            let tools =
                serde_json::to_string_pretty(tools).map_err(|e| Error::encode("tools.json", e))?;
            std::fs::write(staging.join("tools.json"), tools + "\n")
                .map_err(|e| io("writing tools.json", e))?;
        }
        CatalogFile::Live(yaml) => {
            std::fs::write(staging.join(toolscore_suite::DATASET_FILE), yaml)
                .map_err(|e| io("writing dataset.yaml", e))?;
        }
    }
    let mut lines = String::new();
    for c in cases {
        lines.push_str(&c.to_string());
        lines.push('\n');
    }
    std::fs::write(staging.join("cases.jsonl"), lines).map_err(|e| io("writing cases.jsonl", e))?;
    if let Err(e) = toolscore_suite::load_dataset(&staging) {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(Error::Internal(format!(
            "the dataset written for {} does not load: {e}",
            dest.display()
        )));
    }
    Ok(staging)
}

/// Moves a staged dataset to `dest`, replacing one there only with `force`.
pub fn put_in_place(staging: &Path, dest: &Path, force: bool) -> Result<(), Error> {
    let io = io_error;
    if dest.exists() {
        if !force {
            let _ = std::fs::remove_dir_all(staging);
            return Err(InputError::new(format!(
                "{} already exists; pass --force to replace it",
                dest.display()
            ))
            .into());
        }
        std::fs::remove_dir_all(dest).map_err(|e| io(&dest.display().to_string(), e))?;
    }
    std::fs::rename(staging, dest).map_err(|e| io(&dest.display().to_string(), e))?;
    Ok(())
}
