//! Public as a namespace: callers write `cassette::Cassette`, `cassette::CassetteRecorder`, `cassette::Replay`.
//!
//! Record and replay of raw provider responses.
//!
//! A cassette is JSON Lines (gzip-compressed when its name ends in `.gz`): a header naming the
//! provider kind, model, sampling parameters and the fingerprint of every catalog it was
//! recorded against, then one entry per step of each trial holding the response body exactly
//! as received (or the infrastructure error), keyed by the hash of the conversation's opening
//! request, the trial index and the step. Replay serves step *s* of trial *i* of a conversation
//! from its entry, decoded by the same adapter,
//! with the recorded latency and attempt count, so a replayed run reproduces the recorded
//! run's summary exactly. Nothing is ever fetched live during replay: a request without a
//! recording is an error, not a fallback.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::{ErrorClass, Exchange, Provider, ProviderError, ProviderKind, StepKey};
use toolscore_core::BoundedLines;
use toolscore_core::{Control, Observer, RawResponse, RunEvent};
use toolscore_core::{Error, InputError};

/// Bumped when the layout changes incompatibly. Format 2 added `step` to every entry.
pub const CASSETTE_FORMAT: u32 = 2;

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
    /// `tool_choice` sent while recording, when configured. Recordings made before requests
    /// carried only configured fields have none here but were sent `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<super::ToolChoice>,
    /// `parallel_tool_calls` sent while recording, when configured (see `tool_choice`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// Whether the requests were sent as the author wrote them: catalogs in the author's
    /// property order and only the configured fields. `false` (absent) for recordings made
    /// before: their requests sent properties sorted by name, `tool_choice: auto` and
    /// `parallel_tool_calls: true`. They replay all the same (request hashes read canonical
    /// JSON), and the report says which form they were made with.
    #[serde(default)]
    pub requests_as_written: bool,
    /// tune's `--author`, when its requests are recorded here beside the trials: what a replay
    /// needs to hash and decode them as they were sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<RecordedProvider>,
}

/// A provider whose requests a cassette holds besides its own (tune's `--author`): its name
/// and everything its request hash and decoder read. Never a key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedProvider {
    pub name: String,
    pub provider_kind: ProviderKind,
    pub model: String,
    pub base_url: String,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<super::ToolChoice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
}

impl RecordedProvider {
    pub fn of(s: &super::ProviderSettings) -> RecordedProvider {
        RecordedProvider {
            name: s.name.clone(),
            provider_kind: s.kind,
            model: s.model.clone(),
            base_url: s.base_url.clone(),
            temperature: s.temperature,
            max_tokens: s.max_tokens,
            tool_choice: s.tool_choice,
            parallel_tool_calls: s.parallel_tool_calls,
        }
    }

    /// Settings that prepare the recorded requests (the same hashes) and decode their answers.
    pub fn settings(&self) -> super::ProviderSettings {
        let mut s = super::ProviderSettings::new(
            self.provider_kind,
            &self.name,
            self.base_url.clone(),
            self.model.clone(),
        );
        s.temperature = self.temperature;
        s.max_tokens = self.max_tokens;
        s.tool_choice = self.tool_choice;
        s.parallel_tool_calls = self.parallel_tool_calls;
        s
    }
}

/// One recorded trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CassetteEntry {
    pub request_hash: String,
    pub dataset: String,
    pub case_id: String,
    pub trial_index: u32,
    /// The step within the trial (0 for the opening request).
    pub step: u32,
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
struct RecordedError {
    pub class: ErrorClass,
    pub status: Option<u16>,
    pub message: String,
}

fn is_gzip(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "gz")
}

/// Lines written to a cassette together: a crash loses at most the batch being filled.
const BATCH_LINES: usize = 64;
/// A batch is also written when it is this old, so a slow live run loses at most this much.
const BATCH_AGE: Duration = Duration::from_secs(1);

/// Appends entries as trials finish, in batches that are complete on disk once written: plain
/// cassettes as whole lines, gzip ones as one gzip member per batch (a multi-member gzip file
/// is a valid gzip file), so after a crash everything before the last batch replays.
struct CassetteWriter {
    path: PathBuf,
    file: BufWriter<std::fs::File>,
    gzip: bool,
    pending: Vec<u8>,
    pending_lines: usize,
    last_write: std::time::Instant,
}

impl CassetteWriter {
    pub(crate) fn create(path: &Path, header: &CassetteHeader) -> std::io::Result<CassetteWriter> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let mut w = CassetteWriter {
            path: path.to_owned(),
            file: BufWriter::new(std::fs::File::create(path)?),
            gzip: is_gzip(path),
            pending: Vec::new(),
            pending_lines: 0,
            last_write: std::time::Instant::now(),
        };
        w.push_line(header)?;
        // The header alone is a readable (empty) cassette from the first moment.
        w.write_batch()?;
        Ok(w)
    }

    pub(crate) fn append(&mut self, entry: &CassetteEntry) -> std::io::Result<()> {
        self.push_line(entry)?;
        if self.pending_lines >= BATCH_LINES || self.last_write.elapsed() >= BATCH_AGE {
            self.write_batch()?;
        }
        Ok(())
    }

    fn push_line<T: Serialize>(&mut self, value: &T) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.pending, value)?;
        self.pending.push(b'\n');
        self.pending_lines += 1;
        Ok(())
    }

    fn write_batch(&mut self) -> std::io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        if self.gzip {
            let mut member = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            member.write_all(&self.pending)?;
            self.file.write_all(&member.finish()?)?;
        } else {
            self.file.write_all(&self.pending)?;
        }
        self.file.flush()?;
        self.pending.clear();
        self.pending_lines = 0;
        self.last_write = std::time::Instant::now();
        Ok(())
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn finish(mut self) -> std::io::Result<()> {
        self.write_batch()?;
        self.file.flush()
    }
}

/// Records every step of every trial to a cassette: an observer of the run's events.
pub struct CassetteRecorder {
    writer: Option<CassetteWriter>,
}

impl CassetteRecorder {
    /// Creates the cassette and writes its header.
    pub fn create(path: &Path, header: &CassetteHeader) -> Result<Self, Error> {
        let writer = CassetteWriter::create(path, header)
            .map_err(|e| Error::io(format!("cannot create cassette {}", path.display()), e))?;
        Ok(CassetteRecorder {
            writer: Some(writer),
        })
    }
}

/// Where a recorded step belongs: its conversation (the request hash), the case it was made
/// for, and the trial.
#[derive(Debug, Clone, Copy)]
pub struct EntryKey<'a> {
    pub request_hash: &'a str,
    pub dataset: &'a str,
    pub case_id: &'a str,
    pub trial_index: u32,
}

impl CassetteRecorder {
    /// Records one exchange made outside a run (tune's author requests) under `key`, as its
    /// conversation's step 0.
    pub fn record_exchange(
        &mut self,
        key: EntryKey<'_>,
        step: &toolscore_core::RawStep,
    ) -> Result<(), Error> {
        match &mut self.writer {
            Some(w) => write_step(w, key, step),
            None => Ok(()),
        }
    }

    /// Writes what is pending and closes the cassette, for a recorder that outlives one run
    /// (tune's phases): a run's own recorder closes at its `Finished` event.
    pub fn finish(mut self) -> Result<(), Error> {
        match self.writer.take() {
            Some(w) => {
                let path = w.path().display().to_string();
                w.finish()
                    .map_err(|e| Error::io(format!("cannot finish cassette {path}"), e))
            }
            None => Ok(()),
        }
    }
}

impl Observer for CassetteRecorder {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<Control, Error> {
        match event {
            RunEvent::Trial { record, raw, .. } => {
                let Some(w) = &mut self.writer else {
                    return Ok(Control::Continue);
                };
                for step in *raw {
                    let key = EntryKey {
                        request_hash: &record.request_hash,
                        dataset: &record.dataset,
                        case_id: &record.case_id,
                        trial_index: record.trial_index,
                    };
                    write_step(w, key, step)?;
                }
            }
            RunEvent::Finished(_) => {
                if let Some(w) = self.writer.take() {
                    let path = w.path().display().to_string();
                    w.finish()
                        .map_err(|e| Error::io(format!("cannot finish cassette {path}"), e))?;
                }
            }
            RunEvent::Started { .. } | RunEvent::Notice(_) => {}
        }
        Ok(Control::Continue)
    }

    fn wants_raw(&self) -> bool {
        true
    }
}

/// Appends one step's entry: where it belongs and what it got.
fn write_step(
    w: &mut CassetteWriter,
    EntryKey {
        request_hash,
        dataset,
        case_id,
        trial_index,
    }: EntryKey<'_>,
    step: &toolscore_core::RawStep,
) -> Result<(), Error> {
    let (body, error) = match &step.response {
        RawResponse::Body(b) => (Some(String::from_utf8_lossy(b).into_owned()), None),
        RawResponse::Error {
            class,
            status,
            message,
        } => (
            None,
            Some(RecordedError {
                class: *class,
                status: *status,
                message: message.clone(),
            }),
        ),
    };
    let entry = CassetteEntry {
        request_hash: request_hash.to_owned(),
        dataset: dataset.to_owned(),
        case_id: case_id.to_owned(),
        trial_index,
        step: step.step,
        attempts: step.attempts,
        latency_ms: step.latency_ms,
        body,
        error,
    };
    w.append(&entry)
        .map_err(|e| Error::io(format!("cannot write cassette {}", w.path().display()), e))
}

/// A loaded cassette, indexed by conversation (opening request hash), then (trial, step).
/// Keyed by map, never by position: a recorded index cannot drive an allocation.
pub struct Cassette {
    pub path: PathBuf,
    pub header: CassetteHeader,
    /// What loading skipped (a torn last write after a crash), for the user to see.
    pub warnings: Vec<String>,
    entries: HashMap<String, HashMap<(u32, u32), CassetteEntry>>,
}

/// The header's format number only, read before the full header so an old cassette gets a
/// message about its format rather than about a field it lacks.
#[derive(Deserialize)]
struct FormatProbe {
    toolscore_cassette: u32,
}

/// Longest line read from a cassette: a recorded body is capped well below this, so a longer
/// line is damage or hostility, and must not be read into memory whole.
const MAX_LINE_BYTES: usize = 64 << 20;
/// Bounds on recorded numbers, checked on load: a cassette is untrusted input.
const MAX_LATENCY_MS: f64 = 3_600_000.0;
const MAX_ATTEMPTS: u32 = 1_000;

fn open_lines(path: &Path) -> Result<BoundedLines, InputError> {
    let file = toolscore_core::open_regular_file(path, "a cassette")?;
    let reader: Box<dyn Read> = if is_gzip(path) {
        Box::new(flate2::read::MultiGzDecoder::new(file))
    } else {
        Box::new(file)
    };
    Ok(BoundedLines::new(reader, MAX_LINE_BYTES))
}

/// The header line: a current cassette format, or why not (format 1 says how to upgrade).
fn parse_header(header_text: &str, file_name: &str) -> Result<CassetteHeader, InputError> {
    let bad = |msg: String| InputError::at(file_name, Some(1), "", &msg);
    let not_header = |e: serde_json::Error| {
        bad(format!(
            "not a toolscore cassette header: {}",
            toolscore_core::strip_position(&e.to_string())
        ))
    };
    let probe: FormatProbe = serde_json::from_str(header_text).map_err(not_header)?;
    if probe.toolscore_cassette == 1 {
        return Err(bad(format!(
            "cassette format 1 predates multi-step trials; convert it once with `{} NEW.cassette.jsonl.gz` (no model is called)",
            toolscore_core::command(["toolscore", "cassette", "upgrade", file_name])
        )));
    }
    if probe.toolscore_cassette != CASSETTE_FORMAT {
        return Err(bad(format!(
            "cassette format {} is not supported (this toolscore reads format {CASSETTE_FORMAT})",
            probe.toolscore_cassette
        )));
    }
    serde_json::from_str(header_text).map_err(not_header)
}

/// An entry's own fields within their bounds: one answer or one error, a latency and attempts.
fn check_entry(entry: &CassetteEntry) -> Result<(), String> {
    if entry.body.is_none() == entry.error.is_none() {
        return Err("a cassette entry needs exactly one of `body` and `error`".into());
    }
    if !(entry.latency_ms.is_finite() && (0.0..=MAX_LATENCY_MS).contains(&entry.latency_ms)) {
        return Err(format!(
            "latency_ms {} is outside 0..={MAX_LATENCY_MS} (one hour)",
            entry.latency_ms
        ));
    }
    // Every recorded answer took at least one attempt.
    if !(1..=MAX_ATTEMPTS).contains(&entry.attempts) {
        return Err(format!(
            "attempts {} is outside 1..={MAX_ATTEMPTS}",
            entry.attempts
        ));
    }
    Ok(())
}

impl Cassette {
    /// Only the header of a cassette, for advice (which recording holds which variant):
    /// `None` when it cannot be read as a current cassette; [`Cassette::load`] says why.
    pub fn read_header(path: &Path) -> Option<CassetteHeader> {
        let line = open_lines(path).ok()?.next()?.ok()?;
        serde_json::from_str(&line).ok()
    }

    /// Reads and indexes a cassette; a malformed one is bad input (exit 2).
    pub fn load(path: &Path) -> Result<Cassette, InputError> {
        let file_name = path.display().to_string();
        let mut lines = open_lines(path)?;
        let bad = |line: usize, msg: String| InputError::at(&file_name, Some(line), "", &msg);
        let header_text = match lines.next() {
            Some(Ok(l)) => l,
            Some(Err(e)) => return Err(bad(1, format!("cannot read cassette: {e}"))),
            None => return Err(bad(1, "empty cassette".into())),
        };
        let header = parse_header(&header_text, &file_name)?;
        let mut entries: HashMap<String, HashMap<(u32, u32), CassetteEntry>> = HashMap::new();
        let mut lines_of: HashMap<(String, u32, u32), usize> = HashMap::new();
        let mut warnings = Vec::new();
        let mut lines = lines.enumerate().peekable();
        while let Some((i, line)) = lines.next() {
            let n = i + 2;
            let line = match line {
                Ok(line) => line,
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    return Err(bad(n, format!("cannot read cassette: {e}")));
                }
                // A recording cut short by a crash: its last gzip member or write is torn.
                // Everything before it is whole (written in complete batches) and replays.
                Err(e) => {
                    warnings.push(format!(
                        "{file_name}: the recording ends in a torn write at line {n} ({e}); the {} entries before it are replayed",
                        n - 2
                    ));
                    break;
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            let entry: CassetteEntry = match serde_json::from_str(&line) {
                Ok(entry) => entry,
                // Only the very last line may be torn; anything else is damage.
                Err(e) if lines.peek().is_none() && e.is_eof() => {
                    warnings.push(format!(
                        "{file_name}: line {n} is cut short (a recording interrupted mid-write); it is ignored and the {} entries before it are replayed",
                        n - 2
                    ));
                    break;
                }
                Err(e) => {
                    return Err(InputError::json_line(
                        &file_name,
                        n,
                        "invalid cassette entry",
                        &e,
                    ));
                }
            };
            check_entry(&entry).map_err(|msg| bad(n, msg))?;
            let key = (entry.request_hash.clone(), entry.trial_index, entry.step);
            if let Some(first) = lines_of.insert(key, n) {
                return Err(bad(
                    n,
                    format!(
                        "step {} of trial {} of request {} is recorded twice (first on line {first})",
                        entry.step, entry.trial_index, entry.request_hash
                    ),
                ));
            }
            entries
                .entry(entry.request_hash.clone())
                .or_default()
                .insert((entry.trial_index, entry.step), entry);
        }
        Ok(Cassette {
            path: path.to_owned(),
            header,
            warnings,
            entries,
        })
    }

    /// The raw response of every step of the trials in `wanted` ((request hash, trial)),
    /// streamed from the cassette at `path` without loading it: each body as received (or the
    /// infrastructure error, said so), cut at `max_bytes`, keyed (request hash, trial, step).
    /// What `toolscore explain --raw` prints under an example.
    pub fn raw_bodies(
        path: &Path,
        wanted: &std::collections::BTreeSet<(String, u32)>,
        max_bytes: usize,
    ) -> Result<BTreeMap<(String, u32, u32), String>, InputError> {
        let file_name = path.display().to_string();
        let mut out = BTreeMap::new();
        for (i, line) in open_lines(path)?.enumerate().skip(1) {
            let line = line.map_err(|e| {
                InputError::at(
                    &file_name,
                    Some(i + 1),
                    "",
                    &format!("cannot read cassette: {e}"),
                )
            })?;
            let Ok(entry) = serde_json::from_str::<CassetteEntry>(&line) else {
                continue;
            };
            if !wanted.contains(&(entry.request_hash.clone(), entry.trial_index)) {
                continue;
            }
            let text = match (&entry.body, &entry.error) {
                (Some(body), _) => toolscore_core::cut_text(body, max_bytes),
                (None, Some(e)) => format!("(no body: {} {})", e.class, e.message),
                (None, None) => "(nothing recorded)".to_owned(),
            };
            out.insert((entry.request_hash, entry.trial_index, entry.step), text);
        }
        Ok(out)
    }

    /// How many consecutive trials (0, 1, …) have their opening step recorded for this
    /// conversation.
    pub fn recorded_trials(&self, request_hash: &str) -> u32 {
        self.entries.get(request_hash).map_or(0, |steps| {
            (0..=u32::MAX)
                .take_while(|t| steps.contains_key(&(*t, 0)))
                .count() as u32
        })
    }

    fn entry(&self, key: StepKey<'_>) -> Option<&CassetteEntry> {
        self.entries
            .get(key.conversation)?
            .get(&(key.trial, key.step))
    }
}

/// Converts a format-1 cassette (one entry per single-request trial) to the current format:
/// every entry becomes step 0 of its trial; bodies, latencies and attempts are kept byte for
/// byte, so a replay of the converted cassette reproduces the recorded run exactly. Returns the
/// number of entries converted.
pub fn upgrade_v1(from: &Path, to: &Path) -> Result<u64, Error> {
    let file_name = from.display().to_string();
    let bad =
        |line: usize, msg: String| Error::from(InputError::at(&file_name, Some(line), "", &msg));
    let mut lines = open_lines(from)?;
    let header_text = match lines.next() {
        Some(Ok(l)) => l,
        Some(Err(e)) => return Err(bad(1, format!("cannot read cassette: {e}"))),
        None => return Err(bad(1, "empty cassette".into())),
    };
    let mut header: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&header_text)
        .map_err(|e| bad(1, format!("not a toolscore cassette header: {e}")))?;
    match header.get("toolscore_cassette").and_then(|v| v.as_u64()) {
        Some(1) => {}
        Some(n) => {
            return Err(bad(
                1,
                format!("cassette format {n} is not format 1; nothing to upgrade"),
            ));
        }
        None => return Err(bad(1, "not a toolscore cassette header".into())),
    }
    header.insert("toolscore_cassette".into(), CASSETTE_FORMAT.into());
    let header: CassetteHeader = serde_json::from_value(serde_json::Value::Object(header))
        .map_err(|e| bad(1, format!("not a toolscore cassette header: {e}")))?;
    // Everything is read and checked before the output is created: nothing half-written.
    let mut entries = Vec::new();
    for (i, line) in lines.enumerate() {
        let n = i + 2;
        let line = line.map_err(|e| bad(n, format!("cannot read cassette: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let mut entry: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&line)
            .map_err(|e| bad(n, format!("invalid cassette entry: {e}")))?;
        entry.insert("step".into(), 0.into());
        let entry: CassetteEntry = serde_json::from_value(serde_json::Value::Object(entry))
            .map_err(|e| bad(n, format!("invalid cassette entry: {e}")))?;
        entries.push(entry);
    }
    let mut w = CassetteWriter::create(to, &header)
        .map_err(|e| Error::io(format!("cannot create {}", to.display()), e))?;
    for e in &entries {
        w.append(e)
            .map_err(|err| Error::io(format!("cannot write {}", to.display()), err))?;
    }
    w.finish()
        .map_err(|e| Error::io(format!("cannot finish {}", to.display()), e))?;
    Ok(entries.len() as u64)
}

/// Serves trials from a cassette, decoding bodies with the adapter that recorded them.
pub struct Replay {
    /// Shared: every arm replayed from one cassette (tune's candidates) reads the same one.
    pub cassette: std::sync::Arc<Cassette>,
    decoder: Provider,
}

impl Replay {
    /// `decoder` must be built from the cassette header's kind, model and parameters so that
    /// `prepare` yields the recorded request hashes.
    pub fn new(cassette: std::sync::Arc<Cassette>, decoder: Provider) -> Replay {
        Replay { cassette, decoder }
    }

    pub fn decoder(&self) -> &Provider {
        &self.decoder
    }

    /// The recorded response (or error) of one step and its recorded latency.
    pub fn serve(&self, key: StepKey<'_>) -> (Result<Exchange, ProviderError>, Duration) {
        let Some(entry) = self.cassette.entry(key) else {
            let err = ProviderError {
                class: ErrorClass::ClientError,
                status: None,
                message: format!(
                    "no recording for step {} of trial {} of request {} in {}",
                    key.step,
                    key.trial,
                    key.conversation,
                    self.cassette.path.display()
                ),
                attempts: 0,
            };
            return (Err(err), Duration::ZERO);
        };
        // Checked on load; the fallback only keeps a bad number from panicking a worker.
        let latency =
            Duration::try_from_secs_f64(entry.latency_ms / 1000.0).unwrap_or(Duration::ZERO);
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
            provider_kind: crate::openai_compat::KIND,
            model: "m".into(),
            temperature: Some(0.7),
            max_tokens: None,
            base_url: "http://127.0.0.1:1/v1".into(),
            recorded_at: "2026-12-02T00:00:00Z".into(),
            toolscore_version: "0.1.0".into(),
            variant: "base".into(),
            catalogs: BTreeMap::from([("d".to_owned(), "sha256:x".to_owned())]),
            note: None,
            tool_choice: None,
            parallel_tool_calls: None,
            requests_as_written: true,
            author: None,
        }
    }

    fn entry(trial_index: u32) -> CassetteEntry {
        CassetteEntry {
            request_hash: "h".into(),
            dataset: "d".into(),
            case_id: "c".into(),
            trial_index,
            step: 0,
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
            let key = StepKey {
                conversation: "h",
                trial: 3,
                step: 0,
            };
            assert_eq!(c.entry(key).map(|e| e.latency_ms), Some(12.5));
        }
    }

    fn write_entries(path: &Path, entries: &[String]) {
        let mut text = serde_json::to_string(&header()).unwrap();
        for e in entries {
            text.push('\n');
            text.push_str(e);
        }
        text.push('\n');
        std::fs::write(path, text).unwrap();
    }

    fn entry_json(trial: &str, latency: &str) -> String {
        format!(
            r#"{{"request_hash":"h","dataset":"d","case_id":"c","trial_index":{trial},"step":0,"attempts":1,"latency_ms":{latency},"body":"{{}}"}}"#
        )
    }

    #[test]
    fn a_recording_cut_by_a_crash_replays_up_to_its_last_whole_batch() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["c.jsonl", "c.jsonl.gz"] {
            let path = dir.path().join(name);
            let mut w = CassetteWriter::create(&path, &header()).unwrap();
            for i in 0..200 {
                w.append(&entry(i)).unwrap();
            }
            // kill -9: nothing after the last written batch reaches the file.
            std::mem::forget(w);
            let c = Cassette::load(&path).unwrap();
            assert_eq!(
                c.recorded_trials("h"),
                192,
                "{name}: three whole batches of 64"
            );
            assert!(c.warnings.is_empty(), "{name}: {:?}", c.warnings);

            // A write torn in the middle: the whole batches before it still replay.
            let bytes = std::fs::read(&path).unwrap();
            std::fs::write(&path, &bytes[..bytes.len() - 40]).unwrap();
            let c = Cassette::load(&path).unwrap();
            assert!(
                c.recorded_trials("h") >= 128,
                "{name}: {}",
                c.recorded_trials("h")
            );
            assert_eq!(c.warnings.len(), 1, "{name}: {:?}", c.warnings);
            assert!(c.warnings[0].contains("replayed"), "{}", c.warnings[0]);
        }
    }

    #[test]
    fn cassettes_are_untrusted_input() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        // A huge trial index is just a key: no allocation follows it.
        write_entries(&path, &[entry_json("4294967295", "1")]);
        let c = Cassette::load(&path).unwrap();
        assert_eq!(c.recorded_trials("h"), 0);
        // Numbers out of range are bad input, never a panic later.
        for latency in ["1e300", "-5"] {
            write_entries(&path, &[entry_json("0", latency)]);
            let msg = Cassette::load(&path).err().unwrap().to_string();
            assert!(
                msg.contains("c.jsonl:2") && msg.contains("latency_ms"),
                "{msg}"
            );
        }
        // A duplicate names both lines instead of silently replacing the first.
        write_entries(
            &path,
            &[
                entry_json("0", "1"),
                entry_json("1", "1"),
                entry_json("0", "2"),
            ],
        );
        let msg = Cassette::load(&path).err().unwrap().to_string();
        assert!(
            msg.contains("c.jsonl:4") && msg.contains("first on line 2"),
            "{msg}"
        );
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
        text.push_str("\n{\"request_hash\":\"h\",\"dataset\":\"d\",\"case_id\":\"c\",\"trial_index\":0,\"step\":0,\"attempts\":1,\"latency_ms\":1}\n");
        std::fs::write(&path, text).unwrap();
        let msg = Cassette::load(&path).err().unwrap().to_string();
        assert!(
            msg.contains("bad.jsonl:2") && msg.contains("exactly one of `body` and `error`"),
            "{msg}"
        );
    }
}
