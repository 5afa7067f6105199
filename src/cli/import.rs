//! `toolscore import`: datasets from outside data. `import bfcl`: the Berkeley Function Calling
//! Leaderboard's data (PyPI `bfcl-eval`), one per category, judged by a port of BFCL's own
//! checker ([`toolscore_score::bfcl`]). `import traffic`: logged model calls
//! ([`toolscore_import::import_traffic`]), one dataset per catalog.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::usage;
use crate::cli::Error;
use toolscore_core::{ExitCode, InputError};
use toolscore_import::{BFCL_CATEGORIES, import_category, installed_data_dir};
use toolscore_import::{CatalogFile, put_in_place, stage_dataset, write_dataset};

#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// Datasets from the Berkeley Function Calling Leaderboard (PyPI `bfcl-eval`)
    ///
    /// One per category, the catalog as BFCL's OpenAI function-calling handler sends it, each
    /// case passed exactly when BFCL's checker passes it.
    Bfcl(BfclArgs),
    /// Datasets from logged model traffic (OpenAI, Anthropic, OpenTelemetry), redacted
    ///
    /// OpenAI Chat Completions or Responses and Anthropic Messages request/response pairs (JSON
    /// lines `{"request": ..., "response": ...}`), or OpenTelemetry GenAI spans (OTLP JSON).
    /// Each model call becomes a case: the conversation, the calls the model made as the
    /// expected calls, its source. One dataset per distinct catalog. Secrets and the fields
    /// named by --redact are redacted before anything is written.
    Traffic(TrafficArgs),
}

#[derive(Debug, Args)]
pub struct TrafficArgs {
    /// Log files: JSON lines of request/response pairs, or OTLP JSON trace exports (one export
    /// per line, or one whole document).
    #[arg(required = true, value_name = "LOG")]
    pub logs: Vec<PathBuf>,
    /// The logs' format [default: detected record by record].
    #[arg(long, value_name = "FORMAT", value_parser = clap::builder::PossibleValuesParser::new(["openai-chat", "openai-responses", "anthropic", "otel-genai"]))]
    pub format: Option<String>,
    /// The dataset's name: `OUT/NAME`, or `OUT/NAME-<catalog>` for each catalog when the logs
    /// show the model more than one.
    #[arg(long, value_name = "NAME", default_value = "traffic")]
    pub name: String,
    /// Where the datasets go.
    #[arg(long, value_name = "DIR", default_value = "datasets")]
    pub out: PathBuf,
    /// Replace datasets that already exist.
    #[arg(long)]
    pub force: bool,
    /// Fields to redact besides secrets, comma-separated or repeated: key names anywhere
    /// (`email`, `phone`; these two also redact addresses and numbers in free text) or JSON
    /// paths from the root of a call's arguments or a tool result (`$.user.address`).
    #[arg(long, value_name = "FIELDS", value_delimiter = ',')]
    pub redact: Vec<String>,
    /// Keep at most N cases per dataset (per tool with --per-tool), drawn by --seed.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub sample: Option<u64>,
    /// Stratify --sample by expected tool: N cases of each tool (and N text replies).
    #[arg(long, requires = "sample")]
    pub per_tool: bool,
    /// The seed of --sample's draw.
    #[arg(long, value_name = "SEED", default_value_t = 0, requires = "sample")]
    pub seed: u64,
}

#[derive(Debug, Args)]
pub struct BfclArgs {
    /// BFCL's `bfcl_eval/data` folder [default: the one of the `bfcl_eval` package that
    /// `python3` imports].
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// A category to import (repeatable) [default: all of them].
    #[arg(long = "category", value_name = "NAME", value_parser = clap::builder::PossibleValuesParser::new(BFCL_CATEGORIES))]
    pub categories: Vec<String>,
    /// Where the datasets go: one folder `bfcl_<category>` each.
    #[arg(long, value_name = "DIR", default_value = "datasets")]
    pub out: PathBuf,
    /// Replace datasets that already exist.
    #[arg(long)]
    pub force: bool,
}

pub(super) fn run(command: &ImportCommand) -> Result<ExitCode, Error> {
    match command {
        ImportCommand::Bfcl(args) => run_bfcl(args),
        ImportCommand::Traffic(args) => run_traffic(args),
    }
}

fn run_bfcl(args: &BfclArgs) -> Result<ExitCode, Error> {
    let data = match &args.data {
        Some(d) => d.clone(),
        None => installed_data_dir()?,
    };
    if !data.is_dir() {
        return Err(usage(&format!(
            "--data {}: folder not found (expected bfcl_eval/data of the bfcl-eval package)",
            data.display()
        )));
    }
    let categories: Vec<&str> = if args.categories.is_empty() {
        BFCL_CATEGORIES.to_vec()
    } else {
        args.categories.iter().map(String::as_str).collect()
    };
    let dests: Vec<PathBuf> = categories
        .iter()
        .map(|c| args.out.join(format!("bfcl_{c}")))
        .collect();
    refuse_existing(&dests, args.force)?;
    outln!("importing BFCL from {}", data.display())?;
    outln!("{}", table_header("category"))?;
    for c in &categories {
        let imported = import_category(&data, c)?;
        let dest = args.out.join(format!("bfcl_{c}"));
        write_dataset(
            &dest,
            CatalogFile::Tools(&json!({"tools": imported.tools})),
            &imported.cases,
            args.force,
        )?;
        outln!("{}", table_row(c, imported.cases.len(), &imported.skipped))?;
    }
    outln!("written under {}", args.out.display())?;
    Ok(ExitCode::Pass)
}

fn run_traffic(args: &TrafficArgs) -> Result<ExitCode, Error> {
    let options = traffic_options(args)?;
    let mut records = Vec::new();
    for path in &args.logs {
        records.extend(read_records(path)?);
    }
    let imported = toolscore_import::import_traffic(&records, &options)?;
    let dests: Vec<PathBuf> = imported
        .datasets
        .iter()
        .map(|d| traffic_dest(args, imported.datasets.len() > 1, &d.catalog))
        .collect();
    refuse_existing(&dests, args.force)?;
    print_traffic_read(&args.logs, &imported)?;
    if imported.datasets.is_empty() {
        return Err(usage("nothing to import: every exchange was skipped"));
    }
    write_traffic_datasets(&imported.datasets, &dests, args.force)?;
    for (d, dest) in imported.datasets.iter().zip(&dests) {
        outln!()?;
        let tools = d.catalog.tools.len();
        outln!(
            "{}: {tools} tool{}, catalog {}",
            dest.display(),
            if tools == 1 { "" } else { "s" },
            d.catalog.fingerprint
        )?;
        outln!("{}", table_header("expected tool"))?;
        for (tool, row) in &d.rows {
            outln!("{}", table_row(tool, row.imported, &row.skipped))?;
        }
    }
    outln!("written under {}", args.out.display())?;
    Ok(ExitCode::Pass)
}

/// `import traffic`'s flags, checked, as the importer's options.
fn traffic_options(args: &TrafficArgs) -> Result<toolscore_import::TrafficOptions, Error> {
    use toolscore_import::{Redactor, TrafficFormat, TrafficOptions};
    if args.name.is_empty()
        || !args
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(usage(&format!(
            "--name {}: a dataset name is letters, digits, `_`, `-` and `.`",
            args.name
        )));
    }
    Ok(TrafficOptions {
        redactor: Redactor::new(&args.redact).map_err(toolscore_core::Error::from)?,
        format: args.format.as_deref().and_then(TrafficFormat::from_label),
        sample: args
            .sample
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        per_tool: args.per_tool,
        seed: args.seed,
    })
}

/// Where one imported catalog's dataset goes: `--name`, or, when the log held several
/// catalogs, `--name` and the start of each catalog's fingerprint.
fn traffic_dest(
    args: &TrafficArgs,
    many: bool,
    catalog: &toolscore_core::catalog::Catalog,
) -> PathBuf {
    if !many {
        return args.out.join(&args.name);
    }
    let hex = catalog
        .fingerprint
        .strip_prefix("sha256:")
        .unwrap_or(&catalog.fingerprint);
    args.out
        .join(format!("{}-{}", args.name, &hex[..hex.len().min(8)]))
}

/// What the logs held: exchanges per format, spans ignored, values redacted, exchanges skipped.
fn print_traffic_read(
    logs: &[PathBuf],
    imported: &toolscore_import::TrafficImport,
) -> Result<(), Error> {
    let logs: Vec<String> = logs.iter().map(|p| p.display().to_string()).collect();
    outln!(
        "read {} exchanges from {} ({})",
        imported.read.values().sum::<usize>(),
        logs.join(", "),
        counted(&imported.read, |f, n| format!("{n} {f}")).join(", ")
    )?;
    if imported.other_spans > 0 {
        outln!(
            "ignored {} spans that are not model calls (no gen_ai.input.messages)",
            imported.other_spans
        )?;
    }
    if imported.redacted.is_empty() {
        outln!("redacted: nothing")?;
    } else {
        outln!(
            "redacted {} values: {}",
            imported.redacted.values().sum::<usize>(),
            counted(&imported.redacted, |k, n| format!("{k} {n}")).join(", ")
        )?;
    }
    for (reason, n) in &imported.unassigned {
        outln!("skipped {n}: {reason}")?;
    }
    Ok(())
}

/// Every dataset is staged and loaded before any is put in place: an import that fails
/// half-way leaves none of its datasets behind.
fn write_traffic_datasets(
    datasets: &[toolscore_import::TrafficDataset],
    dests: &[PathBuf],
    force: bool,
) -> Result<(), Error> {
    let mut staged = Vec::new();
    for (d, dest) in datasets.iter().zip(dests) {
        let tools = toolscore_core::catalog::to_tools_json(&d.catalog, None);
        match stage_dataset(dest, CatalogFile::Tools(&tools), &d.cases) {
            Ok(staging) => staged.push((staging, dest)),
            Err(e) => {
                for (staging, _) in &staged {
                    let _ = std::fs::remove_dir_all(staging);
                }
                return Err(e.into());
            }
        }
    }
    for (staging, dest) in &staged {
        put_in_place(staging, dest, force)?;
    }
    Ok(())
}

/// Refuses before writing anything, so a refused import leaves no half of itself behind.
fn refuse_existing(dests: &[PathBuf], force: bool) -> Result<(), Error> {
    match dests.iter().find(|d| d.exists() && !force) {
        Some(dest) => Err(usage(&format!(
            "{} already exists; pass --force to replace it",
            dest.display()
        ))),
        None => Ok(()),
    }
}

/// A count per key, each worded by `word(key, count)`.
fn counted<K>(counts: &BTreeMap<K, usize>, word: impl Fn(&K, usize) -> String) -> Vec<String> {
    counts.iter().map(|(k, &n)| word(k, n)).collect()
}

fn table_header(first: &str) -> String {
    format!(
        "{first:<24} {:>8} {:>8}  skipped because",
        "imported", "skipped"
    )
}

/// One row of an import's table: what was imported and what was skipped, and why.
fn table_row(name: &str, imported: usize, skipped: &BTreeMap<String, usize>) -> String {
    let reasons = counted(skipped, |why, n| format!("{n} {why}"));
    format!(
        "{name:<24} {imported:>8} {:>8}  {}",
        skipped.values().sum::<usize>(),
        if reasons.is_empty() {
            "-".to_owned()
        } else {
            reasons.join("; ")
        }
    )
}

/// A log's records: one JSON value per line, or the whole file when it is one JSON document
/// (an OTLP export written pretty-printed).
fn read_records(path: &Path) -> Result<Vec<toolscore_import::TrafficRecord>, Error> {
    let text = toolscore_core::read_text(path)?;
    let file = path.display().to_string();
    let non_blank = text.lines().filter(|l| !l.trim().is_empty()).count();
    if non_blank > 1
        && let Ok(value) = serde_json::from_str::<Value>(&text)
    {
        return Ok(vec![toolscore_import::TrafficRecord {
            file,
            line: 1,
            value,
        }]);
    }
    let mut records = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line)
            .map_err(|e| InputError::json_line(&file, i + 1, "not a JSON line", &e))?;
        records.push(toolscore_import::TrafficRecord {
            file: file.clone(),
            line: i + 1,
            value,
        });
    }
    if records.is_empty() {
        return Err(InputError::at(&file, None, "", "the log is empty").into());
    }
    Ok(records)
}
