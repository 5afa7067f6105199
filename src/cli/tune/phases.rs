//! tune's phases, in order: the baseline (or --from), the diagnosis and proposals, the race
//! on the training cases, the confirmation on the held-out ones, the overlay written.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::super::setup::{RunSetup, Units, build_plan_of_units};
use super::super::usage;
use super::{TuneArgs, phase_args};
use crate::cli::Error;
use toolscore_core::ExitCode;
use toolscore_core::Observer;
use toolscore_core::metric::Metric;
use toolscore_core::{ArmId, BASE_VARIANT, SCENARIO_DATASET};
use toolscore_decide::{CompareRule, SequentialCompare, SequentialCompareSpec};
use toolscore_decide::{Race, RaceSpec};
use toolscore_provider::cassette::CassetteHeader;
use toolscore_suite::{CatalogVariant, Dataset};
use toolscore_summary::tune::Candidate;
use toolscore_summary::tune::LintNote;
use toolscore_summary::tune::Split;
use toolscore_summary::tune::{
    CandidateStatus, Confirmation, Phase, RacedCandidate, TuneOutcome, TuneReport,
};
use toolscore_tune::SplitCase;
use toolscore_tune::Tally;
use toolscore_tune::{Allowance, Share};

/// One tune: what every phase shares.
pub(super) struct Tuner<'a> {
    args: &'a TuneArgs,
    env: &'a (dyn Fn(&str) -> Option<String> + Sync),
    /// TUNE_DIR.
    pub(super) dir: PathBuf,
    /// The dataset as loaded, with its base catalog.
    dataset: Dataset,
    arm: ArmId,
    split: Split,
    allowance: Allowance,
    /// The config's `lint:` options.
    lint: toolscore_lint::LintOptions,
    /// The provider is a replay: phases run one trial at a time, so each stops where the
    /// recording's did and asks only for recorded trials.
    replay: bool,
    /// --record: the cassette to create when the first phase starts, and its header.
    to_record: Option<(PathBuf, CassetteHeader)>,
    /// The one recorder of every phase.
    pub(super) recorder: Option<toolscore_provider::cassette::CassetteRecorder>,
    /// Rounds of the base wording tune's own baseline completed on every training case: the
    /// race's first rounds of the base (0 with --from).
    baseline_rounds: u32,
    /// `--author`: the arm that rewrites tools' text.
    author: Option<toolscore_runner::Arm>,
    /// The provider flags of `run` that reach the tuned model live (for a replay, the recorded
    /// kind, URL, model and sampling), for the command that checks the tuned wording later.
    live_provider: String,
}

impl<'a> Tuner<'a> {
    /// Splits the dataset's cases, validates the provider as `run` would on the training
    /// cases (a replay must hold the baseline's; nothing is sent), and checks the budget can
    /// pay for the smallest tune.
    pub(super) fn new(
        args: &'a TuneArgs,
        env: &'a (dyn Fn(&str) -> Option<String> + Sync),
    ) -> Result<Self, Error> {
        let id = match &args.tune_id {
            Some(id) => id.clone(),
            None => format!("tune-{}", super::super::setup::new_run_id()),
        };
        let out = args
            .out
            .clone()
            .unwrap_or_else(|| super::super::default_path(args.suite.config.as_deref(), "reports"));
        let dir = out.join(&id);
        let (dataset, split) = dataset_and_split(args)?;
        let training = Units {
            cases: &split.training,
            scenarios: &split.training_scenarios,
        };
        let (probe, to_record) = super::provider::probe(args, &dir, training, env)?;
        if dir.exists() {
            return Err(usage(&format!(
                "{} exists; give another --tune-id or --out",
                dir.display()
            )));
        }
        let arm = probe.plan.arms[0].id();
        let replay = probe.plan.arms[0].replay.is_some();
        let live_provider = super::provider::live_provider(args, &probe.plan.arms[0]);
        let author = super::provider::author_arm(args, &probe.plan.arms[0], &dir, env)?;
        let mut to_record = to_record;
        if let (Some((_, header)), Some(a)) = (&mut to_record, &author) {
            header.author = Some(toolscore_provider::cassette::RecordedProvider::of(
                &a.settings,
            ));
        }
        let allowance = Allowance::new(
            args.budget_trials,
            args.max_cost,
            (
                (split.training.len() + split.training_scenarios.len()) as u64,
                (split.holdout.len() + split.holdout_scenarios.len()) as u64,
            ),
            args.from.is_none().then_some(args.trials),
        )
        .map_err(|m| usage(&m))?;
        Ok(Tuner {
            args,
            env,
            dir,
            dataset,
            arm,
            split,
            allowance,
            lint: probe.lint,
            replay,
            to_record,
            recorder: None,
            baseline_rounds: 0,
            live_provider,
            author,
        })
    }

    /// Diagnose, propose, race, confirm, write.
    pub(super) fn tune(&mut self) -> Result<TuneReport, Error> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| Error::io(format!("cannot create {}", self.dir.display()), e))?;
        if let Some((path, header)) = self.to_record.take() {
            self.recorder = Some(toolscore_provider::cassette::CassetteRecorder::create(
                &path, &header,
            )?);
        }
        // Said before anything is spent: a held-out set too small to confirm "no difference"
        // even if every pair agrees ends undecided whatever the candidates do; after the
        // baseline, before the race, the same at the disagreement its trials showed.
        let holdout = (self.split.holdout.len() + self.split.holdout_scenarios.len()) as u64;
        let test = toolscore_tune::ConfirmationTest {
            max_rounds: self.args.max_rounds,
            min_effect: self.args.min_effect,
            confidence: self.args.confidence,
        };
        let mut confirmation_plan = toolscore_tune::confirmation_plan(holdout, test, 0.0);
        if let Some(plan) = &confirmation_plan {
            errln!("note: {}", plan.line())?;
        }
        let (baseline, tally) = self.baseline()?;
        if confirmation_plan.is_none()
            && let Some(d) = tally.pair_disagreement()
        {
            confirmation_plan = toolscore_tune::confirmation_plan(holdout, test, d);
            if let Some(plan) = &confirmation_plan {
                errln!("note: {}", plan.line())?;
            }
        }
        let diagnosis = tally.diagnose(&self.dataset.catalog, self.lint_notes());
        let proposed = self.proposals(&diagnosis)?;
        let mut report = TuneReport {
            dataset: self.dataset.name.clone(),
            arm: self.arm.clone(),
            confidence: self.args.confidence,
            min_effect: self.args.min_effect,
            split: self.split.clone(),
            baseline,
            baseline_given: self.args.from.is_some(),
            diagnosis,
            author: proposed.authoring,
            candidates: Vec::new(),
            invalid: proposed.invalid,
            suggestions: proposed.suggestions,
            race: None,
            confirmation: None,
            outcome: TuneOutcome::NothingToTune,
            budget_trials: self.args.budget_trials,
            max_cost: self.args.max_cost,
            written: None,
            recheck: None,
            confirmation_plan,
        };
        if proposed.candidates.is_empty() {
            return Ok(report);
        }
        let (race, raced, left_out) = self.race(proposed.candidates, proposed.variants)?;
        report.race = Some(race);
        report.candidates = raced;
        report.invalid.extend(left_out);
        let results: Vec<_> = report
            .candidates
            .iter()
            .map(|r| (r.race.verdict, r.race.counts.mean_difference()))
            .collect();
        let all: Vec<Candidate> = report
            .candidates
            .iter()
            .map(|r| r.candidate.clone())
            .collect();
        let finalist = toolscore_tune::finalist(&all, &results);
        if finalist.is_empty() {
            report.outcome = TuneOutcome::NoFinalist;
            return Ok(report);
        }
        let chosen: Vec<&Candidate> = finalist.iter().map(|&i| &all[i]).collect();
        let (confirmation, overlay) = self.confirm(&chosen)?;
        report.outcome = TuneOutcome::of(confirmation.held_out.verdict);
        report.confirmation = Some(confirmation);
        if report.outcome == TuneOutcome::Confirmed || self.args.write_anyway {
            let path = self.write_overlay(&overlay)?;
            report.recheck = Some(self.recheck_command(&path));
            report.written = Some(path.display().to_string());
        }
        Ok(report)
    }

    /// The candidates to race, each validated and made a variant: the operators', and the
    /// author's when one is asked.
    fn proposals(
        &mut self,
        diagnosis: &toolscore_summary::tune::Diagnosis,
    ) -> Result<Proposed, Error> {
        let request_of =
            |id: &str| super::author::training_request(&self.dataset, &self.split.training, id);
        let (mut proposed, suggestions) = toolscore_tune::propose(
            diagnosis,
            &self.dataset.catalog,
            self.args.max_candidates,
            &request_of,
        );
        let mut not_proposed = Vec::new();
        let mut authoring = None;
        if let Some(author) = &self.author {
            let authored = super::author::ask(
                author,
                diagnosis,
                (&self.dataset, &self.split.training),
                self.args.max_candidates,
                &mut self.allowance,
                self.recorder.as_mut(),
            )?;
            proposed.extend(authored.candidates);
            not_proposed = authored.failed;
            authoring = Some(authored.spend);
            toolscore_tune::rank_candidates(&mut proposed, self.args.max_candidates);
        }
        let (candidates, variants, mut invalid) = self.variants_of(proposed)?;
        invalid.extend(not_proposed);
        Ok(Proposed {
            candidates,
            variants,
            invalid,
            suggestions,
            authoring,
        })
    }

    /// The baseline's tally of the training trials: tune's own run of the base wording, or
    /// the trials of --from.
    fn baseline(&mut self) -> Result<(Phase, Tally), Error> {
        let training = self.keys(Side::Training);
        let validators = self.dataset.validators.clone();
        match &self.args.from {
            Some(from) => {
                let units: std::collections::HashSet<&(String, String)> = training.iter().collect();
                let mut tally = Tally::new(validators);
                let mut trials = 0;
                // The run's first arm shown the base wording: a run of several providers is
                // diagnosed on one of them, never on their mixture.
                let mut arm: Option<ArmId> = None;
                let results = from.join("results.jsonl");
                toolscore_summary::for_each_record(&results, &mut |r| {
                    if r.arm.variant == BASE_VARIANT
                        && units.contains(&(r.dataset.clone(), r.case_id.clone()))
                        && *arm.get_or_insert_with(|| r.arm.clone()) == r.arm
                    {
                        trials += 1;
                        tally.add(r);
                    }
                })?;
                if let Some(a) = &arm
                    && a.model != self.arm.model
                {
                    errln!(
                        "note: --from {} ran model {} ({}); tune races {} ({}): the diagnosis is of the other model",
                        from.display(),
                        a.model,
                        a.provider,
                        self.arm.model,
                        self.arm.provider
                    )?;
                }
                if trials == 0 {
                    return Err(usage(&format!(
                        "--from {}: it has no trial of the base wording of dataset `{}` on a training case",
                        from.display(),
                        self.dataset.name
                    )));
                }
                let phase = Phase {
                    run_dir: from.display().to_string(),
                    trials,
                    usd: None,
                    allowed_trials: None,
                };
                Ok((phase, tally))
            }
            None => {
                let trials = self.args.trials;
                let allowed = self.allowance.baseline();
                let mut tally = Tally::for_arm(self.arm.clone(), training.clone(), validators);
                let phase = self.phase(
                    "baseline",
                    (Side::Training, None),
                    Vec::new(),
                    (trials, allowed),
                    &mut tally,
                )?;
                self.baseline_rounds = tally.complete_rounds(&training);
                Ok((phase, tally))
            }
        }
    }

    /// The errors lint finds in a catalog, as (rule, tool, path), under the config's options.
    fn lint_errors(
        &self,
        catalog: &toolscore_core::catalog::Catalog,
    ) -> std::collections::BTreeSet<(String, String, String)> {
        toolscore_lint::lint(catalog, &self.lint)
            .findings
            .into_iter()
            .filter(|f| f.severity == toolscore_lint::Severity::Error)
            .map(|f| {
                (
                    f.rule.as_str().to_owned(),
                    f.tool.unwrap_or_default(),
                    f.path,
                )
            })
            .collect()
    }

    /// Lint findings about the text a model reads (names and descriptions) on the base
    /// catalog, as notes the diagnosis keeps for implicated tools.
    fn lint_notes(&self) -> Vec<LintNote> {
        use toolscore_lint::Category;
        toolscore_lint::lint(&self.dataset.catalog, &self.lint)
            .findings
            .into_iter()
            .filter(|f| matches!(f.category, Category::Names | Category::Descriptions))
            .filter_map(|f| {
                Some(LintNote {
                    tool: f.tool?,
                    rule: f.rule.as_str().to_owned(),
                    path: f.path,
                    message: f.message,
                    fix: f.fix,
                })
            })
            .collect()
    }

    /// Each proposal validated and made a variant (its overlay written beside the race, so
    /// the race's folder names real files); the proposals that fail validation, with why.
    fn variants_of(&self, proposed: Vec<Candidate>) -> Result<Proposals, Error> {
        let mut candidates = Vec::new();
        let mut variants = Vec::new();
        let mut invalid = Vec::new();
        // The base catalog's own lint errors, once: a candidate is refused only for those it adds.
        let base_errors = self.lint_errors(&self.dataset.catalog);
        for c in proposed {
            let name = format!("candidate-{}", candidates.len() + 1);
            let overlay = toolscore_tune::candidate_overlay(&[&c], &c.id);
            match self.variant(&name, &overlay, &self.dir.join("candidates"), &base_errors)? {
                Ok(v) => {
                    variants.push(v);
                    candidates.push(c);
                }
                Err(why) => invalid.push(format!("{}: {why}", c.id)),
            }
        }
        Ok((candidates, variants, invalid))
    }

    /// An overlay checked against the base (text only, and no lint error the base does not
    /// have) and written to `folder/NAME.json`.
    fn variant(
        &self,
        name: &str,
        overlay: &serde_json::Value,
        folder: &Path,
        base_errors: &std::collections::BTreeSet<(String, String, String)>,
    ) -> Result<Result<CatalogVariant, String>, Error> {
        let path = folder.join(format!("{name}.json"));
        let catalog = match toolscore_tune::validate_overlay(
            &self.dataset.catalog,
            overlay,
            &path.display().to_string(),
        ) {
            Ok(c) => c,
            Err(why) => return Ok(Err(why.to_string())),
        };
        // Words quoted from requests (or an author's rewrite) can read as an instruction to
        // the model ("ignore", "previous", "instructions"): tune never races, or writes, what
        // toolscore's own lint calls an error.
        let added: Vec<String> = self
            .lint_errors(&catalog)
            .into_iter()
            .filter(|e| !base_errors.contains(e))
            .map(|(rule, tool, path)| format!("{rule} at {tool}.{path}"))
            .collect();
        if !added.is_empty() {
            return Ok(Err(format!(
                "it would add lint error{} {}",
                if added.len() == 1 { "" } else { "s" },
                added.join(", ")
            )));
        }
        let validators = match toolscore_score::ToolValidators::compile(&catalog) {
            Ok(v) => v,
            Err((tool, why)) => return Ok(Err(format!("tool `{tool}`: {why}"))),
        };
        std::fs::create_dir_all(folder)
            .map_err(|e| Error::io(format!("cannot create {}", folder.display()), e))?;
        toolscore_core::write_json(&path, overlay)?;
        Ok(Ok(CatalogVariant {
            name: name.to_owned(),
            file: Some(path.display().to_string()),
            note: overlay["note"].as_str().map(str::to_owned),
            catalog: Arc::new(catalog),
            validators: Arc::new(validators),
            renames: Default::default(),
        }))
    }

    /// Races the candidates against the base on the training cases; each candidate with its
    /// comparison and where it ended, and a line for each the budget left out.
    fn race(
        &mut self,
        mut candidates: Vec<Candidate>,
        mut variants: Vec<CatalogVariant>,
    ) -> Result<(Phase, Vec<RacedCandidate>, Vec<String>), Error> {
        let (kept, rounds, allowed) =
            self.allowance
                .race(candidates.len(), self.args.max_rounds, self.baseline_rounds);
        let left_out: Vec<String> = candidates[kept..]
            .iter()
            .map(|c| {
                format!(
                    "{}: the budget pays for {kept} of {} candidates",
                    c.id,
                    candidates.len()
                )
            })
            .collect();
        candidates.truncate(kept);
        variants.truncate(kept);
        let names: Vec<String> = variants.iter().map(|v| v.name.clone()).collect();
        let base = self.arm.clone();
        let arm_of = |v: &str| ArmId {
            variant: v.to_owned(),
            ..base.clone()
        };
        let mut race = Race::new(RaceSpec {
            base: (base.clone(), 0),
            candidates: names
                .iter()
                .enumerate()
                .map(|(i, v)| (arm_of(v), i + 1))
                .collect(),
            confidence: self.args.confidence,
            min_effect: self.args.min_effect,
            cases: self.keys(Side::Training),
            max_rounds: rounds,
        })
        .ok_or_else(|| usage("--confidence leaves no valid error rate"))?;
        // The race goes on from the baseline: the base arm's baseline trials are its first
        // rounds (tune's own baseline only: a --from run may have another model or settings).
        let carried = self
            .args
            .from
            .is_none()
            .then(|| self.dir.join("baseline").join("results.jsonl"));
        let phase = self.phase(
            "race",
            (Side::Training, carried),
            variants,
            (rounds, allowed),
            &mut race,
        )?;
        let raced = candidates
            .into_iter()
            .zip(names)
            .zip(race.results())
            .map(|((candidate, variant), result)| RacedCandidate {
                status: CandidateStatus::of(result.verdict),
                candidate,
                variant,
                race: result,
            })
            .collect();
        Ok((phase, raced, left_out))
    }

    /// The finalist (combined candidates) against the base on the held-out cases only.
    fn confirm(
        &mut self,
        chosen: &[&Candidate],
    ) -> Result<(Confirmation, serde_json::Value), Error> {
        let ids: Vec<String> = chosen.iter().map(|c| c.id.clone()).collect();
        let overlay = toolscore_tune::candidate_overlay(
            chosen,
            &format!(
                "toolscore tune of {} with {}/{}: {}",
                self.dataset.name,
                self.arm.provider,
                self.arm.model,
                ids.join(", ")
            ),
        );
        let name = "tuned";
        let variant = self
            .variant(
                name,
                &overlay,
                &self.dir.join("candidates"),
                &self.lint_errors(&self.dataset.catalog),
            )?
            .map_err(|why| Error::from(toolscore_core::InputError::new(why)))?;
        let (rounds, allowed) = self.allowance.confirm(self.args.max_rounds);
        let mut compare = SequentialCompare::new(SequentialCompareSpec {
            arms: [
                self.arm.clone(),
                ArmId {
                    variant: name.to_owned(),
                    ..self.arm.clone()
                },
            ],
            metric: Metric::Selection,
            confidence: self.args.confidence,
            rule: CompareRule::Compare {
                min_effect: self.args.min_effect,
            },
            cases: self.keys(Side::Holdout),
            holdout: Vec::new(),
            max_rounds: rounds,
        })
        .ok_or_else(|| usage("--confidence leaves no valid error rate"))?;
        let phase = self.phase(
            "confirm",
            (Side::Holdout, None),
            vec![variant],
            (rounds, allowed),
            &mut compare,
        )?;
        let confirmation = Confirmation {
            candidates: ids,
            held_out: compare.visible(),
            phase,
        };
        Ok((confirmation, overlay))
    }

    /// The cases and scenarios of one side of the split.
    fn units(&self, side: Side) -> Units<'_> {
        let s = &self.split;
        match side {
            Side::Training => Units {
                cases: &s.training,
                scenarios: &s.training_scenarios,
            },
            Side::Holdout => Units {
                cases: &s.holdout,
                scenarios: &s.holdout_scenarios,
            },
        }
    }

    /// The `(dataset, case)` keys of one side's units, as records name them: the cases, then
    /// the scenarios.
    fn keys(&self, side: Side) -> Vec<(String, String)> {
        let units = self.units(side);
        let cases = units
            .cases
            .iter()
            .map(|id| (self.dataset.name.clone(), id.clone()));
        let scenarios = units
            .scenarios
            .iter()
            .map(|name| (SCENARIO_DATASET.to_owned(), name.clone()));
        cases.chain(scenarios).collect()
    }

    /// One phase: a run of the base and `variants` on one side's units, `trials` each, in
    /// TUNE_DIR/NAME, with `observer` watching, going on from the base trials of `carried` (a
    /// results.jsonl); it may send at most `allowed` trials.
    fn phase(
        &mut self,
        name: &str,
        (side, carried): (Side, Option<PathBuf>),
        variants: Vec<CatalogVariant>,
        (trials, allowed): (u32, Share),
        observer: &mut dyn Observer,
    ) -> Result<Phase, Error> {
        let mut run = phase_args(self.args, &self.dir, name, trials, allowed.1);
        if self.replay {
            // As many as recorded, up to `trials`; one at a time, so the phase asks for the
            // trials the recording made, in its order.
            run.trials = None;
            run.concurrency = Some(1);
        }
        let mut setup = build_plan_of_units(run, self.env, Some(self.units(side)))?;
        setup.plan.trials = setup.plan.trials.min(trials);
        add_variants(&mut setup, variants);
        // The base's rounds the baseline completed are carried, not sent.
        let free = match &carried {
            Some(_) => self.keys(side).len() as u64 * u64::from(self.baseline_rounds.min(trials)),
            None => 0,
        };
        let to_send = setup.plan.planned_trials().saturating_sub(free);
        if let Some(max) = allowed.0
            && to_send > max
        {
            // The allowance sizes `trials`; a plan over it is a bug, not bad input.
            return Err(Error::internal(format!(
                "tune phase {name} plans {to_send} trials, over its allowance of {max}"
            )));
        }
        let mut recorder = self.recorder.as_mut().map(AcrossPhases);
        let mut observers: Vec<&mut dyn Observer> = vec![observer];
        if let Some(r) = &mut recorder {
            observers.push(r);
        }
        let super::super::run::PhaseRun {
            summary,
            sent,
            spent,
        } = super::super::run::run_phase(setup, carried.as_deref(), observers)?;
        let decision = toolscore_decide::decide(&summary, self.args.max_infra_error_rate);
        match toolscore_decide::exit_code(&decision) {
            ExitCode::Interrupted => {
                return Err(Error::interrupted(
                    "tune stopped; each phase's folder keeps the trials it finished",
                ));
            }
            ExitCode::InfraErrors => {
                return Err(Error::Untrusted {
                    phase: name.to_owned(),
                    folder: self.dir.join(name),
                    why: decision.not_judged_because().unwrap_or_default(),
                });
            }
            _ => {}
        }
        let phase = Phase {
            run_dir: self.dir.join(name).display().to_string(),
            trials: sent,
            usd: spent,
            allowed_trials: allowed.0,
        };
        self.allowance.spend(phase.trials, phase.usd);
        Ok(phase)
    }

    /// `datasets/<name>/variants/tuned-<date>.json`, never over an existing file.
    fn write_overlay(&self, overlay: &serde_json::Value) -> Result<PathBuf, Error> {
        let date: String = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
            .to_string()
            .chars()
            .take(10)
            .collect();
        let folder = self.dataset.dir.join("variants");
        std::fs::create_dir_all(&folder)
            .map_err(|e| Error::io(format!("cannot create {}", folder.display()), e))?;
        let mut path = folder.join(format!("tuned-{date}.json"));
        let mut n = 2;
        while path.exists() {
            path = folder.join(format!("tuned-{date}-{n}.json"));
            n += 1;
        }
        toolscore_core::write_json(&path, overlay)?;
        Ok(path)
    }

    fn recheck_command(&self, overlay: &Path) -> String {
        let variant = overlay
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        // The config the tune read, when it was not the default one: the provider may be
        // named there, and `run` would not find it otherwise.
        let mut words = vec!["toolscore".to_owned(), "run".to_owned()];
        if let Some(config) = &self.args.suite.config {
            words.extend(["--config".to_owned(), config.display().to_string()]);
        }
        words.extend([
            "--dataset".to_owned(),
            self.dataset.dir.display().to_string(),
            "--provider".to_owned(),
            self.live_provider.clone(),
            "--variant".to_owned(),
            "base".to_owned(),
            "--variant".to_owned(),
            variant,
            "--compare".to_owned(),
            "--sequential".to_owned(),
        ]);
        toolscore_core::command(words)
    }
}

/// The one dataset of the suite and the split of its cases and of the scenarios tuned with
/// it; every scenario must show the model the dataset's own catalog.
fn dataset_and_split(args: &TuneArgs) -> Result<(Dataset, Split), Error> {
    let loaded = super::super::load_suite(&args.suite)?;
    super::super::refuse_unedited_starters(&loaded.datasets, args.allow_starter_cases)?;
    if let Some(note) = super::super::allowed_starters_note(&loaded.datasets) {
        errln!("{note}")?;
    }
    if loaded.datasets.len() != 1 {
        return Err(usage(&format!(
            "tune works on one dataset; this suite has {} (name one with --dataset)",
            loaded.datasets.len()
        )));
    }
    let Some(dataset) = loaded.datasets.into_iter().next() else {
        return Err(Error::internal("a suite of one dataset has none".into()));
    };
    // A scenario is tuned with the dataset only when the model reads the dataset's own
    // catalog in it (the same tools, word for word): the candidates edit that text.
    for sc in &loaded.scenarios {
        if sc
            .catalogs
            .first()
            .is_none_or(|c| c.catalog.fingerprint != dataset.catalog.fingerprint)
        {
            return Err(usage(&format!(
                "--scenario {}: it shows the model another catalog than dataset `{}` ({}); tune edits that catalog, so only scenarios with `catalog: {}` can measure its edits",
                sc.file.display(),
                dataset.name,
                dataset.dir.display(),
                dataset.dir.display()
            )));
        }
    }
    let cases: Vec<SplitCase<'_>> = dataset
        .cases
        .iter()
        .map(|c| SplitCase {
            id: &c.id,
            tags: &c.tags,
        })
        .collect();
    let scenarios: Vec<SplitCase<'_>> = loaded
        .scenarios
        .iter()
        .map(|s| SplitCase {
            id: &s.name,
            tags: &s.tags,
        })
        .collect();
    let mut split =
        toolscore_tune::split(&cases, args.seed, args.holdout_fraction).map_err(|m| usage(&m))?;
    toolscore_tune::add_scenarios(&mut split, &scenarios, args.seed, args.holdout_fraction);
    Ok((dataset, split))
}

/// The candidates that passed validation, their variants, and why the others did not.
type Proposals = (Vec<Candidate>, Vec<CatalogVariant>, Vec<String>);

/// What goes into the race, and what the report says of the proposals.
struct Proposed {
    candidates: Vec<Candidate>,
    variants: Vec<CatalogVariant>,
    invalid: Vec<String>,
    suggestions: Vec<toolscore_summary::tune::Suggestion>,
    authoring: Option<toolscore_summary::tune::Authoring>,
}

/// The tune's recorder as an observer of one phase: every trial, but not the phase's end, so
/// the one cassette goes on through the next phase (tune closes it once).
struct AcrossPhases<'r>(&'r mut toolscore_provider::cassette::CassetteRecorder);

impl Observer for AcrossPhases<'_> {
    fn on_event(
        &mut self,
        event: &toolscore_core::RunEvent<'_>,
    ) -> Result<toolscore_core::Control, toolscore_core::Error> {
        match event {
            toolscore_core::RunEvent::Finished(_) => Ok(toolscore_core::Control::Continue),
            other => self.0.on_event(other),
        }
    }

    fn wants_raw(&self) -> bool {
        true
    }
}

/// A phase's plan: the base arm then one arm per variant (the same provider, live or
/// replayed), each variant shown in the dataset's cases and in its scenarios, no per-case or
/// per-scenario trial counts (a round is one trial of every unit).
fn add_variants(setup: &mut RunSetup, variants: Vec<CatalogVariant>) {
    let plan = &mut setup.plan;
    let base = plan.arms[0].clone();
    for v in &variants {
        plan.arms.push(toolscore_runner::Arm {
            variant: v.name.clone(),
            ..base.clone()
        });
    }
    for scenario in &mut plan.scenarios {
        let s = Arc::make_mut(scenario);
        s.trials = None;
        s.catalogs.extend(variants.iter().cloned());
    }
    let d = &mut plan.datasets[0];
    for c in &mut d.cases {
        c.trials = None;
    }
    d.variants.extend(variants);
}

/// The cases and scenarios tune learns from, or the ones it confirms on.
#[derive(Debug, Clone, Copy)]
enum Side {
    Training,
    Holdout,
}
