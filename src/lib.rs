//! toolscore: replay tool-selection fixtures against model providers many times, score every
//! trial, and report each rate with its confidence interval.
//!
//! Data flows one way: `suite` loads and validates inputs, `runner` plans and executes trials
//! through a `provider`, `score` judges each model turn, the runner streams `TrialRecord`s to
//! disk and into `report::Aggregator`, and `report` renders a `Summary` whose intervals come
//! from `stats`. The map, and the arrows between modules: docs/contributing/architecture.md.

pub mod atomic;
pub mod catalog;
pub mod cli;
pub mod decide;
pub mod error;
pub mod event;
pub mod import;
pub mod input;
pub mod json;
pub mod lint;
pub mod mcp;
pub mod message;
pub mod provider;
pub mod record;
pub mod report;
pub mod runner;
pub mod score;
pub mod stats;
pub mod suite;
pub mod tune;
