//! Reading the files a user points toolscore at (config, catalogs, fixtures, run summaries):
//! regular files only, never more than a size cap, as UTF-8 text, so a FIFO, `/dev/zero` or a
//! mistyped path to something huge is a clear input error instead of a hang or an exhausted
//! memory.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::error::InputError;

/// A timeout in seconds (`--timeout`, `timeout_s:`) as every command accepts it: a tenth of a
/// second to an hour. Below a tenth no model or server answers reliably, and a timeout that
/// expires while a request is being written times requests out at random instead of saying
/// the bound is too small.
pub fn timeout_from_seconds(seconds: f64) -> Option<std::time::Duration> {
    (0.1..=3600.0)
        .contains(&seconds)
        .then(|| std::time::Duration::from_secs_f64(seconds))
}

/// What [`timeout_from_seconds`] accepts, in words.
pub const TIMEOUT_RANGE: &str = "between 0.1 and 3600 seconds";

/// Largest input file read: far above any real catalog or fixture file.
const MAX_INPUT_BYTES: u64 = 256 << 20;

/// The text of a regular file of at most [`MAX_INPUT_BYTES`]. A UTF-8 byte-order mark is named
/// rather than left for a JSON or YAML parser to call "expected value at line 1 column 1".
pub fn read_text(path: &Path) -> Result<String, InputError> {
    // Checked before opening: opening a FIFO for reading blocks until someone writes to it.
    let meta = std::fs::metadata(path).map_err(|e| InputError::io(path, &e))?;
    let at = |message: String| InputError::at(&path.display().to_string(), None, "", &message);
    if !meta.is_file() {
        return Err(at(
            "not a regular file (a folder, a pipe or a device cannot be read as input)".into(),
        ));
    }
    let file = std::fs::File::open(path).map_err(|e| InputError::io(path, &e))?;
    let mut bytes = Vec::with_capacity(meta.len().min(MAX_INPUT_BYTES) as usize);
    file.take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| InputError::io(path, &e))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(at(format!(
            "larger than {} MiB; is this the right file?",
            MAX_INPUT_BYTES >> 20
        )));
    }
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        return Err(InputError::at(
            &path.display().to_string(),
            Some(1),
            "",
            "starts with a UTF-8 byte-order mark (bytes EF BB BF); save the file as UTF-8 without a BOM",
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        at(format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// `path` opened for reading, when it is a regular file: opening a FIFO blocks until someone
/// writes to it, and a device never ends. `what` names the file in the error (`a cassette`).
pub fn open_regular_file(path: &Path, what: &str) -> Result<std::fs::File, InputError> {
    // Checked before opening, for the FIFO's sake.
    let meta = std::fs::metadata(path).map_err(|e| InputError::io(path, &e))?;
    if !meta.is_file() {
        return Err(InputError::at(
            &path.display().to_string(),
            None,
            "",
            &format!("not a regular file (a folder, a pipe or a device cannot be read as {what})"),
        ));
    }
    std::fs::File::open(path).map_err(|e| InputError::io(path, &e))
}

/// The lines of the JSON-lines file at `path` (a regular file), each at most `max` bytes.
pub fn jsonl_lines(path: &Path, what: &str, max: usize) -> Result<BoundedLines, InputError> {
    Ok(BoundedLines::new(
        Box::new(open_regular_file(path, what)?),
        max,
    ))
}

/// What a failed read of line `line` of `name` is: bad input when the line is too long or not
/// UTF-8 (file and line said), else an I/O error.
pub fn line_error(name: &str, line: usize, e: std::io::Error) -> crate::error::Error {
    match e.kind() {
        std::io::ErrorKind::InvalidData => {
            InputError::at(name, Some(line), "", &e.to_string()).into()
        }
        _ => crate::error::Error::io(format!("cannot read {name}"), e),
    }
}

/// The lines of a JSON-lines file (results.jsonl, a cassette), each at most `max` bytes: a
/// longer one is an error, read no further than `max + 1` bytes, so one endless line cannot
/// exhaust memory.
pub struct BoundedLines {
    reader: BufReader<Box<dyn Read>>,
    max: usize,
}

impl BoundedLines {
    pub fn new(reader: Box<dyn Read>, max: usize) -> Self {
        BoundedLines {
            // Large reads: merging shards streams gigabytes through here.
            reader: BufReader::with_capacity(256 * 1024, reader),
            max,
        }
    }
}

impl Iterator for BoundedLines {
    type Item = std::io::Result<String>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut buf = Vec::new();
        match (&mut self.reader)
            .take(self.max as u64 + 1)
            .read_until(b'\n', &mut buf)
        {
            Ok(0) => None,
            Ok(_) => {
                if buf.last() == Some(&b'\n') {
                    buf.pop();
                    if buf.last() == Some(&b'\r') {
                        buf.pop();
                    }
                } else if buf.len() > self.max {
                    return Some(Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("a line is longer than {} MiB", self.max >> 20),
                    )));
                }
                Some(
                    String::from_utf8(buf)
                        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
                )
            }
            Err(e) => Some(Err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_utf8_files_without_a_bom_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let ok = dir.path().join("ok.json");
        std::fs::write(&ok, "{}").unwrap();
        assert_eq!(read_text(&ok).unwrap(), "{}");
        let bom = dir.path().join("bom.json");
        std::fs::write(&bom, b"\xEF\xBB\xBF{}").unwrap();
        let msg = read_text(&bom).unwrap_err().to_string();
        assert!(
            msg.contains("bom.json:1") && msg.contains("byte-order mark"),
            "{msg}"
        );
        let msg = read_text(dir.path()).unwrap_err().to_string();
        assert!(msg.contains("not a regular file"), "{msg}");
        let msg = read_text(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(msg.contains("not a regular file"), "{msg}");
        let latin1 = dir.path().join("l.json");
        std::fs::write(&latin1, b"{\"a\": \"\xE9\"}").unwrap();
        let msg = read_text(&latin1).unwrap_err().to_string();
        assert!(
            msg.contains("not UTF-8 text (invalid byte at offset 7)"),
            "{msg}"
        );
    }

    #[test]
    fn bounded_lines_stop_reading_a_line_past_the_limit() {
        let text = format!("short\n{}\nafter\n", "x".repeat(100));
        let mut lines = BoundedLines::new(Box::new(std::io::Cursor::new(text.into_bytes())), 10);
        assert_eq!(lines.next().unwrap().unwrap(), "short");
        assert!(lines.next().unwrap().is_err());
    }
}
