//! `asc_apps_list`: the allowlisted apps of the team.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use care_core::error::ToolError;
use care_core::input::Validate;
use care_core::tool::{CallContext, ReadTool};

use crate::asc::context::AscContext;
use crate::asc::model;

#[derive(Debug)]
pub struct AppsList(pub Arc<AscContext>);

/// Lists the apps this server may read (its allowlist), as App Store Connect knows them.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppsListArgs {}

impl Validate for AppsListArgs {
    fn validate(&self) -> Result<(), ToolError> {
        Ok(())
    }
}

impl ReadTool for AppsList {
    type Args = AppsListArgs;
    const NAME: &'static str = "asc_apps_list";
    const DESCRIPTION: &'static str = "List the App Store Connect apps this server may read and answer reviews of: app id, name, bundle id, primary locale. App names and other store text are fenced as <user_content>.";

    async fn run(&self, _ctx: &CallContext, _args: AppsListArgs) -> Result<Value, ToolError> {
        let apps = self.0.client.apps(&self.0.config.app_ids).await?;
        Ok(json!({
            "apps": apps.iter().map(model::app_json).collect::<Vec<_>>(),
            "count": apps.len(),
        }))
    }
}
