//! `toolscore tune`: from a baseline's evidence to a confirmed better wording. The parts that
//! need no I/O live here, as plain functions over plain data:
//!
//! - `split` ([`split()`], [`add_scenarios`]): the training cases and the held-out ones
//!   (tagged, or a seeded split);
//! - `diagnose` ([`Tally`]): what goes wrong on the training cases (confusions, argument
//!   failures, lint);
//! - `propose` ([`propose()`], [`rank`], [`overlay`], [`validate`]): candidate overlays from a
//!   diagnosis, each explained by its evidence;
//! - `budget` ([`Allowance`], [`Share`]): the budget's shares per phase;
//! - [`finalist`]: which raced candidates go on to be confirmed, combined when they touch
//!   different tools;
//! - [`author`]: `--author`'s request and the candidate taken from its answer.
//!
//! Modules are private and the names other crates use are re-exported here; the result types
//! (`Candidate`, `Diagnosis`, `Split`…) are `toolscore_summary::tune`'s.
//!
//! The race and the confirmation are sequential paired comparisons
//! (`decide::race`, `decide::compare::sequential`); `cli/tune.rs` runs the phases.

pub mod author;
mod budget;
mod diagnose;
mod propose;
mod split;

pub use budget::{Allowance, Share};
pub use diagnose::Tally;
pub use propose::{
    overlay as candidate_overlay, propose, rank as rank_candidates, validate as validate_overlay,
};
pub use split::{SplitCase, add_scenarios, split};

use std::collections::BTreeSet;

use propose::Candidate;
use toolscore_summary::ComparisonVerdict;

/// The held-out confirmation's test, as tune's flags set it.
#[derive(Debug, Clone, Copy)]
pub struct ConfirmationTest {
    /// `--max-rounds`: the most rounds of every held-out unit.
    pub max_rounds: u32,
    /// `--min-effect`: the difference "no difference" rules out.
    pub min_effect: f64,
    /// `--confidence`, two-sided.
    pub confidence: f64,
}

/// Whether the held-out set can confirm "no difference" at `min_effect` within `max_rounds`
/// when a share `disagreement` of pairs disagree (0: every pair agrees, a floor no held-out set
/// can beat, known before anything is spent; after the baseline, its own disagreement rate):
/// `None` when `holdout_units` × `max_rounds` pairs reach what the test needs
/// ([`toolscore_stats::PairedBetting::pairs_to_rule_out`]), else what it lacks and what would.
pub fn confirmation_plan(
    holdout_units: u64,
    ConfirmationTest {
        max_rounds,
        min_effect,
        confidence,
    }: ConfirmationTest,
    disagreement: f64,
) -> Option<toolscore_summary::tune::ConfirmationPlan> {
    let test = toolscore_stats::PairedBetting::new(1.0 - confidence)?;
    let needed = test.pairs_to_rule_out(min_effect, disagreement);
    let pairs = holdout_units * u64::from(max_rounds);
    if needed.is_some_and(|f| pairs >= f) {
        return None;
    }
    Some(toolscore_summary::tune::ConfirmationPlan {
        holdout_units,
        max_rounds,
        min_effect,
        disagreement,
        pairs_needed: needed,
    })
}

/// The candidates to confirm: every one the race found better on the training cases, the
/// largest training effect first, each combined with those before it when it touches other
/// tools. When none was found better, the one with the largest positive training effect that
/// was not found worse or equivalent, alone. `results[i]` is candidate i's race verdict and
/// estimate (B − A).
pub fn finalist(candidates: &[Candidate], results: &[(ComparisonVerdict, f64)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by(|&a, &b| results[b].1.total_cmp(&results[a].1).then(a.cmp(&b)));
    let mut chosen = Vec::new();
    let mut taken = BTreeSet::new();
    for &i in &order {
        if results[i].0 == ComparisonVerdict::Better && propose::disjoint(&candidates[i], &taken) {
            taken.extend(candidates[i].tools.iter().cloned());
            chosen.push(i);
        }
    }
    if chosen.is_empty()
        && let Some(&i) = order
            .iter()
            .find(|&&i| results[i].0 == ComparisonVerdict::Inconclusive && results[i].1 > 0.0)
    {
        chosen.push(i);
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use propose::Operator;

    fn cand(id: &str, tools: &[&str]) -> Candidate {
        Candidate {
            id: id.into(),
            operator: Operator::Format,
            tools: tools.iter().map(|t| (*t).to_owned()).collect(),
            edits: Vec::new(),
            weight: 1,
            evidence: Vec::new(),
        }
    }

    #[test]
    fn better_candidates_combine_on_disjoint_tools_largest_effect_first() {
        use ComparisonVerdict::*;
        let c = [
            cand("a", &["x", "y"]),
            cand("b", &["y"]),
            cand("c", &["z"]),
            cand("d", &["w"]),
        ];
        let r = [(Better, 0.2), (Better, 0.3), (Better, 0.1), (Worse, 0.5)];
        // b (0.3) first; a shares y with it; c touches z.
        assert_eq!(finalist(&c, &r), vec![1, 2]);
        // None better: the leading undecided one, never an equivalent or worse one.
        let r = [
            (Inconclusive, 0.1),
            (Equivalent, 0.3),
            (Inconclusive, 0.2),
            (Worse, 0.5),
        ];
        assert_eq!(finalist(&c, &r), vec![2]);
        let r = [
            (Inconclusive, -0.1),
            (Equivalent, 0.3),
            (Inconclusive, 0.0),
            (Worse, 0.5),
        ];
        assert!(finalist(&c, &r).is_empty());
    }
}
