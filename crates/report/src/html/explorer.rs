//! The case explorer: for each case a chart or table shows, a section (hidden until its link
//! is followed, by CSS `:target`, since the page runs no script) with the case's conversation
//! as the arm's model read it, the catalog's tools with the expected and called ones marked
//! (each catalog printed once per arm, linked), and the behaviours of its trials with one
//! example each; and for a comparison, each case's behaviours in A against B. Every string
//! from a catalog, fixture or model is cut here and escaped by the template.

use std::collections::BTreeMap;

use serde::Serialize;

use super::charts::ForestRow;
use super::{Summary, cut, pct};
use crate::wording::format_rate;
use toolscore_core::ArmId;
use toolscore_core::Message;
use toolscore_summary::behaviour::{
    Behaviour, CaseBehaviours, ChangedBehaviour, Example, ExploredCase, Explorer, ShownCatalog,
};

/// Characters of a message, a description or an example shown in the explorer: a whole
/// ordinary prompt, but a hostile one cannot swell every case's section.
const SHOWN_CHARS: usize = 4_000;
/// Characters of an argument set or answer listed as a variant.
const VARIANT_CHARS: usize = 300;

/// Where each explored case's section is: (arm, dataset, case id) → its element id.
pub(super) type Anchors = BTreeMap<(ArmId, String, String), String>;

#[derive(Serialize)]
pub(super) struct ExplorerView {
    pub(super) arms: Vec<ArmExplorer>,
    pub(super) diffs: Vec<DiffView>,
}

#[derive(Serialize)]
pub(super) struct ArmExplorer {
    id: String,
    title: String,
    catalogs: Vec<CatalogView>,
    cases: Vec<CaseView>,
}

#[derive(Serialize)]
struct CatalogView {
    id: String,
    title: String,
    notes: Vec<String>,
    tools: Vec<ToolView>,
}

#[derive(Serialize)]
struct ToolView {
    name: String,
    description: String,
    schema: String,
}

#[derive(Serialize)]
struct CaseView {
    id: String,
    /// The case id, as the index lists it.
    name: String,
    title: String,
    pass: String,
    top: String,
    source: String,
    notes: Vec<String>,
    messages: Vec<MessageView>,
    catalog_id: Option<String>,
    tools: Vec<ToolMark>,
    behaviours: Vec<BehaviourView>,
    rest: Option<String>,
}

#[derive(Serialize)]
struct MessageView {
    role: &'static str,
    text: String,
}

#[derive(Serialize)]
struct ToolMark {
    name: String,
    class: &'static str,
    note: String,
}

#[derive(Serialize)]
struct BehaviourView {
    calls: String,
    class: &'static str,
    verdict: &'static str,
    share: String,
    variants: Vec<String>,
    example_title: String,
    example: Vec<ExampleLine>,
}

#[derive(Serialize)]
struct ExampleLine {
    kind: &'static str,
    text: String,
}

#[derive(Serialize)]
pub(super) struct DiffView {
    id: String,
    title: String,
    a_link: Option<String>,
    b_link: Option<String>,
    rows: Vec<Vec<String>>,
    rest: Option<String>,
}

/// The element ids of the explored cases: each [`case_anchor`], so a page made elsewhere (the
/// history page) can link to a case's section from the case's identity alone.
pub(super) fn anchors(e: &Explorer) -> Anchors {
    e.cases
        .iter()
        .map(|c| {
            let b = &c.behaviours;
            (
                (b.arm.clone(), b.dataset.clone(), b.case_id.clone()),
                case_anchor(&b.arm, &b.dataset, &b.case_id),
            )
        })
        .collect()
}

/// The element id of a case's section in a run's case explorer: `case-` and 16 hex digits of
/// the SHA-256 of the arm and case, stable across runs and safe in any attribute or URL
/// fragment whatever the names hold.
pub(crate) fn case_anchor(arm: &ArmId, dataset: &str, case_id: &str) -> String {
    let identity = serde_json::json!([arm.provider, arm.model, arm.variant, dataset, case_id]);
    let digest = toolscore_core::sha256_of(&identity.to_string());
    let hex = digest.trim_start_matches("sha256:");
    format!("case-{}", hex.get(..16).unwrap_or(hex))
}

/// Every arm of the run in plan order, scenario-only arms included: an explorer section
/// each.
fn explored_arms(s: &Summary) -> Vec<ArmId> {
    s.run.arms.iter().map(crate::ArmInfo::id).collect()
}

/// Links each row of an arm's forest plot to its case's section.
pub(super) fn link_case_rows(rows: &mut [ForestRow], arm: &ArmId, anchors: &Anchors) {
    for row in rows {
        row.href = row
            .case
            .as_ref()
            .and_then(|(d, c)| anchors.get(&(arm.clone(), d.clone(), c.clone())))
            .cloned();
    }
}

/// Links each row of the comparison's forest plot to its case's diff section.
pub(super) fn link_diff_rows(rows: &mut [ForestRow], e: &Explorer) {
    let ids: BTreeMap<(&str, &str), String> = e
        .diffs
        .iter()
        .enumerate()
        .map(|(n, (d, c, _))| ((d.as_str(), c.as_str()), diff_id(n)))
        .collect();
    for row in rows {
        row.href = row
            .case
            .as_ref()
            .and_then(|(d, c)| ids.get(&(d.as_str(), c.as_str())))
            .cloned();
    }
}

/// The element id of the `n`th diff of the explorer.
fn diff_id(n: usize) -> String {
    format!("diff-{n}")
}

/// The explorer's sections: per arm its catalogs and cases, then the comparison's diffs.
pub(super) fn explorer_view(
    s: &Summary,
    e: &Explorer,
    anchors: &Anchors,
    compared: Option<(&ArmId, &ArmId)>,
) -> ExplorerView {
    let arms = explored_arms(s)
        .into_iter()
        .enumerate()
        .filter(|(_, arm)| e.cases.iter().any(|c| &c.behaviours.arm == arm))
        .map(|(i, arm)| {
            let catalogs: Vec<CatalogView> = e
                .catalogs
                .iter()
                .filter(|c| c.variant == arm.variant)
                .map(|c| catalog_view(i, c))
                .collect();
            let cases = e
                .cases
                .iter()
                .filter(|c| c.behaviours.arm == arm)
                .map(|c| case_view(i, c, anchors, e))
                .collect();
            ArmExplorer {
                id: format!("explore-{i}"),
                title: super::arm_label(&arm),
                catalogs,
                cases,
            }
        })
        .collect();
    let diffs = match compared {
        Some((a, b)) => e
            .diffs
            .iter()
            .enumerate()
            .map(|(n, (dataset, case_id, d))| DiffView {
                id: diff_id(n),
                title: format!("{case_id}: how the behaviours moved from A to B"),
                a_link: anchors
                    .get(&(a.clone(), dataset.clone(), case_id.clone()))
                    .cloned(),
                b_link: anchors
                    .get(&(b.clone(), dataset.clone(), case_id.clone()))
                    .cloned(),
                rows: d.changes.iter().map(diff_row).collect(),
                rest: d.not_listed.as_ref().map(|r| {
                    format!(
                        "… and {} more behaviours in {} trials",
                        r.behaviours, r.trials
                    )
                }),
            })
            .collect(),
        None => Vec::new(),
    };
    ExplorerView { arms, diffs }
}

fn catalog_id(arm: usize, dataset: &str) -> String {
    // Dataset names are folder names; the id keeps only what an id may hold.
    let safe: String = dataset
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("catalog-{arm}-{safe}")
}

fn catalog_view(arm: usize, c: &ShownCatalog) -> CatalogView {
    CatalogView {
        id: catalog_id(arm, &c.dataset),
        title: format!(
            "Catalog of dataset {} as variant {} showed it: {} tools, in the order sent",
            c.dataset,
            c.variant,
            c.tools.len()
        ),
        notes: c.changed_since.clone(),
        tools: c
            .tools
            .iter()
            .map(|t| ToolView {
                name: cut(&t.name, SHOWN_CHARS),
                description: cut(&t.description, SHOWN_CHARS),
                schema: cut(&t.input_schema.to_string(), SHOWN_CHARS),
            })
            .collect(),
    }
}

fn case_view(arm: usize, c: &ExploredCase, anchors: &Anchors, e: &Explorer) -> CaseView {
    let b = &c.behaviours;
    let id = anchors
        .get(&(b.arm.clone(), b.dataset.clone(), b.case_id.clone()))
        .cloned()
        .unwrap_or_default();
    let catalog = e
        .catalogs
        .iter()
        .find(|k| k.dataset == b.dataset && k.variant == b.arm.variant);
    let (source, mut notes, messages) = match &c.shown {
        Ok(shown) => (
            shown.source.clone(),
            shown.changed_since.clone(),
            shown.messages.iter().map(message_view).collect(),
        ),
        Err(why) => (
            String::new(),
            vec![format!("The conversation is not shown: {why}.")],
            Vec::new(),
        ),
    };
    if let Some(((_, _), why)) = e
        .catalogs_not_shown
        .iter()
        .find(|((d, v), _)| d == &b.dataset && v == &b.arm.variant)
    {
        notes.push(format!("The catalog is not shown: {why}."));
    }
    CaseView {
        id,
        name: cut(&b.case_id, super::LABEL_CHARS),
        title: format!(
            "{} · dataset {}",
            cut(&b.case_id, super::TEXT_CHARS),
            b.dataset
        ),
        pass: format!(
            "expected {} · pass {}",
            cut(&b.expected, super::TEXT_CHARS),
            format_rate(&b.pass)
        ),
        top: b.behaviours.first().map_or(String::new(), |g| {
            format!(
                "{} ({}/{})",
                cut(&g.calls, super::LABEL_CHARS),
                g.share.x,
                g.share.n
            )
        }),
        source,
        notes,
        messages,
        catalog_id: catalog.map(|_| catalog_id(arm, &b.dataset)),
        tools: catalog.map_or_else(Vec::new, |k| tool_marks(k, b)),
        behaviours: b.behaviours.iter().map(behaviour_view).collect(),
        rest: rest_line(b),
    }
}

/// What the behaviours list leaves out, and the errors counted apart.
fn rest_line(b: &CaseBehaviours) -> Option<String> {
    let errors: u64 = b.errors.iter().map(|e| e.trials).sum();
    let mut parts = Vec::new();
    if let Some(r) = &b.not_listed {
        parts.push(format!(
            "{} more behaviours in {} trials, not listed",
            r.behaviours, r.trials
        ));
    }
    if errors > 0 {
        parts.push(format!("{errors} infrastructure errors, not scored"));
    }
    (!parts.is_empty()).then(|| parts.join(" · "))
}

/// The catalog's tools in order, the expected one and the called ones marked.
fn tool_marks(k: &ShownCatalog, b: &CaseBehaviours) -> Vec<ToolMark> {
    let expected: Vec<&str> = b
        .expected
        .split([' ', '+', '→'])
        .filter(|s| !s.is_empty())
        .collect();
    k.tools
        .iter()
        .map(|t| {
            let called = b.tools_called.get(&t.name).copied().unwrap_or(0);
            let is_expected = expected.contains(&t.name.as_str());
            ToolMark {
                name: cut(&t.name, super::TEXT_CHARS),
                class: match (is_expected, called > 0) {
                    (true, _) => "expected",
                    (false, true) => "called",
                    (false, false) => "plain",
                },
                note: match (is_expected, called) {
                    (true, 0) => "expected · never called".to_owned(),
                    (true, n) => format!("expected · called in {n} trials"),
                    (false, 0) => String::new(),
                    (false, n) => format!("called in {n} trials"),
                },
            }
        })
        .collect()
}

fn message_view(m: &Message) -> MessageView {
    let (role, text) = match m {
        Message::System { content } => ("system", content.clone()),
        Message::User { content } => ("user", content.clone()),
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let mut parts: Vec<String> = content.iter().cloned().collect();
            parts.extend(
                tool_calls
                    .iter()
                    .map(|c| format!("calls {} {}", c.name, c.arguments)),
            );
            ("assistant", parts.join("\n"))
        }
        Message::Tool {
            call_id,
            content,
            is_error,
        } => (
            "tool",
            format!(
                "{call_id}{}: {content}",
                if *is_error { " (error)" } else { "" }
            ),
        ),
    };
    MessageView {
        role,
        text: cut_keeping_lines(&text, SHOWN_CHARS),
    }
}

/// `text` cut to `max` characters, its line breaks kept (the page shows them as written).
fn cut_keeping_lines(text: &str, max: usize) -> String {
    let mut out: String = text.chars().take(max).collect();
    if text.chars().count() > max {
        out.push('…');
    }
    out
}

fn behaviour_view(g: &Behaviour) -> BehaviourView {
    let mut variants: Vec<String> = g
        .variants
        .iter()
        .map(|v| {
            let what = if v.what.is_empty() {
                "(empty)"
            } else {
                v.what.as_str()
            };
            let failure = v.failure.as_deref().map_or(String::new(), |f| {
                format!(" — {}", cut(f, super::TEXT_CHARS))
            });
            format!("{}× {}{failure}", v.trials, cut(what, VARIANT_CHARS))
        })
        .collect();
    if g.variants_not_listed > 0 {
        variants.push(format!("… {} more", g.variants_not_listed));
    }
    BehaviourView {
        calls: cut(&g.calls, super::TEXT_CHARS),
        class: if g.passed { "pass" } else { "fail" },
        verdict: if g.passed { "pass" } else { "fail" },
        share: format_rate(&g.share),
        variants,
        example_title: format!("example: trial {}", g.example.trial_index),
        example: example_lines(&g.example),
    }
}

/// The example as lines: each step's text and calls, each call's result, the final state.
fn example_lines(e: &Example) -> Vec<ExampleLine> {
    let mut lines = Vec::new();
    let several = e.turns.len() > 1;
    for (step, turn) in e.turns.iter().enumerate() {
        let at = if several {
            format!("step {step}: ")
        } else {
            String::new()
        };
        if let Some(text) = &turn.text {
            lines.push(ExampleLine {
                kind: "text",
                text: format!("{at}{}", cut_keeping_lines(text, SHOWN_CHARS)),
            });
        }
        for c in &turn.calls {
            let note = if c.unparsed { " (not JSON)" } else { "" };
            lines.push(ExampleLine {
                kind: "call",
                text: format!("{at}{} {}{note}", c.tool, c.arguments),
            });
        }
        for r in e.results.iter().filter(|r| r.step as usize == step) {
            lines.push(ExampleLine {
                kind: if r.is_error { "error" } else { "result" },
                text: format!(
                    "{at}{} answered{}: {}",
                    r.tool,
                    if r.injected && !r.is_error {
                        " (the attack's payload planted here)"
                    } else {
                        ""
                    },
                    r.content
                ),
            });
            if let Some(state) = &r.state {
                lines.push(ExampleLine {
                    kind: "state",
                    text: format!("{at}state after it: {state}"),
                });
            }
        }
    }
    if let Some(state) = &e.final_state {
        lines.push(ExampleLine {
            kind: "state",
            text: format!("final state: {state}"),
        });
    }
    lines
}

fn diff_row(c: &ChangedBehaviour) -> Vec<String> {
    vec![
        format!(
            "{} ({})",
            cut(&c.calls, super::TEXT_CHARS),
            if c.passed { "pass" } else { "fail" }
        ),
        format!("{}/{}", c.a.x, c.a.n),
        format!("{}/{}", c.b.x, c.b.n),
        match c.interval {
            Some(iv) => format!("{:+.3} [{:+.3}, {:+.3}]", c.difference, iv.lo, iv.hi),
            None => format!("{:+.3}", c.difference),
        },
        c.change.as_str().to_owned(),
    ]
}

/// The caption of the explorer's index: what a share and its interval are.
pub(super) fn index_caption(s: &Summary) -> String {
    format!(
        "Each case the charts show, with its pass rate and most frequent behaviour; follow a case to its trials (shares with {} Wilson intervals).",
        pct(s.confidence)
    )
}
