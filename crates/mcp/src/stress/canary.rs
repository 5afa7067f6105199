//! Canaries: the mark each call leaves in the free strings of its arguments, at any depth,
//! and finding another session's marks in an answer (leakage).
//!
//! Where a canary goes is decided once per dataset call, by walking its arguments beside the
//! tool's input schema: a string is free when its schema declares it a string and leaves it
//! open (no `enum`, `const`, `format`, `pattern` or short `maxLength`), and no `--no-canary`
//! path covers it. Every string the walk meets is either canaried or kept, with the reason.

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;
use serde_json::Value;

/// What every canary starts with.
const CANARY_PREFIX: &str = "tscanary-";

/// The mark one call leaves in its arguments: `tscanary-<run>-<session>-<call>-<slot>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Canary {
    /// Random per run, so a result replaying an earlier run's argument is caught too.
    pub run: u32,
    pub session: u32,
    pub call: u64,
    /// Which of the call's canaried strings it was written into (the index in the call's
    /// [`Placement::canaried`]), so a leak names the argument it came through. `None` for the
    /// call's mark before it is written, and in a canary of a release before slots.
    pub slot: Option<u32>,
}

impl std::fmt::Display for Canary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{CANARY_PREFIX}{:08x}-{}-{}",
            self.run, self.session, self.call
        )?;
        match self.slot {
            Some(slot) => write!(f, "-{slot}"),
            None => Ok(()),
        }
    }
}

static CANARY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"tscanary-([0-9a-f]{8})-([0-9]{1,9})-([0-9]{1,19})(?:-([0-9]{1,9}))?")
        .expect("static regex is valid")
});

/// Every canary in `text`, in order of appearance.
pub(crate) fn find_canaries(text: &str) -> Vec<Canary> {
    CANARY
        .captures_iter(text)
        .filter_map(|c| {
            Some(Canary {
                run: u32::from_str_radix(&c[1], 16).ok()?,
                session: c[2].parse().ok()?,
                call: c[3].parse().ok()?,
                slot: match c.get(4) {
                    Some(slot) => Some(slot.as_str().parse().ok()?),
                    None => None,
                },
            })
        })
        .collect()
}

/// The canaries in `text` that belong to another session than `session` of run `run`, once
/// each.
pub(crate) fn foreign_canaries(text: &str, run: u32, session: u32) -> Vec<Canary> {
    let mut found: Vec<Canary> = find_canaries(text)
        .into_iter()
        .filter(|c| (c.run, c.session) != (run, session))
        .collect();
    found.sort();
    found.dedup();
    found
}

/// One step into a call's arguments.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Step {
    /// A property of an object.
    Key(String),
    /// An element of an array.
    Index(usize),
}

/// Where a value sits in a call's arguments. Written `entities[0].name`; its shape (every
/// index left out) `entities[].name`.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ArgPath(pub Vec<Step>);

impl ArgPath {
    /// The path with every index written `[]`: the same field in every element of an array.
    pub fn shape(&self) -> String {
        self.write(|_| String::new())
    }

    fn write(&self, index: impl Fn(usize) -> String) -> String {
        let mut out = String::new();
        for step in &self.0 {
            match step {
                Step::Key(k) if out.is_empty() => out.push_str(k),
                Step::Key(k) => {
                    out.push('.');
                    out.push_str(k);
                }
                Step::Index(i) => {
                    out.push('[');
                    out.push_str(&index(*i));
                    out.push(']');
                }
            }
        }
        out
    }

    /// The string at this path of `args`, to write a canary into.
    fn string_in<'a>(&self, args: &'a mut Value) -> Option<&'a mut String> {
        let mut at = args;
        for step in &self.0 {
            at = match step {
                Step::Key(k) => at.get_mut(k.as_str())?,
                Step::Index(i) => at.get_mut(*i)?,
            };
        }
        match at {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
}

impl std::fmt::Display for ArgPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.write(|i| i.to_string()))
    }
}

/// One step of a `--no-canary` path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Selector {
    Key(String),
    /// `[N]`: that element only.
    Index(usize),
    /// `[]`: every element.
    AnyIndex,
}

/// A `--no-canary` path: keys joined by `.`, each followed by any number of `[N]` (that
/// element) or `[]` (every element), e.g. `entities[0].name` or `entities[].observations`.
/// A key written without brackets reaches into arrays at any index, so `entities.name` is
/// `entities[].name`. It covers the value it names and everything below it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgSelector(Vec<Selector>);

impl ArgSelector {
    /// The path parsed; `None` when it is not one (an empty key, an unclosed or non-numeric
    /// bracket).
    pub fn parse(text: &str) -> Option<Self> {
        let mut steps = Vec::new();
        for part in text.split('.') {
            let (key, mut rest) = part.split_at(part.find('[').unwrap_or(part.len()));
            if key.is_empty() || key.contains(']') {
                return None;
            }
            steps.push(Selector::Key(key.to_owned()));
            while let Some(after) = rest.strip_prefix('[') {
                let (inside, tail) = after.split_once(']')?;
                steps.push(match inside {
                    "" => Selector::AnyIndex,
                    n => Selector::Index(n.parse().ok()?),
                });
                rest = tail;
            }
            if !rest.is_empty() {
                return None;
            }
        }
        Some(Self(steps))
    }

    /// Whether `path` is the value this names or lies below it.
    pub fn covers(&self, path: &ArgPath) -> bool {
        let mut wanted = self.0.iter().peekable();
        for step in &path.0 {
            let Some(next) = wanted.peek() else {
                return true;
            };
            match (next, step) {
                (Selector::Key(k), Step::Key(s)) if k == s => {}
                (Selector::Index(i), Step::Index(s)) if i == s => {}
                (Selector::AnyIndex, Step::Index(_)) => {}
                // A key without brackets passes through the arrays on its way.
                (Selector::Key(_), Step::Index(_)) => continue,
                _ => return false,
            }
            wanted.next();
        }
        wanted.peek().is_none()
    }

    /// Whether `args` holds a string this covers (so a misspelt path is refused before a
    /// run rather than canaried).
    pub fn finds_in(&self, args: &Value) -> bool {
        place_canaries(args, &Value::Null, std::slice::from_ref(self)).excluded > 0
    }
}

/// Most levels of objects and arrays a canary is looked for in; deeper strings are kept.
pub const MAX_ARG_DEPTH: usize = 32;
/// Most values of one call's arguments looked at; the strings past them are kept.
pub const MAX_ARG_VALUES: usize = 4096;
/// Most `$ref`s followed to find one value's schema (they may go round in a circle).
const MAX_REF_HOPS: usize = 16;

/// Shortest `maxLength` a free string may declare: the canary and a space must fit after a
/// short value.
pub const MIN_FREE_MAX_LENGTH: u64 = 64;

/// Why a string was sent as the dataset wrote it, without a canary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeptReason {
    /// A `--no-canary` path covers it (and the schema leaves it free): the server must find
    /// the value as written.
    NoCanary,
    Enum,
    Const,
    Format,
    Pattern,
    /// `maxLength` under [`MIN_FREE_MAX_LENGTH`].
    ShortMaxLength,
    /// The schema does not declare a string there (or says nothing about the field).
    NotDeclaredString,
    /// Below [`MAX_ARG_DEPTH`] levels: the walk did not go there.
    TooDeep,
    /// Past the first [`MAX_ARG_VALUES`] values: the walk stopped there.
    TooMany,
}

/// Where one call's canary goes, and which strings it leaves alone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Placement {
    /// The strings that carry the canary, in the order of the arguments; a canary's slot is
    /// its index here.
    pub canaried: Vec<ArgPath>,
    /// The strings (or, past a bound, the place the walk stopped) sent as written.
    pub kept: Vec<(ArgPath, KeptReason)>,
    /// How many strings a `--no-canary` path covers, whatever their schema says.
    pub excluded: usize,
}

/// Where `args`' canary goes, given the tool's input `schema` and the `--no-canary` paths
/// of the tool.
pub(crate) fn place_canaries(args: &Value, schema: &Value, excluded: &[ArgSelector]) -> Placement {
    let mut walk = Walk {
        root: schema,
        excluded,
        placement: Placement::default(),
        seen: 0,
    };
    walk.visit(args, Some(schema), &mut ArgPath::default());
    walk.placement
}

/// One walk through a call's arguments, bounded in depth and in values looked at.
struct Walk<'a> {
    root: &'a Value,
    excluded: &'a [ArgSelector],
    placement: Placement,
    seen: usize,
}

impl Walk<'_> {
    /// Returns false once the value bound is hit: the walk ends there.
    fn visit(&mut self, value: &Value, schema: Option<&Value>, path: &mut ArgPath) -> bool {
        self.seen += 1;
        if self.seen > MAX_ARG_VALUES {
            self.placement
                .kept
                .push((path.clone(), KeptReason::TooMany));
            return false;
        }
        let schema = schema.map(|s| resolve_ref(self.root, s));
        let is_container = matches!(value, Value::Object(_) | Value::Array(_));
        if is_container && path.0.len() >= MAX_ARG_DEPTH {
            self.placement
                .kept
                .push((path.clone(), KeptReason::TooDeep));
            return true;
        }
        match value {
            Value::String(_) => {
                let excluded = self.excluded.iter().any(|e| e.covers(path));
                self.placement.excluded += usize::from(excluded);
                // The schema's reason first: a `--no-canary` there changes nothing.
                let reason =
                    judge_string(self.root, schema).or(excluded.then_some(KeptReason::NoCanary));
                match reason {
                    None => self.placement.canaried.push(path.clone()),
                    Some(r) => self.placement.kept.push((path.clone(), r)),
                }
                true
            }
            Value::Object(map) => map.iter().all(|(key, child)| {
                let child_schema = schema.and_then(|s| property_schema(self.root, s, key));
                path.0.push(Step::Key(key.clone()));
                let go_on = self.visit(child, child_schema, path);
                path.0.pop();
                go_on
            }),
            Value::Array(items) => items.iter().enumerate().all(|(i, child)| {
                let child_schema = schema.and_then(|s| item_schema(self.root, s, i));
                path.0.push(Step::Index(i));
                let go_on = self.visit(child, child_schema, path);
                path.0.pop();
                go_on
            }),
            _ => true,
        }
    }
}

/// `schema` with its `$ref`s (local, `#/...`) followed, or as it is when one does not resolve.
fn resolve_ref<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    let mut at = schema;
    for _ in 0..MAX_REF_HOPS {
        let Some(target) = at
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|pointer| root.pointer(pointer))
        else {
            break;
        };
        at = target;
    }
    at
}

/// `schema` and the branches of its `anyOf`, `oneOf` and `allOf` (one level: a nullable or
/// optional value is written as a union of a type and `null`).
fn alternatives<'a>(root: &'a Value, schema: &'a Value) -> impl Iterator<Item = &'a Value> {
    let branches = ["anyOf", "oneOf", "allOf"]
        .into_iter()
        .filter_map(move |k| schema.get(k).and_then(Value::as_array))
        .flatten()
        .map(move |b| resolve_ref(root, b));
    std::iter::once(schema).chain(branches)
}

/// The schema of property `key` of an object of `schema`: its `properties` entry, or an
/// `additionalProperties` schema.
fn property_schema<'a>(root: &'a Value, schema: &'a Value, key: &str) -> Option<&'a Value> {
    let mut alts = alternatives(root, schema);
    alts.find_map(|s| s.get("properties").and_then(|p| p.get(key)))
        .or_else(|| {
            alternatives(root, schema)
                .find_map(|s| s.get("additionalProperties").filter(|a| a.is_object()))
        })
}

/// The schema of element `index` of an array of `schema`: `prefixItems`, `items`, or a
/// draft-4 tuple's `items` entry.
fn item_schema<'a>(root: &'a Value, schema: &'a Value, index: usize) -> Option<&'a Value> {
    alternatives(root, schema).find_map(|s| {
        s.get("prefixItems")
            .and_then(|p| p.get(index))
            .or_else(|| match s.get("items") {
                Some(Value::Array(tuple)) => tuple.get(index),
                Some(items @ Value::Object(_)) => Some(items),
                _ => None,
            })
    })
}

/// Why a string whose schema is `schema` must be kept, or `None` when it is free.
fn judge_string(root: &Value, schema: Option<&Value>) -> Option<KeptReason> {
    let Some(schema) = schema else {
        return Some(KeptReason::NotDeclaredString);
    };
    // A keyword on the schema itself or on an `allOf` part binds every value.
    let binding = std::iter::once(schema).chain(
        schema
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|s| resolve_ref(root, s)),
    );
    for s in binding {
        if let Some(reason) = constraint(s) {
            return Some(reason);
        }
    }
    // Otherwise a string is free when one of the alternatives takes any string.
    let mut first_constraint = None;
    for s in alternatives(root, schema).filter(|s| declares_string(s)) {
        match constraint(s) {
            None => return None,
            Some(reason) => {
                first_constraint.get_or_insert(reason);
            }
        }
    }
    Some(first_constraint.unwrap_or(KeptReason::NotDeclaredString))
}

fn declares_string(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
        _ => false,
    }
}

/// The keyword of `schema` that asks for a value the server will recognise.
fn constraint(schema: &Value) -> Option<KeptReason> {
    let keywords = [
        ("enum", KeptReason::Enum),
        ("const", KeptReason::Const),
        ("format", KeptReason::Format),
        ("pattern", KeptReason::Pattern),
    ];
    if let Some((_, reason)) = keywords.iter().find(|(k, _)| schema.get(k).is_some()) {
        return Some(*reason);
    }
    schema
        .get("maxLength")
        .and_then(Value::as_u64)
        .is_some_and(|m| m < MIN_FREE_MAX_LENGTH)
        .then_some(KeptReason::ShortMaxLength)
}

/// `args` with `canary` appended (after a space) to the string at each of `at`, each with its
/// slot.
pub(crate) fn plant_canary(args: &Value, at: &[ArgPath], canary: Canary) -> Value {
    let mut out = args.clone();
    for (slot, path) in at.iter().enumerate() {
        if let Some(s) = path.string_in(&mut out) {
            let mark = Canary {
                slot: u32::try_from(slot).ok(),
                ..canary
            };
            s.push(' ');
            s.push_str(&mark.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const MARK: Canary = Canary {
        run: 1,
        session: 2,
        call: 3,
        slot: None,
    };

    fn path(text: &str) -> ArgPath {
        let mut steps = Vec::new();
        for part in text.split('.') {
            let (key, rest) = part.split_at(part.find('[').unwrap_or(part.len()));
            steps.push(Step::Key(key.to_owned()));
            for index in rest.split(['[', ']']).filter(|i| !i.is_empty()) {
                steps.push(Step::Index(index.parse().unwrap()));
            }
        }
        ArgPath(steps)
    }

    fn canaried(p: &Placement) -> Vec<String> {
        p.canaried.iter().map(ArgPath::to_string).collect()
    }

    fn kept(p: &Placement) -> Vec<(String, KeptReason)> {
        p.kept.iter().map(|(a, r)| (a.to_string(), *r)).collect()
    }

    fn selector(text: &str) -> ArgSelector {
        ArgSelector::parse(text).unwrap()
    }

    #[test]
    fn canaries_round_trip_and_only_other_sessions_leak() {
        let own = Canary {
            run: 0xab,
            session: 1,
            call: 7,
            slot: Some(2),
        };
        assert_eq!(own.to_string(), "tscanary-000000ab-1-7-2");
        let other = Canary {
            run: 0xab,
            session: 12,
            call: 3,
            slot: Some(0),
        };
        // A canary of a release before slots still parses, without one.
        let old_run = Canary {
            run: 0xcd,
            session: 1,
            call: 7,
            slot: None,
        };
        assert_eq!(old_run.to_string(), "tscanary-000000cd-1-7");
        let text = format!("echo: {own} and {other}, {other}; before: {old_run}");
        assert_eq!(find_canaries(&text), vec![own, other, other, old_run]);
        // Session 1 is not a prefix match of session 12, and an earlier run is foreign.
        assert_eq!(foreign_canaries(&text, 0xab, 1), vec![other, old_run]);
        assert_eq!(foreign_canaries(&own.to_string(), 0xab, 1), vec![]);
        assert_eq!(find_canaries("tscanary-xyz-1-2"), vec![]);
    }

    #[test]
    fn top_level_strings_the_schema_leaves_free_carry_the_canary() {
        let schema = json!({"type": "object", "properties": {
            "message": {"type": "string"},
            "unit": {"type": "string", "enum": ["c", "f"]},
            "path": {"type": "string", "pattern": "^/"},
            "when": {"type": "string", "format": "date"},
            "code": {"type": "string", "maxLength": 8},
            "kind": {"type": "string", "const": "note"},
            "note": {"type": ["string", "null"], "maxLength": 500},
            "count": {"type": "integer"}}});
        let args = json!({"message": "hi", "unit": "c", "path": "/a", "when": "2026-01-02",
            "code": "x1", "kind": "note", "note": "n", "count": 3, "extra": "e"});
        let p = place_canaries(&args, &schema, &[]);
        assert_eq!(canaried(&p), ["message", "note"]);
        assert_eq!(
            kept(&p),
            [
                ("unit".into(), KeptReason::Enum),
                ("path".into(), KeptReason::Pattern),
                ("when".into(), KeptReason::Format),
                ("code".into(), KeptReason::ShortMaxLength),
                ("kind".into(), KeptReason::Const),
                // Not in the schema: the server may read it in a way the schema does not say.
                ("extra".into(), KeptReason::NotDeclaredString),
            ]
        );
        assert_eq!(
            plant_canary(&args, &p.canaried, MARK)["message"],
            "hi tscanary-00000001-2-3-0"
        );
        assert_eq!(
            plant_canary(&args, &p.canaried, MARK)["note"],
            "n tscanary-00000001-2-3-1"
        );
        // No schema at all: nothing is known to be free.
        let bare = place_canaries(&json!({"a": "b"}), &json!({"type": "object"}), &[]);
        assert!(bare.canaried.is_empty());
    }

    /// server-memory's `create_entities`, with a kind that is an enum.
    fn entities_schema() -> Value {
        json!({"type": "object", "properties": {"entities": {"type": "array", "items": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "kind": {"type": "string", "enum": ["person", "place"]},
            "observations": {"type": "array", "items": {"type": "string"}}
        }}}}})
    }

    fn two_entities() -> Value {
        json!({"entities": [
            {"name": "Ada", "kind": "person", "observations": ["math", "engines"]},
            {"name": "Paris", "kind": "place", "observations": []}
        ]})
    }

    #[test]
    fn strings_in_arrays_of_objects_carry_the_canary_at_their_path() {
        let p = place_canaries(&two_entities(), &entities_schema(), &[]);
        assert_eq!(
            canaried(&p),
            [
                "entities[0].name",
                "entities[0].observations[0]",
                "entities[0].observations[1]",
                "entities[1].name"
            ]
        );
        assert_eq!(
            kept(&p),
            [
                ("entities[0].kind".into(), KeptReason::Enum),
                ("entities[1].kind".into(), KeptReason::Enum)
            ]
        );
        assert_eq!(p.canaried[1].shape(), "entities[].observations[]");
        let planted = plant_canary(&two_entities(), &p.canaried, MARK);
        assert_eq!(
            planted,
            json!({"entities": [
                {"name": "Ada tscanary-00000001-2-3-0", "kind": "person",
                 "observations": ["math tscanary-00000001-2-3-1", "engines tscanary-00000001-2-3-2"]},
                {"name": "Paris tscanary-00000001-2-3-3", "kind": "place", "observations": []}
            ]})
        );
    }

    #[test]
    fn no_canary_paths_name_one_element_every_element_or_a_whole_subtree() {
        let args = two_entities();
        let schema = entities_schema();
        let place = |paths: &[&str]| {
            let excluded: Vec<ArgSelector> = paths.iter().map(|p| selector(p)).collect();
            place_canaries(&args, &schema, &excluded)
        };
        // One element's name.
        let p = place(&["entities[0].name"]);
        assert_eq!(p.canaried[0].to_string(), "entities[0].observations[0]");
        assert!(kept(&p).contains(&("entities[0].name".into(), KeptReason::NoCanary)));
        assert!(canaried(&p).contains(&"entities[1].name".to_owned()));
        // Every element's name, written with or without `[]`.
        for every in ["entities.name", "entities[].name"] {
            let p = place(&[every]);
            assert!(!canaried(&p).iter().any(|c| c.ends_with("name")), "{every}");
            assert_eq!(p.excluded, 2);
        }
        // A whole subtree; the schema's own reason wins over --no-canary.
        let p = place(&["entities"]);
        assert!(p.canaried.is_empty());
        assert_eq!(p.excluded, 6);
        assert!(kept(&p).contains(&("entities[1].kind".into(), KeptReason::Enum)));
        let p = place(&["entities.observations[1]"]);
        assert_eq!(canaried(&p).len(), 3);
        // A path the arguments do not hold is found nowhere (the CLI refuses it).
        assert!(selector("entities.name").finds_in(&args));
        assert!(!selector("entities.nmae").finds_in(&args));
        assert!(!selector("entities[5].name").finds_in(&args));
        // The first step is a key: a top-level parameter, as `TOOL.PARAM` always was.
        assert!(selector("path").covers(&path("path")));
        assert!(!selector("path").covers(&path("paths")));
        assert!(!selector("a.b").covers(&path("a")));
        for bad in ["", "a..b", "a[x]", "a[", "a]b", "[0]", "a[0]b", ".a"] {
            assert_eq!(ArgSelector::parse(bad), None, "{bad}");
        }
        assert_eq!(
            ArgSelector::parse("m[0][].v"),
            Some(ArgSelector(vec![
                Selector::Key("m".into()),
                Selector::Index(0),
                Selector::AnyIndex,
                Selector::Key("v".into())
            ]))
        );
    }

    #[test]
    fn refs_unions_and_tuples_are_followed_to_the_string_schema() {
        let schema = json!({
            "type": "object",
            "$defs": {
                "Entity": {"type": "object", "properties": {"name": {"$ref": "#/$defs/Name"}}},
                "Name": {"type": "string"},
                "Loop": {"$ref": "#/$defs/Loop"}
            },
            "properties": {
                "entity": {"$ref": "#/$defs/Entity"},
                "nullable": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "id_or_none": {"anyOf": [{"type": "string", "pattern": "^[0-9]+$"}, {"type": "null"}]},
                "both": {"allOf": [{"type": "string"}, {"format": "uri"}]},
                "pair": {"type": "array", "prefixItems": [{"type": "string", "enum": ["x"]}, {"type": "string"}]},
                "old_pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "loop": {"$ref": "#/$defs/Loop"}
            }
        });
        let args = json!({
            "entity": {"name": "Ada"}, "nullable": "n", "id_or_none": "12", "both": "b",
            "pair": ["x", "y"], "old_pair": ["p", "q"], "labels": {"team": "eval"}, "loop": "l"
        });
        let p = place_canaries(&args, &schema, &[]);
        assert_eq!(
            canaried(&p),
            [
                "entity.name",
                "nullable",
                "pair[1]",
                "old_pair[0]",
                "labels.team"
            ]
        );
        assert_eq!(
            kept(&p),
            [
                ("id_or_none".into(), KeptReason::Pattern),
                ("both".into(), KeptReason::Format),
                ("pair[0]".into(), KeptReason::Enum),
                // The schema says an integer.
                ("old_pair[1]".into(), KeptReason::NotDeclaredString),
                // A `$ref` that goes round in a circle is given up after a few hops.
                ("loop".into(), KeptReason::NotDeclaredString),
            ]
        );
    }

    #[test]
    fn the_walk_is_bounded_in_depth_and_in_values_and_says_which_bound() {
        // 40 levels of `{"a": …}` around a string; the schema says strings at every depth.
        let mut args = json!("deep");
        for _ in 0..40 {
            args = json!({ "a": args });
        }
        let schema = json!({"$ref": "#/$defs/A", "$defs": {"A": {
            "type": ["object", "string"], "properties": {"a": {"$ref": "#/$defs/A"}}}}});
        let p = place_canaries(&args, &schema, &[]);
        assert!(p.canaried.is_empty());
        let (at, reason) = &p.kept[0];
        assert_eq!((at.0.len(), *reason), (MAX_ARG_DEPTH, KeptReason::TooDeep));
        // A string just within the bound is canaried.
        let mut shallow = json!("ok");
        for _ in 0..MAX_ARG_DEPTH {
            shallow = json!({ "a": shallow });
        }
        assert_eq!(place_canaries(&shallow, &schema, &[]).canaried.len(), 1);

        // 5000 strings: the root and the array are two of the values looked at.
        let many: Vec<String> = (0..5000).map(|i| format!("s{i}")).collect();
        let args = json!({"items": many, "after": "never reached"});
        let schema = json!({"type": "object", "properties": {
            "items": {"type": "array", "items": {"type": "string"}},
            "after": {"type": "string"}}});
        let p = place_canaries(&args, &schema, &[]);
        assert_eq!(p.canaried.len(), MAX_ARG_VALUES - 2);
        assert_eq!(
            kept(&p),
            [(
                format!("items[{}]", MAX_ARG_VALUES - 2),
                KeptReason::TooMany
            )]
        );
    }
}
