//! A finished run's cases and catalogs as its arms' models read them, for `explain` and the
//! HTML report's case explorer: found from what the run recorded (summary.json names each
//! dataset's catalog and each scenario's file, plan.json the fixtures' digests) and checked
//! against it, each dataset loaded once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::resume::{PLAN_FILE, PlanFingerprint};
use toolscore_core::{BASE_VARIANT, SCENARIO_DATASET};
use toolscore_suite::shown::{self, NotShown, Recorded, ShownDataset};
use toolscore_summary::RunInfo;
use toolscore_summary::behaviour::{CaseAsShown, ShownCatalog, ToBase};

/// The files behind one run folder, read as they are asked for.
pub(super) struct RunFiles<'a> {
    /// The run's folder: the paths the run recorded are relative to where it was made, which
    /// is one of the folder's ancestors when `explain` runs from elsewhere.
    dir: PathBuf,
    run: &'a RunInfo,
    plan: Option<PlanFingerprint>,
    datasets: BTreeMap<String, Result<ShownDataset, NotShown>>,
}

impl<'a> RunFiles<'a> {
    /// The run's folder.
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The run in `dir` (its plan.json, when readable) with `run` its summary's run info.
    pub(super) fn new(dir: &Path, run: &'a RunInfo) -> Self {
        let plan = std::fs::read_to_string(dir.join(PLAN_FILE))
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok());
        RunFiles {
            dir: dir.to_path_buf(),
            run,
            plan,
            datasets: BTreeMap::new(),
        }
    }

    /// The case as `variant`'s model read it, or why it cannot be shown.
    pub(super) fn case(
        &mut self,
        dataset: &str,
        case_id: &str,
        variant: &str,
    ) -> Result<CaseAsShown, NotShown> {
        let shown = if dataset == SCENARIO_DATASET {
            self.scenario(case_id, variant)?
        } else {
            let fingerprint = self.catalog_fingerprint(dataset, variant);
            self.dataset(dataset)?
                .case(case_id, variant, fingerprint.as_deref())?
        };
        Ok(CaseAsShown {
            source: shown.source,
            messages: shown.messages,
            tools: shown.catalog.tools.clone(),
            changed_since: shown.changed_since,
        })
    }

    /// The dataset's catalog as `variant` showed it, or why it cannot be shown.
    pub(super) fn catalog(
        &mut self,
        dataset: &str,
        variant: &str,
    ) -> Result<ShownCatalog, NotShown> {
        let fingerprint = self.catalog_fingerprint(dataset, variant);
        let (catalog, changed_since) = self
            .dataset(dataset)?
            .catalog(variant, fingerprint.as_deref())?;
        Ok(ShownCatalog {
            dataset: dataset.to_owned(),
            variant: variant.to_owned(),
            tools: catalog.tools.clone(),
            changed_since,
        })
    }

    /// Each tool `variant` renames in `dataset`: its name under the variant → its base name
    /// (empty for a scenario, or a dataset that cannot be read).
    pub(super) fn base_names(&mut self, dataset: &str, variant: &str) -> ToBase {
        if dataset == SCENARIO_DATASET {
            return ToBase::new();
        }
        self.dataset(dataset).map_or_else(
            |_| ToBase::new(),
            |d| {
                d.renames(variant)
                    .into_iter()
                    .map(|(base, renamed)| (renamed, base))
                    .collect()
            },
        )
    }

    /// The fingerprint the run recorded for the catalog `variant` showed of `dataset`.
    fn catalog_fingerprint(&self, dataset: &str, variant: &str) -> Option<String> {
        let info = self.run.datasets.iter().find(|d| d.name == dataset)?;
        if variant == BASE_VARIANT {
            Some(info.catalog_fingerprint.clone())
        } else {
            info.variants
                .iter()
                .find(|v| v.name == variant)
                .map(|v| v.catalog_fingerprint.clone())
        }
    }

    /// The dataset, loaded on first use from the folder of the catalog the run names.
    fn dataset(&mut self, name: &str) -> Result<&ShownDataset, NotShown> {
        if !self.datasets.contains_key(name) {
            let loaded = self.load_dataset(name);
            self.datasets.insert(name.to_owned(), loaded);
        }
        match &self.datasets[name] {
            Ok(d) => Ok(d),
            Err(why) => Err(why.clone()),
        }
    }

    fn load_dataset(&self, name: &str) -> Result<ShownDataset, NotShown> {
        let info = self
            .run
            .datasets
            .iter()
            .find(|d| d.name == name)
            .ok_or_else(|| NotShown::NoCatalogRecorded {
                dataset: name.to_owned(),
            })?;
        let catalog = self.locate(&info.catalog_source);
        let dir = catalog
            .parent()
            .ok_or_else(|| NotShown::CatalogInNoFolder {
                catalog_source: info.catalog_source.clone(),
            })?;
        let fixtures = self.plan.as_ref().and_then(|p| {
            p.datasets
                .iter()
                .find(|d| d.name == name)
                .and_then(|d| d.fixtures.clone())
        });
        let variants: Vec<(String, PathBuf)> = info
            .variants
            .iter()
            .map(|v| (v.name.clone(), self.locate(&v.file)))
            .collect();
        ShownDataset::load(dir, fixtures.as_deref(), &variants)
    }

    /// A path the run recorded: as it is when it names something from here (absolute, or
    /// run from the folder the run was made in), else from the nearest ancestor of the run's
    /// folder it names something from (the project the run was made in holds its folder).
    fn locate(&self, recorded: &str) -> PathBuf {
        let path = Path::new(recorded);
        if path.is_absolute() || path.exists() {
            return path.to_path_buf();
        }
        let dir = std::path::absolute(&self.dir).unwrap_or_else(|_| self.dir.clone());
        dir.ancestors()
            .skip(1)
            .map(|a| a.join(path))
            .find(|p| p.exists())
            .unwrap_or_else(|| path.to_path_buf())
    }

    fn scenario(&self, name: &str, variant: &str) -> Result<shown::ShownCase, NotShown> {
        let info = self
            .run
            .scenarios
            .iter()
            .find(|sc| sc.name == name)
            .ok_or_else(|| NotShown::NoScenarioRecorded {
                scenario: name.to_owned(),
            })?;
        let source_digest = self.plan.as_ref().and_then(|p| {
            let i = p.scenarios.iter().position(|(n, _)| n == name)?;
            p.scenario_sources.get(i).map(String::as_str)
        });
        let recorded = Recorded {
            catalog_fingerprint: (variant == BASE_VARIANT)
                .then_some(info.catalog_fingerprint.as_str()),
            source_digest,
        };
        let catalog_source = self.locate(&info.catalog_source);
        // An attacked unit is its scenario under the attack the run folder recorded.
        let attacker = super::attacks::attacker_catalog()
            .map_err(|e| NotShown::ScenarioUnreadable(std::sync::Arc::new(e.into())))?;
        let attack = match &info.attack {
            None => None,
            Some(id) => Some(
                super::attacks::run_attack(&self.dir, id)
                    .map_err(|e| NotShown::ScenarioUnreadable(std::sync::Arc::new(e.into())))?,
            ),
        };
        shown::scenario_case(
            &self.locate(&info.file),
            &catalog_source.display().to_string(),
            variant,
            recorded,
            attack.map(|a| (a, &attacker)),
        )
    }
}
