//! Importers: datasets made from what a user already has, with no run machinery.
//!
//! - `bfcl` ([`import_category`]): BFCL's categories as datasets the BFCL checker judges;
//! - `traffic` ([`import()`]): logged OpenAI, Anthropic and OTel GenAI exchanges as fixtures,
//!   redacted and sampled;
//! - `dataset` ([`stage_dataset`], [`put_in_place`]): writing either, staged and validated
//!   before it is put in place.
//!
//! The modules are private; the root re-exports what other crates name.

mod bfcl;
mod dataset;
mod traffic;

pub use bfcl::{BFCL_CATEGORIES, import_category, installed_data_dir};
pub use dataset::{CatalogFile, put_in_place, stage_dataset, write_dataset};
pub use traffic::formats::Format as TrafficFormat;
pub use traffic::redact::Redactor;
pub use traffic::{
    Options as TrafficOptions, Record as TrafficRecord, TrafficDataset, TrafficImport,
    import as import_traffic,
};
