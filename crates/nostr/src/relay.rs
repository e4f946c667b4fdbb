//! An in-process Nostr relay (nostr-relay-builder) on loopback, for the test suite and the
//! `care-mcp sandbox` command. It lives as long as the returned handle (or a clone of it).

use nostr_relay_builder::{LocalRelay, RelayBuilder};

use crate::error::NostrError;

/// A running in-process relay.
#[derive(Debug, Clone)]
pub struct InProcessRelay {
    relay: LocalRelay,
    url: String,
}

impl InProcessRelay {
    /// Starts a relay on 127.0.0.1: on `port`, or on a free port when `None`.
    pub async fn start(port: Option<u16>) -> Result<Self, NostrError> {
        match port {
            Some(port) => Self::start_with(RelayBuilder::default().port(port)).await,
            None => Self::start_on_a_free_port(RelayBuilder::default()).await,
        }
    }

    /// Starts a relay from a prepared builder (a shared database, a fixed port).
    pub async fn start_with(builder: RelayBuilder) -> Result<Self, NostrError> {
        Self::launch(builder).await.map_err(client_error)
    }

    /// The library picks a free port by binding a random one, letting it go and binding it
    /// again, so another socket of the machine can take it in between (seen in CI as
    /// "Address already in use" with tests running side by side). A port of its own choosing
    /// is tried anew; a port the caller named is never replaced.
    async fn start_on_a_free_port(builder: RelayBuilder) -> Result<Self, NostrError> {
        const ATTEMPTS: usize = 8;
        let mut last = None;
        for _ in 0..ATTEMPTS {
            match Self::launch(builder.clone()).await {
                Err(nostr_relay_builder::Error::IO(e))
                    if e.kind() == std::io::ErrorKind::AddrInUse =>
                {
                    last = Some(nostr_relay_builder::Error::IO(e));
                }
                other => return other.map_err(client_error),
            }
        }
        Err(last.map_or_else(|| NostrError::Client("no port".into()), client_error))
    }

    async fn launch(builder: RelayBuilder) -> Result<Self, nostr_relay_builder::Error> {
        let relay = LocalRelay::new(builder);
        relay.run().await?;
        let url = relay.url().await.to_string();
        Ok(InProcessRelay { relay, url })
    }

    /// `ws://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The underlying relay (to notify subscribers of a planted event in tests).
    pub fn local(&self) -> &LocalRelay {
        &self.relay
    }

    /// Stops listening and closes every connection.
    pub fn shutdown(&self) {
        self.relay.shutdown();
    }
}

fn client_error(e: nostr_relay_builder::Error) -> NostrError {
    NostrError::Client(e.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[tokio::test]
    async fn a_named_port_that_is_taken_is_refused_not_replaced() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        assert!(InProcessRelay::start(Some(port)).await.is_err());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn relays_on_free_ports_start_side_by_side() {
        let starts: Vec<_> = (0..16)
            .map(|_| tokio::spawn(InProcessRelay::start(None)))
            .collect();
        let mut urls = Vec::new();
        for start in starts {
            urls.push(start.await.unwrap().unwrap().url().to_owned());
        }
        urls.sort();
        urls.dedup();
        assert_eq!(urls.len(), 16, "{urls:?}");
    }
}
