//! The few pieces of Python's built-ins BFCL's Java and JavaScript type converters lean on,
//! with CPython 3.11's exact rules: `str.strip()`, `int(str)`, `float(str)` and the meaning of
//! `\s`, `\w`, `\d` and `$` in its regular expressions. A model controls the strings these
//! read, so "close to Python" would let toolscore and BFCL disagree on odd but real replies
//! (`"5\n"`, `"1_000"`, `"٥"`, `" 5 "`, `"inf"`).

use std::sync::LazyLock;

use regex::Regex;

/// Python's `\s` for `str` patterns and `str.isspace()`: Unicode White_Space plus the four
/// ASCII separators U+001C..U+001F, which Python counts and Unicode does not.
pub(super) const S: &str = r"[\s\x1C-\x1F]";
/// Python's `\w` for `str` patterns: `str.isalnum()` or `_`.
pub(super) const W: &str = r"[\p{L}\p{N}_]";
/// Python's `\d` for `str` patterns: decimal digits of any script.
pub(super) const D: &str = r"\p{Nd}";
/// Python's `$` without MULTILINE: the end, or just before a newline that ends the string.
pub(super) const END: &str = r"\n?\z";

/// Compiles one of BFCL's patterns written with the placeholders above (`{s}`, `{w}`, `{d}`,
/// `{end}`); the patterns are constants, so a failure is a bug here, caught by the tests.
pub(super) fn pattern(p: &str) -> Regex {
    let p = p
        .replace("{s}", S)
        .replace("{w}", W)
        .replace("{d}", D)
        .replace("{end}", END);
    Regex::new(&p).unwrap_or_else(|e| panic!("BFCL pattern {p:?}: {e}"))
}

pub(super) fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// `s.strip()`.
pub(super) fn strip(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// `s[1:-1]`, by characters.
pub(super) fn inner(s: &str) -> String {
    let n = s.chars().count();
    s.chars().skip(1).take(n.saturating_sub(2)).collect()
}

/// `s[:-1]`, by characters.
pub(super) fn but_last(s: &str) -> &str {
    match s.char_indices().last() {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The value of a decimal digit of any script (Unicode encodes each script's digits as a run
/// 0..9, and runs that touch, like the mathematical digits, each start at 0).
fn decimal_value(c: char) -> Option<u32> {
    static ND: LazyLock<Regex> = LazyLock::new(|| pattern(r"^{d}$"));
    if c.is_ascii_digit() {
        return c.to_digit(10);
    }
    let is_nd = |c: char| ND.is_match(c.encode_utf8(&mut [0; 4]));
    if !is_nd(c) {
        return None;
    }
    let mut before = 0;
    let mut code = c as u32;
    while let Some(prev) = code.checked_sub(1).and_then(char::from_u32) {
        if !is_nd(prev) {
            break;
        }
        before += 1;
        code -= 1;
    }
    Some(before % 10)
}

/// `_PyUnicode_TransformDecimalAndSpaceToASCII`, the first step of `int(str)` and
/// `float(str)`: digits of any script become ASCII digits, whitespace a space; None where a
/// character is neither and not ASCII (CPython writes `?`, which no number parses).
fn to_ascii(s: &str) -> Option<String> {
    s.chars()
        .map(|c| {
            if is_space(c) {
                Some(' ')
            } else if let Some(d) = decimal_value(c) {
                char::from_digit(d, 10)
            } else if c.is_ascii() {
                Some(c)
            } else {
                None
            }
        })
        .collect()
}

/// `Py_ISSPACE`: the ASCII whitespace CPython's number parsers skip after the transform.
fn ascii_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

/// CPython 3.11's default `sys.get_int_max_str_digits()`: longer decimal strings raise.
const INT_MAX_STR_DIGITS: usize = 4300;

/// The value of `int(s)`, or None where Python raises ValueError. Returns the decimal digits
/// with their sign, without leading zeros ("0" for zero).
pub(super) fn int(s: &str) -> Option<String> {
    let ascii = to_ascii(s)?;
    let t = ascii.trim_matches(ascii_space);
    let (negative, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut digits = String::with_capacity(body.len());
    let mut prev = None;
    for c in body.chars() {
        match c {
            '0'..='9' => digits.push(c),
            // Between two digits only.
            '_' if prev.is_some_and(|p: char| p.is_ascii_digit()) => {}
            _ => return None,
        }
        prev = Some(c);
    }
    if digits.is_empty() || prev == Some('_') || digits.len() > INT_MAX_STR_DIGITS {
        return None;
    }
    let trimmed = digits.trim_start_matches('0');
    let magnitude = if trimmed.is_empty() { "0" } else { trimmed };
    Some(if negative && magnitude != "0" {
        format!("-{magnitude}")
    } else {
        magnitude.to_owned()
    })
}

/// The value of `float(s)`, or None where Python raises ValueError.
pub(super) fn float(s: &str) -> Option<f64> {
    let ascii = to_ascii(s)?;
    let t = ascii.trim_matches(ascii_space);
    // `_Py_string_to_number_with_underscores`: each `_` between two digits, then dropped.
    let mut clean = String::with_capacity(t.len());
    let mut prev = '\0';
    for c in t.chars() {
        if c == '_' {
            if !prev.is_ascii_digit() {
                return None;
            }
        } else {
            if prev == '_' && !c.is_ascii_digit() {
                return None;
            }
            clean.push(c);
        }
        prev = c;
    }
    if prev == '_' {
        return None;
    }
    // `PyOS_string_to_double`, which must consume everything: an optional sign, then
    // inf/infinity/nan in any case, or digits with an optional fraction and exponent.
    let unsigned = clean.strip_prefix(['+', '-']).unwrap_or(&clean);
    let lower = unsigned.to_ascii_lowercase();
    if matches!(lower.as_str(), "inf" | "infinity" | "nan") {
        return clean.parse().ok();
    }
    static DECIMAL: LazyLock<Regex> =
        LazyLock::new(|| pattern(r"^(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"));
    if !DECIMAL.is_match(unsigned) {
        return None;
    }
    clean.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_follows_cpython() {
        for (s, want) in [
            ("5", Some("5")),
            ("-5", Some("-5")),
            ("+5", Some("5")),
            (" 5\n", Some("5")),
            ("\u{1c}5\u{1f}", Some("5")),
            ("007", Some("7")),
            ("-0", Some("0")),
            ("1_000", Some("1000")),
            ("٥", Some("5")),
            ("\u{1D7D9}", Some("1")), // MATHEMATICAL DOUBLE-STRUCK DIGIT ONE
            ("१२", Some("12")),
            ("1__0", None),
            ("_1", None),
            ("1_", None),
            ("1.0", None),
            ("5L", None),
            ("", None),
            ("-", None),
            ("0x10", None),
            ("1 2", None),
            ("5\u{a0}", Some("5")),
        ] {
            assert_eq!(int(s).as_deref(), want, "int({s:?})");
        }
        assert_eq!(int(&"9".repeat(4300)).map(|d| d.len()), Some(4300));
        assert_eq!(int(&"9".repeat(4301)), None);
    }

    #[test]
    fn float_follows_cpython() {
        for (s, want) in [
            ("5", Some(5.0)),
            ("5.", Some(5.0)),
            (".5", Some(0.5)),
            ("-.5", Some(-0.5)),
            ("1.e5", Some(1e5)),
            ("1E+05", Some(1e5)),
            ("1_0.5", Some(10.5)),
            ("1e1_0", Some(1e10)),
            (" 2.5\n", Some(2.5)),
            ("٢.٥", Some(2.5)),
            ("1e400", Some(f64::INFINITY)),
            ("-Infinity", Some(f64::NEG_INFINITY)),
            ("iNf", Some(f64::INFINITY)),
            ("1_.5", None),
            ("1._5", None),
            ("1e", None),
            (".", None),
            ("e5", None),
            ("0x10", None),
            ("infinit", None),
            ("5f", None),
            ("", None),
        ] {
            assert_eq!(float(s), want, "float({s:?})");
        }
        assert!(float("+nan").is_some_and(f64::is_nan));
    }

    #[test]
    fn slices_and_strip_are_by_character() {
        assert_eq!(inner("\"é\""), "é");
        assert_eq!(inner("\""), "");
        assert_eq!(inner(""), "");
        assert_eq!(but_last("5né"), "5n");
        assert_eq!(but_last(""), "");
        assert_eq!(strip("\u{1e} a \u{3000}"), "a");
    }

    #[test]
    fn dollar_matches_before_a_final_newline_only() {
        let r = pattern(r"^-?{d}+{end}");
        assert!(r.is_match("12"));
        assert!(r.is_match("12\n"));
        assert!(!r.is_match("12\n\n"));
        assert!(!r.is_match("12 "));
        assert!(r.is_match("١٢"));
    }
}
