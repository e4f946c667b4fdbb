//! The Postgres ledger. Its pool connects lazily and its migrations run on first successful
//! use, so the server starts and lists tools while Postgres is down; calls answer
//! `Unavailable` until it returns, then recover without a restart.

use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use care_core::ledger::{
    ApprovalRow, ApprovalStatus, AuditRecord, AwaitingSummary, Channel, ConsumeError,
    CsatDistribution, CsatEntry, DecideError, DecisionRow, KpiEntry, KpiSeries, Ledger,
    LedgerError, NewApproval, Ticket, WriteOutcome,
};
use chrono::{DateTime, Utc};
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use tokio::sync::OnceCell;

use crate::connect::ConnectError;
use crate::error::{db, migrate};
use crate::rows::{
    self, ApprovalRecord, AuditRow, AwaitingRecord, CsatCountRecord, DecisionRecord,
    KpiSeriesRecord, millis,
};
use crate::{rules, sql};

static MIGRATOR: Migrator = sqlx::migrate!("../../migrations/postgres");

/// How long a call waits for a connection before answering `Unavailable`.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(2);

/// A pooled connection idle this long is pinged before use.
const IDLE_BEFORE_PING: Duration = Duration::from_millis(200);

#[derive(Debug)]
pub struct PostgresLedger {
    pool: PgPool,
    /// Set once migrations have run; left unset after a failure so the next call retries.
    migrated: OnceCell<()>,
}

impl PostgresLedger {
    /// Parses a `postgres://` URL and builds the ledger without connecting.
    pub fn from_url(url: &str) -> Result<Self, ConnectError> {
        let options = PgConnectOptions::from_str(url).map_err(|_| ConnectError::InvalidUrl {
            backend: "postgres",
        })?;
        Ok(Self::from_options(options))
    }

    /// Builds the ledger without connecting; the pool connects on first use.
    pub fn from_options(options: PgConnectOptions) -> Self {
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .min_connections(0)
            // A ping before every statement doubles the round trips of a busy session, so
            // only a connection that sat idle is pinged: after an outage it is found dead
            // here and replaced, instead of failing the first call after recovery.
            .test_before_acquire(false)
            .before_acquire(|conn, meta| {
                Box::pin(async move {
                    if meta.idle_for >= IDLE_BEFORE_PING {
                        sqlx::Connection::ping(conn).await?;
                    }
                    Ok(true)
                })
            })
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_lazy_with(options.application_name("care-mcp"));
        Self {
            pool,
            migrated: OnceCell::new(),
        }
    }

    /// The pool, once migrations are applied.
    async fn ready(&self) -> Result<&PgPool, LedgerError> {
        self.migrated
            .get_or_try_init(|| async { MIGRATOR.run(&self.pool).await.map_err(migrate) })
            .await?;
        Ok(&self.pool)
    }

    async fn approval_exists(&self, id: &str) -> Result<bool, LedgerError> {
        let n: i64 = sqlx::query_scalar(sql::APPROVAL_EXISTS)
            .bind(id)
            .fetch_one(self.ready().await?)
            .await
            .map_err(db)?;
        Ok(n > 0)
    }
}

#[async_trait]
impl Ledger for PostgresLedger {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    async fn close(&self) {
        self.pool.close().await;
    }

    async fn ping(&self) -> Result<(), LedgerError> {
        sqlx::query(sql::PING)
            .execute(self.ready().await?)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn create_approval(&self, new: &NewApproval) -> Result<ApprovalRow, LedgerError> {
        let rec: ApprovalRecord = sqlx::query_as(sql::INSERT_APPROVAL)
            .bind(&new.id)
            .bind(&new.action)
            .bind(&new.arguments_json)
            .bind(&new.payload_hash)
            .bind(&new.requested_by_role)
            .bind(&new.requested_by_client)
            .bind(&new.reason)
            .bind(millis(new.created_at))
            .bind(millis(new.expires_at))
            .fetch_one(self.ready().await?)
            .await
            .map_err(db)?;
        rows::approval(rec)
    }

    async fn approval(
        &self,
        id: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<ApprovalRow>, LedgerError> {
        // A plain read first: only a row that has just lapsed needs the write transaction.
        let rec: Option<ApprovalRecord> = sqlx::query_as(sql::SELECT_APPROVAL)
            .bind(id)
            .fetch_optional(self.ready().await?)
            .await
            .map_err(db)?;
        let Some(row) = rec.map(rows::approval).transpose()? else {
            return Ok(None);
        };
        if !rules::lapsed(&row, now) {
            return Ok(Some(row));
        }
        let mut tx = self.ready().await?.begin().await.map_err(db)?;
        sqlx::query(sql::EXPIRE_ONE)
            .bind(id)
            .bind(millis(now))
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let rec: Option<ApprovalRecord> = sqlx::query_as(sql::SELECT_APPROVAL)
            .bind(id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        rec.map(rows::approval).transpose()
    }

    async fn list_approvals(
        &self,
        status: Option<ApprovalStatus>,
        limit: u32,
        now: DateTime<Utc>,
    ) -> Result<Vec<ApprovalRow>, LedgerError> {
        let mut tx = self.ready().await?.begin().await.map_err(db)?;
        sqlx::query(sql::EXPIRE_ALL)
            .bind(millis(now))
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let recs: Vec<ApprovalRecord> = sqlx::query_as(sql::LIST_APPROVALS)
            .bind(status.map(ApprovalStatus::as_str))
            .bind(rows::limit(limit))
            .fetch_all(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        rows::approvals(recs)
    }

    async fn set_card_event(&self, id: &str, event_id: &str) -> Result<(), LedgerError> {
        let done = sqlx::query(sql::SET_CARD_EVENT)
            .bind(id)
            .bind(event_id)
            .execute(self.ready().await?)
            .await
            .map_err(db)?;
        if done.rows_affected() == 0 {
            return Err(LedgerError::NotFound);
        }
        Ok(())
    }

    async fn approval_id_by_card_event(
        &self,
        event_id: &str,
    ) -> Result<Option<String>, LedgerError> {
        let id: Option<(String,)> = sqlx::query_as(sql::APPROVAL_BY_CARD_EVENT)
            .bind(event_id)
            .fetch_optional(self.ready().await?)
            .await
            .map_err(db)?;
        Ok(id.map(|(id,)| id))
    }

    async fn discard_pending(&self, id: &str) -> Result<(), LedgerError> {
        let done = sqlx::query(sql::DISCARD_PENDING)
            .bind(id)
            .execute(self.ready().await?)
            .await
            .map_err(db)?;
        if done.rows_affected() > 0 {
            Ok(())
        } else if self.approval_exists(id).await? {
            Err(LedgerError::Conflict(
                "approval is no longer pending".to_owned(),
            ))
        } else {
            Err(LedgerError::NotFound)
        }
    }

    async fn record_decision(
        &self,
        decision: &DecisionRow,
        threshold: u32,
        now: DateTime<Utc>,
    ) -> Result<ApprovalRow, DecideError> {
        let id = decision.approval_id.as_str();
        let mut tx = self.ready().await?.begin().await.map_err(db)?;
        // The row lock serialises concurrent deciders of one approval.
        let rec: Option<ApprovalRecord> = sqlx::query_as(sql::SELECT_APPROVAL_FOR_UPDATE)
            .bind(id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?;
        let row = rows::approval(rec.ok_or(DecideError::NotFound)?)?;
        if let Some(refusal) = rules::decide_refusal(&row, now) {
            if rules::lapsed(&row, now) {
                sqlx::query(sql::EXPIRE_ONE)
                    .bind(id)
                    .bind(millis(now))
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
                tx.commit().await.map_err(db)?;
            }
            return Err(refusal);
        }
        sqlx::query(sql::UPSERT_DECISION)
            .bind(id)
            .bind(&decision.approver)
            .bind(decision.decision.as_str())
            .bind(&decision.evidence)
            .bind(millis(decision.decided_at))
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let (approvals, rejections): (i64, i64) = sqlx::query_as(sql::COUNT_DECISIONS)
            .bind(id)
            .fetch_one(&mut *tx)
            .await
            .map_err(db)?;
        let next = rules::status_after_decision(
            row.status,
            decision.decision,
            rows::count(approvals),
            rows::count(rejections),
            threshold,
        );
        let row = match next {
            Some(status) => {
                let rec: ApprovalRecord = sqlx::query_as(sql::SET_DECIDED)
                    .bind(id)
                    .bind(status.as_str())
                    .bind(millis(now))
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(db)?;
                rows::approval(rec)?
            }
            None => row,
        };
        tx.commit().await.map_err(db)?;
        Ok(row)
    }

    async fn decisions(&self, approval_id: &str) -> Result<Vec<DecisionRow>, LedgerError> {
        let recs: Vec<DecisionRecord> = sqlx::query_as(sql::SELECT_DECISIONS)
            .bind(approval_id)
            .fetch_all(self.ready().await?)
            .await
            .map_err(db)?;
        recs.into_iter().map(DecisionRow::try_from).collect()
    }

    async fn consume(
        &self,
        id: &str,
        action: &str,
        payload_hash: &str,
        now: DateTime<Utc>,
    ) -> Result<ApprovalRow, ConsumeError> {
        let pool = self.ready().await?;
        let won: Option<ApprovalRecord> = sqlx::query_as(sql::CONSUME)
            .bind(id)
            .bind(action)
            .bind(payload_hash)
            .bind(millis(now))
            .fetch_optional(pool)
            .await
            .map_err(db)?;
        if let Some(rec) = won {
            return Ok(rows::approval(rec)?);
        }
        // Nothing was updated: read the row to name the reason.
        let rec: Option<ApprovalRecord> = sqlx::query_as(sql::SELECT_APPROVAL)
            .bind(id)
            .fetch_optional(pool)
            .await
            .map_err(db)?;
        let row = rows::approval(rec.ok_or(ConsumeError::NotFound)?)?;
        if rules::lapsed(&row, now) {
            sqlx::query(sql::EXPIRE_ONE)
                .bind(id)
                .bind(millis(now))
                .execute(pool)
                .await
                .map_err(db)?;
        }
        Err(rules::consume_refusal(&row, action, payload_hash, now))
    }

    async fn record_outcome(
        &self,
        id: &str,
        outcome: &WriteOutcome,
        now: DateTime<Utc>,
    ) -> Result<(), LedgerError> {
        let done = sqlx::query(sql::RECORD_OUTCOME)
            .bind(id)
            .bind(rows::outcome_json(outcome)?)
            .bind(millis(now))
            .execute(self.ready().await?)
            .await
            .map_err(db)?;
        if done.rows_affected() > 0 {
            Ok(())
        } else if self.approval_exists(id).await? {
            Err(LedgerError::Conflict(
                "approval is not consumed or already has an outcome".to_owned(),
            ))
        } else {
            Err(LedgerError::NotFound)
        }
    }

    async fn record_kpi(&self, entry: &KpiEntry) -> Result<(), LedgerError> {
        sqlx::query(sql::INSERT_KPI)
            .bind(&entry.metric)
            .bind(entry.value)
            .bind(entry.target)
            .bind(&entry.unit)
            .bind(entry.higher_is_better)
            .bind(millis(entry.recorded_at))
            .bind(&entry.recorded_by_role)
            .execute(self.ready().await?)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn kpi_series(
        &self,
        metric: Option<&str>,
        since: Option<DateTime<Utc>>,
    ) -> Result<Vec<KpiSeries>, LedgerError> {
        let recs: Vec<KpiSeriesRecord> = sqlx::query_as(sql::KPI_SERIES)
            .bind(metric)
            .bind(since.map(millis))
            .fetch_all(self.ready().await?)
            .await
            .map_err(db)?;
        recs.into_iter().map(KpiSeries::try_from).collect()
    }

    async fn record_csat(&self, entry: &CsatEntry) -> Result<(), LedgerError> {
        sqlx::query(sql::INSERT_CSAT)
            .bind(entry.channel.as_str())
            .bind(&entry.ticket_ref)
            .bind(i32::from(entry.score))
            .bind(&entry.comment)
            .bind(millis(entry.recorded_at))
            .bind(&entry.recorded_by_role)
            .execute(self.ready().await?)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn csat_distribution(
        &self,
        channel: Option<Channel>,
        since: Option<DateTime<Utc>>,
    ) -> Result<Vec<CsatDistribution>, LedgerError> {
        let recs: Vec<CsatCountRecord> = sqlx::query_as(sql::CSAT_COUNTS)
            .bind(channel.map(Channel::as_str))
            .bind(since.map(millis))
            .fetch_all(self.ready().await?)
            .await
            .map_err(db)?;
        rows::csat_distributions(recs)
    }

    async fn open_ticket(&self, ticket: &Ticket) -> Result<(), LedgerError> {
        sqlx::query(sql::OPEN_TICKET)
            .bind(ticket.channel.as_str())
            .bind(&ticket.ticket_ref)
            .bind(millis(ticket.opened_at))
            .bind(ticket.first_response_at.map(millis))
            .execute(self.ready().await?)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn mark_first_response(
        &self,
        channel: Channel,
        ticket_ref: &str,
        at: DateTime<Utc>,
    ) -> Result<(), LedgerError> {
        let pool = self.ready().await?;
        let done = sqlx::query(sql::MARK_FIRST_RESPONSE)
            .bind(channel.as_str())
            .bind(ticket_ref)
            .bind(millis(at))
            .execute(pool)
            .await
            .map_err(db)?;
        if done.rows_affected() > 0 {
            return Ok(());
        }
        // Already answered keeps its first time; a ticket never opened is NotFound.
        let n: i64 = sqlx::query_scalar(sql::TICKET_EXISTS)
            .bind(channel.as_str())
            .bind(ticket_ref)
            .fetch_one(pool)
            .await
            .map_err(db)?;
        if n > 0 {
            Ok(())
        } else {
            Err(LedgerError::NotFound)
        }
    }

    async fn awaiting_first_response(
        &self,
        channel: Option<Channel>,
        breach_cutoffs: &[(Channel, DateTime<Utc>)],
    ) -> Result<Vec<AwaitingSummary>, LedgerError> {
        let [app_store, forum, mail] = rows::cutoffs(breach_cutoffs);
        let recs: Vec<AwaitingRecord> = sqlx::query_as(sql::AWAITING)
            .bind(app_store)
            .bind(forum)
            .bind(mail)
            .bind(channel.map(Channel::as_str))
            .fetch_all(self.ready().await?)
            .await
            .map_err(db)?;
        recs.into_iter().map(AwaitingSummary::try_from).collect()
    }

    async fn record_audit(&self, record: &AuditRecord) -> Result<(), LedgerError> {
        sqlx::query(sql::INSERT_AUDIT)
            .bind(millis(record.at))
            .bind(&record.role)
            .bind(&record.client)
            .bind(&record.tool)
            .bind(&record.outcome)
            .bind(&record.error_code)
            .bind(&record.approval_id)
            .bind(rows::duration_us(record.duration_us))
            .bind(&record.args_digest)
            .execute(self.ready().await?)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn recent_audit(&self, limit: u32) -> Result<Vec<AuditRecord>, LedgerError> {
        let recs: Vec<AuditRow> = sqlx::query_as(sql::RECENT_AUDIT)
            .bind(rows::limit(limit))
            .fetch_all(self.ready().await?)
            .await
            .map_err(db)?;
        recs.into_iter().map(AuditRecord::try_from).collect()
    }
}
