//! `toolscore report` re-scores a finished run when its fixtures' expectations or matchers
//! changed since: the records keep every model turn, so a corrected expectation can be applied
//! without calling the model again.
//!
//! Only when the model would have read the same thing: a dataset whose catalog (or catalog
//! variant) changed since the run is reported as recorded, because the turns answered another
//! catalog. The records on disk are never changed.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use toolscore_core::{Outcome, TrialRecord};
use toolscore_score::{Expectation, ToolValidators, score_trial};
use toolscore_suite::load_dataset;
use toolscore_summary::RunInfo;

/// The current fixtures of a run's cases, and what re-scoring found.
pub(super) struct Rescorer {
    /// (dataset, variant, case id) → the expectation under that variant and its validators.
    cases: HashMap<(String, String, String), (Expectation, Arc<ToolValidators>)>,
    /// Scored trials judged again.
    pub checked: u64,
    /// Of those, trials whose pass/fail or any metric changed.
    pub changed: u64,
    /// Why some datasets were reported as recorded.
    pub skipped: Vec<String>,
}

impl Rescorer {
    /// Loads the datasets a run names (the folder of each catalog file) as they are now. None
    /// when no dataset could be used.
    pub(super) fn for_run(run: &RunInfo) -> Option<Rescorer> {
        let mut cases = HashMap::new();
        let mut skipped = Vec::new();
        for d in &run.datasets {
            // A run's datasets are named relative to where it ran; a folder that is not there
            // (another checkout, another machine) is reported as recorded without comment.
            let Some(dir) = Path::new(&d.catalog_source)
                .parent()
                .filter(|dir| dir.join("cases.jsonl").is_file())
            else {
                continue;
            };
            // Re-scoring would mean starting the server again to list its catalog; a report
            // reads files only.
            if dir.join(toolscore_suite::DATASET_FILE).is_file() {
                skipped.push(format!(
                    "dataset {}: its catalog is a live MCP server, which report does not start again",
                    d.name
                ));
                continue;
            }
            let dataset = match load_dataset(dir) {
                Ok(dataset) => dataset,
                Err(e) => {
                    skipped.push(format!(
                        "dataset {}: its fixtures cannot be read now ({e})",
                        d.name
                    ));
                    continue;
                }
            };
            for arm in &run.arms {
                let recorded = if arm.variant == toolscore_core::BASE_VARIANT {
                    Some(d.catalog_fingerprint.as_str())
                } else {
                    d.variants
                        .iter()
                        .find(|v| v.name == arm.variant)
                        .map(|v| v.catalog_fingerprint.as_str())
                };
                let Some(variant) = dataset.variant(&arm.variant) else {
                    skipped.push(format!(
                        "dataset {}: catalog variant {} no longer exists",
                        d.name, arm.variant
                    ));
                    continue;
                };
                if recorded != Some(variant.catalog.fingerprint.as_str()) {
                    skipped.push(format!(
                        "dataset {} (variant {}): the catalog changed since the run, so its trials answered another catalog",
                        d.name, arm.variant
                    ));
                    continue;
                }
                for c in &dataset.cases {
                    cases.insert(
                        (d.name.clone(), arm.variant.clone(), c.id.clone()),
                        (
                            variant.expectation(&c.expect),
                            match &c.catalog {
                                Some((_, own)) => Arc::clone(own),
                                None => Arc::clone(&variant.validators),
                            },
                        ),
                    );
                }
            }
        }
        (!cases.is_empty() || !skipped.is_empty()).then_some(Rescorer {
            cases,
            checked: 0,
            changed: 0,
            skipped,
        })
    }

    /// Scores a record again against the current fixture of its case (infrastructure errors
    /// and cases no longer in the fixtures are left as recorded).
    pub(super) fn apply(&mut self, record: &mut TrialRecord) {
        let Some(old) = &record.score else {
            return;
        };
        let key = (
            record.dataset.clone(),
            record.arm.variant.clone(),
            record.case_id.clone(),
        );
        let Some((expect, validators)) = self.cases.get(&key) else {
            return;
        };
        let new = score_trial(expect, &record.turns, validators);
        self.checked += 1;
        if new.passed != old.passed
            || new.selection_ok != old.selection_ok
            || new.args_ok != old.args_ok
            || new.schema_ok != old.schema_ok
        {
            self.changed += 1;
        }
        record.outcome = if new.passed {
            Outcome::Pass
        } else {
            Outcome::Fail
        };
        record.expected = expect.tool_label();
        record.score = Some(new);
    }

    /// What to say above the report, if anything changed or could not be checked.
    pub(super) fn notice(&self) -> Option<String> {
        let mut lines = Vec::new();
        if self.changed > 0 {
            lines.push(format!(
                "RE-SCORED: the fixtures changed since this run; {} of {} scored trials changed verdict against the current expectations (results.jsonl is unchanged)",
                self.changed, self.checked
            ));
        }
        for s in &self.skipped {
            lines.push(format!("not re-scored: {s}; reported as recorded"));
        }
        (!lines.is_empty()).then(|| lines.join("\n"))
    }
}
