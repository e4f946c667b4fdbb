//! Audit trail: one record per tool call, to the ledger and as a JSON line on stderr, holding a
//! salted digest of the arguments and never the arguments themselves.

use std::sync::Arc;

use serde_json::Value;

use crate::canonical::audit_digest;
use crate::ledger::{AuditRecord, Ledger, LedgerError};

/// Writes audit records.
#[derive(Clone)]
pub struct Auditor {
    ledger: Arc<dyn Ledger>,
    salt: Arc<[u8]>,
}

impl std::fmt::Debug for Auditor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auditor").finish_non_exhaustive()
    }
}

impl Auditor {
    pub fn new(ledger: Arc<dyn Ledger>, salt: &[u8]) -> Self {
        Auditor {
            ledger,
            salt: Arc::from(salt),
        }
    }

    pub fn digest(&self, tool: &str, arguments: &Value) -> String {
        audit_digest(&self.salt, tool, arguments)
    }

    /// Emits the stderr line, then stores the row. The stderr line is written even when the
    /// ledger is down, so a denial is never silent.
    pub async fn record(&self, record: &AuditRecord) -> Result<(), LedgerError> {
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
        let stored = self.ledger.record_audit(record).await;
        if let Err(err) = &stored {
            tracing::warn!(target: "care_mcp::audit", error = %err, "audit row not stored");
        }
        stored
    }
}
