//! `bfcl_eval/eval_checker/ast_eval/type_convertor/js_type_converter.py`, line for line: how
//! BFCL turns the string a model sends for a JavaScript parameter (`"'abc'"`, `"[1, 2]"`,
//! `"{key: 'v'}"`, `"12n"`) into the value it compares with the answers. Its collection
//! parser catches every exception and keeps the string; only a top-level number raises: a
//! `Bigint` whose string ends in a newline (`int("12n")`), or an integer past Python's
//! 4,300-digit `int()` limit.

use std::sync::LazyLock;

use regex::Regex;

use super::python::{self, pattern};
use super::{Py, Raised};

/// `JS_TYPE_CONVERSION` of bfcl_eval/constants/type_mappings.py.
pub(super) fn python_type(js: &str) -> Option<super::PyType> {
    use super::PyType::{Bool, Dict, Float, Int, List, Str};
    Some(match js {
        "String" | "any" => Str,
        "integer" | "Bigint" => Int,
        "float" => Float,
        "Boolean" => Bool,
        "dict" => Dict,
        "array" => List,
        _ => return Option::None,
    })
}

struct Patterns {
    int: Regex,
    float: Regex,
    bigint: Regex,
    array_2d: Regex,
    array: Regex,
    bracketed: Regex,
    dict: Regex,
    /// The one pattern with a lookahead, so the one run by a backtracking engine.
    pairs: fancy_regex::Regex,
}

static P: LazyLock<Patterns> = LazyLock::new(|| Patterns {
    int: pattern(r"^-?{d}+{end}"),
    float: pattern(r"^-?{d}+(\.{d}+)?{end}"),
    bigint: pattern(r"^-?{d}+n{end}"),
    // re.match anchors at the start only; `\bnew` at the start is `new` (n is a word
    // character, so the boundary always holds there).
    array_2d: pattern(
        r"^(?:\[{s}*\[.*?\]{s}*(,{s}*\[.*?\]{s}*)*\]|new{s}+Array\({s}*\[.*?\]{s}*(,{s}*\[.*?\]{s}*)*\))",
    ),
    array: pattern(r"^(?:\[(.*?)\]|new{s}+Array\((.*?)\))"),
    bracketed: pattern(r"\[(.*?)\]"),
    dict: pattern(r"^\{(.*?)\}"),
    pairs: {
        let p = r"([^:]+):{s}*(.*?)(?:,{s}*(?=[^,]+:)|\z)".replace("{s}", python::S);
        fancy_regex::Regex::new(&p).unwrap_or_else(|e| panic!("BFCL pattern {p:?}: {e}"))
    },
});

/// `js_type_converter(value, expected_type, nested_type)`.
pub(super) fn convert(value: &str, expected: &str, nested: Option<&str>) -> Result<Py, Raised> {
    let p = &*P;
    let keep = || Ok(Py::Str(value.to_owned()));
    match expected {
        "String" => {
            let quoted = (value.starts_with('"') && value.ends_with('"'))
                || (value.starts_with('\'') && value.ends_with('\''));
            if quoted {
                Ok(Py::Str(python::inner(value)))
            } else {
                keep()
            }
        }
        "integer" if p.int.is_match(value) => Py::int_of(value),
        "float" if p.float.is_match(value) => Py::float_of(value),
        "integer" | "float" => keep(),
        "Bigint" => {
            if !p.bigint.is_match(value) {
                return keep();
            }
            // `int(value[:-1])`: with a final newline that leaves the `n` in, and raises.
            Py::int_of(python::but_last(value))
        }
        "Boolean" => match value {
            "true" => Ok(Py::Bool(true)),
            "false" => Ok(Py::Bool(false)),
            _ => keep(),
        },
        "dict" => Ok(parse_dict(python::strip(value))),
        "array" => Ok(parse_array(python::strip(value), nested)),
        "any" => keep(),
        t => Err(Raised(format!(
            "BFCL's JavaScript converter: unsupported type {t}"
        ))),
    }
}

/// `parse_js_collection(code, "array", nested_type)` on the stripped code; any exception
/// inside keeps the code as a string.
fn parse_array(code: &str, nested: Option<&str>) -> Py {
    let p = &*P;
    if let Some(m) = p.array_2d.find(code) {
        let mut rows = Vec::new();
        for (idx, c) in p.bracketed.captures_iter(m.as_str()).enumerate() {
            let mut row = python::strip(c.get(1).map_or("", |g| g.as_str()));
            if idx == 0 && row.starts_with('[') {
                row = &row[1..];
            }
            rows.push(Py::List(
                row.split(',')
                    .map(|e| parse_value(python::strip(e)))
                    .collect(),
            ));
        }
        return Py::List(rows);
    }
    let Some(m) = p.array.captures(code) else {
        return Py::Str(code.to_owned());
    };
    let inside = m.get(1).or_else(|| m.get(2)).map_or("", |g| g.as_str());
    let inside = python::strip(inside);
    let elements: Vec<&str> = if inside.is_empty() {
        Vec::new()
    } else {
        inside.split(',').collect()
    };
    match nested {
        Some(t) if !t.is_empty() => {
            let converted: Result<Vec<Py>, Raised> = elements
                .iter()
                .map(|e| {
                    let e = python::strip(e);
                    // BFCL passes a nested type of "String" only to quoted elements.
                    let inner = (e.starts_with('\'') || e.starts_with('"')).then_some("String");
                    convert(e, t, inner)
                })
                .collect();
            // The bare `except:` around the parse.
            converted.map_or_else(|_| Py::Str(code.to_owned()), Py::List)
        }
        _ => Py::List(
            elements
                .iter()
                .map(|e| parse_value(python::strip(e)))
                .collect(),
        ),
    }
}

/// `parse_js_collection(code, "dict")` on the stripped code.
fn parse_dict(code: &str) -> Py {
    let p = &*P;
    if code == "{}" {
        return Py::Dict(Vec::new());
    }
    let Some(m) = p.dict.captures(code) else {
        return Py::Str(code.to_owned());
    };
    let content = m.get(1).map_or("", |g| g.as_str());
    let mut map = Vec::new();
    for pair in p.pairs.captures_iter(content) {
        // The backtracking engine's own limits, where Python would simply run on: keep the
        // string, as BFCL's `except Exception` does for its own failures.
        let Ok(pair) = pair else {
            return Py::Str(code.to_owned());
        };
        let key = python::strip(pair.get(1).map_or("", |g| g.as_str()))
            .trim_matches(['\'', '"'])
            .to_owned();
        let value = python::strip(pair.get(2).map_or("", |g| g.as_str()));
        let parsed = if value.starts_with('[') && value.ends_with(']') {
            parse_array(python::strip(value), None)
        } else if value.starts_with('{') && value.ends_with('}') {
            parse_dict(python::strip(value))
        } else {
            parse_value(value.trim_matches(['\'', '"']))
        };
        Py::dict_set(&mut map, key, parsed);
    }
    Py::Dict(map)
}

/// `parse_js_value`.
fn parse_value(s: &str) -> Py {
    let s = python::strip(s);
    match s {
        "true" => return Py::Bool(true),
        "false" => return Py::Bool(false),
        _ => {}
    }
    if (s.starts_with('"') && s.ends_with('"')) || (s.starts_with('\'') && s.ends_with('\'')) {
        return Py::Str(python::inner(s));
    }
    if let Some(d) = python::int(s) {
        return Py::int_from_digits(&d);
    }
    if let Some(f) = python::float(s) {
        return Py::Float(f);
    }
    Py::Str(s.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(value: &str, t: &str) -> Py {
        convert(value, t, None).expect("converts")
    }

    fn s(x: &str) -> Py {
        Py::Str(x.into())
    }

    /// The assertions of BFCL's own `test_js_type_converter`.
    #[test]
    fn bfcls_own_examples() {
        assert_eq!(c("true", "Boolean"), Py::Bool(true));
        assert_eq!(c("123", "integer"), Py::Int(123));
        assert_eq!(c("2.5", "float"), Py::Float(2.5));
        assert_eq!(c("123n", "Bigint"), Py::Int(123));
        assert_eq!(c("abc", "String"), s("abc"));
        let ints = Py::List(vec![Py::Int(1), Py::Int(2), Py::Int(3)]);
        assert_eq!(c("[1, 2, 3]", "array"), ints);
        assert_eq!(c("new Array(1, 2, 3)", "array"), ints);
        assert_eq!(
            c("{'key': 'value'}", "dict"),
            Py::Dict(vec![("key".into(), s("value"))])
        );
        assert_eq!(
            c("{'key': true}", "dict"),
            Py::Dict(vec![("key".into(), Py::Bool(true))])
        );
        assert_eq!(c("[]", "array"), Py::List(vec![]));
        assert_eq!(c("{}", "dict"), Py::Dict(vec![]));
        assert_eq!(
            c("[1, 'two', true]", "array"),
            Py::List(vec![Py::Int(1), s("two"), Py::Bool(true)])
        );
        assert_eq!(
            c("{'key1': 123, 'key2': 'value', 'key3': false}", "dict"),
            Py::Dict(vec![
                ("key1".into(), Py::Int(123)),
                ("key2".into(), s("value")),
                ("key3".into(), Py::Bool(false)),
            ])
        );
        assert_eq!(c("-2.5", "float"), Py::Float(-2.5));
    }

    #[test]
    fn what_a_quick_reading_misses() {
        // A 2-D array keeps its rows; the first row loses a leading `[` BFCL's findall keeps.
        assert_eq!(
            c("[[1, 2], [3]]", "array"),
            Py::List(vec![
                Py::List(vec![Py::Int(1), Py::Int(2)]),
                Py::List(vec![Py::Int(3)])
            ])
        );
        // The lazy `\{(.*?)\}` stops at the first `}`: a nested object is cut short.
        assert_eq!(
            c("{a: {b: 1}, c: 2}", "dict"),
            Py::Dict(vec![("a".into(), s("{b: 1"))])
        );
        // Nested element types convert; a quoted float stays a string.
        assert_eq!(
            convert("[1.5, '2']", "array", Some("float")),
            Ok(Py::List(vec![Py::Float(1.5), s("'2'")]))
        );
        // Bigint with a final newline: `int("12n")` raises, and nothing catches it.
        assert!(convert("12n\n", "Bigint", None).is_err());
        assert_eq!(c("12n", "Bigint"), Py::Int(12));
        // A single quote character is both the opening and the closing quote.
        assert_eq!(c("'", "String"), s(""));
    }
}
