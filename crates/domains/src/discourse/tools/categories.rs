//! `discourse_categories`: the forum's categories in scope: id, name, slug, topic count.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use care_core::error::ToolError;
use care_core::input::Validate;
use care_core::tool::{CallContext, ReadTool};

use crate::discourse::context::DiscourseContext;
use crate::discourse::model;

#[derive(Debug)]
pub struct Categories(pub Arc<DiscourseContext>);

/// Lists the forum's categories this server may read.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CategoriesArgs {}

impl Validate for CategoriesArgs {
    fn validate(&self) -> Result<(), ToolError> {
        Ok(())
    }
}

impl ReadTool for Categories {
    type Args = CategoriesArgs;
    const NAME: &'static str = "discourse_categories";
    const DESCRIPTION: &'static str = "List the forum's categories this server may read: category id, name, slug, parent category, topic and post counts. Names and slugs are fenced as <user_content>.";

    async fn run(&self, _ctx: &CallContext, _args: CategoriesArgs) -> Result<Value, ToolError> {
        let categories: Vec<Value> = self
            .0
            .categories()
            .await?
            .iter()
            .filter(|c| self.0.config.allows_category(Some(c.id)))
            .map(model::category_json)
            .collect();
        Ok(json!({ "count": categories.len(), "categories": categories }))
    }
}
