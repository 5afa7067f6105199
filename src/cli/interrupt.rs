//! Ctrl-C and SIGTERM (what CI runners and Kubernetes send) while a run goes. The first
//! cancels the run's token: the runner stops scheduling, abandons requests in flight and
//! backoff sleeps, says so (`Notice::Interrupted`), and the command writes the summary of what
//! completed. A second ends the process at once, before any summary is written.

use toolscore_provider::Cancel;

/// The exit status of a run aborted by a second signal, as a shell reports a SIGINT.
const ABORTED: i32 = 130;

/// Watches for the signals on the current runtime, cancelling `interrupt` at the first. The
/// handlers are in place when this returns, so a signal sent once the run has begun is never
/// met by the default action (a silent kill with no summary).
pub(super) fn on_signals(interrupt: Cancel) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return;
    };
    tokio::spawn(async move {
        let first = tokio::select! {
            r = int.recv() => r.is_some(),
            r = term.recv() => r.is_some(),
        };
        if !first {
            return;
        }
        interrupt.cancel();
        let again = tokio::select! {
            r = int.recv() => r.is_some(),
            r = term.recv() => r.is_some(),
        };
        if again {
            // Said if stderr still reads; the process ends either way.
            let _ = errln!(
                "aborted: results.jsonl holds every trial finished so far; no summary was written"
            );
            // Abort means now: the summary being written may take long, and the user asked
            // twice. Nothing is half-written: results.jsonl is appended a whole line at a time.
            #[expect(clippy::exit, reason = "a second Ctrl-C ends the process at once")]
            std::process::exit(ABORTED);
        }
    });
}
