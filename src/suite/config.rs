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
}

/// One provider as the config names it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderEntry {
    pub kind: String,
    pub base_url: String,
    pub model: String,
    /// Name of the environment variable holding the API key (never the key itself).
    pub api_key_env: Option<String>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    pub timeout_s: Option<f64>,
    pub max_retries: Option<u32>,
}

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
    let mut config: Config = serde_saphyr::from_str(text).map_err(|e| {
        let message = format!("invalid config: {e}");
        match e.location() {
            Some(loc) => InputError::at_column(
                file,
                loc.line() as usize,
                loc.column() as usize,
                None,
                &message,
            ),
            None => InputError::at(file, None, "", &message),
        }
    })?;
    for d in &mut config.datasets {
        if d.is_relative() {
            *d = base.join(&*d);
        }
    }
    Ok(config)
}
