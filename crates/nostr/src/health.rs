//! Whether the live subscription can be trusted: per relay, "subscribed and caught up" (its
//! stored reactions arrived, EOSE seen, since the last (re)connect). Cards whose reactions may
//! have been missed (a ledger failure while applying one) are remembered as dirty, and when
//! each open card's reactions were last looked up beside the subscription.
//!
//! An untrusted subscription never makes an answer wrong: `approval_status` then fetches the
//! card's reactions, and if that fails too it answers the ledger's state (maybe stale).

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nostr_sdk::{EventId, RelayUrl};

#[derive(Debug, Default)]
pub struct Health {
    /// Fixed at start: one flag per configured relay.
    synced: HashMap<RelayUrl, AtomicBool>,
    /// Cards to fetch on the next read even while the subscription is healthy.
    dirty: Mutex<HashSet<EventId>>,
    /// Cards created before this process subscribed whose reactions were fetched once.
    caught_up: Mutex<HashSet<EventId>>,
    /// When each open card's reactions were last looked up in the background.
    looked_up: Mutex<HashMap<EventId, Instant>>,
}

/// Past this many cards, lookups older than their interval are forgotten (each is due anyway).
const LOOKUPS_KEPT: usize = 1_024;

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic elsewhere while holding the lock leaves a set of ids: still usable.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Health {
    pub fn new(relays: impl IntoIterator<Item = RelayUrl>) -> Self {
        Health {
            synced: relays
                .into_iter()
                .map(|r| (r, AtomicBool::new(false)))
                .collect(),
            ..Health::default()
        }
    }

    pub fn set_synced(&self, relay: &RelayUrl, synced: bool) {
        if let Some(flag) = self.synced.get(relay) {
            flag.store(synced, Ordering::SeqCst);
        }
    }

    pub fn is_synced(&self, relay: &RelayUrl) -> bool {
        self.synced
            .get(relay)
            .is_some_and(|f| f.load(Ordering::SeqCst))
    }

    pub fn mark_dirty(&self, card: EventId) {
        locked(&self.dirty).insert(card);
    }

    pub fn is_dirty(&self, card: &EventId) -> bool {
        locked(&self.dirty).contains(card)
    }

    /// After a complete fetch of the card's reactions.
    pub fn mark_fetched(&self, card: EventId) {
        locked(&self.dirty).remove(&card);
        locked(&self.caught_up).insert(card);
    }

    pub fn was_fetched(&self, card: &EventId) -> bool {
        locked(&self.caught_up).contains(card)
    }

    /// Whether a background lookup of `card` is due (none yet, or the last one `interval` ago);
    /// if so, it counts as started now, so concurrent reads start one between them.
    pub fn lookup_due(&self, card: EventId, interval: Duration) -> bool {
        let mut looked_up = locked(&self.looked_up);
        let now = Instant::now();
        if looked_up
            .get(&card)
            .is_some_and(|at| now.duration_since(*at) < interval)
        {
            return false;
        }
        if looked_up.len() >= LOOKUPS_KEPT {
            looked_up.retain(|_, at| now.duration_since(*at) < interval);
        }
        looked_up.insert(card, now);
        true
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn card(n: u8) -> EventId {
        EventId::from_byte_array([n; 32])
    }

    /// Long enough that no pause of the test machine lets it pass between two calls.
    const LONG: Duration = Duration::from_secs(3_600);

    #[test]
    fn a_lookup_is_due_once_per_interval_per_card() {
        let health = Health::default();
        assert!(health.lookup_due(card(1), LONG));
        assert!(!health.lookup_due(card(1), LONG), "started just now");
        assert!(health.lookup_due(card(2), LONG), "another card is its own");
        // An interval that has passed (any elapsed time is at least zero).
        assert!(health.lookup_due(card(1), Duration::ZERO));
    }

    #[test]
    fn lookups_past_their_interval_are_forgotten_once_many_cards_were_seen() {
        let health = Health::default();
        for n in 0..LOOKUPS_KEPT {
            assert!(health.lookup_due(EventId::from_byte_array(numbered(n)), LONG));
        }
        // Still within their interval: all kept beside the new one.
        assert!(health.lookup_due(card(7), LONG));
        assert_eq!(locked(&health.looked_up).len(), LOOKUPS_KEPT + 1);
        // Every one past it: forgotten, and only the new one is kept.
        assert!(health.lookup_due(card(8), Duration::ZERO));
        assert_eq!(locked(&health.looked_up).len(), 1);
    }

    fn numbered(n: usize) -> [u8; 32] {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&(n as u64).to_le_bytes());
        bytes
    }
}
