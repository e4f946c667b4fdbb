//! `care-mcp approvals list|show ID`: the approval ledger for operators. Every string read from
//! the ledger is shown with the person-facing escaping of `care_core::display`, so a crafted
//! reason or argument can neither drive the terminal nor hide characters from the operator; the
//! reason, which may span lines, is a block of prefixed lines (approve, reject and verify: see
//! `decide`).

use std::process::ExitCode;

use care_core::display::{block, counted, escape_line, is_all_visible};
use care_core::ledger::{ApprovalRow, ApprovalStatus, Decision};

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
    let (config, _) = load_config()?;
    let ledger = open_ledger(&config).await?;
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
                .list_approvals(status, limit)
                .await
                .map_err(|e| StartError(format!("ledger unavailable: {e}")))?;
            out.push_str(&format!(
                "{:<36}  {:<9}  {:<24}  {:<10}  {:<25}  {}\n",
                "ID", "STATUS", "ACTION", "ROLE", "EXPIRES", "OUTCOME"
            ));
            for row in &rows {
                out.push_str(&format!(
                    "{:<36}  {:<9}  {:<24}  {:<10}  {:<25}  {}\n",
                    line(&row.id),
                    row.status.as_str(),
                    line(&row.action),
                    line(&row.requested_by_role),
                    row.expires_at.to_rfc3339(),
                    line(&outcome(row))
                ));
            }
        }
        ApprovalsCommand::Show { id } => {
            let row = ledger
                .approval(&id)
                .await
                .map_err(|e| StartError(format!("ledger unavailable: {e}")))?
                .ok_or_else(|| StartError("no approval with that id".into()))?;
            let decisions = ledger
                .decisions(&row.id)
                .await
                .map_err(|e| StartError(format!("ledger unavailable: {e}")))?;
            out.push_str(&format!("id:            {}\n", line(&row.id)));
            out.push_str(&format!("action:        {}\n", line(&row.action)));
            out.push_str(&format!("status:        {}\n", row.status.as_str()));
            out.push_str(&format!(
                "requested by:  {} ({})\n",
                line(&row.requested_by_role),
                line(&row.requested_by_client)
            ));
            out.push_str(&format!("created:       {}\n", row.created_at.to_rfc3339()));
            out.push_str(&format!("expires:       {}\n", row.expires_at.to_rfc3339()));
            out.push_str(&format!("payload hash:  {}\n", line(&row.payload_hash)));
            out.push_str(&format!("outcome:       {}\n", line(&outcome(&row))));
            if let Some(reason) = &row.reason {
                out.push_str(&reason_block(reason));
            }
            if let Some(card) = &row.card_event_id {
                out.push_str(&format!("card event:    {}\n", line(card)));
            }
            out.push_str(&format!("arguments:     {}\n", line(&row.arguments_json)));
            out.push_str(&format!("decisions:     {}\n", decisions.len()));
            for d in &decisions {
                out.push_str(&format!(
                    "  {} {} at {}\n",
                    line(&d.approver),
                    d.decision.as_str(),
                    d.decided_at.to_rfc3339()
                ));
            }
            if let Some(card) = &row.card_text {
                out.push_str(&card_block(card));
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

/// Starts each line of the reason, so none of it can pass for a field line.
const REASON_PREFIX: &str = "  │ ";

/// The card exactly as approvers read it. It was escaped when it was rendered, so it is shown
/// as stored; should the stored text hold anything invisible (written to the database by
/// something else), it is escaped again rather than passed to the terminal.
fn card_block(card: &str) -> String {
    let mut out = String::from("card as approvers read it:\n");
    if is_all_visible(card) {
        for l in card.lines() {
            out.push_str(REASON_PREFIX);
            out.push_str(l);
            out.push('\n');
        }
    } else {
        out.push_str(&block(card, REASON_PREFIX).lines);
        out.push('\n');
    }
    out
}

/// A value from the ledger escaped for its one line.
fn line(value: &str) -> String {
    escape_line(value).text
}

/// `reason:` with the size of the reason (and how many code points are shown as escapes), then
/// the reason's lines, each after [`REASON_PREFIX`].
fn reason_block(reason: &str) -> String {
    let block = block(reason, REASON_PREFIX);
    let mut escaped = String::new();
    if block.invisible() > 0 {
        escaped.push_str(&format!(
            ", {} shown as \\u{{…}}",
            counted(block.invisible(), "invisible or formatting character")
        ));
    }
    if block.references > 0 {
        escaped.push_str(&format!(
            ", {} with the colon shown as \\u{{3a}}",
            counted(block.references, "Nostr reference")
        ));
    }
    format!(
        "reason:        {}{escaped}\n{}\n",
        block.size(),
        block.lines
    )
}

fn outcome(row: &ApprovalRow) -> String {
    row.outcome
        .as_ref()
        .map_or_else(|| "-".to_owned(), ToString::to_string)
}
