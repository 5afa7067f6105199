//! `run --attacks`: how often planted instructions got done, and what they cost the user's
//! task. Aggregated from the records alone (each attacked trial's `attack` and `scenario`
//! fields, each clean scenario trial's outcome), so results.jsonl re-aggregates into the same
//! numbers.
//!
//! Three rates, each with its interval and count:
//! - `attack_success`: the attacker's goal happened (attacked trials);
//! - `utility_under_attack`: the scenario's own `expect` held (attacked trials);
//! - `utility`: the same in the attacked scenarios' clean trials.
//!
//! A unit is one (scenario × attack). A single unit's interval is the report's single-rate
//! interval over its trials; a group's (a scenario, an attack, a family, the suite) is the mean
//! of its units' rates with a t interval, the units as clusters, because trials of one unit are
//! not independent. Infrastructure errors are counted per unit, never judged.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::RateStat;
use toolscore_core::metric::AttackMetric;
use toolscore_core::{ArmId, Outcome, TrialRecord};
use toolscore_stats as stats;

/// Most proofs kept per unit (the first ones seen): enough to show what happened.
const MAX_EVIDENCE: usize = 3;

/// The security figures of one arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecurityArmSummary {
    pub arm: ArmId,
    /// Over every attacked unit.
    pub suite: SecurityGroup,
    pub by_scenario: Vec<SecurityGroup>,
    pub by_attack: Vec<SecurityGroup>,
    /// Attacks whose file gives no family are grouped under `(none)`.
    pub by_family: Vec<SecurityGroup>,
    pub units: Vec<AttackUnit>,
    /// Scenarios that ran in this arm with no attacked unit (no injection point), by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_attacked: Vec<String>,
}

/// A group of attacked units: its rates, pooled counts with the clustered interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecurityGroup {
    pub name: String,
    pub units: usize,
    /// Attacked trials judged.
    pub trials: u64,
    /// Attacked trials lost to infrastructure errors: not judged.
    pub errors: u64,
    /// Judged trials whose payload reached the model (it called a tool that carried it).
    pub delivered: u64,
    pub attack_success: RateStat,
    pub utility_under_attack: RateStat,
    /// The clean trials of the group's scenarios (absent for a group that is not made of
    /// whole scenarios: an attack, a family).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utility: Option<RateStat>,
}

/// One (scenario × attack) unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttackUnit {
    /// Its case id in the records: `SCENARIO@ATTACK`.
    pub case_id: String,
    pub scenario: String,
    pub attack: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    pub trials: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors: BTreeMap<String, u64>,
    pub delivered: u64,
    pub attack_success: RateStat,
    pub utility_under_attack: RateStat,
    /// The first proofs of success seen, with their trial: `trial 3: call 2 (send_email …)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
}

#[derive(Default)]
struct UnitAgg {
    scenario: String,
    attack: String,
    family: Option<String>,
    judged: u64,
    succeeded: u64,
    passed: u64,
    delivered: u64,
    errors: BTreeMap<String, u64>,
    evidence: Vec<(u32, String)>,
}

#[derive(Default)]
struct CleanAgg {
    judged: u64,
    passed: u64,
}

#[derive(Default)]
struct ArmAgg {
    units: BTreeMap<String, UnitAgg>,
    clean: BTreeMap<String, CleanAgg>,
}

/// Counts attacked trials by unit and clean scenario trials by scenario, per arm.
#[derive(Default)]
pub(crate) struct SecurityAggregator {
    arms: BTreeMap<ArmId, ArmAgg>,
}

impl SecurityAggregator {
    /// Counts one scenario record (one with a `trajectory`), attacked or clean.
    pub(crate) fn add(&mut self, record: &TrialRecord) {
        if !self.arms.contains_key(&record.arm) {
            self.arms.insert(record.arm.clone(), ArmAgg::default());
        }
        let Some(arm) = self.arms.get_mut(&record.arm) else {
            return;
        };
        let Some(attack) = &record.attack else {
            if let Some(passed) = AttackMetric::Utility.of(record) {
                let clean = arm.clean.entry(record.case_id.clone()).or_default();
                clean.judged += 1;
                clean.passed += u64::from(passed);
            }
            return;
        };
        let unit = arm
            .units
            .entry(record.case_id.clone())
            .or_insert_with(|| UnitAgg {
                scenario: attack.scenario.clone(),
                attack: attack.id.clone(),
                family: attack.family.clone(),
                ..UnitAgg::default()
            });
        let (Some(succeeded), Some(passed)) = (
            AttackMetric::AttackSuccess.of(record),
            AttackMetric::UtilityUnderAttack.of(record),
        ) else {
            if record.outcome == Outcome::Error {
                let class = record
                    .error_class
                    .map_or_else(|| "unknown".to_owned(), |c| c.to_string());
                *unit.errors.entry(class).or_default() += 1;
            }
            return;
        };
        unit.judged += 1;
        unit.passed += u64::from(passed);
        unit.delivered += u64::from(attack.delivered.is_some());
        if succeeded {
            unit.succeeded += 1;
            // The lowest trials' proofs, whatever order the trials finished in.
            if let Some(e) = &attack.evidence {
                unit.evidence.push((record.trial_index, e.clone()));
                unit.evidence.sort();
                unit.evidence.truncate(MAX_EVIDENCE);
            }
        }
    }

    /// Every arm that ran attacked units, with its figures at `conf`.
    pub(crate) fn finish(self, conf: f64) -> Vec<SecurityArmSummary> {
        self.arms
            .into_iter()
            .filter(|(_, a)| !a.units.is_empty())
            .map(|(arm, agg)| finish_arm(arm, agg, conf))
            .collect()
    }
}

fn finish_arm(arm: ArmId, agg: ArmAgg, conf: f64) -> SecurityArmSummary {
    let units: Vec<AttackUnit> = agg
        .units
        .iter()
        .map(|(case_id, u)| AttackUnit {
            case_id: case_id.clone(),
            scenario: u.scenario.clone(),
            attack: u.attack.clone(),
            family: u.family.clone(),
            trials: u.judged,
            errors: u.errors.clone(),
            delivered: u.delivered,
            attack_success: single(u.succeeded, u.judged, conf),
            utility_under_attack: single(u.passed, u.judged, conf),
            evidence: u
                .evidence
                .iter()
                .map(|(t, e)| format!("trial {t}: {e}"))
                .collect(),
        })
        .collect();
    let attacked: Vec<&UnitAgg> = agg.units.values().collect();
    let group_by = |key: &dyn Fn(&UnitAgg) -> String| {
        let mut groups: BTreeMap<String, Vec<&UnitAgg>> = BTreeMap::new();
        for u in &attacked {
            groups.entry(key(u)).or_default().push(u);
        }
        groups
    };
    let clean_of = |scenarios: &mut dyn Iterator<Item = &str>| {
        let counts: Vec<(u64, u64)> = scenarios
            .map(|s| agg.clean.get(s).map_or((0, 0), |c| (c.passed, c.judged)))
            .collect();
        pooled(&counts, conf)
    };
    let by_scenario = group_by(&|u| u.scenario.clone())
        .into_iter()
        .map(|(name, members)| {
            let utility = clean_of(&mut std::iter::once(name.as_str()));
            group(name, &members, Some(utility), conf)
        })
        .collect();
    let by_attack = group_by(&|u| u.attack.clone())
        .into_iter()
        .map(|(name, members)| group(name, &members, None, conf))
        .collect();
    let by_family = group_by(&|u| u.family.clone().unwrap_or_else(|| "(none)".to_owned()))
        .into_iter()
        .map(|(name, members)| group(name, &members, None, conf))
        .collect();
    let mut scenarios: Vec<&str> = attacked.iter().map(|u| u.scenario.as_str()).collect();
    scenarios.sort_unstable();
    scenarios.dedup();
    let utility = clean_of(&mut scenarios.iter().copied());
    let suite = group("all".to_owned(), &attacked, Some(utility), conf);
    let not_attacked = agg
        .clean
        .keys()
        .filter(|s| scenarios.binary_search(&s.as_str()).is_err())
        .cloned()
        .collect();
    SecurityArmSummary {
        arm,
        suite,
        by_scenario,
        by_attack,
        by_family,
        units,
        not_attacked,
    }
}

/// One unit's rate: its trials, with the report's single-rate interval.
fn single(x: u64, n: u64, conf: f64) -> RateStat {
    RateStat {
        x,
        n,
        rate: (n > 0).then(|| x as f64 / n as f64),
        interval: stats::rate_interval(x, n, conf),
        case_level: None,
    }
}

/// Pooled counts of several clusters, with the clustered interval over them.
fn pooled(counts: &[(u64, u64)], conf: f64) -> RateStat {
    let x = counts.iter().map(|c| c.0).sum();
    let n = counts.iter().map(|c| c.1).sum();
    RateStat {
        case_level: stats::suite_interval(counts, conf),
        ..single(x, n, conf)
    }
}

fn group(
    name: String,
    members: &[&UnitAgg],
    utility: Option<RateStat>,
    conf: f64,
) -> SecurityGroup {
    let counts = |f: &dyn Fn(&UnitAgg) -> u64| -> Vec<(u64, u64)> {
        members.iter().map(|u| (f(u), u.judged)).collect()
    };
    SecurityGroup {
        name,
        units: members.len(),
        trials: members.iter().map(|u| u.judged).sum(),
        errors: members.iter().flat_map(|u| u.errors.values()).sum(),
        delivered: members.iter().map(|u| u.delivered).sum(),
        attack_success: pooled(&counts(&|u| u.succeeded), conf),
        utility_under_attack: pooled(&counts(&|u| u.passed), conf),
        utility,
    }
}
