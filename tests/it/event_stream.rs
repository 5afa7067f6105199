//! The runner's event stream, driven through the library against the fake provider: observers
//! see `Started`, one `Trial` per finished trial and `Finished`; a `Stop` answer stops
//! scheduling exactly the scope it names, and the totals account for every planned trial. The
//! caller's interrupt stops the run, and the runner says so as a notice, never on stderr.

use crate::support;

use std::collections::HashMap;

use support::{FakeResponse, FakeServer, tool_call_body};
use toolscore_core::Error;
use toolscore_core::{Control, Notice, Observer, RunEvent, RunTotals, StopScope};
use toolscore_provider::OPENAI_COMPAT_KIND;
use toolscore_provider::{Cancel, ProviderSettings};
use toolscore_runner::{Arm, RunPlan, execute};

const TOOLS: &str = r#"{"tools": [{"name": "ping", "description": "Ping.", "inputSchema": {"type": "object", "properties": {}}}]}"#;

fn cases(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                r#"{{"id": "c{i}", "messages": [{{"role": "user", "content": "ping {i}"}}], "expect": {{"tool": "ping"}}}}"#
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn plan(server: &FakeServer, dir: &std::path::Path, arms: &[&str], trials: u32) -> RunPlan {
    std::fs::create_dir_all(dir.join("data")).expect("mkdir");
    std::fs::write(dir.join("data/tools.json"), TOOLS).expect("tools");
    std::fs::write(dir.join("data/cases.jsonl"), cases(3)).expect("cases");
    let dataset = toolscore_suite::load_dataset(&dir.join("data")).expect("dataset");
    RunPlan {
        run_id: "events".into(),
        trials,
        concurrency: 2,
        arms: arms
            .iter()
            .map(|name| Arm {
                settings: ProviderSettings::new(
                    OPENAI_COMPAT_KIND,
                    *name,
                    server.base_url.clone(),
                    "m",
                ),
                variant: "base".into(),
                replay: None,
                price: None,
            })
            .collect(),
        datasets: vec![dataset],
        scenarios: Vec::new(),
        done: Default::default(),
        shard: None,
        batch: None,
        max_cost: None,
    }
}

/// Counts events per (arm, case) and stops a scope once it has seen `after` trials of the
/// case it watches.
struct Stopper {
    scope: StopScope,
    watch: (usize, usize),
    after: u32,
    started: u32,
    finished: Option<RunTotals>,
    seen: HashMap<(usize, usize), u32>,
    /// Cancelled once `after` trials of the watched case were seen, instead of answering a stop.
    interrupt: Option<Cancel>,
    notices: Vec<Notice>,
}

impl Observer for Stopper {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<Control, Error> {
        match event {
            RunEvent::Started { .. } => self.started += 1,
            RunEvent::Trial { key, raw, .. } => {
                assert!(raw.is_empty(), "no observer asked for raw bodies");
                let n = self.seen.entry((key.arm, key.case)).or_default();
                *n += 1;
                if (key.arm, key.case) == self.watch && *n == self.after {
                    match &self.interrupt {
                        Some(token) => token.cancel(),
                        None => return Ok(Control::Stop(self.scope)),
                    }
                }
            }
            RunEvent::Notice(notice) => self.notices.push((*notice).clone()),
            RunEvent::Finished(t) => self.finished = Some((*t).clone()),
        }
        Ok(Control::Continue)
    }
}

fn run(plan: RunPlan, observer: &mut Stopper) -> RunTotals {
    let interrupt = observer.interrupt.clone().unwrap_or_default();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(execute(plan, observer, &interrupt))
        .expect("run")
}

fn stopper(scope: StopScope, watch: (usize, usize), after: u32) -> Stopper {
    Stopper {
        scope,
        watch,
        after,
        started: 0,
        finished: None,
        seen: HashMap::new(),
        interrupt: None,
        notices: Vec::new(),
    }
}

fn server() -> FakeServer {
    let body = tool_call_body(&[("ping", "{}")]);
    FakeServer::start_in_background(move |_| FakeResponse::ok(body.clone()))
}

#[test]
fn every_planned_trial_of_two_arms_is_reported_once() {
    let server = server();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut obs = stopper(StopScope::Run, (9, 9), 1);
    let totals = run(plan(&server, dir.path(), &["a", "b"], 5), &mut obs);
    assert_eq!(obs.started, 1);
    assert_eq!(totals.planned_trials, 2 * 3 * 5);
    assert_eq!(totals.completed_trials, 30);
    assert_eq!(totals.skipped_trials, 0);
    assert_eq!(obs.finished.as_ref(), Some(&totals));
    assert_eq!(obs.seen.len(), 6);
    assert!(obs.seen.values().all(|&n| n == 5), "{:?}", obs.seen);
}

#[test]
fn stopping_a_case_skips_only_that_case_of_that_arm() {
    let server = server();
    let dir = tempfile::tempdir().expect("tempdir");
    let trials = 40;
    let mut obs = stopper(StopScope::Case { arm: 1, case: 0 }, (1, 0), 2);
    let totals = run(plan(&server, dir.path(), &["a", "b"], trials), &mut obs);
    // Trials already in flight when the stop landed still finish and are reported.
    let stopped = obs.seen[&(1, 0)];
    assert!((2..trials / 2).contains(&stopped), "{stopped}");
    for (key, n) in &obs.seen {
        if *key != (1, 0) {
            assert_eq!(*n, trials, "{key:?}");
        }
    }
    assert_eq!(
        totals.completed_trials + totals.skipped_trials,
        totals.planned_trials
    );
    assert_eq!(totals.skipped_trials, u64::from(trials - stopped));
    assert!(!totals.interrupted);
    assert_eq!(server.requests_seen(), totals.completed_trials);
}

#[test]
fn stopping_an_arm_or_the_run_skips_the_rest_of_it() {
    let server = server();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut obs = stopper(StopScope::Arm(0), (0, 2), 3);
    let totals = run(plan(&server, dir.path(), &["a", "b"], 40), &mut obs);
    let arm0: u32 = (0..3)
        .map(|c| obs.seen.get(&(0, c)).copied().unwrap_or(0))
        .sum();
    let arm1: u32 = (0..3)
        .map(|c| obs.seen.get(&(1, c)).copied().unwrap_or(0))
        .sum();
    assert_eq!(arm1, 120, "the other arm runs to the end");
    assert!(arm0 < 60, "{arm0}");
    assert_eq!(totals.completed_trials + totals.skipped_trials, 240);

    let dir = tempfile::tempdir().expect("tempdir");
    let mut obs = stopper(StopScope::Run, (0, 0), 2);
    let totals = run(plan(&server, dir.path(), &["a"], 40), &mut obs);
    assert!(totals.completed_trials < 30, "{totals:?}");
    assert_eq!(totals.completed_trials + totals.skipped_trials, 120);
    assert!(
        !totals.interrupted,
        "an observer's stop is not an interruption"
    );
    assert!(obs.finished.is_some());
}

#[test]
fn the_callers_interrupt_stops_the_run_and_is_told_as_one_notice() {
    let server = server();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut obs = stopper(StopScope::Run, (0, 0), 2);
    obs.interrupt = Some(Cancel::new());
    let totals = run(plan(&server, dir.path(), &["a"], 40), &mut obs);
    assert!(totals.interrupted, "{totals:?}");
    assert!(totals.completed_trials < 120, "{totals:?}");
    assert_eq!(obs.notices, [Notice::Interrupted]);
    assert_eq!(obs.finished.as_ref(), Some(&totals));

    // Without an interrupt the run tells nothing beside its trials.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut obs = stopper(StopScope::Run, (9, 9), 1);
    run(plan(&server, dir.path(), &["a"], 2), &mut obs);
    assert!(obs.notices.is_empty(), "{:?}", obs.notices);
}
