//! tune's providers, checked before anything is sent: the tuned provider as `run` validates
//! it (or a replay, which must hold the baseline's trials), the cassette `--record` creates,
//! the `--author`, and the flags that reach the tuned model live again later.

use std::path::{Path, PathBuf};

use super::super::setup::{RunSetup, Units, build_plan_of_units};
use super::super::usage;
use super::{TuneArgs, phase_args};
use crate::cli::Error;
use toolscore_provider::cassette::CassetteHeader;

/// The provider validated as `run` would on the training units (a replay must hold the
/// baseline's; nothing is sent), and with --record the cassette to create and its header,
/// which names the catalog of every unit, held-out scenarios included (each scenario's
/// catalog has its own key), so the confirmation replays too.
pub(super) fn probe(
    args: &TuneArgs,
    dir: &Path,
    training: Units<'_>,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<(RunSetup, Option<(PathBuf, CassetteHeader)>), Error> {
    let mut probe_args = phase_args(args, dir, "probe", 1, None);
    probe_args.record = args.record.clone();
    probe_args.record_note = args.record_note.clone();
    probe_args.force = args.force;
    let units = args.record.is_none().then_some(training);
    let probe = build_plan_of_units(probe_args, env, units)?;
    if probe.plan.arms.len() != 1 {
        return Err(usage(&format!(
            "tune runs against one provider; this plan has {} arms (name one with --provider)",
            probe.plan.arms.len()
        )));
    }
    let to_record = probe.record.as_ref().map(|rec| {
        let header = probe.cassette_header(rec, std::time::SystemTime::now());
        (rec.path.clone(), header)
    });
    Ok((probe, to_record))
}

/// The `--author` provider: validated as `run` validates a provider (a key it needs, a price
/// with --max-cost), or, when the tuned provider replays a tune's recording, the author that
/// recording holds (its answers are served from it; no key is needed). A recording made with
/// an author replays only with `--author` naming it, and one made without, only without.
pub(super) fn author_arm(
    args: &TuneArgs,
    tuned: &toolscore_runner::Arm,
    dir: &Path,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<Option<toolscore_runner::Arm>, Error> {
    if let Some(cassette) = &tuned.replay {
        let recorded = &cassette.header.author;
        let file = cassette.path.display();
        return match (&args.author, recorded) {
            (None, None) => Ok(None),
            (Some(name), Some(r)) if *name == r.name => Ok(Some(toolscore_runner::Arm {
                settings: r.settings(),
                variant: toolscore_core::BASE_VARIANT.to_owned(),
                replay: Some(cassette.clone()),
                price: None,
            })),
            (Some(name), Some(r)) => Err(usage(&format!(
                "--author {name}: {file} recorded the rewrites of author `{}`; replay it with --author {}",
                r.name, r.name
            ))),
            (Some(name), None) => Err(usage(&format!(
                "--author {name}: {file} holds no author's rewrites (it was recorded without --author); replay it without --author"
            ))),
            (None, Some(r)) => Err(usage(&format!(
                "{file} was recorded with --author {}: its race holds the author's candidates; replay it with --author {}",
                r.name, r.name
            ))),
        };
    }
    let Some(name) = &args.author else {
        return Ok(None);
    };
    let mut run = super::super::run::RunArgs::defaults();
    run.suite = args.suite.clone();
    run.providers = vec![name.to_owned()];
    run.trials = Some(1);
    run.max_cost = args.max_cost;
    run.out = Some(dir.to_owned());
    run.run_id = Some("author".to_owned());
    let nothing = Units {
        cases: &[],
        scenarios: &[],
    };
    let setup = build_plan_of_units(run, env, Some(nothing))?;
    let mut arms = setup.plan.arms;
    match (arms.len(), arms.first().is_some_and(|a| a.replay.is_some())) {
        (1, false) => Ok(Some(arms.remove(0))),
        (_, true) => Err(usage("--author cannot be a replay: it must write new text")),
        (n, _) => Err(usage(&format!(
            "--author {name} names {n} providers; name one"
        ))),
    }
}

/// `--provider NAME` as given (or the arm's name); for a replay, the flags of the provider it
/// recorded, since a replay cannot show the model a new variant.
pub(super) fn live_provider(args: &TuneArgs, arm: &toolscore_runner::Arm) -> String {
    let s = &arm.settings;
    if arm.replay.is_none() {
        return args.provider.clone().unwrap_or_else(|| s.name.clone());
    }
    let mut flags = format!("{} --base-url {} --model {}", s.kind, s.base_url, s.model);
    if let Some(t) = s.temperature {
        flags.push_str(&format!(" --temperature {t}"));
    }
    if let Some(m) = s.max_tokens {
        flags.push_str(&format!(" --max-tokens {m}"));
    }
    flags
}
