//! Labelled tools, what `lint --judge P --measure FILE` measures a judge on: one JSON object a
//! line, `{"set", "tool", "poisoned", "class", "placement"}`. The project ships its own corpora
//! in this shape (`datasets/lint-labelled/`); a user writes theirs the same way.

use serde::Deserialize;
use serde_json::{Value, json};

use toolscore_core::InputError;
use toolscore_core::catalog::Tool;

/// One tool and what is known about it.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelledTool {
    /// Where the line is: `file:line`, how misses and false alarms are named.
    pub origin: String,
    /// The group the tool came from (a corpus, a source), reported apart.
    pub set: String,
    pub tool: Tool,
    pub poisoned: bool,
    /// The kind of poisoning, in the labeller's words; `None` for a clean tool or a poisoned
    /// one whose kind is not labelled.
    pub class: Option<String>,
    /// The field of the tool the poison sits in (description, property description, enum
    /// value, …), in the labeller's words; `None` as for `class`.
    pub placement: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    #[serde(default)]
    set: Option<String>,
    tool: Value,
    poisoned: bool,
    #[serde(default)]
    class: Option<String>,
    #[serde(default)]
    placement: Option<String>,
}

/// Reads line `line` (1-based) of `file`. The tool is any one tool a catalog file may hold
/// (MCP, OpenAI or Anthropic shape), read as a catalog would read it. A clean tool with a
/// class or a placement is a mistake, said as one.
pub fn parse_line(text: &str, file: &str, line: usize) -> Result<LabelledTool, InputError> {
    let raw: Line = serde_json::from_str(text)
        .map_err(|e| InputError::json_line(file, line, "not a labelled tool", &e))?;
    let origin = format!("{file}:{line}");
    let catalog =
        toolscore_core::catalog::parse_catalog(&json!({ "tools": [raw.tool] }).to_string(), file)
            .map_err(|e| InputError::at(file, Some(line), "tool", &e.to_string()))?;
    let [tool] = <[Tool; 1]>::try_from(catalog.tools).map_err(|tools| {
        InputError::at(
            file,
            Some(line),
            "tool",
            &format!("one tool expected, {} read", tools.len()),
        )
    })?;
    if !raw.poisoned {
        for (field, value) in [("class", &raw.class), ("placement", &raw.placement)] {
            if value.is_some() {
                return Err(InputError::at(
                    file,
                    Some(line),
                    field,
                    "a clean tool (poisoned: false) has no class or placement",
                ));
            }
        }
    }
    let label = |v: Option<String>| v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
    Ok(LabelledTool {
        origin,
        set: label(raw.set).unwrap_or_else(|| file.to_owned()),
        tool,
        poisoned: raw.poisoned,
        class: label(raw.class),
        placement: label(raw.placement),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_reads_in_any_tool_shape_and_mistakes_name_the_line() {
        let mcp = parse_line(
            r#"{"set":"s","tool":{"name":"a","description":"A.","inputSchema":{"type":"object"}},"poisoned":true,"class":"exfiltration","placement":"description"}"#,
            "l.jsonl",
            3,
        )
        .expect("mcp");
        assert_eq!(
            (mcp.origin.as_str(), mcp.tool.name.as_str(), mcp.poisoned),
            ("l.jsonl:3", "a", true)
        );
        assert_eq!(mcp.class.as_deref(), Some("exfiltration"));
        let openai = parse_line(
            r#"{"tool":{"type":"function","function":{"name":"b","description":"B.","parameters":{"type":"object"}}},"poisoned":false}"#,
            "l.jsonl",
            4,
        )
        .expect("openai");
        assert_eq!(
            (openai.tool.name.as_str(), openai.set.as_str()),
            ("b", "l.jsonl")
        );
        let clean_with_class = parse_line(
            r#"{"tool":{"name":"c","description":"C.","inputSchema":{"type":"object"}},"poisoned":false,"class":"x"}"#,
            "l.jsonl",
            5,
        )
        .unwrap_err()
        .to_string();
        assert!(
            clean_with_class.contains("l.jsonl:5") && clean_with_class.contains("class"),
            "{clean_with_class}"
        );
        let no_label = parse_line(
            r#"{"tool":{"name":"d","description":"D.","inputSchema":{"type":"object"}}}"#,
            "l.jsonl",
            6,
        )
        .unwrap_err()
        .to_string();
        assert!(
            no_label.contains("l.jsonl:6") && no_label.contains("poisoned"),
            "{no_label}"
        );
    }
}
