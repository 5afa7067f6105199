//! Public as a namespace: callers write `tune::TuneReport`, `tune::Candidate`, `tune::Split`.
//!
//! What `toolscore tune` found and did, as data (`tune.json`). The tune crate produces it and
//! `report`'s tune renderers (terminal, Markdown, HTML) only format it: every figure is
//! computed by the phases' comparisons.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use toolscore_core::catalog::Catalog;

use super::{ComparisonVerdict, SequentialComparison};

use toolscore_core::{ArgFailureKind, ArmId};

/// How the held-out cases were chosen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "method")]
pub enum SplitMethod {
    /// The cases the dataset tags `holdout`.
    Tagged,
    /// `fraction` of the cases, ranked by the hash of (seed, case id).
    Seeded { seed: u64, fraction: f64 },
}

/// The training cases and the held-out ones, by case id, each in the dataset's order; and
/// the scenarios tuned with the dataset, split the same way, by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Split {
    #[serde(flatten)]
    pub method: SplitMethod,
    pub training: Vec<String>,
    pub holdout: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub training_scenarios: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub holdout_scenarios: Vec<String>,
    /// How the scenarios were split (their own tags, or the seed): `None` without scenarios.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario_method: Option<SplitMethod>,
}

/// Trials of one case where the model chose `chosen` though `expected` was right.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseConfusion {
    pub case_id: String,
    pub expected: String,
    pub chosen: String,
    pub count: u64,
    /// The case's scored trials.
    pub of: u64,
}

/// Two tools the model takes one for the other, both directions counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfusedPair {
    /// The pair in catalog order.
    pub tools: [String; 2],
    /// Trials that chose the wrong one of the two, either way.
    pub count: u64,
    pub cases: Vec<CaseConfusion>,
}

/// Arguments that failed in one way at one parameter: in right-tool trials of the cases
/// (`cases`), or in scenario calls answered with a validation error (`scenarios`; then
/// `count` counts calls, and `cases` is empty).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParamFailure {
    pub tool: String,
    /// The parameter's path in the schema (`lines.sku`, array indices dropped).
    pub path: String,
    pub kind: ArgFailureKind,
    pub count: u64,
    pub cases: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenarios: Vec<String>,
}

/// What the training scenarios' trajectories show about one tool: the calls the model
/// repeated and the error results it did not recover from (as a scenario's retry and
/// recovery rates count them, per tool).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolTrajectory {
    pub tool: String,
    /// Calls the model made to it.
    pub calls: u64,
    /// Calls repeating an earlier call of the same trial (equivalent arguments) whose latest
    /// result was a success.
    pub repeats_after_success: u64,
    /// Calls repeating an earlier call whose latest result was an error.
    pub repeats_after_error: u64,
    /// Error results followed by another call to it.
    pub recovery_chances: u64,
    /// Of those, the next call had valid arguments different from the failed one.
    pub recoveries: u64,
    /// The scenarios with a repeat or a missed recovery of it.
    pub scenarios: Vec<String>,
}

impl ToolTrajectory {
    /// Whether anything here is worth an edit: a repeat or a missed recovery.
    pub fn is_signal(&self) -> bool {
        self.repeats_after_success + self.repeats_after_error > 0
            || self.recoveries < self.recovery_chances
    }

    /// One line of the diagnosis: what the trajectories show about the tool.
    pub fn line(&self) -> String {
        let mut parts = Vec::new();
        if self.repeats_after_success > 0 {
            parts.push(format!(
                "repeated a call that had succeeded {} time{}",
                self.repeats_after_success,
                plural(self.repeats_after_success)
            ));
        }
        if self.repeats_after_error > 0 {
            parts.push(format!(
                "repeated a call that had failed {} time{}",
                self.repeats_after_error,
                plural(self.repeats_after_error)
            ));
        }
        if self.recovery_chances > 0 {
            parts.push(format!(
                "recovered after {} of {} error results",
                self.recoveries, self.recovery_chances
            ));
        }
        format!(
            "`{}` in scenarios ({}): {} over {} call{}",
            self.tool,
            self.scenarios.join(", "),
            parts.join("; "),
            self.calls,
            plural(self.calls)
        )
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `1 case`, `3 cases`.
fn counted(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", plural(n as u64))
}

/// A lint finding on a tool the diagnosis implicates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LintNote {
    pub tool: String,
    pub rule: String,
    pub path: String,
    pub message: String,
    pub fix: String,
}

/// What the training trials say goes wrong.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// Scored training trials of the base arm, and how many chose the right tool.
    pub scored_trials: u64,
    pub selection_right: u64,
    /// Most confused first.
    pub confusions: Vec<ConfusedPair>,
    /// Most frequent first.
    pub arg_failures: Vec<ParamFailure>,
    pub lint: Vec<LintNote>,
    /// Judged training scenario trials of the base arm, and how many succeeded.
    #[serde(default)]
    pub scenario_trials: u64,
    #[serde(default)]
    pub scenario_passed: u64,
    /// The tools with a repeat or a missed recovery in those trials, the most first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trajectories: Vec<ToolTrajectory>,
}

/// The kind of edit a candidate makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operator {
    Disambiguate,
    Format,
    Required,
    Defaults,
    /// A model's rewrite of one tool's text (`--author`).
    Author,
}

/// One text the candidate changes: a tool's description, or one parameter's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextEdit {
    pub tool: String,
    /// The parameter's path (`lines.sku`), or `None` for the tool's own description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub property: Option<String>,
    pub before: String,
    pub after: String,
}

/// A proposed edit, with the evidence behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// Stable and readable: `disambiguate:job_status/server_status`, `format:quote.currency`.
    pub id: String,
    pub operator: Operator,
    /// The base tools it touches, in catalog order: candidates on disjoint tools can combine.
    pub tools: Vec<String>,
    pub edits: Vec<TextEdit>,
    /// Training trials the edit answers (the size of the evidence, for ranking).
    pub weight: u64,
    /// What was seen, in a sentence per observation.
    pub evidence: Vec<String>,
}

/// An edit the author should weigh but tune does not race (a rename breaks clients).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Suggestion {
    pub tool: String,
    pub rule: String,
    pub text: String,
    pub breaking: bool,
}

impl Suggestion {
    /// `TOOL (RULE): TEXT`, as the reports list it.
    pub fn line(&self) -> String {
        format!("{} ({}): {}", self.tool, self.rule, self.text)
    }
}

impl Split {
    pub fn is_holdout(&self, case_id: &str) -> bool {
        self.holdout.iter().any(|c| c == case_id)
    }
}

impl Operator {
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Disambiguate => "disambiguate",
            Operator::Format => "format",
            Operator::Required => "required",
            Operator::Defaults => "defaults",
            Operator::Author => "author",
        }
    }
}

impl TextEdit {
    /// `tool` or `tool.property`: where the edit is.
    pub fn location(&self) -> String {
        match &self.property {
            Some(p) => format!("{}.{p}", self.tool),
            None => self.tool.clone(),
        }
    }
}

/// Where a candidate ended in the race.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CandidateStatus {
    /// Found better than the base on the training cases: it goes on to be confirmed.
    Better,
    /// Found worse: dropped.
    Worse,
    /// No difference as large as the minimum effect: dropped.
    NotBetter,
    /// Undecided when the race ended (its rounds or the budget ran out).
    Undecided,
}

impl CandidateStatus {
    pub fn of(verdict: ComparisonVerdict) -> Self {
        match verdict {
            ComparisonVerdict::Better => CandidateStatus::Better,
            ComparisonVerdict::Worse => CandidateStatus::Worse,
            ComparisonVerdict::Equivalent | ComparisonVerdict::NotBetter => {
                CandidateStatus::NotBetter
            }
            ComparisonVerdict::Inconclusive => CandidateStatus::Undecided,
        }
    }

    pub fn words(self) -> &'static str {
        match self {
            CandidateStatus::Better => "better on training cases",
            CandidateStatus::Worse => "dropped: worse",
            CandidateStatus::NotBetter => "dropped: not better by the minimum effect",
            CandidateStatus::Undecided => "undecided",
        }
    }
}

/// A candidate and how it raced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RacedCandidate {
    pub candidate: Candidate,
    /// The arm's variant name in the race's records (`candidate-1`, …).
    pub variant: String,
    pub race: SequentialComparison,
    pub status: CandidateStatus,
}

/// One phase's run: its folder (a run folder `report` and `compare` read) and what it spent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    pub run_dir: String,
    /// Trials this phase sent (completed, infrastructure errors included); the race's folder
    /// also holds the baseline's trials of the base wording it went on from, not counted here.
    pub trials: u64,
    /// US dollars, when the provider has a price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd: Option<f64>,
    /// The trials the phase was allowed (the budget's share), when a budget was set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_trials: Option<u64>,
}

/// The author's requests (`--author`): whom tune asked, how often, at what cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Authoring {
    pub provider: String,
    pub model: String,
    pub requests: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd: Option<f64>,
}

/// What tune concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TuneOutcome {
    /// The held-out cases confirmed the tuned wording better.
    Confirmed,
    /// The held-out cases found no difference as large as the minimum effect.
    NoDifference,
    /// The held-out cases found the tuned wording worse.
    Worse,
    /// The confirmation ended undecided (its rounds or the budget ran out).
    Undecided,
    /// No candidate led the base on the training cases: nothing to confirm.
    NoFinalist,
    /// The diagnosis supports no edit.
    NothingToTune,
}

impl TuneOutcome {
    pub fn of(verdict: ComparisonVerdict) -> Self {
        match verdict {
            ComparisonVerdict::Better => TuneOutcome::Confirmed,
            ComparisonVerdict::Worse => TuneOutcome::Worse,
            ComparisonVerdict::Equivalent | ComparisonVerdict::NotBetter => {
                TuneOutcome::NoDifference
            }
            ComparisonVerdict::Inconclusive => TuneOutcome::Undecided,
        }
    }
}

/// The held-out confirmation of the finalist against the base.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Confirmation {
    /// The candidates the tuned wording combines, by id.
    pub candidates: Vec<String>,
    pub held_out: SequentialComparison,
    pub phase: Phase,
}

/// Everything one `toolscore tune` did, in `TUNE_DIR/tune.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneReport {
    pub dataset: String,
    /// The base arm: provider and model (variant `base`).
    pub arm: ArmId,
    pub confidence: f64,
    pub min_effect: f64,
    pub split: Split,
    /// The baseline the diagnosis read (tune's own phase, or the run given with --from).
    pub baseline: Phase,
    /// Whether the baseline is a run given with --from rather than tune's own phase.
    pub baseline_given: bool,
    pub diagnosis: Diagnosis,
    /// `--author`'s requests, when one was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<Authoring>,
    pub candidates: Vec<RacedCandidate>,
    /// Proposals not raced, with why: failed validation, an author's answer tune could not
    /// use, or left out by the budget.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invalid: Vec<String>,
    pub suggestions: Vec<Suggestion>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub race: Option<Phase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
    pub outcome: TuneOutcome,
    /// `--budget-trials`, `--max-cost`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_trials: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
    /// The overlay written, when one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written: Option<String>,
    /// The command that checks the written wording again later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recheck: Option<String>,
    /// When the held-out set is too small to ever confirm "no difference": said before
    /// anything was spent (`tune::confirmation_plan`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation_plan: Option<ConfirmationPlan>,
}

/// A held-out set too small to confirm "no difference as large as ±min_effect" within
/// `--max-rounds`: with every pair agreeing (`disagreement` 0: it never can), or with the
/// share of disagreeing pairs the baseline showed (it most likely ends undecided).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfirmationPlan {
    pub holdout_units: u64,
    pub max_rounds: u32,
    pub min_effect: f64,
    /// The share of pairs assumed to disagree (half each way).
    pub disagreement: f64,
    /// The pairs that rule the effect out at that share (`None`: not even 10⁸).
    pub pairs_needed: Option<u64>,
}

impl ConfirmationPlan {
    pub fn line(&self) -> String {
        let (h, r) = (self.holdout_units, self.max_rounds);
        let have = format!(
            "{h} held-out units × --max-rounds {r} = {} pairs",
            h * u64::from(r)
        );
        let (can, when) = if self.disagreement == 0.0 {
            (
                "cannot",
                "at least {n} even if every pair agrees".to_owned(),
            )
        } else {
            (
                "is unlikely to",
                format!(
                    "about {{n}} when {:.0}% of pairs disagree, as the baseline's trials did",
                    self.disagreement * 100.0
                ),
            )
        };
        match self.pairs_needed {
            Some(n) => format!(
                "the held-out set {can} confirm \"no difference\": {have}, and ruling out ±{} takes {}; {} held-out units would at --max-rounds {r}, or --max-rounds {} with these {h}",
                self.min_effect,
                when.replace("{n}", &n.to_string()),
                n.div_ceil(u64::from(r.max(1))),
                n.div_ceil(h.max(1))
            ),
            None => format!(
                "the held-out set {can} confirm \"no difference\": {have}, and ±{} is too small to rule out with any number of pairs; raise --min-effect",
                self.min_effect
            ),
        }
    }
}

impl TuneReport {
    /// Trials sent over every phase tune ran (a --from baseline is not tune's), each author
    /// request counted as one.
    pub(crate) fn trials_spent(&self) -> u64 {
        self.phases().map(|p| p.trials).sum::<u64>()
            + self.author.as_ref().map_or(0, |a| a.requests)
    }

    /// Dollars spent over tune's phases and its author's requests, when all are priced.
    pub(crate) fn usd_spent(&self) -> Option<f64> {
        let author = self.author.as_ref().map(|a| a.usd);
        self.phases().map(|p| p.usd).chain(author).sum()
    }

    fn phases(&self) -> impl Iterator<Item = &Phase> {
        (!self.baseline_given)
            .then_some(&self.baseline)
            .into_iter()
            .chain(self.race.as_ref())
            .chain(self.confirmation.as_ref().map(|c| &c.phase))
    }

    /// The headline: what the held-out cases say, in one line.
    pub fn headline(&self) -> String {
        match (&self.outcome, &self.confirmation) {
            (TuneOutcome::NothingToTune, _) => {
                "nothing to tune: the training trials show no confusion or argument failure an edit of the text could address".to_owned()
            }
            (TuneOutcome::NoFinalist, _) => format!(
                "no improvement found: none of the {} candidates led the base on the training cases",
                self.candidates.len()
            ),
            (outcome, Some(c)) => {
                let h = &c.held_out;
                let said = match outcome {
                    TuneOutcome::Confirmed => "BETTER".to_owned(),
                    TuneOutcome::Worse => "WORSE".to_owned(),
                    TuneOutcome::NoDifference => format!(
                        "NOT CONFIRMED, no difference as large as ±{}",
                        self.min_effect
                    ),
                    _ => format!(
                        "NOT CONFIRMED, undecided after {} of {} rounds",
                        h.rounds, h.max_rounds
                    ),
                };
                let kept = match (&self.written, outcome) {
                    (Some(_), TuneOutcome::Confirmed) => "",
                    (Some(_), _) => " (written anyway)",
                    (None, _) => " (not written)",
                };
                format!(
                    "held-out confirmation: {said}{kept}: tuned − base in [{:+.3}, {:+.3}] at {:.0}% on {}, {} rounds ({} B only, {} A only, {} alike)",
                    h.lower,
                    h.upper,
                    (1.0 - h.alpha) * 100.0,
                    self.units(&self.split.holdout, &self.split.holdout_scenarios, "held-out "),
                    h.rounds,
                    h.counts.b_only,
                    h.counts.a_only,
                    h.counts.same
                )
            }
            (_, None) => "no confirmation was run".to_owned(),
        }
    }

    /// The training figure of each confirmed candidate, labelled for what it is.
    pub fn training_lines(&self) -> Vec<String> {
        let Some(c) = &self.confirmation else {
            return Vec::new();
        };
        self.candidates
            .iter()
            .filter(|r| c.candidates.contains(&r.candidate.id))
            .map(|r| {
                format!(
                    "training (optimistic: these cases shaped the edit) {}: B − A in [{:+.3}, {:+.3}], {} rounds on {}",
                    r.candidate.id,
                    r.race.lower,
                    r.race.upper,
                    r.race.rounds,
                    self.units(&self.split.training, &self.split.training_scenarios, "")
                )
            })
            .collect()
    }

    /// What every renderer states beside the verdict: the split, the baseline, what was spent,
    /// what was written and how to check it again.
    pub fn facts(&self) -> Vec<String> {
        let mut out = vec![self.split_line()];
        out.extend(self.confirmation_plan.as_ref().map(ConfirmationPlan::line));
        out.extend([self.baseline_line(), self.spent_line()]);
        out.extend(self.written_lines());
        out
    }

    pub fn baseline_line(&self) -> String {
        let d = &self.diagnosis;
        let scenarios = if d.scenario_trials > 0 {
            format!(
                "; {} of {} training scenario trials succeeded",
                d.scenario_passed, d.scenario_trials
            )
        } else {
            String::new()
        };
        format!(
            "baseline{}: {} ({} of {} training trials chose the right tool{scenarios})",
            if self.baseline_given { " (--from)" } else { "" },
            self.baseline.run_dir,
            d.selection_right,
            d.scored_trials
        )
    }

    /// What the training scenarios' trajectories show, a line per tool (none without
    /// scenarios).
    pub fn trajectory_lines(&self) -> Vec<String> {
        self.diagnosis
            .trajectories
            .iter()
            .map(ToolTrajectory::line)
            .collect()
    }

    /// `N cases` or, with scenarios, `N cases and M scenarios`, each noun after `adjective`.
    fn units(&self, cases: &[String], scenarios: &[String], adjective: &str) -> String {
        let cases = counted(cases.len(), &format!("{adjective}case"));
        if self.split.scenario_method.is_none() {
            cases
        } else {
            let scenarios = counted(scenarios.len(), &format!("{adjective}scenario"));
            format!("{cases} and {scenarios}")
        }
    }

    pub fn written_lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(path) = &self.written {
            out.push(format!("wrote {path}"));
        }
        if let Some(cmd) = &self.recheck {
            out.push(format!("check it again later: {cmd}"));
        }
        out
    }

    pub fn split_line(&self) -> String {
        let how = |method: &SplitMethod, units: &str| match method {
            SplitMethod::Tagged => format!("the {units} tagged `holdout`"),
            SplitMethod::Seeded { seed, fraction } => {
                format!("a seeded split (--seed {seed}, --holdout-fraction {fraction})")
            }
        };
        let s = &self.split;
        let Some(scenario_method) = &s.scenario_method else {
            return format!(
                "{} training cases, {} held out ({}); the held-out cases are never used to diagnose, propose or race",
                s.training.len(),
                s.holdout.len(),
                how(&s.method, "cases")
            );
        };
        format!(
            "{} and {}, {} and {} held out (cases: {}; scenarios: {}); the held-out ones are never used to diagnose, propose or race; a case counts as right when the model chooses the right tool, a scenario when it succeeds",
            counted(s.training.len(), "training case"),
            counted(s.training_scenarios.len(), "training scenario"),
            counted(s.holdout.len(), "case"),
            counted(s.holdout_scenarios.len(), "scenario"),
            how(&s.method, "cases"),
            how(scenario_method, "scenarios"),
        )
    }

    pub fn spent_line(&self) -> String {
        let mut line = format!("spent {} trials", self.trials_spent());
        if let Some(b) = self.budget_trials {
            line.push_str(&format!(" of --budget-trials {b}"));
        }
        if let Some(usd) = self.usd_spent() {
            line.push_str(&format!(", {}", super::format_usd(usd)));
            if let Some(max) = self.max_cost {
                line.push_str(&format!(" of --max-cost {}", super::format_usd(max)));
            }
        }
        line
    }
}

impl Diagnosis {
    /// The tools any confusion or argument failure names, in catalog order.
    pub fn implicated(&self, catalog: &Catalog) -> Vec<String> {
        let named: BTreeSet<&str> = self
            .confusions
            .iter()
            .flat_map(|c| c.tools.iter().map(String::as_str))
            .chain(self.arg_failures.iter().map(|f| f.tool.as_str()))
            .chain(self.trajectories.iter().map(|t| t.tool.as_str()))
            .collect();
        catalog
            .tools
            .iter()
            .filter(|t| named.contains(t.name.as_str()))
            .map(|t| t.name.clone())
            .collect()
    }
}
