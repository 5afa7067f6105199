//! Markdown report (`report.md`) for a pull-request comment or `$GITHUB_STEP_SUMMARY`.
//!
//! Like the terminal report it only formats numbers the [`Summary`] holds. Two constraints
//! shape it: GitHub rejects a comment over 65,536 characters, so every list is cut with an
//! explicit count and the whole document is capped at [`MAX_CHARS`]; and case ids, tool names
//! and failure details come from catalogs, fixtures and models, so every such string goes
//! through [`escape`] before it reaches a table cell (a `|` would break the table, a
//! `<script>` or `<details>` would be HTML on the page).

use std::io::{self, Write};

use toolscore_core::metric::Metric;

use super::wording::{WORST_CASES_SHOWN, format_percentile, format_rate, warning_text};
use super::{
    ArmSummary, CaseSummary, Comparison, GateReport, GateResult, GroupComparison, RateStat,
    Summary, Warning,
};

/// The most characters the document may have: below GitHub's 65,536-character limit for a
/// comment, with room for a caller's own heading.
pub const MAX_CHARS: usize = 65_000;

/// Rows of any one list (cases, tools, gate details, changed cases) before it is cut.
const ROWS_SHOWN: usize = 10;

/// Tools in the per-tool tables before they are cut.
const TOOLS_SHOWN: usize = 30;

/// Characters of one user-supplied string (a case id, a failure detail) before it is cut:
/// one hostile fixture must not eat the document's budget.
const STRING_CHARS: usize = 120;

mod behaviours;
mod history;

pub use history::render_history_markdown;

/// `report.md`: GitHub-flavoured Markdown, at most [`MAX_CHARS`] characters.
#[derive(Default)]
pub struct Markdown {
    /// The behaviours of the cases the report explains (`behaviour::cases_to_explain`), read
    /// from results.jsonl by the caller: each is a folded block under its arm's weakest cases.
    pub explained: Vec<toolscore_summary::behaviour::CaseBehaviours>,
}

impl super::Render for Markdown {
    fn render(&self, s: &Summary, w: &mut dyn Write) -> io::Result<()> {
        let mut doc = String::new();
        write_document(s, &self.explained, &mut doc);
        w.write_all(cap_document(doc, "every figure is in summary.json").as_bytes())
    }
}

/// Cuts a document over [`MAX_CHARS`] at a line boundary and says so: the lists are already
/// cut, so this only bites with very many arms or gates, and never silently.
fn cap_document(doc: String, where_all: &str) -> String {
    if doc.chars().count() <= MAX_CHARS {
        return doc;
    }
    let notice =
        format!("\n\n… the report is cut here to stay under GitHub's comment limit; {where_all}\n");
    let budget = MAX_CHARS - notice.chars().count();
    let cut = doc.char_indices().nth(budget).map_or(doc.len(), |(i, _)| i);
    let head = &doc[..cut];
    let end = head.rfind('\n').unwrap_or(0);
    format!("{}{notice}", &head[..end])
}

/// Escapes a string from a catalog, fixture or model for a Markdown table cell or inline
/// text: HTML metacharacters become entities, Markdown punctuation is backslash-escaped, a
/// backtick becomes an entity (a backslash does not escape it inside code spans), line breaks
/// become spaces (a newline ends a table row), and anything longer than [`STRING_CHARS`] is
/// cut with `…`.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, c) in text.chars().enumerate() {
        if i == STRING_CHARS {
            out.push('…');
            break;
        }
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '`' => out.push_str("&#96;"),
            '\n' | '\r' | '\t' => out.push(' '),
            '|' | '\\' | '*' | '_' | '[' | ']' | '~' | '#' | '!' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// `text` as a Markdown code span, shown as written (a command to paste): fenced by one more
/// backtick than its longest run of backticks, padded with a space when it starts or ends
/// with one, with line breaks as spaces.
pub(crate) fn code_span(text: &str) -> String {
    let text = text.replace(['\n', '\r'], " ");
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// `… and 120 more cases in summary.json`, when a list was cut.
fn more(doc: &mut String, total: usize, shown: usize, what: &str) {
    if total > shown {
        doc.push_str(&format!(
            "\n… and {} more {what} in summary.json\n",
            total - shown
        ));
    }
}

fn pct(c: f64) -> String {
    format!("{:.0}%", c * 100.0)
}

fn write_document(
    s: &Summary,
    explained: &[toolscore_summary::behaviour::CaseBehaviours],
    doc: &mut String,
) {
    let r = &s.run;
    doc.push_str(&format!(
        "# toolscore report · run {}\n\n",
        escape(&r.run_id)
    ));
    doc.push_str(&format!(
        "toolscore {} · {} trials per case · {} of {} trials completed{} · {} intervals\n",
        escape(&r.toolscore_version),
        r.trials_per_case,
        s.completed_trials,
        s.planned_trials,
        if s.interrupted {
            " (**interrupted**)"
        } else {
            ""
        },
        pct(s.confidence)
    ));
    for d in &r.datasets {
        doc.push_str(&format!(
            "\ndataset {} · {} cases · catalog {} ({})",
            escape(&d.name),
            d.cases,
            escape(&d.catalog_source),
            escape(
                d.catalog_fingerprint
                    .get(..19)
                    .unwrap_or(&d.catalog_fingerprint)
            )
        ));
    }
    doc.push('\n');
    for arm in &r.arms {
        if let Some(rp) = &arm.replay {
            doc.push_str(&format!(
                "\nReplay: no model was called; responses of model {} recorded {} replayed from {}\n",
                escape(&arm.identity.model),
                escape(&rp.recorded_at),
                escape(&rp.cassette)
            ));
            if rp.legacy_requests {
                doc.push_str(&format!("({})\n", escape(super::LEGACY_REQUESTS)));
            }
        }
    }
    if let Some(d) = &s.decision {
        write_decision(d, doc);
    }
    if let Some(g) = &s.gate {
        write_gate(g, doc);
    }
    for arm in &s.arms {
        write_arm(s, arm, explained, doc);
    }
    if let Some(c) = &s.comparison {
        write_comparison(c, doc);
    }
    for d in &s.provider_diffs {
        write_provider_diff(s, d, doc);
    }
    for arm in &s.scenarios {
        write_scenarios(s, arm, doc);
    }
    for arm in &s.security {
        write_security(s, arm, doc);
    }
    if let Some(c) = &s.attack_comparison {
        write_attack_comparison(c, doc);
    }
    write_cost(s, doc);
    if !s.warnings.is_empty() {
        doc.push_str("\n## Warnings\n\n");
        write_warnings(&s.warnings, doc);
    }
}

/// What the run cost per arm, and the budget, when some trial was priced or a cap was set.
fn write_cost(s: &Summary, doc: &mut String) {
    use super::wording::{describe_cost, shows_cost};
    if !shows_cost(s) {
        return;
    }
    doc.push_str(&format!(
        "\n## Cost\n\n{}\n\n| arm | cost | price |\n|---|---|---|\n",
        describe_cost(&s.cost.total)
    ));
    for a in &s.cost.arms {
        doc.push_str(&format!(
            "| {} · {} · {} | {} | {} |\n",
            escape(&a.arm.provider),
            escape(&a.arm.model),
            escape(&a.arm.variant),
            describe_cost(&a.figures),
            if a.price_sources.is_empty() {
                "none".to_owned()
            } else {
                escape(&a.price_sources.join("; "))
            }
        ));
    }
    if let Some((b, headline)) = s.budget.as_ref().and_then(|b| Some((b, b.headline()?))) {
        doc.push_str(&format!(
            "\n**{headline}**: {}.\n",
            escape_long(&b.stop_text())
        ));
    }
}

/// The run's verdict, the one its exit code reports, then what made it.
fn write_decision(d: &super::Decision, doc: &mut String) {
    doc.push_str(&format!("\n## Verdict: {}\n\n", d.verdict_text()));
    for line in d.ground_lines() {
        doc.push_str(&format!("- {}\n", escape_long(&line)));
    }
}

fn write_gate(g: &GateReport, doc: &mut String) {
    let design = if g.gates.iter().any(|r| r.sequential.is_some()) {
        "sequential"
    } else {
        "fixed n"
    };
    doc.push_str(&format!(
        "\n## Gate: {} ({} one-sided, {design})\n\n",
        g.label(),
        pct(g.confidence)
    ));
    doc.push_str("| verdict | gate | level | arm | result | method |\n");
    doc.push_str("|---|---|---|---|---|---|\n");
    for r in &g.gates {
        doc.push_str(&format!(
            "| **{}** | `{}` | {} | {} | {} | {} |\n",
            r.verdict_label(),
            r.name(),
            r.level_label(),
            escape(&r.arm.provider),
            escape_long(&r.outcome()),
            escape_long(&r.method)
        ));
    }
    for r in &g.gates {
        write_gate_details(r, doc);
    }
}

/// What did not pass under one gate: tools, then cases, worst first, with their bounds.
fn write_gate_details(r: &GateResult, doc: &mut String) {
    if !r.has_details() {
        return;
    }
    let tools = r.tools_not_passed();
    doc.push_str(&format!(
        "\n**`{}` ({}, arm {})**",
        r.name(),
        r.level_label(),
        escape(&r.arm.provider)
    ));
    doc.push_str("\n\n");
    if let Some(q) = &r.sequential {
        doc.push_str(&format!("Sequential ({}; {}.\n\n", q.design(), q.spent()));
    }
    if !tools.is_empty() {
        doc.push_str(
            "| verdict | tool | estimate | bounds | cases | trials |\n|---|---|---|---|---|---|\n",
        );
        for t in tools.iter().take(ROWS_SHOWN) {
            doc.push_str(&format!(
                "| {} | {} | {} | [{}, {}] | {} | {} |\n",
                t.verdict.label(),
                escape(&t.tool),
                r.format_bound(t.estimate),
                r.format_bound(t.lower),
                r.format_bound(t.upper),
                t.cases,
                t.n
            ));
        }
        more(doc, tools.len(), ROWS_SHOWN, "tools that did not pass");
    }
    if !r.not_passed.is_empty() {
        doc.push_str("| verdict | case | x/n | bounds | note |\n|---|---|---|---|---|\n");
        for c in r.not_passed.iter().take(ROWS_SHOWN) {
            let note = super::wording::case_verdict_notes(c, r.threshold);
            doc.push_str(&format!(
                "| {} | {} | {}/{} | {} | {} |\n",
                c.label(),
                escape(&c.case_id),
                c.x,
                c.n,
                c.bounds_text(),
                note.join(" · ")
            ));
        }
        more(
            doc,
            r.not_passed.len(),
            ROWS_SHOWN,
            "cases that did not pass",
        );
    }
    if let Some(hint) = &r.hint {
        doc.push_str(&format!("{}\n", escape_long(hint)));
    }
}

/// Escapes a sentence toolscore wrote (a hint, a method, a warning) that may quote a name
/// from a fixture: HTML metacharacters, `|`, backticks and line breaks, but not the brackets
/// and underscores of its own wording, which read better unescaped; not cut, since cutting
/// mid-sentence would lose its point.
fn escape_long(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '`' => out.push_str("&#96;"),
            '|' => out.push_str("\\|"),
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// `run --attacks`: an arm's three rates over its attacked units (pooled, and the mean of unit
/// rates with its t interval), then the rates by attack family.
fn write_security(s: &Summary, a: &super::SecurityArmSummary, doc: &mut String) {
    let g = &a.suite;
    doc.push_str(&format!(
        "\n## Security · arm {} · model {} · variant {}\n\n{} attacked units, {} trials judged, {} infrastructure errors (not judged); the payload reached the model in {} of them.\n\n",
        escape(&a.arm.provider),
        escape(&a.arm.model),
        escape(&a.arm.variant),
        g.units,
        g.trials,
        g.errors,
        g.delivered
    ));
    doc.push_str(&format!(
        "| rate | {} Wilson (x/n) | mean of unit rates, t interval |\n|---|---|---|\n",
        pct(s.confidence)
    ));
    let clustered = |r: &super::RateStat| {
        r.case_level.as_ref().map_or("n/a".to_owned(), |c| {
            format!(
                "{:.3} [{:.3}, {:.3}] ({} units)",
                c.mean, c.interval.lo, c.interval.hi, c.cases
            )
        })
    };
    let mut rows = vec![
        ("attack success", &g.attack_success),
        ("utility under attack", &g.utility_under_attack),
    ];
    if let Some(u) = &g.utility {
        rows.push(("utility (clean)", u));
    }
    for (name, r) in rows {
        doc.push_str(&format!(
            "| {name} | {} | {} |\n",
            format_rate(r),
            clustered(r)
        ));
    }
    if !a.not_attacked.is_empty() {
        doc.push_str(&format!(
            "\nNot attacked (no injection point): {}.\n",
            a.not_attacked
                .iter()
                .map(|n| escape(n))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    doc.push_str(
        "\n| family | units | attack success | utility under attack |\n|---|---|---|---|\n",
    );
    for f in &a.by_family {
        doc.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            escape(&f.name),
            f.units,
            format_rate(&f.attack_success),
            format_rate(&f.utility_under_attack)
        ));
    }
}

/// `run --attacks --compare`: B − A on each rate, paired by unit, with its verdict.
fn write_attack_comparison(c: &super::AttackComparison, doc: &mut String) {
    doc.push_str(&format!(
        "\n## Security comparison · B − A, paired by (scenario × attack) unit\n\nA: {} · B: {}\n\n| rate | B − A | units | verdict |\n|---|---|---|---|\n",
        escape(&c.a.label(&c.axis)),
        escape(&c.b.label(&c.axis))
    ));
    for (name, g, verdict) in c.told() {
        let diff = g.difference.as_ref().map_or("n/a".to_owned(), |d| {
            format!("{:+.3} [{:+.3}, {:+.3}]", d.mean, d.lo, d.hi)
        });
        doc.push_str(&format!(
            "| {name} | {diff} | {} | {} |\n",
            g.cases,
            escape(&verdict)
        ));
    }
}

/// One table row per scenario: success, retry, recovery and calls per trial, each rate with
/// its interval and count.
fn write_scenarios(s: &Summary, a: &super::ScenarioArmSummary, doc: &mut String) {
    doc.push_str(&format!(
        "\n## Scenarios · arm {} · model {} · variant {}\n\n",
        escape(&a.arm.provider),
        escape(&a.arm.model),
        escape(&a.arm.variant)
    ));
    if let Some(c) = &a.success {
        doc.push_str(&format!(
            "Task success over {} scenarios: {:.3} [{:.3}, {:.3}] ({} t interval on scenario rates)\n\n",
            c.cases,
            c.mean,
            c.interval.lo,
            c.interval.hi,
            pct(s.confidence)
        ));
    }
    doc.push_str("| scenario | success | retry (of calls) | recovery | calls / trial | stopped at max_steps | infra errors |\n|---|---|---|---|---|---|---|\n");
    for sc in &a.scenarios {
        let recovery = if sc.recovery.n > 0 {
            format_rate(&sc.recovery)
        } else {
            "n/a".to_owned()
        };
        doc.push_str(&format!(
            "| {} | {} | {} | {} | {:.2} | {} | {} |\n",
            escape(&sc.name),
            format_rate(&sc.success),
            format_rate(&sc.retry),
            recovery,
            sc.calls_per_trial.mean,
            sc.step_limit,
            sc.errors.values().sum::<u64>()
        ));
    }
    for sc in &a.scenarios {
        if let Some(text) = super::scenario::too_few_trials(sc, s.precision) {
            doc.push_str(&format!("\n> **{}**: {text}\n", escape(&sc.name)));
        }
    }
    for d in s.scenario_drift.iter().filter(|d| d.arm == a.arm) {
        doc.push_str(&format!(
            "\n**Drift against the baseline**: {} {}: `{}` in {}/{} trials, was `{}` in {}/{}\n",
            escape(&d.scenario),
            d.what,
            escape(&d.current.0),
            d.current.1,
            d.current.2,
            escape(&d.baseline.0),
            d.baseline.1,
            d.baseline.2
        ));
    }
    let failing: Vec<&super::ScenarioSummary> = a
        .scenarios
        .iter()
        .filter(|s| !s.failures.is_empty())
        .collect();
    if !failing.is_empty() {
        doc.push_str("\n<details><summary>Why scenario trials failed</summary>\n\n");
        for sc in failing {
            doc.push_str(&format!(
                "- **{}**: {}\n",
                escape(&sc.name),
                sc.failures
                    .iter()
                    .map(|(r, n)| format!("{} ({n})", escape(r)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        doc.push_str("\n</details>\n");
    }
}

fn suite_row(name: &str, r: &RateStat) -> String {
    let case_level = match &r.case_level {
        Some(c) => format!(
            "{:.3} [{:.3}, {:.3}] ({} cases)",
            c.mean, c.interval.lo, c.interval.hi, c.cases
        ),
        None if r.n == 0 => "n/a (no scored trials)".to_owned(),
        None => "n/a (fewer than 2 cases with data)".to_owned(),
    };
    format!("| {name} | {} | {case_level} |\n", format_rate(r))
}

fn write_arm(
    s: &Summary,
    a: &ArmSummary,
    explained: &[toolscore_summary::behaviour::CaseBehaviours],
    doc: &mut String,
) {
    let conf = pct(s.confidence);
    doc.push_str(&format!(
        "\n## Arm {} · model {} · variant {}\n\n",
        escape(&a.arm.provider),
        escape(&a.arm.model),
        escape(&a.arm.variant)
    ));
    doc.push_str(&format!("{}\n\n", super::wording::suite_sentence(a)));
    doc.push_str(&format!(
        "| metric | rate [{conf} Wilson] (x/n) | case-level mean [{conf} t] (m cases) |\n|---|---|---|\n"
    ));
    let m = &a.suite.metrics;
    for (metric, rate) in m.iter() {
        doc.push_str(&suite_row(metric.label(), rate));
    }
    write_worst_cases(a, doc);
    behaviours::write_behaviours(a, explained, doc);
    if !a.warnings.is_empty() {
        doc.push_str("\n**Warnings**\n\n");
        write_warnings(&a.warnings, doc);
    }
    write_tools(a, &conf, doc);
}

/// The case's most frequent failure detail with its count, ties broken by the text.
fn top_failure(c: &CaseSummary) -> String {
    c.failures
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
        .map_or(String::new(), |(detail, n)| {
            format!("{n}× {}", escape(detail))
        })
}

fn write_worst_cases(a: &ArmSummary, doc: &mut String) {
    let worst = toolscore_summary::weakest_cases(a);
    if worst.is_empty() {
        return;
    }
    let shown = worst.len().min(WORST_CASES_SHOWN);
    doc.push_str(&format!(
        "\n### Weakest cases by pass rate ({shown} of {})\n\n",
        a.cases.len()
    ));
    doc.push_str("| case | expected | pass | most frequent failure |\n|---|---|---|---|\n");
    for c in worst.iter().take(shown) {
        doc.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            escape(&c.case_id),
            escape(&c.expected),
            format_rate(&c.metrics[Metric::Pass]),
            top_failure(c)
        ));
    }
    more(doc, a.cases.len(), shown, "cases");
}

fn write_warnings(warnings: &[Warning], doc: &mut String) {
    for w in warnings.iter().take(ROWS_SHOWN) {
        doc.push_str(&format!("- {}\n", escape_long(&warning_text(w))));
    }
    more(doc, warnings.len(), ROWS_SHOWN, "warnings");
}

/// Per-tool figures, folded: useful when digging, noise in a pull request's first screen.
fn write_tools(a: &ArmSummary, conf: &str, doc: &mut String) {
    if a.tools.is_empty() {
        return;
    }
    doc.push_str(&format!(
        "\n<details><summary>By expected tool ({} tools, {conf} Wilson over trials)</summary>\n\n",
        a.tools.len()
    ));
    let labels: Vec<&str> = Metric::ALL.iter().map(|m| m.label()).collect();
    doc.push_str(&format!(
        "| tool | cases | {} |\n|---|---|{}\n",
        labels.join(" | "),
        "---|".repeat(labels.len())
    ));
    for t in a.tools.iter().take(TOOLS_SHOWN) {
        let rates: Vec<String> = t.metrics.iter().map(|(_, r)| format_rate(r)).collect();
        doc.push_str(&format!(
            "| {} | {} | {} |\n",
            escape(&t.name),
            t.cases,
            rates.join(" | ")
        ));
    }
    more(doc, a.tools.len(), TOOLS_SHOWN, "tools");
    if !a.tool_accuracy.is_empty() {
        doc.push_str("\n| tool | precision | recall |\n|---|---|---|\n");
        for t in a.tool_accuracy.iter().take(TOOLS_SHOWN) {
            doc.push_str(&format!(
                "| {} | {} | {} |\n",
                escape(&t.tool),
                format_rate(&t.precision),
                format_rate(&t.recall)
            ));
        }
        more(doc, a.tool_accuracy.len(), TOOLS_SHOWN, "tools");
    }
    if !a.tool_latency.is_empty() {
        doc.push_str(&format!(
            "\n| tool | answered | latency p50 ms | p95 | p99 ({conf} order-statistic intervals) |\n|---|---|---|---|---|\n"
        ));
        for t in a.tool_latency.iter().take(TOOLS_SHOWN) {
            let l = &t.latency_ms;
            doc.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                escape(&t.tool),
                l.n,
                format_percentile(&l.p50),
                format_percentile(&l.p95),
                format_percentile(&l.p99)
            ));
        }
        more(doc, a.tool_latency.len(), TOOLS_SHOWN, "tools");
    }
    doc.push_str("\n</details>\n");
}

fn write_comparison(c: &Comparison, doc: &mut String) {
    let a = c.a.label(&c.axis);
    let b = c.b.label(&c.axis);
    doc.push_str(&format!(
        "\n## Comparison: {} · A = {} · B = {}\n\n{} intervals, B − A paired by case\n\n",
        c.metric.label(),
        escape(&a),
        escape(&b),
        pct(c.confidence)
    ));
    doc.push_str(&format!(
        "**{}**\n\n",
        escape(&super::comparison::overall_line(c))
    ));
    write_group("visible cases", &c.visible, c, &b, doc);
    if let Some(h) = &c.holdout {
        write_group("holdout cases (aggregate only)", h, c, &b, doc);
    }
    if c.changed_cases.is_empty() {
        doc.push_str("\nNo visible case changed beyond its interval.\n");
        return;
    }
    doc.push_str(&format!(
        "\nCases that changed (Newcombe interval of B − A excludes 0; per case, not adjusted for {} cases):\n\n",
        c.visible.cases
    ));
    doc.push_str("| | case | A | B | B − A |\n|---|---|---|---|---|\n");
    for cc in c.changed_cases.iter().take(ROWS_SHOWN) {
        doc.push_str(&format!(
            "| {} | {} | {}/{} | {}/{} | {:+.3} [{:+.3}, {:+.3}] |\n",
            if cc.difference > 0.0 {
                "better"
            } else {
                "worse"
            },
            escape(&cc.case_id),
            cc.a_x,
            cc.a_n,
            cc.b_x,
            cc.b_n,
            cc.difference,
            cc.lo,
            cc.hi
        ));
    }
    more(doc, c.changed_cases.len(), ROWS_SHOWN, "changed cases");
}

/// The providers side by side (a column each) and the cases where they disagree.
fn write_provider_diff(s: &Summary, d: &super::ProviderDiff, doc: &mut String) {
    let arms: Vec<&ArmSummary> = d
        .arms
        .iter()
        .filter_map(|id| s.arms.iter().find(|a| &a.arm == id))
        .collect();
    let name = |i: usize| escape(&d.arms[i].provider);
    doc.push_str(&format!(
        "\n## Providers side by side · variant {} · {} intervals\n\n| metric |",
        escape(&d.variant),
        pct(d.confidence)
    ));
    for a in &d.arms {
        doc.push_str(&format!(
            " {} ({}) |",
            escape(&a.provider),
            escape(&a.model)
        ));
    }
    doc.push_str("\n|---|");
    doc.push_str(&"---|".repeat(d.arms.len()));
    doc.push('\n');
    for (metric, cells) in super::providers::side_by_side_rows(&arms) {
        doc.push_str(&format!("| {metric} |"));
        for c in cells {
            doc.push_str(&format!(" {} |", escape(&c)));
        }
        doc.push('\n');
    }
    doc.push_str(&format!(
        "\n{} cases scored by all {} arms. Majority choice of tool differs in {}.\n",
        d.cases_compared,
        d.arms.len(),
        d.choice_differs.len()
    ));
    if !d.choice_differs.is_empty() {
        doc.push_str("\n| case | expects |");
        for i in 0..d.arms.len() {
            doc.push_str(&format!(" {} |", name(i)));
        }
        doc.push_str("\n|---|---|");
        doc.push_str(&"---|".repeat(d.arms.len()));
        doc.push('\n');
        for c in d.choice_differs.iter().take(ROWS_SHOWN) {
            doc.push_str(&format!(
                "| {} | {} |",
                escape(&c.case_id),
                escape(&c.expected)
            ));
            for ch in &c.choices {
                doc.push_str(&format!(
                    " {}{} {}/{} |",
                    if ch.majority { "" } else { "no majority: " },
                    escape(&ch.top),
                    ch.count,
                    ch.scored
                ));
            }
            doc.push('\n');
        }
        more(doc, d.choice_differs.len(), ROWS_SHOWN, "cases");
    }
    let flagged: usize = d.pass_differs.iter().map(|p| p.pairs.len()).sum();
    doc.push_str(&format!(
        "\nPass rate differs beyond its {} interval (Newcombe, per case) in {} of {} case comparisons; about {:.1} would by chance alone if the providers were alike.\n",
        pct(d.confidence),
        flagged,
        d.pass_comparisons,
        d.differences_by_chance()
    ));
    if !d.pass_differs.is_empty() {
        doc.push_str("\n| case | pass | difference |\n|---|---|---|\n");
        for p in d.pass_differs.iter().take(ROWS_SHOWN) {
            let (rates, pairs) = super::providers::pass_diff_text(p, &name);
            doc.push_str(&format!("| {} | {rates} | {pairs} |\n", escape(&p.case_id),));
        }
        more(doc, d.pass_differs.len(), ROWS_SHOWN, "cases");
    }
}

fn write_group(title: &str, g: &GroupComparison, c: &Comparison, b: &str, doc: &mut String) {
    let difference = match &g.difference {
        Some(d) => format!(
            "B − A = {:+.3} [{:+.3}, {:+.3}] (paired t, {} df){}",
            d.mean,
            d.lo,
            d.hi,
            d.df,
            crate::comparison::fixed_n_caveat(g)
        ),
        None => "B − A: n/a (fewer than 2 cases with data in both arms)".to_owned(),
    };
    let sequential = g
        .sequential
        .as_ref()
        .map_or(String::new(), |q| format!(" · {}", escape_long(&q.line())));
    doc.push_str(&format!(
        "- {title}: {} · {difference}{sequential} · **{}**\n",
        g.cases,
        escape_long(&g.judged().describe(b, c.min_effect))
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_neutralises_markdown_and_html() {
        assert_eq!(
            escape("<script>a|b`c`\nd&e</script>"),
            "&lt;script&gt;a\\|b&#96;c&#96; d&amp;e&lt;/script&gt;"
        );
        assert!(escape(&"x".repeat(500)).chars().count() <= STRING_CHARS + 1);
    }

    #[test]
    fn a_comparison_shows_its_verdict_difference_and_changed_cases() {
        use toolscore_core::RunTotals;
        use toolscore_core::metric::Metric;
        use toolscore_core::{ArmId, Outcome, TrialRecord};
        use toolscore_summary::{
            Aggregator, CaseComparison, ComparedArm, ComparisonVerdict, MeanDifference, RunInfo,
        };
        let mut agg = Aggregator::new();
        agg.add(&TrialRecord::for_test("c0", Outcome::Pass, 5.0));
        let totals = RunTotals::all_completed(1);
        let mut s = agg.finish(RunInfo::for_test(1), &totals, 0.95, 0.05);
        let arm = |variant: &str| ComparedArm {
            folder: None,
            run_id: "r".into(),
            arm: ArmId {
                variant: variant.into(),
                provider: "p".into(),
                model: "m".into(),
            },
        };
        let group = GroupComparison {
            cases: 51,
            a_mean: Some(0.373),
            b_mean: Some(0.320),
            difference: Some(MeanDifference {
                mean: -0.053,
                lo: -0.094,
                hi: -0.011,
                sd: 0.147,
                df: 50,
                p_value: 0.0134,
                method: "paired t".into(),
            }),
            mcnemar: None,
            verdict: ComparisonVerdict::Worse,
            cases_needed: Some(71),
            sequential: None,
            fixed_n_verdict: None,
        };
        let changed = CaseComparison {
            dataset: "d".into(),
            case_id: "server|status".into(),
            a_x: 7,
            a_n: 10,
            b_x: 1,
            b_n: 10,
            difference: -0.6,
            lo: -0.809,
            hi: -0.171,
        };
        s.comparison = Some(Comparison {
            metric: Metric::Selection,
            confidence: 0.95,
            min_effect: 0.05,
            power: 0.8,
            a: arm("base"),
            b: arm("terse"),
            axis: "variant".into(),
            visible: group,
            holdout: None,
            changed_cases: vec![changed; 12],
            case_differences: Vec::new(),
            substitutions: Vec::new(),
        });
        let mut out = Vec::new();
        crate::Render::render(&Markdown::default(), &s, &mut out).unwrap();
        let md = String::from_utf8(out).unwrap();
        assert!(
            md.contains("B − A = -0.053 [-0.094, -0.011] (paired t, 50 df) · **WORSE: variant terse scores lower**"),
            "{md}"
        );
        assert!(
            md.contains("| worse | server\\|status | 7/10 | 1/10 | -0.600 [-0.809, -0.171] |"),
            "{md}"
        );
        assert!(
            md.contains("… and 2 more changed cases in summary.json"),
            "{md}"
        );
    }

    #[test]
    fn an_oversized_document_is_cut_with_a_notice() {
        let doc = "line\n".repeat(20_000);
        let cut = cap_document(doc, "every figure is in summary.json");
        assert!(cut.chars().count() <= MAX_CHARS, "{}", cut.len());
        assert!(cut.ends_with("every figure is in summary.json\n"));
    }
}
