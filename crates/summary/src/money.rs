//! Dollars in the one form every report, plan and verdict quotes them, and what `--max-cost`
//! stopped: the text a model type's own sentence (`BudgetReport::stop_text`, a decision's
//! budget ground) shares with the renderers.

/// Dollars to the cent from $1 up, else to three significant digits (`$12.35`, `$0.0139`,
/// `$0.00231`): a small run's cost must not round to $0.00.
pub fn format_usd(usd: f64) -> String {
    if usd >= 1.0 || usd <= 0.0 || !usd.is_finite() {
        return format!("${usd:.2}");
    }
    let decimals = (2 - usd.log10().floor() as i32).clamp(2, 12) as usize;
    format!("${usd:.decimals$}")
}

/// What `--max-cost` stopped, and whether spend passed it (`cap` is `None` for merged shards,
/// each of which had its own).
pub(crate) fn budget_stop_text(
    not_run: u64,
    stopped: u64,
    cap: Option<f64>,
    spent: Option<f64>,
) -> String {
    let spent_text = spent.map_or("unknown".to_owned(), format_usd);
    let cap_text = match (cap, spent) {
        (Some(cap), Some(spent)) if spent > cap => format!(
            "--max-cost {} PASSED by {} ({spent_text} spent: a provider billed beyond the worst case of its requests in flight)",
            format_usd(cap),
            format_usd(spent - cap)
        ),
        // Spend under the cap: what stopped the run is that the next trials' worst case did
        // not fit in what was left (a trial starts only when it fits), not that it was spent.
        (Some(cap), _) => format!(
            "--max-cost {}: the next trials' worst case did not fit in what was left ({spent_text} spent)",
            format_usd(cap)
        ),
        (None, _) => format!(
            "each shard's --max-cost: the next trials' worst case did not fit in what was left ({spent_text} spent)"
        ),
    };
    let were = |n: u64| if n == 1 { "was" } else { "were" };
    let not_run_text = format!(
        "{not_run} planned trial{} {} not run",
        if not_run == 1 { "" } else { "s" },
        were(not_run)
    );
    let trials = match stopped {
        0 => not_run_text,
        _ => format!(
            "{not_run_text} and {stopped} {} stopped between two steps",
            were(stopped)
        ),
    };
    format!("{cap_text}; {trials} (counted apart, not as failures or infrastructure errors)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_stop_under_the_cap_says_the_next_trials_did_not_fit_in_the_right_number() {
        let under = budget_stop_text(1, 1, Some(5.0), Some(4.0));
        assert!(
            under.starts_with(
                "--max-cost $5.00: the next trials' worst case did not fit in what was left ($4.00 spent); 1 planned trial was not run and 1 was stopped between two steps"
            ),
            "{under}"
        );
        let over = budget_stop_text(40, 0, Some(5.0), Some(5.5));
        assert!(over.contains("PASSED by $0.50"), "{over}");
        assert!(
            over.contains("; 40 planned trials were not run ("),
            "{over}"
        );
    }
}
