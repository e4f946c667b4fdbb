//! The `care-mcp` binary: everything lives in the library (`lib.rs`), so the fuzz targets can
//! reach the same code the binary runs.

use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    care_mcp::main()
}
