//! `toolscore validate`: load the config, datasets and scenarios as a run would, and say what
//! was found; nothing is run.

use super::{SuiteArgs, load_suite};
use crate::cli::Error;
use toolscore_core::ExitCode;

/// Loads everything a run with these flags would load and prints one line per dataset,
/// variant and scenario.
pub(super) fn run(args: &SuiteArgs) -> Result<ExitCode, Error> {
    let suite = load_suite(args)?;
    for d in &suite.datasets {
        outln!(
            "{}: {} tools, {} cases, catalog {}",
            d.dir.display(),
            d.catalog.tools.len(),
            d.cases.len(),
            d.catalog.fingerprint
        )?;
        if let Some(live) = &d.live {
            outln!("  listed live from {}: {}", live.source, live.server)?;
        }
        for v in d.variants.iter().filter(|v| v.file.is_some()) {
            outln!(
                "  variant {}: {}, catalog {}{}",
                v.name,
                v.file.as_deref().unwrap_or_default(),
                v.catalog.fingerprint,
                v.note
                    .as_deref()
                    .map_or(String::new(), |n| format!(" ({n})"))
            )?;
        }
    }
    for s in suite.scenarios.iter().filter(|s| s.attack.is_none()) {
        let rules: usize = s.script.tools.values().map(Vec::len).sum();
        outln!(
            "{}: scenario {}, {} scripted tool{} ({rules} rule{}), max {} steps, expects {}, catalog {}",
            s.file.display(),
            s.name,
            s.script.tools.len(),
            if s.script.tools.len() == 1 { "" } else { "s" },
            if rules == 1 { "" } else { "s" },
            s.max_steps,
            s.expect.label(),
            s.catalogs[0].catalog.fingerprint
        )?;
        if !s.result_variants.is_empty() {
            outln!("  result variants: {}", s.result_variants.join(", "))?;
        }
        if !s.openings.is_empty() {
            let names: Vec<&str> = s.openings.keys().map(String::as_str).collect();
            outln!("  opening variants: {}", names.join(", "))?;
        }
    }
    // Attacked units are the scenarios above under each attack: one line per attacked scenario.
    let mut attacked: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for by in suite.scenarios.iter().filter_map(|s| s.attack.as_ref()) {
        *attacked.entry(by.scenario.as_str()).or_default() += 1;
    }
    for (scenario, attacks) in &attacked {
        outln!(
            "  attacked: {scenario} under {attacks} attack{} ({scenario}@ATTACK)",
            if *attacks == 1 { "" } else { "s" }
        )?;
    }
    if let Some(warning) = super::unedited_starters_warning(&suite.datasets) {
        errln!("{warning}")?;
    }
    Ok(ExitCode::Pass)
}
