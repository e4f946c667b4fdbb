//! The live subscription, one task per relay: applies reactions as they arrive and keeps that
//! relay's health flag (caught up after EOSE, not after any status change or a missed message).
//! Per-relay tasks keep each relay's order: its stored reactions are applied before its EOSE
//! marks it caught up.

use std::sync::Arc;

use nostr_sdk::pool::RelayNotification;
use nostr_sdk::{Kind, Relay, RelayMessage, RelayStatus, SubscribeOptions};
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use crate::apply::apply_reaction;
use crate::channel::Shared;
use crate::reaction;

pub(crate) async fn run(
    shared: Arc<Shared>,
    relay: Relay,
    mut notifications: broadcast::Receiver<RelayNotification>,
) {
    let url = relay.url().clone();
    loop {
        match notifications.recv().await {
            Ok(RelayNotification::Event {
                subscription_id,
                event,
            }) if subscription_id == shared.subscription && event.kind == Kind::Reaction => {
                if let Err(e) =
                    apply_reaction(shared.ledger.as_ref(), &shared.judge(), &event).await
                {
                    // Not lost: the next status read of that card fetches it again.
                    if let Ok(card) = reaction::target(&event) {
                        shared.health.mark_dirty(card);
                    }
                    tracing::warn!(relay = %url, error = %e, "reaction not applied: ledger unavailable");
                }
            }
            Ok(RelayNotification::Message {
                message: RelayMessage::EndOfStoredEvents(id),
            }) if *id == shared.subscription => {
                shared.health.set_synced(&url, true);
                tracing::info!(relay = %url, "approval subscription caught up");
            }
            Ok(RelayNotification::Message {
                message:
                    RelayMessage::Closed {
                        subscription_id,
                        message,
                    },
            }) if *subscription_id == shared.subscription => {
                shared.health.set_synced(&url, false);
                tracing::warn!(relay = %url, reason = %message, "relay closed the approval subscription");
            }
            Ok(RelayNotification::RelayStatus { status }) => {
                shared.health.set_synced(&url, false);
                if status == RelayStatus::Connected {
                    // The pool skips its own re-subscription when a reconnect falls in the
                    // same second as the last REQ; a second REQ with the same id only replaces
                    // the first (NIP-01), so always ask on a new connection.
                    resubscribe(&shared, &relay).await;
                }
            }
            Ok(RelayNotification::Shutdown) | Err(RecvError::Closed) => break,
            Ok(_) => {}
            Err(RecvError::Lagged(missed)) => {
                // Reactions may be among the missed messages: ask again, wait for a new EOSE.
                shared.health.set_synced(&url, false);
                tracing::warn!(relay = %url, missed, "approval listener lagged; resubscribing");
                resubscribe(&shared, &relay).await;
            }
        }
    }
}

async fn resubscribe(shared: &Shared, relay: &Relay) {
    if let Err(e) = relay
        .subscribe_with_id(
            shared.subscription.clone(),
            shared.filters(),
            SubscribeOptions::default(),
        )
        .await
    {
        tracing::warn!(relay = %relay.url(), error = %e, "approval subscription not sent");
    }
}
