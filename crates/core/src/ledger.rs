//! The ledger trait and its row types. `care-ledger` implements it for Postgres and SQLite;
//! nothing else in the workspace touches SQL.
//!
//! The ledger's own clock decides everything about an approval's time: expiry (on read, in
//! the sweep and in the consume), decision and consumption times. A process clock that runs
//! fast or slow can neither consume an expired approval nor expire a live one. Stored times
//! are milliseconds since the Unix epoch.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::approvals::{ApproverKey, RowPolicy};
use crate::canonical::HashEncoding;

/// Why a ledger call failed. The detail is for stderr only; callers see LEDGER_UNAVAILABLE.
/// `Clone`: a failed batched statement gives each of its callers the same error.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LedgerError {
    #[error("ledger unavailable: {0}")]
    Unavailable(String),
    #[error("ledger row not found")]
    NotFound,
    /// A uniqueness or state rule refused the write (e.g. an approval id reused).
    #[error("ledger conflict: {0}")]
    Conflict(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    Pending,
    Approved,
    Rejected,
    Expired,
    Consumed,
}

impl ApprovalStatus {
    pub const ALL: [ApprovalStatus; 5] = [
        ApprovalStatus::Pending,
        ApprovalStatus::Approved,
        ApprovalStatus::Rejected,
        ApprovalStatus::Expired,
        ApprovalStatus::Consumed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::Pending => "pending",
            ApprovalStatus::Approved => "approved",
            ApprovalStatus::Rejected => "rejected",
            ApprovalStatus::Expired => "expired",
            ApprovalStatus::Consumed => "consumed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// A new approval request, as stored in `pending`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewApproval {
    pub id: String,
    /// The external-write tool this approval is for.
    pub action: String,
    /// The canonical encoding of the arguments (see `canonical`), kept to render cards and lists.
    pub arguments_json: String,
    /// Hex SHA-256 of the canonical `{action, arguments}`.
    pub payload_hash: String,
    /// Which canonical encoding `payload_hash` was computed with.
    pub hash_encoding: HashEncoding,
    pub requested_by_role: String,
    pub requested_by_client: String,
    pub reason: Option<String>,
    /// Read from the ledger's clock ([`Ledger::clock`]) when the request was made.
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    /// The approvers and threshold in force now: this row is judged by them for good.
    pub policy: RowPolicy,
    /// The plan's checked facts (canonical JSON object), compared again before consuming.
    pub checked_facts_json: String,
    /// The card shown to approvers (its chat event id and its text), when a channel showed it.
    pub card_event_id: Option<String>,
    pub card_text: Option<String>,
}

impl NewApproval {
    /// A pending approval of `action` with exactly `arguments`, requested by `role` for the
    /// times `(created_at, expires_at)` and judged by `policy`: bound to the RFC 8785 payload
    /// hash, no reason, no card, and an empty set of checked facts.
    pub fn for_arguments(
        id: &str,
        action: &str,
        arguments: &serde_json::Map<String, serde_json::Value>,
        role: &str,
        (created_at, expires_at): (DateTime<Utc>, DateTime<Utc>),
        policy: RowPolicy,
    ) -> Self {
        NewApproval {
            id: id.to_owned(),
            action: action.to_owned(),
            arguments_json: crate::canonical::encode_string(&serde_json::Value::Object(
                arguments.clone(),
            )),
            payload_hash: crate::canonical::payload_hash(action, arguments),
            hash_encoding: HashEncoding::Jcs,
            requested_by_role: role.to_owned(),
            requested_by_client: "stdio".to_owned(),
            reason: None,
            created_at,
            expires_at,
            policy,
            checked_facts_json: "{}".to_owned(),
            card_event_id: None,
            card_text: None,
        }
    }
}

/// The outcome of the write an approval was consumed for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum WriteOutcome {
    Sent,
    Failed { code: String },
}

impl std::fmt::Display for WriteOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteOutcome::Sent => f.write_str("sent"),
            WriteOutcome::Failed { code } => write!(f, "failed ({code})"),
        }
    }
}

/// An approval row as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRow {
    pub id: String,
    pub action: String,
    pub arguments_json: String,
    pub payload_hash: String,
    /// Rows stored before payload hashes followed RFC 8785 say `LegacyV1`.
    pub hash_encoding: HashEncoding,
    pub status: ApprovalStatus,
    pub requested_by_role: String,
    pub requested_by_client: String,
    pub reason: Option<String>,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    /// When the row left `pending` by a decision.
    pub decided_at: Option<DateTime<Utc>>,
    pub consumed_at: Option<DateTime<Utc>>,
    pub outcome: Option<WriteOutcome>,
    pub outcome_at: Option<DateTime<Utc>>,
    /// Id of the approval card event in the chat channel, once posted.
    pub card_event_id: Option<String>,
    /// The card's text exactly as approvers read it (`None` on rows from before it was kept).
    pub card_text: Option<String>,
    /// The approvers and threshold stored with the row (`None` on rows from before rows
    /// carried them: those are judged by the deciding process's configuration).
    pub policy: Option<RowPolicy>,
    /// The plan's checked facts when the approval was requested (`None` on older rows).
    pub checked_facts_json: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approve,
    Reject,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Approve => "approve",
            Decision::Reject => "reject",
        }
    }
}

/// A decision to record: the ledger dates it by its own clock.
#[derive(Debug, Clone, PartialEq)]
pub struct NewDecision {
    pub approval_id: String,
    pub approver: ApproverKey,
    pub decision: Decision,
    /// The raw signed event JSON when it came through the chat channel.
    pub evidence: String,
}

/// One approver's decision on one approval, with the evidence it came with
/// (the raw signed event JSON when it came through the chat channel).
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionRow {
    pub approval_id: String,
    /// Lower-case hex x-only public key.
    pub approver: String,
    pub decision: Decision,
    pub evidence: String,
    pub decided_at: DateTime<Utc>,
}

/// Why `record_decision` refused.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error("approval not found")]
    NotFound,
    #[error("approval expired")]
    Expired,
    #[error("approval already consumed")]
    Consumed,
    /// Once rejected, a row's decisions and evidence stay as they are.
    #[error("approval already rejected")]
    Rejected,
    /// The key is not on the row's approver list.
    #[error("not an approver of this approval")]
    NotAnApprover,
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

/// Why `consume` refused. Each maps to one error code.
#[derive(Debug, thiserror::Error)]
pub enum ConsumeError {
    #[error("approval not found")]
    NotFound,
    #[error("approval pending")]
    Pending,
    #[error("approval rejected")]
    Rejected,
    #[error("approval expired")]
    Expired,
    #[error("approval consumed")]
    Consumed,
    #[error("approval for another action or payload")]
    Mismatch,
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

/// One KPI observation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KpiEntry {
    pub metric: String,
    pub value: f64,
    pub target: Option<f64>,
    pub unit: Option<String>,
    /// True when a higher value is better (the default); false for e.g. response times.
    pub higher_is_better: bool,
    pub recorded_at: DateTime<Utc>,
    pub recorded_by_role: String,
}

/// Aggregate of one metric over a window, with its latest observation.
#[derive(Debug, Clone, PartialEq)]
pub struct KpiSeries {
    pub metric: String,
    pub count: u64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub latest: KpiEntry,
}

/// The channels customers reach us through; CSAT and SLA are kept per channel.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum SupportChannel {
    AppStore,
    Forum,
    Mail,
}

impl SupportChannel {
    pub const ALL: [SupportChannel; 3] = [
        SupportChannel::AppStore,
        SupportChannel::Forum,
        SupportChannel::Mail,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SupportChannel::AppStore => "app_store",
            SupportChannel::Forum => "forum",
            SupportChannel::Mail => "mail",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct CsatEntry {
    pub channel: SupportChannel,
    pub ticket_ref: String,
    pub score: u8,
    pub comment: Option<String>,
    pub recorded_at: DateTime<Utc>,
    pub recorded_by_role: String,
}

/// Count of each CSAT score 1..=5 for one channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsatDistribution {
    pub channel: SupportChannel,
    /// Index 0 is score 1.
    pub counts: [u64; 5],
}

/// A customer conversation awaiting or having received a first response (feeds `sla_status`).
#[derive(Debug, Clone, PartialEq)]
pub struct Ticket {
    pub channel: SupportChannel,
    pub ticket_ref: String,
    pub opened_at: DateTime<Utc>,
    pub first_response_at: Option<DateTime<Utc>>,
}

/// Tickets awaiting a first response in one channel.
#[derive(Debug, Clone, PartialEq)]
pub struct AwaitingSummary {
    pub channel: SupportChannel,
    pub awaiting: u64,
    /// Awaiting tickets opened before the breach cutoff given to the query.
    pub breached: u64,
    pub oldest_opened_at: Option<DateTime<Utc>>,
}

/// One audited tool call. Carries a digest of the arguments, never the arguments; says why
/// the call was allowed or refused (capability, session, decision, rules), how much it
/// answered (never what), and on an external write who approved it and until when.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct AuditRecord {
    pub at: DateTime<Utc>,
    pub role: String,
    pub client: String,
    /// A catalog name, or `unknown` for a name that exists nowhere.
    pub tool: String,
    /// `ok`, `dry_run`, `intent` or `error`.
    pub outcome: String,
    pub error_code: Option<String>,
    pub approval_id: Option<String>,
    pub duration_us: u64,
    /// Hex HMAC-SHA256 of the canonical arguments keyed by the audit salt.
    pub args_digest: String,
    /// The tool's capability labels from the catalog, comma-separated (`read,upstream`).
    pub capability: String,
    /// The session the call belongs to: one id per stdio process, one per HTTP session
    /// (a salted digest of its `Mcp-Session-Id`, never the id itself); ties a task's reads
    /// to its write.
    pub session: String,
    /// `allow`, `deny` (a rule refused) or `error` (allowed, then failed upstream or inside).
    pub decision: String,
    /// The rules the call passed, in order (`role_gate`, `input`, `scope`, `locale`,
    /// `outbound_scan`, `write_switch`, `approval`, ...).
    pub rules: Vec<String>,
    /// The rule that refused it (`scope`, `outbound_scan:aws_access_key`, ...), on `deny`.
    pub denied_by: Option<String>,
    /// Size and shape of the answer, never its content.
    pub output: Option<OutputSummary>,
    /// On external writes: the approval's decisions and expiry, as canonical JSON
    /// (`{"decisions":[{"approver","decision","at"}],"expires_at"}`, times in ms).
    pub approval_trail: Option<String>,
}

/// What an answer held, without what it said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct OutputSummary {
    /// Bytes of the serialised result envelope.
    pub bytes: u64,
    /// Elements of the top-level lists in `data` (0 when it has none).
    pub items: u64,
    /// The tool cut its answer short (`data.truncated`).
    pub truncated: bool,
}

/// An audit row as stored: its id and, for rows written since chaining began, its link.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredAudit {
    pub id: i64,
    pub record: AuditRecord,
    pub link: Option<ChainLink>,
}

/// A row's place in its writer's hash chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainLink {
    /// One chain per audit writer (per process and ledger): replicas never share a chain.
    pub chain: String,
    /// 1, 2, 3, ... within the chain.
    pub seq: i64,
    /// The previous row's `hash` (64 zeros for the first row).
    pub prev_hash: String,
    /// Hex HMAC-SHA256, keyed by the audit salt, over the row's fields, `chain`, `seq` and
    /// `prev_hash` (see `audit_chain`).
    pub hash: String,
}

/// A chain's recorded head, updated in the transaction that appends to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainHead {
    pub chain: String,
    pub started_at: DateTime<Utc>,
    pub seq: i64,
    pub hash: String,
    /// HMAC over `chain`, `seq` and `hash`: a head cannot be moved back without the salt.
    pub mac: String,
}

/// Rows appended to one chain in one transaction, with the chain's new head.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditBatch {
    pub rows: Vec<(AuditRecord, ChainLink)>,
    pub head: ChainHead,
    pub durability: Durability,
}

/// When an audit batch's commit must be on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Before the append returns: every ordinary batch.
    #[default]
    Flushed,
    /// Committed (visible to every reader) before the append returns, and on disk no later
    /// than the caller's next durable commit to the same ledger: the intent row an external
    /// write's consume follows. A backend whose commits are ordered on one log (Postgres's
    /// WAL: flushing a commit flushes every commit before it) may skip this batch's own
    /// flush; any other backend flushes it as usual.
    BeforeNextCommit,
}

/// Which audit rows `audit_rows` returns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditQuery {
    pub since: Option<DateTime<Utc>>,
    pub tool: Option<String>,
    pub outcome: Option<String>,
    pub session: Option<String>,
    /// Only rows with a larger id (paging in id order).
    pub after_id: Option<i64>,
    /// Oldest first (by id) instead of newest first.
    pub oldest_first: bool,
    pub limit: u32,
}

/// The one store behind approvals, KPI, CSAT, SLA tickets and the audit trail.
///
/// Every method is a single statement or a single transaction; concurrent processes sharing a
/// database (six role processes on one SQLite file, or N Deployments on one Postgres) are safe.
#[async_trait]
pub trait Ledger: Send + Sync + std::fmt::Debug {
    /// Which backend this is (`postgres` or `sqlite`), for logs and `care-mcp approvals`.
    fn backend(&self) -> &'static str;

    /// Cheap liveness probe; also (re)applies migrations if the ledger was down at start.
    async fn ping(&self) -> Result<(), LedgerError>;

    /// Closes the connections (at the end of a session): SQLite then checkpoints its WAL so
    /// the next process does not start by recovering it.
    async fn close(&self) {}

    /// The HTTP clients and their call windows, when this ledger stores them.
    fn client_store(&self) -> Option<&dyn crate::clients::ClientStore> {
        None
    }

    // --- approvals -----------------------------------------------------------------------

    /// The ledger's clock: what approval times are measured against.
    async fn clock(&self) -> Result<DateTime<Utc>, LedgerError>;

    async fn create_approval(&self, new: &NewApproval) -> Result<ApprovalRow, LedgerError>;

    /// Reads a row; a row past `expires_at` (by the ledger's clock) that is `pending` or
    /// `approved` is first stored as `expired` and read as such.
    async fn approval(&self, id: &str) -> Result<Option<ApprovalRow>, LedgerError>;

    /// Most recent first (by `created_at`, then id), expired rows marked as in [`Ledger::approval`].
    async fn list_approvals(
        &self,
        status: Option<ApprovalStatus>,
        limit: u32,
    ) -> Result<Vec<ApprovalRow>, LedgerError>;

    /// Stores the card event id on the row (the chat channel's message id).
    async fn set_card_event(&self, id: &str, event_id: &str) -> Result<(), LedgerError>;

    /// The approval whose card is the chat event `event_id`, if any.
    async fn approval_id_by_card_event(
        &self,
        event_id: &str,
    ) -> Result<Option<String>, LedgerError>;

    /// Deletes a `pending` row that was never shown to anyone (card not delivered).
    async fn discard_pending(&self, id: &str) -> Result<(), LedgerError>;

    /// Records one approver's decision and applies it, in one transaction, judged by the
    /// row's own policy (`legacy` only for rows stored without one):
    /// - the approver must be on the row's list (`NotAnApprover` otherwise);
    /// - a `rejected` row refuses every later decision (`Rejected`): its decisions and evidence
    ///   stay exactly as they were;
    /// - the decision is upserted per (approval, approver), with its evidence;
    /// - a `reject` moves a `pending` or `approved` row to `rejected` (a rejection wins);
    /// - an `approve` moves a `pending` row to `approved` once the row's threshold of distinct
    ///   approvers have approved (and none rejected).
    ///
    /// Refuses expired (marking the row `expired`) and consumed rows.
    async fn record_decision(
        &self,
        decision: &NewDecision,
        legacy: &RowPolicy,
    ) -> Result<ApprovalRow, DecideError>;

    async fn decisions(&self, approval_id: &str) -> Result<Vec<DecisionRow>, LedgerError>;

    /// The write pipeline's verify-and-consume: ONE conditional update flips the row from
    /// `approved` to `consumed` when it is unexpired by the ledger's clock at that moment, and
    /// `action`, `payload_hash` and the checked facts match (facts are not compared on rows
    /// stored without them). When nothing was updated the row is read to name the reason.
    /// Of N concurrent callers (any number of processes) exactly one gets `Ok`.
    async fn consume(
        &self,
        id: &str,
        action: &str,
        payload_hash: &str,
        checked_facts_json: &str,
    ) -> Result<ApprovalRow, ConsumeError>;

    /// Records what became of the consumed write. Only a `consumed` row without an outcome
    /// takes one; a second call is a `Conflict`.
    async fn record_outcome(&self, id: &str, outcome: &WriteOutcome) -> Result<(), LedgerError>;

    // --- KPI / CSAT / SLA ------------------------------------------------------------------

    async fn record_kpi(&self, entry: &KpiEntry) -> Result<(), LedgerError>;

    /// One series per metric (all metrics when `metric` is None) over `recorded_at >= since`,
    /// ordered by metric name.
    async fn kpi_series(
        &self,
        metric: Option<&str>,
        since: Option<DateTime<Utc>>,
    ) -> Result<Vec<KpiSeries>, LedgerError>;

    async fn record_csat(&self, entry: &CsatEntry) -> Result<(), LedgerError>;

    /// Distribution per channel (only channels with at least one score), ordered by channel.
    async fn csat_distribution(
        &self,
        channel: Option<SupportChannel>,
        since: Option<DateTime<Utc>>,
    ) -> Result<Vec<CsatDistribution>, LedgerError>;

    /// Opens a ticket; opening an existing (channel, ticket_ref) changes nothing.
    async fn open_ticket(&self, ticket: &Ticket) -> Result<(), LedgerError>;

    /// Marks the first response of a ticket; later calls keep the first time.
    async fn mark_first_response(
        &self,
        channel: SupportChannel,
        ticket_ref: &str,
        at: DateTime<Utc>,
    ) -> Result<(), LedgerError>;

    /// Per channel, tickets without a first response; `breach_cutoff(channel)` = tickets
    /// opened before it count as breached. Channels with none awaiting are omitted.
    async fn awaiting_first_response(
        &self,
        channel: Option<SupportChannel>,
        breach_cutoffs: &[(SupportChannel, DateTime<Utc>)],
    ) -> Result<Vec<AwaitingSummary>, LedgerError>;

    // --- audit -----------------------------------------------------------------------------

    /// Appends rows to their chain and moves its head, in one transaction.
    async fn append_audit(&self, batch: &AuditBatch) -> Result<(), LedgerError>;

    /// Most recent first.
    async fn recent_audit(&self, limit: u32) -> Result<Vec<AuditRecord>, LedgerError>;

    /// Rows matching `query`, with their ids and chain links.
    async fn audit_rows(&self, query: &AuditQuery) -> Result<Vec<StoredAudit>, LedgerError>;

    /// One row by id.
    async fn audit_row(&self, id: i64) -> Result<Option<StoredAudit>, LedgerError>;

    /// Every chain's recorded head.
    async fn audit_heads(&self) -> Result<Vec<ChainHead>, LedgerError>;
}
