//! A finished run's summary rebuilt from its `results.jsonl` alone, streaming one record at a
//! time: what `report`, `merge`, `--resume` and `compare` read a run folder with.

use std::path::Path;

use super::aggregate::Aggregator;
use super::{LatencyDistributions, Summary, SummaryHeader};
use toolscore_core::RunTotals;
use toolscore_core::TrialRecord;
use toolscore_core::{Error, InputError};

/// Re-aggregates a run from its `results.jsonl` alone, streaming one record at a time: the
/// same summary the run wrote, given its header (what records do not hold: when and how it
/// ran, how many trials were planned or skipped). A line that is not a record is bad input
/// (file and line).
pub fn reaggregate(
    results: &Path,
    header: SummaryHeader,
    confidence: f64,
    precision: f64,
) -> Result<Summary, Error> {
    reaggregate_with_latency(results, header, confidence, precision).map(|(summary, _)| summary)
}

/// [`reaggregate`], with the latency distributions a latency gate needs.
pub fn reaggregate_with_latency(
    results: &Path,
    header: SummaryHeader,
    confidence: f64,
    precision: f64,
) -> Result<(Summary, LatencyDistributions), Error> {
    reaggregate_rescored(results, header, confidence, precision, &mut |_| {})
}

/// [`reaggregate_with_latency`], with each record passed through `rescore` before it is counted
/// (`toolscore report` re-scores a run whose fixtures changed since).
pub fn reaggregate_rescored(
    results: &Path,
    header: SummaryHeader,
    confidence: f64,
    precision: f64,
    rescore: &mut dyn FnMut(&mut TrialRecord),
) -> Result<(Summary, LatencyDistributions), Error> {
    let mut agg = Aggregator::new();
    let mut completed = 0;
    for_each_record_mut(results, &mut |record| {
        rescore(record);
        agg.add(record);
        completed += 1;
    })?;
    let totals = RunTotals {
        planned_trials: header.planned_trials,
        completed_trials: completed,
        skipped_trials: header.skipped_trials,
        budget_not_run: header.budget.as_ref().map_or(0, |b| b.not_run),
        interrupted: header.interrupted,
        failures: header.failures(),
    };
    let latency = agg.latency_distributions();
    let budget = header.budget.clone();
    let mut summary = agg.finish(header.run, &totals, confidence, precision);
    summary.budget = budget;
    Ok((summary, latency))
}

/// Every record of a results.jsonl, in file order (the order the run finished them), streamed:
/// memory does not grow with the number of trials.
pub fn for_each_record(results: &Path, f: &mut dyn FnMut(&TrialRecord)) -> Result<(), Error> {
    for_each_record_mut(results, &mut |r| f(r))
}

/// [`for_each_record`], handing each record over to be changed (re-scored) before use.
pub fn for_each_record_mut(
    results: &Path,
    f: &mut dyn FnMut(&mut TrialRecord),
) -> Result<(), Error> {
    let name = results.display().to_string();
    let lines = toolscore_core::jsonl_lines(
        results,
        "a results file",
        toolscore_core::MAX_RECORD_LINE_BYTES,
    )?;
    for (i, line) in lines.enumerate() {
        let line = line.map_err(|e| toolscore_core::line_error(&name, i + 1, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let mut record: TrialRecord = serde_json::from_str(&line)
            .map_err(|e| InputError::json_line(&name, i + 1, "not a trial record", &e))?;
        f(&mut record);
    }
    Ok(())
}
