//! `toolscore explain RUN_DIR CASE`: what the trials of one case did, grouped into behaviours
//! with one example each, beside the conversation and catalog exactly as the arm's model read
//! them; with `--against RUN_DIR` or a second `--arm`, how the behaviours moved between two
//! arms. Reads the run's files only: no model is called, no server started.

use std::path::{Path, PathBuf};
use toolscore_core::metric::Metric;

use clap::Args;

use super::shown::RunFiles;
use super::{load_run, setup, usage};
use crate::cli::Error;
use toolscore_core::ExitCode;
use toolscore_core::{ArmId, SCENARIO_DATASET, TrialRecord};
use toolscore_summary::behaviour::{
    ArmExplanation, BehaviourTally, ExplainedDiff, Explanation, ToBase,
};
use toolscore_summary::{ComparedArm, Summary};

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The run folder.
    #[arg(value_name = "RUN_DIR")]
    pub run_dir: PathBuf,
    /// The case: its id, DATASET/ID when two datasets share it, or a scenario's name.
    #[arg(value_name = "CASE")]
    pub case: String,
    /// The arm to explain: a variant, a provider, or PROVIDER/VARIANT [default: every arm]. A
    /// second --arm shows how the behaviours moved from the first arm to it.
    #[arg(long = "arm", value_name = "NAME")]
    pub arms: Vec<String>,
    /// Another run folder: how the behaviours moved from RUN_DIR to it (the arm a second --arm
    /// names there, else the one the first names, else its only arm).
    #[arg(long, value_name = "RUN_DIR")]
    pub against: Option<PathBuf>,
    /// The rate the case's difference is on, as in `compare`.
    #[arg(long, value_enum, default_value_t = Metric::Selection)]
    pub metric: Metric,
    /// Two-sided confidence level of every interval [default: the run's].
    #[arg(long)]
    pub confidence: Option<f64>,
    /// Show each example's response body exactly as the provider sent it (cut at 16 KiB),
    /// from the cassette the arm replayed or recorded.
    #[arg(long)]
    pub raw: bool,
    /// Also write the explanation as JSON to FILE; `-` writes it to standard output instead
    /// of the text.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// One arm to explain: which run (0 = RUN_DIR, 1 = --against) and which arm.
struct Side {
    run: usize,
    arm: ArmId,
}

/// Explains the case; exit 0, or 2 when the run, the case or an arm is not found.
pub(super) fn run(args: &ExplainArgs) -> Result<ExitCode, Error> {
    let metric = args.metric;
    let mut runs = vec![load_run(&args.run_dir)?];
    let mut dirs = vec![args.run_dir.as_path()];
    if let Some(other) = &args.against {
        runs.push(load_run(other)?);
        dirs.push(other.as_path());
    }
    let confidence = setup::checked_confidence(args.confidence.unwrap_or(runs[0].confidence))?;
    let case = find_case(&runs[0], &args.case)?;
    let CaseName { dataset, case_id } = &case;
    let sides = pick_sides(&runs, &args.arms)?;
    let mut tallies: Vec<BehaviourTally> = sides.iter().map(|_| BehaviourTally::new()).collect();
    for (r, dir) in dirs.iter().enumerate() {
        toolscore_summary::for_each_record(
            &dir.join("results.jsonl"),
            &mut |record: &TrialRecord| {
                if record.dataset != *dataset || record.case_id != *case_id {
                    return;
                }
                for (side, tally) in sides.iter().zip(tallies.iter_mut()) {
                    if side.run == r && side.arm == record.arm {
                        tally.add(record);
                    }
                }
            },
        )?;
    }
    let mut files: Vec<RunFiles> = runs
        .iter()
        .zip(&dirs)
        .map(|(run, dir)| RunFiles::new(dir, &run.run))
        .collect();
    let diff = (sides.len() == 2).then(|| {
        let to_base = (
            files[sides[0].run].base_names(dataset, &sides[0].arm.variant),
            files[sides[1].run].base_names(dataset, &sides[1].arm.variant),
        );
        explained_diff(
            &runs,
            &sides,
            (&tallies[0], &tallies[1]),
            &case,
            metric,
            confidence,
            (&to_base.0, &to_base.1),
        )
    });
    let arms: Vec<ArmExplanation> = sides
        .iter()
        .zip(tallies)
        .map(|(side, tally)| {
            let (shown, not_shown) = match files[side.run].case(dataset, case_id, &side.arm.variant)
            {
                Ok(s) => (Some(s), None),
                Err(why) => (None, Some(why.to_string())),
            };
            let mut behaviours = tally.finish(dataset, case_id, &side.arm, confidence);
            if let Some(a) = &mut behaviours.attack {
                // The goal as the run's attacks.jsonl states it; an unreadable file leaves the
                // figures without it, as a changed fixture leaves them without the conversation.
                a.goal = super::attacks::run_attack(files[side.run].dir(), &a.id)
                    .ok()
                    .map(|attack| attack.goal.label());
            }
            let mut explained = ArmExplanation {
                run_id: runs[side.run].run.run_id.clone(),
                behaviours,
                shown,
                not_shown,
                raw_not_shown: None,
            };
            if args.raw {
                attach_raw(&mut explained, &runs[side.run], &side.arm);
            }
            explained
        })
        .collect();
    let explanation = Explanation { arms, diff };
    write(&explanation, args.json.as_deref())?;
    Ok(ExitCode::Pass)
}

/// Writes the JSON (to FILE, or to stdout for `-`) and the text (unless the JSON went to
/// stdout).
fn write(explanation: &Explanation, json: Option<&Path>) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    match json {
        Some(p) if p == Path::new("-") => {
            serde_json::to_writer_pretty(&mut out, explanation)
                .map_err(|e| Error::encode("the explanation", e))?;
            std::io::Write::write_all(&mut out, b"\n")
                .map_err(|e| Error::io("cannot write the explanation", e))?;
            return Ok(());
        }
        Some(p) => toolscore_core::write_json(p, explanation)?,
        None => {}
    }
    toolscore_report::render_explanation(explanation, &mut out)
        .map_err(|e| Error::io("cannot write the explanation", e))
}

/// The (dataset, case id) `wanted` names in the run: `ID`, `DATASET/ID` or a scenario's name.
/// An unknown one is refused naming the closest known cases.
/// A case as a run names it: its dataset (`scenario` for a scenario) and its id there.
struct CaseName {
    dataset: String,
    case_id: String,
}

fn find_case(s: &Summary, wanted: &str) -> Result<CaseName, Error> {
    let mut known: Vec<(String, String)> = s
        .arms
        .iter()
        .flat_map(|a| &a.cases)
        .map(|c| (c.dataset.clone(), c.case_id.clone()))
        .chain(
            s.run
                .scenarios
                .iter()
                .map(|sc| (SCENARIO_DATASET.to_owned(), sc.name.clone())),
        )
        .collect();
    known.sort();
    known.dedup();
    let matches: Vec<&(String, String)> = known
        .iter()
        .filter(|(d, c)| c == wanted || format!("{d}/{c}") == wanted)
        .collect();
    match matches.as_slice() {
        [(dataset, case_id)] => Ok(CaseName {
            dataset: dataset.clone(),
            case_id: case_id.clone(),
        }),
        [] => Err(usage(&format!(
            "run {} has no case {wanted}; the closest of its {} cases: {}",
            s.run.run_id,
            known.len(),
            closest(&known, wanted).join(", ")
        ))),
        several => Err(usage(&format!(
            "case {wanted} is in {} datasets; write DATASET/ID: {}",
            several.len(),
            several
                .iter()
                .map(|(d, c)| format!("{d}/{c}"))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Up to eight known ids, those sharing the most `-`/`_`-separated words with `wanted`
/// first (then in id order): what a mistyped id was most likely meant to be.
fn closest(known: &[(String, String)], wanted: &str) -> Vec<String> {
    let words = |s: &str| -> Vec<String> {
        s.split(['-', '_', '/', ' ', '.'])
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let wanted = words(wanted);
    let mut scored: Vec<(usize, String)> = known
        .iter()
        .map(|(_, c)| {
            (
                words(c).iter().filter(|w| wanted.contains(w)).count(),
                c.clone(),
            )
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    scored.into_iter().take(8).map(|(_, c)| c).collect()
}

/// Every arm of a run, as its records name them.
fn arms_of(s: &Summary) -> Vec<ArmId> {
    s.run
        .arms
        .iter()
        .map(toolscore_summary::ArmInfo::id)
        .collect()
}

/// The arm of run `s` that `wanted` names (its only arm when `None`).
fn arm_of(s: &Summary, wanted: Option<&String>) -> Result<ArmId, Error> {
    let arms = arms_of(s);
    let ids: Vec<&ArmId> = arms.iter().collect();
    match wanted {
        Some(w) => Ok(arms[toolscore_decide::find_arm(&ids, &s.run.run_id, w)?].clone()),
        None if arms.len() == 1 => Ok(arms[0].clone()),
        None => Err(usage(&format!(
            "run {} has {} arms ({}); name the one to explain with --arm",
            s.run.run_id,
            arms.len(),
            toolscore_decide::arm_list(ids.into_iter())
        ))),
    }
}

/// The arms to explain: with --against, one of each run; else the --arm(s) named, or every arm.
fn pick_sides(runs: &[Summary], wanted: &[String]) -> Result<Vec<Side>, Error> {
    if wanted.len() > 2 {
        return Err(usage(
            "--arm names one arm to explain, or two to see how the behaviours moved between them",
        ));
    }
    if let [this, other] = runs {
        let b = wanted.get(1).or(wanted.first());
        return Ok(vec![
            Side {
                run: 0,
                arm: arm_of(this, wanted.first())?,
            },
            Side {
                run: 1,
                arm: arm_of(other, b)?,
            },
        ]);
    }
    if wanted.is_empty() {
        return Ok(arms_of(&runs[0])
            .into_iter()
            .map(|arm| Side { run: 0, arm })
            .collect());
    }
    wanted
        .iter()
        .map(|w| {
            Ok(Side {
                run: 0,
                arm: arm_of(&runs[0], Some(w))?,
            })
        })
        .collect()
}

/// How the behaviours moved from side 0 to side 1, with the case's difference on `metric` as
/// `compare` computes it (absent for a scenario, which `compare` does not pair).
fn explained_diff(
    runs: &[Summary],
    sides: &[Side],
    tallies: (&BehaviourTally, &BehaviourTally),
    case: &CaseName,
    metric: Metric,
    confidence: f64,
    to_base: (&ToBase, &ToBase),
) -> ExplainedDiff {
    let case_of = |side: &Side| {
        runs[side.run]
            .arms
            .iter()
            .find(|a| a.arm == side.arm)
            .and_then(|a| {
                a.cases
                    .iter()
                    .find(|c| c.dataset == case.dataset && c.case_id == case.case_id)
            })
    };
    let case = match (case_of(&sides[0]), case_of(&sides[1])) {
        (Some(a), Some(b)) => toolscore_decide::case_difference(a, b, metric, confidence),
        _ => None,
    };
    let compared = |side: &Side| ComparedArm {
        run_id: runs[side.run].run.run_id.clone(),
        arm: side.arm.clone(),
        folder: None,
    };
    ExplainedDiff {
        a: compared(&sides[0]),
        b: compared(&sides[1]),
        metric,
        case,
        behaviours: toolscore_summary::behaviour::diff(tallies.0, tallies.1, confidence, to_base),
    }
}

/// Bytes of one raw response `--raw` prints.
const RAW_BYTES: usize = 16 * 1024;

/// Fills each example's raw responses from the cassette the arm replayed (or the run
/// recorded), or says why there are none.
fn attach_raw(e: &mut ArmExplanation, s: &Summary, arm: &ArmId) {
    let replayed = s
        .run
        .arms
        .iter()
        .find(|a| a.variant == arm.variant && a.identity.provider == arm.provider)
        .and_then(|a| a.replay.as_ref().map(|r| r.cassette.clone()));
    let Some(path) = replayed.or_else(|| s.run.recorded_to.clone()) else {
        e.raw_not_shown = Some(
            "the run kept no raw response: it neither replayed nor recorded a cassette (`run --record FILE` keeps them)"
                .to_owned(),
        );
        return;
    };
    let wanted: std::collections::BTreeSet<(String, u32)> = e
        .behaviours
        .behaviours
        .iter()
        .map(|b| (b.example.request_hash.clone(), b.example.trial_index))
        .collect();
    match toolscore_provider::cassette::Cassette::raw_bodies(Path::new(&path), &wanted, RAW_BYTES) {
        Ok(bodies) => {
            for b in &mut e.behaviours.behaviours {
                let (hash, trial) = (b.example.request_hash.clone(), b.example.trial_index);
                b.example.raw = bodies
                    .range((hash.clone(), trial, 0)..=(hash, trial, u32::MAX))
                    .map(|(_, body)| body.clone())
                    .collect();
            }
        }
        Err(err) => e.raw_not_shown = Some(format!("its cassette cannot be read ({err})")),
    }
}
