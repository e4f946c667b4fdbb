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
        let mut builder = RelayBuilder::default();
        if let Some(port) = port {
            builder = builder.port(port);
        }
        Self::start_with(builder).await
    }

    /// Starts a relay from a prepared builder (a shared database, a fixed port).
    pub async fn start_with(builder: RelayBuilder) -> Result<Self, NostrError> {
        let relay = LocalRelay::new(builder);
        relay
            .run()
            .await
            .map_err(|e| NostrError::Client(e.to_string()))?;
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
