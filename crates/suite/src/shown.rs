//! Public as a namespace: callers write `shown::scenario_case`, `shown::ShownCase`, `shown::NotShown`.
//!
//! A finished run's case as the model was shown it: the conversation and the catalog of the
//! arm's variant (renames and overlays applied), reloaded from the files the run names and
//! checked against the fingerprints it recorded. What the model read is what is printed, or
//! a sentence says what changed since; a live server is never started to list a catalog
//! again (a report reads files only).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolscore_core::Error;
use toolscore_core::Message;
use toolscore_core::catalog::Catalog;

/// Why a run's case or catalog cannot be shown as its model read it. A report says it in
/// place of the case, so each is a sentence that reads after "cannot show it:".
#[derive(Debug, Clone, thiserror::Error)]
pub enum NotShown {
    #[error(
        "its catalog is listed from a live MCP server ({source_label}), which a report does not start"
    )]
    LiveCatalog { source_label: String },
    #[error("its dataset cannot be read now ({0})")]
    DatasetUnreadable(#[source] Arc<Error>),
    #[error("its scenario file cannot be read now ({0})")]
    ScenarioUnreadable(#[source] Arc<Error>),
    #[error("{} holds no scenario", .file.display())]
    NoScenario { file: PathBuf },
    #[error("the catalog variant {variant} no longer exists")]
    NoVariant { variant: String },
    #[error("{} has no case {case_id} now", .cases_file.display())]
    NoCase {
        cases_file: PathBuf,
        case_id: String,
    },
    #[error("the run names no catalog for dataset {dataset}")]
    NoCatalogRecorded { dataset: String },
    #[error("the run's catalog {catalog_source} is in no folder")]
    CatalogInNoFolder { catalog_source: String },
    #[error("the run names no file for scenario {scenario}")]
    NoScenarioRecorded { scenario: String },
}

/// One case as an arm's model read it.
pub struct ShownCase {
    /// Where it comes from: `datasets/billing/cases.jsonl:28`, or the scenario file.
    pub source: String,
    pub messages: Vec<Message>,
    pub catalog: Arc<Catalog>,
    /// What differs from what the run recorded (the catalog, the fixtures): each a sentence.
    /// Empty when both are as the run recorded them.
    pub changed_since: Vec<String>,
}

/// What the run recorded of what it showed, to check today's files against.
#[derive(Clone, Copy, Default)]
pub struct Recorded<'a> {
    /// `sha256:` of the catalog the arm's variant produced.
    pub catalog_fingerprint: Option<&'a str>,
    /// `sha256:` of the fixtures (`plan.json`), or of the scenario file.
    pub source_digest: Option<&'a str>,
}

/// A dataset as it is now, loaded once for every case a report shows of it.
pub struct ShownDataset {
    dataset: super::Dataset,
    /// Said of every case when the fixtures differ from what the run recorded.
    fixtures_changed: Vec<String>,
}

impl ShownDataset {
    /// The dataset in `dir`, its fixtures checked against `fixtures_digest` (`plan.json`), with
    /// the overlay files the run recorded for its variants (`name`, file): a variant is shown
    /// from the file the run read (a tune's candidates are in the tune's folder, not the
    /// dataset's), the dataset's own `variants/NAME.json` when that file is gone.
    pub fn load(
        dir: &Path,
        fixtures_digest: Option<&str>,
        recorded_variants: &[(String, std::path::PathBuf)],
    ) -> Result<ShownDataset, NotShown> {
        if dir.join(super::live::DATASET_FILE).is_file() {
            return Err(NotShown::LiveCatalog {
                source_label: dir.join(super::live::DATASET_FILE).display().to_string(),
            });
        }
        let mut dataset =
            super::load_dataset(dir).map_err(|e| NotShown::DatasetUnreadable(Arc::new(e)))?;
        for (name, file) in recorded_variants {
            let Ok(variant) = super::variant::load_variant_file(file, &dataset.catalog) else {
                continue;
            };
            if variant.name != *name {
                continue;
            }
            dataset.variants.retain(|v| v.name != *name);
            dataset.variants.push(variant);
        }
        let mut fixtures_changed = Vec::new();
        check(
            &mut fixtures_changed,
            "the fixtures (cases.jsonl)",
            fixtures_digest,
            &dataset.fixtures_digest,
        );
        Ok(ShownDataset {
            dataset,
            fixtures_changed,
        })
    }

    /// The catalog `variant` shows, and what changed since the run recorded `fingerprint`.
    pub fn catalog(
        &self,
        variant: &str,
        fingerprint: Option<&str>,
    ) -> Result<(Arc<Catalog>, Vec<String>), NotShown> {
        let v = self
            .dataset
            .variant(variant)
            .ok_or_else(|| no_variant(variant))?;
        let mut changed = Vec::new();
        check(
            &mut changed,
            "the catalog",
            fingerprint,
            &v.catalog.fingerprint,
        );
        Ok((Arc::clone(&v.catalog), changed))
    }

    /// The tools `variant` renames: base name → its name under the variant.
    pub fn renames(&self, variant: &str) -> std::collections::BTreeMap<String, String> {
        self.dataset
            .variant(variant)
            .map(|v| v.renames.clone())
            .unwrap_or_default()
    }

    /// Case `case_id` under catalog `variant`, its catalog checked against `fingerprint`.
    pub fn case(
        &self,
        case_id: &str,
        variant: &str,
        fingerprint: Option<&str>,
    ) -> Result<ShownCase, NotShown> {
        let case = self
            .dataset
            .cases
            .iter()
            .find(|c| c.id == case_id)
            .ok_or_else(|| NotShown::NoCase {
                cases_file: self.dataset.dir.join("cases.jsonl"),
                case_id: case_id.to_owned(),
            })?;
        let (variant_catalog, mut changed_since) = self.catalog(variant, fingerprint)?;
        let shown_variant = self
            .dataset
            .variant(variant)
            .ok_or_else(|| no_variant(variant))?;
        // A case with its own catalog (imported from BFCL) is shown that one; variants do not
        // apply to it.
        let (catalog, messages) = match &case.catalog {
            Some((own, _)) => {
                changed_since.clear();
                (Arc::clone(own), case.messages.clone())
            }
            None => (variant_catalog, shown_variant.messages(&case.messages)),
        };
        changed_since.extend(self.fixtures_changed.iter().cloned());
        Ok(ShownCase {
            source: format!(
                "{}:{}",
                self.dataset.dir.join("cases.jsonl").display(),
                case.line
            ),
            messages,
            catalog,
            changed_since,
        })
    }
}

/// The scenario in `file` under catalog `variant`; `catalog_source` is where the run listed
/// its catalog (a file, or a live server's label).
///
/// An attacked unit is shown as its model read it: the scenario under `attack` (the attack
/// the run recorded, with the attacker catalog its goal may take a tool from).
pub fn scenario_case(
    file: &Path,
    catalog_source: &str,
    variant: &str,
    recorded: Recorded<'_>,
    attack: Option<(super::attack::Attack, &Catalog)>,
) -> Result<ShownCase, NotShown> {
    // Loading a scenario whose catalog is a server would list it again: not for a report.
    if !Path::new(catalog_source).exists() {
        return Err(NotShown::LiveCatalog {
            source_label: catalog_source.to_owned(),
        });
    }
    let scenario = super::scenario::load_scenarios(file)
        .map_err(|e| NotShown::ScenarioUnreadable(Arc::new(e)))?
        .into_iter()
        .next()
        .ok_or_else(|| NotShown::NoScenario {
            file: file.to_path_buf(),
        })?;
    let scenario = match attack {
        None => scenario,
        Some((attack, attacker)) => {
            super::attack::attacked_unit(&scenario, &Arc::new(attack), attacker)
                .map_err(|e| NotShown::ScenarioUnreadable(Arc::new(e.into())))?
        }
    };
    let shown_variant = scenario
        .catalog_for(variant)
        .ok_or_else(|| no_variant(variant))?;
    let mut changed_since = Vec::new();
    check(
        &mut changed_since,
        "the catalog",
        recorded.catalog_fingerprint,
        &shown_variant.catalog.fingerprint,
    );
    check(
        &mut changed_since,
        "the scenario file",
        recorded.source_digest,
        &scenario.source_digest,
    );
    Ok(ShownCase {
        source: file.display().to_string(),
        messages: shown_variant.messages(scenario.messages_for(variant)),
        catalog: Arc::clone(&shown_variant.catalog),
        changed_since,
    })
}

fn no_variant(variant: &str) -> NotShown {
    NotShown::NoVariant {
        variant: variant.to_owned(),
    }
}

/// Notes `what` as changed when the run recorded a digest and today's differs; a run that
/// recorded none (older runs) is not checked, and says so.
fn check(changed: &mut Vec<String>, what: &str, recorded: Option<&str>, now: &str) {
    match recorded {
        Some(was) if was != now => changed.push(format!(
            "{what} changed since the run ({} then, {} now): the model read the earlier one",
            toolscore_core::catalog::view::short(was),
            toolscore_core::catalog::view::short(now)
        )),
        Some(_) => {}
        None => changed.push(format!(
            "the run recorded no fingerprint of {what}, so it is shown as it is now, unchecked"
        )),
    }
}
