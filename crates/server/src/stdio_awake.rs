//! The stdio session's traffic marks the process's activity ([`care_core::awake`]): for a
//! moment after each byte read or written the thread stays awake, so a client in a tight loop
//! never waits on a halted CPU, and an idle session costs nothing.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use care_core::awake::{AFTER_CLIENT_BYTE, Activity};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

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
            self.activity.due_within(AFTER_CLIENT_BYTE);
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
            self.activity.due_within(AFTER_CLIENT_BYTE);
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
        assert!(!activity.due(), "nothing moved yet");

        let (ours, theirs) = tokio::io::duplex(64);
        let mut marked = Marked::new(theirs, &activity);
        let mut ours = ours;
        ours.write_all(b"ping\n").await.unwrap();
        let mut read = [0u8; 5];
        marked.read_exact(&mut read).await.unwrap();
        assert_eq!(&read, b"ping\n");
        assert!(activity.due(), "a read marks");

        tokio::time::sleep(AFTER_CLIENT_BYTE * 2).await;
        assert!(!activity.due(), "the window lapses");
        marked.write_all(b"pong\n").await.unwrap();
        assert!(activity.due(), "a write marks");
        let mut back = [0u8; 5];
        ours.read_exact(&mut back).await.unwrap();
        assert_eq!(&back, b"pong\n");
    }
}
