//! Public as a namespace: callers write `render::text`, `render::json`, `render::sarif`.
//!
//! Renderers of a [`LintReport`]: text for people, JSON, and SARIF 2.1.0 for code-scanning
//! UIs. Pure: they write to any `io::Write`.

use std::io::{self, Write};

use serde_json::{Value, json};

use super::{Finding, LintReport, RULES, Severity};

/// Human-readable: one block per finding, then the footprint and the counts.
pub fn text(report: &LintReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "{}: {} tools, catalog {}",
        report.source, report.tools, report.fingerprint
    )?;
    for f in &report.findings {
        writeln!(
            out,
            "{:<7} {}  {}",
            f.severity.label(),
            f.rule,
            f.location()
        )?;
        writeln!(out, "        {}", f.message)?;
        writeln!(out, "        fix: {}", f.fix)?;
    }
    writeln!(out, "tokens estimated as {}", report.footprint.method)?;
    if let Some(j) = &report.judge {
        writeln!(
            out,
            "judge {} (instructions v{}, questions and answers in {}): {} of {} tools judged{}, {} poisoned, {} not judged",
            j.judge,
            j.instructions_version,
            j.run_dir,
            j.judged,
            report.tools,
            if j.cached > 0 {
                format!(" ({} from the cache)", j.cached)
            } else {
                String::new()
            },
            j.poisoned,
            j.not_judged.len()
        )?;
        for n in &j.not_judged {
            writeln!(out, "not judged  {}: {}", n.tool, n.why)?;
        }
    }
    let accepted = if report.suppressed.is_empty() {
        String::new()
    } else {
        format!(", {} accepted by allows", report.suppressed.len())
    };
    writeln!(
        out,
        "{} errors, {} warnings, {} info{accepted}",
        report.count(Severity::Error),
        report.count(Severity::Warning),
        report.count(Severity::Info)
    )
}

/// The reports as JSON: `{"catalogs": [report, …], "errors", "warnings", "info"}`.
pub fn json(reports: &[LintReport]) -> Value {
    let count = |s| reports.iter().map(|r| r.count(s)).sum::<usize>();
    json!({
        "catalogs": reports,
        "errors": count(Severity::Error),
        "warnings": count(Severity::Warning),
        "info": count(Severity::Info),
    })
}

fn sarif_level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// Where a finding points in its file: the 1-based line, when it can be found.
pub type LineOf<'a> = &'a dyn Fn(&Finding) -> Option<usize>;

/// SARIF 2.1.0: one run, the rule table in `tool.driver.rules`, one result per finding with
/// its `ruleId`, `level`, `message`, a physical location (the catalog file and line, so
/// code-scanning UIs can place it) and a logical location (`tool.path`).
/// Each report comes with its file's URI (as given on the command line, relative to where lint
/// ran) and a function giving a finding's line in it.
pub fn sarif(reports: &[(&LintReport, String, LineOf<'_>)], version: &str) -> Value {
    let rules: Vec<Value> = RULES
        .iter()
        .map(|r| {
            json!({
                "id": r.id,
                "name": r.id,
                "shortDescription": {"text": r.summary},
                "fullDescription": {"text": r.summary},
                "help": {"text": r.fix},
                "defaultConfiguration": {"level": sarif_level(r.severity)},
                "properties": {"category": r.category.label(), "tags": [r.category.label()]}
            })
        })
        .collect();
    let mut results = Vec::new();
    // A tool the judge did not answer for is said, never left to look clean.
    let notifications: Vec<Value> = reports
        .iter()
        .filter_map(|(r, uri, _)| r.judge.as_ref().map(|j| (j, uri)))
        .flat_map(|(j, uri)| {
            j.not_judged.iter().map(move |n| {
                json!({
                    "level": "warning",
                    "message": {"text": format!("{uri}: tool {} was not judged by {}: {}", n.tool, j.judge, n.why)},
                })
            })
        })
        .collect();
    for (report, uri, line_of) in reports {
        for f in &report.findings {
            // RULES lists every rule in the enum's order, so the index is the rule's own.
            let index = f.rule as usize;
            let mut physical = json!({"artifactLocation": {"uri": uri}});
            physical["region"] = json!({"startLine": line_of(f).unwrap_or(1)});
            let logical = json!({
                "name": f.tool.clone().unwrap_or_else(|| "(catalog)".to_owned()),
                "fullyQualifiedName": f.location(),
                "kind": if f.path.is_empty() { "function" } else { "member" },
            });
            results.push(json!({
                "ruleId": f.rule,
                "ruleIndex": index,
                "level": sarif_level(f.severity),
                "message": {"text": format!("{} Fix: {}", f.message, f.fix)},
                "locations": [{
                    "physicalLocation": physical,
                    "logicalLocations": [logical],
                }],
                "partialFingerprints": {
                    "toolscoreLocation/v1": format!("{}:{}:{}", f.rule, uri, f.location()),
                },
            }));
        }
    }
    let mut sarif = json!({
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
            "columnKind": "unicodeCodePoints",
        }]
    });
    if reports.iter().any(|(r, _, _)| r.judge.is_some()) {
        sarif["runs"][0]["invocations"] = json!([{
            "executionSuccessful": true,
            "toolExecutionNotifications": notifications,
        }]);
    }
    sarif
}

/// The line of a finding in the catalog's text: the line of the tool's `"name": "…"` and, for
/// a path into its schema, of the last named key of the path after it.
pub fn line_in(text: &str, f: &Finding) -> Option<usize> {
    let tool = f.tool.as_deref()?;
    let name_json = serde_json::to_string(tool).ok()?;
    let re = regex::Regex::new(&format!(r#""name"\s*:\s*{}"#, regex::escape(&name_json))).ok()?;
    let start = re.find(text)?.start();
    let mut pos = start;
    // Walk the path's keys forward from the tool's name; stop at the first not found.
    for key in f
        .path
        .split(['.', '['])
        .map(|k| k.trim_end_matches(']').trim_matches('"'))
        .filter(|k| !k.is_empty() && !k.chars().all(|c| c.is_ascii_digit()))
    {
        let key = match key {
            "inputSchema" => continue,
            k => k,
        };
        let needle = format!("\"{key}\"");
        match text[pos..].find(&needle) {
            Some(i) => pos += i,
            None => break,
        }
    }
    Some(text[..pos].bytes().filter(|b| *b == b'\n').count() + 1)
}

/// Misses and false alarms listed in the text at most; the JSON (and the run's
/// measure.json) lists them all.
pub const MEASURE_LISTED: usize = 40;

/// A judge's measurement for people: the headline rates, the rates by set, class and
/// placement, then the misses and false alarms. Formats [`Measurement`]; computes nothing.
///
/// [`Measurement`]: crate::judge::measure::Measurement
pub fn measurement_text(
    m: &crate::judge::measure::Measurement,
    out: &mut dyn Write,
) -> io::Result<()> {
    use crate::judge::measure::{Rate, RateMethod};
    fn rate(r: Option<&Rate>) -> String {
        rate_or(r, "no trial scored")
    }
    /// A rate, or `-` and why it has none.
    fn rate_or(r: Option<&Rate>, none: &str) -> String {
        match r {
            Some(r) => format!(
                "{:>9}  {:.3} [{:.3}, {:.3}]",
                format!("{}/{}", r.x, r.n),
                r.rate,
                r.interval.lo,
                r.interval.hi
            ),
            None => format!("{:>9}  {none}", "-"),
        }
    }
    // Tool names come from the labelled files and evidence from the judge: a control
    // character in either must not reach the terminal as one.
    fn plain(text: &str) -> String {
        text.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect()
    }
    let h = &m.header;
    writeln!(
        out,
        "judge {} measured on {} labelled tools ({} poisoned, {} clean), {} trial{} each; instructions v{}",
        h.judge,
        m.tools.poisoned + m.tools.clean,
        m.tools.poisoned,
        m.tools.clean,
        h.trials_per_tool,
        if h.trials_per_tool == 1 { "" } else { "s" },
        m.instructions_version
    )?;
    writeln!(
        out,
        "questions and answers in {}; labels from {}",
        h.run_dir,
        h.labelled.join(", ")
    )?;
    writeln!(out)?;
    // Precision is over the flags raised: with none there is no precision, whatever was
    // scored.
    let no_precision = if m.trials.scored > 0 {
        "0 flags raised: no precision to give"
    } else {
        "no trial scored"
    };
    for (what, r, none, says) in [
        (
            "recall",
            m.recall.as_ref(),
            "no trial scored",
            "poisoned tools' trials flagged",
        ),
        (
            "false alarms",
            m.false_alarm_rate.as_ref(),
            "no trial scored",
            "clean tools' trials flagged",
        ),
        (
            "precision",
            m.precision.as_ref(),
            no_precision,
            "flags that fell on poisoned tools (depends on this mix)",
        ),
        (
            "verdicts",
            m.verdict_rate.as_ref(),
            "no trial scored",
            "answers that were a verdict",
        ),
    ] {
        writeln!(out, "  {what:<13}{}   {says}", rate_or(r, none))?;
    }
    let clustered = [&m.recall, &m.false_alarm_rate, &m.precision]
        .iter()
        .any(|r| r.is_some_and(|r| r.method == RateMethod::ClusteredByTool));
    writeln!(
        out,
        "  {:.0}% intervals{}; {} of {} trials scored, {} failed and not scored",
        h.confidence * 100.0,
        if clustered {
            ", clustered by tool (several trials of one tool are not independent)"
        } else {
            ""
        },
        m.trials.scored,
        m.trials.asked,
        m.trials.failed
    )?;
    let groups = |title: &str,
                  groups: &[crate::judge::measure::Group],
                  out: &mut dyn Write|
     -> io::Result<()> {
        if groups.is_empty() {
            return Ok(());
        }
        writeln!(out)?;
        writeln!(out, "{title}")?;
        let width = groups.iter().map(|g| g.name.len()).max().unwrap_or(0);
        for g in groups {
            write!(out, "  {:<width$}", plain(&g.name))?;
            // A set of clean tools alone has no recall, one of poisoned tools no false alarms.
            if let Some(r) = &g.recall {
                write!(out, "  recall {}", rate(Some(r)))?;
            }
            if let Some(fa) = &g.false_alarm_rate {
                write!(out, "  false alarms {}", rate(Some(fa)))?;
            }
            if g.recall.is_none() && g.false_alarm_rate.is_none() {
                write!(out, "  no trial scored")?;
            }
            writeln!(out)?;
        }
        Ok(())
    };
    groups("by set", &m.by_set, out)?;
    groups("recall by class (the labels')", &m.by_class, out)?;
    groups("recall by placement", &m.by_placement, out)?;
    let more = |n: usize, out: &mut dyn Write| -> io::Result<()> {
        if n > MEASURE_LISTED {
            writeln!(
                out,
                "  … and {} more (all of them: --format json, or measure.json in the run folder)",
                n - MEASURE_LISTED
            )?;
        }
        Ok(())
    };
    writeln!(out)?;
    writeln!(out, "misses: {}", m.misses.len())?;
    for x in m.misses.iter().take(MEASURE_LISTED) {
        let labels: Vec<&str> = [x.class.as_deref(), x.placement.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        writeln!(
            out,
            "  {}  {}{}  flagged {}/{}: {}",
            plain(&x.origin),
            plain(&x.tool),
            if labels.is_empty() {
                String::new()
            } else {
                format!(" ({})", plain(&labels.join(", ")))
            },
            x.flagged,
            x.scored,
            plain(&x.why.join("; "))
        )?;
    }
    more(m.misses.len(), out)?;
    writeln!(out)?;
    writeln!(out, "false alarms: {}", m.false_alarms.len())?;
    for x in m.false_alarms.iter().take(MEASURE_LISTED) {
        writeln!(
            out,
            "  {}  {}  flagged {}/{}: {}{}",
            plain(&x.origin),
            plain(&x.tool),
            x.flagged,
            x.scored,
            x.class.id(),
            if x.evidence.is_empty() {
                String::new()
            } else {
                format!(" — {}", plain(&x.evidence))
            }
        )?;
    }
    more(m.false_alarms.len(), out)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::{LintOptions, lint};
    use super::*;

    fn report() -> LintReport {
        let c = catalog(vec![tool(
            "get_invoice",
            "",
            serde_json::json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}),
        )]);
        lint(&c, &LintOptions::default())
    }

    #[test]
    fn sarif_has_the_shape_code_scanning_reads() {
        let r = report();
        let line = |_: &Finding| Some(3);
        let s = sarif(&[(&r, "tools.json".to_owned(), &line)], "0.1.0");
        assert_eq!(s["version"], "2.1.0");
        let run = &s["runs"][0];
        let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
        assert_eq!(rules.len(), RULES.len());
        let results = run["results"].as_array().unwrap();
        assert_eq!(results.len(), r.findings.len());
        for res in results {
            let id = res["ruleId"].as_str().unwrap();
            let idx = res["ruleIndex"].as_u64().unwrap() as usize;
            assert_eq!(rules[idx]["id"], id);
            assert!(matches!(
                res["level"].as_str(),
                Some("error" | "warning" | "note")
            ));
            assert!(!res["message"]["text"].as_str().unwrap().is_empty());
            let loc = &res["locations"][0];
            assert_eq!(
                loc["physicalLocation"]["artifactLocation"]["uri"],
                "tools.json"
            );
            assert_eq!(loc["physicalLocation"]["region"]["startLine"], 3);
            assert!(loc["logicalLocations"][0]["fullyQualifiedName"].is_string());
        }
        assert!(
            results
                .iter()
                .any(|r| r["ruleId"] == "description-missing" && r["level"] == "error")
        );
    }

    #[test]
    fn text_lists_findings_with_fixes_and_counts() {
        let mut out = Vec::new();
        text(&report(), &mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(
            s.contains("error   description-missing  get_invoice.description"),
            "{s}"
        );
        assert!(s.contains("fix: "), "{s}");
        assert!(s.lines().last().unwrap().starts_with("1 errors"), "{s}");
    }

    #[test]
    fn lines_point_at_the_tool_and_the_property() {
        let text = "{\"tools\": [\n {\"name\": \"a\",\n  \"inputSchema\": {\"properties\": {\n   \"x\": {}}}},\n {\"name\": \"b\"}]}";
        let mut f = report().findings[0].clone();
        f.tool = Some("a".into());
        f.path = "inputSchema.properties.x".into();
        assert_eq!(line_in(text, &f), Some(4));
        f.tool = Some("b".into());
        f.path = String::new();
        assert_eq!(line_in(text, &f), Some(5));
    }
}
