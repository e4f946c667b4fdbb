//! The gate every `tools/call` passes: lookup in the role's registry (a tool outside the role
//! answers exactly like a name that exists nowhere), panic containment, the envelope, the
//! audit record of every call (denials included), and an orderly stop: external writes run as
//! tracked tasks that finish and record their outcome before the process exits.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::FutureExt;
use serde_json::{Map, Value};
use tokio_util::task::TaskTracker;

use crate::catalog::{self, ToolKind};
use crate::decision::{self, Rule, TraceResult};
use crate::envelope;
use crate::error::{ErrorCode, ToolError};
use crate::ledger::{AuditRecord, OutputSummary};
use crate::tool::{CallContext, Handled, Registry, Services, ToolHandler};

/// What the MCP layer sends back for one call.
#[derive(Debug, Clone, PartialEq)]
pub enum GateAnswer {
    /// The name is not a tool of this role: a protocol error, identical for every such name.
    UnknownTool,
    /// A tool result: the envelope, its JSON text (serialised once, for the text content and
    /// the audit's size), and whether it is an error.
    Result {
        envelope: Value,
        text: String,
        is_error: bool,
    },
}

/// Serves one role's registry.
pub struct Gate {
    registry: Registry,
    services: Arc<Services>,
    /// External writes in flight. Each runs as its own task, so a write that consumed an
    /// approval finishes (outcome and audit recorded) even when the request that started it
    /// is dropped; [`Gate::drain`] waits for them before the process exits.
    writes: TaskTracker,
    /// Set by [`Gate::close`]: new calls are refused with SERVER_STOPPING.
    closing: AtomicBool,
    /// The session label of calls made through [`Gate::call`]: one per process (stdio).
    session: String,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("registry", &self.registry)
            .finish_non_exhaustive()
    }
}

/// One call's fixed facts, moved into the task that runs it.
struct Call {
    services: Arc<Services>,
    handler: Arc<dyn ToolHandler>,
    ctx: CallContext,
    arguments: Map<String, Value>,
    started: Instant,
    digest: String,
}

/// A new stdio session label: `s-` and 16 random hex digits (made at start: see
/// [`crate::entropy`]).
fn new_session_label() -> String {
    format!("s-{}", hex::encode(crate::entropy::kernel_bytes::<8>()))
}

impl Gate {
    pub fn new(registry: Registry, services: Arc<Services>) -> Self {
        Gate {
            registry,
            services,
            writes: TaskTracker::new(),
            closing: AtomicBool::new(false),
            session: new_session_label(),
        }
    }

    /// The session label of this process's stdio calls.
    pub fn session(&self) -> &str {
        &self.session
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    pub fn services(&self) -> &Arc<Services> {
        &self.services
    }

    /// Stops taking calls: every later call answers SERVER_STOPPING (audited); calls already
    /// running go on.
    pub fn close(&self) {
        self.closing.store(true, Ordering::SeqCst);
        self.writes.close();
    }

    /// Waits until every external write in flight has finished, at most `bound`. Returns
    /// false when some were still running at the bound.
    pub async fn drain(&self, bound: Duration) -> bool {
        self.close();
        tokio::time::timeout(bound, self.writes.wait())
            .await
            .is_ok()
    }

    /// External writes still running.
    pub fn writes_in_flight(&self) -> usize {
        self.writes.len()
    }

    /// Runs one call end to end as the configured client label (stdio). Never panics, never
    /// leaks a panic payload.
    pub async fn call(&self, name: &str, arguments: Option<Map<String, Value>>) -> GateAnswer {
        self.call_as(
            &self.services.config.client_id,
            &self.session,
            name,
            arguments,
        )
        .await
    }

    /// [`Gate::call`] on behalf of `client` (an authenticated HTTP client) in `session`: both
    /// go into the call context and the audit row.
    pub async fn call_as(
        &self,
        client: &str,
        session: &str,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> GateAnswer {
        let started = Instant::now();
        let ctx = CallContext {
            role: self.registry.role(),
            client: client.to_owned(),
            session: session.to_owned(),
            now: (self.services.clock)(),
        };
        let arguments = arguments.unwrap_or_default();

        let Some(handler) = self.registry.get(name) else {
            // The audit names catalog tools (an attempt on another role's tool is worth
            // seeing) but never echoes a free-form name.
            let tool = catalog::lookup(name).map_or("unknown", |e| e.name);
            let digest = self
                .services
                .auditor
                .digest(name, &Value::Object(arguments));
            let mut record = audit_record(&ctx, tool, started, digest);
            record.outcome = "error".to_owned();
            record.error_code = Some(ErrorCode::UnknownTool.as_str().to_owned());
            record.decision = "deny".to_owned();
            record.denied_by = Some(Rule::RoleGate.as_str().to_owned());
            self.services.auditor.record(&record).await;
            return GateAnswer::UnknownTool;
        };
        let tool = handler.entry().name;
        let digest = self
            .services
            .auditor
            .digest(tool, &Value::Object(arguments.clone()));
        let call = Call {
            services: Arc::clone(&self.services),
            handler: Arc::clone(handler),
            ctx,
            arguments,
            started,
            digest,
        };
        if self.closing.load(Ordering::SeqCst) {
            return call.refuse(ErrorCode::ServerStopping).await;
        }
        if handler.entry().kind != ToolKind::ExternalWrite {
            return call.run().await;
        }
        // Spawned and tracked: dropping this future (a cancelled request, the transport
        // closing) does not stop a write between its consume and its recorded outcome.
        match self.writes.spawn(call.run()).await {
            Ok(answer) => answer,
            Err(e) => {
                // `run` contains panics itself; a join error means the runtime is going away.
                tracing::error!(tool, error = %e, "external write task did not finish");
                let envelope = envelope::failure(&ToolError::new(ErrorCode::Internal));
                GateAnswer::Result {
                    text: envelope.to_string(),
                    envelope,
                    is_error: true,
                }
            }
        }
    }
}

impl Call {
    /// Answers with `code` without running the tool (audited like any call).
    async fn refuse(self, code: ErrorCode) -> GateAnswer {
        let trace = TraceResult::of(&[Rule::RoleGate]);
        self.finish(Handled::of(Err(ToolError::new(code))), trace)
            .await
    }

    async fn run(self) -> GateAnswer {
        let tool = self.handler.entry().name;
        let handler = Arc::clone(&self.handler);
        let call = AssertUnwindSafe(handler.call(&self.ctx, self.arguments.clone())).catch_unwind();
        let (reply, trace) = decision::traced(Rule::RoleGate, call).await;
        let reply = match reply {
            Ok(reply) => reply,
            Err(payload) => {
                let detail = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "non-string panic payload".to_owned());
                tracing::error!(tool, panic = %detail, "tool handler panicked");
                Handled::of(Err(ToolError::new(ErrorCode::Internal)))
            }
        };
        self.finish(reply, trace).await
    }

    async fn finish(self, reply: Handled, trace: TraceResult) -> GateAnswer {
        let tool = self.handler.entry().name;
        let why = trace.why(reply.result.as_ref().err());
        let (envelope, is_error, outcome, code) = match reply.result {
            Ok(data) => {
                let outcome = if reply.dry_run { "dry_run" } else { "ok" };
                (envelope::success(data), false, outcome, None)
            }
            Err(err) => {
                if let Some(detail) = &err.detail {
                    tracing::warn!(tool, code = err.code.as_str(), detail = %detail, "tool call failed");
                }
                (envelope::failure(&err), true, "error", Some(err.code))
            }
        };
        // Serialised once: the answer's text content and the audit's byte count.
        let text = envelope.to_string();
        let mut record = audit_record(&self.ctx, tool, self.started, self.digest);
        record.outcome = outcome.to_owned();
        record.error_code = code.map(|c| c.as_str().to_owned());
        record.approval_id = reply
            .approval_id
            .filter(|id| id.len() <= 64 && id.bytes().all(|b| b.is_ascii_graphic()));
        record.decision = why.decision.to_owned();
        record.rules = why.rules;
        record.denied_by = why.denied_by;
        record.output = Some(summarize(&envelope, text.len()));
        record.approval_trail = reply.approval_trail;
        // Queued: the answer does not wait for the INSERT; failures are logged by the auditor.
        self.services.auditor.record(&record).await;
        GateAnswer::Result {
            envelope,
            text,
            is_error,
        }
    }
}

/// The record of a call's fixed facts; the caller fills in how it ended and why.
fn audit_record(
    ctx: &CallContext,
    tool: &str,
    started: Instant,
    args_digest: String,
) -> AuditRecord {
    AuditRecord {
        at: ctx.now,
        role: ctx.role.as_str().to_owned(),
        client: ctx.client.clone(),
        tool: tool.to_owned(),
        duration_us: u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        args_digest,
        capability: catalog::capability(tool),
        session: ctx.session.clone(),
        ..AuditRecord::default()
    }
}

/// Size and shape of an answer, never its content: the serialised envelope's `bytes`, the
/// elements of `data`'s top-level lists, and `data.truncated`.
pub fn summarize(envelope: &Value, bytes: usize) -> OutputSummary {
    let data = envelope.get("data").and_then(Value::as_object);
    let items = data.map_or(0, |d| {
        d.values()
            .filter_map(Value::as_array)
            .map(|a| a.len() as u64)
            .sum()
    });
    let truncated = data
        .and_then(|d| d.get("truncated"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    OutputSummary {
        bytes: u64::try_from(bytes).unwrap_or(u64::MAX),
        items,
        truncated,
    }
}

#[cfg(test)]
mod tests {
    use super::new_session_label;

    #[test]
    fn session_labels_are_sixteen_random_hex_digits() {
        let labels: std::collections::BTreeSet<String> =
            (0..64).map(|_| new_session_label()).collect();
        assert_eq!(labels.len(), 64, "labels repeat: {labels:?}");
        for label in &labels {
            let digits = label.strip_prefix("s-").unwrap_or_default();
            assert_eq!(digits.len(), 16, "{label}");
            assert!(digits.chars().all(|c| c.is_ascii_hexdigit()), "{label}");
        }
    }
}
