//! The model map the community keeps: LiteLLM's `model_prices_and_context_window.json` (MIT),
//! which lists per model its prices per token (interactive, batch, cache), whether it calls
//! functions, takes `tool_choice`, parallel calls and sampling parameters, and its input limit.
//!
//! A snapshot is compiled into the binary (`crates/provider/model-map/`, refreshed by
//! `scripts/update-model-map.sh` as one reviewed commit, its version in `toolscore --version`);
//! `model_map: FILE` in toolscore.yaml reads a newer copy instead, without a new build. A
//! provider kind and model name find their entry by [`keys`], one function for every kind.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

use toolscore_core::Price;

use crate::ProviderKind;

/// The snapshot, gzipped, and the line saying what it is (`litellm VERSION DATE`).
const SNAPSHOT_GZ: &[u8] = include_bytes!("../model-map/model_prices_and_context_window.json.gz");
const SNAPSHOT_VERSION: &str = include_str!("../model-map/VERSION");

/// Largest map file read: the snapshot is 3.5 MB; a copy a hundred times that is not a map.
pub(crate) const MAX_MAP_BYTES: u64 = 256 * 1024 * 1024;

/// Where a map came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MapOrigin {
    /// The snapshot compiled in: the package's version and the day it was taken.
    Snapshot { version: String, date: String },
    /// A map file the user named (`model_map:` in toolscore.yaml).
    File(PathBuf),
}

impl std::fmt::Display for MapOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MapOrigin::Snapshot { version, date } => {
                write!(f, "LiteLLM model map {version} of {date}")
            }
            MapOrigin::File(path) => write!(f, "the model map {}", path.display()),
        }
    }
}

/// What the map says of one model; a field the entry lacks (or gives in another type) is
/// `None`: unknown, never false.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MapEntry {
    /// `litellm_provider`.
    pub provider: Option<String>,
    /// `mode`: `chat`, `responses`, `embedding`, …
    pub mode: Option<String>,
    /// US dollars per million tokens.
    pub input: Option<f64>,
    pub output: Option<f64>,
    pub cache_read: Option<f64>,
    pub cache_write: Option<f64>,
    /// Per million tokens through the provider's batch API.
    pub batch_input: Option<f64>,
    pub batch_output: Option<f64>,
    pub function_calling: Option<bool>,
    pub tool_choice: Option<bool>,
    pub parallel_function_calling: Option<bool>,
    pub sampling_params: Option<bool>,
    pub max_input_tokens: Option<u64>,
}

impl MapEntry {
    fn from_json(v: &Value) -> MapEntry {
        // The map gives dollars per token; toolscore's prices are per million tokens, rounded
        // to nine decimals so 5e-06 reads as 5 and not 4.999999999999999.
        let per_million = |key: &str| {
            v.get(key)
                .and_then(Value::as_f64)
                .filter(|x| x.is_finite() && *x >= 0.0)
                .map(|x| (x * 1e6 * 1e9).round() / 1e9)
        };
        let flag = |key: &str| v.get(key).and_then(Value::as_bool);
        let text = |key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
        MapEntry {
            provider: text("litellm_provider"),
            mode: text("mode"),
            input: per_million("input_cost_per_token"),
            output: per_million("output_cost_per_token"),
            cache_read: per_million("cache_read_input_token_cost"),
            cache_write: per_million("cache_creation_input_token_cost"),
            batch_input: per_million("input_cost_per_token_batches"),
            batch_output: per_million("output_cost_per_token_batches"),
            function_calling: flag("supports_function_calling"),
            tool_choice: flag("supports_tool_choice"),
            parallel_function_calling: flag("supports_parallel_function_calling"),
            sampling_params: flag("supports_sampling_params"),
            max_input_tokens: v.get("max_input_tokens").and_then(Value::as_u64),
        }
    }

    /// Its interactive price, when the map gives both input and output.
    pub fn price(&self) -> Option<Price> {
        Some(Price {
            input: self.input?,
            output: self.output?,
            cache_read: self.cache_read,
            cache_write: self.cache_write,
        })
    }

    /// The share the batch API takes off input, when the map gives both rates.
    pub fn batch_discount(&self) -> Option<f64> {
        let (batch, full) = (self.batch_input?, self.input?);
        (full > 0.0 && batch <= full).then(|| ((1.0 - batch / full) * 1e9).round() / 1e9)
    }
}

/// A model map: its entries by the map's key, and where it came from.
#[derive(Debug, Clone)]
pub struct ModelMap {
    pub origin: MapOrigin,
    entries: HashMap<String, MapEntry>,
}

/// Why a map file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ModelMapError {
    #[error("cannot read the model map {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the model map {} is larger than {MAX_MAP_BYTES} bytes", path.display())]
    TooLarge { path: PathBuf },
    #[error("the model map {} is not a JSON object of models (LiteLLM's model_prices_and_context_window.json)", path.display())]
    NotAMap {
        path: PathBuf,
        #[source]
        source: Option<serde_json::Error>,
    },
}

impl ModelMap {
    /// The snapshot compiled in. Its parse is checked by a unit test, so a failure here is a
    /// build defect, not bad input.
    pub fn snapshot() -> &'static ModelMap {
        static MAP: OnceLock<ModelMap> = OnceLock::new();
        MAP.get_or_init(|| {
            let mut text = Vec::new();
            flate2::read::GzDecoder::new(SNAPSHOT_GZ)
                .read_to_end(&mut text)
                .expect("the model map snapshot is gzip (unit-tested)");
            let value: Value = serde_json::from_slice(&text)
                .expect("the model map snapshot is JSON (unit-tested)");
            let (version, date) = snapshot_version();
            ModelMap::from_value(
                &value,
                MapOrigin::Snapshot {
                    version: version.to_owned(),
                    date: date.to_owned(),
                },
            )
            .expect("the model map snapshot is an object (unit-tested)")
        })
    }

    /// A map file in LiteLLM's format, read whole (at most [`MAX_MAP_BYTES`]).
    pub fn from_file(path: &Path) -> Result<ModelMap, ModelMapError> {
        let read = |source| ModelMapError::Read {
            path: path.to_owned(),
            source,
        };
        let meta = std::fs::metadata(path).map_err(read)?;
        if meta.len() > MAX_MAP_BYTES {
            return Err(ModelMapError::TooLarge {
                path: path.to_owned(),
            });
        }
        let bytes = std::fs::read(path).map_err(read)?;
        let value: Value = serde_json::from_slice(&bytes).map_err(|e| ModelMapError::NotAMap {
            path: path.to_owned(),
            source: Some(e),
        })?;
        ModelMap::from_value(&value, MapOrigin::File(path.to_owned())).ok_or_else(|| {
            ModelMapError::NotAMap {
                path: path.to_owned(),
                source: None,
            }
        })
    }

    fn from_value(value: &Value, origin: MapOrigin) -> Option<ModelMap> {
        let entries = value
            .as_object()?
            .iter()
            // LiteLLM's first entry documents the fields; it is no model.
            .filter(|(key, v)| key.as_str() != "sample_spec" && v.is_object())
            .map(|(key, v)| (key.clone(), MapEntry::from_json(v)))
            .collect();
        Some(ModelMap { origin, entries })
    }

    /// The number of models it lists.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry for `model` served by a provider of `kind`: the first of [`keys`] the map
    /// has, with that key.
    pub fn find(&self, kind: ProviderKind, model: &str) -> Option<(String, &MapEntry)> {
        keys(kind, model)
            .into_iter()
            .find_map(|k| self.entries.get(&k).map(|e| (k, e)))
    }
}

/// What the model map says of `model` served by a provider of `kind`: `user_map`'s entry when
/// it lists the model, else the snapshot's; with the map it came from and its key.
pub fn find_model<'m>(
    user_map: Option<&'m ModelMap>,
    kind: ProviderKind,
    model: &str,
) -> Option<(&'m ModelMap, String, &'m MapEntry)> {
    let found = |map: &'m ModelMap| map.find(kind, model).map(|(key, e)| (map, key, e));
    user_map
        .and_then(found)
        .or_else(|| found(ModelMap::snapshot()))
}

/// Clears the temperature of `settings` when the model map says its model takes no sampling
/// parameters (`supports_sampling_params: false`), and records it in `settings.omitted` with
/// the map as the reason, as [`crate::capabilities::CapabilityTable::omit_rejected`] does for
/// the hand-kept table; one sentence when it clears it, for the run's output. `user_map` is
/// read first, then the snapshot.
pub fn omit_unsupported_sampling(
    settings: &mut crate::ProviderSettings,
    user_map: Option<&ModelMap>,
) -> Option<String> {
    let (map, key, entry) = find_model(user_map, settings.kind, &settings.model)?;
    if entry.sampling_params != Some(false) {
        return None;
    }
    let configured = settings.temperature.take()?;
    let reason = format!("{}: supports_sampling_params false ({key})", map.origin);
    settings.omitted.push(toolscore_core::OmittedSetting {
        field: "temperature".to_owned(),
        configured: Value::from(configured),
        reason: reason.clone(),
    });
    Some(format!(
        "provider `{}`: model {} takes no sampling parameters, so `temperature` is not sent ({reason})",
        settings.name, settings.model
    ))
}

/// The snapshot's package version and the day it was taken.
pub fn snapshot_version() -> (&'static str, &'static str) {
    let mut words = SNAPSHOT_VERSION.split_whitespace().skip(1);
    (
        words.next().unwrap_or("unknown"),
        words.next().unwrap_or("unknown"),
    )
}

/// The map's keys that may name `model` served by a provider of `kind`, most specific first.
///
/// LiteLLM keys OpenAI's and Anthropic's models by their bare names (`gpt-5.5`,
/// `claude-sonnet-5`), some also with the provider's prefix, and other providers' with theirs
/// (`gemini/…`, `azure/…`, `ollama/…`). A dated snapshot (`-20250929`, `-2025-08-07`) is
/// tried as named, then without its date, so a snapshot the map does not list is read as its
/// model. A model named with a provider prefix already (`gemini/x`) is tried as given first.
pub(crate) fn keys(kind: ProviderKind, model: &str) -> Vec<String> {
    let prefixes: &[&str] = match kind.as_str() {
        "anthropic" => &["", "anthropic/"],
        "openai-compat" | "openai-responses" => &["", "openai/"],
        "azure-openai" => &["azure/", ""],
        "gemini" => &["gemini/", ""],
        "ollama" => &["ollama_chat/", "ollama/"],
        _ => &[""],
    };
    let mut names = vec![model.to_owned()];
    if let Some(undated) = without_date(model) {
        names.push(undated.to_owned());
    }
    let mut out = Vec::new();
    for name in &names {
        if name.contains('/') {
            out.push(name.clone());
        }
        for prefix in prefixes {
            let key = format!("{prefix}{name}");
            if !out.contains(&key) {
                out.push(key);
            }
        }
    }
    out
}

/// `model` without a dated snapshot suffix (`-YYYYMMDD` or `-YYYY-MM-DD`), when it has one.
fn without_date(model: &str) -> Option<&str> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some((head, tail)) = model.rsplit_once('-')
        && tail.len() == 8
        && digits(tail)
    {
        return Some(head);
    }
    let mut parts = model.rsplitn(4, '-');
    let (d, m, y, head) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    (d.len() == 2 && m.len() == 2 && y.len() == 4 && digits(d) && digits(m) && digits(y))
        .then_some(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(name: &str) -> ProviderKind {
        name.parse().expect("a provider kind")
    }

    #[test]
    fn the_snapshot_parses_and_says_what_it_is() {
        let map = ModelMap::snapshot();
        assert!(map.len() > 4_000, "{}", map.len());
        let (version, date) = snapshot_version();
        assert!(version.split('.').count() == 3, "{version}");
        assert!(date.len() == 10 && date.starts_with("20"), "{date}");
        assert!(map.origin.to_string().contains(version));
    }

    #[test]
    fn keys_follow_each_kinds_naming_and_drop_a_snapshot_date() {
        assert_eq!(
            keys(kind("anthropic"), "claude-sonnet-4-5-20250929"),
            [
                "claude-sonnet-4-5-20250929",
                "anthropic/claude-sonnet-4-5-20250929",
                "claude-sonnet-4-5",
                "anthropic/claude-sonnet-4-5"
            ]
        );
        assert_eq!(
            keys(kind("openai-responses"), "gpt-4.1-2025-04-14"),
            [
                "gpt-4.1-2025-04-14",
                "openai/gpt-4.1-2025-04-14",
                "gpt-4.1",
                "openai/gpt-4.1"
            ]
        );
        assert_eq!(
            keys(kind("gemini"), "gemini-2.5-pro"),
            ["gemini/gemini-2.5-pro", "gemini-2.5-pro"]
        );
        assert_eq!(
            keys(kind("ollama"), "qwen3"),
            ["ollama_chat/qwen3", "ollama/qwen3"]
        );
        assert_eq!(
            keys(kind("azure-openai"), "gpt-5.5"),
            ["azure/gpt-5.5", "gpt-5.5"]
        );
        // Not a date: a version.
        assert_eq!(
            keys(kind("openai-compat"), "gpt-5.5"),
            ["gpt-5.5", "openai/gpt-5.5"]
        );
    }

    #[test]
    fn the_snapshot_prices_the_models_the_hand_kept_table_was_behind_on() {
        let map = ModelMap::snapshot();
        for (k, model) in [
            ("anthropic", "claude-opus-4-7"),
            ("anthropic", "claude-sonnet-5"),
            ("anthropic", "claude-haiku-5-5"),
            ("openai-responses", "gpt-5.5"),
        ] {
            let (_, entry) = map
                .find(kind(k), model)
                .unwrap_or_else(|| panic!("{model}"));
            let price = entry.price().unwrap_or_else(|| panic!("{model} priced"));
            assert!(
                price.input > 0.0 && price.output > price.input,
                "{model}: {price:?}"
            );
            assert_eq!(entry.function_calling, Some(true), "{model}");
        }
        let (key, opus) = map
            .find(kind("anthropic"), "claude-opus-4-7")
            .expect("opus");
        assert_eq!(key, "claude-opus-4-7");
        assert_eq!(opus.price().map(|p| (p.input, p.output)), Some((5.0, 25.0)));
        assert_eq!(opus.batch_discount(), Some(0.5));
        // A dated snapshot of a listed model is read as it.
        assert!(
            map.find(kind("anthropic"), "claude-opus-4-7-20261101")
                .is_some()
        );
        assert!(map.find(kind("anthropic"), "no-such-model").is_none());
    }

    #[test]
    fn a_map_file_that_is_not_a_map_is_refused_with_its_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("map.json");
        std::fs::write(&path, "[1, 2]").expect("write");
        let e = ModelMap::from_file(&path).expect_err("a list is no map");
        assert!(e.to_string().contains("map.json"), "{e}");
        std::fs::write(
            &path,
            r#"{"m": {"input_cost_per_token": 1e-6, "output_cost_per_token": "x"}}"#,
        )
        .expect("write");
        let map = ModelMap::from_file(&path).expect("a map");
        let (_, entry) = map.find(kind("openai-compat"), "m").expect("m");
        // A field in another type is unknown, not an error.
        assert_eq!((entry.input, entry.output), (Some(1.0), None));
        assert!(entry.price().is_none());
    }
}
