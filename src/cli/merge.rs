//! `toolscore merge SHARD_DIR… --out DIR`: join the run folders of `run --shard i/n` into one
//! run folder whose summary is the one the same plan run in one piece writes.
//!
//! Before writing anything it checks that the shards belong to one plan (their `plan.json`s
//! agree on trials, arms, datasets, catalog fingerprints, cases, scenarios and the shard
//! count) and cover it exactly once (every index present once, every shard finished, every
//! record in its own shard's slice, no trial twice, none missing). Then it streams: the shards'
//! `results.jsonl` are merged in plan order (trial, case, arm; each file is read once, one line
//! at a time), copied byte for byte into the merged `results.jsonl`, written to `results.csv`
//! and fed to the same aggregator `run` uses. Memory holds one line per shard, the aggregator's
//! per-case counters and one bit per planned trial, whatever the number of trials.

use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use serde::{Deserialize, Serialize};

use super::output::{self, Format};
use super::resume::{PLAN_FILE, PlanFingerprint};
use super::usage;
use crate::cli::Error;
use toolscore_core::RunTotals;
use toolscore_core::TrialRecord;
use toolscore_core::{ExitCode, InputError};
use toolscore_report::ResultsCsv;
use toolscore_runner::{Shard, shard_of, unit_seed};
use toolscore_summary::{Aggregator, SummaryHeader};

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The run folders of every shard of one plan (`run --shard i/n`), in any order.
    #[arg(required = true, value_name = "SHARD_DIR")]
    pub shard_dirs: Vec<PathBuf>,
    /// The merged run folder to create (its name is the merged run's id); must not exist.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// What to produce beside results.jsonl, results.csv and summary.json (always written);
    /// repeatable: terminal (stdout), json, csv, md (report.md), junit (junit.xml), html
    /// (report.html) [default: terminal].
    #[arg(long = "format", value_enum, value_name = "FORMAT")]
    pub formats: Vec<Format>,
    /// Print the whole report: per-tool rates, the weakest and unstable cases, confusions,
    /// schema violations, argument failures, latency by tool and tokens, with the verdict last
    /// [default: the decision and the figures it rests on].
    #[arg(long)]
    pub detail: bool,
}

/// What a shard's summary.json says beyond the header `report` reads.
#[derive(Deserialize)]
struct ShardSummary {
    #[serde(flatten)]
    header: SummaryHeader,
    completed_trials: u64,
}

/// One shard folder, read and checked.
struct ShardRun {
    dir: PathBuf,
    shard: Shard,
    plan: PlanFingerprint,
    summary: ShardSummary,
}

/// Where the merged folder's trials came from (`shards.json`).
#[derive(Serialize)]
struct Provenance<'a> {
    plan: String,
    shards: Vec<ShardProvenance<'a>>,
}

#[derive(Serialize)]
struct ShardProvenance<'a> {
    shard: String,
    dir: String,
    run_id: &'a str,
    started_at: &'a str,
    finished_at: &'a str,
    trials: u64,
}

pub(super) fn run(args: &MergeArgs) -> Result<ExitCode, Error> {
    let formats = output::chosen(&args.formats, &[Format::Terminal]);
    output::check_one_stdout(&formats)?;
    let mut shards = Vec::with_capacity(args.shard_dirs.len());
    for dir in &args.shard_dirs {
        shards.push(read_shard(dir)?);
    }
    check_one_plan(&shards)?;
    shards.sort_by_key(|s| s.shard.index);
    let run_id = args
        .out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| usage("--out needs a folder name (it names the merged run)"))?;
    if args.out.symlink_metadata().is_ok() {
        return Err(usage(&format!(
            "--out {}: already exists; name a new folder for the merged run",
            args.out.display()
        )));
    }
    std::fs::create_dir_all(&args.out).map_err(|e| {
        InputError::new(format!(
            "--out {}: cannot create it: {e}",
            args.out.display()
        ))
    })?;
    match write_merged(&shards, &args.out, &run_id, &formats, args.detail) {
        Ok(code) => Ok(code),
        Err(e) => {
            // Nothing half-written: a merge that failed leaves no folder to be mistaken for a run.
            let _ = std::fs::remove_dir_all(&args.out);
            Err(e)
        }
    }
}

fn read_shard(dir: &Path) -> Result<ShardRun, Error> {
    let plan_path = dir.join(PLAN_FILE);
    if !plan_path.is_file() {
        return Err(usage(&format!(
            "{}: no {PLAN_FILE} (is it a run folder written by `toolscore run --shard`?)",
            dir.display()
        )));
    }
    let text = toolscore_core::read_text(&plan_path)?;
    let plan: PlanFingerprint = serde_json::from_str(&text)
        .map_err(|e| InputError::json(&plan_path.display().to_string(), &e))?;
    let Some(shard) = plan.shard else {
        return Err(usage(&format!(
            "{} is not a shard: it was run without --shard (it already holds the whole plan)",
            dir.display()
        )));
    };
    let summary_path = dir.join("summary.json");
    if !summary_path.is_file() {
        return Err(usage(&format!(
            "shard {shard} ({}) did not finish: it has no summary.json; finish it with `{}` and the flags it was started with",
            dir.display(),
            resume_command(dir)
        )));
    }
    let text = toolscore_core::read_text(&summary_path)?;
    let summary: ShardSummary = serde_json::from_str(&text)
        .map_err(|e| InputError::json(&summary_path.display().to_string(), &e))?;
    if summary.header.interrupted {
        return Err(usage(&format!(
            "shard {shard} ({}) was interrupted after {} of its {} trials; finish it with `{}` and the flags it was started with",
            dir.display(),
            summary.completed_trials,
            summary.header.planned_trials,
            resume_command(dir)
        )));
    }
    Ok(ShardRun {
        dir: dir.to_path_buf(),
        shard,
        plan,
        summary,
    })
}

/// Every shard is of the first one's plan, with its confidence settings, and the indices are
/// exactly 0..n once each.
fn check_one_plan(shards: &[ShardRun]) -> Result<(), Error> {
    let first = &shards[0];
    let whole = first.plan.whole();
    for s in &shards[1..] {
        let foreign = |what: String| {
            usage(&format!(
                "{} (shard {}) is not of the same plan as {} (shard {}): {what}",
                s.dir.display(),
                s.shard,
                first.dir.display(),
                first.shard
            ))
        };
        if s.shard.count != first.shard.count {
            return Err(foreign(format!(
                "it was split into {} shards, not {}",
                s.shard.count, first.shard.count
            )));
        }
        if let Some(what) = plan_difference(&whole, &s.plan.whole()) {
            return Err(foreign(what));
        }
        let (a, b) = (&first.summary.header, &s.summary.header);
        if a.confidence != b.confidence || a.precision != b.precision {
            return Err(foreign(format!(
                "it reports at confidence {} and precision {}, not {} and {}",
                b.confidence, b.precision, a.confidence, a.precision
            )));
        }
    }
    let count = first.shard.count;
    let mut seen: BTreeMap<u32, &Path> = BTreeMap::new();
    for s in shards {
        if let Some(other) = seen.insert(s.shard.index, &s.dir) {
            return Err(usage(&format!(
                "shard {} is given twice: {} and {}",
                s.shard,
                other.display(),
                s.dir.display()
            )));
        }
    }
    let missing: Vec<String> = (0..count)
        .filter(|i| !seen.contains_key(i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(usage(&format!(
            "shard{} {} of the plan {} missing (given: {}); merge every shard of the plan",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            if missing.len() == 1 { "is" } else { "are" },
            seen.keys()
                .map(|i| format!("{i}/{count}"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(())
}

/// The first part in which two plans differ, in words.
fn plan_difference(a: &PlanFingerprint, b: &PlanFingerprint) -> Option<String> {
    if a.trials != b.trials {
        return Some(format!(
            "it planned {} trials per case, not {}",
            b.trials, a.trials
        ));
    }
    if a.arms != b.arms {
        let names = |p: &PlanFingerprint| {
            p.arms
                .iter()
                .map(|a| {
                    format!(
                        "{} ({} at {}, variant {})",
                        a.identity.provider, a.identity.model, a.identity.base_url, a.variant
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        return Some(format!("its arms are {}, not {}", names(b), names(a)));
    }
    let names = |p: &PlanFingerprint| {
        p.datasets
            .iter()
            .map(|d| d.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if a.datasets.len() != b.datasets.len()
        || a.datasets
            .iter()
            .zip(&b.datasets)
            .any(|(x, y)| x.name != y.name)
    {
        return Some(format!(
            "its datasets are [{}], not [{}]",
            names(b),
            names(a)
        ));
    }
    for (x, y) in a.datasets.iter().zip(&b.datasets) {
        if x.catalog_fingerprint != y.catalog_fingerprint {
            return Some(format!(
                "the catalog of dataset `{}` is {}, not {}",
                x.name, y.catalog_fingerprint, x.catalog_fingerprint
            ));
        }
        if x.cases != y.cases || x.case_trials != y.case_trials {
            return Some(format!(
                "the cases of dataset `{}` differ ({} cases, not {})",
                x.name,
                y.cases.len(),
                x.cases.len()
            ));
        }
    }
    if a.scenarios != b.scenarios {
        return Some("its scenarios or their catalogs differ".to_owned());
    }
    None
}

/// The plan's trials, addressed the way the runner plans them.
struct PlanIndex {
    arms: HashMap<(String, String), usize>,
    models: Vec<String>,
    cases: HashMap<(String, String), usize>,
    case_trials: Vec<u32>,
    /// Shard hash seed of each (arm, case), at `arm * cases + case`.
    seeds: Vec<u64>,
}

impl PlanIndex {
    /// `run` supplies what plan.json does not hold: each scenario's own `trials`.
    fn new(plan: &PlanFingerprint, run: &toolscore_summary::RunInfo) -> PlanIndex {
        let mut cases = HashMap::new();
        let mut case_trials = Vec::new();
        let mut units: Vec<(String, String)> = Vec::new();
        for d in &plan.datasets {
            for c in &d.cases {
                cases.insert((d.name.clone(), c.clone()), units.len());
                case_trials.push(d.case_trials.get(c).copied().unwrap_or(plan.trials));
                units.push((d.name.clone(), c.clone()));
            }
        }
        for (name, _) in &plan.scenarios {
            let key = (toolscore_core::SCENARIO_DATASET.to_owned(), name.clone());
            cases.insert(key.clone(), units.len());
            case_trials.push(run.planned_trials(&key.0, name));
            units.push(key);
        }
        let seeds = plan
            .arms
            .iter()
            .flat_map(|a| {
                units
                    .iter()
                    .map(|(d, c)| unit_seed(&a.identity.provider, &a.variant, d, c))
            })
            .collect();
        PlanIndex {
            arms: plan
                .arms
                .iter()
                .enumerate()
                .map(|(i, a)| ((a.identity.provider.clone(), a.variant.clone()), i))
                .collect(),
            models: plan.arms.iter().map(|a| a.identity.model.clone()).collect(),
            cases,
            case_trials,
            seeds,
        }
    }

    fn max_trials(&self) -> u32 {
        self.case_trials.iter().copied().max().unwrap_or(0)
    }

    /// How many of the plan's trials fall in each of `count` shards.
    fn slice_sizes(&self, count: u32) -> Vec<u64> {
        let mut sizes = vec![0u64; count as usize];
        let cases = self.case_trials.len();
        for arm in 0..self.arms.len() {
            for (case, &trials) in self.case_trials.iter().enumerate() {
                let seed = self.seeds[arm * cases + case];
                for t in 0..trials {
                    sizes[shard_of(seed, t, count) as usize] += 1;
                }
            }
        }
        sizes
    }
}

/// The head of one shard's results.jsonl in the merge.
struct Head {
    line: String,
    line_no: usize,
    record: TrialRecord,
}

/// One shard's results.jsonl, read a line at a time.
struct ShardReader<'a> {
    run: &'a ShardRun,
    name: String,
    lines: toolscore_core::BoundedLines,
    line_no: usize,
    records: u64,
}

impl ShardReader<'_> {
    fn next(&mut self) -> Result<Option<Head>, Error> {
        loop {
            let Some(line) = self.lines.next() else {
                return Ok(None);
            };
            self.line_no += 1;
            let line = line.map_err(|e| toolscore_core::line_error(&self.name, self.line_no, e))?;
            if line.trim().is_empty() {
                continue;
            }
            let record: TrialRecord = serde_json::from_str(&line).map_err(|e| {
                InputError::json_line(&self.name, self.line_no, "not a trial record", &e)
            })?;
            self.records += 1;
            return Ok(Some(Head {
                line,
                line_no: self.line_no,
                record,
            }));
        }
    }
}

/// Merges the shards' records into OUT in plan order, checking each against the plan, then
/// writes the merged run's files and report.
fn write_merged(
    shards: &[ShardRun],
    out: &Path,
    run_id: &str,
    formats: &[Format],
    detail: bool,
) -> Result<ExitCode, Error> {
    let plan = shards[0].plan.whole();
    let merge = Merge {
        index: PlanIndex::new(&plan, &shards[0].summary.header.run),
        count: shards[0].shard.count,
    };
    let mut readers = open_readers(shards)?;
    let results_path = out.join("results.jsonl");
    let (merged, agg) = merge.records(&mut readers, &results_path, out)?;
    merge.check_slices(&readers)?;
    let mut summary = merged_summary(shards, agg, merged, run_id);
    // The merged run decided as the whole run would be: by the first shard's limit of
    // infrastructure errors (shards of one plan share their flags).
    let decision =
        toolscore_decide::decide(&summary, shards[0].summary.header.max_infra_error_rate());
    let code = toolscore_decide::exit_code(&decision);
    summary.decision = Some(decision);

    toolscore_core::write_json(&out.join(PLAN_FILE), &plan)?;
    // The attacks of an attacked plan, the same in every shard of it.
    let attacks = shards[0]
        .dir
        .join(toolscore_suite::attack::RUN_ATTACKS_FILE);
    if attacks.is_file() {
        let text = toolscore_core::read_text(&attacks)?;
        toolscore_core::write_file(
            &out.join(toolscore_suite::attack::RUN_ATTACKS_FILE),
            text.as_bytes(),
        )?;
    }
    toolscore_core::write_json(
        &out.join("shards.json"),
        &Provenance {
            plan: plan.digest(),
            shards: shards
                .iter()
                .zip(&readers)
                .map(|(s, r)| ShardProvenance {
                    shard: s.shard.to_string(),
                    dir: s.dir.display().to_string(),
                    run_id: &s.summary.header.run.run_id,
                    started_at: &s.summary.header.run.started_at,
                    finished_at: &s.summary.header.run.finished_at,
                    trials: r.records,
                })
                .collect(),
        },
    )?;
    toolscore_core::write_json(&out.join("summary.json"), &summary)?;
    super::history::append_history(out, &summary)?;
    let files = output::write_files(&summary, out, formats)?;
    output::print_stdout(&summary, formats, detail, out)?;
    let mut written = vec![
        results_path,
        out.join("results.csv"),
        out.join("summary.json"),
    ];
    written.extend(files);
    errln!(
        "merged {} shards ({merged} trials) into {}",
        shards.len(),
        written
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    if let Some(why) = summary
        .decision
        .as_ref()
        .and_then(toolscore_summary::Decision::not_judged_because)
    {
        errln!("error: {why}")?;
    }
    Ok(code)
}

fn open_readers(shards: &[ShardRun]) -> Result<Vec<ShardReader<'_>>, Error> {
    shards
        .iter()
        .map(|s| {
            let path = s.dir.join("results.jsonl");
            Ok(ShardReader {
                run: s,
                name: path.display().to_string(),
                lines: toolscore_core::jsonl_lines(
                    &path,
                    "a results file",
                    toolscore_core::MAX_RECORD_LINE_BYTES,
                )?,
                line_no: 0,
                records: 0,
            })
        })
        .collect()
}

/// The whole plan, indexed, and the number of shards it was cut into.
struct Merge {
    index: PlanIndex,
    count: u32,
}

impl Merge {
    /// Streams every shard's records into `results_path` and results.csv in plan order (a
    /// k-way merge on the job number), refusing a trial recorded twice; memory is one bit per
    /// planned job. Returns the number merged and their aggregate.
    fn records(
        &self,
        readers: &mut [ShardReader<'_>],
        results_path: &Path,
        out: &Path,
    ) -> Result<(u64, Aggregator), Error> {
        let jobs = self.per_round() * u64::from(self.index.max_trials());
        let mut seen = vec![0u64; jobs.div_ceil(64) as usize];
        let write_error = |e| Error::io(format!("cannot write {}", results_path.display()), e);
        let mut results = BufWriter::with_capacity(
            256 * 1024,
            std::fs::File::create(results_path)
                .map_err(|e| Error::io(format!("cannot create {}", results_path.display()), e))?,
        );
        let mut csv = ResultsCsv::create(&out.join("results.csv"))?;
        let mut agg = Aggregator::new();
        let mut heads: Vec<Option<Head>> = Vec::with_capacity(readers.len());
        // Min-heap on (job, shard position): plan order, ties (impossible once checked) by shard.
        let mut heap = BinaryHeap::new();
        for (i, reader) in readers.iter_mut().enumerate() {
            let head = reader.next()?;
            if let Some(h) = &head {
                heap.push(std::cmp::Reverse((self.job_of(reader, h)?, i)));
            }
            heads.push(head);
        }
        let mut merged = 0u64;
        while let Some(std::cmp::Reverse((job, i))) = heap.pop() {
            let Some(head) = heads[i].take() else {
                continue;
            };
            let (word, bit) = ((job / 64) as usize, job % 64);
            if seen[word] & (1 << bit) != 0 {
                return Err(readers[i].refusal(&head, "", "is recorded twice"));
            }
            seen[word] |= 1 << bit;
            results
                .write_all(head.line.as_bytes())
                .and_then(|()| results.write_all(b"\n"))
                .map_err(write_error)?;
            csv.append_buffered(&head.record)?;
            agg.add(&head.record);
            merged += 1;
            let next = readers[i].next()?;
            if let Some(h) = &next {
                heap.push(std::cmp::Reverse((self.job_of(&readers[i], h)?, i)));
            }
            heads[i] = next;
        }
        results.flush().map_err(write_error)?;
        csv.flush()?;
        Ok((merged, agg))
    }

    fn per_round(&self) -> u64 {
        (self.index.arms.len() * self.index.case_trials.len()) as u64
    }

    /// A record's job number in the whole plan, once it is checked to belong to the plan and
    /// to the shard that holds it.
    fn job_of(&self, reader: &ShardReader<'_>, head: &Head) -> Result<u64, Error> {
        let (index, count) = (&self.index, self.count);
        let r = &head.record;
        let at = |field: &str, what: String| reader.located(head, field, what);
        let arm = *index
            .arms
            .get(&(r.arm.provider.clone(), r.arm.variant.clone()))
            .ok_or_else(|| {
                at(
                    "arm",
                    format!(
                        "arm `{}` (variant {}) is not in the plan",
                        r.arm.provider, r.arm.variant
                    ),
                )
            })?;
        if r.arm.model != index.models[arm] {
            return Err(at(
                "arm.model",
                format!(
                    "model `{}` of arm `{}` is not the plan's `{}`",
                    r.arm.model, r.arm.provider, index.models[arm]
                ),
            ));
        }
        let case = *index
            .cases
            .get(&(r.dataset.clone(), r.case_id.clone()))
            .ok_or_else(|| {
                at(
                    "case_id",
                    format!("case `{}/{}` is not in the plan", r.dataset, r.case_id),
                )
            })?;
        if r.trial_index >= index.case_trials[case] {
            return Err(at(
                "trial_index",
                format!(
                    "trial {} is beyond the {} planned for case `{}/{}`",
                    r.trial_index, index.case_trials[case], r.dataset, r.case_id
                ),
            ));
        }
        let cases = index.case_trials.len();
        let owner = shard_of(index.seeds[arm * cases + case], r.trial_index, count);
        if owner != reader.run.shard.index {
            return Err(reader.refusal(
                head,
                "trial_index",
                &format!("belongs to shard {owner}/{count}"),
            ));
        }
        Ok(u64::from(r.trial_index) * self.per_round() + (case * index.arms.len() + arm) as u64)
    }

    /// Every trial of every slice is there: each shard holds exactly the trials of its slice.
    fn check_slices(&self, readers: &[ShardReader<'_>]) -> Result<(), Error> {
        let sizes = self.index.slice_sizes(self.count);
        for reader in readers {
            let s = reader.run;
            let want = sizes[s.shard.index as usize];
            if reader.records != want {
                return Err(usage(&format!(
                    "shard {} ({}) holds {} of the {want} trials of its slice; finish it with `{}` and the flags it was started with",
                    s.shard,
                    s.dir.display(),
                    reader.records,
                    resume_command(&s.dir)
                )));
            }
        }
        Ok(())
    }
}

impl ShardReader<'_> {
    /// An error at this record's line, naming the shard.
    fn located(&self, head: &Head, field: &str, what: String) -> Error {
        InputError::at(
            &self.name,
            Some(head.line_no),
            field,
            &format!(
                "{what} (shard {} of {})",
                self.run.shard,
                self.run.dir.display()
            ),
        )
        .into()
    }

    /// An error naming the record's trial, case and arm: "trial 3 of case `d/c` in arm `p` …".
    fn refusal(&self, head: &Head, field: &str, what: &str) -> Error {
        let r = &head.record;
        self.located(
            head,
            field,
            format!(
                "trial {} of case `{}/{}` in arm `{}` {what}",
                r.trial_index, r.dataset, r.case_id, r.arm.provider
            ),
        )
    }
}

/// The merged run's summary: the shards' run info spanning all of them, their totals summed,
/// and their cost estimates added up.
fn merged_summary(
    shards: &[ShardRun],
    agg: Aggregator,
    merged: u64,
    run_id: &str,
) -> toolscore_summary::Summary {
    let first = &shards[0].summary.header;
    let mut run = first.run.clone();
    run.run_id = run_id.to_owned();
    run.shard = None;
    run.merged_shards = shards[0].shard.count;
    // A shard finished with --resume ran in more than one sitting: so did the merged run.
    run.resumed_trials = shards
        .iter()
        .map(|s| s.summary.header.run.resumed_trials)
        .sum();
    run.started_at = shards
        .iter()
        .map(|s| s.summary.header.run.started_at.clone())
        .min()
        .unwrap_or_default();
    run.finished_at = shards
        .iter()
        .map(|s| s.summary.header.run.finished_at.clone())
        .max()
        .unwrap_or_default();
    let totals = RunTotals {
        planned_trials: shards.iter().map(|s| s.summary.header.planned_trials).sum(),
        completed_trials: merged,
        skipped_trials: shards.iter().map(|s| s.summary.header.skipped_trials).sum(),
        budget_not_run: shards
            .iter()
            .filter_map(|s| s.summary.header.budget.as_ref())
            .map(|b| b.not_run)
            .sum(),
        interrupted: false,
        failures: Vec::new(),
    };
    let mut summary = agg.finish(run, &totals, first.confidence, first.precision);
    // Each shard priced its own slice; the merged run's estimate is their sum. A cap was per
    // shard process, so the merged run names none.
    let budgets: Vec<&toolscore_summary::BudgetReport> = shards
        .iter()
        .filter_map(|s| s.summary.header.budget.as_ref())
        .collect();
    if !budgets.is_empty() {
        summary.budget = Some(toolscore_summary::BudgetReport {
            max_usd: None,
            estimate_usd: if budgets.len() == shards.len() {
                budgets.iter().map(|b| b.estimate_usd).sum()
            } else {
                None
            },
            estimate_trials: budgets.iter().map(|b| b.estimate_trials).sum(),
            not_run: totals.budget_not_run,
            stopped: summary.cost.total.budget_stopped_trials,
            spent_usd: summary.cost.total.usd,
            cut_short: totals.budget_not_run + summary.cost.total.budget_stopped_trials > 0,
        });
    }
    summary
}

/// The command that finishes the run in `dir` (to which the user adds the flags it was started
/// with).
fn resume_command(dir: &Path) -> String {
    toolscore_core::command(["toolscore", "run", "--resume", &dir.display().to_string()])
}
