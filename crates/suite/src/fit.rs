//! How the cases of a `cases.jsonl` fit a catalog they were not written against: which tools
//! each expects, which expect a tool that is gone or arguments its schema refuses.
//! `toolscore init --force` reads it when it refreshes a dataset's catalog from a changed
//! server and keeps the user's cases.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{RawCall, RawCase, case_of, parse_case_line, unedited_starter};
use toolscore_core::catalog::Catalog;
use toolscore_score::{Expectation, ToolValidators};

/// One line of cases.jsonl against a catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseFit {
    /// 1-based line in cases.jsonl.
    pub line: usize,
    /// The case's id (empty when the line is not a fixture at all).
    pub id: String,
    /// The catalog tools its expectation names or accepts (a family, a BFCL answer).
    pub tools: Vec<String>,
    /// A starter case nobody edited: [`super::Case::is_unedited_starter`]'s rule (its tag and
    /// placeholder request), and its expectation as `init` wrote it, a tool and nothing else
    /// (a starter whose args someone added is theirs).
    pub unedited_starter: bool,
    /// Every tool the case expects is gone from the catalog (and it expects at least one);
    /// false for a case whose tool is there but whose arguments the schema refuses.
    pub tool_gone: bool,
    /// Why it does not fit, one entry per expected call at fault; empty when it fits.
    pub stale: Vec<Stale>,
}

/// Why a case does not fit the catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct Stale {
    /// The expected tool at fault, when one is.
    pub tool: Option<String>,
    pub reason: String,
}

/// Each non-blank line of `text` (a cases.jsonl, named `file` in messages) against `catalog`:
/// an expected tool that is not in it, expected arguments its input schema refuses (except
/// where a `match` rule judges the value instead of equality), or anything else the loader
/// would refuse against it.
pub fn fit_cases(
    text: &str,
    file: &str,
    catalog: &Catalog,
    validators: &ToolValidators,
) -> Vec<CaseFit> {
    let mut fits = Vec::new();
    for (index, raw_line) in text.lines().enumerate() {
        let line = index + 1;
        if raw_line.trim().is_empty() {
            continue;
        }
        let raw = match parse_case_line(raw_line, file, line) {
            Ok(raw) => raw,
            Err(e) => {
                fits.push(CaseFit {
                    line,
                    id: String::new(),
                    tools: Vec::new(),
                    unedited_starter: false,
                    tool_gone: false,
                    stale: vec![Stale {
                        tool: None,
                        reason: e.message,
                    }],
                });
                continue;
            }
        };
        fits.push(fit_case(raw, file, line, catalog, validators));
    }
    fits
}

fn fit_case(
    raw: RawCase,
    file: &str,
    line: usize,
    catalog: &Catalog,
    validators: &ToolValidators,
) -> CaseFit {
    let id = raw.id.clone();
    let expect = &raw.expect;
    let unedited = unedited_starter(&raw.tags, &raw.messages)
        && expect.tool.is_string()
        && expect.args.is_none()
        && expect.matchers.is_none()
        && expect.calls.is_none()
        && expect.bfcl.is_none();
    // A case with its own catalog never reads the dataset's.
    let own_catalog = raw.catalog.is_some();
    let named = named_calls(&raw);
    let tool_gone = !own_catalog
        && !named.is_empty()
        && named.iter().all(|(tool, _, _)| catalog.get(tool).is_none());
    let mut stale = Vec::new();
    if !own_catalog {
        for (tool, args, matchers) in &named {
            if catalog.get(tool).is_none() {
                stale.push(Stale {
                    tool: Some(tool.clone()),
                    reason: "gone from the catalog".into(),
                });
            } else if let Some(args) = args
                && let Some(reason) = args_misfit(tool, args, matchers, validators)
            {
                stale.push(Stale {
                    tool: Some(tool.clone()),
                    reason,
                });
            }
        }
    }
    // What the loader says beyond that (a family none of whose tools is left, a BFCL answer
    // naming a gone tool); its verdict also gives the tools a family or an answer accepts.
    let tools = match case_of(raw, file, line, catalog) {
        Ok(case) if !own_catalog => covered(&case.expect, catalog),
        Ok(_) => Vec::new(),
        Err(e) => {
            if stale.is_empty() {
                stale.push(Stale {
                    tool: None,
                    reason: e.message,
                });
            }
            named.into_iter().map(|(tool, _, _)| tool).collect()
        }
    };
    CaseFit {
        line,
        id,
        tools,
        unedited_starter: unedited,
        tool_gone,
        stale,
    }
}

/// The expected calls that name one tool (`"tool": "x"`, or each of `calls`), with their
/// arguments and matchers.
type NamedCall = (String, Option<Value>, BTreeMap<String, Value>);

fn named_calls(raw: &RawCase) -> Vec<NamedCall> {
    let expect = &raw.expect;
    let mut out = Vec::new();
    if let Value::String(tool) = &expect.tool {
        out.push((
            tool.clone(),
            expect.args.clone(),
            expect.matchers.clone().unwrap_or_default(),
        ));
    }
    for RawCall {
        tool,
        args,
        matchers,
    } in expect.calls.iter().flatten()
    {
        out.push((
            tool.clone(),
            args.clone(),
            matchers.clone().unwrap_or_default(),
        ));
    }
    out
}

/// The first way `args` break `tool`'s input schema, ignoring paths a matcher judges (their
/// expected value is compared by the matcher, not as the call's value) and a missing property
/// a matcher stands for; None when they fit.
fn args_misfit(
    tool: &str,
    args: &Value,
    matchers: &BTreeMap<String, Value>,
    validators: &ToolValidators,
) -> Option<String> {
    let judged_by_matcher = |path: &str| {
        matchers
            .keys()
            .any(|m| path == m || path.starts_with(&format!("{m}.")))
    };
    let matcher_below = |path: &str| {
        matchers.keys().any(|m| match path {
            "" => !m.contains('.'),
            _ => m
                .strip_prefix(&format!("{path}."))
                .is_some_and(|rest| !rest.contains('.')),
        })
    };
    let violations: Vec<_> = validators
        .validate(tool, args)?
        .into_iter()
        .filter(|v| !judged_by_matcher(&v.path))
        .filter(|v| !(v.keyword == "required" && matcher_below(&v.path)))
        .collect();
    let first = violations.first()?;
    let at = if first.path.is_empty() {
        "`args`".to_owned()
    } else {
        format!("`args.{}`", first.path)
    };
    let more = match violations.len() {
        1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    Some(format!(
        "its args do not fit the tool's input schema: {at}: {}{more}",
        first.message
    ))
}

/// The catalog tools an expectation accepts.
fn covered(expect: &Expectation, catalog: &Catalog) -> Vec<String> {
    catalog
        .tools
        .iter()
        .filter(|t| match expect {
            Expectation::NoCall => false,
            Expectation::Calls { calls, .. } => calls.iter().any(|c| c.accepts(&t.name)),
            Expectation::Bfcl(b) => b.tool_names().iter().any(|n| n == &t.name),
        })
        .map(|t| t.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolscore_core::catalog::parse_catalog;

    fn catalog() -> (Catalog, ToolValidators) {
        let c = parse_catalog(
            r#"{"tools":[
                {"name":"get_sum","inputSchema":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}},
                {"name":"echo","inputSchema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}}]}"#,
            "tools.json",
        )
        .unwrap();
        let v = ToolValidators::compile(&c).unwrap();
        (c, v)
    }

    #[test]
    fn gone_tools_and_args_the_schema_refuses_are_stale_the_rest_fit() {
        let (c, v) = catalog();
        let text = [
            r#"{"id":"fits","messages":[{"role":"user","content":"1+2"}],"expect":{"tool":"get_sum","args":{"a":1,"b":2}}}"#,
            r#"{"id":"gone","messages":[{"role":"user","content":"zip it"}],"expect":{"tool":"zip"},"tags":["x"]}"#,
            r#"{"id":"typed","messages":[{"role":"user","content":"1+x"}],"expect":{"tool":"get_sum","args":{"a":1,"b":"two"}}}"#,
            r#"{"id":"matched","messages":[{"role":"user","content":"say hi"}],"expect":{"tool":"echo","args":{"message":null},"match":{"message":{"regex":"hi.*"}}}}"#,
            r#"{"id":"any","messages":[{"role":"user","content":"1+?"}],"expect":{"tool":"get_sum","args":{"a":1},"match":{"b":"any"}}}"#,
            "",
            r#"{"id":"starter-zip","messages":[{"role":"user","content":"EDIT ME: write it"}],"expect":{"tool":"zip"},"tags":["starter"]}"#,
            r#"{"id":"family","messages":[{"role":"user","content":"repeat"}],"expect":{"tool":{"any_of":["echo","shout"]}}}"#,
            "not json",
        ]
        .join("\n");
        let fits = fit_cases(&text, "cases.jsonl", &c, &v);
        // (line, id, tools, the tool of each stale entry)
        type Row<'a> = (usize, &'a str, Vec<&'a str>, Vec<Option<&'a str>>);
        let summary: Vec<Row<'_>> = fits
            .iter()
            .map(|f| {
                (
                    f.line,
                    f.id.as_str(),
                    f.tools.iter().map(String::as_str).collect(),
                    f.stale.iter().map(|s| s.tool.as_deref()).collect(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (1, "fits", vec!["get_sum"], vec![]),
                (2, "gone", vec!["zip"], vec![Some("zip")]),
                (3, "typed", vec!["get_sum"], vec![Some("get_sum")]),
                (4, "matched", vec!["echo"], vec![]),
                (5, "any", vec!["get_sum"], vec![]),
                (7, "starter-zip", vec!["zip"], vec![Some("zip")]),
                (8, "family", vec!["echo"], vec![]),
                (9, "", vec![], vec![None]),
            ]
        );
        assert_eq!(fits[1].stale[0].reason, "gone from the catalog");
        assert!(
            fits[2].stale[0]
                .reason
                .starts_with("its args do not fit the tool's input schema: `args.b`: "),
            "{}",
            fits[2].stale[0].reason
        );
        assert!(fits[5].unedited_starter && !fits[1].unedited_starter);
    }
}
