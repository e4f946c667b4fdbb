//! A real MCP client over stdio (rmcp's client) for the scripted walk-through: one child
//! `care-mcp --role R` process per role, calls answered as the result envelope.

use std::process::Stdio;

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value};

use crate::startup::StartError;

pub struct RoleClientSession {
    pub role: String,
    service: RunningService<RoleClient, ()>,
}

impl std::fmt::Debug for RoleClientSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoleClientSession")
            .field("role", &self.role)
            .finish()
    }
}

impl RoleClientSession {
    pub async fn start(
        mut command: tokio::process::Command,
        role: &str,
    ) -> Result<Self, StartError> {
        command
            .arg("--role")
            .arg(role)
            .env("CARE_CLIENT_ID", format!("sandbox-demo-{role}"));
        let (transport, _stderr) = TokioChildProcess::builder(command)
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| StartError(format!("cannot start the {role} role: {e}")))?;
        let service = ()
            .serve(transport)
            .await
            .map_err(|e| StartError(format!("the {role} role did not initialize: {e}")))?;
        Ok(RoleClientSession {
            role: role.to_owned(),
            service,
        })
    }

    pub async fn tool_names(&self) -> Result<Vec<String>, StartError> {
        let tools = self
            .service
            .list_all_tools()
            .await
            .map_err(|e| StartError(format!("tools/list failed for {}: {e}", self.role)))?;
        Ok(tools.into_iter().map(|t| t.name.into_owned()).collect())
    }

    /// Calls a tool and returns its envelope (`{ok, data}` or `{ok:false, error}`).
    pub async fn call(&self, name: &str, arguments: Value) -> Result<Value, StartError> {
        let mut params = CallToolRequestParams::new(name.to_owned());
        params.arguments = match arguments {
            Value::Object(map) => Some(map),
            _ => Some(Map::new()),
        };
        let result = self
            .service
            .call_tool(params)
            .await
            .map_err(|e| StartError(format!("{name} failed at the protocol level: {e}")))?;
        result
            .structured_content
            .ok_or_else(|| StartError(format!("{name} answered without structured content")))
    }

    pub async fn close(self) {
        let _ = self.service.cancel().await;
    }
}
