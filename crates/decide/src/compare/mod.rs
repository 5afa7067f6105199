//! Which of two arms scores higher, paired by case (reference/stats.md §3).
//!
//! - Per case: Newcombe's hybrid score interval of the difference of the two rates (§3.1): the
//!   trials of one case under two arms are independent samples.
//! - Suite: the mean of the per-case differences with a t(m−1) interval (§3.3). Cases are the
//!   independent units, and pairing by case removes the between-case spread that two
//!   independent suite means would carry. With one trial per case, McNemar's exact and mid-p
//!   tests and Newcombe's paired interval (§3.2) are added.
//! - Cases tagged `holdout` never appear in a per-case table: they are judged only in
//!   aggregate, with their own verdict, so a wording tuned on the visible cases is checked on
//!   cases its author did not read.
//!
//! Pure: reads two `Summary`s, returns a `Comparison` or says why the two cannot be compared.

use std::collections::BTreeMap;

use toolscore_core::InputError;
use toolscore_core::metric::Metric;
use toolscore_core::{ArmId, ModelIdentity};
use toolscore_stats as stats;
use toolscore_summary::{
    ArmInfo, CaseComparison, CaseSummary, ComparedArm, Comparison, ComparisonVerdict,
    GroupComparison, McNemar, MeanDifference, RateStat, Substitution, Summary,
};

pub(crate) mod attacks;
pub(crate) mod sequential;

/// The tag that keeps a case out of every per-case table of a comparison.
pub const HOLDOUT_TAG: &str = "holdout";

/// The smallest difference worth acting on when the user names none: `run --compare`'s and
/// `plan --compare`'s default, and what `compare` and `report` judge by when the run recorded
/// no `--min-effect`.
pub const DEFAULT_MIN_EFFECT: f64 = 0.05;

/// How to compare.
#[derive(Debug, Clone, Copy)]
pub struct CompareOptions {
    pub metric: Metric,
    pub confidence: f64,
    pub min_effect: f64,
    pub power: f64,
    /// Compare on the cases both arms have, instead of refusing when they differ.
    pub intersect: bool,
    /// Judge cases tagged `holdout` apart (a comparison of wordings); a gate judges all cases
    /// together.
    pub holdout_apart: bool,
}

/// One arm of one run's summary.
#[derive(Clone, Copy)]
pub struct Side<'a> {
    pub summary: &'a Summary,
    pub arm: usize,
}

/// The header entry of arm `id` in its run's summary.
fn info_of<'a>(summary: &'a Summary, id: &ArmId) -> Option<&'a ArmInfo> {
    summary
        .run
        .arms
        .iter()
        .find(|a| a.variant == id.variant && a.identity.provider == id.provider)
}

/// What differs between the two arms, or why they cannot be compared.
fn axis(a: Side<'_>, b: Side<'_>) -> Result<String, InputError> {
    axis_of(
        (a.summary, &a.summary.arms[a.arm].arm),
        (b.summary, &b.summary.arms[b.arm].arm),
    )
}

/// What differs between arm A (of its run's summary) and arm B, or why they cannot be compared:
/// `variant`, `provider` (the model or its settings), or `run` (the same arm twice).
pub(crate) fn axis_of(
    (sa, ia): (&Summary, &ArmId),
    (sb, ib): (&Summary, &ArmId),
) -> Result<String, InputError> {
    axis_between(
        (ia, info_of(sa, ia).map(|i| &i.identity)),
        (ib, info_of(sb, ib).map(|i| &i.identity)),
        // One run is one summary: two folders that carry the same run id are two runs.
        std::ptr::eq(sa, sb),
    )
}

/// The rule `axis_of` applies, on what is known before a run starts (`run --compare` refuses
/// two arms that differ in more than one thing before any trial): each arm with its model's
/// identity when known, and whether both arms are of one run.
pub fn axis_between(
    (ia, xa): (&ArmId, Option<&ModelIdentity>),
    (ib, xb): (&ArmId, Option<&ModelIdentity>),
    same_run: bool,
) -> Result<String, InputError> {
    let variant_differs = ia.variant != ib.variant;
    let who_differs = match (xa, xb) {
        // What the model is and how it samples; not the arm's name (one recording replayed
        // under two names is the same model).
        (Some(x), Some(y)) => {
            x.model != y.model
                || x.temperature != y.temperature
                || x.provider_kind != y.provider_kind
                || x.max_tokens != y.max_tokens
        }
        _ => ia.provider != ib.provider || ia.model != ib.model,
    };
    match (variant_differs, who_differs) {
        (true, true) => Err(InputError::new(format!(
            "the arms differ in both catalog variant ({} vs {}) and provider or model ({} {} vs {} {}): a difference could come from either; compare one change at a time",
            ia.variant, ib.variant, ia.provider, ia.model, ib.provider, ib.model
        ))),
        (true, false) => Ok("variant".to_owned()),
        (false, true) => Ok("provider".to_owned()),
        // One model and its settings under two names in one run: the names are what differ,
        // and a label by run would name the same run twice.
        (false, false) if same_run => Ok("provider".to_owned()),
        (false, false) => Ok("run".to_owned()),
    }
}

/// Compares arm B against arm A on the metric.
pub fn compare(a: Side<'_>, b: Side<'_>, opts: CompareOptions) -> Result<Comparison, InputError> {
    let axis = axis(a, b)?;
    let (arm_a, arm_b) = (&a.summary.arms[a.arm], &b.summary.arms[b.arm]);
    let pairs = paired_cases(a, b, opts.intersect)?;
    let (holdout, visible): (Vec<_>, Vec<_>) = pairs
        .into_iter()
        .partition(|(ca, _)| opts.holdout_apart && ca.tags.iter().any(|t| t == HOLDOUT_TAG));

    let visible_group = group(&visible, opts);
    let holdout_group = (!holdout.is_empty()).then(|| group(&holdout, opts));
    // Every visible case with data in both arms, in case order; the changed ones are those
    // whose interval excludes 0.
    let case_differences = case_differences(&visible, opts);
    let changed_cases = changed_cases(&case_differences);

    Ok(Comparison {
        metric: opts.metric,
        confidence: opts.confidence,
        min_effect: opts.min_effect,
        power: opts.power,
        a: ComparedArm {
            run_id: a.summary.run.run_id.clone(),
            arm: arm_a.arm.clone(),
            folder: None,
        },
        b: ComparedArm {
            run_id: b.summary.run.run_id.clone(),
            arm: arm_b.arm.clone(),
            folder: None,
        },
        axis,
        visible: visible_group,
        holdout: holdout_group,
        changed_cases,
        case_differences,
        substitutions: substitutions(arm_a, arm_b),
    })
}

/// The cases both arms ran, paired, each planned with the same trials in both; cases only
/// one arm ran are refused unless `intersect`.
fn paired_cases<'s>(
    a: Side<'s>,
    b: Side<'s>,
    intersect: bool,
) -> Result<Vec<(&'s CaseSummary, &'s CaseSummary)>, InputError> {
    let (arm_a, arm_b) = (&a.summary.arms[a.arm], &b.summary.arms[b.arm]);
    let key = |c: &CaseSummary| (c.dataset.clone(), c.case_id.clone());
    let cases_a: BTreeMap<_, _> = arm_a.cases.iter().map(|c| (key(c), c)).collect();
    let cases_b: BTreeMap<_, _> = arm_b.cases.iter().map(|c| (key(c), c)).collect();
    let only_a: Vec<String> = cases_a
        .keys()
        .filter(|k| !cases_b.contains_key(*k))
        .map(|(d, c)| format!("{d}/{c}"))
        .collect();
    let only_b: Vec<String> = cases_b
        .keys()
        .filter(|k| !cases_a.contains_key(*k))
        .map(|(d, c)| format!("{d}/{c}"))
        .collect();
    if (!only_a.is_empty() || !only_b.is_empty()) && !intersect {
        let list = |v: &[String]| {
            let mut s = v.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
            if v.len() > 5 {
                s.push_str(&format!(" and {} more", v.len() - 5));
            }
            s
        };
        return Err(InputError::new(format!(
            "the arms were run on different cases (only in A: {}; only in B: {}); a comparison needs the same cases in both, or --intersect to compare on the {} they share",
            if only_a.is_empty() {
                "none".to_owned()
            } else {
                list(&only_a)
            },
            if only_b.is_empty() {
                "none".to_owned()
            } else {
                list(&only_b)
            },
            cases_a.keys().filter(|k| cases_b.contains_key(*k)).count()
        )));
    }
    let mut pairs = Vec::new();
    for (k, ca) in &cases_a {
        let Some(cb) = cases_b.get(k) else { continue };
        let (ta, tb) = (
            a.summary.run.planned_trials(&k.0, &k.1),
            b.summary.run.planned_trials(&k.0, &k.1),
        );
        if ta != tb {
            return Err(InputError::new(format!(
                "case {}/{} was planned with {ta} trials in A and {tb} in B; compare runs with the same trials per case",
                k.0, k.1
            )));
        }
        pairs.push((*ca, *cb));
    }
    if pairs.is_empty() {
        return Err(InputError::new("the arms share no case"));
    }
    Ok(pairs)
}

/// Every visible case with data in both arms, in case order, with B − A and its Newcombe
/// interval.
fn case_differences(
    visible: &[(&CaseSummary, &CaseSummary)],
    opts: CompareOptions,
) -> Vec<CaseComparison> {
    visible
        .iter()
        .filter_map(|(ca, cb)| case_difference(ca, cb, opts.metric, opts.confidence))
        .collect()
}

/// One case's B − A on `metric` with Newcombe's interval; `None` when an arm scored none of
/// its trials. The per-case line of a comparison, and of `toolscore explain`'s diff.
pub fn case_difference(
    ca: &CaseSummary,
    cb: &CaseSummary,
    metric: Metric,
    confidence: f64,
) -> Option<CaseComparison> {
    let (sa, sb) = (ca.metrics.get(metric), cb.metrics.get(metric));
    let iv = stats::newcombe_interval(sb.x, sb.n, sa.x, sa.n, confidence)?;
    let difference = sb.x as f64 / sb.n as f64 - sa.x as f64 / sa.n as f64;
    Some(CaseComparison {
        dataset: ca.dataset.clone(),
        case_id: ca.case_id.clone(),
        a_x: sa.x,
        a_n: sa.n,
        b_x: sb.x,
        b_n: sb.n,
        difference,
        lo: iv.lo,
        hi: iv.hi,
    })
}

/// The cases whose interval excludes 0: gains first, largest first; then losses, largest first.
fn changed_cases(case_differences: &[CaseComparison]) -> Vec<CaseComparison> {
    let mut changed_cases: Vec<CaseComparison> = case_differences
        .iter()
        .filter(|c| c.lo > 0.0 || c.hi < 0.0)
        .cloned()
        .collect();
    changed_cases.sort_by(|x, y| {
        (x.difference < 0.0)
            .cmp(&(y.difference < 0.0))
            .then(
                y.difference
                    .abs()
                    .partial_cmp(&x.difference.abs())
                    .unwrap_or(std::cmp::Ordering::Equal),
            )
            .then_with(|| x.case_id.cmp(&y.case_id))
    });
    changed_cases
}

fn group(pairs: &[(&CaseSummary, &CaseSummary)], opts: CompareOptions) -> GroupComparison {
    let counted: Vec<(&RateStat, &RateStat)> = pairs
        .iter()
        .map(|(ca, cb)| (ca.metrics.get(opts.metric), cb.metrics.get(opts.metric)))
        .collect();
    paired_group(&counted, opts)
}

/// B − A over paired units, each its two arms' rates: the mean of the per-unit differences
/// with a t(m−1) interval (McNemar's with one trial a unit), and the verdict at `min_effect`
/// (BETTER when the interval lies above 0). Units an arm measured nothing of are left out.
pub(crate) fn paired_group(
    pairs: &[(&RateStat, &RateStat)],
    opts: CompareOptions,
) -> GroupComparison {
    let counted: Vec<(&RateStat, &RateStat)> = pairs
        .iter()
        .copied()
        .filter(|(sa, sb)| sa.n > 0 && sb.n > 0)
        .collect();
    let rate = |s: &RateStat| s.x as f64 / s.n as f64;
    let m = counted.len();
    let mean_of = |f: &dyn Fn(&(&RateStat, &RateStat)) -> f64| {
        (m > 0).then(|| counted.iter().map(f).sum::<f64>() / m as f64)
    };
    let diffs: Vec<f64> = counted.iter().map(|(sa, sb)| rate(sb) - rate(sa)).collect();
    let paired = stats::paired_mean_difference(&diffs, opts.confidence);
    let difference = paired.as_ref().map(|p| MeanDifference {
        mean: p.mean,
        lo: p.interval.lo,
        hi: p.interval.hi,
        sd: p.sd,
        df: p.df as u64,
        p_value: p.p_two_sided,
        method:
            "mean of per-case differences, Student t on m-1 df (cases are the independent units)"
                .to_owned(),
    });
    let mcnemar = (m > 0 && counted.iter().all(|(sa, sb)| sa.n == 1 && sb.n == 1)).then(|| {
        let count = |fa: u64, fb: u64| {
            counted
                .iter()
                .filter(|(sa, sb)| sa.x == fa && sb.x == fb)
                .count() as u64
        };
        // A is the first arm of the paired table, B the second: B − A = (b_only − a_only)/n.
        let table = stats::PairedCounts {
            both: count(1, 1),
            a_only: count(0, 1),
            b_only: count(1, 0),
            neither: count(0, 0),
        };
        let iv = stats::newcombe_paired_interval(&table, opts.confidence);
        McNemar {
            both_pass: table.both,
            a_only: table.b_only,
            b_only: table.a_only,
            neither: table.neither,
            exact_p: stats::mcnemar_exact_p(table.a_only, table.b_only),
            mid_p: stats::mcnemar_mid_p(table.a_only, table.b_only),
            lo: iv.map_or(-1.0, |i| i.lo),
            hi: iv.map_or(1.0, |i| i.hi),
        }
    });
    let verdict = verdict_of(difference.as_ref(), opts.min_effect);
    let cases_needed = difference.as_ref().and_then(|d| {
        stats::cases_for_paired_effect(d.sd, opts.min_effect, opts.confidence, opts.power)
    });
    GroupComparison {
        cases: m,
        a_mean: mean_of(&|(sa, _)| rate(sa)),
        b_mean: mean_of(&|(_, sb)| rate(sb)),
        difference,
        mcnemar,
        verdict,
        cases_needed,
        sequential: None,
        fixed_n_verdict: None,
    }
}

/// The verdict of a mean difference B − A at `min_effect`: BETTER when its interval lies above
/// 0, WORSE below, NO DETECTABLE DIFFERENCE inside (−min_effect, min_effect).
pub(crate) fn verdict_of(
    difference: Option<&MeanDifference>,
    min_effect: f64,
) -> ComparisonVerdict {
    match difference {
        Some(d) if d.lo > 0.0 => ComparisonVerdict::Better,
        Some(d) if d.hi < 0.0 => ComparisonVerdict::Worse,
        Some(d) if d.lo > -min_effect && d.hi < min_effect => ComparisonVerdict::Equivalent,
        _ => ComparisonVerdict::Inconclusive,
    }
}

/// Wrong choices of each arm, merged by (expected, chosen), most frequent first.
fn substitutions(
    a: &toolscore_summary::ArmSummary,
    b: &toolscore_summary::ArmSummary,
) -> Vec<Substitution> {
    let mut cells: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
    for (arm, side) in [(a, 0), (b, 1)] {
        for c in arm.confusion.iter().filter(|c| c.expected != c.chosen) {
            let e = cells
                .entry((c.expected.clone(), c.chosen.clone()))
                .or_default();
            if side == 0 {
                e.0 += c.count;
            } else {
                e.1 += c.count;
            }
        }
    }
    let mut out: Vec<Substitution> = cells
        .into_iter()
        .map(|((expected, chosen), (a, b))| Substitution {
            expected,
            chosen,
            a,
            b,
        })
        .collect();
    // What the two wordings confuse differently comes first.
    out.sort_by_key(|s| {
        (
            std::cmp::Reverse(s.a.abs_diff(s.b)),
            std::cmp::Reverse(s.a + s.b),
        )
    });
    out
}

/// The arms of the runs to compare: two arms of one run, or one arm of each of two runs.
/// `wanted` picks arms by variant, provider or `provider/variant` when a run has more.
pub fn choose_arms<'a>(
    runs: &'a [Summary],
    wanted: &[String],
) -> Result<(Side<'a>, Side<'a>), InputError> {
    match runs {
        [one] => two_arms_of(one, wanted),
        [first, second] => Ok((
            one_arm_of(first, wanted.first())?,
            one_arm_of(second, wanted.get(1))?,
        )),
        _ => Err(InputError::new(
            "compare takes one run folder (with two arms) or two run folders",
        )),
    }
}

/// Whether `--arm w` names arm `i` of run `s`: by variant, provider or `provider/variant`.
fn arm_matches(s: &Summary, i: usize, w: &str) -> bool {
    arm_named(&s.arms[i].arm, w)
}

/// Whether `--arm w` names the arm `id`: by variant, provider or `provider/variant`.
pub(crate) fn arm_named(id: &toolscore_core::ArmId, w: &str) -> bool {
    w == id.variant || w == id.provider || w == format!("{}/{}", id.provider, id.variant)
}

/// A run's arms as `provider/variant`, for the errors that ask the user to pick one.
fn arm_names(s: &Summary) -> String {
    arm_list(s.arms.iter().map(|a| &a.arm))
}

/// Arms as `provider/variant`, comma-separated.
pub fn arm_list<'a>(arms: impl Iterator<Item = &'a toolscore_core::ArmId>) -> String {
    arms.map(|a| format!("{}/{}", a.provider, a.variant))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The indices of a summary's arms (sorted by identity) in the order the run's plan had them
/// (the order of `--provider` and `--variant`): A is the first arm the user named, B the
/// second, wherever the summary sorts them. Arms the header does not list keep their order,
/// after the others.
pub fn plan_order(summary: &Summary) -> Vec<usize> {
    let mut order: Vec<usize> = summary
        .run
        .arms
        .iter()
        .filter_map(|info| {
            let id = info.id();
            summary.arms.iter().position(|a| a.arm == id)
        })
        .collect();
    for i in 0..summary.arms.len() {
        if !order.contains(&i) {
            order.push(i);
        }
    }
    order
}

/// Two arms of one run: its only two (in plan order), or the two `--arm`s name.
fn two_arms_of<'a>(
    one: &'a Summary,
    wanted: &[String],
) -> Result<(Side<'a>, Side<'a>), InputError> {
    let picked: Vec<usize> = if wanted.is_empty() {
        plan_order(one)
    } else {
        wanted
            .iter()
            .map(|w| {
                let found: Vec<usize> = (0..one.arms.len())
                    .filter(|&i| arm_matches(one, i, w))
                    .collect();
                match found.as_slice() {
                    [i] => Ok(*i),
                    [] => Err(InputError::new(format!(
                        "--arm {w}: no arm of run {} is named so (its arms: {})",
                        one.run.run_id,
                        arm_names(one)
                    ))),
                    _ => Err(InputError::new(format!(
                        "--arm {w}: several arms match; write PROVIDER/VARIANT (its arms: {})",
                        arm_names(one)
                    ))),
                }
            })
            .collect::<Result<_, _>>()?
    };
    match picked[..] {
        [a, b] => Ok((
            Side {
                summary: one,
                arm: a,
            },
            Side {
                summary: one,
                arm: b,
            },
        )),
        _ => Err(InputError::new(format!(
            "run {} has {} arms ({}); compare needs exactly two: name them with --arm A --arm B",
            one.run.run_id,
            one.arms.len(),
            arm_names(one)
        ))),
    }
}

/// The first of `arms` (the arms of run `run_id`) that `--arm wanted` names: by variant,
/// provider or `provider/variant`.
pub fn find_arm(
    arms: &[&toolscore_core::ArmId],
    run_id: &str,
    wanted: &str,
) -> Result<usize, InputError> {
    arms.iter()
        .position(|a| arm_named(a, wanted))
        .ok_or_else(|| {
            InputError::new(format!(
                "--arm {wanted}: no arm of run {run_id} is named so (its arms: {})",
                arm_list(arms.iter().copied())
            ))
        })
}

/// The arm of one of two runs: its only arm, or the one its `--arm` names.
fn one_arm_of<'a>(s: &'a Summary, wanted: Option<&String>) -> Result<Side<'a>, InputError> {
    let arm = match (s.arms.len(), wanted) {
        (1, None) => 0,
        (_, Some(w)) => {
            let arms: Vec<_> = s.arms.iter().map(|a| &a.arm).collect();
            find_arm(&arms, &s.run.run_id, w)?
        }
        (_, None) => {
            return Err(InputError::new(format!(
                "run {} has {} arms ({}); name the one to compare with --arm (once per run, in order)",
                s.run.run_id,
                s.arms.len(),
                arm_names(s)
            )));
        }
    };
    Ok(Side { summary: s, arm })
}
