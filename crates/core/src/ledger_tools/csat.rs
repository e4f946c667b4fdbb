//! `csat_record` and `csat_summary`: customer satisfaction scores per channel.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{round2, window_start};
use crate::error::ToolError;
use crate::input::{self, MAX_ID_CHARS, Validate};
use crate::ledger::{CsatDistribution, CsatEntry, SupportChannel};
use crate::tool::{CallContext, LedgerWriteTool, ReadTool, Services, ledger_error};

/// Longest CSAT comment kept.
pub const MAX_COMMENT_CHARS: usize = 2_000;

#[derive(Debug)]
pub struct CsatRecord(pub Arc<Services>);

/// Records one satisfaction score for a ticket.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CsatRecordArgs {
    pub channel: SupportChannel,
    /// The conversation the score belongs to (review id, topic id, mail thread id).
    #[schemars(length(min = 1, max = 128))]
    pub ticket_ref: String,
    /// 1 (very unsatisfied) to 5 (very satisfied).
    #[schemars(range(min = 1, max = 5))]
    pub score: u8,
    /// Optional free-text comment, at most 2,000 characters.
    #[schemars(length(min = 1, max = 2000))]
    pub comment: Option<String>,
}

impl Validate for CsatRecordArgs {
    fn validate(&self) -> Result<(), ToolError> {
        input::check_id("ticket_ref", &self.ticket_ref, MAX_ID_CHARS)?;
        if !(1..=5).contains(&self.score) {
            return Err(ToolError::invalid("score"));
        }
        input::check_opt_text("comment", self.comment.as_deref(), MAX_COMMENT_CHARS)
    }
}

impl LedgerWriteTool for CsatRecord {
    type Args = CsatRecordArgs;
    const NAME: &'static str = "csat_record";
    const DESCRIPTION: &'static str = "Record a customer satisfaction score (1-5) for a ticket in a channel (app_store, forum, mail). Internal ledger write.";

    async fn run(&self, ctx: &CallContext, args: CsatRecordArgs) -> Result<Value, ToolError> {
        let entry = CsatEntry {
            channel: args.channel,
            ticket_ref: args.ticket_ref,
            score: args.score,
            comment: args.comment,
            recorded_at: ctx.now,
            recorded_by_role: ctx.role.as_str().to_owned(),
        };
        self.0
            .ledger
            .record_csat(&entry)
            .await
            .map_err(ledger_error)?;
        Ok(json!({
            "recorded": {
                "channel": entry.channel,
                "ticket_ref": entry.ticket_ref,
                "score": entry.score,
                "at": entry.recorded_at.to_rfc3339(),
            }
        }))
    }
}

#[derive(Debug)]
pub struct CsatSummary(pub Arc<Services>);

/// Summarises scores per channel over a window.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CsatSummaryArgs {
    /// Only this channel; all channels when absent.
    pub channel: Option<SupportChannel>,
    /// Window start (RFC 3339); default 30 days ago.
    pub since: Option<String>,
}

impl Validate for CsatSummaryArgs {
    fn validate(&self) -> Result<(), ToolError> {
        if let Some(s) = &self.since {
            input::parse_time("since", s)?;
        }
        Ok(())
    }
}

/// Count, mean and the 1..=5 distribution of a set of scores.
pub fn summarise(counts: &[u64; 5]) -> Value {
    let count: u64 = counts.iter().sum();
    let total: u64 = counts
        .iter()
        .enumerate()
        .map(|(i, n)| (i as u64 + 1) * n)
        .sum();
    let mean = (count > 0).then(|| round2(total as f64 / count as f64));
    // CSAT in the usual sense: share of 4 and 5 scores.
    let satisfied_pct =
        (count > 0).then(|| round2((counts[3] + counts[4]) as f64 / count as f64 * 100.0));
    json!({
        "count": count,
        "mean": mean,
        "satisfied_pct": satisfied_pct,
        "distribution": { "1": counts[0], "2": counts[1], "3": counts[2], "4": counts[3], "5": counts[4] },
    })
}

fn merge(distributions: &[CsatDistribution]) -> [u64; 5] {
    let mut all = [0u64; 5];
    for d in distributions {
        for (slot, n) in all.iter_mut().zip(d.counts) {
            *slot += n;
        }
    }
    all
}

impl ReadTool for CsatSummary {
    type Args = CsatSummaryArgs;
    const NAME: &'static str = "csat_summary";
    const DESCRIPTION: &'static str = "Summarise customer satisfaction per channel over a window: count, mean, share of 4-5 scores and the 1-5 distribution.";

    async fn run(&self, ctx: &CallContext, args: CsatSummaryArgs) -> Result<Value, ToolError> {
        let since = window_start(args.since.as_deref(), ctx.now)?;
        let rows = self
            .0
            .ledger
            .csat_distribution(args.channel, Some(since))
            .await
            .map_err(ledger_error)?;
        let channels: Vec<Value> = rows
            .iter()
            .map(|d| {
                let mut v = summarise(&d.counts);
                if let Value::Object(map) = &mut v {
                    map.insert("channel".into(), json!(d.channel));
                }
                v
            })
            .collect();
        Ok(json!({
            "since": since.to_rfc3339(),
            "overall": summarise(&merge(&rows)),
            "channels": channels,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_counts_means_and_distribution() {
        let v = summarise(&[1, 0, 1, 1, 2]);
        assert_eq!(v["count"], 5);
        assert_eq!(v["mean"], 3.6);
        assert_eq!(v["satisfied_pct"], 60.0);
        assert_eq!(v["distribution"]["5"], 2);
        let empty = summarise(&[0; 5]);
        assert_eq!(empty["mean"], Value::Null);
    }
}
