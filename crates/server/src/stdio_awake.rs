//! Keeping the stdio session's thread awake for a moment after its traffic. A thread that
//! blocks in `epoll_wait` between a request and the next one (or between a ledger query and
//! its answer) lets the VM halt its CPU, and waking a halted CPU costs tens of microseconds on
//! every hand-off (bench/README.md measures it). For [`WINDOW`] after the last byte read or
//! written, a task here polls the reactor without blocking and yields the CPU to anything else
//! runnable on it; after that the session sleeps in the kernel as before. A client in a tight
//! loop thus never waits on a halted CPU, and an idle session costs nothing.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

/// How long after the last stdio byte the thread stays awake.
const WINDOW: Duration = Duration::from_micros(300);

/// `Activity::last` before anything moved.
const NEVER: u64 = u64::MAX;

/// When stdio last moved, and a wake-up for the task that waits for it to move again.
#[derive(Debug)]
pub struct Activity {
    started: Instant,
    /// Nanoseconds after `started` of the last byte read or written, or [`NEVER`].
    last: AtomicU64,
    moved: Notify,
}

impl Activity {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            started: Instant::now(),
            last: AtomicU64::new(NEVER),
            moved: Notify::new(),
        })
    }

    fn now(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(NEVER - 1)
    }

    fn mark(&self) {
        self.last.store(self.now(), Ordering::Relaxed);
        self.moved.notify_one();
    }

    fn recent(&self) -> bool {
        let last = self.last.load(Ordering::Relaxed);
        let window = u64::try_from(WINDOW.as_nanos()).unwrap_or(u64::MAX);
        last != NEVER && self.now().saturating_sub(last) < window
    }
}

/// Polls the reactor while stdio moved within [`WINDOW`]; sleeps until it moves otherwise.
/// Runs until aborted (the session's end).
pub async fn keep_awake(activity: Arc<Activity>) {
    loop {
        if activity.recent() {
            // Others runnable on this CPU (the client, a Postgres backend) go first.
            std::thread::yield_now();
            tokio::task::yield_now().await;
        } else {
            activity.moved.notified().await;
        }
    }
}

/// A stream that marks `activity` whenever bytes pass.
pub struct Marked<T> {
    inner: T,
    activity: Arc<Activity>,
}

impl<T> Marked<T> {
    pub fn new(inner: T, activity: &Arc<Activity>) -> Self {
        Self {
            inner,
            activity: Arc::clone(activity),
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Marked<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.mark();
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Marked<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, data);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.mark();
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn bytes_pass_unchanged_and_mark_the_activity_which_then_lapses() {
        let activity = Activity::new();
        assert!(!activity.recent(), "nothing moved yet");

        let (ours, theirs) = tokio::io::duplex(64);
        let mut marked = Marked::new(theirs, &activity);
        let mut ours = ours;
        ours.write_all(b"ping\n").await.unwrap();
        let mut read = [0u8; 5];
        marked.read_exact(&mut read).await.unwrap();
        assert_eq!(&read, b"ping\n");
        assert!(activity.recent(), "a read marks");

        tokio::time::sleep(WINDOW * 2).await;
        assert!(!activity.recent(), "the window lapses");
        marked.write_all(b"pong\n").await.unwrap();
        assert!(activity.recent(), "a write marks");
        let mut back = [0u8; 5];
        ours.read_exact(&mut back).await.unwrap();
        assert_eq!(&back, b"pong\n");
    }
}
