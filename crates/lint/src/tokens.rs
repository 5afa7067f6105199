//! Token footprint: what the catalog costs on every request.
//!
//! The count is an estimate, deterministic and tokenizer-free: a tool's tokens are the
//! characters (Unicode scalar values) of its compact JSON definition — `{"name", "description",
//! "input_schema"}` — divided by 4, rounded up. Four characters a token is the usual figure for
//! English text and JSON with BPE tokenizers (the same rule `toolscore plan` uses); providers
//! also wrap each tool in a few tokens of their own, which this leaves out. A run's measured
//! `usage` is the ground truth.

use crate::RuleId;
use serde::Serialize;
use toolscore_core::thousands;

use super::{LintOptions, Raw};
use toolscore_core::catalog::{Catalog, Tool};

/// How the token figures are estimated, as the report states it.
pub(crate) const TOKEN_METHOD: &str =
    "characters of each tool's compact JSON definition / 4, rounded up";

/// Estimated tokens of one tool's definition.
pub fn tool_tokens(tool: &Tool) -> u64 {
    let json = serde_json::json!({
        "name": tool.name,
        "description": tool.description,
        "input_schema": tool.input_schema,
    });
    let chars = serde_json::to_string(&json).map_or(0, |s| s.chars().count()) as u64;
    chars.div_ceil(4)
}

/// Tokens per tool and per request, and the monthly figures when volume and price are known.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Footprint {
    pub method: &'static str,
    pub per_tool: Vec<(String, u64)>,
    pub per_request: u64,
    pub requests_per_month: Option<u64>,
    pub tokens_per_month: Option<u64>,
    pub price_per_million_input_tokens: Option<f64>,
    pub cost_per_month: Option<f64>,
}

pub(crate) fn footprint(catalog: &Catalog, options: &LintOptions) -> Footprint {
    let per_tool: Vec<(String, u64)> = catalog
        .tools
        .iter()
        .map(|t| (t.name.clone(), tool_tokens(t)))
        .collect();
    let per_request: u64 = per_tool.iter().map(|(_, n)| n).sum();
    let tokens_per_month = options.requests_per_month.map(|r| r * per_request);
    let cost_per_month = match (tokens_per_month, options.price_per_million_input_tokens) {
        (Some(t), Some(p)) => Some(t as f64 / 1e6 * p),
        _ => None,
    };
    Footprint {
        method: TOKEN_METHOD,
        per_tool,
        per_request,
        requests_per_month: options.requests_per_month,
        tokens_per_month,
        price_per_million_input_tokens: options.price_per_million_input_tokens,
        cost_per_month,
    }
}

/// The footprint in one sentence.
pub(crate) fn describe(f: &Footprint, tools: usize) -> String {
    let mean = if tools == 0 {
        0
    } else {
        f.per_request / tools as u64
    };
    let mut s = format!(
        "{} tools ≈ {} input tokens per request (mean {} per tool)",
        tools,
        thousands(f.per_request),
        thousands(mean)
    );
    if let (Some(r), Some(t)) = (f.requests_per_month, f.tokens_per_month) {
        s.push_str(&format!(
            "; × {} requests a month = {} tokens ({:.1} M)",
            thousands(r),
            thousands(t),
            t as f64 / 1e6
        ));
        if let (Some(p), Some(c)) = (f.price_per_million_input_tokens, f.cost_per_month) {
            s.push_str(&format!(", {c:.2} a month at {p} per million input tokens"));
        }
    }
    s
}

pub(crate) fn check(catalog: &Catalog, options: &LintOptions, f: &Footprint, out: &mut Vec<Raw>) {
    for (name, n) in &f.per_tool {
        if *n > options.max_tool_tokens {
            out.push(Raw::new(
                RuleId::TokensToolLarge,
                Some(name),
                "",
                format!("`{name}` is about {} tokens (budget {}), sent with every request", thousands(*n), options.max_tool_tokens),
                "Shorten the description and move reference material (long enums, examples) out of the schema.",
            ));
        }
    }
    let largest = f
        .per_tool
        .iter()
        .max_by_key(|(_, n)| *n)
        .map(|(name, n)| format!("The largest is `{name}` ({} tokens).", thousands(*n)))
        .unwrap_or_default();
    out.push(Raw::new(
        RuleId::TokensCatalog,
        None,
        "",
        describe(f, catalog.tools.len()),
        format!(
            "Every tool is paid for on every request: drop tools this agent does not use. {largest}"
        ),
    ));
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use serde_json::json;

    #[test]
    fn tokens_are_characters_over_four_rounded_up() {
        let t = tool("a", "b", json!({}));
        // {"description":"b","input_schema":{},"name":"a"} = 48 characters → 12
        assert_eq!(
            serde_json::to_string(&json!({"name": "a", "description": "b", "input_schema": {}}))
                .unwrap()
                .len(),
            48
        );
        assert_eq!(tool_tokens(&t), 12);
    }

    #[test]
    fn monthly_arithmetic_matches_the_issue_example() {
        // 14 tools × 90 tokens × 40,000 requests = 50.4 M tokens.
        let f = Footprint {
            method: TOKEN_METHOD,
            per_tool: (0..14).map(|i| (format!("t{i}"), 90)).collect(),
            per_request: 14 * 90,
            requests_per_month: Some(40_000),
            tokens_per_month: Some(14 * 90 * 40_000),
            price_per_million_input_tokens: Some(2.5),
            cost_per_month: Some(50.4 * 2.5),
        };
        let s = describe(&f, 14);
        assert!(s.contains("1,260 input tokens per request"), "{s}");
        assert!(s.contains("50,400,000 tokens (50.4 M)"), "{s}");
        assert!(s.contains("126.00 a month at 2.5"), "{s}");
        let c = catalog(
            (0..3)
                .map(|i| clean_tool(&format!("get_invoice_{i}")))
                .collect(),
        );
        let o = LintOptions {
            requests_per_month: Some(1000),
            price_per_million_input_tokens: Some(2.0),
            ..LintOptions::default()
        };
        let fp = footprint(&c, &o);
        assert_eq!(fp.tokens_per_month, Some(fp.per_request * 1000));
        assert_eq!(
            fp.cost_per_month,
            Some(fp.per_request as f64 * 1000.0 / 1e6 * 2.0)
        );
    }

    #[test]
    fn large_tools_are_flagged_against_the_budget() {
        let big = tool(
            "get_invoice",
            &"Look up an invoice. ".repeat(300),
            json!({"type": "object", "properties": {}}),
        );
        assert_eq!(
            findings_of(&catalog(vec![big]), RuleId::TokensToolLarge).len(),
            1
        );
        assert!(
            findings_of(
                &catalog(vec![clean_tool("get_invoice")]),
                RuleId::TokensToolLarge
            )
            .is_empty()
        );
        // The catalog summary is there by default, as info, and goes when turned off.
        let c = catalog(vec![clean_tool("get_invoice")]);
        assert_eq!(findings_of(&c, RuleId::TokensCatalog).len(), 1);
        let mut o = LintOptions::default();
        o.levels
            .insert(RuleId::TokensCatalog, super::super::Level::Off);
        assert!(
            !super::super::lint(&c, &o)
                .findings
                .iter()
                .any(|f| f.rule == RuleId::TokensCatalog)
        );
    }
}
