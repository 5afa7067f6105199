//! The terminal report of `toolscore probe`.

use std::io::{self, Write};

use toolscore_mcp::probe::{CheckVerdict, ProbeReport};

/// Each check with its verdict and evidence, then the counts.
pub fn render_probe(report: &ProbeReport, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w, "probe of {}", report.source)?;
    writeln!(w, "server: {}\n", report.server)?;
    for c in &report.checks {
        let subject = c
            .subject
            .as_deref()
            .map_or(String::new(), |s| format!(" {s}"));
        writeln!(w, "{} {}{subject}", label(c.verdict), c.check)?;
        writeln!(w, "     {}", c.evidence)?;
    }
    writeln!(
        w,
        "\n{} checks: {} pass, {} warn, {} fail, {} skipped",
        report.checks.len(),
        report.count(CheckVerdict::Pass),
        report.count(CheckVerdict::Warn),
        report.count(CheckVerdict::Fail),
        report.count(CheckVerdict::Skip)
    )
}

fn label(verdict: CheckVerdict) -> &'static str {
    match verdict {
        CheckVerdict::Pass => "PASS",
        CheckVerdict::Warn => "WARN",
        CheckVerdict::Fail => "FAIL",
        CheckVerdict::Skip => "SKIP",
    }
}
