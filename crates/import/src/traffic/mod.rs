//! Logged model traffic turned into fixtures (`toolscore import traffic`): each logged model
//! call becomes a case holding the conversation up to the model's decision, the calls it made
//! as the expected calls (with `match` entries suggested for values that vary between runs),
//! and where it came from. Cases are grouped by the catalog the model was shown, one dataset
//! per catalog fingerprint.
//!
//! Redaction runs on each exchange as soon as it is decoded, before anything else reads it, so
//! the counts, the de-duplication and the files all see only redacted text.

pub(crate) mod formats;
pub(crate) mod redact;

use std::collections::{BTreeMap, HashSet};

use regex::Regex;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use formats::{Exchange, Format};
use redact::{Ids, PLACEHOLDER_PREFIX, Redactor, Tally};
use toolscore_core::InputError;
use toolscore_core::Message;
use toolscore_core::catalog::Catalog;

/// One parsed log record and where it is.
pub struct Record {
    pub file: String,
    pub line: usize,
    pub value: Value,
}

/// What to keep: redaction, and the optional stratified sample.
pub struct Options {
    pub redactor: Redactor,
    pub format: Option<Format>,
    /// `--sample N`: at most N cases per dataset, or per tool of each dataset with `per_tool`.
    pub sample: Option<usize>,
    pub per_tool: bool,
    pub seed: u64,
}

/// Imported and skipped cases of one expected tool (`(no call)` for a text reply).
#[derive(Debug, Default)]
pub struct Row {
    pub imported: usize,
    pub skipped: BTreeMap<String, usize>,
}

/// One dataset: a catalog and the cases shown it.
pub struct TrafficDataset {
    pub catalog: Catalog,
    pub cases: Vec<Value>,
    pub rows: BTreeMap<String, Row>,
}

/// Everything an import read, wrote and left out.
#[derive(Default)]
pub struct TrafficImport {
    pub datasets: Vec<TrafficDataset>,
    /// Exchanges skipped before their catalog was known, by reason.
    pub unassigned: BTreeMap<String, usize>,
    /// Exchanges read per format (imported or not).
    pub read: BTreeMap<&'static str, usize>,
    /// OTLP spans that are not model calls (no `gen_ai.input.messages`), not counted as skips.
    pub other_spans: usize,
    pub redacted: Tally,
}

/// A case before de-duplication and sampling.
struct Draft {
    id: String,
    label: String,
    dedup_key: String,
    case: Value,
}

struct Group {
    catalog: Catalog,
    drafts: Vec<Draft>,
    rows: BTreeMap<String, Row>,
}

const NO_CALL: &str = "(no call)";
const DUPLICATE: &str = "near-identical to an earlier conversation with the same expected tool";
const NOT_SAMPLED: &str = "not drawn by --sample";

/// The label a case's row is counted under: the tool, `a + b` for parallel calls.
fn label_of(calls: &[(String, Value)]) -> String {
    if calls.is_empty() {
        NO_CALL.to_owned()
    } else {
        calls
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(" + ")
    }
}

/// Converts every record. `Err` is a record that is no known format, named by file and line.
pub fn import(records: &[Record], options: &Options) -> Result<TrafficImport, InputError> {
    let mut out = TrafficImport::default();
    let mut groups: Vec<Group> = Vec::new();
    let mut used_ids: HashSet<String> = HashSet::new();
    for record in records {
        let decoded = formats::decode(&record.value, options.format)
            .map_err(|e| InputError::at(&record.file, Some(record.line), "", &e))?;
        out.other_spans += decoded.other_spans;
        for skip in decoded.skipped {
            *out.read
                .entry(decoded.format.map_or("unknown", Format::label))
                .or_default() += 1;
            // A reason may quote a field of the log (a role, a part type): printed, so redacted.
            let reason = options.redactor.text(&skip.reason, &mut Tally::new());
            *out.unassigned.entry(reason).or_default() += 1;
        }
        for mut exchange in decoded.exchanges {
            *out.read.entry(exchange.format.label()).or_default() += 1;
            redact_exchange(&mut exchange, &options.redactor, &mut out.redacted);
            let label = label_of(&exchange.calls);
            let catalog = match catalog_of(&exchange.tools) {
                Ok(c) => c,
                Err(reason) => {
                    *out.unassigned.entry(reason).or_default() += 1;
                    continue;
                }
            };
            let index = match groups
                .iter()
                .position(|g| g.catalog.fingerprint == catalog.fingerprint)
            {
                Some(i) => i,
                None => {
                    groups.push(Group {
                        catalog,
                        drafts: Vec::new(),
                        rows: BTreeMap::new(),
                    });
                    groups.len() - 1
                }
            };
            let group = &mut groups[index];
            let row = group.rows.entry(label.clone()).or_default();
            match draft(record, &exchange, &group.catalog, &label, &mut used_ids) {
                Ok(d) => group.drafts.push(d),
                Err(reason) => *row.skipped.entry(reason).or_default() += 1,
            }
        }
    }
    for mut group in groups {
        let kept = dedup(std::mem::take(&mut group.drafts), &mut group.rows);
        let kept = match options.sample {
            Some(n) => sample(kept, n, options.per_tool, options.seed, &mut group.rows),
            None => kept,
        };
        for d in &kept {
            group.rows.entry(d.label.clone()).or_default().imported += 1;
        }
        out.datasets.push(TrafficDataset {
            catalog: group.catalog,
            cases: kept.into_iter().map(|d| d.case).collect(),
            rows: group.rows,
        });
    }
    Ok(out)
}

/// Redacts every field of an exchange that is written: text, arguments (parsed or not), tool
/// results, tool names (as the catalog's names are, so calls still name a catalog tool), the
/// tool descriptions, and ids.
fn redact_exchange(e: &mut Exchange, r: &Redactor, tally: &mut Tally) {
    redact_ids(e, r, tally);
    for m in &mut e.messages {
        match m {
            Message::System { content } | Message::User { content } => {
                *content = r.text(content, tally);
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                if let Some(c) = content {
                    *c = r.text(c, tally);
                }
                for call in tool_calls {
                    call.name = r.text(&call.name, tally);
                    r.document(&mut call.arguments, tally);
                    if let Some(raw) = &mut call.unparsed_arguments {
                        *raw = r.text_or_json(raw, tally);
                    }
                    if let Some(sig) = &mut call.thought_signature {
                        *sig = r.text(sig, tally);
                    }
                }
            }
            Message::Tool { content, .. } => *content = r.text_or_json(content, tally),
        }
    }
    for (name, args) in &mut e.calls {
        *name = r.text(name, tally);
        r.document(args, tally);
    }
    for tool in &mut e.tools {
        r.strings(tool, tally);
    }
}

/// Call ids, result ids and span ids: an id holding a secret is replaced whole, the same id by
/// the same replacement throughout the exchange, so each result still answers its call.
fn redact_ids(e: &mut Exchange, r: &Redactor, tally: &mut Tally) {
    let mut logged: Vec<String> = Vec::new();
    for m in &e.messages {
        match m {
            Message::Assistant { tool_calls, .. } => {
                logged.extend(tool_calls.iter().filter_map(|c| c.id.clone()));
            }
            Message::Tool { call_id, .. } => logged.push(call_id.clone()),
            _ => {}
        }
    }
    if let Some((trace, span)) = &e.span {
        logged.extend([trace.clone(), span.clone()]);
    }
    let mut ids = Ids::new(logged.iter().map(String::as_str));
    for m in &mut e.messages {
        match m {
            Message::Assistant { tool_calls, .. } => {
                for id in tool_calls.iter_mut().filter_map(|c| c.id.as_mut()) {
                    *id = r.id(id, &mut ids, tally);
                }
            }
            Message::Tool { call_id, .. } => *call_id = r.id(call_id, &mut ids, tally),
            _ => {}
        }
    }
    if let Some((trace, span)) = &mut e.span {
        *trace = r.id(trace, &mut ids, tally);
        *span = r.id(span, &mut ids, tally);
    }
}

/// The logged tools as a catalog, refused (with the reason) when toolscore could not show it.
fn catalog_of(tools: &[Value]) -> Result<Catalog, String> {
    let text = json!({"tools": tools}).to_string();
    let catalog =
        toolscore_core::catalog::parse_catalog(&text, "the logged tools").map_err(|e| {
            format!(
                "the logged tools are not a catalog toolscore reads ({})",
                toolscore_core::strip_position(&e.to_string())
            )
        })?;
    toolscore_score::ToolValidators::compile(&catalog)
        .map_err(|(tool, _)| format!("the logged schema of `{tool}` is not valid JSON Schema"))?;
    Ok(catalog)
}

fn draft(
    record: &Record,
    e: &Exchange,
    catalog: &Catalog,
    label: &str,
    used_ids: &mut HashSet<String>,
) -> Result<Draft, String> {
    for (name, _) in &e.calls {
        if catalog.get(name).is_none() {
            return Err(format!(
                "the reply calls `{name}`, which is not in the catalog the model was shown"
            ));
        }
    }
    toolscore_suite::validate_messages(&e.messages).map_err(|(_, msg)| msg)?;
    let grounding = grounding_text(&e.messages);
    let expect = match e.calls.as_slice() {
        [] => json!({"tool": null}),
        [(name, args)] => expected_call(name, args, &grounding),
        calls => json!({"calls": calls
            .iter()
            .map(|(n, a)| expected_call(n, a, &grounding))
            .collect::<Vec<_>>()}),
    };
    let stem = std::path::Path::new(&record.file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "traffic".into());
    let mut id = format!("{stem}-L{}", record.line);
    let mut source = json!({
        "format": e.format.label(),
        "file": record.file,
        "line": record.line,
        "catalog": catalog.fingerprint,
    });
    if let Some((trace, span)) = &e.span {
        id.push('-');
        id.push_str(span);
        source["trace_id"] = json!(trace);
        source["span_id"] = json!(span);
    }
    let mut unique = id.clone();
    let mut n = 2;
    while !used_ids.insert(unique.clone()) {
        unique = format!("{id}-{n}");
        n += 1;
    }
    let case = json!({
        "id": unique,
        "messages": e.messages,
        "expect": expect,
        "tags": ["traffic", e.format.label()],
        "source": source,
    });
    Ok(Draft {
        id: unique,
        label: label.to_owned(),
        dedup_key: format!("{label}\n{}", normalize(&e.messages)),
        case,
    })
}

/// Everything the model could have copied a value from: message text and earlier arguments.
fn grounding_text(messages: &[Message]) -> String {
    let mut text = String::new();
    for m in messages {
        match m {
            Message::System { content }
            | Message::User { content }
            | Message::Tool { content, .. } => text.push_str(content),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                text.push_str(content.as_deref().unwrap_or_default());
                for c in tool_calls {
                    text.push_str(&c.arguments.to_string());
                }
            }
        }
        text.push('\n');
    }
    text
}

fn expected_call(name: &str, args: &Value, grounding: &str) -> Value {
    let mut matchers = BTreeMap::new();
    suggest(args, "", grounding, &mut matchers);
    let mut call = json!({"tool": name, "args": args});
    if !matchers.is_empty() {
        call["match"] = json!(matchers);
    }
    call
}

const TIMESTAMP: &str = r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?";
const DATE: &str = r"\d{4}-\d{2}-\d{2}";

/// `match` entries for values a rerun would not reproduce: redacted values (any value), and
/// values the model did not copy from the conversation: timestamps and dates (their shape),
/// identifiers it made up (any value) and free text it wrote (any non-empty text). Values
/// copied from the conversation stay exact: a model that changes them is wrong.
fn suggest(value: &Value, path: &str, grounding: &str, out: &mut BTreeMap<String, Value>) {
    let child = |k: &str| {
        if path.is_empty() {
            k.to_owned()
        } else {
            format!("{path}.{k}")
        }
    };
    match value {
        Value::Object(map) => map
            .iter()
            .for_each(|(k, v)| suggest(v, &child(k), grounding, out)),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .for_each(|(i, v)| suggest(v, &child(&i.to_string()), grounding, out)),
        Value::String(s) => {
            if let Some(m) = suggestion_for(s, grounding) {
                out.insert(path.to_owned(), m);
            }
        }
        _ => {}
    }
}

fn suggestion_for(s: &str, grounding: &str) -> Option<Value> {
    if s.contains(PLACEHOLDER_PREFIX) {
        return Some(json!("any"));
    }
    if s.is_empty() || grounding.contains(s) {
        return None;
    }
    let whole = |p: &str| Regex::new(&format!("^(?:{p})$")).is_ok_and(|r| r.is_match(s));
    if whole(TIMESTAMP) {
        return Some(json!({"regex": TIMESTAMP}));
    }
    if whole(DATE) {
        return Some(json!({"regex": DATE}));
    }
    let uuid = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
    let prefixed = r"[A-Za-z]{2,12}[_-][A-Za-z0-9_-]*\d[A-Za-z0-9_-]*";
    if whole(uuid) || whole(r"[0-9a-fA-F]{16,}") || (whole(prefixed) && s.len() >= 8) {
        return Some(json!("any"));
    }
    if s.split_whitespace().count() >= 4 {
        return Some(json!({"regex": "(?s).+"}));
    }
    None
}

/// The conversation with ids, numbers, case and spacing taken out, for near-duplicate
/// detection.
fn normalize(messages: &[Message]) -> String {
    let mut text = String::new();
    for m in messages {
        let (role, body) = match m {
            Message::System { content } => ("system", content.clone()),
            Message::User { content } => ("user", content.clone()),
            Message::Tool { content, .. } => ("tool", content.clone()),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let names: Vec<&str> = tool_calls.iter().map(|c| c.name.as_str()).collect();
                (
                    "assistant",
                    format!(
                        "{} {}",
                        content.as_deref().unwrap_or_default(),
                        names.join(" ")
                    ),
                )
            }
        };
        text.push_str(role);
        text.push(':');
        text.push_str(&body);
        text.push('\n');
    }
    let lower = text.to_lowercase();
    let digits = Regex::new(r"[\w\-]*\d[\w\-]*").map(|r| r.replace_all(&lower, "#").into_owned());
    let without = digits.unwrap_or(lower);
    without.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn dedup(drafts: Vec<Draft>, rows: &mut BTreeMap<String, Row>) -> Vec<Draft> {
    let mut seen = HashSet::new();
    let mut kept = Vec::with_capacity(drafts.len());
    for d in drafts {
        if seen.insert(d.dedup_key.clone()) {
            kept.push(d);
        } else {
            *rows
                .entry(d.label.clone())
                .or_default()
                .skipped
                .entry(DUPLICATE.into())
                .or_default() += 1;
        }
    }
    kept
}

/// Keeps `n` cases (per tool with `per_tool`), chosen by a seeded hash of each case id: the
/// same log and seed always draw the same cases, and a case's draw does not depend on which
/// others are in the log.
fn sample(
    drafts: Vec<Draft>,
    n: usize,
    per_tool: bool,
    seed: u64,
    rows: &mut BTreeMap<String, Row>,
) -> Vec<Draft> {
    let rank = |id: &str| {
        let mut h = Sha256::new();
        h.update(seed.to_le_bytes());
        h.update(id.as_bytes());
        h.finalize().to_vec()
    };
    let mut strata: BTreeMap<String, Vec<(Vec<u8>, usize)>> = BTreeMap::new();
    for (i, d) in drafts.iter().enumerate() {
        let key = if per_tool {
            d.label.clone()
        } else {
            String::new()
        };
        strata.entry(key).or_default().push((rank(&d.id), i));
    }
    let mut chosen = HashSet::new();
    for members in strata.values_mut() {
        members.sort();
        chosen.extend(members.iter().take(n).map(|(_, i)| *i));
    }
    let mut kept = Vec::new();
    for (i, d) in drafts.into_iter().enumerate() {
        if chosen.contains(&i) {
            kept.push(d);
        } else {
            *rows
                .entry(d.label)
                .or_default()
                .skipped
                .entry(NOT_SAMPLED.into())
                .or_default() += 1;
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(line: usize, user: &str, call: Option<(&str, Value)>) -> Record {
        let tool_calls = match &call {
            Some((name, args)) => {
                json!([{"id": format!("call_{line}"), "type": "function", "function": {"name": name, "arguments": args.to_string()}}])
            }
            None => json!(null),
        };
        Record {
            file: "logs/chat.jsonl".into(),
            line,
            value: json!({
                "request": {"messages": [{"role": "user", "content": user}], "tools": [
                    {"type": "function", "function": {"name": "get_order", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}},
                    {"type": "function", "function": {"name": "send_email", "parameters": {"type": "object"}}}
                ]},
                "response": {"choices": [{"message": {"role": "assistant", "content": if call.is_none() { json!("Hello!") } else { json!(null) }, "tool_calls": tool_calls}}]}
            }),
        }
    }

    fn options(sample: Option<usize>, per_tool: bool, seed: u64) -> Options {
        Options {
            redactor: Redactor::new(&["email".to_owned()]).unwrap(),
            format: None,
            sample,
            per_tool,
            seed,
        }
    }

    #[test]
    fn suggestions_follow_where_a_value_came_from() {
        let grounding = "Where is order ord_88123? Ship by 2026-12-05.";
        let call = expected_call(
            "x",
            &json!({
                "order_id": "ord_88123",
                "due": "2026-12-05",
                "created_at": "2026-12-03T14:05:00Z",
                "idempotency_key": "5f0c7a8e-1b2d-4c3e-9f4a-0b1c2d3e4f5a",
                "note": "Customer asked where the parcel is",
                "to": "[REDACTED:email]",
                "carrier": "ups",
                "lines": [{"sku": "SKU-99812-B"}]
            }),
            grounding,
        );
        assert_eq!(
            call["match"],
            json!({
                "created_at": {"regex": TIMESTAMP},
                "idempotency_key": "any",
                "note": {"regex": "(?s).+"},
                "to": "any",
                "lines.0.sku": "any"
            })
        );
    }

    #[test]
    fn near_duplicates_are_dropped_and_counted() {
        let records = vec![
            record(
                1,
                "Where is order ord_1001?",
                Some(("get_order", json!({"order_id": "ord_1001"}))),
            ),
            record(
                2,
                "where is   order ORD_2002?",
                Some(("get_order", json!({"order_id": "ord_2002"}))),
            ),
            record(3, "Where is order ord_3003?", None),
            record(
                4,
                "Mail jo@example.com the invoice",
                Some(("send_email", json!({"to": "jo@example.com"}))),
            ),
        ];
        let out = import(&records, &options(None, false, 0)).unwrap();
        assert_eq!(out.datasets.len(), 1);
        let d = &out.datasets[0];
        assert_eq!(d.cases.len(), 3);
        assert_eq!(d.rows["get_order"].imported, 1);
        assert_eq!(d.rows["get_order"].skipped[DUPLICATE], 1);
        assert_eq!(d.rows[NO_CALL].imported, 1);
        let email = d.cases[2].to_string();
        assert!(!email.contains("jo@example.com"), "{email}");
        assert_eq!(d.cases[2]["expect"]["match"], json!({"to": "any"}));
        assert_eq!(d.cases[0]["source"]["line"], json!(1));
        assert_eq!(out.redacted["email"], 2);
    }

    #[test]
    fn the_sample_is_stratified_and_seeded() {
        let records: Vec<Record> = (1..=20)
            .map(|i| {
                if i % 2 == 0 {
                    record(
                        i,
                        &format!("order {i} please, {}", "y".repeat(i)),
                        Some(("get_order", json!({"order_id": format!("ord_{i}")}))),
                    )
                } else {
                    record(i, &format!("hello number {i} of {}", "x".repeat(i)), None)
                }
            })
            .collect();
        let ids = |seed: u64| {
            let out = import(&records, &options(Some(3), true, seed)).unwrap();
            let d = &out.datasets[0];
            assert_eq!(d.rows["get_order"].imported, 3, "{:?}", d.rows);
            assert_eq!(d.rows[NO_CALL].imported, 3);
            assert_eq!(d.rows["get_order"].skipped[NOT_SAMPLED], 7);
            d.cases
                .iter()
                .map(|c| c["id"].to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(7), ids(7));
        assert_ne!(ids(7), ids(8));
    }

    #[test]
    fn calls_outside_the_catalog_and_bad_records() {
        let out = import(
            &[record(1, "delete everything", Some(("drop_db", json!({}))))],
            &options(None, false, 0),
        )
        .unwrap();
        assert_eq!(
            out.datasets[0].rows["drop_db"].skipped["the reply calls `drop_db`, which is not in the catalog the model was shown"],
            1
        );
        let bad = Record {
            file: "x.jsonl".into(),
            line: 3,
            value: json!({"prompt": "hi"}),
        };
        let err = import(&[bad], &options(None, false, 0))
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.starts_with("x.jsonl:3: cannot tell the format"),
            "{err}"
        );
    }
}
