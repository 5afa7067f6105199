//! Per-provider request limits, shared by every arm that calls one provider (one configured
//! provider run under several catalog variants is still one provider to its rate limiter):
//!
//! - requests in flight at once (a semaphore);
//! - requests per minute (`governor`), spaced evenly with a burst of one, so no window of a
//!   minute ever holds more than the limit;
//! - tokens per minute (`governor`, a bucket of a minute's tokens): each request takes its
//!   estimated input tokens plus its `max_tokens` before it is sent;
//! - an adaptive window on requests in flight: halved when the provider answers 429 or
//!   overloaded (once per round trip: requests already in flight when it was halved do not
//!   halve it again), widened by one after each window's worth of successes, so a run settles
//!   just under the rate the provider tolerates instead of retrying into it;
//! - a pause for every request when the provider says its budget is spent: its rate-limit
//!   headers announce zero remaining requests or tokens (slow down *before* the 429), or a
//!   429 / 529 asked for a wait (the other requests in flight would only meet the same 429).

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::{Duration, SystemTime};

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use reqwest::header::HeaderMap;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::transport::MAX_RETRY_AFTER;

/// Waits the providers asked for (Retry-After, or the same hint in an error body) that this
/// process honoured: how many and how long in all. Progress reads it, so a run that sits out a
/// long wait says so instead of looking stalled.
pub(crate) struct RetryAfterWaits {
    count: std::sync::atomic::AtomicU64,
    total_ms: std::sync::atomic::AtomicU64,
}

/// The process's [`RetryAfterWaits`]: one run per process, and progress lives outside the
/// provider module, so a shared counter is simpler than threading one through every arm.
pub(crate) static RETRY_AFTER_WAITS: RetryAfterWaits = RetryAfterWaits {
    count: std::sync::atomic::AtomicU64::new(0),
    total_ms: std::sync::atomic::AtomicU64::new(0),
};

/// [`RETRY_AFTER_WAITS`] as a plain function, for progress to read.
pub fn retry_after_waits() -> (u64, Duration) {
    RETRY_AFTER_WAITS.snapshot()
}

impl RetryAfterWaits {
    /// A wait of `wait` was honoured.
    pub(crate) fn note(&self, wait: Duration) {
        use std::sync::atomic::Ordering;
        self.count.fetch_add(1, Ordering::Relaxed);
        self.total_ms.fetch_add(
            wait.as_millis().min(u128::from(u64::MAX)) as u64,
            Ordering::Relaxed,
        );
    }

    /// Waits honoured so far, and their total length.
    pub(crate) fn snapshot(&self) -> (u64, Duration) {
        use std::sync::atomic::Ordering;
        (
            self.count.load(Ordering::Relaxed),
            Duration::from_millis(self.total_ms.load(Ordering::Relaxed)),
        )
    }
}

/// The limits of one provider.
pub(crate) struct Limits {
    in_flight: Option<Arc<Semaphore>>,
    rate: Option<DefaultDirectRateLimiter>,
    tokens: Option<(DefaultDirectRateLimiter, NonZeroU32)>,
    window: Mutex<Window>,
    window_changed: Notify,
    /// No request starts before this instant.
    paused_until: Mutex<Option<Instant>>,
}

/// The adaptive window: no limit until the provider first pushes back.
#[derive(Debug, Default)]
struct Window {
    limit: Option<usize>,
    in_flight: usize,
    successes: usize,
    /// Bumped at each halving; a request remembers the epoch it started in.
    epoch: u64,
    halvings: u64,
}

impl std::fmt::Debug for Limits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limits")
            .field("in_flight", &self.in_flight.is_some())
            .field("rate", &self.rate.is_some())
            .field("tokens", &self.tokens.as_ref().map(|(_, burst)| burst))
            .finish_non_exhaustive()
    }
}

/// A request's place under the limits, held for one attempt: its slot in flight, its place
/// in the adaptive window and the window's epoch when it started.
pub(crate) struct Slot<'a> {
    limits: &'a Limits,
    _permit: Option<OwnedSemaphorePermit>,
    epoch: u64,
}

impl Slot<'_> {
    /// The provider answered 429 or overloaded: halve the window, unless it was already
    /// halved since this request started.
    pub(crate) fn pushed_back(&self) {
        let mut w = self.limits.window();
        if w.epoch == self.epoch {
            let now = w.in_flight.max(1);
            let limit = w.limit.map_or(now, |l| l.min(now));
            w.limit = Some((limit / 2).max(1));
            w.successes = 0;
            w.epoch += 1;
            w.halvings += 1;
        }
    }

    /// The provider answered: after a window's worth of successes, widen it by one.
    pub(crate) fn succeeded(&self) {
        let mut w = self.limits.window();
        if let Some(limit) = w.limit {
            w.successes += 1;
            if w.successes >= limit {
                w.limit = Some(limit + 1);
                w.successes = 0;
                drop(w);
                self.limits.window_changed.notify_waiters();
            }
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.limits.window().in_flight -= 1;
        self.limits.window_changed.notify_waiters();
    }
}

impl Limits {
    /// Limits with these caps (`None`: no cap of that kind; 0 is treated as none).
    pub(crate) fn new(
        max_in_flight: Option<usize>,
        requests_per_minute: Option<u32>,
        tokens_per_minute: Option<u32>,
    ) -> Limits {
        Limits {
            in_flight: max_in_flight
                .filter(|n| *n > 0)
                .map(|n| Arc::new(Semaphore::new(n))),
            rate: requests_per_minute.and_then(NonZeroU32::new).map(|rpm| {
                RateLimiter::direct(Quota::per_minute(rpm).allow_burst(NonZeroU32::MIN))
            }),
            tokens: tokens_per_minute
                .and_then(NonZeroU32::new)
                .map(|tpm| (RateLimiter::direct(Quota::per_minute(tpm)), tpm)),
            window: Mutex::new(Window::default()),
            window_changed: Notify::new(),
            paused_until: Mutex::new(None),
        }
    }

    fn window(&self) -> std::sync::MutexGuard<'_, Window> {
        self.window
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    #[cfg(test)]
    /// The adaptive window's current limit (None: never pushed back) and how many times it
    /// was halved.
    fn window_state(&self) -> (Option<usize>, u64) {
        let w = self.window();
        (w.limit, w.halvings)
    }

    /// Waits until a request of about `tokens` tokens may start: past any pause, inside the
    /// adaptive window, with a slot in flight, and within the requests- and tokens-per-minute
    /// budgets. The returned slot is held for the attempt.
    pub(crate) async fn acquire(&self, tokens: u32) -> Slot<'_> {
        self.wait_out_pause().await;
        let epoch = self.enter_window().await;
        let mut slot = Slot {
            limits: self,
            _permit: None,
            epoch,
        };
        slot._permit = match &self.in_flight {
            // The semaphore is never closed, so acquiring fails only if it were.
            Some(s) => s.clone().acquire_owned().await.ok(),
            None => None,
        };
        // A pause announced while this request waited for its slot applies to it too.
        self.wait_out_pause().await;
        if let Some(rate) = &self.rate {
            rate.until_ready().await;
        }
        if let Some((bucket, size)) = &self.tokens {
            // A request larger than a minute's budget waits for a full bucket, no more.
            let n = NonZeroU32::new(tokens.max(1))
                .unwrap_or(NonZeroU32::MIN)
                .min(*size);
            // Cannot fail: n is at most the bucket's size.
            let _ = bucket.until_n_ready(n).await;
        }
        slot
    }

    async fn enter_window(&self) -> u64 {
        loop {
            let changed = self.window_changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let mut w = self.window();
                if w.limit.is_none_or(|l| w.in_flight < l) {
                    w.in_flight += 1;
                    return w.epoch;
                }
            }
            changed.await;
        }
    }
    async fn wait_out_pause(&self) {
        loop {
            let until = *self
                .paused_until
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            match until {
                Some(t) if t > Instant::now() => tokio::time::sleep_until(t).await,
                _ => return,
            }
        }
    }

    /// No request starts for `wait` from now (capped at [`MAX_RETRY_AFTER`]); a longer pause
    /// already in force stays.
    pub(crate) fn pause_for(&self, wait: Duration) {
        let until = Instant::now() + wait.min(MAX_RETRY_AFTER);
        let mut slot = self
            .paused_until
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if slot.is_none_or(|t| t < until) {
            *slot = Some(until);
        }
    }
}

type RegistryKey = (String, String, Option<usize>, Option<u32>, Option<u32>);

static REGISTRY: LazyLock<Mutex<HashMap<RegistryKey, Weak<Limits>>>> =
    LazyLock::new(Default::default);

/// The limits shared by every provider built with this name, base URL and caps while any of
/// them is alive.
pub(crate) fn shared(
    name: &str,
    base_url: &str,
    max_in_flight: Option<usize>,
    requests_per_minute: Option<u32>,
    tokens_per_minute: Option<u32>,
) -> Arc<Limits> {
    let key = (
        name.to_owned(),
        base_url.to_owned(),
        max_in_flight,
        requests_per_minute,
        tokens_per_minute,
    );
    let mut registry = REGISTRY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    registry.retain(|_, limits| limits.strong_count() > 0);
    if let Some(limits) = registry.get(&key).and_then(Weak::upgrade) {
        return limits;
    }
    let limits = Arc::new(Limits::new(
        max_in_flight,
        requests_per_minute,
        tokens_per_minute,
    ));
    registry.insert(key, Arc::downgrade(&limits));
    limits
}

/// How long until the provider's budget refills, when its rate-limit headers say a budget is
/// spent (a `remaining` of 0): OpenAI's and Azure's `x-ratelimit-remaining-*` with
/// `x-ratelimit-reset-*` durations (`1s`, `6m0s`, `20ms`), Anthropic's
/// `anthropic-ratelimit-*-remaining` with `…-reset` RFC 3339 times. The longest such wait.
pub(crate) fn budget_spent(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let spent = |name: &str| text(name).is_some_and(|v| v.trim() == "0");
    let mut wait: Option<Duration> = None;
    let mut consider = |d: Option<Duration>| {
        if let Some(d) = d {
            wait = Some(wait.map_or(d, |w| w.max(d)));
        }
    };
    for what in ["requests", "tokens"] {
        if spent(&format!("x-ratelimit-remaining-{what}")) {
            consider(text(&format!("x-ratelimit-reset-{what}")).and_then(go_duration));
        }
    }
    for what in ["requests", "tokens", "input-tokens", "output-tokens"] {
        if spent(&format!("anthropic-ratelimit-{what}-remaining")) {
            consider(
                text(&format!("anthropic-ratelimit-{what}-reset"))
                    .and_then(|t| humantime::parse_rfc3339_weak(t.trim()).ok())
                    .map(|at| at.duration_since(now).unwrap_or(Duration::ZERO)),
            );
        }
    }
    wait.map(|w| w.min(MAX_RETRY_AFTER))
}

/// A Go-style duration (`1s`, `6m0s`, `1m30.5s`, `20ms`, `1h`), as OpenAI's reset headers
/// are written.
fn go_duration(text: &str) -> Option<Duration> {
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    let mut total = 0.0f64;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..number_len].parse().ok()?;
        rest = &rest[number_len..];
        let (unit, seconds) = [
            ("ms", 1e-3),
            ("us", 1e-6),
            ("µs", 1e-6),
            ("ns", 1e-9),
            ("h", 3600.0),
            ("m", 60.0),
            ("s", 1.0),
        ]
        .into_iter()
        .find(|(u, _)| rest.starts_with(u))?;
        total += value * seconds;
        rest = &rest[unit.len()..];
    }
    (total.is_finite() && total >= 0.0).then(|| Duration::from_secs_f64(total.min(86_400.0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn go_durations() {
        assert_eq!(go_duration("1s"), Some(Duration::from_secs(1)));
        assert_eq!(go_duration("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(go_duration("20ms"), Some(Duration::from_millis(20)));
        assert_eq!(go_duration("1m30.5s"), Some(Duration::from_millis(90_500)));
        assert_eq!(go_duration("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(go_duration(""), None);
        assert_eq!(go_duration("soon"), None);
        assert_eq!(go_duration("5"), None);
    }

    #[test]
    fn spent_budgets_are_read_from_both_header_families() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_000_000);
        let mut h = HeaderMap::new();
        h.insert(
            "x-ratelimit-remaining-requests",
            HeaderValue::from_static("3"),
        );
        h.insert("x-ratelimit-reset-requests", HeaderValue::from_static("2s"));
        assert_eq!(budget_spent(&h, now), None, "budget left");
        h.insert(
            "x-ratelimit-remaining-tokens",
            HeaderValue::from_static("0"),
        );
        h.insert("x-ratelimit-reset-tokens", HeaderValue::from_static("1.5s"));
        assert_eq!(budget_spent(&h, now), Some(Duration::from_millis(1500)));

        let mut a = HeaderMap::new();
        a.insert(
            "anthropic-ratelimit-requests-remaining",
            HeaderValue::from_static("0"),
        );
        let reset = humantime::format_rfc3339(now + Duration::from_secs(7)).to_string();
        a.insert(
            "anthropic-ratelimit-requests-reset",
            HeaderValue::from_str(&reset).unwrap(),
        );
        assert_eq!(budget_spent(&a, now), Some(Duration::from_secs(7)));
        a.insert(
            "anthropic-ratelimit-requests-reset",
            HeaderValue::from_static("2099-01-01T00:00:00Z"),
        );
        assert_eq!(budget_spent(&a, now), Some(MAX_RETRY_AFTER), "capped");
    }

    #[tokio::test]
    async fn requests_per_minute_are_spaced() {
        let limits = Limits::new(None, Some(600), None);
        let start = std::time::Instant::now();
        for _ in 0..4 {
            drop(limits.acquire(1).await);
        }
        // 600 per minute, burst 1: the 4th request starts 300 ms after the first.
        let elapsed = start.elapsed();
        assert!(elapsed >= Duration::from_millis(290), "{elapsed:?}");
    }

    #[tokio::test]
    async fn pauses_and_slots_hold_every_request() {
        let limits = Limits::new(Some(1), None, None);
        limits.pause_for(Duration::from_millis(200));
        // A shorter pause does not cut a longer one short.
        limits.pause_for(Duration::from_millis(10));
        let before = Instant::now();
        let slot = limits.acquire(1).await;
        assert!(before.elapsed() >= Duration::from_millis(200));
        assert!(
            tokio::time::timeout(Duration::from_millis(10), limits.acquire(1))
                .await
                .is_err(),
            "the one slot is taken"
        );
        drop(slot);
        drop(limits.acquire(1).await);
    }

    #[tokio::test]
    async fn tokens_per_minute_hold_a_request_until_its_tokens_refill() {
        // 60,000 a minute = 1,000 a second; the bucket starts full.
        let limits = Limits::new(None, None, Some(60_000));
        let start = std::time::Instant::now();
        drop(limits.acquire(60_000).await);
        assert!(
            start.elapsed() < Duration::from_millis(100),
            "a full bucket"
        );
        drop(limits.acquire(400).await);
        let elapsed = start.elapsed();
        assert!(elapsed >= Duration::from_millis(380), "{elapsed:?}");
        // Larger than a minute's budget: waits for a full bucket, and does not fail.
        let limits = Limits::new(None, None, Some(60_000));
        drop(limits.acquire(1_000_000).await);
    }

    #[tokio::test]
    async fn the_window_halves_once_per_round_trip_and_creeps_back_up() {
        let limits = Limits::new(None, None, None);
        let mut slots = Vec::new();
        for _ in 0..8 {
            slots.push(limits.acquire(1).await);
        }
        assert_eq!(
            limits.window_state(),
            (None, 0),
            "no limit before a push-back"
        );
        // Every request of that round meets the 429: the window halves once, to 4.
        for s in &slots {
            s.pushed_back();
        }
        assert_eq!(limits.window_state(), (Some(4), 1));
        drop(slots);
        let mut slots = Vec::new();
        for _ in 0..4 {
            slots.push(limits.acquire(1).await);
        }
        assert!(
            tokio::time::timeout(Duration::from_millis(20), limits.acquire(1))
                .await
                .is_err(),
            "a fifth request waits"
        );
        // A request of the new round meets a 429 too: halved again, to 2.
        slots[0].pushed_back();
        assert_eq!(limits.window_state(), (Some(2), 2));
        for s in &slots {
            s.succeeded();
        }
        // Two successes at a window of 2 widen it to 3; the next two successes do not
        // reach 3 yet.
        assert_eq!(limits.window_state(), (Some(3), 2));
        drop(slots);
        let waiter = limits.acquire(1).await;
        drop(waiter);
    }
}
