//! The shipped capability table (`capabilities.yaml`, beside the price table): request fields a
//! model's API refuses. An arm whose model refuses a configured field does not send it, and
//! the run says so, rather than every trial ending in a refused request.

use std::sync::OnceLock;

use serde::Deserialize;

use super::ProviderSettings;

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
    pub model: String,
    pub rejects: Vec<Field>,
    pub source: String,
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
    fn name(self) -> &'static str {
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
    /// Clears the configured fields `settings`' model refuses; one sentence per field cleared,
    /// for the run's output.
    pub fn omit_rejected(&self, settings: &mut ProviderSettings) -> Vec<String> {
        let kind = settings.kind.as_str();
        let Some(entry) = self.models.iter().find(|e| {
            e.kinds.iter().any(|k| k == kind)
                && super::prices::model_matches(&e.model, &settings.model)
        }) else {
            return Vec::new();
        };
        let mut notes = Vec::new();
        for field in &entry.rejects {
            let was_set = match field {
                Field::Temperature => settings.temperature.take().is_some(),
                Field::ToolChoice => settings.tool_choice.take().is_some(),
                Field::ParallelToolCalls => settings.parallel_tool_calls.take().is_some(),
            };
            if was_set {
                notes.push(format!(
                    "provider `{}`: model {} refuses `{}`, so it is not sent (capability table {}: {})",
                    settings.name,
                    settings.model,
                    field.name(),
                    self.as_of,
                    entry.source
                ));
            }
        }
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ProviderKind;

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
            assert!(!e.source.is_empty() && !e.rejects.is_empty(), "{}", e.model);
            for k in &e.kinds {
                assert!(k.parse::<ProviderKind>().is_ok(), "{k}");
            }
        }
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
