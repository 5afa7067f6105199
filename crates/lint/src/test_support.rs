//! Catalog builders for the lint rules' unit tests.

use serde_json::Value;
use toolscore_core::catalog::{Catalog, Tool};

// The tests name rules as the checks do.
pub(crate) use crate::RuleId;

pub(crate) fn tool(name: &str, description: &str, schema: Value) -> Tool {
    Tool {
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema: schema,
        ..Default::default()
    }
}

pub(crate) fn catalog(tools: Vec<Tool>) -> Catalog {
    Catalog::new(tools, "test.json".to_owned())
}

/// Rule ids found for a catalog with default options.
pub(crate) fn rules_of(c: &Catalog) -> Vec<&'static str> {
    super::lint(c, &super::LintOptions::default())
        .findings
        .iter()
        .map(|f| f.rule.as_str())
        .collect()
}

/// The findings of one rule.
pub(crate) fn findings_of(c: &Catalog, rule: RuleId) -> Vec<super::Finding> {
    super::lint(c, &super::LintOptions::default())
        .findings
        .into_iter()
        .filter(|f| f.rule == rule)
        .collect()
}

/// A well-described tool that breaks no rule.
pub(crate) fn clean_tool(name: &str) -> Tool {
    tool(
        name,
        "Look up one invoice by its id and return its lines, totals and payment status.",
        serde_json::json!({
            "type": "object",
            "properties": {
                "invoice_id": {"type": "string", "description": "Invoice id, e.g. in_12345."}
            },
            "required": ["invoice_id"],
            "additionalProperties": false
        }),
    )
}
