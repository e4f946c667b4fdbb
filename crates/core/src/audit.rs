//! Audit trail: one record per tool call, to the ledger and as a JSON line on stderr, holding a
//! salted digest of the arguments and never the arguments themselves.
//!
//! The stderr line is written before the call answers. The ledger row of an ordinary call is
//! queued to a background writer so the answer does not wait for an INSERT; the row that must
//! precede an external write is written synchronously ([`Auditor::record_now`]), so a write
//! whose audit cannot be stored is never sent. [`Auditor::flush`] drains the queue (at the end
//! of a session).

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::canonical::audit_digest;
use crate::ledger::{AuditRecord, Ledger, LedgerError};

enum Queued {
    Record(Box<AuditRecord>),
    Flush(oneshot::Sender<()>),
}

/// Writes audit records.
#[derive(Clone)]
pub struct Auditor {
    ledger: Arc<dyn Ledger>,
    salt: Arc<[u8]>,
    /// The background writer; `None` outside a tokio runtime (rows are then written inline).
    queue: Option<mpsc::UnboundedSender<Queued>>,
}

impl std::fmt::Debug for Auditor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auditor").finish_non_exhaustive()
    }
}

impl Auditor {
    pub fn new(ledger: Arc<dyn Ledger>, salt: &[u8]) -> Self {
        let queue = tokio::runtime::Handle::try_current().ok().map(|runtime| {
            let (tx, rx) = mpsc::unbounded_channel();
            runtime.spawn(write_queued(Arc::clone(&ledger), rx));
            tx
        });
        Auditor {
            ledger,
            salt: Arc::from(salt),
            queue,
        }
    }

    pub fn digest(&self, tool: &str, arguments: &Value) -> String {
        audit_digest(&self.salt, tool, arguments)
    }

    /// Emits the stderr line now and queues the ledger row.
    pub async fn record(&self, record: &AuditRecord) {
        log_line(record);
        match &self.queue {
            Some(queue) if queue.send(Queued::Record(Box::new(record.clone()))).is_ok() => {}
            _ => {
                let _ = store(self.ledger.as_ref(), record).await;
            }
        }
    }

    /// Emits the stderr line and stores the row before returning: for records that must exist
    /// before the action they announce.
    pub async fn record_now(&self, record: &AuditRecord) -> Result<(), LedgerError> {
        log_line(record);
        store(self.ledger.as_ref(), record).await
    }

    /// Waits until every queued row has been written (or has failed and been logged).
    pub async fn flush(&self) {
        if let Some(queue) = &self.queue {
            let (done, wait) = oneshot::channel();
            if queue.send(Queued::Flush(done)).is_ok() {
                let _ = wait.await;
            }
        }
    }
}

async fn write_queued(ledger: Arc<dyn Ledger>, mut rx: mpsc::UnboundedReceiver<Queued>) {
    while let Some(item) = rx.recv().await {
        match item {
            Queued::Record(record) => {
                let _ = store(ledger.as_ref(), &record).await;
            }
            Queued::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

async fn store(ledger: &dyn Ledger, record: &AuditRecord) -> Result<(), LedgerError> {
    let stored = ledger.record_audit(record).await;
    if let Err(err) = &stored {
        tracing::warn!(target: "care_mcp::audit", error = %err, tool = %record.tool, "audit row not stored");
    }
    stored
}

fn log_line(record: &AuditRecord) {
    tracing::info!(
        target: "care_mcp::audit",
        at = %record.at.to_rfc3339(),
        role = %record.role,
        client = %record.client,
        tool = %record.tool,
        outcome = %record.outcome,
        error_code = record.error_code.as_deref().unwrap_or(""),
        approval_id = record.approval_id.as_deref().unwrap_or(""),
        duration_us = record.duration_us,
        args_digest = %record.args_digest,
        "audit"
    );
}
