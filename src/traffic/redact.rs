//! Redaction of logged traffic before anything is written: the values of fields the user names
//! (`--redact email,phone,$.user.address`) and anything that looks like a secret, replaced by
//! `[REDACTED:<kind>]`.
//!
//! Secrets are always looked for, in every string (keys, bearer tokens, AWS and GitHub tokens,
//! JWTs, private keys) and under keys that only ever hold secrets (`password`, `api_key`, ...).
//! E-mail addresses and phone numbers are personal data, not secrets: they are looked for in
//! free text only when named, since a dataset about a CRM may need them.

use std::collections::BTreeMap;

use regex::{Captures, Regex};
use serde_json::Value;

/// The start every placeholder shares, so later steps can tell a redacted value.
pub const PLACEHOLDER_PREFIX: &str = "[REDACTED:";

/// Keys whose values are secrets whatever they look like.
const SECRET_KEYS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "client_secret",
    "api_key",
    "apikey",
    "x-api-key",
    "access_token",
    "refresh_token",
    "id_token",
    "auth_token",
    "session_token",
    "token",
    "authorization",
    "private_key",
    "aws_secret_access_key",
    "cookie",
    "set-cookie",
];

fn placeholder(kind: &str) -> String {
    format!("{PLACEHOLDER_PREFIX}{kind}]")
}

/// One segment of a `$.a.b[*]` path.
#[derive(Debug, Clone, PartialEq)]
enum Segment {
    Key(String),
    /// `*` or `[*]`: every key of an object, every item of an array.
    Any,
    Index(usize),
}

/// Text patterns and the kind each one reports.
struct Pattern {
    kind: &'static str,
    regex: Regex,
}

/// What to redact, built once from `--redact`.
pub struct Redactor {
    /// Lower-cased key names whose values go, with the kind the placeholder names.
    keys: BTreeMap<String, String>,
    paths: Vec<(Vec<Segment>, String)>,
    patterns: Vec<Pattern>,
    phone: Option<Regex>,
    date_like: Regex,
}

/// How many values were redacted, by kind.
pub type Tally = BTreeMap<String, usize>;

impl Redactor {
    /// `named`: the items of `--redact`: key names (`email`), or JSON paths (`$.user.address`).
    pub fn new(named: &[String]) -> Result<Redactor, String> {
        let re = |p: &str| Regex::new(p).map_err(|e| format!("internal pattern {p}: {e}"));
        let mut keys: BTreeMap<String, String> = SECRET_KEYS
            .iter()
            .map(|k| ((*k).to_owned(), "secret".to_owned()))
            .collect();
        let mut paths = Vec::new();
        // Most specific first: a JWT inside a bearer header is reported as the header.
        let mut patterns = vec![
            Pattern {
                kind: "private_key",
                regex: re(
                    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
                )?,
            },
            Pattern {
                kind: "bearer_token",
                // A token has a digit somewhere; "the bearer responsibilities" has none.
                regex: re(r"(?i)\bbearer\s+[A-Za-z._~+/=-]*\d[A-Za-z0-9._~+/=-]{11,}")?,
            },
            Pattern {
                kind: "jwt",
                regex: re(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")?,
            },
            Pattern {
                kind: "api_key",
                regex: re(r"\bsk-[A-Za-z0-9_-]{20,}|\b[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}")?,
            },
            Pattern {
                kind: "aws_key",
                regex: re(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")?,
            },
            Pattern {
                kind: "github_token",
                regex: re(r"\bgh[pousr]_[A-Za-z0-9]{36,}|\bgithub_pat_[A-Za-z0-9_]{22,}")?,
            },
            Pattern {
                kind: "slack_token",
                regex: re(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")?,
            },
            Pattern {
                kind: "google_api_key",
                regex: re(r"\bAIza[0-9A-Za-z_-]{35}")?,
            },
        ];
        let mut phone = None;
        for item in named {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            if let Some(path) = item.strip_prefix('$') {
                let segments = parse_path(path).map_err(|e| format!("--redact {item}: {e}"))?;
                let kind = segments
                    .iter()
                    .rev()
                    .find_map(|s| match s {
                        Segment::Key(k) => Some(k.clone()),
                        _ => None,
                    })
                    .unwrap_or_else(|| "value".to_owned());
                paths.push((segments, kind));
                continue;
            }
            if !item
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            {
                return Err(format!(
                    "--redact {item}: a field is a key name (letters, digits, `_`, `-`) or a JSON path starting with `$.`"
                ));
            }
            let lower = item.to_ascii_lowercase();
            match lower.as_str() {
                "email" => patterns.push(Pattern {
                    kind: "email",
                    regex: re(
                        r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b",
                    )?,
                }),
                "phone" => {
                    phone = Some(re(r"\+?\(?\d[\d\s().-]{7,}\d")?);
                }
                _ => {}
            }
            keys.insert(lower.clone(), lower);
        }
        Ok(Redactor {
            keys,
            paths,
            patterns,
            phone,
            date_like: re(r"\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}")?,
        })
    }

    /// Redacts secret-looking (and named personal) substrings of free text.
    pub fn text(&self, text: &str, tally: &mut Tally) -> String {
        let mut out = text.to_owned();
        for p in &self.patterns {
            if p.regex.is_match(&out) {
                let mut n = 0;
                out = p
                    .regex
                    .replace_all(&out, |_: &Captures| {
                        n += 1;
                        placeholder(p.kind)
                    })
                    .into_owned();
                *tally.entry(p.kind.to_owned()).or_default() += n;
            }
        }
        if let Some(phone) = &self.phone {
            let mut n = 0;
            let source = out.clone();
            let glued = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
            let replaced = phone
                .replace_all(&out, |c: &Captures| {
                    let whole = c.get(0).map_or(0..0, |m| m.range());
                    let m = &c[0];
                    let digits = m.chars().filter(char::is_ascii_digit).count();
                    // Dates, times and long amounts share the characters; only 9 to 15 digits
                    // with no date or clock inside, and not the tail of an id such as
                    // `ord_20261203001` or a tracking number, read as a phone number.
                    let inside_a_word = glued(source[..whole.start].chars().next_back())
                        || glued(source[whole.end..].chars().next());
                    if (9..=15).contains(&digits) && !self.date_like.is_match(m) && !inside_a_word {
                        n += 1;
                        placeholder("phone")
                    } else {
                        m.to_owned()
                    }
                })
                .into_owned();
            if n > 0 {
                *tally.entry("phone".into()).or_default() += n;
                out = replaced;
            }
        }
        out
    }

    /// Redacts a JSON document: values under named or secret keys, values at named paths
    /// (from this document's root), and secret-looking text in every string.
    pub fn document(&self, value: &mut Value, tally: &mut Tally) {
        for (path, kind) in &self.paths {
            redact_path(value, path, kind, tally);
        }
        self.walk(value, tally);
    }

    /// Only the text patterns, for a catalog: its schemas have keys such as `email` that name
    /// a parameter, not hold a person's address.
    pub fn strings(&self, value: &mut Value, tally: &mut Tally) {
        match value {
            Value::String(s) => *s = self.text(s, tally),
            Value::Array(items) => items.iter_mut().for_each(|v| self.strings(v, tally)),
            Value::Object(map) => map.values_mut().for_each(|v| self.strings(v, tally)),
            _ => {}
        }
    }

    fn walk(&self, value: &mut Value, tally: &mut Tally) {
        match value {
            Value::String(s) => *s = self.text(s, tally),
            Value::Array(items) => items.iter_mut().for_each(|v| self.walk(v, tally)),
            Value::Object(map) => {
                for (key, v) in map.iter_mut() {
                    match self.keys.get(&key.to_ascii_lowercase()) {
                        Some(kind) if !v.is_null() && !is_placeholder(v) => {
                            *v = Value::String(placeholder(kind));
                            *tally.entry(kind.clone()).or_default() += 1;
                        }
                        _ => self.walk(v, tally),
                    }
                }
            }
            _ => {}
        }
    }

    /// Redacts text that may hold a JSON document (a tool result): as a document when it
    /// parses as an object or array, else as free text.
    pub fn text_or_json(&self, text: &str, tally: &mut Tally) -> String {
        match serde_json::from_str::<Value>(text) {
            Ok(mut v @ (Value::Object(_) | Value::Array(_))) => {
                let before = v.clone();
                self.document(&mut v, tally);
                if v == before {
                    text.to_owned()
                } else {
                    v.to_string()
                }
            }
            _ => self.text(text, tally),
        }
    }
}

fn is_placeholder(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s.starts_with(PLACEHOLDER_PREFIX))
}

fn parse_path(path: &str) -> Result<Vec<Segment>, String> {
    let mut segments = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let key = &r[..end];
            if key.is_empty() {
                return Err("empty key in the path".into());
            }
            segments.push(if key == "*" {
                Segment::Any
            } else {
                Segment::Key(key.to_owned())
            });
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']').ok_or("`[` without `]`")?;
            let inner = r[..end].trim_matches(|c| c == '\'' || c == '"');
            segments.push(match inner {
                "*" => Segment::Any,
                _ => match inner.parse::<usize>() {
                    Ok(i) => Segment::Index(i),
                    Err(_) => Segment::Key(inner.to_owned()),
                },
            });
            rest = &r[end + 1..];
        } else {
            return Err("a path is `$.key.key`, with `[n]` or `[*]` for array items".into());
        }
    }
    if segments.is_empty() {
        return Err("the path names no field".into());
    }
    Ok(segments)
}

fn redact_path(value: &mut Value, path: &[Segment], kind: &str, tally: &mut Tally) {
    let Some((first, rest)) = path.split_first() else {
        if !value.is_null() && !is_placeholder(value) {
            *value = Value::String(placeholder(kind));
            *tally.entry(kind.to_owned()).or_default() += 1;
        }
        return;
    };
    match (first, value) {
        (Segment::Key(k), Value::Object(map)) => {
            if let Some(v) = map.get_mut(k) {
                redact_path(v, rest, kind, tally);
            }
        }
        (Segment::Index(i), Value::Array(items)) => {
            if let Some(v) = items.get_mut(*i) {
                redact_path(v, rest, kind, tally);
            }
        }
        (Segment::Any, Value::Object(map)) => {
            map.values_mut()
                .for_each(|v| redact_path(v, rest, kind, tally));
        }
        (Segment::Any, Value::Array(items)) => {
            items
                .iter_mut()
                .for_each(|v| redact_path(v, rest, kind, tally));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn redactor(named: &[&str]) -> Redactor {
        Redactor::new(&named.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn secrets_in_text_are_replaced_by_kind() {
        let r = redactor(&[]);
        let mut tally = Tally::new();
        let text = "key sk-proj-Abc123def456ghi789jkl012, header Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTYifQ.c2lnbmF0dXJlX3NpZw, aws AKIAIOSFODNN7EXAMPLE, gh ghp_0123456789abcdefghijABCDEFGHIJ012345";
        let out = r.text(text, &mut tally);
        assert_eq!(
            out,
            "key [REDACTED:api_key], header Authorization: [REDACTED:bearer_token], aws [REDACTED:aws_key], gh [REDACTED:github_token]"
        );
        assert_eq!(tally.values().sum::<usize>(), 4);
        let jwt = r.text(
            "token=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTYifQ.c2lnbmF0dXJlX3NpZw",
            &mut tally,
        );
        assert_eq!(jwt, "token=[REDACTED:jwt]");
        let prose = "the bearer responsibilities of a courier";
        assert_eq!(r.text(prose, &mut tally), prose);
    }

    #[test]
    fn email_and_phone_only_when_named() {
        let text = "mail jane.doe@example.com or call +1 (415) 555-0142 on 2026-12-03 14:05";
        let mut tally = Tally::new();
        assert_eq!(redactor(&[]).text(text, &mut tally), text);
        let out = redactor(&["email", "phone"]).text(text, &mut tally);
        assert_eq!(
            out,
            "mail [REDACTED:email] or call [REDACTED:phone] on 2026-12-03 14:05"
        );
        // Amounts and order numbers are not phone numbers.
        let text = "refund 1250 on order 20261203, ord_20261203001, parcel 1Z999AA10123456784";
        assert_eq!(redactor(&["phone"]).text(text, &mut tally), text);
        let out = redactor(&["phone"]).text("call 07946 095800.", &mut tally);
        assert_eq!(out, "call [REDACTED:phone].");
    }

    #[test]
    fn named_keys_paths_and_secret_keys_in_documents() {
        let r = redactor(&["email", "$.user.address", "$.lines[*].note"]);
        let mut doc = json!({
            "Email": "a@b.io",
            "user": {"address": {"street": "1 Main St"}, "name": "Jo"},
            "address": "kept: the path is rooted",
            "lines": [{"note": "x"}, {"note": "y"}],
            "api_key": 12345,
            "nested": [{"password": "hunter2"}],
            "text": "reach me at jo@example.org"
        });
        let mut tally = Tally::new();
        r.document(&mut doc, &mut tally);
        assert_eq!(
            doc,
            json!({
                "Email": "[REDACTED:email]",
                "user": {"address": "[REDACTED:address]", "name": "Jo"},
                "address": "kept: the path is rooted",
                "lines": [{"note": "[REDACTED:note]"}, {"note": "[REDACTED:note]"}],
                "api_key": "[REDACTED:secret]",
                "nested": [{"password": "[REDACTED:secret]"}],
                "text": "reach me at [REDACTED:email]"
            })
        );
        assert_eq!(tally["email"], 2);
        assert_eq!(tally["secret"], 2);
    }

    #[test]
    fn catalogs_keep_their_schema_keys() {
        let r = redactor(&["email"]);
        let mut schema = json!({"properties": {"email": {"type": "string", "description": "e.g. ops@example.com"}}});
        r.strings(&mut schema, &mut Tally::new());
        assert_eq!(
            schema,
            json!({"properties": {"email": {"type": "string", "description": "e.g. [REDACTED:email]"}}})
        );
    }

    #[test]
    fn bad_names_and_paths_are_refused() {
        let err = |s: &str| Redactor::new(&[s.to_owned()]).err().unwrap_or_default();
        assert!(err("$.a[").contains("`[` without `]`"));
        assert!(err("$").contains("names no field"));
        assert!(err("e mail").contains("a field is a key name"));
    }
}
