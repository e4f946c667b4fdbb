//! The one path an external write can take: validate, plan, outbound scan, dry-run switch
//! (a dry run may ask the upstream to check the write itself), the tool's own switch, audit
//! (fail closed), confirm the decision on the approval channel, verify-and-consume, apply,
//! record the outcome.
//!
//! A domain write tool supplies `plan` and `apply`. `apply` needs a [`WritePermit`], which only
//! this module can construct, and only after the approval row was consumed for this exact call.

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::approval_channel::CardContent;
use crate::canonical::{self, HashEncoding};
use crate::catalog::{CatalogEntry, ToolKind};
use crate::decision::{self, Rule};
use crate::error::{ErrorCode, ToolError};
use crate::input::{self, Validate};
use crate::ledger::{ApprovalRow, ApprovalStatus, AuditRecord, ConsumeError, WriteOutcome};
use crate::tool::{CallContext, Handled, Services, ToolHandler, catalog_entry, ledger_error};

/// The argument every external write takes besides its own; never part of the payload hash.
pub const APPROVAL_ID_FIELD: &str = "approval_id";

/// What a write would do, computed without touching the outside world.
#[derive(Debug, Clone)]
pub struct WritePlan<P> {
    /// What would be sent, shown to the agent in a dry run. Every agent-written or
    /// third-party text in it is fenced (`fence::fence`): the agent reads it back as data.
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

    /// This tool's own switch besides `CARE_WRITE_ENABLED` (e.g. `CARE_CLUSTER_WRITE`). Off, a
    /// call that would send answers WRITE_DISABLED before any approval is looked up or
    /// consumed; dry runs and approval requests still plan. No second switch by default.
    fn writes_allowed(&self) -> bool {
        true
    }

    /// The upstream's own check of the write without performing it (e.g. Kubernetes'
    /// `dryRun=All`), made in dry runs only; its answer is shown as `upstream_dry_run`, and its
    /// refusal is the dry run's answer. None by default.
    fn preview(
        &self,
        _payload: &Self::Payload,
    ) -> impl Future<Output = Result<Option<Value>, ToolError>> + Send {
        async { Ok(None) }
    }
}

/// A checked plan without its payload: what `approval_request` stores and shows.
#[derive(Debug, Clone)]
pub struct CheckedPlan {
    pub would_send: Value,
    pub card: CardContent,
    /// The checked facts as canonical JSON, as approvals store them.
    pub checked_facts_json: String,
    /// The RFC 8785 payload hash.
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

/// A plan that passed every check, with the hash and facts an approval must match.
struct Checked<P> {
    plan: WritePlan<P>,
    /// The RFC 8785 payload hash (what new approvals are bound to).
    hash: String,
    /// The checked facts as canonical JSON, as stored on approvals.
    facts_json: String,
}

fn consume_error(e: ConsumeError) -> ToolError {
    match e {
        ConsumeError::NotFound => ToolError::new(ErrorCode::NotFound),
        ConsumeError::Pending => ToolError::new(ErrorCode::ApprovalRequired),
        ConsumeError::Rejected => ToolError::new(ErrorCode::ApprovalRejected),
        ConsumeError::Expired => ToolError::new(ErrorCode::ApprovalExpired),
        ConsumeError::Consumed => ToolError::new(ErrorCode::ApprovalConsumed),
        ConsumeError::Mismatch => ToolError::new(ErrorCode::ApprovalMismatch),
        ConsumeError::Ledger(l) => ledger_error(l),
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
    ) -> Result<Checked<T::Payload>, ToolError> {
        let args = input::parse::<T::Args>(arguments)?;
        // JCS numbers are doubles: an integer beyond 2^53 would share its hash with another.
        if let Some((field, _)) = arguments
            .iter()
            .find(|(_, v)| canonical::check_exact(v).is_err())
        {
            return Err(ToolError::invalid(field.clone()));
        }
        let plan = self.tool.plan(ctx, args).await?;
        if let Err(finding) = self
            .services
            .scanner
            .scan_all(plan.outbound_text.iter().map(String::as_str))
        {
            decision::refused(format!("outbound_scan:{}", finding.label()));
            return Err(ToolError::new(ErrorCode::OutboundBlocked).with_detail(finding.label()));
        }
        decision::passed(Rule::OutboundScan);
        let facts_json = canonical::encode_string(&Value::Object(plan.checked_facts.clone()));
        Ok(Checked {
            plan,
            hash: canonical::payload_hash(T::NAME, arguments),
            facts_json,
        })
    }

    async fn run(&self, ctx: &CallContext, mut arguments: Map<String, Value>) -> Handled {
        let approval_id = match arguments.remove(APPROVAL_ID_FIELD) {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) if input::check_id(APPROVAL_ID_FIELD, &id, 64).is_ok() => {
                Some(id)
            }
            Some(_) => return Handled::of(Err(ToolError::invalid(APPROVAL_ID_FIELD))),
        };
        let reply = |result, dry_run| Handled {
            result,
            dry_run,
            approval_id: approval_id.clone(),
            approval_trail: None,
        };

        let checked = match self.plan_checked(ctx, &arguments).await {
            Ok(c) => c,
            Err(e) => return reply(Err(e), !self.services.config.write_enabled),
        };

        if !self.services.config.write_enabled {
            return reply(
                self.dry_run(ctx, checked, &arguments, approval_id.as_deref())
                    .await,
                true,
            );
        }
        if !self.tool.writes_allowed() {
            return reply(Err(ToolError::new(ErrorCode::WriteDisabled)), false);
        }
        decision::passed(Rule::WriteSwitch);

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
        let (result, trail) = self.send(ctx, checked, &arguments, id, digest).await;
        let mut handled = reply(result, false);
        handled.approval_trail = trail;
        handled
    }

    /// The approval's decisions (who, which, when) and expiry as canonical JSON, for the
    /// audit row of the write that used it. `None` if the decisions cannot be read: the
    /// audit row must not fail the write.
    async fn trail(&self, row: &ApprovalRow) -> Option<String> {
        let decisions = match self.services.ledger.decisions(&row.id).await {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(approval_id = %row.id, error = %e, "approval decisions not read for the audit");
                return None;
            }
        };
        let decisions: Vec<Value> = decisions
            .iter()
            .map(|d| {
                json!({
                    "approver": d.approver,
                    "decision": d.decision.as_str(),
                    "at": d.decided_at.timestamp_millis(),
                })
            })
            .collect();
        Some(canonical::encode_string(&json!({
            "decisions": decisions,
            "expires_at": row.expires_at.timestamp_millis(),
        })))
    }

    /// The row, if it exists and this role requested it: another role's approval does not
    /// exist for this role (as in `approval_status`).
    async fn visible_row(
        &self,
        ctx: &CallContext,
        id: &str,
    ) -> Result<Option<ApprovalRow>, ToolError> {
        Ok(self
            .services
            .ledger
            .approval(id)
            .await
            .map_err(ledger_error)?
            .filter(|row| row.requested_by_role == ctx.role.as_str()))
    }

    /// Confirms a live row on the approval channel (reads its reactions from the relays and
    /// records what the ledger lacked), then reads it again; the flag says whether a channel
    /// confirmed it. Rows that no decision can change any more (rejected, expired, consumed)
    /// are returned as they are.
    async fn confirmed(&self, row: ApprovalRow) -> Result<(ApprovalRow, bool), ToolError> {
        let Some(channel) = &self.services.channel else {
            // In-process only (tests): every role that writes is started with a channel.
            return Ok((row, false));
        };
        if !matches!(
            row.status,
            ApprovalStatus::Pending | ApprovalStatus::Approved
        ) {
            return Ok((row, false));
        }
        channel.confirm(&row).await.map_err(|e| {
            ToolError::new(ErrorCode::UpstreamUnavailable)
                .with_detail(format!("approval not confirmed on the channel: {e}"))
        })?;
        let row = self
            .services
            .ledger
            .approval(&row.id)
            .await
            .map_err(ledger_error)?
            .ok_or_else(|| ToolError::new(ErrorCode::NotFound))?;
        Ok((row, true))
    }

    /// The hash this call has under the encoding `row` was requested with.
    fn hash_for_row(
        &self,
        row: &ApprovalRow,
        checked: &Checked<T::Payload>,
        arguments: &Map<String, Value>,
    ) -> String {
        match row.hash_encoding {
            HashEncoding::Jcs => checked.hash.clone(),
            other => canonical::payload_hash_with(other, T::NAME, arguments),
        }
    }

    async fn dry_run(
        &self,
        ctx: &CallContext,
        checked: Checked<T::Payload>,
        arguments: &Map<String, Value>,
        approval_id: Option<&str>,
    ) -> Result<Value, ToolError> {
        let upstream_dry_run = self.tool.preview(&checked.plan.payload).await?;
        let approval = match approval_id {
            None => Value::Null,
            Some(id) => match self.visible_row(ctx, id).await? {
                None => json!({ "id": id, "status": "not_found", "matches": false }),
                Some(row) => {
                    // The same confirmation a live write makes, so the status is the one a
                    // write would meet; an unreachable channel is reported, not fatal.
                    let (row, confirmed) = match self.confirmed(row.clone()).await {
                        Ok(confirmed) => confirmed,
                        Err(e) if e.code == ErrorCode::UpstreamUnavailable => {
                            tracing::warn!(approval_id = id, detail = ?e.detail, "dry run: channel unreachable");
                            (row, false)
                        }
                        Err(e) => return Err(e),
                    };
                    let matches = row.action == T::NAME
                        && row.payload_hash == self.hash_for_row(&row, &checked, arguments)
                        && row
                            .checked_facts_json
                            .as_deref()
                            .is_none_or(|f| f == checked.facts_json);
                    json!({
                        "id": id,
                        "status": row.status.as_str(),
                        "matches": matches,
                        "confirmed_on_channel": confirmed,
                    })
                }
            },
        };
        let mut answer = json!({
            "dry_run": true,
            "would_send": checked.plan.would_send,
            "payload_hash": checked.hash,
            "approval": approval,
        });
        if let Some(preview) = upstream_dry_run {
            answer["upstream_dry_run"] = preview;
        }
        Ok(answer)
    }

    async fn send(
        &self,
        ctx: &CallContext,
        checked: Checked<T::Payload>,
        arguments: &Map<String, Value>,
        approval_id: &str,
        args_digest: String,
    ) -> (Result<Value, ToolError>, Option<String>) {
        let ledger = &self.services.ledger;
        // Fail closed: the intent is on the audit trail before anything can go out.
        let intent = AuditRecord {
            at: ctx.now,
            role: ctx.role.as_str().to_owned(),
            client: ctx.client.clone(),
            tool: T::NAME.to_owned(),
            outcome: "intent".to_owned(),
            approval_id: Some(approval_id.to_owned()),
            args_digest,
            capability: crate::catalog::capability(T::NAME),
            session: ctx.session.clone(),
            decision: "allow".to_owned(),
            rules: decision::passed_so_far(),
            ..AuditRecord::default()
        };
        // The row's read does not depend on the intent's commit, so the two overlap (one
        // round trip less on the write's path); nothing below runs before both are done.
        let (recorded, row) = tokio::join!(
            self.services.auditor.record_now(&intent),
            self.visible_row(ctx, approval_id)
        );
        if let Err(e) = recorded {
            return (Err(ledger_error(e)), None);
        }
        let row = match row {
            Ok(Some(row)) => row,
            Ok(None) => return (Err(ToolError::new(ErrorCode::NotFound)), None),
            Err(e) => return (Err(e), None),
        };
        // The channel is the truth of a decision: a rejection recorded only on the relay (made
        // while no process was listening) is fetched and recorded here, before the consume.
        let row = match self.confirmed(row).await {
            Ok((row, _)) => row,
            Err(e) => return (Err(e), None),
        };
        let trail = self.trail(&row).await;
        let hash = self.hash_for_row(&row, &checked, arguments);
        if let Err(e) = ledger
            .consume(approval_id, T::NAME, &hash, &checked.facts_json)
            .await
        {
            return (Err(consume_error(e)), trail);
        }
        decision::passed(Rule::Approval);

        let permit = WritePermit { approval_id };
        let applied = self.tool.apply(permit, checked.plan.payload).await;
        let outcome = match &applied {
            Ok(_) => WriteOutcome::Sent,
            Err(e) => WriteOutcome::Failed {
                code: e.code.as_str().to_owned(),
            },
        };
        if let Err(err) = ledger.record_outcome(approval_id, &outcome).await {
            tracing::error!(approval_id, error = %err, "write outcome not recorded");
        }
        let result = match applied {
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
        };
        (result, trail)
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
    async fn call(&self, ctx: &CallContext, arguments: Map<String, Value>) -> Handled {
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
        let checked = self.plan_checked(ctx, arguments).await?;
        Ok(CheckedPlan {
            would_send: checked.plan.would_send,
            card: checked.plan.card,
            checked_facts_json: checked.facts_json,
            payload_hash: checked.hash,
        })
    }
}
