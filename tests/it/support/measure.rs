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
