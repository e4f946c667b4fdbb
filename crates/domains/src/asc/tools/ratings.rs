//! `asc_ratings_summary`: count, mean and histogram of star ratings over a window, overall and
//! per territory.
//!
//! App Store Connect's API has no ratings histogram: the star-only ratings customers leave
//! without writing a review are not exposed. This is therefore a summary of the *written*
//! reviews created in the window, computed by paging through them (at most
//! [`MAX_SUMMARY_PAGES`] pages of 200; `truncated` says when the window held more).

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use care_core::error::ToolError;
use care_core::input::{self, Validate};
use care_core::tool::{CallContext, ReadTool};

use super::{check_app_id, check_territory, round2};
use crate::asc::api::{MAX_PAGE, ReviewQuery};
use crate::asc::context::AscContext;

/// Pages of 200 reviews read at most for one summary.
pub const MAX_SUMMARY_PAGES: usize = 10;
/// The window when `since` is absent.
pub const DEFAULT_DAYS: i64 = 30;

#[derive(Debug)]
pub struct RatingsSummary(pub Arc<AscContext>);

/// Star ratings of one app's written reviews over a window.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RatingsSummaryArgs {
    /// The app (one of `asc_apps_list`).
    #[schemars(length(min = 1, max = 64))]
    pub app_id: String,
    /// Window start (RFC 3339); default 30 days ago.
    pub since: Option<String>,
    /// Window end (RFC 3339); default now.
    pub until: Option<String>,
    /// Only this territory (ISO 3166-1 alpha-3).
    #[schemars(length(min = 3, max = 3))]
    pub territory: Option<String>,
}

impl Validate for RatingsSummaryArgs {
    fn validate(&self) -> Result<(), ToolError> {
        check_app_id(&self.app_id)?;
        check_territory(self.territory.as_deref())?;
        if let Some(s) = &self.since {
            input::parse_time("since", s)?;
        }
        if let Some(u) = &self.until {
            input::parse_time("until", u)?;
        }
        Ok(())
    }
}

/// Count, sum and histogram of one group.
#[derive(Debug, Default, Clone, PartialEq)]
struct Tally {
    count: u64,
    sum: u64,
    histogram: [u64; 5],
}

impl Tally {
    fn add(&mut self, rating: u8) {
        if (1..=5).contains(&rating) {
            self.count += 1;
            self.sum += u64::from(rating);
            self.histogram[usize::from(rating - 1)] += 1;
        }
    }

    fn json(&self) -> Value {
        let mean = (self.count > 0).then(|| round2(self.sum as f64 / self.count as f64));
        json!({
            "count": self.count,
            "mean": mean,
            "histogram": {
                "1": self.histogram[0], "2": self.histogram[1], "3": self.histogram[2],
                "4": self.histogram[3], "5": self.histogram[4],
            },
        })
    }
}

fn window(
    args: &RatingsSummaryArgs,
    now: DateTime<Utc>,
) -> Result<(DateTime<Utc>, DateTime<Utc>), ToolError> {
    let until = match &args.until {
        Some(u) => input::parse_time("until", u)?,
        None => now,
    };
    let since = match &args.since {
        Some(s) => input::parse_time("since", s)?,
        None => until - Duration::days(DEFAULT_DAYS),
    };
    if since >= until {
        return Err(ToolError::invalid("since"));
    }
    Ok((since, until))
}

impl ReadTool for RatingsSummary {
    type Args = RatingsSummaryArgs;
    const NAME: &'static str = "asc_ratings_summary";
    const DESCRIPTION: &'static str = "Summarise star ratings of one app's written reviews over a window (default 30 days): count, mean and 1-5 histogram, overall and per territory. App Store Connect exposes no histogram of star-only ratings, so this covers written reviews only.";

    async fn run(&self, ctx: &CallContext, args: RatingsSummaryArgs) -> Result<Value, ToolError> {
        let asc = &self.0;
        asc.require_app(&args.app_id)?;
        let (since, until) = window(&args, ctx.now)?;
        let mut query = ReviewQuery {
            territory: args.territory.clone(),
            limit: MAX_PAGE,
            ..ReviewQuery::default()
        };
        let mut overall = Tally::default();
        let mut territories: BTreeMap<String, Tally> = BTreeMap::new();
        let mut truncated = false;
        for page_number in 0..MAX_SUMMARY_PAGES {
            let page = asc.client.reviews_page(&args.app_id, &query).await?;
            asc.remember(&args.app_id, &page.reviews);
            for review in page
                .reviews
                .iter()
                .filter(|r| r.created >= since && r.created <= until)
            {
                overall.add(review.rating);
                let territory = review
                    .territory
                    .clone()
                    .unwrap_or_else(|| "unknown".to_owned());
                territories.entry(territory).or_default().add(review.rating);
            }
            let past_window = page.reviews.last().is_some_and(|r| r.created < since);
            match page.next_cursor {
                Some(c) if !past_window => {
                    truncated = page_number + 1 == MAX_SUMMARY_PAGES;
                    query.cursor = Some(c);
                }
                _ => break,
            }
        }
        let per_territory: Vec<Value> = territories
            .iter()
            .map(|(t, tally)| {
                let mut v = tally.json();
                v["territory"] = json!(t);
                v
            })
            .collect();
        let mut out = overall.json();
        out["app_id"] = json!(args.app_id);
        out["since"] = json!(since.to_rfc3339());
        out["until"] = json!(until.to_rfc3339());
        out["source"] = json!("written_reviews");
        out["per_territory"] = json!(per_territory);
        out["truncated"] = json!(truncated);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tally_counts_means_and_histograms() {
        let mut t = Tally::default();
        for r in [5, 4, 4, 1, 9] {
            t.add(r);
        }
        assert_eq!(t.count, 4);
        assert_eq!(t.json()["mean"], json!(3.5));
        assert_eq!(
            t.json()["histogram"],
            json!({"1": 1, "2": 0, "3": 0, "4": 2, "5": 1})
        );
        assert_eq!(Tally::default().json()["mean"], Value::Null);
    }
}
