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

/// The ranking as text: each tool's recall with its interval and count, then its findings.
pub fn render(ranked: &[RankedTool], heading: &str, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{heading}")?;
    for r in ranked {
        let m = &r.measured;
        let rate = if m.n == 0 {
            "no trials".to_owned()
        } else {
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
        };
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
            writeln!(
                out,
                "  {:<7} {}  {}: {}",
                f.severity.label(),
                f.rule,
                f.location(),
                f.message
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::{LintOptions, lint};
    use super::*;
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
            MeasuredTool {
                tool: "get_invoice".into(),
                x: 38,
                n: 40,
                interval: Some((0.83, 0.99)),
            },
            MeasuredTool {
                tool: "apply_credit".into(),
                x: 12,
                n: 40,
                interval: Some((0.18, 0.45)),
            },
        ];
        let ranked = rank(&report, &measured);
        assert_eq!(ranked[0].measured.tool, "apply_credit");
        assert_eq!(ranked[0].measured.misses(), 28);
        assert!(
            ranked[0]
                .findings
                .iter()
                .any(|f| f.rule == "property-description-missing")
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
}
