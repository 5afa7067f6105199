//! Decisions: what a run's numbers mean for the user's question. Each takes a `Summary` (or the
//! event stream) and the statistics of `stats`, and returns a verdict the reports show and the
//! CLI turns into an exit code; none formats a report beyond its own printer.
//!
//! - [`gate`]: `--gate` verdicts (suite, case, tool; rates and latency budgets), the sequential
//!   gate that stops decided cases, and the `--baseline` non-inferiority gate;
//! - [`decision`]: the run's one verdict over gates, comparison, infrastructure and budget,
//!   and its exit code;
//! - [`compare`]: `toolscore compare` and `run --compare`, two arms paired by case;
//! - `rounds`: trials gathered into complete rounds for the sequential tests that judge a
//!   fixed set of cases together;
//! - [`sample_size`]: `toolscore plan`, the trials and cases each option needs before anything is spent.

pub mod compare;
pub mod decision;
pub mod gate;
pub mod race;
mod rounds;
pub mod sample_size;
