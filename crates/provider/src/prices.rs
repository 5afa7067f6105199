//! Public as a namespace: `prices::lookup` and `prices::shipped` beside
//! `capabilities::shipped`, `prices::ArmPrice`.
//!
//! What a model's tokens cost, from three sources in order: a model map file the user named
//! (`model_map:` in toolscore.yaml), the hand-kept table (`prices.yaml`: only what LiteLLM's
//! map lacks or gets wrong, each entry with its source, a test keeping it so), then the map's
//! snapshot compiled in ([`crate::ModelMap`]). `prices:` in toolscore.yaml wins over all
//! three; the command line applies it.
//!
//! In the hand-kept table, a model matches an entry named exactly like it, or like it followed by a dated snapshot
//! suffix (`claude-sonnet-4-5-20250929`, `gpt-4.1-2025-04-14`); no looser prefix, so a model
//! the table does not know stays unpriced instead of borrowing a sibling's price. Local
//! models are never priced from the table: a kind whose adapter says it serves for free there
//! (`ollama`, and `openai-compat` on a loopback address) costs what `prices:` in toolscore.yaml
//! says, and is unknown otherwise.

use std::sync::OnceLock;

use serde::Deserialize;

use toolscore_core::Price;

use crate::ModelMap;
use crate::ProviderKind;

/// The table as shipped: compiled into the binary, so a run prices the same on any machine.
const SHIPPED: &str = include_str!("prices.yaml");

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceTable {
    /// The day the figures were read from their sources.
    pub as_of: String,
    pub models: Vec<TableEntry>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableEntry {
    /// Provider kinds the price applies to (`openai-compat` and `openai-responses` share
    /// OpenAI's prices).
    pub kinds: Vec<String>,
    pub model: String,
    pub input: f64,
    pub output: f64,
    #[serde(default)]
    pub cache_read: Option<f64>,
    #[serde(default)]
    pub cache_write: Option<f64>,
    /// Share taken off input and output by the provider's batch API.
    #[serde(default)]
    pub batch_discount: Option<f64>,
    pub source: String,
}

/// The price an arm is charged at, and where it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct ArmPrice {
    pub price: Price,
    pub batch_discount: Option<f64>,
    /// `price table 2026-12-03 (SOURCE)` or `toolscore.yaml prices.KEY`.
    pub source: String,
}

/// The shipped table. Its parse is checked by a unit test, so a failure here is a build
/// defect, not bad input.
pub fn shipped() -> &'static PriceTable {
    static TABLE: OnceLock<PriceTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        serde_saphyr::from_str(SHIPPED).expect("src/provider/prices.yaml parses (unit-tested)")
    })
}

/// The price of `model` served by a provider of `kind` at `base_url`: from `user_map` when it
/// has the model, then the hand-kept table, then the snapshot of the model map; none for a
/// server its adapter says bills nothing, or a model none of them prices.
pub fn lookup(
    kind: ProviderKind,
    model: &str,
    base_url: &str,
    user_map: Option<&ModelMap>,
) -> Option<ArmPrice> {
    if kind.adapter().serves_free(base_url) {
        return None;
    }
    user_map
        .and_then(|map| from_map(map, kind, model))
        .or_else(|| shipped().lookup(kind, model, base_url))
        .or_else(|| from_map(ModelMap::snapshot(), kind, model))
}

/// The price `map` gives `model`, named by the map and the key it was found under.
fn from_map(map: &ModelMap, kind: ProviderKind, model: &str) -> Option<ArmPrice> {
    let (key, entry) = map.find(kind, model)?;
    Some(ArmPrice {
        price: entry.price()?,
        batch_discount: entry.batch_discount(),
        source: format!("{} ({key})", map.origin),
    })
}

impl PriceTable {
    /// The price of `model` served by a provider of `kind` at `base_url`, if the table has it
    /// (none for a server its adapter says bills nothing).
    pub fn lookup(&self, kind: ProviderKind, model: &str, base_url: &str) -> Option<ArmPrice> {
        if kind.adapter().serves_free(base_url) {
            return None;
        }
        let kind = kind.as_str();
        let entry = self
            .models
            .iter()
            .find(|e| e.kinds.iter().any(|k| k == kind) && model_matches(&e.model, model))?;
        Some(ArmPrice {
            price: Price {
                input: entry.input,
                output: entry.output,
                cache_read: entry.cache_read,
                cache_write: entry.cache_write,
            },
            batch_discount: entry.batch_discount,
            source: format!("price table {} ({})", self.as_of, entry.source),
        })
    }
}

/// `model` is `name`, or `name` and a dated snapshot suffix (`-YYYYMMDD`, `-YYYY-MM-DD`).
pub(super) fn model_matches(name: &str, model: &str) -> bool {
    let Some(rest) = model.strip_prefix(name) else {
        return false;
    };
    let Some(date) = rest.strip_prefix('-') else {
        return rest.is_empty();
    };
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    digits(date, 8)
        || matches!(date.split('-').collect::<Vec<_>>().as_slice(),
            [y, m, d] if digits(y, 4) && digits(m, 2) && digits(d, 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(name: &str) -> ProviderKind {
        name.parse().expect("a provider kind")
    }

    #[test]
    fn the_shipped_table_parses_is_dated_and_every_price_is_sane() {
        let t = shipped();
        assert!(
            t.as_of.len() == 10 && t.as_of.starts_with("20"),
            "{}",
            t.as_of
        );
        assert!(!t.models.is_empty());
        for e in &t.models {
            let rates = [Some(e.input), Some(e.output), e.cache_read, e.cache_write];
            assert!(
                rates.iter().flatten().all(|r| r.is_finite() && *r >= 0.0),
                "{}",
                e.model
            );
            assert!(e.batch_discount.is_none_or(|d| (0.0..1.0).contains(&d)));
            assert!(!e.source.is_empty() && !e.kinds.is_empty(), "{}", e.model);
            for k in &e.kinds {
                assert!(k.parse::<crate::ProviderKind>().is_ok(), "{k}");
            }
        }
    }

    #[test]
    fn dated_snapshots_match_but_siblings_do_not() {
        let sonnet = lookup(
            kind("anthropic"),
            "claude-sonnet-4-5-20250929",
            "https://api.anthropic.com",
            None,
        )
        .expect("a dated snapshot is priced");
        assert_eq!(sonnet.price.input, 3.0);
        assert_eq!(sonnet.price.cache_write, Some(3.75));
        assert!(
            sonnet.source.starts_with("LiteLLM model map "),
            "{}",
            sonnet.source
        );
        // The hand-kept table: claude-sonnet-4 is not in the map, and claude-sonnet-4-5 is not
        // claude-sonnet-4 with a suffix.
        let four = lookup(kind("anthropic"), "claude-sonnet-4", "", None).expect("sonnet 4");
        assert!(
            four.source.starts_with("price table 2026-"),
            "{}",
            four.source
        );
        assert!(lookup(kind("openai-responses"), "gpt-5.4-pro-unreleased", "", None).is_none());
        assert_eq!(
            lookup(
                kind("openai-compat"),
                "gpt-4.1-mini-2025-04-14",
                "https://api.openai.com/v1",
                None
            )
            .map(|p| p.price.input),
            Some(0.40)
        );
        // A kind the entry does not name.
        assert!(
            shipped()
                .lookup(kind("gemini"), "claude-sonnet-4", "")
                .is_none()
        );
    }

    #[test]
    fn local_models_are_never_priced() {
        for url in [
            "http://127.0.0.1:8089/v1",
            "http://localhost:11434/v1",
            "http://[::1]:8000/v1",
        ] {
            assert!(
                lookup(kind("openai-compat"), "gpt-4.1", url, None).is_none(),
                "{url}"
            );
        }
        assert!(lookup(kind("ollama"), "gpt-4.1", "https://example.com", None).is_none());
        assert!(
            lookup(
                kind("openai-compat"),
                "gpt-4.1",
                "https://gateway.example.com/v1",
                None
            )
            .is_some()
        );
    }

    /// The hand-kept table holds only what the map lacks or gets wrong: an entry the snapshot
    /// prices the same way is one to delete.
    #[test]
    fn every_hand_kept_price_is_absent_from_the_map_or_disagrees_with_it() {
        let map = ModelMap::snapshot();
        for e in &shipped().models {
            for k in &e.kinds {
                let Some((key, entry)) = map.find(kind(k), &e.model) else {
                    continue;
                };
                let same = entry.price()
                    == Some(Price {
                        input: e.input,
                        output: e.output,
                        cache_read: e.cache_read,
                        cache_write: e.cache_write,
                    })
                    && entry.batch_discount() == e.batch_discount;
                assert!(
                    !same,
                    "{k}:{} is priced the same by the map ({key}): delete it from prices.yaml",
                    e.model
                );
            }
        }
    }

    #[test]
    fn a_users_map_comes_before_the_table_and_the_snapshot() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("map.json");
        std::fs::write(
            &path,
            r#"{"claude-sonnet-4": {"input_cost_per_token": 7e-06, "output_cost_per_token": 3.5e-05},
                "claude-opus-4-7": {"input_cost_per_token": 1e-06, "output_cost_per_token": 2e-06}}"#,
        )
        .expect("write");
        let map = ModelMap::from_file(&path).expect("map");
        for model in ["claude-sonnet-4", "claude-opus-4-7"] {
            let p = lookup(kind("anthropic"), model, "", Some(&map)).expect("priced");
            assert!(p.source.contains("map.json"), "{}", p.source);
        }
    }
}
