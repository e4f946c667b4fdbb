//! The message an approved send becomes: From is the configured support address (never a
//! parameter), one To, no Cc/Bcc/attachments, the subject RFC 2047-encoded when not ASCII (by
//! lettre), In-Reply-To and References for a reply, our own Message-ID, a plain-text body.
//! Every header value was checked for header-breaking characters before it got here.

use lettre::Message;
use lettre::message::{Mailbox, header::ContentType};

use care_core::error::{ErrorCode, ToolError};

/// What one send carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    pub from: String,
    pub to: String,
    pub subject: String,
    pub body: String,
    /// Without angle brackets.
    pub message_id: String,
    /// Without angle brackets.
    pub in_reply_to: Option<String>,
    /// Without angle brackets, oldest first.
    pub references: Vec<String>,
}

fn bad(what: &str) -> ToolError {
    ToolError::new(ErrorCode::Internal).with_detail(format!("message not composed: {what}"))
}

/// The lettre message for `out`.
pub fn compose(out: &Outgoing) -> Result<Message, ToolError> {
    let from: Mailbox = out.from.parse().map_err(|_| bad("from"))?;
    let to: Mailbox = out.to.parse().map_err(|_| bad("to"))?;
    let mut builder = Message::builder()
        .from(from)
        .to(to)
        .subject(out.subject.clone())
        .message_id(Some(format!("<{}>", out.message_id)))
        .date_now();
    if let Some(parent) = &out.in_reply_to {
        builder = builder.in_reply_to(format!("<{parent}>"));
        let refs: Vec<String> = out.references.iter().map(|r| format!("<{r}>")).collect();
        builder = builder.references(refs.join(" "));
    }
    builder
        .header(ContentType::TEXT_PLAIN)
        .body(out.body.clone())
        .map_err(|_| bad("body"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_threaded_and_its_subject_encoded() {
        let message = compose(&Outgoing {
            from: "support@care.test".into(),
            to: "kim@example.com".into(),
            subject: "Re: 주문 문의 🙂".into(),
            body: "안녕하세요.\n확인했습니다.".into(),
            message_id: "care-1@care.test".into(),
            in_reply_to: Some("orig@example.com".into()),
            references: vec!["root@example.com".into(), "orig@example.com".into()],
        })
        .unwrap();
        let raw = String::from_utf8(message.formatted()).unwrap();
        assert!(raw.contains("In-Reply-To: <orig@example.com>\r\n"), "{raw}");
        assert!(
            raw.contains("References: <root@example.com> <orig@example.com>\r\n"),
            "{raw}"
        );
        assert!(raw.contains("Message-ID: <care-1@care.test>\r\n"), "{raw}");
        assert!(raw.contains("Subject: Re: =?utf-8?"), "{raw}");
        assert!(!raw.contains("Bcc") && !raw.contains("Cc:"));
        let parsed = mail_parser::MessageParser::default()
            .parse(raw.as_bytes())
            .unwrap();
        assert_eq!(parsed.subject(), Some("Re: 주문 문의 🙂"));
        assert_eq!(
            parsed.body_text(0).unwrap().replace("\r\n", "\n"),
            "안녕하세요.\n확인했습니다."
        );
    }
}
