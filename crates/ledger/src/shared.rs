//! The `Ledger` implementation both backends share, written once: [`impl_ledger!`] expands it
//! for a backend type that provides `ready()` (the migrated pool), `begin_write()` (a
//! transaction that serialises deciders: Postgres `BEGIN` plus a row lock, SQLite `BEGIN
//! IMMEDIATE`), `shutdown()`, the hot reads `read_approval()` and `read_kpi_series()` (SQLite answers them on
//! the calling thread), `read_approvals_unless_lapsed()` (the listing without the write
//! transaction unless a live row has lapsed), the per-call writes `write_consume()` and `write_outcome()` (SQLite's
//! on its writer thread) and a [`crate::sql::Dialect`]. What differs per backend (connection options,
//! the migration lock, the clock expression) stays in `postgres.rs` / `sqlite.rs` / `sql.rs`.

/// `impl_ledger!(Type, "backend name", DIALECT)`.
macro_rules! impl_ledger {
    ($ty:ty, $backend:literal, $dialect:expr) => {
        impl $ty {
            async fn approval_exists(&self, id: &str) -> Result<bool, LedgerError> {
                let n: i64 = sqlx::query_scalar(sql::APPROVAL_EXISTS)
                    .bind(id)
                    .fetch_one(self.ready().await?)
                    .await
                    .map_err(db)?;
                Ok(n > 0)
            }
        }

        #[async_trait::async_trait]
        impl Ledger for $ty {
            fn backend(&self) -> &'static str {
                $backend
            }

            async fn close(&self) {
                self.shutdown().await;
            }

            fn client_store(&self) -> Option<&dyn care_core::clients::ClientStore> {
                Some(self)
            }

            async fn ping(&self) -> Result<(), LedgerError> {
                sqlx::query(sql::PING)
                    .execute(self.ready().await?)
                    .await
                    .map_err(db)?;
                Ok(())
            }

            async fn clock(&self) -> Result<DateTime<Utc>, LedgerError> {
                let ms: i64 = sqlx::query_scalar($dialect.clock)
                    .fetch_one(self.ready().await?)
                    .await
                    .map_err(db)?;
                rows::time(ms)
            }

            async fn create_approval(&self, new: &NewApproval) -> Result<ApprovalRow, LedgerError> {
                let rec: ApprovalRecord = sqlx::query_as($dialect.insert_approval)
                    .bind(&new.id)
                    .bind(&new.action)
                    .bind(&new.arguments_json)
                    .bind(&new.payload_hash)
                    .bind(new.hash_encoding.as_str())
                    .bind(&new.requested_by_role)
                    .bind(&new.requested_by_client)
                    .bind(&new.reason)
                    .bind(millis(new.created_at))
                    .bind(millis(new.expires_at))
                    .bind(&new.card_event_id)
                    .bind(&new.card_text)
                    .bind(new.policy.approvers_json())
                    .bind(rows::threshold(&new.policy))
                    .bind(&new.checked_facts_json)
                    .fetch_one(self.ready().await?)
                    .await
                    .map_err(db)?;
                rows::approval(rec)
            }

            async fn approval(&self, id: &str) -> Result<Option<ApprovalRow>, LedgerError> {
                // A plain read first: only a row that has just lapsed needs the write.
                let rec = self.read_approval(id).await?;
                let Some((row, now)) = rec.map(rows::approval_at).transpose()? else {
                    return Ok(None);
                };
                if !rules::lapsed(&row, now) {
                    return Ok(Some(row));
                }
                let mut tx = self.begin_write().await?;
                sqlx::query($dialect.expire_one)
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
                let rec: Option<ApprovalRecord> = sqlx::query_as($dialect.select_approval)
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
            ) -> Result<Vec<ApprovalRow>, LedgerError> {
                // A plain read first, as for one approval: the write only when a live row
                // has lapsed, whether the read saw it (`None`) or it lapsed as it was listed.
                let status_text = status.map(ApprovalStatus::as_str);
                if let Some(recs) = self
                    .read_approvals_unless_lapsed(status_text, rows::limit(limit))
                    .await?
                {
                    let listed = recs
                        .into_iter()
                        .map(rows::approval_at)
                        .collect::<Result<Vec<_>, _>>()?;
                    if !listed.iter().any(|(row, now)| rules::lapsed(row, *now)) {
                        return Ok(listed.into_iter().map(|(row, _)| row).collect());
                    }
                }
                let mut tx = self.begin_write().await?;
                sqlx::query($dialect.expire_all)
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
                let recs: Vec<ApprovalRecord> = sqlx::query_as($dialect.list_approvals)
                    .bind(status_text)
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
                decision: &NewDecision,
                legacy: &RowPolicy,
            ) -> Result<ApprovalRow, DecideError> {
                let id = decision.approval_id.as_str();
                let mut tx = self.begin_write().await?;
                let rec: Option<ApprovalRecord> =
                    sqlx::query_as($dialect.select_approval_for_decision)
                        .bind(id)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(db)?;
                let (row, now) = rows::approval_at(rec.ok_or(DecideError::NotFound)?)?;
                if let Some(refusal) = rules::decide_refusal(&row, now) {
                    if rules::lapsed(&row, now) {
                        sqlx::query($dialect.expire_one)
                            .bind(id)
                            .execute(&mut *tx)
                            .await
                            .map_err(db)?;
                        tx.commit().await.map_err(db)?;
                    }
                    return Err(refusal);
                }
                // The row's own policy, fixed when it was requested: the same answer in every
                // process whatever its configuration.
                let policy = row.policy.as_ref().unwrap_or(legacy);
                if !policy.lists(&decision.approver) {
                    return Err(DecideError::NotAnApprover);
                }
                sqlx::query($dialect.upsert_decision)
                    .bind(id)
                    .bind(decision.approver.hex())
                    .bind(decision.decision.as_str())
                    .bind(&decision.evidence)
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
                    policy.threshold(),
                );
                let row = match next {
                    Some(status) => {
                        let rec: ApprovalRecord = sqlx::query_as($dialect.set_decided)
                            .bind(id)
                            .bind(status.as_str())
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
                checked_facts_json: &str,
            ) -> Result<ApprovalRow, ConsumeError> {
                let won = self
                    .write_consume(id, action, payload_hash, checked_facts_json)
                    .await?;
                if let Some(rec) = won {
                    return Ok(rows::approval(rec)?);
                }
                // Nothing was updated: read the row to name the reason.
                let rec = self.read_approval(id).await?;
                let (row, now) = rows::approval_at(rec.ok_or(ConsumeError::NotFound)?)?;
                if rules::lapsed(&row, now) {
                    sqlx::query($dialect.expire_one)
                        .bind(id)
                        .execute(self.ready().await?)
                        .await
                        .map_err(db)?;
                }
                Err(rules::consume_refusal(
                    &row,
                    action,
                    payload_hash,
                    checked_facts_json,
                    now,
                ))
            }

            async fn record_outcome(
                &self,
                id: &str,
                outcome: &WriteOutcome,
            ) -> Result<(), LedgerError> {
                let changed = self.write_outcome(id, rows::outcome_json(outcome)?).await?;
                if changed > 0 {
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
                let recs = self.read_kpi_series(metric, since.map(millis)).await?;
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
                channel: Option<SupportChannel>,
                since: Option<DateTime<Utc>>,
            ) -> Result<Vec<CsatDistribution>, LedgerError> {
                let recs: Vec<CsatCountRecord> = sqlx::query_as(sql::CSAT_COUNTS)
                    .bind(channel.map(SupportChannel::as_str))
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
                channel: SupportChannel,
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
                channel: Option<SupportChannel>,
                breach_cutoffs: &[(SupportChannel, DateTime<Utc>)],
            ) -> Result<Vec<AwaitingSummary>, LedgerError> {
                let [app_store, forum, mail] = rows::cutoffs(breach_cutoffs);
                let recs: Vec<AwaitingRecord> = sqlx::query_as(sql::AWAITING)
                    .bind(app_store)
                    .bind(forum)
                    .bind(mail)
                    .bind(channel.map(SupportChannel::as_str))
                    .fetch_all(self.ready().await?)
                    .await
                    .map_err(db)?;
                recs.into_iter().map(AwaitingSummary::try_from).collect()
            }

            async fn append_audit(
                &self,
                batch: &care_core::ledger::AuditBatch,
            ) -> Result<(), LedgerError> {
                self.audit_append(batch).await
            }

            async fn recent_audit(&self, limit: u32) -> Result<Vec<AuditRecord>, LedgerError> {
                self.audit_recent(limit).await
            }

            async fn audit_rows(
                &self,
                query: &care_core::ledger::AuditQuery,
            ) -> Result<Vec<care_core::ledger::StoredAudit>, LedgerError> {
                self.audit_query(query).await
            }

            async fn audit_row(
                &self,
                id: i64,
            ) -> Result<Option<care_core::ledger::StoredAudit>, LedgerError> {
                self.audit_by_id(id).await
            }

            async fn audit_heads(&self) -> Result<Vec<care_core::ledger::ChainHead>, LedgerError> {
                self.audit_chain_heads().await
            }
        }
    };
}

pub(crate) use impl_ledger;
