//! Test support (feature `test-support`): a recording external-write tool that stands in for
//! `asc_review_reply`, so the pipeline and the approval channel can be tested end to end
//! without an upstream. Never compiled into the binary.

use std::sync::{Arc, Mutex, PoisonError};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::approval_channel::CardContent;
use crate::error::{ErrorCode, ToolError};
use crate::input::{self, Validate};
use crate::pipeline::{ExternalWriteTool, WritePermit, WritePlan};
use crate::tool::CallContext;

/// What the recording write tool was asked to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Sent {
    pub approval_id: String,
    pub review_id: String,
    pub body: String,
}

/// Every send, a switch that makes the next delivery fail, the tool's own write switch and
/// the upstream dry runs (previews) it was asked for.
#[derive(Debug, Default)]
pub struct Recorder {
    sent: Mutex<Vec<Sent>>,
    fail_next: Mutex<bool>,
    /// `ExternalWriteTool::writes_allowed` answers the opposite.
    switched_off: Mutex<bool>,
    previews: Mutex<Vec<String>>,
}

impl Recorder {
    pub fn sent(&self) -> Vec<Sent> {
        self.sent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Sets the tool's own write switch (on by default; off is like `CARE_CLUSTER_WRITE` unset).
    pub fn set_writes_allowed(&self, allowed: bool) {
        *self
            .switched_off
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = !allowed;
    }

    /// The review ids the upstream was asked to dry-run, in order.
    pub fn previews(&self) -> Vec<String> {
        self.previews
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The next `apply` records the attempt, then fails with UPSTREAM_UNAVAILABLE.
    pub fn fail_next(&self) {
        *self
            .fail_next
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = true;
    }
}

/// Stands in for `asc_review_reply` (its catalog row), so the registry accepts it.
#[derive(Debug, Clone)]
pub struct RecordingWrite(pub Arc<Recorder>);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplyArgs {
    pub review_id: String,
    pub body: String,
    pub locale: String,
}

impl Validate for ReplyArgs {
    fn validate(&self) -> Result<(), ToolError> {
        input::check_id("review_id", &self.review_id, 64)?;
        input::check_text("body", &self.body, input::MAX_BODY_CHARS)?;
        input::check_name("locale", &self.locale.to_lowercase(), 16)
    }
}

impl ExternalWriteTool for RecordingWrite {
    type Args = ReplyArgs;
    type Payload = (String, String);
    const NAME: &'static str = "asc_review_reply";
    const DESCRIPTION: &'static str = "test-only recording write";

    async fn plan(
        &self,
        _ctx: &CallContext,
        args: ReplyArgs,
    ) -> Result<WritePlan<(String, String)>, ToolError> {
        Ok(WritePlan {
            would_send: json!({"review_id": args.review_id, "body": crate::fence::fence(&args.body)}),
            outbound_text: vec![args.body.clone()],
            card: CardContent {
                title: "reply to an App Store review".to_owned(),
                target: format!("review {} of Demo Care, in {}", args.review_id, args.locale),
                facts: Vec::new(),
                text: Some(args.body.clone()),
            },
            checked_facts: serde_json::Map::new(),
            payload: (args.review_id, args.body),
        })
    }

    async fn apply(
        &self,
        permit: WritePermit<'_>,
        payload: (String, String),
    ) -> Result<Value, ToolError> {
        let fail = std::mem::take(
            &mut *self
                .0
                .fail_next
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        self.0
            .sent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Sent {
                approval_id: permit.approval_id().to_owned(),
                review_id: payload.0,
                body: payload.1,
            });
        if fail {
            return Err(ToolError::new(ErrorCode::UpstreamUnavailable).with_detail("fake outage"));
        }
        Ok(json!({"response_id": "resp-1"}))
    }

    fn writes_allowed(&self) -> bool {
        !*self
            .0
            .switched_off
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    async fn preview(&self, payload: &(String, String)) -> Result<Option<Value>, ToolError> {
        self.0
            .previews
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(payload.0.clone());
        Ok(Some(json!({"accepted": true})))
    }
}
