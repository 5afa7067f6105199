//! Writing a file so that no reader (a CI upload, a resumed run, a second process) ever sees
//! half of it: the bytes go to `NAME.tmp` beside it, then a rename puts them in place. A kill
//! leaves the old file or the new one.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::Error;

/// Writes `bytes` to `path` via `PATH.tmp` and a rename.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes)
        .map_err(|e| Error::io(format!("cannot write {}", tmp.display()), e))?;
    std::fs::rename(&tmp, path)
        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))
}

/// Writes `value` as pretty JSON, atomically.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), Error> {
    let text = serde_json::to_vec_pretty(value)
        .map_err(|e| Error::encode(path.display().to_string(), e))?;
    write_file(path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_replaced_whole_and_no_temporary_file_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.html");
        std::fs::write(&path, "old").unwrap();
        write_file(&path, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("report.html")]);
    }

    #[test]
    fn an_unwritable_place_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing-folder").join("summary.json");
        let e = write_json(&path, &serde_json::json!({"a": 1})).unwrap_err();
        assert!(e.to_string().contains("summary.json.tmp"), "{e}");
    }
}
