//! What `toolscore tune` found and did, as data (`tune.json`) and as the reports a user
//! reads (terminal, Markdown). The tune module produces it; the renderers here only format:
//! every figure is computed by the phases' comparisons.

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use super::{ComparisonVerdict, SequentialComparison};

pub use super::html::render_tune_html;
use crate::record::{ArgFailureKind, ArmId};

/// How the held-out cases were chosen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "method")]
pub enum SplitMethod {
    /// The cases the dataset tags `holdout`.
    Tagged,
    /// `fraction` of the cases, ranked by the hash of (seed, case id).
    Seeded { seed: u64, fraction: f64 },
}

/// The training cases and the held-out ones, by case id, each in the dataset's order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Split {
    #[serde(flatten)]
    pub method: SplitMethod,
    pub training: Vec<String>,
    pub holdout: Vec<String>,
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

/// Right-tool trials whose arguments failed in one way at one parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParamFailure {
    pub tool: String,
    /// The parameter's path in the schema (`lines.sku`, array indices dropped).
    pub path: String,
    pub kind: ArgFailureKind,
    pub count: u64,
    pub cases: Vec<String>,
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
}

impl TuneReport {
    /// Trials sent over every phase tune ran (a --from baseline is not tune's), each author
    /// request counted as one.
    pub fn trials_spent(&self) -> u64 {
        self.phases().map(|p| p.trials).sum::<u64>()
            + self.author.as_ref().map_or(0, |a| a.requests)
    }

    /// Dollars spent over tune's phases and its author's requests, when all are priced.
    pub fn usd_spent(&self) -> Option<f64> {
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
                    "held-out confirmation: {said}{kept}: tuned − base in [{:+.3}, {:+.3}] at {:.0}% on {} held-out cases, {} rounds ({} B only, {} A only, {} alike)",
                    h.lower,
                    h.upper,
                    (1.0 - h.alpha) * 100.0,
                    h.cases,
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
                    "training (optimistic: these cases shaped the edit) {}: B − A in [{:+.3}, {:+.3}], {} rounds on {} cases",
                    r.candidate.id, r.race.lower, r.race.upper, r.race.rounds, r.race.cases
                )
            })
            .collect()
    }

    /// What every renderer states beside the verdict: the split, the baseline, what was spent,
    /// what was written and how to check it again.
    pub fn facts(&self) -> Vec<String> {
        let mut out = vec![self.split_line(), self.baseline_line(), self.spent_line()];
        out.extend(self.written_lines());
        out
    }

    fn baseline_line(&self) -> String {
        let d = &self.diagnosis;
        format!(
            "baseline{}: {} ({} of {} training trials chose the right tool)",
            if self.baseline_given { " (--from)" } else { "" },
            self.baseline.run_dir,
            d.selection_right,
            d.scored_trials
        )
    }

    fn written_lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(path) = &self.written {
            out.push(format!("wrote {path}"));
        }
        if let Some(cmd) = &self.recheck {
            out.push(format!("check it again later: {cmd}"));
        }
        out
    }

    fn split_line(&self) -> String {
        let how = match &self.split.method {
            SplitMethod::Tagged => "the cases tagged `holdout`".to_owned(),
            SplitMethod::Seeded { seed, fraction } => {
                format!("a seeded split (--seed {seed}, --holdout-fraction {fraction})")
            }
        };
        format!(
            "{} training cases, {} held out ({how}); the held-out cases are never used to diagnose, propose or race",
            self.split.training.len(),
            self.split.holdout.len()
        )
    }

    fn spent_line(&self) -> String {
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

/// The terminal report: the headline first, then what was seen, tried and measured.
pub fn render_tune(t: &TuneReport, w: &mut dyn Write) -> io::Result<()> {
    writeln!(
        w,
        "tune {} with {}/{}",
        t.dataset, t.arm.provider, t.arm.model
    )?;
    writeln!(w, "  {}", t.split_line())?;
    writeln!(w, "  {}", t.baseline_line())?;
    writeln!(w)?;
    writeln!(w, "{}", t.headline())?;
    for line in t.training_lines() {
        writeln!(w, "  {line}")?;
    }
    writeln!(w)?;
    writeln!(w, "candidates ({}):", t.candidates.len())?;
    for r in &t.candidates {
        writeln!(
            w,
            "  {} [{}] {}: B − A in [{:+.3}, {:+.3}] after {} rounds",
            r.candidate.id,
            r.variant,
            r.status.words(),
            r.race.lower,
            r.race.upper,
            r.race.rounds
        )?;
        for e in &r.candidate.evidence {
            writeln!(w, "      evidence: {e}")?;
        }
        for e in &r.candidate.edits {
            writeln!(w, "      {}:", e.location())?;
            writeln!(w, "        - {}", e.before)?;
            writeln!(w, "        + {}", e.after)?;
        }
    }
    for why in &t.invalid {
        writeln!(w, "  not raced: {why}")?;
    }
    if !t.suggestions.is_empty() {
        writeln!(w)?;
        writeln!(w, "for the author (not raced):")?;
        for s in &t.suggestions {
            writeln!(w, "  {} ({}): {}", s.tool, s.rule, s.text)?;
        }
    }
    writeln!(w)?;
    writeln!(w, "{}", t.spent_line())?;
    for line in t.written_lines() {
        writeln!(w, "{line}")?;
    }
    Ok(())
}

/// The Markdown report (`TUNE_DIR/report.md`): the same content, each edit as a diff.
pub fn render_tune_markdown(t: &TuneReport, w: &mut dyn Write) -> io::Result<()> {
    writeln!(
        w,
        "# tune: {} with {}/{}",
        t.dataset, t.arm.provider, t.arm.model
    )?;
    writeln!(w)?;
    writeln!(w, "**{}**", t.headline())?;
    writeln!(w)?;
    for line in t.training_lines().into_iter().chain(t.facts()) {
        writeln!(w, "- {line}")?;
    }
    writeln!(w)?;
    writeln!(w, "## Candidates")?;
    for r in &t.candidates {
        writeln!(w)?;
        writeln!(w, "### `{}` ({})", r.candidate.id, r.status.words())?;
        writeln!(w)?;
        writeln!(
            w,
            "Training race (variant `{}`): {}",
            r.variant,
            r.race.line()
        )?;
        writeln!(w)?;
        for e in &r.candidate.evidence {
            writeln!(w, "- evidence: {e}")?;
        }
        writeln!(w)?;
        writeln!(w, "```diff")?;
        for e in &r.candidate.edits {
            writeln!(w, "@@ {} @@", e.location())?;
            writeln!(w, "-{}", e.before)?;
            writeln!(w, "+{}", e.after)?;
        }
        writeln!(w, "```")?;
    }
    if !t.suggestions.is_empty() {
        writeln!(w)?;
        writeln!(w, "## For the author (not raced)")?;
        writeln!(w)?;
        for s in &t.suggestions {
            writeln!(w, "- `{}` ({}): {}", s.tool, s.rule, s.text)?;
        }
    }
    Ok(())
}
