//! Public as a namespace: callers write `metric::Metric`, `metric::PerMetric`, `metric::AttackMetric` (one path each).
//!
//! The rates a trial is scored on: one registry. Every command that takes a metric (`--gate`,
//! `--metric` of `compare`, `explain`, `history`, `plan`, `gate --baseline-metric`), every
//! summary and every renderer takes its names, labels and per-trial outcome from here. A new
//! rate metric is a variant here and its scoring (a field of [`TrialScore`] that `score`
//! fills); reports list it where they list the others.

use std::ops::{Index, IndexMut};

use serde::{Deserialize, Serialize};

use crate::record::{Outcome, SCENARIO_DATASET, TrialRecord, TrialScore};

/// A rate metric. Its flag name (`args`) is what users write, with the summary's key
/// (`args_exact`) accepted as an alias; its label (`args exact`) is what reports print; its
/// key is how `summary.json` spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Right tool on the first call, or correctly no call.
    Selection,
    /// Right tool(s) with arguments matching exactly (canonical JSON, per-field matchers), over
    /// trials of cases that state arguments.
    ArgsExact,
    /// Every produced call names a catalog tool and its arguments validate against the tool's
    /// schema, over trials with at least one call.
    SchemaValid,
    /// Selection, arguments (where stated) and schema all correct.
    Pass,
}

impl Metric {
    /// Every metric, in the order reports list them.
    pub const ALL: [Metric; 4] = [
        Metric::Selection,
        Metric::ArgsExact,
        Metric::SchemaValid,
        Metric::Pass,
    ];

    /// The name users write (`--gate args>=0.8`, `--metric schema`).
    pub fn name(self) -> &'static str {
        match self {
            Metric::Selection => "selection",
            Metric::ArgsExact => "args",
            Metric::SchemaValid => "schema",
            Metric::Pass => "pass",
        }
    }

    /// How `summary.json` and `results.csv` spell it.
    pub fn key(self) -> &'static str {
        match self {
            Metric::Selection => "selection",
            Metric::ArgsExact => "args_exact",
            Metric::SchemaValid => "schema_valid",
            Metric::Pass => "pass",
        }
    }

    /// The label reports print.
    pub fn label(self) -> &'static str {
        match self {
            Metric::Selection => "selection",
            Metric::ArgsExact => "args exact",
            Metric::SchemaValid => "schema valid",
            Metric::Pass => "pass",
        }
    }

    /// The metric a user named, by its name or its key: the flags' parser, so `--gate` and
    /// `--metric` accept the same spellings.
    pub fn parse(name: &str) -> Option<Metric> {
        <Metric as clap::ValueEnum>::from_str(name, false).ok()
    }

    /// Whether one scored trial succeeded on this metric; `None` when the metric does not
    /// apply to it (args on a case that expects none, schema on an answer without a call).
    pub fn of(self, score: &TrialScore) -> Option<bool> {
        match self {
            Metric::Selection => Some(score.selection_ok),
            Metric::ArgsExact => score.args_ok,
            Metric::SchemaValid => score.schema_ok,
            Metric::Pass => Some(score.passed),
        }
    }
}

/// The flags take a metric by its name, or by its key as an alias.
impl clap::ValueEnum for Metric {
    fn value_variants<'a>() -> &'a [Self] {
        &Metric::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let value = clap::builder::PossibleValue::new(self.name());
        Some(if self.key() == self.name() {
            value
        } else {
            value.alias(self.key())
        })
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// A rate of an attacked run (`run --attacks`), measured on (scenario × attack) units rather
/// than on a fixture's score, so apart from [`Metric`]: every dataset summary lists every
/// `Metric`, and none of these applies to a dataset's case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttackMetric {
    /// The attacker's goal happened, over attacked trials. Lower is better.
    AttackSuccess,
    /// The scenario's own `expect` held, over attacked trials.
    UtilityUnderAttack,
    /// The scenario's own `expect` held, over the attacked scenarios' clean trials.
    Utility,
}

impl AttackMetric {
    pub const ALL: [AttackMetric; 3] = [
        AttackMetric::AttackSuccess,
        AttackMetric::UtilityUnderAttack,
        AttackMetric::Utility,
    ];

    /// The name users write and `summary.json` spells (`--gate 'attack_success<=0.02'`).
    pub fn name(self) -> &'static str {
        match self {
            AttackMetric::AttackSuccess => "attack_success",
            AttackMetric::UtilityUnderAttack => "utility_under_attack",
            AttackMetric::Utility => "utility",
        }
    }

    /// The label reports print.
    pub fn label(self) -> &'static str {
        match self {
            AttackMetric::AttackSuccess => "attack success",
            AttackMetric::UtilityUnderAttack => "utility under attack",
            AttackMetric::Utility => "utility (clean)",
        }
    }

    /// Whether a lower rate is the better one: a gate on it is a ceiling (`<=`).
    pub fn lower_is_better(self) -> bool {
        matches!(self, AttackMetric::AttackSuccess)
    }

    pub fn parse(name: &str) -> Option<AttackMetric> {
        AttackMetric::ALL.into_iter().find(|m| m.name() == name)
    }

    /// What one trial says of this metric: whether its event happened (the goal, or the
    /// scenario's own `expect`), or `None` when the trial does not count towards it: an
    /// infrastructure error or a budget stop (never scored), a clean trial for the attacked
    /// rates, an attacked one for `utility`. `utility` counts every clean scenario trial here;
    /// its callers keep the attacked scenarios' ones.
    pub fn of(self, record: &TrialRecord) -> Option<bool> {
        if !record.outcome.is_judged() || record.dataset != SCENARIO_DATASET {
            return None;
        }
        let passed = record.outcome == Outcome::Pass;
        match (self, &record.attack) {
            (AttackMetric::AttackSuccess, Some(attack)) => Some(attack.succeeded),
            (AttackMetric::UtilityUnderAttack, Some(_)) => Some(passed),
            (AttackMetric::Utility, None) => Some(passed),
            _ => None,
        }
    }
}

impl std::fmt::Display for AttackMetric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// One value per metric, indexed by [`Metric`]: counts while aggregating, rates in a summary.
/// Serialized as an object keyed by each metric's key, in [`Metric::ALL`]'s order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PerMetric<T>([T; Metric::ALL.len()]);

impl<T> PerMetric<T> {
    /// A value for each metric.
    pub fn from_fn(mut f: impl FnMut(Metric) -> T) -> Self {
        PerMetric(Metric::ALL.map(&mut f))
    }

    /// The value of one metric.
    pub fn get(&self, metric: Metric) -> &T {
        &self[metric]
    }

    /// Each metric with its value, in report order.
    pub fn iter(&self) -> impl Iterator<Item = (Metric, &T)> {
        Metric::ALL.into_iter().zip(&self.0)
    }
}

impl<T> Index<Metric> for PerMetric<T> {
    type Output = T;
    fn index(&self, metric: Metric) -> &T {
        &self.0[metric as usize]
    }
}

impl<T> IndexMut<Metric> for PerMetric<T> {
    fn index_mut(&mut self, metric: Metric) -> &mut T {
        &mut self.0[metric as usize]
    }
}

impl<T: Serialize> Serialize for PerMetric<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(Metric::ALL.len()))?;
        for (metric, value) in self.iter() {
            map.serialize_entry(metric.key(), value)?;
        }
        map.end()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for PerMetric<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let mut by_key: std::collections::BTreeMap<Metric, T> =
            std::collections::BTreeMap::deserialize(d)?;
        let mut values = Vec::with_capacity(Metric::ALL.len());
        for metric in Metric::ALL {
            let value = by_key
                .remove(&metric)
                .ok_or_else(|| D::Error::missing_field(metric.key()))?;
            values.push(value);
        }
        values
            .try_into()
            .map(PerMetric)
            .map_err(|_| D::Error::custom("one value per metric"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_parses_by_its_name_and_its_key_and_nothing_else() {
        for (i, m) in Metric::ALL.into_iter().enumerate() {
            assert_eq!(m as usize, i, "ALL is in declaration order");
            assert_eq!(Metric::parse(m.name()), Some(m));
            assert_eq!(Metric::parse(m.key()), Some(m));
            // The flag parser (clap) accepts the same spellings.
            use clap::ValueEnum;
            assert_eq!(Metric::from_str(m.name(), false), Ok(m));
            assert_eq!(Metric::from_str(m.key(), false), Ok(m));
            assert_eq!(serde_json::to_value(m).unwrap(), m.key());
        }
        assert_eq!(Metric::parse("args exact"), None);
        assert_eq!(Metric::parse("Selection"), None);
    }

    #[test]
    fn per_metric_values_serialize_keyed_in_report_order_and_round_trip() {
        let values = PerMetric::from_fn(|m| m as u32);
        let json = serde_json::to_string(&values).unwrap();
        assert_eq!(
            json,
            r#"{"selection":0,"args_exact":1,"schema_valid":2,"pass":3}"#
        );
        let back: PerMetric<u32> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, values);
        let missing = serde_json::from_str::<PerMetric<u32>>(r#"{"selection":0}"#);
        assert!(missing.unwrap_err().to_string().contains("args_exact"));
    }
}
