//! The folded "what the model did" block under an arm's weakest cases: for each case the
//! report explains (`behaviour::cases_to_explain`), its most frequent behaviours with their
//! share and one example, every string escaped and cut so a hostile fixture or model answer
//! cannot break the page or eat the comment's budget.

use super::escape;
use crate::ArmSummary;
use crate::wording::format_rate;
use toolscore_summary::behaviour::{CaseBehaviours, Example};

/// Behaviours listed per case (the rest counted; `toolscore explain` lists up to
/// [`MAX_BEHAVIOURS`](toolscore_summary::behaviour::MAX_BEHAVIOURS)).
const BEHAVIOURS_SHOWN: usize = 3;

/// One folded block per explained case of arm `a`.
pub(super) fn write_behaviours(a: &ArmSummary, explained: &[CaseBehaviours], doc: &mut String) {
    for b in explained.iter().filter(|b| b.arm == a.arm) {
        doc.push_str(&format!(
            "\n<details><summary>What the model did in {}: pass {}</summary>\n\n",
            escape(&b.case_id),
            format_rate(&b.pass)
        ));
        doc.push_str("| behaviour | share | example (its first trial) |\n|---|---|---|\n");
        for g in b.behaviours.iter().take(BEHAVIOURS_SHOWN) {
            doc.push_str(&format!(
                "| {} · {} | {} | trial {}: {} |\n",
                escape(&g.calls),
                if g.passed { "pass" } else { "fail" },
                format_rate(&g.share),
                g.example.trial_index,
                escape(&example_line(&g.example))
            ));
        }
        let listed: u64 = b
            .behaviours
            .iter()
            .take(BEHAVIOURS_SHOWN)
            .map(|g| g.share.x)
            .sum();
        let others = b.behaviours.len().saturating_sub(BEHAVIOURS_SHOWN) as u64
            + b.not_listed.as_ref().map_or(0, |n| n.behaviours);
        if others > 0 {
            doc.push_str(&format!(
                "\n… and {others} more behaviours in {} trials: {}\n",
                b.scored - listed,
                super::code_span(&toolscore_core::command([
                    "toolscore",
                    "explain",
                    "RUN_DIR",
                    &b.case_id
                ]))
            ));
        }
        let errors: u64 = b.errors.iter().map(|e| e.trials).sum();
        if errors > 0 {
            doc.push_str(&format!("\n{errors} infrastructure errors, not scored\n"));
        }
        doc.push_str("\n</details>\n");
    }
}

/// The example on one line: each call as `tool {arguments}`, then any text.
fn example_line(e: &Example) -> String {
    let mut parts: Vec<String> = Vec::new();
    for turn in &e.turns {
        for c in &turn.calls {
            parts.push(format!("{} {}", c.tool, c.arguments));
        }
        if let Some(text) = &turn.text {
            parts.push(format!("\"{}\"", text.trim()));
        }
    }
    if parts.is_empty() {
        "(no call, no text)".to_owned()
    } else {
        parts.join("; ")
    }
}
