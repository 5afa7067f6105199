//! What a hostile or broken server can make toolscore hold or wait for, and the bounds on it.
//!
//! A stdio server is read through [`BoundedStdout`], which fails the connection at once when a
//! message grows past [`MAX_MESSAGE_BYTES`] or when the bytes are not UTF-8: the SDK would
//! otherwise drop such a line silently and leave the request waiting for its whole timeout,
//! reported as "no answer". The fault is kept in a [`StdoutFault`] so the error can say what
//! arrived. Its stderr is kept as a tail of [`STDERR_LINES`] lines of at most
//! [`STDERR_LINE_BYTES`] each, read in fixed chunks, so a 400 MB line costs no memory.
//! A listing is bounded in pages, tools and bytes by the session (`list_pages`).

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use process_wrap::tokio::{ChildWrapper, CommandWrap};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

/// Most tools one listing may hold. Published servers offer tens; 10,000 is far beyond any
/// catalog a model can choose from, and keeps a runaway listing to seconds of work.
pub(super) const MAX_TOOLS: usize = 10_000;
/// Most `tools/list` pages one listing follows. A server that always sends a `nextCursor`
/// would otherwise be followed until the timeout, holding every page.
pub(super) const MAX_PAGES: usize = 1_000;
/// Most bytes of tool definitions (as compact JSON) one listing may hold.
pub(super) const MAX_LISTING_BYTES: usize = 64 << 20;
/// Largest single message a server may send: the SDK's own bound on one line over stdio and
/// on one event over HTTP, so the two transports agree.
pub(super) const MAX_MESSAGE_BYTES: usize = 16 << 20;
/// Longest JSON-RPC error message quoted in an error; the rest is cut, saying how much.
pub(super) const MAX_ERROR_MESSAGE_BYTES: usize = 2_000;
/// Lines of stderr kept to quote in errors.
pub(super) const STDERR_LINES: usize = 40;
/// Longest stderr line kept, in bytes: with [`STDERR_LINES`], the tail is at most 80 KB.
pub(super) const STDERR_LINE_BYTES: usize = 2_000;

/// A count (of bytes, tools or pages) with thousands separators, as errors quote bounds.
pub(super) fn count(n: usize) -> String {
    toolscore_core::thousands(n as u64)
}

/// Why a stdio server's output was refused, once it was.
#[derive(Clone, Default)]
pub(super) struct StdoutFault(Arc<Mutex<Option<String>>>);

impl StdoutFault {
    pub(super) fn get(&self) -> Option<String> {
        self.0.lock().ok().and_then(|f| f.clone())
    }

    fn set(&self, message: &str) {
        if let Ok(mut f) = self.0.lock()
            && f.is_none()
        {
            *f = Some(message.to_owned());
        }
    }
}

/// A child's stdout that fails (and records why in its [`StdoutFault`]) once a line passes
/// [`MAX_MESSAGE_BYTES`] or a byte sequence is not UTF-8.
pub(super) struct BoundedStdout<R> {
    inner: R,
    /// Bytes of the current line so far.
    line: usize,
    /// Bytes read in all.
    total: usize,
    /// The start of a character split across two reads.
    pending: Vec<u8>,
    fault: StdoutFault,
}

impl<R> BoundedStdout<R> {
    pub(super) fn new(inner: R, fault: StdoutFault) -> Self {
        BoundedStdout {
            inner,
            line: 0,
            total: 0,
            pending: Vec::new(),
            fault,
        }
    }

    fn check(&mut self, data: &[u8]) -> Result<(), String> {
        let offset = self.total;
        self.total += data.len();
        for (i, segment) in data.split(|&b| b == b'\n').enumerate() {
            if i > 0 {
                self.line = 0;
            }
            self.line += segment.len();
            if self.line > MAX_MESSAGE_BYTES {
                return Err(format!(
                    "the server sent a message of more than {} bytes (16 MiB), the bound on one message",
                    count(MAX_MESSAGE_BYTES)
                ));
            }
        }
        self.check_utf8(data).map_err(|at| {
            format!(
                "the server's output is not valid UTF-8 (at byte {} of it), so not JSON-RPC",
                count(offset + at)
            )
        })
    }

    /// Ok, or the offset in `data` near the invalid bytes.
    fn check_utf8(&mut self, mut data: &[u8]) -> Result<(), usize> {
        let mut skipped = 0;
        if let Some(&lead) = self.pending.first() {
            let width = match lead {
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                _ => 4,
            };
            let take = (width - self.pending.len()).min(data.len());
            if data[..take].iter().any(|b| b & 0xC0 != 0x80) {
                return Err(0);
            }
            self.pending.extend_from_slice(&data[..take]);
            data = &data[take..];
            skipped = take;
            if self.pending.len() < width {
                return Ok(());
            }
            if std::str::from_utf8(&self.pending).is_err() {
                return Err(0);
            }
            self.pending.clear();
        }
        match std::str::from_utf8(data) {
            Ok(_) => Ok(()),
            // A character cut by the end of this read: its start waits for the next.
            Err(e) if e.error_len().is_none() => {
                self.pending = data[e.valid_up_to()..].to_vec();
                Ok(())
            }
            Err(e) => Err(skipped + e.valid_up_to()),
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedStdout<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if let Some(fault) = this.fault.get() {
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                fault,
            )));
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        if let Err(fault) = this.check(&buf.filled()[before..]) {
            // A failed read must not hand out bytes (readers assert nothing was filled).
            buf.set_filled(before);
            this.fault.set(&fault);
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                fault,
            )));
        }
        Poll::Ready(Ok(()))
    }
}

/// How long a server that answered may take to exit after its stdin closes, and again after
/// SIGTERM, before SIGKILL. Short (the SDK's own child transport waits 3 s each), so a server
/// deaf to both adds at most twice this to a command; a server that stopped answering gets
/// no grace at all ([`super::McpSession`] kills its group when the timeout passes).
pub(super) const EXIT_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// A stdio server as the SDK's child-process transport runs it, but read through
/// [`BoundedStdout`].
pub(super) struct BoundedChild {
    child: Option<Box<dyn ChildWrapper>>,
    fault: StdoutFault,
    transport: AsyncRwTransport<RoleClient, BoundedStdout<ChildStdout>, ChildStdin>,
}

/// A spawned server: its transport, its stderr if piped, and where a refused output is noted.
type Spawned = (BoundedChild, Option<ChildStderr>, StdoutFault);

impl BoundedChild {
    /// Spawns `cmd` with piped stdin, stdout and stderr.
    pub(super) fn spawn(mut cmd: CommandWrap) -> std::io::Result<Spawned> {
        cmd.command_mut()
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn()?;
        let inner = child.inner_mut();
        let (Some(stdin), Some(stdout)) = (inner.stdin().take(), inner.stdout().take()) else {
            let _ = child.start_kill();
            return Err(std::io::Error::other("no stdio pipes"));
        };
        let stderr = inner.stderr().take();
        let fault = StdoutFault::default();
        // Ours is the bound that speaks; the SDK's (the same size) would drop the line
        // silently and leave the request waiting.
        let transport =
            AsyncRwTransport::new_client(BoundedStdout::new(stdout, fault.clone()), stdin)
                .with_max_line_length(usize::MAX);
        let spawned = BoundedChild {
            child: Some(child),
            fault: fault.clone(),
            transport,
        };
        Ok((spawned, stderr, fault))
    }

    pub(super) fn id(&self) -> Option<u32> {
        self.child.as_ref()?.id()
    }

    /// MCP's stdio shutdown: close stdin, wait; SIGTERM, wait; kill.
    async fn shut_down(&mut self) -> std::io::Result<()> {
        let Some(child) = self.child.as_mut() else {
            return Ok(());
        };
        self.transport.close().await?;
        // A server whose output was refused is likely blocked writing the rest of it, deaf
        // to a closed stdin: go straight to SIGTERM rather than wait for it.
        let refused = self.fault.get().is_some();
        if refused
            || tokio::time::timeout(EXIT_GRACE, child.wait())
                .await
                .is_err()
        {
            let _ = child.signal(libc::SIGTERM);
            if tokio::time::timeout(EXIT_GRACE, child.wait())
                .await
                .is_err()
            {
                Box::into_pin(child.kill()).await?;
            }
        }
        self.child = None;
        Ok(())
    }
}

impl Drop for BoundedChild {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.start_kill();
            // Reap it, so it is no zombie, when a runtime is there to do so.
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(async move {
                    let _ = child.wait().await;
                });
            }
        }
    }
}

impl Transport<RoleClient> for BoundedChild {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.transport.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.transport.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.shut_down()
    }
}

/// How long stderr must stay quiet before an error quotes it ([`StderrTail::settled`]).
const SETTLE_QUIET: std::time::Duration = std::time::Duration::from_millis(50);
/// The longest an error waits for stderr to settle.
const SETTLE_MAX: std::time::Duration = std::time::Duration::from_millis(500);

/// The last lines a child wrote to stderr, filled by a background task.
#[derive(Clone, Default)]
pub(super) struct StderrTail {
    lines: Arc<Mutex<std::collections::VecDeque<String>>>,
    /// Lines read so far, to tell when the reader has caught up.
    read: Arc<std::sync::atomic::AtomicU64>,
    done: Arc<tokio::sync::Notify>,
    finished: Arc<std::sync::atomic::AtomicBool>,
}

/// One stderr line being read: its first [`STDERR_LINE_BYTES`], and whether more came.
#[derive(Default)]
struct Line {
    kept: Vec<u8>,
    cut: bool,
}

impl Line {
    fn push(&mut self, bytes: &[u8]) {
        let room = STDERR_LINE_BYTES.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&bytes[..room.min(bytes.len())]);
        self.cut |= bytes.len() > room;
    }

    fn take(&mut self) -> String {
        let mut line = String::from_utf8_lossy(&self.kept).trim_end().to_owned();
        if self.cut {
            line.push('…');
        }
        *self = Line::default();
        line
    }
}

impl StderrTail {
    /// Follows `stderr` in fixed chunks, so neither a flood of lines nor one endless line
    /// grows memory past the tail's bound.
    pub(super) fn follow(
        stderr: impl AsyncRead + Unpin + Send + 'static,
        server: String,
    ) -> StderrTail {
        use tokio::io::AsyncReadExt as _;
        let tail = StderrTail::default();
        let t = tail.clone();
        tokio::spawn(async move {
            let mut stderr = stderr;
            let mut chunk = vec![0u8; 8192];
            let mut line = Line::default();
            loop {
                let n = match stderr.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let mut parts = chunk[..n].split(|&b| b == b'\n').peekable();
                while let Some(part) = parts.next() {
                    line.push(part);
                    if parts.peek().is_some() {
                        t.keep(line.take(), &server);
                    }
                }
            }
            if !line.kept.is_empty() || line.cut {
                t.keep(line.take(), &server);
            }
            t.finished.store(true, std::sync::atomic::Ordering::SeqCst);
            t.done.notify_waiters();
        });
        tail
    }

    fn keep(&self, line: String, server: &str) {
        tracing::debug!(server = %server, "stderr: {line}");
        self.read.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if let Ok(mut lines) = self.lines.lock() {
            if lines.len() == STDERR_LINES {
                lines.pop_front();
            }
            lines.push_back(line);
        }
    }

    /// The kept lines; waits up to `grace` for the child to close stderr first, so a server
    /// that just died has its last words in the message.
    pub(super) async fn text(&self, grace: std::time::Duration) -> String {
        let notified = self.done.notified();
        if !self.finished.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = tokio::time::timeout(grace, notified).await;
        }
        self.snapshot()
    }

    /// The kept lines of a server still running, once the reader has caught up: no new line
    /// for [`SETTLE_QUIET`], at most [`SETTLE_MAX`]. A server writes its last words on stderr
    /// before its answer on stdout, and the answer may be read first.
    pub(super) async fn settled(&self) -> String {
        let started = std::time::Instant::now();
        loop {
            let before = self.read.load(std::sync::atomic::Ordering::SeqCst);
            tokio::time::sleep(SETTLE_QUIET).await;
            let finished = self.finished.load(std::sync::atomic::Ordering::SeqCst);
            let now = self.read.load(std::sync::atomic::Ordering::SeqCst);
            if finished || now == before || started.elapsed() >= SETTLE_MAX {
                return self.snapshot();
            }
        }
    }

    pub(super) fn snapshot(&self) -> String {
        self.lines
            .lock()
            .map(|l| l.iter().cloned().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt as _;

    async fn read_all(chunks: Vec<Vec<u8>>) -> (Result<Vec<u8>, String>, Option<String>) {
        let mut builder = tokio_test_reader(chunks);
        let fault = StdoutFault::default();
        let mut reader = BoundedStdout::new(&mut builder, fault.clone());
        let mut out = Vec::new();
        let got = reader.read_to_end(&mut out).await;
        (got.map(|_| out).map_err(|e| e.to_string()), fault.get())
    }

    /// A reader that yields `chunks` one read at a time (so characters split across reads).
    fn tokio_test_reader(chunks: Vec<Vec<u8>>) -> impl AsyncRead + Unpin {
        let mut reader: Box<dyn AsyncRead + Unpin + Send> = Box::new(tokio::io::empty());
        for c in chunks.into_iter().rev() {
            reader = Box::new(std::io::Cursor::new(c).chain(reader));
        }
        reader
    }

    #[tokio::test]
    async fn an_error_quotes_a_line_still_on_its_way_from_a_running_server() {
        use tokio::io::AsyncWriteExt as _;
        let (mut server_side, ours) = tokio::io::duplex(1024);
        let tail = StderrTail::follow(ours, "s".into());
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            server_side.write_all(b"listing tools\n").await.unwrap();
            // The server keeps running (stderr stays open) after its last words.
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        });
        // Read at once, the line is not there yet: what an error quoted before.
        assert_eq!(tail.snapshot(), "");
        let started = std::time::Instant::now();
        assert_eq!(tail.settled().await, "listing tools");
        // The server still runs: the wait is bounded, not until stderr closes.
        assert!(started.elapsed() < SETTLE_MAX + std::time::Duration::from_millis(200));
    }

    #[tokio::test]
    async fn split_characters_pass_and_invalid_bytes_fail_naming_the_offset() {
        let e = "é".as_bytes();
        let (got, fault) = read_all(vec![vec![b'a', e[0]], vec![e[1], b'\n']]).await;
        assert_eq!(got.unwrap(), "aé\n".as_bytes());
        assert_eq!(fault, None);
        let (got, fault) = read_all(vec![b"{\"a\":1}\n".to_vec(), vec![b'x', 0xFF]]).await;
        let fault = fault.unwrap();
        assert_eq!(
            fault,
            "the server's output is not valid UTF-8 (at byte 9 of it), so not JSON-RPC"
        );
        assert_eq!(got.unwrap_err(), fault);
        let (_, fault) = read_all(vec![vec![0xE2], vec![b'a']]).await;
        assert!(fault.unwrap().contains("not valid UTF-8"));
    }

    #[tokio::test]
    async fn a_line_past_the_message_bound_fails_but_many_short_lines_do_not() {
        let line = |n: usize| {
            let mut l = vec![b'x'; n];
            l.push(b'\n');
            l
        };
        let (got, fault) = read_all(vec![line(MAX_MESSAGE_BYTES); 3]).await;
        assert_eq!(got.unwrap().len(), 3 * (MAX_MESSAGE_BYTES + 1));
        assert_eq!(fault, None);
        let (_, fault) = read_all(vec![line(MAX_MESSAGE_BYTES / 2), line(MAX_MESSAGE_BYTES)]).await;
        assert_eq!(fault, None);
        let (_, fault) = read_all(vec![vec![b'x'; 10], vec![b'y'; MAX_MESSAGE_BYTES]]).await;
        assert_eq!(
            fault.unwrap(),
            "the server sent a message of more than 16,777,216 bytes (16 MiB), the bound on one message"
        );
    }

    #[tokio::test]
    async fn the_stderr_tail_keeps_the_end_of_one_endless_line_bounded() {
        let mut input = b"first\n".to_vec();
        input.extend(std::iter::repeat_n(b'z', 5_000_000));
        input.extend(b"\nlast words\n");
        let tail = StderrTail::follow(std::io::Cursor::new(input), "s".into());
        let text = tail.text(std::time::Duration::from_secs(5)).await;
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{}", &text[..100]);
        assert_eq!(lines[0], "first");
        assert_eq!(lines[1].len(), STDERR_LINE_BYTES + '…'.len_utf8());
        assert_eq!(lines[2], "last words");
    }
}
