//! The reports of `toolscore probe`: the edge checks for the terminal, and the escape probes
//! (`--security`) for the terminal and as SARIF 2.1.0. They format the verdicts the probe
//! reached; they judge nothing.

use std::io::{self, Write};

use serde_json::{Value, json};
use toolscore_mcp::{CheckVerdict, ProbeReport};
use toolscore_mcp::{EscapeCheck, EscapeReport};

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

/// Each escape verdict with what was sent and its evidence, then the calls per tool (and
/// what the bound on them cut), then the counts. Every text quoted from the server is inert
/// already (the probe made it so).
pub fn render_escapes(report: &EscapeReport, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w, "escape probes of {}", report.source)?;
    writeln!(w, "server: {}\n", report.server)?;
    for v in &report.verdicts {
        writeln!(
            w,
            "{} {} {}.{}",
            label(v.verdict),
            v.check,
            v.tool,
            v.parameter
        )?;
        if let Some(sent) = &v.sent {
            writeln!(w, "     sent: {sent}")?;
        }
        // What proved a FAIL or a WARN is marked as such; a PASS says why nothing did.
        let proof = match v.verdict {
            CheckVerdict::Fail | CheckVerdict::Warn => "proof: ",
            CheckVerdict::Pass | CheckVerdict::Skip => "",
        };
        writeln!(w, "     {proof}{}", v.evidence)?;
    }
    if report.verdicts.is_empty() {
        writeln!(w, "no tool has a string parameter or a typed one to probe")?;
    }
    writeln!(w, "\ncalls per tool (at most {}):", report.max_calls)?;
    let width = report
        .tools
        .iter()
        .map(|t| t.tool.chars().count())
        .max()
        .unwrap_or(0);
    for t in &report.tools {
        let mut notes = Vec::new();
        if t.cut > 0 {
            notes.push(format!(
                "{} of {} payloads cut by the bound",
                t.cut, t.planned
            ));
        }
        if t.after_proof > 0 {
            notes.push(format!(
                "{} not sent once their check was proven",
                t.after_proof
            ));
        }
        if t.unanswered > 0 {
            notes.push(format!(
                "{} not sent: the tool stopped answering",
                t.unanswered
            ));
        }
        if t.planned == 0 {
            notes.push("nothing to probe".to_owned());
        }
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!("  ({})", notes.join("; "))
        };
        writeln!(w, "  {:<width$}  {:>3}{notes}", t.tool, t.calls)?;
    }
    writeln!(
        w,
        "\n{} verdicts: {} pass, {} warn, {} fail, {} skipped; {} calls in total",
        report.verdicts.len(),
        report.count(CheckVerdict::Pass),
        report.count(CheckVerdict::Warn),
        report.count(CheckVerdict::Fail),
        report.count(CheckVerdict::Skip),
        report.calls
    )
}

fn sarif_level(verdict: CheckVerdict) -> Option<&'static str> {
    match verdict {
        CheckVerdict::Fail => Some("error"),
        CheckVerdict::Warn => Some("warning"),
        CheckVerdict::Pass | CheckVerdict::Skip => None,
    }
}

/// SARIF 2.1.0: one run, one rule per escape check (`path-traversal`, `ssrf`,
/// `shell-injection`, `schema-smuggling`), one result per FAIL (level `error`) and per WARN
/// (level `warning`), its message the payload sent and the proof, its logical location the
/// tool's parameter (`tool.parameter`). Code scanning places a result only in a file of the
/// repository: `artifact`, when given, is that file (the caller's choice: what defines the
/// server), line 1.
pub fn escapes_sarif(report: &EscapeReport, artifact: Option<&str>, version: &str) -> Value {
    let rules: Vec<Value> = EscapeCheck::ALL
        .iter()
        .map(|c| {
            let level = if *c == EscapeCheck::SchemaSmuggling {
                "warning"
            } else {
                "error"
            };
            json!({
                "id": c.id(),
                "name": c.id(),
                "shortDescription": {"text": c.summary()},
                "fullDescription": {"text": c.summary()},
                "help": {"text": c.fix()},
                "defaultConfiguration": {"level": level},
                "properties": {"tags": ["security"]},
            })
        })
        .collect();
    let results: Vec<Value> = report
        .verdicts
        .iter()
        .filter_map(|v| {
            let level = sarif_level(v.verdict)?;
            let index = EscapeCheck::ALL.iter().position(|c| *c == v.check)?;
            let location = format!("{}.{}", v.tool, v.parameter);
            let message = match &v.sent {
                Some(sent) => format!("{sent}: {}. Fix: {}", v.evidence, v.check.fix()),
                None => format!("{}. Fix: {}", v.evidence, v.check.fix()),
            };
            let mut place = json!({
                "logicalLocations": [{
                    "name": v.parameter,
                    "fullyQualifiedName": location,
                    "kind": "parameter",
                }],
            });
            if let Some(uri) = artifact {
                place["physicalLocation"] = json!({
                    "artifactLocation": {"uri": uri},
                    "region": {"startLine": 1},
                });
            }
            Some(json!({
                "ruleId": v.check.id(),
                "ruleIndex": index,
                "level": level,
                "message": {"text": message},
                "locations": [place],
                "partialFingerprints": {
                    "toolscoreEscape/v1": format!("{}:{}:{location}", v.check.id(), report.source),
                },
            }))
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "toolscore",
                "semanticVersion": version,
                "version": version,
                "rules": rules,
            }},
            "results": results,
            "properties": {"source": report.source, "calls": report.calls},
        }]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolscore_core::catalog::source::ServerIdentity;
    use toolscore_mcp::{EscapeVerdict, ToolCalls};

    fn report() -> EscapeReport {
        let verdict = |check, parameter: &str, verdict| EscapeVerdict {
            check,
            tool: "read_note".into(),
            parameter: parameter.into(),
            verdict,
            sent: Some(format!("read_note.{parameter} = \"/etc/passwd\"")),
            evidence: "the result holds \"root:x:0:0:\"".into(),
            calls: 1,
        };
        EscapeReport {
            source: "python3 s.py".into(),
            server: ServerIdentity {
                name: "s".into(),
                version: "1".into(),
                protocol_version: "2025-06-18".into(),
            },
            max_calls: 2,
            verdicts: vec![
                verdict(EscapeCheck::PathTraversal, "path", CheckVerdict::Fail),
                verdict(EscapeCheck::SchemaSmuggling, "path", CheckVerdict::Warn),
                verdict(EscapeCheck::ShellInjection, "note", CheckVerdict::Pass),
            ],
            tools: vec![ToolCalls {
                tool: "read_note".into(),
                calls: 2,
                planned: 9,
                cut: 7,
                after_proof: 0,
                unanswered: 0,
            }],
            calls: 2,
        }
    }

    #[test]
    fn sarif_has_a_rule_per_check_and_a_result_per_fail_or_warn() {
        let s = escapes_sarif(&report(), Some("s.py"), "0.1.0");
        assert_eq!(s["version"], "2.1.0");
        let run = &s["runs"][0];
        assert_eq!(
            run["tool"]["driver"]["rules"].as_array().map(Vec::len),
            Some(4)
        );
        let results = run["results"].as_array().unwrap();
        assert_eq!(results.len(), 2, "a PASS is no result");
        assert_eq!(results[0]["level"], "error");
        assert_eq!(results[0]["ruleId"], "path-traversal");
        assert_eq!(results[1]["level"], "warning");
        assert_eq!(results[1]["ruleIndex"], 3);
        let place = &results[0]["locations"][0];
        assert_eq!(
            place["logicalLocations"][0]["fullyQualifiedName"],
            "read_note.path"
        );
        assert_eq!(place["physicalLocation"]["artifactLocation"]["uri"], "s.py");
        let unplaced = escapes_sarif(&report(), None, "0.1.0");
        assert!(unplaced["runs"][0]["results"][0]["locations"][0]["physicalLocation"].is_null());
    }

    #[test]
    fn text_marks_proof_and_says_what_the_bound_cut() {
        let mut out = Vec::new();
        render_escapes(&report(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("FAIL path-traversal read_note.path\n     sent: read_note.path = \"/etc/passwd\"\n     proof: the result holds"),
            "{text}"
        );
        assert!(
            text.contains("PASS shell-injection read_note.note\n     sent: read_note.note = \"/etc/passwd\"\n     the result holds"),
            "{text}"
        );
        assert!(text.contains("calls per tool (at most 2):\n  read_note    2  (7 of 9 payloads cut by the bound)\n"), "{text}");
        assert!(
            text.ends_with("3 verdicts: 1 pass, 1 warn, 1 fail, 0 skipped; 2 calls in total\n"),
            "{text}"
        );
    }
}
