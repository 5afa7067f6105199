//! Reading the files a user points toolscore at (config, catalogs, fixtures, run summaries):
//! regular files only, never more than a size cap, as UTF-8 text, so a FIFO, `/dev/zero` or a
//! mistyped path to something huge is a clear input error instead of a hang or an exhausted
//! memory.

use std::io::Read;
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
}
