//! The tools that need no upstream service: KPI, CSAT, SLA and approvals.

pub mod approval;
pub mod csat;
pub mod kpi;
pub mod sla;

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};

use crate::error::ToolError;
use crate::input;
use crate::pipeline::WritePlanner;
use crate::tool::{LedgerWrite, Read, Services, ToolHandler};

/// Reports look back this far unless `since` says otherwise.
pub const DEFAULT_REPORT_DAYS: i64 = 30;

/// Every ledger and approval tool, for the registry to filter by role. `planners` are the
/// process's external-write tools, which `approval_request` checks arguments with.
pub fn all(
    services: &Arc<Services>,
    planners: Vec<Arc<dyn WritePlanner>>,
) -> Vec<Arc<dyn ToolHandler>> {
    let s = || Arc::clone(services);
    vec![
        Arc::new(LedgerWrite(kpi::KpiRecord(s()))),
        Arc::new(Read(kpi::KpiReport(s()))),
        Arc::new(LedgerWrite(csat::CsatRecord(s()))),
        Arc::new(Read(csat::CsatSummary(s()))),
        Arc::new(Read(sla::SlaStatus(s()))),
        Arc::new(LedgerWrite(approval::ApprovalRequest {
            services: s(),
            planners,
        })),
        Arc::new(Read(approval::ApprovalStatusTool(s()))),
        Arc::new(Read(approval::ApprovalList(s()))),
    ]
}

/// `since` if given (RFC 3339, not in the future), else the default window.
fn window_start(since: Option<&str>, now: DateTime<Utc>) -> Result<DateTime<Utc>, ToolError> {
    match since {
        None => Ok(now - Duration::days(DEFAULT_REPORT_DAYS)),
        Some(text) => {
            let t = input::parse_time("since", text)?;
            if t > now {
                return Err(ToolError::invalid("since"));
            }
            Ok(t)
        }
    }
}

/// Rounds to two decimals for display.
fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
