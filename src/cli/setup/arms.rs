//! The arms of a run: live providers with their settings and secrets, or recordings
//! replayed, each with the catalog variant it is shown.

use super::{
    Arc, Arm, BASE_VARIANT, Cassette, Config, Dataset, Defaults, Duration, Error, InputError, Path,
    ProviderEntry, ProviderKind, ProviderSettings, RunArgs, Scenario, SecretString, arm_price,
    scenario_catalog_key, usage,
};
use toolscore_core::shell_word;
use toolscore_provider::cassette::CassetteHeader;
use toolscore_suite::CatalogVariant;

/// A live arm: a provider named in the config, or a kind configured by the flags.
pub(super) fn live_arm(
    name: &str,
    config: &Config,
    args: &RunArgs,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<Arm, Error> {
    let defaults = &config.defaults;
    let entry = provider_entry(name, config)?;
    let flags = &args.provider_args;
    let kind: ProviderKind = entry.kind.parse().map_err(|_| {
        usage(&format!(
            "provider `{name}`: unknown kind `{}` (known: {})",
            entry.kind,
            ProviderKind::known()
        ))
    })?;
    let base_url = base_url(name, kind, args, &entry)?;
    let model = flags.model.clone().unwrap_or(entry.model.clone());
    if model.is_empty() {
        return Err(usage(&format!("provider `{name}`: no model; set --model")));
    }
    let (key_var, api_key) = api_key(name, kind, args, &entry, env)?;
    let (temperature, timeout_s) = temperature_and_timeout(args, &entry, defaults)?;
    if let Some(n) = flags.max_retries
        && !toolscore_suite::max_retries_ok(n)
    {
        return Err(usage(&format!(
            "--max-retries {n} must be {}",
            toolscore_suite::MAX_RETRIES_RANGE
        )));
    }
    let tool_choice = flags.tool_choice.or(entry.tool_choice);
    let parallel_tool_calls = flags.parallel_tool_calls.or(entry.parallel_tool_calls);
    check_request_fields(
        name,
        kind,
        tool_choice.is_some(),
        parallel_tool_calls.is_some(),
    )?;
    let mut settings = ProviderSettings {
        kind,
        tool_choice,
        parallel_tool_calls,
        name: name.to_owned(),
        base_url,
        model,
        api_key,
        api_key_env: key_var.clone(),
        temperature,
        max_tokens: flags
            .max_tokens
            .or(entry.max_tokens)
            .or(defaults.max_tokens),
        timeout: Duration::from_secs_f64(timeout_s),
        max_retries: flags
            .max_retries
            .or(entry.max_retries)
            .or(defaults.max_retries)
            .unwrap_or(4),
        retry_base: Duration::from_millis(500),
        retry_cap: Duration::from_secs(30),
        max_response_bytes: flags
            .max_response_bytes
            .unwrap_or(toolscore_provider::DEFAULT_MAX_RESPONSE_BYTES),
        max_in_flight: args.max_in_flight.or(entry.max_in_flight),
        requests_per_minute: args.requests_per_minute.or(entry.requests_per_minute),
        tokens_per_minute: args.tokens_per_minute.or(entry.tokens_per_minute),
        omitted: Vec::new(),
    };
    check_provider_limits(name, &settings)?;
    settings.check()?;
    check_model_map(name, &settings, super::user_model_map(config)?)?;
    // A field the model's API refuses is not sent (every trial would be refused), and the run
    // says so before its first request.
    for note in toolscore_provider::capabilities::shipped().omit_rejected(&mut settings) {
        errln!("note: {note}")?;
    }
    // And the sampling parameters the model map says the model takes none of.
    if let Some(note) =
        toolscore_provider::omit_unsupported_sampling(&mut settings, super::user_model_map(config)?)
    {
        errln!("note: {note}")?;
    }
    let price = arm_price(name, &settings, config)?;
    Ok(Arm {
        settings,
        variant: BASE_VARIANT.to_owned(),
        replay: None,
        price,
    })
}

/// The arm's temperature (0 to 2, when set) and request timeout in seconds (60 by default):
/// the flag, else the provider's entry, else the config's defaults.
fn temperature_and_timeout(
    args: &RunArgs,
    entry: &ProviderEntry,
    defaults: &Defaults,
) -> Result<(Option<f64>, f64), Error> {
    let temperature = args
        .provider_args
        .temperature
        .or(entry.temperature)
        .or(defaults.temperature);
    if let Some(t) = temperature
        && !toolscore_suite::temperature_ok(t)
    {
        return Err(usage(&format!(
            "--temperature must be {}",
            toolscore_suite::TEMPERATURE_RANGE
        )));
    }
    let timeout_s = args
        .provider_args
        .timeout
        .or(entry.timeout_s)
        .or(defaults.timeout_s)
        .unwrap_or(60.0);
    crate::cli::checked_timeout(timeout_s)?;
    Ok((temperature, timeout_s))
}

/// The config's entry of `name`, or a bare one for a kind named alone or as `KIND:MODEL`.
fn provider_entry(name: &str, config: &Config) -> Result<ProviderEntry, Error> {
    let bare = |kind: &str, model: &str| ProviderEntry {
        kind: kind.to_owned(),
        base_url: String::new(),
        model: model.to_owned(),
        cassette: None,
        api_key_env: None,
        temperature: None,
        max_tokens: None,
        timeout_s: None,
        max_retries: None,
        max_in_flight: None,
        requests_per_minute: None,
        tokens_per_minute: None,
        tool_choice: None,
        parallel_tool_calls: None,
        start: None,
    };
    // `KIND:MODEL` (`anthropic:claude-sonnet-4-5`); split at the first colon, so a model name
    // may hold colons of its own (`ollama:qwen3:8b`).
    let kind_and_model = name
        .split_once(':')
        .filter(|(kind, model)| kind.parse::<ProviderKind>().is_ok() && !model.is_empty());
    Ok(match (config.providers.get(name), kind_and_model) {
        (Some(entry), _) => entry.clone(),
        (None, _) if name.parse::<ProviderKind>().is_ok() => bare(name, ""),
        (None, Some((kind, model))) => bare(kind, model),
        (None, None) => {
            let known: Vec<&str> = config.providers.keys().map(String::as_str).collect();
            let hint = toolscore_core::did_you_mean(name, known.iter().copied())
                .map_or(String::new(), |n| format!("; did you mean `{n}`?"));
            return Err(usage(&format!(
                "--provider `{name}` is neither a provider in the config ({}) nor a provider kind, alone or as KIND:MODEL ({}){hint}",
                if known.is_empty() {
                    "none defined".to_owned()
                } else {
                    known.join(", ")
                },
                ProviderKind::known()
            )));
        }
    })
}

/// `--base-url`, the config's, or the kind's public API; refused unless http(s).
fn base_url(
    name: &str,
    kind: ProviderKind,
    args: &RunArgs,
    entry: &ProviderEntry,
) -> Result<String, Error> {
    let base_url = match (&args.provider_args.base_url, entry.base_url.as_str()) {
        (Some(url), _) => url.clone(),
        (None, "") => match kind.adapter().default_base_url() {
            Some(url) => url.to_owned(),
            None => {
                return Err(usage(&format!(
                    "provider `{name}`: kind `{kind}` has no default base URL; set base_url in the config or --base-url{}",
                    if kind == toolscore_provider::AZURE_OPENAI_KIND {
                        " (https://RESOURCE.openai.azure.com)"
                    } else {
                        ""
                    }
                )));
            }
        },
        (None, url) => url.to_owned(),
    };
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(usage(&format!(
            "provider `{name}`: base URL must start with http:// or https:// (got `{base_url}`); set --base-url"
        )));
    }
    Ok(base_url)
}

/// The variable the key is read from (`--api-key-env`, the config's, the kind's default) and
/// the key; a named variable that is unset is refused.
fn api_key(
    name: &str,
    kind: ProviderKind,
    args: &RunArgs,
    entry: &ProviderEntry,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<(Option<String>, Option<SecretString>), Error> {
    let key_var = args
        .provider_args
        .api_key_env
        .clone()
        .or(entry.api_key_env.clone())
        .or(kind.adapter().default_key_env().map(str::to_owned));
    let api_key = match &key_var {
        Some(var) => match env(var) {
            Some(v) if !v.is_empty() => Some(SecretString::new(v)),
            _ => {
                return Err(usage(&format!(
                    "provider `{name}`: environment variable {var} is not set (it should hold the API key)"
                )));
            }
        },
        None => None,
    };
    Ok((key_var, api_key))
}

/// A field a provider's API does not have is refused, not silently dropped.
fn check_request_fields(
    name: &str,
    kind: ProviderKind,
    tool_choice: bool,
    parallel_tool_calls: bool,
) -> Result<(), Error> {
    let fields = kind.adapter().request_fields();
    for (field, flag, given, has) in [
        (
            "tool_choice",
            "--tool-choice",
            tool_choice,
            fields.tool_choice,
        ),
        (
            "parallel_tool_calls",
            "--parallel-tool-calls",
            parallel_tool_calls,
            fields.parallel_tool_calls,
        ),
    ] {
        if given && !has {
            return Err(usage(&format!(
                "provider `{name}`: the {kind} API has no {field}; remove {field} ({flag})"
            )));
        }
    }
    Ok(())
}

/// What the model map says the model cannot take, refused before any request: a model that
/// calls no functions (a run would have nothing to score), and `tool_choice` or
/// `parallel_tool_calls` configured for a model without them, as an API without them is
/// ([`check_request_fields`]). A fact the map does not state is not held against a model.
fn check_model_map(
    name: &str,
    settings: &ProviderSettings,
    user_map: Option<&toolscore_provider::ModelMap>,
) -> Result<(), Error> {
    let Some((map, key, entry)) =
        toolscore_provider::find_model(user_map, settings.kind, &settings.model)
    else {
        return Ok(());
    };
    let model = &settings.model;
    if entry.function_calling == Some(false) {
        return Err(usage(&format!(
            "provider `{name}`: model {model} calls no functions ({}: supports_function_calling false, {key}), so a run would have no tool call to score",
            map.origin
        )));
    }
    for (field, flag, given, has, fact) in [
        (
            "tool_choice",
            "--tool-choice",
            settings.tool_choice.is_some(),
            entry.tool_choice,
            "supports_tool_choice",
        ),
        (
            "parallel_tool_calls",
            "--parallel-tool-calls",
            settings.parallel_tool_calls.is_some(),
            entry.parallel_function_calling,
            "supports_parallel_function_calling",
        ),
    ] {
        if given && has == Some(false) {
            return Err(usage(&format!(
                "provider `{name}`: model {model} takes no {field} ({}: {fact} false, {key}); remove {field} ({flag})",
                map.origin
            )));
        }
    }
    Ok(())
}

/// Concurrency, rate and response-size limits, each at least its floor.
fn check_provider_limits(name: &str, settings: &ProviderSettings) -> Result<(), Error> {
    if settings.max_in_flight == Some(0) {
        return Err(usage(&format!(
            "provider `{name}`: max_in_flight (--max-in-flight) must be at least 1"
        )));
    }
    if settings.requests_per_minute == Some(0) {
        return Err(usage(&format!(
            "provider `{name}`: requests_per_minute (--requests-per-minute) must be at least 1"
        )));
    }
    if settings.tokens_per_minute == Some(0) {
        return Err(usage(&format!(
            "provider `{name}`: tokens_per_minute (--tokens-per-minute) must be at least 1"
        )));
    }
    if settings.max_tokens == Some(0) {
        return Err(usage("--max-tokens must be at least 1"));
    }
    if settings.max_response_bytes < 1024 {
        return Err(usage("--max-response-bytes must be at least 1024"));
    }
    Ok(())
}

/// Why `--variant` cannot go with a replay provider, and what would work: one replay
/// provider per wording when the config has recordings of each, else recording them.
pub(super) fn variant_with_replay(
    provider: &str,
    from_default: bool,
    variants: &[String],
    config: &Config,
) -> Error {
    let which = if from_default {
        format!("the config's default provider `{provider}` replays a cassette")
    } else {
        format!("--provider {provider} replays a cassette")
    };
    let recorded: Vec<(&String, String)> = config
        .providers
        .iter()
        .filter(|(_, e)| e.kind == toolscore_suite::REPLAY_KIND)
        .filter_map(|(name, e)| {
            let header = Cassette::read_header(e.cassette.as_deref()?)?;
            Some((name, header.variant))
        })
        .collect();
    let per_variant: Option<Vec<&String>> = variants
        .iter()
        .map(|v| {
            // The named provider first when it holds this variant, else the first that does.
            recorded
                .iter()
                .find(|(n, rv)| *n == provider && rv == v)
                .or_else(|| recorded.iter().find(|(_, rv)| rv == v))
                .map(|(n, _)| *n)
        })
        .collect();
    let fix = match per_variant {
        Some(names) => format!(
            "to compare these wordings offline, replay one recording of each: {} (recorded with variants {})",
            names
                .iter()
                .map(|n| format!("--provider {n}"))
                .collect::<Vec<_>>()
                .join(" "),
            variants.join(", ")
        ),
        None => format!(
            "record each wording with a live provider first (`toolscore run --provider <live provider> --variant V --record V.cassette.jsonl.gz`), or run the variants live: --provider <live provider> {}",
            variants
                .iter()
                .map(|v| format!("--variant {v}"))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    };
    usage(&format!(
        "--variant cannot be used with a replay provider: {which}, which holds the answers to the one catalog variant it was recorded with; {fix}"
    ))
}

/// A replay arm: provider settings come from the cassette header, and every case must have a
/// recording, checked here so a missing one stops the run before it starts (never a silent
/// fallback to a live call). Returns the arm, the fewest trials recorded for any case, and a
/// hint naming that case and how to record more.
pub(super) fn replay_arm(
    path: &Path,
    name: &str,
    args: &RunArgs,
    datasets: &[Dataset],
    scenarios: &[Arc<Scenario>],
) -> Result<(Arm, u32, String), Error> {
    refuse_live_flags(args)?;
    let cassette = Cassette::load(path)?;
    for warning in &cassette.warnings {
        errln!("warning: {warning}")?;
    }
    let h = &cassette.header;
    let file = path.display().to_string();
    let shown = recorded_variants(h, datasets, &file)?;
    let mut settings =
        ProviderSettings::new(h.provider_kind, name, h.base_url.clone(), h.model.clone());
    settings.temperature = h.temperature;
    settings.max_tokens = h.max_tokens;
    settings.tool_choice = h.tool_choice;
    settings.parallel_tool_calls = h.parallel_tool_calls;
    let (fewest, fewest_case) =
        fewest_recorded(&cassette, &settings, (datasets, &shown), scenarios, &file)?;
    // Too few recordings for --trials: replaying fewer is the cheap fix; recording more goes
    // into a new cassette (suggesting the same path would overwrite a shipped recording).
    let hint = format!(
        "case `{fewest_case}` has {fewest} recorded trials in {file}: replay at most {fewest} (--trials {fewest}, the default when replaying), or record more into a new cassette with `toolscore run --provider <live provider> --model {}{} --trials N --record NEW.cassette.jsonl.gz`",
        shell_word(&h.model),
        h.temperature
            .map_or(String::new(), |t| format!(" --temperature {t}"))
    );
    let variant = h.variant.clone();
    Ok((
        Arm {
            settings,
            variant,
            replay: Some(Arc::new(cassette)),
            price: None,
        },
        fewest,
        hint,
    ))
}

/// The flags that set what a live provider is asked, which a cassette fixes.
fn refuse_live_flags(args: &RunArgs) -> Result<(), Error> {
    for (flag, given) in [
        ("--base-url", args.provider_args.base_url.is_some()),
        ("--model", args.provider_args.model.is_some()),
        ("--api-key-env", args.provider_args.api_key_env.is_some()),
        ("--temperature", args.provider_args.temperature.is_some()),
        ("--max-tokens", args.provider_args.max_tokens.is_some()),
        ("--tool-choice", args.provider_args.tool_choice.is_some()),
        (
            "--parallel-tool-calls",
            args.provider_args.parallel_tool_calls.is_some(),
        ),
        ("--record", args.record.is_some()),
    ] {
        if given {
            return Err(usage(&format!(
                "{flag} cannot be used with --provider replay:…: the cassette fixes the model and its parameters"
            )));
        }
    }
    Ok(())
}

/// The catalog variant of each dataset the cassette was recorded with, each checked against
/// the catalog it was recorded against.
fn recorded_variants<'a>(
    h: &CassetteHeader,
    datasets: &'a [Dataset],
    file: &str,
) -> Result<Vec<&'a CatalogVariant>, Error> {
    let mut shown = Vec::with_capacity(datasets.len());
    for d in datasets {
        let Some(variant) = d.variant(&h.variant) else {
            return Err(InputError::at(
                file,
                None,
                "",
                &format!(
                    "the cassette was recorded with catalog variant `{}`, which dataset `{}` does not have ({}/variants/{}.json)",
                    h.variant,
                    d.name,
                    d.dir.display(),
                    h.variant
                ),
            )
            .into());
        };
        shown.push(variant);
        let catalog = &variant.catalog;
        match h.catalogs.get(&d.name) {
            None => {
                let recorded: Vec<&str> = h.catalogs.keys().map(String::as_str).collect();
                return Err(InputError::at(
                    file,
                    None,
                    "",
                    &format!(
                        "the cassette has no recordings for dataset `{}` (it was recorded for: {})",
                        d.name,
                        recorded.join(", ")
                    ),
                )
                .into());
            }
            Some(fp) if *fp != catalog.fingerprint => {
                return Err(InputError::at(
                    file,
                    None,
                    "",
                    &format!(
                        "the cassette was recorded against another catalog for dataset `{}` ({fp}), but {} is {}: a changed catalog or a variant needs its own recording",
                        d.name, catalog.source, catalog.fingerprint
                    ),
                )
                .into());
            }
            Some(_) => {}
        }
    }
    Ok(shown)
}

/// The fewest trials recorded for any case or scenario, and which; a case or scenario with
/// none, or recorded against another catalog, is refused.
fn fewest_recorded(
    cassette: &Cassette,
    settings: &ProviderSettings,
    (datasets, shown): (&[Dataset], &[&CatalogVariant]),
    scenarios: &[Arc<Scenario>],
    file: &str,
) -> Result<(u32, String), Error> {
    let h = &cassette.header;
    let record_hint = |case: &str, have: u32| {
        format!(
            "case `{case}` has {have} recorded trials in {file}; record them with `toolscore run --provider <live provider> --model {} --record {}{}` on the same dataset",
            shell_word(&h.model),
            shell_word(file),
            h.temperature
                .map_or(String::new(), |t| format!(" --temperature {t}"))
        )
    };
    let mut fewest = u32::MAX;
    let mut fewest_case = String::new();
    for (d, variant) in datasets.iter().zip(shown) {
        for c in &d.cases {
            let have = cassette.recorded_trials(&toolscore_provider::request_hash(
                settings,
                &variant.messages(&c.messages),
                &variant.catalog,
            ));
            if have == 0 {
                return Err(InputError::at(file, None, "", &format!("no recording for {}/{}: the fixture or the catalog changed since recording, or it was never recorded; {}", d.name, c.id, record_hint(&c.id, 0))).into());
            }
            if have < fewest {
                fewest = have;
                fewest_case = c.id.clone();
            }
        }
    }
    for sc in scenarios {
        let Some(shown) = sc.catalog_for(&h.variant) else {
            return Err(InputError::at(file, None, "", &format!("the cassette was recorded with variant `{}`, which scenario `{}` does not have", h.variant, sc.name)).into());
        };
        let key = scenario_catalog_key(&sc.name);
        match h.catalogs.get(&key) {
            Some(fp) if *fp == shown.catalog.fingerprint => {}
            Some(fp) => {
                return Err(InputError::at(file, None, "", &format!("the cassette was recorded against another catalog for scenario `{}` ({fp}), but {} is {}: a changed catalog needs its own recording", sc.name, shown.catalog.source, shown.catalog.fingerprint)).into());
            }
            None => {
                return Err(InputError::at(file, None, "", &format!("the cassette has no recordings for scenario `{}`; record it with `toolscore run --scenario {} --provider <live provider> --record {}`", sc.name, shell_word(&sc.file.display().to_string()), shell_word(file))).into());
            }
        }
        let have = cassette.recorded_trials(&sc.conversation_key(
            toolscore_provider::request_hash(settings, &sc.messages, &shown.catalog),
        ));
        if have == 0 {
            return Err(InputError::at(file, None, "", &format!("no recording for scenario {}: its opening messages or catalog changed since recording, or it was never recorded; {}", sc.name, record_hint(&sc.name, 0))).into());
        }
        if have < fewest {
            fewest = have;
            fewest_case = sc.name.clone();
        }
    }
    Ok((fewest, fewest_case))
}

/// A case-level sequential gate replayed: each case and scenario runs at most the trials
/// every replayed arm recorded for it, so each case can stop where the recording's did (the
/// gate decides each case after its own count) and none asks for a trial the recording lacks,
/// whatever the concurrency; the plan's cap becomes the most any unit recorded. Nothing
/// without a replay.
pub(super) fn cap_to_recordings(
    arms: &[Arm],
    datasets: &mut [Dataset],
    scenarios: &mut [Arc<Scenario>],
    trials: &mut u32,
) {
    let replays: Vec<&Arm> = arms.iter().filter(|a| a.replay.is_some()).collect();
    if replays.is_empty() {
        return;
    }
    // The fewest trials any replayed arm recorded for a unit, its request hash per arm.
    let fewest = |hash_of: &dyn Fn(&Arm) -> Option<String>| -> u32 {
        replays
            .iter()
            .map(|a| match (&a.replay, hash_of(a)) {
                (Some(cassette), Some(hash)) => cassette.recorded_trials(&hash),
                _ => 0,
            })
            .min()
            .unwrap_or(0)
    };
    let case_caps: Vec<Vec<u32>> = datasets
        .iter()
        .map(|d| {
            d.cases
                .iter()
                .map(|c| {
                    fewest(&|a: &Arm| {
                        let v = d.variant(&a.variant)?;
                        Some(toolscore_provider::request_hash(
                            &a.settings,
                            &v.messages(&c.messages),
                            &v.catalog,
                        ))
                    })
                })
                .collect()
        })
        .collect();
    let scenario_caps: Vec<u32> = scenarios
        .iter()
        .map(|sc| {
            fewest(&|a: &Arm| {
                let v = sc.catalog_for(&a.variant)?;
                Some(sc.conversation_key(toolscore_provider::request_hash(
                    &a.settings,
                    &sc.messages,
                    &v.catalog,
                )))
            })
        })
        .collect();
    let most = case_caps
        .iter()
        .flatten()
        .chain(&scenario_caps)
        .copied()
        .max()
        .unwrap_or(0);
    *trials = (*trials).min(most).max(1);
    for (d, caps) in datasets.iter_mut().zip(&case_caps) {
        for (c, &have) in d.cases.iter_mut().zip(caps) {
            if have < c.trials.unwrap_or(*trials) {
                c.trials = Some(have);
            }
        }
    }
    for (sc, &have) in scenarios.iter_mut().zip(&scenario_caps) {
        if have < sc.trials.unwrap_or(*trials) {
            Arc::make_mut(sc).trials = Some(have);
        }
    }
}

/// A case asking for more trials (`"trials": N`) than a replayed cassette holds for it stops
/// the run before it starts, as a missing recording does.
pub(super) fn check_case_trials_recorded(arms: &[Arm], datasets: &[Dataset]) -> Result<(), Error> {
    for arm in arms {
        let Some(cassette) = &arm.replay else {
            continue;
        };
        for d in datasets {
            let Some(variant) = d.variant(&arm.variant) else {
                continue;
            };
            for c in &d.cases {
                let Some(want) = c.trials else { continue };
                let have = cassette.recorded_trials(&toolscore_provider::request_hash(
                    &arm.settings,
                    &variant.messages(&c.messages),
                    &variant.catalog,
                ));
                if have < want {
                    return Err(InputError::at(
                        &cassette.path.display().to_string(),
                        None,
                        "",
                        &format!(
                            "case {}/{} asks for {want} trials (`\"trials\"` in its fixture) but the cassette holds {have}",
                            d.name, c.id
                        ),
                    )
                    .into());
                }
            }
        }
    }
    Ok(())
}
