//! A replica's call meter: each client's calls are counted in memory against a lease of slots
//! reserved from the client's shared window in the ledger ([`ClientStore::reserve`]). A call
//! costs a ledger transaction only when its client's lease runs out or ends, and the ceiling
//! still holds across replicas: a slot counts in the shared window from its reservation until
//! the window has passed the end of its lease, whether it was used or not, until the replica
//! gives the unused part back with its next reservation.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::{ClientStore, RateVerdict, Reservation, Settle};
use crate::ledger::LedgerError;

/// How long a lease lasts: the longest a replica's unused slots stay out of other replicas'
/// reach before being given back (when it next reserves), and the longest a call's slot can
/// be counted before the call was made.
pub const LEASE_HOLD: Duration = Duration::from_secs(1);

/// A lease is at most this share of the ceiling (and at least one slot), so replicas splitting
/// one client's calls each find slots left when the others' leases are small.
const LEASE_SHARE: u32 = 16;

/// Every client's lease in this replica.
#[derive(Debug)]
pub struct CallMeter {
    hold: Duration,
    clients: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Metered>>>>,
}

#[derive(Debug, Default)]
struct Metered {
    lease: Option<Held>,
    /// The size last asked for: doubled when a lease runs out in time, halved when most of
    /// one went unused.
    last_wanted: u32,
}

#[derive(Debug)]
struct Held {
    id: String,
    granted: u32,
    used: u32,
    ends: Instant,
}

impl Default for CallMeter {
    fn default() -> Self {
        Self::new(LEASE_HOLD)
    }
}

impl CallMeter {
    /// A meter whose leases last `hold` (zero: every call reserves its own slot).
    pub fn new(hold: Duration) -> Self {
        CallMeter {
            hold,
            clients: Mutex::new(HashMap::new()),
        }
    }

    /// Counts one call of `name` (whose ceiling is `ceiling` per window) against its lease,
    /// reserving the next lease from `store` when this one is used up or over.
    pub async fn take(
        &self,
        store: &dyn ClientStore,
        name: &str,
        ceiling: u32,
    ) -> Result<RateVerdict, LedgerError> {
        let entry = {
            let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
            // Every call passes here: the name is copied only for a client's first call.
            match clients.get(name) {
                Some(entry) => Arc::clone(entry),
                None => Arc::clone(clients.entry(name.to_owned()).or_default()),
            }
        };
        // One reservation per client at a time; the calls behind it then share its lease.
        let mut metered = entry.lock().await;
        let now = Instant::now();
        if let Some(held) = metered.lease.as_mut()
            && held.used < held.granted
            && now < held.ends
        {
            held.used += 1;
            return Ok(RateVerdict::Allowed);
        }
        let wanted = next_size(metered.lease.as_ref(), metered.last_wanted, ceiling);
        // Taken before the reservation: if it fails, the old lease stays counted in full
        // (the safe side) rather than being given back twice.
        let settle = metered.lease.take().map(|held| Settle {
            lease: held.id,
            used: held.used,
        });
        let id = hex::encode(rand::random::<[u8; 8]>());
        // `now` precedes the ledger's reservation time, so the lease ends here no later than
        // the end the ledger counts its slots to.
        match store
            .reserve(name, &id, wanted, self.hold, settle.as_ref())
            .await?
        {
            Reservation::Granted { slots } => {
                metered.lease = Some(Held {
                    id,
                    granted: slots,
                    used: 1,
                    ends: now + self.hold,
                });
                metered.last_wanted = wanted;
                Ok(RateVerdict::Allowed)
            }
            Reservation::Limited { retry_after } => {
                metered.last_wanted = 1;
                Ok(RateVerdict::Limited { retry_after })
            }
            Reservation::Gone => {
                drop(metered);
                self.clients
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(name);
                Ok(RateVerdict::Gone)
            }
        }
    }
}

/// The next lease's size after `previous` (which asked for `last_wanted`).
fn next_size(previous: Option<&Held>, last_wanted: u32, ceiling: u32) -> u32 {
    let cap = (ceiling / LEASE_SHARE).max(1);
    let size = match previous {
        None => 1,
        Some(held) if held.used >= held.granted => last_wanted.saturating_mul(2),
        Some(held) if held.used.saturating_mul(2) < held.granted => last_wanted / 2,
        Some(_) => last_wanted,
    };
    size.clamp(1, cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(granted: u32, used: u32) -> Held {
        Held {
            id: String::new(),
            granted,
            used,
            ends: Instant::now(),
        }
    }

    #[test]
    fn a_lease_grows_when_used_up_shrinks_when_idle_and_stays_under_its_share() {
        assert_eq!(next_size(None, 0, 600), 1);
        assert_eq!(next_size(Some(&held(4, 4)), 4, 600), 8);
        assert_eq!(next_size(Some(&held(8, 3)), 8, 600), 4);
        assert_eq!(next_size(Some(&held(8, 5)), 8, 600), 8);
        assert_eq!(next_size(Some(&held(32, 32)), 32, 600), 600 / LEASE_SHARE);
        // A small ceiling is reserved one call at a time: exact for a single replica.
        assert_eq!(next_size(Some(&held(1, 1)), 1, 10), 1);
        assert_eq!(next_size(Some(&held(1, 0)), 1, 10), 1);
    }
}
