//! A synthetic `history.jsonl`: many series of many weekly runs, for the history page's size,
//! layout and speed (`cli_history.rs`, `report_browser.rs`, `benches/history_page.rs`). Making a
//! year of 100 series through the binary would take hours; the lines here have the shape
//! `run` writes, with counts drawn from known rates, so the page's figures are computed by
//! `toolscore history` from them as from any history.
//!
//! Each week is one run with every series as an arm (`week-01` … `week-52`), and each run's
//! folder holds a stub `report.html`, so the page links every point. Planted: a drop of 0.25
//! on every case of series 0 in the last week; a catalog change in week 26; sequential runs,
//! resumed runs and merged runs at fixed weeks; series whose run in week 30 exited 4.

use std::fmt::Write as _;
use std::path::Path;

/// Cases of each series and the expected tools they spread over (the shipped dataset's sizes).
pub(crate) const CASES: usize = 61;
pub(crate) const TOOLS: usize = 11;
const TRIALS: u64 = 40;

/// A deterministic stream of uniforms (splitmix64).
struct Uniform(u64);

impl Uniform {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) as f64 / u64::MAX as f64
    }
}

/// The case-level mean of `rates` with a normal-approximation interval, as a history
/// `metrics` point (the page draws it; `history` computes moves from the cases, not from it).
fn point(rates: &[f64], x: u64, n: u64) -> String {
    let m = rates.len() as f64;
    let mean = rates.iter().sum::<f64>() / m;
    let sd = (rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (m - 1.0).max(1.0)).sqrt();
    let half = 1.96 * sd / m.sqrt();
    format!(
        r#"{{"x":{x},"n":{n},"mean":{mean:.6},"lo":{:.6},"hi":{:.6},"cases":{}}}"#,
        (mean - half).max(0.0),
        (mean + half).min(1.0),
        rates.len()
    )
}

/// Writes `dir/history.jsonl` with `series` series of `weeks` weekly runs, and a stub
/// `report.html` in each run's folder. Returns the lines written.
pub(crate) fn write_synthetic_history(dir: &Path, series: usize, weeks: usize) -> usize {
    let mut text = String::new();
    let mut draws = Uniform(0x5EED);
    for week in 1..=weeks {
        let run_id = format!("week-{week:02}");
        let folder = dir.join(&run_id);
        std::fs::create_dir_all(&folder).expect("run folder");
        std::fs::write(
            folder.join("report.html"),
            "<!DOCTYPE html><html><body></body></html>\n",
        )
        .expect("report stub");
        // Mondays from 2026-01-05 (day 20,458 since 1970-01-01).
        let finished_at = format!("{}T06:00:00Z", civil_date(20_458 + 7 * (week as i64 - 1)));
        for s in 0..series {
            let drop = if s == 0 && week == weeks { 0.25 } else { 0.0 };
            let rates: Vec<f64> = (0..CASES)
                .map(|k| {
                    (0.3 + 0.6 * (((s * 7 + k * 13) % 17) as f64 / 16.0) - drop).clamp(0.0, 1.0)
                })
                .collect();
            let counts: Vec<u64> = rates
                .iter()
                .map(|&p| (0..TRIALS).filter(|_| draws.next() < p).count() as u64)
                .collect();
            let observed: Vec<f64> = counts.iter().map(|&x| x as f64 / TRIALS as f64).collect();
            let x: u64 = counts.iter().sum();
            let n = TRIALS * CASES as u64;
            let mut cases = String::new();
            for (k, c) in counts.iter().enumerate() {
                let sep = if k == 0 { "" } else { "," };
                let _ = write!(
                    cases,
                    r#"{sep}"billing/case-{k:02}":[{c},{TRIALS},{c},{TRIALS}]"#
                );
            }
            let mut tools = String::new();
            for t in 0..TOOLS {
                let mine: Vec<usize> = (0..CASES).filter(|k| k % TOOLS == t).collect();
                let rs: Vec<f64> = mine.iter().map(|&k| observed[k]).collect();
                let tx: u64 = mine.iter().map(|&k| counts[k]).sum();
                let p = point(&rs, tx, TRIALS * mine.len() as u64);
                let sep = if t == 0 { "" } else { "," };
                let _ = write!(
                    tools,
                    r#"{sep}"tool_{t:02}":{{"selection":{p},"pass":{p}}}"#
                );
            }
            let metric = point(&observed, x, n);
            let catalog = if week < 26 {
                "sha256:aaaa"
            } else {
                "sha256:bbbb"
            };
            let mut sampling = Vec::new();
            if week % 13 == 5 {
                sampling.push(r#""sequential":true"#.to_owned());
            }
            if week % 17 == 3 {
                sampling.push(r#""resumed_trials":500"#.to_owned());
            }
            if week % 19 == 7 {
                sampling.push(r#""merged_shards":4"#.to_owned());
            }
            let sampling = if sampling.is_empty() {
                String::new()
            } else {
                format!(r#","sampling":{{{}}}"#, sampling.join(","))
            };
            let untrusted = if week == 30 && s % 10 == 0 {
                r#","untrusted":"too many infrastructure errors: 812 of 2440 trials (33.3%) exceed --max-infra-error-rate 0.05","verdict":"not_judged""#
            } else {
                r#","verdict":"pass""#
            };
            let _ = writeln!(
                text,
                r#"{{"run_id":"{run_id}","finished_at":"{finished_at}","datasets":["billing"],"provider":"provider-{s:03}","model":"model-{}","variant":"base","catalogs":{{"billing":"{catalog}"}},"trials_per_case":{TRIALS},"confidence":0.95,"metrics":{{"selection":{metric},"pass":{metric}}},"cases":{{{cases}}},"tools":{{{tools}}}{sampling}{untrusted}}}"#,
                s % 4
            );
        }
    }
    std::fs::write(dir.join("history.jsonl"), &text).expect("history.jsonl");
    series * weeks
}

/// `YYYY-MM-DD` of a day counted from 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}
