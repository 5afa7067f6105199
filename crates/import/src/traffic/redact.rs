//! Redaction of logged traffic before anything is written: the values of fields the user names
//! (`--redact email,phone,$.user.address`) and anything that looks like a secret, replaced by
//! `[REDACTED:<kind>]`.
//!
//! Secrets are always looked for, in every string (keys, bearer tokens, AWS and GitHub tokens,
//! JWTs, private keys), under keys that name a secret in any naming style (`password`,
//! `clientSecret`, `X-Api-Key`, `ACCESS_TOKEN`, `db.password`, ...), inside strings that hold
//! JSON documents (a tool result that is a JSON-encoded body), and in ids (a call id that is an
//! API key). E-mail addresses and phone numbers are personal data, not secrets: they are looked
//! for in free text only when named, since a dataset about a CRM may need them.

use std::collections::{BTreeMap, HashMap, HashSet};

use regex::{Captures, Regex};
use serde_json::Value;

use toolscore_core::InputError;

/// The start every placeholder shares, so later steps can tell a redacted value.
pub(crate) const PLACEHOLDER_PREFIX: &str = "[REDACTED:";

/// Keys that only ever hold secrets, normalized (see [`normalize_key`]): their value goes
/// whatever it is, a number (a numeric PIN under `password`) included.
const SECRET_KEYS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "clientsecret",
    "apikey",
    "xapikey",
    "accesstoken",
    "refreshtoken",
    "idtoken",
    "authtoken",
    "sessiontoken",
    "token",
    "authorization",
    "privatekey",
    "awssecretaccesskey",
    "cookie",
    "setcookie",
];

/// Words that make a normalized key a secret's name wherever they appear in it
/// (`stripeApiKey`, `db.password`, `X-Auth-Token`, `SESSION_ID`). Under such a key text goes,
/// but numbers and booleans stay: `max_tokens`, `input_tokens` and `use_cookies` are counts
/// and flags, and a count is not a secret.
const SECRET_WORDS: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "apikey",
    "accesskey",
    "authorization",
    "credential",
    "privatekey",
    "sessionid",
    "cookie",
];

/// How many levels of JSON-inside-a-string are parsed and redacted as documents; deeper
/// strings are scanned as text. Bounds the work a hostile log can ask for.
const MAX_EMBEDDED_DEPTH: usize = 8;

/// The longest string parsed as an embedded JSON document; longer ones are scanned as text.
const MAX_EMBEDDED_BYTES: usize = 1 << 20;

/// A key as compared with the key lists: lower case without `_`, `-`, `.` or spaces, so
/// `clientSecret`, `Client-Secret`, `CLIENT_SECRET` and `client.secret` are one name.
fn normalize_key(key: &str) -> String {
    key.chars()
        .filter(|c| !matches!(c, '_' | '-' | '.') && !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect()
}

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

/// Text patterns and the kind each one reports. A match's `before` group (the character a
/// token starts after) is kept; a match with a non-empty `longer` group is a longer word and
/// kept whole; a match whose `before` is `_` and whose `body` does not look random
/// ([`looks_random`]) is a snake_case word (`orders_pk_test_…`) and kept whole.
struct Pattern {
    kind: &'static str,
    regex: Regex,
}

/// What to redact, built once from `--redact`.
pub struct Redactor {
    /// Normalized key names whose values go, with the kind the placeholder names.
    keys: BTreeMap<String, String>,
    paths: Vec<(Vec<Segment>, String)>,
    patterns: Vec<Pattern>,
    phone: Option<Regex>,
    date_like: Regex,
}

/// How many values were redacted, by kind.
pub(crate) type Tally = BTreeMap<String, usize>;

/// Why a redactor cannot be built: an item of `--redact` (bad input), or one of toolscore's
/// own patterns (a bug).
#[derive(Debug, thiserror::Error)]
pub enum RedactError {
    #[error("--redact {item}: {problem}")]
    Field { item: String, problem: &'static str },
    #[error("internal pattern {pattern}: {source}")]
    Pattern {
        pattern: String,
        #[source]
        source: regex::Error,
    },
}

impl From<RedactError> for toolscore_core::Error {
    fn from(e: RedactError) -> Self {
        match e {
            RedactError::Field { .. } => InputError::new(e.to_string()).into(),
            RedactError::Pattern { .. } => toolscore_core::Error::Internal(e.to_string()),
        }
    }
}

fn compiled(pattern: &str) -> Result<Regex, RedactError> {
    Regex::new(pattern).map_err(|source| RedactError::Pattern {
        pattern: pattern.to_owned(),
        source,
    })
}

impl Redactor {
    /// `named`: the items of `--redact`: key names (`email`), or JSON paths (`$.user.address`).
    pub fn new(named: &[String]) -> Result<Redactor, RedactError> {
        let re = compiled;
        let mut keys: BTreeMap<String, String> = SECRET_KEYS
            .iter()
            .map(|k| ((*k).to_owned(), "secret".to_owned()))
            .collect();
        let mut paths = Vec::new();
        let mut patterns = secret_patterns()?;
        let mut phone = None;
        for item in named {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            if let Some(path) = item.strip_prefix('$') {
                let segments = parse_path(path).map_err(|problem| RedactError::Field {
                    item: item.to_owned(),
                    problem,
                })?;
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
                return Err(RedactError::Field {
                    item: item.to_owned(),
                    problem: "a field is a key name (letters, digits, `_`, `-`) or a JSON path starting with `$.`",
                });
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
            keys.insert(normalize_key(&lower), lower);
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
                    .replace_all(&out, |c: &Captures| {
                        let whole = c.get(0).map_or("", |m| m.as_str());
                        if c.name("longer").is_some_and(|m| !m.is_empty()) {
                            return whole.to_owned();
                        }
                        if c.name("before").is_some_and(|m| m.as_str() == "_")
                            && c.name("body").is_some_and(|m| !looks_random(m.as_str()))
                        {
                            return whole.to_owned();
                        }
                        n += 1;
                        let before = c.name("before").map_or("", |m| m.as_str());
                        format!("{before}{}", placeholder(p.kind))
                    })
                    .into_owned();
                if n > 0 {
                    *tally.entry(p.kind.to_owned()).or_default() += n;
                }
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
    /// (from this document's root), and secret-looking text in every string and key, strings
    /// holding JSON documents redacted as documents.
    pub fn document(&self, value: &mut Value, tally: &mut Tally) {
        self.document_at(value, 0, tally);
    }

    fn document_at(&self, value: &mut Value, depth: usize, tally: &mut Tally) {
        for (path, kind) in &self.paths {
            redact_path(value, path, kind, tally);
        }
        self.walk(value, depth, tally);
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

    /// `depth`: how many JSON strings `value` is nested in.
    fn walk(&self, value: &mut Value, depth: usize, tally: &mut Tally) {
        match value {
            Value::String(s) => *s = self.string(s, depth, tally),
            Value::Array(items) => items.iter_mut().for_each(|v| self.walk(v, depth, tally)),
            Value::Object(map) => {
                self.object_keys(map, tally);
                for (key, v) in map.iter_mut() {
                    match self.key_kind(key) {
                        Some((kind, true)) if !v.is_null() && !is_placeholder(v) => {
                            *v = Value::String(placeholder(kind));
                            *tally.entry(kind.to_owned()).or_default() += 1;
                        }
                        Some((kind, false)) => redact_text_leaves(v, kind, tally),
                        _ => self.walk(v, depth, tally),
                    }
                }
            }
            _ => {}
        }
    }

    /// A key that is itself a secret (a map keyed by API key) is replaced like any text.
    fn object_keys(&self, map: &mut serde_json::Map<String, Value>, tally: &mut Tally) {
        let mut local = Tally::new();
        let renamed: Vec<String> = map.keys().map(|k| self.text(k, &mut local)).collect();
        if local.is_empty() {
            return;
        }
        merge(tally, local);
        let old = std::mem::take(map);
        // Two keys that redact alike keep the later value: both were secrets' names.
        *map = renamed
            .into_iter()
            .zip(old.into_iter().map(|(_, v)| v))
            .collect();
    }

    /// The kind a key's value is redacted as, and whether the whole value goes (`true`: a
    /// named key or one that only holds secrets) or only its text (a key containing a secret
    /// word, which may also name a count).
    fn key_kind(&self, key: &str) -> Option<(&str, bool)> {
        let norm = normalize_key(key);
        if let Some(kind) = self.keys.get(&norm) {
            return Some((kind.as_str(), true));
        }
        SECRET_WORDS
            .iter()
            .any(|w| norm.contains(w))
            .then_some(("secret", false))
    }

    /// A string: parsed and redacted as a document when it holds a JSON object or array (and
    /// is within the depth and size bounds), otherwise scanned as text. Kept byte for byte
    /// when nothing in it was redacted.
    fn string(&self, text: &str, depth: usize, tally: &mut Tally) -> String {
        match embedded_json(text, depth) {
            Some(mut v) => {
                let before = total(tally);
                self.walk(&mut v, depth + 1, tally);
                if total(tally) == before {
                    text.to_owned()
                } else {
                    v.to_string()
                }
            }
            None => self.text(text, tally),
        }
    }

    /// Redacts text that may hold a JSON document (a tool result): as a document when it
    /// parses as an object or array, else as free text.
    pub(crate) fn text_or_json(&self, text: &str, tally: &mut Tally) -> String {
        // Not size-bounded: the result is a field of a log line already parsed whole, so
        // parsing it again costs no more; the bound is for strings nested inside it.
        match json_container(text) {
            Some(mut v) => {
                let before = total(tally);
                self.document_at(&mut v, 1, tally);
                if total(tally) == before {
                    text.to_owned()
                } else {
                    v.to_string()
                }
            }
            None => self.text(text, tally),
        }
    }

    /// An id (a tool call's, a span's) with a secret in it is replaced whole, by
    /// `redacted_<kind>_<n>`: the same id always by the same replacement within `ids`, so a
    /// tool result still answers its call, and in the letters, digits and `_` every provider
    /// accepts in an id (a `[REDACTED:…]` placeholder is not a valid Anthropic id).
    pub fn id(&self, id: &str, ids: &mut Ids, tally: &mut Tally) -> String {
        if let Some(done) = ids.replaced.get(id) {
            return done.clone();
        }
        let mut local = Tally::new();
        if self.text(id, &mut local) == id {
            return id.to_owned();
        }
        let kind = local.keys().next().cloned().unwrap_or_else(|| "id".into());
        merge(tally, local);
        let mut n = ids.replaced.len() + 1;
        let mut fresh = format!("redacted_{kind}_{n}");
        while ids.taken.contains(&fresh) {
            n += 1;
            fresh = format!("redacted_{kind}_{n}");
        }
        ids.taken.insert(fresh.clone());
        ids.replaced.insert(id.to_owned(), fresh.clone());
        fresh
    }
}

/// The ids of one conversation that were replaced, by original.
#[derive(Debug, Default)]
pub struct Ids {
    replaced: HashMap<String, String>,
    /// Every id of the conversation as logged and every replacement handed out, so a
    /// replacement never equals another id.
    taken: HashSet<String>,
}

impl Ids {
    pub fn new<'a>(originals: impl IntoIterator<Item = &'a str>) -> Ids {
        Ids {
            replaced: HashMap::new(),
            taken: originals.into_iter().map(str::to_owned).collect(),
        }
    }
}

/// The value of a key containing a secret word: every string in it goes, numbers and
/// booleans stay.
fn redact_text_leaves(value: &mut Value, kind: &str, tally: &mut Tally) {
    match value {
        Value::String(s) if !s.is_empty() && !s.starts_with(PLACEHOLDER_PREFIX) => {
            *s = placeholder(kind);
            *tally.entry(kind.to_owned()).or_default() += 1;
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| redact_text_leaves(v, kind, tally)),
        Value::Object(map) => map
            .values_mut()
            .for_each(|v| redact_text_leaves(v, kind, tally)),
        _ => {}
    }
}

/// `text` as a JSON document, when it is one and may be parsed at this depth.
fn embedded_json(text: &str, depth: usize) -> Option<Value> {
    if depth >= MAX_EMBEDDED_DEPTH || text.len() > MAX_EMBEDDED_BYTES {
        return None;
    }
    json_container(text)
}

/// `text` parsed, when it is a JSON object, array, or string: a string is a body encoded
/// twice (`"{\"token\": …}"`), which the walk parses again. Numbers and words are left as
/// text, and text that cannot start a document is not handed to the parser at all.
fn json_container(text: &str) -> Option<Value> {
    if !text.trim_start().starts_with(['{', '[', '"']) {
        return None;
    }
    match serde_json::from_str::<Value>(text) {
        Ok(v @ (Value::Object(_) | Value::Array(_) | Value::String(_))) => Some(v),
        _ => None,
    }
}

fn total(tally: &Tally) -> usize {
    tally.values().sum()
}

fn merge(tally: &mut Tally, other: Tally) {
    for (kind, n) in other {
        *tally.entry(kind).or_default() += n;
    }
}

/// The kinds of secrets looked for in every string, whatever was named, and their patterns.
/// Most specific first: a JWT inside a bearer header is reported as the header.
///
/// A token pattern (every one but the private key's armour) matches only where a token can
/// start: at the start of the text or after a character that is not a letter or digit. That
/// is wider than a regex `\b`, which counts `_` as part of a word and so kept `call_sk-proj-…`
/// and `key_sk-proj-…` whole; `-`, `.`, `:`, `/`, `=`, quotes and spaces were boundaries
/// already. A letter or digit before the prefix still makes it part of a word:
/// `desk-mounted-monitor-stand` is not a key.
///
/// A token whose own syntax joins words with `_` (Stripe's `pk_test_…`, GitHub's `ghp_…`)
/// cannot be told from a snake_case word by its prefix when an `_` joins it to the word before
/// (`orders_pk_test_0123456789abcdef`, a constraint's name): there, its `body` must also look
/// random ([`looks_random`]) to be redacted, as a real key's does; at any other boundary it is
/// redacted whatever its body.
const SECRET_PATTERNS: &[(&str, &str)] = &[
    (
        "private_key",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
    ),
    // A token has a digit somewhere; "the bearer responsibilities" has none.
    (
        "bearer_token",
        r"(?i:bearer)\s+[A-Za-z._~+/=-]*\d[A-Za-z0-9._~+/=-]{11,}",
    ),
    (
        "jwt",
        r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    ),
    ("api_key", r"sk-[A-Za-z0-9_-]{20,}"),
    (
        "api_key",
        r"[rsp]k_(?:live|test)_(?P<body>[A-Za-z0-9]{16,})",
    ),
    // Exactly 20 characters: a longer run of letters and digits is some other word.
    (
        "aws_key",
        r"(?:AKIA|ASIA)[0-9A-Z]{16}(?P<longer>[\p{L}\p{N}]*)",
    ),
    ("github_token", r"gh[pousr]_(?P<body>[A-Za-z0-9]{36,})"),
    ("github_token", r"github_pat_(?P<body>[A-Za-z0-9_]{22,})"),
    ("slack_token", r"xox[abposr]-[A-Za-z0-9-]{10,}"),
    ("google_api_key", r"AIza[0-9A-Za-z_-]{35}"),
];

/// Where a token may start: the start of the text, or the one character before it (kept in
/// the output) when that is not a letter or digit. Consuming that character instead of
/// looking behind keeps the regex crate's linear-time matching; two tokens never share it,
/// since each token ends before a character outside its own class.
const TOKEN_START: &str = r"(?:^|(?P<before>[^\p{L}\p{N}]))";

/// Whether a token's body reads as generated rather than written: it mixes capitals, small
/// letters and digits, as base62 keys do (24 random characters miss one of the three about
/// once in 400,000 draws) and snake_case words do not.
fn looks_random(body: &str) -> bool {
    body.chars().any(|c| c.is_ascii_uppercase())
        && body.chars().any(|c| c.is_ascii_lowercase())
        && body.chars().any(|c| c.is_ascii_digit())
}

fn secret_patterns() -> Result<Vec<Pattern>, RedactError> {
    SECRET_PATTERNS
        .iter()
        .map(|&(kind, p)| {
            let p = if kind == "private_key" {
                format!("(?P<secret>{p})")
            } else {
                format!("{TOKEN_START}(?P<secret>{p})")
            };
            Ok(Pattern {
                kind,
                regex: compiled(&p)?,
            })
        })
        .collect()
}

fn is_placeholder(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s.starts_with(PLACEHOLDER_PREFIX))
}

/// The segments of a JSON path after its `$`, or what is wrong with it.
fn parse_path(path: &str) -> Result<Vec<Segment>, &'static str> {
    let mut segments = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let key = &r[..end];
            if key.is_empty() {
                return Err("empty key in the path");
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
            return Err("a path is `$.key.key`, with `[n]` or `[*]` for array items");
        }
    }
    if segments.is_empty() {
        return Err("the path names no field");
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
    fn keys_are_redacted_wherever_a_token_can_start_and_words_stay() {
        let r = redactor(&[]);
        let key = "sk-proj-Abc123def456ghi789jkl012";
        // (text, what it becomes): every separator a key may be glued after.
        let redacted = [
            (key.to_owned(), "[REDACTED:api_key]".to_owned()),
            (format!("call_{key}"), "call_[REDACTED:api_key]".to_owned()),
            (format!("key_{key}"), "key_[REDACTED:api_key]".to_owned()),
            (format!("__{key}__"), "__[REDACTED:api_key]".to_owned()),
            (format!("id-{key}"), "id-[REDACTED:api_key]".to_owned()),
            (format!("v1.{key}"), "v1.[REDACTED:api_key]".to_owned()),
            (format!("key:{key}"), "key:[REDACTED:api_key]".to_owned()),
            (
                format!("https://h/{key}"),
                "https://h/[REDACTED:api_key]".to_owned(),
            ),
            (format!("k={key}"), "k=[REDACTED:api_key]".to_owned()),
            (format!("\"{key}\""), "\"[REDACTED:api_key]\"".to_owned()),
            (format!("a {key} b"), "a [REDACTED:api_key] b".to_owned()),
            (
                format!("{key},{key}"),
                "[REDACTED:api_key],[REDACTED:api_key]".to_owned(),
            ),
            (format!("é_{key}"), "é_[REDACTED:api_key]".to_owned()),
            (
                "stripe_sk_live_Glu3dStripe0000111122223333".into(),
                "stripe_[REDACTED:api_key]".into(),
            ),
            (
                "pk_test_0123456789abcdef".into(),
                "[REDACTED:api_key]".into(),
            ),
            (
                "key=pk_test_0123456789abcdef".into(),
                "key=[REDACTED:api_key]".into(),
            ),
            (
                "aws_AKIAIOSFODNN7EXAMPLE_prod".into(),
                "aws_[REDACTED:aws_key]_prod".into(),
            ),
            (
                "AKIAIOSFODNN7EXAMPLE,AKIAIOSFODNN7EXAMPLE".into(),
                "[REDACTED:aws_key],[REDACTED:aws_key]".into(),
            ),
            (
                "gh_ghp_0123456789abcdefghijABCDEFGHIJ012345".into(),
                "gh_[REDACTED:github_token]".into(),
            ),
            (
                "env_xoxb-0123456789-abcdef".into(),
                "env_[REDACTED:slack_token]".into(),
            ),
            (
                "g_AIzaSyA0123456789abcdefghijklmnopqrstuv".into(),
                "g_[REDACTED:google_api_key]".into(),
            ),
            (
                "t_eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTYifQ.c2lnbmF0dXJlX3NpZw".into(),
                "t_[REDACTED:jwt]".into(),
            ),
            (
                "auth_Bearer abc123def456ghi789".into(),
                "auth_[REDACTED:bearer_token]".into(),
            ),
        ];
        for (text, want) in &redacted {
            let mut tally = Tally::new();
            assert_eq!(&r.text(text, &mut tally), want, "{text}");
            assert!(total(&tally) >= 1, "{text}");
        }
        // A letter or digit before the prefix makes it part of a word.
        let kept = [
            "the desk-mounted-monitor-stand-holder",
            "a task-force-alpha-bravo-charlie-delta",
            "risk-adjusted-return-on-capital-2024",
            "disk_live_0123456789abcdef0123",
            // snake_case words that hold a `_`-joined token's prefix
            "orders_pk_test_0123456789abcdef",
            "stripe_sk_live_0123456789abcdef",
            "idx_rk_live_customerordersbydate",
            "repo_ghp_0123456789abcdefghij0123456789abcdefgh",
            "xAKIAIOSFODNN7EXAMPLE",
            "AKIAIOSFODNN7EXAMPLE1234",
            "thegh_0123456789abcdefghijABCDEFGHIJ012345",
            "the bearer responsibilities of a courier",
            "call_0 and tool_use_id toolu_01A09q90qw90lq917835lq9",
        ];
        for text in kept {
            let mut tally = Tally::new();
            assert_eq!(r.text(text, &mut tally), text);
            assert!(tally.is_empty(), "{text}: {tally:?}");
        }
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
    fn secret_keys_match_in_every_naming_style_and_counts_stay() {
        let r = redactor(&["e-mail"]);
        let mut doc = json!({
            "clientSecret": "cs1", "ClientSecret": "cs2", "client-secret": "cs3",
            "CLIENT_SECRET": "cs4", "client.secret": "cs5", "accessToken": "at1",
            "X-Api-Key": "k1", "stripeApiKey": "k2", "db_password": "p1", "SESSION_ID": "s1",
            "userCredentials": ["c1", {"kind": "c2"}], "Password": 1234, "eMail": "a@b.io",
            "max_tokens": 512, "maxTokens": 512, "input_tokens": 7, "tokens_per_minute": 900,
            "useCookies": true, "refreshToken": null, "model": "gpt", "note": "no token here"
        });
        let mut tally = Tally::new();
        r.document(&mut doc, &mut tally);
        let secret = json!("[REDACTED:secret]");
        for key in [
            "clientSecret",
            "ClientSecret",
            "client-secret",
            "CLIENT_SECRET",
            "client.secret",
            "accessToken",
            "X-Api-Key",
            "stripeApiKey",
            "db_password",
            "SESSION_ID",
            "Password",
        ] {
            assert_eq!(doc[key], secret, "{key}");
        }
        assert_eq!(doc["userCredentials"], json!([secret, {"kind": secret}]));
        assert_eq!(doc["eMail"], "[REDACTED:e-mail]");
        for key in [
            "max_tokens",
            "maxTokens",
            "input_tokens",
            "tokens_per_minute",
        ] {
            assert!(doc[key].is_number(), "{key}: a count is not a secret");
        }
        assert_eq!(doc["useCookies"], true);
        assert_eq!(doc["refreshToken"], Value::Null);
        assert_eq!(doc["model"], "gpt");
        assert_eq!(doc["note"], "no token here");
        assert_eq!(tally["secret"], 13);
    }

    #[test]
    fn json_inside_strings_is_redacted_as_a_document_within_bounds() {
        let r = redactor(&[]);
        let mut tally = Tally::new();
        // A tool result whose field holds a JSON-encoded body, itself holding another.
        let inner = json!({"Session-Id": "sess_1", "n": 1}).to_string();
        let result = json!({"body": json!({"token": "abc123", "data": inner}).to_string()});
        let out: Value = serde_json::from_str(&r.text_or_json(&result.to_string(), &mut tally))
            .expect("still JSON");
        let body: Value = serde_json::from_str(out["body"].as_str().unwrap()).unwrap();
        assert_eq!(body["token"], "[REDACTED:secret]");
        let data: Value = serde_json::from_str(body["data"].as_str().unwrap()).unwrap();
        assert_eq!(data, json!({"Session-Id": "[REDACTED:secret]", "n": 1}));
        // Nothing to redact: the text is kept byte for byte, spacing included.
        let plain = "{ \"status\" : \"ok\" }";
        assert_eq!(r.text_or_json(plain, &mut Tally::new()), plain);
        // Nested deeper than the bound: scanned as text, so a key is still caught but a
        // `token` field is not parsed out, and nothing recurses without end.
        let mut deep = json!({"password": "p"}).to_string();
        for _ in 0..MAX_EMBEDDED_DEPTH {
            deep = json!({"wrap": deep}).to_string();
        }
        assert_eq!(r.text_or_json(&deep, &mut Tally::new()), deep);
        let mut shallow = json!({"password": "p"}).to_string();
        for _ in 0..MAX_EMBEDDED_DEPTH - 1 {
            shallow = json!({"wrap": shallow}).to_string();
        }
        let out = r.text_or_json(&shallow, &mut Tally::new());
        assert!(out.contains("[REDACTED:secret]"), "{out}");
        // Past the size bound a nested string is text: patterns only.
        let big = json!({"token": "t0k3n", "pad": "x".repeat(MAX_EMBEDDED_BYTES)}).to_string();
        let mut doc = json!({"blob": big, "key": "sk-proj-Abc123def456ghi789jkl012"});
        r.document(&mut doc, &mut Tally::new());
        assert!(doc["blob"].as_str().unwrap().contains("t0k3n"));
        assert_eq!(doc["key"], "[REDACTED:api_key]");
    }

    #[test]
    fn ids_with_secrets_are_replaced_consistently() {
        let r = redactor(&[]);
        let key = "sk-proj-Abc123def456ghi789jkl012";
        let other = "sk-proj-Zyx987wvu654tsr321qpo000";
        let mut ids = Ids::new([key, other, "call_1", "redacted_api_key_1"]);
        let mut tally = Tally::new();
        let first = r.id(key, &mut ids, &mut tally);
        assert_eq!(first, "redacted_api_key_2", "never a logged id");
        assert_eq!(r.id(key, &mut ids, &mut tally), first);
        let second = r.id(other, &mut ids, &mut tally);
        assert!(second.starts_with("redacted_api_key_") && second != first);
        assert_eq!(r.id("call_1", &mut ids, &mut tally), "call_1");
        assert_eq!(tally["api_key"], 2, "counted once per id");
        // Keys holding the secret are replaced too: the map no longer names it.
        let mut doc = json!({key: 3});
        r.document(&mut doc, &mut tally);
        assert_eq!(doc, json!({"[REDACTED:api_key]": 3}));
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
        let err = |s: &str| {
            Redactor::new(&[s.to_owned()])
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(err("$.a[").contains("`[` without `]`"));
        assert!(err("$").contains("names no field"));
        assert!(err("e mail").contains("a field is a key name"));
    }
}
