//! A finished run's cases and catalogs as its arms' models read them, for `explain` and the
//! HTML report's case explorer: found from what the run recorded (summary.json names each
//! dataset's catalog and each scenario's file, plan.json the fixtures' digests) and checked
//! against it, each dataset loaded once.

use std::collections::BTreeMap;
use std::path::Path;

use super::resume::{PLAN_FILE, PlanFingerprint};
use crate::record::{BASE_VARIANT, SCENARIO_DATASET};
use crate::report::RunInfo;
use crate::report::behaviour::{CaseAsShown, ShownCatalog, ToBase};
use crate::suite::shown::{self, Recorded, ShownDataset};

/// The files behind one run folder, read as they are asked for.
pub struct RunFiles<'a> {
    run: &'a RunInfo,
    plan: Option<PlanFingerprint>,
    datasets: BTreeMap<String, Result<ShownDataset, String>>,
}

impl<'a> RunFiles<'a> {
    /// The run in `dir` (its plan.json, when readable) with `run` its summary's run info.
    pub fn new(dir: &Path, run: &'a RunInfo) -> Self {
        let plan = std::fs::read_to_string(dir.join(PLAN_FILE))
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok());
        RunFiles {
            run,
            plan,
            datasets: BTreeMap::new(),
        }
    }

    /// The case as `variant`'s model read it, or why it cannot be shown.
    pub fn case(
        &mut self,
        dataset: &str,
        case_id: &str,
        variant: &str,
    ) -> Result<CaseAsShown, String> {
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
    pub fn catalog(&mut self, dataset: &str, variant: &str) -> Result<ShownCatalog, String> {
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
    pub fn base_names(&mut self, dataset: &str, variant: &str) -> ToBase {
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
    fn dataset(&mut self, name: &str) -> Result<&ShownDataset, String> {
        if !self.datasets.contains_key(name) {
            let loaded = self.load_dataset(name);
            self.datasets.insert(name.to_owned(), loaded);
        }
        match &self.datasets[name] {
            Ok(d) => Ok(d),
            Err(why) => Err(why.clone()),
        }
    }

    fn load_dataset(&self, name: &str) -> Result<ShownDataset, String> {
        let info = self
            .run
            .datasets
            .iter()
            .find(|d| d.name == name)
            .ok_or_else(|| format!("the run names no catalog for dataset {name}"))?;
        let dir = Path::new(&info.catalog_source)
            .parent()
            .ok_or_else(|| format!("the run's catalog {} is in no folder", info.catalog_source))?;
        let fixtures = self.plan.as_ref().and_then(|p| {
            p.datasets
                .iter()
                .find(|d| d.name == name)
                .and_then(|d| d.fixtures.clone())
        });
        ShownDataset::load(dir, fixtures.as_deref())
    }

    fn scenario(&self, name: &str, variant: &str) -> Result<shown::ShownCase, String> {
        let info = self
            .run
            .scenarios
            .iter()
            .find(|sc| sc.name == name)
            .ok_or_else(|| format!("the run names no file for scenario {name}"))?;
        let source_digest = self.plan.as_ref().and_then(|p| {
            let i = p.scenarios.iter().position(|(n, _)| n == name)?;
            p.scenario_sources.get(i).map(String::as_str)
        });
        let recorded = Recorded {
            catalog_fingerprint: (variant == BASE_VARIANT)
                .then_some(info.catalog_fingerprint.as_str()),
            source_digest,
        };
        shown::scenario_case(
            Path::new(&info.file),
            &info.catalog_source,
            variant,
            recorded,
        )
    }
}
