//! Record and replay of raw provider responses.
//!
//! A cassette is JSON Lines (gzip-compressed when its name ends in `.gz`): a header naming the
//! provider kind, model, sampling parameters and the fingerprint of every catalog it was
//! recorded against, then one entry per trial holding the response body exactly as received
//! (or the infrastructure error), keyed by the hash of the normalized request and the trial
//! index. Replay serves trial *i* of a request from entry *i*, decoded by the same adapter,
//! with the recorded latency and attempt count, so a replayed run reproduces the recorded
//! run's summary exactly. Nothing is ever fetched live during replay: a request without a
//! recording is an error, not a fallback.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::{ErrorClass, Exchange, PreparedRequest, Provider, ProviderError, ProviderKind};
use crate::error::InputError;

/// Bumped when the layout changes incompatibly.
pub const CASSETTE_FORMAT: u32 = 1;

/// First line of a cassette.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CassetteHeader {
    pub toolscore_cassette: u32,
    pub provider_kind: ProviderKind,
    pub model: String,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    /// Where the responses came from (informational; never holds a key).
    pub base_url: String,
    pub recorded_at: String,
    pub toolscore_version: String,
    /// Catalog variant the model saw (`base` until variants exist).
    pub variant: String,
    /// Dataset name → fingerprint of the catalog it was recorded against.
    pub catalogs: BTreeMap<String, String>,
    /// What the recording is, in the recorder's words (e.g. the exact model build).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One recorded trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CassetteEntry {
    pub request_hash: String,
    pub dataset: String,
    pub case_id: String,
    pub trial_index: u32,
    pub attempts: u32,
    pub latency_ms: f64,
    /// The response body exactly as received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Or the infrastructure error the trial ended in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RecordedError>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedError {
    pub class: ErrorClass,
    pub status: Option<u16>,
    pub message: String,
}

impl CassetteEntry {
    /// The entry for one finished trial: the raw body on success, the error otherwise. Error
    /// messages are already redacted by the provider.
    pub fn from_result(
        request_hash: &str,
        dataset: &str,
        case_id: &str,
        trial_index: u32,
        result: &Result<Exchange, ProviderError>,
        latency_ms: f64,
    ) -> Self {
        let (attempts, body, error) = match result {
            Ok(ex) => (
                ex.attempts,
                Some(String::from_utf8_lossy(&ex.raw_body).into_owned()),
                None,
            ),
            Err(e) => (
                e.attempts,
                None,
                Some(RecordedError {
                    class: e.class,
                    status: e.status,
                    message: e.message.clone(),
                }),
            ),
        };
        CassetteEntry {
            request_hash: request_hash.to_owned(),
            dataset: dataset.to_owned(),
            case_id: case_id.to_owned(),
            trial_index,
            attempts,
            latency_ms,
            body,
            error,
        }
    }
}

fn is_gzip(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "gz")
}

/// Appends entries as trials finish. Gzip cassettes are only complete after `finish`.
pub struct CassetteWriter {
    path: PathBuf,
    out: Box<dyn Write + Send>,
}

impl CassetteWriter {
    pub fn create(path: &Path, header: &CassetteHeader) -> std::io::Result<CassetteWriter> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let file = BufWriter::new(std::fs::File::create(path)?);
        let out: Box<dyn Write + Send> = if is_gzip(path) {
            Box::new(flate2::write::GzEncoder::new(
                file,
                flate2::Compression::best(),
            ))
        } else {
            Box::new(file)
        };
        let mut w = CassetteWriter {
            path: path.to_owned(),
            out,
        };
        w.write_line(header)?;
        Ok(w)
    }

    pub fn append(&mut self, entry: &CassetteEntry) -> std::io::Result<()> {
        self.write_line(entry)
    }

    fn write_line<T: Serialize>(&mut self, value: &T) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.out, value)?;
        self.out.write_all(b"\n")
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn finish(mut self) -> std::io::Result<()> {
        self.out.flush()?;
        // Dropping the encoder writes the gzip trailer; flush first so errors surface here.
        drop(self.out);
        Ok(())
    }
}

/// A loaded cassette, indexed by request hash and trial index.
pub struct Cassette {
    pub path: PathBuf,
    pub header: CassetteHeader,
    entries: HashMap<String, Vec<Option<CassetteEntry>>>,
}

impl Cassette {
    /// Reads and indexes a cassette; a malformed one is bad input (exit 2).
    pub fn load(path: &Path) -> Result<Cassette, InputError> {
        let file_name = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|e| InputError::io(path, &e))?;
        let reader: Box<dyn Read> = if is_gzip(path) {
            Box::new(flate2::read::GzDecoder::new(file))
        } else {
            Box::new(file)
        };
        let mut lines = BufReader::new(reader).lines();
        let bad = |line: usize, msg: String| InputError::at(&file_name, Some(line), "", &msg);
        let header_text = match lines.next() {
            Some(Ok(l)) => l,
            Some(Err(e)) => return Err(bad(1, format!("cannot read cassette: {e}"))),
            None => return Err(bad(1, "empty cassette".into())),
        };
        let header: CassetteHeader = serde_json::from_str(&header_text).map_err(|e| {
            bad(
                1,
                format!(
                    "not a toolscore cassette header: {}",
                    crate::error::strip_position(&e.to_string())
                ),
            )
        })?;
        if header.toolscore_cassette != CASSETTE_FORMAT {
            return Err(bad(
                1,
                format!(
                    "cassette format {} is not supported (this toolscore reads format {CASSETTE_FORMAT})",
                    header.toolscore_cassette
                ),
            ));
        }
        let mut entries: HashMap<String, Vec<Option<CassetteEntry>>> = HashMap::new();
        for (i, line) in lines.enumerate() {
            let n = i + 2;
            let line = line.map_err(|e| {
                bad(
                    n,
                    format!("cannot read cassette (truncated recording?): {e}"),
                )
            })?;
            if line.trim().is_empty() {
                continue;
            }
            let entry: CassetteEntry = serde_json::from_str(&line).map_err(|e| {
                bad(
                    n,
                    format!(
                        "invalid cassette entry: {}",
                        crate::error::strip_position(&e.to_string())
                    ),
                )
            })?;
            if entry.body.is_none() == entry.error.is_none() {
                return Err(bad(
                    n,
                    "a cassette entry needs exactly one of `body` and `error`".into(),
                ));
            }
            let slots = entries.entry(entry.request_hash.clone()).or_default();
            let idx = entry.trial_index as usize;
            if slots.len() <= idx {
                slots.resize(idx + 1, None);
            }
            slots[idx] = Some(entry);
        }
        Ok(Cassette {
            path: path.to_owned(),
            header,
            entries,
        })
    }

    /// How many consecutive trials (0, 1, …) are recorded for this request.
    pub fn recorded_trials(&self, request_hash: &str) -> u32 {
        self.entries.get(request_hash).map_or(0, |slots| {
            slots.iter().take_while(|s| s.is_some()).count() as u32
        })
    }

    fn entry(&self, request_hash: &str, trial_index: u32) -> Option<&CassetteEntry> {
        self.entries
            .get(request_hash)?
            .get(trial_index as usize)?
            .as_ref()
    }
}

/// Serves trials from a cassette, decoding bodies with the adapter that recorded them.
pub struct Replay {
    pub cassette: Cassette,
    decoder: Provider,
}

impl Replay {
    /// `decoder` must be built from the cassette header's kind, model and parameters so that
    /// `prepare` yields the recorded request hashes.
    pub fn new(cassette: Cassette, decoder: Provider) -> Replay {
        Replay { cassette, decoder }
    }

    pub fn decoder(&self) -> &Provider {
        &self.decoder
    }

    /// The recorded response (or error) and its recorded latency.
    pub fn serve(
        &self,
        req: &PreparedRequest,
        trial_index: u32,
    ) -> (Result<Exchange, ProviderError>, Duration) {
        let Some(entry) = self.cassette.entry(&req.request_hash, trial_index) else {
            let err = ProviderError {
                class: ErrorClass::ClientError,
                status: None,
                message: format!(
                    "no recording for trial {trial_index} of request {} in {}",
                    req.request_hash,
                    self.cassette.path.display()
                ),
                attempts: 0,
            };
            return (Err(err), Duration::ZERO);
        };
        let latency = Duration::from_secs_f64(entry.latency_ms.max(0.0) / 1000.0);
        let result = match (&entry.body, &entry.error) {
            (Some(body), _) => self
                .decoder
                .decode(body.as_bytes())
                .map_err(|mut e| {
                    e.attempts = entry.attempts;
                    e
                })
                .map(|turn| Exchange {
                    turn,
                    raw_body: Bytes::copy_from_slice(body.as_bytes()),
                    attempts: entry.attempts,
                    latency,
                }),
            (None, Some(err)) => Err(ProviderError {
                class: err.class,
                status: err.status,
                message: err.message.clone(),
                attempts: entry.attempts,
            }),
            (None, None) => Err(ProviderError {
                class: ErrorClass::BadResponse,
                status: None,
                message: "empty cassette entry".into(),
                attempts: entry.attempts,
            }),
        };
        (result, latency)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> CassetteHeader {
        CassetteHeader {
            toolscore_cassette: CASSETTE_FORMAT,
            provider_kind: ProviderKind::OpenaiCompat,
            model: "m".into(),
            temperature: Some(0.7),
            max_tokens: None,
            base_url: "http://127.0.0.1:1/v1".into(),
            recorded_at: "2026-12-02T00:00:00Z".into(),
            toolscore_version: "0.1.0".into(),
            variant: "base".into(),
            catalogs: BTreeMap::from([("d".to_owned(), "sha256:x".to_owned())]),
            note: None,
        }
    }

    fn entry(trial_index: u32) -> CassetteEntry {
        CassetteEntry {
            request_hash: "h".into(),
            dataset: "d".into(),
            case_id: "c".into(),
            trial_index,
            attempts: 1,
            latency_ms: 12.5,
            body: Some("{}".into()),
            error: None,
        }
    }

    #[test]
    fn round_trips_plain_and_gzip_and_counts_consecutive_trials() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["c.jsonl", "c.jsonl.gz"] {
            let path = dir.path().join(name);
            let mut w = CassetteWriter::create(&path, &header()).unwrap();
            for i in [1, 0, 3] {
                w.append(&entry(i)).unwrap();
            }
            w.finish().unwrap();
            let c = Cassette::load(&path).unwrap();
            assert_eq!(c.header, header());
            assert_eq!(
                c.recorded_trials("h"),
                2,
                "trial 2 is missing, so only 0 and 1 count"
            );
            assert_eq!(c.recorded_trials("other"), 0);
            assert_eq!(c.entry("h", 3).map(|e| e.latency_ms), Some(12.5));
        }
    }

    #[test]
    fn malformed_cassettes_are_input_errors_with_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.jsonl");
        std::fs::write(&path, "{\"not\": \"a header\"}\n").unwrap();
        let msg = Cassette::load(&path).err().unwrap().to_string();
        assert!(
            msg.contains("bad.jsonl:1") && msg.contains("not a toolscore cassette header"),
            "{msg}"
        );
        let mut text = serde_json::to_string(&header()).unwrap();
        text.push_str("\n{\"request_hash\":\"h\",\"dataset\":\"d\",\"case_id\":\"c\",\"trial_index\":0,\"attempts\":1,\"latency_ms\":1}\n");
        std::fs::write(&path, text).unwrap();
        let msg = Cassette::load(&path).err().unwrap().to_string();
        assert!(
            msg.contains("bad.jsonl:2") && msg.contains("exactly one of `body` and `error`"),
            "{msg}"
        );
    }
}
