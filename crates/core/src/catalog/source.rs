//! Where a catalog came from when a live server served it: what the server said about itself,
//! and how it was reached. Plain data, so reports and runs can name the server without
//! knowing how MCP is spoken (that is `mcp::client`).

use serde::{Deserialize, Serialize};

/// Who answered: what the server said about itself in `initialize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerIdentity {
    pub name: String,
    pub version: String,
    /// The protocol version the session agreed on.
    pub protocol_version: String,
}

impl std::fmt::Display for ServerIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} (protocol {})",
            self.name, self.version, self.protocol_version
        )
    }
}

/// A live server as a run records it: how it was reached (command line or URL, never env or
/// header values) and what it said about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveSource {
    pub source: String,
    #[serde(flatten)]
    pub server: ServerIdentity,
}
