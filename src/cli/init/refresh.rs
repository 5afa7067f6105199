//! `toolscore init --force` on a dataset that exists: its catalog is replaced by the one listed
//! now, and its cases are the user's, kept line for line. Only what `init` itself wrote and
//! nobody edited changes: an unedited starter case of a tool that is gone is removed, and a
//! starter case is added for each tool no case expects. Cases that do not fit the new
//! catalog (their tool gone, their arguments refused by its schema) are reported, never
//! deleted.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::cli::Error;
use toolscore_core::catalog::Catalog;
use toolscore_score::ToolValidators;
use toolscore_suite::{CaseFit, fit_cases};

/// What a refresh did, for the report.
pub(super) struct Refreshed {
    /// The catalog file written (`tools.json` or `dataset.yaml`), and the one of the other
    /// kind it replaced, if any.
    pub catalog_file: PathBuf,
    pub replaced_file: Option<PathBuf>,
    /// The tools before (when the dataset had a tools.json to read them from) and now.
    pub tools_before: Option<Vec<String>>,
    pub tools_now: Vec<String>,
    /// Cases kept as they were (every case but the removed starters).
    pub kept: usize,
    /// Unedited starter cases removed because their tool is gone, by id.
    pub removed_starters: Vec<String>,
    /// Tools no case expected, given a starter case each.
    pub added_starters: Vec<String>,
    /// The cases file as it is now, and its cases that do not fit the catalog.
    pub cases_file: PathBuf,
    pub stale: Vec<CaseFit>,
}

/// Replaces `dest`'s catalog by the one staged in `staging` (written and loaded back by
/// `stage_dataset`), keeps `dest/cases.jsonl`, and removes `staging`. `starters` are the
/// starter cases of the new catalog, one per tool, in its order.
pub(super) fn refresh(
    staging: &Path,
    dest: &Path,
    catalog: &Catalog,
    starters: &[Value],
) -> Result<Refreshed, Error> {
    let result = refresh_from(staging, dest, catalog, starters);
    let _ = std::fs::remove_dir_all(staging);
    result
}

fn refresh_from(
    staging: &Path,
    dest: &Path,
    catalog: &Catalog,
    starters: &[Value],
) -> Result<Refreshed, Error> {
    let live_file = toolscore_suite::DATASET_FILE;
    let (name, other) = if staging.join(live_file).exists() {
        (live_file, "tools.json")
    } else {
        ("tools.json", live_file)
    };
    let validators = ToolValidators::compile(catalog)
        .map_err(|(tool, e)| Error::internal(format!("tool `{tool}`: {e}")))?;
    let cases_file = dest.join("cases.jsonl");
    let file_label = cases_file.display().to_string();
    let old_text = if cases_file.exists() {
        toolscore_core::read_text(&cases_file)?
    } else {
        String::new()
    };
    // Every decision is made before anything is written.
    let fits = fit_cases(&old_text, &file_label, catalog, &validators);
    let removed: Vec<&CaseFit> = fits
        .iter()
        .filter(|f| f.unedited_starter && f.tool_gone)
        .collect();
    let removed_lines: BTreeSet<usize> = removed.iter().map(|f| f.line).collect();
    let covered: BTreeSet<&str> = fits
        .iter()
        .filter(|f| !removed_lines.contains(&f.line))
        .flat_map(|f| f.tools.iter().map(String::as_str))
        .collect();
    let mut ids: BTreeSet<String> = fits.iter().map(|f| f.id.clone()).collect();
    let mut added = Vec::new();
    let mut new_text = kept_lines(&old_text, &removed_lines);
    for starter in starters {
        let tool = starter["expect"]["tool"].as_str().unwrap_or_default();
        if covered.contains(tool) {
            continue;
        }
        let mut starter = starter.clone();
        starter["id"] = Value::String(unique_id(
            starter["id"].as_str().unwrap_or_default(),
            &mut ids,
        ));
        if !new_text.is_empty() && !new_text.ends_with('\n') {
            new_text.push('\n');
        }
        new_text.push_str(&starter.to_string());
        new_text.push('\n');
        added.push(tool.to_owned());
    }
    let tools_before = if dest.join("tools.json").is_file() {
        toolscore_core::catalog::load_catalog_file(&dest.join("tools.json"))
            .ok()
            .map(|c| c.tools.iter().map(|t| t.name.clone()).collect())
    } else {
        None
    };

    // The catalog first: should the cases file then fail to be written, the dataset is the
    // new catalog beside the user's cases as they were, which the report's rules describe.
    let catalog_file = dest.join(name);
    std::fs::rename(staging.join(name), &catalog_file)
        .map_err(|e| Error::io(format!("cannot write {}", catalog_file.display()), e))?;
    let replaced_file = dest.join(other);
    let replaced_file = if replaced_file.exists() {
        std::fs::remove_file(&replaced_file)
            .map_err(|e| Error::io(format!("cannot remove {}", replaced_file.display()), e))?;
        Some(replaced_file)
    } else {
        None
    };
    if new_text != old_text {
        toolscore_core::write_file(&cases_file, new_text.as_bytes())?;
    }
    let stale = fit_cases(&new_text, &file_label, catalog, &validators)
        .into_iter()
        .filter(|f| !f.stale.is_empty())
        .collect();
    Ok(Refreshed {
        catalog_file,
        replaced_file,
        tools_before,
        tools_now: catalog.tools.iter().map(|t| t.name.clone()).collect(),
        kept: fits.len() - removed.len(),
        removed_starters: removed.iter().map(|f| f.id.clone()).collect(),
        added_starters: added,
        cases_file,
        stale,
    })
}

/// `text` without the 1-based lines in `removed`, every other byte as it was.
fn kept_lines(text: &str, removed: &BTreeSet<usize>) -> String {
    text.split_inclusive('\n')
        .enumerate()
        .filter(|(i, _)| !removed.contains(&(i + 1)))
        .map(|(_, line)| line)
        .collect()
}

/// `id`, or `id-2`, `id-3`, … when a case of the file already has it; recorded in `ids`.
fn unique_id(id: &str, ids: &mut BTreeSet<String>) -> String {
    let mut candidate = id.to_owned();
    let mut n = 2;
    while ids.contains(&candidate) {
        candidate = format!("{id}-{n}");
        n += 1;
    }
    ids.insert(candidate.clone());
    candidate
}

/// The report of a refresh, lines for stdout.
pub(super) fn describe(r: &Refreshed) -> Vec<String> {
    let mut out = Vec::new();
    let now = r.tools_now.len();
    let change = match &r.tools_before {
        Some(before) => {
            let added: Vec<&str> = r
                .tools_now
                .iter()
                .filter(|t| !before.contains(t))
                .map(String::as_str)
                .collect();
            let gone: Vec<&str> = before
                .iter()
                .filter(|t| !r.tools_now.contains(t))
                .map(String::as_str)
                .collect();
            let list = |names: &[&str]| {
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            };
            format!(
                " (was {}; new: {}; gone: {})",
                before.len(),
                list(&added),
                list(&gone)
            )
        }
        None => String::new(),
    };
    out.push(format!(
        "refreshed {}: {now} tool{}{change}",
        r.catalog_file.display(),
        if now == 1 { "" } else { "s" }
    ));
    if let Some(replaced) = &r.replaced_file {
        out.push(format!(
            "removed {} (replaced by the file above)",
            replaced.display()
        ));
    }
    let mut kept = format!(
        "kept {}: {} case{} as {}",
        r.cases_file.display(),
        r.kept,
        if r.kept == 1 { "" } else { "s" },
        if r.kept == 1 { "it was" } else { "they were" }
    );
    if !r.removed_starters.is_empty() {
        kept.push_str(&format!(
            "; removed {} unedited starter case{} of a tool that is gone ({})",
            r.removed_starters.len(),
            if r.removed_starters.len() == 1 {
                ""
            } else {
                "s"
            },
            r.removed_starters.join(", ")
        ));
    }
    if !r.added_starters.is_empty() {
        kept.push_str(&format!(
            "; added a starter case for each tool no case expects ({})",
            r.added_starters.join(", ")
        ));
    }
    out.push(kept);
    if r.stale.is_empty() {
        out.push("every case fits the new catalog".to_owned());
    } else {
        out.push(format!(
            "{} {} not fit the new catalog (fix or delete each):",
            r.stale.len(),
            if r.stale.len() == 1 {
                "case does"
            } else {
                "cases do"
            }
        ));
        for f in &r.stale {
            for s in &f.stale {
                let tool = s
                    .tool
                    .as_deref()
                    .map_or(String::new(), |t| format!("tool `{t}`: "));
                out.push(format!(
                    "  {}:{}  {}  {tool}{}",
                    r.cases_file.display(),
                    f.line,
                    if f.id.is_empty() { "(no id)" } else { &f.id },
                    s.reason
                ));
            }
        }
    }
    out
}
