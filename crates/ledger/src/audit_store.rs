//! The audit trail's statements for both backends, written once: [`impl_audit_store!`]
//! expands, for a backend type with `ready()` and `begin_write()`, the append of a chained
//! batch (one multi-row insert and the chain's head, in one transaction) and the operators'
//! reads (filtered lists, one row, the chain heads).

/// `impl_audit_store!(Type, sqlx database type)`.
macro_rules! impl_audit_store {
    ($ty:ty, $db:ty) => {
        impl $ty {
            pub(crate) async fn audit_append(
                &self,
                batch: &care_core::ledger::AuditBatch,
            ) -> Result<(), LedgerError> {
                if batch.rows.is_empty() {
                    return Ok(());
                }
                let mut tx = self.begin_write().await?;
                let mut insert = sqlx::QueryBuilder::<$db>::new(sql::INSERT_AUDIT_ROWS);
                insert.push_values(&batch.rows, |mut row, (r, link)| {
                    let output = r.output;
                    row.push_bind(millis(r.at))
                        .push_bind(r.role.as_str())
                        .push_bind(r.client.as_str())
                        .push_bind(r.tool.as_str())
                        .push_bind(r.outcome.as_str())
                        .push_bind(r.error_code.as_deref())
                        .push_bind(r.approval_id.as_deref())
                        .push_bind(rows::duration_us(r.duration_us))
                        .push_bind(r.args_digest.as_str())
                        .push_bind(r.capability.as_str())
                        .push_bind(r.session.as_str())
                        .push_bind(r.decision.as_str())
                        .push_bind(r.rules.join(","))
                        .push_bind(r.denied_by.as_deref())
                        .push_bind(output.map(|o| rows::duration_us(o.bytes)))
                        .push_bind(output.map(|o| rows::duration_us(o.items)))
                        .push_bind(output.map(|o| o.truncated))
                        .push_bind(r.approval_trail.as_deref())
                        .push_bind(link.chain.as_str())
                        .push_bind(link.seq)
                        .push_bind(link.prev_hash.as_str())
                        .push_bind(link.hash.as_str());
                });
                insert.build().execute(&mut *tx).await.map_err(db)?;
                let head = &batch.head;
                sqlx::query(sql::UPSERT_CHAIN_HEAD)
                    .bind(&head.chain)
                    .bind(millis(head.started_at))
                    .bind(head.seq)
                    .bind(&head.hash)
                    .bind(&head.mac)
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
                tx.commit().await.map_err(db)
            }

            pub(crate) async fn audit_recent(
                &self,
                limit: u32,
            ) -> Result<Vec<care_core::ledger::AuditRecord>, LedgerError> {
                let recs: Vec<rows::AuditRow> = sqlx::query_as(sql::RECENT_AUDIT)
                    .bind(rows::limit(limit))
                    .fetch_all(self.ready().await?)
                    .await
                    .map_err(db)?;
                recs.into_iter()
                    .map(|r| care_core::ledger::StoredAudit::try_from(r).map(|s| s.record))
                    .collect()
            }

            pub(crate) async fn audit_query(
                &self,
                q: &care_core::ledger::AuditQuery,
            ) -> Result<Vec<care_core::ledger::StoredAudit>, LedgerError> {
                let statement = if q.oldest_first {
                    sql::AUDIT_QUERY_OLDEST
                } else {
                    sql::AUDIT_QUERY_NEWEST
                };
                let recs: Vec<rows::AuditRow> = sqlx::query_as(statement)
                    .bind(q.since.map(millis))
                    .bind(q.tool.as_deref())
                    .bind(q.outcome.as_deref())
                    .bind(q.session.as_deref())
                    .bind(q.after_id)
                    .bind(rows::limit(q.limit))
                    .fetch_all(self.ready().await?)
                    .await
                    .map_err(db)?;
                recs.into_iter()
                    .map(care_core::ledger::StoredAudit::try_from)
                    .collect()
            }

            pub(crate) async fn audit_by_id(
                &self,
                id: i64,
            ) -> Result<Option<care_core::ledger::StoredAudit>, LedgerError> {
                let rec: Option<rows::AuditRow> = sqlx::query_as(sql::AUDIT_ROW)
                    .bind(id)
                    .fetch_optional(self.ready().await?)
                    .await
                    .map_err(db)?;
                rec.map(care_core::ledger::StoredAudit::try_from)
                    .transpose()
            }

            pub(crate) async fn audit_chain_heads(
                &self,
            ) -> Result<Vec<care_core::ledger::ChainHead>, LedgerError> {
                let recs: Vec<rows::ChainHeadRow> = sqlx::query_as(sql::AUDIT_HEADS)
                    .fetch_all(self.ready().await?)
                    .await
                    .map_err(db)?;
                recs.into_iter()
                    .map(care_core::ledger::ChainHead::try_from)
                    .collect()
            }
        }
    };
}

pub(crate) use impl_audit_store;
