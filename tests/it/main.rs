//! The integration tests, one binary (as uv keeps its): each file is a module, `support`
//! holds what they share (running the binary with a cleared environment, snapshots with
//! filters, fake provider and MCP servers), and the crate is linked once instead of once per
//! file.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test or benchmark program reports what it measured on the terminal"
)]

mod support;

mod bfcl_agreement;
mod ci_recipes;
mod cli_arms;
mod cli_attacks;
mod cli_batch;
mod cli_compare;
mod cli_config_lookup;
mod cli_cost;
mod cli_explain;
mod cli_formats;
mod cli_gate;
mod cli_help;
mod cli_history;
mod cli_import;
mod cli_import_traffic;
mod cli_init;
mod cli_input_errors;
mod cli_lint;
mod cli_lint_judge;
mod cli_lint_measure;
mod cli_lock;
mod cli_models;
mod cli_plan;
mod cli_progress;
mod cli_providers;
mod cli_replay;
mod cli_report;
mod cli_rescore;
mod cli_run;
mod cli_scenarios;
mod cli_sequential;
mod cli_sequential_compare;
mod cli_tune;
mod cli_variants;

mod coverage;
mod decision;
mod docs;
mod event_stream;
mod fuzz_corpora;
mod hostile_inputs;
mod lint_corpus;
mod mcp_bounds;
mod mcp_live;
mod mcp_stress;
mod module_graph;
mod probe_security;
mod provider_adapters;
mod provider_limits;
mod provider_openai;
mod quickstart;
mod readme_examples;
mod real_model;
mod real_model_shapes;
mod report_browser;
mod report_html;
mod resume;
mod secrets;
mod shard_recipes;
mod shards;
