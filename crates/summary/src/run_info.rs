//! What a run was, as its summary's header says it: the run, its shards, arms, replays,
//! datasets, variants and scenarios, for the report and for telling runs apart later.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use toolscore_core::{ArmId, ModelIdentity};

/// What was run, for the report header and for telling runs apart later.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    pub run_id: String,
    pub toolscore_version: String,
    pub started_at: String,
    pub finished_at: String,
    pub trials_per_case: u32,
    pub concurrency: usize,
    /// The arms in plan order.
    pub arms: Vec<ArmInfo>,
    /// The cassette this run recorded, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_to: Option<String>,
    pub datasets: Vec<DatasetInfo>,
    /// The multi-step scenarios run beside the datasets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenarios: Vec<ScenarioInfo>,
    /// `run --shard i/n`: this run holds one slice of a plan; `toolscore merge` joins them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    /// Trials kept from earlier, interrupted processes of this run (`run --resume`): its trials
    /// ran in more than one sitting, perhaps days apart. 0 for a run that ran in one.
    #[serde(default, skip_serializing_if = "crate::is_zero")]
    pub resumed_trials: u64,
    /// The shards `toolscore merge` joined into this run; 0 for a run that was not merged.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub merged_shards: u32,
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

/// The slice of a plan a sharded run holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardInfo {
    /// 0-based.
    pub index: u32,
    pub count: u32,
    /// `sha256:` of the whole plan (arms, datasets, catalogs, cases, trials) without the
    /// shard: every shard of one plan carries the same.
    pub plan: String,
}

impl RunInfo {
    /// Planned trials of a case: its fixture's own `"trials"`, or the run's.
    pub fn planned_trials(&self, dataset: &str, case: &str) -> u32 {
        if dataset == toolscore_core::SCENARIO_DATASET
            && let Some(s) = self.scenarios.iter().find(|s| s.name == case)
        {
            return s.trials.unwrap_or(self.trials_per_case);
        }
        self.datasets
            .iter()
            .find(|d| d.name == dataset)
            .and_then(|d| d.case_trials.get(case).copied())
            .unwrap_or(self.trials_per_case)
    }
}

/// A scenario as a run used it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioInfo {
    pub name: String,
    pub file: String,
    pub catalog_source: String,
    pub catalog_fingerprint: String,
    pub max_steps: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials: Option<u32>,
    /// What it expects, as a label (`find_customer → apply_credit`).
    pub expects: String,
    /// An attacked unit (`run --attacks`): the attack's id (the unit is `SCENARIO@ATTACK`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack: Option<String>,
}

#[cfg(any(test, feature = "test-support"))]
impl RunInfo {
    /// An empty header for unit tests.
    pub fn for_test(trials_per_case: u32) -> Self {
        RunInfo {
            run_id: "r".into(),
            toolscore_version: "0".into(),
            started_at: String::new(),
            finished_at: String::new(),
            trials_per_case,
            concurrency: 1,
            arms: Vec::new(),
            recorded_to: None,
            datasets: Vec::new(),
            scenarios: Vec::new(),
            shard: None,
            resumed_trials: 0,
            merged_shards: 0,
        }
    }
}

/// One arm: which catalog variant, and who answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmInfo {
    pub variant: String,
    #[serde(flatten)]
    pub identity: ModelIdentity,
    /// Set when this arm's responses were replayed from a cassette instead of fetched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayInfo>,
}

impl ArmInfo {
    /// The arm as its records name it.
    pub fn id(&self) -> ArmId {
        ArmId {
            variant: self.variant.clone(),
            provider: self.identity.provider.clone(),
            model: self.identity.model.clone(),
        }
    }
}

/// Provenance of replayed responses, shown at the top of every report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayInfo {
    pub cassette: String,
    pub recorded_at: String,
    pub note: Option<String>,
    /// Recorded before requests were sent as written (`CassetteHeader::requests_as_written`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub legacy_requests: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetInfo {
    pub name: String,
    pub catalog_source: String,
    pub catalog_fingerprint: String,
    /// The live MCP server the catalog was listed from at the start of the run
    /// (`dataset.yaml`): how it was reached, its name, version and protocol version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_server: Option<toolscore_core::catalog::source::LiveSource>,
    pub cases: usize,
    /// The overlays (`variants/<name>.json`) the run's arms were shown, other than the base:
    /// name, file, note and the fingerprint of the catalog they produce.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<VariantInfo>,
    /// Cases with their own bar under a case-level gate (`"gate"` in the fixture): case id →
    /// threshold. Kept here so `toolscore report --gate` judges a finished run the same way.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub case_gates: BTreeMap<String, f64>,
    /// Cases with their own number of trials (`"trials"` in the fixture): case id → trials.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub case_trials: BTreeMap<String, u32>,
}

/// A catalog variant as a run used it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantInfo {
    pub name: String,
    pub file: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub catalog_fingerprint: String,
}
