//! `bfcl_eval/eval_checker/ast_eval/type_convertor/java_type_converter.py`, line for line:
//! how BFCL turns the string a model sends for a Java parameter (`"42L"`,
//! `new ArrayList<>(Arrays.asList(1, 2))`) into the value it compares with the answers.
//! Where BFCL's converter "defaults to string" this does too; where it raises, this says so
//! ([`Raised`]), because BFCL then has no verdict at all.

use std::sync::LazyLock;

use regex::Regex;

use super::python::{self, pattern};
use super::{Py, Raised};

/// `JAVA_TYPE_CONVERSION` of bfcl_eval/constants/type_mappings.py: the Python type each Java
/// type's converted value must have. `Set` (Python `set`) has no JSON counterpart; its
/// converter raises anyway.
pub(super) fn python_type(java: &str) -> Option<super::PyType> {
    use super::PyType::{Bool, Dict, Float, Int, List, Set, Str};
    Some(match java {
        "byte" | "short" | "integer" | "long" => Int,
        "float" | "double" => Float,
        "boolean" => Bool,
        "char" | "String" | "any" => Str,
        "Array" | "ArrayList" | "Queue" | "Stack" => List,
        "HashMap" | "Hashtable" => Dict,
        "Set" => Set,
        _ => return Option::None,
    })
}

/// Java types whose converter raises `NotImplementedError` on any string.
pub(super) fn unimplemented(java: &str) -> bool {
    matches!(java, "Set" | "Hashtable" | "Queue" | "Stack")
}

struct Patterns {
    int: Regex,
    float: Regex,
    double: Regex,
    long: Regex,
    float_suffix: Regex,
    long_suffix: Regex,
    as_list: Regex,
    add_block: Regex,
    add: Regex,
    empty_list: Regex,
    array: Regex,
    hashmap: Regex,
    put: Regex,
    empty_map: Regex,
}

static P: LazyLock<Patterns> = LazyLock::new(|| Patterns {
    int: pattern(r"^-?{d}+{end}"),
    float: pattern(r"^-?{d}+(\.{d}+)?([eE][+-]?{d}+)?[fF]{end}"),
    double: pattern(r"^-?{d}+(\.{d}+)?([eE][+-]?{d}+)?{end}"),
    long: pattern(r"^-?{d}+[lL]{end}"),
    float_suffix: pattern(r"[fF](\n?\z)"),
    long_suffix: pattern(r"[lL](\n?\z)"),
    as_list: pattern(r"new{s}+ArrayList<{w}*>\(Arrays\.asList\((.+?)\)\)"),
    add_block: pattern(r"(?s)new{s}+ArrayList<{w}*>\(\){s}*\{\{{s}*(.+?){s}*\}\}"),
    add: pattern(r"add\((.+?)\)"),
    empty_list: pattern(r"new{s}+ArrayList<{w}*>\(\)"),
    array: pattern(r"new{s}+{w}+\[\]{s}*\{(.*?)\}"),
    hashmap: pattern(r"(?s)new{s}+HashMap<.*?>{s}*\(\){s}*\{{s}*\{?{s}*(.*?){s}*\}?{s}*\}"),
    put: pattern(r#"put\("(.*?)",{s}*(.*?)\)"#),
    empty_map: pattern(r"new{s}+HashMap<.*?>{s}*\(\)"),
});

/// `java_type_converter(value, expected_type, nested_type)`.
pub(super) fn convert(value: &str, expected: &str, nested: Option<&str>) -> Result<Py, Raised> {
    let p = &*P;
    let keep = || Ok(Py::Str(value.to_owned()));
    match expected {
        "byte" | "short" | "integer" => {
            if p.int.is_match(value) {
                Py::int_of(value)
            } else {
                keep()
            }
        }
        "float" => {
            if p.float.is_match(value) {
                Py::float_of(&p.float_suffix.replace_all(value, "$1"))
            } else {
                keep()
            }
        }
        "double" => {
            if p.double.is_match(value) {
                Py::float_of(value)
            } else {
                keep()
            }
        }
        "long" => {
            if p.long.is_match(value) {
                Py::int_of(&p.long_suffix.replace_all(value, "$1"))
            } else {
                keep()
            }
        }
        "boolean" => match value {
            "true" => Ok(Py::Bool(true)),
            "false" => Ok(Py::Bool(false)),
            _ => keep(),
        },
        // BFCL's pattern `^\'.$\'` needs a quote after the end of the string, so it never
        // matches and a char is always kept as sent.
        "char" | "String" | "any" => keep(),
        "Array" => parse_array(value, nested),
        "ArrayList" => parse_arraylist(value, nested),
        "HashMap" => parse_hashmap(value),
        t if unimplemented(t) => Err(Raised(format!(
            "BFCL's Java converter raises NotImplementedError for {t}"
        ))),
        t => Err(Raised(format!(
            "BFCL's Java converter: unsupported type {t}"
        ))),
    }
}

/// An element of an ArrayList: quotes dropped for char and String, else converted.
fn list_element(element: &str, nested: Option<&str>) -> Result<Py, Raised> {
    match nested {
        Some("char") | Some("String") => Ok(Py::Str(python::inner(element))),
        Some(t) if !t.is_empty() => convert(element, t, None),
        _ => parse_value(element),
    }
}

fn parse_arraylist(input: &str, nested: Option<&str>) -> Result<Py, Raised> {
    let p = &*P;
    if let Some(m) = p.as_list.captures(input) {
        let elements = m.get(1).map_or("", |g| g.as_str());
        return elements
            .split(',')
            .map(|e| list_element(python::strip(e), nested))
            .collect::<Result<Vec<_>, _>>()
            .map(Py::List);
    }
    if let Some(m) = p.add_block.captures(input) {
        let adds = m.get(1).map_or("", |g| g.as_str());
        return p
            .add
            .captures_iter(adds)
            .map(|c| list_element(python::strip(c.get(1).map_or("", |g| g.as_str())), nested))
            .collect::<Result<Vec<_>, _>>()
            .map(Py::List);
    }
    if p.empty_list.is_match(input) {
        return Ok(Py::List(Vec::new()));
    }
    Ok(Py::Str(input.to_owned()))
}

fn parse_array(input: &str, nested: Option<&str>) -> Result<Py, Raised> {
    let Some(m) = P.array.captures(input) else {
        return Ok(Py::Str(input.to_owned()));
    };
    let elements = m.get(1).map_or("", |g| g.as_str());
    elements
        .split(',')
        .map(python::strip)
        .filter(|e| !e.is_empty())
        .map(|e| match nested {
            Some(t) if !t.is_empty() => convert(e, t, None),
            _ => parse_value(e),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Py::List)
}

fn parse_hashmap(input: &str) -> Result<Py, Raised> {
    let p = &*P;
    if let Some(m) = p.hashmap.captures(input) {
        let puts = m.get(1).map_or("", |g| g.as_str());
        let mut map = Vec::new();
        if !python::strip(puts).is_empty() {
            for c in p.put.captures_iter(puts) {
                let key = c.get(1).map_or("", |g| g.as_str()).to_owned();
                let value = parse_value(python::strip(c.get(2).map_or("", |g| g.as_str())))?;
                Py::dict_set(&mut map, key, value);
            }
        }
        return Ok(Py::Dict(map));
    }
    if p.empty_map.is_match(input) {
        return Ok(Py::Dict(Vec::new()));
    }
    Ok(Py::Str(input.to_owned()))
}

/// `parse_java_value`: a collection element or map value whose type BFCL does not know.
fn parse_value(s: &str) -> Result<Py, Raised> {
    let p = &*P;
    if s == "true" {
        return Ok(Py::Bool(true));
    }
    if s == "false" {
        return Ok(Py::Bool(false));
    }
    if s.starts_with('"') && s.ends_with('"') {
        return Ok(Py::Str(python::inner(s)));
    }
    // The same patterns as the converter's `long` and `float`.
    if p.long.is_match(s) {
        return Py::int_of(python::but_last(s));
    }
    if p.float.is_match(s) {
        return Py::float_of(&p.float_suffix.replace_all(s, "$1"));
    }
    if let Some(d) = python::int(s) {
        return Ok(Py::int_from_digits(&d));
    }
    if let Some(f) = python::float(s) {
        return Ok(Py::Float(f));
    }
    Ok(Py::Str(s.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(value: &str, t: &str) -> Py {
        convert(value, t, None).expect("converts")
    }

    fn cn(value: &str, t: &str, n: &str) -> Py {
        convert(value, t, Some(n)).expect("converts")
    }

    fn list(items: Vec<Py>) -> Py {
        Py::List(items)
    }

    fn s(x: &str) -> Py {
        Py::Str(x.into())
    }

    /// The assertions of BFCL's own `test_java_type_converter` that hold in its code (some of
    /// its checks of raising never run: the converter defaults to a string instead).
    #[test]
    fn bfcls_own_examples() {
        assert_eq!(c("true", "boolean"), Py::Bool(true));
        assert_eq!(c("123", "integer"), Py::Int(123));
        assert_eq!(c("-123", "integer"), Py::Int(-123));
        assert_eq!(c("2.5f", "float"), Py::Float(2.5));
        assert_eq!(c("2.5", "double"), Py::Float(2.5));
        assert_eq!(c("-123L", "long"), Py::Int(-123));
        assert_eq!(c("a", "char"), s("a"));
        assert_eq!(c("123", "any"), s("123"));
        assert_eq!(
            c("new int[]{1, 2, 3}", "Array"),
            list(vec![Py::Int(1), Py::Int(2), Py::Int(3)])
        );
        assert_eq!(
            c("new ArrayList<>(Arrays.asList(\"a\", \"b\"))", "ArrayList"),
            list(vec![s("a"), s("b")])
        );
        assert_eq!(
            c(
                "new HashMap<String, String>() {{ put(\"key\", \"value\"); }}",
                "HashMap"
            ),
            Py::Dict(vec![("key".into(), s("value"))])
        );
        assert_eq!(c("3e3F", "float"), Py::Float(3e3));
        assert_eq!(
            c("9223372036854775807L", "long"),
            Py::Int(9_223_372_036_854_775_807)
        );
        for empty in ["new int[]{}", "new int[] {}", "new int[] { }"] {
            assert_eq!(c(empty, "Array"), list(vec![]));
        }
        assert_eq!(c("new ArrayList<>()", "ArrayList"), list(vec![]));
        for empty in [
            "new HashMap<>()",
            "new HashMap<>() {}",
            "new HashMap<>() {{}}",
            "new HashMap<>() {{ }}",
        ] {
            assert_eq!(c(empty, "HashMap"), Py::Dict(vec![]));
        }
        assert_eq!(
            c("new Object[]{1, \"abc\", true}", "Array"),
            list(vec![Py::Int(1), s("abc"), Py::Bool(true)])
        );
        assert_eq!(
            c(
                "new HashMap<String, Object>() {{ put(\"key1\", 123); put(\"key2\", true); }}",
                "HashMap"
            ),
            Py::Dict(vec![
                ("key1".into(), Py::Int(123)),
                ("key2".into(), Py::Bool(true))
            ])
        );
        assert_eq!(
            cn("new long[]{1L, 2, 3L}", "Array", "long"),
            list(vec![Py::Int(1), s("2"), Py::Int(3)])
        );
        assert_eq!(
            cn(
                "new ArrayList<Float>() {{ add(1.0f); add(2.0f); }}",
                "ArrayList",
                "float"
            ),
            list(vec![Py::Float(1.0), Py::Float(2.0)])
        );
        assert_eq!(
            cn(
                "new ArrayList<Character>() {{ add('a'); add('b'); }}",
                "ArrayList",
                "char"
            ),
            list(vec![s("a"), s("b")])
        );
    }

    #[test]
    fn what_a_quick_reading_misses() {
        // Unparseable values stay strings (and then fail the type check), they do not raise.
        assert_eq!(c("abc", "integer"), s("abc"));
        assert_eq!(c("3.14", "float"), s("3.14"));
        assert_eq!(c("True", "boolean"), s("True"));
        // Python's `$` allows one final newline, and int() strips it.
        assert_eq!(c("5\n", "integer"), Py::Int(5));
        assert_eq!(c("5L\n", "long"), Py::Int(5));
        assert_eq!(c("2.5f\n", "float"), Py::Float(2.5));
        // Digits of other scripts are digits.
        assert_eq!(c("٤٢", "integer"), Py::Int(42));
        // An Array of String keeps the quotes: only ArrayList drops them.
        assert_eq!(
            cn("new String[]{\"a\", \"b\"}", "Array", "String"),
            list(vec![s("\"a\""), s("\"b\"")])
        );
        // A later put of the same key replaces the value.
        assert_eq!(
            c(
                "new HashMap<>() {{ put(\"k\", 1); put(\"k\", 2); }}",
                "HashMap"
            ),
            Py::Dict(vec![("k".into(), Py::Int(2))])
        );
        assert!(convert("x", "Set", None).is_err());
        // An element that matches the long pattern with a final newline cannot reach
        // parse_java_value (elements are stripped), but `int` on 4301 digits raises.
        assert!(convert(&"9".repeat(4301), "integer", None).is_err());
    }
}
