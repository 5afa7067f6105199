//! Public as a namespace: callers write `bfcl::BfclExpect`, `bfcl::verdict`, `bfcl::pyjson::OrderedJson`.
//!
//! The Berkeley Function Calling Leaderboard's verdict, reproduced: a line-by-line port of
//! `bfcl_eval/eval_checker/ast_eval/ast_checker.py` (bfcl-eval 2026.3.23), of its Java and
//! JavaScript type converters (`java`, `js`, with the Python built-ins they call in `python`)
//! and of the decoding its eval runner does for OpenAI function-calling models
//! (`decode_ast`, `is_function_calling_format_output`, `is_empty_output`).
//!
//! Why a port and not toolscore's own matchers: BFCL's rules are specific and sometimes
//! surprising (an int passes for a float only at the top level; `""` among the allowed values
//! means "may be omitted", and makes an empty list acceptable for a list parameter; parallel
//! calls are paired greedily, not optimally), and an imported case must pass exactly when BFCL
//! says it does. Values are compared with Python's semantics (`True == 1 == 1.0`, `type(x)`
//! strict, so a bool is not an int), which is why they go through [`Py`] and not `json_equal`.
//!
//! The port stays one file, over the 800 lines the rest of `src/` keeps to, so that it reads
//! side by side with the Python it follows, function for function.
//! `tests/it/bfcl_agreement.rs` checks this module against BFCL's own checker.
//!
//! The file stays whole past the house's 800 lines on purpose: it follows `ast_checker.py`
//! function by function, so a reader can hold the two side by side.

mod java;
mod js;
pub mod pyjson;
mod python;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use toolscore_core::ToolCall;

/// Which of BFCL's checkers judges a case (chosen by BFCL from the category's name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BfclChecker {
    /// Exactly one call, judged against the case's first function (`simple_*`, `live_simple`).
    Simple,
    /// Exactly as many calls as answers; the first judged against the first answer.
    Multiple,
    /// Exactly as many calls as answers, paired in any order (BFCL's greedy pairing).
    Parallel,
    /// Passes unless the reply decodes to at least one function call.
    Irrelevance,
    /// Passes when the reply decodes to at least one function call.
    Relevance,
}

/// An imported BFCL case's expectation: its checker, the BFCL function docs it needs (as in
/// the dataset, before the OpenAI conversion) and the possible answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BfclExpect {
    pub checker: BfclChecker,
    /// The category the case came from (`simple_python`, `live_parallel`, ...).
    pub category: String,
    #[serde(default)]
    pub functions: Vec<Value>,
    /// BFCL's `ground_truth`: a list of `{function name: {parameter: [allowed values]}}`.
    #[serde(default)]
    pub answer: Vec<Value>,
}

impl BfclExpect {
    /// The expected tool names as the model sees them (`.` → `_`), for grouping in reports.
    pub fn tool_names(&self) -> Vec<String> {
        self.answer
            .iter()
            .filter_map(|a| a.as_object()?.keys().next().map(|n| openai_name(n)))
            .collect()
    }

    /// Checks the shape BFCL's checker relies on, so a case it would crash on is refused when
    /// loaded rather than judged.
    pub fn validate(&self) -> Result<(), String> {
        let needs_answer = matches!(
            self.checker,
            BfclChecker::Simple | BfclChecker::Multiple | BfclChecker::Parallel
        );
        if !needs_answer {
            return Ok(());
        }
        if self.answer.is_empty() {
            return Err("`answer` must list at least one expected call".into());
        }
        for (i, a) in self.answer.iter().enumerate() {
            let Some((name, params)) = a
                .as_object()
                .filter(|o| o.len() == 1)
                .and_then(|o| o.iter().next())
            else {
                return Err(format!(
                    "answer[{i}] must be {{\"function name\": {{parameter: [allowed values]}}}}"
                ));
            };
            let Some(params) = params.as_object() else {
                return Err(format!(
                    "answer[{i}].{name} must map parameters to lists of allowed values"
                ));
            };
            for (p, allowed) in params {
                if !allowed.is_array() {
                    return Err(format!(
                        "answer[{i}].{name}.{p} must be a list of allowed values"
                    ));
                }
            }
            let description = match self.checker {
                BfclChecker::Simple => self.functions.first(),
                _ => self
                    .functions
                    .iter()
                    .find(|f| f.get("name").and_then(Value::as_str) == Some(name)),
            };
            let Some(description) = description else {
                return Err(format!("`functions` has no description of `{name}`"));
            };
            FunctionDoc::parse(description, BfclLanguage::of_category(&self.category))
                .map_err(|e| format!("functions: {e}"))?;
        }
        Ok(())
    }
}

/// BFCL's OpenAI handler replaces `.` in function names with `_` (`convert_func_name` with
/// `underscore_to_dot` for OpenAI-style models); the checker compares against that name.
pub fn openai_name(name: &str) -> String {
    name.replace('.', "_")
}

// ---------------------------------------------------------------------------------------------
// Python values

/// A decoded JSON value as Python's `json.loads` gives it: ints and floats are distinct types.
/// (`PartialEq` is structural, for tests; Python's `==` is [`py_eq`].)
#[derive(Debug, Clone, PartialEq)]
enum Py {
    None,
    Bool(bool),
    Int(i128),
    /// An int too large for i128 (Python's ints have no bound): its decimal digits and sign.
    BigInt(String),
    Float(f64),
    Str(String),
    List(Vec<Py>),
    Dict(Vec<(String, Py)>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PyType {
    None,
    Bool,
    Int,
    Float,
    Str,
    List,
    Dict,
    /// Python's `set`, the type BFCL maps Java's `Set` to; no JSON value has it.
    Set,
}

/// BFCL's checker raised instead of judging (BFCL's whole evaluation stops there): why.
#[derive(Debug, Clone, PartialEq)]
struct Raised(String);

impl Py {
    fn from_json(v: &Value) -> Py {
        match v {
            Value::Null => Py::None,
            Value::Bool(b) => Py::Bool(*b),
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Py::Int(i128::from(i))
                } else if let Some(u) = n.as_u64() {
                    Py::Int(i128::from(u))
                } else {
                    Py::Float(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            Value::String(s) => Py::Str(s.clone()),
            Value::Array(a) => Py::List(a.iter().map(Py::from_json).collect()),
            Value::Object(o) => Py::Dict(
                o.iter()
                    .map(|(k, v)| (k.clone(), Py::from_json(v)))
                    .collect(),
            ),
        }
    }

    /// An int from `int(str)`'s digits (see [`python::int`]).
    fn int_from_digits(digits: &str) -> Py {
        digits
            .parse::<i128>()
            .map_or_else(|_| Py::BigInt(digits.to_owned()), Py::Int)
    }

    /// `int(s)`, raising where Python does.
    fn int_of(s: &str) -> Result<Py, Raised> {
        python::int(s)
            .map(|d| Py::int_from_digits(&d))
            .ok_or_else(|| Raised(format!("int({s:?}) raises ValueError")))
    }

    /// `float(s)`, raising where Python does.
    fn float_of(s: &str) -> Result<Py, Raised> {
        python::float(s)
            .map(Py::Float)
            .ok_or_else(|| Raised(format!("float({s:?}) raises ValueError")))
    }

    /// `d[key] = value`: a new key goes last, an existing one keeps its place.
    fn dict_set(items: &mut Vec<(String, Py)>, key: String, value: Py) {
        match items.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => *v = value,
            None => items.push((key, value)),
        }
    }

    fn type_of(&self) -> PyType {
        match self {
            Py::None => PyType::None,
            Py::Bool(_) => PyType::Bool,
            Py::Int(_) | Py::BigInt(_) => PyType::Int,
            Py::Float(_) => PyType::Float,
            Py::Str(_) => PyType::Str,
            Py::List(_) => PyType::List,
            Py::Dict(_) => PyType::Dict,
        }
    }

    fn is_empty_str(&self) -> bool {
        matches!(self, Py::Str(s) if s.is_empty())
    }

    fn get(&self, key: &str) -> Option<&Py> {
        match self {
            Py::Dict(items) => items.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Python's `len()`, for the values BFCL takes it of (None for types without one, where
    /// Python raises).
    fn len(&self) -> Option<usize> {
        match self {
            Py::Str(s) => Some(s.chars().count()),
            Py::List(l) => Some(l.len()),
            Py::Dict(d) => Some(d.len()),
            _ => None,
        }
    }

    /// `x[i]` for a list or a string (a one-character string), as BFCL indexes answers.
    fn index(&self, i: usize) -> Option<Py> {
        match self {
            Py::List(l) => l.get(i).cloned(),
            Py::Str(s) => s.chars().nth(i).map(|c| Py::Str(c.to_string())),
            _ => None,
        }
    }

    /// Python's `needle in self`: element equality for a list, substring for a string, key for
    /// a dict; None where Python raises.
    fn contains(&self, needle: &Py) -> Option<bool> {
        match self {
            Py::List(l) => Some(l.iter().any(|x| py_eq(needle, x))),
            Py::Str(s) => match needle {
                Py::Str(n) => Some(s.contains(n.as_str())),
                _ => None,
            },
            Py::Dict(d) => match needle {
                Py::Str(n) => Some(d.iter().any(|(k, _)| k == n)),
                _ => Some(false),
            },
            _ => None,
        }
    }
}

/// An int-like value (bool, int) as an exact integer, when it fits i128.
fn as_integer(v: &Py) -> Option<i128> {
    match v {
        Py::Bool(b) => Some(i128::from(*b)),
        Py::Int(i) => Some(*i),
        _ => None,
    }
}

/// Python compares an int with a float exactly (`2**53 + 1 != 2.0**53`), not in floating point.
fn int_eq_float(i: &Py, f: f64) -> bool {
    if !f.is_finite() || f.fract() != 0.0 {
        return false;
    }
    match i {
        Py::BigInt(digits) => format!("{f:.0}") == *digits,
        _ => as_integer(i).is_some_and(|i| f.abs() < 2f64.powi(127) && f as i128 == i),
    }
}

/// Python's `==` on JSON-decoded values.
fn py_eq(a: &Py, b: &Py) -> bool {
    match (a, b) {
        (Py::None, Py::None) => true,
        (Py::BigInt(x), Py::BigInt(y)) => x == y,
        (Py::Float(x), Py::Float(y)) => x == y,
        (Py::Float(f), i) | (i, Py::Float(f)) => int_eq_float(i, *f),
        (Py::Int(_) | Py::Bool(_), Py::Int(_) | Py::Bool(_)) => as_integer(a) == as_integer(b),
        (Py::Str(x), Py::Str(y)) => x == y,
        (Py::List(x), Py::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq(p, q))
        }
        (Py::Dict(x), Py::Dict(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| b.get(k).is_some_and(|w| py_eq(v, w)))
        }
        _ => false,
    }
}

fn py_in(needle: &Py, list: &[Py]) -> bool {
    list.iter().any(|x| py_eq(needle, x))
}

/// BFCL's `standardize_string`: drop every character of `[ ,./-_*^]`, lower-case, and turn
/// single quotes into double quotes. Exactly that set: other punctuation and whitespace stay.
fn standardize_string(s: &str) -> String {
    let kept: String = s
        .chars()
        .filter(|c| !matches!(c, ' ' | ',' | '.' | '/' | '-' | '_' | '*' | '^'))
        .collect();
    kept.to_lowercase().replace('\'', "\"")
}

fn standardized(v: &Py) -> Py {
    match v {
        Py::Str(s) => Py::Str(standardize_string(s)),
        other => other.clone(),
    }
}

// ---------------------------------------------------------------------------------------------
// Function docs

/// The language BFCL judges a category in (`is_java`, `is_js` of bfcl_eval/utils.py): it
/// decides the type mapping and whether values arrive as strings to convert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BfclLanguage {
    Python,
    Java,
    JavaScript,
}

impl BfclLanguage {
    pub fn of_category(category: &str) -> BfclLanguage {
        if category.contains("javascript") {
            BfclLanguage::JavaScript
        } else if category.contains("java") {
            BfclLanguage::Java
        } else {
            BfclLanguage::Python
        }
    }

    /// The checker's mapping from a doc's type name to the Python type of the value.
    fn python_type(self, name: &str) -> Option<PyType> {
        match self {
            BfclLanguage::Python => python_type(name),
            BfclLanguage::Java => java::python_type(name),
            BfclLanguage::JavaScript => js::python_type(name),
        }
    }

    /// Whether the checker reads `items.type` for a parameter of this type
    /// (`PYTHON_NESTED_TYPE_CHECK_LIST`, `NESTED_CONVERSION_TYPE_LIST`).
    fn has_item_type(self, name: &str) -> bool {
        match self {
            BfclLanguage::Python => matches!(name, "array" | "tuple"),
            _ => matches!(name, "Array" | "ArrayList" | "array"),
        }
    }
}

/// The part of a BFCL function doc the checker reads.
struct FunctionDoc {
    name: String,
    required: Vec<String>,
    /// Parameter → (type name, item type name where the checker reads one).
    params: Vec<(String, String, Option<String>)>,
}

/// `PYTHON_TYPE_MAPPING` of the checker.
fn python_type(name: &str) -> Option<PyType> {
    Some(match name {
        "string" | "any" => PyType::Str,
        "integer" => PyType::Int,
        "float" => PyType::Float,
        "boolean" => PyType::Bool,
        "array" | "tuple" => PyType::List,
        "dict" => PyType::Dict,
        _ => return None,
    })
}

impl FunctionDoc {
    fn parse(doc: &Value, language: BfclLanguage) -> Result<FunctionDoc, String> {
        let name = doc
            .get("name")
            .and_then(Value::as_str)
            .ok_or("a function has no `name`")?;
        let parameters = doc
            .get("parameters")
            .ok_or_else(|| format!("`{name}` has no `parameters`"))?;
        let required = parameters
            .get("required")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                format!("`{name}` has no `parameters.required` list (BFCL's checker reads it)")
            })?
            .iter()
            .filter_map(|r| r.as_str().map(str::to_owned))
            .collect();
        let props = parameters
            .get("properties")
            .and_then(Value::as_object)
            .ok_or_else(|| format!("`{name}` has no `parameters.properties`"))?;
        let known = |ty: &str, what: &str| -> Result<(), String> {
            if language.python_type(ty).is_none() {
                return Err(format!(
                    "{what} type `{ty}`, which BFCL's {language:?} checker does not know"
                ));
            }
            // A converter that raises on every string it is given would leave no verdict.
            if language == BfclLanguage::Java && java::unimplemented(ty) {
                return Err(format!(
                    "{what} type `{ty}`, which BFCL's Java converter does not implement"
                ));
            }
            Ok(())
        };
        let mut params = Vec::new();
        for (p, detail) in props {
            let ty = detail
                .get("type")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("`{name}.{p}` has no `type`"))?;
            known(ty, &format!("`{name}.{p}` has"))?;
            let item = if language.has_item_type(ty) {
                let item = detail
                    .get("items")
                    .and_then(|i| i.get("type"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("`{name}.{p}` is an array without `items.type`"))?;
                known(item, &format!("`{name}.{p}` has items of"))?;
                Some(item.to_owned())
            } else {
                None
            };
            params.push((p.clone(), ty.to_owned(), item));
        }
        Ok(FunctionDoc {
            name: name.to_owned(),
            required,
            params,
        })
    }

    fn param(&self, name: &str) -> Option<(&str, Option<&str>)> {
        self.params
            .iter()
            .find(|(p, _, _)| p == name)
            .map(|(_, t, i)| (t.as_str(), i.as_deref()))
    }
}

// ---------------------------------------------------------------------------------------------
// The checker

/// BFCL's outcome on a model turn, with the third case its code has: it raised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BfclVerdict {
    Pass,
    /// BFCL's checker judges the reply wrong: why (BFCL's error, paraphrased).
    Fail(String),
    /// BFCL's checker raises an exception on this reply, which stops BFCL's evaluation.
    Raises(String),
}

/// Why a reply fails: BFCL judged it, or BFCL's checker raised.
#[derive(Debug)]
enum Fail {
    Judged(String),
    Raised(String),
}

impl From<String> for Fail {
    fn from(why: String) -> Fail {
        Fail::Judged(why)
    }
}

impl From<&str> for Fail {
    fn from(why: &str) -> Fail {
        Fail::Judged(why.to_owned())
    }
}

impl From<Raised> for Fail {
    fn from(r: Raised) -> Fail {
        Fail::Raised(r.0)
    }
}

impl Fail {
    fn context(self, prefix: &str) -> Fail {
        match self {
            Fail::Judged(why) => Fail::Judged(format!("{prefix}{why}")),
            Fail::Raised(why) => Fail::Raised(format!("{prefix}{why}")),
        }
    }
}

/// BFCL's verdict on a model turn as a pass or the reason it fails. Where BFCL's own checker
/// raises (it then judges nothing and stops), the trial fails and the reason says so.
pub fn judge(expect: &BfclExpect, produced: &[ToolCall]) -> Result<(), String> {
    match verdict(expect, produced) {
        BfclVerdict::Pass => Ok(()),
        BfclVerdict::Fail(why) => Err(why),
        BfclVerdict::Raises(why) => Err(format!(
            "BFCL's checker raises on this reply, so BFCL gives no verdict; scored a fail: {why}"
        )),
    }
}

/// BFCL's outcome on a model turn, telling a failure from BFCL's checker raising.
pub fn verdict(expect: &BfclExpect, produced: &[ToolCall]) -> BfclVerdict {
    let result: Verdict = match expect.checker {
        BfclChecker::Irrelevance => match decode(produced) {
            Some(calls) if !calls.is_empty() => {
                Err("BFCL: the reply decodes to a function call; this case expects none".into())
            }
            _ => Ok(()),
        },
        BfclChecker::Relevance => match decode(produced) {
            Some(calls) if !calls.is_empty() => Ok(()),
            _ => Err("BFCL: the reply does not decode to a function call".into()),
        },
        BfclChecker::Simple | BfclChecker::Multiple | BfclChecker::Parallel => {
            if produced.iter().any(ToolCall::arguments_not_json) {
                Err("BFCL: the arguments do not decode (not JSON)".into())
            } else if let Some(calls) = decode(produced) {
                ast_checker(expect, &calls)
            } else {
                Err("BFCL: the reply is not in function-calling format (arguments are not an object)".into())
            }
        }
    };
    match result {
        Ok(()) => BfclVerdict::Pass,
        Err(Fail::Judged(why)) => BfclVerdict::Fail(why),
        Err(Fail::Raised(why)) => BfclVerdict::Raises(why),
    }
}

/// `decode_ast` then `is_function_calling_format_output`/`is_empty_output` for an OpenAI FC
/// reply: None when a call's arguments are not a JSON object (not function-calling format);
/// otherwise the calls. A text reply has no calls.
fn decode(produced: &[ToolCall]) -> Option<Vec<(String, Py)>> {
    let mut calls = Vec::with_capacity(produced.len());
    for call in produced {
        if call.arguments_not_json() || !call.arguments.is_object() {
            return None;
        }
        calls.push((call.name.clone(), Py::from_json(&call.arguments)));
    }
    Some(calls)
}

type Verdict = Result<(), Fail>;

fn ast_checker(expect: &BfclExpect, calls: &[(String, Py)]) -> Verdict {
    let language = BfclLanguage::of_category(&expect.category);
    let answers: Vec<(String, Py)> = expect
        .answer
        .iter()
        .filter_map(|a| {
            a.as_object()?
                .iter()
                .next()
                .map(|(k, v)| (k.clone(), Py::from_json(v)))
        })
        .collect();
    let find = |name: &str| -> Result<FunctionDoc, String> {
        let doc = expect
            .functions
            .iter()
            .find(|f| f.get("name").and_then(Value::as_str) == Some(name))
            .ok_or_else(|| format!("no description of `{name}`"))?;
        FunctionDoc::parse(doc, language)
    };
    match expect.checker {
        BfclChecker::Parallel => {
            if calls.len() != answers.len() {
                return Err(wrong_count(answers.len(), calls.len()));
            }
            let mut matched: Vec<usize> = Vec::new();
            for (i, (name, params)) in answers.iter().enumerate() {
                let doc = find(name)?;
                let mut last: Verdict = Err("no call left to pair".into());
                for (index, call) in calls.iter().enumerate() {
                    if matched.contains(&index) {
                        continue;
                    }
                    last = simple_function_checker(&doc, call, params, language);
                    match last {
                        Ok(()) => {
                            matched.push(index);
                            break;
                        }
                        // BFCL's exception escapes the pairing loop.
                        Err(Fail::Raised(_)) => return last,
                        Err(Fail::Judged(_)) => {}
                    }
                }
                if let Err(e) = last {
                    return Err(e.context(&format!(
                        "BFCL: no call matches expected call {i} ({}): ",
                        openai_name(name)
                    )));
                }
            }
            Ok(())
        }
        BfclChecker::Multiple => {
            if calls.len() != answers.len() {
                return Err(wrong_count(answers.len(), calls.len()));
            }
            let (name, params) = &answers[0];
            simple_function_checker(&find(name)?, &calls[0], params, language)
                .map_err(|e| e.context("BFCL: "))
        }
        _ => {
            if calls.len() != 1 {
                return Err(wrong_count(1, calls.len()));
            }
            let doc = expect.functions.first().ok_or("no function description")?;
            let (_, params) = answers.first().ok_or("no answer")?;
            simple_function_checker(
                &FunctionDoc::parse(doc, language)?,
                &calls[0],
                params,
                language,
            )
            .map_err(|e| e.context("BFCL: "))
        }
    }
}

fn wrong_count(want: usize, got: usize) -> Fail {
    Fail::Judged(format!(
        "BFCL: wrong number of functions (expected {want}, got {got})"
    ))
}

/// The value the checker compares, with the Python types it expects: as sent for Python; for
/// Java and JavaScript the string the model sent, through BFCL's converter.
fn checked_value(
    language: BfclLanguage,
    ty: &str,
    item: Option<&str>,
    value: &Py,
) -> Result<(Py, PyType, Option<PyType>), Fail> {
    let expected = language.python_type(ty).ok_or("unknown type")?;
    let nested = item.and_then(|i| language.python_type(i));
    if language == BfclLanguage::Python {
        // "Allow python auto conversion from int to float": top level only.
        if ty == "float"
            && let Py::Int(i) = value
        {
            return Ok((Py::Float(*i as f64), expected, nested));
        }
        return Ok((value.clone(), expected, nested));
    }
    let Py::Str(sent) = value else {
        return Err(format!(
            "incorrect type (got {:?}; a {language:?} parameter is sent as a string)",
            value.type_of()
        )
        .into());
    };
    let converted = match language {
        BfclLanguage::Java => java::convert(sent, ty, item),
        _ => js::convert(sent, ty, item),
    }?;
    Ok((converted, expected, nested))
}

fn simple_function_checker(
    doc: &FunctionDoc,
    call: &(String, Py),
    answer: &Py,
    language: BfclLanguage,
) -> Verdict {
    let func_name = openai_name(&doc.name);
    if call.0 != func_name {
        return Err(format!(
            "function name `{func_name}` not found in the reply (got `{}`)",
            call.0
        )
        .into());
    }
    let Py::Dict(model_params) = &call.1 else {
        return Err("arguments are not an object".into());
    };
    for p in &doc.required {
        if !model_params.iter().any(|(k, _)| k == p) {
            return Err(format!("missing required parameter `{p}`").into());
        }
    }
    for (param, value) in model_params {
        let (Some((ty, item)), Some(allowed)) = (doc.param(param), answer.get(param)) else {
            return Err(format!("unexpected parameter `{param}`").into());
        };
        let Py::List(allowed) = allowed else {
            return Err(format!("allowed values of `{param}` are not a list").into());
        };
        let in_param = |e: Fail| e.context(&format!("`{param}`: "));
        let (value, expected, nested) =
            checked_value(language, ty, item, value).map_err(in_param)?;
        let is_variable =
            type_checker(&value, allowed, expected, nested).map_err(|e| in_param(e.into()))?;
        if !is_variable {
            let checked = if expected == PyType::Dict {
                Some(dict_checker(&value, allowed))
            } else if expected == PyType::List && nested == Some(PyType::Dict) {
                Some(list_dict_checker(&value, allowed))
            } else if expected == PyType::Str {
                Some(string_checker(&value, allowed))
            } else if expected == PyType::List {
                Some(list_checker(&value, allowed))
            } else {
                None
            };
            if let Some(result) = checked {
                result.map_err(in_param)?;
                continue;
            }
        }
        if !py_in(&value, allowed) {
            return Err(format!("`{param}`: value not among the allowed ones").into());
        }
    }
    if let Py::Dict(answer_params) = answer {
        for (param, allowed) in answer_params {
            let omittable = allowed.contains(&Py::Str(String::new())) == Some(true);
            if !model_params.iter().any(|(k, _)| k == param) && !omittable {
                return Err(format!("parameter `{param}` not provided and not optional").into());
            }
        }
    }
    Ok(())
}

fn possible_answer_type(allowed: &[Py]) -> Option<PyType> {
    allowed.iter().find(|a| !a.is_empty_str()).map(Py::type_of)
}

/// `type_checker`: Ok(is_variable) or the type error.
fn type_checker(
    value: &Py,
    allowed: &[Py],
    expected: PyType,
    nested: Option<PyType>,
) -> Result<bool, String> {
    let answer_type = possible_answer_type(allowed);
    let is_variable = answer_type.is_some_and(|t| t != expected);
    let mut valid = true;
    if value.type_of() == expected {
        let Some(nested) = nested else {
            return Ok(is_variable);
        };
        for item in allowed {
            let mut flag = true;
            if let (Py::List(item_allowed), Py::List(values)) = (item, value) {
                for v in values {
                    if type_checker(v, item_allowed, nested, None).is_err() {
                        flag = false;
                        break;
                    }
                }
            }
            if flag {
                return Ok(is_variable);
            }
        }
        // BFCL marks the result invalid here and never resets it, even when the value's type
        // matches the answers' type below.
        valid = false;
    }
    if answer_type.is_some_and(|t| t == value.type_of()) && valid {
        return Ok(true);
    }
    // The right container with a wrong element: name the element types, not "List, List".
    if let (Some(nested), Py::List(items)) = (nested, value)
        && value.type_of() == expected
        && let Some((i, wrong)) = items
            .iter()
            .enumerate()
            .find(|(_, v)| v.type_of() != nested)
    {
        return Err(format!(
            "incorrect element type (got {:?} of which element {i} is {:?}, expected {expected:?} of {nested:?})",
            expected,
            wrong.type_of()
        ));
    }
    Err(format!(
        "incorrect type (got {:?}, expected {expected:?})",
        value.type_of()
    ))
}

fn raised(what: &str) -> Fail {
    Fail::Raised(format!("BFCL's checker raises a TypeError: {what}"))
}

fn string_checker(value: &Py, allowed: &[Py]) -> Verdict {
    let Py::Str(s) = value else {
        return Err("not a string".into());
    };
    let wanted = standardize_string(s);
    let ok = allowed
        .iter()
        .any(|a| matches!(a, Py::Str(x) if standardize_string(x) == wanted));
    if ok {
        Ok(())
    } else {
        Err(format!("string {s:?} not among the allowed ones after BFCL's normalisation").into())
    }
}

fn list_checker(value: &Py, allowed: &[Py]) -> Verdict {
    let Py::List(items) = value else {
        return Err("not a list".into());
    };
    let model = Py::List(items.iter().map(standardized).collect());
    let mut options = Vec::with_capacity(allowed.len());
    for a in allowed {
        let n = a
            .len()
            .ok_or_else(|| raised("len() of an allowed value that has none"))?;
        options.push(Py::List(
            (0..n)
                .filter_map(|j| a.index(j))
                .map(|x| standardized(&x))
                .collect(),
        ));
    }
    if py_in(&model, &options) {
        Ok(())
    } else {
        Err("list not among the allowed ones".into())
    }
}

fn dict_checker(value: &Py, allowed: &[Py]) -> Verdict {
    let Py::Dict(model) = value else {
        return Err(raised("dict_checker on a value that is not a dict"));
    };
    let mut last: Verdict = Err("no allowed dictionary".into());
    for answer in allowed {
        if answer.is_empty_str() {
            continue;
        }
        let Py::Dict(answer_items) = answer else {
            return Err(raised(
                "dict_checker on an allowed value that is not a dict",
            ));
        };
        last = Ok(());
        for (key, v) in model {
            let Some(options) = answer.get(key) else {
                last = Err(format!("unexpected dict key `{key}`").into());
                break;
            };
            let n = options
                .len()
                .ok_or_else(|| raised("len() of an allowed dict value that has none"))?;
            let options: Vec<Py> = (0..n)
                .filter_map(|j| options.index(j))
                .map(|x| standardized(&x))
                .collect();
            if !py_in(&standardized(v), &options) {
                last = Err(format!("invalid value for dict key `{key}`").into());
                break;
            }
        }
        if last.is_ok() {
            for (key, options) in answer_items {
                let omittable = options.contains(&Py::Str(String::new()));
                if !model.iter().any(|(k, _)| k == key) && omittable != Some(true) {
                    last = Err(format!("missing dict key `{key}`").into());
                    break;
                }
            }
        }
        if last.is_ok() {
            return Ok(());
        }
    }
    last
}

fn list_dict_checker(value: &Py, allowed: &[Py]) -> Verdict {
    let Py::List(model) = value else {
        return Err("not a list".into());
    };
    let mut last: Verdict = Err("no allowed list".into());
    for answer in allowed {
        let Some(n) = answer.len() else {
            return Err(raised("len() of an allowed value that has none"));
        };
        if n != model.len() {
            last = Err("wrong number of dictionaries in the list".into());
            continue;
        }
        let mut flag = true;
        for (i, d) in model.iter().enumerate() {
            let Some(expected) = answer.index(i) else {
                return Err(raised("indexing an allowed list of dictionaries"));
            };
            last = dict_checker(d, &[expected]);
            if matches!(last, Err(Fail::Raised(_))) {
                return last;
            }
            if last.is_err() {
                flag = false;
                break;
            }
        }
        if flag {
            return Ok(());
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, args: &str) -> ToolCall {
        ToolCall::from_encoded_arguments(None, name.into(), args)
    }

    fn expect(checker: BfclChecker, functions: Value, answer: Value) -> BfclExpect {
        BfclExpect {
            checker,
            category: "test".into(),
            functions: functions.as_array().cloned().unwrap_or_default(),
            answer: answer.as_array().cloned().unwrap_or_default(),
        }
    }

    fn area() -> BfclExpect {
        expect(
            BfclChecker::Simple,
            json!([{"name": "geo.area", "parameters": {"type": "dict", "required": ["base"], "properties": {
                "base": {"type": "float"}, "unit": {"type": "string"}, "sides": {"type": "array", "items": {"type": "float"}},
                "count": {"type": "integer"}}}}]),
            json!([{"geo.area": {"base": [10.0], "unit": ["Square meters", ""], "sides": [[1.0, 2.0]], "count": [3, ""]}}]),
        )
    }

    fn ok(e: &BfclExpect, calls: &[ToolCall]) -> bool {
        judge(e, calls).is_ok()
    }

    #[test]
    fn bfcl_rules_on_one_call() {
        let e = area();
        let sides = r#""sides":[1.0,2.0]"#;
        assert!(ok(
            &e,
            &[call("geo_area", &format!(r#"{{"base":10.0,{sides}}}"#))]
        ));
        // The name the model sees has `_` for `.`; the dotted one is not accepted.
        assert!(!ok(
            &e,
            &[call("geo.area", &format!(r#"{{"base":10.0,{sides}}}"#))]
        ));
        // int for float at the top level only.
        assert!(ok(
            &e,
            &[call("geo_area", &format!(r#"{{"base":10,{sides}}}"#))]
        ));
        assert!(!ok(
            &e,
            &[call("geo_area", r#"{"base":10.0,"sides":[1,2]}"#)]
        ));
        // float for int never.
        assert!(!ok(
            &e,
            &[call(
                "geo_area",
                &format!(r#"{{"base":10.0,{sides},"count":3.0}}"#)
            )]
        ));
        // Strings after BFCL's normalisation: case, spaces and `_` dropped, but not `!`.
        assert!(ok(
            &e,
            &[call(
                "geo_area",
                &format!(r#"{{"base":10,{sides},"unit":"square_METERS"}}"#)
            )]
        ));
        assert!(!ok(
            &e,
            &[call(
                "geo_area",
                &format!(r#"{{"base":10,{sides},"unit":"square meters!"}}"#)
            )]
        ));
        // `""` sent for a string parameter whose answers include `""` passes: BFCL compares it
        // with the standardized answers, and `""` is one of them. Not for an integer.
        assert!(ok(
            &e,
            &[call(
                "geo_area",
                &format!(r#"{{"base":10,{sides},"unit":""}}"#)
            )]
        ));
        assert!(!ok(
            &e,
            &[call(
                "geo_area",
                &format!(r#"{{"base":10,{sides},"count":""}}"#)
            )]
        ));
        // `sides` has no `""`: it must be sent.
        assert!(!ok(&e, &[call("geo_area", r#"{"base":10}"#)]));
        // Exactly one call.
        let good = call("geo_area", &format!(r#"{{"base":10,{sides}}}"#));
        assert!(!ok(&e, &[good.clone(), good]));
        assert!(!ok(&e, &[]));
        assert!(!ok(&e, &[call("geo_area", "{not json")]));
    }

    #[test]
    fn a_list_with_a_wrong_element_names_the_element_types() {
        // `sides` is a list of floats; sent as ints it fails, and the detail says which
        // element and which types (it read "got List, expected List").
        let e = area();
        let why = judge(&e, &[call("geo_area", r#"{"base":10.0,"sides":[1.0,2]}"#)])
            .expect_err("an int element in a float list fails");
        let text = format!("{why:?}");
        assert!(
            text.contains("incorrect element type (got List of which element 1 is Int, expected List of Float)"),
            "{text}"
        );
    }

    #[test]
    fn optional_list_accepts_the_empty_list() {
        // `""` among a list parameter's answers becomes `[]` in BFCL's list_checker.
        let e = expect(
            BfclChecker::Simple,
            json!([{"name": "f", "parameters": {"type": "dict", "required": [], "properties": {"xs": {"type": "array", "items": {"type": "float"}}}}}]),
            json!([{"f": {"xs": [[1.5], ""]}}]),
        );
        assert!(ok(&e, &[call("f", r#"{"xs":[]}"#)]));
        // With `""` present the nested type check is skipped: an int in a float array passes.
        let e2 = expect(
            BfclChecker::Simple,
            json!([{"name": "f", "parameters": {"type": "dict", "required": [], "properties": {"xs": {"type": "array", "items": {"type": "float"}}}}}]),
            json!([{"f": {"xs": [[1.0], ""]}}]),
        );
        assert!(ok(&e2, &[call("f", r#"{"xs":[1]}"#)]));
    }

    #[test]
    fn parallel_pairs_greedily_in_any_order() {
        let e = expect(
            BfclChecker::Parallel,
            json!([{"name": "f", "parameters": {"type": "dict", "required": ["x"], "properties": {"x": {"type": "integer"}}}}]),
            json!([{"f": {"x": [1, 2]}}, {"f": {"x": [1]}}]),
        );
        // Greedy: answer 0 takes the first call that fits (x=1), then answer 1 finds only x=2.
        assert!(!ok(&e, &[call("f", r#"{"x":1}"#), call("f", r#"{"x":2}"#)]));
        assert!(ok(&e, &[call("f", r#"{"x":2}"#), call("f", r#"{"x":1}"#)]));
    }

    #[test]
    fn relevance_decoding() {
        let irr = expect(BfclChecker::Irrelevance, json!([]), json!([]));
        assert!(ok(&irr, &[]));
        assert!(ok(&irr, &[call("f", "{oops")]));
        assert!(ok(&irr, &[call("f", "[1]")]));
        assert!(!ok(&irr, &[call("f", "{}")]));
        let rel = expect(BfclChecker::Relevance, json!([]), json!([]));
        assert!(ok(&rel, &[call("anything", "{}")]));
        assert!(!ok(&rel, &[]));
        assert!(!ok(&rel, &[call("f", "{oops")]));
    }

    #[test]
    fn java_values_arrive_as_source_code() {
        let mut e = expect(
            BfclChecker::Simple,
            json!([{"name": "Repo.find", "parameters": {"type": "dict", "required": ["ids", "limit"], "properties": {
                "ids": {"type": "ArrayList", "items": {"type": "long"}}, "limit": {"type": "integer"},
                "strict": {"type": "boolean"}}}}]),
            json!([{"Repo.find": {"ids": [[101, 202]], "limit": [5], "strict": [true, ""]}}]),
        );
        e.category = "simple_java".into();
        let ids = r#""ids":"new ArrayList<>(Arrays.asList(101L, 202L))""#;
        assert!(ok(
            &e,
            &[call("Repo_find", &format!(r#"{{{ids},"limit":"5"}}"#))]
        ));
        assert!(ok(
            &e,
            &[call(
                "Repo_find",
                &format!(r#"{{{ids},"limit":"5","strict":"true"}}"#)
            )]
        ));
        // A JSON number is not Java source: BFCL wants every value as a string.
        assert!(!ok(
            &e,
            &[call("Repo_find", &format!(r#"{{{ids},"limit":5}}"#))]
        ));
        // A long without its `L` stays a string and matches nothing.
        assert!(!ok(
            &e,
            &[call(
                "Repo_find",
                r#"{"ids":"new ArrayList<>(Arrays.asList(101, 202))","limit":"5"}"#
            )]
        ));
        // Digits past Python's int() limit: BFCL's converter raises, so no verdict.
        let huge = "9".repeat(4301);
        assert!(matches!(
            verdict(
                &e,
                &[call("Repo_find", &format!(r#"{{{ids},"limit":"{huge}"}}"#))]
            ),
            BfclVerdict::Raises(_)
        ));
        // The same doc read as Python: `ArrayList` is a type BFCL's Python checker lacks.
        e.category = "simple_python".into();
        assert!(e.validate().is_err());
    }

    #[test]
    fn javascript_values_arrive_as_source_code() {
        let e = BfclExpect {
            category: "simple_javascript".into(),
            ..expect(
                BfclChecker::Simple,
                json!([{"name": "plot", "parameters": {"type": "dict", "required": ["points", "opts"], "properties": {
                    "points": {"type": "array", "items": {"type": "float"}}, "opts": {"type": "dict"}}}}]),
                json!([{"plot": {"points": [[1.0, 2.5]], "opts": [{"color": ["red"]}]}}]),
            )
        };
        assert!(ok(
            &e,
            &[call(
                "plot",
                r#"{"points":"[1, 2.5]","opts":"{color: 'red'}"}"#
            )]
        ));
        assert!(ok(
            &e,
            &[call(
                "plot",
                r#"{"points":"new Array(1.0, 2.5)","opts":"{\"color\": \"red\"}"}"#
            )]
        ));
        assert!(!ok(
            &e,
            &[call(
                "plot",
                r#"{"points":"[1, 2.5]","opts":"{color: 'blue'}"}"#
            )]
        ));
    }

    #[test]
    fn standardize_is_exactly_bfcls() {
        assert_eq!(standardize_string("April 1, 2024"), "april12024");
        assert_eq!(standardize_string("a_b-c/d.e*f^g'h"), "abcdefg\"h");
        assert_eq!(standardize_string("a\tb!?"), "a\tb!?");
    }
}
