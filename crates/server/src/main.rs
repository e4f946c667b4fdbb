//! care-mcp binary
fn main() {}
