//! `care-mcp approvals list|show ID`: the approval ledger for operators, agent-written text
//! shown escaped so a crafted body cannot drive the terminal (approve, reject and verify: see
//! `decide`).

use std::process::ExitCode;

use care_core::fence::escape_for_display;
use care_core::ledger::{ApprovalRow, ApprovalStatus, Decision};
use chrono::Utc;

use crate::cli::ApprovalsCommand;
use crate::startup::{StartError, load_config, open_ledger};

pub async fn run(action: ApprovalsCommand) -> Result<ExitCode, StartError> {
    // Approvers' commands (Nostr) live in `decide`; the ledger views stay here.
    match &action {
        ApprovalsCommand::Approve { id, key_file } => {
            return super::decide::run(id, key_file, Decision::Approve).await;
        }
        ApprovalsCommand::Reject { id, key_file } => {
            return super::decide::run(id, key_file, Decision::Reject).await;
        }
        ApprovalsCommand::Verify { id } => return super::decide::verify(id).await,
        ApprovalsCommand::List { .. } | ApprovalsCommand::Show { .. } => {}
    }
    let config = load_config()?;
    let ledger = open_ledger(&config).await?;
    let now = Utc::now();
    let mut out = String::new();
    match action {
        ApprovalsCommand::List { status, limit } => {
            let status = match status.as_deref() {
                None => None,
                Some(s) => Some(ApprovalStatus::parse(s).ok_or_else(|| {
                    StartError(
                        "--status must be pending, approved, rejected, expired or consumed".into(),
                    )
                })?),
            };
            if !(1..=1000).contains(&limit) {
                return Err(StartError("--limit must be 1..=1000".into()));
            }
            let rows = ledger
                .list_approvals(status, limit, now)
                .await
                .map_err(|e| StartError(format!("ledger unavailable: {e}")))?;
            out.push_str(&format!(
                "{:<36}  {:<9}  {:<24}  {:<10}  {:<25}  {}\n",
                "ID", "STATUS", "ACTION", "ROLE", "EXPIRES", "OUTCOME"
            ));
            for row in &rows {
                out.push_str(&format!(
                    "{:<36}  {:<9}  {:<24}  {:<10}  {:<25}  {}\n",
                    row.id,
                    row.status.as_str(),
                    row.action,
                    row.requested_by_role,
                    row.expires_at.to_rfc3339(),
                    outcome(row)
                ));
            }
        }
        ApprovalsCommand::Show { id } => {
            let row = ledger
                .approval(&id, now)
                .await
                .map_err(|e| StartError(format!("ledger unavailable: {e}")))?
                .ok_or_else(|| StartError("no approval with that id".into()))?;
            let decisions = ledger
                .decisions(&row.id)
                .await
                .map_err(|e| StartError(format!("ledger unavailable: {e}")))?;
            out.push_str(&format!("id:            {}\n", row.id));
            out.push_str(&format!("action:        {}\n", row.action));
            out.push_str(&format!("status:        {}\n", row.status.as_str()));
            out.push_str(&format!(
                "requested by:  {} ({})\n",
                row.requested_by_role,
                escape_for_display(&row.requested_by_client)
            ));
            out.push_str(&format!("created:       {}\n", row.created_at.to_rfc3339()));
            out.push_str(&format!("expires:       {}\n", row.expires_at.to_rfc3339()));
            out.push_str(&format!("payload hash:  {}\n", row.payload_hash));
            out.push_str(&format!("outcome:       {}\n", outcome(&row)));
            if let Some(reason) = &row.reason {
                out.push_str(&format!("reason:        {}\n", escape_for_display(reason)));
            }
            if let Some(card) = &row.card_event_id {
                out.push_str(&format!("card event:    {card}\n"));
            }
            out.push_str(&format!(
                "arguments:     {}\n",
                escape_for_display(&row.arguments_json)
            ));
            out.push_str(&format!("decisions:     {}\n", decisions.len()));
            for d in &decisions {
                out.push_str(&format!(
                    "  {} {} at {}\n",
                    d.approver,
                    d.decision.as_str(),
                    d.decided_at.to_rfc3339()
                ));
            }
        }
        ApprovalsCommand::Approve { .. }
        | ApprovalsCommand::Reject { .. }
        | ApprovalsCommand::Verify { .. } => {}
    }
    #[allow(clippy::print_stdout)]
    {
        print!("{out}");
    }
    Ok(ExitCode::SUCCESS)
}

fn outcome(row: &ApprovalRow) -> String {
    row.outcome
        .as_ref()
        .map_or_else(|| "-".to_owned(), ToString::to_string)
}
