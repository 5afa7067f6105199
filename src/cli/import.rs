//! `toolscore import`: datasets from outside data. `import bfcl`: the Berkeley Function Calling
//! Leaderboard's data (PyPI `bfcl-eval`), one per category, judged by a port of BFCL's own
//! checker ([`crate::score::bfcl`]). `import traffic`: logged model calls
//! ([`crate::traffic`]), one dataset per catalog.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::usage;
use crate::error::{Error, ExitCode, InputError};
use crate::score::bfcl::pyjson::OrderedJson;
use crate::score::bfcl::{BfclChecker, BfclLanguage, openai_name};

#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// Datasets from the Berkeley Function Calling Leaderboard (PyPI `bfcl-eval`): one per
    /// category, the catalog as BFCL's OpenAI function-calling handler sends it, each case
    /// passed exactly when BFCL's checker passes it.
    Bfcl(BfclArgs),
    /// Datasets from logged model traffic: OpenAI Chat Completions or Responses and Anthropic
    /// Messages request/response pairs (JSON lines `{"request": ..., "response": ...}`), or
    /// OpenTelemetry GenAI spans (OTLP JSON). Each model call becomes a case: the
    /// conversation, the calls the model made as the expected calls, its source. One dataset
    /// per distinct catalog. Secrets and the fields named by --redact are redacted before
    /// anything is written.
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

/// The categories `import bfcl` knows: BFCL's single-turn AST categories (Python, Java,
/// JavaScript) and its relevance categories.
pub const BFCL_CATEGORIES: &[&str] = &[
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "irrelevance",
    "live_irrelevance",
    "live_relevance",
];

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

pub fn run(command: &ImportCommand) -> Result<ExitCode, Error> {
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
    // Refuse before writing anything, so a refused import leaves no half of itself behind.
    for c in &categories {
        let dest = args.out.join(format!("bfcl_{c}"));
        if dest.exists() && !args.force {
            return Err(usage(&format!(
                "{} already exists; pass --force to replace it",
                dest.display()
            )));
        }
    }
    println!("importing BFCL from {}", data.display());
    println!(
        "{:<24} {:>8} {:>8}  skipped because",
        "category", "imported", "skipped"
    );
    for c in &categories {
        let imported = import_category(&data, c)?;
        let dest = args.out.join(format!("bfcl_{c}"));
        write_dataset(
            &dest,
            &json!({"tools": imported.tools}),
            &imported.cases,
            args.force,
        )?;
        let reasons: Vec<String> = imported
            .skipped
            .iter()
            .map(|(why, n)| format!("{n} {why}"))
            .collect();
        println!(
            "{:<24} {:>8} {:>8}  {}",
            c,
            imported.cases.len(),
            imported.skipped.values().sum::<usize>(),
            if reasons.is_empty() {
                "-".to_owned()
            } else {
                reasons.join("; ")
            }
        );
    }
    println!("written under {}", args.out.display());
    Ok(ExitCode::Pass)
}

fn run_traffic(args: &TrafficArgs) -> Result<ExitCode, Error> {
    use crate::traffic::{Options, formats::Format, redact::Redactor};
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
    let redactor = Redactor::new(&args.redact).map_err(|e| usage(&e))?;
    let options = Options {
        redactor,
        format: args.format.as_deref().and_then(Format::from_label),
        sample: args
            .sample
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        per_tool: args.per_tool,
        seed: args.seed,
    };
    let mut records = Vec::new();
    for path in &args.logs {
        records.extend(read_records(path)?);
    }
    let imported = crate::traffic::import(&records, &options)?;
    let many = imported.datasets.len() > 1;
    let dest_of = |catalog: &crate::catalog::Catalog| {
        let name = if many {
            let hex = catalog
                .fingerprint
                .strip_prefix("sha256:")
                .unwrap_or(&catalog.fingerprint);
            format!("{}-{}", args.name, &hex[..hex.len().min(8)])
        } else {
            args.name.clone()
        };
        args.out.join(name)
    };
    // Refuse before writing anything, so a refused import leaves no half of itself behind.
    for d in &imported.datasets {
        let dest = dest_of(&d.catalog);
        if dest.exists() && !args.force {
            return Err(usage(&format!(
                "{} already exists; pass --force to replace it",
                dest.display()
            )));
        }
    }
    let logs: Vec<String> = args.logs.iter().map(|p| p.display().to_string()).collect();
    let read: Vec<String> = imported
        .read
        .iter()
        .map(|(f, n)| format!("{n} {f}"))
        .collect();
    println!(
        "read {} exchanges from {} ({})",
        imported.read.values().sum::<usize>(),
        logs.join(", "),
        read.join(", ")
    );
    if imported.other_spans > 0 {
        println!(
            "ignored {} spans that are not model calls (no gen_ai.input.messages)",
            imported.other_spans
        );
    }
    if imported.redacted.is_empty() {
        println!("redacted: nothing");
    } else {
        let kinds: Vec<String> = imported
            .redacted
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        println!(
            "redacted {} values: {}",
            imported.redacted.values().sum::<usize>(),
            kinds.join(", ")
        );
    }
    for (reason, n) in &imported.unassigned {
        println!("skipped {n}: {reason}");
    }
    if imported.datasets.is_empty() {
        return Err(usage("nothing to import: every exchange was skipped"));
    }
    // Every dataset is staged and loaded before any is put in place: an import that fails
    // half-way leaves none of its datasets behind.
    let mut staged = Vec::new();
    for d in &imported.datasets {
        let dest = dest_of(&d.catalog);
        match stage_dataset(
            &dest,
            &crate::catalog::to_tools_json(&d.catalog, None),
            &d.cases,
        ) {
            Ok(staging) => staged.push((staging, dest)),
            Err(e) => {
                for (staging, _) in &staged {
                    let _ = std::fs::remove_dir_all(staging);
                }
                return Err(e);
            }
        }
    }
    for (staging, dest) in &staged {
        put_in_place(staging, dest, args.force)?;
    }
    for d in &imported.datasets {
        let dest = dest_of(&d.catalog);
        println!();
        let tools = d.catalog.tools.len();
        println!(
            "{}: {tools} tool{}, catalog {}",
            dest.display(),
            if tools == 1 { "" } else { "s" },
            d.catalog.fingerprint
        );
        println!(
            "{:<24} {:>8} {:>8}  skipped because",
            "expected tool", "imported", "skipped"
        );
        for (tool, row) in &d.rows {
            let reasons: Vec<String> = row
                .skipped
                .iter()
                .map(|(why, n)| format!("{n} {why}"))
                .collect();
            println!(
                "{:<24} {:>8} {:>8}  {}",
                tool,
                row.imported,
                row.skipped.values().sum::<usize>(),
                if reasons.is_empty() {
                    "-".to_owned()
                } else {
                    reasons.join("; ")
                }
            );
        }
    }
    println!("written under {}", args.out.display());
    Ok(ExitCode::Pass)
}

/// A log's records: one JSON value per line, or the whole file when it is one JSON document
/// (an OTLP export written pretty-printed).
fn read_records(path: &Path) -> Result<Vec<crate::traffic::Record>, Error> {
    let text = crate::input::read_text(path)?;
    let file = path.display().to_string();
    let non_blank = text.lines().filter(|l| !l.trim().is_empty()).count();
    if non_blank > 1
        && let Ok(value) = serde_json::from_str::<Value>(&text)
    {
        return Ok(vec![crate::traffic::Record {
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
        records.push(crate::traffic::Record {
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

/// `bfcl_eval/data` of the package `python3` imports.
fn installed_data_dir() -> Result<PathBuf, Error> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import bfcl_eval, os; print(os.path.join(os.path.dirname(bfcl_eval.__file__), 'data'))",
        ])
        .output();
    match out {
        Ok(o) if o.status.success() => Ok(PathBuf::from(String::from_utf8_lossy(&o.stdout).trim())),
        _ => Err(usage(
            "no --data given and `python3 -c 'import bfcl_eval'` failed: pip install bfcl-eval==2026.3.23, or pass --data PATH/bfcl_eval/data",
        )),
    }
}

/// One category converted: its catalog, its cases, and what was left out and why.
pub struct Imported {
    tools: Vec<Value>,
    cases: Vec<Value>,
    skipped: BTreeMap<String, usize>,
}

fn read_json_lines(path: &Path) -> Result<Vec<Value>, Error> {
    let text = crate::input::read_text(path)?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| {
                InputError::at(
                    &path.display().to_string(),
                    Some(i + 1),
                    "",
                    &format!("not a JSON line: {e}"),
                )
                .into()
            })
        })
        .collect()
}

fn checker_of(category: &str) -> BfclChecker {
    // As BFCL's eval runner and `ast_checker` choose: by substrings of the category's name.
    if category.contains("irrelevance") {
        BfclChecker::Irrelevance
    } else if category.contains("relevance") {
        BfclChecker::Relevance
    } else if category.contains("parallel") {
        BfclChecker::Parallel
    } else if category.contains("multiple") {
        BfclChecker::Multiple
    } else {
        BfclChecker::Simple
    }
}

/// Converts one category's questions and possible answers.
pub fn import_category(data: &Path, category: &str) -> Result<Imported, Error> {
    let questions_path = data.join(format!("BFCL_v4_{category}.json"));
    let questions = read_json_lines(&questions_path)?;
    let language = BfclLanguage::of_category(category);
    // BFCL writes the schema of a JavaScript dict into the text the model reads with Python's
    // `json.dumps`, keys in the file's order, which `Value` does not keep: those entries are
    // read a second time, in order.
    let ordered: HashMap<String, OrderedJson> = if language == BfclLanguage::JavaScript {
        crate::input::read_text(&questions_path)?
            .lines()
            .filter_map(|l| OrderedJson::parse(l).ok())
            .filter_map(|e| match e.get("id") {
                Some(OrderedJson::Str(id)) => Some((id.clone(), e)),
                _ => None,
            })
            .collect()
    } else {
        HashMap::new()
    };
    let checker = checker_of(category);
    let needs_answers = matches!(
        checker,
        BfclChecker::Simple | BfclChecker::Multiple | BfclChecker::Parallel
    );
    let answers: HashMap<String, Value> = if needs_answers {
        read_json_lines(
            &data
                .join("possible_answer")
                .join(format!("BFCL_v4_{category}.json")),
        )?
        .into_iter()
        .filter_map(|a| Some((a.get("id")?.as_str()?.to_owned(), a)))
        .collect()
    } else {
        HashMap::new()
    };
    let mut out = Imported {
        tools: Vec::new(),
        cases: Vec::new(),
        skipped: BTreeMap::new(),
    };
    // The dataset's tools.json: every function name's first definition, for `toolscore
    // catalog` and the dataset loader; each case shows the model its own functions.
    let mut defined: HashSet<String> = HashSet::new();
    for entry in &questions {
        let id = entry.get("id").and_then(Value::as_str).unwrap_or_default();
        match convert_entry(entry, ordered.get(id), category, checker, &answers) {
            Ok((case, tools)) => {
                for t in tools {
                    let name = t["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    if defined.insert(name) {
                        out.tools.push(t);
                    }
                }
                out.cases.push(case);
            }
            Err(why) => *out.skipped.entry(why).or_default() += 1,
        }
    }
    Ok(out)
}

/// A case and the tools it shows, or why it is skipped (a reason shared by similar cases, so
/// they count together).
fn convert_entry(
    entry: &Value,
    ordered: Option<&OrderedJson>,
    category: &str,
    checker: BfclChecker,
    answers: &HashMap<String, Value>,
) -> Result<(Value, Vec<Value>), String> {
    let id = entry.get("id").and_then(Value::as_str).ok_or("no `id`")?;
    let functions = entry
        .get("function")
        .and_then(Value::as_array)
        .ok_or("no `function` list")?;
    if functions.is_empty() {
        return Err(
            "the question offers no function (toolscore shows every case at least one tool)".into(),
        );
    }
    let turns = entry
        .get("question")
        .and_then(Value::as_array)
        .ok_or("no `question`")?;
    if turns.len() != 1 {
        return Err("more than one turn (multi-turn is not a single-turn category)".into());
    }
    let messages = turns[0]
        .as_array()
        .ok_or("the turn is not a message list")?;
    if messages
        .last()
        .and_then(|m| m.get("role"))
        .and_then(Value::as_str)
        != Some("user")
    {
        return Err("the conversation does not end with a user message".into());
    }
    let mut tools = Vec::with_capacity(functions.len());
    let language = BfclLanguage::of_category(category);
    for (i, f) in functions.iter().enumerate() {
        let ordered = ordered
            .and_then(|e| e.get("function"))
            .and_then(|fs| fs.at(i));
        let tool = openai_tool(f, ordered, language)?;
        if tools
            .iter()
            .any(|t: &Value| t["function"]["name"] == tool["function"]["name"])
        {
            return Err("two functions with the same name".into());
        }
        tools.push(tool);
    }
    let answer = if matches!(checker, BfclChecker::Irrelevance | BfclChecker::Relevance) {
        Vec::new()
    } else {
        answers
            .get(id)
            .and_then(|a| a.get("ground_truth"))
            .and_then(Value::as_array)
            .cloned()
            .ok_or("no possible answer")?
    };
    // The function docs the checker reads: the first for a simple category (BFCL judges
    // against `func_description[0]`), else those the answers name.
    let docs: Vec<Value> = match checker {
        BfclChecker::Simple => vec![functions[0].clone()],
        BfclChecker::Irrelevance | BfclChecker::Relevance => Vec::new(),
        _ => functions
            .iter()
            .filter(|f| {
                answer.iter().any(|a| {
                    a.as_object()
                        .is_some_and(|o| o.contains_key(f["name"].as_str().unwrap_or_default()))
                })
            })
            .cloned()
            .collect(),
    };
    let expect = crate::score::bfcl::BfclExpect {
        checker,
        category: category.to_owned(),
        functions: docs,
        answer,
    };
    expect.validate()?;
    let case = json!({
        "id": id,
        "messages": messages,
        "catalog": {"tools": tools},
        "expect": {"bfcl": expect},
        "tags": [category],
        "source": {"bfcl": format!("BFCL_v4_{category}.json"), "id": id},
    });
    Ok((case, tools))
}

/// A BFCL function doc as `convert_to_tool(functions, GORILLA_TO_OPENAPI,
/// ModelStyle.OPENAI_COMPLETIONS)` sends it, after BFCL's inference has added its language
/// hints (`_func_doc_language_specific_pre_processing`). `ordered` is the same doc with its
/// keys in the file's order, for the JavaScript dict schemas BFCL prints into descriptions.
fn openai_tool(
    function: &Value,
    ordered: Option<&OrderedJson>,
    language: BfclLanguage,
) -> Result<Value, String> {
    let mut item = function.clone();
    let name = item
        .get("name")
        .and_then(Value::as_str)
        .ok_or("a function has no name")?
        .to_owned();
    let obj = item.as_object_mut().ok_or("a function is not an object")?;
    let description = obj
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let hint = match language {
        BfclLanguage::Python => "Python 3 syntax",
        BfclLanguage::Java => "Java 8 SDK syntax",
        BfclLanguage::JavaScript => "JavaScript syntax",
    };
    obj.insert(
        "description".into(),
        Value::String(format!(
            "{description} Note that the provided function is in {hint}."
        )),
    );
    obj.insert("name".into(), Value::String(openai_name(&name)));
    if language != BfclLanguage::Python {
        let properties = obj
            .get_mut("parameters")
            .and_then(|p| p.get_mut("properties"))
            .and_then(Value::as_object_mut)
            .ok_or("a function has no parameters.properties")?;
        let ordered = ordered
            .and_then(|f| f.get("parameters"))
            .and_then(|p| p.get("properties"));
        as_strings(properties, ordered, language)?;
    }
    let parameters = obj
        .get_mut("parameters")
        .and_then(Value::as_object_mut)
        .ok_or("a function has no parameters object")?;
    parameters.insert("type".into(), Value::String("object".into()));
    let properties = parameters
        .get_mut("properties")
        .and_then(Value::as_object_mut)
        .ok_or("a function has no parameters.properties")?;
    cast_to_openai_type(properties)?;
    Ok(json!({"type": "function", "function": item}))
}

/// The Java and JavaScript half of `_func_doc_language_specific_pre_processing`: every
/// parameter becomes a string holding source code of its type, and the description says which
/// type (and the element type or dict schema, which the model would otherwise not see). Where
/// BFCL would raise (no `type`, no `description`, an array without `items.type`) the case is
/// skipped with the reason.
fn as_strings(
    properties: &mut serde_json::Map<String, Value>,
    ordered: Option<&OrderedJson>,
    language: BfclLanguage,
) -> Result<(), String> {
    let name = if language == BfclLanguage::Java {
        "Java"
    } else {
        "JavaScript"
    };
    let list_type = if language == BfclLanguage::Java {
        ["ArrayList", "Array"].as_slice()
    } else {
        ["array"].as_slice()
    };
    for (key, value) in properties.iter_mut() {
        let v = value
            .as_object_mut()
            .ok_or("a parameter is not an object")?;
        let ty = v
            .get("type")
            .and_then(Value::as_str)
            .ok_or("a parameter without a type (BFCL's language hints would raise)")?
            .to_owned();
        let mut description = v
            .get("description")
            .and_then(Value::as_str)
            .ok_or("a parameter without a description (BFCL's language hints would raise)")?
            .to_owned();
        if ty == "any" {
            description.push_str(&format!(
                " This parameter can be of any type of {name} object in string representation."
            ));
        } else {
            description.push_str(&format!(
                " This is {name} {ty} type parameter in string representation."
            ));
        }
        if list_type.contains(&ty.as_str()) {
            let items = v
                .remove("items")
                .ok_or("a list parameter without `items` (BFCL's language hints would raise)")?;
            let item_type = match items.get("type") {
                Some(Value::String(t)) => t.clone(),
                _ => {
                    return Err(
                        "a list parameter without a string `items.type` (BFCL's language hints would raise or print it differently)"
                            .into(),
                    );
                }
            };
            description.push_str(&format!(
                " The list elements are of type {item_type}; they are not in string representation."
            ));
        }
        if language == BfclLanguage::JavaScript && ty == "dict" && v.contains_key("properties") {
            let schema = ordered
                .and_then(|o| o.get(key))
                .and_then(|p| p.get("properties"))
                .ok_or("a dict schema that could not be read in order")?;
            description.push_str(&format!(
                " The dictionary entries have the following schema; they are not in string representation. {}",
                schema.dumps()
            ));
            v.remove("properties");
        }
        v.insert("description".into(), Value::String(description));
        v.insert("type".into(), Value::String("string".into()));
    }
    Ok(())
}

/// `GORILLA_TO_OPENAPI` of bfcl_eval/constants/type_mappings.py.
fn openapi_type(t: &str) -> Option<&'static str> {
    Some(match t {
        "integer" | "byte" | "short" | "long" | "Bigint" => "integer",
        "number" | "float" | "double" => "number",
        "string" | "any" | "char" | "Any" | "String" => "string",
        "boolean" | "bool" => "boolean",
        "array" | "list" | "tuple" | "ArrayList" | "Array" | "Queue" | "Stack" => "array",
        "dict" | "object" | "HashMap" | "Hashtable" => "object",
        _ => return None,
    })
}

/// `_cast_to_openai_type` of bfcl_eval/model_handler/utils.py, step for step.
fn cast_to_openai_type(properties: &mut serde_json::Map<String, Value>) -> Result<(), String> {
    for (_, value) in properties.iter_mut() {
        let Some(v) = value.as_object_mut() else {
            return Err("a parameter is not an object".into());
        };
        match v.get("type").and_then(Value::as_str).map(str::to_owned) {
            None => {
                v.insert("type".into(), Value::String("string".into()));
            }
            Some(t) => {
                if t == "float" {
                    v.insert("format".into(), Value::String("float".into()));
                    let d = v
                        .get("description")
                        .and_then(Value::as_str)
                        .ok_or(
                            "a float parameter without a description (BFCL's handler would raise)",
                        )?
                        .to_owned();
                    v.insert(
                        "description".into(),
                        Value::String(format!("{d} This is a float type value.")),
                    );
                }
                let mapped = openapi_type(&t).unwrap_or("string");
                v.insert("type".into(), Value::String(mapped.into()));
            }
        }
        let ty = v["type"].as_str().unwrap_or_default().to_owned();
        if ty == "array" || ty == "object" {
            if let Some(props) = v.get_mut("properties").and_then(Value::as_object_mut) {
                cast_to_openai_type(props)?;
            } else if let Some(items) = v.get_mut("items").and_then(Value::as_object_mut) {
                let item_type = items
                    .get("type")
                    .and_then(Value::as_str)
                    .and_then(openapi_type)
                    .ok_or("an array item type BFCL's handler cannot map")?;
                items.insert("type".into(), Value::String(item_type.into()));
                if item_type == "array" {
                    if let Some(inner) = items.get_mut("items").and_then(Value::as_object_mut) {
                        let t = inner
                            .get("type")
                            .and_then(Value::as_str)
                            .and_then(openapi_type)
                            .ok_or("an array item type BFCL's handler cannot map")?;
                        inner.insert("type".into(), Value::String(t.into()));
                    }
                } else if item_type == "object"
                    && let Some(props) = items.get_mut("properties").and_then(Value::as_object_mut)
                {
                    cast_to_openai_type(props)?;
                }
            }
        }
    }
    Ok(())
}

/// Writes the dataset into a sibling temporary folder, loads it with the loader `validate`
/// uses, and only then puts it in place: a dataset that would not load is never left behind.
fn write_dataset(dest: &Path, tools: &Value, cases: &[Value], force: bool) -> Result<(), Error> {
    let staging = stage_dataset(dest, tools, cases)?;
    put_in_place(&staging, dest, force)
}

fn io_error(what: &str, e: std::io::Error) -> Error {
    Error::Io {
        context: what.to_owned(),
        source: e,
    }
}

/// Writes the dataset beside `dest` (`.NAME.importing`) and loads it back as `validate` does;
/// returns the staging folder. Nothing is left behind when it does not load.
fn stage_dataset(dest: &Path, tools: &Value, cases: &[Value]) -> Result<PathBuf, Error> {
    let io = io_error;
    if cases.is_empty() {
        return Err(Error::Fatal(format!(
            "nothing to import into {}: every case was skipped",
            dest.display()
        )));
    }
    let parent = dest.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| io(&parent.display().to_string(), e))?;
    let file_name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "dataset".into());
    let staging = parent.join(format!(".{file_name}.importing"));
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(|e| io(&staging.display().to_string(), e))?;
    }
    std::fs::create_dir_all(&staging).map_err(|e| io(&staging.display().to_string(), e))?;
    let tools = serde_json::to_string_pretty(tools).map_err(|e| Error::Fatal(e.to_string()))?;
    std::fs::write(staging.join("tools.json"), tools + "\n")
        .map_err(|e| io("writing tools.json", e))?;
    let mut lines = String::new();
    for c in cases {
        lines.push_str(&c.to_string());
        lines.push('\n');
    }
    std::fs::write(staging.join("cases.jsonl"), lines).map_err(|e| io("writing cases.jsonl", e))?;
    if let Err(e) = crate::suite::load_dataset(&staging) {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(Error::Fatal(format!(
            "the imported dataset for {} does not load (a bug in the importer): {e}",
            dest.display()
        )));
    }
    Ok(staging)
}

/// Moves a staged dataset to `dest`, replacing one there only with `force`.
fn put_in_place(staging: &Path, dest: &Path, force: bool) -> Result<(), Error> {
    let io = io_error;
    if dest.exists() {
        if !force {
            let _ = std::fs::remove_dir_all(staging);
            return Err(usage(&format!(
                "{} already exists; pass --force to replace it",
                dest.display()
            )));
        }
        std::fs::remove_dir_all(dest).map_err(|e| io(&dest.display().to_string(), e))?;
    }
    std::fs::rename(staging, dest).map_err(|e| io(&dest.display().to_string(), e))?;
    Ok(())
}
