//! Coverage of the intervals the report prints, proven by simulation (seeded, deterministic).
//!
//! True case rates are drawn from a population (Beta(2,2), Beta(0.5,0.5), Beta(20,1),
//! Beta(1,20), or a point mass), each of m cases is run K times, and we count how often:
//! - each case's interval (`stats::rate_interval`, Wilson with the Brown–Cai–DasGupta edge
//!   modification, what the report prints for every rate) covers that case's true rate;
//! - the suite interval (`stats::suite_interval`, what the report calls case-level) covers the
//!   population mean;
//! - the pooled Wilson interval over all trials covers the population mean (it should not be
//!   trusted for that, and the table shows why).
//!
//! Every CI run checks the grid at 95% with 1,000 replications per cell. The full grid (90, 95
//! and 99%, 10,000 replications) runs with `TOOLSCORE_COVERAGE_FULL=1 cargo test --release
//! --test it coverage:: -- --nocapture` and prints the table docs/concepts/reading-the-report.md
//! quotes.

use toolscore_stats::{newcombe_interval, paired_mean_difference, rate_interval, suite_interval};

/// SplitMix64: small, fast, and good enough for Monte Carlo with a fixed seed.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        // Box–Muller; one of the pair is enough here.
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// Gamma(shape, 1) by Marsaglia and Tsang, boosted for shape < 1.
    fn gamma(&mut self, shape: f64) -> f64 {
        if shape < 1.0 {
            return self.gamma(shape + 1.0) * self.uniform().powf(1.0 / shape);
        }
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = (1.0 + c * x).powi(3);
            if v <= 0.0 {
                continue;
            }
            let u = self.uniform();
            if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
                return d * v;
            }
        }
    }

    fn beta(&mut self, a: f64, b: f64) -> f64 {
        let x = self.gamma(a);
        let y = self.gamma(b);
        x / (x + y)
    }

    fn binomial(&mut self, k: u64, p: f64) -> u64 {
        (0..k).filter(|_| self.uniform() < p).count() as u64
    }
}

#[derive(Clone, Copy, Debug)]
enum Population {
    Beta(f64, f64),
    Point(f64),
}

impl Population {
    fn mean(self) -> f64 {
        match self {
            Population::Beta(a, b) => a / (a + b),
            Population::Point(p) => p,
        }
    }

    fn draw(self, rng: &mut Rng) -> f64 {
        match self {
            Population::Beta(a, b) => rng.beta(a, b),
            Population::Point(p) => p,
        }
    }

    fn label(self) -> String {
        match self {
            Population::Beta(a, b) => format!("Beta({a},{b})"),
            Population::Point(p) => format!("point mass {p}"),
        }
    }
}

const POPULATIONS: [Population; 5] = [
    Population::Beta(2.0, 2.0),
    Population::Beta(0.5, 0.5),
    Population::Beta(20.0, 1.0),
    Population::Beta(1.0, 20.0),
    Population::Point(0.8),
];
const CASES: [usize; 3] = [5, 20, 61];
const TRIALS: [u64; 3] = [1, 5, 50];

/// Coverage of one cell of the grid.
#[derive(Debug)]
struct Cell {
    population: Population,
    m: usize,
    k: u64,
    conf: f64,
    reps: u32,
    per_case_wilson: f64,
    suite: f64,
    pooled: f64,
}

impl Cell {
    /// Monte Carlo standard error of a coverage estimate near the nominal level.
    fn mc_se(&self) -> f64 {
        (self.conf * (1.0 - self.conf) / f64::from(self.reps)).sqrt()
    }
}

fn simulate(population: Population, m: usize, k: u64, conf: f64, reps: u32, seed: u64) -> Cell {
    let mut rng = Rng(seed);
    let mu = population.mean();
    let (mut case_hits, mut case_total) = (0u64, 0u64);
    let (mut suite_hits, mut pooled_hits) = (0u32, 0u32);
    let mut counts = vec![(0u64, 0u64); m];
    for _ in 0..reps {
        let (mut x_all, mut n_all) = (0u64, 0u64);
        for c in counts.iter_mut() {
            let p = population.draw(&mut rng);
            let x = rng.binomial(k, p);
            *c = (x, k);
            x_all += x;
            n_all += k;
            let iv = rate_interval(x, k, conf).expect("k >= 1");
            case_hits += u64::from(iv.contains(p));
            case_total += 1;
        }
        let suite = suite_interval(&counts, conf).expect("m >= 2");
        suite_hits += u32::from(suite.interval.contains(mu));
        let pooled = rate_interval(x_all, n_all, conf).expect("n > 0");
        pooled_hits += u32::from(pooled.contains(mu));
    }
    Cell {
        population,
        m,
        k,
        conf,
        reps,
        per_case_wilson: case_hits as f64 / case_total as f64,
        suite: f64::from(suite_hits) / f64::from(reps),
        pooled: f64::from(pooled_hits) / f64::from(reps),
    }
}

fn grid(confs: &[f64], reps: u32) -> Vec<Cell> {
    let mut cells = Vec::new();
    let mut seed = 20261203u64;
    for &conf in confs {
        for population in POPULATIONS {
            for m in CASES {
                for k in TRIALS {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    cells.push(simulate(population, m, k, conf, reps, seed));
                }
            }
        }
    }
    cells
}

fn table(cells: &[Cell]) -> String {
    let mut out = String::from(
        "| level | population | m cases | K trials | case interval | suite (case-level) | pooled Wilson |\n|---|---|---|---|---|---|---|\n",
    );
    for c in cells {
        out.push_str(&format!(
            "| {:.0}% | {} | {} | {} | {:.1}% | {:.1}% | {:.1}% |\n",
            c.conf * 100.0,
            c.population.label(),
            c.m,
            c.k,
            c.per_case_wilson * 100.0,
            c.suite * 100.0,
            c.pooled * 100.0
        ));
    }
    out
}

/// A cell meets the goal when its coverage is at least nominal − 1.5 points, allowing for the
/// Monte Carlo error of the estimate itself (2.5 standard errors, so a seeded run does not
/// fail on noise alone).
fn meets_goal(coverage: f64, cell: &Cell) -> bool {
    coverage >= cell.conf - 0.015 - 2.5 * cell.mc_se()
}

fn check(cells: &[Cell]) {
    let mut failures = Vec::new();
    for c in cells {
        if !meets_goal(c.per_case_wilson, c) {
            failures.push(format!("case interval {c:?}"));
        }
        if !meets_goal(c.suite, c) {
            failures.push(format!("suite {c:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "coverage below goal:\n{}\n{}",
        failures.join("\n"),
        table(cells)
    );
}

#[test]
fn suite_and_case_intervals_keep_their_coverage() {
    let cells = grid(&[0.95], 1_000);
    check(&cells);
    // The pooled Wilson interval is not a suite-level interval: where cases differ it
    // under-covers badly, which is why the report quotes the case-level one.
    let worst_pooled = cells
        .iter()
        .filter(|c| matches!(c.population, Population::Beta(0.5, 0.5)) && c.k == 50)
        .map(|c| c.pooled)
        .fold(1.0, f64::min);
    assert!(worst_pooled < 0.6, "{worst_pooled}");
}

#[test]
fn full_coverage_grid() {
    if std::env::var_os("TOOLSCORE_COVERAGE_FULL").is_none() {
        return;
    }
    let cells = grid(&[0.90, 0.95, 0.99], 10_000);
    println!("{}", table(&cells));
    check(&cells);
}

/// The intervals `toolscore compare` prints keep their promise: for two arms run on the same
/// cases, where arm B lifts each case's rate by 20% of its headroom (q = p + 0.2·(1 − p), so
/// the lift differs from case to case), the paired t interval of the mean per-case difference
/// covers the population's mean lift, and each case's Newcombe interval covers its own lift,
/// at least 93% of the time at 95%.
#[test]
fn comparison_intervals_keep_their_coverage() {
    let population = Population::Beta(2.0, 2.0);
    // E[0.2·(1 − p)] for p ~ Beta(2, 2).
    let true_mean_lift = 0.2 * (1.0 - population.mean());
    for (m, k) in [(20usize, 5u64), (20, 50), (61, 5), (61, 50)] {
        let mut rng = Rng(0x5EED ^ (m as u64 * 1000 + k));
        let reps = 1000;
        let (mut suite_hits, mut case_hits, mut case_total) = (0u32, 0u64, 0u64);
        for _ in 0..reps {
            let mut diffs = Vec::with_capacity(m);
            for _ in 0..m {
                let p = population.draw(&mut rng);
                let q = p + 0.2 * (1.0 - p);
                let (xa, xb) = (rng.binomial(k, p), rng.binomial(k, q));
                diffs.push((xb as f64 - xa as f64) / k as f64);
                if let Some(iv) = newcombe_interval(xb, k, xa, k, 0.95) {
                    case_total += 1;
                    case_hits += u64::from(iv.lo <= q - p && q - p <= iv.hi);
                }
            }
            let d = paired_mean_difference(&diffs, 0.95).expect("m >= 2");
            suite_hits +=
                u32::from(d.interval.lo <= true_mean_lift && true_mean_lift <= d.interval.hi);
        }
        let suite = f64::from(suite_hits) / f64::from(reps);
        let case = case_hits as f64 / case_total as f64;
        assert!(suite >= 0.93, "m={m} K={k}: paired t covers {suite}");
        assert!(case >= 0.93, "m={m} K={k}: Newcombe covers {case}");
    }
}
