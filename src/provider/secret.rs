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

    /// Replaces every occurrence of the secret in `text` with `[REDACTED]` (no-op for secrets
    /// too short to be meaningful, which would otherwise mangle ordinary text).
    pub fn redact_from(&self, text: &str) -> String {
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

#[cfg(test)]
mod tests {
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
