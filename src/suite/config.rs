//! `toolscore.yaml`: providers, run defaults and the datasets to run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::InputError;

/// `toolscore.yaml`: providers, defaults and the datasets to run.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub defaults: Defaults,
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderEntry>,
    #[serde(default)]
    pub datasets: Vec<PathBuf>,
    /// Scenario files or folders of them (`scenarios/`), run beside the datasets.
    #[serde(default)]
    pub scenarios: Vec<PathBuf>,
    /// `toolscore lint`: rules turned off or re-levelled, accepted findings, thresholds.
    #[serde(default)]
    pub lint: crate::lint::LintConfig,
    /// Prices that override the shipped table, keyed by a provider's name in this file or by
    /// `KIND:MODEL`.
    #[serde(default)]
    pub prices: BTreeMap<String, PriceEntry>,
}

/// One model's price, US dollars per million tokens.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceEntry {
    pub input: f64,
    pub output: f64,
    pub cache_read: Option<f64>,
    pub cache_write: Option<f64>,
    /// Share taken off input and output by the provider's batch API (0.5 = half price).
    pub batch_discount: Option<f64>,
    /// Where the figures come from (a contract, a date), shown beside the cost.
    pub source: Option<String>,
}

/// Run defaults; flags override them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    pub trials: Option<u32>,
    pub concurrency: Option<usize>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    pub timeout_s: Option<f64>,
    pub max_retries: Option<u32>,
    pub precision: Option<f64>,
    pub confidence: Option<f64>,
    /// The provider `run` uses when no --provider is given.
    pub provider: Option<String>,
}

/// One provider as the config names it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderEntry {
    /// A provider kind (`openai-compat`, `openai-responses`, `anthropic`, `gemini`, `ollama`,
    /// `azure-openai`), or `replay` to serve a recorded cassette.
    pub kind: String,
    /// Empty: the kind's public API (none for `openai-compat` and `azure-openai`).
    #[serde(default)]
    pub base_url: String,
    #[serde(default)]
    pub model: String,
    /// `kind: replay`: the cassette, relative to the config's folder.
    pub cassette: Option<PathBuf>,
    /// Name of the environment variable holding the API key (never the key itself); `None`:
    /// the kind's own (`ANTHROPIC_API_KEY`, …), if it has one.
    pub api_key_env: Option<String>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    pub timeout_s: Option<f64>,
    pub max_retries: Option<u32>,
    /// Requests to this provider in flight at once, over all its arms.
    pub max_in_flight: Option<usize>,
    /// Requests to this provider started per minute, evenly spaced, over all its arms.
    pub requests_per_minute: Option<u32>,
    /// Tokens (estimated input plus max_tokens) sent to this provider per minute.
    pub tokens_per_minute: Option<u32>,
    /// `tool_choice` to send (`auto`, `required`, `none`); unset: not sent.
    pub tool_choice: Option<crate::record::ToolChoice>,
    /// `parallel_tool_calls` to send; unset: not sent.
    pub parallel_tool_calls: Option<bool>,
    /// How to start this provider's server (`scripts/local-model.sh start`), said when a run
    /// finds nothing answering at its base URL.
    pub start: Option<String>,
}

/// The provider kind that serves a cassette instead of calling a model.
pub const REPLAY_KIND: &str = "replay";

/// Reads `toolscore.yaml`. Relative dataset paths are resolved against the config's folder.
pub fn load_config(path: &Path) -> Result<Config, InputError> {
    let text = crate::input::read_text(path)?;
    parse_config(
        &text,
        &path.display().to_string(),
        path.parent().unwrap_or(Path::new(".")),
    )
}

/// Parses config text named `file`; relative dataset paths are resolved against `base`.
pub fn parse_config(text: &str, file: &str, base: &Path) -> Result<Config, InputError> {
    let mut config: Config =
        serde_saphyr::from_str(text).map_err(|e| InputError::yaml(file, "config", &e))?;
    for d in config
        .datasets
        .iter_mut()
        .chain(config.scenarios.iter_mut())
    {
        if d.is_relative() {
            *d = base.join(&*d);
        }
    }
    check_providers(&mut config, text, file, base)?;
    if let Some((field, id)) = config.lint.unknown_rules().into_iter().next() {
        return Err(InputError::at(
            file,
            crate::catalog::line_of(text, &id),
            &field,
            &format!("unknown lint rule `{id}`; `toolscore lint --rules` lists them"),
        ));
    }
    check_prices(&config, text, file)?;
    if let Some(d) = &config.defaults.provider
        && !config.providers.contains_key(d)
    {
        return Err(InputError::at(
            file,
            crate::catalog::line_of(text, "provider:"),
            "defaults.provider",
            &format!(
                "`{d}` is not a provider of this config (it has: {})",
                config
                    .providers
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    Ok(config)
}

/// Each provider's kind and cassette agree: a replay provider has a cassette (resolved against
/// `base`) and nothing a cassette fixes; no other kind has one.
fn check_providers(
    config: &mut Config,
    text: &str,
    file: &str,
    base: &Path,
) -> Result<(), InputError> {
    for (name, p) in &mut config.providers {
        let field = |f: &str| format!("providers.{name}.{f}");
        let line = crate::catalog::line_of(text, &format!("{name}:"));
        match (p.kind.as_str(), &mut p.cassette) {
            (REPLAY_KIND, Some(c)) => {
                if c.is_relative() {
                    *c = base.join(&*c);
                }
                if !p.base_url.is_empty() || !p.model.is_empty() {
                    return Err(InputError::at(
                        file,
                        line,
                        &field("kind"),
                        "a replay provider takes its model and URL from the cassette; remove base_url and model",
                    ));
                }
            }
            (REPLAY_KIND, None) => {
                return Err(InputError::at(
                    file,
                    line,
                    &field("cassette"),
                    "`kind: replay` needs `cassette: PATH` (a recording made with --record)",
                ));
            }
            (_, Some(_)) => {
                return Err(InputError::at(
                    file,
                    line,
                    &field("cassette"),
                    "`cassette` belongs to `kind: replay` providers",
                ));
            }
            (_, None) => {}
        }
    }
    Ok(())
}

/// Every price is US dollars per million tokens (0 or more), every discount below 1, and each
/// names a provider of the config or a KIND:MODEL.
fn check_prices(config: &Config, text: &str, file: &str) -> Result<(), InputError> {
    for (key, price) in &config.prices {
        let line = crate::catalog::line_of(text, key);
        let rates = [
            ("input", Some(price.input)),
            ("output", Some(price.output)),
            ("cache_read", price.cache_read),
            ("cache_write", price.cache_write),
        ];
        for (name, rate) in rates {
            if let Some(r) = rate
                && !(r.is_finite() && r >= 0.0)
            {
                return Err(InputError::at(
                    file,
                    line,
                    &format!("prices.{key}.{name}"),
                    &format!("{r} is not a price: US dollars per million tokens, 0 or more"),
                ));
            }
        }
        if let Some(d) = price.batch_discount
            && !(0.0..1.0).contains(&d)
        {
            return Err(InputError::at(
                file,
                line,
                &format!("prices.{key}.batch_discount"),
                &format!(
                    "{d} is not a discount: the share taken off, from 0 to below 1 (0.5 = half price)"
                ),
            ));
        }
        if !key.contains(':') && !config.providers.contains_key(key) {
            return Err(InputError::at(
                file,
                line,
                &format!("prices.{key}"),
                &format!(
                    "`{key}` is neither a provider of this config nor KIND:MODEL (e.g. anthropic:claude-sonnet-4-5)"
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_provider_names_its_cassette_relative_to_the_config() {
        let c = parse_config(
            "defaults:\n  provider: demo\nproviders:\n  demo:\n    kind: replay\n    cassette: rec/x.cassette.jsonl.gz\n",
            "toolscore.yaml",
            Path::new("/proj"),
        )
        .unwrap();
        assert_eq!(c.defaults.provider.as_deref(), Some("demo"));
        assert_eq!(
            c.providers["demo"].cassette.as_deref(),
            Some(Path::new("/proj/rec/x.cassette.jsonl.gz"))
        );
    }

    #[test]
    fn prices_are_checked_with_their_line() {
        let ok = parse_config(
            "providers:\n  local:\n    kind: openai-compat\n    base_url: http://127.0.0.1:1/v1\n    model: m\nprices:\n  local: {input: 0, output: 0}\n  \"anthropic:claude-sonnet-4-5\": {input: 2.5, output: 12.5, source: contract 2026}\n",
            "toolscore.yaml",
            Path::new("."),
        )
        .unwrap();
        assert_eq!(ok.prices["local"].output, 0.0);
        assert_eq!(ok.prices["anthropic:claude-sonnet-4-5"].input, 2.5);
        let bad = |text: &str| {
            parse_config(text, "toolscore.yaml", Path::new("."))
                .unwrap_err()
                .to_string()
        };
        let e = bad("prices:\n  nobody: {input: 1, output: 2}\n");
        assert!(
            e.contains("toolscore.yaml:2") && e.contains("prices.nobody"),
            "{e}"
        );
        let e = bad("prices:\n  \"anthropic:x\": {input: -1, output: 2}\n");
        assert!(e.contains("prices.anthropic:x.input"), "{e}");
        let e = bad("prices:\n  \"anthropic:x\": {input: 1, output: 2, batch_discount: 50}\n");
        assert!(e.contains("batch_discount"), "{e}");
    }

    #[test]
    fn a_lint_section_turns_rules_off_relevels_and_allows() {
        let c = parse_config(
            "lint:\n  rules:\n    name-convention: off\n    provider-gemini: error\n  allow:\n    apply_credit: [param-generic-name]\n  min_tool_description: 20\n  requests_per_month: 40000\n",
            "toolscore.yaml",
            Path::new("."),
        )
        .unwrap();
        assert_eq!(c.lint.rules["name-convention"], crate::lint::Level::Off);
        assert_eq!(c.lint.rules["provider-gemini"], crate::lint::Level::Error);
        assert_eq!(c.lint.allow["apply_credit"], vec!["param-generic-name"]);
        assert_eq!(c.lint.min_tool_description, Some(20));
        let e = parse_config(
            "lint:\n  rules:\n    no-such-rule: off\n",
            "toolscore.yaml",
            Path::new("."),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("toolscore.yaml:3: lint.rules.no-such-rule: unknown lint rule"),
            "{e}"
        );
        let e = parse_config(
            "lint:\n  rules:\n    name-convention: loud\n",
            "toolscore.yaml",
            Path::new("."),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("toolscore.yaml:3"), "{e}");
    }

    #[test]
    fn replay_providers_and_the_default_are_checked_with_line_and_field() {
        let cases = [
            (
                "providers:\n  demo:\n    kind: replay\n",
                "toolscore.yaml:2: providers.demo.cassette",
            ),
            (
                "providers:\n  live:\n    kind: openai-compat\n    base_url: http://x/v1\n    model: m\n    cassette: a.gz\n",
                "toolscore.yaml:2: providers.live.cassette",
            ),
            (
                "providers:\n  demo:\n    kind: replay\n    cassette: a.gz\n    model: m\n",
                "providers.demo.kind",
            ),
            (
                "defaults:\n  provider: nope\nproviders:\n  demo:\n    kind: replay\n    cassette: a.gz\n",
                "toolscore.yaml:2: defaults.provider",
            ),
        ];
        for (text, want) in cases {
            let e = parse_config(text, "toolscore.yaml", Path::new("."))
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
