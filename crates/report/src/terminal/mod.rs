//! Plain-text report for a terminal or a log. Writes to any `Write`, so tests compare strings.

use std::io::{self, Write};

use toolscore_core::metric::{Metric, PerMetric};

mod explain;
mod gate;
pub use explain::render_explanation;
use gate::write_gate;

use super::wording::{
    WORST_CASES_SHOWN, case_verdict_notes, describe_cost, format_percentile, format_rate,
    shows_cost, warning_text,
};
use super::{
    ArmInfo, ArmSummary, GateLevel, GateReport, GateResult, RateStat, SequentialInfo, Summary,
    Verdict, Warning,
};
use toolscore_summary::format_usd;

fn format_case_level(r: &RateStat) -> String {
    match &r.case_level {
        Some(c) => format!(
            "{:.3} [{:.3}, {:.3}] ({} cases)",
            c.mean, c.interval.lo, c.interval.hi, c.cases
        ),
        None if r.n == 0 => "n/a (no scored trials)".to_owned(),
        None => "n/a (fewer than 2 cases with data)".to_owned(),
    }
}

fn metric_rows(m: &PerMetric<RateStat>) -> impl Iterator<Item = (&'static str, &RateStat)> {
    m.iter().map(|(metric, rate)| (metric.label(), rate))
}

/// The run's cost and budget lines, under the arms.
fn write_cost(s: &Summary, w: &mut dyn Write) -> io::Result<()> {
    if !shows_cost(s) {
        return Ok(());
    }
    let c = &s.cost.total;
    writeln!(
        w,
        "\ncost of the run: {} · tokens in {} (cache read {}, cache write {}) · out {}",
        describe_cost(c),
        c.input_tokens,
        c.cache_read_tokens,
        c.cache_write_tokens,
        c.output_tokens
    )?;
    if let Some(b) = &s.budget {
        let estimate = b.estimate_usd.map_or("unknown".to_owned(), format_usd);
        let cap = b.max_usd.map_or(String::new(), |m| {
            let passed = b.passed_by().map_or(String::new(), |by| {
                format!(" (PASSED by {})", format_usd(by))
            });
            format!(" · --max-cost {}{passed}", format_usd(m))
        });
        writeln!(
            w,
            "estimated before the run: {estimate} for {} trials{cap}",
            b.estimate_trials
        )?;
        if let Some(headline) = b.headline() {
            writeln!(w, "{headline}: {}", b.stop_text())?;
        }
    }
    Ok(())
}

/// The plain-text report on stdout. By default it leads with the decision (the gate's
/// verdict, else each arm's suite rates) and keeps to what a decision rests on: the rates,
/// latency, cost, infrastructure errors and warnings. `detail` adds everything else (per-tool
/// rates, the weakest and unstable cases, confusions, schema violations, argument failures,
/// latency by tool, tokens), with the verdict last, after the figures it rests on.
pub struct Terminal {
    pub detail: bool,
}

impl super::Render for Terminal {
    fn render(&self, s: &Summary, w: &mut dyn Write) -> io::Result<()> {
        if self.detail {
            render_detail(s, w)
        } else {
            render_brief(s, w)
        }
    }
}

/// The run's header: version and id, each arm's provenance, the datasets and scenarios, and
/// how many trials completed.
fn write_run_header(s: &Summary, w: &mut dyn Write) -> io::Result<()> {
    let r = &s.run;
    writeln!(w, "toolscore {} · run {}", r.toolscore_version, r.run_id)?;
    for arm in &r.arms {
        write_arm_header(arm, w)?;
    }
    for d in &r.datasets {
        writeln!(
            w,
            "dataset {} · {} cases · catalog {} ({})",
            d.name,
            d.cases,
            d.catalog_source,
            short_fp(&d.catalog_fingerprint)
        )?;
    }
    for sc in r.scenarios.iter().filter(|sc| sc.attack.is_none()) {
        writeln!(
            w,
            "scenario {} · max {} steps · catalog {} ({})",
            sc.name,
            sc.max_steps,
            sc.catalog_source,
            short_fp(&sc.catalog_fingerprint)
        )?;
    }
    // An attacked run's units are one line: each is a scenario above under one attack.
    let attacked: Vec<&str> = r
        .scenarios
        .iter()
        .filter_map(|sc| sc.attack.as_deref())
        .collect();
    if !attacked.is_empty() {
        let attacks: std::collections::BTreeSet<&str> = attacked.iter().copied().collect();
        writeln!(
            w,
            "attacks: {} × the scenarios with an injection point = {} units (SCENARIO@ATTACK)",
            attacks.len(),
            attacked.len()
        )?;
    }
    writeln!(
        w,
        "{} trials per case · {} of {} trials completed{}",
        r.trials_per_case,
        s.completed_trials,
        s.planned_trials,
        if s.interrupted { " (INTERRUPTED)" } else { "" }
    )?;
    Ok(())
}

/// The run's decision (`Summary::decision`): the verdict its exit code reports, then what
/// made it, one line each. Every command that decides a run leads with this block.
pub fn render_decision(d: &super::Decision, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w, "{}", d.headline())?;
    for line in d.ground_lines() {
        writeln!(w, "  {line}")?;
    }
    Ok(())
}

/// The decision block after a blank line, when the summary holds one.
fn write_decision(s: &Summary, w: &mut dyn Write) -> io::Result<()> {
    match &s.decision {
        Some(d) => {
            writeln!(w)?;
            render_decision(d, w)
        }
        None => Ok(()),
    }
}

/// The report that leads with the decision.
fn render_brief(s: &Summary, w: &mut dyn Write) -> io::Result<()> {
    write_run_header(s, w)?;
    write_decision(s, w)?;
    let several = s.arms.len() > 1;
    if let Some(gate) = &s.gate {
        write_gate(gate, several, w)?;
    }
    let conf = format!("{:.0}%", s.confidence * 100.0);
    for arm in &s.arms {
        if several {
            writeln!(w)?;
            write_arm_title(arm, w)?;
        }
        write_suite_rates(arm, &conf, w)?;
        writeln!(w)?;
        write_overall_latency(arm, &conf, w)?;
        write_cost_and_infrastructure(s, arm, w)?;
        let run_warnings: &[Warning] = if several { &[] } else { &s.warnings };
        let all: Vec<Warning> = run_warnings.iter().chain(&arm.warnings).cloned().collect();
        if !all.is_empty() {
            write_warnings(&all, w)?;
        }
    }
    if several && !s.warnings.is_empty() {
        write_warnings(&s.warnings, w)?;
    }
    if !s.provider_diffs.is_empty() {
        writeln!(w)?;
        super::providers::render_provider_diffs(s, w)?;
    }
    super::scenario::write_terminal(s, w)?;
    super::security::write_terminal(s, w)?;
    write_cost(s, w)
}

/// The line that opens an arm's part of a report of several arms.
fn write_arm_title(arm: &ArmSummary, w: &mut dyn Write) -> io::Result<()> {
    writeln!(
        w,
        "=== arm {} · model {} · variant {} ===",
        arm.arm.provider, arm.arm.model, arm.arm.variant
    )
}

/// The verdict alone, for a command whose report went to a file: the gate's block, or each
/// arm's suite rates when no gate was given.
pub fn render_verdict(s: &Summary, w: &mut dyn Write) -> io::Result<()> {
    if let Some(d) = &s.decision {
        render_decision(d, w)?;
    }
    let several = s.arms.len() > 1;
    if let Some(gate) = &s.gate {
        return write_gate(gate, several, w);
    }
    let conf = format!("{:.0}%", s.confidence * 100.0);
    for arm in &s.arms {
        if several {
            writeln!(w)?;
            write_arm_title(arm, w)?;
        }
        write_suite_rates(arm, &conf, w)?;
    }
    Ok(())
}

/// The whole report, the verdict last.
fn render_detail(s: &Summary, w: &mut dyn Write) -> io::Result<()> {
    write_run_header(s, w)?;
    write_decision(s, w)?;
    let several = s.arms.len() > 1;
    for arm in &s.arms {
        if several {
            writeln!(w)?;
            write_arm_title(arm, w)?;
        }
        let run_warnings: &[Warning] = if several { &[] } else { &s.warnings };
        render_arm(s, arm, run_warnings, w)?;
    }
    if several && !s.warnings.is_empty() {
        write_warnings(&s.warnings, w)?;
    }
    if !s.provider_diffs.is_empty() {
        writeln!(w)?;
        super::providers::render_provider_diffs(s, w)?;
    }
    super::scenario::write_terminal(s, w)?;
    super::security::write_terminal(s, w)?;
    write_cost(s, w)?;
    if let Some(gate) = &s.gate {
        write_gate(gate, several, w)?;
    }
    Ok(())
}

fn write_arm_header(arm: &ArmInfo, w: &mut dyn Write) -> io::Result<()> {
    let id = &arm.identity;
    match &arm.replay {
        Some(rp) => {
            writeln!(
                w,
                "REPLAY: no model was called. Responses replayed from {}",
                rp.cassette
            )?;
            writeln!(
                w,
                "        recorded {} from model `{}` at {}",
                rp.recorded_at, id.model, id.base_url
            )?;
            if let Some(note) = &rp.note {
                writeln!(w, "        {note}")?;
            }
            if rp.legacy_requests {
                writeln!(w, "        {}", super::LEGACY_REQUESTS)?;
            }
        }
        None => writeln!(
            w,
            "provider {} ({}) · model {} · {}",
            id.provider, id.provider_kind, id.model, id.base_url
        )?,
    }
    if arm.variant != toolscore_core::BASE_VARIANT {
        writeln!(w, "        catalog variant {}", arm.variant)?;
    }
    Ok(())
}

/// One arm's figures and warnings (with `extra` warnings listed first).
fn render_arm(s: &Summary, a: &ArmSummary, extra: &[Warning], w: &mut dyn Write) -> io::Result<()> {
    let conf = format!("{:.0}%", s.confidence * 100.0);
    write_suite_rates(a, &conf, w)?;
    write_tool_rates(a, &conf, w)?;
    write_weakest_cases(a, w)?;
    write_confusions(a, w)?;
    write_unstable_cases(a, &conf, w)?;
    write_schema_violations(a, w)?;
    write_arg_failures(a, &conf, w)?;
    write_latency(a, &conf, w)?;
    write_usage(s, a, w)?;
    let all: Vec<Warning> = extra.iter().chain(&a.warnings).cloned().collect();
    if !all.is_empty() {
        write_warnings(&all, w)?;
    }
    Ok(())
}

/// The suite sentence and each metric's rate, trial-level and case-level.
fn write_suite_rates(a: &ArmSummary, conf: &str, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w)?;
    writeln!(w, "suite: {}", super::wording::suite_sentence(a))?;
    writeln!(
        w,
        "  {:<13} {:<36} case-level mean, t interval",
        "metric",
        format!("rate [{conf} Wilson] (x/n)")
    )?;
    for (name, rate) in metric_rows(&a.suite.metrics) {
        writeln!(
            w,
            "  {:<13} {:<36} {}",
            name,
            format_rate(rate),
            format_case_level(rate)
        )?;
    }
    Ok(())
}

/// Selection, exact arguments and valid schema per expected tool.
fn write_tool_rates(a: &ArmSummary, conf: &str, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w)?;
    writeln!(w, "by expected tool ({conf} Wilson over trials):")?;
    let width = a
        .tools
        .iter()
        .map(|t| t.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    writeln!(
        w,
        "  {:<width$} {:>5}  {:<34} {:<34} {:<34}",
        "tool", "cases", "selection", "args exact", "schema valid"
    )?;
    for t in &a.tools {
        let m = &t.metrics;
        writeln!(
            w,
            "  {:<width$} {:>5}  {:<34} {:<34} {:<34}",
            t.name,
            t.cases,
            format_rate(&m[Metric::Selection]),
            format_rate(&m[Metric::ArgsExact]),
            format_rate(&m[Metric::SchemaValid])
        )?;
    }
    Ok(())
}

/// The cases with the lowest pass rates, each with its most frequent failures.
fn write_weakest_cases(a: &ArmSummary, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w)?;
    let worst = toolscore_summary::weakest_cases(a);
    writeln!(
        w,
        "weakest cases by pass rate ({} of {} shown; all in summary.json):",
        worst.len().min(WORST_CASES_SHOWN),
        a.cases.len()
    )?;
    for c in worst.iter().take(WORST_CASES_SHOWN) {
        writeln!(
            w,
            "  {:<34} pass {:<34} expected {}",
            c.case_id,
            format_rate(&c.metrics[Metric::Pass]),
            c.expected
        )?;
        let mut top: Vec<_> = c.failures.iter().collect();
        top.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        for (detail, n) in top.into_iter().take(3) {
            writeln!(w, "      {n:>5}× {detail}")?;
        }
    }
    Ok(())
}

/// Which tool was chosen instead of which, and each tool's precision and recall.
fn write_confusions(a: &ArmSummary, w: &mut dyn Write) -> io::Result<()> {
    let width = a
        .tools
        .iter()
        .map(|t| t.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut confused: Vec<_> = a
        .confusion
        .iter()
        .filter(|c| c.expected != c.chosen)
        .collect();
    if !confused.is_empty() {
        confused.sort_by(|x, y| {
            y.count
                .cmp(&x.count)
                .then_with(|| x.expected.cmp(&y.expected))
                .then_with(|| x.chosen.cmp(&y.chosen))
        });
        writeln!(w)?;
        writeln!(
            w,
            "most frequent confusions (expected → chosen; {} of {} pairs shown, all in summary.json):",
            confused.len().min(WORST_CASES_SHOWN),
            confused.len()
        )?;
        for c in confused.iter().take(WORST_CASES_SHOWN) {
            writeln!(w, "  {:>5}× {} → {}", c.count, c.expected, c.chosen)?;
        }
        writeln!(
            w,
            "  {:<width$} {:<34} {:<34}",
            "tool", "precision", "recall"
        )?;
        for t in &a.tool_accuracy {
            writeln!(
                w,
                "  {:<width$} {:<34} {:<34}",
                t.tool,
                format_rate(&t.precision),
                format_rate(&t.recall)
            )?;
        }
    }
    Ok(())
}

/// Cases right sometimes and wrong sometimes.
fn write_unstable_cases(a: &ArmSummary, conf: &str, w: &mut dyn Write) -> io::Result<()> {
    if !a.unstable_cases.is_empty() {
        writeln!(w)?;
        writeln!(
            w,
            "unstable cases ({conf} pass interval inside ({}, {}): right sometimes, wrong sometimes): {} of {}",
            toolscore_summary::UNSTABLE_BAND.0,
            toolscore_summary::UNSTABLE_BAND.1,
            a.unstable_cases.len(),
            a.cases.len()
        )?;
        for u in a.unstable_cases.iter().take(WORST_CASES_SHOWN) {
            writeln!(w, "  {:<34} pass {}", u.case_id, format_rate(&u.pass))?;
        }
        if a.unstable_cases.len() > WORST_CASES_SHOWN {
            writeln!(
                w,
                "  … {} more in summary.json",
                a.unstable_cases.len() - WORST_CASES_SHOWN
            )?;
        }
    }
    Ok(())
}

/// The most frequent ways produced arguments broke their schema.
fn write_schema_violations(a: &ArmSummary, w: &mut dyn Write) -> io::Result<()> {
    if !a.schema_violations.is_empty() {
        writeln!(w)?;
        writeln!(w, "schema violations in produced arguments:")?;
        let mut v: Vec<_> = a.schema_violations.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        for (k, n) in v.into_iter().take(10) {
            writeln!(w, "  {n:>5}× {k}")?;
        }
    }
    Ok(())
}

/// Latency percentiles with their intervals, overall and per expected tool.
fn write_latency(a: &ArmSummary, conf: &str, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w)?;
    write_overall_latency(a, conf, w)?;
    let p = format_percentile;
    if a.tool_latency.len() > 1 {
        // A chain's budget hides the one tool that regresses: each expected tool on its own.
        let width = a
            .tool_latency
            .iter()
            .take(WORST_CASES_SHOWN)
            .map(|t| t.tool.chars().count())
            .max()
            .unwrap_or(0);
        writeln!(w, "latency ms by expected tool:")?;
        for t in a.tool_latency.iter().take(WORST_CASES_SHOWN) {
            let l = &t.latency_ms;
            writeln!(
                w,
                "  {:<width$}  n={:<5} p50 {} · p95 {} · p99 {}",
                t.tool,
                l.n,
                p(&l.p50),
                p(&l.p95),
                p(&l.p99)
            )?;
        }
        if a.tool_latency.len() > WORST_CASES_SHOWN {
            writeln!(
                w,
                "  … {} more tools in summary.json (arms[].tool_latency)",
                a.tool_latency.len() - WORST_CASES_SHOWN
            )?;
        }
    }
    Ok(())
}

/// The arm's latency percentiles with their order-statistic intervals, on one line.
fn write_overall_latency(a: &ArmSummary, conf: &str, w: &mut dyn Write) -> io::Result<()> {
    let l = &a.latency_ms;
    let p = format_percentile;
    writeln!(
        w,
        "latency ms (n={}, nearest rank, {conf} order-statistic interval): p50 {} · p95 {} · p99 {}",
        l.n,
        p(&l.p50),
        p(&l.p95),
        p(&l.p99)
    )
}

/// Tokens, cost and infrastructure errors.
fn write_usage(s: &Summary, a: &ArmSummary, w: &mut dyn Write) -> io::Result<()> {
    let t = &a.tokens;
    let mean = |m: Option<f64>| m.map_or("n/a".to_owned(), |m| format!("{m:.1}"));
    writeln!(
        w,
        "tokens: input {} (mean {}) · output {} (mean {}) over {} trials reporting usage",
        t.input_total,
        mean(t.input_mean),
        t.output_total,
        mean(t.output_mean),
        t.trials_with_usage
    )?;
    write_cost_and_infrastructure(s, a, w)
}

/// The arm's cost (when priced) and its infrastructure errors by class, with retried trials.
fn write_cost_and_infrastructure(s: &Summary, a: &ArmSummary, w: &mut dyn Write) -> io::Result<()> {
    if shows_cost(s)
        && let Some(c) = s.cost.arms.iter().find(|c| c.arm == a.arm)
    {
        writeln!(
            w,
            "cost: {}{}",
            describe_cost(&c.figures),
            match c.price_sources.as_slice() {
                [] => String::new(),
                sources => format!(" at {}", sources.join("; ")),
            }
        )?;
    }
    let by_class: Vec<String> = a
        .infra
        .by_class
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    writeln!(
        w,
        "infrastructure: {} errors{} · retried trials {}",
        a.infra.errors,
        if by_class.is_empty() {
            String::new()
        } else {
            format!(" ({})", by_class.join(", "))
        },
        format_rate(&a.infra.retried)
    )?;
    Ok(())
}

/// Tools named per kind on one line of the taxonomy; the rest are in summary.json.
const TOOLS_PER_KIND_SHOWN: usize = 4;

/// The argument-failure taxonomy: each kind's share of the trials that chose the right tool,
/// with the tools that show it. Omitted when no such trial failed its arguments.
fn write_arg_failures(a: &ArmSummary, conf: &str, w: &mut dyn Write) -> io::Result<()> {
    let t = &a.arg_failures;
    if t.trials == 0 || (t.unclassified_trials == 0 && t.kinds.iter().all(|k| k.share.x == 0)) {
        return Ok(());
    }
    writeln!(w)?;
    if t.kinds.iter().all(|k| k.share.x == 0) {
        // Only unclassified failures: a table of zeros would read as "no argument failures".
        return writeln!(
            w,
            "argument failures by kind: {} failing right-tool trials carry no classification (scored by an older toolscore; re-run to classify them)",
            t.unclassified_trials
        );
    }
    writeln!(
        w,
        "argument failures by kind (share of the {} trials that chose the right tool, {conf} Wilson; a trial counts once per kind):",
        t.trials
    )?;
    for k in &t.kinds {
        let mut tools: Vec<(&str, u64, u64)> = t
            .by_tool
            .iter()
            .filter_map(|bt| {
                bt.kinds
                    .iter()
                    .find(|s| s.kind == k.kind && s.share.x > 0)
                    .map(|s| (bt.tool.as_str(), s.share.x, s.share.n))
            })
            .collect();
        tools.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        let mut named: Vec<String> = tools
            .iter()
            .take(TOOLS_PER_KIND_SHOWN)
            .map(|(tool, x, n)| format!("{tool} {x}/{n}"))
            .collect();
        if tools.len() > TOOLS_PER_KIND_SHOWN {
            named.push(format!("… {} more", tools.len() - TOOLS_PER_KIND_SHOWN));
        }
        let line = format!(
            "  {:<17} {:<34} {}",
            k.kind.as_str(),
            format_rate(&k.share),
            named.join(" · ")
        );
        writeln!(w, "{}", line.trim_end())?;
    }
    if t.unclassified_trials > 0 {
        writeln!(
            w,
            "  {} failing trials carry no classification (scored by an older toolscore); they are in no count",
            t.unclassified_trials
        )?;
    }
    Ok(())
}

fn write_warnings(warnings: &[Warning], w: &mut dyn Write) -> io::Result<()> {
    writeln!(w)?;
    writeln!(w, "warnings:")?;
    for warning in warnings {
        writeln!(w, "  - {}", warning_text(warning))?;
    }
    Ok(())
}

fn short_fp(fp: &str) -> &str {
    fp.get(..19).unwrap_or(fp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_keep_three_significant_digits_below_one() {
        assert_eq!(format_usd(12.345), "$12.35");
        assert_eq!(format_usd(0.013860), "$0.0139");
        assert_eq!(format_usd(0.00231), "$0.00231");
        assert_eq!(format_usd(0.1), "$0.100");
        assert_eq!(format_usd(0.0), "$0.00");
    }
    use toolscore_core::RunTotals;
    use toolscore_core::{ErrorClass, Outcome, TrialRecord};
    use toolscore_summary::{Aggregator, RunInfo};

    fn error_record(case: usize) -> TrialRecord {
        let mut r = TrialRecord::for_test(&format!("c{case}"), Outcome::Error, 5.0);
        r.error_class = Some(ErrorClass::Timeout);
        r.error = Some("timeout".into());
        r
    }

    #[test]
    fn a_suite_with_cases_but_no_scored_trials_says_so() {
        let mut agg = Aggregator::new();
        for case in 0..5 {
            agg.add(&error_record(case));
        }
        let run = RunInfo::for_test(1);
        let totals = RunTotals::all_completed(5);
        let s = agg.finish(run, &totals, 0.95, 0.05);
        assert_eq!(s.arms[0].suite.cases, 5);
        let mut out = Vec::new();
        crate::Render::render(&Terminal { detail: false }, &s, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains(
                "selection     n/a (0/0)                            n/a (no scored trials)"
            ),
            "{text}"
        );
        assert!(!text.contains("fewer than 2 cases"), "{text}");
    }
}
