//! Flags, config and environment turned into a validated [`RunSetup`] before any work: every
//! check that can fail happens here, before any request or output file. The setup then builds
//! the run's observers, so the command only wires them.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::run::RunArgs;
use super::{load_suite, usage};
use crate::cli::Error;
use std::sync::Arc;
use toolscore_core::InputError;
use toolscore_core::Observer;
use toolscore_core::{BASE_VARIANT, Price};
use toolscore_decide::gate::sequential::{SequentialGate, SequentialSpec};
use toolscore_decide::gate::sequential_baseline::SequentialBaseline;
use toolscore_decide::{SequentialCompare, SequentialCompareSpec};
use toolscore_provider::cassette::{CASSETTE_FORMAT, Cassette, CassetteHeader, CassetteRecorder};
use toolscore_provider::prices::ArmPrice;
use toolscore_provider::{ProviderKind, ProviderSettings, SecretString};
use toolscore_report::{Progress, ProgressMode, ResultsCsv};
use toolscore_runner::ResultsStore;
use toolscore_runner::{Arm, RunPlan};
use toolscore_summary::{
    Aggregator, ArmInfo, DatasetInfo, ReplayInfo, RunInfo, ScenarioInfo, VariantInfo,
};

use toolscore_suite::Scenario;
use toolscore_suite::{Config, Dataset, Defaults, ProviderEntry};

mod arms;
mod modes;
mod pricing;
mod reachable;
mod sequential;

pub(super) use reachable::check_local_servers;

use arms::{check_case_trials_recorded, live_arm, replay_arm, variant_with_replay};
use modes::{checked_batch, checked_shard, stops_each_case, trials_of};
pub(super) use modes::{sequential_gate, trial_budget};
use pricing::check_budget;
pub(super) use pricing::{arm_price, plan_price, settings_to_price, user_model_map};
use sequential::{sequential_compare_spec, sequential_spec};

/// A validated `run`: the trial plan, and what to do with its events.
pub struct RunSetup {
    pub plan: RunPlan,
    pub out_dir: PathBuf,
    /// Continuing a run in `out_dir` (`--resume`) rather than starting one.
    pub resume: bool,
    pub confidence: f64,
    pub precision: f64,
    pub progress: ProgressMode,
    pub record: Option<Recording>,
    /// `--gate`s, judged on the summary when the run ends.
    pub gates: Vec<toolscore_decide::gate::GateSpec>,
    pub gate_level: toolscore_summary::GateLevel,
    /// `--sequential`: the gates judged case by case while the run goes, stopping decided
    /// cases.
    pub sequential: Option<SequentialSpec>,
    /// `--compare --sequential`: the two arms compared after every complete round, stopping
    /// the run once the comparison decides.
    pub sequential_compare: Option<SequentialCompareSpec>,
    /// The config's `lint:` section, for the findings `run` prints beside its weakest tools.
    pub lint: toolscore_lint::LintOptions,
    /// Provider name → how to start its server (the config's `start:`), for the error when
    /// nothing answers.
    pub start_hints: std::collections::BTreeMap<String, String>,
}

/// Where and how to record a cassette.
pub struct Recording {
    pub path: PathBuf,
    pub note: Option<String>,
}

/// The run's file and display observers, built by [`RunSetup::sinks`].
pub struct Sinks {
    pub store: ResultsStore,
    pub csv: ResultsCsv,
    pub recorder: Option<CassetteRecorder>,
    pub progress: Progress,
    pub aggregator: Aggregator,
    pub sequential: Option<SequentialGate>,
    pub sequential_compare: Option<SequentialCompare>,
    /// `--baseline --sequential`: set by `run` once the baseline's trials are read.
    pub sequential_baseline: Option<SequentialBaseline>,
    /// Stops an arm at its first auth or quota error.
    pub provider_stops: toolscore_provider::ProviderStops,
}

impl Sinks {
    /// Every sink, in the order events reach them: files first, so a trial is on disk before it
    /// is counted.
    pub fn observers(&mut self) -> Vec<&mut dyn Observer> {
        let mut list: Vec<&mut dyn Observer> = vec![&mut self.store, &mut self.csv];
        if let Some(r) = &mut self.recorder {
            list.push(r);
        }
        list.push(&mut self.progress);
        list.push(&mut self.aggregator);
        if let Some(s) = &mut self.sequential {
            list.push(s);
        }
        if let Some(s) = &mut self.sequential_compare {
            list.push(s);
        }
        if let Some(s) = &mut self.sequential_baseline {
            list.push(s);
        }
        list.push(&mut self.provider_stops);
        list
    }
}

impl RunSetup {
    /// Creates the run folder and every sink (results.jsonl, results.csv, the cassette). No
    /// request has been sent yet, so a failure here is bad input (exit 2), and whatever was
    /// created is removed.
    pub fn sinks(&self, started: SystemTime) -> Result<Sinks, Error> {
        let record_existed = self.record.as_ref().is_some_and(|r| r.path.exists());
        self.open_sinks(started).map_err(|e| {
            if !self.resume {
                let _ = std::fs::remove_dir_all(&self.out_dir);
            }
            if let Some(rec) = &self.record
                && !record_existed
            {
                let _ = std::fs::remove_file(&rec.path);
            }
            match e {
                Error::Core(toolscore_core::Error::Io { context, source }) => {
                    InputError::new(format!("{context}: {source}")).into()
                }
                other => other,
            }
        })
    }

    fn open_sinks(&self, started: SystemTime) -> Result<Sinks, Error> {
        std::fs::create_dir_all(&self.out_dir)
            .map_err(|e| Error::io(format!("cannot create {}", self.out_dir.display()), e))?;
        if !self.resume {
            super::resume::write_plan_file(&self.out_dir, &self.plan)?;
            super::attacks::write_run_attacks(&self.out_dir, &self.plan.scenarios)?;
        }
        let recorder = match &self.record {
            Some(rec) => Some(CassetteRecorder::create(
                &rec.path,
                &self.cassette_header(rec, started),
            )?),
            None => None,
        };
        Ok(Sinks {
            store: ResultsStore::open(&self.out_dir.join("results.jsonl"))?,
            csv: ResultsCsv::create(&self.out_dir.join("results.csv"))?,
            recorder,
            progress: Progress::new(
                self.progress,
                Box::new(std::io::stderr()),
                std::io::stderr().is_terminal(),
            )
            .with_retry_waits(toolscore_provider::retry_after_waits),
            aggregator: Aggregator::new(),
            sequential: match &self.sequential {
                Some(spec) => Some(sequential_gate(spec.clone(), &self.run_info(started))?),
                None => None,
            },
            sequential_compare: self
                .sequential_compare
                .clone()
                .and_then(SequentialCompare::new),
            sequential_baseline: None,
            provider_stops: toolscore_provider::ProviderStops::new(
                self.plan
                    .arms
                    .iter()
                    .map(|a| a.settings.api_key_env.clone())
                    .collect(),
                Box::new(std::io::stderr()),
            ),
        })
    }

    pub(super) fn cassette_header(&self, rec: &Recording, started: SystemTime) -> CassetteHeader {
        // `build_plan` allows recording with exactly one live arm.
        let arm = &self.plan.arms[0];
        let s = &arm.settings;
        CassetteHeader {
            toolscore_cassette: CASSETTE_FORMAT,
            provider_kind: s.kind,
            model: s.model.clone(),
            temperature: s.temperature,
            max_tokens: s.max_tokens,
            tool_choice: s.tool_choice,
            parallel_tool_calls: s.parallel_tool_calls,
            requests_as_written: true,
            author: None,
            base_url: s.base_url.clone(),
            recorded_at: humantime::format_rfc3339_seconds(started).to_string(),
            toolscore_version: env!("CARGO_PKG_VERSION").to_owned(),
            variant: arm.variant.clone(),
            catalogs: self
                .plan
                .datasets
                .iter()
                .map(|d| {
                    let fingerprint = d
                        .variant(&arm.variant)
                        .map_or(&d.catalog.fingerprint, |v| &v.catalog.fingerprint);
                    (d.name.clone(), fingerprint.clone())
                })
                .chain(self.plan.scenarios.iter().filter_map(|sc| {
                    sc.catalog_for(&arm.variant).map(|v| {
                        (
                            scenario_catalog_key(&sc.name),
                            v.catalog.fingerprint.clone(),
                        )
                    })
                }))
                .collect(),
            note: rec.note.clone(),
        }
    }

    /// The run header for the summary, taken before the plan is handed to the runner.
    pub fn run_info(&self, started: SystemTime) -> RunInfo {
        let p = &self.plan;
        RunInfo {
            run_id: p.run_id.clone(),
            toolscore_version: env!("CARGO_PKG_VERSION").to_owned(),
            started_at: humantime::format_rfc3339_seconds(started).to_string(),
            finished_at: String::new(),
            trials_per_case: p.trials,
            concurrency: p.concurrency,
            arms: p
                .arms
                .iter()
                .map(|a| ArmInfo {
                    variant: a.variant.clone(),
                    identity: a.settings.identity(),
                    replay: a.replay.as_ref().map(|c| ReplayInfo {
                        cassette: c.path.display().to_string(),
                        recorded_at: c.header.recorded_at.clone(),
                        note: c.header.note.clone(),
                        legacy_requests: !c.header.requests_as_written,
                    }),
                })
                .collect(),
            recorded_to: self.record.as_ref().map(|r| r.path.display().to_string()),
            datasets: p
                .datasets
                .iter()
                .map(|d| DatasetInfo {
                    name: d.name.clone(),
                    catalog_source: d.catalog.source.clone(),
                    catalog_fingerprint: d.catalog.fingerprint.clone(),
                    catalog_server: d.live.clone(),
                    cases: d.cases.len(),
                    variants: d
                        .variants
                        .iter()
                        .filter(|v| v.file.is_some() && p.arms.iter().any(|a| a.variant == v.name))
                        .map(|v| VariantInfo {
                            name: v.name.clone(),
                            file: v.file.clone().unwrap_or_default(),
                            note: v.note.clone(),
                            catalog_fingerprint: v.catalog.fingerprint.clone(),
                        })
                        .collect(),
                    case_gates: d
                        .cases
                        .iter()
                        .filter_map(|c| c.gate.map(|g| (c.id.clone(), g)))
                        .collect(),
                    case_trials: d
                        .cases
                        .iter()
                        .filter_map(|c| c.trials.map(|t| (c.id.clone(), t)))
                        .collect(),
                })
                .collect(),
            scenarios: p
                .scenarios
                .iter()
                .map(|sc| ScenarioInfo {
                    name: sc.name.clone(),
                    file: sc.file.display().to_string(),
                    catalog_source: sc.catalogs[0].catalog.source.clone(),
                    catalog_fingerprint: sc.catalogs[0].catalog.fingerprint.clone(),
                    max_steps: sc.max_steps,
                    trials: sc.trials,
                    expects: sc.expect.label(),
                    attack: sc.attack.as_ref().map(|a| a.attack.id.clone()),
                })
                .collect(),
            shard: p.shard.map(|s| toolscore_summary::ShardInfo {
                index: s.index,
                count: s.count,
                plan: super::resume::plan_digest(p),
            }),
            // Set by `run --resume` and `merge`, which know it.
            resumed_trials: 0,
            merged_shards: 0,
        }
    }
}

/// Turns flags, config and environment into a setup; every check that can fail happens here,
/// before any request or output file. `env` is injected so tests need not touch the process
/// environment.
pub fn build_plan(
    args: RunArgs,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<RunSetup, Error> {
    build_plan_of_units(args, env, None)
}

/// Which units of the suite a plan keeps: cases by id in each dataset, scenarios by name.
#[derive(Debug, Clone, Copy)]
pub(super) struct Units<'a> {
    pub cases: &'a [String],
    pub scenarios: &'a [String],
}

/// [`build_plan`] of only the cases and scenarios `units` names, kept before any check that
/// reads them (a replay's recordings): tune's phases each run a part of the suite.
// Long: every check of a run's setup in its order, each a call, before anything is sent.
pub(super) fn build_plan_of_units(
    args: RunArgs,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
    units: Option<Units<'_>>,
) -> Result<RunSetup, Error> {
    let gates = super::gate::parse_gates_at(&args.gate.gates, args.gate.gate_level)?;
    let super::LoadedSuite {
        config,
        mut datasets,
        mut scenarios,
        ..
    } = load_suite(&args.suite)?;
    super::refuse_unedited_starters(&datasets, args.allow_starter_cases)?;
    if let Some(keep) = units {
        let cases: std::collections::HashSet<&str> =
            keep.cases.iter().map(String::as_str).collect();
        for d in &mut datasets {
            d.cases.retain(|c| cases.contains(c.id.as_str()));
        }
        scenarios.retain(|s| keep.scenarios.contains(&s.name));
    }
    refuse_gates_that_judge_nothing(&gates, &datasets, &scenarios)?;
    let defaults = &config.defaults;

    let names = provider_names(&args, &config)?;

    let variants = checked_variants(&args.variants, &datasets, &scenarios)?;
    let (arms, fewest_recorded) = build_arms(
        &names,
        &variants,
        &args,
        &config,
        (&datasets, &scenarios),
        env,
    )?;
    if args.record.is_some() && arms.len() != 1 {
        return Err(usage(
            "--record records one arm; run with a single --provider and a single --variant to record",
        ));
    }
    if let Some(path) = &args.record {
        check_record_path(path, args.force)?;
    }

    let mut trials = trials_of(&args, defaults, fewest_recorded.as_ref())?;
    check_case_trials_recorded(&arms, &datasets)?;
    if stops_each_case(&args) {
        arms::cap_to_recordings(&arms, &mut datasets, &mut scenarios, &mut trials);
    }
    let sequential = sequential_spec(&args, defaults, &gates, trials, &datasets)?;
    let sequential_compare = sequential_compare_spec(&args, defaults, &arms, trials, &datasets)?;
    check_budget(&args, &config, &arms)?;
    let shard = checked_shard(&args, env)?;
    let batch_poll = checked_batch(&args, &arms, &scenarios, &gates)?;
    let common = common_settings(&args, defaults)?;
    let batch = batch_poll.map(|(poll, max_wait)| toolscore_runner::batch::BatchMode {
        state_file: common.out_dir.join(toolscore_runner::batch::STATE_FILE),
        poll,
        max_wait,
    });
    let setup = RunSetup {
        plan: RunPlan {
            run_id: common.run_id,
            trials,
            concurrency: common.concurrency,
            arms,
            datasets,
            scenarios,
            done: Default::default(),
            shard,
            batch,
            max_cost: args.max_cost,
        },
        out_dir: common.out_dir,
        resume: args.resume.is_some(),
        confidence: common.confidence,
        precision: common.precision,
        progress: args.progress,
        record: args.record.map(|path| Recording {
            path,
            note: args.record_note,
        }),
        gates,
        gate_level: args.gate.gate_level,
        sequential,
        sequential_compare,
        lint: toolscore_lint::LintOptions::from_config(&config.lint),
        start_hints: config
            .providers
            .iter()
            .filter_map(|(name, p)| Some((name.clone(), p.start.clone()?)))
            .collect(),
    };
    ensure_file_descriptors(&setup)?;
    Ok(setup)
}

/// The providers to run: `--provider`s, else the config's default or its only provider.
fn provider_names(args: &RunArgs, config: &Config) -> Result<Vec<String>, Error> {
    let defaults = &config.defaults;
    Ok(if args.providers.is_empty() {
        match config.providers.keys().next() {
            _ if defaults.provider.is_some() => defaults.provider.iter().cloned().collect(),
            Some(only) if config.providers.len() == 1 => vec![only.clone()],
            _ => {
                return Err(usage(&format!(
                    "choose a provider with --provider (a name from toolscore.yaml, or {} with --base-url and --model)",
                    ProviderKind::known()
                )));
            }
        }
    } else {
        args.providers.clone()
    })
}

/// A fewest-recorded replay: its trials, the hint naming its case, the cassette.
type FewestRecorded = (u32, String, String);

/// Every arm: each live provider once per variant, each replay provider once; two arms of
/// one name and variant are refused. Also the replay with the fewest recordings.
fn build_arms(
    names: &[String],
    variants: &[String],
    args: &RunArgs,
    config: &Config,
    (datasets, scenarios): (&[Dataset], &[Arc<Scenario>]),
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<(Vec<Arm>, Option<FewestRecorded>), Error> {
    let mut arms = Vec::with_capacity(names.len() * variants.len());
    let mut fewest_recorded: Option<FewestRecorded> = None;
    for name in names {
        let replay_path = match name.strip_prefix("replay:") {
            Some(path) => Some((PathBuf::from(path), "replay")),
            None => config
                .providers
                .get(name)
                .filter(|e| e.kind == toolscore_suite::REPLAY_KIND)
                .and_then(|e| e.cassette.clone())
                .map(|c| (c, name.as_str())),
        };
        let new_arms = match replay_path {
            Some((path, arm_name)) => {
                let path = path.display().to_string();
                let path = path.as_str();
                if !args.variants.is_empty() {
                    return Err(variant_with_replay(
                        name,
                        args.providers.is_empty(),
                        &args.variants,
                        config,
                    ));
                }
                let (mut arm, fewest, hint) =
                    replay_arm(Path::new(path), arm_name, args, datasets, scenarios)?;
                arm.price = arm_price(arm_name, &arm.settings, config)?;
                if fewest_recorded.as_ref().is_none_or(|(f, _, _)| fewest < *f) {
                    fewest_recorded = Some((fewest, hint, path.to_owned()));
                }
                vec![arm]
            }
            None => {
                let arm = live_arm(name, config, args, env)?;
                variants
                    .iter()
                    .map(|v| Arm {
                        settings: arm.settings.clone(),
                        variant: v.clone(),
                        replay: None,
                        price: arm.price.clone(),
                    })
                    .collect()
            }
        };
        for arm in new_arms {
            if arms
                .iter()
                .any(|a: &Arm| a.settings.name == arm.settings.name && a.variant == arm.variant)
            {
                return Err(usage(&format!(
                    "two arms are named `{}` with variant `{}`; give each provider its own name in toolscore.yaml",
                    arm.settings.name, arm.variant
                )));
            }
            arms.push(arm);
        }
    }
    Ok((arms, fewest_recorded))
}

/// The `--variant`s, each present in every dataset; `base` when none is given.
fn checked_variants(
    given: &[String],
    datasets: &[Dataset],
    scenarios: &[Arc<Scenario>],
) -> Result<Vec<String>, Error> {
    if given.is_empty() {
        return Ok(vec![BASE_VARIANT.to_owned()]);
    }
    let mut out: Vec<String> = Vec::with_capacity(given.len());
    for name in given {
        if out.contains(name) {
            return Err(usage(&format!("--variant {name} is given twice")));
        }
        for d in datasets {
            if d.variant(name).is_none() {
                return Err(InputError::new(format!(
                    "--variant {name}: dataset `{}` has no {}/variants/{name}.json (its variants: {})",
                    d.name,
                    d.dir.display(),
                    d.variant_names().join(", ")
                ))
                .into());
            }
        }
        for sc in scenarios {
            if sc.catalog_for(name).is_none() {
                return Err(InputError::new(format!(
                    "--variant {name}: scenario `{}` has no such variant: neither its catalog nor its results define it (its variants: {})",
                    sc.name,
                    sc.variant_names().join(", ")
                ))
                .into());
            }
        }
        out.push(name.clone());
    }
    Ok(out)
}

/// The key of a scenario's catalog in a cassette header's `catalogs` (beside dataset names).
pub(crate) fn scenario_catalog_key(scenario: &str) -> String {
    format!("{}/{scenario}", toolscore_core::SCENARIO_DATASET)
}

/// Settings every run has, live or replayed.
struct CommonSettings {
    concurrency: usize,
    confidence: f64,
    precision: f64,
    run_id: String,
    out_dir: PathBuf,
}

fn common_settings(args: &RunArgs, defaults: &Defaults) -> Result<CommonSettings, Error> {
    let concurrency = args.concurrency.or(defaults.concurrency).unwrap_or(8);
    if !toolscore_suite::concurrency_ok(concurrency) {
        return Err(usage(&format!(
            "--concurrency must be {}",
            toolscore_suite::CONCURRENCY_RANGE
        )));
    }
    let confidence = checked_confidence(args.confidence.or(defaults.confidence).unwrap_or(0.95))?;
    let precision = checked_precision(args.precision.or(defaults.precision).unwrap_or(0.05))?;
    if let Some(dir) = &args.resume {
        // The run keeps its id and folder; `resume` checks the folder against the plan.
        let run_id = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| usage("--resume needs a run folder (reports/<run-id>)"))?;
        if !dir.join(super::resume::PLAN_FILE).is_file() {
            return Err(usage(&format!(
                "--resume {}: no {} there (is it a run folder written by this toolscore?)",
                dir.display(),
                super::resume::PLAN_FILE
            )));
        }
        return Ok(CommonSettings {
            concurrency,
            confidence,
            precision,
            run_id,
            out_dir: dir.clone(),
        });
    }
    let run_id = checked_run_id(args.run_id.clone())?;
    let out = args.out_dir();
    let out_dir = out.join(&run_id);
    if out_dir.symlink_metadata().is_ok() {
        return Err(usage(&format!(
            "{} already exists; choose another --run-id (or --resume it)",
            out_dir.display()
        )));
    }
    check_writable_dir(&out, "--out")?;
    Ok(CommonSettings {
        concurrency,
        confidence,
        precision,
        run_id,
        out_dir,
    })
}

/// A confidence level every interval can use.
pub(super) fn checked_confidence(confidence: f64) -> Result<f64, Error> {
    if toolscore_suite::confidence_ok(confidence) {
        Ok(confidence)
    } else {
        Err(usage("--confidence must be between 0.5 and 1 (e.g. 0.95)"))
    }
}

/// A target half-width the sample-size warnings can use.
pub(super) fn checked_precision(precision: f64) -> Result<f64, Error> {
    if toolscore_suite::precision_ok(precision) {
        Ok(precision)
    } else {
        Err(usage(
            "--precision must be between 0 and 0.5 (a half-width, e.g. 0.05)",
        ))
    }
}

/// `dir` (which need not exist yet) can hold the run's folder: every part of it that exists is
/// a folder (not a file, not a dangling link) and the deepest existing one accepts a new file.
/// Checked before any request so a bad output location is bad input (exit 2), not a run that
/// cannot save what it measured. The probe file is removed at once: nothing is left behind.
fn check_writable_dir(dir: &Path, flag: &str) -> Result<(), Error> {
    let bad = |why: String| usage(&format!("{flag} {}: {why}", dir.display()));
    let mut existing = dir;
    loop {
        match existing.symlink_metadata() {
            Ok(_) => break,
            Err(_) => match existing.parent() {
                Some(p) if !p.as_os_str().is_empty() => existing = p,
                _ => {
                    existing = Path::new(".");
                    break;
                }
            },
        }
    }
    match std::fs::metadata(existing) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(bad(format!("{} is not a folder", existing.display()))),
        Err(_) => {
            return Err(bad(format!(
                "{} is a link to something that does not exist",
                existing.display()
            )));
        }
    }
    let probe = existing.join(format!(".toolscore-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(bad(format!("cannot write in {}: {e}", existing.display()))),
    }
}

/// The cassette path is a file that does not exist yet (or `--force`), in a folder that can
/// hold it.
fn check_record_path(path: &Path, force: bool) -> Result<(), Error> {
    match path.symlink_metadata() {
        Ok(m) if m.is_dir() => {
            return Err(usage(&format!(
                "--record {}: is a folder; name a cassette file (e.g. my.cassette.jsonl.gz)",
                path.display()
            )));
        }
        Ok(_) if !force => {
            return Err(usage(&format!(
                "--record {}: the file exists; choose another name, or add --force to overwrite it",
                path.display()
            )));
        }
        _ => {}
    }
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => check_writable_dir(parent, "--record"),
        None => Ok(()),
    }
}

/// Descriptors a run holds whatever its concurrency: stdin, stdout and stderr,
/// results.jsonl and results.csv (open as trials finish), and the cassette it records into.
fn held_descriptors(setup: &RunSetup) -> u64 {
    3 + 2 + u64::from(setup.record.is_some())
}

/// Room for what the run opens that no figure counts: the async runtime's own (its poller,
/// its wakers, the signal handlers), name lookups, and the files written one at a time at the
/// end (summary.json, the reports, history.jsonl).
const FD_RESERVE: u64 = 64;

/// Counts every descriptor the run may hold ([`RunPlan::descriptors_per_trial`] for each
/// trial in flight, [`held_descriptors`], [`FD_RESERVE`]), raises the soft limit on open
/// files to the hard limit, and refuses (exit 2, before any request or file) a concurrency
/// the hard limit cannot carry, with the figures and the most trials in flight that fit:
/// rather than trials failing to connect with "too many open files".
fn ensure_file_descriptors(setup: &RunSetup) -> Result<(), Error> {
    let concurrency = setup.plan.concurrency as u64;
    let per_trial = setup.plan.descriptors_per_trial();
    let fixed = held_descriptors(setup) + FD_RESERVE;
    let need = concurrency * per_trial + fixed;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own; no other memory is touched.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Ok(());
    }
    if limit.rlim_cur != limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit reads the struct we own.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit.rlim_cur = limit.rlim_max;
        } else if limit.rlim_cur < need && need <= limit.rlim_max {
            // A hard limit above what the system allows (RLIM_INFINITY): as much as needed.
            let enough = libc::rlimit {
                rlim_cur: need,
                rlim_max: limit.rlim_max,
            };
            // SAFETY: as above.
            if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &enough) } == 0 {
                limit.rlim_cur = need;
            }
        }
    }
    if limit.rlim_cur == libc::RLIM_INFINITY || limit.rlim_cur >= need {
        return Ok(());
    }
    let fit = limit.rlim_cur.saturating_sub(fixed) / per_trial.max(1);
    Err(usage(&format!(
        "--concurrency {concurrency} needs up to {need} open files ({per_trial} per trial in flight: its connection to the provider, one the connection pool may keep idle per provider host{mcp}; {held} for the run's files and standard streams; {FD_RESERVE} for the runtime and the files written at the end), but this process may open {} (ulimit -n; hard limit {}): at most {fit} trials in flight fit; lower --concurrency or raise the hard limit",
        limit.rlim_cur,
        limit.rlim_max,
        held = held_descriptors(setup),
        mcp = if setup.plan.scenarios.iter().any(|s| s.server.is_some()) {
            format!(
                ", {} for a live MCP server's session",
                toolscore_runner::MCP_SESSION_DESCRIPTORS
            )
        } else {
            String::new()
        },
    )))
}

/// Longest run id: it names a folder, and file systems limit a name to 255 bytes.
const MAX_RUN_ID: usize = 128;

fn checked_run_id(given: Option<String>) -> Result<String, Error> {
    match given {
        Some(id) if id.len() > MAX_RUN_ID => Err(usage(&format!(
            "--run-id may be at most {MAX_RUN_ID} characters (got {})",
            id.len()
        ))),
        Some(id)
            if id.is_empty()
                || !id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                || id.starts_with('.') =>
        {
            Err(usage(
                "--run-id may only contain letters, digits, '-', '_' and '.'",
            ))
        }
        Some(id) => Ok(id),
        None => Ok(new_run_id()),
    }
}

/// `20261202T223500Z-3fa1`: sortable, and unique enough for runs started the same second.
pub(super) fn new_run_id() -> String {
    let now = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let compact: String = now.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    format!("{compact}-{:04x}", rand::random::<u16>())
}

/// A gate judges fixture cases (`pass>=0.8`, `p95_ms<=2000`) or attacked units
/// (`attack_success<=0.02`): a run with none of what it judges would report it PASS over
/// nothing, or undecided for ever after spending every trial. Refused before any request,
/// naming what the gate needs.
fn refuse_gates_that_judge_nothing(
    gates: &[toolscore_decide::gate::GateSpec],
    datasets: &[toolscore_suite::Dataset],
    scenarios: &[Arc<toolscore_suite::Scenario>],
) -> Result<(), Error> {
    let cases = datasets.iter().any(|d| !d.cases.is_empty());
    let units = scenarios.iter().any(|s| s.attack.is_some());
    let nothing = gates.iter().find(|g| match g.metric.attack() {
        None => !cases,
        Some(_) => !units,
    });
    let Some(g) = nothing else {
        return Ok(());
    };
    let gate = format!(
        "--gate {}{}{}",
        g.metric.label(),
        g.metric.op(),
        g.threshold
    );
    Err(usage(&match g.metric.attack() {
        None => format!(
            "{gate}: {} is measured on fixture cases (--dataset), and this run has none; a run with --attacks gates its scenarios with attack_success<=T, utility_under_attack>=T or utility>=T",
            g.metric.label()
        ),
        Some(m) => format!(
            "{gate}: `{}` is measured on attacked units, and this run has none: give --scenario FILE|DIR --attacks FILE|builtin (a scenario is attacked where its answers hold ${{injection}} or it says inject: [TOOL])",
            m.name()
        ),
    }))
}
