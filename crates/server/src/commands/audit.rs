//! `care-mcp audit list|show ID|verify`: the audit trail for operators. Every string read from
//! the ledger is shown with the person-facing escaping of `care_core::display` (the database
//! is exactly what `verify` does not trust).

use std::process::ExitCode;

use care_core::audit_chain::{self, Report};
use care_core::display::escape_line;
use care_core::ledger::{AuditQuery, Ledger, StoredAudit};
use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use crate::cli::AuditCommand;
use crate::startup::{StartError, existing_audit_salt, load_config, open_ledger};

/// Rows read per query while verifying.
const PAGE: u32 = 5_000;

pub async fn run(action: AuditCommand) -> Result<ExitCode, StartError> {
    let (config, _) = load_config()?;
    let ledger = open_ledger(&config).await?;
    let result = match action {
        AuditCommand::List {
            since,
            tool,
            outcome,
            session,
            limit,
        } => {
            if !(1..=10_000).contains(&limit) {
                return Err(StartError("--limit must be 1..=10000".into()));
            }
            let since = since
                .as_deref()
                .map(|s| parse_since(s, Utc::now()))
                .transpose()?;
            let query = AuditQuery {
                since,
                tool,
                outcome,
                session,
                limit,
                ..AuditQuery::default()
            };
            list(ledger.as_ref(), &query).await
        }
        AuditCommand::Show { id } => show(ledger.as_ref(), id).await,
        AuditCommand::Verify => {
            let salt = existing_audit_salt(&config)?;
            verify(ledger.as_ref(), &salt).await
        }
    };
    ledger.close().await;
    result
}

fn unavailable(e: care_core::ledger::LedgerError) -> StartError {
    StartError(format!("ledger unavailable: {e}"))
}

/// A value from the ledger escaped for its one line.
fn line(value: &str) -> String {
    escape_line(value).text
}

/// `--since`: an RFC 3339 time, or an age (`90s`, `30m`, `12h`, `7d`) before `now`.
fn parse_since(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, StartError> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    let bad = || StartError("--since takes an RFC 3339 time or an age such as 30m, 12h, 7d".into());
    let split = text.len().checked_sub(1).ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let n: i64 = number.parse().map_err(|_| bad())?;
    let age = match unit {
        "s" => Duration::try_seconds(n),
        "m" => Duration::try_minutes(n),
        "h" => Duration::try_hours(n),
        "d" => Duration::try_days(n),
        _ => None,
    }
    .filter(|_| n >= 0)
    .ok_or_else(bad)?;
    now.checked_sub_signed(age).ok_or_else(bad)
}

async fn list(ledger: &dyn Ledger, query: &AuditQuery) -> Result<ExitCode, StartError> {
    let rows = ledger.audit_rows(query).await.map_err(unavailable)?;
    let mut out = format!(
        "{:>8}  {:<24}  {:<9}  {:<16}  {:<18}  {:<24}  {:<7}  {:<6}  {}\n",
        "ID", "AT", "ROLE", "CLIENT", "SESSION", "TOOL", "OUTCOME", "DECIDE", "WHY"
    );
    for row in &rows {
        let r = &row.record;
        let why = match (&r.denied_by, &r.error_code) {
            (Some(rule), Some(code)) => format!("{} by {}", line(code), line(rule)),
            (None, Some(code)) => line(code),
            (Some(rule), None) => line(rule),
            (None, None) => "-".to_owned(),
        };
        out.push_str(&format!(
            "{:>8}  {:<24}  {:<9}  {:<16}  {:<18}  {:<24}  {:<7}  {:<6}  {}\n",
            row.id,
            r.at.format("%Y-%m-%dT%H:%M:%S%.3fZ"),
            line(&r.role),
            line(&r.client),
            line(&r.session),
            line(&r.tool),
            line(&r.outcome),
            line(&r.decision),
            why
        ));
    }
    print(&out);
    Ok(ExitCode::SUCCESS)
}

async fn show(ledger: &dyn Ledger, id: i64) -> Result<ExitCode, StartError> {
    let row = ledger
        .audit_row(id)
        .await
        .map_err(unavailable)?
        .ok_or_else(|| StartError("no audit row with that id".into()))?;
    print(&describe(&row));
    Ok(ExitCode::SUCCESS)
}

/// Every field of a row, one per line.
fn describe(row: &StoredAudit) -> String {
    let r = &row.record;
    let opt = |v: &Option<String>| v.as_deref().map_or_else(|| "-".to_owned(), line);
    let mut out = String::new();
    let mut field = |name: &str, value: String| out.push_str(&format!("{name:<14} {value}\n"));
    field("id:", row.id.to_string());
    field("at:", r.at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string());
    field("role:", line(&r.role));
    field("client:", line(&r.client));
    field("session:", line(&r.session));
    field("tool:", line(&r.tool));
    field("capability:", line(&r.capability));
    field("outcome:", line(&r.outcome));
    field("error code:", opt(&r.error_code));
    field("decision:", line(&r.decision));
    field(
        "rules passed:",
        if r.rules.is_empty() {
            "-".to_owned()
        } else {
            line(&r.rules.join(", "))
        },
    );
    field("denied by:", opt(&r.denied_by));
    field(
        "output:",
        r.output.map_or_else(
            || "-".to_owned(),
            |o| {
                format!(
                    "{} bytes, {} items{}",
                    o.bytes,
                    o.items,
                    if o.truncated { ", truncated" } else { "" }
                )
            },
        ),
    );
    field("duration:", format!("{} µs", r.duration_us));
    field("args digest:", line(&r.args_digest));
    field("approval:", opt(&r.approval_id));
    if let Some(trail) = &r.approval_trail {
        out.push_str(&approval_trail(trail));
    }
    match &row.link {
        Some(link) => {
            out.push_str(&format!(
                "{:<14} {} #{}\n",
                "chain:",
                line(&link.chain),
                link.seq
            ));
            out.push_str(&format!("{:<14} {}\n", "hash:", line(&link.hash)));
            out.push_str(&format!("{:<14} {}\n", "previous:", line(&link.prev_hash)));
        }
        None => out.push_str(&format!(
            "{:<14} none (written before chaining)\n",
            "chain:"
        )),
    }
    out
}

/// The approval's decisions and expiry, from the trail's JSON; shown raw (escaped) if it does
/// not parse.
fn approval_trail(trail: &str) -> String {
    let ms = |v: &Value| {
        v.as_i64()
            .and_then(DateTime::from_timestamp_millis)
            .map_or_else(|| "?".to_owned(), |t| t.to_rfc3339())
    };
    let Ok(parsed) = serde_json::from_str::<Value>(trail) else {
        return format!("{:<14} {}\n", "approved by:", line(trail));
    };
    let mut out = format!("{:<14} {}\n", "expires:", ms(&parsed["expires_at"]));
    let decisions = parsed["decisions"].as_array().cloned().unwrap_or_default();
    if decisions.is_empty() {
        out.push_str(&format!("{:<14} none recorded\n", "decisions:"));
    }
    for d in &decisions {
        out.push_str(&format!(
            "{:<14} {} {} at {}\n",
            "decision:",
            line(d["approver"].as_str().unwrap_or("?")),
            line(d["decision"].as_str().unwrap_or("?")),
            ms(&d["at"])
        ));
    }
    out
}

async fn verify(ledger: &dyn Ledger, salt: &[u8]) -> Result<ExitCode, StartError> {
    let mut rows = Vec::new();
    let mut after = None;
    loop {
        let page = ledger
            .audit_rows(&AuditQuery {
                after_id: after,
                oldest_first: true,
                limit: PAGE,
                ..AuditQuery::default()
            })
            .await
            .map_err(unavailable)?;
        let full = page.len() == PAGE as usize;
        after = page.last().map(|r| r.id).or(after);
        rows.extend(page);
        if !full {
            break;
        }
    }
    let heads = ledger.audit_heads().await.map_err(unavailable)?;
    let report = audit_chain::verify(salt, rows, &heads);
    print(&summary(&report));
    Ok(if report.intact() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn summary(report: &Report) -> String {
    let mut out = format!(
        "{} rows in {} chains checked; {} rows from before chaining\n",
        report.rows, report.chains, report.unchained_before_chaining
    );
    if report.intact() {
        out.push_str("intact: no row was edited, deleted, inserted or reordered\n");
        return out;
    }
    out.push_str(&format!("TAMPERED: {} findings\n", report.findings.len()));
    for f in &report.findings {
        let id = f.id.map_or_else(|| "-".to_owned(), |id| id.to_string());
        out.push_str(&format!(
            "{:<9}  row {:<8}  {}\n",
            f.kind.as_str(),
            id,
            line(&f.detail)
        ));
    }
    out
}

#[allow(clippy::print_stdout)]
fn print(text: &str) {
    print!("{text}");
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_a_time_or_an_age() {
        let now = DateTime::parse_from_rfc3339("2026-11-30T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let at = |s: &str| parse_since(s, now).map(|t| t.to_rfc3339());
        assert_eq!(at("30m").unwrap(), "2026-11-30T11:30:00+00:00");
        assert_eq!(at("2d").unwrap(), "2026-11-28T12:00:00+00:00");
        assert_eq!(
            at("2026-11-01T00:00:00+01:00").unwrap(),
            "2026-10-31T23:00:00+00:00"
        );
        for bad in ["", "m", "-5m", "5w", "5", "99999999999999999d"] {
            assert!(at(bad).is_err(), "{bad}");
        }
    }
}
