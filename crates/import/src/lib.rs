//! Importers: datasets made from what a user already has, with no run machinery.
//!
//! - [`bfcl`]: BFCL's categories as datasets the BFCL checker judges;
//! - [`traffic`]: logged OpenAI, Anthropic and OTel GenAI exchanges as fixtures, redacted and
//!   sampled;
//! - [`dataset`]: writing either, staged and validated before it is put in place.

pub mod bfcl;
pub mod dataset;
pub mod traffic;
