//! Shared helpers for the integration tests (`tests/it/main.rs` declares `mod support;`, each
//! test module `use crate::support;`) and the benchmarks (`#[path]`). Not every test uses every
//! helper.
#![allow(dead_code, unused_imports)]

pub(crate) mod cli;
pub(crate) mod fake_batch;
pub(crate) mod fake_openai;
pub(crate) mod fake_providers;
pub(crate) mod files;
pub(crate) mod history;
pub(crate) mod mcp_http;
pub(crate) mod mcp_servers;
pub(crate) mod measure;
pub(crate) mod stress_servers;
pub(crate) mod word_models;

pub(crate) use cli::*;
pub(crate) use fake_openai::*;
pub(crate) use fake_providers::*;
pub(crate) use files::*;
pub(crate) use mcp_servers::*;
pub(crate) use stress_servers::*;
