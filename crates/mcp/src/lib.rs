//! MCP servers, live: the client every other module speaks MCP through, and the two commands
//! that test a server rather than a model.
//!
//! - [`client`]: sessions over stdio or streamable HTTP through the official SDK (`rmcp`, named
//!   nowhere else), bounded in time, bytes and count;
//! - [`probe`]: `toolscore probe`, edge checks of a server and their verdicts, and the escape
//!   probes of `--security` ([`probe::security`]);
//! - [`stress`]: `toolscore stress`, parallel sessions, canaries and leakage, per-tool tallies
//!   and the error-rate gate.

pub mod client;
pub mod probe;
pub mod stress;

/// One call a dataset's case expects (its tool and arguments), made straight against the
/// server: probe's `result` check and each stress session's calls.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetCall {
    pub case: String,
    pub tool: String,
    pub args: serde_json::Value,
}
