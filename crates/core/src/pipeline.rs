//! The one path an external write can take: validate, plan, outbound scan, dry-run switch,
//! audit (fail closed), verify-and-consume, apply, record the outcome.
//!
//! A domain write tool supplies `plan` and `apply`. `apply` needs a [`WritePermit`], which only
//! this module can construct, and only after the approval row was consumed for this exact call.

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::canonical::payload_hash;
use crate::catalog::{CatalogEntry, ToolKind};
use crate::channel::CardContent;
use crate::error::{ErrorCode, ToolError};
use crate::input::{self, Validate};
use crate::ledger::{AuditRecord, ConsumeError, WriteOutcome};
use crate::tool::{CallContext, Reply, Services, ToolHandler, catalog_entry, ledger_error};

/// The argument every external write takes besides its own; never part of the payload hash.
pub const APPROVAL_ID_FIELD: &str = "approval_id";

/// What a write would do, computed without touching the outside world.
#[derive(Debug, Clone)]
pub struct WritePlan<P> {
    /// What would be sent, shown to the agent in a dry run.
    pub would_send: Value,
    /// Every text that would leave the process: all of it passes the outbound scan.
    pub outbound_text: Vec<String>,
    /// What the approval card shows: title, target, facts and the text to send.
    pub card: CardContent,
    /// Facts about the target that the write depends on and that the card shows (e.g. whether a
    /// reply replaces an existing response). Stored with the approval and compared again right
    /// before consuming: if the target changed since the approver read the card, the approval
    /// does not apply (APPROVAL_MISMATCH).
    pub checked_facts: Map<String, Value>,
    /// What `apply` needs.
    pub payload: P,
}

/// Proof that an approval row was consumed for this call. Only the pipeline makes one.
#[derive(Debug)]
pub struct WritePermit<'a> {
    approval_id: &'a str,
}

impl WritePermit<'_> {
    pub fn approval_id(&self) -> &str {
        self.approval_id
    }
}

/// A tool that writes to the outside world.
pub trait ExternalWriteTool: Send + Sync + 'static {
    /// The tool's own arguments, without `approval_id`.
    type Args: DeserializeOwned + JsonSchema + Validate + Send + Sync;
    type Payload: Send + Sync;
    const NAME: &'static str;
    const DESCRIPTION: &'static str;

    /// Checks everything that can be checked without writing (target exists and is in scope,
    /// locale) and says what would be sent.
    fn plan(
        &self,
        ctx: &CallContext,
        args: Self::Args,
    ) -> impl Future<Output = Result<WritePlan<Self::Payload>, ToolError>> + Send;

    /// Sends it. Called at most once per approval.
    fn apply(
        &self,
        permit: WritePermit<'_>,
        payload: Self::Payload,
    ) -> impl Future<Output = Result<Value, ToolError>> + Send;
}

/// A checked plan without its payload: what `approval_request` stores and shows.
#[derive(Debug, Clone)]
pub struct CheckedPlan {
    pub would_send: Value,
    pub card: CardContent,
    pub checked_facts: Map<String, Value>,
    pub payload_hash: String,
}

/// The planning half of an external write, object-safe, for `approval_request`.
#[async_trait]
pub trait WritePlanner: Send + Sync {
    fn entry(&self) -> &'static CatalogEntry;
    /// Runs the tool's own input rules, its plan and the outbound scan on `arguments`
    /// (which must not contain `approval_id`).
    async fn check(
        &self,
        ctx: &CallContext,
        arguments: &Map<String, Value>,
    ) -> Result<CheckedPlan, ToolError>;
}

/// Adapter: serves an [`ExternalWriteTool`] through the pipeline.
pub struct ExternalWrite<T> {
    tool: T,
    services: Arc<Services>,
}

impl<T> std::fmt::Debug for ExternalWrite<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalWrite").finish_non_exhaustive()
    }
}

impl<T: ExternalWriteTool> ExternalWrite<T> {
    pub fn new(tool: T, services: Arc<Services>) -> Self {
        ExternalWrite { tool, services }
    }

    async fn plan_checked(
        &self,
        ctx: &CallContext,
        arguments: &Map<String, Value>,
    ) -> Result<(WritePlan<T::Payload>, String), ToolError> {
        let args = input::parse::<T::Args>(arguments)?;
        let plan = self.tool.plan(ctx, args).await?;
        if let Err(finding) = self
            .services
            .scanner
            .scan_all(plan.outbound_text.iter().map(String::as_str))
        {
            return Err(ToolError::new(ErrorCode::OutboundBlocked).with_detail(finding.label()));
        }
        Ok((plan, payload_hash(T::NAME, arguments)))
    }

    async fn run(&self, ctx: &CallContext, mut arguments: Map<String, Value>) -> Reply {
        let approval_id = match arguments.remove(APPROVAL_ID_FIELD) {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) if input::check_id(APPROVAL_ID_FIELD, &id, 64).is_ok() => {
                Some(id)
            }
            Some(_) => return Reply::of(Err(ToolError::invalid(APPROVAL_ID_FIELD))),
        };
        let reply = |result, dry_run| Reply {
            result,
            dry_run,
            approval_id: approval_id.clone(),
        };

        let (plan, hash) = match self.plan_checked(ctx, &arguments).await {
            Ok(p) => p,
            Err(e) => return reply(Err(e), !self.services.config.write_enabled),
        };

        if !self.services.config.write_enabled {
            return reply(
                self.dry_run(ctx, plan, &hash, approval_id.as_deref()).await,
                true,
            );
        }

        let Some(id) = approval_id.as_deref() else {
            return reply(Err(ToolError::new(ErrorCode::ApprovalRequired)), false);
        };
        // The same digest the gate records for this call (approval id included), so the
        // intent row and the outcome row of one call pair up in the audit.
        let mut audited = arguments.clone();
        audited.insert(APPROVAL_ID_FIELD.into(), Value::String(id.to_owned()));
        let digest = self
            .services
            .auditor
            .digest(T::NAME, &Value::Object(audited));
        reply(self.send(ctx, plan, &hash, id, digest).await, false)
    }

    async fn dry_run(
        &self,
        ctx: &CallContext,
        plan: WritePlan<T::Payload>,
        hash: &str,
        approval_id: Option<&str>,
    ) -> Result<Value, ToolError> {
        let approval = match approval_id {
            None => Value::Null,
            Some(id) => match self
                .services
                .ledger
                .approval(id, ctx.now)
                .await
                .map_err(ledger_error)?
            {
                None => json!({ "id": id, "status": "not_found", "matches": false }),
                Some(row) => json!({
                    "id": id,
                    "status": row.status.as_str(),
                    "matches": row.action == T::NAME && row.payload_hash == hash,
                }),
            },
        };
        Ok(json!({
            "dry_run": true,
            "would_send": plan.would_send,
            "payload_hash": hash,
            "approval": approval,
        }))
    }

    async fn send(
        &self,
        ctx: &CallContext,
        plan: WritePlan<T::Payload>,
        hash: &str,
        approval_id: &str,
        args_digest: String,
    ) -> Result<Value, ToolError> {
        let ledger = &self.services.ledger;
        // Fail closed: the intent is on the audit trail before anything can go out.
        let intent = AuditRecord {
            at: ctx.now,
            role: ctx.role.as_str().to_owned(),
            client: ctx.client.clone(),
            tool: T::NAME.to_owned(),
            outcome: "intent".to_owned(),
            error_code: None,
            approval_id: Some(approval_id.to_owned()),
            duration_us: 0,
            args_digest,
        };
        self.services
            .auditor
            .record_now(&intent)
            .await
            .map_err(ledger_error)?;

        ledger
            .consume(approval_id, T::NAME, hash, ctx.now)
            .await
            .map_err(|e| match e {
                ConsumeError::NotFound => ToolError::new(ErrorCode::NotFound),
                ConsumeError::Pending => ToolError::new(ErrorCode::ApprovalRequired),
                ConsumeError::Rejected => ToolError::new(ErrorCode::ApprovalRejected),
                ConsumeError::Expired => ToolError::new(ErrorCode::ApprovalExpired),
                ConsumeError::Consumed => ToolError::new(ErrorCode::ApprovalConsumed),
                ConsumeError::Mismatch => ToolError::new(ErrorCode::ApprovalMismatch),
                ConsumeError::Ledger(l) => ledger_error(l),
            })?;

        let permit = WritePermit { approval_id };
        let applied = self.tool.apply(permit, plan.payload).await;
        let outcome = match &applied {
            Ok(_) => WriteOutcome::Sent,
            Err(e) => WriteOutcome::Failed {
                code: e.code.as_str().to_owned(),
            },
        };
        if let Err(err) = ledger
            .record_outcome(approval_id, &outcome, chrono::Utc::now())
            .await
        {
            tracing::error!(approval_id, error = %err, "write outcome not recorded");
        }
        match applied {
            Ok(result) => Ok(json!({
                "dry_run": false,
                "sent": result,
                "payload_hash": hash,
                "approval": { "id": approval_id, "status": "consumed" },
            })),
            Err(e) => {
                // The approval is spent: a retry needs a new approval, never a second send.
                let mut failed = ToolError::new(ErrorCode::WriteFailed);
                failed.cause = Some(e.code);
                failed.detail = e.detail;
                Err(failed)
            }
        }
    }
}

#[async_trait]
impl<T: ExternalWriteTool> ToolHandler for ExternalWrite<T> {
    fn entry(&self) -> &'static CatalogEntry {
        catalog_entry(T::NAME)
    }
    fn implemented_kind(&self) -> ToolKind {
        ToolKind::ExternalWrite
    }
    fn description(&self) -> &'static str {
        T::DESCRIPTION
    }
    fn input_schema(&self) -> Map<String, Value> {
        let mut schema = input::schema_of::<T::Args>();
        if let Some(Value::Object(props)) = schema.get_mut("properties") {
            props.insert(
                APPROVAL_ID_FIELD.into(),
                json!({
                    "type": "string",
                    "maxLength": 64,
                    "description": "Id of an approved approval_request for exactly these arguments (required when writes are enabled)."
                }),
            );
        }
        schema
    }
    async fn call(&self, ctx: &CallContext, arguments: Map<String, Value>) -> Reply {
        self.run(ctx, arguments).await
    }
}

#[async_trait]
impl<T: ExternalWriteTool> WritePlanner for ExternalWrite<T> {
    fn entry(&self) -> &'static CatalogEntry {
        ToolHandler::entry(self)
    }
    async fn check(
        &self,
        ctx: &CallContext,
        arguments: &Map<String, Value>,
    ) -> Result<CheckedPlan, ToolError> {
        if arguments.contains_key(APPROVAL_ID_FIELD) {
            return Err(ToolError::invalid("arguments"));
        }
        let (plan, payload_hash) = self.plan_checked(ctx, arguments).await?;
        Ok(CheckedPlan {
            would_send: plan.would_send,
            card: plan.card,
            checked_facts: plan.checked_facts,
            payload_hash,
        })
    }
}
