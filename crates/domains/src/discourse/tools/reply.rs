//! `discourse_post_reply`: the gated external write of this domain, a public reply in a forum
//! topic as the API user. `plan` checks the input, the locale gate (the review reply's), the
//! topic (public, in scope, neither closed nor archived: refused before any approval is asked)
//! and the post it answers, and says what would be sent; `apply` (reachable only through the
//! pipeline, with a consumed approval) posts it.
//!
//! The approver reads the topic's title (fenced), its state and the post answered; those are
//! the checked facts, compared again before the approval is consumed: a topic that gained a
//! post, closed, moved, was retitled, or whose answered post was edited since is
//! APPROVAL_MISMATCH, so a reply never lands under a question the approver did not see.

use std::sync::Arc;

use chrono::Utc;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use care_core::approval_channel::{CardContent, CardFact};
use care_core::error::{ErrorCode, ToolError};
use care_core::fence::fence;
use care_core::input::{self, Validate};
use care_core::ledger::SupportChannel;
use care_core::pipeline::{ExternalWriteTool, WritePermit, WritePlan};
use care_core::tool::CallContext;

use super::check_id;
use crate::asc::locale;
use crate::discourse::context::DiscourseContext;
use crate::discourse::text::plain_text;

/// Characters of the answered post shown on the card.
const EXCERPT_CHARS: usize = 160;

#[derive(Debug)]
pub struct PostReply(pub Arc<DiscourseContext>);

/// A public reply in a forum topic.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PostReplyArgs {
    /// The topic to reply in (from `discourse_latest_topics` / `discourse_search`).
    #[schemars(range(min = 1, max = 9_007_199_254_740_991_u64))]
    pub topic_id: u64,
    /// The post number answered (threaded under it); the topic as a whole when absent.
    #[schemars(range(min = 1, max = 9_007_199_254_740_991_u64))]
    pub reply_to_post_number: Option<u64>,
    /// The reply (Markdown, as Discourse takes it), 1..=20000 characters, in `locale`'s language.
    #[schemars(length(min = 1, max = 20000))]
    pub body: String,
    /// The reply's locale, one of CARE_LOCALES (e.g. `en-US`, `de-DE`, `ko`).
    #[schemars(length(min = 2, max = 16))]
    pub locale: String,
}

impl Validate for PostReplyArgs {
    fn validate(&self) -> Result<(), ToolError> {
        check_id("topic_id", self.topic_id)?;
        if let Some(n) = self.reply_to_post_number {
            check_id("reply_to_post_number", n)?;
        }
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
    topic_id: u64,
    reply_to_post_number: Option<u64>,
    body: String,
    created: Option<chrono::DateTime<Utc>>,
}

/// The first characters of a post, on one line, for the card.
fn excerpt(cooked: &str) -> String {
    let text = plain_text(cooked);
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out: String = one_line.chars().take(EXCERPT_CHARS).collect();
    if one_line.chars().count() > EXCERPT_CHARS {
        out.push('…');
    }
    out
}

impl ExternalWriteTool for PostReply {
    type Args = PostReplyArgs;
    type Payload = ReplyPayload;
    const NAME: &'static str = "discourse_post_reply";
    const DESCRIPTION: &'static str = "Post a public reply in a forum topic as the company's forum user, optionally threaded under one post. External write: with writes disabled it only shows what would be sent; otherwise it needs the id of an approved approval_request for exactly these arguments. The locale must be allowed and match the body's language; closed or archived topics are refused.";

    async fn plan(
        &self,
        _ctx: &CallContext,
        args: PostReplyArgs,
    ) -> Result<WritePlan<ReplyPayload>, ToolError> {
        let d = &self.0;
        let locale = locale::check(&d.config.locales, &args.locale, &args.body)?.to_owned();
        let topic = d.topic_in_scope(args.topic_id).await?;
        let s = &topic.summary;
        if s.closed || s.archived {
            // Discourse would refuse the post (422); refused here before anyone is asked.
            return Err(
                ToolError::new(ErrorCode::UpstreamRejected).with_detail(if s.closed {
                    "topic closed"
                } else {
                    "topic archived"
                }),
            );
        }
        let answered_number = args.reply_to_post_number.unwrap_or(1);
        let answered = d.post_numbered(&topic, answered_number).await?;
        if answered.deleted || !matches!(answered.post_type, 1 | 2) {
            return Err(ToolError::invalid("reply_to_post_number")
                .with_detail("the post is deleted, a whisper or a small action"));
        }
        let names = d.category_names().await;
        let category = s.category_id.and_then(|c| names.get(&c)).cloned();
        let last_post = s.highest_post_number;

        let would_send = json!({
            "topic_id": s.id,
            "topic_title": fence(&s.title),
            "category_id": s.category_id,
            "category": category.as_deref().map(fence),
            "reply_to_post_number": args.reply_to_post_number,
            "answers": {
                "post_number": answered.post_number,
                "author": fence(&answered.username),
                "version": answered.version,
            },
            "post_as": d.config.api_username,
            "locale": locale,
            "body": fence(&args.body),
            "topic_state": { "open": true, "last_post_number": last_post },
        });
        let mut checked_facts = serde_json::Map::new();
        checked_facts.insert("topic_state".into(), json!("open"));
        checked_facts.insert("last_post_number".into(), json!(last_post));
        checked_facts.insert("category_id".into(), json!(s.category_id));
        checked_facts.insert("title".into(), json!(s.title));
        checked_facts.insert("answered_post_number".into(), json!(answered.post_number));
        checked_facts.insert("answered_post_version".into(), json!(answered.version));

        let answers = match args.reply_to_post_number {
            Some(n) => format!(
                "post #{n} by {}, version {}",
                fence(&answered.username),
                answered.version
            ),
            None => format!(
                "the topic as a whole (its first post by {}, version {})",
                fence(&answered.username),
                answered.version
            ),
        };
        let card = CardContent {
            title: "reply in a forum topic".to_owned(),
            target: format!(
                "topic {} {} in {}, reply in {}",
                s.id,
                fence(&s.title),
                category.as_deref().map_or_else(
                    || format!("category {}", s.category_id.unwrap_or_default()),
                    fence
                ),
                locale
            ),
            facts: vec![
                CardFact::new("Answers", answers),
                CardFact::new("Post answered says", fence(&excerpt(&answered.cooked))),
                CardFact::new("Topic state", format!("open, last post #{last_post}")),
                CardFact::new("Posted as", d.config.api_username.clone()),
            ],
            text: Some(args.body.clone()),
        };
        Ok(WritePlan {
            would_send,
            outbound_text: vec![args.body.clone()],
            card,
            checked_facts,
            payload: ReplyPayload {
                topic_id: s.id,
                reply_to_post_number: args.reply_to_post_number,
                body: args.body,
                created: s.created_at,
            },
        })
    }

    async fn apply(
        &self,
        permit: WritePermit<'_>,
        payload: ReplyPayload,
    ) -> Result<Value, ToolError> {
        let d = &self.0;
        let created = d
            .client
            .create_post(
                &permit,
                payload.topic_id,
                &payload.body,
                payload.reply_to_post_number,
            )
            .await?;
        // The reply is the company's answer as far as the SLA is concerned (best effort: the
        // reply is out, a ledger hiccup must not make it look failed).
        let now = Utc::now();
        let reference = payload.topic_id.to_string();
        let tickets = &d.tickets;
        let recorded = match tickets
            .open(
                SupportChannel::Forum,
                &reference,
                payload.created.unwrap_or(now),
            )
            .await
        {
            Ok(()) => {
                tickets
                    .answered(SupportChannel::Forum, &reference, now)
                    .await
            }
            Err(e) => Err(e),
        };
        if let Err(err) = recorded {
            tracing::warn!(error = %err, "forum first response not recorded");
        }
        Ok(json!({
            "topic_id": payload.topic_id,
            "post_id": created.id,
            "post_number": created.post_number,
            "reply_to_post_number": payload.reply_to_post_number,
        }))
    }
}
