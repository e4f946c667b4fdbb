//! Whether the live subscription can be trusted: per relay, "subscribed and caught up" (its
//! stored reactions arrived, EOSE seen, since the last (re)connect). Cards whose reactions may
//! have been missed (a ledger failure while applying one) are remembered as dirty.
//!
//! An untrusted subscription never makes an answer wrong: `approval_status` then fetches the
//! card's reactions, and if that fails too it answers the ledger's state (maybe stale).

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use nostr_sdk::{EventId, RelayUrl};

#[derive(Debug, Default)]
pub struct Health {
    /// Fixed at start: one flag per configured relay.
    synced: HashMap<RelayUrl, AtomicBool>,
    /// Cards to fetch on the next read even while the subscription is healthy.
    dirty: Mutex<HashSet<EventId>>,
    /// Cards created before this process subscribed whose reactions were fetched once.
    caught_up: Mutex<HashSet<EventId>>,
}

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
}
