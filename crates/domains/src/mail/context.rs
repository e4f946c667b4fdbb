//! What the mail tools share: the configuration, the IMAP and SMTP clients, the ticket port,
//! and the lookups several tools make (a message by its id, the replies in the Sent mailbox),
//! plus the SLA feed: customer messages in the inbox are `mail` tickets, answered by a reply
//! from the support address.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use care_core::error::{ErrorCode, ToolError};
use care_core::ledger::SupportChannel;
use care_core::registrar::TicketPort;

use super::config::MailConfig;
use super::headers::imap_string;
use super::imap::{ImapClient, Summary};
use super::model::{self, Envelope};
use super::smtp::SmtpClient;

/// The inbox every tool defaults to.
pub const INBOX: &str = "INBOX";
/// Recent Sent messages read to see which inbox messages were answered.
const SENT_SCAN: usize = 200;

/// Shared by the five tools of one process.
#[derive(Debug)]
pub struct MailContext {
    pub config: MailConfig,
    pub imap: ImapClient,
    /// `None` for a role that does not send.
    pub smtp: Option<SmtpClient>,
    pub tickets: TicketPort,
}

/// A message found by id: where, its envelope and its structure.
#[derive(Debug, Clone)]
pub struct Found {
    pub mailbox: String,
    pub summary: Summary,
    pub envelope: Envelope,
}

/// `HEADER <field> <value>` for a message id (substring match on the server; exact here).
pub fn header_key(field: &str, message_id: &str) -> String {
    format!("HEADER {field} {}", imap_string(&format!("<{message_id}>")))
}

impl MailContext {
    /// The message whose Message-ID is `message_id` in `mailbox`; NOT_FOUND when none.
    pub async fn by_message_id(&self, mailbox: &str, message_id: &str) -> Result<Found, ToolError> {
        let (_, uids) = self
            .imap
            .search(mailbox, &header_key("Message-ID", message_id))
            .await?;
        // Newest last: a message delivered twice is read from its latest copy.
        let uids: Vec<u32> = uids.into_iter().rev().take(20).collect();
        let candidates: Vec<(Envelope, Summary)> = self
            .imap
            .summaries(mailbox, &uids)
            .await?
            .into_iter()
            .map(|s| (model::envelope(&s), s))
            .collect();
        let exact = candidates
            .iter()
            .position(|(e, _)| e.message_id.as_deref() == Some(message_id));
        // A header cut at its bound (a 1 MB subject before the Message-ID) hides the id from
        // us: then the server's match on `<id>` is the only witness, if it names one message.
        let unread: Vec<usize> = candidates
            .iter()
            .enumerate()
            .filter(|(_, (e, _))| e.message_id.is_none())
            .map(|(i, _)| i)
            .collect();
        let chosen = exact.or(match unread.as_slice() {
            [only] => Some(*only),
            _ => None,
        });
        let (mut envelope, summary) = chosen
            .and_then(|i| candidates.into_iter().nth(i))
            .ok_or_else(|| ToolError::new(ErrorCode::NotFound))?;
        envelope.message_id = Some(message_id.to_owned());
        Ok(Found {
            mailbox: mailbox.to_owned(),
            summary,
            envelope,
        })
    }

    /// The message with `uid` in `mailbox`; NOT_FOUND when none.
    pub async fn by_uid(&self, mailbox: &str, uid: u32) -> Result<Found, ToolError> {
        let summary = self
            .imap
            .summaries(mailbox, &[uid])
            .await?
            .into_iter()
            .find(|s| s.uid == uid)
            .ok_or_else(|| ToolError::new(ErrorCode::NotFound))?;
        Ok(Found {
            mailbox: mailbox.to_owned(),
            envelope: model::envelope(&summary),
            summary,
        })
    }

    /// The inbox messages the recent Sent messages answer, with the first answer's date.
    async fn answered(&self) -> HashMap<String, DateTime<Utc>> {
        let sent = &self.config.sent_mailbox;
        let uids = match self.imap.search(sent, "ALL").await {
            Ok((_, uids)) => uids,
            // No Sent mailbox yet: nothing answered from here.
            Err(e) if e.code == ErrorCode::NotFound => return HashMap::new(),
            Err(e) => {
                tracing::warn!(detail = ?e.detail, "sent mailbox not read for the SLA");
                return HashMap::new();
            }
        };
        let recent: Vec<u32> = uids.into_iter().rev().take(SENT_SCAN).collect();
        let Ok(summaries) = self.imap.summaries(sent, &recent).await else {
            return HashMap::new();
        };
        let mut out: HashMap<String, DateTime<Utc>> = HashMap::new();
        for envelope in summaries.iter().map(model::envelope) {
            if let (Some(parent), Some(at)) = (envelope.in_reply_to, envelope.date) {
                out.entry(parent)
                    .and_modify(|t| *t = (*t).min(at))
                    .or_insert(at);
            }
        }
        out
    }

    /// Feeds `sla_status`: each listed inbox message from a customer is a `mail` ticket opened
    /// at its date; one answered from the Sent mailbox has had its first response. Best effort:
    /// a ledger failure is logged and the read still answers.
    pub async fn feed_tickets(&self, envelopes: &[Envelope]) {
        let customer: Vec<&Envelope> = envelopes
            .iter()
            .filter(|e| {
                e.from
                    .as_ref()
                    .is_some_and(|f| !f.address.eq_ignore_ascii_case(&self.config.from))
            })
            .collect();
        if customer.is_empty() {
            return;
        }
        let answered = self.answered().await;
        for e in customer {
            let (Some(id), Some(date)) = (ticket_ref(e), e.date) else {
                continue;
            };
            if let Err(err) = self.tickets.open(SupportChannel::Mail, &id, date).await {
                tracing::warn!(error = %err, "mail ticket not recorded");
                return;
            }
            if let Some(at) = answered.get(&id)
                && let Err(err) = self
                    .tickets
                    .answered(SupportChannel::Mail, &id, (*at).max(date))
                    .await
            {
                tracing::warn!(error = %err, "mail first response not recorded");
                return;
            }
        }
    }

    /// Closes the ticket of the message a send answered (opening it first if no listing did).
    pub async fn answered_now(&self, message_id: &str, opened: DateTime<Utc>) {
        if message_id.len() > care_core::input::MAX_ID_CHARS {
            return;
        }
        let recorded = match self
            .tickets
            .open(SupportChannel::Mail, message_id, opened)
            .await
        {
            Ok(()) => {
                self.tickets
                    .answered(SupportChannel::Mail, message_id, Utc::now().max(opened))
                    .await
            }
            Err(e) => Err(e),
        };
        if let Err(err) = recorded {
            tracing::warn!(error = %err, "mail first response not recorded");
        }
    }
}

/// The ticket of a message: its id, when it fits a ticket reference.
pub fn ticket_ref(e: &Envelope) -> Option<String> {
    e.message_id
        .clone()
        .filter(|id| id.len() <= care_core::input::MAX_ID_CHARS)
}
