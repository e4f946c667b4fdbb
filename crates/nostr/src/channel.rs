//! [`NostrChannel`]: `ApprovalChannel` over Nostr relays. Cards are signed before the ledger row
//! exists and published to the connected relays (success = at least one relay said OK); the
//! live subscription (see [`crate::listener`]) moves rows as reactions arrive, so
//! `approval_status` is timely; `refresh` fetches one card's reactions on read when the
//! subscription cannot vouch for it, and otherwise looks them up in the background now and then
//! (a reaction with only its `e` tag is outside the subscription's filters). Correctness does
//! not depend on the subscription: right before a consume, `confirm` reads the card's reactions
//! from the relays (each up to its EOSE, bounded in time) and records what the ledger lacked; no
//! complete answer, no consume.
//!
//! Starting never waits for a relay: an unreachable relay at start leaves the server serving,
//! `approval_request` answering unavailable, and the pool reconnecting in the background with a
//! growing delay.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use care_core::approval_channel::{ApprovalCard, ApprovalChannel, ChannelError, SignedCard};
use care_core::approvals::ApprovalPolicy;
use care_core::env::ExposeSecret;
use care_core::ledger::{ApprovalRow, Ledger};
use nostr_sdk::prelude::{MemoryDatabase, MemoryDatabaseOptions};
use nostr_sdk::{
    Alphabet, Client, ClientOptions, Event, EventId, Filter, JsonUtil, Keys, Kind, PublicKey,
    RelayOptions, RelayPoolOptions, RelayUrl, SingleLetterTag, SubscribeOptions, SubscriptionId,
    Timestamp,
};

use crate::apply::{Judge, apply_reaction};
use crate::card::sign_card_event;
use crate::error::NostrError;
use crate::gatekeeper::{KnownApprovers, RefusalLog};
use crate::health::Health;
use crate::listener;
use crate::settings::{ChannelOptions, ChannelSettings};

/// Event ids the relay pool remembers, to hand each relayed event to the listener once (the
/// default, 35,000, preallocates its table: 64 KiB resident). An id forgotten and relayed again
/// is applied again, as every stored reaction is after a restart (the catch-up).
const SEEN_EVENT_IDS: usize = 4_096;

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
    /// Approver keys whose reactions are worth a ledger lookup.
    pub known: KnownApprovers,
    pub refusals: RefusalLog,
}

impl Shared {
    pub fn judge(&self) -> Judge<'_> {
        Judge {
            policy: &self.policy,
            known: &self.known,
            refusals: &self.refusals,
        }
    }
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
        let keys = Keys::parse(settings.secret_key.expose_secret().trim())
            .map_err(|_| NostrError::SecretKey)?;
        let relays = Self::check_relays(&settings.relays)?;
        // The signer answers NIP-42 AUTH challenges of relays that require it. Nothing here
        // reads the pool's notifications (the listener reads each relay's own), so that channel
        // is kept tiny: its default 4,096 preallocated slots were a quarter of the process's
        // start-up CPU (zeroing pages) and about a MiB of resident memory.
        let client = Client::builder()
            .signer(keys.clone())
            .database(MemoryDatabase::with_opts(MemoryDatabaseOptions {
                events: false,
                max_events: Some(SEEN_EVENT_IDS),
            }))
            .opts(ClientOptions::new().pool(RelayPoolOptions::new().notification_channel_size(16)))
            .build();
        Ok(NostrChannel {
            shared: Arc::new(Shared {
                known: KnownApprovers::new(policy.for_new_rows().approvers()),
                refusals: RefusalLog::default(),
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

    /// The relay URLs parsed as the pool takes them: at least one, each well-formed.
    pub fn check_relays(urls: &[String]) -> Result<Vec<RelayUrl>, NostrError> {
        let relays = urls
            .iter()
            .enumerate()
            .map(|(i, url)| RelayUrl::parse(url).map_err(|_| NostrError::RelayUrl(i + 1)))
            .collect::<Result<Vec<_>, _>>()?;
        if relays.is_empty() {
            return Err(NostrError::Missing("CARE_NOSTR_RELAYS".into()));
        }
        Ok(relays)
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

    /// Whether this row's reactions must be fetched rather than trusted to the subscription.
    fn needs_fetch(&self, row: &ApprovalRow, card: &EventId) -> bool {
        let s = &self.shared;
        // Approvers this process did not follow: the subscription may have dropped theirs.
        let learned = row
            .policy
            .as_ref()
            .is_some_and(|policy| s.known.learn(policy));
        if learned || s.health.is_dirty(card) {
            return true;
        }
        if s.health.was_fetched(card) {
            return false;
        }
        // A card older than the subscription may have reactions the subscription never saw.
        row.created_at.timestamp() < s.started_at.as_secs() as i64
    }

    /// Reads `card`'s reactions from every connected relay (each up to its EOSE, within the
    /// fetch timeout) and applies them, oldest first. `Err` unless at least one relay answered
    /// completely; reactions from relays that did not are applied all the same (each is signed).
    async fn fetch_and_apply(&self, card: EventId, fetch: Fetch) -> Result<(), ChannelError> {
        let s = &self.shared;
        let connected = self.connected_within_wait().await;
        if connected.is_empty() {
            return Err(unavailable("no relay connected"));
        }
        let relays = s.client.relays().await;
        let filter = Filter::new().kind(Kind::Reaction).event(card);
        let fetches = connected
            .iter()
            .filter_map(|url| relays.get(url))
            .map(|relay| {
                let filter = filter.clone();
                async move {
                    (
                        relay.url().clone(),
                        crate::fetch::complete(relay, filter, s.options.fetch_timeout).await,
                    )
                }
            });
        let answers = futures::future::join_all(fetches).await;
        let mut events: Vec<Event> = Vec::new();
        let mut complete = 0usize;
        let mut failures = Vec::new();
        for (url, answer) in answers {
            match answer {
                Ok(found) => {
                    complete += 1;
                    events.extend(found);
                }
                Err(e) => failures.push(format!("{url}: {e}")),
            }
        }
        events.sort_by_key(|e| (e.created_at, e.id));
        events.dedup_by_key(|e| e.id);
        for event in &events {
            if let Err(e) = apply_reaction(s.ledger.as_ref(), &s.judge(), event).await {
                s.health.mark_dirty(card);
                return Err(unavailable(format!("ledger: {e}")));
            }
        }
        if complete == 0 {
            if fetch == Fetch::Vouching {
                s.health.mark_dirty(card);
            }
            return Err(unavailable(format!(
                "no relay answered completely ({})",
                failures.join("; ")
            )));
        }
        for failure in &failures {
            tracing::warn!(failure = %failure, "a relay did not answer a reaction fetch");
        }
        s.health.mark_fetched(card);
        Ok(())
    }
}

/// Why a card's reactions are fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fetch {
    /// In place of the subscription (not live, a card it cannot vouch for) or before a consume:
    /// a relay that does not answer leaves the card to be fetched again on its next read.
    Vouching,
    /// Beside a live subscription, for reactions outside its filters: a miss changes nothing
    /// the subscription vouches for, and the next lookup is due after the interval anyway.
    Lookup,
}

fn card_of(row: &ApprovalRow) -> Result<EventId, ChannelError> {
    row.card_event_id
        .as_deref()
        .and_then(|c| EventId::from_hex(c).ok())
        .ok_or_else(|| unavailable("the approval has no card on the channel"))
}

#[async_trait]
impl ApprovalChannel for NostrChannel {
    fn sign_card(&self, card: &ApprovalCard) -> Result<SignedCard, ChannelError> {
        let event = sign_card_event(card, &self.shared.keys, &self.shared.group)
            .map_err(|e| ChannelError::Signing(e.to_string()))?;
        Ok(SignedCard {
            event_id: event.id.to_hex(),
            text: event.content.clone(),
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

    async fn refresh(&self, row: &ApprovalRow) -> Result<(), ChannelError> {
        let card = card_of(row)?;
        if !self.shared.is_live().await || self.needs_fetch(row, &card) {
            return self.fetch_and_apply(card, Fetch::Vouching).await;
        }
        // Live, yet the subscription sees only reactions in the group or naming the server; one
        // with only its `e` tag is found by a lookup, in the background so the read never waits
        // on a relay, at most once per interval per card.
        if self
            .shared
            .health
            .lookup_due(card, self.shared.options.lookup_interval)
        {
            let channel = NostrChannel {
                shared: Arc::clone(&self.shared),
            };
            tokio::spawn(async move {
                if let Err(e) = channel.fetch_and_apply(card, Fetch::Lookup).await {
                    tracing::debug!(card = %card, error = %e, "background reaction lookup failed");
                }
            });
        }
        Ok(())
    }

    async fn confirm(&self, row: &ApprovalRow) -> Result<(), ChannelError> {
        let card = card_of(row)?;
        if let Some(policy) = &row.policy {
            self.shared.known.learn(policy);
        }
        // Always fetched, whatever the live subscription saw: a rejection made while no
        // process was listening (or this one could not reach the relay) is on the relay.
        self.fetch_and_apply(card, Fetch::Vouching).await
    }
}
