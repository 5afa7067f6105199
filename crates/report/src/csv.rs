//! `results.csv`: one flat row per trial for spreadsheets, written beside `results.jsonl` as
//! trials finish (an observer of the run).

use std::path::Path;

use toolscore_core::Error;
use toolscore_core::TrialRecord;
use toolscore_core::{Control, Observer, RunEvent};

/// `results.csv`: one flat row per trial for spreadsheets, written beside `results.jsonl`.
pub struct ResultsCsv(csv::Writer<std::fs::File>);

impl ResultsCsv {
    const HEADER: [&'static str; 18] = [
        "dataset",
        "case_id",
        "trial_index",
        "outcome",
        "selection_ok",
        "args_ok",
        "schema_ok",
        "failure",
        "detail",
        "latency_ms",
        "attempts",
        "input_tokens",
        "output_tokens",
        "error_class",
        // The arm, last so that the columns before it keep their places.
        "variant",
        "provider",
        "model",
        // Empty when unknown (no price), never 0 for unknown.
        "cost_usd",
    ];

    /// Creates the file and writes its header row.
    pub fn create(path: &Path) -> Result<Self, Error> {
        Self::create_io(path).map_err(|e| Error::io(format!("cannot create {}", path.display()), e))
    }

    fn create_io(path: &Path) -> std::io::Result<Self> {
        let mut w = csv::Writer::from_path(path).map_err(std::io::Error::other)?;
        w.write_record(Self::HEADER)
            .map_err(std::io::Error::other)?;
        Ok(ResultsCsv(w))
    }

    /// Appends one trial's row.
    pub fn append_record(&mut self, r: &TrialRecord) -> Result<(), Error> {
        self.append(r)
            .map_err(|e| Error::io("cannot write results.csv", e))
    }

    /// Appends one trial's row without flushing it (`merge` writes a million rows; [`Self::flush`]
    /// at the end).
    pub fn append_buffered(&mut self, r: &TrialRecord) -> Result<(), Error> {
        self.row(r)
            .map_err(|e| Error::io("cannot write results.csv", e))
    }

    /// Writes out buffered rows.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.0
            .flush()
            .map_err(|e| Error::io("cannot write results.csv", e))
    }

    fn append(&mut self, r: &TrialRecord) -> std::io::Result<()> {
        self.row(r)?;
        self.0.flush()
    }

    fn row(&mut self, r: &TrialRecord) -> std::io::Result<()> {
        let opt = |v: Option<bool>| v.map_or(String::new(), |b| b.to_string());
        let num = |v: Option<u64>| v.map_or(String::new(), |n| n.to_string());
        let score = r.score.as_ref();
        let label = |v: Option<String>| v.unwrap_or_default();
        let row = [
            r.dataset.clone(),
            r.case_id.clone(),
            r.trial_index.to_string(),
            label(
                serde_json::to_value(r.outcome)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned)),
            ),
            opt(score.map(|s| s.selection_ok)),
            opt(score.and_then(|s| s.args_ok)),
            opt(score.and_then(|s| s.schema_ok)),
            label(
                score
                    .and_then(|s| s.failure)
                    .and_then(|f| serde_json::to_value(f).ok()?.as_str().map(str::to_owned)),
            ),
            label(
                score
                    .and_then(|s| s.detail.clone())
                    .or_else(|| r.error.clone()),
            ),
            format!("{:.3}", r.latency_ms),
            r.attempts.to_string(),
            num(r.usage.input_tokens),
            num(r.usage.output_tokens),
            r.error_class
                .map_or(String::new(), |c| c.as_str().to_owned()),
            r.arm.variant.clone(),
            r.arm.provider.clone(),
            r.arm.model.clone(),
            r.cost.as_ref().map_or(String::new(), |c| c.usd.to_string()),
        ];
        self.0.write_record(&row).map_err(std::io::Error::other)
    }
}

impl Observer for ResultsCsv {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<Control, Error> {
        if let RunEvent::Trial { record, .. } = event {
            self.append(record)
                .map_err(|e| Error::io("cannot write results.csv", e))?;
        }
        Ok(Control::Continue)
    }
}
