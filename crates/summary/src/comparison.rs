//! A paired comparison of two arms as data (what `decide::compare` decided), and its terminal
//! rendering. Computed by the compare module; every renderer only formats these numbers.

use serde::{Deserialize, Serialize};

use super::Metric;
use toolscore_core::ArmId;

/// Two arms compared on the cases they share: B − A, paired by case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub metric: Metric,
    /// Two-sided confidence level of every interval.
    pub confidence: f64,
    /// The smallest difference worth acting on (`--min-effect`).
    pub min_effect: f64,
    /// Power the planned number of cases is computed for.
    pub power: f64,
    pub a: ComparedArm,
    pub b: ComparedArm,
    /// What differs between the arms: `variant`, `provider` (provider, model or sampling
    /// settings, or only the provider's name within one run) or `run` (the same arm measured
    /// in two runs).
    pub axis: String,
    /// Cases not tagged `holdout`: per-case tables and their verdict.
    pub visible: GroupComparison,
    /// Cases tagged `holdout`: reported only in aggregate, with a verdict of their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holdout: Option<GroupComparison>,
    /// Visible cases whose Newcombe interval of the difference excludes 0, better first
    /// (largest gain), then worse (largest loss).
    pub changed_cases: Vec<CaseComparison>,
    /// Every visible case with data in both arms, B − A with its Newcombe interval, in case
    /// order (dataset, case id): the paired per-case differences the HTML report plots.
    /// Absent from comparisons written before it was added.
    #[serde(default)]
    pub case_differences: Vec<CaseComparison>,
    /// Expected tool → tool chosen instead, scored trials of each arm (all cases, holdout
    /// included: counts only, no case names).
    pub substitutions: Vec<Substitution>,
}

/// `run --attacks --compare`: B − A on the attacked run's rates, paired by (scenario × attack)
/// unit: does B (a defended system prompt, other descriptions, another model) lower the attack
/// rate, and what does it cost the user's task under attack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttackComparison {
    pub confidence: f64,
    pub min_effect: f64,
    pub a: ComparedArm,
    pub b: ComparedArm,
    /// What differs between the arms (`variant`, `provider`).
    pub axis: String,
    /// B − A of attack success over the units both arms ran. Lower is better here: BETTER
    /// means B is attacked less (the interval lies below 0).
    pub attack_success: GroupComparison,
    /// B − A of utility under attack: BETTER means B keeps the user's task more often.
    pub utility_under_attack: GroupComparison,
}

impl AttackComparison {
    /// Each compared rate with its verdict in words, in report order: the one telling every
    /// renderer prints.
    pub fn told(&self) -> [(&'static str, &GroupComparison, String); 2] {
        [
            (
                "attack success",
                &self.attack_success,
                self.describe_attack_success(),
            ),
            (
                "utility under attack",
                &self.utility_under_attack,
                self.utility_under_attack
                    .verdict
                    .describe(&self.b.label(&self.axis), self.min_effect),
            ),
        ]
    }

    /// The attack-success verdict in words, with B named: lower is better.
    pub fn describe_attack_success(&self) -> String {
        let b = self.b.label(&self.axis);
        match self.attack_success.verdict {
            ComparisonVerdict::Better => format!("BETTER: {b} is attacked less"),
            ComparisonVerdict::Worse => format!("WORSE: {b} is attacked more"),
            other => other.describe(&b, self.min_effect),
        }
    }
}

/// The sequential comparison of a run's two arms (`decide::compare::sequential`): a
/// confidence sequence for the mean over this suite's visible cases of B's rate − A's, judged
/// after every complete round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequentialComparison {
    /// Better, worse, no difference as large as `min_effect`, or inconclusive (undecided when
    /// the run ended).
    pub verdict: ComparisonVerdict,
    /// Complete rounds judged: each is one trial of every visible case under both arms.
    pub rounds: u64,
    /// Rounds left out because a pair in them measured nothing (an infrastructure error, or a
    /// metric that does not apply).
    pub skipped_rounds: u64,
    /// Rounds the run could hold.
    pub max_rounds: u32,
    pub cases: usize,
    pub counts: toolscore_stats::PairCounts,
    /// The sequence covers the true difference at every round with probability 1 − alpha.
    pub alpha: f64,
    /// The confidence sequence at the last round judged.
    pub lower: f64,
    pub upper: f64,
}

impl SequentialComparison {
    /// The same result told as A − B: the arms swapped. A race's `NotBetter` (a one-sided
    /// stop) has no mirror and is kept: races never swap their arms.
    pub fn mirrored(&self) -> Self {
        SequentialComparison {
            verdict: match self.verdict {
                ComparisonVerdict::Better => ComparisonVerdict::Worse,
                ComparisonVerdict::Worse => ComparisonVerdict::Better,
                v => v,
            },
            counts: toolscore_stats::PairCounts {
                b_only: self.counts.a_only,
                a_only: self.counts.b_only,
                same: self.counts.same,
            },
            lower: -self.upper,
            upper: -self.lower,
            ..self.clone()
        }
    }

    /// The comparison's sequential line, as every report words it.
    pub fn line(&self) -> String {
        let state = if self.verdict == ComparisonVerdict::Inconclusive {
            format!(
                "undecided after {} of {} rounds",
                self.rounds, self.max_rounds
            )
        } else {
            format!("decided after {} rounds", self.rounds)
        };
        format!(
            "sequential (betting confidence sequence, anytime-valid; about these {} cases, not a population of cases): {state} ({} trials): B − A in [{:+.3}, {:+.3}] at {:.0}%; pairs {} B only, {} A only, {} alike{}",
            self.cases,
            2 * self.rounds * self.cases as u64,
            self.lower,
            self.upper,
            (1.0 - self.alpha) * 100.0,
            self.counts.b_only,
            self.counts.a_only,
            self.counts.same,
            if self.skipped_rounds > 0 {
                format!(
                    "; {} rounds skipped for a pair that measured nothing",
                    self.skipped_rounds
                )
            } else {
                String::new()
            }
        )
    }
}

/// One side of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparedArm {
    pub run_id: String,
    pub arm: ArmId,
    /// The run's folder, when both arms' runs carry the same id (two folders of one run id):
    /// the id alone would name both the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
}

impl ComparedArm {
    /// `variant terse`, `provider local-greedy (smollm2)`, or `run 2026…` (with its folder
    /// when the ids collide) depending on the axis.
    pub fn label(&self, axis: &str) -> String {
        match (axis, &self.folder) {
            ("variant", _) => format!("variant {}", self.arm.variant),
            ("provider", _) => format!("{} ({})", self.arm.provider, self.arm.model),
            (_, Some(folder)) => format!("run {} ({folder})", self.run_id),
            (_, None) => format!("run {}", self.run_id),
        }
    }
}

/// The verdict of a comparison at `--min-effect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ComparisonVerdict {
    /// B is better: the interval of the mean difference lies above 0.
    Better,
    /// B is worse: the interval lies below 0.
    Worse,
    /// No difference as large as `min_effect` either way: the interval lies inside
    /// (−min_effect, +min_effect).
    Equivalent,
    /// The interval holds 0 and differences of `min_effect` or more: more cases are needed.
    Inconclusive,
    /// B is not better by `min_effect`: the interval's upper end lies below it (a race's
    /// futility stop; B may be a little better, or worse).
    NotBetter,
}

impl ComparisonVerdict {
    pub fn describe(self, b: &str, min_effect: f64) -> String {
        match self {
            ComparisonVerdict::Better => format!("BETTER: {b} scores higher"),
            ComparisonVerdict::Worse => format!("WORSE: {b} scores lower"),
            ComparisonVerdict::Equivalent => format!(
                "NO DETECTABLE DIFFERENCE: any difference is smaller than {min_effect} either way"
            ),
            ComparisonVerdict::Inconclusive => format!(
                "INCONCLUSIVE: the data allow no difference and a difference of {min_effect} or more"
            ),
            ComparisonVerdict::NotBetter => {
                format!("NOT BETTER: {b} is not better by {min_effect} or more")
            }
        }
    }
}

/// A comparison's one verdict: what `compare`'s and `run --compare`'s exit codes, the terminal,
/// Markdown and the HTML badge all say. See [`Comparison::overall`] for the rule.
#[derive(Debug, Clone, PartialEq)]
pub struct OverallVerdict {
    pub verdict: ComparisonVerdict,
    /// Why the verdict is not simply the visible cases' (held-out cases undecided or
    /// disagreeing), in words for every renderer.
    pub reason: Option<String>,
}

impl OverallVerdict {
    /// Whether the comparison is decided: exit 0 when it is, 3 when it is not.
    pub fn decided(&self) -> bool {
        self.verdict != ComparisonVerdict::Inconclusive
    }

    /// A short label for a badge: `B BETTER`, `B WORSE`, `NO DETECTABLE DIFFERENCE`,
    /// `INCONCLUSIVE`.
    pub fn label(&self) -> &'static str {
        match self.verdict {
            ComparisonVerdict::Better => "B BETTER",
            ComparisonVerdict::Worse => "B WORSE",
            ComparisonVerdict::Equivalent => "NO DETECTABLE DIFFERENCE",
            ComparisonVerdict::Inconclusive => "INCONCLUSIVE",
            ComparisonVerdict::NotBetter => "B NOT BETTER",
        }
    }
}

impl Comparison {
    /// The rule, stated once: the verdict of the visible cases stands when there are no
    /// held-out cases, or when the held-out cases reach the same verdict. Otherwise the
    /// comparison is inconclusive: a wording may have been tuned on the visible cases, and
    /// the held-out ones are there to confirm it, so a finding they leave undecided or
    /// contradict is not yet a finding.
    pub fn overall(&self) -> OverallVerdict {
        let visible = self.visible.judged();
        let Some(holdout) = &self.holdout else {
            return OverallVerdict {
                verdict: visible,
                reason: None,
            };
        };
        if holdout.judged() == visible {
            return OverallVerdict {
                verdict: visible,
                reason: None,
            };
        }
        let reason = if visible == ComparisonVerdict::Inconclusive {
            "the visible cases are undecided".to_owned()
        } else if holdout.judged() == ComparisonVerdict::Inconclusive {
            format!(
                "the visible cases say {}, not yet confirmed on the {} held-out cases (undecided)",
                verdict_word(visible),
                holdout.cases
            )
        } else {
            format!(
                "the visible cases say {} but the {} held-out cases say {}",
                verdict_word(visible),
                holdout.cases,
                verdict_word(holdout.judged())
            )
        };
        OverallVerdict {
            verdict: ComparisonVerdict::Inconclusive,
            reason: Some(reason),
        }
    }
}

fn verdict_word(v: ComparisonVerdict) -> &'static str {
    match v {
        ComparisonVerdict::Better => "better",
        ComparisonVerdict::Worse => "worse",
        ComparisonVerdict::Equivalent => "no detectable difference",
        ComparisonVerdict::Inconclusive => "inconclusive",
        ComparisonVerdict::NotBetter => "not better",
    }
}

/// The suite-level comparison of a group of cases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupComparison {
    /// Cases with data for the metric in both arms.
    pub cases: usize,
    pub a_mean: Option<f64>,
    pub b_mean: Option<f64>,
    /// Mean of the per-case differences B − A with its t(m−1) interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difference: Option<MeanDifference>,
    /// With one trial per case in each arm: McNemar's test on the discordant cases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcnemar: Option<McNemar>,
    pub verdict: ComparisonVerdict,
    /// Cases that would detect `min_effect` with `power`, at the observed spread of the
    /// per-case differences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cases_needed: Option<u64>,
    /// `run --compare --sequential`: the anytime-valid comparison the run stopped on. When
    /// present its verdict is the group's `verdict`; the fixed-n figures stay as description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<SequentialComparison>,
    /// Under `--sequential`: what the fixed-n t interval alone would say. Description only:
    /// an interval computed after a data-dependent stop does not hold its level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed_n_verdict: Option<ComparisonVerdict>,
}

impl GroupComparison {
    /// The group's verdict: the sequential comparison's when the run stopped on one (a
    /// fixed-n interval computed after a data-dependent stop would not hold its level), else
    /// the fixed-n one.
    pub fn judged(&self) -> ComparisonVerdict {
        self.sequential.as_ref().map_or(self.verdict, |s| s.verdict)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeanDifference {
    pub mean: f64,
    pub lo: f64,
    pub hi: f64,
    /// Standard deviation of the per-case differences.
    pub sd: f64,
    pub df: u64,
    /// Two-sided p-value of the paired t test of no difference.
    pub p_value: f64,
    pub method: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McNemar {
    pub both_pass: u64,
    pub a_only: u64,
    pub b_only: u64,
    pub neither: u64,
    pub exact_p: f64,
    pub mid_p: f64,
    /// Newcombe's paired square-and-add interval of B − A.
    pub lo: f64,
    pub hi: f64,
}

/// One case in both arms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseComparison {
    pub dataset: String,
    pub case_id: String,
    pub a_x: u64,
    pub a_n: u64,
    pub b_x: u64,
    pub b_n: u64,
    /// B − A with Newcombe's hybrid score interval.
    pub difference: f64,
    pub lo: f64,
    pub hi: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Substitution {
    pub expected: String,
    pub chosen: String,
    pub a: u64,
    pub b: u64,
}
