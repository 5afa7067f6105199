//! JSON as Python's `json` module reads and writes it, for the one place BFCL puts a
//! `json.dumps` into the text a model reads: the schema of a JavaScript `dict` parameter, moved
//! into its description. `serde_json::Value` sorts object keys, while Python keeps them in the
//! order of the file, and the model must read exactly what BFCL shows it, so this keeps order.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON value that keeps the order of object keys (as a Python `dict` from `json.loads`).
/// Integers beyond 64 bits arrive as floats (serde_json's reading), where Python keeps them
/// exact; no BFCL schema holds one.
#[derive(Debug, Clone, PartialEq)]
pub enum OrderedJson {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    List(Vec<OrderedJson>),
    Object(Vec<(String, OrderedJson)>),
}

impl OrderedJson {
    pub fn parse(text: &str) -> Result<OrderedJson, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// `obj[key]`.
    pub fn get(&self, key: &str) -> Option<&OrderedJson> {
        match self {
            OrderedJson::Object(pairs) => pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// `list[i]`.
    pub fn at(&self, i: usize) -> Option<&OrderedJson> {
        match self {
            OrderedJson::List(items) => items.get(i),
            _ => None,
        }
    }

    /// `json.dumps(value)` with its defaults: `", "` and `": "` separators, `ensure_ascii`,
    /// `allow_nan`.
    pub fn dumps(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            OrderedJson::Null => out.push_str("null"),
            OrderedJson::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            OrderedJson::Int(i) => out.push_str(&i.to_string()),
            OrderedJson::Float(f) => out.push_str(&float_repr(*f)),
            OrderedJson::Str(s) => write_ascii_string(s, out),
            OrderedJson::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    item.write(out);
                }
                out.push(']');
            }
            OrderedJson::Object(pairs) => {
                out.push('{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_ascii_string(k, out);
                    out.push_str(": ");
                    v.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// `py_encode_basestring_ascii`: everything outside `' '..='~'` as `\uXXXX` (lowercase hex,
/// surrogate pairs above the BMP), with the short escapes for the five it has.
fn write_ascii_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

/// `float.__repr__` as `json.dumps` writes it: the shortest digits that round-trip, in fixed
/// notation for decimal exponents -4..16 and scientific (`1e+16`, `1.5e-05`) outside.
fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    // Rust's `{:e}` gives the same shortest round-trip digits: `-1.5e-5`.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if (-4..16).contains(&exp) {
        let (int_part, frac) = if exp >= 0 {
            let split = usize::try_from(exp).unwrap_or(0) + 1;
            if digits.len() <= split {
                (format!("{digits:0<split$}"), String::new())
            } else {
                (digits[..split].to_owned(), digits[split..].to_owned())
            }
        } else {
            let zeros = usize::try_from(-exp - 1).unwrap_or(0);
            ("0".to_owned(), format!("{}{digits}", "0".repeat(zeros)))
        };
        let frac = if frac.is_empty() {
            "0".to_owned()
        } else {
            frac
        };
        format!("{sign}{int_part}.{frac}")
    } else {
        let mantissa = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits
        };
        let exp_sign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{mantissa}e{exp_sign}{:02}", exp.unsigned_abs())
    }
}

impl<'de> Deserialize<'de> for OrderedJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(OrderedVisitor)
    }
}

struct OrderedVisitor;

impl<'de> Visitor<'de> for OrderedVisitor {
    type Value = OrderedJson;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<OrderedJson, E> {
        Ok(OrderedJson::Null)
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<OrderedJson, E> {
        Ok(OrderedJson::Bool(b))
    }

    fn visit_i64<E: de::Error>(self, i: i64) -> Result<OrderedJson, E> {
        Ok(OrderedJson::Int(i128::from(i)))
    }

    fn visit_u64<E: de::Error>(self, u: u64) -> Result<OrderedJson, E> {
        Ok(OrderedJson::Int(i128::from(u)))
    }

    fn visit_f64<E: de::Error>(self, f: f64) -> Result<OrderedJson, E> {
        Ok(OrderedJson::Float(f))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<OrderedJson, E> {
        Ok(OrderedJson::Str(s.to_owned()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<OrderedJson, E> {
        Ok(OrderedJson::Str(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<OrderedJson, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(OrderedJson::List(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OrderedJson, A::Error> {
        let mut pairs: Vec<(String, OrderedJson)> = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, OrderedJson>()? {
            // A Python dict keeps a repeated key where it first appeared, with the last value.
            match pairs.iter_mut().find(|(k, _)| *k == key) {
                Some(pair) => pair.1 = value,
                None => pairs.push((key, value)),
            }
        }
        Ok(OrderedJson::Object(pairs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected strings are CPython 3.11's `json.dumps` of the same input.
    #[test]
    fn dumps_is_pythons() {
        let cases = [
            (
                r#"{"b": 1, "a": {"z": [true, null], "y": "x"}}"#,
                r#"{"b": 1, "a": {"z": [true, null], "y": "x"}}"#,
            ),
            (
                r#"{"k":"é\u0001\"\\\n\t\u007f~ ☃😀"}"#,
                r#"{"k": "\u00e9\u0001\"\\\n\t\u007f~ \u2603\ud83d\ude00"}"#,
            ),
            (r#"{"a": 1, "a": 2, "b": 3}"#, r#"{"a": 2, "b": 3}"#),
            ("[]", "[]"),
            ("{}", "{}"),
            ("-1234567890123456789", "-1234567890123456789"),
            ("18446744073709551615", "18446744073709551615"),
        ];
        for (input, want) in cases {
            let parsed = OrderedJson::parse(input).expect("valid JSON");
            assert_eq!(parsed.dumps(), want, "{input}");
        }
    }

    #[test]
    fn floats_print_as_python_repr() {
        let cases = [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (123_456_789_012_345.6, "123456789012345.6"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.25e-7, "1.25e-07"),
            (1e100, "1e+100"),
            (100.0, "100.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (f64::INFINITY, "Infinity"),
            (f64::NAN, "NaN"),
        ];
        for (f, want) in cases {
            assert_eq!(float_repr(f), want, "{f:?}");
        }
    }

    #[test]
    fn lookups_follow_the_path() {
        let v = OrderedJson::parse(r#"{"f": [{"p": {"q": 1}}]}"#).expect("valid JSON");
        assert_eq!(
            v.get("f").and_then(|f| f.at(0)).and_then(|p| p.get("p")),
            Some(&OrderedJson::Object(vec![(
                "q".into(),
                OrderedJson::Int(1)
            )]))
        );
        assert_eq!(v.get("g"), None);
        assert_eq!(v.at(0), None);
    }
}
