//! Measuring a child process, for the benchmarks: its exit status and peak RSS.

use std::os::unix::process::ExitStatusExt;

/// Waits for child `pid` and returns its exit status and peak RSS in KiB (`wait4`'s rusage).
/// The child must not have been waited for already.
pub(crate) fn wait_with_rusage(pid: libc::pid_t) -> (std::process::ExitStatus, i64) {
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is plain old data; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(rc, pid, "wait4 failed");
    (std::process::ExitStatus::from_raw(status), usage.ru_maxrss)
}

/// The benchmarks' dataset: the billing catalog and its first `cases` cases, as `DIR/bench`
/// (a run names it `--dataset bench` from `dir`).
pub(crate) fn billing_bench_dataset(dir: &std::path::Path, cases: usize) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let data = dir.join("bench");
    std::fs::create_dir_all(&data).expect("mkdir");
    std::fs::copy(
        root.join("datasets/billing/tools.json"),
        data.join("tools.json"),
    )
    .expect("copy tools");
    let all =
        std::fs::read_to_string(root.join("datasets/billing/cases.jsonl")).expect("read cases");
    let subset: Vec<&str> = all
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(cases)
        .collect();
    std::fs::write(data.join("cases.jsonl"), subset.join("\n")).expect("write cases");
}
