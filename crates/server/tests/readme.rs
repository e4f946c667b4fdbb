//! The README's role/tool table (section "Roles and tools") against `care_core::catalog`:
//! every tool once, its kind, a mark exactly where a role holds it, the per-role counts and
//! the catalog's size in the text above the table.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use care_core::catalog::{CATALOG, Role, ToolKind, lookup, tools_of};

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("read README.md")
}

/// The section from its heading to the next `## ` heading.
fn section<'a>(text: &'a str, heading: &str) -> Option<&'a str> {
    let start = text.find(&format!("\n## {heading}\n"))? + 1;
    let body = &text[start + 3..];
    let end = body.find("\n## ").map_or(text.len(), |i| start + 3 + i);
    Some(&text[start..end])
}

fn cells(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(|c| c.trim().to_owned()).collect()
}

fn kind_of(cell: &str) -> Option<ToolKind> {
    match cell.trim_matches('*') {
        "read" => Some(ToolKind::Read),
        "ledger write" => Some(ToolKind::LedgerWrite),
        "external write" => Some(ToolKind::ExternalWrite),
        _ => None,
    }
}

/// Everything in `text`'s table that disagrees with the catalog; empty when it agrees.
fn problems(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Some(section) = section(text, "Roles and tools") else {
        return vec!["no section \"Roles and tools\"".into()];
    };
    let wanted = format!("The full catalog ({} tools)", CATALOG.len());
    if !section.contains(&wanted) {
        out.push(format!("the text does not say {wanted:?}"));
    }
    let mut rows = section
        .lines()
        .skip_while(|l| !l.starts_with("| tool | kind |"))
        .take_while(|l| l.starts_with('|'));
    let Some(header) = rows.next() else {
        out.push("no `| tool | kind | ...` table".into());
        return out;
    };
    let columns: Vec<Option<Role>> = cells(header)[2..].iter().map(|c| Role::parse(c)).collect();
    for role in Role::ALL {
        if !columns.contains(&Some(role)) {
            out.push(format!("no column for role {role}"));
        }
    }
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut counted = false;
    for row in rows.skip(1) {
        let cells = cells(row);
        if cells.len() != columns.len() + 2 {
            out.push(format!("row has {} cells: {row}", cells.len()));
            continue;
        }
        let marks = &cells[2..];
        if cells[0] == "**tools per role**" {
            counted = true;
            for (role, mark) in columns.iter().zip(marks) {
                let Some(role) = role else { continue };
                let expected = tools_of(*role).count();
                if mark.parse::<usize>().ok() != Some(expected) {
                    out.push(format!("{role} counts {mark:?}, the catalog {expected}"));
                }
            }
            continue;
        }
        let kind = kind_of(&cells[1]);
        for name in cells[0].split(',').map(str::trim) {
            let Some(entry) = lookup(name) else {
                out.push(format!("{name} is not in the catalog"));
                continue;
            };
            *seen.entry(entry.name).or_default() += 1;
            if kind != Some(entry.kind) {
                out.push(format!(
                    "{name}: kind {:?}, catalog {:?}",
                    cells[1], entry.kind
                ));
            }
            for (role, mark) in columns.iter().zip(marks) {
                let Some(role) = role else { continue };
                let marked = match mark.as_str() {
                    "x" => true,
                    "" => false,
                    other => {
                        out.push(format!(
                            "{name}/{role}: mark {other:?} is neither x nor empty"
                        ));
                        continue;
                    }
                };
                if marked != entry.held_by(*role) {
                    out.push(format!(
                        "{name}: {role} marked {marked}, catalog {}",
                        !marked
                    ));
                }
            }
        }
    }
    if !counted {
        out.push("no `**tools per role**` row".into());
    }
    for entry in CATALOG {
        match seen.get(entry.name) {
            Some(1) => {}
            Some(n) => out.push(format!("{} is listed {n} times", entry.name)),
            None => out.push(format!("{} is missing from the table", entry.name)),
        }
    }
    out
}

#[test]
fn readme_table_matches_the_catalog() {
    let found = problems(&readme());
    assert!(
        found.is_empty(),
        "README.md, section \"Roles and tools\", disagrees with crates/core/src/catalog.rs:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_wrong_table_is_caught() {
    let text = readme();
    let edits = [
        // A mark removed: reviews no longer holds asc_review_reply.
        (
            "| asc_review_reply | **external write** | | x |",
            "| asc_review_reply | **external write** | | |",
            "asc_review_reply: reviews marked false",
        ),
        // A kind changed.
        (
            "| kpi_report | read |",
            "| kpi_report | ledger write |",
            "kpi_report: kind",
        ),
        // A count changed.
        ("| 25 | 15 |", "| 25 | 16 |", "reviews counts \"16\""),
        // A tool dropped from a group.
        (
            "| mail_list, mail_read, mail_search, mail_thread |",
            "| mail_list, mail_read, mail_search |",
            "mail_thread is missing",
        ),
        // The catalog's size in the text.
        ("(31 tools)", "(30 tools)", "does not say"),
    ];
    for (from, to, wanted) in edits {
        assert!(text.contains(from), "the README no longer has {from:?}");
        let found = problems(&text.replacen(from, to, 1)).join("\n");
        assert!(
            found.contains(wanted),
            "{to:?}: wanted {wanted:?}, found {found:?}"
        );
    }
}

/// The variables in the first column of the README's "Configuration" tables.
fn configuration_rows(text: &str) -> BTreeMap<String, usize> {
    let mut rows = BTreeMap::new();
    let Some(section) = section(text, "Configuration") else {
        return rows;
    };
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        for name in cells(line)[0].split(", ") {
            *rows.entry(name.trim_matches('`').to_owned()).or_default() += 1;
        }
    }
    rows
}

/// Every variable a role reads (`care_core::variables`, the list startup enforces and the
/// Deployments are checked against) has its row in the README's configuration table.
#[test]
fn readme_configuration_table_lists_every_variable() {
    let rows = configuration_rows(&readme());
    let missing: Vec<&str> = care_core::variables::ALL
        .iter()
        .map(|v| v.name)
        .filter(|name| !rows.contains_key(*name))
        .collect();
    assert!(
        missing.is_empty(),
        "README.md, section \"Configuration\", has no row for: {}",
        missing.join(", ")
    );
    let without = readme().replace("| `CARE_AUDIT_SALT_FILE` |", "| `CARE_AUDIT_SALT_FIEL` |");
    assert!(!configuration_rows(&without).contains_key("CARE_AUDIT_SALT_FILE"));
}
