//! `care-mcp approvals approve|reject ID --key-file F`: an approver without a Nostr app signs
//! and publishes the same reaction an app would. The ledger is only read (for the card): the
//! decision is recorded by the serving process when the reaction arrives, so it passes exactly
//! the checks every reaction passes.
//!
//! `care-mcp approvals verify ID`: re-verifies every stored decision's signed evidence offline.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use care_core::approvals::ApproverKey;
use care_core::ledger::{ApprovalRow, ApprovalStatus, Decision};
use care_nostr::card::tag_value;
use care_nostr::evidence::verify_decision;
use care_nostr::reaction::build_reaction;
use care_nostr::{EventId, PublicKey};

use crate::startup::{StartError, load_config, open_ledger};

/// How long the command waits for relays (connect, OK, fetch).
const RELAY_TIMEOUT: Duration = Duration::from_secs(10);

async fn read_row(id: &str) -> Result<ApprovalRow, StartError> {
    let (config, _) = load_config()?;
    let ledger = open_ledger(&config).await?;
    ledger
        .approval(id)
        .await
        .map_err(|e| StartError(format!("ledger unavailable: {e}")))?
        .ok_or_else(|| StartError("no approval with that id".into()))
}

pub async fn run(id: &str, key_file: &Path, decision: Decision) -> Result<ExitCode, StartError> {
    let (_, nostr) = load_config()?;
    let keys = care_nostr::keys::read_key_file(key_file).map_err(|e| StartError(e.to_string()))?;
    let me = ApproverKey::from_hex(&keys.public_key().to_hex())
        .ok_or_else(|| StartError("the key file's public key is unusable".into()))?;
    if nostr.server_key.as_ref() == Some(&me) {
        return Err(StartError(
            "this is the server's own key: its reactions never count".into(),
        ));
    }
    if nostr.relays.is_empty() {
        return Err(StartError("CARE_NOSTR_RELAYS is not set".into()));
    }
    let row = read_row(id).await?;
    // The row's own approvers decide (rows from before rows carried them: CARE_APPROVERS).
    let policy = nostr.policy();
    if !policy.of_row(&row).lists(&me) {
        return Err(StartError(
            "this key is not an approver of this approval: the server would ignore its reaction"
                .into(),
        ));
    }
    match (row.status, decision) {
        (ApprovalStatus::Pending | ApprovalStatus::Approved, _) => {}
        (status, _) => {
            return Err(StartError(format!(
                "the approval is {}: a reaction would change nothing",
                status.as_str()
            )));
        }
    }
    let card = row
        .card_event_id
        .as_deref()
        .and_then(|c| EventId::from_hex(c).ok())
        .ok_or_else(|| StartError("the approval has no card event".into()))?;
    // The server's key and the group, from this configuration or else from the card itself.
    let mut server: Option<PublicKey> = nostr
        .server_key
        .as_ref()
        .and_then(|k| PublicKey::from_hex(k.hex()).ok());
    let mut group = nostr.group.clone();
    if server.is_none() || group.is_none() {
        match care_nostr::publish::fetch(&nostr.relays, card, RELAY_TIMEOUT).await {
            Ok(Some(event)) => {
                server = server.or(Some(event.pubkey));
                group = group.or_else(|| tag_value(&event, "h").map(str::to_owned));
            }
            Ok(None) | Err(_) => {
                tracing::warn!(approval_id = %row.id, "card not found on the relays; reacting without p/h tags");
            }
        }
    }
    let event = build_reaction(&keys, card, server, group.as_deref(), decision)
        .map_err(|e| StartError(e.to_string()))?;
    let accepted = care_nostr::publish::publish(&nostr.relays, &event, RELAY_TIMEOUT)
        .await
        .map_err(|e| StartError(e.to_string()))?;
    #[allow(clippy::print_stdout)]
    {
        println!(
            "{} reaction {} published to {} relay(s)",
            decision.as_str(),
            event.id.to_hex(),
            accepted.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn verify(id: &str) -> Result<ExitCode, StartError> {
    let (config, _) = load_config()?;
    let ledger = open_ledger(&config).await?;
    let row = read_row(id).await?;
    let decisions = ledger
        .decisions(&row.id)
        .await
        .map_err(|e| StartError(format!("ledger unavailable: {e}")))?;
    let mut out = String::new();
    let mut failed = 0usize;
    for d in &decisions {
        match verify_decision(row.card_event_id.as_deref(), d) {
            Ok(event_id) => out.push_str(&format!(
                "ok      {} {} reaction {}\n",
                d.approver,
                d.decision.as_str(),
                event_id.to_hex()
            )),
            Err(problem) => {
                failed += 1;
                out.push_str(&format!(
                    "FAILED  {} {}: {problem}\n",
                    d.approver,
                    d.decision.as_str()
                ));
            }
        }
    }
    if decisions.is_empty() && row.decided_at.is_some() {
        failed += 1;
        out.push_str("FAILED  the approval was decided but holds no decision\n");
    }
    out.push_str(&format!(
        "{} decision(s), {} failed; approval {} is {}\n",
        decisions.len(),
        failed,
        row.id,
        row.status.as_str()
    ));
    #[allow(clippy::print_stdout)]
    {
        print!("{out}");
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
