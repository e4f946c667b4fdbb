//! Audit trail: one record per tool call, to the ledger and as a JSON line on stderr, holding a
//! salted digest of the arguments and never the arguments themselves.
//!
//! The stderr line is written before the call answers. Ledger rows go through one writer per
//! auditor (per process), which appends them to its own hash chain (`audit_chain`): whatever
//! is queued when it wakes is stored as one multi-row insert with the chain's new head, in
//! one transaction, so a burst of calls costs one commit. An ordinary call's row is queued and
//! the answer does not wait for it; the row that must precede an external write
//! ([`Auditor::record_now`]) waits for its batch's commit, so a write whose audit cannot be
//! stored is never sent. [`Auditor::flush`] drains the queue (at the end of a session).

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{Mutex, mpsc, oneshot};

use crate::audit_chain::Chain;
use crate::canonical::audit_digest;
use crate::ledger::{AuditBatch, AuditRecord, Durability, Ledger, LedgerError};

/// Most rows stored in one transaction: bounds a batch's statement size (SQLite's parameter
/// limit) and the wait of a `record_now` queued behind a burst.
const MAX_BATCH: usize = 256;

/// How long a batch waits for more rows before its commit: the longest the writer delays an
/// ordinary row (never a `record_now` or a flush). Calls arrive every 0.1 ms or so in a busy
/// session, so one commit carries a few dozen rows instead of one.
const LINGER: std::time::Duration = std::time::Duration::from_millis(2);

type Ack = oneshot::Sender<Result<(), String>>;

enum Queued {
    Record(Box<AuditRecord>, Option<Ack>),
    Flush(oneshot::Sender<()>),
}

/// Writes audit records.
#[derive(Clone)]
pub struct Auditor {
    writer: Arc<Writer>,
    /// The background writer; `None` outside a tokio runtime (rows are then written inline).
    queue: Option<mpsc::UnboundedSender<Queued>>,
}

/// What stores rows: the ledger, the salt that keys digests and chain hashes, and the chain.
struct Writer {
    ledger: Arc<dyn Ledger>,
    salt: Arc<[u8]>,
    chain: Mutex<Chain>,
}

impl std::fmt::Debug for Auditor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auditor").finish_non_exhaustive()
    }
}

impl Auditor {
    pub fn new(ledger: Arc<dyn Ledger>, salt: &[u8]) -> Self {
        let writer = Arc::new(Writer {
            ledger,
            salt: Arc::from(salt),
            chain: Mutex::new(Chain::start(chrono::Utc::now())),
        });
        let queue = tokio::runtime::Handle::try_current().ok().map(|runtime| {
            let (tx, rx) = mpsc::unbounded_channel();
            runtime.spawn(write_queued(Arc::clone(&writer), rx));
            tx
        });
        Auditor { writer, queue }
    }

    pub fn digest(&self, tool: &str, arguments: &Value) -> String {
        audit_digest(&self.writer.salt, tool, arguments)
    }

    /// A label for an HTTP session: a salted digest of its id, so the audit ties a session's
    /// calls together without holding the id a client could resume it with.
    pub fn session_label(&self, session_id: &str) -> String {
        let digest = audit_digest(
            &self.writer.salt,
            "mcp-session",
            &Value::String(session_id.to_owned()),
        );
        format!("h-{}", digest.get(..16).unwrap_or(&digest))
    }

    /// The chain this auditor appends to.
    pub async fn chain_id(&self) -> String {
        self.writer.chain.lock().await.id.clone()
    }

    /// Emits the stderr line now and queues the ledger row.
    pub async fn record(&self, record: &AuditRecord) {
        log_line(record);
        match &self.queue {
            Some(queue)
                if queue
                    .send(Queued::Record(Box::new(record.clone()), None))
                    .is_ok() => {}
            _ => {
                let _ = self
                    .writer
                    .append(vec![record.clone()], Durability::Flushed)
                    .await;
            }
        }
    }

    /// Emits the stderr line and commits the row before returning: for records that must exist
    /// before the action they announce. The caller's next durable commit to the ledger (the
    /// consume) makes it durable, if its own commit did not ([`Durability::BeforeNextCommit`]).
    pub async fn record_now(&self, record: &AuditRecord) -> Result<(), LedgerError> {
        log_line(record);
        let Some(queue) = &self.queue else {
            return self
                .writer
                .append(vec![record.clone()], Durability::BeforeNextCommit)
                .await;
        };
        let (ack, stored) = oneshot::channel();
        if queue
            .send(Queued::Record(Box::new(record.clone()), Some(ack)))
            .is_err()
        {
            return Err(LedgerError::Unavailable(
                "the audit writer has stopped".into(),
            ));
        }
        match stored.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(reason)) => Err(LedgerError::Unavailable(reason)),
            Err(_) => Err(LedgerError::Unavailable(
                "the audit writer has stopped".into(),
            )),
        }
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

impl Writer {
    /// Appends `records` to the chain in one transaction; the chain moves only if it
    /// committed, so a failed batch leaves no gap (its rows stay on stderr).
    async fn append(
        &self,
        records: Vec<AuditRecord>,
        durability: Durability,
    ) -> Result<(), LedgerError> {
        let mut chain = self.chain.lock().await;
        let (links, head) = chain.links(&self.salt, &records);
        let count = records.len();
        let batch = AuditBatch {
            rows: records.into_iter().zip(links).collect(),
            head,
            durability,
        };
        match self.ledger.append_audit(&batch).await {
            Ok(()) => {
                chain.advance(&batch.head);
                Ok(())
            }
            Err(err) => {
                tracing::warn!(target: "care_mcp::audit", error = %err, rows = count, "audit rows not stored");
                Err(err)
            }
        }
    }
}

async fn write_queued(writer: Arc<Writer>, mut rx: mpsc::UnboundedReceiver<Queued>) {
    while let Some(first) = rx.recv().await {
        let mut records = Vec::new();
        let mut acks = Vec::new();
        let mut flushes = Vec::new();
        let mut next = Some(first);
        while let Some(item) = next.take() {
            match item {
                Queued::Record(record, ack) => {
                    records.push(*record);
                    acks.extend(ack);
                }
                Queued::Flush(done) => flushes.push(done),
            }
            if records.len() < MAX_BATCH {
                next = rx.try_recv().ok();
            }
        }
        // Waiting a moment for more rows lets one commit carry them (far fewer page writes
        // and wake-ups per row), unless someone is waiting for this batch.
        if !records.is_empty() {
            let until = tokio::time::Instant::now() + LINGER;
            while records.len() < MAX_BATCH && acks.is_empty() && flushes.is_empty() {
                match tokio::time::timeout_at(until, rx.recv()).await {
                    Ok(Some(Queued::Record(record, ack))) => {
                        records.push(*record);
                        acks.extend(ack);
                    }
                    Ok(Some(Queued::Flush(done))) => flushes.push(done),
                    Ok(None) | Err(_) => break,
                }
            }
        }
        if !records.is_empty() {
            // A batch someone waits for holds an intent row, and what that caller does next
            // is the consume: a durable commit to the same ledger, which makes this one durable
            // too (Durability::BeforeNextCommit). Ordinary batches are flushed as they commit.
            let durability = if acks.is_empty() {
                Durability::Flushed
            } else {
                Durability::BeforeNextCommit
            };
            let stored = writer
                .append(records, durability)
                .await
                .map_err(|e| e.to_string());
            for ack in acks {
                let _ = ack.send(stored.clone());
            }
        }
        for done in flushes {
            let _ = done.send(());
        }
    }
}

/// The audit line on stderr, in the shape of every other log line (tracing-subscriber's JSON:
/// `timestamp`, `level`, `fields`, `target`), honouring `RUST_LOG` for `care_mcp::audit`.
/// Serialised here in one pass and written with one `write`: through the subscriber's field
/// visitor it was the largest single cost of an audited call under callgrind (a UTF-8 check
/// and a formatter call per fragment, some 170 per line).
fn log_line(record: &AuditRecord) {
    if !tracing::enabled!(target: "care_mcp::audit", tracing::Level::INFO) {
        return;
    }
    let line = AuditLine {
        timestamp: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        level: "INFO",
        fields: AuditFields {
            message: "audit",
            at: record.at.to_rfc3339(),
            role: &record.role,
            client: &record.client,
            session: &record.session,
            tool: &record.tool,
            capability: &record.capability,
            outcome: &record.outcome,
            decision: &record.decision,
            rules: record.rules.join(","),
            denied_by: record.denied_by.as_deref().unwrap_or(""),
            error_code: record.error_code.as_deref().unwrap_or(""),
            approval_id: record.approval_id.as_deref().unwrap_or(""),
            duration_us: record.duration_us,
            output_bytes: record.output.map_or(0, |o| o.bytes),
            output_items: record.output.map_or(0, |o| o.items),
            output_truncated: record.output.is_some_and(|o| o.truncated),
            args_digest: &record.args_digest,
        },
        target: "care_mcp::audit",
    };
    let Ok(mut bytes) = serde_json::to_vec(&line) else {
        return;
    };
    bytes.push(b'\n');
    // One write of the whole line, as the subscriber does: lines never interleave mid-way.
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), &bytes);
}

#[derive(serde::Serialize)]
struct AuditLine<'a> {
    timestamp: String,
    level: &'static str,
    fields: AuditFields<'a>,
    target: &'static str,
}

#[derive(serde::Serialize)]
struct AuditFields<'a> {
    message: &'static str,
    at: String,
    role: &'a str,
    client: &'a str,
    session: &'a str,
    tool: &'a str,
    capability: &'a str,
    outcome: &'a str,
    decision: &'a str,
    rules: String,
    denied_by: &'a str,
    error_code: &'a str,
    approval_id: &'a str,
    duration_us: u64,
    output_bytes: u64,
    output_items: u64,
    output_truncated: bool,
    args_digest: &'a str,
}
