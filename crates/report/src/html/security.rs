//! The security section of `report.html` (`run --attacks`), one per arm that ran attacked
//! units: each unit's attack success with its Wilson interval, highest first and coloured by a
//! case-level attack gate's verdict, against the gate's bar; the suite's clustered interval as
//! a diamond; and the groups (every unit, each family, each scenario) as a table with utility
//! under attack and clean utility. Every figure is the summary's; rows link to the unit's
//! trials in the case explorer.

use serde::Serialize;

use super::charts::{
    Diamond, Forest, ForestRow, diamond_points, gate_line, rate_scale, rate_ticks,
};
use super::{
    CASE_ROWS, ChartFrame, ROW_H, TABLE_ROWS, TEXT_CHARS, TOP, Table, WIDTH, arm_label, cut, px,
    short, verdict_class,
};
use crate::wording::format_rate;
use crate::{AttackComparison, AttackMetric, GateLevel, GateResult, Summary, Verdict};
use toolscore_summary::{AttackUnit, SecurityArmSummary, SecurityGroup};

#[derive(Serialize)]
pub(super) struct SecurityView {
    id: String,
    title: String,
    facts: String,
    pub(super) forest: Forest,
    groups: Table,
}

/// The units an arm's section draws, highest attack success first (then by id), at most
/// [`CASE_ROWS`]: the explorer explores the same ones.
pub(super) fn units_shown(a: &SecurityArmSummary) -> Vec<&AttackUnit> {
    let mut units: Vec<&AttackUnit> = a.units.iter().collect();
    units.sort_by(|x, y| {
        let rate = |u: &AttackUnit| u.attack_success.rate.unwrap_or(-1.0);
        rate(y)
            .partial_cmp(&rate(x))
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| x.case_id.cmp(&y.case_id))
    });
    units.truncate(CASE_ROWS);
    units
}

/// The section of one arm.
pub(super) fn security_view(s: &Summary, a: &SecurityArmSummary, index: usize) -> SecurityView {
    let gate = attack_gate(s, a);
    SecurityView {
        id: format!("security-{index}"),
        title: arm_label(&a.arm),
        facts: facts(a),
        forest: unit_forest(a, index, gate),
        groups: groups_table(a),
    }
}

/// The gate on attack success over this arm, if the run has one.
fn attack_gate<'a>(s: &'a Summary, a: &SecurityArmSummary) -> Option<&'a GateResult> {
    s.gate
        .as_ref()?
        .gates
        .iter()
        .find(|g| g.arm == a.arm && g.metric.attack() == Some(AttackMetric::AttackSuccess))
}

fn facts(a: &SecurityArmSummary) -> String {
    let g = &a.suite;
    let mut facts = format!(
        "{} attacked units · {} trials judged · {} lost to infrastructure errors (not judged) · payload delivered in {} of {}",
        g.units, g.trials, g.errors, g.delivered, g.trials
    );
    if !a.not_attacked.is_empty() {
        facts.push_str(&format!(
            " · not attacked (no injection point): {}",
            cut(&a.not_attacked.join(", "), TEXT_CHARS)
        ));
    }
    facts
}

fn unit_forest(a: &SecurityArmSummary, index: usize, gate: Option<&GateResult>) -> Forest {
    let scale = rate_scale();
    // Under a case-level gate, each unit's verdict colours its row; a unit it does not list
    // among those not passed passed it.
    let verdict_of = |u: &AttackUnit| {
        gate.filter(|g| g.level == GateLevel::Case).map(|g| {
            g.not_passed
                .iter()
                .find(|c| c.case_id == u.case_id)
                .map_or(Verdict::Pass, |c| c.verdict)
        })
    };
    let units = units_shown(a);
    let rows: Vec<ForestRow> = units
        .iter()
        .enumerate()
        .map(|(i, u)| {
            let y = px(TOP + ROW_H * (i as f64 + 0.5));
            let r = &u.attack_success;
            let title = format!(
                "{} · family {} · attack success {} · utility under attack {} · delivered {} of {}",
                cut(&u.case_id, TEXT_CHARS),
                u.family.as_deref().unwrap_or("(none)"),
                format_rate(r),
                format_rate(&u.utility_under_attack),
                u.delivered,
                u.trials
            );
            let (x, lo, hi) = match (r.rate, r.interval) {
                (Some(p), Some(iv)) => (
                    Some(scale.at(p)),
                    Some(scale.at(iv.lo)),
                    Some(scale.at(iv.hi)),
                ),
                _ => (None, None, None),
            };
            ForestRow {
                y,
                label: short(&u.case_id),
                title,
                x,
                lo,
                hi,
                text: format_rate(r),
                class: verdict_of(u).map_or("neutral", verdict_class),
                case: Some((
                    toolscore_core::SCENARIO_DATASET.to_owned(),
                    u.case_id.clone(),
                )),
                href: None,
            }
        })
        .collect();
    let mut notes = Vec::new();
    if a.units.len() > units.len() {
        notes.push(format!(
            "… and {} more units (the lowest attack success) in summary.json",
            a.units.len() - units.len()
        ));
    }
    let rows_end = TOP + ROW_H * units.len() as f64;
    let diamonds: Vec<Diamond> = suite_diamond(&a.suite, rows_end, scale)
        .into_iter()
        .collect();
    let axis_y = px(rows_end + 18.0 * diamonds.len() as f64 + 12.0);
    let refs = gate.map(|g| gate_line(scale, g)).into_iter().collect();
    Forest {
        frame: ChartFrame {
            id: format!("security-forest-{index}"),
            title: "Attack success of each (scenario × attack) unit".to_owned(),
            caption: format!(
                "the share of attacked trials in which the attacker's goal happened, with its Wilson interval (trials of one unit), highest first{}",
                match gate {
                    Some(g) if g.level == GateLevel::Case => {
                        "; coloured by the case-level gate's verdict on each unit"
                    }
                    Some(_) => "; the line is the gate's bar",
                    None => "",
                }
            ),
            width: WIDTH,
            height: px(axis_y + 24.0),
            ticks: rate_ticks(scale),
            refs,
            notes,
            ..ChartFrame::at(axis_y)
        },
        rows,
        diamonds,
    }
}

/// Every unit's attack success as one figure: the mean of unit rates with its clustered
/// interval, as the terminal's `all` row.
fn suite_diamond(g: &SecurityGroup, rows_end: f64, scale: super::Scale) -> Option<Diamond> {
    let (mean, lo, hi, basis) = match (&g.attack_success.case_level, g.attack_success.interval) {
        (Some(c), _) => (
            c.mean,
            c.interval.lo,
            c.interval.hi,
            format!("mean of {} unit rates, clustered by unit", c.cases),
        ),
        (None, Some(iv)) => (
            g.attack_success.rate?,
            iv.lo,
            iv.hi,
            format!("{}/{}", g.attack_success.x, g.attack_success.n),
        ),
        (None, None) => return None,
    };
    let y = px(rows_end + 18.0);
    Some(Diamond {
        y,
        points: diamond_points(scale.at(lo), scale.at(mean), scale.at(hi), y),
        label: "all units".to_owned(),
        text: format!("{mean:.3} [{lo:.3}, {hi:.3}] ({basis})"),
    })
}

/// Every unit, each family, each scenario: the three rates with their intervals.
fn groups_table(a: &SecurityArmSummary) -> Table {
    let groups: Vec<(&str, &SecurityGroup)> = std::iter::once(("all", &a.suite))
        .chain(a.by_family.iter().map(|g| ("family", g)))
        .chain(a.by_scenario.iter().map(|g| ("scenario", g)))
        .collect();
    let shown = groups.len().min(TABLE_ROWS);
    let rows = groups
        .iter()
        .take(shown)
        .map(|(kind, g)| {
            vec![
                (*kind).to_owned(),
                cut(&g.name, TEXT_CHARS),
                g.units.to_string(),
                format_rate(&g.attack_success),
                format_rate(&g.utility_under_attack),
                g.utility
                    .as_ref()
                    .map_or_else(|| "—".to_owned(), format_rate),
                format!("{} of {}", g.delivered, g.trials),
                g.errors.to_string(),
            ]
        })
        .collect();
    let mut notes = Vec::new();
    if groups.len() > shown {
        notes.push(format!(
            "… and {} more groups in summary.json (security[].by_family, by_scenario)",
            groups.len() - shown
        ));
    }
    Table {
        caption: "Attack success, utility under attack and clean utility by group, each interval clustered by unit".to_owned(),
        header: [
            "group",
            "name",
            "units",
            "attack success",
            "utility under attack",
            "utility (clean)",
            "delivered",
            "infra errors",
        ]
        .map(str::to_owned)
        .to_vec(),
        rows,
        notes,
        links: Vec::new(),
    }
}

/// The run's comparison of two defences on the same units (`--compare` of an attacked run):
/// B − A of attack success and of utility under attack, each with the verdict the summary
/// holds.
pub(super) fn comparison_table(c: &AttackComparison) -> Table {
    let b = c.b.label(&c.axis);
    let rows = c
        .told()
        .into_iter()
        .map(|(name, g, verdict)| {
            let mean = |m: Option<f64>| m.map_or_else(|| "n/a".to_owned(), |m| format!("{m:.3}"));
            vec![
                name.to_owned(),
                mean(g.a_mean),
                mean(g.b_mean),
                g.difference.as_ref().map_or_else(
                    || "n/a".to_owned(),
                    |d| format!("{:+.3} [{:+.3}, {:+.3}]", d.mean, d.lo, d.hi),
                ),
                g.cases.to_string(),
                verdict,
            ]
        })
        .collect();
    Table {
        caption: format!(
            "Security comparison: A {} · B {}; B − A paired by (scenario × attack) unit, {:.0}% t interval over units, never narrower than the pooled trials'",
            cut(&c.a.label(&c.axis), TEXT_CHARS),
            cut(&b, TEXT_CHARS),
            c.confidence * 100.0
        ),
        header: ["rate", "A", "B", "B − A", "units", "verdict"]
            .map(str::to_owned)
            .to_vec(),
        rows,
        notes: Vec::new(),
        links: Vec::new(),
    }
}
