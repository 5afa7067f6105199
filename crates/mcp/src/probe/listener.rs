//! The loopback listener the server-side request forgery check points its payloads at: an
//! HTTP listener on 127.0.0.1 that toolscore starts for the probe, so the only address a
//! payload names is toolscore's own, and a request reaching it is proof that the server
//! fetched what it was handed.
//!
//! It is bounded: it reads at most [`MAX_REQUEST_BYTES`] of a request's head for at most
//! [`READ_WINDOW`], serves at most [`MAX_CONNECTIONS`] connections at once (more are closed
//! unanswered), keeps at most [`MAX_HITS`] hits, and lives as long as the value (dropping it
//! stops the accept loop).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinHandle;

/// The path prefix of every payload URL; the token follows it.
pub(super) const TOKEN_PATH: &str = "/toolscore-probe/";
/// Bytes of a request's head read before it is judged.
pub(super) const MAX_REQUEST_BYTES: usize = 8 * 1024;
/// Connections served at once.
pub(super) const MAX_CONNECTIONS: usize = 16;
/// Hits kept; a server that floods the listener cannot grow toolscore's memory.
pub(super) const MAX_HITS: usize = 1_000;
/// How long one connection may take to send its request head.
const READ_WINDOW: Duration = Duration::from_secs(2);
/// What the listener answers: short, and plainly not the page a server asked for.
const BODY: &str = "toolscore probe listener\n";

/// One request that reached the listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Hit {
    /// The token in its path, if it held one.
    pub(super) token: Option<String>,
    /// Its request line (`GET /toolscore-probe/… HTTP/1.1`), cut at [`MAX_REQUEST_BYTES`].
    pub(super) request_line: String,
}

#[derive(Default)]
struct Hits {
    list: Mutex<Vec<Hit>>,
    arrived: Notify,
}

/// A listener on 127.0.0.1 at a port the system chose.
pub(super) struct Listener {
    addr: SocketAddr,
    hits: Arc<Hits>,
    accept: JoinHandle<()>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl Listener {
    /// Binds 127.0.0.1 at an ephemeral port and serves from a task of the current runtime.
    pub(super) async fn start() -> std::io::Result<Listener> {
        let socket = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = socket.local_addr()?;
        let hits = Arc::new(Hits::default());
        let served = Arc::clone(&hits);
        let accept = tokio::spawn(async move {
            let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
            loop {
                let Ok((stream, _)) = socket.accept().await else {
                    continue;
                };
                // Over the bound the connection is dropped unanswered.
                let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
                    continue;
                };
                let hits = Arc::clone(&served);
                tokio::spawn(async move {
                    serve(stream, &hits).await;
                    drop(slot);
                });
            }
        });
        Ok(Listener { addr, hits, accept })
    }

    /// `127.0.0.1:PORT`.
    pub(super) fn authority(&self) -> String {
        self.addr.to_string()
    }

    /// The URL that carries `token`.
    pub(super) fn url(&self, token: &str) -> String {
        format!("http://{}{TOKEN_PATH}{token}", self.addr)
    }

    /// The first hit that carried `token`, waiting up to `within` for it (a server may fetch
    /// after it answered).
    pub(super) async fn hit_with(&self, token: &str, within: Duration) -> Option<Hit> {
        self.wait(within, |h| h.token.as_deref() == Some(token))
            .await
    }

    /// The first hit of any kind, waiting up to `within`: for a listener started for one call
    /// only, whose every hit is that call's.
    pub(super) async fn any_hit(&self, within: Duration) -> Option<Hit> {
        self.wait(within, |_| true).await
    }

    async fn wait(&self, within: Duration, wanted: impl Fn(&Hit) -> bool) -> Option<Hit> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            // Registered before looking, so a hit between the look and the wait still wakes.
            let arrived = self.hits.arrived.notified();
            if let Some(h) = self.find(&wanted) {
                return Some(h);
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return self.find(&wanted);
            }
        }
    }

    fn find(&self, wanted: &impl Fn(&Hit) -> bool) -> Option<Hit> {
        let list = self.hits.list.lock().unwrap_or_else(|p| p.into_inner());
        list.iter().find(|h| wanted(h)).cloned()
    }
}

/// Reads one request head (bounded in bytes and time), records it, answers 200 and closes.
async fn serve(mut stream: TcpStream, hits: &Hits) {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    let read = tokio::time::timeout(READ_WINDOW, async {
        while head.len() < MAX_REQUEST_BYTES && !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n.min(MAX_REQUEST_BYTES - head.len())]),
            }
        }
    })
    .await;
    if head.is_empty() && read.is_err() {
        return;
    }
    let text = String::from_utf8_lossy(&head);
    let request_line = text.lines().next().unwrap_or_default().to_owned();
    let hit = Hit {
        token: token_of(&request_line),
        request_line,
    };
    {
        let mut list = hits.list.lock().unwrap_or_else(|p| p.into_inner());
        if list.len() < MAX_HITS {
            list.push(hit);
        }
    }
    hits.arrived.notify_waiters();
    let answer = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{BODY}",
        BODY.len()
    );
    let _ = tokio::time::timeout(READ_WINDOW, stream.write_all(answer.as_bytes())).await;
    let _ = stream.shutdown().await;
}

/// The token after [`TOKEN_PATH`] in a request line: its alphanumeric run (a server may append
/// a path or a query of its own).
pub(super) fn token_of(request_line: &str) -> Option<String> {
    let at = request_line.find(TOKEN_PATH)? + TOKEN_PATH.len();
    let token: String = request_line[at..]
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    (!token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_read_from_the_path_whatever_follows_them() {
        assert_eq!(
            token_of("GET /toolscore-probe/ab12/status?x=1 HTTP/1.1").as_deref(),
            Some("ab12")
        );
        assert_eq!(token_of("GET /status HTTP/1.1"), None);
        assert_eq!(token_of("GET /toolscore-probe/ HTTP/1.1"), None);
    }

    #[tokio::test]
    async fn a_request_with_a_token_is_a_hit_and_others_are_kept_apart() {
        let listener = Listener::start().await.unwrap();
        let mut s = TcpStream::connect(listener.authority()).await.unwrap();
        s.write_all(b"GET /toolscore-probe/tok1 HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
        let hit = listener
            .hit_with("tok1", Duration::from_millis(500))
            .await
            .unwrap();
        assert_eq!(hit.request_line, "GET /toolscore-probe/tok1 HTTP/1.1");
        assert_eq!(
            listener.hit_with("tok2", Duration::from_millis(50)).await,
            None
        );
        assert!(listener.url("t").ends_with("/toolscore-probe/t"));
    }
}
