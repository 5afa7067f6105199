//! rmcp's own streamable-HTTP MCP server, in process: any `ServerHandler` on a free local
//! port, from a thread of its own, optionally behind a front that answers some requests
//! itself (a status, or a dropped connection) before the MCP service sees them.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::TokioIo;
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};

/// What the front answers in place of the MCP service.
pub(crate) enum FrontAnswer {
    /// This status, with its reason as a plain-text body and, when given, a `Retry-After`
    /// header.
    Status(hyper::StatusCode, Option<&'static str>),
    /// No answer: the connection is closed.
    HangUp,
}

/// Reads each request (its headers and its JSON-RPC message) before the service does;
/// `None` lets it through.
pub(crate) type Front = Arc<
    dyn Fn(&hyper::http::request::Parts, &serde_json::Value) -> Option<FrontAnswer> + Send + Sync,
>;

/// A front that lets everything through.
pub(crate) fn no_front() -> Front {
    Arc::new(|_, _| None)
}

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

fn plain(status: hyper::StatusCode, retry_after: Option<&str>) -> hyper::Response<Body> {
    let reason = status.canonical_reason().unwrap_or_default();
    let body = Full::new(Bytes::from_static(reason.as_bytes()))
        .map_err(|e: Infallible| match e {})
        .boxed();
    let mut resp = hyper::Response::new(body);
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert("content-type", "text/plain".parse().unwrap());
    if let Some(r) = retry_after {
        resp.headers_mut().insert("retry-after", r.parse().unwrap());
    }
    resp
}

/// Serves the handlers `make` builds (rmcp calls it for each new MCP session) behind `front`
/// and returns the URL.
pub(crate) fn serve_mcp<H, M>(make: M, front: Front) -> String
where
    H: ServerHandler,
    M: Fn() -> H + Send + Sync + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let service = Arc::new(StreamableHttpService::new(
                move || Ok(make()),
                Arc::new(LocalSessionManager::default()),
                StreamableHttpServerConfig::default(),
            ));
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let service = Arc::clone(&service);
                let front = Arc::clone(&front);
                tokio::spawn(async move {
                    let handler = hyper::service::service_fn(
                        move |req: hyper::Request<hyper::body::Incoming>| {
                            let service = Arc::clone(&service);
                            let front = Arc::clone(&front);
                            async move {
                                let (parts, body) = req.into_parts();
                                let bytes =
                                    body.collect().await.map_err(|e| e.to_string())?.to_bytes();
                                let message: serde_json::Value =
                                    serde_json::from_slice(&bytes).unwrap_or_default();
                                match front(&parts, &message) {
                                    Some(FrontAnswer::Status(status, retry_after)) => {
                                        return Ok(plain(status, retry_after));
                                    }
                                    // An error from the service makes hyper close the
                                    // connection without answering.
                                    Some(FrontAnswer::HangUp) => return Err("hung up".to_owned()),
                                    None => {}
                                }
                                let req = hyper::Request::from_parts(parts, Full::new(bytes));
                                Ok::<_, String>(service.handle(req).await)
                            }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), handler)
                        .await;
                });
            }
        });
    });
    let addr = rx.recv().unwrap();
    format!("http://{addr}/mcp")
}

/// A tool named `name` with input schema `schema` (a JSON object).
pub(crate) fn mcp_tool(
    name: &str,
    description: &str,
    schema: serde_json::Value,
) -> rmcp::model::Tool {
    let serde_json::Value::Object(schema) = schema else {
        panic!("an input schema is an object: {schema}")
    };
    rmcp::model::Tool::new(name.to_owned(), description.to_owned(), Arc::new(schema))
}
