//! Compiling a plan before its first trial: each arm's backend, each case's expectation and
//! validators under every catalog variant the arms are shown, and every (arm, case)'s opening
//! request encoded once. What the workers then read, never change.

use std::sync::Arc;

use super::{Arm, budget};
use toolscore_core::Error;
use toolscore_core::Message;
use toolscore_core::SCENARIO_DATASET;
use toolscore_core::catalog::Catalog;
use toolscore_core::{ArmId, ModelIdentity};
use toolscore_provider::cassette::Replay;
use toolscore_provider::{Backend, PreparedRequest, Provider};
use toolscore_score::{Expectation, ToolValidators};
use toolscore_suite::Dataset;
use toolscore_suite::Scenario;

/// A case ready to run in every arm.
pub(super) struct CaseUnit {
    pub(super) dataset: String,
    pub(super) case_id: String,
    pub(super) tags: Vec<String>,
    /// What the case expects under each catalog variant of the plan (a rename changes the
    /// expected tool's name), at the arm's `variant` index.
    pub(super) views: Vec<CaseView>,
}

pub(super) struct CaseView {
    pub(super) expected: String,
    pub(super) judge: Judge,
    pub(super) validators: Arc<ToolValidators>,
}

impl CaseView {
    /// The most requests one trial makes: one for a fixture, `max_steps` for a scenario.
    pub(super) fn requests(&self) -> u32 {
        match &self.judge {
            Judge::Fixture(_) => 1,
            Judge::Scenario { scenario, .. } => scenario.max_steps.max(1),
        }
    }
}

/// How a unit's trials run and are judged.
pub(super) enum Judge {
    /// One request, scored against the fixture's expectation.
    Fixture(Expectation),
    /// An agent loop over scripted tools, scored on its trajectory.
    Scenario {
        scenario: Arc<Scenario>,
        /// The catalog this view shows (re-encoded into every later step's request).
        catalog: Arc<Catalog>,
        /// The arm's variant: the scenario's opening and result wording under it
        /// (`Scenario::messages_for`, `wording_for`).
        variant: String,
    },
}

pub(super) struct ArmUnit {
    pub(super) id: ArmId,
    pub(super) identity: ModelIdentity,
    pub(super) backend: Backend,
    /// Index of the arm's catalog variant in every `CaseUnit::views`.
    pub(super) variant: usize,
    pub(super) price: Option<toolscore_provider::prices::ArmPrice>,
}

impl ArmUnit {
    /// The most `request` can cost this arm ([`budget::worst_case_usd`]). An unpriced arm or
    /// one with no output bound cannot be capped; `cli` refuses `--max-cost` for such a plan
    /// before it gets here, so 0 is never reached in a capped run.
    pub(super) fn worst_case_usd(&self, request: &PreparedRequest) -> f64 {
        let settings = self.backend.settings();
        // Free output needs no bound (`cli` refuses a capped arm with neither).
        let bound = settings.kind.adapter().output_bound(settings).unwrap_or(0);
        self.price.as_ref().map_or(0.0, |p| {
            budget::worst_case_usd(&p.price, request.body.len(), bound)
        })
    }
}

/// The plan compiled for the workers: each arm with its backend, each case with what it
/// expects under every catalog variant, and each (arm, case)'s opening request, encoded once.
pub(super) struct Compiled {
    pub arms: Vec<ArmUnit>,
    pub units: Vec<CaseUnit>,
    /// Opening request of each (arm, case), at `arm * cases + case`.
    pub prepared: Vec<PreparedRequest>,
}

/// Compiles `arms` over the plan's datasets and scenarios. Fails, before any request, when a
/// dataset or scenario lacks a variant an arm is shown.
pub(super) fn compile(
    arms: Vec<Arm>,
    datasets: &[Dataset],
    scenarios: &[Arc<Scenario>],
    client: &reqwest::Client,
) -> Result<Compiled, Error> {
    let (arms, variant_names) = arm_units(arms, client);
    let case_count = datasets.iter().map(|d| d.cases.len()).sum::<usize>() + scenarios.len();
    // Per variant, per case: the catalog and the conversation as that variant names the tools.
    let mut shown: Vec<Vec<Shown>> = vec![Vec::with_capacity(case_count); variant_names.len()];
    let mut units = dataset_units(datasets, &variant_names, &mut shown)?;
    units.extend(scenario_units(scenarios, &variant_names, &mut shown)?);
    // The scenario of each case index (none for a dataset's case), for its conversation key.
    let scenario_of: Vec<Option<&Scenario>> = datasets
        .iter()
        .flat_map(|d| d.cases.iter().map(|_| None))
        .chain(scenarios.iter().map(|s| Some(s.as_ref())))
        .collect();
    let mut prepared = Vec::with_capacity(arms.len() * case_count);
    for arm in &arms {
        for ((catalog, messages), scenario) in shown[arm.variant].iter().zip(&scenario_of) {
            let mut request = arm.backend.prepare(messages, catalog);
            if let Some(s) = scenario {
                request.request_hash = s.conversation_key(request.request_hash);
            }
            prepared.push(request);
        }
    }
    Ok(Compiled {
        arms,
        units,
        prepared,
    })
}

/// What one case shows under one variant: its catalog and its opening conversation.
type Shown = (Arc<Catalog>, Vec<Message>);

/// Each arm with its backend (live, or replaying its cassette) and the index of its catalog
/// variant among the distinct variants of the arms, in first-seen order (returned too).
fn arm_units(arms: Vec<Arm>, client: &reqwest::Client) -> (Vec<ArmUnit>, Vec<String>) {
    let mut variant_names: Vec<String> = Vec::new();
    let mut units = Vec::with_capacity(arms.len());
    for arm in arms {
        let id = arm.id();
        let identity = arm.settings.identity();
        let variant = match variant_names.iter().position(|v| *v == arm.variant) {
            Some(i) => i,
            None => {
                variant_names.push(arm.variant.clone());
                variant_names.len() - 1
            }
        };
        let provider = Provider::new(arm.settings, client.clone());
        let backend = match arm.replay {
            Some(cassette) => Backend::Replay(Replay::new(cassette, provider)),
            None => Backend::Live(provider),
        };
        units.push(ArmUnit {
            id,
            identity,
            backend,
            variant,
            price: arm.price,
        });
    }
    (units, variant_names)
}

/// The datasets' cases, each with its expectation under every variant (a rename changes the
/// expected tool's name); what each shows goes to `shown`.
fn dataset_units(
    datasets: &[Dataset],
    variant_names: &[String],
    shown: &mut [Vec<Shown>],
) -> Result<Vec<CaseUnit>, Error> {
    let mut units = Vec::new();
    for d in datasets {
        let variants = variant_names
            .iter()
            .map(|name| {
                d.variant(name).ok_or_else(|| {
                    Error::Internal(format!(
                        "dataset `{}` has no catalog variant `{name}`",
                        d.name
                    ))
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        for c in &d.cases {
            let views = variants
                .iter()
                .map(|v| {
                    let expect = v.expectation(&c.expect);
                    CaseView {
                        expected: expect.tool_label(),
                        judge: Judge::Fixture(expect),
                        validators: match &c.catalog {
                            Some((_, own)) => Arc::clone(own),
                            None => Arc::clone(&v.validators),
                        },
                    }
                })
                .collect();
            units.push(CaseUnit {
                dataset: d.name.clone(),
                case_id: c.id.clone(),
                tags: c.tags.clone(),
                views,
            });
            for (i, v) in variants.iter().enumerate() {
                shown[i].push((case_catalog(&v.catalog, c), v.messages(&c.messages)));
            }
        }
    }
    Ok(units)
}

/// The scenarios, each judged on its trajectory under every variant's catalog and result
/// wording; what each shows goes to `shown`.
fn scenario_units(
    scenarios: &[Arc<Scenario>],
    variant_names: &[String],
    shown: &mut [Vec<Shown>],
) -> Result<Vec<CaseUnit>, Error> {
    let mut units = Vec::with_capacity(scenarios.len());
    for scenario in scenarios {
        let mut views = Vec::with_capacity(variant_names.len());
        for (i, name) in variant_names.iter().enumerate() {
            let shown_catalog = scenario.catalog_for(name).ok_or_else(|| {
                Error::Internal(format!(
                    "scenario `{}` has no variant `{name}`: neither its catalog nor its results define it (it has: {})",
                    scenario.name,
                    scenario.variant_names().join(", ")
                ))
            })?;
            if !shown_catalog.renames.is_empty() {
                return Err(Error::Internal(format!(
                    "scenario `{}` cannot run under catalog variant `{name}`, which renames tools its script names",
                    scenario.name
                )));
            }
            views.push(CaseView {
                expected: scenario.expect.label(),
                judge: Judge::Scenario {
                    scenario: Arc::clone(scenario),
                    catalog: Arc::clone(&shown_catalog.catalog),
                    variant: name.clone(),
                },
                validators: Arc::clone(&shown_catalog.validators),
            });
            shown[i].push((
                Arc::clone(&shown_catalog.catalog),
                scenario.messages_for(name).to_vec(),
            ));
        }
        units.push(CaseUnit {
            dataset: SCENARIO_DATASET.to_owned(),
            case_id: scenario.name.clone(),
            tags: scenario.tags.clone(),
            views,
        });
    }
    Ok(units)
}

/// The catalog one case shows under a variant: the variant's, or the case's own
/// (`"catalog"` in the fixture, which variants do not change).
fn case_catalog(catalog: &Arc<Catalog>, case: &toolscore_suite::Case) -> Arc<Catalog> {
    match &case.catalog {
        Some((own, _)) => Arc::clone(own),
        None => Arc::clone(catalog),
    }
}
