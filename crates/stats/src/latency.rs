//! Latency: answered trials' latencies in a histogram (flat memory in the number of trials),
//! nearest-rank percentiles with exact order-statistic intervals (reference/stats.md §7), and
//! the distribution a latency gate reads its order statistics from.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Latency of answered trials, nearest-rank percentiles with exact order-statistic intervals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub n: u64,
    pub mean: Option<f64>,
    pub p50: Option<Percentile>,
    pub p95: Option<Percentile>,
    pub p99: Option<Percentile>,
}

/// Every answered trial's latency as (value in ms, count), ascending: a histogram's non-empty
/// buckets, each value as the percentiles report it. A latency gate reads any order statistic,
/// and how many answers were within a budget, from it, at any level, without keeping the
/// trials.
pub type LatencyDistribution = Vec<(f64, u64)>;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Percentile {
    /// The nearest-rank value: always an observed latency.
    pub value: f64,
    /// `None` when there are too few trials to bound this percentile from below.
    pub lo: Option<f64>,
    /// `None` when there are too few trials to bound this percentile from above.
    pub hi: Option<f64>,
}

/// The value at 1-based `rank` among the recorded latencies, in milliseconds.
fn value_at_rank(h: &Histogram<u64>, rank: u64) -> Option<f64> {
    let mut seen = 0;
    for v in h.iter_recorded() {
        seen += v.count_at_value();
        if seen >= rank {
            return Some(h.highest_equivalent(v.value_iterated_to()) as f64 / 1000.0);
        }
    }
    None
}

/// Latencies of answered trials: a histogram and an exact sum.
pub struct LatencyAgg {
    us: Histogram<u64>,
    /// Integer microseconds, so the mean does not depend on the order trials finish in.
    sum_us: u64,
}

impl Default for LatencyAgg {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyAgg {
    pub fn new() -> Self {
        // 1 µs to 1 hour at 3 significant figures: at most 0.1% quantisation (stats.md §7.2).
        let us = Histogram::new_with_bounds(1, 3_600_000_000, 3)
            .expect("static histogram bounds are valid");
        LatencyAgg { us, sum_us: 0 }
    }

    pub fn record(&mut self, latency_ms: f64) {
        let us = (latency_ms * 1000.0).round().max(1.0) as u64;
        self.us.saturating_record(us);
        self.sum_us += us;
    }

    pub fn summary(&self, conf: f64) -> LatencySummary {
        latency_summary(&self.us, self.sum_us, conf)
    }

    /// The non-empty buckets, valued as [`value_at_rank`] values them, so a gate's order
    /// statistics are the very percentiles the report shows.
    pub fn distribution(&self) -> LatencyDistribution {
        self.us
            .iter_recorded()
            .map(|v| {
                (
                    self.us.highest_equivalent(v.value_iterated_to()) as f64 / 1000.0,
                    v.count_at_value(),
                )
            })
            .collect()
    }
}

fn latency_summary(h: &Histogram<u64>, sum_us: u64, conf: f64) -> LatencySummary {
    let n = h.len();
    // The value always exists once one trial answered; each end of its interval is bounded
    // or not on its own (too few trials to bound a median from below, or a p99 from above).
    let pct = |q: f64| -> Option<Percentile> {
        let value = value_at_rank(h, super::nearest_rank_position(n, q)?)?;
        let ci = super::order_statistic_ci(n, q, conf);
        Some(Percentile {
            value,
            lo: ci
                .and_then(|c| c.lower_rank)
                .and_then(|l| value_at_rank(h, l)),
            hi: ci
                .and_then(|c| c.upper_rank)
                .and_then(|u| value_at_rank(h, u)),
        })
    };
    LatencySummary {
        n,
        mean: (n > 0).then(|| sum_us as f64 / n as f64 / 1000.0),
        p50: if n > 0 { pct(0.5) } else { None },
        p95: if n > 0 { pct(0.95) } else { None },
        p99: if n > 0 { pct(0.99) } else { None },
    }
}
