//! Name rules: MCP's character set and length, uniqueness, one convention, names other servers
//! commonly use, and names more generic than the tool.

use crate::RuleId;
use std::collections::BTreeMap;

use super::Raw;
use toolscore_core::catalog::Catalog;

/// Tool names that many published servers expose; two connected servers offering the same
/// one leave the model guessing, and a malicious one can shadow the other.
pub(crate) const COMMON_NAMES: &[&str] = &[
    "search",
    "fetch",
    "query",
    "run",
    "execute",
    "exec",
    "shell",
    "bash",
    "run_command",
    "execute_command",
    "get_status",
    "status",
    "get_info",
    "info",
    "list",
    "get",
    "create",
    "update",
    "delete",
    "read",
    "write",
    "read_file",
    "write_file",
    "edit_file",
    "list_files",
    "list_directory",
    "create_directory",
    "move_file",
    "search_files",
    "get_file_info",
    "read_multiple_files",
    "directory_tree",
    "send_email",
    "send_message",
    "web_search",
    "search_web",
    "browse",
    "navigate",
    "screenshot",
    "click",
    "fill",
    "evaluate",
    "echo",
    "add",
    "get_current_time",
    "convert_time",
    "fetch_url",
    "get_user",
    "get_me",
    "list_tables",
    "describe_table",
    "read_query",
    "write_query",
    "run_query",
    "execute_sql",
    "sql",
    "create_issue",
    "get_issue",
    "list_issues",
    "search_repositories",
    "get_file_contents",
    "create_or_update_file",
    "push_files",
    "create_pull_request",
    "create_entities",
    "read_graph",
    "search_nodes",
    "sequentialthinking",
    "think",
    "get_weather",
    "calculator",
    "calculate",
    "translate",
    "summarize",
    "help",
    "ping",
    "login",
    "logout",
    "upload",
    "download",
    "open",
    "close",
];

/// Words that say nothing about what a tool acts on.
const GENERIC_WORDS: &[&str] = &[
    "get",
    "list",
    "fetch",
    "read",
    "set",
    "update",
    "create",
    "delete",
    "remove",
    "add",
    "run",
    "do",
    "process",
    "handle",
    "execute",
    "exec",
    "call",
    "invoke",
    "search",
    "find",
    "query",
    "check",
    "status",
    "info",
    "information",
    "data",
    "details",
    "detail",
    "item",
    "items",
    "object",
    "objects",
    "result",
    "results",
    "thing",
    "things",
    "record",
    "records",
    "entity",
    "entities",
    "resource",
    "resources",
    "value",
    "values",
    "stuff",
    "action",
    "operation",
    "task",
    "request",
    "response",
    "content",
    "all",
    "new",
    "tool",
    "helper",
];

/// Splits a name into lower-case words at `_`, `-`, `.`, spaces and camelCase humps.
pub(crate) fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if matches!(c, '_' | '-' | '.' | ' ' | '/' | ':') {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Convention {
    Snake,
    Camel,
    Pascal,
    Kebab,
    Screaming,
}

impl Convention {
    fn label(self) -> &'static str {
        match self {
            Convention::Snake => "snake_case",
            Convention::Camel => "camelCase",
            Convention::Pascal => "PascalCase",
            Convention::Kebab => "kebab-case",
            Convention::Screaming => "SCREAMING_CASE",
        }
    }
}

/// The convention of one name (its last dotted segment: `ns.get_user` is snake_case); None
/// for a single lower-case word, which fits every convention.
fn convention(name: &str) -> Option<Convention> {
    let last = name.rsplit('.').next().unwrap_or(name);
    let has_upper = last.chars().any(|c| c.is_ascii_uppercase());
    let has_lower = last.chars().any(|c| c.is_ascii_lowercase());
    let underscore = last.contains('_');
    let dash = last.contains('-');
    match (underscore, dash, has_upper, has_lower) {
        (false, false, false, _) => None,
        (true, false, false, _) => Some(Convention::Snake),
        (_, false, true, false) => Some(Convention::Screaming),
        (false, true, false, _) => Some(Convention::Kebab),
        (false, false, true, true) => Some(if last.starts_with(|c: char| c.is_ascii_uppercase()) {
            Convention::Pascal
        } else {
            Convention::Camel
        }),
        _ => None,
    }
}

fn valid_mcp_name(name: &str) -> bool {
    let n = name.chars().count();
    (1..=128).contains(&n)
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

// Long: one rule after another over each tool, in the order the rule table documents them.
pub(crate) fn check(catalog: &Catalog, out: &mut Vec<Raw>) {
    let mut by_name: BTreeMap<&str, usize> = BTreeMap::new();
    let mut by_folded: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for tool in &catalog.tools {
        let name = tool.name.as_str();
        let t = Some(name);
        if !valid_mcp_name(name) {
            let bad: String = name
                .chars()
                .filter(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
                .take(5)
                .map(|c| format!("{:?} ", c))
                .collect();
            let len = name.chars().count();
            out.push(Raw::new(
                RuleId::NameInvalid,
                t,
                "name",
                if len > 128 {
                    format!("the name is {len} characters; MCP allows 1-128")
                } else if len == 0 {
                    "the name is empty".to_owned()
                } else {
                    format!(
                        "the name holds characters MCP does not allow: {}",
                        bad.trim_end()
                    )
                },
                "Rename it with ASCII letters, digits, `_`, `-` and `.` only.",
            ));
        }
        let seen = by_name.entry(name).or_default();
        *seen += 1;
        // A name seen for the first time is new in its case-folded group too; asking the
        // group itself would be quadratic in a catalog of case variants of one name.
        if *seen == 1 {
            by_folded.entry(name.to_lowercase()).or_default().push(name);
        }
        if COMMON_NAMES.contains(&name) {
            out.push(Raw::new(
                RuleId::NameCommonCollision,
                t,
                "name",
                format!("`{name}` is a name many other servers expose; with several servers connected the model cannot tell them apart"),
                format!("Qualify it with what it acts on, e.g. `{}`.", suggestion(name, &tool.description)),
            ));
        }
        let w = words(name);
        if !w.is_empty()
            && w.iter().all(|w| GENERIC_WORDS.contains(&w.as_str()))
            && let Some(object) = described_object(&tool.description)
            && !w.contains(&object)
        {
            out.push(Raw::new(
                RuleId::NameTooGeneric,
                t,
                "name",
                format!(
                    "`{name}` names no object, while the description says it acts on a {object}"
                ),
                format!("Rename it `{}`.", suggestion(name, &tool.description)),
            ));
        }
    }
    for (name, n) in &by_name {
        if *n > 1 {
            out.push(Raw::new(
                RuleId::NameDuplicate,
                Some(name),
                "name",
                format!("{n} tools are named `{name}`; the model and the client see only one"),
                "Give every tool its own name.",
            ));
        }
    }
    for names in by_folded.values().filter(|v| v.len() > 1) {
        for name in &names[1..] {
            out.push(Raw::new(
                RuleId::NameCaseCollision,
                Some(name),
                "name",
                format!("`{name}` differs from `{}` only in letter case", names[0]),
                "Rename one so they differ in more than case.",
            ));
        }
    }
    // One convention: the most common one among names that show one.
    let mut counts: BTreeMap<Convention, usize> = BTreeMap::new();
    for tool in &catalog.tools {
        if let Some(c) = convention(&tool.name) {
            *counts.entry(c).or_default() += 1;
        }
    }
    if let Some((&main, &main_n)) = counts
        .iter()
        .max_by_key(|(c, n)| (**n, std::cmp::Reverse(**c)))
        && counts.len() > 1
    {
        let total: usize = counts.values().sum();
        for tool in &catalog.tools {
            if let Some(c) = convention(&tool.name)
                && c != main
            {
                out.push(Raw::new(
                    RuleId::NameConvention,
                    Some(&tool.name),
                    "name",
                    format!(
                        "`{}` is {}, while {main_n} of {total} names are {}",
                        tool.name,
                        c.label(),
                        main.label()
                    ),
                    format!("Rename it in {}.", main.label()),
                ));
            }
        }
    }
}

/// The thing a description says a tool acts on: the noun after "of a/an/the", "for a/an/the",
/// or "a/an/the" at the start of an object phrase; None when none is found.
fn described_object(description: &str) -> Option<String> {
    use std::sync::LazyLock;
    static OBJECT: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r"(?i)\b(?:of|for|on|about)\s+(?:a|an|the|one|each|every|given|specific|specified)\s+(?:given\s+|specific\s+|specified\s+|single\s+)?([a-z][a-z]+)\b")
            .expect("static regex")
    });
    let caps = OBJECT.captures(description)?;
    let word = caps.get(1)?.as_str().to_lowercase();
    (!GENERIC_WORDS.contains(&word.as_str())).then_some(word)
}

/// `get_status` + "the status of a job" → `get_job_status`.
fn suggestion(name: &str, description: &str) -> String {
    let object = described_object(description).unwrap_or_else(|| "thing".to_owned());
    let w = words(name);
    match w.split_first() {
        Some((verb, rest)) if !rest.is_empty() => format!("{verb}_{object}_{}", rest.join("_")),
        Some((verb, _)) => format!("{verb}_{object}s"),
        None => object,
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use serde_json::json;

    fn named(names: &[&str]) -> toolscore_core::catalog::Catalog {
        catalog(names.iter().map(|n| clean_tool(n)).collect())
    }

    #[test]
    fn words_split_every_convention() {
        assert_eq!(words("getJobStatus"), ["get", "job", "status"]);
        assert_eq!(words("get_job-status.v2"), ["get", "job", "status", "v2"]);
    }

    #[test]
    fn mcp_name_rules() {
        let f = findings_of(
            &named(&["get invoice", &"a".repeat(129), "ok.name-1_x"]),
            RuleId::NameInvalid,
        );
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(f.iter().any(|f| f.message.contains("129 characters")));
        assert!(
            findings_of(
                &named(&["get_invoice", "ns.get-invoice_2"]),
                RuleId::NameInvalid
            )
            .is_empty()
        );
    }

    #[test]
    fn duplicate_and_case_colliding_names() {
        let f = findings_of(
            &named(&["get_invoice", "get_invoice"]),
            RuleId::NameDuplicate,
        );
        assert_eq!(f.len(), 1);
        let f = findings_of(
            &named(&["getInvoice", "getinvoice"]),
            RuleId::NameCaseCollision,
        );
        assert_eq!(f.len(), 1);
        assert!(
            findings_of(
                &named(&["get_invoice", "get_refund"]),
                RuleId::NameDuplicate
            )
            .is_empty()
        );
        assert!(
            findings_of(
                &named(&["get_invoice", "get_refund"]),
                RuleId::NameCaseCollision
            )
            .is_empty()
        );
    }

    #[test]
    fn one_convention_across_the_server() {
        let f = findings_of(
            &named(&["get_invoice", "list_invoices", "createRefund"]),
            RuleId::NameConvention,
        );
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].tool.as_deref(), Some("createRefund"));
        assert!(
            findings_of(
                &named(&["get_invoice", "list_invoices", "refund"]),
                RuleId::NameConvention
            )
            .is_empty()
        );
    }

    #[test]
    fn common_names_of_other_servers() {
        assert_eq!(
            findings_of(&named(&["search"]), RuleId::NameCommonCollision).len(),
            1
        );
        assert!(findings_of(&named(&["search_invoices"]), RuleId::NameCommonCollision).is_empty());
    }

    #[test]
    fn names_more_generic_than_the_description() {
        let c = catalog(vec![tool(
            "get_status",
            "Return the current status of a job: queued, running, done or failed, with its progress.",
            json!({"type": "object", "properties": {}}),
        )]);
        let f = findings_of(&c, RuleId::NameTooGeneric);
        assert_eq!(f.len(), 1);
        assert!(f[0].fix.contains("get_job_status"), "{}", f[0].fix);
        let c = catalog(vec![tool(
            "get_job_status",
            "Return the current status of a job: queued, running, done or failed, with its progress.",
            json!({"type": "object", "properties": {}}),
        )]);
        assert!(findings_of(&c, RuleId::NameTooGeneric).is_empty());
    }
}
