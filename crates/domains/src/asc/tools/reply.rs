//! `asc_review_reply`: the gated external write of this domain. `plan` checks the input, the
//! locale gate, the key material, the review (exists, in scope) and its current response, and
//! says what would be sent; `apply` (reachable only through the pipeline, with a consumed
//! approval) posts the response. A review that already has a response gets it replaced, as App
//! Store Connect does; the plan says so.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use chrono::Utc;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use care_core::approval_channel::{CardContent, CardFact};
use care_core::decision;
use care_core::env::ExposeSecret;
use care_core::error::{ErrorCode, ToolError};
use care_core::input::{self, Validate};
use care_core::ledger::SupportChannel;
use care_core::pipeline::{ExternalWriteTool, WritePermit, WritePlan};
use care_core::tool::CallContext;

use super::check_review_id;
use crate::asc::context::AscContext;
use crate::asc::locale;

/// Shortest run of the private key's base64 that counts as leaking it.
const KEY_FRAGMENT_CHARS: usize = 24;

pub struct ReviewReply {
    asc: Arc<AscContext>,
    /// Every run of [`KEY_FRAGMENT_CHARS`] characters of the base64 of every `.p8` this
    /// process has used (the key file may rotate; an old key stays refused), with the key
    /// generation they are complete for: a reply holding one is refused even though the key's
    /// PEM armour was stripped.
    key_fragments: Mutex<(u64, HashSet<String>)>,
}

impl std::fmt::Debug for ReviewReply {
    /// Not the key fragments: they are pieces of the private key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReviewReply").finish_non_exhaustive()
    }
}

/// Every run of [`KEY_FRAGMENT_CHARS`] characters of a `.p8`'s base64.
fn fragments(pem: &str) -> Vec<String> {
    let chars: Vec<char> = pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .flat_map(|l| l.trim().chars())
        .collect();
    chars
        .windows(KEY_FRAGMENT_CHARS)
        .map(|w| w.iter().collect())
        .collect()
}

impl ReviewReply {
    pub fn new(asc: Arc<AscContext>) -> Self {
        let key = asc.config.private_key.current();
        let known = key
            .map(|k| {
                let known = fragments(k.value.expose_secret()).into_iter().collect();
                (k.generation, known)
            })
            .unwrap_or_default();
        ReviewReply {
            asc,
            key_fragments: Mutex::new(known),
        }
    }

    /// True when `body` holds a piece of a key this process has used (the current key is
    /// looked at first, so a rotation is known before the check).
    fn holds_key_material(&self, body: &str) -> bool {
        let mut known = self
            .key_fragments
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Ok(key) = self.asc.config.private_key.current()
            && key.generation != known.0
        {
            known.1.extend(fragments(key.value.expose_secret()));
            known.0 = key.generation;
        }
        known.1.iter().any(|f| body.contains(f.as_str()))
    }
}

/// A public reply to a customer review.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewReplyArgs {
    /// The review to answer (from `asc_reviews_list` / `asc_reviews_unanswered`).
    #[schemars(length(min = 1, max = 128))]
    pub review_id: String,
    /// The reply text, 1..=20000 characters, written in `locale`'s language.
    #[schemars(length(min = 1, max = 20000))]
    pub body: String,
    /// The reply's locale, one of CARE_LOCALES (e.g. `ko`, `en-US`, `de-DE`).
    #[schemars(length(min = 2, max = 16))]
    pub locale: String,
}

impl Validate for ReviewReplyArgs {
    fn validate(&self) -> Result<(), ToolError> {
        check_review_id(&self.review_id)?;
        input::check_text("body", &self.body, input::MAX_BODY_CHARS)?;
        if !locale::is_locale_tag(&self.locale) {
            return Err(ToolError::invalid("locale"));
        }
        Ok(())
    }
}

/// What `apply` sends.
#[derive(Debug, Clone)]
pub struct ReplyPayload {
    review_id: String,
    body: String,
    created: chrono::DateTime<Utc>,
}

impl ExternalWriteTool for ReviewReply {
    type Args = ReviewReplyArgs;
    type Payload = ReplyPayload;
    const NAME: &'static str = "asc_review_reply";
    const DESCRIPTION: &'static str = "Publish a reply to a customer review (replacing the team's existing response, if any). External write: with writes disabled it only shows what would be sent; otherwise it needs the id of an approved approval_request for exactly these arguments. The locale must be allowed and match the body's language.";

    async fn plan(
        &self,
        _ctx: &CallContext,
        args: ReviewReplyArgs,
    ) -> Result<WritePlan<ReplyPayload>, ToolError> {
        let locale = locale::check(&self.asc.config.locales, &args.locale, &args.body)?.to_owned();
        if self.holds_key_material(&args.body) {
            decision::refused("outbound_scan:own_secret".into());
            return Err(ToolError::new(ErrorCode::OutboundBlocked)
                .with_detail("App Store Connect key material"));
        }
        let (review, app_id) = self.asc.review_in_scope(&args.review_id).await?;
        let app_name = self.asc.app_name(&app_id).await?;
        let existing = self.asc.client.response_of(&review.id).await?;
        let replaces = existing.is_some();
        let territory = review
            .territory
            .clone()
            .unwrap_or_else(|| "unknown territory".to_owned());
        let mut would_send = json!({
            "review_id": review.id,
            "app_id": app_id,
            "app_name": care_core::fence::fence(&app_name),
            "territory": review.territory,
            "locale": locale,
            "body": care_core::fence::fence(&args.body),
            "replaces_existing_response": replaces,
        });
        if replaces {
            would_send["note"] = json!(
                "This review already has a response; sending replaces it, as App Store Connect does."
            );
        }
        let mut checked_facts = serde_json::Map::new();
        checked_facts.insert("replaces_existing_response".into(), json!(replaces));
        let card = CardContent {
            title: "reply to an App Store review".to_owned(),
            target: format!(
                "review {} of {} ({}), reply in {}",
                review.id, app_name, territory, locale
            ),
            facts: vec![CardFact::new(
                "Replaces an existing response",
                if replaces { "yes" } else { "no" },
            )],
            text: Some(args.body.clone()),
        };
        Ok(WritePlan {
            would_send,
            outbound_text: vec![args.body.clone()],
            card,
            checked_facts,
            payload: ReplyPayload {
                review_id: review.id,
                body: args.body,
                created: review.created,
            },
        })
    }

    async fn apply(
        &self,
        permit: WritePermit<'_>,
        payload: ReplyPayload,
    ) -> Result<Value, ToolError> {
        let response = self
            .asc
            .client
            .create_response(&permit, &payload.review_id, &payload.body)
            .await?;
        // The reply is the review's first response as far as the SLA is concerned (best
        // effort: the reply is out, a ledger hiccup must not make it look failed).
        let tickets = &self.asc.tickets;
        let recorded = match tickets
            .open(
                SupportChannel::AppStore,
                &payload.review_id,
                payload.created,
            )
            .await
        {
            Ok(()) => {
                tickets
                    .answered(SupportChannel::AppStore, &payload.review_id, Utc::now())
                    .await
            }
            Err(e) => Err(e),
        };
        if let Err(err) = recorded {
            tracing::warn!(error = %err, "review first response not recorded");
        }
        Ok(json!({
            "response_id": response.id,
            "review_id": payload.review_id,
            "state": response.state,
        }))
    }
}
