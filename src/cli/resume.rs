//! `toolscore run --resume RUN_DIR`: finish a run that was killed or interrupted.
//!
//! Every run writes `plan.json` (its arms, datasets, catalog fingerprints, cases and trials)
//! before its first trial. Resuming rebuilds the plan from the same flags, refuses one that
//! differs (naming the difference), keeps every completed trial of `results.jsonl` (dropping a
//! torn last line, and trials that ended in infrastructure errors, which run again), and runs
//! exactly the rest. The summary is then the one an uninterrupted run would have written.

use std::collections::{HashMap, HashSet};
use std::io::{BufWriter, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::setup::{RunSetup, Sinks};
use crate::cli::Error;
use sha2::Digest;
use toolscore_core::InputError;
use toolscore_core::{ModelIdentity, TrialRecord};
use toolscore_core::{RunTotals, TrialKey};
use toolscore_runner::RunPlan;
use toolscore_runner::Shard;

/// The file in a run folder that says what the run planned.
pub(super) const PLAN_FILE: &str = "plan.json";

/// What a run planned, as far as resuming it (or merging its shards) must match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct PlanFingerprint {
    pub(super) trials: u32,
    pub(super) arms: Vec<ArmPlan>,
    pub(super) datasets: Vec<DatasetPlan>,
    /// Scenarios (name → catalog fingerprint), in plan order after the datasets' cases.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) scenarios: Vec<(String, String)>,
    /// Each scenario file's `sha256:` (in `scenarios` order): its script and expectations.
    /// Empty in plans written before fixtures were covered, which are not checked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) scenario_sources: Vec<String>,
    /// `--shard`: the slice of the plan this run holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) shard: Option<Shard>,
    /// `sha256:` of this plan without its shard, the same in every shard of one plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) digest: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct ArmPlan {
    pub(super) variant: String,
    #[serde(flatten)]
    pub(super) identity: ModelIdentity,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct DatasetPlan {
    pub(super) name: String,
    pub(super) catalog_fingerprint: String,
    pub(super) cases: Vec<String>,
    /// Cases with their own `"trials"`, and how many.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub(super) case_trials: std::collections::BTreeMap<String, u32>,
    /// `sha256:` of the fixtures as data (messages, expectations, tags, bars): a case whose
    /// prompt or expectation changed would mix trials of two cases under one id. `None` in
    /// plans written before fixtures were covered, which are not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) fixtures: Option<String>,
    /// Each catalog variant's name and fingerprint, base first: an edited overlay changes
    /// what that variant's arms read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) variants: Vec<(String, String)>,
}

impl PlanFingerprint {
    /// The same plan unsharded, as one process would run it.
    pub(super) fn whole(&self) -> PlanFingerprint {
        PlanFingerprint {
            shard: None,
            digest: None,
            ..self.clone()
        }
    }

    /// `sha256:` of the canonical JSON of the whole plan (no shard, no digest).
    pub(super) fn digest(&self) -> String {
        let value = serde_json::to_value(self.whole()).unwrap_or_default();
        let text = toolscore_core::canonical_json(&value);
        format!(
            "sha256:{}",
            toolscore_core::hex(&sha2::Sha256::digest(text.as_bytes()))
        )
    }
}

/// `sha256:` of a plan without its shard: what every shard of it records.
pub(super) fn plan_digest(plan: &RunPlan) -> String {
    fingerprint(plan).digest()
}

fn fingerprint(plan: &RunPlan) -> PlanFingerprint {
    PlanFingerprint {
        trials: plan.trials,
        arms: plan
            .arms
            .iter()
            .map(|a| ArmPlan {
                variant: a.variant.clone(),
                identity: a.settings.identity(),
            })
            .collect(),
        datasets: plan
            .datasets
            .iter()
            .map(|d| DatasetPlan {
                name: d.name.clone(),
                catalog_fingerprint: d.catalog.fingerprint.clone(),
                cases: d.cases.iter().map(|c| c.id.clone()).collect(),
                case_trials: d
                    .cases
                    .iter()
                    .filter_map(|c| c.trials.map(|t| (c.id.clone(), t)))
                    .collect(),
                fixtures: Some(d.fixtures_digest.clone()),
                variants: d
                    .variants
                    .iter()
                    .map(|v| (v.name.clone(), v.catalog.fingerprint.clone()))
                    .collect(),
            })
            .collect(),
        scenarios: plan
            .scenarios
            .iter()
            .map(|s| (s.name.clone(), s.catalogs[0].catalog.fingerprint.clone()))
            .collect(),
        scenario_sources: plan
            .scenarios
            .iter()
            .map(|s| s.source_digest.clone())
            .collect(),
        shard: plan.shard,
        digest: None,
    }
}

/// [`fingerprint`], with the plan's digest when it is sharded (merge checks it).
fn recorded_fingerprint(plan: &RunPlan) -> PlanFingerprint {
    let mut f = fingerprint(plan);
    if f.shard.is_some() {
        f.digest = Some(f.digest());
    }
    f
}

/// Writes `plan.json` into a new run folder.
pub(super) fn write_plan_file(dir: &Path, plan: &RunPlan) -> Result<(), Error> {
    Ok(toolscore_core::write_json(
        &dir.join(PLAN_FILE),
        &recorded_fingerprint(plan),
    )?)
}

/// The first difference between the recorded plan and the one the flags give, in words.
fn difference(was: &PlanFingerprint, now: &PlanFingerprint) -> Option<String> {
    if was.trials != now.trials {
        return Some(format!(
            "the run planned {} trials per case, these flags plan {} (pass --trials {})",
            was.trials, now.trials, was.trials
        ));
    }
    if was.arms != now.arms {
        let names = |a: &[ArmPlan]| {
            a.iter()
                .map(|a| {
                    format!(
                        "{} ({} {} at {}, temperature {:?}, variant {})",
                        a.identity.provider,
                        a.identity.provider_kind,
                        a.identity.model,
                        a.identity.base_url,
                        a.identity.temperature,
                        a.variant
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        return Some(format!(
            "the run's arms were {}, these flags give {}",
            names(&was.arms),
            names(&now.arms)
        ));
    }
    if let Some(d) = was
        .datasets
        .iter()
        .zip(&now.datasets)
        .find_map(|(w, n)| dataset_difference(w, n))
    {
        return Some(d);
    }
    if was.datasets.len() != now.datasets.len() {
        return Some(format!(
            "the run had {} datasets, these flags give {}",
            was.datasets.len(),
            now.datasets.len()
        ));
    }
    if was.shard != now.shard {
        let name =
            |s: Option<Shard>| s.map_or("the whole plan".to_owned(), |s| format!("shard {s}"));
        return Some(format!(
            "the run was {}, these flags give {}",
            name(was.shard),
            name(now.shard)
        ));
    }
    scenario_difference(was, now)
}

/// The first difference in the scenarios: which ran, their catalogs, their files' text.
fn scenario_difference(was: &PlanFingerprint, now: &PlanFingerprint) -> Option<String> {
    if was.scenarios != now.scenarios {
        let names = |s: &[(String, String)]| {
            s.iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Some(format!(
            "the scenarios or their catalogs changed since the run (then: {}; now: {})",
            names(&was.scenarios),
            names(&now.scenarios)
        ));
    }
    if !was.scenario_sources.is_empty() && was.scenario_sources != now.scenario_sources {
        let edited: Vec<&str> = was
            .scenarios
            .iter()
            .zip(was.scenario_sources.iter().zip(&now.scenario_sources))
            .filter(|(_, (a, b))| a != b)
            .map(|((name, _), _)| name.as_str())
            .collect();
        return Some(format!(
            "scenario file(s) edited since the run: {}; start a new run",
            edited.join(", ")
        ));
    }
    None
}

/// The first difference between a dataset as the run recorded it and as it is now.
fn dataset_difference(w: &DatasetPlan, n: &DatasetPlan) -> Option<String> {
    if w.name != n.name {
        return Some(format!(
            "the run had dataset `{}` where these flags have `{}`",
            w.name, n.name
        ));
    }
    if w.catalog_fingerprint != n.catalog_fingerprint {
        return Some(format!(
            "the catalog of dataset `{}` changed since the run ({} then, {} now)",
            w.name, w.catalog_fingerprint, n.catalog_fingerprint
        ));
    }
    if w.cases != n.cases {
        return Some(format!(
            "the cases of dataset `{}` changed since the run ({} then, {} now)",
            w.name,
            w.cases.len(),
            n.cases.len()
        ));
    }
    if let (Some(then), Some(now)) = (&w.fixtures, &n.fixtures)
        && then != now
    {
        return Some(format!(
            "the fixtures of dataset `{}` were edited since the run (a message, an expectation, a tag or a bar: {then} then, {now} now); resuming would mix trials of two versions of a case under one id, so start a new run",
            w.name
        ));
    }
    if !w.variants.is_empty() && w.variants != n.variants {
        return Some(format!(
            "the catalog variants of dataset `{}` changed since the run (then: {}; now: {})",
            w.name,
            variant_list(&w.variants),
            variant_list(&n.variants)
        ));
    }
    None
}

/// `name (fingerprint)` of each variant, for a refusal.
fn variant_list(variants: &[(String, String)]) -> String {
    variants
        .iter()
        .map(|(name, fp)| format!("{name} {fp}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What an earlier process of the run left, kept and checked.
pub(super) struct Resumed {
    kept: u64,
    rerun_errors: u64,
    torn_line: bool,
}

impl Resumed {
    /// Completed trials kept from the earlier processes.
    pub(super) fn kept(&self) -> u64 {
        self.kept
    }

    pub(super) fn describe(&self) -> String {
        format!(
            "resuming: {} completed trials kept, {} that ended in infrastructure errors will run again{}",
            self.kept,
            self.rerun_errors,
            if self.torn_line {
                "; a torn last line of results.jsonl (the process was killed mid-write) was dropped"
            } else {
                ""
            }
        )
    }

    /// Feeds the kept records to the sinks that rebuild from them: results.csv and the
    /// aggregator (results.jsonl already holds them).
    pub(super) fn replay_into(&self, dir: &Path, sinks: &mut Sinks) -> Result<(), Error> {
        let path = dir.join("results.jsonl");
        let name = path.display().to_string();
        let lines = toolscore_core::jsonl_lines(
            &path,
            "a results file",
            toolscore_core::MAX_RECORD_LINE_BYTES,
        )?;
        for (i, line) in lines.enumerate() {
            let line = line.map_err(|e| toolscore_core::line_error(&name, i + 1, e))?;
            let record: TrialRecord = serde_json::from_str(&line).map_err(|e| {
                Error::io(
                    format!("{} changed while resuming", path.display()),
                    std::io::Error::other(e),
                )
            })?;
            sinks.csv.append_record(&record)?;
            sinks.aggregator.add(&record);
            // The sequential gate decides in file order, as `report --sequential` does; a case
            // it had decided stops at its next trial.
            if let Some(gate) = &mut sinks.sequential {
                gate.push(&record);
            }
            if let Some(comparison) = &mut sinks.sequential_compare {
                comparison.push(&record);
            }
            if let Some(gate) = &mut sinks.sequential_baseline {
                gate.push(&record);
            }
        }
        Ok(())
    }

    /// The totals of the whole run: this process's and the kept ones.
    pub(super) fn add_to(&self, mut totals: RunTotals) -> RunTotals {
        totals.completed_trials += self.kept;
        totals
    }
}

/// Checks the run folder against the plan, rewrites `results.jsonl` to the trials to keep, and
/// marks them done in the plan.
pub(super) fn prepare(setup: &mut RunSetup) -> Result<Resumed, Error> {
    let dir = setup.out_dir.clone();
    let plan_path = dir.join(PLAN_FILE);
    let text = toolscore_core::read_text(&plan_path)?;
    let was: PlanFingerprint = serde_json::from_str(&text)
        .map_err(|e| InputError::json(&plan_path.display().to_string(), &e))?;
    let now = fingerprint(&setup.plan);
    if let Some(diff) = difference(&was, &now) {
        return Err(InputError::new(format!(
            "--resume {}: {diff}; resume with the flags the run was started with",
            dir.display()
        ))
        .into());
    }
    let keys = PlanKeys::new(&setup.plan);
    let results = dir.join("results.jsonl");
    let tmp = dir.join("results.jsonl.resume");
    let mut kept = Kept::default();
    {
        let write_error = |e| Error::io(format!("cannot write {}", tmp.display()), e);
        let mut out = BufWriter::new(std::fs::File::create(&tmp).map_err(write_error)?);
        if results.exists() {
            kept = keep_records(&results, &keys, &mut out)?;
        }
        out.flush().map_err(write_error)?;
    }
    std::fs::rename(&tmp, &results)
        .map_err(|e| Error::io(format!("cannot write {}", results.display()), e))?;
    setup.plan.done = kept.done;
    Ok(Resumed {
        kept: kept.count,
        rerun_errors: kept.rerun_errors,
        torn_line: kept.torn_line,
    })
}

/// What a resumed run keeps of its records.
#[derive(Default)]
struct Kept {
    done: HashSet<TrialKey>,
    count: u64,
    /// Errors are run again, not kept.
    rerun_errors: u64,
    /// The last line was cut off mid-record (a process killed while writing it).
    torn_line: bool,
}

/// Copies each record of `results` that belongs to the plan (and is not an error) to `out`;
/// a record that does not belong, or is recorded twice, is refused at its line.
fn keep_records(results: &Path, keys: &PlanKeys, out: &mut dyn Write) -> Result<Kept, Error> {
    let name = results.display().to_string();
    let mut kept = Kept::default();
    let mut lines = toolscore_core::jsonl_lines(
        results,
        "a results file",
        toolscore_core::MAX_RECORD_LINE_BYTES,
    )?
    .enumerate()
    .peekable();
    while let Some((i, line)) = lines.next() {
        let line = line.map_err(|e| toolscore_core::line_error(&name, i + 1, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let record: TrialRecord = match serde_json::from_str(&line) {
            Ok(r) => r,
            Err(e) if lines.peek().is_none() && e.is_eof() => {
                kept.torn_line = true;
                break;
            }
            Err(e) => {
                return Err(InputError::json_line(&name, i + 1, "not a trial record", &e).into());
            }
        };
        let key = keys
            .key_of(&record)
            .map_err(|(field, what)| InputError::at(&name, Some(i + 1), field, &what))?;
        // Errors and trials the budget stopped were not judged: the resumed run runs them again.
        if !record.outcome.is_judged() {
            kept.rerun_errors += 1;
            continue;
        }
        if !kept.done.insert(key) {
            return Err(InputError::at(
                &name,
                Some(i + 1),
                "",
                &format!(
                    "trial {} of case `{}` in arm `{}` is recorded twice",
                    record.trial_index, record.case_id, record.arm.provider
                ),
            )
            .into());
        }
        out.write_all(line.as_bytes())
            .and_then(|()| out.write_all(b"\n"))
            .map_err(|e| Error::io(format!("cannot write the kept records of {name}"), e))?;
        kept.count += 1;
    }
    Ok(kept)
}

/// Where each record belongs in the plan: its arm, its case, and whether its trial is planned
/// (and in this process's shard).
struct PlanKeys {
    arm_of: HashMap<(String, String), usize>,
    case_of: HashMap<(String, String), usize>,
    case_trials: Vec<u32>,
    seeds: Vec<u64>,
    shard: Option<toolscore_runner::Shard>,
}

impl PlanKeys {
    fn new(plan: &toolscore_runner::RunPlan) -> PlanKeys {
        let arm_of = plan
            .arms
            .iter()
            .enumerate()
            .map(|(i, a)| ((a.settings.name.clone(), a.variant.clone()), i))
            .collect();
        let mut case_of: HashMap<(String, String), usize> = HashMap::new();
        for d in &plan.datasets {
            for c in &d.cases {
                let next = case_of.len();
                case_of.insert((d.name.clone(), c.id.clone()), next);
            }
        }
        for sc in &plan.scenarios {
            let next = case_of.len();
            let dataset = toolscore_core::SCENARIO_DATASET.to_owned();
            case_of.insert((dataset, sc.name.clone()), next);
        }
        PlanKeys {
            arm_of,
            case_of,
            case_trials: plan.case_trials(),
            seeds: plan.shard_seeds(),
            shard: plan.shard,
        }
    }

    /// The record's trial in the plan, or the field that places it outside and why.
    fn key_of(&self, record: &TrialRecord) -> Result<TrialKey, (&'static str, String)> {
        let arm_key = (record.arm.provider.clone(), record.arm.variant.clone());
        let Some(&arm) = self.arm_of.get(&arm_key) else {
            return Err((
                "provider",
                format!(
                    "arm `{}` (variant {}) is not in this plan",
                    record.arm.provider, record.arm.variant
                ),
            ));
        };
        let case_key = (record.dataset.clone(), record.case_id.clone());
        let Some(&case) = self.case_of.get(&case_key) else {
            return Err((
                "case_id",
                format!(
                    "case `{}/{}` is not in this plan",
                    record.dataset, record.case_id
                ),
            ));
        };
        if record.trial_index >= self.case_trials[case] {
            return Err((
                "trial_index",
                format!(
                    "trial {} is beyond the {} planned for this case",
                    record.trial_index, self.case_trials[case]
                ),
            ));
        }
        let seed = self.seeds[arm * self.case_trials.len() + case];
        if let Some(shard) = self.shard
            && !shard.contains(seed, record.trial_index)
        {
            return Err((
                "trial_index",
                format!(
                    "trial {} of case `{}/{}` in arm `{}` is not in shard {shard}",
                    record.trial_index, record.dataset, record.case_id, record.arm.provider
                ),
            ));
        }
        Ok(TrialKey {
            arm,
            case,
            trial: record.trial_index,
        })
    }
}
