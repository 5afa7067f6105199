//! The cost estimate printed before the first request, and the budget line of the summary.

use toolscore_core::thousands;
use toolscore_runner::budget::Estimate;
use toolscore_summary::{BudgetReport, CostFigures, format_usd};

/// The estimate as printed on stderr: the run's total, then each arm's share and what its
/// output figure assumes.
pub(super) fn describe_estimate(e: &Estimate) -> String {
    let total = match e.usd {
        Some(usd) => format_usd(usd),
        None => "unknown (an arm has no price)".to_owned(),
    };
    let mut out = format!(
        "estimated cost before the first request: {total} for {} trials, about {} input and {} output tokens (input: each catalog's token footprint and each case's messages at 4 characters a token)",
        e.trials,
        thousands(e.input_tokens),
        thousands(e.output_tokens),
    );
    for a in &e.arms {
        let output = if a.output_is_max_tokens {
            format!(
                "output at its max_tokens, {} per request",
                a.output_per_request
            )
        } else {
            format!(
                "output assumed {} tokens per request (set max_tokens for a bound)",
                a.output_per_request
            )
        };
        let cost = match (a.usd, &a.price_source) {
            (Some(usd), Some(source)) => format!("{} at {source}", format_usd(usd)),
            _ => format!(
                "cost unknown: no price for {} (give one under `prices:` in toolscore.yaml)",
                a.model
            ),
        };
        out.push_str(&format!(
            "\n  {}: {} trials, {cost}; {output}",
            a.arm, a.trials
        ));
    }
    out
}

/// The summary's budget record: the estimate, the cap, what it left unstarted or stopped
/// between steps (counted from the records, in `cost`), and what was spent.
pub(super) fn budget_report(
    e: &Estimate,
    max_usd: Option<f64>,
    not_run: u64,
    cost: &CostFigures,
) -> BudgetReport {
    let stopped = cost.budget_stopped_trials;
    BudgetReport {
        max_usd,
        estimate_usd: e.usd,
        estimate_trials: e.trials,
        not_run,
        stopped,
        spent_usd: cost.usd,
        cut_short: not_run + stopped > 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolscore_runner::budget::ArmEstimate;

    #[test]
    fn the_estimate_names_each_arm_its_price_and_an_unknown_cost() {
        let e = Estimate {
            per_trial: Vec::new(),
            arms: vec![
                ArmEstimate {
                    arm: "claude (base)".into(),
                    model: "anthropic:claude-sonnet-4-5".into(),
                    trials: 10,
                    usd: Some(0.0375),
                    price_source: Some("price table 2026-12-03 (x)".into()),
                    output_per_request: 128,
                    output_is_max_tokens: true,
                },
                ArmEstimate {
                    arm: "local (base)".into(),
                    model: "openai-compat:smollm2".into(),
                    trials: 10,
                    usd: None,
                    price_source: None,
                    output_per_request: 512,
                    output_is_max_tokens: false,
                },
            ],
            trials: 20,
            input_tokens: 12_345,
            output_tokens: 6_400,
            usd: None,
        };
        let text = describe_estimate(&e);
        assert!(
            text.contains("unknown (an arm has no price) for 20 trials"),
            "{text}"
        );
        assert!(
            text.contains("about 12,345 input and 6,400 output tokens"),
            "{text}"
        );
        assert!(
            text.contains("claude (base): 10 trials, $0.0375 at price table 2026-12-03 (x); output at its max_tokens, 128 per request"),
            "{text}"
        );
        assert!(
            text.contains("no price for openai-compat:smollm2"),
            "{text}"
        );
        let b = budget_report(&e, Some(1.0), 3, &CostFigures::default());
        assert!(b.cut_short && b.not_run == 3 && b.estimate_usd.is_none());
    }
}
