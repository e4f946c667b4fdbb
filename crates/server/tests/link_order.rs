//! `link/ld-ordered`, the release link's code layout step, on a real link: gcc runs it as its
//! linker (`-fuse-ld=mold` with `-B`, as crates/server/build.rs sets up) and it runs rustc's own
//! LLD. A C program stands in for care-mcp: private copies of one function named as fat LTO
//! names them (`NAME.N`), filler functions around them, and a layout list made on an "earlier
//! build" whose numbers no longer exist; and constant tables in sections of their own, as the
//! data list (`hot-data.txt`) names them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/link/ld-ordered");
const FILLERS: usize = 40;
const TABLES: usize = 12;

/// Private functions with the given assembler names, each called from `main` so none is
/// dropped; `-ffunction-sections` gives each its own section, which the list orders.
fn program() -> String {
    let mut names: Vec<String> = (0..FILLERS).map(|i| format!("care_filler_{i}")).collect();
    names.extend(
        ["care_copy.7", "care_copy.9", "care_exact"]
            .iter()
            .map(|s| s.to_string()),
    );
    let mut c = String::new();
    // Read-only tables: `-fdata-sections` puts each in `.rodata.care_table_<n>`.
    for t in 0..TABLES {
        c.push_str(&format!(
            "static const unsigned char care_table_{t}[300] = {{ {t}, {k} }};\n",
            k = t + 1
        ));
    }
    for (i, name) in names.iter().enumerate() {
        c.push_str(&format!(
            "__attribute__((noinline)) static int f{i}(int x) __asm__(\"{name}\");\n\
             static int f{i}(int x) {{ return x * {k} + {i}; }}\n",
            k = i + 3
        ));
    }
    c.push_str("int main(int argc, char **argv) { (void)argv; int s = 0;\n");
    c.push_str("  volatile int at = argc;\n");
    for i in 0..names.len() {
        c.push_str(&format!("  s += f{i}(argc);\n"));
    }
    for t in 0..TABLES {
        c.push_str(&format!("  s += care_table_{t}[at];\n"));
    }
    c.push_str("  return s == 0; }\n");
    c
}

/// rustc's own LLD (what care-mcp's release link runs), looked up once.
fn rustc_lld() -> &'static Path {
    static LLD: OnceLock<PathBuf> = OnceLock::new();
    LLD.get_or_init(|| {
        let out = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
            .args(["--print", "sysroot"])
            .output()
            .expect("rustc --print sysroot");
        let sysroot = String::from_utf8(out.stdout).unwrap();
        let lld = Path::new(sysroot.trim())
            .join("lib/rustlib/x86_64-unknown-linux-gnu/bin/gcc-ld/ld.lld");
        assert!(lld.is_file(), "rustc's LLD at {}", lld.display());
        lld
    })
}

struct Link {
    dir: tempfile::TempDir,
    source: PathBuf,
    list: PathBuf,
    data_list: Option<PathBuf>,
}

impl Link {
    /// With a data list too (`CARE_LINK_DATA_ORDER`, as build.rs sets it up when
    /// `hot-data.txt` exists).
    fn with_data(list: &str, data: &str) -> Link {
        let mut link = Link::new(list);
        let path = link.dir.path().join("hot-data.txt");
        std::fs::write(&path, data).unwrap();
        link.data_list = Some(path);
        link
    }

    fn new(list: &str) -> Link {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("program.c");
        std::fs::write(&source, program()).unwrap();
        let list_path = dir.path().join("hot-symbols.txt");
        std::fs::write(&list_path, list).unwrap();
        // The name gcc looks for with -fuse-ld=mold, in a -B directory of its own.
        let shim = dir.path().join("bin");
        std::fs::create_dir(&shim).unwrap();
        symlink(SCRIPT, shim.join("ld.mold")).unwrap();
        Link {
            dir,
            source,
            list: list_path,
            data_list: None,
        }
    }

    /// Links through ld-ordered (with `nm` as given) and returns each function's address.
    fn through_script(&self, nm: &str) -> HashMap<String, u64> {
        self.through_script_in(nm, self.dir.path())
    }

    /// The same, with `TMPDIR` as given (where the script keeps its first link).
    fn through_script_in(&self, nm: &str, tmpdir: &Path) -> HashMap<String, u64> {
        let out = self.dir.path().join("through-script");
        run(&mut self.script_cc(nm, tmpdir, &out));
        addresses(&out)
    }

    /// gcc compiling the source and linking it to `out` through ld-ordered, as build.rs sets
    /// it up (its own -B directory, -fuse-ld=mold), with rustc's LLD and this list.
    fn script_cc(&self, nm: &str, tmpdir: &Path, out: &Path) -> Command {
        let mut cc = Command::new("cc");
        cc.arg("-O1")
            .arg("-ffunction-sections")
            .arg("-fdata-sections")
            .arg("-Wno-implicit-function-declaration")
            .arg(format!("-B{}", self.dir.path().join("bin").display()))
            .arg("-fuse-ld=mold")
            .arg(&self.source)
            .arg("-o")
            .arg(out)
            .env("CARE_LINK_LLD", rustc_lld())
            .env("CARE_LINK_ORDER", &self.list)
            .env("CARE_LINK_NM", nm)
            .env("TMPDIR", tmpdir);
        match &self.data_list {
            Some(path) => cc.env("CARE_LINK_DATA_ORDER", path),
            None => cc.env_remove("CARE_LINK_DATA_ORDER"),
        };
        cc
    }

    /// Links with the list handed to LLD as it is (what build.rs did before ld-ordered).
    fn list_as_is(&self) -> HashMap<String, u64> {
        let out = self.dir.path().join("as-is");
        let mut cc = Command::new("cc");
        cc.arg("-O1")
            .arg("-ffunction-sections")
            .arg(format!("-B{}", rustc_lld().parent().unwrap().display()))
            .arg("-fuse-ld=lld")
            .arg(format!(
                "-Wl,--symbol-ordering-file={}",
                self.list.display()
            ))
            .arg("-Wl,--no-warn-symbol-ordering")
            .arg(&self.source)
            .arg("-o")
            .arg(&out);
        run(&mut cc);
        addresses(&out)
    }
}

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("spawn");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn addresses(binary: &Path) -> HashMap<String, u64> {
    let out = Command::new("nm")
        .arg("--defined-only")
        .arg(binary)
        .output()
        .expect("nm");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            let address = u64::from_str_radix(parts.next()?, 16).ok()?;
            let name = parts.nth(1)?;
            Some((name.to_string(), address))
        })
        .collect()
}

/// The lowest address of any filler: the unordered code starts there or later.
fn first_filler(at: &HashMap<String, u64>) -> u64 {
    (0..FILLERS)
        .map(|i| at[&format!("care_filler_{i}")])
        .min()
        .unwrap()
}

/// Listed before the fillers, in this order.
fn ordered_first(at: &HashMap<String, u64>, names: &[&str]) -> bool {
    let fillers = first_filler(at);
    names.iter().all(|n| at[*n] < fillers) && names.windows(2).all(|w| at[w[0]] < at[w[1]])
}

// An earlier build's list: its copy was `care_copy.3`, this build has .7 and .9.
const STALE_LIST: &str = "# layout list\ncare_copy.3\ncare_exact\ncare_gone\n";

#[test]
fn a_renumbered_copy_takes_its_listed_place() {
    let link = Link::new(STALE_LIST);
    let at = link.through_script("nm");
    assert!(
        ordered_first(&at, &["care_copy.7", "care_copy.9", "care_exact"]),
        "every copy of care_copy, then care_exact, before the unlisted code: {at:?}"
    );
    // The program runs: the second link is the real one.
    run(&mut Command::new(link.dir.path().join("through-script")));
}

#[test]
fn the_list_as_is_loses_the_renumbered_copy() {
    // What the resolution is for: matched by exact name, only care_exact is placed.
    let link = Link::new(STALE_LIST);
    let at = link.list_as_is();
    assert!(ordered_first(&at, &["care_exact"]), "{at:?}");
    assert!(
        !ordered_first(&at, &["care_copy.7", "care_copy.9", "care_exact"]),
        "{at:?}"
    );
}

/// A fallback's link: the list as it is (care_exact placed, the renumbered copy not), and a
/// program that runs.
fn assert_list_used_as_is(link: &Link, at: &HashMap<String, u64>) {
    assert!(ordered_first(at, &["care_exact"]), "{at:?}");
    assert!(!ordered_first(at, &["care_copy.7", "care_exact"]), "{at:?}");
    run(&mut Command::new(link.dir.path().join("through-script")));
}

#[test]
fn without_nm_the_list_is_used_as_it_is() {
    let link = Link::new(STALE_LIST);
    let at = link.through_script("/nonexistent/nm");
    assert_list_used_as_is(&link, &at);
}

#[test]
fn without_a_work_dir_the_list_is_used_as_it_is() {
    let link = Link::new(STALE_LIST);
    let at = link.through_script_in("nm", &link.dir.path().join("no-such-dir"));
    assert_list_used_as_is(&link, &at);
}

#[test]
fn a_failed_link_fails_and_leaves_no_work_dir() {
    let link = Link::new(STALE_LIST);
    std::fs::write(
        &link.source,
        "int main(void) { return missing_function(); }\n",
    )
    .unwrap();
    let out = link
        .script_cc("nm", link.dir.path(), &link.dir.path().join("never"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(!link.dir.path().join("never").exists());
    let leftovers: Vec<_> = std::fs::read_dir(link.dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("care-link."))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// The lowest address of any table the data list does not name.
fn first_unlisted_table(at: &HashMap<String, u64>, listed: &[usize]) -> u64 {
    (0..TABLES)
        .filter(|t| !listed.contains(t))
        .map(|t| at[&format!("care_table_{t}")])
        .min()
        .unwrap()
}

fn section_names(binary: &Path) -> Vec<String> {
    let out = Command::new("readelf")
        .args(["-SW"])
        .arg(binary)
        .output()
        .expect("readelf");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| {
            l.split(']')
                .nth(1)?
                .split_whitespace()
                .next()
                .map(String::from)
        })
        .collect()
}

#[test]
fn listed_tables_go_ahead_of_the_rest_of_rodata_in_list_order() {
    let link = Link::with_data(
        STALE_LIST,
        // The first line as scripts/hot-data writes it: a comment the link leaves out.
        "# 4 input sections, 160 bytes when listed (scripts/hot-data)\n*(.rodata.care_table_9)\n*(.rodata.care_table_4)\n*(.rodata.care_gone)\n\
         *(.rodata.care_table_1*)\n",
    );
    let at = link.through_script("nm");
    let (nine, four) = (at["care_table_9"], at["care_table_4"]);
    let listed = [9, 4, 1, 10, 11];
    assert!(
        nine < four && four < first_unlisted_table(&at, &listed),
        "care_table_9, then care_table_4, before every other table: {at:?}"
    );
    // A glob (how a merged piece's every input is named) takes all it matches.
    assert!(
        [1, 10, 11]
            .iter()
            .all(|t| at[&format!("care_table_{t}")] < first_unlisted_table(&at, &listed)),
        "{at:?}"
    );
    let binary = link.dir.path().join("through-script");
    assert!(section_names(&binary).iter().any(|s| s == ".rodata.hot"));
    // The code layout still holds beside it.
    assert!(ordered_first(
        &at,
        &["care_copy.7", "care_copy.9", "care_exact"]
    ));
    run(&mut Command::new(binary));
}

#[test]
fn a_data_list_line_with_script_syntax_is_ignored() {
    // Were the line passed into the script, care_table_3 would be discarded (or the link
    // broken); it is dropped whole, and the plain line after it still counts.
    let link = Link::with_data(
        "",
        "*(.rodata.care_table_2) } /DISCARD/ : { *(.rodata.care_table_3)\n*(.rodata.care_table_7)\n",
    );
    let at = link.through_script("nm");
    assert!(at.contains_key("care_table_3"), "{at:?}");
    assert!(
        at["care_table_7"] < first_unlisted_table(&at, &[7]),
        "only care_table_7 moved: {at:?}"
    );
    run(&mut Command::new(link.dir.path().join("through-script")));
}

#[test]
fn without_a_data_list_rodata_keeps_its_layout() {
    let link = Link::new(STALE_LIST);
    link.through_script("nm");
    let names = section_names(&link.dir.path().join("through-script"));
    assert!(!names.iter().any(|s| s == ".rodata.hot"), "{names:?}");
}
