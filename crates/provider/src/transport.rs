//! HTTP transport: the shared client, one attempt with a timeout, backoff with full jitter, and
//! `Retry-After` / `retry-after-ms` parsing.

use std::error::Error as _;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use reqwest::header::HeaderMap;

use super::{ErrorClass, ProviderError};

/// Longest wait a server may ask for with `Retry-After`.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

/// Builds the one HTTP client a run shares (connection pooling and keep-alive).
///
/// Redirects are not followed: a redirected POST would silently turn into a GET without a body.
pub fn http_client(max_idle_per_host: usize) -> Result<reqwest::Client, HttpClientError> {
    reqwest::Client::builder()
        .user_agent(concat!("toolscore/", env!("CARGO_PKG_VERSION")))
        .pool_max_idle_per_host(max_idle_per_host)
        .pool_idle_timeout(Duration::from_secs(90))
        .tcp_nodelay(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|source| HttpClientError { source })
}

/// The HTTP client could not be built (TLS roots, the machine's resources).
#[derive(Debug, thiserror::Error)]
#[error("cannot build the HTTP client: {}", error_chain(source))]
pub struct HttpClientError {
    #[source]
    source: reqwest::Error,
}

/// One HTTP response, read in full.
pub(crate) struct RawResponse {
    pub status: u16,
    pub body: Bytes,
    /// The wait the server asked for (`retry-after-ms` / `Retry-After`), when it asked.
    pub retry_after: Option<Duration>,
    /// How long until the provider's budget refills, when its rate-limit headers say it is
    /// spent (any status).
    pub budget_spent: Option<Duration>,
    /// From sending the request to having read the whole body.
    pub elapsed: Duration,
}

/// Why one attempt ended without a whole response.
enum AttemptError {
    Http(reqwest::Error),
    TooLarge,
}

impl From<reqwest::Error> for AttemptError {
    fn from(e: reqwest::Error) -> Self {
        AttemptError::Http(e)
    }
}

/// Sends one POST and reads the whole body, within `timeout`, refusing a body larger than
/// `max_body` bytes as soon as it grows past it (memory per request in flight stays bounded
/// whatever a server sends).
pub(crate) async fn send_once(
    client: &reqwest::Client,
    url: &reqwest::Url,
    headers: &HeaderMap,
    body: Bytes,
    timeout: Duration,
    max_body: usize,
) -> Result<RawResponse, ProviderError> {
    let start = Instant::now();
    let attempt = async {
        let mut response = client
            .post(url.clone())
            .headers(headers.clone())
            .body(body)
            .send()
            .await?;
        let status = response.status().as_u16();
        let retry_after = if (200..300).contains(&status) {
            None
        } else {
            retry_after(response.headers(), SystemTime::now())
        };
        let retry_after = (
            retry_after,
            super::limits::budget_spent(response.headers(), SystemTime::now()),
        );
        let declared = response.content_length();
        if declared.is_some_and(|n| n > max_body as u64) {
            return Err(AttemptError::TooLarge);
        }
        if declared.is_some() {
            // A declared length is enforced by the HTTP layer, so the body cannot exceed it:
            // read it in one piece, without the copy the chunk loop below makes.
            let body = response.bytes().await?;
            return Ok((status, retry_after, body));
        }
        let mut buf = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            if buf.len() + chunk.len() > max_body {
                return Err(AttemptError::TooLarge);
            }
            buf.extend_from_slice(&chunk);
        }
        Ok::<_, AttemptError>((status, retry_after, Bytes::from(buf)))
    };
    match tokio::time::timeout(timeout, attempt).await {
        Ok(Ok((status, (retry_after, budget_spent), body))) => Ok(RawResponse {
            status,
            body,
            retry_after,
            budget_spent,
            elapsed: start.elapsed(),
        }),
        Ok(Err(AttemptError::Http(e))) => Err(classify_reqwest(&e, timeout)),
        Ok(Err(AttemptError::TooLarge)) => Err(ProviderError::new(
            ErrorClass::BadResponse,
            None,
            format!("response body larger than {max_body} bytes (--max-response-bytes)"),
        )),
        Err(_) => Err(ProviderError::new(
            ErrorClass::Timeout,
            None,
            format!(
                "no complete response within {}",
                humantime::format_duration(timeout)
            ),
        )),
    }
}

pub(crate) fn classify_reqwest(e: &reqwest::Error, timeout: Duration) -> ProviderError {
    let chain = error_chain(e);
    let class = if e.is_timeout() {
        ErrorClass::Timeout
    } else if e.is_connect() {
        ErrorClass::Connect
    } else if e.is_builder() || e.is_redirect() {
        ErrorClass::ClientError
    } else {
        // The connection broke while sending or reading: a network failure, worth retrying.
        ErrorClass::Connect
    };
    let message = match class {
        ErrorClass::Timeout => format!(
            "timed out after {}: {chain}",
            humantime::format_duration(timeout)
        ),
        ErrorClass::Connect => format!("network error: {chain}"),
        _ => format!("request error: {chain}"),
    };
    ProviderError::new(class, None, message)
}

/// An error and its sources, joined with `: ` (reqwest's own text says little).
fn error_chain(e: &reqwest::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// Whether a failed attempt is worth repeating.
pub(crate) fn should_retry(err: &ProviderError) -> bool {
    match err.status {
        // Not Implemented / HTTP Version Not Supported will not change on a retry.
        Some(501 | 505) => false,
        _ => err.class.is_retryable(),
    }
}

/// Capped exponential backoff with full jitter: `unit · min(cap, base · 2^retry)`, where
/// `retry` is 0 for the first retry and `unit` is uniform in `[0, 1)`.
pub(crate) fn backoff_delay(retry: u32, base: Duration, cap: Duration, unit: f64) -> Duration {
    let factor = 1u32.checked_shl(retry).unwrap_or(u32::MAX);
    let ceiling = base.checked_mul(factor).unwrap_or(cap).min(cap);
    if !unit.is_finite() || unit <= 0.0 {
        return Duration::ZERO;
    }
    ceiling.mul_f64(unit.min(1.0))
}

/// The wait a response asks for: `retry-after-ms` (milliseconds, possibly fractional) wins
/// over `Retry-After` (delta-seconds, possibly fractional, or an IMF-fixdate HTTP-date).
/// Capped at [`MAX_RETRY_AFTER`]; unparseable values are ignored.
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(parse_non_negative) {
        return Some(secs_capped(ms / 1000.0));
    }
    let value = text("retry-after")?;
    if let Some(secs) = parse_non_negative(value) {
        return Some(secs_capped(secs));
    }
    let date = parse_http_date(value)?;
    Some(
        date.duration_since(now)
            .unwrap_or(Duration::ZERO)
            .min(MAX_RETRY_AFTER),
    )
}

fn parse_non_negative(s: &str) -> Option<f64> {
    let v: f64 = s.parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v)
}

fn secs_capped(secs: f64) -> Duration {
    if secs >= MAX_RETRY_AFTER.as_secs_f64() {
        MAX_RETRY_AFTER
    } else {
        Duration::from_secs_f64(secs)
    }
}

/// Parses an HTTP-date (RFC 9110 §5.6.7): the IMF-fixdate senders must use
/// (`Sun, 06 Nov 1994 08:49:37 GMT`), and the obsolete RFC 850 and asctime forms a recipient
/// must still accept.
fn parse_http_date(s: &str) -> Option<SystemTime> {
    httpdate::parse_http_date(s.trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;
    use std::time::UNIX_EPOCH;

    #[test]
    fn server_errors_are_retried_except_those_a_retry_cannot_change() {
        let err = |status: u16| ProviderError {
            class: ErrorClass::ServerError,
            status: Some(status),
            message: String::new(),
            attempts: 1,
        };
        for status in [500, 502, 503, 504, 529] {
            assert!(should_retry(&err(status)), "{status}");
        }
        // Not Implemented and HTTP Version Not Supported answer the same way every time.
        for status in [501, 505] {
            assert!(!should_retry(&err(status)), "{status}");
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn backoff_stays_within_capped_exponential_bounds() {
        let base = Duration::from_millis(100);
        let cap = Duration::from_secs(2);
        for retry in 0..40 {
            let ceiling = (base * 2u32.saturating_pow(retry.min(20))).min(cap);
            for unit in [0.0, 1e-9, 0.25, 0.5, 0.999_999, 1.0] {
                let d = backoff_delay(retry, base, cap, unit);
                assert!(
                    d <= ceiling,
                    "retry {retry} unit {unit}: {d:?} > {ceiling:?}"
                );
                assert!(d <= cap);
            }
            assert_eq!(backoff_delay(retry, base, cap, 0.0), Duration::ZERO);
        }
        assert_eq!(backoff_delay(0, base, cap, 0.5), Duration::from_millis(50));
        assert_eq!(backoff_delay(3, base, cap, 0.5), Duration::from_millis(400));
        assert_eq!(backoff_delay(10, base, cap, 0.5), Duration::from_secs(1));
        assert_eq!(backoff_delay(u32::MAX, base, cap, 1.0), cap);
        assert_eq!(backoff_delay(2, base, cap, f64::NAN), Duration::ZERO);
    }

    #[test]
    fn backoff_with_random_units_covers_the_range() {
        let base = Duration::from_millis(100);
        let cap = Duration::from_secs(1);
        let samples: Vec<Duration> = (0..2000)
            .map(|_| backoff_delay(4, base, cap, rand::random::<f64>()))
            .collect();
        assert!(samples.iter().all(|d| *d <= cap));
        // Full jitter: both small and large waits occur.
        assert!(samples.iter().any(|d| *d < Duration::from_millis(100)));
        assert!(samples.iter().any(|d| *d > Duration::from_millis(900)));
    }

    #[test]
    fn retry_after_seconds_fractional_and_ms() {
        let now = SystemTime::now();
        assert_eq!(
            retry_after(&headers(&[("retry-after", "2")]), now),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", " 0.2 ")]), now),
            Some(Duration::from_millis(200))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "150")]), now),
            Some(Duration::from_millis(150))
        );
        // retry-after-ms wins.
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "5"), ("retry-after-ms", "1500.5")]),
                now
            ),
            Some(Duration::from_micros(1_500_500))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "100000")]), now),
            Some(MAX_RETRY_AFTER)
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "-1")]), now), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "NaN")]), now), None);
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
    }

    #[test]
    fn retry_after_http_date() {
        let date = parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(
            date.duration_since(UNIX_EPOCH).unwrap().as_secs(),
            784_111_777
        );
        assert_eq!(
            parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"),
            Some(UNIX_EPOCH)
        );
        assert_eq!(
            parse_http_date("Tue, 29 Feb 2028 12:00:00 GMT")
                .unwrap()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_secs(),
            1_835_438_400
        );
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 PST"), None);
        assert_eq!(parse_http_date("garbage"), None);
        // The obsolete forms RFC 9110 says a recipient must accept.
        let fixdate = parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), fixdate);
        assert_eq!(parse_http_date("Sun Nov  6 08:49:37 1994"), fixdate);
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777 - 30);
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")]),
                now
            ),
            Some(Duration::from_secs(30))
        );
        // A date in the past means "now".
        let later = now + Duration::from_secs(3600);
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")]),
                later
            ),
            Some(Duration::ZERO)
        );
        // Far future: capped.
        let long_before = UNIX_EPOCH;
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")]),
                long_before
            ),
            Some(MAX_RETRY_AFTER)
        );
    }
}
