//! The gates a run was judged by, read back from its `summary.json`: `toolscore report`
//! re-applies them when it is given no `--gate`, so re-rendering a gated run keeps its verdict
//! (a run's gates are part of its record).

use super::GateSpec;
use toolscore_stats::SequentialKind;
use toolscore_summary::{GateLevel, GateReport, GateResult};

/// How a run gated sequentially: its test, and p₁ when it was not the default
/// t + (1 − t)/2 (what `--sprt-p1` said).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecordedSequential {
    pub kind: SequentialKind,
    pub p1: Option<f64>,
    /// p₁ at the gate's threshold, default or not, for naming the SPRT's flag.
    pub p1_at_gate: f64,
    /// `--fail-below`: the indifference-zone FAIL's rate, when the run asked for it.
    pub fail_below: Option<f64>,
}

/// What `report` needs to judge a run again the way it was judged.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedGates {
    /// Each (metric, threshold) once, in the order the run gave them.
    pub specs: Vec<GateSpec>,
    pub level: GateLevel,
    /// `Some` when the run gated sequentially (`--sequential`).
    pub sequential: Option<RecordedSequential>,
    /// Results against a baseline run, kept as judged: `report` does not read that run again.
    pub baseline: Vec<GateResult>,
}

impl RecordedGates {
    /// The flags that would judge the run this way, for a notice: `--gate 'pass>=0.8'
    /// --gate-level case --sequential`.
    pub fn as_flags(&self) -> String {
        let mut words: Vec<String> = self
            .specs
            .iter()
            .map(|s| {
                format!(
                    "--gate '{}{}{}'",
                    s.metric.label(),
                    s.metric.op(),
                    s.threshold
                )
            })
            .collect();
        if !self.specs.is_empty() {
            let level = match self.level {
                GateLevel::Case => "case",
                GateLevel::Tool => "tool",
                GateLevel::Suite | GateLevel::Baseline => "suite",
            };
            words.push(format!("--gate-level {level}"));
        }
        if let Some(q) = self.sequential {
            words.push("--sequential".to_owned());
            if q.kind == SequentialKind::Sprt {
                words.push(format!("--sprt-p1 {}", q.p1_at_gate));
            }
            if let Some(rate) = q.fail_below {
                words.push(format!("--fail-below {rate}"));
            }
        }
        if !self.baseline.is_empty() {
            words.push("and its baseline verdict as recorded".to_owned());
        }
        words.join(" ")
    }
}

/// The gates behind a recorded verdict.
pub fn recorded(report: &GateReport) -> RecordedGates {
    let mut specs: Vec<GateSpec> = Vec::new();
    let mut level = GateLevel::Suite;
    let mut sequential = None;
    let mut baseline = Vec::new();
    for g in &report.gates {
        if g.level == GateLevel::Baseline {
            baseline.push(g.clone());
            continue;
        }
        level = g.level;
        sequential = sequential.or(g.sequential.as_ref().map(|s| {
            let default_p1 = g.threshold + (1.0 - g.threshold) / 2.0;
            RecordedSequential {
                kind: s.test,
                // Only the SPRT has an alternative to restore (the suite gate records its
                // bar in this field).
                p1: (s.test == SequentialKind::Sprt && (s.p1 - default_p1).abs() > 1e-12)
                    .then_some(s.p1),
                p1_at_gate: s.p1,
                fail_below: s.fail_below,
            }
        }));
        let spec = GateSpec {
            metric: g.metric,
            threshold: g.threshold,
        };
        // One result per arm: the spec once.
        if !specs.contains(&spec) {
            specs.push(spec);
        }
    }
    RecordedGates {
        specs,
        level,
        sequential,
        baseline,
    }
}
