//! `toolscore models NAME…`: what toolscore knows of a model and where each fact comes from:
//! its price (toolscore.yaml's `prices:`, a model map file, the hand-kept table, or the
//! snapshot of LiteLLM's model map), what the map says it accepts, and the request fields the
//! capability table says it refuses. Reads nothing but the config and the map; calls nothing.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde::Serialize;

use toolscore_core::ExitCode;
use toolscore_provider::{MapEntry, ModelMap};
use toolscore_suite::Config;

use super::setup;
use crate::cli::Error;

/// Longest name or model printed, in characters.
const MAX_NAME_CHARS: usize = 200;

/// Longest source or map key printed, in characters.
const MAX_SOURCE_CHARS: usize = 400;

/// A source or key from a file the user named (the config's `prices:`, a map file): one
/// bounded line with every control character written out, before it reaches a terminal.
fn shown_text(text: &str) -> String {
    toolscore_core::inert(text, MAX_SOURCE_CHARS)
}

#[derive(Debug, Args)]
pub struct ModelsArgs {
    /// A provider of toolscore.yaml, or KIND:MODEL (`anthropic:claude-sonnet-5`); one or more.
    #[arg(required = true, value_name = "NAME")]
    pub names: Vec<String>,
    /// Config file [default: the nearest toolscore.yaml, from the current folder up to the
    /// repository's top]: its providers, `prices:` and `model_map:`.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// What to print.
    #[arg(long, value_enum, default_value_t = ModelsFormat::Text)]
    pub format: ModelsFormat,
}

/// How `models` prints what it knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModelsFormat {
    /// A block a model, each fact with its source.
    Text,
    /// The same as data: a JSON array, one object a model.
    Json,
}

/// What toolscore knows of one model.
#[derive(Debug, Serialize)]
struct ModelFacts {
    name: String,
    kind: String,
    model: String,
    /// The price a run would use, with its source; none when nothing prices the model.
    price: Option<PriceFact>,
    /// What the model map says, from the config's `model_map:` when it lists the model, else
    /// the snapshot; none when neither does.
    map: Option<MapFacts>,
    /// Request fields the hand-kept capability table says the model refuses.
    refuses: Vec<RefusedField>,
}

#[derive(Debug, Serialize)]
struct PriceFact {
    input: f64,
    output: f64,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
    batch_discount: Option<f64>,
    source: String,
}

#[derive(Debug, Serialize)]
struct MapFacts {
    source: String,
    key: String,
    mode: Option<String>,
    function_calling: Option<bool>,
    tool_choice: Option<bool>,
    parallel_function_calling: Option<bool>,
    sampling_params: Option<bool>,
    max_input_tokens: Option<u64>,
}

#[derive(Debug, Serialize)]
struct RefusedField {
    field: &'static str,
    source: String,
}

pub(super) fn run(args: &ModelsArgs) -> Result<ExitCode, Error> {
    let config = match super::config_path(args.config.as_deref()) {
        Some(path) => toolscore_suite::load_config(&path)?,
        None => Config::default(),
    };
    let facts = args
        .names
        .iter()
        .map(|name| facts_of(name, &config))
        .collect::<Result<Vec<_>, Error>>()?;
    match args.format {
        ModelsFormat::Json => {
            let text = serde_json::to_string_pretty(&facts)
                .map_err(|e| Error::encode("the models' facts", e))?;
            outln!("{text}")?;
        }
        ModelsFormat::Text => {
            for (i, f) in facts.iter().enumerate() {
                if i > 0 {
                    outln!()?;
                }
                print_facts(f)?;
            }
        }
    }
    Ok(ExitCode::Pass)
}

fn facts_of(name: &str, config: &Config) -> Result<ModelFacts, Error> {
    let settings = setup::settings_to_price(name, config)?.ok_or_else(|| {
        super::usage(&format!(
            "`{name}` replays a cassette that names no model; give KIND:MODEL"
        ))
    })?;
    let price = setup::arm_price(name, &settings, config)?.map(|p| PriceFact {
        input: p.price.input,
        output: p.price.output,
        cache_read: p.price.cache_read,
        cache_write: p.price.cache_write,
        batch_discount: p.batch_discount,
        source: p.source,
    });
    let map = toolscore_provider::find_model(
        setup::user_model_map(config)?,
        settings.kind,
        &settings.model,
    )
    .map(|(map, key, entry)| map_facts(map, key, entry));
    let capabilities = toolscore_provider::capabilities::shipped();
    let refuses = capabilities
        .entry_for(settings.kind.as_str(), &settings.model)
        .map(|e| {
            e.rejects
                .iter()
                .map(|f| RefusedField {
                    field: f.name(),
                    source: format!("capability table {}: {}", capabilities.as_of, e.source),
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(ModelFacts {
        name: name.to_owned(),
        kind: settings.kind.as_str().to_owned(),
        model: settings.model.clone(),
        price,
        map,
        refuses,
    })
}

fn map_facts(map: &ModelMap, key: String, e: &MapEntry) -> MapFacts {
    MapFacts {
        source: map.origin.to_string(),
        key,
        mode: e.mode.clone(),
        function_calling: e.function_calling,
        tool_choice: e.tool_choice,
        parallel_function_calling: e.parallel_function_calling,
        sampling_params: e.sampling_params,
        max_input_tokens: e.max_input_tokens,
    }
}

fn print_facts(f: &ModelFacts) -> Result<(), Error> {
    // Names come from the command line and the config: made inert before the terminal.
    let shown = toolscore_core::inert(&f.name, MAX_NAME_CHARS);
    let model = toolscore_core::inert(&f.model, MAX_NAME_CHARS);
    if f.name == format!("{}:{}", f.kind, f.model) {
        outln!("{shown}")?;
    } else {
        outln!("{shown} ({}:{model})", f.kind)?;
    }
    match &f.price {
        Some(p) => {
            let usd = toolscore_summary::format_usd;
            let mut price = format!(
                "{} in, {} out a million tokens",
                usd(p.input),
                usd(p.output)
            );
            if let Some(r) = p.cache_read {
                price.push_str(&format!("; cache read {}", usd(r)));
            }
            if let Some(w) = p.cache_write {
                price.push_str(&format!(", cache write {}", usd(w)));
            }
            if let Some(d) = p.batch_discount {
                price.push_str(&format!("; batch {}% off", (d * 100.0).round()));
            }
            outln!("  price              {price}")?;
            outln!("                     from {}", shown_text(&p.source))?;
        }
        None => {
            outln!("  price              unknown: give it one under `prices:` in toolscore.yaml")?
        }
    }
    match &f.map {
        Some(m) => {
            let yes_no = |v: Option<bool>| match v {
                Some(true) => "yes",
                Some(false) => "no",
                None => "not said",
            };
            outln!("  function calling   {}", yes_no(m.function_calling))?;
            outln!("  tool_choice        {}", yes_no(m.tool_choice))?;
            outln!(
                "  parallel calls     {}",
                yes_no(m.parallel_function_calling)
            )?;
            outln!("  sampling params    {}", yes_no(m.sampling_params))?;
            outln!(
                "  max input tokens   {}",
                m.max_input_tokens
                    .map_or("not said".to_owned(), |n| n.to_string())
            )?;
            outln!(
                "                     from {} ({})",
                shown_text(&m.source),
                shown_text(&m.key)
            )?;
        }
        None => outln!("  model map          not listed in it")?,
    }
    for r in &f.refuses {
        outln!(
            "  refuses            `{}` ({})",
            r.field,
            shown_text(&r.source)
        )?;
    }
    Ok(())
}
