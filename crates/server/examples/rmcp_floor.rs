//! Benchmark baseline only (see `bench/README.md`): the smallest stdio MCP server on care-mcp's
//! own stack, to tell what the framework costs a start from what care-mcp adds to it. rmcp
//! (pinned as the workspace pins it) over its stdio transport on a current-thread tokio runtime,
//! mimalloc as the global allocator (the same build switches), built with the same release
//! profile. It serves no tool: `initialize` and an empty `tools/list`, as the echo responder.

use std::process::ExitCode;

use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, ServiceExt};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A server with the tools capability and no tool.
#[derive(Debug)]
struct Floor;

impl ServerHandler for Floor {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("rmcp-floor", env!("CARGO_PKG_VERSION")))
    }
}

fn main() -> ExitCode {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return ExitCode::FAILURE;
    };
    runtime.block_on(async {
        match Floor.serve(rmcp::transport::stdio()).await {
            Ok(service) => match service.waiting().await {
                Ok(_) => ExitCode::SUCCESS,
                Err(_) => ExitCode::FAILURE,
            },
            Err(_) => ExitCode::FAILURE,
        }
    })
}
