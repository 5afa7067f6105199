//! Exact operating characteristics of the sequential comparison (`run --compare --sequential`)
//! when every case has the same two true rates: a dynamic program over the counts after each
//! round, judged by [`PairedBetting::decide`] at every round boundary, so no Monte Carlo error.
//! The same figures [`super::simulate_comparison`] estimates.
//!
//! A round of `m` cases is `m` independent pairs, each +1 (B right, A wrong) with probability
//! `b(1 − a)`, −1 with `a(1 − b)`, 0 otherwise: a trinomial. After r rounds the state is
//! (`b_only`, `a_only`), `same` being the rest of the `r·m` pairs, and the decision depends
//! on nothing else ([`super::PairCounts`]). The states still undecided after a round lie in a
//! band around `b_only = a_only`: the rest are absorbed into their verdict as soon as they are
//! reached.

use serde::{Deserialize, Serialize};

use super::{PairedBetting, PairedDecision};
use crate::binomial_pmf;

/// What the sequential comparison does when every case has the same true rates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ComparisonCharacteristics {
    /// Rounds used, a comparison undecided at the cap counting the cap.
    pub expected_rounds: f64,
    /// The chance of each verdict within the cap; with `undecided` they sum to 1.
    pub better: f64,
    pub worse: f64,
    pub within: f64,
    pub undecided: f64,
}

/// The most work [`exact_comparison`] does before it gives up, in multiply-adds (one state
/// carried into one outcome of a round) with an evaluation of the evidence counted as
/// [`EVIDENCE_COST`] of them: 10⁹ is about half a second on one core (release build, the
/// two-core machine the benchmark ran on). The benchmark's cell, 10 cases and 100 rounds, is
/// 4.8·10⁸ and takes 0.25 s. `toolscore plan` computes four rows, so it answers within a
/// few seconds or falls back to simulation; it never hangs. The work grows about as
/// `rounds^2.5 · cases^1.5 · outcomes` (the undecided band is about √n states wide on each
/// of n rows, and a round has `(cases + 1)(cases + 2)/2` outcomes), so at most about 500
/// rounds of 1 case are exact, 140 of 10, 70 of 20, 20 of 50; the default 1,000 rounds of
/// `plan` are simulated for any suite.
pub const EXACT_COMPARISON_WORK_LIMIT: u64 = 1_000_000_000;

/// One evaluation of the mixed evidence (4 stakes, a dozen logarithms and a log-sum-exp) in
/// multiply-adds of the convolution, as measured: about 200 ns against 0.5 ns.
const EVIDENCE_COST: u64 = 400;

/// One row of the state: the mass at `b_only` in `lo .. lo + mass.len()` for one `a_only`.
#[derive(Debug, Clone, Default)]
struct Row {
    lo: usize,
    mass: Vec<f64>,
}

impl Row {
    /// The last `b_only` held plus one.
    fn end(&self) -> usize {
        self.lo + self.mass.len()
    }
}

/// The comparison's exact operating characteristics for `cases` cases with A right with
/// probability `a` and B with `b` on every one, trials independent, judged at level α =
/// `alpha` and `min_effect`, at most `max_rounds` rounds. Each round convolves the undecided
/// states with the round's trinomial, then judges every state reached exactly as the runner
/// judges its counts ([`PairedBetting::decide`], a row at a time through
/// [`PairedBetting::decide_row`]) and absorbs the decided mass into its verdict.
///
/// `None` when α is not in (0, 1), `min_effect` not in (0, 1), a rate not in [0, 1], there
/// are no cases or no rounds, or the work passes [`EXACT_COMPARISON_WORK_LIMIT`] (the caller
/// simulates instead).
pub fn exact_comparison(
    alpha: f64,
    min_effect: f64,
    cases: u64,
    a: f64,
    b: f64,
    max_rounds: u32,
) -> Option<ComparisonCharacteristics> {
    within_work(
        alpha,
        min_effect,
        cases,
        a,
        b,
        max_rounds,
        EXACT_COMPARISON_WORK_LIMIT,
    )
}

/// [`exact_comparison`] giving up past `limit`.
// Long: one loop of the dynamic program, convolution then judgement, kept together so the
// order of a round reads as the runner's.
fn within_work(
    alpha: f64,
    min_effect: f64,
    cases: u64,
    a: f64,
    b: f64,
    max_rounds: u32,
    limit: u64,
) -> Option<ComparisonCharacteristics> {
    let test = PairedBetting::new(alpha)?;
    let rate = |p: f64| (0.0..=1.0).contains(&p);
    let effect = min_effect > 0.0 && min_effect < 1.0;
    if !(effect && rate(a) && rate(b) && cases > 0 && max_rounds > 0) {
        return None;
    }
    let outcomes = round_outcomes(cases, b * (1.0 - a), a * (1.0 - b))?;
    let m = usize::try_from(cases).ok()?;
    // alive[a_only]: the undecided mass after the rounds so far.
    let mut alive = vec![Row {
        lo: 0,
        mass: vec![1.0],
    }];
    let (mut better, mut worse, mut within, mut expected_rounds) = (0.0, 0.0, 0.0, 0.0);
    let mut work = 0u64;
    for r in 1..=u64::from(max_rounds) {
        let pairs = r * cases;
        let work_before = work;
        let mut next = reached(&alive, &outcomes, m);
        for (down, row) in alive.iter().enumerate() {
            if row.mass.is_empty() {
                continue;
            }
            for &(up, d, q) in &outcomes {
                let target = &mut next[down + d];
                let from = row.lo + up - target.lo;
                for (t, &x) in target.mass[from..from + row.mass.len()]
                    .iter_mut()
                    .zip(&row.mass)
                {
                    *t += x * q;
                }
            }
            work += (row.mass.len() * outcomes.len()) as u64;
        }
        for (a_only, row) in next.iter_mut().enumerate() {
            if row.mass.is_empty() {
                continue;
            }
            let (lo, hi) = (row.lo as u64, (row.end() - 1) as u64);
            let decisions = test.decide_row(pairs, a_only as u64, lo, hi, min_effect);
            // Four bisections over the row.
            work += 4 * EVIDENCE_COST * u64::from(u64::BITS - (hi - lo + 1).leading_zeros());
            let (mut first, mut last) = (usize::MAX, 0);
            for (i, mass) in row.mass.iter_mut().enumerate() {
                let verdict = match decisions.at(lo + i as u64) {
                    PairedDecision::Better => &mut better,
                    PairedDecision::Worse => &mut worse,
                    PairedDecision::Within => &mut within,
                    PairedDecision::NotBetter | PairedDecision::Continue => {
                        if *mass > 0.0 {
                            first = first.min(i);
                            last = i;
                        }
                        continue;
                    }
                };
                *verdict += *mass;
                expected_rounds += r as f64 * *mass;
                *mass = 0.0;
            }
            // Keep only the undecided stretch that holds mass (decided mass is zero now, and
            // so is a state no outcome of positive probability reaches, or whose mass
            // underflowed: neither can add to anything).
            *row = if first == usize::MAX {
                Row::default()
            } else {
                Row {
                    lo: row.lo + first,
                    mass: row.mass[first..=last].to_vec(),
                }
            };
        }
        while next.last().is_some_and(|row| row.mass.is_empty()) {
            next.pop();
        }
        alive = next;
        // Give up as soon as the rounds left, each costing what this one did, would pass the
        // limit, so a `plan` that falls back to simulation has not first spent the whole
        // limit. While undecided mass is left the band it lies in widens with the pairs, and a
        // round costs at least what the last did; when the mass runs out early (a large
        // difference) this can refuse a cell that would have fitted, which only means a
        // simulated row.
        let this_round = work - work_before;
        let left = u64::from(max_rounds) - r;
        if work.saturating_add(this_round.saturating_mul(left)) > limit {
            return None;
        }
        if alive.is_empty() {
            break;
        }
    }
    let undecided: f64 = alive.iter().flat_map(|row| &row.mass).sum();
    Some(ComparisonCharacteristics {
        expected_rounds: expected_rounds + undecided * f64::from(max_rounds),
        better,
        worse,
        within,
        undecided,
    })
}

/// A round's outcomes `(b_only, a_only, probability)` for `cases` pairs each +1 with
/// probability `up` and −1 with `down`: `Bin(cases, up)` +1 pairs, then among the rest
/// `Bin(rest, down/(1 − up))` −1 pairs. Outcomes of probability 0 are left out.
fn round_outcomes(cases: u64, up: f64, down: f64) -> Option<Vec<(usize, usize, f64)>> {
    let given_not_up = if up < 1.0 {
        (down / (1.0 - up)).min(1.0)
    } else {
        0.0
    };
    let mut out = Vec::new();
    for i in 0..=cases {
        let p_up = binomial_pmf(i, cases, up)?;
        for j in 0..=cases - i {
            let q = p_up * binomial_pmf(j, cases - i, given_not_up)?;
            if q > 0.0 {
                out.push((usize::try_from(i).ok()?, usize::try_from(j).ok()?, q));
            }
        }
    }
    Some(out)
}

/// The rows a round's `outcomes` can take `alive` to, zeroed: each from the least `lo` to the
/// greatest end the outcomes of positive probability shift its rows to.
fn reached(alive: &[Row], outcomes: &[(usize, usize, f64)], cases: usize) -> Vec<Row> {
    let mut bounds = vec![(usize::MAX, 0usize); alive.len() + cases];
    for (down, row) in alive.iter().enumerate() {
        if row.mass.is_empty() {
            continue;
        }
        for &(up, j, _) in outcomes {
            let (lo, end) = &mut bounds[down + j];
            *lo = (*lo).min(row.lo + up);
            *end = (*end).max(row.end() + up);
        }
    }
    bounds
        .into_iter()
        .map(|(lo, end)| {
            if lo == usize::MAX {
                Row::default()
            } else {
                Row {
                    lo,
                    mass: vec![0.0; end - lo],
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate_comparison;

    /// The exact figures against the simulated ones within four Monte Carlo standard errors
    /// (the rounds' standard deviation is at most half the cap).
    fn agrees(exact: &ComparisonCharacteristics, sim: &crate::SimulatedOc) {
        let total = exact.better + exact.worse + exact.within + exact.undecided;
        assert!((total - 1.0).abs() < 1e-9, "{exact:?}");
        let reps = f64::from(sim.reps);
        let share_se = |q: f64| 4.0 * (q * (1.0 - q) / reps).sqrt() + 1e-3;
        for (e, s) in [
            (exact.better, sim.p_up),
            (exact.worse, sim.p_down),
            (exact.within, sim.p_within),
            (exact.undecided, sim.p_undecided),
        ] {
            assert!((e - s).abs() <= share_se(e), "{exact:?} {sim:?}");
        }
        assert!(
            (exact.expected_rounds - sim.mean_rounds).abs() <= 4.0 * sim.se_rounds + 1e-9,
            "{exact:?} {sim:?}"
        );
    }

    #[test]
    fn the_exact_figures_agree_with_the_simulation_on_the_benchmark_cell() {
        // benches/cost_to_decision's cell: 10 cases, A 0.8, B 0.7 and 0.8, 100 rounds.
        for (b, seed) in [(0.7, 11), (0.8, 12)] {
            let exact = exact_comparison(0.05, 0.05, 10, 0.8, b, 100).unwrap();
            let sim = simulate_comparison(0.05, 0.05, &[(0.8, b); 10], 100, 2000, seed).unwrap();
            agrees(&exact, &sim);
        }
        // At equal rates a difference is claimed at most α of the time.
        let equal = exact_comparison(0.05, 0.05, 10, 0.8, 0.8, 100).unwrap();
        assert!(equal.better + equal.worse <= 0.05, "{equal:?}");
        assert!(
            (equal.better - equal.worse).abs() < 1e-12,
            "symmetric: {equal:?}"
        );
    }

    #[test]
    fn the_exact_figures_agree_with_the_simulation_on_a_small_cell() {
        // 3 cases, a wide effect, so "within" comes too; and a cell where B is better.
        for (a, b, seed) in [(0.9, 0.9, 21), (0.5, 0.5, 22), (0.6, 0.9, 23)] {
            let exact = exact_comparison(0.1, 0.3, 3, a, b, 60).unwrap();
            let sim = simulate_comparison(0.1, 0.3, &[(a, b); 3], 60, 4000, seed).unwrap();
            agrees(&exact, &sim);
            assert!(
                exact.better + exact.worse <= 0.1 || b > a,
                "{a} {b}: {exact:?}"
            );
        }
        let found = exact_comparison(0.1, 0.3, 3, 0.6, 0.9, 60).unwrap();
        assert!(found.better > 0.9 && found.worse < 1e-3, "{found:?}");
        let agreeing = exact_comparison(0.1, 0.3, 3, 0.9, 0.9, 60).unwrap();
        assert!(agreeing.within > 0.5, "{agreeing:?}");
    }

    #[test]
    fn rates_at_the_ends_and_refusals() {
        // B always right, A always wrong: every pair +1, decided the first round the
        // evidence (1 + f)^n mixed reaches 2/α.
        let sure = exact_comparison(0.05, 0.05, 13, 0.0, 1.0, 10).unwrap();
        assert_eq!(
            (sure.better, sure.expected_rounds, sure.undecided),
            (1.0, 1.0, 0.0)
        );
        // Both always right: every pair 0, "within" once enough agree.
        let floor = PairedBetting::new(0.05)
            .unwrap()
            .pairs_to_rule_out(0.05, 0.0)
            .unwrap();
        let same = exact_comparison(0.05, 0.05, 1, 1.0, 1.0, 10_000).unwrap();
        assert_eq!((same.within, same.expected_rounds), (1.0, floor as f64));
        assert_eq!(exact_comparison(0.0, 0.05, 10, 0.8, 0.7, 100), None);
        assert_eq!(exact_comparison(0.05, 0.0, 10, 0.8, 0.7, 100), None);
        assert_eq!(exact_comparison(0.05, 0.05, 0, 0.8, 0.7, 100), None);
        assert_eq!(exact_comparison(0.05, 0.05, 10, 1.2, 0.7, 100), None);
        assert_eq!(exact_comparison(0.05, 0.05, 10, 0.8, f64::NAN, 100), None);
        // Past the work limit: refused, for the caller to simulate.
        let cell = |limit| within_work(0.05, 0.05, 10, 0.8, 0.7, 20, limit);
        assert!(cell(u64::MAX).is_some());
        assert_eq!(cell(1_000_000), None);
    }
}
