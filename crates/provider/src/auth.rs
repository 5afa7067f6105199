//! The headers that carry a provider's key, always marked sensitive so no log or error prints
//! them.

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};

/// An API key that cannot be sent in an HTTP header.
#[derive(Debug, Clone, Copy)]
pub struct InvalidHeader;

/// `Authorization: Bearer KEY`, the scheme most providers use.
pub fn bearer_auth(api_key: &str, headers: &mut HeaderMap) -> Result<(), InvalidHeader> {
    key_header(AUTHORIZATION, &format!("Bearer {api_key}"), headers)
}

/// `NAME: VALUE` for a secret, marked sensitive so it is never printed with the headers.
pub(crate) fn key_header(
    name: HeaderName,
    value: &str,
    headers: &mut HeaderMap,
) -> Result<(), InvalidHeader> {
    let mut value = HeaderValue::from_str(value).map_err(|_| InvalidHeader)?;
    value.set_sensitive(true);
    headers.insert(name, value);
    Ok(())
}
