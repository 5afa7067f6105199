//! `lint --judge PROVIDER`: each tool's text is put to a model as a question, and its answers
//! become findings. The questions are a dataset the command writes, one case per tool
//! (`OUT/judge/questions-<catalog>-v<instructions>/`), run through the runner like any run
//! (`OUT/judge/<run-id>/`): so the judge is any provider of the config, with run's concurrency,
//! rate limits, `--max-cost` and cassettes, and its questions and answers stay on disk to read,
//! report on and replay.
//!
//! Every verdict is kept in `OUT/judge/verdicts.jsonl` under (the tool's fingerprint, the
//! judge's identity, the instructions' version): a tool whose text, judge and instructions are
//! unchanged is not asked again. Only verdicts are kept; a tool not judged is asked next time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::cli::Error;
use toolscore_core::Outcome;
use toolscore_core::catalog::{Catalog, Tool};
use toolscore_core::{Control, Observer, RunEvent};
use toolscore_lint::judge::measure::Answer;
use toolscore_lint::judge::{self, JudgeRun, Judgement};

#[derive(Debug, Clone, Args)]
pub struct JudgeArgs {
    /// A model that reads every tool's text and says whether it is poisoned: a provider of the
    /// config, a kind (`openai`, `anthropic`, …) or `replay:FILE`. Its verdicts are findings
    /// `judge-poisoned`; a tool it did not answer for is reported "not judged".
    #[arg(help_heading = "Judge", long, value_name = "PROVIDER")]
    pub judge: Option<String>,
    /// Where the judge's questions and runs are written: DIR/judge/ [default: reports, beside
    /// the toolscore.yaml found (the current folder's without one)].
    #[arg(
        help_heading = "Judge",
        long = "judge-out",
        value_name = "DIR",
        requires = "judge"
    )]
    pub out: Option<PathBuf>,
    /// Base URL of the judge's API, as `run --base-url` gives a provider's (a proxy, a gateway,
    /// a local server), e.g. http://127.0.0.1:8080/v1.
    #[arg(
        help_heading = "Judge",
        long = "judge-base-url",
        value_name = "URL",
        requires = "judge"
    )]
    pub base_url: Option<String>,
    /// Model name sent to the judge, as `run --model`.
    #[arg(
        help_heading = "Judge",
        long = "judge-model",
        value_name = "MODEL",
        requires = "judge"
    )]
    pub model: Option<String>,
    /// Questions in flight [default: the config's concurrency].
    #[arg(
        help_heading = "Judge",
        long = "judge-concurrency",
        value_name = "N",
        requires = "judge"
    )]
    pub concurrency: Option<usize>,
    /// Stop asking once this many US dollars are spent, reserved at the worst case as `run
    /// --max-cost` does; the tools left are not judged.
    #[arg(
        help_heading = "Judge",
        long = "judge-max-cost",
        value_name = "USD",
        requires = "judge"
    )]
    pub max_cost: Option<f64>,
    /// Record the judge's answers to FILE (a cassette), to replay with `--judge replay:FILE`.
    #[arg(
        help_heading = "Judge",
        long = "judge-record",
        value_name = "FILE",
        requires = "judge"
    )]
    pub record: Option<PathBuf>,
    /// Ask about every tool, even those DIR/judge/verdicts.jsonl already holds a verdict on
    /// for this judge and these instructions.
    #[arg(help_heading = "Judge", long = "judge-fresh", requires = "judge")]
    pub fresh: bool,
    /// Measure the judge instead of linting: ask it about every tool of LABELLED (a file of
    /// labelled tools, one JSON object a line, `.jsonl` or `.jsonl.gz`, or a folder of them;
    /// repeatable) and report its recall, false alarms and precision with their intervals, by
    /// set, class and placement, with every miss and false alarm. Never reads or adds to the
    /// verdicts cache.
    #[arg(
        help_heading = "Judge",
        long,
        value_name = "LABELLED",
        requires = "judge",
        conflicts_with_all = ["sources", "server_command", "from", "fresh"]
    )]
    pub measure: Vec<PathBuf>,
    /// With --measure: ask about each tool N times, for a judge that samples.
    #[arg(
        help_heading = "Judge",
        long,
        value_name = "N",
        default_value_t = 1,
        requires = "measure"
    )]
    pub trials: u32,
}

/// The file of every verdict given, in DIR/judge/.
const VERDICTS_FILE: &str = "verdicts.jsonl";

/// Lines of the verdicts file read at most: far above any catalog's tools times the judges
/// and instruction versions a project tries.
const MAX_CACHED_VERDICTS: usize = 1_000_000;

/// One line of the verdicts file.
#[derive(Debug, Serialize, Deserialize)]
struct CachedVerdict {
    /// `sha256:` of the tool's canonical JSON: changes exactly when what the model reads does.
    tool_fingerprint: String,
    /// `sha256:` of the judge's identity (provider, kind, model, base URL, settings).
    judge_identity: String,
    instructions_version: String,
    /// For a reader: the tool's name and who judged.
    tool: String,
    judge: String,
    verdict: judge::Verdict,
    /// The run that asked.
    run_dir: String,
}

/// Questions written as a dataset: its folder, and each case id's tool (its position among
/// the tools asked about, and its name).
pub(super) struct Questions {
    pub dir: PathBuf,
    pub tools: BTreeMap<String, (usize, String)>,
}

impl JudgeArgs {
    /// `--judge-out`, else the project's `reports` (see `project`); `config` is `--config`.
    pub(super) fn out_dir(&self, config: Option<&Path>) -> PathBuf {
        self.out
            .clone()
            .unwrap_or_else(|| super::super::default_path(config, "reports"))
    }
}

/// A case id for the `i`-th tool: its position, then its name with anything but letters,
/// digits, `-`, `_` and `.` made `_` (the name is in the question itself).
fn case_id(i: usize, name: &str) -> String {
    let safe: String = name
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{:03}-{safe}", i + 1)
}

/// Writes the questions about `tools` into OUT/judge/questions-<fingerprint>-v<version>/:
/// the `verdict` function as tools.json, one case per tool (the instructions as the system
/// message, the tool's text as the user's). The same tools (whose fingerprint is
/// `fingerprint`) and instructions always make the same folder, byte for byte, so a recorded
/// judge replays against it.
pub(super) fn write_questions<'a>(
    tools: impl IntoIterator<Item = &'a Tool>,
    fingerprint: &str,
    out: &Path,
) -> Result<Questions, Error> {
    let digest = fingerprint.trim_start_matches("sha256:");
    let dir = out.join("judge").join(format!(
        "questions-{}-v{}",
        digest.get(..12).unwrap_or(digest),
        judge::INSTRUCTIONS_VERSION
    ));
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
    let verdict = json!({ "tools": [judge::verdict_tool()] });
    let verdict =
        serde_json::to_vec_pretty(&verdict).map_err(|e| Error::encode("tools.json", e))?;
    toolscore_core::write_file(&dir.join("tools.json"), &verdict)?;
    let mut cases = String::new();
    let mut ids = BTreeMap::new();
    for (i, tool) in tools.into_iter().enumerate() {
        let id = case_id(i, &tool.name);
        let case = json!({
            "id": id,
            "messages": [
                {"role": "system", "content": judge::INSTRUCTIONS},
                {"role": "user", "content": judge::question(tool)},
            ],
            "expect": {"tool": judge::VERDICT_TOOL},
        });
        cases.push_str(&case.to_string());
        cases.push('\n');
        ids.insert(id, (i, tool.name.clone()));
    }
    toolscore_core::write_file(&dir.join("cases.jsonl"), cases.as_bytes())?;
    Ok(Questions { dir, tools: ids })
}

/// Reads each finished question's answers as they come, every trial's, by case.
#[derive(Default)]
pub(super) struct Answers {
    pub by_case: BTreeMap<String, Vec<Answer>>,
}

impl Observer for Answers {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<Control, toolscore_core::Error> {
        if let RunEvent::Trial { record, .. } = event {
            self.by_case
                .entry(record.case_id.clone())
                .or_default()
                .push(answer_of(record));
        }
        Ok(Control::Continue)
    }
}

/// The judge's answer in a trial: its `verdict` calls read as one verdict
/// ([`judge::read_verdicts`]: a poisoned call wins), or an answer that is not one (no such
/// call, arguments that are not a verdict), or a request that failed.
fn answer_of(record: &toolscore_core::TrialRecord) -> Answer {
    match record.outcome {
        Outcome::Error => {
            return Answer::Failed {
                why: format!(
                    "the request failed: {}",
                    record.error.as_deref().unwrap_or("an infrastructure error")
                ),
            };
        }
        Outcome::BudgetStopped => {
            return Answer::Failed {
                why: "--judge-max-cost stopped it".to_owned(),
            };
        }
        Outcome::Pass | Outcome::Fail => {}
    }
    let calls = record
        .turns
        .iter()
        .flat_map(|t| &t.tool_calls)
        .filter(|c| c.name == judge::VERDICT_TOOL)
        .map(|c| &c.arguments);
    match judge::read_verdicts(calls) {
        Ok(v) => Answer::Verdict(v),
        Err(why) => Answer::NoVerdict { why },
    }
}

/// The verdicts of the file for this judge and instructions, by tool fingerprint. A missing
/// file is an empty cache; a line that does not read is bad input naming the file and line.
fn read_cache(
    path: &Path,
    judge_identity: &str,
) -> Result<BTreeMap<String, judge::Verdict>, Error> {
    let mut out = BTreeMap::new();
    if !path.is_file() {
        return Ok(out);
    }
    let name = path.display().to_string();
    let lines = toolscore_core::jsonl_lines(path, "a verdicts file", 1 << 20)?;
    for (i, line) in lines.enumerate() {
        if i >= MAX_CACHED_VERDICTS {
            errln!(
                "warning: {name}: only its first {MAX_CACHED_VERDICTS} lines were read; the tools after them are asked again"
            )?;
            break;
        }
        let line = line.map_err(|e| toolscore_core::line_error(&name, i + 1, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let cached: CachedVerdict = serde_json::from_str(&line).map_err(|e| {
            toolscore_core::InputError::json_line(&name, i + 1, "not a cached verdict", &e)
        })?;
        if cached.judge_identity == judge_identity
            && cached.instructions_version == judge::INSTRUCTIONS_VERSION
        {
            // A file an older toolscore wrote may hold evidence as the judge gave it.
            let mut verdict = cached.verdict;
            verdict.evidence = judge::bounded_evidence(&verdict.evidence);
            out.insert(cached.tool_fingerprint, verdict);
        }
    }
    Ok(out)
}

/// Appends the new verdicts to the file in one write (so two lints finishing together never
/// interleave a line).
fn append_cache(path: &Path, lines: &[CachedVerdict]) -> Result<(), Error> {
    if lines.is_empty() {
        return Ok(());
    }
    let mut text = String::new();
    for line in lines {
        text.push_str(&serde_json::to_string(line).map_err(|e| Error::encode("a verdict", e))?);
        text.push('\n');
    }
    use std::io::Write;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| Error::io(format!("cannot append to {}", path.display()), e))
}

/// Asks the judge about every tool of `catalog` whose verdict the cache does not hold; its
/// judgements by tool name, and who it was.
pub(super) fn ask(
    catalog: &Catalog,
    args: &JudgeArgs,
    judge_spec: &str,
    config: Option<&Path>,
) -> Result<(BTreeMap<String, Judgement>, JudgeRun), Error> {
    // The questions show every string of the tools (`judge::question`); their folder is
    // named by the catalog.
    let questions = write_questions(&catalog.tools, &catalog.fingerprint, &args.out_dir(config))?;
    let mut setup = judge_setup(&questions, args, judge_spec, config)?;
    let arm = setup
        .plan
        .arms
        .first()
        .ok_or_else(|| Error::internal("the judge's plan has no arm".to_owned()))?;
    let judge = Judge::of(arm)?;
    let cache_path = args.out_dir(config).join("judge").join(VERDICTS_FILE);
    let cache = if args.fresh {
        BTreeMap::new()
    } else {
        read_cache(&cache_path, &judge.identity)?
    };
    let fingerprints: BTreeMap<&str, String> = catalog
        .tools
        .iter()
        .map(|t| {
            (
                t.name.as_str(),
                toolscore_core::catalog::view::tool_fingerprint(t),
            )
        })
        .collect();
    // Tools whose verdict the cache holds are not asked again.
    let mut judgements = BTreeMap::new();
    for (id, (_, tool)) in &questions.tools {
        if let Some(v) = fingerprints.get(tool.as_str()).and_then(|f| cache.get(f)) {
            judgements.insert(tool.clone(), Judgement::Judged(v.clone()));
            if let Some(d) = setup.plan.datasets.first_mut() {
                d.cases.retain(|c| &c.id != id);
            }
        }
    }
    let cached = judgements.len();
    let to_ask = setup.plan.datasets.first().map_or(0, |d| d.cases.len());
    let run_dir = setup.out_dir.display().to_string();
    let who = JudgeRun {
        judge: judge.label.clone(),
        run_dir: if to_ask == 0 {
            cache_path.display().to_string()
        } else {
            run_dir.clone()
        },
        cached,
    };
    if to_ask == 0 {
        return Ok((judgements, who));
    }
    super::super::run::priced(&setup)?;
    let mut answers = Answers::default();
    super::super::run::run_phase(setup, None, vec![&mut answers])?;
    let mut fresh = Vec::new();
    for (id, (_, tool)) in questions.tools {
        let Some(j) = answers
            .by_case
            .remove(&id)
            .and_then(|a| a.into_iter().next())
            .map(Answer::into_judgement)
        else {
            continue;
        };
        if let (Judgement::Judged(v), Some(f)) = (&j, fingerprints.get(tool.as_str())) {
            fresh.push(judge.remember(f, &tool, v, &run_dir));
        }
        judgements.insert(tool, j);
    }
    append_cache(&cache_path, &fresh)?;
    Ok((judgements, who))
}

/// The run of the questions: the judge as its one arm, `--trials` trials a question (1 unless
/// measuring), into OUT/judge/, with the judge's flags as run's.
pub(super) fn judge_setup(
    questions: &Questions,
    args: &JudgeArgs,
    judge_spec: &str,
    config: Option<&Path>,
) -> Result<super::super::setup::RunSetup, Error> {
    let mut run = super::super::run::RunArgs::defaults();
    run.suite = super::super::SuiteArgs {
        config: config.map(Path::to_path_buf),
        datasets: vec![questions.dir.clone()],
        scenarios: Vec::new(),
        attacks: Vec::new(),
    };
    run.providers = vec![judge_spec.to_owned()];
    run.provider_args.base_url.clone_from(&args.base_url);
    run.provider_args.model.clone_from(&args.model);
    run.trials = Some(args.trials);
    run.concurrency = args.concurrency;
    run.max_cost = args.max_cost;
    run.record.clone_from(&args.record);
    run.out = Some(args.out_dir(config).join("judge"));
    run.progress = toolscore_report::ProgressMode::Off;
    let setup = super::super::setup::build_plan(run, &|name| std::env::var(name).ok())?;
    super::super::setup::check_local_servers(&setup)?;
    Ok(setup)
}

/// Who judges: `provider/model` for a reader, and the `sha256:` of its whole identity
/// (provider, kind, model, base URL, settings) the cache keys verdicts by.
pub(super) struct Judge {
    pub label: String,
    identity: String,
}

impl Judge {
    pub(super) fn of(arm: &toolscore_runner::Arm) -> Result<Judge, Error> {
        let id = arm.id();
        let identity = serde_json::to_value(arm.settings.identity())
            .map_err(|e| Error::encode("the judge's identity", e))?;
        Ok(Judge {
            label: format!("{}/{}", id.provider, id.model),
            identity: toolscore_core::sha256_of(&toolscore_core::canonical_json(&identity)),
        })
    }

    /// A verdict as the cache keeps it.
    fn remember(
        &self,
        tool_fingerprint: &str,
        tool: &str,
        verdict: &judge::Verdict,
        run_dir: &str,
    ) -> CachedVerdict {
        CachedVerdict {
            tool_fingerprint: tool_fingerprint.to_owned(),
            judge_identity: self.identity.clone(),
            instructions_version: judge::INSTRUCTIONS_VERSION.to_owned(),
            tool: tool.to_owned(),
            judge: self.label.clone(),
            verdict: verdict.clone(),
            run_dir: run_dir.to_owned(),
        }
    }
}
