//! [`NostrChannel`]: `ApprovalChannel` over Nostr relays. Cards are signed before the ledger row
//! exists and published to the connected relays (success = at least one relay said OK); the
//! live subscription (see [`crate::listener`]) moves rows as reactions arrive; while it cannot
//! be trusted, `sync_if_degraded` fetches one card's reactions on read.
//!
//! Starting never waits for a relay: an unreachable relay at start leaves the server serving,
//! `approval_request` answering unavailable, and the pool reconnecting in the background with a
//! growing delay.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use care_core::approvals::ApprovalPolicy;
use care_core::channel::{ApprovalCard, ApprovalChannel, ChannelError, SignedCard};
use care_core::ledger::Ledger;
use chrono::Utc;
use nostr_sdk::{
    Alphabet, Client, Event, EventId, Filter, JsonUtil, Keys, Kind, PublicKey, RelayOptions,
    RelayUrl, SingleLetterTag, SubscribeOptions, SubscriptionId, Timestamp,
};

use crate::apply::apply_reaction;
use crate::card::sign_card_event;
use crate::error::NostrError;
use crate::health::Health;
use crate::listener;
use crate::settings::{ChannelOptions, ChannelSettings};

/// How often readiness is polled while waiting for a relay.
const POLL: Duration = Duration::from_millis(25);

/// What the channel and its listener tasks share.
pub(crate) struct Shared {
    pub keys: Keys,
    pub client: Client,
    pub group: String,
    pub relays: Vec<RelayUrl>,
    pub ledger: Arc<dyn Ledger>,
    pub policy: ApprovalPolicy,
    pub health: Health,
    pub options: ChannelOptions,
    pub subscription: SubscriptionId,
    /// When this process subscribed; earlier cards are fetched once on read.
    pub started_at: Timestamp,
}

impl Shared {
    /// The live subscription's filters: reactions in the group, and reactions naming the
    /// server (NIP-25 `p`), from a little before the start.
    pub fn filters(&self) -> Vec<Filter> {
        let since = Timestamp::from_secs(
            self.started_at
                .as_secs()
                .saturating_sub(self.options.catch_up.as_secs()),
        );
        vec![
            Filter::new()
                .kind(Kind::Reaction)
                .custom_tag(SingleLetterTag::lowercase(Alphabet::H), self.group.clone())
                .since(since),
            Filter::new()
                .kind(Kind::Reaction)
                .pubkey(self.keys.public_key())
                .since(since),
        ]
    }

    /// Relays with an open connection right now.
    pub async fn connected_relays(&self) -> Vec<RelayUrl> {
        let relays = self.client.relays().await;
        self.relays
            .iter()
            .filter(|url| relays.get(*url).is_some_and(|r| r.is_connected()))
            .cloned()
            .collect()
    }

    /// True when some relay is connected and our subscription there is caught up.
    pub async fn is_live(&self) -> bool {
        self.connected_relays()
            .await
            .iter()
            .any(|url| self.health.is_synced(url))
    }
}

/// The Nostr approval channel.
#[derive(Clone)]
pub struct NostrChannel {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for NostrChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NostrChannel")
            .field("server", &self.shared.keys.public_key().to_hex())
            .field("group", &self.shared.group)
            .field("relays", &self.shared.relays)
            .finish_non_exhaustive()
    }
}

fn unavailable(e: impl std::fmt::Display) -> ChannelError {
    ChannelError::Unavailable(e.to_string())
}

impl NostrChannel {
    /// Builds the channel without touching the network (see [`NostrChannel::start`]).
    pub fn new(
        settings: ChannelSettings,
        ledger: Arc<dyn Ledger>,
        policy: ApprovalPolicy,
    ) -> Result<Self, NostrError> {
        let keys = Keys::parse(settings.secret_key.trim()).map_err(|_| NostrError::SecretKey)?;
        let relays = settings
            .relays
            .iter()
            .enumerate()
            .map(|(i, url)| RelayUrl::parse(url).map_err(|_| NostrError::RelayUrl(i + 1)))
            .collect::<Result<Vec<_>, _>>()?;
        if relays.is_empty() {
            return Err(NostrError::Missing("CARE_NOSTR_RELAYS".into()));
        }
        // The signer answers NIP-42 AUTH challenges of relays that require it.
        let client = Client::builder().signer(keys.clone()).build();
        Ok(NostrChannel {
            shared: Arc::new(Shared {
                health: Health::new(relays.clone()),
                keys,
                client,
                group: settings.group,
                relays,
                ledger,
                policy,
                options: settings.options,
                subscription: SubscriptionId::new("care-mcp-approvals"),
                started_at: Timestamp::now(),
            }),
        })
    }

    /// Adds the relays, starts one listener per relay, connects in the background and
    /// subscribes. Returns at once: it never waits for a relay to answer.
    pub async fn start(&self) -> Result<(), NostrError> {
        let s = &self.shared;
        for url in &s.relays {
            s.client
                .pool()
                .add_relay(
                    url.clone(),
                    RelayOptions::new()
                        .retry_interval(s.options.retry_interval)
                        .adjust_retry_interval(true),
                )
                .await
                .map_err(|e| NostrError::Client(e.to_string()))?;
            let relay = s
                .client
                .relay(url.clone())
                .await
                .map_err(|e| NostrError::Client(e.to_string()))?;
            // Subscribed here, not in the task: nothing the relay says after this is missed.
            let notifications = relay.notifications();
            tokio::spawn(listener::run(
                Arc::clone(&self.shared),
                relay,
                notifications,
            ));
        }
        s.client.connect().await;
        // Queued until each relay connects; the pool re-sends it after every reconnect.
        let output = s
            .client
            .pool()
            .subscribe_with_id(
                s.subscription.clone(),
                s.filters(),
                SubscribeOptions::default(),
            )
            .await
            .map_err(|e| NostrError::Client(e.to_string()))?;
        for (url, error) in &output.failed {
            tracing::warn!(relay = %url, error = %error, "approval subscription not sent yet");
        }
        Ok(())
    }

    /// Closes every relay connection and stops the listeners.
    pub async fn shutdown(&self) {
        self.shared.client.shutdown().await;
    }

    /// The server's public key (the cards' author).
    pub fn public_key(&self) -> PublicKey {
        self.shared.keys.public_key()
    }

    pub fn group(&self) -> &str {
        &self.shared.group
    }

    /// Whether the live subscription is connected and caught up on at least one relay.
    pub async fn is_live(&self) -> bool {
        self.shared.is_live().await
    }

    /// Waits until [`NostrChannel::is_live`], at most `timeout`.
    pub async fn wait_live(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if self.is_live().await {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The relays connected now, waiting up to `connect_wait` for a first one.
    async fn connected_within_wait(&self) -> Vec<RelayUrl> {
        let deadline = tokio::time::Instant::now() + self.shared.options.connect_wait;
        loop {
            let connected = self.shared.connected_relays().await;
            if !connected.is_empty() || tokio::time::Instant::now() >= deadline {
                return connected;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Whether this card's reactions must be fetched rather than trusted to the subscription.
    async fn needs_fetch(&self, approval_id: &str, card: &EventId) -> bool {
        let s = &self.shared;
        if !s.is_live().await || s.health.is_dirty(card) {
            return true;
        }
        if s.health.was_fetched(card) {
            return false;
        }
        // A card older than the subscription may have reactions the subscription never saw.
        match s.ledger.approval(approval_id, Utc::now()).await {
            Ok(Some(row)) => row.created_at.timestamp() < s.started_at.as_secs() as i64,
            _ => true,
        }
    }

    /// Fetches the reactions to `card` and applies them, oldest first.
    async fn fetch_and_apply(&self, card: EventId) -> Result<(), ChannelError> {
        let s = &self.shared;
        let connected = s.connected_relays().await;
        if connected.is_empty() {
            return Err(unavailable("no relay connected"));
        }
        let events = s
            .client
            .fetch_events_from(
                connected,
                Filter::new().kind(Kind::Reaction).event(card),
                s.options.fetch_timeout,
            )
            .await
            .map_err(unavailable)?;
        let mut events: Vec<Event> = events.into_iter().collect();
        events.sort_by_key(|e| (e.created_at, e.id));
        for event in &events {
            if let Err(e) = apply_reaction(s.ledger.as_ref(), &s.policy, event, Utc::now()).await {
                s.health.mark_dirty(card);
                return Err(unavailable(format!("ledger: {e}")));
            }
        }
        s.health.mark_fetched(card);
        Ok(())
    }
}

#[async_trait]
impl ApprovalChannel for NostrChannel {
    fn sign_card(&self, card: &ApprovalCard) -> Result<SignedCard, ChannelError> {
        let event = sign_card_event(card, &self.shared.keys, &self.shared.group)
            .map_err(|e| ChannelError::Signing(e.to_string()))?;
        Ok(SignedCard {
            event_id: event.id.to_hex(),
            event_json: event.as_json(),
        })
    }

    async fn publish_card(&self, card: &SignedCard) -> Result<(), ChannelError> {
        let event =
            Event::from_json(&card.event_json).map_err(|e| ChannelError::Signing(e.to_string()))?;
        // Only to relays connected now: an event queued for a relay that is down would be
        // delivered after we answered "not shown" and discarded its row.
        let connected = self.connected_within_wait().await;
        if connected.is_empty() {
            return Err(unavailable("no relay connected"));
        }
        let output = self
            .shared
            .client
            .pool()
            .send_event_to(connected, &event)
            .await
            .map_err(unavailable)?;
        if output.success.is_empty() {
            return Err(unavailable(crate::publish::refusal_reasons(&output.failed)));
        }
        for (url, why) in &output.failed {
            tracing::warn!(relay = %url, error = %why, "approval card refused by a relay");
        }
        // Published after this process subscribed: the subscription sees all its reactions, so
        // a status read needs no ledger lookup to decide whether to fetch.
        self.shared.health.mark_fetched(event.id);
        Ok(())
    }

    async fn sync_if_degraded(
        &self,
        approval_id: &str,
        card_event_id: &str,
    ) -> Result<(), ChannelError> {
        let Ok(card) = EventId::from_hex(card_event_id) else {
            return Err(unavailable("stored card id is not an event id"));
        };
        if !self.needs_fetch(approval_id, &card).await {
            return Ok(());
        }
        self.fetch_and_apply(card).await
    }
}
