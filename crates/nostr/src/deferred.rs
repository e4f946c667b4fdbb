//! [`DeferredChannel`]: the approval channel of a serving role, built and connected after the
//! process has started answering. Building the relay pool (preallocated caches), deriving the
//! server's key for signing and opening the relay connection were over a third of a role's
//! start-up (bench/: cold start to an answered `tools/list`), and nothing in a session's first
//! answers needs them. The channel comes up at its first use or at a kick shortly after the
//! start, whichever is first; until then nothing is connected and nothing can be missed: the
//! live subscription catches up from before the process started (`ChannelOptions::catch_up`),
//! and reads and consumes fetch what it cannot vouch for.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use care_core::approval_channel::{ApprovalCard, ApprovalChannel, ChannelError, SignedCard};
use care_core::approvals::ApprovalPolicy;
use care_core::ledger::{ApprovalRow, Ledger};
use tokio::sync::OnceCell;

use crate::channel::NostrChannel;
use crate::error::NostrError;
use crate::settings::ChannelSettings;

/// What the channel is built from, kept until the first use.
struct Parts {
    settings: ChannelSettings,
    ledger: Arc<dyn Ledger>,
    policy: ApprovalPolicy,
}

/// A [`NostrChannel`] built at its first use (signing a card needs only the build) and started
/// at the first use that needs a relay.
pub struct DeferredChannel {
    parts: std::sync::Mutex<Option<Parts>>,
    built: OnceLock<Result<NostrChannel, String>>,
    started: OnceCell<()>,
}

impl std::fmt::Debug for DeferredChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeferredChannel")
            .field("built", &self.built.get().map(Result::is_ok))
            .field("started", &self.started.initialized())
            .finish_non_exhaustive()
    }
}

impl DeferredChannel {
    /// Checks what can be checked without building (the relay URLs) and keeps the parts.
    pub fn new(
        settings: ChannelSettings,
        ledger: Arc<dyn Ledger>,
        policy: ApprovalPolicy,
    ) -> Result<Self, NostrError> {
        NostrChannel::check_relays(&settings.relays)?;
        Ok(DeferredChannel {
            parts: std::sync::Mutex::new(Some(Parts {
                settings,
                ledger,
                policy,
            })),
            built: OnceLock::new(),
            started: OnceCell::new(),
        })
    }

    /// Starts the channel `after` from now unless a call has started it before.
    pub fn start_after(self: &Arc<Self>, after: Duration) {
        let channel = Arc::clone(self);
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            if let Err(e) = channel.start().await {
                tracing::warn!(error = %e, "approval channel not started; the next use retries");
            }
        });
    }

    /// The channel, built on first use. A build that failed stays failed: its settings were
    /// checked at start, so only a bug gets here, and every use then answers unavailable.
    fn build(&self) -> Result<&NostrChannel, ChannelError> {
        self.built
            .get_or_init(|| {
                let parts = self
                    .parts
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take();
                let Some(p) = parts else {
                    return Err("approval channel settings already taken".to_owned());
                };
                NostrChannel::new(p.settings, p.ledger, p.policy).map_err(|e| {
                    tracing::error!(error = %e, "approval channel could not be built");
                    e.to_string()
                })
            })
            .as_ref()
            .map_err(|e| ChannelError::Unavailable(e.clone()))
    }

    /// The channel, built and started (relays added, listeners running, connecting).
    async fn start(&self) -> Result<&NostrChannel, ChannelError> {
        let channel = self.build()?;
        self.started
            .get_or_try_init(|| async {
                channel
                    .start()
                    .await
                    .map_err(|e| ChannelError::Unavailable(e.to_string()))
            })
            .await?;
        Ok(channel)
    }

    /// Whether the channel has been started (by a use or the kick).
    pub fn is_started(&self) -> bool {
        self.started.initialized()
    }
}

#[async_trait]
impl ApprovalChannel for DeferredChannel {
    fn sign_card(&self, card: &ApprovalCard) -> Result<SignedCard, ChannelError> {
        self.build()?.sign_card(card)
    }

    async fn publish_card(&self, card: &SignedCard) -> Result<(), ChannelError> {
        self.start().await?.publish_card(card).await
    }

    async fn refresh(&self, row: &ApprovalRow) -> Result<(), ChannelError> {
        self.start().await?.refresh(row).await
    }

    async fn confirm(&self, row: &ApprovalRow) -> Result<(), ChannelError> {
        self.start().await?.confirm(row).await
    }
}
