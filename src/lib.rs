//! toolscore: replay tool-selection fixtures against model providers many times, score every
//! trial, and report each rate with its confidence interval.
//!
//! This crate is the command line (`cli`); the layers it composes are the workspace's crates
//! under `crates/`, one per layer, so an import against the arrows does not compile. The map,
//! and the arrows between crates: docs/contributing/architecture.md.

pub mod cli;
