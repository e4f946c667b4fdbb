//! How long and how much an upstream may take: one value per client, so every domain states
//! its bounds in one place and every request honours them.

use std::time::Duration;

/// Bounds of every request to one upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Establishing the connection (TCP and TLS).
    pub connect_timeout: Duration,
    /// The whole request, answer read included.
    pub total_timeout: Duration,
    /// Larger answers are refused (`UPSTREAM_UNAVAILABLE`), never buffered whole.
    pub max_body_bytes: usize,
    /// A 429 is retried once when `Retry-After` asks for at most this long; else RATE_LIMITED.
    pub max_retry_after: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            connect_timeout: Duration::from_secs(5),
            total_timeout: Duration::from_secs(10),
            max_body_bytes: 8 * 1024 * 1024,
            max_retry_after: Duration::from_secs(5),
        }
    }
}
