//! `mail_send`: the gated external write of this domain. `plan` checks the input (no header
//! value may hold a character that could break a header), the locale gate when a locale is
//! given, and the target: a reply goes to the original's sender (its Reply-To only when that is
//! inside the allowed domains) with In-Reply-To, References and "Re:"; a new message only to
//! an allowed domain. It says what would be sent; `apply` (reachable only through the pipeline,
//! with a consumed approval) submits it over SMTP once, appends it to the Sent mailbox, and
//! closes the ticket of the message it answers.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use care_core::approval_channel::{CardContent, CardFact};
use care_core::decision::{self, Rule};
use care_core::error::{ErrorCode, ToolError};
use care_core::fence::fence;
use care_core::input::{self, Validate};
use care_core::pipeline::{ExternalWriteTool, WritePermit, WritePlan};
use care_core::tool::CallContext;

use super::check_message_id;
use crate::locale;
use crate::mail::compose::{Outgoing, compose};
use crate::mail::context::{INBOX, MailContext};
use crate::mail::headers;

/// Longest subject, in characters.
pub const MAX_SUBJECT_CHARS: usize = 250;
/// References kept on a reply (the root and the latest ones).
const MAX_REFERENCES: usize = 20;

#[derive(Debug)]
pub struct MailSend(pub Arc<MailContext>);

/// A reply to a message of the inbox, or a new message to an allowed domain.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MailSendArgs {
    /// Reply to this inbox message (its Message-ID): the reply goes to its sender. Leave `to` out.
    #[schemars(length(min = 3, max = 252))]
    pub in_reply_to: Option<String>,
    /// A new message's single recipient (a plain address inside CARE_MAIL_ALLOWED_RECIPIENT_DOMAINS).
    #[schemars(length(min = 3, max = 254))]
    pub to: Option<String>,
    /// The subject; required for a new message, "Re: <original subject>" by default for a reply.
    #[schemars(length(min = 1, max = 250))]
    pub subject: Option<String>,
    /// The plain-text body, 1..=20000 characters.
    #[schemars(length(min = 1, max = 20000))]
    pub body: String,
    /// The body's locale, one of CARE_LOCALES; when given, the body's language must match it.
    #[schemars(length(min = 2, max = 16))]
    pub locale: Option<String>,
}

impl Validate for MailSendArgs {
    fn validate(&self) -> Result<(), ToolError> {
        input::check_text("body", &self.body, input::MAX_BODY_CHARS)?;
        if self.body.contains('\0') {
            return Err(ToolError::invalid("body"));
        }
        if let Some(s) = &self.subject {
            input::check_text("subject", s, MAX_SUBJECT_CHARS)?;
            if headers::breaks_header(s) {
                return Err(ToolError::invalid("subject"));
            }
        }
        if let Some(to) = &self.to
            && (headers::breaks_header(to) || !headers::is_address(to))
        {
            return Err(ToolError::invalid("to"));
        }
        if let Some(id) = &self.in_reply_to {
            check_message_id("in_reply_to", id)?;
        }
        if let Some(l) = &self.locale
            && !locale::is_locale_tag(l)
        {
            return Err(ToolError::invalid("locale"));
        }
        match (&self.in_reply_to, &self.to, &self.subject) {
            // A reply's recipient comes from the original, never from the agent.
            (Some(_), Some(_), _) => Err(ToolError::invalid("to")),
            (None, None, _) => Err(ToolError::invalid("to")),
            (None, Some(_), None) => Err(ToolError::invalid("subject")),
            _ => Ok(()),
        }
    }
}

/// What `apply` sends.
#[derive(Debug, Clone)]
pub struct SendPayload {
    outgoing: Outgoing,
    /// The answered message and its date (its SLA ticket).
    answers: Option<(String, DateTime<Utc>)>,
}

/// `Re: <subject>` from a stranger's subject: characters that could break a header become
/// spaces (the approver sees the result on the card), a leading `Re:` is not repeated.
pub fn reply_subject(original: Option<&str>) -> String {
    let clean: String = original
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if headers::breaks_header(&c.to_string()) {
                ' '
            } else {
                c
            }
        })
        .collect();
    let clean = clean.trim();
    let subject = if clean.is_empty() {
        "Re: your message".to_owned()
    } else if clean
        .get(..3)
        .is_some_and(|p| p.eq_ignore_ascii_case("re:"))
    {
        clean.to_owned()
    } else {
        format!("Re: {clean}")
    };
    crate::kit::cut::to_chars(&subject, MAX_SUBJECT_CHARS).0
}

impl ExternalWriteTool for MailSend {
    type Args = MailSendArgs;
    type Payload = SendPayload;
    const NAME: &'static str = "mail_send";
    const DESCRIPTION: &'static str = "Send an e-mail from the support address: a reply to an inbox message (in_reply_to; it goes to that message's sender, threaded, subject \"Re: ...\") or a new message to an allowed domain (to + subject). Plain text only; no Cc, Bcc or attachments. External write: with writes disabled it only shows what would be sent; otherwise it needs the id of an approved approval_request for exactly these arguments. A given locale must be allowed and match the body's language.";

    async fn plan(
        &self,
        _ctx: &CallContext,
        args: MailSendArgs,
    ) -> Result<WritePlan<SendPayload>, ToolError> {
        let mail = &self.0;
        let config = &mail.config;
        let locale = match &args.locale {
            Some(l) => Some(locale::check(&config.locales, l, &args.body)?.to_owned()),
            None => None,
        };
        if mail.smtp.is_none() {
            return Err(ToolError::new(ErrorCode::Internal).with_detail("no SMTP client"));
        }
        let (to, subject, in_reply_to, references, answers) = match &args.in_reply_to {
            Some(parent) => {
                let parent = check_message_id("in_reply_to", parent)?;
                let original = mail.by_message_id(INBOX, &parent).await?.envelope;
                // A reply goes only to a message of the inbox: that is its scope.
                decision::passed(Rule::Scope);
                let sender = original
                    .reply_to
                    .as_ref()
                    .filter(|r| config.allows_recipient(&r.address))
                    .or(original.from.as_ref())
                    .map(|m| m.address.clone())
                    .filter(|a| headers::is_address(a))
                    .ok_or_else(|| {
                        ToolError::invalid("in_reply_to")
                            .with_detail("original has no usable sender")
                    })?;
                let subject = args
                    .subject
                    .clone()
                    .unwrap_or_else(|| reply_subject(original.subject.as_deref()));
                let mut references = original.references.clone();
                references.push(parent.clone());
                if references.len() > MAX_REFERENCES {
                    let root = references[0].clone();
                    let keep = references.split_off(references.len() - (MAX_REFERENCES - 1));
                    references = std::iter::once(root).chain(keep).collect();
                }
                let opened = original.date.unwrap_or_else(Utc::now);
                (
                    sender,
                    subject,
                    Some(parent.clone()),
                    references,
                    Some((parent, opened)),
                )
            }
            None => {
                let to = args.to.clone().unwrap_or_default().to_ascii_lowercase();
                if !config.allows_recipient(&to) {
                    return Err(ToolError::new(ErrorCode::ScopeDenied)
                        .with_detail("recipient outside CARE_MAIL_ALLOWED_RECIPIENT_DOMAINS"));
                }
                decision::passed(Rule::Scope);
                (
                    to,
                    args.subject.clone().unwrap_or_default(),
                    None,
                    Vec::new(),
                    None,
                )
            }
        };
        let outgoing = Outgoing {
            from: config.from.clone(),
            to: to.clone(),
            subject: subject.clone(),
            body: args.body.clone(),
            message_id: format!("care-{}@{}", uuid::Uuid::new_v4(), config.from_domain()),
            in_reply_to: in_reply_to.clone(),
            references,
        };
        // Refuses now what lettre would refuse at send time.
        compose(&outgoing)?;

        let would_send = json!({
            "from": config.from,
            "to": [fence(&to)],
            "subject": fence(&subject),
            "body": fence(&args.body),
            "in_reply_to": in_reply_to,
            "locale": locale,
            "saved_to": config.sent_mailbox,
        });
        let mut checked_facts = serde_json::Map::new();
        checked_facts.insert("recipients".into(), json!([to]));
        checked_facts.insert("subject".into(), json!(subject));
        let (title, target) = match &in_reply_to {
            Some(parent) => (
                "reply to a support e-mail".to_owned(),
                format!("reply to message <{parent}> from {to}"),
            ),
            None => (
                "send a new e-mail".to_owned(),
                format!("new message to {to}"),
            ),
        };
        let mut facts = vec![
            CardFact::new("Recipients", to.clone()),
            CardFact::new("Subject", subject.clone()),
            CardFact::new("From", config.from.clone()),
        ];
        if let Some(l) = &locale {
            facts.push(CardFact::new("Locale", l.clone()));
        }
        Ok(WritePlan {
            would_send,
            outbound_text: vec![subject, args.body.clone()],
            card: CardContent {
                title,
                target,
                facts,
                text: Some(args.body),
            },
            checked_facts,
            payload: SendPayload { outgoing, answers },
        })
    }

    async fn apply(
        &self,
        permit: WritePermit<'_>,
        payload: SendPayload,
    ) -> Result<Value, ToolError> {
        let mail = &self.0;
        let Some(smtp) = &mail.smtp else {
            return Err(ToolError::new(ErrorCode::Internal).with_detail("no SMTP client"));
        };
        let message = compose(&payload.outgoing)?;
        let raw = message.formatted();
        smtp.send(&permit, message).await?;
        // The mail is out: a Sent copy or a ticket that fails to record must not make it look
        // failed (a retry would send it twice).
        let saved = match mail
            .imap
            .append(&permit, &mail.config.sent_mailbox, &raw)
            .await
        {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(detail = ?e.detail, "sent mail not copied to the Sent mailbox");
                false
            }
        };
        if let Some((parent, opened)) = &payload.answers {
            mail.answered_now(parent, *opened).await;
        }
        Ok(json!({
            "message_id": payload.outgoing.message_id,
            "to": [fence(&payload.outgoing.to)],
            "in_reply_to": payload.outgoing.in_reply_to,
            "saved_to_sent": saved,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_subjects_are_clean_and_not_doubled() {
        assert_eq!(reply_subject(Some("주문 문의")), "Re: 주문 문의");
        assert_eq!(reply_subject(Some("RE: hi")), "RE: hi");
        assert_eq!(reply_subject(Some("a\r\nBcc: x@y.z")), "Re: a  Bcc: x@y.z");
        assert_eq!(reply_subject(Some("\u{1b}[2J")), "Re: [2J");
        assert_eq!(reply_subject(None), "Re: your message");
    }
}
