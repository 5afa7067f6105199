//! In-process MCP servers for `toolscore stress` (served by [`super::mcp_http`]): one with
//! deliberate faults, and a knowledge graph whose store is shared between sessions, kept per
//! session, or reached only through tools that take no free string.

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{MaybeSendFuture, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::json;

use super::mcp_http::{FrontAnswer, mcp_tool, no_front, serve_mcp};

fn info(name: &str) -> ServerConfig {
    ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        .with_server_info(Implementation::new(name, "0.1.0"))
}

fn answer(text: String) -> Result<CallToolResponse, ErrorData> {
    Ok(CallToolResponse::Complete(CallToolResult::success(vec![
        ContentBlock::text(text),
    ])))
}

// ---------------------------------------------------------------------------------------------
// Faults: every tool takes a free string `text`.

/// `echo` answers the text back; `remember` answers the text of the call before it,
/// whichever session made it (a shared global, the bug stress looks for); the rest never
/// reach the handler (see [`faulty_front`]).
#[derive(Clone)]
struct Faulty {
    last: Arc<Mutex<String>>,
}

pub(crate) const FAULTY_TOOLS: [&str; 7] = [
    "echo",
    "remember",
    "slow_down",
    "throttle",
    "broken",
    "hang_up",
    "reject",
];

/// The schema every faulty tool takes.
pub(crate) fn text_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"]
    })
}

impl ServerHandler for Faulty {
    fn get_info(&self) -> ServerConfig {
        info("faulty")
    }

    fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListToolsResult, ErrorData>> + MaybeSendFuture + '_ {
        let tools = FAULTY_TOOLS
            .iter()
            .map(|t| mcp_tool(t, &format!("{t} the text"), text_schema()))
            .collect();
        std::future::ready(Ok(ListToolsResult::with_all_items(tools)))
    }

    fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + MaybeSendFuture + '_ {
        let text = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(|t| t.as_str())
            .unwrap_or_default()
            .to_owned();
        let reply = match request.name.as_ref() {
            "remember" => {
                let mut last = self.last.lock().unwrap();
                let previous = std::mem::replace(&mut *last, text);
                format!("last time: {previous}")
            }
            _ => format!("echo: {text}"),
        };
        std::future::ready(answer(reply))
    }
}

/// A `tools/call` of `slow_down` gets 429 with `Retry-After: 1`, `throttle` 429 without it,
/// `broken` 503, `reject` 400, and `hang_up` a closed connection.
fn faulty_front(
    _: &hyper::http::request::Parts,
    message: &serde_json::Value,
) -> Option<FrontAnswer> {
    let called = (message["method"] == "tools/call")
        .then(|| message["params"]["name"].as_str())
        .flatten()?;
    Some(match called {
        "slow_down" => FrontAnswer::Status(hyper::StatusCode::TOO_MANY_REQUESTS, Some("1")),
        "throttle" => FrontAnswer::Status(hyper::StatusCode::TOO_MANY_REQUESTS, None),
        "reject" => FrontAnswer::Status(hyper::StatusCode::BAD_REQUEST, None),
        "broken" => FrontAnswer::Status(hyper::StatusCode::SERVICE_UNAVAILABLE, None),
        "hang_up" => FrontAnswer::HangUp,
        _ => return None,
    })
}

/// Serves the faulty server; returns its URL.
pub(crate) fn start_faulty_server() -> String {
    let last = Arc::new(Mutex::new(String::new()));
    serve_mcp(
        move || Faulty {
            last: Arc::clone(&last),
        },
        Arc::new(faulty_front),
    )
}

// ---------------------------------------------------------------------------------------------
// A knowledge graph (after the published server-memory): `create_entities` takes entities
// whose names and observations are strings nested in an array of objects; `read_graph` takes
// nothing and answers every stored entity.

/// How the graph server keeps its store, and which tools it lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GraphServer {
    /// One store for every session: what one session creates, the others read back. Its only
    /// free strings are nested (no top-level string parameter at all).
    Shared,
    /// A store per MCP session.
    PerSession,
    /// One store, but tools whose strings are all an `enum`, a `const`, a `format` or a
    /// `pattern`: `read_graph`, `open_nodes` and `tag_nodes`.
    NoFreeStrings,
}

/// Entities kept: the oldest go, so `read_graph`'s answer stays small.
const GRAPH_KEPT: usize = 16;

#[derive(Clone)]
struct Graph {
    kind: GraphServer,
    store: Arc<Mutex<Vec<serde_json::Value>>>,
}

/// The tools of `kind`.
pub(crate) fn graph_tools(kind: GraphServer) -> Vec<Tool> {
    let read = mcp_tool(
        "read_graph",
        "Every entity",
        json!({"type": "object", "properties": {}}),
    );
    if kind == GraphServer::NoFreeStrings {
        let open = mcp_tool(
            "open_nodes",
            "Entities by id",
            json!({"type": "object", "properties": {
                "ids": {"type": "array", "items": {"type": "string", "pattern": "^e[0-9]+$"}},
                "kind": {"type": "string", "enum": ["person", "place"]}}}),
        );
        let tag = mcp_tool(
            "tag_nodes",
            "Tag entities",
            json!({"type": "object", "properties": {"tag": {"type": "object", "properties": {
                "color": {"const": "red"},
                "on": {"type": "string", "format": "date"},
                "count": {"type": "integer"}}}}}),
        );
        return vec![read, open, tag];
    }
    let create = mcp_tool(
        "create_entities",
        "Create entities",
        json!({"type": "object", "properties": {"entities": {"type": "array", "items": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "entityType": {"type": "string", "enum": ["person", "place"]},
                "observations": {"type": "array", "items": {"type": "string"}}},
            "required": ["name", "entityType", "observations"]}}},
            "required": ["entities"]}),
    );
    vec![create, read]
}

impl ServerHandler for Graph {
    fn get_info(&self) -> ServerConfig {
        info("graph")
    }

    fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListToolsResult, ErrorData>> + MaybeSendFuture + '_ {
        std::future::ready(Ok(ListToolsResult::with_all_items(graph_tools(self.kind))))
    }

    fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + MaybeSendFuture + '_ {
        let mut store = self.store.lock().unwrap();
        let reply = match request.name.as_ref() {
            "create_entities" => {
                let entities = request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("entities"))
                    .and_then(|e| e.as_array())
                    .cloned()
                    .unwrap_or_default();
                let created = entities.len();
                store.extend(entities);
                let excess = store.len().saturating_sub(GRAPH_KEPT);
                store.drain(..excess);
                format!("created {created} entities")
            }
            "read_graph" => json!({"entities": *store}).to_string(),
            other => format!("{other}: done"),
        };
        std::future::ready(answer(reply))
    }
}

/// Serves a graph server of `kind`; returns its URL.
pub(crate) fn start_graph_server(kind: GraphServer) -> String {
    let shared = Arc::new(Mutex::new(Vec::new()));
    serve_mcp(
        move || Graph {
            kind,
            store: match kind {
                GraphServer::PerSession => Arc::new(Mutex::new(Vec::new())),
                GraphServer::Shared | GraphServer::NoFreeStrings => Arc::clone(&shared),
            },
        },
        no_front(),
    )
}
