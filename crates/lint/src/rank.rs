//! Public as a namespace: callers write `rank::rank`, `rank::render`, `rank::MeasuredTool`.
//!
//! `lint --from RUN_DIR`: findings ranked by the measured selection failures of their tools,
//! so the tools the model misses most come first with what lint says about them. Pure: the
//! measured figures come in as plain data (the command line reads them from the run).

use std::io::{self, Write};

use serde::Serialize;

use super::{Finding, LintReport};

/// One tool's measured selection recall in a run: chosen `x` times out of the `n` trials that
/// expected it, with the interval the run's summary gives.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeasuredTool {
    pub tool: String,
    pub x: u64,
    pub n: u64,
    pub interval: Option<(f64, f64)>,
}

impl MeasuredTool {
    /// Trials that expected the tool and did not choose it.
    pub fn misses(&self) -> u64 {
        self.n.saturating_sub(self.x)
    }
}

/// A measured tool with the findings lint reports on it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankedTool {
    pub measured: MeasuredTool,
    pub findings: Vec<Finding>,
}

/// Tools ordered by measured misses (most first; ties by lower recall, then name), each with
/// its findings. Tools the run never expected are left out: there is nothing to rank them by.
pub fn rank(report: &LintReport, measured: &[MeasuredTool]) -> Vec<RankedTool> {
    let mut out: Vec<RankedTool> = measured
        .iter()
        .map(|m| RankedTool {
            measured: m.clone(),
            findings: report
                .findings
                .iter()
                .filter(|f| f.tool.as_deref() == Some(m.tool.as_str()))
                .cloned()
                .collect(),
        })
        .collect();
    out.sort_by(|a, b| {
        let rate = |m: &MeasuredTool| {
            if m.n == 0 {
                1.0
            } else {
                m.x as f64 / m.n as f64
            }
        };
        b.measured
            .misses()
            .cmp(&a.measured.misses())
            .then(rate(&a.measured).total_cmp(&rate(&b.measured)))
            .then(a.measured.tool.cmp(&b.measured.tool))
    });
    out
}

/// Whether the catalog linted has this tool (so a run's "(no call)" row or a tool from another
/// dataset is not ranked against it).
pub fn known_tool(report: &LintReport, tool: &str) -> bool {
    report
        .footprint
        .per_tool
        .iter()
        .any(|(name, _)| name == tool)
}

/// `x/n = rate [lo, hi]`, or `x/n` without an interval.
fn recall_text(m: &MeasuredTool) -> String {
    if m.n == 0 {
        return "no trials".to_owned();
    }
    match m.interval {
        Some((lo, hi)) => format!(
            "{}/{} = {:.3} [{:.3}, {:.3}]",
            m.x,
            m.n,
            m.x as f64 / m.n as f64,
            lo,
            hi
        ),
        None => format!("{}/{}", m.x, m.n),
    }
}

/// The ranking as text: each tool's recall with its interval and count, then its findings.
pub fn render(ranked: &[RankedTool], heading: &str, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{heading}")?;
    for r in ranked {
        let m = &r.measured;
        let rate = recall_text(m);
        writeln!(
            out,
            "{}: selection recall {rate}, {} missed",
            m.tool,
            m.misses()
        )?;
        if r.findings.is_empty() {
            writeln!(out, "  (no finding)")?;
        }
        for f in &r.findings {
            writeln!(out, "  {}", one_line(f))?;
        }
    }
    Ok(())
}

/// The short form `run` prints under its report: the `tools` most-missed tools that lint has
/// something to say about, each with its `per_tool` first findings (most severe first). Provider
/// compatibility and token footprint are left out: a construct a provider refuses shows up as
/// a refused request (an infrastructure error), not as a wrong choice, while a missing
/// description, a generic name or an injected instruction can be why the model looked past a
/// tool. Tools nobody missed are left out. Returns whether anything was written.
pub fn render_beside(
    ranked: &[RankedTool],
    tools: usize,
    per_tool: usize,
    heading: &str,
    out: &mut dyn Write,
) -> io::Result<bool> {
    let telling = |f: &&Finding| {
        !matches!(
            f.category,
            super::Category::Providers | super::Category::Tokens
        )
    };
    let shown: Vec<(&RankedTool, Vec<&Finding>)> = ranked
        .iter()
        .filter(|r| r.measured.misses() > 0)
        .map(|r| (r, r.findings.iter().filter(telling).collect::<Vec<_>>()))
        .filter(|(_, findings)| !findings.is_empty())
        .take(tools)
        .collect();
    if shown.is_empty() {
        return Ok(false);
    }
    writeln!(out, "{heading}")?;
    for (r, mut findings) in shown {
        writeln!(
            out,
            "  {}  selection recall {}, {} missed",
            r.measured.tool,
            recall_text(&r.measured),
            r.measured.misses()
        )?;
        findings.sort_by_key(|f| f.severity);
        for f in findings.iter().take(per_tool) {
            writeln!(out, "    {}", one_line(f))?;
        }
        if findings.len() > per_tool {
            writeln!(out, "    … {} more", findings.len() - per_tool)?;
        }
    }
    Ok(true)
}

/// A finding on one line: severity, rule, where, what.
fn one_line(f: &crate::Finding) -> String {
    format!(
        "{:<7} {}  {}: {}",
        f.severity.label(),
        f.rule,
        f.location(),
        f.message
    )
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::{LintOptions, lint};
    use super::*;

    fn measured(tool: &str, x: u64, n: u64, interval: (f64, f64)) -> MeasuredTool {
        MeasuredTool {
            tool: tool.into(),
            x,
            n,
            interval: Some(interval),
        }
    }
    use serde_json::json;

    #[test]
    fn tools_are_ranked_by_measured_misses_with_their_findings() {
        let c = catalog(vec![
            clean_tool("get_invoice"),
            tool(
                "apply_credit",
                "Apply a credit to a customer's balance and return the new balance.",
                json!({"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]}),
            ),
        ]);
        let report = lint(&c, &LintOptions::default());
        let measured = vec![
            measured("get_invoice", 38, 40, (0.83, 0.99)),
            measured("apply_credit", 12, 40, (0.18, 0.45)),
        ];
        let ranked = rank(&report, &measured);
        assert_eq!(ranked[0].measured.tool, "apply_credit");
        assert_eq!(ranked[0].measured.misses(), 28);
        assert!(
            ranked[0]
                .findings
                .iter()
                .any(|f| f.rule == RuleId::PropertyDescriptionMissing)
        );
        let mut out = Vec::new();
        render(&ranked, "ranked:", &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("apply_credit: selection recall 12/40 = 0.300 [0.180, 0.450], 28 missed"),
            "{text}"
        );
        assert!(
            text.contains(
                "property-description-missing  apply_credit.inputSchema.properties.amount"
            ),
            "{text}"
        );
        assert!(text.find("apply_credit").unwrap() < text.find("get_invoice").unwrap());
    }

    #[test]
    fn beside_a_run_the_most_missed_tools_come_first_without_provider_findings() {
        let c = catalog(vec![
            clean_tool("get_invoice"),
            tool(
                "apply_credit",
                "Apply a credit to a customer's balance and return the new balance.",
                json!({"type": "object", "properties": {"amount": {"type": "integer"}, "note": {"type": "string", "description": "Shown to the customer on the next invoice."}}, "required": ["amount"], "additionalProperties": false}),
            ),
        ]);
        let report = lint(&c, &LintOptions::default());
        let measured = vec![
            measured("get_invoice", 40, 40, (0.91, 1.0)),
            measured("apply_credit", 12, 40, (0.18, 0.45)),
        ];
        let ranked = rank(&report, &measured);
        let mut out = Vec::new();
        assert!(render_beside(&ranked, 3, 1, "weakest:", &mut out).unwrap());
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "weakest:");
        assert_eq!(
            lines[1],
            "  apply_credit  selection recall 12/40 = 0.300 [0.180, 0.450], 28 missed"
        );
        // The undescribed `amount` is shown; the provider-compatibility warnings on the same
        // tool (its closed object, its optional `note`) are not.
        assert!(
            report
                .findings
                .iter()
                .any(|f| f.tool.as_deref() == Some("apply_credit")
                    && f.category == super::super::Category::Providers)
        );
        assert!(
            lines[2].contains(
                "property-description-missing  apply_credit.inputSchema.properties.amount"
            ),
            "{text}"
        );
        assert!(!text.contains("provider-"), "{text}");
        // Never missed: not shown, whatever lint says about it.
        assert!(!text.contains("get_invoice"), "{text}");

        // Nothing missed at all: nothing written.
        let perfect = vec![MeasuredTool {
            tool: "apply_credit".into(),
            x: 40,
            n: 40,
            interval: None,
        }];
        let mut out = Vec::new();
        assert!(!render_beside(&rank(&report, &perfect), 3, 1, "weakest:", &mut out).unwrap());
        assert!(out.is_empty());
    }
}
