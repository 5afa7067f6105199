//! Flags, config and environment turned into a validated [`RunSetup`] before any work: every
//! check that can fail happens here, before any request or output file. The setup then builds
//! the run's observers, so the command only wires them.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::run::RunArgs;
use super::{load_suite, usage};
use crate::decide::gate::sequential::{SequentialGate, SequentialSpec};
use crate::error::{Error, InputError};
use crate::event::Observer;
use crate::provider::cassette::{CASSETTE_FORMAT, Cassette, CassetteHeader, CassetteRecorder};
use crate::provider::prices::ArmPrice;
use crate::provider::{ProviderKind, ProviderSettings, SecretString};
use crate::record::{BASE_VARIANT, Price};
use crate::report::{
    Aggregator, ArmInfo, DatasetInfo, Progress, ProgressMode, ReplayInfo, ResultsCsv, RunInfo,
    ScenarioInfo, VariantInfo,
};
use crate::runner::store::ResultsStore;
use crate::runner::{Arm, RunPlan};
use std::sync::Arc;

use crate::suite::scenario::Scenario;
use crate::suite::{Config, Dataset, Defaults, ProviderEntry};

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
    pub gates: Vec<crate::decide::gate::GateSpec>,
    pub gate_level: crate::report::GateLevel,
    /// `--sequential`: the gates judged case by case while the run goes, stopping decided
    /// cases.
    pub sequential: Option<SequentialSpec>,
    /// The config's `lint:` section, for the findings `run` prints beside its weakest tools.
    pub lint: crate::lint::LintOptions,
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
    /// Stops an arm at its first auth or quota error.
    pub provider_stops: crate::provider::stop::ProviderStops,
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
                Error::Io { context, source } => {
                    Error::Input(InputError::new(format!("{context}: {source}")))
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
            progress: Progress::new(self.progress)
                .with_retry_waits(crate::provider::limits::retry_after_waits),
            aggregator: Aggregator::new(),
            sequential: match &self.sequential {
                Some(spec) => Some(sequential_gate(spec.clone(), &self.run_info(started))?),
                None => None,
            },
            provider_stops: crate::provider::stop::ProviderStops::new(
                self.plan
                    .arms
                    .iter()
                    .map(|a| a.settings.api_key_env.clone())
                    .collect(),
            ),
        })
    }

    fn cassette_header(&self, rec: &Recording, started: SystemTime) -> CassetteHeader {
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
                })
                .collect(),
            shard: p.shard.map(|s| crate::report::ShardInfo {
                index: s.index,
                count: s.count,
                plan: super::resume::plan_digest(p),
            }),
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
    let gates = super::gate::parse_gates(&args.gate.gates)?;
    let super::LoadedSuite {
        config,
        datasets,
        scenarios,
    } = load_suite(&args.suite)?;
    let defaults = &config.defaults;

    let names: Vec<String> = if args.providers.is_empty() {
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
    };

    let variants = checked_variants(&args.variants, &datasets, &scenarios)?;
    let mut arms = Vec::with_capacity(names.len() * variants.len());
    let mut fewest_recorded: Option<(u32, String, String)> = None;
    for name in &names {
        let replay_path = match name.strip_prefix("replay:") {
            Some(path) => Some((PathBuf::from(path), "replay")),
            None => config
                .providers
                .get(name)
                .filter(|e| e.kind == crate::suite::REPLAY_KIND)
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
                        &config,
                    ));
                }
                let (mut arm, fewest, hint) =
                    replay_arm(Path::new(path), arm_name, &args, &datasets, &scenarios)?;
                arm.price = arm_price(arm_name, &arm.settings, &config);
                if fewest_recorded.as_ref().is_none_or(|(f, _, _)| fewest < *f) {
                    fewest_recorded = Some((fewest, hint, path.to_owned()));
                }
                vec![arm]
            }
            None => {
                let arm = live_arm(name, &config, &args, env)?;
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
    if args.record.is_some() && arms.len() != 1 {
        return Err(usage(
            "--record records one arm; run with a single --provider and a single --variant to record",
        ));
    }
    if let Some(path) = &args.record {
        check_record_path(path, args.force)?;
    }

    let trials = match (&fewest_recorded, args.trials.or(args.max_trials)) {
        (_, Some(t)) => t,
        (Some((fewest, _, _)), None) => *fewest,
        (None, None) if args.gate.sequential => DEFAULT_MAX_TRIALS,
        (None, None) => defaults.trials.unwrap_or(50),
    };
    if trials == 0 {
        return Err(usage("--trials must be at least 1"));
    }
    if let Some((fewest, hint, _)) = &fewest_recorded
        && trials > *fewest
    {
        return Err(InputError::new(format!(
            "--trials {trials} needs {trials} recordings per case, but {hint}"
        ))
        .into());
    }
    check_case_trials_recorded(&arms, &datasets)?;
    let sequential = if args.gate.sequential {
        if args.gate.gate_level != crate::report::GateLevel::Case {
            return Err(usage(
                "--sequential judges each case on its own: add --gate-level case (a sequential test on trials pooled across cases would not be valid)",
            ));
        }
        let spec = SequentialSpec {
            gates: gates.clone(),
            confidence: checked_confidence(
                args.confidence.or(defaults.confidence).unwrap_or(0.95),
            )?,
            p1: args.gate.sprt_p1,
            max_trials: trials,
        };
        let case_thresholds: Vec<f64> = datasets
            .iter()
            .flat_map(|d| d.cases.iter().filter_map(|c| c.gate))
            .collect();
        spec.check(&case_thresholds).map_err(|e| usage(&e))?;
        Some(spec)
    } else {
        None
    };
    check_budget(&args, &config, &arms)?;
    let shard = checked_shard(&args, env)?;
    let batch_poll = checked_batch(&args, &arms, &scenarios, &gates)?;
    let common = common_settings(&args, defaults)?;
    let batch = batch_poll.map(|poll| crate::runner::batch::BatchMode {
        state_file: common.out_dir.join(crate::runner::batch::STATE_FILE),
        poll,
        progress: args.progress != ProgressMode::Off,
    });
    Ok(RunSetup {
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
        lint: crate::lint::LintOptions::from_config(&config.lint),
    })
}

/// `--shard i/n` or `--shard auto` (index from `JOB_COMPLETION_INDEX`, count from
/// `--shard-count`), refused beside the flags that need the whole plan in one process.
/// An arm's price: `prices:` in the config under the provider's name, then under
/// `KIND:MODEL`, then the shipped table; `None` when none knows it.
fn arm_price(name: &str, s: &ProviderSettings, config: &Config) -> Option<ArmPrice> {
    let kind_model = format!("{}:{}", s.kind, s.model);
    for key in [name, kind_model.as_str()] {
        if let Some(p) = config.prices.get(key) {
            return Some(ArmPrice {
                price: Price {
                    input: p.input,
                    output: p.output,
                    cache_read: p.cache_read,
                    cache_write: p.cache_write,
                },
                batch_discount: p.batch_discount,
                source: match &p.source {
                    Some(src) => format!("toolscore.yaml prices.{key} ({src})"),
                    None => format!("toolscore.yaml prices.{key}"),
                },
            });
        }
    }
    crate::provider::prices::shipped().lookup(s.kind.as_str(), &s.model, &s.base_url)
}

/// The price `toolscore plan` shows options at: `--provider`, else the provider `run` would
/// use. `None` (tokens only) when that provider has no price; a note says so when it was
/// named.
pub(super) fn plan_price(
    given: Option<&str>,
    config: &Config,
) -> Result<Option<crate::decide::sample_size::PlanPrice>, Error> {
    let name = match given {
        Some(n) => n.to_owned(),
        None => match (&config.defaults.provider, config.providers.len()) {
            (Some(d), _) => d.clone(),
            (None, 1) => config.providers.keys().next().cloned().unwrap_or_default(),
            _ => return Ok(None),
        },
    };
    let settings = match config.providers.get(&name) {
        Some(e) if e.kind == crate::suite::REPLAY_KIND => {
            let Some(path) = &e.cassette else {
                return Ok(None);
            };
            let h = Cassette::load(path)?.header;
            let mut s = ProviderSettings::new(h.provider_kind, &name, h.base_url, h.model);
            s.max_tokens = h.max_tokens;
            s.tool_choice = h.tool_choice;
            s.parallel_tool_calls = h.parallel_tool_calls;
            s
        }
        Some(e) => {
            let kind: ProviderKind = e.kind.parse().map_err(|_| {
                usage(&format!(
                    "provider `{name}`: unknown kind `{}` (known: {})",
                    e.kind,
                    ProviderKind::known()
                ))
            })?;
            let base_url = if e.base_url.is_empty() {
                kind.adapter()
                    .default_base_url()
                    .unwrap_or_default()
                    .to_owned()
            } else {
                e.base_url.clone()
            };
            let mut s = ProviderSettings::new(kind, &name, base_url, e.model.clone());
            s.max_tokens = e.max_tokens.or(config.defaults.max_tokens);
            s
        }
        None => {
            let Some((kind, model)) = name
                .split_once(':')
                .and_then(|(k, m)| Some((k.parse::<ProviderKind>().ok()?, m)))
                .filter(|(_, m)| !m.is_empty())
            else {
                return Err(usage(&format!(
                    "--provider `{name}` is neither a provider in the config nor KIND:MODEL ({})",
                    ProviderKind::known()
                )));
            };
            let base_url = kind.adapter().default_base_url().unwrap_or_default();
            ProviderSettings::new(kind, &name, base_url, model)
        }
    };
    let Some(price) = arm_price(&name, &settings, config) else {
        if given.is_some() {
            eprintln!(
                "note: no price for {}:{} in the price table of {} or toolscore.yaml; options are shown in tokens only",
                settings.kind,
                settings.model,
                crate::provider::prices::shipped().as_of
            );
        }
        return Ok(None);
    };
    Ok(Some(crate::decide::sample_size::PlanPrice {
        provider: if name == format!("{}:{}", settings.kind, settings.model) {
            name.clone()
        } else {
            format!("{name} ({}:{})", settings.kind, settings.model)
        },
        price: price.price,
        source: price.source,
        assumed_output_per_request: settings
            .max_tokens
            .map_or(crate::runner::budget::ASSUMED_OUTPUT_TOKENS, u64::from)
            as f64,
    }))
}

/// `prices:` keys name known kinds, and `--max-cost` is a positive amount with a price for
/// every arm: an arm it cannot cost cannot be capped.
fn check_budget(args: &RunArgs, config: &Config, arms: &[Arm]) -> Result<(), Error> {
    for key in config.prices.keys() {
        if config.providers.contains_key(key) {
            continue;
        }
        if let Some((kind, _)) = key.split_once(':')
            && kind.parse::<ProviderKind>().is_err()
        {
            return Err(usage(&format!(
                "prices.{key} in the config: `{kind}` is not a provider kind ({})",
                ProviderKind::known()
            )));
        }
    }
    let Some(max) = args.max_cost else {
        return Ok(());
    };
    if !(max.is_finite() && max > 0.0) {
        return Err(usage(
            "--max-cost must be a positive amount of US dollars (e.g. 5 or 0.50)",
        ));
    }
    if let Some(arm) = arms.iter().find(|a| a.price.is_none()) {
        return Err(usage(&format!(
            "--max-cost: provider `{}` ({}:{}) has no price in the price table of {}, so its spend cannot be capped; give it one under `prices:` in toolscore.yaml (`{}: {{input: …, output: …}}`, US dollars per million tokens)",
            arm.settings.name,
            arm.settings.kind,
            arm.settings.model,
            crate::provider::prices::shipped().as_of,
            arm.settings.name
        )));
    }
    // The cap reserves each request at its worst case, which needs a bound on its output
    // (unless output is free).
    if let Some(arm) = arms.iter().find(|a| {
        a.price.as_ref().is_some_and(|p| p.price.output > 0.0)
            && a.settings
                .kind
                .adapter()
                .output_bound(&a.settings)
                .is_none()
    }) {
        return Err(usage(&format!(
            "--max-cost: provider `{}` sends no max_tokens, so nothing bounds what one request can cost and the cap could not hold; set max_tokens for it (--max-tokens or `max_tokens:` in toolscore.yaml)",
            arm.settings.name
        )));
    }
    Ok(())
}

fn checked_shard(
    args: &RunArgs,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<crate::runner::shard::Shard>, Error> {
    use crate::runner::shard::Shard;
    let Some(text) = &args.shard else {
        return Ok(None);
    };
    let whole_plan = [
        (
            args.gate.sequential,
            "--sequential",
            "the sequential test stops a case on the evidence of all its trials, which a shard holds only part of",
        ),
        (
            args.record.is_some(),
            "--record",
            "a cassette holds every trial of the plan; record in one process, then shard replays of it",
        ),
        (
            !args.gate.gates.is_empty(),
            "--gate",
            "a gate judges the whole plan; gate the merged run: `toolscore report MERGED_DIR --gate …`",
        ),
        (
            args.gate.baseline.is_some(),
            "--baseline",
            "a baseline is compared with the whole plan; pass it to `toolscore report MERGED_DIR --baseline …`",
        ),
        (
            args.compare,
            "--compare",
            "compare the merged run: `toolscore compare MERGED_DIR`",
        ),
    ];
    if let Some((_, flag, why)) = whole_plan.iter().find(|(given, _, _)| *given) {
        return Err(usage(&format!("--shard cannot be used with {flag}: {why}")));
    }
    let shard = if text == "auto" {
        let Some(count) = args.shard_count else {
            return Err(usage(
                "--shard auto needs --shard-count N (the number of shards, e.g. the Job's completions)",
            ));
        };
        let Some(index) = env("JOB_COMPLETION_INDEX") else {
            return Err(usage(
                "--shard auto: JOB_COMPLETION_INDEX is not set (Kubernetes sets it in the pods of an Indexed Job); elsewhere pass --shard INDEX/COUNT",
            ));
        };
        let index: u32 = index.trim().parse().map_err(|_| {
            usage(&format!(
                "--shard auto: JOB_COMPLETION_INDEX is `{index}`, not a shard index"
            ))
        })?;
        Shard::new(index, count).map_err(|e| {
            usage(&format!(
                "--shard auto: JOB_COMPLETION_INDEX {index} with --shard-count {count}: {e}"
            ))
        })?
    } else {
        let shard = Shard::parse(text).map_err(|e| usage(&e))?;
        if let Some(count) = args.shard_count
            && count != shard.count
        {
            return Err(usage(&format!(
                "--shard {text} says {} shards but --shard-count says {count}",
                shard.count
            )));
        }
        shard
    };
    Ok(Some(shard))
}

/// `--batch`: the poll interval, once every arm has a batch API and every unit of the plan
/// is one request (a batch answers all at once, so nothing that needs an answer before the
/// next request, or a latency, can run in one).
fn checked_batch(
    args: &RunArgs,
    arms: &[Arm],
    scenarios: &[Arc<Scenario>],
    gates: &[crate::decide::gate::GateSpec],
) -> Result<Option<Duration>, Error> {
    if !args.batch {
        if args.batch_poll.is_some() {
            return Err(usage("--batch-poll needs --batch"));
        }
        return Ok(None);
    }
    if let Some(s) = scenarios.first() {
        return Err(usage(&format!(
            "--batch runs single-step fixtures; scenario `{}` is multi-step (each request needs the answer before it), run it without --batch",
            s.name
        )));
    }
    for arm in arms {
        if arm.replay.is_some() {
            return Err(usage(
                "--batch sends requests to a provider's batch API; a replayed cassette has none",
            ));
        }
        if let Err(why) = crate::provider::batch::BatchApi::for_kind(arm.settings.kind) {
            return Err(usage(&format!(
                "--batch: provider `{}` ({}) has no batch API toolscore can use: {why}; batch mode covers openai-compat and openai-responses (OpenAI Batch), anthropic (Message Batches) and gemini (batch mode)",
                arm.settings.name, arm.settings.kind
            )));
        }
    }
    let refused = [
        (
            args.gate.sequential,
            "--sequential",
            "the sequential test decides after each trial, a batch answers all trials at once",
        ),
        (
            args.record.is_some(),
            "--record",
            "a cassette replays latencies, and a batch measures none",
        ),
        (
            gates.iter().any(|g| g.metric.rate().is_none()),
            "a latency --gate",
            "a batch measures no per-request latency",
        ),
    ];
    if let Some((_, flag, why)) = refused.iter().find(|(given, _, _)| *given) {
        return Err(usage(&format!("--batch cannot be used with {flag}: {why}")));
    }
    let poll = match &args.batch_poll {
        None => crate::provider::batch::DEFAULT_POLL,
        Some(text) => humantime::parse_duration(text.trim())
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                usage(&format!(
                    "--batch-poll {text}: expected a duration such as 30s, 2m or 500ms"
                ))
            })?,
    };
    Ok(Some(poll))
}

/// Trials per case a sequential run may use when neither --max-trials nor --trials says:
/// enough for the SPRT to decide a case near its threshold (reference/stats.md §6.3: E[N] is
/// 143 at p = t for t = 0.9), without letting a case on the boundary run forever.
const DEFAULT_MAX_TRIALS: u32 = 200;

/// The sequential gate's observer for a run: cases per arm and the fixtures' own bars come
/// from the run header, so a live run and `report --sequential` set it up alike.
pub(super) fn sequential_gate(
    spec: SequentialSpec,
    run: &RunInfo,
) -> Result<SequentialGate, Error> {
    let cases: usize = run.datasets.iter().map(|d| d.cases).sum();
    let case_gates = run
        .datasets
        .iter()
        .flat_map(|d| {
            d.case_gates
                .iter()
                .map(|(case, g)| ((d.name.clone(), case.clone()), *g))
        })
        .collect();
    Ok(SequentialGate::new(spec, cases, case_gates))
}

/// A live arm: a provider named in the config, or a kind configured by the flags.
fn live_arm(
    name: &str,
    config: &Config,
    args: &RunArgs,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<Arm, Error> {
    let defaults = &config.defaults;
    let bare = |kind: &str, model: &str| ProviderEntry {
        kind: kind.to_owned(),
        base_url: String::new(),
        model: model.to_owned(),
        cassette: None,
        api_key_env: None,
        temperature: None,
        max_tokens: None,
        timeout_s: None,
        max_retries: None,
        max_in_flight: None,
        requests_per_minute: None,
        tokens_per_minute: None,
        tool_choice: None,
        parallel_tool_calls: None,
    };
    // `KIND:MODEL` (`anthropic:claude-sonnet-4-5`); split at the first colon, so a model name
    // may hold colons of its own (`ollama:qwen3:8b`).
    let kind_and_model = name
        .split_once(':')
        .filter(|(kind, model)| kind.parse::<ProviderKind>().is_ok() && !model.is_empty());
    let entry = match (config.providers.get(name), kind_and_model) {
        (Some(entry), _) => entry.clone(),
        (None, _) if name.parse::<ProviderKind>().is_ok() => bare(name, ""),
        (None, Some((kind, model))) => bare(kind, model),
        (None, None) => {
            let known: Vec<&str> = config.providers.keys().map(String::as_str).collect();
            return Err(usage(&format!(
                "--provider `{name}` is neither a provider in the config ({}) nor a provider kind, alone or as KIND:MODEL ({})",
                if known.is_empty() {
                    "none defined".to_owned()
                } else {
                    known.join(", ")
                },
                ProviderKind::known()
            )));
        }
    };
    let kind: ProviderKind = entry.kind.parse().map_err(|_| {
        usage(&format!(
            "provider `{name}`: unknown kind `{}` (known: {})",
            entry.kind,
            ProviderKind::known()
        ))
    })?;
    let base_url = match (&args.base_url, entry.base_url.as_str()) {
        (Some(url), _) => url.clone(),
        (None, "") => match kind.adapter().default_base_url() {
            Some(url) => url.to_owned(),
            None => {
                return Err(usage(&format!(
                    "provider `{name}`: kind `{kind}` has no default base URL; set base_url in the config or --base-url{}",
                    if kind == crate::provider::azure_openai::KIND {
                        " (https://RESOURCE.openai.azure.com)"
                    } else {
                        ""
                    }
                )));
            }
        },
        (None, url) => url.to_owned(),
    };
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(usage(&format!(
            "provider `{name}`: base URL must start with http:// or https:// (got `{base_url}`); set --base-url"
        )));
    }
    let model = args.model.clone().unwrap_or(entry.model.clone());
    if model.is_empty() {
        return Err(usage(&format!("provider `{name}`: no model; set --model")));
    }
    let key_var = args
        .api_key_env
        .clone()
        .or(entry.api_key_env.clone())
        .or(kind.adapter().default_key_env().map(str::to_owned));
    let api_key = match &key_var {
        Some(var) => match env(var) {
            Some(v) if !v.is_empty() => Some(SecretString::new(v)),
            _ => {
                return Err(usage(&format!(
                    "provider `{name}`: environment variable {var} is not set (it should hold the API key)"
                )));
            }
        },
        None => None,
    };
    let temperature = args
        .temperature
        .or(entry.temperature)
        .or(defaults.temperature);
    if let Some(t) = temperature
        && !(0.0..=2.0).contains(&t)
    {
        return Err(usage("--temperature must be between 0 and 2"));
    }
    let timeout_s = args
        .timeout
        .or(entry.timeout_s)
        .or(defaults.timeout_s)
        .unwrap_or(60.0);
    super::checked_timeout(timeout_s)?;
    let tool_choice = args.tool_choice.or(entry.tool_choice);
    let parallel_tool_calls = args.parallel_tool_calls.or(entry.parallel_tool_calls);
    // A field a provider's API does not have is refused, not silently dropped.
    let fields = kind.adapter().request_fields();
    for (field, flag, given, has) in [
        (
            "tool_choice",
            "--tool-choice",
            tool_choice.is_some(),
            fields.tool_choice,
        ),
        (
            "parallel_tool_calls",
            "--parallel-tool-calls",
            parallel_tool_calls.is_some(),
            fields.parallel_tool_calls,
        ),
    ] {
        if given && !has {
            return Err(usage(&format!(
                "provider `{name}`: the {kind} API has no {field}; remove {field} ({flag})"
            )));
        }
    }
    let mut settings = ProviderSettings {
        kind,
        tool_choice,
        parallel_tool_calls,
        name: name.to_owned(),
        base_url,
        model,
        api_key,
        api_key_env: key_var.clone(),
        temperature,
        max_tokens: args.max_tokens.or(entry.max_tokens).or(defaults.max_tokens),
        timeout: Duration::from_secs_f64(timeout_s),
        max_retries: args
            .max_retries
            .or(entry.max_retries)
            .or(defaults.max_retries)
            .unwrap_or(4),
        retry_base: Duration::from_millis(500),
        retry_cap: Duration::from_secs(30),
        max_response_bytes: args
            .max_response_bytes
            .unwrap_or(crate::provider::DEFAULT_MAX_RESPONSE_BYTES),
        max_in_flight: args.max_in_flight.or(entry.max_in_flight),
        requests_per_minute: args.requests_per_minute.or(entry.requests_per_minute),
        tokens_per_minute: args.tokens_per_minute.or(entry.tokens_per_minute),
    };
    if settings.max_in_flight == Some(0) {
        return Err(usage(&format!(
            "provider `{name}`: max_in_flight (--max-in-flight) must be at least 1"
        )));
    }
    if settings.requests_per_minute == Some(0) {
        return Err(usage(&format!(
            "provider `{name}`: requests_per_minute (--requests-per-minute) must be at least 1"
        )));
    }
    if settings.tokens_per_minute == Some(0) {
        return Err(usage(&format!(
            "provider `{name}`: tokens_per_minute (--tokens-per-minute) must be at least 1"
        )));
    }
    if settings.max_response_bytes < 1024 {
        return Err(usage("--max-response-bytes must be at least 1024"));
    }
    settings.check().map_err(|e| usage(&e))?;
    // A field the model's API refuses is not sent (every trial would be refused), and the run
    // says so before its first request.
    for note in crate::provider::capabilities::shipped().omit_rejected(&mut settings) {
        eprintln!("note: {note}");
    }
    let price = arm_price(name, &settings, config);
    Ok(Arm {
        settings,
        variant: BASE_VARIANT.to_owned(),
        replay: None,
        price,
    })
}

/// A replay arm: provider settings come from the cassette header, and every case must have a
/// recording, checked here so a missing one stops the run before it starts (never a silent
/// fallback to a live call). Returns the arm, the fewest trials recorded for any case, and a
/// hint naming that case and how to record more.
/// Why `--variant` cannot go with a replay provider, and what would work: one replay
/// provider per wording when the config has recordings of each, else recording them.
fn variant_with_replay(
    provider: &str,
    from_default: bool,
    variants: &[String],
    config: &Config,
) -> Error {
    let which = if from_default {
        format!("the config's default provider `{provider}` replays a cassette")
    } else {
        format!("--provider {provider} replays a cassette")
    };
    let recorded: Vec<(&String, String)> = config
        .providers
        .iter()
        .filter(|(_, e)| e.kind == crate::suite::REPLAY_KIND)
        .filter_map(|(name, e)| {
            let header = Cassette::read_header(e.cassette.as_deref()?)?;
            Some((name, header.variant))
        })
        .collect();
    let per_variant: Option<Vec<&String>> = variants
        .iter()
        .map(|v| {
            // The named provider first when it holds this variant, else the first that does.
            recorded
                .iter()
                .find(|(n, rv)| *n == provider && rv == v)
                .or_else(|| recorded.iter().find(|(_, rv)| rv == v))
                .map(|(n, _)| *n)
        })
        .collect();
    let fix = match per_variant {
        Some(names) => format!(
            "to compare these wordings offline, replay one recording of each: {} (recorded with variants {})",
            names
                .iter()
                .map(|n| format!("--provider {n}"))
                .collect::<Vec<_>>()
                .join(" "),
            variants.join(", ")
        ),
        None => format!(
            "record each wording with a live provider first (`toolscore run --provider <live provider> --variant V --record V.cassette.jsonl.gz`), or run the variants live: --provider <live provider> {}",
            variants
                .iter()
                .map(|v| format!("--variant {v}"))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    };
    usage(&format!(
        "--variant cannot be used with a replay provider: {which}, which holds the answers to the one catalog variant it was recorded with; {fix}"
    ))
}

fn replay_arm(
    path: &Path,
    name: &str,
    args: &RunArgs,
    datasets: &[Dataset],
    scenarios: &[Arc<Scenario>],
) -> Result<(Arm, u32, String), Error> {
    for (flag, given) in [
        ("--base-url", args.base_url.is_some()),
        ("--model", args.model.is_some()),
        ("--api-key-env", args.api_key_env.is_some()),
        ("--temperature", args.temperature.is_some()),
        ("--max-tokens", args.max_tokens.is_some()),
        ("--tool-choice", args.tool_choice.is_some()),
        ("--parallel-tool-calls", args.parallel_tool_calls.is_some()),
        ("--record", args.record.is_some()),
    ] {
        if given {
            return Err(usage(&format!(
                "{flag} cannot be used with --provider replay:…: the cassette fixes the model and its parameters"
            )));
        }
    }
    let cassette = Cassette::load(path)?;
    for warning in &cassette.warnings {
        eprintln!("warning: {warning}");
    }
    let h = &cassette.header;
    let file = path.display().to_string();
    let mut shown = Vec::with_capacity(datasets.len());
    for d in datasets {
        let Some(variant) = d.variant(&h.variant) else {
            return Err(InputError::at(
                &file,
                None,
                "",
                &format!(
                    "the cassette was recorded with catalog variant `{}`, which dataset `{}` does not have ({}/variants/{}.json)",
                    h.variant,
                    d.name,
                    d.dir.display(),
                    h.variant
                ),
            )
            .into());
        };
        shown.push(variant);
        let catalog = &variant.catalog;
        match h.catalogs.get(&d.name) {
            None => {
                let recorded: Vec<&str> = h.catalogs.keys().map(String::as_str).collect();
                return Err(InputError::at(
                    &file,
                    None,
                    "",
                    &format!(
                        "the cassette has no recordings for dataset `{}` (it was recorded for: {})",
                        d.name,
                        recorded.join(", ")
                    ),
                )
                .into());
            }
            Some(fp) if *fp != catalog.fingerprint => {
                return Err(InputError::at(
                    &file,
                    None,
                    "",
                    &format!(
                        "the cassette was recorded against another catalog for dataset `{}` ({fp}), but {} is {}: a changed catalog or a variant needs its own recording",
                        d.name, catalog.source, catalog.fingerprint
                    ),
                )
                .into());
            }
            Some(_) => {}
        }
    }
    let mut settings =
        ProviderSettings::new(h.provider_kind, name, h.base_url.clone(), h.model.clone());
    settings.temperature = h.temperature;
    settings.max_tokens = h.max_tokens;
    settings.tool_choice = h.tool_choice;
    settings.parallel_tool_calls = h.parallel_tool_calls;
    let record_hint = |case: &str, have: u32| {
        format!(
            "case `{case}` has {have} recorded trials in {file}; record them with `toolscore run --provider <live provider> --model {} --record {file}{}` on the same dataset",
            h.model,
            h.temperature
                .map_or(String::new(), |t| format!(" --temperature {t}"))
        )
    };
    let mut fewest = u32::MAX;
    let mut fewest_case = String::new();
    for (d, variant) in datasets.iter().zip(&shown) {
        for c in &d.cases {
            let have = cassette.recorded_trials(&crate::provider::request_hash(
                &settings,
                &variant.messages(&c.messages),
                &variant.catalog,
            ));
            if have == 0 {
                return Err(InputError::at(&file, None, "", &format!("no recording for {}/{}: the fixture or the catalog changed since recording, or it was never recorded; {}", d.name, c.id, record_hint(&c.id, 0))).into());
            }
            if have < fewest {
                fewest = have;
                fewest_case = c.id.clone();
            }
        }
    }
    for sc in scenarios {
        let Some(shown) = sc.catalog_for(&h.variant) else {
            return Err(InputError::at(&file, None, "", &format!("the cassette was recorded with variant `{}`, which scenario `{}` does not have", h.variant, sc.name)).into());
        };
        let key = scenario_catalog_key(&sc.name);
        match h.catalogs.get(&key) {
            Some(fp) if *fp == shown.catalog.fingerprint => {}
            Some(fp) => {
                return Err(InputError::at(&file, None, "", &format!("the cassette was recorded against another catalog for scenario `{}` ({fp}), but {} is {}: a changed catalog needs its own recording", sc.name, shown.catalog.source, shown.catalog.fingerprint)).into());
            }
            None => {
                return Err(InputError::at(&file, None, "", &format!("the cassette has no recordings for scenario `{}`; record it with `toolscore run --scenario {} --provider <live provider> --record {file}`", sc.name, sc.file.display())).into());
            }
        }
        let have = cassette.recorded_trials(&crate::provider::request_hash(
            &settings,
            &sc.messages,
            &shown.catalog,
        ));
        if have == 0 {
            return Err(InputError::at(&file, None, "", &format!("no recording for scenario {}: its opening messages or catalog changed since recording, or it was never recorded; {}", sc.name, record_hint(&sc.name, 0))).into());
        }
        if have < fewest {
            fewest = have;
            fewest_case = sc.name.clone();
        }
    }
    // Too few recordings for --trials: replaying fewer is the cheap fix; recording more goes
    // into a new cassette (suggesting the same path would overwrite a shipped recording).
    let hint = format!(
        "case `{fewest_case}` has {fewest} recorded trials in {file}: replay at most {fewest} (--trials {fewest}, the default when replaying), or record more into a new cassette with `toolscore run --provider <live provider> --model {}{} --trials N --record NEW.cassette.jsonl.gz`",
        h.model,
        h.temperature
            .map_or(String::new(), |t| format!(" --temperature {t}"))
    );
    let variant = h.variant.clone();
    Ok((
        Arm {
            settings,
            variant,
            replay: Some(cassette),
            price: None,
        },
        fewest,
        hint,
    ))
}

/// A case asking for more trials (`"trials": N`) than a replayed cassette holds for it stops
/// the run before it starts, as a missing recording does.
fn check_case_trials_recorded(arms: &[Arm], datasets: &[Dataset]) -> Result<(), Error> {
    for arm in arms {
        let Some(cassette) = &arm.replay else {
            continue;
        };
        for d in datasets {
            let Some(variant) = d.variant(&arm.variant) else {
                continue;
            };
            for c in &d.cases {
                let Some(want) = c.trials else { continue };
                let have = cassette.recorded_trials(&crate::provider::request_hash(
                    &arm.settings,
                    &variant.messages(&c.messages),
                    &variant.catalog,
                ));
                if have < want {
                    return Err(InputError::at(
                        &cassette.path.display().to_string(),
                        None,
                        "",
                        &format!(
                            "case {}/{} asks for {want} trials (`\"trials\"` in its fixture) but the cassette holds {have}",
                            d.name, c.id
                        ),
                    )
                    .into());
                }
            }
        }
    }
    Ok(())
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
    format!("{}/{scenario}", crate::suite::scenario::SCENARIO_DATASET)
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
    if concurrency == 0 || concurrency > 4096 {
        return Err(usage("--concurrency must be between 1 and 4096"));
    }
    ensure_file_descriptors(concurrency)?;
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
    let out_dir = args.out.join(&run_id);
    if out_dir.symlink_metadata().is_ok() {
        return Err(usage(&format!(
            "{} already exists; choose another --run-id (or --resume it)",
            out_dir.display()
        )));
    }
    check_writable_dir(&args.out, "--out")?;
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
    if confidence > 0.5 && confidence < 1.0 {
        Ok(confidence)
    } else {
        Err(usage("--confidence must be between 0.5 and 1 (e.g. 0.95)"))
    }
}

/// A target half-width the sample-size warnings can use.
pub(super) fn checked_precision(precision: f64) -> Result<f64, Error> {
    if precision > 0.0 && precision < 0.5 {
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

/// Descriptors a run needs beyond one socket per trial in flight: its output files, the
/// cassette, the runtime's own, stdio, and room for the summary at the end.
const FD_HEADROOM: u64 = 64;

/// Each trial in flight holds a socket. Raises the soft limit on open files towards the hard
/// limit when the concurrency needs it, and refuses a concurrency the limit cannot serve
/// (before any request, rather than losing the summary to "too many open files" at the end).
fn ensure_file_descriptors(concurrency: usize) -> Result<(), Error> {
    let need = concurrency as u64 + FD_HEADROOM;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own; no other memory is touched.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Ok(());
    }
    let unlimited = libc::RLIM_INFINITY;
    if limit.rlim_cur == unlimited || limit.rlim_cur >= need {
        return Ok(());
    }
    if limit.rlim_max == unlimited || limit.rlim_max >= need {
        let raised = libc::rlimit {
            rlim_cur: need,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit reads the struct we own.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Ok(());
        }
    }
    Err(usage(&format!(
        "--concurrency {concurrency} needs about {need} open files, but this process may open only {} (ulimit -n); lower --concurrency or raise the limit",
        limit.rlim_cur
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
fn new_run_id() -> String {
    let now = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let compact: String = now.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    format!("{compact}-{:04x}", rand::random::<u16>())
}
