//! Rebuilds the crate when a migration changes: `sqlx::migrate!` embeds them at compile time
//! but cannot tell cargo to watch the directory on stable Rust.

fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
