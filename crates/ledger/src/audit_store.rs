//! The audit trail's reads for both backends, written once: [`impl_audit_store!`] expands,
//! for a backend type with `ready()`, the operators' reads (filtered lists, one row, the chain
//! heads). Appending a batch differs per backend and lives in `audit_append`.

/// `impl_audit_store!(Type)`.
macro_rules! impl_audit_store {
    ($ty:ty) => {
        impl $ty {
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
