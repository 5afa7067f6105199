//! `lint --judge PROVIDER --measure LABELLED`: the judge is asked about every labelled tool,
//! as `lint --judge` asks (the same questions, run through the runner into OUT/judge/), and
//! `toolscore_lint::judge::measure` turns its answers and the labels into recall, false alarms
//! and precision. The measurement is printed and kept as `measure.json` in the run's folder,
//! beside the results.jsonl it was computed from.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::cli::Error;
use toolscore_core::{ExitCode, InputError};
use toolscore_lint::judge::labels::{self, LabelledTool};
use toolscore_lint::judge::measure::{self, Answer, MeasureHeader, Measurement};

use super::judge::{self as ask, JudgeArgs};

/// Labelled tools read at most, over every file: far above the project's 3,791 and any set a
/// judge is worth measuring on at one question a tool.
const MAX_LABELLED_TOOLS: usize = 100_000;

/// Bytes a labelled file may hold once decompressed.
const MAX_LABELLED_BYTES: u64 = 256 << 20;

/// Trials a tool at most: a judge sampled more than this is measured better on more tools.
const MAX_TRIALS: u32 = 100;

/// Measures the judge `judge_spec` on the labelled tools of `args.measure`; the measurement,
/// which `run_dir/measure.json` also holds.
pub(super) fn measure(
    args: &JudgeArgs,
    judge_spec: &str,
    config: Option<&Path>,
) -> Result<Measurement, Error> {
    if !(1..=MAX_TRIALS).contains(&args.trials) {
        return Err(super::usage(&format!(
            "--trials must be between 1 and {MAX_TRIALS}"
        )));
    }
    let files = labelled_files(&args.measure)?;
    let mut tools = Vec::new();
    for file in &files {
        read_labelled(file, &mut tools)?;
    }
    if tools.is_empty() {
        return Err(super::usage(&format!(
            "--measure: {} hold no labelled tool",
            shown(&files)
        )));
    }
    let fingerprint = toolscore_core::sha256_of(
        &tools
            .iter()
            // The questions show every string of the tools; their folder is named by them.
            .map(|t| toolscore_core::catalog::view::tool_fingerprint(&t.tool))
            .collect::<Vec<_>>()
            .join("\n"),
    );
    let questions = ask::write_questions(
        tools.iter().map(|t| &t.tool),
        &fingerprint,
        &args.out_dir(config),
    )?;
    let setup = ask::judge_setup(&questions, args, judge_spec, config)?;
    let arm = setup
        .plan
        .arms
        .first()
        .ok_or_else(|| Error::internal("the judge's plan has no arm".to_owned()))?;
    let judge = ask::Judge::of(arm)?;
    let run_dir = setup.out_dir.clone();
    let confidence = setup.confidence;
    super::super::run::priced(&setup)?;
    let mut answers = ask::Answers::default();
    super::super::run::run_phase(setup, None, vec![&mut answers])?;
    let mut per_tool: Vec<Vec<Answer>> = vec![Vec::new(); tools.len()];
    for (id, (i, _)) in questions.tools {
        if let Some(a) = answers.by_case.remove(&id) {
            per_tool[i] = a;
        }
    }
    let measurement = measure::measure(
        &tools,
        &per_tool,
        MeasureHeader {
            judge: judge.label,
            run_dir: run_dir.display().to_string(),
            labelled: args
                .measure
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            trials_per_tool: args.trials,
            confidence,
        },
    );
    let json =
        serde_json::to_vec_pretty(&measurement).map_err(|e| Error::encode("measure.json", e))?;
    toolscore_core::write_file(&run_dir.join("measure.json"), &json)?;
    Ok(measurement)
}

/// How `--measure` ends: 4 when a trial failed (its request, or the budget), since the
/// figures then rest on fewer trials than asked (said on stderr), else 0.
pub(super) fn exit_code(m: &Measurement) -> Result<ExitCode, Error> {
    if m.trials.failed > 0 {
        errln!(
            "{} of {} trials failed and are not scored: the figures rest on the other {}",
            m.trials.failed,
            m.trials.asked,
            m.trials.scored
        )?;
        return Ok(ExitCode::InfraErrors);
    }
    Ok(ExitCode::Pass)
}

/// The files LABELLED names: a file as given, a folder's `.jsonl` and `.jsonl.gz` files in
/// name order.
fn labelled_files(given: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    let mut out = Vec::new();
    for path in given {
        if path.is_dir() {
            let mut inside: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && is_labelled_file(p))
                .collect();
            inside.sort();
            if inside.is_empty() {
                return Err(super::usage(&format!(
                    "--measure {}: the folder holds no .jsonl or .jsonl.gz file",
                    path.display()
                )));
            }
            out.extend(inside);
        } else if path.is_file() {
            out.push(path.clone());
        } else {
            return Err(super::usage(&format!(
                "--measure {}: no such file or folder",
                path.display()
            )));
        }
    }
    Ok(out)
}

/// `*.jsonl` or `*.jsonl.gz`, in any case.
fn is_labelled_file(path: &Path) -> bool {
    let is = |p: &Path, ext: &str| p.extension().is_some_and(|e| e.eq_ignore_ascii_case(ext));
    is(path, "jsonl")
        || (is(path, "gz") && is(Path::new(path.file_stem().unwrap_or_default()), "jsonl"))
}

fn shown(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Appends the labelled tools of `path` (gzip when its name ends in `.gz`) to `out`. Bounded
/// in bytes ([`MAX_LABELLED_BYTES`], decompressed) and in tools over every file
/// ([`MAX_LABELLED_TOOLS`]); each bound, when hit, is bad input that names it.
fn read_labelled(path: &Path, out: &mut Vec<LabelledTool>) -> Result<(), Error> {
    let name = path.display().to_string();
    let gzip = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
    let text = if gzip {
        let file = std::fs::File::open(path).map_err(|e| Error::from(InputError::io(path, &e)))?;
        let mut bytes = Vec::new();
        flate2::read::MultiGzDecoder::new(file)
            .take(MAX_LABELLED_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| InputError::at(&name, None, "", &format!("not gzip: {e}")))?;
        if bytes.len() as u64 > MAX_LABELLED_BYTES {
            return Err(InputError::at(
                &name,
                None,
                "",
                &format!(
                    "more than {} MiB once decompressed",
                    MAX_LABELLED_BYTES >> 20
                ),
            )
            .into());
        }
        String::from_utf8(bytes)
            .map_err(|e| InputError::at(&name, None, "", &format!("not UTF-8: {e}")))?
    } else {
        toolscore_core::read_text(path)?
    };
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if out.len() >= MAX_LABELLED_TOOLS {
            return Err(InputError::at(
                &name,
                Some(i + 1),
                "",
                &format!("more than {MAX_LABELLED_TOOLS} labelled tools in all; measure on a part of them"),
            )
            .into());
        }
        out.push(labels::parse_line(line, &name, i + 1)?);
    }
    Ok(())
}
