//! The lock of a loaded suite: every catalog its datasets and scenarios show the model, each
//! with its variants and the live server it was listed from (the format and the comparison
//! are `toolscore_core::catalog::lock`).

use std::sync::Arc;

use toolscore_core::catalog::lock::{Lock, Unit, UnitKind};

use crate::Dataset;
use crate::scenario::Scenario;

/// What the model reads of `datasets` and `scenarios`, as a lock pins it.
pub fn of(datasets: &[Dataset], scenarios: &[Arc<Scenario>]) -> Lock {
    let mut units: Vec<Unit> = datasets
        .iter()
        .map(|d| Unit {
            kind: UnitKind::Dataset,
            name: d.name.clone(),
            server: d.live.as_ref().map(|l| l.server.clone()),
            catalogs: d
                .variants
                .iter()
                .map(|v| (v.name.clone(), (*v.catalog).clone()))
                .collect(),
        })
        .collect();
    units.extend(scenarios.iter().map(|s| {
        Unit {
            kind: UnitKind::Scenario,
            name: s.name.clone(),
            server: s.server.as_ref().map(|l| l.identity.clone()),
            catalogs: s
                .catalogs
                .iter()
                .map(|v| (v.name.clone(), (*v.catalog).clone()))
                .collect(),
        }
    }));
    Lock::new(units)
}
