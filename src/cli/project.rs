//! Which project a command runs in: the `toolscore.yaml` it reads when no `--config` is given,
//! and where the project's own files (`reports/`) then are.
//!
//! As cargo finds `Cargo.toml` and git finds `.git` from any subfolder, the config is looked
//! for in the current folder, then each parent, and the first found is used. The search stops
//! at a folder holding `.git` (after looking in it), so a config above the repository is never
//! picked up, and at the filesystem's root. When the config found is not in the current
//! folder, stderr says which file is used, once.
//!
//! The defaults that name project files (`--out reports`, and the lock beside the config)
//! then belong to the project: they resolve against the config's folder, so a run from a
//! subfolder appends to the same `reports/history.jsonl` as a run from the root. An explicit
//! `--config` and every path typed on the command line keep their meaning relative to the
//! current folder.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The config file's name.
pub(crate) const CONFIG_FILE: &str = "toolscore.yaml";

/// The config the search from the current folder finds, as a path relative to it
/// (`toolscore.yaml`, `../../toolscore.yaml`); the note is printed when it is first asked for.
pub(crate) fn found_config() -> Option<&'static Path> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let found = std::env::current_dir()
                .ok()
                .and_then(|cwd| find_config(&cwd))?;
            if found != Path::new(CONFIG_FILE) {
                // A closed stderr loses the note, never the command.
                let _ = errln!("note: using {}", found.display());
            }
            Some(found)
        })
        .as_deref()
}

/// The config a command reads: `--config`, else the one the search finds.
pub(crate) fn config_path(given: Option<&Path>) -> Option<PathBuf> {
    match given {
        Some(path) => Some(path.to_owned()),
        None => found_config().map(Path::to_owned),
    }
}

/// A project file's default path (`reports`): in the folder of the config the search found,
/// when no `--config` was given; else (an explicit `--config`, or no project) in the current
/// folder, as before.
pub(crate) fn default_path(given_config: Option<&Path>, name: &str) -> PathBuf {
    match (given_config, found_config().and_then(Path::parent)) {
        (None, Some(dir)) => dir.join(name),
        _ => PathBuf::from(name),
    }
}

/// Looks for [`CONFIG_FILE`] in `start` and then each parent; the path found is relative to
/// `start` (`../toolscore.yaml`). Stops after a folder holding `.git` and at the root.
pub(crate) fn find_config(start: &Path) -> Option<PathBuf> {
    let mut up = PathBuf::new();
    for dir in start.ancestors() {
        if dir.join(CONFIG_FILE).is_file() {
            return Some(up.join(CONFIG_FILE));
        }
        // The repository's top: a config above it belongs to something else.
        if dir.join(".git").exists() {
            return None;
        }
        up.push("..");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_search_goes_up_to_the_first_config_and_stops_at_a_repository() {
        let root = tempfile::tempdir().expect("tempdir");
        let deep = root.path().join("repo/sub/dir");
        std::fs::create_dir_all(&deep).expect("mkdir");
        std::fs::write(root.path().join(CONFIG_FILE), "").expect("write");
        // Found above, with no repository in between.
        assert_eq!(
            find_config(&deep),
            Some(PathBuf::from("../../../toolscore.yaml"))
        );
        // A repository's top ends the search after looking in it.
        std::fs::create_dir(root.path().join("repo/.git")).expect("mkdir");
        assert_eq!(find_config(&deep), None);
        std::fs::write(root.path().join("repo").join(CONFIG_FILE), "").expect("write");
        assert_eq!(
            find_config(&deep),
            Some(PathBuf::from("../../toolscore.yaml"))
        );
        // The nearest wins, and one in the folder itself is plain `toolscore.yaml`.
        std::fs::write(deep.join(CONFIG_FILE), "").expect("write");
        assert_eq!(find_config(&deep), Some(PathBuf::from(CONFIG_FILE)));
    }
}
