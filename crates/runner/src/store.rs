//! The results store: `results.jsonl`, one `TrialRecord` per line, appended and flushed as each
//! trial finishes, so a killed run loses at most the trials in flight.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use toolscore_core::Error;
use toolscore_core::TrialRecord;
use toolscore_core::{Control, Observer, RunEvent};

/// Appends every finished trial to `results.jsonl`.
pub struct ResultsStore {
    path: PathBuf,
    out: BufWriter<std::fs::File>,
}

impl ResultsStore {
    /// Opens (creating or appending to) `path`.
    pub fn open(path: &Path) -> Result<Self, Error> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| Error::io(format!("cannot open {}", path.display()), e))?;
        Ok(ResultsStore {
            path: path.to_owned(),
            out: BufWriter::new(file),
        })
    }

    fn append(&mut self, record: &TrialRecord) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.out, record)?;
        self.out.write_all(b"\n")?;
        self.out.flush()
    }
}

impl Observer for ResultsStore {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<Control, Error> {
        if let RunEvent::Trial { record, .. } = event {
            self.append(record)
                .map_err(|e| Error::io(format!("cannot write {}", self.path.display()), e))?;
        }
        Ok(Control::Continue)
    }
}
