//! The gate every `tools/call` passes: lookup in the role's registry (a tool outside the role
//! answers exactly like a name that exists nowhere), panic containment, the envelope, and the
//! audit record of every call, denials included.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use chrono::Utc;
use futures::FutureExt;
use serde_json::{Map, Value};

use crate::catalog;
use crate::envelope;
use crate::error::{ErrorCode, ToolError};
use crate::ledger::AuditRecord;
use crate::tool::{CallContext, Registry, Reply, Services};

/// What the MCP layer sends back for one call.
#[derive(Debug, Clone, PartialEq)]
pub enum GateAnswer {
    /// The name is not a tool of this role: a protocol error, identical for every such name.
    UnknownTool,
    /// A tool result: the envelope, and whether it is an error.
    Result { envelope: Value, is_error: bool },
}

/// Serves one role's registry.
pub struct Gate {
    registry: Registry,
    services: Arc<Services>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("registry", &self.registry)
            .finish_non_exhaustive()
    }
}

impl Gate {
    pub fn new(registry: Registry, services: Arc<Services>) -> Self {
        Gate { registry, services }
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    pub fn services(&self) -> &Arc<Services> {
        &self.services
    }

    /// Runs one call end to end. Never panics, never leaks a panic payload.
    pub async fn call(&self, name: &str, arguments: Option<Map<String, Value>>) -> GateAnswer {
        let started = Instant::now();
        let ctx = CallContext {
            role: self.registry.role(),
            client: self.services.config.client_id.clone(),
            now: Utc::now(),
        };
        let arguments = arguments.unwrap_or_default();
        let args_value = Value::Object(arguments.clone());

        let Some(handler) = self.registry.get(name) else {
            // The audit names catalog tools (an attempt on another role's tool is worth
            // seeing) but never echoes a free-form name.
            let tool = catalog::lookup(name).map_or("unknown", |e| e.name);
            let digest = self.services.auditor.digest(name, &args_value);
            self.audit(
                &ctx,
                tool,
                "error",
                Some(ErrorCode::UnknownTool),
                None,
                started,
                digest,
            )
            .await;
            return GateAnswer::UnknownTool;
        };
        let tool = handler.entry().name;
        let digest = self.services.auditor.digest(tool, &args_value);

        let reply = match AssertUnwindSafe(handler.call(&ctx, arguments))
            .catch_unwind()
            .await
        {
            Ok(reply) => reply,
            Err(payload) => {
                let detail = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "non-string panic payload".to_owned());
                tracing::error!(tool, panic = %detail, "tool handler panicked");
                Reply::of(Err(ToolError::new(ErrorCode::Internal)))
            }
        };

        let (envelope, is_error, outcome, code) = match &reply.result {
            Ok(data) => {
                let outcome = if reply.dry_run { "dry_run" } else { "ok" };
                (envelope::success(data.clone()), false, outcome, None)
            }
            Err(err) => {
                if let Some(detail) = &err.detail {
                    tracing::warn!(tool, code = err.code.as_str(), detail = %detail, "tool call failed");
                }
                (envelope::failure(err), true, "error", Some(err.code))
            }
        };
        self.audit(
            &ctx,
            tool,
            outcome,
            code,
            reply.approval_id.clone(),
            started,
            digest,
        )
        .await;
        GateAnswer::Result { envelope, is_error }
    }

    #[allow(clippy::too_many_arguments)]
    async fn audit(
        &self,
        ctx: &CallContext,
        tool: &str,
        outcome: &str,
        code: Option<ErrorCode>,
        approval_id: Option<String>,
        started: Instant,
        args_digest: String,
    ) {
        let record = AuditRecord {
            at: ctx.now,
            role: ctx.role.as_str().to_owned(),
            client: ctx.client.clone(),
            tool: tool.to_owned(),
            outcome: outcome.to_owned(),
            error_code: code.map(|c| c.as_str().to_owned()),
            approval_id: approval_id
                .filter(|id| id.len() <= 64 && id.bytes().all(|b| b.is_ascii_graphic())),
            duration_us: u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
            args_digest,
        };
        // Queued: the answer does not wait for the INSERT; failures are logged by the auditor.
        self.services.auditor.record(&record).await;
    }
}
