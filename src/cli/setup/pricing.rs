//! What an arm's tokens cost, and `--max-cost` checked against the plan's estimate before
//! anything is sent.

use std::path::PathBuf;
use std::sync::Mutex;

use toolscore_provider::ModelMap;

use super::{
    Arm, ArmPrice, Cassette, Config, Error, Price, ProviderKind, ProviderSettings, RunArgs, usage,
};

/// An arm's price: `prices:` in the config under the provider's name, then under
/// `KIND:MODEL`, then the config's `model_map:`, the hand-kept table and the model map's
/// snapshot ([`toolscore_provider::prices::lookup`]); `None` when none knows it.
pub(in crate::cli) fn arm_price(
    name: &str,
    s: &ProviderSettings,
    config: &Config,
) -> Result<Option<ArmPrice>, Error> {
    let kind_model = format!("{}:{}", s.kind, s.model);
    for key in [name, kind_model.as_str()] {
        if let Some(p) = config.prices.get(key) {
            return Ok(Some(ArmPrice {
                price: Price {
                    input: p.input,
                    output: p.output,
                    cache_read: p.cache_read,
                    cache_write: p.cache_write,
                },
                batch_discount: p.batch_discount,
                source: match &p.source {
                    Some(src) => format!("toolscore.yaml prices.{key} ({src})"),
                    None => format!("toolscore.yaml prices.{key}"),
                },
            }));
        }
    }
    Ok(toolscore_provider::prices::lookup(
        s.kind,
        &s.model,
        &s.base_url,
        user_model_map(config)?,
    ))
}

/// The model map the config's `model_map:` names, read once per file in a process (it is
/// megabytes, and every arm prices from it).
pub(in crate::cli) fn user_model_map(config: &Config) -> Result<Option<&'static ModelMap>, Error> {
    static READ: Mutex<Vec<(PathBuf, &'static ModelMap)>> = Mutex::new(Vec::new());
    let Some(path) = &config.model_map else {
        return Ok(None);
    };
    let mut read = READ
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, map)) = read.iter().find(|(p, _)| p == path) {
        return Ok(Some(map));
    }
    // Kept for the process's life: one map per config file a command reads.
    let map: &'static ModelMap = Box::leak(Box::new(ModelMap::from_file(path)?));
    read.push((path.clone(), map));
    Ok(Some(map))
}

/// The price `toolscore plan` shows options at: `--provider`, else the provider `run` would
/// use. `None` (tokens only) when that provider has no price; a note says so when it was
/// named.
pub(in crate::cli) fn plan_price(
    given: Option<&str>,
    config: &Config,
) -> Result<Option<toolscore_decide::PlanPrice>, Error> {
    let name = match given {
        Some(n) => n.to_owned(),
        None => match (&config.defaults.provider, config.providers.len()) {
            (Some(d), _) => d.clone(),
            (None, 1) => config.providers.keys().next().cloned().unwrap_or_default(),
            _ => return Ok(None),
        },
    };
    let Some(settings) = settings_to_price(&name, config)? else {
        return Ok(None);
    };
    let Some(price) = arm_price(&name, &settings, config)? else {
        if given.is_some() {
            errln!(
                "note: no price for {}:{} in {}, the price table of {} or toolscore.yaml; options are shown in tokens only",
                settings.kind,
                settings.model,
                price_sources(config)?,
                toolscore_provider::prices::shipped().as_of
            )?;
        }
        return Ok(None);
    };
    Ok(Some(toolscore_decide::PlanPrice {
        provider: if name == format!("{}:{}", settings.kind, settings.model) {
            name.clone()
        } else {
            format!("{name} ({}:{})", settings.kind, settings.model)
        },
        price: price.price,
        source: price.source,
        assumed_output_per_request: settings
            .max_tokens
            .map_or(toolscore_runner::budget::ASSUMED_OUTPUT_TOKENS, u64::from)
            as f64,
    }))
}

/// What `name` (a config entry, a replay's cassette, or KIND:MODEL) would send, as far as its
/// price depends on it; None for a replay without a cassette.
pub(in crate::cli) fn settings_to_price(
    name: &str,
    config: &Config,
) -> Result<Option<ProviderSettings>, Error> {
    Ok(Some(match config.providers.get(name) {
        Some(e) if e.kind == toolscore_suite::REPLAY_KIND => {
            let Some(path) = &e.cassette else {
                return Ok(None);
            };
            let h = Cassette::load(path)?.header;
            let mut s = ProviderSettings::new(h.provider_kind, name, h.base_url, h.model);
            s.max_tokens = h.max_tokens;
            s.tool_choice = h.tool_choice;
            s.parallel_tool_calls = h.parallel_tool_calls;
            s
        }
        Some(e) => {
            let kind: ProviderKind = e.kind.parse().map_err(|_| {
                usage(&format!(
                    "provider `{name}`: unknown kind `{}` (known: {})",
                    e.kind,
                    ProviderKind::known()
                ))
            })?;
            let base_url = if e.base_url.is_empty() {
                kind.adapter()
                    .default_base_url()
                    .unwrap_or_default()
                    .to_owned()
            } else {
                e.base_url.clone()
            };
            let mut s = ProviderSettings::new(kind, name, base_url, e.model.clone());
            s.max_tokens = e.max_tokens.or(config.defaults.max_tokens);
            s
        }
        None => {
            let Some((kind, model)) = name
                .split_once(':')
                .and_then(|(k, m)| Some((k.parse::<ProviderKind>().ok()?, m)))
                .filter(|(_, m)| !m.is_empty())
            else {
                return Err(usage(&format!(
                    "`{name}` is neither a provider in the config nor KIND:MODEL ({})",
                    ProviderKind::known()
                )));
            };
            let base_url = kind.adapter().default_base_url().unwrap_or_default();
            ProviderSettings::new(kind, name, base_url, model)
        }
    }))
}

/// The model map a price would come from: the config's `model_map:`, else the snapshot.
fn price_sources(config: &Config) -> Result<String, Error> {
    Ok(match user_model_map(config)? {
        Some(map) => format!("{} or {}", map.origin, ModelMap::snapshot().origin),
        None => ModelMap::snapshot().origin.to_string(),
    })
}

/// `prices:` keys name known kinds, and `--max-cost` is a positive amount with a price for
/// every arm: an arm it cannot cost cannot be capped.
pub(super) fn check_budget(args: &RunArgs, config: &Config, arms: &[Arm]) -> Result<(), Error> {
    for key in config.prices.keys() {
        if config.providers.contains_key(key) {
            continue;
        }
        if let Some((kind, _)) = key.split_once(':')
            && kind.parse::<ProviderKind>().is_err()
        {
            return Err(usage(&format!(
                "prices.{key} in the config: `{kind}` is not a provider kind ({})",
                ProviderKind::known()
            )));
        }
    }
    let Some(max) = args.max_cost else {
        return Ok(());
    };
    if !(max.is_finite() && max > 0.0) {
        return Err(usage(
            "--max-cost must be a positive amount of US dollars (e.g. 5 or 0.50)",
        ));
    }
    if let Some(arm) = arms.iter().find(|a| a.price.is_none()) {
        let s = &arm.settings;
        // A model served from this machine is never priced from a table: say that, not that
        // the tables lack it.
        let why = if s.kind.adapter().serves_free(&s.base_url) {
            format!(
                "is served from this machine ({}), which no price table prices",
                s.base_url
            )
        } else {
            format!(
                "has no price in {} or the price table of {}",
                price_sources(config)?,
                toolscore_provider::prices::shipped().as_of
            )
        };
        return Err(usage(&format!(
            "--max-cost: provider `{}` ({}:{}) {why}, so its spend cannot be capped; give it one under `prices:` in toolscore.yaml (`{}: {{input: …, output: …}}`, US dollars per million tokens; 0 for a model that costs nothing)",
            s.name, s.kind, s.model, s.name
        )));
    }
    // The cap reserves each request at its worst case, which needs a bound on its output
    // (unless output is free).
    if let Some(arm) = arms.iter().find(|a| {
        a.price.as_ref().is_some_and(|p| p.price.output > 0.0)
            && a.settings
                .kind
                .adapter()
                .output_bound(&a.settings)
                .is_none()
    }) {
        return Err(usage(&format!(
            "--max-cost: provider `{}` sends no max_tokens, so nothing bounds what one request can cost and the cap could not hold; set max_tokens for it (--max-tokens or `max_tokens:` in toolscore.yaml)",
            arm.settings.name
        )));
    }
    Ok(())
}
