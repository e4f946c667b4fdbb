//! `sla_status`: tickets awaiting a first response against each channel's target.

use std::sync::Arc;

use chrono::Duration;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::round2;
use crate::error::ToolError;
use crate::input::Validate;
use crate::ledger::SupportChannel;
use crate::tool::{CallContext, ReadTool, Services, ledger_error};

#[derive(Debug)]
pub struct SlaStatus(pub Arc<Services>);

/// First-response SLA per channel.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlaStatusArgs {
    /// Only this channel; all channels when absent.
    pub channel: Option<SupportChannel>,
}

impl Validate for SlaStatusArgs {
    fn validate(&self) -> Result<(), ToolError> {
        Ok(())
    }
}

impl ReadTool for SlaStatus {
    type Args = SlaStatusArgs;
    const NAME: &'static str = "sla_status";
    const DESCRIPTION: &'static str = "First-response SLA per channel: tickets awaiting a first response, how many are past the channel's target, and the oldest wait in hours.";

    async fn run(&self, ctx: &CallContext, args: SlaStatusArgs) -> Result<Value, ToolError> {
        let targets = &self.0.config.sla_targets;
        let channels: Vec<SupportChannel> = match args.channel {
            Some(c) => vec![c],
            None => SupportChannel::ALL.to_vec(),
        };
        let cutoffs: Vec<_> = channels
            .iter()
            .map(|&c| (c, ctx.now - Duration::hours(i64::from(targets.hours(c)))))
            .collect();
        let rows = self
            .0
            .ledger
            .awaiting_first_response(args.channel, &cutoffs)
            .await
            .map_err(ledger_error)?;
        let report: Vec<Value> = channels
            .iter()
            .map(|&channel| {
                let row = rows.iter().find(|r| r.channel == channel);
                let oldest_hours = row
                    .and_then(|r| r.oldest_opened_at)
                    .map(|t| round2((ctx.now - t).num_seconds() as f64 / 3600.0));
                let breached = row.map_or(0, |r| r.breached);
                json!({
                    "channel": channel,
                    "target_hours": targets.hours(channel),
                    "awaiting": row.map_or(0, |r| r.awaiting),
                    "breached": breached,
                    "oldest_wait_hours": oldest_hours,
                    "status": if breached > 0 { "breached" } else { "within_target" },
                })
            })
            .collect();
        Ok(json!({ "as_of": ctx.now.to_rfc3339(), "channels": report }))
    }
}
