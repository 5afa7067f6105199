//! A scenario's expectations built from its file: the tool patterns and argument matchers
//! of the expected sequence, the state checks and the final answer.

use super::{
    ArgMatcher, BTreeMap, ExpectedCall, Map, RawAnswer, RawExpect, RawSequence, ResultRef,
    ScenarioExpect, SequenceItem, SequenceMode, StateCheck, ToolPattern, Value,
};

pub(crate) fn matchers(
    raw: Option<BTreeMap<String, Value>>,
) -> Result<BTreeMap<String, ArgMatcher>, (String, String)> {
    raw.unwrap_or_default()
        .into_iter()
        .map(|(path, v)| {
            ArgMatcher::from_json(&v)
                .map(|m| (path.clone(), m))
                .map_err(|e| (path, e))
        })
        .collect()
}

type ExpectError = (String, String, String);

pub(super) fn tool_pattern(
    v: &Value,
    field: &str,
    tool_exists: &dyn Fn(&str) -> bool,
) -> Result<ToolPattern, ExpectError> {
    let e = |msg: String| ("expect:".to_owned(), field.to_owned(), msg);
    let known = |name: &str| -> Result<(), ExpectError> {
        if tool_exists(name) {
            Ok(())
        } else {
            Err((
                name.to_string(),
                field.to_owned(),
                format!("`{name}` is not a tool of the catalog"),
            ))
        }
    };
    match v {
        Value::String(name) => {
            known(name)?;
            Ok(ToolPattern::Name(name.clone()))
        }
        Value::Object(map) if map.len() == 1 => match map.iter().next() {
            Some((k, Value::Array(names))) if k == "any_of" && !names.is_empty() => {
                let names = names
                    .iter()
                    .map(|n| {
                        n.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| e("`any_of` lists tool names".into()))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                // A family may name tools a later catalog will have: only one must exist now.
                if !names.iter().any(|n| tool_exists(n)) {
                    return Err(e(format!(
                        "none of {} is a tool of the catalog",
                        names.join(", ")
                    )));
                }
                Ok(ToolPattern::AnyOf(names))
            }
            Some((k, Value::String(p))) if k == "regex" => regex::Regex::new(&format!("^(?:{p})$"))
                .map(ToolPattern::Regex)
                .map_err(|x| e(format!("invalid regex: {x}"))),
            _ => Err(e(
                "a tool is a name, {any_of: [names]} or {regex: PATTERN}".into()
            )),
        },
        _ => Err(e(
            "a tool is a name, {any_of: [names]} or {regex: PATTERN}".into()
        )),
    }
}

/// `expect.sequence`: its mode and each expected call, with the results its arguments use.
fn build_sequence(
    seq: RawSequence,
    tool_exists: &dyn Fn(&str) -> bool,
) -> Result<(SequenceMode, Vec<SequenceItem>), ExpectError> {
    let mode = match seq.mode.as_str() {
        "exact" => SequenceMode::Exact,
        "in_order" => SequenceMode::InOrder,
        "any_order" => SequenceMode::AnyOrder,
        other => {
            return Err((
                "mode:".into(),
                "expect.sequence.mode".into(),
                format!("unknown mode `{other}` (exact, in_order or any_order)"),
            ));
        }
    };
    let mut items = Vec::with_capacity(seq.calls.len());
    for (i, c) in seq.calls.into_iter().enumerate() {
        let field = format!("expect.sequence.calls[{i}]");
        let tool = tool_pattern(&c.tool, &format!("{field}.tool"), tool_exists)?;
        if c.args.as_ref().is_some_and(|a| !a.is_object()) {
            return Err((
                "args:".into(),
                format!("{field}.args"),
                "`args` must be a mapping".into(),
            ));
        }
        let matchers = matchers(c.matchers)
            .map_err(|(p, m)| ("match:".to_owned(), format!("{field}.match.{p}"), m))?;
        let uses = c
            .uses
            .into_iter()
            .map(|(arg, source)| {
                let r = ResultRef::parse(&source)
                    .map_err(|m| ("uses:".to_owned(), format!("{field}.uses.{arg}"), m))?;
                if !tool_exists(&r.tool) {
                    return Err((
                        "uses:".to_owned(),
                        format!("{field}.uses.{arg}"),
                        format!("`{}` is not a tool of the catalog", r.tool),
                    ));
                }
                Ok((arg, r))
            })
            .collect::<Result<BTreeMap<_, _>, ExpectError>>()?;
        items.push(SequenceItem {
            call: ExpectedCall {
                tool: tool.label(),
                args: c
                    .args
                    .or_else(|| (!matchers.is_empty()).then(|| Value::Object(Map::new()))),
                matchers,
                family: None,
            },
            tool,
            uses,
        });
    }
    Ok((mode, items))
}

/// `expect.answer`: the text it must contain, its pattern, and the results it must cite.
fn build_answer(
    a: RawAnswer,
    tool_exists: &dyn Fn(&str) -> bool,
    out: &mut ScenarioExpect,
) -> Result<(), ExpectError> {
    out.answer_contains = a.contains;
    if let Some(p) = a.regex {
        out.answer_regex = Some(regex::Regex::new(&p).map_err(|e| {
            (
                "regex:".to_owned(),
                "expect.answer.regex".to_owned(),
                format!("invalid regex: {e}"),
            )
        })?);
    }
    for (i, c) in a.cites.iter().enumerate() {
        let r = ResultRef::parse(c)
            .map_err(|m| ("cites:".to_owned(), format!("expect.answer.cites[{i}]"), m))?;
        if !tool_exists(&r.tool) {
            return Err((
                "cites:".into(),
                format!("expect.answer.cites[{i}]"),
                format!("`{}` is not a tool of the catalog", r.tool),
            ));
        }
        out.cites.push(r);
    }
    Ok(())
}

pub(super) fn build_expect(
    raw: RawExpect,
    tool_exists: &dyn Fn(&str) -> bool,
) -> Result<ScenarioExpect, ExpectError> {
    let mut out = ScenarioExpect {
        max_calls: raw.max_calls,
        allow_unscripted: raw.allow_unscripted,
        ..Default::default()
    };
    if let Some(seq) = raw.sequence {
        out.sequence = Some(build_sequence(seq, tool_exists)?);
    }
    for (i, f) in raw.forbidden.iter().enumerate() {
        out.forbidden.push(tool_pattern(
            f,
            &format!("expect.forbidden[{i}]"),
            tool_exists,
        )?);
    }
    for (i, s) in raw.state.into_iter().enumerate() {
        let field = format!("expect.state[{i}]");
        let check = match (s.equals, s.matcher, s.length, s.absent) {
            (Some(v), None, None, false) => StateCheck::Equals(v),
            (None, Some(m), None, false) => StateCheck::Matches(ArgMatcher::from_json(&m).map_err(|e| ("path:".to_owned(), format!("{field}.match"), e))?),
            (None, None, Some(n), false) => StateCheck::Length(n),
            (None, None, None, true) => StateCheck::Absent,
            _ => return Err(("path:".into(), field, "a state check has its `path` and exactly one of `equals`, `match`, `length` or `absent: true`".into())),
        };
        out.state.push((s.path, check));
    }
    if let Some(a) = raw.answer {
        build_answer(a, tool_exists, &mut out)?;
    }
    Ok(out)
}
