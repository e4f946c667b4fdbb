//! `care-mcp clients add|list|revoke|rotate`: the HTTP clients in the ledger. A token is
//! printed once, alone on stdout, when it is minted; only its digest is stored.

use std::process::ExitCode;

use care_core::clients::{self, ClientRow, DEFAULT_RATE_PER_MINUTE, NewClient};
use care_core::ledger::{Ledger, LedgerError};

use crate::cli::ClientsCommand;
use crate::startup::{StartError, load_config, open_ledger, resolve_role};

pub async fn run(roles: &[String], action: ClientsCommand) -> Result<ExitCode, StartError> {
    let (config, _) = load_config()?;
    let ledger = open_ledger(&config).await?;
    let result = act(ledger.as_ref(), roles, action).await;
    ledger.close().await;
    result
}

async fn act(
    ledger: &dyn Ledger,
    roles: &[String],
    action: ClientsCommand,
) -> Result<ExitCode, StartError> {
    let store = ledger
        .client_store()
        .ok_or_else(|| StartError("this ledger does not store HTTP clients".into()))?;
    match action {
        ClientsCommand::Add { name, rate } => {
            check_name(&name)?;
            let role = resolve_role(roles)?;
            let rate_per_minute = rate.unwrap_or(DEFAULT_RATE_PER_MINUTE);
            if rate_per_minute == 0 {
                return Err(StartError("--rate must be at least 1".into()));
            }
            let minted = clients::mint();
            let new = NewClient {
                name,
                role,
                rate_per_minute,
                key_id: minted.key_id.clone(),
                secret_digest: minted.secret_digest.clone(),
            };
            match store.add_client(&new).await {
                Ok(()) => {}
                Err(LedgerError::Conflict(_)) => {
                    return Err(StartError(
                        "a client of that name exists (revoked names stay taken)".into(),
                    ));
                }
                Err(e) => return Err(unavailable(e)),
            }
            tracing::info!(client = %new.name, role = %role, rate_per_minute, "client added; its token is printed once");
            print_token(&minted.token);
        }
        ClientsCommand::List => {
            let rows = store.list_clients().await.map_err(unavailable)?;
            let mut out = format!(
                "{:<24}  {:<10}  {:>8}  {:<25}  {:<25}  {}\n",
                "NAME", "ROLE", "RATE/60S", "CREATED", "ROTATED", "REVOKED"
            );
            for row in &rows {
                out.push_str(&line(row));
            }
            print(&out);
        }
        ClientsCommand::Revoke { name } => {
            check_name(&name)?;
            if !store.revoke_client(&name).await.map_err(unavailable)? {
                return Err(StartError("no live client of that name".into()));
            }
            tracing::info!(client = %name, "client revoked");
        }
        ClientsCommand::Rotate { name } => {
            check_name(&name)?;
            let minted = clients::mint();
            if !store
                .rotate_client(&name, &minted.key_id, &minted.secret_digest)
                .await
                .map_err(unavailable)?
            {
                return Err(StartError("no live client of that name".into()));
            }
            tracing::info!(client = %name, "client token rotated; the new token is printed once");
            print_token(&minted.token);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn check_name(name: &str) -> Result<(), StartError> {
    if clients::valid_name(name) {
        Ok(())
    } else {
        Err(StartError(
            "a client name is 1..=64 of [a-z0-9._-], starting with a letter or digit".into(),
        ))
    }
}

fn unavailable(e: LedgerError) -> StartError {
    StartError(format!("ledger unavailable: {e}"))
}

fn line(row: &ClientRow) -> String {
    let time =
        |t: Option<chrono::DateTime<chrono::Utc>>| t.map_or("-".to_owned(), |t| t.to_rfc3339());
    // Names and roles were checked on the way in; they are printed as stored.
    format!(
        "{:<24}  {:<10}  {:>8}  {:<25}  {:<25}  {}\n",
        row.name,
        row.role,
        row.rate_per_minute,
        row.created_at.to_rfc3339(),
        time(row.rotated_at),
        time(row.revoked_at)
    )
}

fn print_token(token: &str) {
    print(&format!("{token}\n"));
}

#[allow(clippy::print_stdout)]
fn print(text: &str) {
    print!("{text}");
}
