//! Offline re-verification of a stored decision: the evidence must be a validly signed kind-7
//! reaction by the recorded approver, aimed (last `e` tag) at the approval's card, whose content
//! means the recorded decision. No relay is asked anything.

use care_core::ledger::DecisionRow;
use nostr_sdk::{Event, EventId, JsonUtil, Kind};

use crate::reaction;

/// Why a stored decision does not hold up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvidenceProblem {
    #[error("the evidence is not a Nostr event")]
    NotAnEvent,
    #[error("the event id or signature does not verify")]
    BadSignature,
    #[error("the event is not a kind-7 reaction")]
    NotAReaction,
    #[error("the approval has no card event")]
    NoCard,
    #[error("the reaction does not target the approval's card")]
    OtherTarget,
    #[error("the reaction is signed by another key than the recorded approver")]
    OtherAuthor,
    #[error("the reaction's content does not mean the recorded decision")]
    OtherDecision,
}

/// Checks one decision of an approval whose card is `card_event_id`; returns the reaction's id.
pub fn verify_decision(
    card_event_id: Option<&str>,
    decision: &DecisionRow,
) -> Result<EventId, EvidenceProblem> {
    let event = Event::from_json(&decision.evidence).map_err(|_| EvidenceProblem::NotAnEvent)?;
    event.verify().map_err(|_| EvidenceProblem::BadSignature)?;
    if event.kind != Kind::Reaction {
        return Err(EvidenceProblem::NotAReaction);
    }
    let card = card_event_id
        .and_then(|c| EventId::from_hex(c).ok())
        .ok_or(EvidenceProblem::NoCard)?;
    if reaction::target(&event).ok() != Some(card) {
        return Err(EvidenceProblem::OtherTarget);
    }
    if event.pubkey.to_hex() != decision.approver {
        return Err(EvidenceProblem::OtherAuthor);
    }
    if reaction::decision_of(&event.content) != Some(decision.decision) {
        return Err(EvidenceProblem::OtherDecision);
    }
    Ok(event.id)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use care_core::ledger::Decision;
    use chrono::Utc;
    use nostr_sdk::Keys;

    fn row(keys: &Keys, evidence: String, decision: Decision) -> DecisionRow {
        DecisionRow {
            approval_id: "apr_1".into(),
            approver: keys.public_key().to_hex(),
            decision,
            evidence,
            decided_at: Utc::now(),
        }
    }

    #[test]
    fn a_genuine_reaction_verifies_and_tampering_does_not() {
        let approver = Keys::generate();
        let card = EventId::from_hex(&"ab".repeat(32)).unwrap();
        let card_hex = card.to_hex();
        let event =
            reaction::build_reaction(&approver, card, None, None, Decision::Approve).unwrap();
        let good = row(&approver, event.as_json(), Decision::Approve);
        assert_eq!(verify_decision(Some(&card_hex), &good), Ok(event.id));

        let as_reject = row(&approver, event.as_json(), Decision::Reject);
        assert_eq!(
            verify_decision(Some(&card_hex), &as_reject),
            Err(EvidenceProblem::OtherDecision)
        );
        let mut other_author = good.clone();
        other_author.approver = Keys::generate().public_key().to_hex();
        assert_eq!(
            verify_decision(Some(&card_hex), &other_author),
            Err(EvidenceProblem::OtherAuthor)
        );
        assert_eq!(
            verify_decision(Some(&"cd".repeat(32)), &good),
            Err(EvidenceProblem::OtherTarget)
        );
        assert_eq!(verify_decision(None, &good), Err(EvidenceProblem::NoCard));
        let tampered = row(
            &approver,
            event
                .as_json()
                .replace("\"content\":\"+\"", "\"content\":\"-\""),
            Decision::Reject,
        );
        assert_eq!(
            verify_decision(Some(&card_hex), &tampered),
            Err(EvidenceProblem::BadSignature)
        );
        let not_json = row(&approver, "approved by phone".into(), Decision::Approve);
        assert_eq!(
            verify_decision(Some(&card_hex), &not_json),
            Err(EvidenceProblem::NotAnEvent)
        );
    }
}
