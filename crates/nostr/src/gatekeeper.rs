//! What a reaction must pass before it costs any ledger work: the approver keys this process
//! knows (its configured approvers, and the approvers of every approval row it has read), and
//! a bounded-rate log of refusals, so a flood of forged or stranger reactions costs neither a
//! database query nor a log line each.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use care_core::approvals::{ApproverKey, RowPolicy};

/// Refusals logged per window; the rest are counted and summed up in one line.
const LOGGED_PER_WINDOW: u32 = 10;
const WINDOW: Duration = Duration::from_secs(60);

/// Approver keys whose reactions are worth a ledger lookup.
#[derive(Debug)]
pub struct KnownApprovers {
    keys: Mutex<HashSet<String>>,
}

impl KnownApprovers {
    pub fn new<'a>(configured: impl IntoIterator<Item = &'a ApproverKey>) -> Self {
        KnownApprovers {
            keys: Mutex::new(configured.into_iter().map(|k| k.hex().to_owned()).collect()),
        }
    }

    /// Adds a row's approvers; true when one of them was not known before (so reactions of
    /// theirs may have been dropped by the live subscription and must be fetched).
    pub fn learn(&self, policy: &RowPolicy) -> bool {
        let mut keys = self
            .keys
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut learned = false;
        for key in policy.approvers() {
            learned |= keys.insert(key.hex().to_owned());
        }
        learned
    }

    pub fn knows(&self, author_hex: &str) -> bool {
        self.keys
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(author_hex)
    }
}

/// Logs refused reactions at a bounded rate.
#[derive(Debug)]
pub struct RefusalLog {
    state: Mutex<Window>,
}

#[derive(Debug)]
struct Window {
    started: Instant,
    logged: u32,
    suppressed: u64,
}

impl Default for RefusalLog {
    fn default() -> Self {
        RefusalLog {
            state: Mutex::new(Window {
                started: Instant::now(),
                logged: 0,
                suppressed: 0,
            }),
        }
    }
}

impl RefusalLog {
    /// Whether this refusal may be logged now; when a window closes with refusals left
    /// unlogged, says how many in one line.
    pub fn admit(&self) -> bool {
        let mut w = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if w.started.elapsed() >= WINDOW {
            if w.suppressed > 0 {
                tracing::warn!(
                    suppressed = w.suppressed,
                    "reactions refused without a log line in the last minute"
                );
            }
            *w = Window {
                started: Instant::now(),
                logged: 0,
                suppressed: 0,
            };
        }
        if w.logged < LOGGED_PER_WINDOW {
            w.logged += 1;
            true
        } else {
            w.suppressed += 1;
            false
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn key(byte: u8) -> ApproverKey {
        ApproverKey::from_hex(&format!("{byte:02x}").repeat(32)).unwrap()
    }

    #[test]
    fn rows_teach_new_approvers_once() {
        let known = KnownApprovers::new([&key(1)]);
        assert!(known.knows(key(1).hex()));
        assert!(!known.knows(key(2).hex()));
        let row = RowPolicy::new(vec![key(1), key(2)], 1);
        assert!(known.learn(&row));
        assert!(known.knows(key(2).hex()));
        assert!(!known.learn(&row));
    }

    #[test]
    fn refusals_are_logged_at_a_bounded_rate() {
        let log = RefusalLog::default();
        let admitted = (0..1000).filter(|_| log.admit()).count();
        assert_eq!(admitted, LOGGED_PER_WINDOW as usize);
    }
}
