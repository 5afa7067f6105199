//! `toolscore lock`: pin what the model reads of every catalog the project evaluates in
//! `toolscore.lock` beside the config, and [`check`], the one place every command that shows a
//! catalog to a model refuses a catalog that differs from the lock.

use std::path::{Path, PathBuf};

use clap::Args;

use super::{LoadedSuite, SuiteArgs, usage};
use crate::cli::Error;
use toolscore_core::catalog::lock::{self as pin, LOCK_FILE, Lock, Scope, UnitChange};
use toolscore_core::command;
use toolscore_core::{ExitCode, InputError};

/// `toolscore lock`.
#[derive(Debug, Args)]
pub struct LockArgs {
    /// Config file [default: the nearest toolscore.yaml, from the current folder up to the
    /// repository's top]; the lock is written beside it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Rewrite an existing lock to what the catalogs read now, printing what changed: accept a
    /// change after reviewing it. A lock that cannot be read is written again whole.
    #[arg(long, conflicts_with = "check")]
    pub update: bool,
    /// Write nothing; exit 1 when the lock is missing or out of date (for CI), printing what
    /// changed.
    #[arg(long)]
    pub check: bool,
}

/// The lock of the project whose config is `config`: beside it.
fn lock_path(config: &Path) -> PathBuf {
    config.with_file_name(LOCK_FILE)
}

/// The command that accepts a change, with the project's `--config` when it is not the default.
fn update_command(config: &Path) -> String {
    // The config the search finds needs no flag: the same command finds it again.
    if config == Path::new("toolscore.yaml") || super::project::found_config() == Some(config) {
        command(["toolscore", "lock", "--update"])
    } else {
        command([
            "toolscore",
            "lock",
            "--config",
            &config.display().to_string(),
            "--update",
        ])
    }
}

/// Whether the project has a lock at `path`. Nothing there is no lock; a symbolic link that
/// does not resolve (dangling, or a loop), a folder or anything else that is not a file is
/// bad input (exit 2), never taken as no lock.
fn lock_present(path: &Path) -> Result<bool, Error> {
    let file = path.display().to_string();
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io(format!("cannot read {file}"), e)),
        Ok(_) => {}
    }
    let refuse = |why: String| -> Error { InputError::at(&file, None, "", &why).into() };
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(true),
        Ok(m) if m.is_dir() => Err(refuse(
            "is a folder, not a lock file; move it out of the way, then `toolscore lock` writes the lock".to_owned(),
        )),
        Ok(_) => Err(refuse("is not a regular file".to_owned())),
        Err(e) => Err(refuse(format!(
            "is a symbolic link that does not resolve (dangling, or a loop: {e}); fix or remove it"
        ))),
    }
}

/// Writes the lock at `path` whole; when `path` is a symbolic link, to the file it points to
/// (the link stays a link).
fn write_lock(path: &Path, lock: &Lock) -> Result<(), Error> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let target = if is_link {
        std::fs::canonicalize(path)
            .map_err(|e| Error::io(format!("cannot resolve {}", path.display()), e))?
    } else {
        path.to_owned()
    };
    Ok(toolscore_core::write_file(
        &target,
        pin::render(lock).as_bytes(),
    )?)
}

/// Reads and parses the lock at `path`.
fn read_lock(path: &Path) -> Result<Lock, Error> {
    let text = toolscore_core::read_text(path)?;
    Ok(pin::parse(&text, &path.display().to_string())?)
}

/// Refuses (exit 2) a suite whose catalogs differ from its project's lock: for each dataset
/// or scenario, the diff of what the model reads and the command that accepts it. No config or
/// no lock: nothing is checked. A lock pins the whole project; a command that evaluates part
/// of it is checked on that part.
pub(crate) fn check(suite: &LoadedSuite) -> Result<(), Error> {
    let Some(config) = &suite.config_file else {
        return Ok(());
    };
    let path = lock_path(config);
    if !lock_present(&path)? {
        return Ok(());
    }
    let pinned = read_lock(&path)?;
    let now = toolscore_suite::lock_of(&suite.datasets, &suite.scenarios);
    let changes: Vec<UnitChange> = pin::compare(&pinned, &now, Scope::Evaluated)
        .into_iter()
        .filter(|u| u.reads_changed() && (u.pinned || listed_by_config(suite, u)))
        .collect();
    refuse(&path, config, &changes)
}

/// The refusal of `changes` (none: no refusal): what differs in one line, the diff of the
/// words, and the command that accepts it.
fn refuse(path: &Path, config: &Path, changes: &[UnitChange]) -> Result<(), Error> {
    if changes.is_empty() {
        return Ok(());
    }
    Err(InputError::at(
        &path.display().to_string(),
        None,
        "",
        &format!(
            "{}; nothing was run:\n\n{}\naccept after review: {}",
            summary(changes),
            pin::render_changes(changes),
            update_command(config)
        ),
    )
    .into())
}

/// What the lock says of the catalog `lint` read from the dataset folder `dir`: a note when
/// the project's lock pins that dataset (or its config lists it unpinned) and the base
/// catalog differs from the pinned one. `lint` is how a changed catalog is reviewed before the
/// lock accepts it, so it lints the new catalog whatever the lock says, and says so. A folder
/// the config does not list, or no lock: nothing to say.
pub(crate) fn linted_against_lock(
    config_file: Option<&Path>,
    config: &toolscore_suite::Config,
    dir: &Path,
    catalog: &toolscore_core::catalog::Catalog,
    server: Option<&toolscore_core::catalog::source::ServerIdentity>,
) -> Result<Option<String>, Error> {
    let Some(config_file) = config_file else {
        return Ok(None);
    };
    let path = lock_path(config_file);
    if !lists_dataset(config, dir) || !lock_present(&path)? {
        return Ok(None);
    }
    let name = canonical(dir)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let pinned = read_lock(&path)?;
    // The base catalog alone: lint reads no variant.
    let pinned_base = pinned
        .units
        .iter()
        .find(|u| u.kind == pin::UnitKind::Dataset && u.name == name)
        .map(|u| pin::Unit {
            catalogs: u.catalogs.iter().take(1).cloned().collect(),
            ..u.clone()
        });
    let base_name = pinned_base
        .as_ref()
        .and_then(|u| u.catalogs.first())
        .map_or_else(|| "base".to_owned(), |(v, _)| v.clone());
    let now = Lock::new(vec![pin::Unit {
        kind: pin::UnitKind::Dataset,
        name,
        server: server.cloned(),
        catalogs: vec![(base_name, catalog.clone())],
    }]);
    let changes: Vec<UnitChange> = pin::compare(
        &Lock::new(pinned_base.into_iter().collect()),
        &now,
        Scope::Evaluated,
    )
    .into_iter()
    .filter(UnitChange::reads_changed)
    .collect();
    Ok((!changes.is_empty()).then(|| {
        format!(
            "note: {}: {}; the findings are the new catalog's:\n\n{}\naccept it after review: {}",
            path.display(),
            summary(&changes),
            pin::render_changes(&changes),
            update_command(config_file)
        )
    }))
}

/// Whether the config lists the dataset or scenario `u` names. The lock pins what the config
/// lists, so one it does not list (a `--dataset` given only on the command line, the questions
/// `lint --judge` asks) cannot be pinned and is not refused for not being pinned; one the
/// config lists but the lock lacks is (the lock is out of date).
fn listed_by_config(suite: &LoadedSuite, u: &UnitChange) -> bool {
    match u.kind {
        pin::UnitKind::Dataset => suite
            .datasets
            .iter()
            .filter(|d| d.name == u.name)
            .any(|d| lists_dataset(&suite.config, &d.dir)),
        pin::UnitKind::Scenario => suite
            .scenarios
            .iter()
            .filter(|s| s.name == u.name)
            .any(|s| {
                let file = canonical(&s.file);
                suite
                    .config
                    .scenarios
                    .iter()
                    .any(|c| file.starts_with(canonical(c)))
            }),
    }
}

/// A path as the file system resolves it, so `data` and `./data/` are one folder.
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

/// Whether the config lists the dataset folder `dir`.
fn lists_dataset(config: &toolscore_suite::Config, dir: &Path) -> bool {
    let dir = canonical(dir);
    config.datasets.iter().any(|c| canonical(c) == dir)
}

/// One line: what differs, by dataset or scenario and tool.
fn summary(changes: &[UnitChange]) -> String {
    let parts: Vec<String> = changes
        .iter()
        .map(|u| {
            let what = format!("{} `{}`", kind(u), u.name);
            let tools = u.tools();
            if !u.pinned {
                format!("{what} is not pinned")
            } else if !tools.is_empty() {
                format!("{what}: {}", tools.join(", "))
            } else {
                format!("{what}: its catalogs")
            }
        })
        .collect();
    format!(
        "what the model reads differs from the lock ({})",
        parts.join("; ")
    )
}

fn kind(u: &UnitChange) -> &'static str {
    match u.kind {
        pin::UnitKind::Dataset => "dataset",
        pin::UnitKind::Scenario => "scenario",
    }
}

/// What `run` says once when the project has a config but no lock.
pub(crate) fn unpinned_notice(args: &SuiteArgs) -> Option<String> {
    let config = super::config_file(args)?;
    let path = lock_path(&config);
    // Something that is not a lock (a dangling link, a folder) is refused by the check.
    std::fs::symlink_metadata(&path).is_err().then(|| {
        format!(
            "note: the catalogs are not pinned (no {}); `toolscore lock` pins them",
            path.display()
        )
    })
}

pub(super) fn run(args: &LockArgs) -> Result<ExitCode, Error> {
    let suite_args = SuiteArgs {
        config: args.config.clone(),
        datasets: Vec::new(),
        scenarios: Vec::new(),
        attacks: Vec::new(),
    };
    let Some(config) = super::config_file(&suite_args) else {
        return Err(usage(&format!(
            "no toolscore.yaml in {} or the folders above it: the lock pins a project's catalogs and is written beside its config; run this in the project or pass --config FILE",
            std::env::current_dir().map_or_else(|_| ".".to_owned(), |d| d.display().to_string())
        )));
    };
    let suite = super::load_suite_unchecked(&suite_args)?;
    let now = toolscore_suite::lock_of(&suite.datasets, &suite.scenarios);
    let path = lock_path(&config);
    let (catalogs, tools) = now.counts();
    let pinned_line = format!(
        "{}, {}: {}, {}",
        count(suite.datasets.len(), "dataset"),
        count(suite.scenarios.len(), "scenario"),
        count(catalogs, "catalog"),
        count(tools, "tool")
    );
    if !lock_present(&path)? {
        if args.check {
            errln!(
                "error: {} is missing; `toolscore lock` writes it",
                path.display()
            )?;
            return Ok(ExitCode::GateFailed);
        }
        write_lock(&path, &now)?;
        outln!("wrote {}: {pinned_line}", path.display())?;
        return Ok(ExitCode::Pass);
    }
    let pinned = match read_lock(&path) {
        Ok(pinned) => pinned,
        // A lock that cannot be read (edited by hand, a merge conflict) pins nothing to diff
        // against: --update writes it again whole, saying so; anything else refuses it.
        Err(e) if args.update && e.exit_code() == ExitCode::BadInput => {
            errln!("warning: {e}")?;
            write_lock(&path, &now)?;
            outln!("rewrote {} whole: {pinned_line}", path.display())?;
            return Ok(ExitCode::Pass);
        }
        Err(e) => return Err(e),
    };
    let changes = pin::compare(&pinned, &now, Scope::All);
    if changes.is_empty() {
        // A lock that reads the same but is written otherwise (comments, an older wording of
        // the header) is rewritten by --update, silently.
        if args.update && toolscore_core::read_text(&path)? != pin::render(&now) {
            write_lock(&path, &now)?;
        }
        outln!("{} is up to date: {pinned_line}", path.display())?;
        return Ok(ExitCode::Pass);
    }
    out!("{}", pin::render_changes(&changes))?;
    lint_changed(&suite, &changes)?;
    if args.update {
        write_lock(&path, &now)?;
        outln!("\nupdated {}: {pinned_line}", path.display())?;
        return Ok(ExitCode::Pass);
    }
    if args.check {
        errln!(
            "error: {} is out of date (above); accept after review: {}",
            path.display(),
            update_command(&config)
        )?;
        return Ok(ExitCode::GateFailed);
    }
    Err(usage(&format!(
        "{} differs from what the catalogs read now (above) and was left as it is; accept after review: {}",
        path.display(),
        update_command(&config)
    )))
}

/// What lint finds on the tools a change touches, printed after the diff and before the lock
/// accepts or refuses it, so a reviewer sees an injected instruction before it is pinned: each
/// changed, added or renamed tool of a dataset's catalog (every tool of a catalog the lock did
/// not pin), under the project's lint settings.
fn lint_changed(suite: &LoadedSuite, changes: &[UnitChange]) -> Result<(), Error> {
    let options = toolscore_lint::LintOptions::from_config(&suite.config.lint);
    for change in changes
        .iter()
        .filter(|c| c.kind == pin::UnitKind::Dataset && c.present)
    {
        let Some(dataset) = suite.datasets.iter().find(|d| d.name == change.name) else {
            continue;
        };
        for catalog_change in &change.catalogs {
            let (variant, touched) = match catalog_change {
                pin::CatalogChange::Removed { .. } => continue,
                pin::CatalogChange::Added { variant, .. } => (variant, None),
                pin::CatalogChange::Changed { variant, diff } => {
                    let names: std::collections::BTreeSet<&str> = diff
                        .changed
                        .iter()
                        .map(|t| t.name.as_str())
                        .chain(diff.added.iter().map(|t| t.name.as_str()))
                        .chain(diff.renamed.iter().map(|r| r.new.name.as_str()))
                        .collect();
                    (variant, Some(names))
                }
            };
            let Some(shown) = dataset.variants.iter().find(|v| &v.name == variant) else {
                continue;
            };
            let mut report = toolscore_lint::lint(&shown.catalog, &options);
            if let Some(names) = &touched {
                report
                    .findings
                    .retain(|f| f.tool.as_deref().is_some_and(|t| names.contains(t)));
            }
            outln!(
                "\nlint on the {} of dataset `{}` ({variant}):",
                if touched.is_some() {
                    "changed tools"
                } else {
                    "tools"
                },
                change.name
            )?;
            let mut text = Vec::new();
            toolscore_lint::render::text(&report, &mut text)
                .map_err(|e| Error::io("cannot write the lint findings", e))?;
            out!("{}", String::from_utf8_lossy(&text))?;
        }
    }
    Ok(())
}

/// `1 tool`, `2 tools`.
fn count(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}
