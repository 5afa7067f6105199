//! `toolscore plan`: how many trials and cases each option needs, before anything is spent.

use std::path::PathBuf;
use toolscore_core::metric::Metric;

use clap::Args;

use super::gate::parse_gates;
use super::{LoadedSuite, setup};
use super::{SuiteArgs, load_suite, usage};
use crate::cli::Error;
use toolscore_core::ExitCode;
use toolscore_suite::Dataset;

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub suite: SuiteArgs,
    /// A gate to plan for, `METRIC>=T`; repeatable.
    #[arg(long = "gate", value_name = "METRIC>=T")]
    pub gates: Vec<String>,
    /// Target half-width of a case's interval [default: the config's, or 0.05].
    #[arg(long)]
    pub precision: Option<f64>,
    /// Confidence level [default: the config's, or 0.95].
    #[arg(long)]
    pub confidence: Option<f64>,
    /// Power a gate should have at the true rates planned for.
    #[arg(long, default_value_t = 0.8)]
    pub power: f64,
    /// An earlier run: its case rates, between-case spread and token usage replace the
    /// planning defaults.
    #[arg(long, value_name = "RUN_DIR")]
    pub from: Option<PathBuf>,
    /// The rate read from --from [default: the first gate's metric, or selection].
    #[arg(long, value_enum)]
    pub metric: Option<Metric>,
    /// The most trials per case the sequential gate may use.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub max_trials: u32,
    /// Show each option in US dollars at this provider's price (a name from toolscore.yaml,
    /// or KIND:MODEL): the shipped price table or `prices:` in the config [default: the
    /// config's provider, when it has a price].
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Also plan the sequential comparison of two arms (`run --compare --sequential`): its
    /// expected rounds at no difference and at ±--min-effect, exact when the suite and
    /// --max-trials are small enough (a dynamic program), else by simulation.
    #[arg(long)]
    pub compare: bool,
    /// With --compare: the smallest difference worth acting on.
    #[arg(long, default_value_t = toolscore_decide::DEFAULT_MIN_EFFECT, requires = "compare")]
    pub min_effect: f64,
    /// Also write the plan as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Prints how many trials and cases each option needs, and what it costs in requests and
/// tokens. Reads the suite (and an earlier run) only; calls nothing.
pub(super) fn run(args: &PlanArgs) -> Result<ExitCode, Error> {
    let gates = parse_gates(&args.gates)?;
    let (attack_gates, gates): (Vec<_>, Vec<_>) =
        gates.into_iter().partition(|g| g.metric.attack().is_some());
    if let Some(g) = gates.iter().find(|g| g.metric.rate().is_none()) {
        return Err(usage(&format!(
            "--gate {}: plan covers rate gates (selection, args, schema, pass); a latency budget needs the trials its percentile's upper bound needs (368 answered trials for p99 at 95%)",
            g.metric.label()
        )));
    }
    let LoadedSuite {
        config,
        datasets,
        scenarios,
        ..
    } = load_suite(&args.suite)?;
    let attack_gates = attack_gate_requests(&attack_gates, &scenarios)?;
    let d = &config.defaults;
    let confidence = setup::checked_confidence(args.confidence.or(d.confidence).unwrap_or(0.95))?;
    let precision = setup::checked_precision(args.precision.or(d.precision).unwrap_or(0.05))?;
    if !(args.power > 0.5 && args.power < 1.0) {
        return Err(usage("--power must be between 0.5 and 1 (e.g. 0.8)"));
    }
    if args.max_trials == 0 {
        return Err(usage("--max-trials must be at least 1"));
    }
    if !(args.min_effect > 0.0 && args.min_effect < 0.5) {
        return Err(usage("--min-effect must be between 0 and 0.5 (e.g. 0.05)"));
    }
    let metric = match args.metric {
        Some(m) => m,
        None => gates
            .first()
            .and_then(|g| g.metric.rate())
            .unwrap_or(toolscore_core::metric::Metric::Selection),
    };
    let cases: usize = datasets.iter().map(|d| d.cases.len()).sum();
    let (observed_case_rates, observed_suite, tokens) = match &args.from {
        Some(dir) => observed_in(dir, metric, confidence, precision)?,
        None => (Vec::new(), None, fixture_tokens(&datasets)),
    };
    let trial_plan = toolscore_decide::plan(&toolscore_decide::PlanRequest {
        confidence,
        precision,
        power: args.power,
        gates: gates
            .iter()
            .map(|g| (g.metric.label().replace(' ', "_"), g.threshold))
            .collect(),
        cases,
        observed_case_rates,
        observed_suite,
        tokens,
        max_trials: args.max_trials,
        compare: args.compare.then_some(args.min_effect),
        price: setup::plan_price(args.provider.as_deref(), &config)?,
        attack_gates,
    });
    if let Some(path) = &args.json {
        toolscore_core::write_json(path, &trial_plan)?;
    }
    let mut out = std::io::stdout().lock();
    toolscore_decide::render_plan(&trial_plan, &mut out)
        .map_err(|e| Error::io("cannot write the plan", e))?;
    Ok(ExitCode::Pass)
}

/// The attack gates over the units each judges: the attacked units of `--scenario …
/// --attacks …`, or their scenarios for `utility`. Exit 2 when there are none to plan over.
fn attack_gate_requests(
    gates: &[toolscore_decide::gate::GateSpec],
    scenarios: &[std::sync::Arc<toolscore_suite::Scenario>],
) -> Result<Vec<toolscore_decide::AttackGateRequest>, Error> {
    let units = scenarios.iter().filter(|s| s.attack.is_some()).count();
    let attacked: std::collections::BTreeSet<&str> = scenarios
        .iter()
        .filter_map(|s| s.attack.as_ref().map(|a| a.scenario.as_str()))
        .collect();
    gates
        .iter()
        .filter_map(|g| g.metric.attack().map(|m| (g, m)))
        .map(|(g, metric)| {
            if units == 0 {
                return Err(usage(&format!(
                    "--gate {}: plan sizes an attack gate over the attacked units: give --scenario FILE|DIR --attacks FILE|builtin",
                    metric.name()
                )));
            }
            Ok(toolscore_decide::AttackGateRequest {
                metric: metric.name().to_owned(),
                threshold: g.threshold,
                ceiling: metric.lower_is_better(),
                units: match metric {
                    toolscore_core::metric::AttackMetric::Utility => attacked.len(),
                    _ => units,
                },
            })
        })
        .collect()
}

/// What an earlier run (`--from DIR`) observed: each case's rate on the metric, the suite's
/// case-level estimate, and the tokens per request.
fn observed_in(
    dir: &std::path::Path,
    metric: toolscore_core::metric::Metric,
    confidence: f64,
    precision: f64,
) -> Result<
    (
        Vec<f64>,
        Option<toolscore_stats::ClusteredEstimate>,
        toolscore_decide::TokenBasis,
    ),
    Error,
> {
    let header = super::read_header(dir)?;
    let summary =
        toolscore_summary::reaggregate(&dir.join("results.jsonl"), header, confidence, precision)?;
    let arm = summary
        .arms
        .first()
        .ok_or_else(|| usage(&format!("--from {}: the run has no arms", dir.display())))?;
    let rate = |c: &toolscore_summary::CaseSummary| {
        let s = c.metrics.get(metric);
        (s.n > 0).then(|| s.x as f64 / s.n as f64)
    };
    let tokens = toolscore_decide::TokenBasis {
        source: format!("run {}", summary.run.run_id),
        input_per_request: arm.tokens.input_mean.unwrap_or(0.0),
        output_per_request: arm.tokens.output_mean,
    };
    let case_rates = arm.cases.iter().filter_map(rate).collect();
    Ok((case_rates, arm.suite.metrics.get(metric).case_level, tokens))
}

/// Input tokens per request estimated from what the model reads: the catalog and a case's
/// messages, at about 4 characters a token (the usual figure for English with BPE tokenizers;
/// an earlier run's measured usage, `--from`, replaces it).
fn fixture_tokens(datasets: &[Dataset]) -> toolscore_decide::TokenBasis {
    let mut chars = 0usize;
    let mut requests = 0usize;
    for d in datasets {
        let catalog = serde_json::to_string(&d.catalog.tools).map_or(0, |s| s.len());
        for c in &d.cases {
            let messages = serde_json::to_string(&c.messages).map_or(0, |s| s.len());
            chars += catalog + messages;
            requests += 1;
        }
    }
    toolscore_decide::TokenBasis {
        source: "fixtures (characters / 4)".to_owned(),
        input_per_request: chars as f64 / requests.max(1) as f64 / 4.0,
        output_per_request: None,
    }
}
