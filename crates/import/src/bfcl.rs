//! `toolscore import bfcl`: the Berkeley Function Calling Leaderboard's single-turn AST and
//! relevance categories converted into datasets — each question's functions as the catalog the
//! model reads (BFCL's own OpenAI conversion, types cast as its `convert_to_tool` does), each
//! possible answer as an expectation the BFCL checker in `score::bfcl` judges.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use toolscore_core::{Error, InputError};
use toolscore_score::bfcl::pyjson::OrderedJson;
use toolscore_score::bfcl::{BfclChecker, BfclLanguage, openai_name};

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

/// `bfcl_eval/data` of the package `python3` imports.
pub fn installed_data_dir() -> Result<PathBuf, Error> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import bfcl_eval, os; print(os.path.join(os.path.dirname(bfcl_eval.__file__), 'data'))",
        ])
        .output();
    match out {
        Ok(o) if o.status.success() => Ok(PathBuf::from(String::from_utf8_lossy(&o.stdout).trim())),
        _ => Err(InputError::new(
            "no --data given and `python3 -c 'import bfcl_eval'` failed: pip install bfcl-eval==2026.3.23, or pass --data PATH/bfcl_eval/data",
        )
        .into()),
    }
}

/// One category converted: its catalog, its cases, and what was left out and why.
pub struct Imported {
    pub tools: Vec<Value>,
    pub cases: Vec<Value>,
    /// Cases left out, counted by reason.
    pub skipped: BTreeMap<String, usize>,
}

fn read_json_lines(path: &Path) -> Result<Vec<Value>, Error> {
    let text = toolscore_core::read_text(path)?;
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
        toolscore_core::read_text(&questions_path)?
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
    let tools = openai_tools(functions, ordered, category)?;
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
    let docs = checked_docs(functions, checker, &answer);
    let expect = toolscore_score::bfcl::BfclExpect {
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

/// The question's functions as OpenAI tools, in its order; two of one name are refused.
fn openai_tools(
    functions: &[Value],
    ordered: Option<&OrderedJson>,
    category: &str,
) -> Result<Vec<Value>, String> {
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
    Ok(tools)
}

/// The function docs the checker reads: the first for a simple category (BFCL judges against
/// `func_description[0]`), none for relevance, else those the answers name.
fn checked_docs(functions: &[Value], checker: BfclChecker, answer: &[Value]) -> Vec<Value> {
    match checker {
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
    }
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
