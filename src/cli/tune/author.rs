//! `--author`: one request per implicated tool to the author model, each answer made a
//! candidate (or a line saying why not). Each request is paid from tune's budget as one trial
//! and, with --max-cost, reserved at its worst case before it is sent, as the runner reserves
//! a trial's.

use crate::cli::Error;
use toolscore_core::Message;
use toolscore_core::catalog::Catalog;
use toolscore_core::{RawResponse, RawStep};
use toolscore_provider::cassette::{CassetteRecorder, Replay};
use toolscore_provider::{Backend, Cancel, Exchange, ProviderError, StepKey};
use toolscore_runner::Arm;
use toolscore_suite::Dataset;
use toolscore_summary::tune::Authoring;
use toolscore_summary::tune::Candidate;
use toolscore_summary::tune::Diagnosis;
use toolscore_tune::Allowance;

/// The author's candidates, the tools it gave none for (and why), and what it cost.
pub(super) struct Authored {
    pub candidates: Vec<Candidate>,
    pub failed: Vec<String>,
    pub spend: Authoring,
}

/// The `dataset` of the author's entries in a tune's cassette (each under its tool's name).
const AUTHOR_ENTRIES: &str = "tune-author";

/// Asks `author` to rewrite each tool the diagnosis implicates (at most `max`), quoting the
/// training requests in `training` only: live, or served from a tune's recording when the
/// author arm replays one; with `recorder`, each exchange is written to the tune's cassette.
// Long: one request per tool, each paid, sent (or served), recorded and read in turn.
pub(super) fn ask(
    author: &Arm,
    diagnosis: &Diagnosis,
    (dataset, training): (&Dataset, &[String]),
    max: usize,
    allowance: &mut Allowance,
    mut recorder: Option<&mut CassetteRecorder>,
) -> Result<Authored, Error> {
    let settings = &author.settings;
    let client = toolscore_provider::http_client(1).map_err(Error::HttpClient)?;
    let provider = toolscore_provider::Provider::new(settings.clone(), client);
    let backend = match &author.replay {
        Some(cassette) => Backend::Replay(Replay::new(cassette.clone(), provider)),
        None => Backend::Live(provider),
    };
    let runtime = super::super::async_runtime(Some(1))?;
    // No tools: the author answers in text.
    let no_tools = Catalog::new(Vec::new(), "author".to_owned());
    let request_of = |id: &str| training_request(dataset, training, id);
    let label = format!("{}/{}", settings.name, settings.model);
    let bound = settings.kind.adapter().output_bound(settings).unwrap_or(0);
    let mut out = Authored {
        candidates: Vec::new(),
        failed: Vec::new(),
        spend: Authoring {
            provider: settings.name.clone(),
            model: settings.model.clone(),
            requests: 0,
            usd: author.price.as_ref().map(|_| 0.0),
        },
    };
    for name in toolscore_tune::author::tools_to_rewrite(diagnosis, &dataset.catalog, max) {
        let Some(tool) = dataset.catalog.get(&name) else {
            continue;
        };
        let messages =
            toolscore_tune::author::prompt(tool, diagnosis, &dataset.catalog, &request_of);
        let request = backend.prepare(&messages, &no_tools);
        let worst = author.price.as_ref().map_or(0.0, |p| {
            toolscore_runner::budget::worst_case_usd(&p.price, request.body.len(), bound)
        });
        if !allowance.afford(1, worst) {
            out.failed
                .push(format!("author:{name}: not asked: the budget is spent"));
            continue;
        }
        let key = StepKey {
            conversation: &request.request_hash,
            trial: 0,
            step: 0,
        };
        let (result, latency) = runtime.block_on(backend.step(&request, key, &Cancel::new()));
        if let Some(r) = recorder.as_deref_mut() {
            let key = toolscore_provider::cassette::EntryKey {
                request_hash: &request.request_hash,
                dataset: AUTHOR_ENTRIES,
                case_id: &name,
                trial_index: 0,
            };
            r.record_exchange(key, &raw_step(&result, latency))?;
        }
        let usd = match &result {
            Ok(ex) => author
                .price
                .as_ref()
                .and_then(|p| p.price.cost_of(&ex.turn.usage)),
            Err(_) => Some(0.0),
        };
        out.spend.requests += 1;
        out.spend.usd = out.spend.usd.zip(usd).map(|(a, b)| a + b);
        allowance.spend(1, usd);
        match result {
            Ok(ex) => {
                let text = ex.turn.text.unwrap_or_default();
                let weight = toolscore_tune::author::weight(diagnosis, &name);
                match toolscore_tune::author::candidate(&text, tool, &label, weight) {
                    Ok(c) => out.candidates.push(c),
                    Err(why) => out.failed.push(format!("author:{name}: {why}")),
                }
            }
            Err(e) => out
                .failed
                .push(format!("author:{name}: the request failed: {}", e.message)),
        }
    }
    Ok(out)
}

/// The exchange as a cassette records it.
fn raw_step(result: &Result<Exchange, ProviderError>, latency: std::time::Duration) -> RawStep {
    let (attempts, response) = match result {
        Ok(ex) => (ex.attempts, RawResponse::Body(ex.raw_body.clone())),
        Err(e) => (
            e.attempts,
            RawResponse::Error {
                class: e.class,
                status: e.status,
                message: e.message.clone(),
            },
        ),
    };
    RawStep {
        step: 0,
        // A request that failed before its first attempt is still one asked for.
        attempts: attempts.max(1),
        latency_ms: latency.as_secs_f64() * 1000.0,
        response,
    }
}

/// The last user message of training case `id`; `None` for a held-out case (or an unknown
/// one), so nothing tune proposes is shaped by a case that will confirm it.
pub(super) fn training_request(dataset: &Dataset, training: &[String], id: &str) -> Option<String> {
    if !training.iter().any(|t| t == id) {
        return None;
    }
    let case = dataset.cases.iter().find(|c| c.id == id)?;
    case.messages.iter().rev().find_map(|m| match m {
        Message::User { content } => Some(content.clone()),
        _ => None,
    })
}
