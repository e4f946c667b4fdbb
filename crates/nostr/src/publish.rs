//! One-shot relay access for the command line: publish one event (success = at least one relay
//! said OK) and fetch one event by id. No subscription, no background task left behind.

use std::time::Duration;

use nostr_sdk::{Client, Event, EventId, Filter, RelayUrl};

use crate::error::NostrError;

async fn connected_client(relays: &[String], timeout: Duration) -> Result<Client, NostrError> {
    let client = Client::default();
    for (i, url) in relays.iter().enumerate() {
        let url = RelayUrl::parse(url).map_err(|_| NostrError::RelayUrl(i + 1))?;
        client
            .add_relay(url)
            .await
            .map_err(|e| NostrError::Client(e.to_string()))?;
    }
    let output = client.try_connect(timeout).await;
    if output.success.is_empty() {
        client.shutdown().await;
        return Err(NostrError::Unavailable("no relay reachable".into()));
    }
    Ok(client)
}

/// Publishes `event`; returns the relays that accepted it.
pub async fn publish(
    relays: &[String],
    event: &Event,
    timeout: Duration,
) -> Result<Vec<RelayUrl>, NostrError> {
    let client = connected_client(relays, timeout).await?;
    let result = client.send_event(event).await;
    client.shutdown().await;
    let output = result.map_err(|e| NostrError::Unavailable(e.to_string()))?;
    if output.success.is_empty() {
        return Err(NostrError::Unavailable(refusal_reasons(&output.failed)));
    }
    Ok(output.success.into_iter().collect())
}

/// Why the relays refused an event, one `url: reason` per relay, for logs and errors.
pub(crate) fn refusal_reasons<'a>(
    failed: impl IntoIterator<Item = (&'a RelayUrl, &'a String)>,
) -> String {
    failed
        .into_iter()
        .map(|(url, why)| format!("{url}: {why}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Fetches the event `id` from the relays, if any of them has it.
pub async fn fetch(
    relays: &[String],
    id: EventId,
    timeout: Duration,
) -> Result<Option<Event>, NostrError> {
    let client = connected_client(relays, timeout).await?;
    let result = client.fetch_events(Filter::new().id(id), timeout).await;
    client.shutdown().await;
    let events = result.map_err(|e| NostrError::Unavailable(e.to_string()))?;
    Ok(events
        .into_iter()
        .find(|e| e.id == id && e.verify().is_ok()))
}
