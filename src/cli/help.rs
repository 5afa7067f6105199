//! `toolscore completions SHELL` and `toolscore man DIR`: shell completions and man pages,
//! generated from the same clap definitions as `--help`, so they cannot drift from the flags.

use std::io::Write as _;
use std::path::PathBuf;

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use super::Cli;
use crate::cli::Error;
use toolscore_core::ExitCode;

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// The folder the pages go into (created when missing); existing pages are replaced.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// Prints the completion script of one shell on stdout.
pub(super) fn completions(args: &CompletionsArgs) -> Result<ExitCode, Error> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "toolscore", &mut script);
    std::io::stdout()
        .lock()
        .write_all(&script)
        .map_err(|e| Error::io("cannot write to stdout", e))?;
    Ok(ExitCode::Pass)
}

/// Writes toolscore.1 and one page per subcommand, at any depth (toolscore-catalog-diff.1),
/// each rendered whole before it is written and written atomically.
pub(super) fn man(args: &ManArgs) -> Result<ExitCode, Error> {
    let pages = man_pages().map_err(|e| Error::io("cannot render the man pages", e))?;
    std::fs::create_dir_all(&args.dir)
        .map_err(|e| Error::io(format!("cannot create {}", args.dir.display()), e))?;
    for (name, roff) in &pages {
        toolscore_core::write_file(&args.dir.join(name), roff)?;
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "wrote {} man pages to {} (read one with `man -l {}`)",
        pages.len(),
        args.dir.display(),
        args.dir.join("toolscore-run.1").display()
    )
    .map_err(|e| Error::io("cannot write to stdout", e))?;
    Ok(ExitCode::Pass)
}

/// Every page as (file name, roff), the top-level page first. The help subcommand is left
/// out: `man` is the help.
fn man_pages() -> std::io::Result<Vec<(String, Vec<u8>)>> {
    fn walk(cmd: &clap::Command, pages: &mut Vec<(String, Vec<u8>)>) -> std::io::Result<()> {
        let man = clap_mangen::Man::new(cmd.clone());
        let mut roff = Vec::new();
        man.render(&mut roff)?;
        pages.push((man.get_filename(), roff));
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, pages)?;
        }
        Ok(())
    }
    let mut cmd = Cli::command().disable_help_subcommand(true);
    // Building names each subcommand for its page: `toolscore-run`, `toolscore-catalog-diff`.
    cmd.build();
    let mut pages = Vec::new();
    walk(&cmd, &mut pages)?;
    Ok(pages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn there_is_a_page_for_every_subcommand_at_every_depth_and_none_for_help() {
        let names: Vec<String> = man_pages().unwrap().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names[0], "toolscore.1");
        for page in [
            "toolscore-run.1",
            "toolscore-catalog.1",
            "toolscore-catalog-diff.1",
            "toolscore-import-bfcl.1",
            "toolscore-cassette-upgrade.1",
            "toolscore-completions.1",
        ] {
            assert!(names.iter().any(|n| n == page), "{page} missing: {names:?}");
        }
        assert!(!names.iter().any(|n| n.contains("help")), "{names:?}");
    }
}
