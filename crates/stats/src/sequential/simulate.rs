//! Operating characteristics of the round-based tests by simulation, for `toolscore plan`: the
//! sequential suite gate and the sequential comparison on cases of any rates, by seeded Monte
//! Carlo, always with its standard error. When every case has the same rates there are exact
//! dynamic programs (`decide::gate::sequential_suite::exact_characteristics`,
//! [`super::exact_comparison`]); the comparison's state space, two counts after each round,
//! grows fast enough that `plan` uses it only within its work limit and simulates beyond.

use serde::{Deserialize, Serialize};

use super::{PairCounts, PairedBetting, PairedDecision};

/// What a simulated test did, over `reps` replications.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SimulatedOc {
    pub reps: u32,
    /// Mean rounds to a decision (the cap when undecided), and its Monte Carlo standard error.
    pub mean_rounds: f64,
    pub se_rounds: f64,
    /// Shares of replications that passed (or found B better), failed (or found B worse),
    /// found no difference as large as the effect, and ended undecided.
    pub p_up: f64,
    pub p_down: f64,
    pub p_within: f64,
    pub p_undecided: f64,
}

/// A small seeded generator of uniforms in [0, 1) (splitmix64): the plan's figures, and the
/// benchmark's fake answers, are reproducible run to run.
pub struct SeededUniform(u64);

impl SeededUniform {
    pub fn new(seed: u64) -> Self {
        SeededUniform(seed)
    }

    pub fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D1_049B_B133_111E);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Tallies replications into a [`SimulatedOc`].
#[derive(Default)]
struct Tally {
    rounds: Vec<f64>,
    up: u32,
    down: u32,
    within: u32,
}

impl Tally {
    fn add(&mut self, rounds: u32, decision: PairedDecision) {
        self.rounds.push(f64::from(rounds));
        match decision {
            PairedDecision::Better => self.up += 1,
            PairedDecision::Worse => self.down += 1,
            PairedDecision::Within => self.within += 1,
            // No simulated rule stops for futility.
            PairedDecision::NotBetter | PairedDecision::Continue => {}
        }
    }

    fn finish(self) -> SimulatedOc {
        let reps = self.rounds.len() as f64;
        let mean = self.rounds.iter().sum::<f64>() / reps;
        let var = self.rounds.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (reps - 1.0);
        let share = |n: u32| f64::from(n) / reps;
        SimulatedOc {
            reps: self.rounds.len() as u32,
            mean_rounds: mean,
            se_rounds: (var / reps).sqrt(),
            p_up: share(self.up),
            p_down: share(self.down),
            p_within: share(self.within),
            p_undecided: 1.0 - share(self.up + self.down + self.within),
        }
    }
}

/// Runs `reps` replications of a round-based test: each round `round` adds one round's
/// outcomes to the counts, then `decide` judges them, until a decision or `max_rounds`.
fn simulate(
    reps: u32,
    max_rounds: u32,
    seed: u64,
    round: impl Fn(&mut SeededUniform, &mut PairCounts),
    decide: impl Fn(PairCounts) -> PairedDecision,
) -> Option<SimulatedOc> {
    if reps < 2 {
        return None;
    }
    let mut u = SeededUniform::new(seed);
    let mut tally = Tally::default();
    for _ in 0..reps {
        let mut c = PairCounts::default();
        let mut decision = PairedDecision::Continue;
        let mut r = 0;
        while r < max_rounds && decision == PairedDecision::Continue {
            round(&mut u, &mut c);
            r += 1;
            decision = decide(c);
        }
        tally.add(r, decision);
    }
    Some(tally.finish())
}

/// The sequential suite gate at bar `t` on cases of true rates `rates` (one trial of each a
/// round), at most `max_rounds` rounds: `p_up` is PASS, `p_down` FAIL. `None` for fewer than 2
/// replications, no cases, or an α outside (0, 1).
pub fn simulate_suite_gate(
    t: f64,
    alpha: f64,
    rates: &[f64],
    max_rounds: u32,
    reps: u32,
    seed: u64,
) -> Option<SimulatedOc> {
    let test = PairedBetting::new(alpha)?;
    if rates.is_empty() {
        return None;
    }
    let mu = 2.0 * t - 1.0;
    simulate(
        reps,
        max_rounds,
        seed,
        |u, c| {
            for &p in rates {
                let ok = u.unit() < p;
                c.add(!ok, ok);
            }
        },
        |c| test.decide_one_sided(c, mu),
    )
}

/// The sequential comparison on cases of true rates `(a, b)` per case, judged at
/// `min_effect`, at most `max_rounds` rounds: `p_up` is "B better", `p_down` "B worse".
/// `None` as for [`simulate_suite_gate`].
pub fn simulate_comparison(
    alpha: f64,
    min_effect: f64,
    rates: &[(f64, f64)],
    max_rounds: u32,
    reps: u32,
    seed: u64,
) -> Option<SimulatedOc> {
    let test = PairedBetting::new(alpha)?;
    if rates.is_empty() {
        return None;
    }
    simulate(
        reps,
        max_rounds,
        seed,
        |u, c| {
            for &(a, b) in rates {
                c.add(u.unit() < a, u.unit() < b);
            }
        },
        |c| test.decide(c, min_effect),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suite_gate_keeps_alpha_at_the_bar_and_decides_above_it() {
        let at_bar = simulate_suite_gate(0.8, 0.05, &[0.8; 10], 100, 2000, 1).unwrap();
        // Monte Carlo se of a 5% rate at 2,000 replications: 0.005.
        assert!(at_bar.p_up <= 0.05 + 2.0 * 0.005, "{at_bar:?}");
        let above = simulate_suite_gate(0.8, 0.05, &[0.95; 10], 100, 500, 2).unwrap();
        assert!(above.p_up > 0.99 && above.mean_rounds < 10.0, "{above:?}");
        // Cases that differ but average exactly the bar: still no more than α.
        let mixed = [0.6, 1.0, 0.7, 0.9, 0.8, 0.8];
        let spread = simulate_suite_gate(0.8, 0.05, &mixed, 100, 2000, 3).unwrap();
        assert!(spread.p_up <= 0.05 + 2.0 * 0.005, "{spread:?}");
        assert_eq!(simulate_suite_gate(0.8, 0.05, &[], 100, 10, 1), None);
    }

    #[test]
    fn the_comparison_agrees_with_the_binary_benchmark() {
        // benches/cost_to_decision measured 35.2 ± 0.5 rounds and "worse" 0.987 through the
        // binary for this cell (10 cases, A 0.8, B 0.7, 100 rounds, 2,000 runs).
        let cell = simulate_comparison(0.05, 0.05, &[(0.8, 0.7); 10], 100, 2000, 4).unwrap();
        let tolerance = 3.0 * (cell.se_rounds.powi(2) + 0.5f64.powi(2)).sqrt();
        assert!((cell.mean_rounds - 35.2).abs() <= tolerance, "{cell:?}");
        assert!((cell.p_down - 0.987).abs() <= 0.01, "{cell:?}");
        let equal = simulate_comparison(0.05, 0.05, &[(0.8, 0.8); 10], 100, 2000, 5).unwrap();
        assert!(equal.p_up + equal.p_down <= 0.05 + 2.0 * 0.005, "{equal:?}");
    }
}
