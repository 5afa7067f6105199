//! Listing a server's tools: every page under one deadline, bounded in pages, tools and
//! bytes, checked as a catalog file is.

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use rmcp::ServiceError;
use rmcp::model::PaginatedRequestParams;
use serde_json::Value;

use super::bounded::count;
use super::{
    LiveCatalog, MAX_LISTING_BYTES, MAX_PAGES, MAX_TOOLS, McpError, McpSession, ServerSpec,
    shutdown_signal, terminate_group,
};
use toolscore_core::catalog::{Catalog, Tool, parse_tool};

impl McpSession {
    /// Every tool the server offers, following `nextCursor` to the last page, as a catalog.
    pub async fn list_tools(&self) -> Result<Catalog, McpError> {
        let values = self.list_tool_definitions().await?;
        match catalog_of_listing(&values, &self.server) {
            Ok(catalog) => Ok(catalog),
            Err(message) => Err(McpError::Malformed {
                server: self.server.clone(),
                message,
                stderr: self.stderr_settled().await,
            }),
        }
    }

    /// Every tool as the server listed it, as JSON (`title`, `outputSchema`, `annotations` and
    /// all): what a probe checks beyond what the model reads. One deadline covers the whole
    /// listing, and it stops at [`MAX_PAGES`] pages, [`MAX_TOOLS`] tools or
    /// [`MAX_LISTING_BYTES`] of definitions.
    pub(crate) async fn list_tool_definitions(&self) -> Result<Vec<Value>, McpError> {
        match tokio::time::timeout(self.timeout, self.list_pages()).await {
            Ok(listed) => listed,
            Err(_) => Err(self.timed_out("tools/list".into()).await),
        }
    }

    async fn list_pages(&self) -> Result<Vec<Value>, McpError> {
        let limit = |message: String| McpError::Limit {
            server: self.server.clone(),
            what: "tools/list".into(),
            message,
        };
        let mut tools: Vec<Value> = Vec::new();
        let mut held = 0usize;
        let mut cursor = None;
        for page in 1..=MAX_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor);
            let result = match self.service.peer().list_tools(Some(params)).await {
                Ok(result) => result,
                // rmcp's word for a result that does not deserialize as a tools/list result.
                Err(ServiceError::UnexpectedResponse) => {
                    return Err(McpError::Malformed {
                        server: self.server.clone(),
                        message: "the result is not a list of tools (each needs a `name` and an `inputSchema` object)".into(),
                        stderr: self.stderr_settled().await,
                    });
                }
                Err(e) => return Err(self.request_error("tools/list", e).await),
            };
            if tools.len() + result.tools.len() > MAX_TOOLS {
                return Err(limit(format!(
                    "more than {} tools (page {page} brought the count to {}), the bound on one listing",
                    count(MAX_TOOLS),
                    count(tools.len() + result.tools.len())
                )));
            }
            for tool in &result.tools {
                let value = serde_json::to_value(tool).unwrap_or(Value::Null);
                held += toolscore_core::compact_len(&value);
                if held > MAX_LISTING_BYTES {
                    return Err(limit(format!(
                        "more than {} bytes of tool definitions (64 MiB, by page {page}), the bound on one listing",
                        count(MAX_LISTING_BYTES)
                    )));
                }
                tools.push(value);
            }
            cursor = result.next_cursor;
            if cursor.is_none() {
                return Ok(tools);
            }
        }
        Err(limit(format!(
            "the server still sent a nextCursor after {} pages ({} tools so far), the bound on pages in one listing",
            count(MAX_PAGES),
            count(tools.len())
        )))
    }
}

/// The tools of a `tools/list` listing as a catalog, checked as a catalog file is.
pub(super) fn catalog_of_listing(tools: &[Value], source: &str) -> Result<Catalog, String> {
    let mut out: Vec<Tool> = Vec::with_capacity(tools.len());
    // A set, not a scan of the tools so far: 40,000 tools took 5 s that way.
    let mut names = std::collections::HashSet::with_capacity(tools.len());
    for (i, item) in tools.iter().enumerate() {
        let tool = parse_tool(item).map_err(|(field, msg)| format!("tools[{i}]{field}: {msg}"))?;
        if !names.insert(tool.name.clone()) {
            return Err(format!(
                "tools[{i}].name: duplicate tool name `{}`",
                tool.name
            ));
        }
        out.push(tool);
    }
    Ok(Catalog::new(out, source.to_owned()))
}

/// Connects, lists every tool and shuts down, whatever happened in between, from synchronous
/// code, on a runtime of its own. Ctrl-C or SIGTERM while it
/// runs shuts the server down and returns [`McpError::Interrupted`].
pub fn list_catalog_blocking(
    spec: &ServerSpec,
    timeout: Duration,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<LiveCatalog, McpError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| McpError::Spawn {
            server: spec.label(),
            message: format!("cannot start the async runtime: {e}"),
        })?;
    runtime.block_on(async {
        let group = AtomicI32::new(0);
        let session = tokio::select! {
            s = McpSession::connect_noting_group(spec, timeout, env, &group) => s?,
            () = shutdown_signal() => {
                // The abandoned connection's child would only be killed by a task of this
                // runtime, which is about to end: end it here.
                let g = group.load(Ordering::SeqCst);
                terminate_group((g > 0).then_some(g)).await;
                return Err(McpError::Interrupted);
            }
        };
        let listed = tokio::select! {
            l = session.list_tools() => l,
            () = shutdown_signal() => Err(McpError::Interrupted),
        };
        let server = session.server().clone();
        session.shutdown().await;
        Ok(LiveCatalog {
            catalog: listed?,
            server,
        })
    })
}
