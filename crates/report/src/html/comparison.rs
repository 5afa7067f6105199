//! The comparison section of report.html: the verdict badge and the forest of per-case
//! differences.

use super::{
    CASE_ROWS, ChartFrame, Comparison, Diamond, Forest, ForestRow, GroupComparison, PLOT_X0,
    PLOT_X1, ROW_H, RefLine, Scale, Serialize, TABLE_ROWS, TEXT_CHARS, TOP, Table, Tick, WIDTH,
    cut, diamond_points, pct, px, short,
};

#[derive(Serialize)]
pub(super) struct ComparisonView {
    title: String,
    lines: Vec<String>,
    verdict_class: &'static str,
    verdict_label: &'static str,
    /// What the badge rests on, or why it is inconclusive (`Comparison::overall`).
    verdict_reason: String,
    pub(super) forest: Forest,
    substitutions: Option<Table>,
}

pub(super) fn comparison_view(c: &Comparison) -> ComparisonView {
    let a = c.a.label(&c.axis);
    let b = c.b.label(&c.axis);
    let mut lines = vec![group_line(c, &b, "visible cases", &c.visible)];
    if let Some(h) = &c.holdout {
        lines.push(group_line(c, &b, "holdout cases (aggregate only)", h));
    }
    let forest = difference_forest(c);
    let substitutions = substitution_table(c);
    let overall = c.overall();
    let verdict_class = match overall.verdict {
        crate::ComparisonVerdict::Better => "pass",
        crate::ComparisonVerdict::Worse => "fail",
        crate::ComparisonVerdict::Equivalent | crate::ComparisonVerdict::NotBetter => "none",
        crate::ComparisonVerdict::Inconclusive => "inconclusive",
    };
    let verdict_label = overall.label();
    let verdict_reason = overall
        .reason
        .unwrap_or_else(|| "visible cases, B − A paired by case".to_owned());
    ComparisonView {
        title: format!(
            "Comparison: {} · A = {} · B = {}",
            c.metric.label(),
            cut(&a, TEXT_CHARS),
            cut(&b, TEXT_CHARS)
        ),
        lines,
        verdict_class,
        verdict_label,
        verdict_reason,
        forest,
        substitutions,
    }
}

/// One group's line: its cases, B − A with its interval, the verdict, and the cases a
/// decision would need.
fn group_line(c: &Comparison, b: &str, title: &str, g: &GroupComparison) -> String {
    let difference = match &g.difference {
        Some(d) => format!(
            "B − A = {:+.3} [{:+.3}, {:+.3}] (paired t, {} df, p = {:.4}){}",
            d.mean,
            d.lo,
            d.hi,
            d.df,
            d.p_value,
            crate::comparison::fixed_n_caveat(g)
        ),
        None => "B − A: n/a (fewer than 2 cases with data in both arms)".to_owned(),
    };
    let needed = g.cases_needed.map_or(String::new(), |n| {
        format!(
            "; about {n} cases with this spread would detect {} with {} power",
            c.min_effect,
            pct(c.power)
        )
    });
    let sequential = g
        .sequential
        .as_ref()
        .map_or(String::new(), |q| format!(" · {}", q.line()));
    format!(
        "{title}: {} cases · {difference}{sequential} · {}{needed}",
        g.cases,
        g.judged().describe(b, c.min_effect)
    )
}

/// Each visible case's B − A with its interval, lowest first, and the groups' means.
fn difference_forest(c: &Comparison) -> Forest {
    let scale = Scale::linear(-1.0, 1.0, PLOT_X0, PLOT_X1);
    let cases = lowest_difference_first(c);
    let shown = cases.len().min(CASE_ROWS);
    let rows: Vec<ForestRow> = cases
        .iter()
        .take(shown)
        .enumerate()
        .map(|(i, d)| difference_row(d, px(TOP + ROW_H * (i as f64 + 0.5)), scale))
        .collect();
    let rows_end = TOP + ROW_H * shown as f64;
    let mut diamonds = Vec::new();
    for (label, g) in [
        ("visible cases: mean B − A", Some(&c.visible)),
        ("holdout cases: mean B − A", c.holdout.as_ref()),
    ] {
        if let Some(d) = g.and_then(|g| g.difference.as_ref()) {
            let y = px(rows_end + 18.0 * (diamonds.len() as f64 + 1.0));
            diamonds.push(Diamond {
                y,
                points: diamond_points(scale.at(d.lo), scale.at(d.mean), scale.at(d.hi), y),
                label: label.to_owned(),
                text: format!("{:+.3} [{:+.3}, {:+.3}]", d.mean, d.lo, d.hi),
            });
        }
    }
    let mut notes = Vec::new();
    if c.case_differences.is_empty() {
        notes.push("This comparison was written without its per-case differences (an older summary.json); `toolscore report` recomputes them.".to_owned());
    }
    if cases.len() > shown {
        notes.push(format!(
            "… and {} more cases (the largest gains) in the comparison's JSON",
            cases.len() - shown
        ));
    }
    let axis_y = px(rows_end + 18.0 * diamonds.len() as f64 + 12.0);
    Forest {
        frame: ChartFrame {
            id: "differences".to_owned(),
            title: format!("Paired differences by case: {} B − A", c.metric.label()),
            caption: format!(
                "each visible case's B − A with Newcombe's {} interval (per case, not adjusted for {} cases), lowest first; diamonds: the mean of the per-case differences with its t interval; dashed lines at ±{} (--min-effect); holdout cases appear only in aggregate",
                pct(c.confidence),
                c.visible.cases,
                c.min_effect
            ),
            width: WIDTH + 60.0,
            height: px(axis_y + 24.0),
            ticks: difference_ticks(scale),
            refs: effect_lines(scale, c.min_effect),
            notes,
            ..ChartFrame::at(axis_y)
        },
        rows,
        diamonds,
    }
}

/// The difference axis from −1 to +1, signed.
fn difference_ticks(scale: Scale) -> Vec<Tick> {
    [-1.0, -0.5, 0.0, 0.5, 1.0]
        .iter()
        .map(|&v: &f64| Tick {
            x: scale.at(v),
            label: format!("{v:+}"),
        })
        .collect()
}

/// The line at no difference and the dashed lines at ±--min-effect.
fn effect_lines(scale: Scale, min_effect: f64) -> Vec<RefLine> {
    vec![
        RefLine {
            x: scale.at(0.0),
            label: "no difference".to_owned(),
            class: "zero",
            anchor: "middle",
        },
        RefLine {
            x: scale.at(-min_effect),
            label: format!("−{min_effect} "),
            class: "effect",
            anchor: "end",
        },
        RefLine {
            x: scale.at(min_effect),
            label: format!(" +{min_effect}"),
            class: "effect",
            anchor: "start",
        },
    ]
}

/// One case's B − A with its interval, coloured by whether the interval excludes 0.
fn difference_row(d: &crate::CaseComparison, y: f64, scale: Scale) -> ForestRow {
    let class = if d.lo > 0.0 {
        "better"
    } else if d.hi < 0.0 {
        "worse"
    } else {
        "neutral"
    };
    ForestRow {
        y,
        label: short(&d.case_id),
        title: format!(
            "{} · A {}/{} · B {}/{}",
            cut(&d.case_id, TEXT_CHARS),
            d.a_x,
            d.a_n,
            d.b_x,
            d.b_n
        ),
        x: Some(scale.at(d.difference)),
        lo: Some(scale.at(d.lo)),
        hi: Some(scale.at(d.hi)),
        text: format!(
            "{:+.3} [{:+.3}, {:+.3}] ({}/{} → {}/{})",
            d.difference, d.lo, d.hi, d.a_x, d.a_n, d.b_x, d.b_n
        ),
        class,
        case: Some((d.dataset.clone(), d.case_id.clone())),
        href: None,
    }
}

/// The tools chosen instead of the expected one, in A and in B.
fn substitution_table(c: &Comparison) -> Option<Table> {
    (!c.substitutions.is_empty()).then(|| Table {
        caption: "Substitutions: expected → chosen instead (scored trials), largest change first"
            .to_owned(),
        header: vec![
            "expected → chosen".to_owned(),
            "A".to_owned(),
            "B".to_owned(),
        ],
        rows: c
            .substitutions
            .iter()
            .take(TABLE_ROWS)
            .map(|s| {
                vec![
                    format!(
                        "{} → {}",
                        cut(&s.expected, TEXT_CHARS),
                        cut(&s.chosen, TEXT_CHARS)
                    ),
                    s.a.to_string(),
                    s.b.to_string(),
                ]
            })
            .collect(),
        notes: if c.substitutions.len() > TABLE_ROWS {
            vec![format!(
                "… and {} more in the comparison's JSON",
                c.substitutions.len() - TABLE_ROWS
            )]
        } else {
            Vec::new()
        },
        links: Vec::new(),
    })
}

/// The comparison's per-case differences, lowest first (then by case): the order of its
/// forest plot.
fn lowest_difference_first(c: &Comparison) -> Vec<&crate::CaseComparison> {
    let mut cases: Vec<_> = c.case_differences.iter().collect();
    cases.sort_by(|x, y| {
        x.difference
            .partial_cmp(&y.difference)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| (&x.dataset, &x.case_id).cmp(&(&y.dataset, &y.case_id)))
    });
    cases
}

/// The cases the comparison's forest plot shows, as (dataset, case id): the ones the HTML
/// report diffs and links.
pub fn compared_cases(c: &Comparison) -> Vec<(String, String)> {
    lowest_difference_first(c)
        .into_iter()
        .take(CASE_ROWS)
        .map(|d| (d.dataset.clone(), d.case_id.clone()))
        .collect()
}
