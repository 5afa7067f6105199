//! Shared helpers for the integration tests (`tests/it/main.rs` declares `mod support;`, each
//! test module `use crate::support;`) and the benchmarks (`#[path]`). Not every test uses every
//! helper.
#![allow(dead_code, unused_imports)]

pub mod cli;
pub mod fake_batch;
pub mod fake_openai;
pub mod fake_providers;
pub mod files;
pub mod mcp_http;
pub mod mcp_servers;
pub mod measure;
pub mod stress_servers;

pub use cli::*;
pub use fake_openai::*;
pub use fake_providers::*;
pub use files::*;
pub use mcp_servers::*;
pub use stress_servers::*;
