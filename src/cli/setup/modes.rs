//! How the trials are taken: how many (`--trials`, or what a replay holds), `--shard i/n`,
//! `--batch`, and the sequential gate's budget.

use super::{
    Arc, Arm, Duration, Error, FewestRecorded, InputError, RunArgs, RunInfo, Scenario,
    SequentialGate, SequentialSpec, usage,
};
use toolscore_decide::gate::sequential::{AttackedUnits, TrialBudget};

pub(super) fn checked_shard(
    args: &RunArgs,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<toolscore_runner::Shard>, Error> {
    use toolscore_runner::Shard;
    let Some(text) = &args.shard else {
        return Ok(None);
    };
    let whole_plan = [
        (
            args.gate.sequential,
            "--sequential",
            "the sequential test stops a case on the evidence of all its trials, which a shard holds only part of",
        ),
        (
            args.record.is_some(),
            "--record",
            "a cassette holds every trial of the plan; record in one process, then shard replays of it",
        ),
        (
            !args.gate.gates.is_empty(),
            "--gate",
            "a gate judges the whole plan; gate the merged run: `toolscore report MERGED_DIR --gate …`",
        ),
        (
            args.gate.baseline.is_some(),
            "--baseline",
            "a baseline is compared with the whole plan; pass it to `toolscore report MERGED_DIR --baseline …`",
        ),
        (
            args.compare,
            "--compare",
            "compare the merged run: `toolscore compare MERGED_DIR`",
        ),
    ];
    if let Some((_, flag, why)) = whole_plan.iter().find(|(given, _, _)| *given) {
        return Err(usage(&format!("--shard cannot be used with {flag}: {why}")));
    }
    let shard = if text == "auto" {
        let Some(count) = args.shard_count else {
            return Err(usage(
                "--shard auto needs --shard-count N (the number of shards, e.g. the Job's completions)",
            ));
        };
        let Some(index) = env("JOB_COMPLETION_INDEX") else {
            return Err(usage(
                "--shard auto: JOB_COMPLETION_INDEX is not set (Kubernetes sets it in the pods of an Indexed Job); elsewhere pass --shard INDEX/COUNT",
            ));
        };
        let index: u32 = index.trim().parse().map_err(|_| {
            usage(&format!(
                "--shard auto: JOB_COMPLETION_INDEX is `{index}`, not a shard index"
            ))
        })?;
        Shard::new(index, count).map_err(|e| {
            usage(&format!(
                "--shard auto: JOB_COMPLETION_INDEX {index} with --shard-count {count}: {e}"
            ))
        })?
    } else {
        let shard = Shard::parse(text).map_err(|e| usage(&e))?;
        if let Some(count) = args.shard_count
            && count != shard.count
        {
            return Err(usage(&format!(
                "--shard {text} says {} shards but --shard-count says {count}",
                shard.count
            )));
        }
        shard
    };
    Ok(Some(shard))
}

/// `--batch`: the poll interval, once every arm has a batch API and every unit of the plan
/// is one request (a batch answers all at once, so nothing that needs an answer before the
/// next request, or a latency, can run in one). Returns the wait between polls and the longest
/// wait for the batches to end.
pub(super) fn checked_batch(
    args: &RunArgs,
    arms: &[Arm],
    scenarios: &[Arc<Scenario>],
    gates: &[toolscore_decide::gate::GateSpec],
) -> Result<Option<(Duration, Duration)>, Error> {
    if !args.batch {
        if args.batch_poll.is_some() {
            return Err(usage("--batch-poll needs --batch"));
        }
        if args.batch_max_wait.is_some() {
            return Err(usage("--batch-max-wait needs --batch"));
        }
        return Ok(None);
    }
    if let Some(s) = scenarios.first() {
        return Err(usage(&format!(
            "--batch runs single-step fixtures; scenario `{}` is multi-step (each request needs the answer before it), run it without --batch",
            s.name
        )));
    }
    for arm in arms {
        if arm.replay.is_some() {
            return Err(usage(
                "--batch sends requests to a provider's batch API; a replayed cassette has none",
            ));
        }
        if let Err(why) = toolscore_provider::batch::BatchApi::for_kind(arm.settings.kind) {
            return Err(usage(&format!(
                "--batch: provider `{}` ({}) has no batch API toolscore can use: {why}; batch mode covers openai-compat and openai-responses (OpenAI Batch), anthropic (Message Batches) and gemini (batch mode)",
                arm.settings.name, arm.settings.kind
            )));
        }
    }
    let refused = [
        (
            args.gate.sequential,
            "--sequential",
            "the sequential test decides after each trial, a batch answers all trials at once",
        ),
        (
            args.record.is_some(),
            "--record",
            "a cassette replays latencies, and a batch measures none",
        ),
        (
            gates.iter().any(|g| g.metric.quantile().is_some()),
            "a latency --gate",
            "a batch measures no per-request latency",
        ),
    ];
    if let Some((_, flag, why)) = refused.iter().find(|(given, _, _)| *given) {
        return Err(usage(&format!("--batch cannot be used with {flag}: {why}")));
    }
    let poll = duration_flag("--batch-poll", args.batch_poll.as_deref())?
        .unwrap_or(toolscore_provider::batch::DEFAULT_POLL);
    let max_wait = duration_flag("--batch-max-wait", args.batch_max_wait.as_deref())?
        .unwrap_or(toolscore_provider::batch::DEFAULT_MAX_WAIT);
    Ok(Some((poll, max_wait)))
}

/// A positive duration flag (`30s`, `2m`, `500ms`), if given.
fn duration_flag(flag: &str, text: Option<&str>) -> Result<Option<Duration>, Error> {
    let Some(text) = text else { return Ok(None) };
    humantime::parse_duration(text.trim())
        .ok()
        .filter(|d| !d.is_zero())
        .map(Some)
        .ok_or_else(|| {
            usage(&format!(
                "{flag} {text}: expected a duration such as 30s, 2m or 500ms"
            ))
        })
}

/// Trials per case a sequential run may use when neither --max-trials nor --trials says:
/// enough for the SPRT to decide a case near its threshold (reference/stats.md §6.3: E[N] is
/// 143 at p = t for t = 0.9), without letting a case on the boundary run forever.
pub(super) const DEFAULT_MAX_TRIALS: u32 = 200;

/// The sequential gate's observer for a run: cases per arm and the fixtures' own bars come
/// from the run header, so a live run and `report --sequential` set it up alike.
pub(in crate::cli) fn sequential_gate(
    spec: SequentialSpec,
    run: &RunInfo,
) -> Result<SequentialGate, Error> {
    let cases: usize = run.datasets.iter().map(|d| d.cases).sum();
    let case_gates = run
        .datasets
        .iter()
        .flat_map(|d| {
            d.case_gates
                .iter()
                .map(|(case, g)| ((d.name.clone(), case.clone()), *g))
        })
        .collect();
    // Each case's own trial budget, so a case is stopped once it cannot decide within it.
    let case_caps = run
        .datasets
        .iter()
        .flat_map(|d| {
            d.case_trials
                .iter()
                .map(|(case, n)| ((d.name.clone(), case.clone()), *n))
        })
        .collect();
    // An attacked run's units: the attack gates' cases.
    let attacked = AttackedUnits {
        units: run.scenarios.iter().filter(|s| s.attack.is_some()).count(),
        scenarios: run
            .scenarios
            .iter()
            .filter_map(|s| {
                toolscore_core::attacked_scenario(&s.name, s.attack.as_deref()?).map(str::to_owned)
            })
            .collect(),
    };
    Ok(SequentialGate::new(spec, cases, case_gates, case_caps)
        .with_budget(trial_budget(run))
        .with_attacked(attacked))
}

/// What caps a run's trials per case: a replay runs each case up to its recorded trials, so
/// the recording is the budget when every arm replays; else the flags.
pub(in crate::cli) fn trial_budget(run: &RunInfo) -> TrialBudget {
    if !run.arms.is_empty() && run.arms.iter().all(|a| a.replay.is_some()) {
        TrialBudget::Recording
    } else {
        TrialBudget::Flags
    }
}

/// Whether the run's sequential design stops each case on its own (case-level gates), so a
/// recording of it holds a different number of trials per case.
pub(super) fn stops_each_case(args: &RunArgs) -> bool {
    args.gate.sequential
        && !args.gate.gates.is_empty()
        && args.gate.gate_level == toolscore_summary::GateLevel::Case
}

/// `--trials` (or `--max-trials`), else a replay's fewest recordings, else the default; a
/// replay cannot be asked for more trials than it recorded. A replayed case-level sequential
/// gate instead runs each case up to its own recordings (`arms::cap_to_recordings`): the
/// recorded run stopped its cases at different counts.
pub(super) fn trials_of(
    args: &RunArgs,
    defaults: &toolscore_suite::Defaults,
    fewest_recorded: Option<&FewestRecorded>,
) -> Result<u32, Error> {
    let each_case = stops_each_case(args);
    let trials = match (fewest_recorded, args.trials.or(args.max_trials)) {
        (_, Some(t)) => t,
        (Some(_), None) if each_case => DEFAULT_MAX_TRIALS,
        (Some((fewest, _, _)), None) => *fewest,
        (None, None) if args.gate.sequential => DEFAULT_MAX_TRIALS,
        (None, None) => defaults.trials.unwrap_or(50),
    };
    if trials == 0 {
        return Err(usage("--trials must be at least 1"));
    }
    if let Some((fewest, hint, _)) = fewest_recorded
        && trials > *fewest
        && !each_case
    {
        return Err(InputError::new(format!(
            "--trials {trials} needs {trials} recordings per case, but {hint}"
        ))
        .into());
    }
    Ok(trials)
}
