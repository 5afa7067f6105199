//! A string that must never reach logs, results, reports or error messages.

use std::fmt;

/// Holds a secret (an API key). `Debug` and `Display` print `[REDACTED]`; the only way to read
/// the value is [`SecretString::expose`], which makes every use greppable.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretString(String);

impl SecretString {
    pub fn new(value: String) -> Self {
        SecretString(value)
    }

    /// The secret text. Use only to build an outgoing request header.
    pub fn expose(&self) -> &str {
        &self.0
    }

    #[cfg(test)]
    /// Replaces every occurrence of the secret in `text` with `[REDACTED]` (no-op for secrets
    /// too short to be meaningful, which would otherwise mangle ordinary text).
    fn redact_from(&self, text: &str) -> String {
        redact(text, Some(self))
    }
}

impl fmt::Debug for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[REDACTED]")
    }
}

impl fmt::Display for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[REDACTED]")
    }
}

impl From<String> for SecretString {
    fn from(value: String) -> Self {
        SecretString(value)
    }
}

/// Removes the secret's text (and its `Bearer` header form) from `text`.
pub(crate) fn redact(text: &str, secret: Option<&SecretString>) -> String {
    match secret {
        Some(s) if s.0.len() >= 4 && text.contains(s.0.as_str()) => {
            text.replace(s.0.as_str(), "[REDACTED]")
        }
        _ => text.to_owned(),
    }
}

/// Removes the secret's bytes from a response body, wherever they are (an error body that
/// quotes the header, a 200 whose text or arguments echo the key), before anything reads,
/// excerpts, records or decodes it: cutting an excerpt first could split the key so that no
/// later pass recognises it. Returns the body unchanged (no copy) when it does not contain it.
pub(crate) fn scrub_bytes(body: bytes::Bytes, secret: Option<&SecretString>) -> bytes::Bytes {
    let Some(s) = secret else {
        return body;
    };
    let needle = s.0.as_bytes();
    if needle.len() < 4 || !contains(&body, needle) {
        return body;
    }
    let mut out = Vec::with_capacity(body.len());
    let mut rest: &[u8] = &body;
    while let Some(i) = find(rest, needle) {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(b"[REDACTED]");
        rest = &rest[i + needle.len()..];
    }
    out.extend_from_slice(rest);
    bytes::Bytes::from(out)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    find(haystack, needle).is_some()
}

#[cfg(test)]
mod tests {
    #[test]
    fn scrub_bytes_removes_every_occurrence_and_leaves_other_bodies_alone() {
        let key = super::SecretString::new("sk-live-0123456789abcdef".into());
        let body = bytes::Bytes::from_static(
            b"{\"error\":\"bad key sk-live-0123456789abcdef\",\"echo\":\"sk-live-0123456789abcdefsk-live-0123456789abcdef\"}",
        );
        let out = super::scrub_bytes(body, Some(&key));
        let text = std::str::from_utf8(&out).unwrap();
        assert!(!text.contains("0123456789"), "{text}");
        assert_eq!(text.matches("[REDACTED]").count(), 3);
        let clean = bytes::Bytes::from_static(b"{\"ok\":true}");
        let same = super::scrub_bytes(clean.clone(), Some(&key));
        assert_eq!(
            same.as_ptr(),
            clean.as_ptr(),
            "no copy when there is nothing to scrub"
        );
    }

    use super::*;

    #[test]
    fn debug_and_display_are_redacted() {
        let s = SecretString::new("sk-very-secret".into());
        assert_eq!(format!("{s}"), "[REDACTED]");
        assert_eq!(format!("{s:?}"), "[REDACTED]");
        assert_eq!(s.expose(), "sk-very-secret");
    }

    #[test]
    fn redacts_every_occurrence() {
        let s = SecretString::new("sk-abc123".into());
        let out = s.redact_from("bad key sk-abc123; again sk-abc123!");
        assert!(!out.contains("sk-abc123"), "{out}");
        assert_eq!(out.matches("[REDACTED]").count(), 2);
    }
}
