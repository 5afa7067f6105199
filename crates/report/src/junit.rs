//! JUnit XML (`junit.xml`) for CI systems that show test results: the run's verdict first (its
//! own `testsuite`), then one `testsuite` per arm, one `testcase` per case, and one per
//! suite-, tool- or baseline-level gate; an attacked run adds one `testsuite` per arm with a
//! `testcase` per (scenario × attack) unit and its attack gates.
//!
//! JUnit knows pass, failure and skipped, not "measured", so a case's status is what a
//! case-level gate decided about it (fail → failure; inconclusive → skipped, with what more
//! evidence would settle it); without a case-level gate there is no verdict to report and the
//! case passes. Its pass rate with the interval is in `system-out` either way. Only figures
//! the [`Summary`] holds are written; quick-junit does the XML escaping.

use std::io::Write;
use toolscore_core::metric::Metric;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::{
    ArmSummary, CaseSummary, CaseVerdict, GateLevel, GateResult, RateStat, Summary, Verdict,
};

/// Failure details listed per case (most frequent first).
const FAILURES_SHOWN: usize = 5;

/// `junit.xml`: one testsuite per arm, one testcase per case and per gate.
pub struct Junit;

impl super::Render for Junit {
    fn render(&self, s: &Summary, w: &mut dyn Write) -> std::io::Result<()> {
        let mut report = Report::new(format!("toolscore run {}", s.run.run_id));
        if let Some(d) = &s.decision {
            report.add_test_suite(decision_suite(d));
        }
        for arm in &s.arms {
            report.add_test_suite(arm_suite(s, arm));
        }
        for arm in &s.scenarios {
            report.add_test_suite(scenario_suite(s, arm));
        }
        for arm in &s.security {
            report.add_test_suite(security_suite(s, arm));
        }
        report.serialize(w).map_err(std::io::Error::other)
    }
}

/// The run's verdict first, as one testcase: passed, failed (exit 1), skipped (inconclusive,
/// exit 3) or an error (not judged, exit 4; interrupted, 130), with what made it.
fn decision_suite(d: &super::Decision) -> TestSuite {
    use super::RunVerdict;
    let headline = d.headline();
    let grounds = d.ground_lines().join("\n");
    let non_success = |kind: Option<NonSuccessKind>, type_: &str| {
        let mut st = match kind {
            Some(kind) => TestCaseStatus::non_success(kind),
            None => TestCaseStatus::skipped(),
        };
        st.set_message(headline.clone())
            .set_type(type_.to_owned())
            .set_description(grounds.clone());
        st
    };
    let status = match d.verdict {
        RunVerdict::Pass => TestCaseStatus::success(),
        RunVerdict::Fail => non_success(Some(NonSuccessKind::Failure), "failed"),
        RunVerdict::Below => non_success(Some(NonSuccessKind::Failure), "below"),
        RunVerdict::Inconclusive => non_success(None, "inconclusive"),
        RunVerdict::NotJudged => non_success(Some(NonSuccessKind::Error), "not judged"),
        RunVerdict::Interrupted => non_success(Some(NonSuccessKind::Error), "interrupted"),
    };
    let mut t = TestCase::new("verdict", status);
    t.set_classname("toolscore.decision");
    t.set_system_out(format!("{headline}\n{grounds}"));
    let mut suite = TestSuite::new("toolscore decision");
    suite.add_test_case(t);
    suite
}

fn arm_suite(s: &Summary, arm: &ArmSummary) -> TestSuite {
    let id = &arm.arm;
    let mut suite = TestSuite::new(format!(
        "{} · model {} · variant {}",
        id.provider, id.model, id.variant
    ));
    let gates: Vec<&GateResult> = s
        .gate
        .iter()
        .flat_map(|g| &g.gates)
        .filter(|g| &g.arm == id)
        .collect();
    let case_gates: Vec<&GateResult> = gates
        .iter()
        .copied()
        .filter(|g| g.level == GateLevel::Case)
        .collect();
    for case in &arm.cases {
        suite.add_test_case(case_test(s, case, &case_gates));
    }
    let in_security_suite =
        |g: &GateResult| g.metric.attack().is_some() && s.security.iter().any(|a| a.arm == g.arm);
    for g in gates
        .iter()
        .filter(|g| g.level != GateLevel::Case && !in_security_suite(g))
    {
        suite.add_test_case(gate_test(g));
    }
    suite
}

/// A name for an XML attribute: a parser turns a raw line break in an attribute into a space
/// (and quick-junit writes it raw), so a case id with a newline is given that space up front
/// and reads back as written.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// `x/n [lo, hi]`, or `x/n (no interval)` when nothing was measured.
fn rate_text(r: &RateStat) -> String {
    match r.interval {
        Some(iv) => format!("{}/{} [{:.3}, {:.3}]", r.x, r.n, iv.lo, iv.hi),
        None => format!("{}/{} (no interval)", r.x, r.n),
    }
}

/// The case's most frequent failure details, one per line with its count.
fn failure_lines(c: &CaseSummary) -> String {
    let mut top: Vec<_> = c.failures.iter().collect();
    top.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
    let mut lines: Vec<String> = top
        .iter()
        .take(FAILURES_SHOWN)
        .map(|(detail, n)| format!("{n}× {detail}"))
        .collect();
    if top.len() > FAILURES_SHOWN {
        lines.push(format!(
            "… and {} more kinds of failure in summary.json",
            top.len() - FAILURES_SHOWN
        ));
    }
    lines.join("\n")
}

/// A sequential case gate's bounds are the anytime-valid ones its test decided by.
fn anytime_valid(g: &GateResult) -> bool {
    g.sequential
        .as_ref()
        .is_some_and(|q| q.anytime_valid_bounds)
}

fn case_test(s: &Summary, c: &CaseSummary, case_gates: &[&GateResult]) -> TestCase {
    let gate_conf = s.gate.as_ref().map_or(s.confidence, |g| g.confidence);
    // A case a gate did not list among `not_passed` passed that gate; the worst verdict over
    // the case-level gates is the case's status.
    let judged: Vec<(&GateResult, &CaseVerdict)> = case_gates
        .iter()
        .filter_map(|g| {
            g.not_passed
                .iter()
                .find(|v| v.dataset == c.dataset && v.case_id == c.case_id)
                .map(|v| (*g, v))
        })
        .collect();
    let worst = judged.iter().max_by_key(|(_, v)| v.verdict);
    let failures = failure_lines(c);
    let status = worst.map_or_else(TestCaseStatus::success, |(g, v)| {
        judged_status(g, v, gate_conf, &failures)
    });
    let mut t = TestCase::new(one_line(&c.case_id), status);
    t.set_classname(one_line(&c.dataset));
    let m = &c.metrics;
    let conf = format!("{:.0}% Wilson", s.confidence * 100.0);
    let mut out = format!(
        "pass rate {} ({conf})\nselection {} ({conf})\nexpected {}\ninfrastructure errors {}",
        rate_text(&m[Metric::Pass]),
        rate_text(&m[Metric::Selection]),
        c.expected,
        c.infra_errors
    );
    if !failures.is_empty() {
        out.push_str("\nmost frequent failures:\n");
        out.push_str(&failures);
    }
    t.set_system_out(out);
    t
}

/// A case's (or attacked unit's) status under the case-level gate that judged it worst: a
/// failure with the bound that ruled the bar out (the upper bound below a floor, the lower
/// bound above a ceiling such as `attack_success`), or skipped when inconclusive.
fn judged_status(
    g: &GateResult,
    v: &CaseVerdict,
    gate_conf: f64,
    failures: &str,
) -> TestCaseStatus {
    let (side, beyond) = if g.metric.ceiling() {
        ("lower", "above")
    } else {
        ("upper", "below")
    };
    if !v.verdict.failed() {
        let mut st = TestCaseStatus::skipped();
        let bounds = if anytime_valid(g) {
            format!("anytime-valid bounds {}", v.bounds_text())
        } else {
            format!(
                "{:.0}% one-sided bounds [{:.3}, {:.3}]",
                gate_conf * 100.0,
                v.lower,
                v.upper
            )
        };
        st.set_message(format!(
            "{} (case): inconclusive, {bounds} straddle {}{}",
            g.name(),
            v.threshold,
            v.more_trials
                .map_or(String::new(), |m| format!("; ~{m} more trials"))
        ));
        st.set_type("inconclusive");
        return st;
    }
    let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
    let bound = if g.metric.ceiling() { v.lower } else { v.upper };
    let op = if g.metric.ceiling() { ">" } else { "<" };
    st.set_message(match (anytime_valid(g), v.below) {
        (false, _) => format!(
            "{} (case): {side} bound {bound:.3} {op} {} — {}/{}, {:.0}% one-sided bounds [{:.3}, {:.3}]",
            g.name(),
            v.threshold,
            v.x,
            v.n,
            gate_conf * 100.0,
            v.lower,
            v.upper
        ),
        (true, None) => format!(
            "{} (case): anytime-valid {side} bound {beyond} {} — {}/{}, anytime-valid bounds {}",
            g.name(),
            v.threshold,
            v.x,
            v.n,
            v.bounds_text()
        ),
        (true, Some(rate)) => format!(
            "{} (case): BELOW {rate} (--fail-below: an indifference zone, not a test of the bar), anytime-valid upper bound below {rate} — {}/{}, anytime-valid bounds {}",
            g.name(),
            v.x,
            v.n,
            v.bounds_text()
        ),
    });
    st.set_type(if v.below.is_some() {
        "below the --fail-below rate"
    } else {
        "gate failed"
    });
    if !failures.is_empty() {
        st.set_description(failures.to_owned());
    }
    st
}

/// One testsuite per arm that ran attacked units: a testcase per (scenario × attack) unit,
/// failed or skipped by the case-level attack gates as a case is by its gates, its rates in
/// its output; then the arm's suite-level attack gates.
fn security_suite(s: &Summary, arm: &super::SecurityArmSummary) -> TestSuite {
    let id = &arm.arm;
    let mut suite = TestSuite::new(format!(
        "security · {} · model {} · variant {}",
        id.provider, id.model, id.variant
    ));
    let gate_conf = s.gate.as_ref().map_or(s.confidence, |g| g.confidence);
    let gates: Vec<&GateResult> = s
        .gate
        .iter()
        .flat_map(|g| &g.gates)
        .filter(|g| &g.arm == id && g.metric.attack().is_some())
        .collect();
    let conf = format!("{:.0}% Wilson", s.confidence * 100.0);
    for u in &arm.units {
        let worst = gates
            .iter()
            .filter(|g| g.level == GateLevel::Case)
            .filter_map(|g| {
                g.not_passed
                    .iter()
                    .find(|v| v.case_id == u.case_id)
                    .map(|v| (*g, v))
            })
            .max_by_key(|(_, v)| v.verdict);
        let status = worst.map_or_else(TestCaseStatus::success, |(g, v)| {
            judged_status(g, v, gate_conf, "")
        });
        let mut t = TestCase::new(one_line(&u.case_id), status);
        t.set_classname("security");
        let evidence: Vec<String> = u.evidence.iter().map(|e| one_line(e)).collect();
        t.set_system_out(format!(
            "attack success {} ({conf})\nutility under attack {} ({conf})\nfamily {}\npayload delivered in {} of {} judged trials\ninfrastructure errors {}{}",
            rate_text(&u.attack_success),
            rate_text(&u.utility_under_attack),
            u.family.as_deref().map_or_else(|| "(none)".to_owned(), one_line),
            u.delivered,
            u.trials,
            u.errors.values().sum::<u64>(),
            if evidence.is_empty() {
                String::new()
            } else {
                format!("\nproof of success:\n{}", evidence.join("\n"))
            }
        ));
        suite.add_test_case(t);
    }
    for g in gates.iter().filter(|g| g.level != GateLevel::Case) {
        suite.add_test_case(gate_test(g));
    }
    suite
}

/// One testcase per scenario of an arm, its figures in its output. No gate judges scenarios
/// yet, so each is reported as passed, as a case is when no case-level gate judges it.
fn scenario_suite(s: &Summary, arm: &super::ScenarioArmSummary) -> TestSuite {
    let id = &arm.arm;
    let mut suite = TestSuite::new(format!(
        "scenarios · {} · model {} · variant {}",
        id.provider, id.model, id.variant
    ));
    let conf = format!("{:.0}% Wilson", s.confidence * 100.0);
    for sc in &arm.scenarios {
        let reasons = sc
            .failures
            .iter()
            .map(|(r, n)| format!("{n} × {r}"))
            .collect::<Vec<_>>()
            .join("\n");
        let status = TestCaseStatus::success();
        let mut t = TestCase::new(one_line(&sc.name), status);
        t.set_classname("scenarios");
        t.set_system_out(format!(
            "success {} ({conf})\nretry {} of calls\nrecovery {}\nexpects {}\ninfrastructure errors {}{}",
            rate_text(&sc.success),
            rate_text(&sc.retry),
            rate_text(&sc.recovery),
            sc.expects,
            sc.errors.values().sum::<u64>(),
            if reasons.is_empty() {
                String::new()
            } else {
                format!("\nwhy trials failed:\n{reasons}")
            }
        ));
        suite.add_test_case(t);
    }
    suite
}

fn gate_test(g: &GateResult) -> TestCase {
    let line = format!(
        "{} ({}): {}; {}",
        g.name(),
        g.level_label(),
        g.outcome(),
        g.method
    );
    let mut details = Vec::new();
    for t in g.tools_not_passed() {
        details.push(format!(
            "{} {}: estimate {}, bounds [{}, {}] ({} cases, {} trials)",
            t.verdict.label(),
            t.tool,
            g.format_bound(t.estimate),
            g.format_bound(t.lower),
            g.format_bound(t.upper),
            t.cases,
            t.n
        ));
    }
    if let Some(h) = &g.hint {
        details.push(h.clone());
    }
    let status = match g.verdict {
        Verdict::Pass => TestCaseStatus::success(),
        Verdict::Fail | Verdict::Below => {
            let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
            st.set_message(line.clone())
                .set_type(if g.verdict == Verdict::Below {
                    "below the indifference zone"
                } else {
                    "gate failed"
                });
            if !details.is_empty() {
                st.set_description(details.join("\n"));
            }
            st
        }
        Verdict::Inconclusive => {
            let mut st = TestCaseStatus::skipped();
            st.set_message(line.clone()).set_type("inconclusive");
            if !details.is_empty() {
                st.set_description(details.join("\n"));
            }
            st
        }
    };
    let mut t = TestCase::new(format!("gate {} ({})", g.name(), g.level_label()), status);
    t.set_classname("toolscore.gate");
    t.set_system_out(line);
    t
}
