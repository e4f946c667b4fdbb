//! Link layout of the release binary on x86_64 Linux (where rustc links with its bundled LLD):
//! the functions a served session runs (`hot-symbols.txt`, made by `scripts/hot-symbols`)
//! placed together at the start of `.text`, and relative relocations packed (DT_RELR).
//!
//! Why: the kernel maps a binary's pages around each page a process touches, so code spread
//! over 21 MiB of `.text` made most of it resident, and 1.3 MiB of relocation entries were read
//! at every start (bench/: RSS and cold start). Names the file lacks are only left unordered.
//!
//! The list goes through `link/ld-ordered`, which resolves it against the names the link
//! defines: fat LTO renumbers the private copies of a function (`NAME.N`) whenever the code
//! changes, and a list matched by exact name alone lost most of them after a small refactor.
//! The same script places the read-only data a session reads (`hot-data.txt`, made by
//! `scripts/hot-data`) together ahead of the rest of `.rodata`.

// Cargo reads a build script's instructions from its stdout.
#![allow(clippy::print_stdout)]

use std::env;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let order = manifest.join("hot-symbols.txt");
    let data_order = manifest.join("hot-data.txt");
    let script = manifest.join("link").join("ld-ordered");
    println!("cargo:rerun-if-changed={}", order.display());
    println!("cargo:rerun-if-changed={}", data_order.display());
    println!("cargo:rerun-if-changed={}", script.display());
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
    // The benchmark's baselines too (examples/), so the rmcp floor is linked as the binary is
    // (bench/run links it statically too, through scripts/build-binary).
    println!("cargo:rustc-link-arg-examples=-Wl,-z,pack-relative-relocs");
    if !order.is_file() {
        return;
    }
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").unwrap_or_default());
    let data_order = data_order.is_file().then_some(data_order.as_path());
    match rustc_lld(&target).and_then(|lld| write_shim(&out_dir, &lld, &order, data_order, &script))
    {
        // gcc (12 has no --ld-path) runs `ld.<name>` for -fuse-ld=<name>, looking in the -B
        // directories first; rustc's own -B directory holds no ld.mold, so the shim is found.
        Some(dir) => {
            println!("cargo:rustc-link-arg-bins=-B{}", dir.display());
            println!("cargo:rustc-link-arg-bins=-fuse-ld=mold");
        }
        // No rustc LLD where expected: the list as it is, matched by exact name.
        None => {
            println!(
                "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
                order.display()
            );
            // The list is a profile of one build; other builds miss some names, harmlessly.
            println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
        }
    }
}

/// The LLD rustc links with by default on this target (its `gcc-ld/ld.lld`).
fn rustc_lld(target: &str) -> Option<PathBuf> {
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()?;
    let sysroot = String::from_utf8(out.stdout).ok()?;
    let lld = Path::new(sysroot.trim())
        .join("lib/rustlib")
        .join(target)
        .join("bin/gcc-ld/ld.lld");
    lld.is_file().then_some(lld)
}

/// Writes `<out>/link/ld.mold`: runs `ld-ordered` with this build's LLD and lists.
fn write_shim(
    out_dir: &Path,
    lld: &Path,
    order: &Path,
    data_order: Option<&Path>,
    script: &Path,
) -> Option<PathBuf> {
    let dir = out_dir.join("link");
    fs::create_dir_all(&dir).ok()?;
    let shim = dir.join("ld.mold");
    let data = match data_order {
        Some(path) => format!("CARE_LINK_DATA_ORDER={} ", quoted(path)?),
        None => String::new(),
    };
    let text = format!(
        "#!/bin/sh\n# Written by crates/server/build.rs: care-mcp's release link.\n\
         CARE_LINK_LLD={} CARE_LINK_ORDER={} {data}exec /bin/sh {} \"$@\"\n",
        quoted(lld)?,
        quoted(order)?,
        quoted(script)?,
    );
    fs::write(&shim, text).ok()?;
    fs::set_permissions(&shim, fs::Permissions::from_mode(0o755)).ok()?;
    Some(dir)
}

/// A path as one single-quoted shell word.
fn quoted(path: &Path) -> Option<String> {
    Some(format!("'{}'", path.to_str()?.replace('\'', r"'\''")))
}
