//! The CLI follows its ecosystem's conventions: `toolscore --help` is one line per command
//! within 80 columns, `run --help` groups its flags under headings, completions and man pages
//! are generated from the same definitions and are valid for their readers, and the docs agree
//! with the flags: `docs/reference/cli.md` is generated from the clap definitions (so every
//! flag appears there) and every flag the docs show a `toolscore` command with exists.

use std::collections::BTreeSet;
use std::path::Path;

use clap::CommandFactory;

use crate::docs::{pages, read, split_blocks};
use crate::support::{shell_words, toolscore};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn cli() -> clap::Command {
    let mut cmd = toolscore::cli::Cli::command().disable_help_subcommand(true);
    cmd.build();
    cmd
}

#[test]
fn top_level_help_is_one_line_per_command_within_80_columns() {
    let run = toolscore(root(), &["--help"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    for line in run.stdout.lines() {
        assert!(
            line.chars().count() <= 80,
            "wider than 80 columns: {line:?}"
        );
    }
    let commands: Vec<&str> = run
        .stdout
        .split("Commands:\n")
        .nth(1)
        .expect("a Commands section")
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .collect();
    for sub in cli().get_subcommands() {
        let lines: Vec<&&str> = commands
            .iter()
            .filter(|l| l.split_whitespace().next() == Some(sub.get_name()))
            .collect();
        assert_eq!(
            lines.len(),
            1,
            "`{}` has one line: {commands:#?}",
            sub.get_name()
        );
    }
    // No summary wraps onto a second line.
    assert!(
        commands.iter().all(|l| !l.starts_with("     ")),
        "a command's line wraps: {commands:#?}"
    );
    // Every command's help fits too, flags and all.
    for path in command_paths(&cli(), &[]) {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let run = toolscore(root(), &args);
        assert_eq!(run.code, 0, "{}", run.transcript());
        for line in run.stdout.lines() {
            assert!(
                line.chars().count() <= 80,
                "`toolscore {}` is wider than 80 columns: {line:?}",
                args.join(" ")
            );
        }
    }
}

/// Every subcommand, at any depth, as the words that name it.
fn command_paths(cmd: &clap::Command, prefix: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for sub in cmd.get_subcommands() {
        let mut path = prefix.to_vec();
        path.push(sub.get_name().to_owned());
        out.extend(command_paths(sub, &path));
        out.push(path);
    }
    out
}

#[test]
fn run_help_groups_its_flags_under_headings() {
    let run = toolscore(root(), &["run", "--help"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let headings: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
        .collect();
    assert_eq!(
        headings,
        [
            "Options:",
            "Input:",
            "Provider:",
            "Recording:",
            "Trials and limits:",
            "Statistics:",
            "Gates:",
            "Output:",
            "Past one machine:"
        ],
        "{}",
        run.stdout
    );
    // Nothing is left under the catch-all but help itself.
    let options = run.stdout.split("Options:\n").nth(1).unwrap();
    let options = options.split("\nInput:").next().unwrap();
    let flags: Vec<&str> = options
        .lines()
        .filter(|l| l.trim_start().starts_with('-'))
        .collect();
    assert_eq!(flags, ["  -h, --help"], "ungrouped flags: {options}");
}

#[test]
fn completion_scripts_are_generated_for_each_shell_and_bash_parses_it() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let run = toolscore(root(), &["completions", shell]);
        assert_eq!(run.code, 0, "{}", run.transcript());
        assert!(
            run.stdout.contains("max-infra-error-rate") && run.stdout.contains("toolscore"),
            "{shell}: {}",
            &run.stdout[..run.stdout.len().min(400)]
        );
    }
    let bash = toolscore(root(), &["completions", "bash"]).stdout;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("toolscore.bash");
    std::fs::write(&script, &bash).unwrap();
    let check = std::process::Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .expect("bash");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    // Loaded into a shell, it completes the subcommands and a subcommand's flags.
    let probe = format!(
        "source {}; \
         COMP_WORDS=(toolscore st); COMP_CWORD=1; _toolscore toolscore st toolscore; \
         echo \"${{COMPREPLY[@]}}\"; \
         COMP_WORDS=(toolscore run --max-c); COMP_CWORD=2; _toolscore toolscore --max-c run; \
         echo \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&probe)
        .output()
        .expect("bash");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines, ["stress", "--max-cost"], "{text}");
    let bad = toolscore(root(), &["completions", "tcsh"]);
    assert_eq!(bad.code, 2, "{}", bad.transcript());
}

#[test]
fn man_pages_are_written_per_subcommand_and_render() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man");
    let run = toolscore(root(), &["man", out.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let expected: BTreeSet<String> = std::iter::once("toolscore.1".to_owned())
        .chain(
            command_paths(&cli(), &[])
                .iter()
                .map(|p| format!("toolscore-{}.1", p.join("-"))),
        )
        .collect();
    assert_eq!(
        names.iter().cloned().collect::<BTreeSet<_>>(),
        expected,
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains(&format!("wrote {} man pages", names.len()))
    );
    // groff reads each page without a warning, and the run page lists its flags.
    for name in &names {
        let page = out.join(name);
        let rendered = std::process::Command::new("groff")
            // -k: the pages are UTF-8 (…, −), read through preconv as man does.
            .args(["-k", "-man", "-Tutf8", "-ww", "-z"])
            .arg(&page)
            .output()
            .expect("groff (Debian's groff-base, which man needs)");
        assert!(
            rendered.status.success() && rendered.stderr.is_empty(),
            "{name}: {}",
            String::from_utf8_lossy(&rendered.stderr)
        );
    }
    let run_page = std::process::Command::new("man")
        .arg("-l")
        .arg(out.join("toolscore-run.1"))
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "80")
        .output()
        .expect("man");
    let text = String::from_utf8_lossy(&run_page.stdout);
    assert!(text.contains("--max-infra-error-rate"), "{text}");
    assert!(text.contains("toolscore-run"), "{text}");
}

/// `docs/reference/cli.md`, generated: each command with its usage, description and every
/// flag under its heading.
fn cli_reference() -> String {
    let mut md = String::from(
        "# Command-line reference\n\n\
         Every command and flag, generated from the same definitions as `--help` (and the man\n\
         pages of `toolscore man`). The test `cli_help` fails when this page falls behind;\n\
         `TOOLSCORE_UPDATE_DOCS=1 cargo test --test it cli_help` writes it again.\n",
    );
    let root_cmd = cli();
    for path in std::iter::once(Vec::new()).chain(sorted_paths(&root_cmd)) {
        let mut cmd = &root_cmd;
        for word in &path {
            cmd = cmd.find_subcommand(word).expect("a subcommand");
        }
        command_section(&mut md, cmd, &path);
    }
    md
}

/// Subcommand paths in the order `--help` lists them, each before its own subcommands.
fn sorted_paths(cmd: &clap::Command) -> Vec<Vec<String>> {
    fn walk(cmd: &clap::Command, prefix: &[String], out: &mut Vec<Vec<String>>) {
        for sub in cmd.get_subcommands() {
            let mut path = prefix.to_vec();
            path.push(sub.get_name().to_owned());
            out.push(path.clone());
            walk(sub, &path, out);
        }
    }
    let mut out = Vec::new();
    walk(cmd, &[], &mut out);
    out
}

fn command_section(md: &mut String, cmd: &clap::Command, path: &[String]) {
    let name = std::iter::once("toolscore")
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    md.push_str(&format!("\n## `{name}`\n\n"));
    let about = cmd
        .get_long_about()
        .or(cmd.get_about())
        .map(|a| a.to_string())
        .unwrap_or_default();
    for paragraph in about.split("\n\n") {
        md.push_str(&format!("{}\n\n", one_line(paragraph)));
    }
    let usage = cmd.clone().render_usage().to_string();
    md.push_str(&format!(
        "```text\n{}\n```\n",
        usage.trim_start_matches("Usage: ").trim()
    ));
    let mut heading: Option<String> = None;
    let mut args: Vec<&clap::Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version"))
        .collect();
    // Positionals first, then flags grouped by heading in the order `--help` shows them.
    let headings: Vec<Option<&str>> = args.iter().fold(Vec::new(), |mut seen, a| {
        let h = a.get_help_heading();
        if a.get_long().is_some() && !seen.contains(&h) {
            seen.push(h);
        }
        seen
    });
    args.sort_by_key(|a| {
        (
            a.get_long().is_some(),
            headings
                .iter()
                .position(|h| *h == a.get_help_heading())
                .unwrap_or(0),
        )
    });
    let mut open_table = false;
    for arg in args {
        let section = match (arg.get_long(), arg.get_help_heading()) {
            (None, _) => "Arguments".to_owned(),
            (Some(_), Some(h)) => h.to_owned(),
            (Some(_), None) => "Options".to_owned(),
        };
        if heading.as_deref() != Some(section.as_str()) {
            md.push_str(&format!(
                "\n**{section}**\n\n| flag | what it does |\n|---|---|\n"
            ));
            heading = Some(section);
            open_table = true;
        }
        let help = arg
            .get_long_help()
            .or(arg.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default();
        let mut help = one_line(&help).replace('|', "\\|");
        let defaults: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        if !defaults.is_empty() && arg.get_action().takes_values() && !help.contains("[default:") {
            help.push_str(&format!(" [default: {}]", defaults.join(", ")));
        }
        let values: Vec<String> = arg
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| format!("`{}`", v.get_name()))
            .collect();
        if !values.is_empty() && arg.get_action().takes_values() {
            help.push_str(&format!(" (one of {})", values.join(", ")));
        }
        md.push_str(&format!(
            "| {} | {help} |\n",
            flag_label(arg).replace('|', "\\|")
        ));
    }
    if open_table {
        md.push('\n');
    }
}

fn flag_label(arg: &clap::Arg) -> String {
    let value = arg
        .get_value_names()
        .map(|v| {
            v.iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| arg.get_id().as_str().to_uppercase());
    match arg.get_long() {
        Some(long) if arg.get_action().takes_values() => format!("`--{long} <{value}>`"),
        Some(long) => format!("`--{long}`"),
        None if arg.is_last_set() => format!("`-- <{value}>…`"),
        None => format!("`<{value}>`"),
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn the_cli_reference_is_generated_from_the_definitions() {
    let path = root().join("docs/reference/cli.md");
    let generated = cli_reference();
    if std::env::var_os("TOOLSCORE_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/reference/cli.md is behind the clap definitions; run \
         `TOOLSCORE_UPDATE_DOCS=1 cargo test --test it cli_help` and review the diff"
    );
    // Every flag of every command is on the page, under its command.
    for path in sorted_paths(&cli()) {
        let mut cmd = cli();
        for word in &path {
            cmd = cmd.find_subcommand(word).unwrap().clone();
        }
        let section = format!("## `toolscore {}`", path.join(" "));
        let body = committed
            .split(&section)
            .nth(1)
            .expect("a section per command");
        let body = body.split("\n## ").next().unwrap();
        for long in cmd.get_arguments().filter_map(|a| a.get_long()) {
            if long != "help" {
                assert!(body.contains(&format!("`--{long}")), "{section}: --{long}");
            }
        }
    }
}

/// The flags a `toolscore …` command line uses, with the command they must belong to.
fn flags_of(words: &[String], root_cmd: &clap::Command) -> Result<(), String> {
    let mut cmd = root_cmd;
    let mut rest = &words[1..];
    while let Some(word) = rest.first() {
        match cmd.find_subcommand(word) {
            Some(sub) => {
                cmd = sub;
                rest = &rest[1..];
            }
            None => break,
        }
    }
    for word in rest {
        if word == "--" {
            break; // what follows is the server's command line
        }
        let Some(flag) = word.strip_prefix("--") else {
            continue;
        };
        let name = flag.split('=').next().unwrap_or(flag);
        let known = name == "help"
            || (cmd.get_name() == "toolscore" && name == "version")
            || cmd.get_arguments().any(|a| a.get_long() == Some(name));
        if !known {
            return Err(format!("--{name} is not a flag of `{}`", cmd.get_name()));
        }
    }
    Ok(())
}

#[test]
fn every_flag_the_docs_give_a_command_exists() {
    let root_cmd = cli();
    let every_long: BTreeSet<String> = sorted_paths(&root_cmd)
        .iter()
        .flat_map(|path| {
            let mut cmd = &root_cmd;
            for word in path {
                cmd = cmd.find_subcommand(word).unwrap();
            }
            cmd.get_arguments()
                .filter_map(|a| a.get_long().map(str::to_owned))
                .collect::<Vec<_>>()
        })
        .collect();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = read(&page);
        let (blocks, prose) = split_blocks(&text);
        // Command lines in shell and console blocks.
        for block in blocks
            .iter()
            .filter(|b| matches!(b.lang.as_str(), "sh" | "console"))
        {
            for line in block.text.replace("\\\n", " ").lines() {
                let line = line.trim().trim_start_matches("$ ");
                for command in line.split("&&").flat_map(|c| c.split('|')) {
                    let words = shell_words(command.trim());
                    if words.first().map(String::as_str) != Some("toolscore") {
                        continue;
                    }
                    checked += 1;
                    if let Err(e) = flags_of(&words, &root_cmd) {
                        wrong.push(format!("{}:{}: {e}: {line}", page.display(), block.line));
                    }
                }
            }
        }
        // Command lines in code spans, and flags named alone (`--gate`).
        for span in prose.split('`').skip(1).step_by(2) {
            let words = shell_words(span);
            match words.first().map(String::as_str) {
                Some("toolscore") => {
                    checked += 1;
                    if let Err(e) = flags_of(&words, &root_cmd) {
                        wrong.push(format!("{}: {e}: `{span}`", page.display()));
                    }
                }
                Some(w) if w.starts_with("--") && words.len() <= 2 => {
                    let name = w[2..].split('=').next().unwrap_or_default();
                    if !name.is_empty() && !every_long.contains(name) && !NOT_OURS.contains(&name) {
                        wrong.push(format!(
                            "{}: `--{name}` is no flag of toolscore",
                            page.display()
                        ));
                    }
                }
                _ => {}
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(checked > 100, "only {checked} command lines were checked");
}

/// Flags the docs name that belong to other programs (cargo, the test harness, pip).
const NOT_OURS: &[&str] = &[
    "all-targets",
    "release",
    "locked",
    "nocapture",
    "test-threads",
    "help",
    "version",
];
