//! MCP servers, live: the client every other module speaks MCP through, and the two commands
//! that test a server rather than a model.
//!
//! - `client` ([`McpSession`], [`ServerSpec`], [`list_catalog_blocking`]): sessions over stdio
//!   or streamable HTTP through the official SDK (`rmcp`, named nowhere else), bounded in time,
//!   bytes and count;
//! - `probe` ([`probe()`]): `toolscore probe`, edge checks of a server and their verdicts, and
//!   the escape probes of `--security` (`probe::security`: [`probe_escapes`]);
//! - `stress` ([`stress()`], [`summarise`]): `toolscore stress`, parallel sessions, canaries and
//!   leakage, per-tool tallies and the error-rate gate.
//!
//! The modules are private; the root re-exports what other crates name.

mod client;
mod probe;
mod stress;

pub use client::{
    MCP_SHUT_DOWN, McpError, McpSession, ServerSpec, list_catalog_blocking, shutdown_signal,
};
pub use probe::security::{
    DEFAULT_MAX_CALLS, EscapeCheck, EscapeReport, EscapeVerdict, ProbeError, ToolCalls,
    is_loopback_url, probe_escapes,
};
pub use probe::{CheckVerdict, ProbeReport, probe};
pub use stress::{
    ArgPath, ArgSelector, CallObservation, CallOutcome, CallPlan, Canary, EnvReader, KeptField,
    KeptReason, LEAKS_SHOWN, Leak, LeakPair, LeakSource, Leakage, MAX_ARG_DEPTH, MAX_ARG_VALUES,
    MIN_FREE_MAX_LENGTH, PeakLoad, SessionLog, Step, StressPlan, StressReport, StressRun,
    StressSettings, ToolCanaries, ToolStress, Untested, stress, summarise,
};

/// One call a dataset's case expects (its tool and arguments), made straight against the
/// server: probe's `result` check and each stress session's calls.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetCall {
    pub case: String,
    pub tool: String,
    pub args: serde_json::Value,
}
