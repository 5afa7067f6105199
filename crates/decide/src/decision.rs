//! A run's one decision: its verdict, computed once from its summary (the records and the run's
//! header) and the one policy the records do not hold (`--max-infra-error-rate`). `run`,
//! `report`, `compare`, `merge` and `tune`'s phases call [`decide`] (or [`decide_comparison`]
//! for two runs) and [`exit_code`]; every renderer formats the [`Decision`] and decides nothing.
//!
//! The rule, in order: a run stopped before its planned trials finished is interrupted (130); a
//! run that cannot be trusted as a whole is not judged (4): planned trials neither run nor
//! skipped, a provider stopped by an auth or quota error, no trial completed, or more than the
//! limit of trials lost to infrastructure errors; otherwise the worst of the gates' verdict
//! (FAIL 1, or BELOW 1 when every failed gate failed under `--fail-below`) and the
//! comparison's (decided counts as a pass, undecided as inconclusive, 3). A budget stop is
//! listed and changes nothing: the trials it left unsent are neither failures nor errors.

use toolscore_core::ErrorClass;
use toolscore_core::ExitCode;
use toolscore_summary::{Decision, Ground, Part, RunVerdict, StoppedProvider, Summary, Verdict};

/// The run's decision. Pure: a function of `summary` and the limit.
pub fn decide(summary: &Summary, max_infra_error_rate: f64) -> Decision {
    let mut grounds = run_grounds(summary, max_infra_error_rate);
    grounds.extend(gate_ground(summary.gate.as_ref()));
    grounds.extend(summary.comparison.as_ref().map(comparison_ground));
    grounds.extend(
        summary
            .attack_comparison
            .as_ref()
            .map(attack_comparison_ground),
    );
    decision_of(grounds, max_infra_error_rate)
}

/// `compare A_DIR B_DIR`: the comparison's decision, which stands only when both runs can be
/// trusted (each judged by its own limit); the first run's limit is the one recorded.
pub fn decide_comparison(
    runs: &[(&Summary, f64)],
    comparison: &toolscore_summary::Comparison,
) -> Decision {
    let mut grounds: Vec<Ground> = Vec::new();
    for ((summary, limit), arm) in runs.iter().zip([&comparison.a, &comparison.b]) {
        for mut ground in run_grounds(summary, *limit) {
            if let Part::Infrastructure { run_id, .. } = &mut ground.part {
                // The run as the comparison names it: its id, and its folder when the two
                // runs share an id.
                *run_id = Some(match &arm.folder {
                    Some(folder) => format!("{} ({folder})", summary.run.run_id),
                    None => summary.run.run_id.clone(),
                });
            }
            grounds.push(ground);
        }
    }
    grounds.push(comparison_ground(comparison));
    let limit = runs
        .first()
        .map_or(Decision::DEFAULT_MAX_INFRA_ERROR_RATE, |(_, l)| *l);
    decision_of(grounds, limit)
}

/// The verdict is the worst of the grounds', and the grounds are listed in one order:
/// whatever stops the run being judged first, then gates, comparison, infrastructure, budget.
fn decision_of(mut grounds: Vec<Ground>, max_infra_error_rate: f64) -> Decision {
    grounds.sort_by_key(|g| match g.part {
        Part::Interrupted { .. } => 0,
        Part::Unaccounted { .. } => 1,
        Part::ProvidersStopped { .. } => 2,
        Part::Gates { .. } => 3,
        Part::Comparison { .. } | Part::AttackComparison { .. } => 4,
        Part::Infrastructure { .. } => 5,
        Part::Budget { .. } => 6,
    });
    let verdict = grounds
        .iter()
        .map(|g| g.verdict)
        .max()
        .unwrap_or(RunVerdict::Pass);
    Decision {
        verdict,
        exit_code: verdict.exit_code() as u8,
        max_infra_error_rate,
        grounds,
    }
}

/// What the run itself says, whatever was asked of it: interrupted, trials unaccounted,
/// providers stopped, infrastructure errors against the limit, a budget stop.
fn run_grounds(summary: &Summary, max_infra_error_rate: f64) -> Vec<Ground> {
    let mut grounds = Vec::new();
    if summary.interrupted {
        grounds.push(Ground {
            verdict: RunVerdict::Interrupted,
            part: Part::Interrupted {
                completed: summary.completed_trials,
                planned: summary.planned_trials,
            },
        });
    }
    let accounted = summary.completed_trials + summary.skipped_trials;
    if !summary.interrupted && accounted < summary.planned_trials {
        grounds.push(Ground {
            verdict: RunVerdict::NotJudged,
            part: Part::Unaccounted {
                missing: summary.planned_trials - accounted,
                planned: summary.planned_trials,
            },
        });
    }
    let stopped = stopped_providers(summary);
    if !stopped.is_empty() {
        grounds.push(Ground {
            verdict: RunVerdict::NotJudged,
            part: Part::ProvidersStopped { providers: stopped },
        });
    }
    let errors = infrastructure_errors(summary);
    // A trial the budget stopped between steps is neither judged nor an error: the rate is of
    // the trials the providers were left to finish.
    let trials = summary
        .completed_trials
        .saturating_sub(summary.cost.total.budget_stopped_trials);
    let untrusted = trials == 0 || errors as f64 / trials as f64 > max_infra_error_rate;
    grounds.push(Ground {
        verdict: if untrusted && !summary.interrupted {
            RunVerdict::NotJudged
        } else {
            RunVerdict::Pass
        },
        part: Part::Infrastructure {
            errors,
            trials,
            limit: max_infra_error_rate,
            run_id: None,
        },
    });
    if let Some(budget) = summary
        .budget
        .as_ref()
        .filter(|b| b.cut_short || b.passed_by().is_some())
    {
        grounds.push(Ground {
            verdict: RunVerdict::Pass,
            part: Part::Budget {
                not_run: budget.not_run,
                stopped: budget.stopped,
                cap_usd: budget.max_usd,
                spent_usd: budget.spent_usd,
            },
        });
    }
    grounds
}

/// The gates' combined verdict. A sequential case gate that failed under `--fail-below P1`
/// found its cases below P1, not below the bar: when every failed gate is such a gate, the
/// gates say `BELOW P1` (the run still exits 1, as the user asked).
fn gate_ground(gate: Option<&toolscore_summary::GateReport>) -> Option<Ground> {
    let gate = gate?;
    let count = |v: Verdict| gate.gates.iter().filter(|g| g.verdict == v).count();
    let below = gate.below();
    Some(Ground {
        verdict: gate.verdict.into(),
        part: Part::Gates {
            gate_verdict: gate.verdict,
            gates: gate.gates.len(),
            passed: count(Verdict::Pass),
            failed: gate.gates.iter().filter(|g| g.verdict.failed()).count(),
            inconclusive: count(Verdict::Inconclusive),
            below,
        },
    })
}

/// The comparison's overall verdict: decided (whichever way) answers the question asked.
fn comparison_ground(c: &toolscore_summary::Comparison) -> Ground {
    let overall = c.overall();
    Ground {
        verdict: if overall.decided() {
            RunVerdict::Pass
        } else {
            RunVerdict::Inconclusive
        },
        part: Part::Comparison {
            comparison_verdict: overall.verdict,
            b: c.b.label(&c.axis),
            min_effect: c.min_effect,
            reason: overall.reason,
        },
    }
}

/// The attacked arms' comparison: decided on attack success (whichever way) answers the
/// question asked; utility under attack is told beside it.
fn attack_comparison_ground(c: &toolscore_summary::AttackComparison) -> Ground {
    let decided = !matches!(
        c.attack_success.judged(),
        toolscore_summary::ComparisonVerdict::Inconclusive
    );
    Ground {
        verdict: if decided {
            RunVerdict::Pass
        } else {
            RunVerdict::Inconclusive
        },
        part: Part::AttackComparison {
            attack_success: c.attack_success.judged(),
            utility_under_attack: c.utility_under_attack.judged(),
            finding: c.describe_attack_success(),
        },
    }
}

/// The exit code of a decision (`RunVerdict::exit_code`).
pub fn exit_code(decision: &Decision) -> ExitCode {
    decision.verdict.exit_code()
}

/// Dataset, scenario and attacked trials that ended in an infrastructure error: a run whose
/// scenarios all failed cannot be trusted because its datasets went well.
fn infrastructure_errors(summary: &Summary) -> u64 {
    let scenarios: u64 = summary
        .scenarios
        .iter()
        .flat_map(|a| &a.scenarios)
        .flat_map(|s| s.errors.values())
        .sum();
    let attacked: u64 = summary.security.iter().map(|a| a.suite.errors).sum();
    summary.arms.iter().map(|a| a.infra.errors).sum::<u64>() + scenarios + attacked
}

/// The arms with an auth or quota error among their trials: the runner stops such an arm at
/// its first one (`provider::stop`), so its figures cover only part of its plan.
fn stopped_providers(summary: &Summary) -> Vec<StoppedProvider> {
    let stopping = [ErrorClass::Auth, ErrorClass::QuotaExceeded];
    let dataset_arms = summary.arms.iter().map(|a| (&a.arm, &a.infra.by_class));
    let scenario_arms = summary
        .scenarios
        .iter()
        .flat_map(|a| a.scenarios.iter().map(move |s| (&a.arm, &s.errors)));
    let attacked_arms = summary
        .security
        .iter()
        .flat_map(|a| a.units.iter().map(move |u| (&a.arm, &u.errors)));
    let mut stopped: Vec<StoppedProvider> = Vec::new();
    for (arm, classes) in dataset_arms.chain(scenario_arms).chain(attacked_arms) {
        for class in stopping {
            let stop = StoppedProvider {
                provider: arm.provider.clone(),
                variant: arm.variant.clone(),
                class: class.as_str().to_owned(),
            };
            if classes.get(class.as_str()).is_some_and(|&n| n > 0)
                && !stopped
                    .iter()
                    .any(|s| (&s.provider, &s.variant) == (&stop.provider, &stop.variant))
            {
                stopped.push(stop);
            }
        }
    }
    stopped
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolscore_summary::{GateReport, RunInfo};

    fn summary(planned: u64, completed: u64, skipped: u64) -> Summary {
        Summary {
            run: RunInfo::for_test(1),
            planned_trials: planned,
            completed_trials: completed,
            skipped_trials: skipped,
            interrupted: false,
            confidence: 0.95,
            precision: 0.05,
            arms: Vec::new(),
            warnings: Vec::new(),
            gate: None,
            comparison: None,
            scenarios: Vec::new(),
            security: Vec::new(),
            attack_comparison: None,
            scenario_drift: Vec::new(),
            provider_diffs: Vec::new(),
            cost: Default::default(),
            budget: None,
            decision: None,
        }
    }

    #[test]
    fn a_run_that_lost_trials_is_never_judged() {
        assert_eq!(decide(&summary(12, 12, 0), 0.1).verdict, RunVerdict::Pass);
        assert_eq!(decide(&summary(12, 4, 8), 0.1).verdict, RunVerdict::Pass);
        let d = decide(&summary(12, 1, 0), 0.1);
        assert_eq!(
            (d.verdict, exit_code(&d)),
            (RunVerdict::NotJudged, ExitCode::InfraErrors)
        );
        assert_eq!(
            d.not_judged_because().as_deref(),
            Some(
                "11 of 12 planned trials were neither run nor skipped; the scores cannot be trusted"
            )
        );
    }

    #[test]
    fn the_verdict_is_the_worst_ground_and_the_exit_code_its_own() {
        let mut s = summary(10, 10, 0);
        s.gate = Some(GateReport {
            verdict: Verdict::Pass,
            confidence: 0.95,
            gates: Vec::new(),
        });
        let d = decide(&s, 0.1);
        assert_eq!((d.verdict, d.exit_code), (RunVerdict::Pass, 0));
        s.gate.as_mut().unwrap().verdict = Verdict::Inconclusive;
        assert_eq!(decide(&s, 0.1).exit_code, 3);
        s.gate.as_mut().unwrap().verdict = Verdict::Fail;
        assert_eq!(decide(&s, 0.1).exit_code, 1);
        // Nothing completed: not judged, whatever the gate said.
        s.completed_trials = 0;
        s.skipped_trials = 10;
        let d = decide(&s, 0.1);
        assert_eq!((d.verdict, d.exit_code), (RunVerdict::NotJudged, 4));
        s.interrupted = true;
        assert_eq!(decide(&s, 0.1).exit_code, 130);
        for v in [
            RunVerdict::Pass,
            RunVerdict::Inconclusive,
            RunVerdict::Below,
            RunVerdict::Fail,
            RunVerdict::NotJudged,
            RunVerdict::Interrupted,
        ] {
            let d = decision_of(
                vec![Ground {
                    verdict: v,
                    part: Part::Interrupted {
                        completed: 0,
                        planned: 0,
                    },
                }],
                0.1,
            );
            assert_eq!(exit_code(&d) as u8, d.exit_code, "{v:?}");
        }
    }
}
