//! Public as a namespace: `capabilities::shipped` beside `prices::shipped`.
//!
//! The shipped capability table (`capabilities.yaml`, beside the price table): request fields a
//! model's API refuses. An arm whose model refuses a configured field does not send it, and
//! the run says so, rather than every trial ending in a refused request.

use std::sync::OnceLock;

use serde::Deserialize;

use super::ProviderSettings;
use toolscore_core::OmittedSetting;

const SHIPPED: &str = include_str!("capabilities.yaml");

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapabilityTable {
    /// The day the entries were read from their sources.
    pub as_of: String,
    pub models: Vec<CapabilityEntry>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapabilityEntry {
    pub kinds: Vec<String>,
    /// One model: named exactly so, or so followed by a dated snapshot suffix. An entry names
    /// either `model`, or `family` and `since`.
    #[serde(default)]
    pub model: Option<String>,
    /// A family of models by rule: every model named `FAMILY-MAJOR[-MINOR][-…]` (a dated
    /// snapshot or other suffix after it) whose version is at or after `since`, so a later
    /// version is covered the day it ships instead of sent a field it refuses.
    #[serde(default)]
    pub family: Option<String>,
    /// `MAJOR.MINOR` (`4.7`): the first version of `family` the entry applies to.
    #[serde(default)]
    pub since: Option<String>,
    pub rejects: Vec<Field>,
    pub source: String,
}

impl CapabilityEntry {
    /// Whether `model` is this entry's model, or of its family at or after `since`.
    pub fn matches(&self, model: &str) -> bool {
        match (&self.model, &self.family, &self.since) {
            (Some(name), None, None) => super::prices::model_matches(name, model),
            (None, Some(family), Some(since)) => {
                match (family_version(family, model), parse_version(since)) {
                    (Some(version), Some(first)) => version >= first,
                    _ => false,
                }
            }
            _ => false,
        }
    }
}

/// `4.7` as `(4, 7)`; `5` as `(5, 0)`.
fn parse_version(text: &str) -> Option<(u32, u32)> {
    let (major, minor) = text.split_once('.').unwrap_or((text, "0"));
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The version of `family` a model name gives: `claude-opus-4-7` → (4, 7), `claude-opus-5` →
/// (5, 0), `claude-opus-4-7-20260101` → (4, 7). A minor version is one or two digits, so the
/// dated snapshot of a major version (`claude-opus-4-20250514`) is (4, 0), not a minor of
/// 20250514. `None` when the name is not of the family or names no version
/// (`claude-opus-latest`, `claude-sonnet-4-5`, `claude-3-opus-20240229`).
fn family_version(family: &str, model: &str) -> Option<(u32, u32)> {
    let rest = model.strip_prefix(family)?.strip_prefix('-')?;
    let mut tokens = rest.split(|c: char| !c.is_ascii_alphanumeric());
    let number = |t: &str, most: usize| {
        (!t.is_empty() && t.len() <= most && t.bytes().all(|b| b.is_ascii_digit()))
            .then(|| t.parse::<u32>().ok())
            .flatten()
    };
    let major = number(tokens.next()?, 3)?;
    let minor = tokens.next().and_then(|t| number(t, 2)).unwrap_or(0);
    Some((major, minor))
}

/// A field of the neutral request a model may refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    Temperature,
    ToolChoice,
    ParallelToolCalls,
}

impl Field {
    pub fn name(self) -> &'static str {
        match self {
            Field::Temperature => "temperature",
            Field::ToolChoice => "tool_choice",
            Field::ParallelToolCalls => "parallel_tool_calls",
        }
    }
}

/// The shipped table; its parse is unit-tested, so a failure here is a build defect.
pub fn shipped() -> &'static CapabilityTable {
    static TABLE: OnceLock<CapabilityTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        serde_saphyr::from_str(SHIPPED)
            .expect("src/provider/capabilities.yaml parses (unit-tested)")
    })
}

impl CapabilityTable {
    /// The entry for `model` served by a provider of kind `kind`, if the table has one.
    pub fn entry_for(&self, kind: &str, model: &str) -> Option<&CapabilityEntry> {
        self.models
            .iter()
            .find(|e| e.kinds.iter().any(|k| k == kind) && e.matches(model))
    }

    /// Clears the configured fields `settings`' model refuses and records each in
    /// `settings.omitted` (which the arm's identity, so plan.json and summary.json, carry);
    /// one sentence per field cleared, for the run's output before its first request.
    pub fn omit_rejected(&self, settings: &mut ProviderSettings) -> Vec<String> {
        let Some(entry) = self.entry_for(settings.kind.as_str(), &settings.model) else {
            return Vec::new();
        };
        let reason = format!("capability table {}: {}", self.as_of, entry.source);
        let mut notes = Vec::new();
        for field in &entry.rejects {
            let configured = match field {
                Field::Temperature => settings.temperature.take().map(serde_json::Value::from),
                Field::ToolChoice => settings
                    .tool_choice
                    .take()
                    .map(|c| serde_json::Value::from(c.as_str())),
                Field::ParallelToolCalls => settings
                    .parallel_tool_calls
                    .take()
                    .map(serde_json::Value::from),
            };
            if let Some(configured) = configured {
                notes.push(format!(
                    "provider `{}`: model {} refuses `{}`, so it is not sent ({reason})",
                    settings.name,
                    settings.model,
                    field.name(),
                ));
                settings.omitted.push(OmittedSetting {
                    field: field.name().to_owned(),
                    configured,
                    reason: reason.clone(),
                });
            }
        }
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProviderKind;

    fn settings(kind: &str, model: &str) -> ProviderSettings {
        let kind: ProviderKind = kind.parse().expect("kind");
        let mut s = ProviderSettings::new(kind, "p", "https://example.test", model);
        s.temperature = Some(0.7);
        s
    }

    #[test]
    fn the_shipped_table_parses_and_names_real_kinds_and_sources() {
        let t = shipped();
        assert!(t.as_of.starts_with("20") && !t.models.is_empty());
        for e in &t.models {
            let named = format!("{:?} {:?}", e.model, e.family);
            assert!(!e.source.is_empty() && !e.rejects.is_empty(), "{named}");
            // One model, or a family with a version it starts at: never both, never neither.
            let by_rule = e.family.is_some()
                && e.since.as_deref().and_then(parse_version).is_some()
                && e.model.is_none();
            let by_name = e.model.is_some() && e.family.is_none() && e.since.is_none();
            assert!(by_rule != by_name, "{named}");
            for k in &e.kinds {
                assert!(k.parse::<ProviderKind>().is_ok(), "{k}");
            }
        }
    }

    #[test]
    fn a_family_version_is_read_from_the_model_name() {
        let cases = [
            ("claude-opus-4-7", Some((4, 7))),
            ("claude-opus-4-7-20260101", Some((4, 7))),
            ("claude-opus-4-8", Some((4, 8))),
            ("claude-opus-4-10", Some((4, 10))),
            ("claude-opus-5", Some((5, 0))),
            ("claude-opus-5-20270301", Some((5, 0))),
            ("claude-opus-5-1-20270301", Some((5, 1))),
            ("claude-opus-4-20250514", Some((4, 0))),
            ("claude-opus-4-1-20250805", Some((4, 1))),
            ("claude-opus-4-7@20260101", Some((4, 7))),
            ("claude-opus-latest", None),
            ("claude-opus", None),
            ("claude-opusx-5", None),
            ("claude-3-opus-20240229", None),
            ("claude-sonnet-4-5", None),
        ];
        for (model, want) in cases {
            assert_eq!(family_version("claude-opus", model), want, "{model}");
        }
        assert_eq!(parse_version("4.7"), Some((4, 7)));
        assert_eq!(parse_version("5"), Some((5, 0)));
        assert_eq!(parse_version("four"), None);
    }

    #[test]
    fn opus_from_4_7_on_is_matched_by_rule_and_earlier_models_are_not() {
        let t = shipped();
        for model in [
            "claude-opus-4-7",
            "claude-opus-4-7-20260101",
            "claude-opus-4-8",
            "claude-opus-5",
            "claude-opus-6-2",
        ] {
            let mut s = settings("anthropic", model);
            assert_eq!(t.omit_rejected(&mut s).len(), 1, "{model}");
            assert_eq!(s.temperature, None, "{model}");
            assert_eq!(s.omitted.len(), 1, "{model}");
            assert_eq!(s.omitted[0].field, "temperature");
            assert_eq!(s.omitted[0].configured, serde_json::json!(0.7));
            assert!(s.omitted[0].reason.contains("Opus 4.7"), "{:?}", s.omitted);
            assert_eq!(s.identity().omitted, s.omitted);
        }
        for model in [
            "claude-opus-4-6",
            "claude-opus-4-5-20251101",
            "claude-opus-4-20250514",
            "claude-sonnet-4-5",
            "claude-sonnet-5",
        ] {
            let mut s = settings("anthropic", model);
            assert!(t.omit_rejected(&mut s).is_empty(), "{model}");
            assert_eq!(s.temperature, Some(0.7), "{model}");
            assert!(s.omitted.is_empty(), "{model}");
        }
        // The rule is Anthropic's: the same name on another kind is not matched.
        let mut s = settings("openai-compat", "claude-opus-5");
        assert!(t.omit_rejected(&mut s).is_empty());
    }

    #[test]
    fn a_refused_field_is_cleared_and_said_and_others_are_left_alone() {
        let t = shipped();
        let mut opus = settings("anthropic", "claude-opus-4-7-20260101");
        let notes = t.omit_rejected(&mut opus);
        assert_eq!(opus.temperature, None);
        assert_eq!(notes.len(), 1);
        assert!(notes[0].starts_with("provider `p`: model claude-opus-4-7-20260101 refuses `temperature`, so it is not sent (capability table 20"), "{}", notes[0]);
        // A sibling is not matched by prefix, and an unset field says nothing.
        let mut sonnet = settings("anthropic", "claude-sonnet-4-5");
        assert!(t.omit_rejected(&mut sonnet).is_empty());
        assert_eq!(sonnet.temperature, Some(0.7));
        let mut unset = settings("openai-responses", "o3");
        unset.temperature = None;
        assert!(t.omit_rejected(&mut unset).is_empty());
    }
}
