//! Exact operating characteristics of a sequential test (stats.md §6.3): its expected trials
//! and its chances of PASS, FAIL and ending undecided at a true rate, by dynamic programming
//! over (n, S_n), with no Monte Carlo error: as the reference runs it (to the budget), or as
//! the case gate runs it (also stopping a case once no decision is reachable within the
//! budget).

use serde::{Deserialize, Serialize};

use super::{Boundaries, Reach};

/// Exact operating characteristics of a sequential test run at most `n_max` trials on a case
/// of true rate p (stats.md §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OperatingCharacteristics {
    /// Expected number of trials until a decision or the budget.
    pub expected_n: f64,
    /// Probability of PASS within the budget.
    pub p_pass: f64,
    /// Probability of a decided FAIL within the budget.
    pub p_fail: f64,
    /// Probability of ending undecided (inconclusive): at `n_max`, or, curtailed, as soon as
    /// no decision was reachable by `n_max`. It adds to the miss rate beyond β.
    pub p_truncated: f64,
    /// Median trials used: the smallest n with `P(N ≤ n) ≥ ½`.
    pub median_n: u64,
    /// 90th percentile of trials used.
    pub p90_n: u64,
    /// 99th percentile of trials used.
    pub p99_n: u64,
}

/// Exact operating characteristics of `gate` at true rate `p` with a budget of `n_max`
/// trials, by dynamic programming over (n, S_n) (stats.md §6.3): no Monte Carlo error, so
/// a report can state "at p = 0.97 this gate needs 95.5 trials on average" as a fact about
/// the design. Every undecided path runs to `n_max`, as in the reference's tables.
///
/// Only undecided states are carried. Between the two boundaries there are a handful of
/// them (at most `(ln(1/α) − ln β)/(a − b) + 1`, 9, for the §6.2 SPRT), so the cost is
/// O(n_max · that width), and the loop ends as soon as no probability is left undecided.
///
/// `None` when `p` is NaN or outside [0, 1], or `n_max = 0`.
pub fn operating_characteristics(
    gate: &impl Boundaries,
    p: f64,
    n_max: u64,
) -> Option<OperatingCharacteristics> {
    dynamic_program(gate, p, n_max, false)
}

/// [`operating_characteristics`] of the gate as `--sequential` runs it: a path also stops,
/// undecided, as soon as neither boundary is reachable by `n_max`
/// ([`Boundaries::can_decide_by`]). The chances of PASS, FAIL and no decision are the same;
/// only the trials spent on cases that could no longer decide are saved.
pub fn curtailed_operating_characteristics(
    gate: &impl Boundaries,
    p: f64,
    n_max: u64,
) -> Option<OperatingCharacteristics> {
    dynamic_program(gate, p, n_max, true)
}

// Long: one dynamic-programming pass, kept whole to be read against its formula above.
fn dynamic_program(
    gate: &impl Boundaries,
    p: f64,
    n_max: u64,
    curtail: bool,
) -> Option<OperatingCharacteristics> {
    if !(0.0..=1.0).contains(&p) || n_max == 0 {
        return None;
    }
    let q = 1.0 - p;
    let reach = curtail.then(|| Reach::of(gate, n_max));
    // mass[i] = P(undecided after n trials with S_n = lo + i).
    let mut lo: u64 = 0;
    let mut mass: Vec<f64> = vec![1.0];
    let (mut p_pass, mut p_fail, mut expected_n) = (0.0_f64, 0.0_f64, 0.0_f64);
    let mut cumulative = 0.0_f64;
    let targets = [0.5, 0.9, 0.99];
    let mut quantiles: [Option<u64>; 3] = [None; 3];
    let mut last_stop = 0;
    let mut p_undecided_early = 0.0_f64;
    let mut n = 0;
    while n < n_max && !mass.is_empty() {
        n += 1;
        // One more trial: S stays with probability q, moves up with probability p.
        let mut next = vec![0.0; mass.len() + 1];
        for (i, &m) in mass.iter().enumerate() {
            next[i] += m * q;
            next[i + 1] += m * p;
        }
        mass = next;
        // Absorb the states at or beyond either boundary.
        let mut stopped = 0.0;
        if let Some(pass_at) = gate.pass_boundary(n) {
            // Indices i with lo + i ≥ pass_at.
            let keep = pass_at.saturating_sub(lo).min(mass.len() as u64) as usize;
            let passed: f64 = mass.drain(keep..).sum();
            p_pass += passed;
            stopped += passed;
        }
        if let Some(fail_at) = gate.fail_boundary(n) {
            // Indices i with lo + i ≤ fail_at.
            let cut = (fail_at + 1).saturating_sub(lo).min(mass.len() as u64) as usize;
            let failed: f64 = mass.drain(..cut).sum();
            lo += cut as u64;
            p_fail += failed;
            stopped += failed;
        }
        // States with no probability left (p = 0 or 1) need not be carried.
        while mass.last() == Some(&0.0) {
            mass.pop();
        }
        while mass.first() == Some(&0.0) {
            mass.remove(0);
            lo += 1;
        }
        // Curtailed: states from which no decision is reachable by n_max stop here,
        // undecided. The reachable ones are the highest S (toward PASS) and the lowest (toward
        // FAIL); those between may hold a gap of zeros, which the loop carries harmlessly.
        if let Some(reach) = reach.filter(|_| n < n_max) {
            let mut undecided = 0.0;
            for (i, m) in mass.iter_mut().enumerate() {
                if *m > 0.0 && !reach.can_decide(lo + i as u64, n) {
                    undecided += *m;
                    *m = 0.0;
                }
            }
            while mass.last() == Some(&0.0) {
                mass.pop();
            }
            let zeros = mass.iter().take_while(|&&m| m == 0.0).count();
            mass.drain(..zeros);
            lo += zeros as u64;
            p_undecided_early += undecided;
            stopped += undecided;
        }
        if stopped > 0.0 {
            expected_n += n as f64 * stopped;
            cumulative += stopped;
            last_stop = n;
            for (slot, &target) in quantiles.iter_mut().zip(&targets) {
                if slot.is_none() && cumulative >= target {
                    *slot = Some(n);
                }
            }
        }
    }
    let at_budget: f64 = mass.iter().sum();
    if at_budget > 0.0 {
        expected_n += n_max as f64 * at_budget;
        last_stop = n_max;
    }
    let p_truncated = at_budget + p_undecided_early;
    // A quantile the stopped mass did not reach (the rest is truncated, or rounding left
    // the cumulative sum a hair short of it) is the last n at which anything stopped.
    let [median_n, p90_n, p99_n] = quantiles.map(|q| q.unwrap_or(last_stop));
    Some(OperatingCharacteristics {
        expected_n,
        p_pass,
        p_fail,
        p_truncated,
        median_n,
        p90_n,
        p99_n,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{
        MixtureGate, SequentialDecision, SequentialKind, SequentialTest, SprtGate,
        curtailed_operating_characteristics,
    };
    use super::*;
    use crate::test_support::{close, uniforms};

    fn reference_gate() -> SprtGate {
        SprtGate::new(0.90, 0.95, 0.05, 0.05).expect("valid")
    }

    /// Rows of the "SPRT-Ville (recommended)" and "SPRT-Ville truncated at n=284" tables in
    /// §6.3: (p, E[N], P(PASS), P(FAIL decided), P(truncated), median, 90%, 99%).
    type Row = (f64, f64, f64, f64, f64, u64, u64, u64);

    const VILLE_1000: [Row; 10] = [
        (0.80, 34.4, 0.0000, 1.0000, 0.0000, 31, 59, 94),
        (0.85, 56.3, 0.0005, 0.9995, 0.0000, 49, 102, 173),
        (0.88, 90.3, 0.0070, 0.9930, 0.0000, 76, 173, 308),
        (0.90, 143.1, 0.0468, 0.9531, 0.0001, 111, 286, 531),
        (0.92, 238.1, 0.2967, 0.6959, 0.0073, 180, 495, 940),
        (0.9276, 259.0, 0.5099, 0.4791, 0.0110, 194, 540, 1000),
        (0.93, 259.0, 0.5840, 0.4053, 0.0106, 194, 536, 1000),
        (0.95, 167.0, 0.9624, 0.0375, 0.0001, 139, 305, 553),
        (0.97, 95.5, 0.9992, 0.0008, 0.0000, 84, 153, 236),
        (0.99, 65.1, 1.0000, 0.0000, 0.0000, 56, 84, 111),
    ];

    const VILLE_284: [Row; 10] = [
        (0.80, 34.4, 0.0000, 1.0000, 0.0000, 31, 59, 94),
        (0.85, 56.2, 0.0005, 0.9993, 0.0002, 49, 102, 173),
        (0.88, 89.4, 0.0069, 0.9783, 0.0148, 76, 173, 284),
        (0.90, 132.4, 0.0410, 0.8574, 0.1016, 111, 284, 284),
        (0.92, 182.3, 0.2039, 0.5002, 0.2959, 180, 284, 284),
        (0.9276, 191.4, 0.3361, 0.3309, 0.3330, 194, 284, 284),
        (0.93, 192.1, 0.3868, 0.2811, 0.3321, 194, 284, 284),
        (0.95, 153.9, 0.8432, 0.0337, 0.1231, 139, 284, 284),
        (0.97, 95.4, 0.9969, 0.0008, 0.0024, 84, 153, 236),
        (0.99, 65.1, 1.0000, 0.0000, 0.0000, 56, 84, 111),
    ];

    fn check_rows(rows: &[Row], n_max: u64) {
        let g = reference_gate();
        for &(p, en, pass, fail, trunc, median, p90, p99) in rows {
            let oc = operating_characteristics(&g, p, n_max).expect("defined");
            let what = format!("p={p} n_max={n_max}: {oc:?}");
            // The table rounds E[N] to 0.1 and probabilities to 1e-4.
            assert!((oc.expected_n - en).abs() <= 0.05 + 1e-9, "E[N] {what}");
            assert!((oc.p_pass - pass).abs() <= 5e-5 + 1e-12, "PASS {what}");
            assert!((oc.p_fail - fail).abs() <= 5e-5 + 1e-12, "FAIL {what}");
            assert!(
                (oc.p_truncated - trunc).abs() <= 5e-5 + 1e-12,
                "trunc {what}"
            );
            assert_eq!(
                (oc.median_n, oc.p90_n, oc.p99_n),
                (median, p90, p99),
                "{what}"
            );
            close(oc.p_pass + oc.p_fail + oc.p_truncated, 1.0, 1e-12, "total");
        }
    }

    #[test]
    fn operating_characteristics_match_the_headline_table() {
        check_rows(&VILLE_1000, 1000);
    }

    #[test]
    fn operating_characteristics_match_the_truncated_table() {
        check_rows(&VILLE_284, 284);
    }

    #[test]
    fn operating_characteristics_match_the_sensitivity_table() {
        // §6.3 sensitivity: (α, β, p₁, fixed CP n) → E[N] at p = 0.80, 0.90, 0.95, 0.97, 0.99,
        // P(PASS) at 0.90, P(FAIL) at p₁; N_max = 4 × the fixed CP n.
        type SensitivityRow = (f64, f64, f64, u64, [f64; 5], f64, f64);
        let table: [SensitivityRow; 9] = [
            (
                0.05,
                0.05,
                0.93,
                934,
                [69.5, 460.4, 226.1, 142.6, 104.4],
                0.0471,
                0.0421,
            ),
            (
                0.05,
                0.05,
                0.95,
                298,
                [34.4, 143.1, 167.0, 95.5, 65.1],
                0.0468,
                0.0375,
            ),
            (
                0.05,
                0.05,
                0.97,
                129,
                [19.1, 59.2, 112.4, 77.5, 48.6],
                0.0465,
                0.0321,
            ),
            (
                0.05,
                0.2,
                0.93,
                549,
                [38.8, 250.7, 222.7, 142.6, 104.4],
                0.0408,
                0.1697,
            ),
            (
                0.05,
                0.2,
                0.95,
                179,
                [19.8, 80.4, 137.1, 93.1, 65.0],
                0.0413,
                0.1513,
            ),
            (
                0.05,
                0.2,
                0.97,
                76,
                [11.6, 35.0, 72.7, 65.8, 47.9],
                0.0420,
                0.1263,
            ),
            (
                0.01,
                0.05,
                0.93,
                1367,
                [69.5, 495.5, 346.8, 218.9, 160.1],
                0.0094,
                0.0437,
            ),
            (
                0.01,
                0.05,
                0.95,
                435,
                [34.4, 153.8, 258.9, 146.0, 99.3],
                0.0094,
                0.0390,
            ),
            (
                0.01,
                0.05,
                0.97,
                197,
                [19.1, 63.4, 178.3, 119.6, 74.7],
                0.0094,
                0.0333,
            ),
        ];
        for (alpha, beta, p1, cp_n, en, pass_at_t, fail_at_p1) in table {
            let g = SprtGate::new(0.90, p1, alpha, beta).unwrap();
            let n_max = 4 * cp_n;
            for (p, want) in [0.80, 0.90, 0.95, 0.97, 0.99].into_iter().zip(en) {
                let oc = operating_characteristics(&g, p, n_max).unwrap();
                assert!(
                    (oc.expected_n - want).abs() <= 0.05 + 1e-9,
                    "α={alpha} β={beta} p1={p1} p={p}: {} vs {want}",
                    oc.expected_n
                );
            }
            let at_t = operating_characteristics(&g, 0.90, n_max).unwrap();
            assert!((at_t.p_pass - pass_at_t).abs() <= 5e-5 + 1e-12, "{at_t:?}");
            assert!(at_t.p_pass <= alpha, "Ville: P(PASS | p = t) ≤ α");
            let at_p1 = operating_characteristics(&g, p1, n_max).unwrap();
            // This column counts an inconclusive run as FAIL (the safe-side reading of §6.2):
            // at p₁ = 0.97, N_max = 516 the decided FAILs are 0.03203 and the truncated runs
            // 0.00003, which the table shows as 0.0321.
            let fail_or_inconclusive = at_p1.p_fail + at_p1.p_truncated;
            assert!(
                (fail_or_inconclusive - fail_at_p1).abs() <= 5e-5 + 1e-12,
                "{at_p1:?}"
            );
            assert!(at_p1.p_fail <= beta, "Ville: P(FAIL | p = p1) ≤ β");
        }
    }

    #[test]
    fn operating_characteristics_edges() {
        let g = reference_gate();
        // p = 1: passes at the earliest possible n, 56, with certainty.
        let all = operating_characteristics(&g, 1.0, 1000).unwrap();
        assert_eq!((all.p_pass, all.expected_n, all.median_n), (1.0, 56.0, 56));
        // p = 0: fails at n = 5.
        let none = operating_characteristics(&g, 0.0, 1000).unwrap();
        assert_eq!((none.p_fail, none.expected_n, none.p99_n), (1.0, 5.0, 5));
        // A budget too small to decide anything: all truncated at n_max.
        let short = operating_characteristics(&g, 0.9, 4).unwrap();
        assert_eq!(
            (short.p_truncated, short.expected_n, short.median_n),
            (1.0, 4.0, 4)
        );
        // A huge budget costs nothing once every path has decided (p far from p*).
        let long = operating_characteristics(&g, 0.5, u64::MAX).unwrap();
        close(long.p_fail, 1.0, 1e-12, "fails");
        for p in [f64::NAN, -0.1, 1.1] {
            assert_eq!(operating_characteristics(&g, p, 1000), None);
        }
        assert_eq!(operating_characteristics(&g, 0.9, 0), None);
    }

    /// Runs the gate on simulated Bernoulli(p) trials until it decides or reaches n_max:
    /// (PASS, FAIL, truncated) counts and the mean and sd of the trials used.
    fn simulate(
        g: &impl Boundaries,
        p: f64,
        n_max: u64,
        reps: u32,
        seed: u64,
    ) -> ([u32; 3], f64, f64) {
        simulate_run(g, p, n_max, reps, seed, false)
    }

    /// As [`simulate`]; with `curtail`, also stopping (undecided) the way the case gate does,
    /// once `can_decide_by` says no decision is reachable by n_max.
    fn simulate_run(
        g: &impl Boundaries,
        p: f64,
        n_max: u64,
        reps: u32,
        seed: u64,
        curtail: bool,
    ) -> ([u32; 3], f64, f64) {
        let mut u = uniforms(seed);
        let mut counts = [0u32; 3];
        let (mut sum, mut sum_sq) = (0.0, 0.0);
        for _ in 0..reps {
            let (mut s, mut n) = (0u64, 0u64);
            let outcome = loop {
                n += 1;
                s += u64::from(u() < p);
                match g.decide(s, n).unwrap() {
                    SequentialDecision::Pass => break 0,
                    SequentialDecision::Fail => break 1,
                    SequentialDecision::Continue if n == n_max => break 2,
                    SequentialDecision::Continue if curtail && !g.can_decide_by(s, n, n_max) => {
                        break 2;
                    }
                    SequentialDecision::Continue => {}
                }
            };
            counts[outcome] += 1;
            sum += n as f64;
            sum_sq += (n * n) as f64;
        }
        let mean = sum / f64::from(reps);
        let sd = ((sum_sq - f64::from(reps) * mean * mean) / f64::from(reps - 1)).sqrt();
        (counts, mean, sd)
    }

    /// Simulates `g` at rates around its threshold `t` and p₁ and checks the simulation
    /// against the exact dynamic program, and the error rates against (α, β).
    fn check_against_simulation(g: &impl Boundaries, t: f64, p1: f64, alpha: f64, beta: f64) {
        let (reps, n_max) = (2000u32, 1000u64);
        let r = f64::from(reps);
        let mc = |rate: f64| (rate * (1.0 - rate) / r).sqrt();
        let rates = [t, p1, (p1 + 1.0) / 2.0, t - 0.1];
        for (p, seed) in rates.into_iter().zip(11..) {
            let ([pass, fail, trunc], mean_n, sd_n) = simulate(g, p, n_max, reps, seed);
            let (pass, fail, trunc) = (
                f64::from(pass) / r,
                f64::from(fail) / r,
                f64::from(trunc) / r,
            );
            if p == t {
                assert!(pass <= alpha + 3.0 * mc(alpha), "false PASS rate {pass}");
            }
            if p == p1 {
                assert!(fail <= beta + 3.0 * mc(beta), "false FAIL rate {fail}");
            }
            let oc = operating_characteristics(g, p, n_max).unwrap();
            // Within three Monte Carlo standard errors of the exact values (plus one rep,
            // for rates so close to 0 or 1 that the binomial error vanishes).
            let tol = |exact: f64| 3.0 * mc(exact) + 1.0 / r;
            assert!(
                (pass - oc.p_pass).abs() <= tol(oc.p_pass),
                "p={p} PASS {pass} vs {oc:?}"
            );
            assert!(
                (fail - oc.p_fail).abs() <= tol(oc.p_fail),
                "p={p} FAIL {fail} vs {oc:?}"
            );
            assert!(
                (trunc - oc.p_truncated).abs() <= tol(oc.p_truncated),
                "p={p} trunc"
            );
            assert!(
                (mean_n - oc.expected_n).abs() <= 3.0 * sd_n / r.sqrt(),
                "p={p} E[N] {mean_n} ± {} vs {}",
                sd_n / r.sqrt(),
                oc.expected_n
            );
        }
    }

    #[test]
    fn the_gate_as_it_runs_agrees_with_the_curtailed_dp() {
        // The default case gate (mixture PASS, FAIL below the bar) stopping as the gate does:
        // at a decision, at the budget, or once neither boundary is reachable by it.
        let gate =
            SequentialTest::new(SequentialKind::Mixture, 0.8, 0.9, None, 0.05, 0.0125).unwrap();
        let (reps, n_max) = (3000u32, 200u64);
        let r = f64::from(reps);
        for (p, seed) in [(0.7, 31), (0.8, 32), (0.83, 33), (0.87, 34), (0.95, 35)] {
            let (counts, mean_n, sd_n) = simulate_run(&gate, p, n_max, reps, seed, true);
            let oc = curtailed_operating_characteristics(&gate, p, n_max).unwrap();
            let shares = counts.map(|c| f64::from(c) / r);
            for (share, exact) in shares
                .into_iter()
                .zip([oc.p_pass, oc.p_fail, oc.p_truncated])
            {
                let tol = 3.0 * (exact * (1.0 - exact) / r).sqrt() + 1.0 / r;
                assert!((share - exact).abs() <= tol, "p={p}: {shares:?} vs {oc:?}");
            }
            assert!(
                (mean_n - oc.expected_n).abs() <= 3.0 * sd_n / r.sqrt(),
                "p={p} E[N] {mean_n} vs {}",
                oc.expected_n
            );
        }
    }

    #[test]
    fn simulation_keeps_the_guarantees_and_agrees_with_the_exact_dp() {
        check_against_simulation(&reference_gate(), 0.90, 0.95, 0.05, 0.05);
        let mixture = MixtureGate::new(0.8, 0.9, 0.05, 0.0125).unwrap();
        check_against_simulation(&mixture, 0.8, 0.9, 0.05, 0.0125);
    }
}
