//! Benchmark baseline only (see `bench/http`): a plain rmcp Streamable HTTP server with the
//! same transport settings `care-mcp serve --http` uses (sessions, loopback Host check), one
//! tool answering a fixed result, no authentication, no ledger, no audit. What care-mcp adds
//! on top of rmcp's transport is the ratio against this.
//!
//! Usage: `plain_http [ADDR:PORT]` (default 127.0.0.1:0); prints `listening on ADDR` on stdout.
// A load generator, not an upstream client: the domain kit's HttpClient rule does not apply.
#![allow(clippy::disallowed_methods)]

use std::sync::Arc;

use axum::serve::ListenerExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};

#[derive(Debug, Clone)]
struct Plain;

impl ServerHandler for Plain {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = serde_json::json!({"type": "object"});
        let schema = match schema {
            serde_json::Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "kpi_report",
            "fixed answer",
            Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let envelope = serde_json::json!({"ok": true, "data": {"metrics": []}});
        let mut result = CallToolResult::success(vec![ContentBlock::text(envelope.to_string())]);
        result.structured_content = Some(envelope);
        Ok(result.into())
    }
}

#[allow(clippy::print_stdout)]
#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let stateless = std::env::args().any(|a| a == "--stateless");
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(!stateless)
        .with_json_response(stateless);
    let service = StreamableHttpService::new(
        || Ok(Plain),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let app = axum::Router::new().route_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on {}", listener.local_addr()?);
    // As `care-mcp serve --http`: TCP_NODELAY, or every call waits for a delayed ACK.
    let listener = listener.tap_io(|stream| {
        let _ = stream.set_nodelay(true);
    });
    axum::serve(listener, app).await
}
