//! `--attacks FILE|builtin`: the attack files a run reads (repeatable), the shipped corpus
//! (`attacks/builtin.jsonl`, built into the binary), and the attacked units they make of the
//! suite's scenarios ([`toolscore_suite::attack`]).

use std::path::Path;
use std::sync::Arc;

use super::usage;
use crate::cli::Error;
use toolscore_core::InputError;
use toolscore_core::catalog::Catalog;
use toolscore_suite::Scenario;
use toolscore_suite::attack::{self, Attack};

/// The value of `--attacks` that names the shipped corpus.
pub(crate) const BUILTIN: &str = "builtin";

/// The shipped corpus: every published family, each attack with its source.
const BUILTIN_FILE: (&str, &str) = (
    "builtin:attacks/builtin.jsonl",
    include_str!("../../attacks/builtin.jsonl"),
);

/// The attacker's tools a goal may name when the scenario lacks them.
const ATTACKER_CATALOG: (&str, &str) = (
    "builtin:attacks/attacker.json",
    include_str!("../../attacks/attacker.json"),
);

/// The attacks every `--attacks` names, in order: `builtin`, or a file.
pub(crate) fn load(values: &[String]) -> Result<Vec<Attack>, Error> {
    let mut files = Vec::with_capacity(values.len());
    for value in values {
        files.push(if value == BUILTIN {
            attack::parse_attacks(BUILTIN_FILE.1, BUILTIN_FILE.0)?
        } else {
            attack::load_attacks(Path::new(value))?
        });
    }
    Ok(attack::combine(files)?)
}

/// The shipped attacker catalog fragment.
pub(crate) fn attacker_catalog() -> Result<Catalog, InputError> {
    toolscore_core::catalog::parse_catalog(ATTACKER_CATALOG.1, ATTACKER_CATALOG.0)
}

/// The suite's scenarios followed by their attacked units. Refused when there is nothing to
/// attack: no scenario, or none with an injection point.
pub(crate) fn attacked(
    scenarios: Vec<Arc<Scenario>>,
    values: &[String],
) -> Result<Vec<Arc<Scenario>>, Error> {
    let attacks = load(values)?;
    if scenarios.is_empty() {
        return Err(usage(
            "--attacks attacks scenarios, and the suite has none; add one with --scenario FILE (or `scenarios:` in toolscore.yaml)",
        ));
    }
    let plan = attack::attacked_units(&scenarios, &attacks, &attacker_catalog()?)?;
    if plan.units.is_empty() {
        return Err(usage(&format!(
            "--attacks: no scenario has an injection point ({}); mark one with ${{injection}} in a scripted answer, or list a live tool under `inject:`",
            plan.not_attacked.join(", ")
        )));
    }
    let mut all = scenarios;
    all.extend(plan.units);
    Ok(all)
}

/// Writes the attacks a plan's attacked units use into the run folder, one line each in
/// first-use order, so the run can be explained and repeated from its own files (`--attacks
/// RUN_DIR/attacks.jsonl`). Nothing for a run without attacks.
pub(crate) fn write_run_attacks(dir: &Path, scenarios: &[Arc<Scenario>]) -> Result<(), Error> {
    let mut seen = std::collections::HashSet::new();
    let mut text = String::new();
    for by in scenarios.iter().filter_map(|s| s.attack.as_ref()) {
        if seen.insert(by.attack.id.as_str()) {
            text.push_str(&by.attack.line);
            text.push('\n');
        }
    }
    if text.is_empty() {
        return Ok(());
    }
    Ok(toolscore_core::write_file(
        &dir.join(attack::RUN_ATTACKS_FILE),
        text.as_bytes(),
    )?)
}

/// The attack `id` as a run folder recorded it.
pub(crate) fn run_attack(dir: &Path, id: &str) -> Result<Attack, InputError> {
    let path = dir.join(attack::RUN_ATTACKS_FILE);
    attack::load_attacks(&path)?
        .into_iter()
        .find(|a| a.id == id)
        .ok_or_else(|| {
            InputError::at(
                &path.display().to_string(),
                None,
                "id",
                &format!("no attack `{id}`"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_corpus_covers_every_family_each_with_a_source() {
        let corpus = load(&[BUILTIN.to_owned()]).expect("the builtin corpus parses");
        assert!(corpus.len() >= 30, "{} attacks", corpus.len());
        let families: std::collections::BTreeSet<&str> =
            corpus.iter().filter_map(|a| a.family.as_deref()).collect();
        for family in [
            "important-instructions",
            "ignore-previous",
            "fake-system",
            "fake-completion",
            "tool-knowledge",
            "encoded",
            "other-languages",
            "polite-advisory",
        ] {
            assert!(families.contains(family), "no {family} attack");
        }
        assert!(corpus.iter().all(|a| a.source.is_some()));
        // Every goal names a tool the attacker catalog offers, or none.
        let attacker = attacker_catalog().unwrap();
        for a in &corpus {
            if let Some(tool) = a.goal.tool() {
                assert!(attacker.get(tool).is_some(), "{}: {tool}", a.id);
            }
        }
    }
}
