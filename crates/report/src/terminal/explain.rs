//! `toolscore explain` for a terminal: the case as the model read it, then what its trials did,
//! grouped into behaviours with one example each, and how they moved between two arms.

use std::io::{self, Write};

use super::format_rate;
use toolscore_core::Message;
use toolscore_summary::behaviour::{
    ArmExplanation, Behaviour, BehaviourDiff, CaseAsShown, CaseBehaviours, Example, ExplainedDiff,
    Explanation, MAX_BEHAVIOURS, NotListed,
};

/// Bytes of a variant the terminal prints on its line (the JSON keeps
/// `behaviour::EXAMPLE_BYTES`); the example below it is the
/// model's answer, cut only there.
const VARIANT_LINE_BYTES: usize = 160;

/// Renders an explanation: each arm's case and behaviours, then the diff when there is one.
pub fn render_explanation(e: &Explanation, w: &mut dyn Write) -> io::Result<()> {
    for (i, arm) in e.arms.iter().enumerate() {
        if i > 0 {
            writeln!(w)?;
        }
        write_arm(arm, w)?;
    }
    if let Some(d) = &e.diff {
        writeln!(w)?;
        write_diff(d, w)?;
    }
    Ok(())
}

fn write_arm(arm: &ArmExplanation, w: &mut dyn Write) -> io::Result<()> {
    let b = &arm.behaviours;
    writeln!(
        w,
        "explain {} · dataset {} · arm {}/{} (model {}) · run {}",
        b.case_id, b.dataset, b.arm.provider, b.arm.variant, b.arm.model, arm.run_id
    )?;
    let errors: u64 = b.errors.iter().map(|e| e.trials).sum();
    writeln!(
        w,
        "expected {} · pass {} · {errors} infrastructure errors (not scored)",
        b.expected,
        format_rate(&b.pass)
    )?;
    if let Some(a) = &b.attack {
        writeln!(
            w,
            "attack {}{} · its goal happened in {} · the payload reached the model in {}/{} scored trials",
            a.id,
            a.family
                .as_deref()
                .map_or(String::new(), |f| format!(" ({f})")),
            format_rate(&a.succeeded),
            a.delivered,
            b.scored
        )?;
        if let Some(goal) = &a.goal {
            writeln!(w, "  its goal: {goal}")?;
        }
    }
    writeln!(w)?;
    match (&arm.shown, &arm.not_shown) {
        (Some(shown), _) => write_shown(shown, b, w)?,
        (None, Some(why)) => writeln!(w, "the case as shown: not available: {why}")?,
        (None, None) => {}
    }
    writeln!(w)?;
    if let Some(why) = &arm.raw_not_shown {
        writeln!(w, "raw responses: not available: {why}")?;
    }
    write_behaviours(b, w)
}

/// The conversation, then the catalog: every tool in the order the model read it, the
/// expected and chosen ones marked and their descriptions in full.
fn write_shown(shown: &CaseAsShown, b: &CaseBehaviours, w: &mut dyn Write) -> io::Result<()> {
    writeln!(
        w,
        "as the model read it ({}, variant {}):",
        shown.source, b.arm.variant
    )?;
    for note in &shown.changed_since {
        writeln!(w, "  NOTE: {note}")?;
    }
    for m in &shown.messages {
        write_message(m, w)?;
    }
    let expected: Vec<&str> = b
        .expected
        .split([' ', '+', '→'])
        .filter(|s| !s.is_empty())
        .collect();
    writeln!(
        w,
        "  catalog: {} tools in the order the model read them (▸ expected · n× called in n scored trials):",
        shown.tools.len()
    )?;
    for t in &shown.tools {
        let mark = if expected.contains(&t.name.as_str()) {
            "▸"
        } else {
            " "
        };
        let called = b
            .tools_called
            .get(&t.name)
            .map_or(String::new(), |n| format!("  {n}× called"));
        writeln!(w, "    {mark} {}{called}", t.name)?;
    }
    writeln!(w, "  descriptions of the tools expected or called:")?;
    for t in shown
        .tools
        .iter()
        .filter(|t| expected.contains(&t.name.as_str()) || b.tools_called.contains_key(&t.name))
    {
        writeln!(w, "    {}: {}", t.name, one_paragraph(&t.description))?;
    }
    Ok(())
}

fn write_message(m: &Message, w: &mut dyn Write) -> io::Result<()> {
    match m {
        Message::System { content } => writeln!(w, "  system     {}", one_paragraph(content)),
        Message::User { content } => writeln!(w, "  user       {}", one_paragraph(content)),
        Message::Assistant {
            content,
            tool_calls,
        } => {
            if let Some(text) = content {
                writeln!(w, "  assistant  {}", one_paragraph(text))?;
            }
            for c in tool_calls {
                writeln!(w, "  assistant  calls {} {}", c.name, c.arguments)?;
            }
            Ok(())
        }
        Message::Tool {
            call_id,
            content,
            is_error,
        } => {
            let error = if *is_error { " (error)" } else { "" };
            writeln!(
                w,
                "  tool       {call_id}{error}: {}",
                one_paragraph(content)
            )
        }
    }
}

/// Text on one line: its line breaks shown as `⏎`, so each message is one line of the report.
fn one_paragraph(text: &str) -> String {
    text.trim().replace("\r\n", "\n").replace('\n', " ⏎ ")
}

fn write_behaviours(b: &CaseBehaviours, w: &mut dyn Write) -> io::Result<()> {
    writeln!(
        w,
        "behaviours of the {} scored trials ({:.0}% Wilson intervals), most frequent first:",
        b.scored,
        b.confidence * 100.0
    )?;
    if b.behaviours.is_empty() {
        writeln!(w, "  (no scored trial)")?;
    }
    for (i, g) in b.behaviours.iter().enumerate() {
        write_behaviour(i + 1, g, w)?;
    }
    write_not_listed(b.not_listed.as_ref(), w)?;
    for e in &b.errors {
        let message = e
            .message
            .as_deref()
            .map_or(String::new(), |m| format!(": {m}"));
        writeln!(
            w,
            "  infrastructure error {} in {} trials (not scored; first, trial {}{message})",
            e.class, e.trials, e.first_trial
        )?;
    }
    Ok(())
}

fn write_not_listed(n: Option<&NotListed>, w: &mut dyn Write) -> io::Result<()> {
    if let Some(n) = n {
        writeln!(
            w,
            "  … {} more behaviours in {} trials, not listed (at most {MAX_BEHAVIOURS} are)",
            n.behaviours, n.trials
        )?;
    }
    Ok(())
}

fn write_behaviour(i: usize, g: &Behaviour, w: &mut dyn Write) -> io::Result<()> {
    let verdict = if g.passed { "pass" } else { "fail" };
    writeln!(
        w,
        "  {i}. {}  {verdict}  {}{}",
        g.calls,
        format_rate(&g.share),
        g.attack_succeeded.map_or(String::new(), |k| format!(
            " · attack goal met in {k} of {}",
            g.share.x
        ))
    )?;
    for v in &g.variants {
        let what = if v.what.is_empty() {
            "(empty)".to_owned()
        } else {
            toolscore_core::cut_text(&v.what, VARIANT_LINE_BYTES)
        };
        writeln!(w, "       {:>4}× {what}", v.trials)?;
        if let Some(f) = &v.failure {
            writeln!(w, "             {f}")?;
        }
    }
    if g.variants_not_listed > 0 {
        writeln!(w, "             … {} more variants", g.variants_not_listed)?;
    }
    write_example(&g.example, w)
}

fn write_example(e: &Example, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w, "       example, trial {}:", e.trial_index)?;
    for (step, turn) in e.turns.iter().enumerate() {
        let prefix = if e.turns.len() > 1 {
            format!("step {step} ")
        } else {
            String::new()
        };
        if let Some(text) = &turn.text {
            writeln!(w, "         {prefix}text  {}", one_paragraph(text))?;
        }
        for c in &turn.calls {
            let note = if c.unparsed { " (not JSON)" } else { "" };
            writeln!(w, "         {prefix}call  {} {}{note}", c.tool, c.arguments)?;
        }
        for r in e.results.iter().filter(|r| r.step as usize == step) {
            let error = match (r.is_error, r.injected) {
                (true, _) => ", error",
                (false, true) => ", the attack's payload planted here",
                (false, false) => "",
            };
            writeln!(
                w,
                "         {prefix}result of {} ({}{error}): {}",
                r.tool,
                serde_plain(&r.kind),
                one_paragraph(&r.content)
            )?;
            if let Some(state) = &r.state {
                writeln!(w, "         {prefix}state after it  {state}")?;
            }
        }
    }
    if let Some(state) = &e.final_state {
        writeln!(w, "         final state  {state}")?;
    }
    for (step, body) in e.raw.iter().enumerate() {
        writeln!(
            w,
            "         raw response, step {step}: {}",
            one_paragraph(body)
        )?;
    }
    Ok(())
}

/// A unit enum variant as its snake_case serde name (`scripted`, `unknown_tool`).
fn serde_plain<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn write_diff(d: &ExplainedDiff, w: &mut dyn Write) -> io::Result<()> {
    writeln!(
        w,
        "how the behaviours moved · A = {}/{} (run {}) · B = {}/{} (run {})",
        d.a.arm.provider,
        d.a.arm.variant,
        d.a.run_id,
        d.b.arm.provider,
        d.b.arm.variant,
        d.b.run_id
    )?;
    match &d.case {
        Some(c) => writeln!(
            w,
            "  {}: A {}/{} · B {}/{} · B − A {:+.3} [{:+.3}, {:+.3}] (Newcombe, as `compare` reports the case)",
            d.metric.label(),
            c.a_x,
            c.a_n,
            c.b_x,
            c.b_n,
            c.difference,
            c.lo,
            c.hi
        )?,
        None => writeln!(
            w,
            "  {}: an arm scored no trial of this case",
            d.metric.label()
        )?,
    }
    write_behaviour_moves(&d.behaviours, w)
}

fn write_behaviour_moves(d: &BehaviourDiff, w: &mut dyn Write) -> io::Result<()> {
    writeln!(
        w,
        "  behaviours, largest move first ({:.0}% Newcombe interval of B − A):",
        d.confidence * 100.0
    )?;
    writeln!(w, "    {:<40} {:>7} {:>7}  B − A", "", "A", "B")?;
    for c in &d.changes {
        let verdict = if c.passed { "pass" } else { "fail" };
        let interval = c.interval.map_or("n/a".to_owned(), |iv| {
            format!("[{:+.3}, {:+.3}]", iv.lo, iv.hi)
        });
        writeln!(
            w,
            "    {:<40} {:>7} {:>7}  {:+.3} {interval}  {}",
            format!("{} ({verdict})", c.calls),
            format!("{}/{}", c.a.x, c.a.n),
            format!("{}/{}", c.b.x, c.b.n),
            c.difference,
            c.change.as_str()
        )?;
    }
    write_not_listed(d.not_listed.as_ref(), w)
}
