//! The text a model reads in a tool, and the views of it the injection rules match against.
//!
//! Obfuscated payloads are matched after normalisation: invisible characters removed,
//! full-width and look-alike letters folded to ASCII, leetspeak digits inside words read as
//! letters, s p a c e d letters joined; and after decoding base64 runs, percent-encoding, HTML
//! entities, `\uXXXX` escapes, ROT13 and reversal.

use serde_json::Value;

use toolscore_core::catalog::Tool;

/// One string the model reads, with its path inside the tool.
#[derive(Debug, Clone)]
pub(crate) struct Field {
    pub path: String,
    pub text: String,
    pub kind: FieldKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldKind {
    /// The tool's name or a property's name.
    Name,
    /// Descriptions, titles, enum values, defaults, examples: free text.
    Text,
    /// `pattern`, `format`, `$ref` and the like: matched only for hidden characters.
    Structural,
}

/// Keys whose string values are structure, not prose.
const STRUCTURAL_KEYS: &[&str] = &[
    "type",
    "format",
    "pattern",
    "$schema",
    "$ref",
    "$id",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "required",
    "x-mcp-header",
];

/// Every string in a tool that reaches the model or a person using it: its name, title,
/// description and `annotations.title`; in the input schema every property name,
/// description, title, enum value, default and example; and the same in the output schema.
/// A client shows a title where it would show the name, and may pass the output schema on,
/// so a payload there reaches a reader as surely as one in the description.
pub(crate) fn fields(tool: &Tool) -> Vec<Field> {
    let text = |path: &str, text: &str| Field {
        path: path.into(),
        text: text.to_owned(),
        kind: FieldKind::Text,
    };
    let mut out = vec![Field {
        path: "name".into(),
        text: tool.name.clone(),
        kind: FieldKind::Name,
    }];
    if let Some(title) = &tool.title {
        out.push(text("title", title));
    }
    out.push(text("description", &tool.description));
    if let Some(a) = &tool.annotations {
        out.push(text("annotations.title", &a.title));
    }
    collect(&tool.input_schema, "inputSchema", FieldKind::Text, &mut out);
    if let Some(schema) = &tool.output_schema {
        collect(schema, "outputSchema", FieldKind::Text, &mut out);
    }
    out
}

fn collect(value: &Value, path: &str, kind: FieldKind, out: &mut Vec<Field>) {
    match value {
        Value::String(s) => out.push(Field {
            path: path.to_owned(),
            text: s.clone(),
            kind,
        }),
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                collect(v, &format!("{path}[{i}]"), kind, out);
            }
        }
        Value::Object(map) => {
            let is_properties = path.ends_with(".properties") || path.ends_with("properties\"]");
            for (k, v) in map {
                let child = super::child_path(path, k);
                if is_properties {
                    out.push(Field {
                        path: child.clone(),
                        text: k.clone(),
                        kind: FieldKind::Name,
                    });
                }
                let child_kind = if !is_properties && STRUCTURAL_KEYS.contains(&k.as_str()) {
                    FieldKind::Structural
                } else {
                    kind
                };
                collect(v, &child, child_kind, out);
            }
        }
        _ => {}
    }
}

/// Invisible or direction-changing characters, with a name for the message.
pub(crate) fn hidden_char(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{200B}' => "zero-width space U+200B",
        '\u{200C}' => "zero-width non-joiner U+200C",
        '\u{200D}' => "zero-width joiner U+200D",
        '\u{2060}' => "word joiner U+2060",
        '\u{FEFF}' => "zero-width no-break space U+FEFF",
        '\u{180E}' => "Mongolian vowel separator U+180E",
        '\u{00AD}' => "soft hyphen U+00AD",
        '\u{034F}' => "combining grapheme joiner U+034F",
        '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' => "Hangul filler",
        '\u{2061}'..='\u{2064}' => "invisible operator",
        '\u{200E}' | '\u{200F}' | '\u{061C}' => "directional mark",
        '\u{202A}'..='\u{202E}' => "bidirectional embedding/override control",
        '\u{2066}'..='\u{2069}' => "bidirectional isolate control",
        '\u{E0000}'..='\u{E007F}' => "Unicode tag character",
        '\u{E0100}'..='\u{E01EF}' => "variation selector supplement (data carrier)",
        '\u{FFF9}'..='\u{FFFB}' => "interlinear annotation control",
        c if (c as u32) < 0x20 && !matches!(c, '\n' | '\r' | '\t') => "control character",
        '\u{7F}'..='\u{9F}' => "control character",
        _ => return None,
    })
}

/// Folds a look-alike letter (Cyrillic, Greek, full-width, mathematical) to its ASCII letter.
pub(crate) fn confusable(c: char) -> Option<char> {
    let mapped = match c {
        // Cyrillic
        'а' => 'a',
        'е' => 'e',
        'о' => 'o',
        'р' => 'p',
        'с' => 'c',
        'у' => 'y',
        'х' => 'x',
        'і' => 'i',
        'ј' => 'j',
        'ѕ' => 's',
        'һ' => 'h',
        'ԁ' => 'd',
        'ԛ' => 'q',
        'ԝ' => 'w',
        'ɡ' => 'g',
        'ӏ' => 'l',
        'ո' => 'n',
        'ս' => 'u',
        'А' => 'A',
        'В' => 'B',
        'Е' => 'E',
        'К' => 'K',
        'М' => 'M',
        'Н' => 'H',
        'О' => 'O',
        'Р' => 'P',
        'С' => 'C',
        'Т' => 'T',
        'Х' => 'X',
        'І' => 'I',
        'Ј' => 'J',
        'Ѕ' => 'S',
        // Greek
        'α' => 'a',
        'ο' => 'o',
        'ν' => 'v',
        'ι' => 'i',
        'κ' => 'k',
        'τ' => 't',
        'υ' => 'u',
        'ρ' => 'p',
        'Α' => 'A',
        'Β' => 'B',
        'Ε' => 'E',
        'Ζ' => 'Z',
        'Η' => 'H',
        'Ι' => 'I',
        'Κ' => 'K',
        'Μ' => 'M',
        'Ν' => 'N',
        'Ο' => 'O',
        'Ρ' => 'P',
        'Τ' => 'T',
        'Υ' => 'Y',
        'Χ' => 'X',
        // Full-width ASCII
        '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0)?,
        // Mathematical alphanumerics (bold, italic, script… A–Z a–z blocks)
        '\u{1D400}'..='\u{1D6A3}' => {
            let i = (c as u32 - 0x1D400) % 52;
            if i < 26 {
                char::from_u32('A' as u32 + i)?
            } else {
                char::from_u32('a' as u32 + i - 26)?
            }
        }
        _ => return None,
    };
    Some(mapped)
}

/// Whether the character is a letter of a script other than Latin that has Latin look-alikes.
pub(crate) fn is_lookalike_script(c: char) -> bool {
    matches!(c as u32, 0x0370..=0x03FF | 0x0400..=0x052F | 0x0530..=0x058F | 0x13A0..=0x13FF)
}

/// Leetspeak digit → letter, applied only inside words that also hold letters.
fn leet(c: char) -> char {
    match c {
        '0' => 'o',
        '1' => 'i',
        '3' => 'e',
        '4' => 'a',
        '5' => 's',
        '7' => 't',
        '@' => 'a',
        '$' => 's',
        _ => c,
    }
}

/// The text with hidden characters removed, look-alikes folded, lower-cased, leetspeak read
/// inside mixed words, `_` read as a space, spaced-out letters joined and whitespace collapsed.
pub(crate) fn normalize(text: &str) -> String {
    let folded: String = text
        .chars()
        .filter(|c| hidden_char(*c).is_none())
        .map(|c| confusable(c).unwrap_or(c))
        .flat_map(char::to_lowercase)
        .map(|c| if c == '_' { ' ' } else { c })
        .collect();
    // Leetspeak: in a token that has at least one letter and one leet character.
    let mut words = Vec::new();
    for w in folded.split_whitespace() {
        let has_alpha = w.chars().any(|c| c.is_alphabetic());
        let has_leet = w
            .chars()
            .any(|c| matches!(c, '0' | '1' | '3' | '4' | '5' | '7' | '@' | '$'));
        let is_number_like = w
            .chars()
            .all(|c| !c.is_alphabetic() || c == 'x' || c == 'k');
        if has_alpha && has_leet && !is_number_like {
            words.push(w.chars().map(leet).collect::<String>());
        } else {
            words.push(w.to_owned());
        }
    }
    join_spaced_letters(&join_dotted_letters(&words.join(" ")))
}

/// `d.o. n.o.t` → `do not`: single letters joined by dots (an optional trailing dot) read as a
/// word.
fn join_dotted_letters(text: &str) -> String {
    use std::sync::LazyLock;
    static DOTTED: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r"\b((?:\w\.)+\w)\b\.?").expect("static regex"));
    DOTTED
        .replace_all(text, |c: &regex::Captures<'_>| c[1].replace('.', ""))
        .into_owned()
}

/// `i g n o r e  a l l` → `ignore all`: runs of single letters separated by single
/// separators (space, `.`, `-`, `*`) are joined; a double space separates words.
fn join_spaced_letters(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        // Find a run: letter (sep letter){3,}
        let is_sep = |c: char| matches!(c, ' ' | '.' | '-' | '*' | '|');
        let starts_word = i == 0 || !chars[i - 1].is_alphanumeric();
        if starts_word && chars[i].is_alphabetic() {
            let mut j = i;
            let mut letters = vec![chars[i]];
            while j + 2 < chars.len()
                && is_sep(chars[j + 1])
                && chars[j + 2].is_alphabetic()
                && (j + 3 >= chars.len() || !chars[j + 3].is_alphanumeric())
            {
                letters.push(chars[j + 2]);
                j += 2;
            }
            if letters.len() >= 4 {
                out.extend(letters);
                i = j + 1;
                continue;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// Decoded variants of the text: each (how it was decoded, the decoded text), only when
/// decoding changed something and produced readable text.
pub(crate) fn decoded_views(text: &str) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for run in base64_runs(text) {
        if let Some(d) = decode_base64(run)
            && readable(&d)
        {
            out.push(("base64", d));
        }
    }
    if text.contains('%') {
        let d = percent_decode(text);
        if d != text {
            out.push(("percent-encoding", d));
        }
    }
    if text.contains("&#") || text.contains("&lt;") || text.contains("&gt;") {
        let d = html_entities(text);
        if d != text {
            out.push(("HTML entities", d));
        }
    }
    if text.contains("\\u") || text.contains("\\x") {
        let d = unicode_escapes(text);
        if d != text {
            out.push(("escapes", d));
        }
    }
    out.push(("ROT13", rot13(text)));
    out.push(("reversed text", text.chars().rev().collect()));
    out
}

fn readable(s: &str) -> bool {
    let total = s.chars().count();
    total >= 8
        && s.chars()
            .filter(|c| c.is_alphanumeric() || c.is_whitespace() || c.is_ascii_punctuation())
            .count()
            * 10
            >= total * 9
}

/// Runs of at least 16 base64 characters.
fn base64_runs(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let is_b64 = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_');
    let mut start = None;
    for (i, &b) in bytes.iter().enumerate() {
        match (is_b64(b), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                if i - s >= 16 {
                    out.push(&text[s..i]);
                }
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start
        && bytes.len() - s >= 16
    {
        out.push(&text[s..]);
    }
    out
}

fn decode_base64(run: &str) -> Option<String> {
    let mut bits: u32 = 0;
    let mut nbits = 0;
    let mut out = Vec::new();
    for c in run.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => break,
            _ => return None,
        };
        bits = (bits << 6) | u32::from(v);
        nbits += 6;
        if nbits >= 8 {
            nbits -= 8;
            out.push((bits >> nbits) as u8);
            bits &= (1 << nbits) - 1;
        }
    }
    String::from_utf8(out).ok()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(v) = u8::from_str_radix(&text[i + 1..i + 3], 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn html_entities(text: &str) -> String {
    static RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"&#(x[0-9a-fA-F]+|[0-9]+);|&(lt|gt|amp|quot|apos);")
            .expect("static regex")
    });
    RE.replace_all(text, |c: &regex::Captures<'_>| {
        if let Some(n) = c.get(1) {
            let s = n.as_str();
            let code = match s.strip_prefix('x') {
                Some(h) => u32::from_str_radix(h, 16).ok(),
                None => s.parse().ok(),
            };
            code.and_then(char::from_u32)
                .map_or_else(String::new, |c| c.to_string())
        } else {
            match c.get(2).map(|m| m.as_str()) {
                Some("lt") => "<",
                Some("gt") => ">",
                Some("amp") => "&",
                Some("quot") => "\"",
                _ => "'",
            }
            .to_owned()
        }
    })
    .into_owned()
}

fn unicode_escapes(text: &str) -> String {
    static RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\\u\{?([0-9a-fA-F]{2,6})\}?|\\x([0-9a-fA-F]{2})").expect("static regex")
    });
    RE.replace_all(text, |c: &regex::Captures<'_>| {
        let hex = c.get(1).or_else(|| c.get(2)).map_or("", |m| m.as_str());
        u32::from_str_radix(hex, 16)
            .ok()
            .and_then(char::from_u32)
            .map_or_else(String::new, |c| c.to_string())
    })
    .into_owned()
}

fn rot13(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            'a'..='z' => (((c as u8 - b'a') + 13) % 26 + b'a') as char,
            'A'..='Z' => (((c as u8 - b'A') + 13) % 26 + b'A') as char,
            _ => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_undoes_common_obfuscations() {
        assert_eq!(normalize("IGNORE previous"), "ignore previous");
        assert_eq!(normalize("ig\u{200B}nore"), "ignore");
        assert_eq!(normalize("іgnоre"), "ignore"); // Cyrillic і and о
        assert_eq!(normalize("１gn0re prev10us"), "ignore previous");
        assert_eq!(normalize("i g n o r e all"), "ignore all");
        assert_eq!(normalize("ignore_previous"), "ignore previous");
        assert_eq!(normalize("d.o. n.o.t t.e.l.l"), "do not tell");
        // Numbers stay numbers; a short spaced run is left alone.
        assert_eq!(normalize("top 10 results, a b c"), "top 10 results, a b c");
    }

    #[test]
    fn decoded_views_find_base64_percent_entities_and_rot13() {
        let b64 = "aWdub3JlIHByZXZpb3VzIGluc3RydWN0aW9ucw=="; // "ignore previous instructions"
        let views = decoded_views(&format!("see {b64}"));
        assert!(
            views
                .iter()
                .any(|(k, t)| *k == "base64" && t == "ignore previous instructions")
        );
        assert!(
            decoded_views("a%20b%3Cx%3E")
                .iter()
                .any(|(k, t)| *k == "percent-encoding" && t == "a b<x>")
        );
        assert!(
            decoded_views("&lt;system&gt; &#105;")
                .iter()
                .any(|(_, t)| t == "<system> i")
        );
        assert!(
            decoded_views("vtaber")
                .iter()
                .any(|(k, t)| *k == "ROT13" && t == "ignore")
        );
    }

    #[test]
    fn fields_cover_names_descriptions_enums_defaults_and_examples() {
        let t = Tool {
            name: "t".into(),
            description: "d".into(),
            input_schema: serde_json::json!({"type": "object", "properties": {
                "mode": {"type": "string", "enum": ["a", "b"], "default": "a",
                          "examples": ["b"], "description": "m", "pattern": "^x$"}
            }}),
            ..Default::default()
        };
        let f = fields(&t);
        let paths: Vec<_> = f.iter().map(|f| f.path.as_str()).collect();
        for p in [
            "name",
            "description",
            "inputSchema.properties.mode",
            "inputSchema.properties.mode.enum[1]",
            "inputSchema.properties.mode.default",
            "inputSchema.properties.mode.examples[0]",
            "inputSchema.properties.mode.description",
        ] {
            assert!(paths.contains(&p), "{p} in {paths:?}");
        }
        let pattern = f.iter().find(|f| f.path.ends_with("pattern")).unwrap();
        assert_eq!(pattern.kind, FieldKind::Structural);
    }

    #[test]
    fn fields_cover_the_titles_and_output_schema_a_client_shows() {
        let t = Tool {
            name: "t".into(),
            title: Some("T".into()),
            description: "d".into(),
            input_schema: serde_json::json!({"type": "object", "properties": {
                "q": {"type": "string", "title": "Query"}}}),
            annotations: Some(toolscore_core::catalog::Annotations { title: "A".into() }),
            output_schema: Some(serde_json::json!({"type": "object", "properties": {
                "r": {"type": "string", "description": "result"}}})),
        };
        let paths: Vec<String> = fields(&t).into_iter().map(|f| f.path).collect();
        for p in [
            "title",
            "annotations.title",
            "inputSchema.properties.q.title",
            "outputSchema.properties.r",
            "outputSchema.properties.r.description",
        ] {
            assert!(paths.iter().any(|x| x == p), "{p} in {paths:?}");
        }
    }
}
