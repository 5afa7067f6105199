//! Canaries: the mark each call leaves in its free string arguments, and finding another
//! session's marks in an answer (leakage).

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;
use serde_json::Value;

/// What every canary starts with.
pub const CANARY_PREFIX: &str = "tscanary-";

/// The mark one call leaves in its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Canary {
    /// Random per run, so a result replaying an earlier run's argument is caught too.
    pub run: u32,
    pub session: u32,
    pub call: u64,
}

impl std::fmt::Display for Canary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{CANARY_PREFIX}{:08x}-{}-{}",
            self.run, self.session, self.call
        )
    }
}

static CANARY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"tscanary-([0-9a-f]{8})-([0-9]{1,9})-([0-9]{1,19})").expect("static regex is valid")
});

/// Every canary in `text`, in order of appearance.
pub fn find_canaries(text: &str) -> Vec<Canary> {
    CANARY
        .captures_iter(text)
        .filter_map(|c| {
            Some(Canary {
                run: u32::from_str_radix(&c[1], 16).ok()?,
                session: c[2].parse().ok()?,
                call: c[3].parse().ok()?,
            })
        })
        .collect()
}

/// The canaries in `text` that belong to another session than `session` of run `run`, once
/// each.
pub fn foreign_canaries(text: &str, run: u32, session: u32) -> Vec<Canary> {
    let mut found: Vec<Canary> = find_canaries(text)
        .into_iter()
        .filter(|c| (c.run, c.session) != (run, session))
        .collect();
    found.sort();
    found.dedup();
    found
}

/// Shortest `maxLength` a free string may declare: the canary and a space must fit after a
/// short value.
const MIN_FREE_MAX_LENGTH: u64 = 64;

/// The top-level string parameters of `schema` that accept any text, in schema order: the
/// places a canary can go without breaking the call.
pub fn free_string_fields(schema: &Value) -> Vec<String> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .filter(|(_, p)| {
            let is_string = match p.get("type") {
                Some(Value::String(t)) => t == "string",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
                _ => false,
            };
            let constrained = ["enum", "const", "pattern", "format"]
                .iter()
                .any(|k| p.get(k).is_some())
                || p.get("maxLength")
                    .and_then(Value::as_u64)
                    .is_some_and(|m| m < MIN_FREE_MAX_LENGTH);
            is_string && !constrained
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// `args` with `canary` appended (after a space) to each of `fields` that holds a string.
pub fn plant_canary(args: &Value, fields: &[String], canary: &Canary) -> Value {
    let mut out = args.clone();
    if let Value::Object(map) = &mut out {
        for field in fields {
            if let Some(Value::String(s)) = map.get_mut(field) {
                s.push(' ');
                s.push_str(&canary.to_string());
            }
        }
    }
    out
}

/// The fields of `args` a canary goes into: the free string fields it gives a string.
pub fn canary_fields(args: &Value, free: &[String]) -> Vec<String> {
    free.iter()
        .filter(|f| args.get(f.as_str()).is_some_and(Value::is_string))
        .cloned()
        .collect()
}
