//! Row records as both backends return them (plain integers and text), and their conversion
//! to and from the `care_core::ledger` types. Times are milliseconds since the Unix epoch.

use care_core::approvals::RowPolicy;
use care_core::canonical::HashEncoding;
use care_core::ledger::{
    ApprovalRow, ApprovalStatus, AuditRecord, ChainHead, ChainLink, Decision, DecisionRow,
    KpiEntry, KpiSeries, LedgerError, OutputSummary, StoredAudit, SupportChannel, WriteOutcome,
};
use chrono::{DateTime, Utc};

use crate::error::corrupt;

pub(crate) fn millis(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

pub(crate) fn time(ms: i64) -> Result<DateTime<Utc>, LedgerError> {
    DateTime::from_timestamp_millis(ms).ok_or_else(|| corrupt("time out of range"))
}

fn opt_time(ms: Option<i64>) -> Result<Option<DateTime<Utc>>, LedgerError> {
    ms.map(time).transpose()
}

pub(crate) fn channel(s: &str) -> Result<SupportChannel, LedgerError> {
    SupportChannel::parse(s).ok_or_else(|| corrupt("unknown channel"))
}

/// Limits arrive as `u32`; SQL wants a signed 64-bit integer.
pub(crate) fn limit(n: u32) -> i64 {
    i64::from(n)
}

/// Counts are never negative; a negative one would be a corrupt row, read as zero.
pub(crate) fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

pub(crate) fn outcome_json(outcome: &WriteOutcome) -> Result<String, LedgerError> {
    serde_json::to_string(outcome).map_err(|e| LedgerError::Unavailable(e.to_string()))
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct ApprovalRecord {
    pub(crate) id: String,
    action: String,
    arguments_json: String,
    payload_hash: String,
    hash_encoding: String,
    status: String,
    requested_by_role: String,
    requested_by_client: String,
    reason: Option<String>,
    created_at: i64,
    expires_at: i64,
    decided_at: Option<i64>,
    consumed_at: Option<i64>,
    outcome_json: Option<String>,
    outcome_at: Option<i64>,
    card_event_id: Option<String>,
    card_text: Option<String>,
    approvers_json: Option<String>,
    threshold: Option<i32>,
    checked_facts_json: Option<String>,
    /// The ledger's clock when the statement ran.
    db_now: i64,
}

/// A row a batched consume won (`sql::CONSUME_BATCH_POSTGRES`), with the 1-based position
/// of the request that won it.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct WonRecord {
    pub(crate) ord: i64,
    #[sqlx(flatten)]
    pub(crate) record: ApprovalRecord,
}

/// A row of the Postgres listing read (`sql::LIST_APPROVALS_UNLESS_LAPSED_POSTGRES`): whether
/// a live approval has lapsed, and a listed approval unless the page is empty (then the one
/// row carries only the flag).
#[derive(Debug)]
pub(crate) struct ListedRecord {
    pub(crate) any_lapsed: bool,
    pub(crate) record: Option<ApprovalRecord>,
}

impl<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> for ListedRecord {
    fn from_row(row: &'r sqlx::postgres::PgRow) -> Result<Self, sqlx::Error> {
        use sqlx::Row;
        let any_lapsed = row.try_get("any_lapsed")?;
        let id: Option<String> = row.try_get("id")?;
        let record = match id {
            Some(_) => Some(ApprovalRecord::from_row(row)?),
            None => None,
        };
        Ok(Self { any_lapsed, record })
    }
}

impl ApprovalRecord {
    /// The record from a row of the SQLite read connection (same columns as the sqlx query).
    pub(crate) fn from_sqlite(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get("id")?,
            action: r.get("action")?,
            arguments_json: r.get("arguments_json")?,
            payload_hash: r.get("payload_hash")?,
            hash_encoding: r.get("hash_encoding")?,
            status: r.get("status")?,
            requested_by_role: r.get("requested_by_role")?,
            requested_by_client: r.get("requested_by_client")?,
            reason: r.get("reason")?,
            created_at: r.get("created_at")?,
            expires_at: r.get("expires_at")?,
            decided_at: r.get("decided_at")?,
            consumed_at: r.get("consumed_at")?,
            outcome_json: r.get("outcome_json")?,
            outcome_at: r.get("outcome_at")?,
            card_event_id: r.get("card_event_id")?,
            card_text: r.get("card_text")?,
            approvers_json: r.get("approvers_json")?,
            threshold: r.get("threshold")?,
            checked_facts_json: r.get("checked_facts_json")?,
            db_now: r.get("db_now")?,
        })
    }
}

/// A row and the ledger's clock reading of the statement that read it.
pub(crate) fn approval_at(r: ApprovalRecord) -> Result<(ApprovalRow, DateTime<Utc>), LedgerError> {
    let now = time(r.db_now)?;
    let outcome = r
        .outcome_json
        .as_deref()
        .map(serde_json::from_str::<WriteOutcome>)
        .transpose()
        .map_err(|_| corrupt("outcome"))?;
    let policy = match (r.approvers_json.as_deref(), r.threshold) {
        (None, None) => None,
        (Some(keys), Some(threshold)) => Some(
            u32::try_from(threshold)
                .ok()
                .and_then(|t| RowPolicy::from_stored(keys, t))
                .ok_or_else(|| corrupt("approval policy"))?,
        ),
        _ => return Err(corrupt("approval policy")),
    };
    let row = ApprovalRow {
        status: ApprovalStatus::parse(&r.status).ok_or_else(|| corrupt("approval status"))?,
        hash_encoding: HashEncoding::parse(&r.hash_encoding)
            .ok_or_else(|| corrupt("hash encoding"))?,
        created_at: time(r.created_at)?,
        expires_at: time(r.expires_at)?,
        decided_at: opt_time(r.decided_at)?,
        consumed_at: opt_time(r.consumed_at)?,
        outcome,
        outcome_at: opt_time(r.outcome_at)?,
        id: r.id,
        action: r.action,
        arguments_json: r.arguments_json,
        payload_hash: r.payload_hash,
        requested_by_role: r.requested_by_role,
        requested_by_client: r.requested_by_client,
        reason: r.reason,
        card_event_id: r.card_event_id,
        card_text: r.card_text,
        policy,
        checked_facts_json: r.checked_facts_json,
    };
    Ok((row, now))
}

pub(crate) fn approval(r: ApprovalRecord) -> Result<ApprovalRow, LedgerError> {
    approval_at(r).map(|(row, _)| row)
}

pub(crate) fn approvals(rs: Vec<ApprovalRecord>) -> Result<Vec<ApprovalRow>, LedgerError> {
    rs.into_iter().map(approval).collect()
}

/// A row's threshold as stored (an `INTEGER` column).
pub(crate) fn threshold(policy: &RowPolicy) -> i32 {
    i32::try_from(policy.threshold()).unwrap_or(i32::MAX)
}

#[derive(Debug, sqlx::FromRow)]
pub(crate) struct DecisionRecord {
    approval_id: String,
    approver: String,
    decision: String,
    evidence: String,
    decided_at: i64,
}

impl TryFrom<DecisionRecord> for DecisionRow {
    type Error = LedgerError;

    fn try_from(r: DecisionRecord) -> Result<Self, LedgerError> {
        let decision = match r.decision.as_str() {
            "approve" => Decision::Approve,
            "reject" => Decision::Reject,
            _ => return Err(corrupt("decision")),
        };
        Ok(DecisionRow {
            approval_id: r.approval_id,
            approver: r.approver,
            decision,
            evidence: r.evidence,
            decided_at: time(r.decided_at)?,
        })
    }
}

/// One row of the KPI window query: the latest entry of a metric with its aggregates.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct KpiSeriesRecord {
    pub(crate) metric: String,
    n: i64,
    mean: f64,
    lo: f64,
    hi: f64,
    value: f64,
    target: Option<f64>,
    unit: Option<String>,
    higher_is_better: bool,
    recorded_at: i64,
    recorded_by_role: String,
}

impl KpiSeriesRecord {
    /// The record from a row of `sql::KPI_SERIES` on the SQLite read connection, by position:
    /// a lookup by name compares every column's name, a tenth of a `kpi_report` under callgrind.
    pub(crate) fn from_sqlite(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            metric: r.get(0)?,
            n: r.get(1)?,
            mean: r.get(2)?,
            lo: r.get(3)?,
            hi: r.get(4)?,
            value: r.get(5)?,
            target: r.get(6)?,
            unit: r.get(7)?,
            higher_is_better: r.get(8)?,
            recorded_at: r.get(9)?,
            recorded_by_role: r.get(10)?,
        })
    }
}

impl TryFrom<KpiSeriesRecord> for KpiSeries {
    type Error = LedgerError;

    fn try_from(r: KpiSeriesRecord) -> Result<Self, LedgerError> {
        Ok(KpiSeries {
            latest: KpiEntry {
                metric: r.metric.clone(),
                value: r.value,
                target: r.target,
                unit: r.unit,
                higher_is_better: r.higher_is_better,
                recorded_at: time(r.recorded_at)?,
                recorded_by_role: r.recorded_by_role,
            },
            metric: r.metric,
            count: count(r.n),
            mean: r.mean,
            min: r.lo,
            max: r.hi,
        })
    }
}

#[derive(Debug, sqlx::FromRow)]
pub(crate) struct CsatCountRecord {
    pub(crate) channel: String,
    pub(crate) score: i32,
    pub(crate) n: i64,
}

#[derive(Debug, sqlx::FromRow)]
pub(crate) struct AwaitingRecord {
    channel: String,
    awaiting: i64,
    breached: i64,
    oldest: Option<i64>,
}

impl TryFrom<AwaitingRecord> for care_core::ledger::AwaitingSummary {
    type Error = LedgerError;

    fn try_from(r: AwaitingRecord) -> Result<Self, LedgerError> {
        Ok(Self {
            channel: channel(&r.channel)?,
            awaiting: count(r.awaiting),
            breached: count(r.breached),
            oldest_opened_at: opt_time(r.oldest)?,
        })
    }
}

#[derive(Debug, sqlx::FromRow)]
pub(crate) struct AuditRow {
    id: i64,
    at: i64,
    role: String,
    client: String,
    tool: String,
    outcome: String,
    error_code: Option<String>,
    approval_id: Option<String>,
    duration_us: i64,
    args_digest: String,
    capability: String,
    session: String,
    decision: String,
    rules: String,
    denied_by: Option<String>,
    output_bytes: Option<i64>,
    output_items: Option<i64>,
    output_truncated: Option<bool>,
    approval_trail: Option<String>,
    chain_id: Option<String>,
    chain_seq: Option<i64>,
    prev_hash: Option<String>,
    row_hash: Option<String>,
}

impl TryFrom<AuditRow> for StoredAudit {
    type Error = LedgerError;

    fn try_from(r: AuditRow) -> Result<Self, LedgerError> {
        let output = r.output_bytes.map(|bytes| OutputSummary {
            bytes: count(bytes),
            items: count(r.output_items.unwrap_or(0)),
            truncated: r.output_truncated.unwrap_or(false),
        });
        let link = match (r.chain_id, r.chain_seq, r.prev_hash, r.row_hash) {
            (Some(chain), Some(seq), Some(prev_hash), Some(hash)) => Some(ChainLink {
                chain,
                seq,
                prev_hash,
                hash,
            }),
            _ => None,
        };
        let rules = if r.rules.is_empty() {
            Vec::new()
        } else {
            r.rules.split(',').map(str::to_owned).collect()
        };
        Ok(StoredAudit {
            id: r.id,
            record: AuditRecord {
                at: time(r.at)?,
                role: r.role,
                client: r.client,
                tool: r.tool,
                outcome: r.outcome,
                error_code: r.error_code,
                approval_id: r.approval_id,
                duration_us: count(r.duration_us),
                args_digest: r.args_digest,
                capability: r.capability,
                session: r.session,
                decision: r.decision,
                rules,
                denied_by: r.denied_by,
                output,
                approval_trail: r.approval_trail,
            },
            link,
        })
    }
}

#[derive(Debug, sqlx::FromRow)]
pub(crate) struct ChainHeadRow {
    chain_id: String,
    started_at: i64,
    head_seq: i64,
    head_hash: String,
    head_mac: String,
}

impl TryFrom<ChainHeadRow> for ChainHead {
    type Error = LedgerError;

    fn try_from(r: ChainHeadRow) -> Result<Self, LedgerError> {
        Ok(ChainHead {
            chain: r.chain_id,
            started_at: time(r.started_at)?,
            seq: r.head_seq,
            hash: r.head_hash,
            mac: r.head_mac,
        })
    }
}

/// Durations are stored signed; one beyond `i64::MAX` microseconds (292,000 years) saturates.
pub(crate) fn duration_us(us: u64) -> i64 {
    i64::try_from(us).unwrap_or(i64::MAX)
}

/// The three per-channel breach cutoffs, in the order the awaiting query binds them.
pub(crate) fn cutoffs(breach_cutoffs: &[(SupportChannel, DateTime<Utc>)]) -> [Option<i64>; 3] {
    SupportChannel::ALL.map(|c| {
        breach_cutoffs
            .iter()
            .find(|(ch, _)| *ch == c)
            .map(|(_, t)| millis(*t))
    })
}

/// Folds `(channel, score, count)` rows into one distribution per channel, ordered by channel.
pub(crate) fn csat_distributions(
    rows: Vec<CsatCountRecord>,
) -> Result<Vec<care_core::ledger::CsatDistribution>, LedgerError> {
    let mut by_channel = std::collections::BTreeMap::<SupportChannel, [u64; 5]>::new();
    for r in rows {
        let ch = channel(&r.channel)?;
        let slot = usize::try_from(r.score)
            .ok()
            .and_then(|s| s.checked_sub(1))
            .filter(|i| *i < 5)
            .ok_or_else(|| corrupt("csat score"))?;
        if let Some(c) = by_channel.entry(ch).or_default().get_mut(slot) {
            *c += count(r.n);
        }
    }
    Ok(by_channel
        .into_iter()
        .map(|(channel, counts)| care_core::ledger::CsatDistribution { channel, counts })
        .collect())
}
