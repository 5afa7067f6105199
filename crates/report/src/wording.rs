//! The words every report says the same way: a rate with its interval and count, a
//! percentile with its order-statistic interval, dollars, the cost line, the suite sentence
//! and each warning.
//! The terminal, report.md, report.html and the scenario and stress reports take them from
//! here, so a change of wording is made once (verdict labels live beside the verdicts, in
//! `verdict.rs` and `comparison.rs`).

use super::{Metric, RateStat, Summary, Warning};
use toolscore_summary::format_usd;

/// How many of the worst cases the terminal report lists (all are in summary.json).
pub(crate) const WORST_CASES_SHOWN: usize = 10;

/// What an arm's suite counts: `12 cases, 480 trials scored, 2 infrastructure errors (not
/// scored)`.
pub(crate) fn suite_sentence(a: &super::ArmSummary) -> String {
    format!(
        "{} cases, {} trials scored, {} infrastructure errors (not scored)",
        a.suite.cases, a.suite.scored_trials, a.infra.errors
    )
}

/// `0.853 [0.838, 0.867] (1877/2200)`, or `n/a (0/0)` when nothing was measured.
pub(crate) fn format_rate(r: &RateStat) -> String {
    match (r.rate, r.interval) {
        (Some(p), Some(iv)) => format!("{p:.3} [{:.3}, {:.3}] ({}/{})", iv.lo, iv.hi, r.x, r.n),
        _ => format!("n/a ({}/{})", r.x, r.n),
    }
}

/// `812.0 [640.5, 990.1]`: a nearest-rank percentile in ms with its order-statistic interval;
/// an end the data cannot bound is `unbounded`.
pub(crate) fn format_percentile(x: &Option<super::Percentile>) -> String {
    let end = |v: Option<f64>| v.map_or("unbounded".to_owned(), |v| format!("{v:.1}"));
    match x {
        Some(p) => format!("{:.1} [{}, {}]", p.value, end(p.lo), end(p.hi)),
        None => "n/a".to_owned(),
    }
}

/// Renders the whole summary: the run header, then each arm's figures. With one arm the run's
/// warnings and the arm's are listed together under the arm.
/// Whether the run says anything about cost: some trial was priced, or a budget was set. A
/// run with no price anywhere prints no cost lines (summary.json still says `usd: null`).
pub(crate) fn shows_cost(s: &Summary) -> bool {
    s.cost.total.priced_trials > 0 || s.budget.is_some()
}

/// `$0.0375 over 10 trials ($0.00375 per trial)`, or why it is unknown or partial.
pub(crate) fn describe_cost(c: &super::CostFigures) -> String {
    let (trials, priced) = (c.trials, c.priced_trials);
    match c.usd {
        None => format!("unknown for {trials} trials (no price, or no usage reported)"),
        Some(usd) if priced == trials => format!(
            "{} over {trials} trials ({} per trial)",
            format_usd(usd),
            format_usd(usd / priced.max(1) as f64)
        ),
        Some(usd) => format!(
            "at least {} ({priced} of {trials} trials priced; the rest unknown)",
            format_usd(usd)
        ),
    }
}

/// A warning in the terminal's words.
pub(crate) fn warning_text(warning: &Warning) -> String {
    let pct = |c: f64| format!("{:.0}%", c * 100.0);
    match warning {
        Warning::RunInterrupted { completed, planned } => format!(
            "run interrupted: {completed} of {planned} planned trials completed; the figures cover only those"
        ),
        Warning::TrialsUnaccounted {
            missing,
            planned,
            reasons,
        } => format!(
            "{missing} of {planned} planned trials were neither run nor skipped{}; the figures cover only those that completed",
            if reasons.is_empty() {
                String::new()
            } else {
                format!(" ({})", reasons.join("; "))
            }
        ),
        Warning::TrialsAfterDecision { trials } => format!(
            "{trials} trial(s) were in flight when a sequential test decided their case: kept in results.jsonl (after_decision), their cost counted, no rate counting them"
        ),
        Warning::BilledBeyondWorstCase { arm, trials, usd } => format!(
            "provider `{}` ({}, {}) billed {} beyond the worst case of {trials} trials' requests (every byte of a body an input token, the whole output bound): usage no request of that size can produce, which --max-cost cannot bound; check what it reports as usage",
            arm.provider,
            arm.model,
            arm.variant,
            format_usd(*usd)
        ),
        Warning::InfraErrors { errors } => format!(
            "{errors} trials ended in infrastructure errors; they are counted apart and not scored"
        ),
        Warning::FewCases { cases, min_cases } => format!(
            "only {cases} cases back the suite-level rates; case-level intervals need at least {min_cases} cases to be reliable, so treat suite figures as indicative"
        ),
        Warning::CasesImprecise {
            metric,
            wide_cases,
            cases_with_data,
            confidence,
            precision: e,
            trials_per_case_needed,
        } => format!(
            "{}: {wide_cases} of {cases_with_data} cases have a {} interval wider than ±{e}; about {trials_per_case_needed} trials per case would reach ±{e} at the observed rates{}",
            metric.label(),
            pct(*confidence),
            if *metric == Metric::SchemaValid {
                " and call rates (schema validity counts only trials that make a call)"
            } else {
                ""
            }
        ),
        Warning::SuiteImprecise {
            metric,
            half_width,
            clipped,
            precision: e,
            cases_needed,
        } => format!(
            "{}: the suite's case-level interval is ±{half_width:.3}{}, wider than ±{e}; between-case spread dominates, so about {cases_needed} cases (not more trials) would be needed",
            metric.label(),
            if *clipped {
                " (before clipping to [0, 1])"
            } else {
                ""
            }
        ),
        Warning::SettingNotSent {
            provider,
            model,
            field,
            configured,
            reason,
        } => format!(
            "provider `{provider}`, model {model}: `{field}` {} was configured but not sent: the model refuses it, so it ran at the provider's default ({reason})",
            match configured {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            }
        ),
        Warning::LatencyP99Unbounded {
            answered,
            min_answered,
            confidence,
        } => format!(
            "latency p99 has no upper confidence bound with {answered} answered trials (needs at least {min_answered} at {})",
            pct(*confidence)
        ),
    }
}

/// What a gated case's verdict line adds: its own bar when its fixture sets one, and the trials
/// an inconclusive case would need. `gate_threshold` is the gate's bar.
pub(crate) fn case_verdict_notes(c: &super::CaseVerdict, gate_threshold: f64) -> Vec<String> {
    let mut notes = Vec::new();
    if c.threshold > 0.0 && c.threshold != gate_threshold {
        notes.push(format!("its own bar {}", c.threshold));
    }
    if let Some(m) = c.more_trials {
        notes.push(format!("~{m} more trials"));
    }
    notes
}

/// A history point's score: `0.361 [0.258, 0.469] (61 cases)`, the mean alone when there is
/// no interval (a single case), `–` when nothing was scored.
pub(crate) fn history_score(p: &super::history::MetricPoint) -> String {
    let mean = history_interval(p);
    match p.cases {
        1 => format!("{mean} (1 case)"),
        n => format!("{mean} ({n} cases)"),
    }
}

/// A history point's mean and interval, `0.361 [0.258, 0.469]`; the mean alone when there is
/// no interval, `–` when nothing was scored.
pub(crate) fn history_interval(p: &super::history::MetricPoint) -> String {
    match (p.mean, p.lo, p.hi) {
        (Some(m), Some(lo), Some(hi)) => format!("{m:.3} [{lo:.3}, {hi:.3}]"),
        (Some(m), _, _) => format!("{m:.3}"),
        _ => "–".to_owned(),
    }
}

/// A run's change against the previous one: `−0.300 [−0.350, −0.250] on 61 cases` (or units,
/// for attack success), or why there is no difference to give.
pub(crate) fn history_change(
    c: &super::history::overview::ChangeView,
    followed: super::history::Followed,
) -> String {
    let units = followed.cases_word();
    match &c.difference {
        Some(d) => format!(
            "{:+.3} [{:+.3}, {:+.3}] on {} {units}",
            d.mean, d.interval.lo, d.interval.hi, c.cases
        ),
        None => format!("too few shared {units} ({})", c.cases),
    }
}

/// The words of a move, as the terminal prints them, in capitals when it is the worse way for
/// the rate (`SIGNIFICANT DROP`, or `SIGNIFICANT RISE` of attack success), in lower case when it
/// is the better way; nothing when the interval holds 0; then the marks of a catalog or design
/// change.
pub(crate) fn history_marks(
    moved: super::history::Move,
    worsened: bool,
    catalog_changed: bool,
    sampling_changed: bool,
) -> Vec<&'static str> {
    use super::history::Move;
    let mut marks = Vec::new();
    match (moved, worsened) {
        (Move::Drop, true) => marks.push("SIGNIFICANT DROP"),
        (Move::Drop, false) => marks.push("significant drop"),
        (Move::Rise, true) => marks.push("SIGNIFICANT RISE"),
        (Move::Rise, false) => marks.push("significant rise"),
        (Move::None, _) => {}
    }
    if catalog_changed {
        marks.push("catalog changed: the difference spans two catalogs");
    }
    if sampling_changed {
        marks.push("sampled differently");
    }
    marks
}

/// What every history page says under its summary: a run's verdict and its move in the trend
/// answer two different questions, so a PASS beside a drop is no contradiction.
pub(crate) fn history_two_questions(followed: super::history::Followed) -> String {
    let worse = followed.worse().word();
    format!(
        "Two questions: a run's verdict answers its own gates (did it clear the bar it was given?); the trend answers whether it moved against the run before (paired by {}, flagged only when the interval excludes 0). A run can PASS its gates and still {worse}.",
        followed.case_word()
    )
}

/// The sentence every history page leads with: which series moved the worse way in their
/// newest run (dropped; for attack success, rose), the one thing `history --fail-on-drop`
/// exits 1 on.
pub(crate) fn history_headline(o: &super::history::overview::Overview) -> String {
    let n = o.series.len();
    let worse = o.followed.worse();
    let (word, verb) = (worse.word(), worse.past());
    if o.any_worsened() {
        format!(
            "{}: {} of {n} series {verb} significantly in their newest run (`toolscore history --fail-on-drop` exits 1)",
            word.to_uppercase(),
            o.worsened
        )
    } else {
        format!("No {word}: none of {n} series {verb} significantly in its newest run")
    }
}
