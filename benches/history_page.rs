//! What the weekly trend page costs at a year's scale: `toolscore history --format html` on a
//! synthetic history of 100 series × 52 weekly runs (`tests/it/support/history.rs`: 61 cases and
//! 11 tools a series, the shipped dataset's sizes), its wall time and peak RSS, the page's size,
//! and headless Chromium rendering it: in the page (its CSP removed so a measuring script runs),
//! the time from navigation start to the end of parsing and to the first layout of the page
//! (the sections off screen are laid out when scrolled near: `content-visibility: auto`), the
//! median of BENCH_LOADS (default 5) loads, beside the process's wall time and an empty page's.
//!
//! Run: `cargo bench --bench history_page` (needs /usr/bin/chromium for the render times).
//! BENCH_SERIES and BENCH_WEEKS change the scale; BENCH_OUT=DIR keeps the history and the page
//! there instead of in a temporary folder.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test or benchmark program reports what it measured on the terminal"
)]

#[path = "../tests/it/support/mod.rs"]
mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use support::measure::wait_with_rusage;

/// Written at the end of the page's body: the time parsing reached it, and the time a layout of
/// the whole page (forced by reading the body's height) finished, in ms from navigation start.
const MEASURE: &str = r#"<script>
const parsed = performance.now();
const height = document.body.getBoundingClientRect().height;
const laid = performance.now();
document.documentElement.setAttribute('data-render', JSON.stringify([parsed, laid, height]));
</script>"#;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let (series, weeks) = (env_or("BENCH_SERIES", 100), env_or("BENCH_WEEKS", 52));
    let loads = env_or("BENCH_LOADS", 5);
    let temporary = tempfile::tempdir().expect("tempdir");
    let kept = std::env::var_os("BENCH_OUT").map(std::path::PathBuf::from);
    let dir = kept.as_deref().unwrap_or(temporary.path());
    std::fs::create_dir_all(dir).expect("BENCH_OUT");
    let lines = support::history::write_synthetic_history(dir, series, weeks);
    println!("history page: {series} series × {weeks} weekly runs ({lines} lines)");

    let t0 = Instant::now();
    #[expect(
        clippy::zombie_processes,
        reason = "reaped by wait_with_rusage, which also reads its rusage"
    )]
    let child = Command::new(env!("CARGO_BIN_EXE_toolscore"))
        .current_dir(dir)
        .args(["history", "--dir", ".", "--format", "html"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn toolscore");
    let (status, rss) = wait_with_rusage(child.id() as libc::pid_t);
    let secs = t0.elapsed().as_secs_f64();
    assert!(
        status.success() || status.code() == Some(1),
        "history failed"
    );
    let page = dir.join("history.html");
    let html = std::fs::read_to_string(&page).expect("history.html");
    println!(
        "  toolscore history --format html: {secs:.2} s wall, peak RSS {:.1} MiB; page {} bytes ({:.2} MB)",
        rss as f64 / 1024.0,
        html.len(),
        html.len() as f64 / 1e6
    );

    let chromium = Path::new("/usr/bin/chromium");
    if !chromium.is_file() {
        println!("  (no /usr/bin/chromium: render time not measured)");
        return;
    }
    let csp =
        regex::Regex::new(r#"<meta http-equiv="Content-Security-Policy"[^>]*/>"#).expect("regex");
    let measured = dir.join("history-measured.html");
    std::fs::write(
        &measured,
        csp.replace(&html, "")
            .replace("</body>", &format!("{MEASURE}\n</body>")),
    )
    .expect("write");
    let empty = dir.join("empty.html");
    std::fs::write(&empty, "<!DOCTYPE html><html><body></body></html>").expect("write");
    let load = |p: &Path| {
        let t0 = Instant::now();
        let out = Command::new(chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--window-size=1280,900",
                "--dump-dom",
            ])
            .arg(format!("file://{}", p.display()))
            .stderr(Stdio::null())
            .output()
            .expect("chromium");
        assert!(out.status.success());
        (
            t0.elapsed().as_secs_f64(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let read =
        regex::Regex::new(r#"data-render="\[([0-9.]+),([0-9.]+),([0-9.]+)\]""#).expect("regex");
    let mut parsed = Vec::new();
    let mut laid = Vec::new();
    let mut walls = Vec::new();
    for _ in 0..loads {
        let (wall, dom) = load(&measured);
        let c = read.captures(&dom).expect("the measuring script ran");
        parsed.push(c[1].parse::<f64>().expect("ms"));
        laid.push(c[2].parse::<f64>().expect("ms"));
        walls.push(wall);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (base, _) = load(&empty);
    println!(
        "  Chromium, median of {loads} loads: parsed {:.0} ms, laid out {:.0} ms after navigation start; --dump-dom {:.2} s wall (an empty page: {base:.2} s)",
        median(&mut parsed),
        median(&mut laid),
        median(&mut walls)
    );
}
