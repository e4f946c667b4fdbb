//! `approval_request`, `approval_status`, `approval_list`: the agent's side of the approval
//! ledger. Deciding is not a tool: it belongs to approvers (see `approvals`).

use std::sync::Arc;

use chrono::Duration;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::approval_channel::ApprovalCard;
use crate::canonical::{self, HashEncoding};
use crate::config::{DEFAULT_APPROVAL_TTL_MINUTES, MAX_APPROVAL_TTL_MINUTES};
use crate::error::{ErrorCode, ToolError};
use crate::fence::fence;
use crate::input::{self, Validate};
use crate::ledger::{ApprovalRow, ApprovalStatus, NewApproval};
use crate::pipeline::WritePlanner;
use crate::tool::{CallContext, LedgerWriteTool, ReadTool, Services, ledger_error};

/// Longest reason an agent may give for a request.
pub const MAX_REASON_CHARS: usize = 500;

pub struct ApprovalRequest {
    pub services: Arc<Services>,
    /// The external writes of this process (the role's column holds at most one).
    pub planners: Vec<Arc<dyn WritePlanner>>,
}

impl std::fmt::Debug for ApprovalRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalRequest").finish_non_exhaustive()
    }
}

/// Asks humans to approve one external write with exactly these arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRequestArgs {
    /// The external-write tool of this role, e.g. `asc_review_reply`.
    #[schemars(length(min = 1, max = 64))]
    pub action: String,
    /// Exactly the arguments the tool will be called with, without `approval_id`.
    pub arguments: Map<String, Value>,
    /// Lifetime in minutes, 1..=10080; default 1440.
    #[schemars(range(min = 1, max = 10080))]
    pub ttl_minutes: Option<u32>,
    /// Why the write is needed, shown to approvers (at most 500 characters).
    #[schemars(length(min = 1, max = 500))]
    pub reason: Option<String>,
}

impl Validate for ApprovalRequestArgs {
    fn validate(&self) -> Result<(), ToolError> {
        input::check_name("action", &self.action, 64)?;
        if let Some(ttl) = self.ttl_minutes
            && !(1..=MAX_APPROVAL_TTL_MINUTES).contains(&ttl)
        {
            return Err(ToolError::invalid("ttl_minutes"));
        }
        input::check_opt_text("reason", self.reason.as_deref(), MAX_REASON_CHARS)
    }
}

/// A new, unguessable approval id.
fn new_approval_id() -> String {
    format!("apr_{}", uuid::Uuid::new_v4().simple())
}

impl LedgerWriteTool for ApprovalRequest {
    type Args = ApprovalRequestArgs;
    const NAME: &'static str = "approval_request";
    const DESCRIPTION: &'static str = "Ask human approvers to allow one external write of this role with exactly these arguments. Returns an approval id to poll with approval_status and pass to the write tool.";

    async fn run(&self, ctx: &CallContext, args: ApprovalRequestArgs) -> Result<Value, ToolError> {
        let planner = self
            .planners
            .iter()
            .find(|p| p.entry().name == args.action && p.entry().held_by(ctx.role))
            .ok_or_else(|| ToolError::invalid("action"))?;
        let plan = planner.check(ctx, &args.arguments).await.map_err(|mut e| {
            // The inner tool names its own fields; say where they sit in this call.
            if let Some(field) = e.field.as_deref().filter(|f| *f != "arguments") {
                e.field = Some(format!("arguments.{field}"));
            }
            e
        })?;
        let services = &self.services;
        if !services.policy.has_approvers() {
            return Err(ToolError::new(ErrorCode::ApprovalRequired)
                .with_detail("no approvers configured (CARE_APPROVERS)"));
        }
        let ledger = &services.ledger;
        let ttl = args.ttl_minutes.unwrap_or(DEFAULT_APPROVAL_TTL_MINUTES);
        // The ledger's clock, not this process's, dates the approval and its expiry.
        let created_at = ledger.clock().await.map_err(ledger_error)?;
        let expires_at = created_at + Duration::minutes(i64::from(ttl));
        let id = new_approval_id();
        // The card is signed first so the row names it before anyone can react to it.
        let signed = match &services.channel {
            None => None,
            Some(channel) => {
                let card = ApprovalCard {
                    approval_id: id.clone(),
                    action: args.action.clone(),
                    content: plan.card.clone(),
                    reason: args.reason.clone(),
                    payload_hash: plan.payload_hash.clone(),
                    requested_by_role: ctx.role.as_str().to_owned(),
                    created_at,
                    expires_at,
                };
                let signed = channel
                    .sign_card(&card)
                    .map_err(|e| ToolError::new(ErrorCode::Internal).with_detail(e.to_string()))?;
                Some((Arc::clone(channel), signed))
            }
        };
        let new = NewApproval {
            id,
            action: args.action,
            arguments_json: canonical::encode_string(&Value::Object(args.arguments)),
            payload_hash: plan.payload_hash,
            hash_encoding: HashEncoding::Jcs,
            requested_by_role: ctx.role.as_str().to_owned(),
            requested_by_client: ctx.client.clone(),
            reason: args.reason,
            created_at,
            expires_at,
            policy: services.policy.for_new_rows(),
            checked_facts_json: plan.checked_facts_json,
            card_event_id: signed.as_ref().map(|(_, s)| s.event_id.clone()),
            card_text: signed.as_ref().map(|(_, s)| s.text.clone()),
        };
        let row = ledger.create_approval(&new).await.map_err(ledger_error)?;
        if let Some((channel, signed)) = &signed
            && let Err(e) = channel.publish_card(signed).await
        {
            // Nobody saw it: leave no row that could be approved unseen.
            if let Err(e) = ledger.discard_pending(&row.id).await {
                tracing::error!(approval_id = %row.id, error = %e, "unshown approval not discarded");
            }
            return Err(ToolError::new(ErrorCode::UpstreamUnavailable).with_detail(e.to_string()));
        }
        Ok(json!({
            "approval_id": row.id,
            "status": row.status.as_str(),
            "payload_hash": row.payload_hash,
            "expires_at": row.expires_at.to_rfc3339(),
            "card_event_id": row.card_event_id,
            "summary": fence(&plan.card.one_line()),
        }))
    }
}

#[derive(Debug)]
pub struct ApprovalStatusTool(pub Arc<Services>);

/// Reads the state of an approval this role requested.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalStatusArgs {
    #[schemars(length(min = 1, max = 64))]
    pub approval_id: String,
}

impl Validate for ApprovalStatusArgs {
    fn validate(&self) -> Result<(), ToolError> {
        input::check_id("approval_id", &self.approval_id, 64)
    }
}

fn status_json(row: &ApprovalRow) -> Value {
    let time = |t: Option<chrono::DateTime<chrono::Utc>>| t.map(|t| t.to_rfc3339());
    json!({
        "approval_id": row.id,
        "action": row.action,
        "status": row.status.as_str(),
        "payload_hash": row.payload_hash,
        "created_at": row.created_at.to_rfc3339(),
        "expires_at": row.expires_at.to_rfc3339(),
        "decided_at": time(row.decided_at),
        "consumed_at": time(row.consumed_at),
        "outcome": row.outcome,
    })
}

impl ReadTool for ApprovalStatusTool {
    type Args = ApprovalStatusArgs;
    const NAME: &'static str = "approval_status";
    const DESCRIPTION: &'static str = "Read the state of an approval this role requested: pending, approved, rejected, expired or consumed (and the write's outcome once consumed).";

    async fn run(&self, ctx: &CallContext, args: ApprovalStatusArgs) -> Result<Value, ToolError> {
        let read = || async {
            self.0
                .ledger
                .approval(&args.approval_id)
                .await
                .map_err(ledger_error)
                .map(|row| {
                    // Another role's approval does not exist for this role.
                    row.filter(|row| row.requested_by_role == ctx.role.as_str())
                })
        };
        let mut row = read()
            .await?
            .ok_or_else(|| ToolError::new(ErrorCode::NotFound))?;
        if let (Some(channel), ApprovalStatus::Pending | ApprovalStatus::Approved) =
            (&self.0.channel, row.status)
        {
            // Normally a ledger read; when the live subscription cannot vouch for the row,
            // its reactions are fetched on read.
            match channel.refresh(&row).await {
                Ok(()) => {
                    row = read()
                        .await?
                        .ok_or_else(|| ToolError::new(ErrorCode::NotFound))?;
                }
                Err(e) => {
                    tracing::warn!(approval_id = %row.id, error = %e, "approval channel refresh failed")
                }
            }
        }
        Ok(status_json(&row))
    }
}

#[derive(Debug)]
pub struct ApprovalList(pub Arc<Services>);

/// Lists recent approvals for oversight.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalListArgs {
    pub status: Option<ApprovalStatus>,
    /// 1..=100, default 20.
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
}

impl Validate for ApprovalListArgs {
    fn validate(&self) -> Result<(), ToolError> {
        if let Some(limit) = self.limit
            && !(1..=100).contains(&limit)
        {
            return Err(ToolError::invalid("limit"));
        }
        Ok(())
    }
}

/// Agent-written strings are fenced like third-party text: an overseeing agent reads them as
/// data, not as instructions.
fn fence_strings(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(fence(s)),
        Value::Array(items) => Value::Array(items.iter().map(fence_strings).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), fence_strings(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

impl ReadTool for ApprovalList {
    type Args = ApprovalListArgs;
    const NAME: &'static str = "approval_list";
    const DESCRIPTION: &'static str = "List recent approvals (newest first), optionally by status, with their requested arguments fenced as data.";

    async fn run(&self, _ctx: &CallContext, args: ApprovalListArgs) -> Result<Value, ToolError> {
        let rows = self
            .0
            .ledger
            .list_approvals(args.status, args.limit.unwrap_or(20))
            .await
            .map_err(ledger_error)?;
        let items: Vec<Value> = rows
            .iter()
            .map(|row| {
                let mut v = status_json(row);
                let arguments: Value =
                    serde_json::from_str(&row.arguments_json).unwrap_or(Value::Null);
                if let Value::Object(map) = &mut v {
                    map.insert("requested_by_role".into(), json!(row.requested_by_role));
                    map.insert("arguments".into(), fence_strings(&arguments));
                    map.insert("reason".into(), json!(row.reason.as_deref().map(fence)));
                }
                v
            })
            .collect();
        Ok(json!({ "approvals": items }))
    }
}
