//! Description rules: present and long enough, parameter names that say what they hold,
//! optional parameters whose omission is explained and bounded, tools the model can tell apart,
//! and write tools that say what they return.

use crate::RuleId;
use serde_json::Value;

use super::schema::properties;
use super::{LintOptions, Raw};
use toolscore_core::catalog::Catalog;

/// Parameter names that say nothing about what they identify or hold.
const GENERIC_PARAMS: &[&str] = &[
    "id", "user", "data", "path", "value", "input", "item", "object", "obj", "info", "params",
    "args", "arg", "payload", "body", "entity", "resource", "record", "val", "thing", "target",
];

/// Parameters that bound how much comes back.
const SIZE_PARAMS: &[&str] = &[
    "limit",
    "max",
    "max_results",
    "maxresults",
    "page_size",
    "pagesize",
    "per_page",
    "perpage",
    "count",
    "top_k",
    "topk",
    "top_n",
    "topn",
    "num_results",
    "numresults",
    "size",
    "max_items",
    "maxitems",
    "n",
    "first",
    "last",
    "take",
];

/// First words of tools that change something.
const WRITE_VERBS: &[&str] = &[
    "create", "update", "delete", "remove", "set", "add", "send", "post", "put", "write", "cancel",
    "apply", "submit", "insert", "upload", "patch", "modify", "edit", "move", "rename", "assign",
    "approve", "reject", "archive", "book", "transfer", "pay", "refund", "charge", "publish",
    "enable", "disable", "register", "save", "store", "grant", "revoke", "invite", "schedule",
    "purchase", "issue", "void", "merge", "close", "reopen", "upsert",
];

// Long: one rule after another over each tool, in the order the rule table documents them.
pub(crate) fn check(catalog: &Catalog, options: &LintOptions, out: &mut Vec<Raw>) {
    for tool in &catalog.tools {
        let t = Some(tool.name.as_str());
        let desc = tool.description.trim();
        if desc.is_empty() {
            out.push(Raw::new(
                RuleId::DescriptionMissing,
                t,
                "description",
                "the tool has no description; the model chooses it by its name alone",
                format!(
                    "Describe what `{}` does, when to use it and what it returns.",
                    tool.name
                ),
            ));
        } else if desc.chars().count() < options.min_tool_description {
            out.push(Raw::new(
                RuleId::DescriptionTooShort,
                t,
                "description",
                format!(
                    "the description is {} characters (minimum {}): \"{desc}\"",
                    desc.chars().count(),
                    options.min_tool_description
                ),
                "Say what the tool does, when to use it rather than its neighbours, and what it returns.",
            ));
        }
        for p in properties(&tool.input_schema) {
            let pdesc = p
                .schema
                .get("description")
                .and_then(Value::as_str)
                .map(str::trim)
                .unwrap_or_default();
            if pdesc.is_empty() {
                if !p.schema.contains_key("$ref") {
                    out.push(Raw::new(
                        RuleId::PropertyDescriptionMissing,
                        t,
                        p.path.clone(),
                        format!("`{}` has no description", p.name),
                        format!(
                            "Say what `{}` is, its unit or format, and give an example.",
                            p.name
                        ),
                    ));
                }
            } else if pdesc.chars().count() < options.min_property_description {
                out.push(Raw::new(
                    RuleId::DescriptionTooShort,
                    t,
                    p.path.clone(),
                    format!(
                        "`{}`'s description is {} characters (minimum {}): \"{pdesc}\"",
                        p.name,
                        pdesc.chars().count(),
                        options.min_property_description
                    ),
                    "Say what the parameter holds, its unit or format, and an example.",
                ));
            }
            let lname = p.name.to_lowercase();
            if GENERIC_PARAMS.contains(&lname.as_str()) {
                out.push(Raw::new(
                    RuleId::ParamGenericName,
                    t,
                    p.path.clone(),
                    format!(
                        "`{}` is a generic name: the model must guess what it identifies",
                        p.name
                    ),
                    format!("Qualify it (`{}`).", qualified(&lname, &tool.name)),
                ));
            }
            if !p.required {
                optional(tool.name.as_str(), &p, pdesc, out);
            }
        }
        let w = super::names::words(&tool.name);
        if w.first().is_some_and(|v| WRITE_VERBS.contains(&v.as_str()))
            && !desc.is_empty()
            && !says_what_it_returns(desc)
        {
            out.push(Raw::new(
                RuleId::WriteNoReturn,
                t,
                "description",
                format!("`{}` changes something but its description does not say what it returns on success", tool.name),
                "End the description with what comes back, e.g. \"Returns the new invoice with its id.\"",
            ));
        }
    }
    super::similar::near_duplicates(catalog, out);
}

fn qualified(param: &str, tool: &str) -> String {
    let object = super::names::words(tool)
        .into_iter()
        .skip(1)
        .find(|w| w.len() > 2)
        .map(|w| w.trim_end_matches('s').to_owned())
        .unwrap_or_else(|| "thing".to_owned());
    match param {
        "id" => format!("{object}_id"),
        "path" => "file_path".to_owned(),
        "user" => "user_email` or `user_id".to_owned(),
        other => format!("{object}_{other}"),
    }
}

fn says_what_it_returns(desc: &str) -> bool {
    use std::sync::LazyLock;
    static RETURNS: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)\b(return|returns|returned|returning|responds?|response|yields?|outputs?|gives back|result|results|on success|succeeds|confirmation|confirms|acknowledg\w*|echoes|reports)\b",
        )
        .expect("static regex")
    });
    RETURNS.is_match(desc)
}

fn optional(tool: &str, p: &super::schema::Property<'_>, pdesc: &str, out: &mut Vec<Raw>) {
    use std::sync::LazyLock;
    static EXPLAINED: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)\b(default|defaults|omit|omitted|omitting|if not (given|provided|set|specified|supplied)|when (not (given|provided|set|specified)|absent|missing|omitted)|if (absent|missing|empty|unset|none)|leave (it )?(empty|blank|out)|otherwise|optional|optionally|unless)\b",
        )
        .expect("static regex")
    });
    let t = Some(tool);
    let default = p.schema.get("default");
    let lname = p.name.to_lowercase();
    let sized = SIZE_PARAMS.contains(&lname.as_str());
    if sized {
        let numeric = matches!(
            p.schema.get("type").and_then(Value::as_str),
            Some("integer" | "number")
        );
        let unbounded_default = match default {
            None => !p.schema.contains_key("maximum"),
            Some(Value::Number(n)) => n.as_f64().is_some_and(|v| v <= 0.0),
            Some(Value::Null) => true,
            Some(Value::String(s)) => matches!(
                s.to_lowercase().as_str(),
                "all" | "*" | "unlimited" | "none" | ""
            ),
            _ => false,
        };
        if (numeric || default.is_some()) && unbounded_default {
            out.push(Raw::new(
                RuleId::UnboundedDefault,
                t,
                p.path.clone(),
                match default {
                    None => format!("`{}` is optional with no default and no maximum: omitted, the output has no bound", p.name),
                    Some(v) => format!("`{}` defaults to {v}, which returns unbounded output", p.name),
                },
                format!("Give `{}` a small bounded `default` (e.g. 20) and a `maximum`.", p.name),
            ));
            return;
        }
    }
    if default.is_none() && !EXPLAINED.is_match(pdesc) && !p.schema.contains_key("const") {
        out.push(Raw::new(
            RuleId::OptionalNoDefault,
            t,
            p.path.clone(),
            format!("`{}` is optional, but neither a `default` nor the description says what happens when it is omitted", p.name),
            "Add `default`, or end the description with \"Omit for …\".",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::super::LintOptions;
    use super::super::test_support::*;
    use serde_json::json;

    const DESC: &str = "Look up one invoice by its id and return its lines, totals and status.";

    fn with_props(
        name: &str,
        props: serde_json::Value,
        required: &[&str],
    ) -> toolscore_core::catalog::Catalog {
        catalog(vec![tool(
            name,
            DESC,
            json!({"type": "object", "properties": props, "required": required}),
        )])
    }

    #[test]
    fn tool_descriptions_present_and_long_enough() {
        let c = catalog(vec![tool("get_invoice", "", json!({"type": "object"}))]);
        assert_eq!(findings_of(&c, RuleId::DescriptionMissing).len(), 1);
        let c = catalog(vec![tool(
            "get_invoice",
            "Gets it.",
            json!({"type": "object"}),
        )]);
        assert_eq!(findings_of(&c, RuleId::DescriptionTooShort).len(), 1);
        let c = catalog(vec![clean_tool("get_invoice")]);
        assert!(findings_of(&c, RuleId::DescriptionMissing).is_empty());
        assert!(findings_of(&c, RuleId::DescriptionTooShort).is_empty());
    }

    #[test]
    fn minimum_lengths_are_configurable() {
        let c = catalog(vec![tool(
            "get_invoice",
            "Gets it.",
            json!({"type": "object"}),
        )]);
        let o = LintOptions {
            min_tool_description: 5,
            ..LintOptions::default()
        };
        assert!(
            !super::super::lint(&c, &o)
                .findings
                .iter()
                .any(|f| f.rule == RuleId::DescriptionTooShort)
        );
    }

    #[test]
    fn property_descriptions_present() {
        let c = with_props(
            "get_invoice",
            json!({"invoice_id": {"type": "string"}}),
            &["invoice_id"],
        );
        let f = findings_of(&c, RuleId::PropertyDescriptionMissing);
        assert_eq!(f[0].path, "inputSchema.properties.invoice_id");
        let c = with_props(
            "get_invoice",
            json!({"invoice_id": {"type": "string", "description": "Inv."}}),
            &["invoice_id"],
        );
        assert_eq!(findings_of(&c, RuleId::DescriptionTooShort).len(), 1);
        assert!(
            findings_of(
                &catalog(vec![clean_tool("a")]),
                RuleId::PropertyDescriptionMissing
            )
            .is_empty()
        );
    }

    #[test]
    fn generic_parameter_names() {
        let c = with_props(
            "get_invoice",
            json!({"id": {"type": "string", "description": "The invoice id."}}),
            &["id"],
        );
        let f = findings_of(&c, RuleId::ParamGenericName);
        assert_eq!(f.len(), 1);
        assert!(f[0].fix.contains("invoice_id"), "{}", f[0].fix);
        assert!(
            findings_of(
                &catalog(vec![clean_tool("get_invoice")]),
                RuleId::ParamGenericName
            )
            .is_empty()
        );
    }

    #[test]
    fn optional_parameters_say_what_omission_does() {
        let c = with_props(
            "get_invoice",
            json!({
                "invoice_id": {"type": "string", "description": "The invoice id, e.g. in_1."},
                "currency": {"type": "string", "description": "Currency to show amounts in."}
            }),
            &["invoice_id"],
        );
        assert_eq!(findings_of(&c, RuleId::OptionalNoDefault).len(), 1);
        for ok in [
            json!({"type": "string", "description": "Currency to show amounts in.", "default": "USD"}),
            json!({"type": "string", "description": "Currency to show amounts in; omit for the invoice's own."}),
        ] {
            let c = with_props(
                "get_invoice",
                json!({"invoice_id": {"type": "string", "description": "The invoice id, e.g. in_1."}, "currency": ok}),
                &["invoice_id"],
            );
            assert!(findings_of(&c, RuleId::OptionalNoDefault).is_empty());
        }
    }

    #[test]
    fn unbounded_limits() {
        for bad in [
            json!({"type": "integer", "description": "How many invoices to return."}),
            json!({"type": "integer", "description": "How many invoices to return.", "default": 0}),
            json!({"type": "integer", "description": "How many invoices to return.", "default": -1, "maximum": 100}),
        ] {
            let c = with_props("list_invoices", json!({"limit": bad}), &[]);
            assert_eq!(findings_of(&c, RuleId::UnboundedDefault).len(), 1);
        }
        let c = with_props(
            "list_invoices",
            json!({"limit": {"type": "integer", "description": "How many invoices to return.", "default": 20, "maximum": 100}}),
            &[],
        );
        assert!(findings_of(&c, RuleId::UnboundedDefault).is_empty());
        assert!(findings_of(&c, RuleId::OptionalNoDefault).is_empty());
    }

    #[test]
    fn near_duplicate_descriptions() {
        let schema = json!({"type": "object", "properties": {}});
        let c = catalog(vec![
            tool(
                "get_invoice",
                "Look up one invoice by its id and return its lines, totals and status.",
                schema.clone(),
            ),
            tool(
                "fetch_invoice",
                "Look up an invoice by its id and return its lines, totals and status.",
                schema.clone(),
            ),
            tool(
                "get_refund",
                "Return one refund with its amount, reason and the invoice it belongs to.",
                schema,
            ),
        ]);
        let f = findings_of(&c, RuleId::DescriptionNearDuplicate);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].tool.as_deref(), Some("fetch_invoice"));
        assert!(f[0].message.contains("get_invoice"));
    }

    #[test]
    fn write_tools_say_what_they_return() {
        let schema = json!({"type": "object", "properties": {}});
        let c = catalog(vec![tool(
            "create_invoice",
            "Create a draft invoice for a customer from their open orders.",
            schema.clone(),
        )]);
        assert_eq!(findings_of(&c, RuleId::WriteNoReturn).len(), 1);
        let c = catalog(vec![tool(
            "create_invoice",
            "Create a draft invoice for a customer. Returns the invoice with its id.",
            schema.clone(),
        )]);
        assert!(findings_of(&c, RuleId::WriteNoReturn).is_empty());
        let c = catalog(vec![tool(
            "get_invoice",
            "Look up an invoice for a customer by its number, with lines.",
            schema,
        )]);
        assert!(findings_of(&c, RuleId::WriteNoReturn).is_empty());
    }
}
