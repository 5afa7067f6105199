//! `lint --judge PROVIDER`: each tool's text is put to a model as a question, and its answers
//! become findings. The questions are a dataset the command writes, one case per tool
//! (`OUT/judge/questions-<catalog>-v<instructions>/`), run through the runner like any run
//! (`OUT/judge/<run-id>/`): so the judge is any provider of the config, with run's concurrency,
//! rate limits, `--max-cost` and cassettes, and its questions and answers stay on disk to read,
//! report on and replay.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::json;

use crate::cli::Error;
use toolscore_core::catalog::Catalog;
use toolscore_core::event::{Control, Observer, RunEvent};
use toolscore_core::record::Outcome;
use toolscore_lint::judge::{self, JudgeRun, Judgement};

#[derive(Debug, Clone, Args)]
pub struct JudgeArgs {
    /// A model that reads every tool's text and says whether it is poisoned: a provider of the
    /// config, a kind (`openai`, `anthropic`, …) or `replay:FILE`. Its verdicts are findings
    /// `judge-poisoned`; a tool it did not answer for is reported "not judged".
    #[arg(help_heading = "Judge", long, value_name = "PROVIDER")]
    pub judge: Option<String>,
    /// Where the judge's questions and runs are written: DIR/judge/.
    #[arg(
        help_heading = "Judge",
        long = "judge-out",
        value_name = "DIR",
        default_value = "reports",
        requires = "judge"
    )]
    pub out: PathBuf,
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
}

/// The questions of one catalog, written as a dataset: its folder, and each case id's tool.
struct Questions {
    dir: PathBuf,
    tools: BTreeMap<String, String>,
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

/// Writes the questions about `catalog` into OUT/judge/questions-<fingerprint>-v<version>/:
/// the `verdict` function as tools.json, one case per tool (the instructions as the system
/// message, the tool's text as the user's). The same catalog and instructions always make the
/// same folder, byte for byte, so a recorded judge replays against it.
fn write_questions(catalog: &Catalog, out: &Path) -> Result<Questions, Error> {
    let digest = catalog.fingerprint.trim_start_matches("sha256:");
    let dir = out.join("judge").join(format!(
        "questions-{}-v{}",
        digest.get(..12).unwrap_or(digest),
        judge::INSTRUCTIONS_VERSION
    ));
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
    let tools = json!({ "tools": [judge::verdict_tool()] });
    let tools = serde_json::to_vec_pretty(&tools).map_err(|e| Error::encode("tools.json", e))?;
    toolscore_core::atomic::write_file(&dir.join("tools.json"), &tools)?;
    let mut cases = String::new();
    let mut ids = BTreeMap::new();
    for (i, tool) in catalog.tools.iter().enumerate() {
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
        ids.insert(id, tool.name.clone());
    }
    toolscore_core::atomic::write_file(&dir.join("cases.jsonl"), cases.as_bytes())?;
    Ok(Questions { dir, tools: ids })
}

/// Reads each finished question's answer as it comes: the `verdict` call's arguments, or why
/// there is none.
struct Answers {
    by_case: BTreeMap<String, Judgement>,
}

impl Observer for Answers {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<Control, toolscore_core::error::Error> {
        if let RunEvent::Trial { record, .. } = event {
            self.by_case
                .insert(record.case_id.clone(), judgement_of(record));
        }
        Ok(Control::Continue)
    }
}

/// The judge's answer in a trial: its first `verdict` call read as a verdict; an
/// infrastructure error, no such call or arguments that are not a verdict leave the tool not
/// judged, with why.
fn judgement_of(record: &toolscore_core::record::TrialRecord) -> Judgement {
    match record.outcome {
        Outcome::Error => {
            return Judgement::NotJudged {
                why: format!(
                    "the request failed: {}",
                    record.error.as_deref().unwrap_or("an infrastructure error")
                ),
            };
        }
        Outcome::BudgetStopped => {
            return Judgement::NotJudged {
                why: "--judge-max-cost stopped it".to_owned(),
            };
        }
        Outcome::Pass | Outcome::Fail => {}
    }
    let call = record
        .turns
        .iter()
        .flat_map(|t| &t.tool_calls)
        .find(|c| c.name == judge::VERDICT_TOOL);
    match call {
        Some(c) => match judge::read_verdict(&c.arguments) {
            Ok(v) => Judgement::Judged(v),
            Err(why) => Judgement::NotJudged { why },
        },
        None => Judgement::NotJudged {
            why: "the judge answered without calling `verdict`".to_owned(),
        },
    }
}

/// Asks the judge about every tool of `catalog`; its judgements by tool name, and who it was.
pub(super) fn ask(
    catalog: &Catalog,
    args: &JudgeArgs,
    judge_spec: &str,
    config: Option<&Path>,
) -> Result<(BTreeMap<String, Judgement>, JudgeRun), Error> {
    let questions = write_questions(catalog, &args.out)?;
    let mut run = super::super::run::RunArgs::defaults();
    run.suite = super::super::SuiteArgs {
        config: config.map(Path::to_path_buf),
        datasets: vec![questions.dir.clone()],
        scenarios: Vec::new(),
    };
    run.providers = vec![judge_spec.to_owned()];
    run.trials = Some(1);
    run.concurrency = args.concurrency;
    run.max_cost = args.max_cost;
    run.record.clone_from(&args.record);
    run.out = args.out.join("judge");
    run.progress = toolscore_report::ProgressMode::Off;
    let setup = super::super::setup::build_plan(run, &|name| std::env::var(name).ok())?;
    super::super::setup::check_local_servers(&setup)?;
    let arm = setup.plan.arms.first().map(toolscore_runner::Arm::id);
    let who = JudgeRun {
        judge: arm.map_or_else(
            || judge_spec.to_owned(),
            |a| format!("{}/{}", a.provider, a.model),
        ),
        run_dir: setup.out_dir.display().to_string(),
    };
    let mut answers = Answers {
        by_case: BTreeMap::new(),
    };
    super::super::run::run_phase(setup, None, vec![&mut answers])?;
    let judgements = questions
        .tools
        .into_iter()
        .filter_map(|(id, tool)| answers.by_case.remove(&id).map(|j| (tool, j)))
        .collect();
    Ok((judgements, who))
}
