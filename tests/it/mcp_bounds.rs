//! Hostile stdio servers (tests/data/mcp/hostile_server.py, run by Python 3) against
//! `toolscore catalog`: each must end in a clear error naming the bound it hit, quickly and in
//! bounded memory, never after the whole timeout or by holding everything the server sends.

use crate::support;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a run of the binary did, with its wall time and peak resident memory.
struct Measured {
    code: i32,
    stderr: String,
    elapsed: Duration,
    peak_rss_mib: f64,
}

/// Python 3, or None on a developer's machine without it (the test then returns early and
/// says so). Under `CI=true` a missing Python fails the test.
fn python() -> Option<&'static str> {
    let found = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found && std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("the hostile-server tests need python3 under CI");
    }
    if !found {
        eprintln!("skipped: python3 is not installed");
    }
    found.then_some("python3")
}

/// `toolscore catalog --timeout SECS -- python3 hostile_server.py MODE`.
fn catalog_of_hostile(mode: &str, timeout_secs: u32) -> Option<Measured> {
    let python = python()?;
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mcp/hostile_server.py");
    let stderr_path = dir.path().join("stderr");
    let rss_path = dir.path().join("max_rss_kib");
    let started = Instant::now();
    // Measured through a small Python parent that forks and execs toolscore and reads its
    // rusage: a child spawned from this test process would inherit, at exec, the high-water
    // RSS of the whole test binary (every test shares it), not toolscore's own.
    let status = support::clear_user_env(&mut Command::new(python))
        .current_dir(dir.path())
        .args(["-c", MEASURE_PEAK_RSS])
        .arg(&rss_path)
        .arg(env!("CARGO_BIN_EXE_toolscore"))
        .args(["catalog", "--timeout", &timeout_secs.to_string(), "--"])
        .arg(python)
        .arg(&script)
        .arg(mode)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .status()
        .unwrap();
    let max_rss_kib: i64 = std::fs::read_to_string(&rss_path)
        .expect("the measuring parent wrote the peak")
        .trim()
        .parse()
        .unwrap();
    let elapsed = started.elapsed();
    let stderr = String::from_utf8_lossy(&std::fs::read(&stderr_path).unwrap()).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    // The figures, for a reader of `--nocapture` output.
    eprintln!(
        "{mode}: exit {:?}, {:.1} s, peak RSS {:.0} MiB",
        status.code(),
        elapsed.as_secs_f64(),
        max_rss_kib as f64 / 1024.0
    );
    Some(Measured {
        code: status.code().unwrap_or(-1),
        stderr,
        elapsed,
        peak_rss_mib: max_rss_kib as f64 / 1024.0,
    })
}

/// argv: RSS_FILE PROGRAM ARGS…: runs PROGRAM in a forked child, writes its peak resident set
/// size in KiB (from wait4's rusage) to RSS_FILE, and exits with its exit code.
const MEASURE_PEAK_RSS: &str = "import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
open(sys.argv[1], 'w').write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status) % 256)
";

/// The start of a long error, for assertion messages.
fn head(text: &str) -> &str {
    let mut end = text.len().min(3000);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[test]
fn a_listing_of_100k_tools_stops_at_the_tool_bound_within_the_timeout() {
    // A generous timeout: the bound must end the listing, not the clock (a loaded CI machine
    // may take seconds to build 100,000 tools in Python; the old code answered exit 0).
    let Some(run) = catalog_of_hostile("many-tools", 60) else {
        return;
    };
    assert_eq!(run.code, 2, "{}", head(&run.stderr));
    assert!(
        run.stderr.contains(
            "tools/list: more than 10,000 tools (page 1 brought the count to 100,000), the bound on one listing"
        ),
        "{}",
        head(&run.stderr)
    );
    assert!(run.elapsed < Duration::from_secs(60), "{:?}", run.elapsed);
    assert!(run.peak_rss_mib < 400.0, "{} MiB", run.peak_rss_mib);
}

#[test]
fn endless_pagination_stops_at_the_page_bound() {
    let Some(run) = catalog_of_hostile("endless-pages", 60) else {
        return;
    };
    assert_eq!(run.code, 2, "{}", head(&run.stderr));
    assert!(
        run.stderr.contains(
            "tools/list: the server still sent a nextCursor after 1,000 pages (1,000 tools so far), the bound on pages in one listing"
        ),
        "{}",
        head(&run.stderr)
    );
    assert!(run.elapsed < Duration::from_secs(45), "{:?}", run.elapsed);
}

#[test]
fn one_deadline_covers_every_page_of_a_listing() {
    // Each page comes in half a second and always names a next one: a timeout per page
    // would never fire.
    let Some(run) = catalog_of_hostile("slow-pages", 2) else {
        return;
    };
    assert_eq!(run.code, 2, "{}", head(&run.stderr));
    assert!(
        run.stderr.contains(": no answer to tools/list within 2s"),
        "{}",
        head(&run.stderr)
    );
    assert!(run.elapsed < Duration::from_secs(8), "{:?}", run.elapsed);
}

#[test]
fn a_flood_of_stderr_is_kept_as_a_short_tail() {
    // 400 MB on one line, then a last line, then the server exits.
    let Some(run) = catalog_of_hostile("stderr-flood", 60) else {
        return;
    };
    assert_eq!(run.code, 2, "{}", head(&run.stderr));
    assert!(
        run.stderr.contains(
            "tools/list failed: the connection closed\n  its stderr ended with:\n  | xxxx"
        ),
        "{}",
        head(&run.stderr)
    );
    // The 400 MB line is quoted by its first 2,000 bytes, then the last words.
    assert!(
        run.stderr
            .ends_with(&format!("  | {}…\n  | last words\n", "x".repeat(2_000))),
        "{}",
        head(&run.stderr)
    );
    assert!(run.stderr.len() < 3_000, "{} bytes", run.stderr.len());
    assert!(run.peak_rss_mib < 200.0, "{} MiB", run.peak_rss_mib);
}

#[test]
fn a_50_mb_answer_is_refused_at_the_message_bound_without_waiting() {
    let Some(run) = catalog_of_hostile("huge-answer", 30) else {
        return;
    };
    assert_eq!(run.code, 2, "{}", head(&run.stderr));
    assert!(
        run.stderr.contains(
            "tools/list failed: the server sent a message of more than 16,777,216 bytes (16 MiB), the bound on one message"
        ),
        "{}",
        head(&run.stderr)
    );
    assert!(run.elapsed < Duration::from_secs(15), "{:?}", run.elapsed);
    assert!(run.peak_rss_mib < 300.0, "{} MiB", run.peak_rss_mib);
}

#[test]
fn an_answer_that_is_not_utf8_is_named_at_once() {
    let Some(run) = catalog_of_hostile("bad-utf8", 30) else {
        return;
    };
    assert_eq!(run.code, 2, "{}", head(&run.stderr));
    assert!(
        run.stderr
            .contains("tools/list failed: the server's output is not valid UTF-8 (at byte ")
            && run.stderr.contains(" of it), so not JSON-RPC"),
        "{}",
        head(&run.stderr)
    );
    assert!(run.elapsed < Duration::from_secs(10), "{:?}", run.elapsed);
}

#[test]
fn a_100_kb_error_message_is_cut_saying_how_much() {
    let Some(run) = catalog_of_hostile("huge-error", 30) else {
        return;
    };
    assert_eq!(run.code, 2, "{}", head(&run.stderr));
    assert!(
        run.stderr.contains(&format!(
            "tools/list answered with JSON-RPC error -32603: {}… (98,000 more bytes cut)",
            "E".repeat(2_000)
        )),
        "{}",
        head(&run.stderr)
    );
    assert!(run.stderr.len() < 2_500, "{} bytes", run.stderr.len());
}

#[test]
fn a_blocked_server_is_killed_when_the_timeout_passes_not_seconds_later() {
    // It answers initialize, then never answers tools/list and ignores its closed stdin and
    // SIGTERM: the old shutdown waited 3 s after closing stdin and 3 s after SIGTERM.
    let timeout = 2;
    let Some(run) = catalog_of_hostile("blocked", timeout) else {
        return;
    };
    assert_eq!(run.code, 2, "{}", head(&run.stderr));
    assert!(
        run.stderr
            .contains(&format!(": no answer to tools/list within {timeout}s")),
        "{}",
        head(&run.stderr)
    );
    let limit = Duration::from_secs(timeout.into());
    assert!(
        run.elapsed >= limit,
        "{:?}: before the timeout",
        run.elapsed
    );
    assert!(
        run.elapsed < limit + Duration::from_millis(1500),
        "{:?}: the shutdown took more than a short grace after the {timeout} s timeout",
        run.elapsed
    );
    // Its last words are quoted, and the process is gone.
    let pid: i32 = run
        .stderr
        .split("blocked server pid ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no pid quoted: {}", head(&run.stderr)));
    // SAFETY: signal 0 only checks that the process exists.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    assert!(!alive, "the blocked server {pid} outlived toolscore");
}
