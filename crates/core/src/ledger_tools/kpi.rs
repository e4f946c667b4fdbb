//! `kpi_record` and `kpi_report`: operational metrics against their targets.

use std::sync::Arc;

use chrono::Duration;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{round2, window_start};
use crate::error::ToolError;
use crate::input::{self, MAX_NAME_CHARS, Validate};
use crate::ledger::{KpiEntry, KpiSeries};
use crate::tool::{CallContext, LedgerWriteTool, ReadTool, Services, ledger_error};

#[derive(Debug)]
pub struct KpiRecord(pub Arc<Services>);

/// Records one observation of a metric.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KpiRecordArgs {
    /// Metric name: lower-case letters, digits, `_`, `.`, `-` (e.g. `reviews.rating_avg`).
    #[schemars(length(min = 1, max = 64))]
    pub metric: String,
    /// The observed value (finite).
    pub value: f64,
    /// The target for this metric, if it has one.
    pub target: Option<f64>,
    /// Unit label, e.g. `stars`, `%`, `hours` (at most 16 characters).
    #[schemars(length(min = 1, max = 16))]
    pub unit: Option<String>,
    /// When it was observed (RFC 3339); defaults to now. At most 5 minutes in the future.
    pub at: Option<String>,
    /// False for metrics where lower is better (e.g. response time). Default true.
    pub higher_is_better: Option<bool>,
}

impl Validate for KpiRecordArgs {
    fn validate(&self) -> Result<(), ToolError> {
        input::check_name("metric", &self.metric, MAX_NAME_CHARS)?;
        input::check_finite("value", self.value)?;
        if let Some(t) = self.target {
            input::check_finite("target", t)?;
        }
        if let Some(unit) = &self.unit {
            let ok = !unit.is_empty()
                && unit.chars().count() <= 16
                && !unit.chars().any(|c| c.is_control() || "<>&".contains(c));
            if !ok {
                return Err(ToolError::invalid("unit"));
            }
        }
        if let Some(at) = &self.at {
            input::parse_time("at", at)?;
        }
        Ok(())
    }
}

impl LedgerWriteTool for KpiRecord {
    type Args = KpiRecordArgs;
    const NAME: &'static str = "kpi_record";
    const DESCRIPTION: &'static str = "Record one observation of an operational metric (optionally with its target). Internal ledger write; not an external action.";

    async fn run(&self, ctx: &CallContext, args: KpiRecordArgs) -> Result<Value, ToolError> {
        let at = match &args.at {
            Some(text) => input::parse_time("at", text)?,
            None => ctx.now,
        };
        if at > ctx.now + Duration::minutes(5) {
            return Err(ToolError::invalid("at"));
        }
        let entry = KpiEntry {
            metric: args.metric,
            value: args.value,
            target: args.target,
            unit: args.unit,
            higher_is_better: args.higher_is_better.unwrap_or(true),
            recorded_at: at,
            recorded_by_role: ctx.role.as_str().to_owned(),
        };
        self.0
            .ledger
            .record_kpi(&entry)
            .await
            .map_err(ledger_error)?;
        Ok(json!({
            "recorded": {
                "metric": entry.metric,
                "value": entry.value,
                "target": entry.target,
                "unit": entry.unit,
                "higher_is_better": entry.higher_is_better,
                "at": entry.recorded_at.to_rfc3339(),
            }
        }))
    }
}

#[derive(Debug)]
pub struct KpiReport(pub Arc<Services>);

/// Compares each metric's latest value with its target over a window.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KpiReportArgs {
    /// Only this metric; all metrics when absent.
    #[schemars(length(min = 1, max = 64))]
    pub metric: Option<String>,
    /// Window start (RFC 3339); default 30 days ago.
    pub since: Option<String>,
}

impl Validate for KpiReportArgs {
    fn validate(&self) -> Result<(), ToolError> {
        if let Some(m) = &self.metric {
            input::check_name("metric", m, MAX_NAME_CHARS)?;
        }
        if let Some(s) = &self.since {
            input::parse_time("since", s)?;
        }
        Ok(())
    }
}

/// How the latest value stands against the target.
pub fn attainment(latest: &KpiEntry) -> (Option<f64>, &'static str) {
    let Some(target) = latest.target else {
        return (None, "no_target");
    };
    let pct = (target != 0.0).then(|| round2(latest.value / target * 100.0));
    let status = match (
        latest.higher_is_better,
        latest.value >= target,
        latest.value <= target,
    ) {
        (true, true, _) | (false, _, true) => "on_target",
        (true, false, _) => "under_target",
        (false, _, false) => "over_target",
    };
    (pct, status)
}

fn series_json(s: &KpiSeries) -> Value {
    let (pct, status) = attainment(&s.latest);
    json!({
        "metric": s.metric,
        "latest": { "value": s.latest.value, "at": s.latest.recorded_at.to_rfc3339() },
        "target": s.latest.target,
        "unit": s.latest.unit,
        "higher_is_better": s.latest.higher_is_better,
        "attainment_pct": pct,
        "status": status,
        "count": s.count,
        "mean": round2(s.mean),
        "min": s.min,
        "max": s.max,
    })
}

impl ReadTool for KpiReport {
    type Args = KpiReportArgs;
    const NAME: &'static str = "kpi_report";
    const DESCRIPTION: &'static str = "Report metrics over a window: latest value against target (attainment % and on/under target), count, mean, min and max.";

    async fn run(&self, ctx: &CallContext, args: KpiReportArgs) -> Result<Value, ToolError> {
        let since = window_start(args.since.as_deref(), ctx.now)?;
        let series = self
            .0
            .ledger
            .kpi_series(args.metric.as_deref(), Some(since))
            .await
            .map_err(ledger_error)?;
        // A map built by hand: `json!` copies an interpolated `Value` through `to_value`.
        let mut report = Map::new();
        report.insert("since".into(), Value::String(since.to_rfc3339()));
        report.insert(
            "metrics".into(),
            Value::Array(series.iter().map(series_json).collect()),
        );
        Ok(Value::Object(report))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    fn entry(value: f64, target: Option<f64>, higher_is_better: bool) -> KpiEntry {
        KpiEntry {
            metric: "m".into(),
            value,
            target,
            unit: None,
            higher_is_better,
            recorded_at: Utc::now(),
            recorded_by_role: "lead".into(),
        }
    }

    #[test]
    fn attainment_matches_the_issue_example() {
        assert_eq!(
            attainment(&entry(4.2, Some(4.5), true)),
            (Some(93.33), "under_target")
        );
        assert_eq!(
            attainment(&entry(4.5, Some(4.5), true)),
            (Some(100.0), "on_target")
        );
        assert_eq!(
            attainment(&entry(6.0, Some(4.0), false)),
            (Some(150.0), "over_target")
        );
        assert_eq!(
            attainment(&entry(3.0, Some(4.0), false)),
            (Some(75.0), "on_target")
        );
        assert_eq!(attainment(&entry(3.0, None, true)), (None, "no_target"));
        assert_eq!(
            attainment(&entry(3.0, Some(0.0), true)),
            (None, "on_target")
        );
    }
}
