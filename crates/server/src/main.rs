//! The `care-mcp` binary: everything lives in the library (`lib.rs`), so the fuzz targets can
//! reach the same code the binary runs.

use std::process::ExitCode;

fn main() -> ExitCode {
    care_mcp::main()
}
