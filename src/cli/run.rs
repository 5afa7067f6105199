//! `toolscore run`: the flags of a run, and running a validated setup: the observers composed,
//! the summary aggregated and written, the report printed, the exit code decided.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::gate::{GateArgs, check_baseline_population, judge_baseline};
use super::history::append_history;
use super::output::{self, Format};
use super::setup::{RunSetup, build_plan};
use super::{SuiteArgs, resume, usage};
use super::{cost, lint};
use crate::cli::Error;
use toolscore_core::ExitCode;
use toolscore_core::Observers;
use toolscore_decide::gate::sequential_baseline::SequentialBaseline;
use toolscore_report::ProgressMode;

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten, next_help_heading = "Input")]
    pub suite: SuiteArgs,
    /// A provider named in the config, a kind (`openai-compat`) configured by the flags below,
    /// a kind and model as KIND:MODEL (`anthropic:claude-sonnet-4-5`, `gemini:gemini-2.5-flash`,
    /// `ollama:qwen3`), or `replay:CASSETTE` to serve recorded responses without calling any model. Repeat it to
    /// run several arms in one plan; each record names its arm.
    #[arg(help_heading = "Provider", long = "provider", value_name = "NAME")]
    pub providers: Vec<String>,
    /// Catalog variant to show the model: `base` (the dataset's tools.json) or an overlay
    /// `DATASET/variants/NAME.json`. Repeat it to run one arm per variant on the same cases,
    /// interleaved trial by trial, for `toolscore compare` [default: base].
    #[arg(help_heading = "Input", long = "variant", value_name = "NAME")]
    pub variants: Vec<String>,
    /// Score starter cases that `toolscore init` wrote and nobody edited (tagged `starter`, the
    /// request still beginning "EDIT ME:"); without it a suite that holds any is refused (exit
    /// 2), naming each. A placeholder request measures nothing.
    #[arg(help_heading = "Input", long)]
    pub allow_starter_cases: bool,
    /// Record every raw response to this cassette (`.gz` = compressed) for later replay.
    #[arg(help_heading = "Recording", long, value_name = "CASSETTE")]
    pub record: Option<PathBuf>,
    /// With --record: what the recording is (model build, server), shown whenever it is replayed.
    #[arg(
        help_heading = "Recording",
        long,
        value_name = "TEXT",
        requires = "record"
    )]
    pub record_note: Option<String>,
    /// With --record: overwrite the cassette if the file exists.
    #[arg(help_heading = "Recording", long, requires = "record")]
    pub force: bool,
    #[command(flatten)]
    pub provider_args: super::ProviderArgs,
    /// Trials per case [default: the config's `trials`, else 50; a replay runs the trials its
    /// cassette holds per case].
    #[arg(help_heading = "Trials and limits", long)]
    pub trials: Option<u32>,
    /// With --sequential: the most trials a case may use (the rounds of a suite gate or a
    /// comparison) before it is called inconclusive (the plan's trials per case) [default: 200].
    #[arg(
        help_heading = "Trials and limits",
        long,
        value_name = "N",
        requires = "sequential",
        conflicts_with = "trials"
    )]
    pub max_trials: Option<u32>,
    /// Trials in flight at once [default: 8].
    #[arg(help_heading = "Trials and limits", long)]
    pub concurrency: Option<usize>,
    /// Requests to each provider in flight at once, over all its arms (also `max_in_flight:` in
    /// the config) [default: only --concurrency limits them].
    #[arg(help_heading = "Trials and limits", long, value_name = "N")]
    pub max_in_flight: Option<usize>,
    /// Requests started per minute to each provider, evenly spaced (also
    /// `requests_per_minute:` in the config) [default: no limit].
    #[arg(help_heading = "Trials and limits", long, value_name = "N")]
    pub requests_per_minute: Option<u32>,
    /// Tokens sent to each provider per minute: each request is charged its body's characters
    /// / 4 plus its max tokens before it is sent (also `tokens_per_minute:` in the config)
    /// [default: no limit].
    #[arg(help_heading = "Trials and limits", long, value_name = "N")]
    pub tokens_per_minute: Option<u32>,
    /// Confidence level of every interval [default: 0.95].
    #[arg(help_heading = "Statistics", long)]
    pub confidence: Option<f64>,
    /// Target half-width: warn when an interval is wider and say how many trials would do [default: 0.05].
    #[arg(help_heading = "Statistics", long)]
    pub precision: Option<f64>,
    #[command(flatten, next_help_heading = "Gates")]
    pub gate: GateArgs,
    /// Fraction of trials allowed to end in infrastructure errors before the run exits 4.
    #[arg(
        help_heading = "Trials and limits",
        long,
        default_value_t = toolscore_summary::Decision::DEFAULT_MAX_INFRA_ERROR_RATE,
        value_name = "RATE"
    )]
    pub max_infra_error_rate: f64,
    /// Refuse to start a run whose estimated cost (printed before the first request) is over
    /// USD, and stop starting trials once spend plus the trials in flight would pass it: the
    /// rest are reported as not run (budget), never as failures. Every arm needs a price (the
    /// shipped table or `prices:` in toolscore.yaml).
    #[arg(help_heading = "Trials and limits", long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Folder for run outputs; each run writes OUT/<run-id>/ [default: reports, beside the
    /// toolscore.yaml found (the current folder's without one)].
    #[arg(help_heading = "Output", long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Run id [default: UTC timestamp plus a random suffix].
    #[arg(help_heading = "Output", long, conflicts_with = "resume")]
    pub run_id: Option<String>,
    /// Finish a run that was killed or interrupted: keep its completed trials, re-run those that
    /// ended in infrastructure errors, run the missing ones. Give the same flags as the run.
    #[arg(help_heading = "Past one machine", long, value_name = "RUN_DIR", conflicts_with_all = ["run_id", "record"])]
    pub resume: Option<PathBuf>,
    /// Progress display on stderr.
    #[arg(help_heading = "Output", long, value_enum, default_value_t = ProgressMode::Auto)]
    pub progress: ProgressMode,
    /// With exactly two arms (e.g. --variant base --variant terse): compare them paired by case
    /// when the run ends, print it after the report and keep it in summary.json, as `toolscore
    /// compare` would (selection, --min-effect 0.05).
    #[arg(help_heading = "Statistics", long)]
    pub compare: bool,
    /// With --compare: the smallest difference worth acting on; a comparison that finds none
    /// as large either way says so.
    #[arg(
        help_heading = "Statistics",
        long,
        default_value_t = toolscore_decide::DEFAULT_MIN_EFFECT,
        requires = "compare"
    )]
    pub min_effect: f64,
    /// Run one deterministic slice of the plan, `INDEX/COUNT` counted from 0 (`0/4` … `3/4`):
    /// each trial belongs to the shard its key (arm, dataset, case, trial) hashes to, so the
    /// slices are balanced and stay put when cases are added. `auto` reads the index from
    /// JOB_COMPLETION_INDEX (Kubernetes Indexed Jobs) and the count from --shard-count. Join
    /// the shards' run folders with `toolscore merge`. Not with --sequential, --gate,
    /// --baseline, --compare or --record: those need the whole plan.
    #[arg(
        help_heading = "Past one machine",
        long,
        value_name = "INDEX/COUNT|auto"
    )]
    pub shard: Option<String>,
    /// Send the trials through the providers' batch APIs (OpenAI Batch for openai-compat and
    /// openai-responses, Anthropic Message Batches, Gemini batch mode) at their batch price:
    /// submitted at once, polled (progress on stderr), then scored and reported like any run.
    /// The batch ids are kept in RUN_DIR/batches.json, so a run killed while polling is picked
    /// up with --resume without submitting again. Single-step fixtures only; no latency is
    /// measured.
    #[arg(help_heading = "Past one machine", long)]
    pub batch: bool,
    /// With --batch: the wait between two polls of a running batch (`30s`, `2m`, `500ms`)
    /// [default: 30s].
    #[arg(help_heading = "Past one machine", long, value_name = "DURATION")]
    pub batch_poll: Option<String>,
    /// With --batch: the longest to wait for the batches to end before giving up (exit 4;
    /// they keep running at the provider and `--resume` polls them again) [default: 25h, an
    /// hour past the 24 h in which OpenAI, Anthropic and Gemini end every batch].
    #[arg(help_heading = "Past one machine", long, value_name = "DURATION")]
    pub batch_max_wait: Option<String>,
    /// With --shard auto: how many shards the plan is split into (the Job's `completions`).
    #[arg(
        help_heading = "Past one machine",
        long,
        value_name = "N",
        requires = "shard"
    )]
    pub shard_count: Option<u32>,
    /// A report to write beside what every run produces (the terminal report on stdout,
    /// summary.json and results.csv, the run's record that `report`, `--resume` and
    /// `--baseline` read); repeatable: md (RUN_DIR/report.md), junit (RUN_DIR/junit.xml), html
    /// (RUN_DIR/report.html). terminal, json and csv are always produced.
    #[arg(
        help_heading = "Output",
        long = "format",
        value_enum,
        value_name = "FORMAT"
    )]
    pub formats: Vec<Format>,
    /// Print the whole report: per-tool rates, the weakest and unstable cases, confusions,
    /// schema violations, argument failures, latency by tool and tokens, with the verdict last
    /// [default: the decision and the figures it rests on].
    #[arg(long, help_heading = "Output")]
    pub detail: bool,
}

impl RunArgs {
    /// A `run` given no flag (clap's own defaults), for a command whose steps are runs it sets
    /// up itself (tune's phases).
    pub(super) fn defaults() -> RunArgs {
        #[derive(clap::Parser)]
        struct Bare {
            #[command(flatten)]
            run: RunArgs,
        }
        <Bare as clap::Parser>::parse_from(["toolscore"]).run
    }

    /// `--out`, else the project's `reports` (see `project`).
    pub(super) fn out_dir(&self) -> PathBuf {
        self.out
            .clone()
            .unwrap_or_else(|| super::default_path(self.suite.config.as_deref(), "reports"))
    }
}

/// Validates the flags into a setup (nothing is sent before it is valid) and runs it. Takes
/// the flags by value: the setup keeps them.
pub(super) fn run(args: RunArgs) -> Result<ExitCode, Error> {
    let max_infra = args.max_infra_error_rate;
    if !(0.0..=1.0).contains(&max_infra) {
        return Err(usage("--max-infra-error-rate must be between 0 and 1"));
    }
    let baseline = args.gate.load_baseline()?;
    let gate_args = args.gate.clone();
    let compare = args.compare.then_some(args.min_effect);
    if !(args.min_effect > 0.0 && args.min_effect < 1.0) {
        return Err(usage("--min-effect must be between 0 and 1 (e.g. 0.05)"));
    }
    let detail = args.detail;
    // A format adds its file to what a run always produces (the terminal report,
    // summary.json, results.csv): asking for report.html does not cut the terminal short.
    let asked: Vec<Format> = args
        .formats
        .iter()
        .copied()
        .chain([Format::Terminal, Format::Json, Format::Csv])
        .collect();
    let formats = output::chosen(&asked, &[]);
    let unpinned = super::lock::unpinned_notice(&args.suite);
    let attacks_given = !args.suite.attacks.is_empty();
    let setup = build_plan(args, &|name| std::env::var(name).ok())?;
    if let Some(note) = super::allowed_starters_note(&setup.plan.datasets) {
        errln!("{note}")?;
    }
    super::setup::check_local_servers(&setup)?;
    if let Some((base, _)) = &baseline
        && !gate_args.intersect
    {
        check_baseline_population(&setup.plan, base)?;
    }
    if compare.is_some() {
        let [a, b] = setup.plan.arms.as_slice() else {
            return Err(usage(&format!(
                "--compare needs exactly two arms (two --variant or two --provider); this run has {}",
                setup.plan.arms.len()
            )));
        };
        // The rule the comparison applies after the run, before any trial: two arms that
        // differ in more than one thing cannot be compared, so the run is not worth making.
        let (ia, ib) = (a.settings.identity(), b.settings.identity());
        toolscore_decide::axis_between((&a.id(), Some(&ia)), (&b.id(), Some(&ib)), true)
            .map_err(|e| usage(&format!("--compare: {e}")))?;
    }
    // Once the run is sure to start: a refusal stays the one line it is.
    if let Some(note) = unpinned {
        errln!("{note}")?;
    }
    if attacks_given && let Some(note) = not_attacked_notice(&setup.plan.scenarios) {
        errln!("{note}")?;
    }
    run_command(
        setup,
        max_infra,
        baseline.as_ref(),
        &gate_args,
        compare,
        &formats,
        detail,
    )
}

/// The scenarios of an attacked run that no attack reaches (no injection point), said before
/// the run starts so a missing `${injection}` is not mistaken for a model that resists.
fn not_attacked_notice(scenarios: &[std::sync::Arc<toolscore_suite::Scenario>]) -> Option<String> {
    let attacked: std::collections::BTreeSet<&str> = scenarios
        .iter()
        .filter_map(|s| s.attack.as_ref().map(|a| a.scenario.as_str()))
        .collect();
    let clean: Vec<&str> = scenarios
        .iter()
        .filter(|s| s.attack.is_none() && !attacked.contains(s.name.as_str()))
        .map(|s| s.name.as_str())
        .collect();
    (!clean.is_empty()).then(|| {
        format!(
            "note: not attacked (no injection point): {}; mark one with ${{injection}} in a scripted answer, or `inject:` a live tool",
            clean.join(", ")
        )
    })
}

/// Runs a validated setup: composes the sinks as observers of the run, aggregates, writes
/// `summary.json`, prints the report and decides the exit code.
// Long: the run's steps in their order (each a call), with the bookkeeping that joins them.
fn run_command(
    mut setup: RunSetup,
    max_infra: f64,
    baseline: Option<&(toolscore_summary::Summary, toolscore_core::metric::Metric)>,
    gate_args: &GateArgs,
    compare: Option<f64>,
    formats: &[Format],
    detail: bool,
) -> Result<ExitCode, Error> {
    let runtime = super::async_runtime(None)?;
    let started = std::time::SystemTime::now();
    let mut run = setup.run_info(started);
    refuse_uncollected_batches(&setup)?;
    let resumed = if setup.resume {
        let r = resume::prepare(&mut setup)?;
        errln!("{}", r.describe())?;
        run.resumed_trials = r.kept();
        Some(r)
    } else {
        None
    };
    let (estimate, show_cost) = priced(&setup)?;
    let max_cost = setup.plan.max_cost;
    let mut sinks = setup.sinks(started)?;
    sinks.sequential_baseline = super::gate::sequential_baseline(&setup, gate_args, baseline)?;
    let catalogs = lint::run_catalogs(&setup.plan);
    if let Some(r) = &resumed {
        r.replay_into(&setup.out_dir, &mut sinks)?;
    }
    let totals = execute_plan(runtime, setup.plan, &mut sinks, &mut [])?;
    let totals = match &resumed {
        Some(r) => r.add_to(totals),
        None => totals,
    };
    run.finished_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let latency = sinks.aggregator.latency_distributions();
    let mut summary = sinks
        .aggregator
        .finish(run, &totals, setup.confidence, setup.precision);
    if show_cost {
        summary.budget = Some(cost::budget_report(
            &estimate,
            max_cost,
            totals.budget_not_run,
            &summary.cost.total,
        ));
    }
    if let Some(b) = summary.budget.as_ref().filter(|b| b.cut_short) {
        errln!("budget: {}", b.stop_text())?;
    }
    judge(
        &mut summary,
        &latency,
        Judging {
            sequential: sinks.sequential.as_ref(),
            gates: &setup.gates,
            level: setup.gate_level,
            baseline,
            sequential_baseline: sinks
                .sequential_baseline
                .as_ref()
                .map(SequentialBaseline::results),
            gate_args,
        },
    )?;
    if let Some(min_effect) = compare {
        compare_two_arms(&mut summary, min_effect)?;
        if let (Some(c), Some(s)) = (&mut summary.comparison, &sinks.sequential_compare) {
            s.apply_to(c);
        }
    }
    if !sinks.provider_stops.stops().is_empty() {
        errln!(
            "{} planned trials were not run (skipped, not counted as failures)",
            totals.skipped_trials
        )?;
    }
    let decision = toolscore_decide::decide(&summary, max_infra);
    let code = toolscore_decide::exit_code(&decision);
    let message = decision.not_judged_because();
    summary.decision = Some(decision);
    toolscore_core::write_json(&setup.out_dir.join("summary.json"), &summary)?;
    append_history(&setup.out_dir, &summary)?;
    let files = output::write_files(&summary, &setup.out_dir, formats)?;
    if formats.contains(&Format::Terminal) {
        print_terminal(&summary, &catalogs, &setup.lint, &setup.out_dir, detail)?;
    } else {
        // The report went to files only: the verdict still reaches stdout.
        toolscore_report::render_verdict(&summary, &mut std::io::stdout().lock())
            .map_err(|e| Error::io("cannot write the verdict", e))?;
    }
    let mut written = vec![
        setup.out_dir.join("results.jsonl"),
        setup.out_dir.join("results.csv"),
        setup.out_dir.join("summary.json"),
    ];
    written.extend(files);
    let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    let line = match names.split_last() {
        Some((last, rest)) => format!("wrote {} and {last}", rest.join(", ")),
        None => String::new(),
    };
    // On stdout under the terminal report, as before; on stderr when stdout carries no report.
    if formats.contains(&Format::Terminal) {
        outln!("{line}")?;
    } else {
        errln!("{line}")?;
    }
    if let Some(message) = message {
        errln!("error: {message}")?;
    }
    Ok(code)
}

/// Runs a plan with the sinks (then `extra`) observing it, and drops the runtime, closing every
/// pooled connection before the caller writes the summary: with a high --concurrency the
/// sockets would otherwise hold the file descriptors the summary needs.
pub(super) fn execute_plan(
    runtime: tokio::runtime::Runtime,
    plan: toolscore_runner::RunPlan,
    sinks: &mut super::setup::Sinks,
    extra: &mut [&mut dyn toolscore_core::Observer],
) -> Result<toolscore_core::RunTotals, Error> {
    let totals = {
        let mut observers = Observers::new();
        for o in sinks.observers() {
            observers.push(o);
        }
        for o in extra.iter_mut() {
            observers.push(&mut **o);
        }
        let interrupt = toolscore_provider::Cancel::new();
        runtime.block_on(async {
            super::interrupt::on_signals(interrupt.clone());
            toolscore_runner::execute(plan, &mut observers, &interrupt).await
        })?
    };
    drop(runtime);
    Ok(totals)
}

/// Runs one setup as a step of a bigger command (tune's phases): its sinks and `observers`
/// watch it and its summary.json is written; no report is printed. The records of
/// `carried` (an earlier step's results.jsonl) that are trials of the plan's first arm join
/// the run as done, as `--resume` keeps a run's trials: written to this run's files and fed to
/// every observer first, never run again.
pub(super) fn run_phase(
    mut setup: RunSetup,
    carried: Option<&std::path::Path>,
    mut observers: Vec<&mut dyn toolscore_core::Observer>,
) -> Result<PhaseRun, Error> {
    let runtime = super::async_runtime(None)?;
    let started = std::time::SystemTime::now();
    let mut run = setup.run_info(started);
    let mut sinks = setup.sinks(started)?;
    let (kept, kept_usd) = match carried {
        Some(results) => carry(results, &mut setup.plan, &mut sinks, &mut observers)?,
        None => (0, 0.0),
    };
    let mut totals = execute_plan(runtime, setup.plan, &mut sinks, &mut observers)?;
    totals.completed_trials += kept;
    run.finished_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let summary = sinks
        .aggregator
        .finish(run, &totals, setup.confidence, setup.precision);
    toolscore_core::write_json(&setup.out_dir.join("summary.json"), &summary)?;
    Ok(PhaseRun {
        sent: totals.completed_trials - kept,
        spent: summary.cost.total.usd.map(|usd| (usd - kept_usd).max(0.0)),
        summary,
    })
}

/// A step's summary (of its own trials and the carried ones), and the trials it sent and the
/// dollars they cost (the carried ones set aside).
pub(super) struct PhaseRun {
    pub summary: toolscore_summary::Summary,
    pub sent: u64,
    pub spent: Option<f64>,
}

/// Feeds the first arm's trials in `results` of the plan's cases and scenarios (within its
/// trials) to the sinks and observers, and marks them done in the plan; how many, and what
/// they cost.
fn carry(
    results: &std::path::Path,
    plan: &mut toolscore_runner::RunPlan,
    sinks: &mut super::setup::Sinks,
    observers: &mut [&mut dyn toolscore_core::Observer],
) -> Result<(u64, f64), Error> {
    let arm = plan.arms[0].id();
    // Units in plan order: the datasets' cases, then the scenarios.
    let scenarios = plan
        .scenarios
        .iter()
        .map(|s| (toolscore_core::SCENARIO_DATASET.to_owned(), s.name.clone()));
    let cases: std::collections::HashMap<(String, String), usize> = plan
        .datasets
        .iter()
        .flat_map(|d| d.cases.iter().map(move |c| (d.name.clone(), c.id.clone())))
        .chain(scenarios)
        .enumerate()
        .map(|(i, key)| (key, i))
        .collect();
    let trials = plan.trials;
    let mut kept = 0;
    let mut usd = 0.0;
    let mut failed = None;
    toolscore_summary::for_each_record(results, &mut |record| {
        let Some(&case) = cases.get(&(record.dataset.clone(), record.case_id.clone())) else {
            return;
        };
        let key = toolscore_core::TrialKey {
            arm: 0,
            case,
            trial: record.trial_index,
        };
        if record.arm != arm || key.trial >= trials || failed.is_some() || !plan.done.insert(key) {
            return;
        }
        let event = toolscore_core::RunEvent::Trial {
            key,
            record,
            raw: &[],
        };
        let mut fed = Ok(());
        for o in sinks.observers() {
            fed = fed.and_then(|()| o.on_event(&event).map(|_| ()));
        }
        for o in observers.iter_mut() {
            fed = fed.and_then(|()| o.on_event(&event).map(|_| ()));
        }
        match fed {
            Ok(()) => {
                kept += 1;
                usd += record.cost.as_ref().map_or(0.0, |c| c.usd);
            }
            Err(e) => failed = Some(e),
        }
    })?;
    match failed {
        Some(e) => Err(e.into()),
        None => Ok((kept, usd)),
    }
}

/// A resumed run whose batches were submitted and not collected must be resumed with
/// `--batch`: running them again one request at a time would pay for them twice.
fn refuse_uncollected_batches(setup: &RunSetup) -> Result<(), Error> {
    if setup.resume && setup.plan.batch.is_none() {
        let state_file = setup.out_dir.join(toolscore_runner::batch::STATE_FILE);
        let running = toolscore_runner::batch::uncollected(&state_file)?;
        if !running.is_empty() {
            return Err(usage(&format!(
                "--resume {}: its batches {} were submitted and not collected yet; resume with --batch to poll and collect them",
                setup.out_dir.display(),
                running.join(", ")
            )));
        }
    }
    Ok(())
}

/// The run priced before the first request and before any file: a cap the estimate passes
/// is bad input (exit 2), and nothing is written. Also whether the run shows its cost.
pub(super) fn priced(
    setup: &RunSetup,
) -> Result<(toolscore_runner::budget::Estimate, bool), Error> {
    let estimate = toolscore_runner::budget::estimate(&setup.plan);
    let max_cost = setup.plan.max_cost;
    let show_cost = max_cost.is_some() || estimate.arms.iter().any(|a| a.usd.is_some());
    if show_cost {
        errln!("{}", cost::describe_estimate(&estimate))?;
    }
    if let (Some(max), Some(usd)) = (max_cost, estimate.usd)
        && usd > max
    {
        return Err(usage(&format!(
            "the estimated cost {} of {} trials is over --max-cost {}; lower --trials, run fewer cases or providers, or raise the cap",
            toolscore_summary::format_usd(usd),
            estimate.trials,
            toolscore_summary::format_usd(max)
        )));
    }
    Ok((estimate, show_cost))
}

/// The gates' verdict: the sequential gate's, or the fixed-n gates' over the summary, and
/// the comparison with a baseline.
fn judge(
    summary: &mut toolscore_summary::Summary,
    latency: &toolscore_summary::LatencyDistributions,
    judging: Judging<'_>,
) -> Result<(), Error> {
    let Judging {
        sequential,
        gates,
        level,
        baseline,
        sequential_baseline,
        gate_args,
    } = judging;
    if let Some(sequential) = sequential {
        summary.gate = Some(toolscore_decide::gate::report_of(
            sequential.results(),
            summary.confidence,
        ));
    } else if !gates.is_empty() {
        summary.gate = Some(toolscore_decide::gate::evaluate(
            summary, latency, gates, level,
        ));
    }
    if let Err(e) = judge_baseline(summary, baseline, gate_args, sequential_baseline) {
        // The run happened and is on disk; a baseline it cannot be compared with is reported,
        // and the verdict is left inconclusive rather than losing the summary.
        errln!("error: {e}")?;
        let gates = summary.gate.take().map(|g| g.gates).unwrap_or_default();
        summary.gate = Some(toolscore_summary::GateReport {
            verdict: toolscore_summary::Verdict::Inconclusive,
            confidence: summary.confidence,
            gates,
        });
    }
    Ok(())
}

/// What a run's gates are judged with: the sequential gate that watched it or the fixed-n
/// gates at their level, and the baseline run it is compared with.
struct Judging<'a> {
    sequential: Option<&'a toolscore_decide::gate::sequential::SequentialGate>,
    gates: &'a [toolscore_decide::gate::GateSpec],
    level: toolscore_summary::GateLevel,
    baseline: Option<&'a (toolscore_summary::Summary, toolscore_core::metric::Metric)>,
    /// The sequential gate's verdicts against the baseline, when it ran beside the run.
    sequential_baseline: Option<Vec<toolscore_summary::GateResult>>,
    gate_args: &'a GateArgs,
}

/// The terminal report, the comparison of `--compare`, and, with `detail`, the lint findings
/// beside the weakest tools (without it, a line saying where the rest is).
fn print_terminal(
    summary: &toolscore_summary::Summary,
    catalogs: &lint::RunCatalogs,
    lint_options: &toolscore_lint::LintOptions,
    run_dir: &std::path::Path,
    detail: bool,
) -> Result<(), Error> {
    let failed = |e| Error::io("cannot write the report", e);
    let mut out = std::io::stdout().lock();
    toolscore_report::Render::render(&toolscore_report::Terminal { detail }, summary, &mut out)
        .map_err(failed)?;
    if let Some(c) = &summary.comparison {
        writeln!(out).map_err(failed)?;
        toolscore_report::render_comparison(c, &mut out)
            .map_err(|e| Error::io("cannot write the comparison", e))?;
    }
    // The lines `report` prints under the report, then the lint findings.
    output::write_pointers(summary, run_dir, detail, &mut out).map_err(failed)?;
    if detail {
        writeln!(out).map_err(failed)?;
        let lints = lint::lint_run_catalogs(catalogs, lint_options);
        lint::print_beside_weakest(summary, &lints, run_dir, &mut out).map_err(failed)?;
    }
    Ok(())
}

/// `--compare`: the run's two arms compared as `toolscore compare` does with its defaults
/// and `min_effect`,
/// kept in the summary. A comparison that cannot be made is reported, not fatal: the run
/// happened and is on disk.
pub(super) fn compare_two_arms(
    summary: &mut toolscore_summary::Summary,
    min_effect: f64,
) -> Result<(), Error> {
    match toolscore_decide::compare_attacks(summary, min_effect) {
        Ok(c) => summary.attack_comparison = c,
        Err(e) => errln!("error: --compare: {e}")?,
    }
    if summary.arms.len() != 2 {
        return Ok(());
    }
    // A and B in plan order, as `compare RUN_DIR` and the sequential comparison pair them.
    let order = toolscore_decide::plan_order(summary);
    let side = |i: usize| toolscore_decide::CompareSide {
        summary: &*summary,
        arm: order[i],
    };
    match toolscore_decide::compare(
        side(0),
        side(1),
        toolscore_decide::CompareOptions {
            metric: toolscore_core::metric::Metric::Selection,
            confidence: summary.confidence,
            min_effect,
            power: 0.8,
            intersect: false,
            holdout_apart: true,
        },
    ) {
        Ok(c) => summary.comparison = Some(c),
        Err(e) => errln!("error: --compare: {e}")?,
    }
    Ok(())
}
