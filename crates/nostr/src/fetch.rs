//! Reading one card's reactions from one relay, complete: the answer counts only when the relay
//! said EOSE (it sent everything it stores) within the time bound. The relay pool's own fetch
//! ends the same way on a timeout as on EOSE, which would let a relay that stopped answering
//! pass for one that holds no rejection; this one tells them apart.

use std::time::Duration;

use nostr_sdk::pool::RelayNotification;
use nostr_sdk::{
    Event, Filter, Relay, RelayMessage, RelayStatus, SubscribeOptions, SubscriptionId,
};
use tokio::sync::broadcast::error::RecvError;

/// Why a relay's answer is not complete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    #[error("the relay is not connected")]
    NotConnected,
    #[error("the request could not be sent: {0}")]
    Send(String),
    #[error("no EOSE within the time bound")]
    TimedOut,
    #[error("the relay closed the request: {0}")]
    Closed(String),
    #[error("the connection dropped during the request")]
    Disconnected,
    #[error("notifications were missed")]
    Lagged,
}

/// Every event `relay` stores for `filter`, once it has said EOSE; an error otherwise.
pub async fn complete(
    relay: &Relay,
    filter: Filter,
    bound: Duration,
) -> Result<Vec<Event>, FetchError> {
    if !relay.is_connected() {
        return Err(FetchError::NotConnected);
    }
    // Listening before asking: nothing the relay answers can be missed.
    let mut notifications = relay.notifications();
    let id = SubscriptionId::generate();
    relay
        .subscribe_with_id(id.clone(), vec![filter], SubscribeOptions::default())
        .await
        .map_err(|e| FetchError::Send(e.to_string()))?;
    let outcome = tokio::time::timeout(bound, async {
        let mut events = Vec::new();
        loop {
            match notifications.recv().await {
                Ok(RelayNotification::Message {
                    message:
                        RelayMessage::Event {
                            subscription_id,
                            event,
                        },
                }) if *subscription_id == id => events.push(event.into_owned()),
                Ok(RelayNotification::Message {
                    message: RelayMessage::EndOfStoredEvents(sid),
                }) if *sid == id => return Ok(events),
                Ok(RelayNotification::Message {
                    message:
                        RelayMessage::Closed {
                            subscription_id,
                            message,
                        },
                }) if *subscription_id == id => {
                    return Err(FetchError::Closed(message.into_owned()));
                }
                Ok(RelayNotification::RelayStatus { status })
                    if status != RelayStatus::Connected =>
                {
                    return Err(FetchError::Disconnected);
                }
                Ok(RelayNotification::Shutdown) | Err(RecvError::Closed) => {
                    return Err(FetchError::Disconnected);
                }
                Err(RecvError::Lagged(_)) => return Err(FetchError::Lagged),
                Ok(_) => {}
            }
        }
    })
    .await
    .unwrap_or(Err(FetchError::TimedOut));
    if let Err(e) = relay.unsubscribe(&id).await {
        tracing::debug!(relay = %relay.url(), error = %e, "fetch subscription not closed");
    }
    outcome
}
