//! The tune report as one self-contained page (`TUNE_DIR/report.html`): the held-out verdict
//! first, then each candidate with its race interval, its evidence and its edits as a diff.
//! Every string is escaped by the template; every figure comes from the [`TuneReport`], and
//! this file only scales intervals on [−1, 1] to pixels.

use std::io::{self, Write};

use serde::Serialize;

use super::super::{ComparisonVerdict, SequentialComparison};
use toolscore_summary::tune::{CandidateStatus, Suggestion, TuneOutcome, TuneReport};

const TEMPLATE: &str = include_str!("../templates/tune.html");

/// Width of an interval's drawing, and its margin on each side.
const WIDTH: f64 = 320.0;
const MARGIN: f64 = 12.0;

#[derive(Serialize)]
struct Page {
    title: String,
    facts: Vec<String>,
    headline: String,
    outcome_class: &'static str,
    confirmation: Option<Interval>,
    training: Vec<String>,
    candidates: Vec<CandidateView>,
    trajectories: Vec<String>,
    invalid: Vec<String>,
    suggestions: Vec<String>,
}

#[derive(Serialize)]
struct CandidateView {
    id: String,
    status: &'static str,
    status_class: &'static str,
    race: String,
    interval: Interval,
    evidence: Vec<String>,
    edits: Vec<EditView>,
}

#[derive(Serialize)]
struct EditView {
    location: String,
    before: String,
    after: String,
}

/// One interval of B − A on [−1, 1], with the ±min-effect band, in pixels.
#[derive(Serialize)]
struct Interval {
    width: f64,
    x_min: f64,
    x_max: f64,
    zero_x: f64,
    band_x0: f64,
    band_x1: f64,
    lo_x: f64,
    hi_x: f64,
    class: &'static str,
    title: String,
}

fn x(v: f64) -> f64 {
    MARGIN + (v.clamp(-1.0, 1.0) + 1.0) / 2.0 * (WIDTH - 2.0 * MARGIN)
}

fn interval(c: &SequentialComparison, min_effect: f64) -> Interval {
    Interval {
        width: WIDTH,
        x_min: x(-1.0),
        x_max: x(1.0),
        zero_x: x(0.0),
        band_x0: x(-min_effect),
        band_x1: x(min_effect),
        lo_x: x(c.lower),
        hi_x: x(c.upper),
        class: match c.verdict {
            ComparisonVerdict::Better => "better",
            ComparisonVerdict::Worse => "worse",
            _ => "none",
        },
        title: c.line(),
    }
}

fn page(t: &TuneReport) -> Page {
    Page {
        title: format!("{} with {}/{}", t.dataset, t.arm.provider, t.arm.model),
        facts: t.facts(),
        headline: t.headline(),
        outcome_class: match t.outcome {
            TuneOutcome::Confirmed => "pass",
            TuneOutcome::Worse => "fail",
            TuneOutcome::Undecided => "inconclusive",
            _ => "none",
        },
        confirmation: t
            .confirmation
            .as_ref()
            .map(|c| interval(&c.held_out, t.min_effect)),
        training: t.training_lines(),
        candidates: t
            .candidates
            .iter()
            .map(|r| CandidateView {
                id: r.candidate.id.clone(),
                status: r.status.words(),
                status_class: match r.status {
                    CandidateStatus::Better => "better",
                    CandidateStatus::Worse => "worse",
                    CandidateStatus::NotBetter => "not_better",
                    CandidateStatus::Undecided => "undecided",
                },
                race: format!("variant {}: {}", r.variant, r.race.line()),
                interval: interval(&r.race, t.min_effect),
                evidence: r.candidate.evidence.clone(),
                edits: r
                    .candidate
                    .edits
                    .iter()
                    .map(|e| EditView {
                        location: e.location(),
                        before: e.before.clone(),
                        after: e.after.clone(),
                    })
                    .collect(),
            })
            .collect(),
        trajectories: t.trajectory_lines(),
        invalid: t.invalid.clone(),
        suggestions: t.suggestions.iter().map(Suggestion::line).collect(),
    }
}

/// Writes the page.
pub fn render_tune_html(t: &TuneReport, w: &mut dyn Write) -> io::Result<()> {
    let html = super::render_page(("tune.html", TEMPLATE), &page(t))?;
    w.write_all(html.as_bytes())
}
