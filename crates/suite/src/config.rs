//! `toolscore.yaml`: providers, run defaults and the datasets to run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use toolscore_core::{Error, InputError};

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
    pub lint: toolscore_lint::LintConfig,
    /// Prices that override the shipped table, keyed by a provider's name in this file or by
    /// `KIND:MODEL`.
    #[serde(default)]
    pub prices: BTreeMap<String, PriceEntry>,
    /// A copy of LiteLLM's `model_prices_and_context_window.json` read instead of the
    /// snapshot built in (resolved against the config's folder): a newer map without a new
    /// build. `prices:` still wins over it.
    #[serde(default)]
    pub model_map: Option<PathBuf>,
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
    pub tool_choice: Option<toolscore_core::ToolChoice>,
    /// `parallel_tool_calls` to send; unset: not sent.
    pub parallel_tool_calls: Option<bool>,
    /// How to start this provider's server (`scripts/local-model.sh start`), said when a run
    /// finds nothing answering at its base URL.
    pub start: Option<String>,
}

/// The provider kind that serves a cassette instead of calling a model.
pub const REPLAY_KIND: &str = "replay";

/// Reads `toolscore.yaml`. Relative dataset paths are resolved against the config's folder.
/// Like every loader of this layer, it fails with the core [`Error`].
pub fn load_config(path: &Path) -> Result<Config, Error> {
    let text = toolscore_core::read_text(path)?;
    Ok(parse_config(
        &text,
        &path.display().to_string(),
        path.parent().unwrap_or(Path::new(".")),
    )?)
}

/// Parses config text named `file`; relative dataset paths are resolved against `base`.
pub fn parse_config(text: &str, file: &str, base: &Path) -> Result<Config, InputError> {
    let mut config: Config =
        serde_saphyr::from_str(text).map_err(|e| InputError::yaml(file, "config", &e))?;
    for d in config
        .datasets
        .iter_mut()
        .chain(config.scenarios.iter_mut())
        .chain(config.model_map.iter_mut())
    {
        if d.is_relative() {
            *d = base.join(&*d);
        }
    }
    check_providers(&mut config, text, file, base)?;
    if let Some((field, id)) = config.lint.unknown_rules().into_iter().next() {
        return Err(InputError::at(
            file,
            toolscore_core::catalog::line_of(text, &id),
            &field,
            &format!("unknown lint rule `{id}`; `toolscore lint --rules` lists them"),
        ));
    }
    check_prices(&config, text, file)?;
    check_numbers(&config, text, file)?;
    if let Some(d) = &config.defaults.provider
        && !config.providers.contains_key(d)
    {
        return Err(InputError::at(
            file,
            toolscore_core::catalog::line_of(text, "provider:"),
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
        let line = toolscore_core::catalog::line_of(text, &format!("{name}:"));
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

/// The most a price may be, US dollars per million tokens: far above any model's list price
/// (the dearest are a few hundred), low enough that every cost toolscore adds up stays a
/// finite, printable figure (1e300 made `$inf`).
const MAX_PRICE: f64 = 10_000.0;

/// A price per million tokens that costs can be computed from; the config's `prices` and
/// `lint --price-per-mtok` are checked by it.
pub fn price_ok(p: f64) -> bool {
    p.is_finite() && (0.0..=MAX_PRICE).contains(&p)
}

/// What [`price_ok`] accepts, in words.
pub const PRICE_RANGE: &str = "US dollars per million tokens, from 0 to 10000";

/// The most retries of one request: with the 30 s cap on the backoff, 20 retries already
/// wait up to 10 minutes; a larger figure only hides a provider that is down.
const MAX_RETRIES: u32 = 20;

/// A number of retries `run` takes; `--max-retries` is checked by it too.
pub fn max_retries_ok(n: u32) -> bool {
    n <= MAX_RETRIES
}

/// What [`max_retries_ok`] accepts, in words.
pub const MAX_RETRIES_RANGE: &str = "between 0 and 20";

/// Every price is US dollars per million tokens ([`price_ok`]), every discount below 1, and
/// each names a provider of the config or a KIND:MODEL.
fn check_prices(config: &Config, text: &str, file: &str) -> Result<(), InputError> {
    for (key, price) in &config.prices {
        let line = toolscore_core::catalog::line_of(text, key);
        let rates = [
            ("input", Some(price.input)),
            ("output", Some(price.output)),
            ("cache_read", price.cache_read),
            ("cache_write", price.cache_write),
        ];
        for (name, rate) in rates {
            if let Some(r) = rate
                && !price_ok(r)
            {
                // The line of the figure in its own section (`fake:` may be a provider too),
                // and the figure as written (1e300, not its 301 digits).
                let line = line_of_key_path(text, &["prices", key, name])
                    .or_else(|| line_of_key_path(text, &["prices", key]))
                    .or(line);
                let value = line
                    .and_then(|l| written_value(text, l, name))
                    .unwrap_or_else(|| r.to_string());
                return Err(InputError::at(
                    file,
                    line,
                    &format!("prices.{key}.{name}"),
                    &format!("{value} is not a price: {PRICE_RANGE}"),
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
    if let Some(p) = config.lint.price_per_million_input_tokens
        && !price_ok(p)
    {
        let field = "price_per_million_input_tokens";
        let line = line_of_key_path(text, &["lint", field]);
        let value = line
            .and_then(|l| written_value(text, l, field))
            .unwrap_or_else(|| p.to_string());
        return Err(InputError::at(
            file,
            line,
            &format!("lint.{field}"),
            &format!("{value} is not a price: {PRICE_RANGE}"),
        ));
    }
    Ok(())
}

/// A sampling temperature every provider accepts; `run` checks `--temperature` by it too.
pub fn temperature_ok(t: f64) -> bool {
    (0.0..=2.0).contains(&t)
}

/// What [`temperature_ok`] accepts, in words.
pub const TEMPERATURE_RANGE: &str = "between 0 and 2";

/// Trials in flight at once; `run` checks `--concurrency` by it too.
pub fn concurrency_ok(n: usize) -> bool {
    (1..=4096).contains(&n)
}

/// What [`concurrency_ok`] accepts, in words.
pub const CONCURRENCY_RANGE: &str = "between 1 and 4096";

/// A confidence level every interval can use; `run` checks `--confidence` by it too.
pub fn confidence_ok(c: f64) -> bool {
    c > 0.5 && c < 1.0
}

/// A target half-width the sample-size warnings can use; `run` checks `--precision` by it too.
pub fn precision_ok(p: f64) -> bool {
    p > 0.0 && p < 0.5
}

/// One numeric setting of the file that is out of its range: where it is and why.
struct BadNumber {
    /// Keys from the root to the setting (`["providers", "local", "timeout_s"]`).
    path: Vec<String>,
    /// What the value must be; the value as written is put before it when `quote` is set.
    rule: String,
    quote: bool,
}

/// Every numeric run and provider setting within the range `run` takes it in, so `validate`
/// refuses what `run` would, with the file, line and field rather than a flag's name.
fn check_numbers(config: &Config, text: &str, file: &str) -> Result<(), InputError> {
    let mut bad: Vec<BadNumber> = Vec::new();
    let d = &config.defaults;
    provider_like(
        &mut bad,
        &["defaults"],
        d.temperature,
        d.max_tokens,
        d.timeout_s,
        d.max_retries,
    );
    for (name, p) in &config.providers {
        let section = ["providers", name.as_str()];
        provider_like(
            &mut bad,
            &section,
            p.temperature,
            p.max_tokens,
            p.timeout_s,
            p.max_retries,
        );
        let limits = [
            ("max_in_flight", p.max_in_flight.map(|n| n as u64)),
            ("requests_per_minute", p.requests_per_minute.map(u64::from)),
            ("tokens_per_minute", p.tokens_per_minute.map(u64::from)),
        ];
        for (field, value) in limits {
            if value == Some(0) {
                bad.push(BadNumber {
                    path: at(&section, field),
                    rule: "must be at least 1".into(),
                    quote: false,
                });
            }
        }
    }
    if d.trials == Some(0) {
        bad.push(BadNumber {
            path: at(&["defaults"], "trials"),
            rule: "must be at least 1".into(),
            quote: false,
        });
    }
    if let Some(n) = d.concurrency
        && !concurrency_ok(n)
    {
        bad.push(BadNumber {
            path: at(&["defaults"], "concurrency"),
            rule: format!("is not a concurrency: {CONCURRENCY_RANGE}"),
            quote: true,
        });
    }
    if let Some(c) = d.confidence
        && !confidence_ok(c)
    {
        bad.push(BadNumber {
            path: at(&["defaults"], "confidence"),
            rule: "is not a confidence level: above 0.5 and below 1 (e.g. 0.95)".into(),
            quote: true,
        });
    }
    if let Some(p) = d.precision
        && !precision_ok(p)
    {
        bad.push(BadNumber {
            path: at(&["defaults"], "precision"),
            rule: "is not a precision: a half-width above 0 and below 0.5 (e.g. 0.05)".into(),
            quote: true,
        });
    }
    let Some(first) = bad.into_iter().next() else {
        return Ok(());
    };
    let keys: Vec<&str> = first.path.iter().map(String::as_str).collect();
    let line = line_of_key_path(text, &keys);
    let field = first.path.last().map_or("", String::as_str);
    let message = match line.and_then(|l| written_value(text, l, field)) {
        Some(value) if first.quote => format!("{value} {}", first.rule),
        _ => first.rule,
    };
    Err(InputError::at(file, line, &first.path.join("."), &message))
}

fn at(section: &[&str], field: &str) -> Vec<String> {
    section
        .iter()
        .map(|s| (*s).to_owned())
        .chain([field.to_owned()])
        .collect()
}

/// The settings a provider entry and the defaults share.
fn provider_like(
    bad: &mut Vec<BadNumber>,
    section: &[&str],
    temperature: Option<f64>,
    max_tokens: Option<u32>,
    timeout_s: Option<f64>,
    max_retries: Option<u32>,
) {
    if let Some(n) = max_retries
        && !max_retries_ok(n)
    {
        bad.push(BadNumber {
            path: at(section, "max_retries"),
            rule: format!("is not a number of retries: {MAX_RETRIES_RANGE}"),
            quote: true,
        });
    }
    if let Some(t) = timeout_s
        && toolscore_core::timeout_from_seconds(t).is_none()
    {
        bad.push(BadNumber {
            path: at(section, "timeout_s"),
            rule: format!("is not a timeout: {}", toolscore_core::TIMEOUT_RANGE),
            quote: true,
        });
    }
    if let Some(t) = temperature
        && !temperature_ok(t)
    {
        bad.push(BadNumber {
            path: at(section, "temperature"),
            rule: format!("is not a temperature: {TEMPERATURE_RANGE}"),
            quote: true,
        });
    }
    if max_tokens == Some(0) {
        bad.push(BadNumber {
            path: at(section, "max_tokens"),
            rule: "must be at least 1".into(),
            quote: false,
        });
    }
}

/// The line of the last key of `keys`, found as each key after the line of the one before it
/// (`defaults:` then `timeout_s:`), so a field is found in its own section.
fn line_of_key_path(text: &str, keys: &[&str]) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let mut from = 0;
    for key in keys {
        let needle = format!("{key}:");
        from += lines[from..].iter().position(|l| l.contains(&needle))?;
    }
    Some(from + 1)
}

/// The value of `field` as written on line `line` (1-based): what the author typed, so
/// `1e-300` is quoted as such rather than as 300 zeros.
fn written_value(text: &str, line: usize, field: &str) -> Option<String> {
    let l = text.lines().nth(line.checked_sub(1)?)?;
    let (_, rest) = l.split_once(&format!("{field}:"))?;
    let value = rest.split([',', '}', '#']).next()?.trim();
    (!value.is_empty()).then(|| value.to_owned())
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
        assert_eq!(c.lint.rules["name-convention"], toolscore_lint::Level::Off);
        assert_eq!(
            c.lint.rules["provider-gemini"],
            toolscore_lint::Level::Error
        );
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
