//! `toolscore tune`'s report: the terminal's, `tune.md`'s and the page's (`render_tune_html`).

use std::io::{self, Write};

use toolscore_summary::tune::TuneReport;

/// The terminal report: the headline first, then what was seen, tried and measured.
pub fn render_tune(t: &TuneReport, w: &mut dyn Write) -> io::Result<()> {
    writeln!(
        w,
        "tune {} with {}/{}",
        t.dataset, t.arm.provider, t.arm.model
    )?;
    writeln!(w, "  {}", t.split_line())?;
    if let Some(plan) = &t.confirmation_plan {
        writeln!(w, "  note: {}", plan.line())?;
    }
    writeln!(w, "  {}", t.baseline_line())?;
    for line in t.trajectory_lines() {
        writeln!(w, "  {line}")?;
    }
    writeln!(w)?;
    writeln!(w, "{}", t.headline())?;
    for line in t.training_lines() {
        writeln!(w, "  {line}")?;
    }
    writeln!(w)?;
    writeln!(w, "candidates ({}):", t.candidates.len())?;
    for r in &t.candidates {
        writeln!(
            w,
            "  {} [{}] {}: B − A in [{:+.3}, {:+.3}] after {} rounds",
            r.candidate.id,
            r.variant,
            r.status.words(),
            r.race.lower,
            r.race.upper,
            r.race.rounds
        )?;
        for e in &r.candidate.evidence {
            writeln!(w, "      evidence: {e}")?;
        }
        for e in &r.candidate.edits {
            writeln!(w, "      {}:", e.location())?;
            writeln!(w, "        - {}", e.before)?;
            writeln!(w, "        + {}", e.after)?;
        }
    }
    for why in &t.invalid {
        writeln!(w, "  not raced: {why}")?;
    }
    if !t.suggestions.is_empty() {
        writeln!(w)?;
        writeln!(w, "for the author (not raced):")?;
        for s in &t.suggestions {
            writeln!(w, "  {}", s.line())?;
        }
    }
    writeln!(w)?;
    writeln!(w, "{}", t.spent_line())?;
    for line in t.written_lines() {
        writeln!(w, "{line}")?;
    }
    Ok(())
}

/// The Markdown report (`TUNE_DIR/report.md`): the same content, each edit as a diff.
pub fn render_tune_markdown(t: &TuneReport, w: &mut dyn Write) -> io::Result<()> {
    writeln!(
        w,
        "# tune: {} with {}/{}",
        t.dataset, t.arm.provider, t.arm.model
    )?;
    writeln!(w)?;
    writeln!(w, "**{}**", t.headline())?;
    writeln!(w)?;
    for line in t.training_lines().into_iter().chain(t.facts()) {
        writeln!(w, "- {line}")?;
    }
    let trajectories = t.trajectory_lines();
    if !trajectories.is_empty() {
        writeln!(w)?;
        writeln!(w, "## Scenario signals")?;
        writeln!(w)?;
        for line in trajectories {
            writeln!(w, "- {line}")?;
        }
    }
    writeln!(w)?;
    writeln!(w, "## Candidates")?;
    for r in &t.candidates {
        writeln!(w)?;
        writeln!(w, "### `{}` ({})", r.candidate.id, r.status.words())?;
        writeln!(w)?;
        writeln!(
            w,
            "Training race (variant `{}`): {}",
            r.variant,
            r.race.line()
        )?;
        writeln!(w)?;
        for e in &r.candidate.evidence {
            writeln!(w, "- evidence: {e}")?;
        }
        writeln!(w)?;
        writeln!(w, "```diff")?;
        for e in &r.candidate.edits {
            writeln!(w, "@@ {} @@", e.location())?;
            writeln!(w, "-{}", e.before)?;
            writeln!(w, "+{}", e.after)?;
        }
        writeln!(w, "```")?;
    }
    if !t.suggestions.is_empty() {
        writeln!(w)?;
        writeln!(w, "## For the author (not raced)")?;
        writeln!(w)?;
        for s in &t.suggestions {
            writeln!(w, "- `{}` ({}): {}", s.tool, s.rule, s.text)?;
        }
    }
    Ok(())
}
