//! Link layout of the release binary on x86_64 Linux (where rustc links with its bundled LLD):
//! the functions a served session runs (`hot-symbols.txt`, made by `scripts/hot-symbols`)
//! placed together at the start of `.text`, and relative relocations packed (DT_RELR).
//!
//! Why: the kernel maps a binary's pages around each page a process touches, so code spread
//! over 21 MiB of `.text` made most of it resident, and 1.3 MiB of relocation entries were read
//! at every start (bench/: RSS and cold start). Names the file lacks are only left unordered.

// Cargo reads a build script's instructions from its stdout.
#![allow(clippy::print_stdout)]

use std::env;
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let order = manifest.join("hot-symbols.txt");
    println!("cargo:rerun-if-changed={}", order.display());
    println!("cargo:rerun-if-env-changed=CARE_LINK_PLAIN");

    let target = env::var("TARGET").unwrap_or_default();
    let release = env::var("PROFILE").is_ok_and(|p| p == "release");
    // An escape hatch for a linker other than LLD (these flags are LLD's and GNU ld 2.38's).
    let plain = env::var_os("CARE_LINK_PLAIN").is_some();
    if target != "x86_64-unknown-linux-gnu" || !release || plain {
        return;
    }
    // Relative relocations as a bitmap (glibc 2.36+, Debian 12): kilobytes instead of 1.3 MiB.
    println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    if order.is_file() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        // The list is a profile of one build; other builds miss some names, harmlessly.
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}
