//! `toolscore lint SOURCE…`: read each catalog, the `lint:` section of the config and the
//! tools' inline allows, run the pure `lint` module, render, and exit 1 on any error finding.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use super::usage;
use crate::cli::Error;
use toolscore_core::{ExitCode, InputError};
use toolscore_lint::{LintOptions, LintReport, RULES, render};

mod judge;
mod measure;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LintFormat {
    /// Findings with their fixes, for people.
    Text,
    /// Every report as JSON.
    Json,
    /// SARIF 2.1.0, for code-scanning UIs.
    Sarif,
}

#[derive(Debug, Args)]
pub struct LintArgs {
    /// What to lint: a catalog file (MCP tools/list result, OpenAI `tools`, Anthropic `tools`),
    /// a dataset folder (its tools.json, or the live server its dataset.yaml names) or the URL
    /// of a streamable-HTTP MCP server. Repeatable. Or, instead, a stdio server's command
    /// after `--`: `toolscore lint -- npx -y @modelcontextprotocol/server-everything`.
    #[arg(value_name = "SOURCE", required_unless_present_any = ["rules", "from", "server_command", "measure"])]
    pub sources: Vec<String>,
    /// The command that starts a stdio MCP server, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub server_command: Vec<String>,
    #[command(flatten)]
    pub server: super::catalog::ServerFlags,
    /// Config whose `lint:` section turns rules off, re-levels them and accepts findings
    /// [default: the nearest toolscore.yaml, from the current folder up to the repository's
    /// top].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = LintFormat::Text)]
    pub format: LintFormat,
    /// Same as --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Write the output to FILE instead of stdout (e.g. results.sarif for code scanning).
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Requests a month, for the monthly token figure [default: the config's].
    #[arg(long, value_name = "N")]
    pub requests_per_month: Option<u64>,
    /// Price of a million input tokens in US dollars (0 to 10000), for the monthly cost
    /// [default: the config's].
    #[arg(long, value_name = "PRICE")]
    pub price_per_mtok: Option<f64>,
    /// A finished run (reports/<run-id>): rank the findings by the measured selection failures
    /// of their tools. Lints the SOURCE given, or else the catalogs the run recorded.
    #[arg(long, value_name = "RUN_DIR")]
    pub from: Option<PathBuf>,
    /// List every rule (id, category, default severity, what it checks) and exit.
    #[arg(long)]
    pub rules: bool,
    #[command(flatten)]
    pub judge: judge::JudgeArgs,
}

/// Where a catalog comes from.
#[derive(Debug, Clone)]
enum Source {
    File(PathBuf),
    Dataset(PathBuf),
    /// A URL, a dataset folder whose dataset.yaml names a server, or a command after `--`:
    /// listed from the server itself.
    Live(LiveSource),
}

#[derive(Debug, Clone)]
enum LiveSource {
    /// A URL or a dataset folder, as `toolscore catalog` takes them.
    Named(String),
    Command(Vec<String>),
}

impl Source {
    fn resolve(arg: &str) -> Result<Source, Error> {
        if super::catalog::is_url(arg) {
            return Ok(Source::Live(LiveSource::Named(arg.to_owned())));
        }
        let path = Path::new(arg);
        if path.is_dir() {
            if path.join(toolscore_suite::DATASET_FILE).is_file() {
                return Ok(Source::Live(LiveSource::Named(arg.to_owned())));
            }
            let tools = path.join("tools.json");
            if !tools.is_file() {
                return Err(usage(&format!(
                    "{arg}: a dataset folder holds tools.json or dataset.yaml; this one holds neither"
                )));
            }
            return Ok(Source::Dataset(path.to_owned()));
        }
        if path.is_file() {
            return Ok(Source::File(path.to_owned()));
        }
        Err(usage(&format!(
            "{arg}: no such catalog file, dataset folder or URL"
        )))
    }
}

/// A catalog file's name, text and catalog.
fn read_catalog_file(
    path: &Path,
) -> Result<(String, String, toolscore_core::catalog::Catalog), Error> {
    let name = path.display().to_string();
    let text = toolscore_core::read_text(path)?;
    let catalog = toolscore_core::catalog::parse_catalog(&text, &name)?;
    Ok((name, text, catalog))
}

/// One catalog read for linting: its text (for line numbers) and its report.
struct Linted {
    uri: String,
    text: String,
    report: LintReport,
}

fn lint_source(
    source: &Source,
    base: &LintOptions,
    args: &LintArgs,
    project: &Project,
) -> Result<Linted, Error> {
    let flags = &args.server;
    // A dataset folder the project's lock pins is compared with it: linted whatever the
    // lock says (reviewing a change is what lint is for), with a note when it changed.
    let pinned = |dir: &Path, catalog: &toolscore_core::catalog::Catalog, server| {
        if let Some(note) = super::lock::linted_against_lock(
            project.file.as_deref(),
            &project.config,
            dir,
            catalog,
            server,
        )? {
            errln!("{note}")?;
        }
        Ok::<(), Error>(())
    };
    let (name, text, catalog) = match source {
        Source::Live(live) => {
            let loaded = match live {
                LiveSource::Named(arg) => super::catalog::load(arg, flags)?,
                LiveSource::Command(command) => {
                    let (spec, _) = super::catalog::server_of(None, command, flags)?;
                    super::catalog::live(&spec, flags)?
                }
            };
            if let LiveSource::Named(arg) = live
                && Path::new(arg).is_dir()
            {
                pinned(Path::new(arg), &loaded.catalog, loaded.server.as_ref())?;
            }
            // The listing as a tools.json: what SARIF locations and inline allows read.
            let document =
                toolscore_core::catalog::to_tools_json(&loaded.catalog, loaded.server.as_ref());
            let text = serde_json::to_string_pretty(&document)
                .map_err(|e| Error::encode("the catalog", e))?;
            (loaded.catalog.source.clone(), text, loaded.catalog)
        }
        Source::File(path) => read_catalog_file(path)?,
        Source::Dataset(dir) => {
            let read = read_catalog_file(&dir.join("tools.json"))?;
            pinned(dir, &read.2, None)?;
            read
        }
    };
    let document: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| InputError::json(&name, &e))?;
    let mut options = base.clone();
    let inline = toolscore_lint::tool_inline_allows(&document)
        .map_err(|e| InputError::at(&name, None, "", &e))?;
    for (tool, ids) in inline {
        options.allow_for(&tool, ids);
    }
    check_schema_allows(&catalog, &name)?;
    let report = match &args.judge.judge {
        Some(spec) => {
            let (judgements, who) =
                judge::ask(&catalog, &args.judge, spec, args.config.as_deref())?;
            toolscore_lint::lint_judged(&catalog, &options, &judgements, &who)
        }
        None => toolscore_lint::lint(&catalog, &options),
    };
    Ok(Linted {
        uri: name.replace('\\', "/"),
        text,
        report,
    })
}

/// An `x-toolscore-lint` inside a schema that is malformed or names an unknown rule is bad
/// input, like one on a tool.
fn check_schema_allows(
    catalog: &toolscore_core::catalog::Catalog,
    file: &str,
) -> Result<(), Error> {
    fn visit(v: &serde_json::Value, path: &str, out: &mut Option<(String, String)>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, child) in m {
                    let p = format!("{path}.{k}");
                    if k == toolscore_lint::INLINE_KEY {
                        if let Err(e) = toolscore_lint::parse_inline(child)
                            && out.is_none()
                        {
                            *out = Some((p.clone(), e));
                        }
                    } else {
                        visit(child, &p, out);
                    }
                }
            }
            serde_json::Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    visit(child, &format!("{path}[{i}]"), out);
                }
            }
            _ => {}
        }
    }
    for tool in &catalog.tools {
        let mut bad = None;
        visit(&tool.input_schema, "inputSchema", &mut bad);
        if let Some((path, e)) = bad {
            return Err(InputError::at(file, None, &format!("{}.{path}", tool.name), &e).into());
        }
    }
    Ok(())
}

pub(super) fn run(args: &LintArgs) -> Result<ExitCode, Error> {
    if args.rules {
        print_rules()?;
        return Ok(ExitCode::Pass);
    }
    if let Some(spec) = args.judge.judge.as_deref()
        && !args.judge.measure.is_empty()
    {
        return measured(args, spec);
    }
    let project = Project::of(args)?;
    let options = lint_options(args, &project.config)?;
    let run = match &args.from {
        Some(dir) => Some(super::load_run(dir)?),
        None => None,
    };
    let sources = lint_sources(args, run.as_ref())?;
    let linted = sources
        .iter()
        .map(|s| lint_source(s, &options, args, &project))
        .collect::<Result<Vec<_>, _>>()?;
    let format = if args.json {
        LintFormat::Json
    } else {
        args.format
    };
    if let Some(summary) = &run {
        if format != LintFormat::Text || args.output.is_some() {
            return Err(usage(
                "--from ranks findings as text on stdout; drop --format, --json and --output",
            ));
        }
        let dir = args.from.as_deref().unwrap_or(Path::new("."));
        return ranked_by_run(summary, &linted, dir);
    }
    let buffer = rendered(&linted, format)?;
    write_output(args.output.as_deref(), &buffer)?;
    let errors: usize = linted
        .iter()
        .map(|l| l.report.count(toolscore_lint::Severity::Error))
        .sum();
    if errors > 0 && (args.output.is_some() || format != LintFormat::Text) {
        errln!("{errors} error-level finding(s)")?;
    }
    exit_code(&linted, errors)
}

/// `--measure`: the judge's measurement as text or JSON, on stdout or in `--output`.
fn measured(args: &LintArgs, spec: &str) -> Result<ExitCode, Error> {
    let format = if args.json {
        LintFormat::Json
    } else {
        args.format
    };
    if format == LintFormat::Sarif {
        return Err(usage(
            "--measure reports as text or JSON; SARIF holds findings, not a measurement",
        ));
    }
    let m = measure::measure(&args.judge, spec, args.config.as_deref())?;
    let mut buffer = Vec::new();
    match format {
        LintFormat::Json => {
            buffer =
                serde_json::to_vec_pretty(&m).map_err(|e| Error::encode("the measurement", e))?;
            buffer.push(b'\n');
        }
        _ => render::measurement_text(&m, &mut buffer)
            .map_err(|e| Error::io("cannot write the measurement", e))?,
    }
    write_output(args.output.as_deref(), &buffer)?;
    measure::exit_code(&m)
}

/// Writes a rendered report to `--output`'s file (atomically, named on stderr) or stdout.
fn write_output(output: Option<&Path>, buffer: &[u8]) -> Result<(), Error> {
    match output {
        Some(path) => {
            toolscore_core::write_file(path, buffer)?;
            errln!("wrote {}", path.display())?;
        }
        None => {
            use std::io::Write;
            std::io::stdout()
                .lock()
                .write_all(buffer)
                .map_err(|e| Error::io("cannot write the findings", e))?;
        }
    }
    Ok(())
}

/// The project lint reads: its config file (`--config`, else the nearest toolscore.yaml)
/// and the config.
struct Project {
    file: Option<PathBuf>,
    config: toolscore_suite::Config,
}

impl Project {
    fn of(args: &LintArgs) -> Result<Project, Error> {
        let file = super::config_path(args.config.as_deref());
        let config = match &file {
            Some(path) => toolscore_suite::load_config(path)?,
            None => toolscore_suite::Config::default(),
        };
        Ok(Project { file, config })
    }
}

/// The lint options: the config's, then the flags.
fn lint_options(args: &LintArgs, config: &toolscore_suite::Config) -> Result<LintOptions, Error> {
    let mut options = LintOptions::from_config(&config.lint);
    if let Some(r) = args.requests_per_month {
        options.requests_per_month = Some(r);
    }
    if let Some(p) = args.price_per_mtok {
        if !toolscore_suite::price_ok(p) {
            return Err(usage(&format!(
                "--price-per-mtok must be a price: {}",
                toolscore_suite::PRICE_RANGE
            )));
        }
        options.price_per_million_input_tokens = Some(p);
    }
    Ok(options)
}

/// The catalogs to lint: SOURCEs, the command after `--`, or the catalogs of `--from`'s run.
fn lint_sources(
    args: &LintArgs,
    run: Option<&toolscore_summary::Summary>,
) -> Result<Vec<Source>, Error> {
    if !args.server_command.is_empty() && !args.sources.is_empty() {
        return Err(usage(
            "give either SOURCEs or a server command after `--`, not both",
        ));
    }
    let source_args: Vec<String> = match (run, args.sources.is_empty()) {
        (Some(summary), true) if args.server_command.is_empty() => summary
            .run
            .datasets
            .iter()
            .map(|d| d.catalog_source.clone())
            .collect(),
        _ => args.sources.clone(),
    };
    let mut sources = source_args
        .iter()
        .map(|s| Source::resolve(s))
        .collect::<Result<Vec<_>, _>>()?;
    if !args.server_command.is_empty() {
        sources.push(Source::Live(LiveSource::Command(
            args.server_command.clone(),
        )));
    }
    Ok(sources)
}

/// Every catalog's findings in one format.
fn rendered(linted: &[Linted], format: LintFormat) -> Result<Vec<u8>, Error> {
    let mut buffer = Vec::new();
    match format {
        LintFormat::Text => {
            for (i, l) in linted.iter().enumerate() {
                if i > 0 {
                    buffer.push(b'\n');
                }
                render::text(&l.report, &mut buffer)
                    .map_err(|e| Error::io("cannot write the findings", e))?;
            }
        }
        LintFormat::Json => {
            let reports: Vec<LintReport> = linted.iter().map(|l| l.report.clone()).collect();
            let v = render::json(&reports);
            buffer = serde_json::to_vec_pretty(&v).map_err(|e| Error::encode("the findings", e))?;
            buffer.push(b'\n');
        }
        LintFormat::Sarif => {
            let line_of = |l: &Linted| {
                let text = l.text.clone();
                move |f: &toolscore_lint::Finding| render::line_in(&text, f)
            };
            let line_fns: Vec<_> = linted.iter().map(line_of).collect();
            let runs: Vec<(&LintReport, String, render::LineOf<'_>)> = linted
                .iter()
                .zip(&line_fns)
                .map(|(l, f)| (&l.report, l.uri.clone(), f as render::LineOf<'_>))
                .collect();
            let v = render::sarif(&runs, env!("CARGO_PKG_VERSION"));
            buffer = serde_json::to_vec_pretty(&v).map_err(|e| Error::encode("SARIF", e))?;
            buffer.push(b'\n');
        }
    }
    Ok(buffer)
}

/// Prints each catalog's findings ranked by the run's measured selection misses per expected
/// tool (the first arm that expected it), and exits as a plain lint would.
fn ranked_by_run(
    summary: &toolscore_summary::Summary,
    linted: &[Linted],
    dir: &Path,
) -> Result<ExitCode, Error> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let w = |e| Error::io("cannot write the findings", e);
    for l in linted {
        if let Some(d) = summary
            .run
            .datasets
            .iter()
            .find(|d| d.catalog_source == l.report.source)
            && d.catalog_fingerprint != l.report.fingerprint
        {
            errln!(
                "note: {} changed since run {} (fingerprint {} then, {} now)",
                l.report.source,
                summary.run.run_id,
                d.catalog_fingerprint,
                l.report.fingerprint
            )?;
        }
        for arm in &summary.arms {
            let ranked = toolscore_lint::rank::rank(&l.report, &measured_tools(arm, &l.report));
            let heading = format!(
                "{}: findings ranked by measured selection misses in run {} ({}, arm {}/{}; {:.0}% intervals from the run's summary)",
                l.report.source,
                summary.run.run_id,
                dir.display(),
                arm.arm.provider,
                arm.arm.variant,
                summary.confidence * 100.0
            );
            toolscore_lint::rank::render(&ranked, &heading, &mut out).map_err(w)?;
            writeln!(out).map_err(w)?;
        }
        let others: Vec<_> = l
            .report
            .findings
            .iter()
            .filter(|f| f.tool.is_none())
            .collect();
        for f in others {
            writeln!(
                out,
                "{:<7} {}  {}: {}",
                f.severity.label(),
                f.rule,
                f.location(),
                f.message
            )
            .map_err(w)?;
        }
    }
    let errors: usize = linted
        .iter()
        .map(|l| l.report.count(toolscore_lint::Severity::Error))
        .sum();
    exit_code(linted, errors)
}

/// How lint ends, for every way it reports: 1 with an error-level finding, else 4 when the
/// judge gave no verdict on some tool (the command cannot say the catalog is clean, as a run
/// with too many infrastructure errors cannot be judged; said on stderr), else 0.
fn exit_code(linted: &[Linted], errors: usize) -> Result<ExitCode, Error> {
    let not_judged: usize = linted
        .iter()
        .filter_map(|l| l.report.judge.as_ref())
        .map(|j| j.not_judged.len())
        .sum();
    if not_judged > 0 {
        errln!("{not_judged} tool(s) not judged: the judge gave no verdict on them")?;
    }
    Ok(if errors > 0 {
        ExitCode::GateFailed
    } else if not_judged > 0 {
        ExitCode::InfraErrors
    } else {
        ExitCode::Pass
    })
}

/// The selection recall the run measured for each tool of the linted catalog that it expected.
fn measured_tools(
    arm: &toolscore_summary::ArmSummary,
    report: &LintReport,
) -> Vec<toolscore_lint::rank::MeasuredTool> {
    arm.tool_accuracy
        .iter()
        .filter(|t| t.recall.n > 0)
        .filter(|t| {
            report
                .findings
                .iter()
                .any(|f| f.tool.as_deref() == Some(&t.tool))
                || toolscore_lint::rank::known_tool(report, &t.tool)
        })
        .map(|t| toolscore_lint::rank::MeasuredTool {
            tool: t.tool.clone(),
            x: t.recall.x,
            n: t.recall.n,
            interval: t.recall.interval.map(|i| (i.lo, i.hi)),
        })
        .collect()
}

/// A catalog one of a run's arms was shown, linted before the first request.
pub(crate) struct CatalogLint {
    pub dataset: String,
    pub variant: String,
    pub report: LintReport,
}

/// The catalogs a plan's arms are shown, taken before the run (the plan goes to the runner)
/// and linted after it, so linting never delays the start of a run.
pub(crate) struct RunCatalogs(Vec<RunCatalog>);

/// One catalog a run's arms are shown: its dataset and variant, and the dataset's base
/// catalog file (where inline allows are read).
struct RunCatalog {
    dataset: String,
    variant: String,
    catalog: std::sync::Arc<toolscore_core::catalog::Catalog>,
    base_file: String,
}

/// Every (dataset, variant) catalog the plan's arms are shown, with the base catalog's file.
pub(crate) fn run_catalogs(plan: &toolscore_runner::RunPlan) -> RunCatalogs {
    let mut variants: Vec<&str> = plan.arms.iter().map(|a| a.variant.as_str()).collect();
    variants.sort_unstable();
    variants.dedup();
    let mut out = Vec::new();
    for dataset in &plan.datasets {
        for v in &variants {
            if let Some(variant) = dataset.variant(v) {
                out.push(RunCatalog {
                    dataset: dataset.name.clone(),
                    variant: (*v).to_owned(),
                    catalog: variant.catalog.clone(),
                    base_file: dataset.catalog.source.clone(),
                });
            }
        }
    }
    RunCatalogs(out)
}

/// Lints the run's catalogs with the config's `lint:` section and the base catalog file's
/// inline allows. Pure apart from reading that file; a file that cannot be read (a live
/// server's catalog) just has no inline allows.
pub(crate) fn lint_run_catalogs(catalogs: &RunCatalogs, options: &LintOptions) -> Vec<CatalogLint> {
    catalogs
        .0
        .iter()
        .map(|c| {
            let mut options = options.clone();
            let inline = toolscore_core::read_text(Path::new(&c.base_file))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .and_then(|doc| toolscore_lint::tool_inline_allows(&doc).ok())
                .unwrap_or_default();
            for (tool, ids) in inline {
                options.allow_for(&tool, ids);
            }
            CatalogLint {
                dataset: c.dataset.clone(),
                variant: c.variant.clone(),
                report: toolscore_lint::lint(&c.catalog, &options),
            }
        })
        .collect()
}

/// Under `run`'s report: per arm and dataset, the three most-missed tools lint has findings
/// on, with their first findings, so a low recall sits next to what may explain it.
pub(crate) fn print_beside_weakest(
    summary: &toolscore_summary::Summary,
    lints: &[CatalogLint],
    run_dir: &Path,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    for arm in &summary.arms {
        for l in lints.iter().filter(|l| l.variant == arm.arm.variant) {
            let ranked = toolscore_lint::rank::rank(&l.report, &measured_tools(arm, &l.report));
            let heading = format!(
                "lint beside the most-missed tools · arm {} · variant {} · dataset {} (all of them: toolscore lint --from {})",
                arm.arm.provider,
                arm.arm.variant,
                l.dataset,
                run_dir.display()
            );
            let mut block = Vec::new();
            if toolscore_lint::rank::render_beside(&ranked, 3, 3, &heading, &mut block)? {
                out.write_all(&block)?;
                writeln!(out)?;
            }
        }
    }
    Ok(())
}

fn print_rules() -> Result<(), Error> {
    outln!("{:<30} {:<13} {:<8} checks", "rule", "category", "default")?;
    for r in RULES {
        outln!(
            "{:<30} {:<13} {:<8} {}",
            r.id,
            r.category.label(),
            r.severity.label(),
            r.summary
        )?;
    }
    Ok(())
}
