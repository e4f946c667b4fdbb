//! Rotation of a credential file: plain overwrite, Kubernetes-style `..data` symlink swap,
//! failed re-reads that keep the old value until it is refused, and recovery.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::*;
use crate::outbound::OutboundFinding;

fn one_line(text: &str) -> Result<String, &'static str> {
    let line = text.trim_end_matches(['\r', '\n']);
    if line.is_empty() || line.contains('\n') {
        Err("must hold one line")
    } else {
        Ok(line.to_owned())
    }
}

fn write(path: &Path, text: &str, mode: u32) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn value(secret: &RotatingSecret) -> (String, u64) {
    let c = secret.current().unwrap();
    (c.value.expose_secret().to_owned(), c.generation)
}

#[test]
fn a_plain_overwrite_is_used_at_the_next_call_and_taught_to_the_scanner() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key");
    write(&path, "sk-demo-rotate-one-0001\n", 0o600);
    let secret = RotatingSecret::open("CARE_X_FILE", &path, one_line).unwrap();
    let scanner = OutboundScanner::new(Vec::new());
    secret.watch(scanner.clone());
    assert_eq!(value(&secret), ("sk-demo-rotate-one-0001".into(), 0));
    // Unchanged: same value, same generation.
    assert_eq!(value(&secret), ("sk-demo-rotate-one-0001".into(), 0));

    write(&path, "sk-demo-rotate-two-0002\n", 0o600);
    assert_eq!(value(&secret), ("sk-demo-rotate-two-0002".into(), 1));
    assert!(!secret.is_stale());
    for old_or_new in ["sk-demo-rotate-one-0001", "sk-demo-rotate-two-0002"] {
        assert_eq!(
            scanner.scan(&format!("here: {old_or_new}")),
            Err(OutboundFinding::OwnSecret)
        );
    }
    assert!(!format!("{secret:?}").contains("sk-demo"));
}

#[test]
fn a_kubernetes_style_symlink_swap_is_a_change() {
    // A Secret volume: `key -> ..data/key`, `..data -> ..v1`; an update writes `..v2` and
    // renames a new `..data` symlink over the old one.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for (version, text) in [
        ("..v1", "sk-demo-k8s-first-0001"),
        ("..v2", "sk-demo-k8s-second-002"),
    ] {
        std::fs::create_dir(root.join(version)).unwrap();
        write(&root.join(version).join("key"), text, 0o640);
    }
    std::os::unix::fs::symlink("..v1", root.join("..data")).unwrap();
    std::os::unix::fs::symlink("..data/key", root.join("key")).unwrap();
    let secret = RotatingSecret::open("CARE_X_FILE", &root.join("key"), one_line).unwrap();
    assert_eq!(value(&secret), ("sk-demo-k8s-first-0001".into(), 0));

    std::os::unix::fs::symlink("..v2", root.join("..data_tmp")).unwrap();
    std::fs::rename(root.join("..data_tmp"), root.join("..data")).unwrap();
    std::fs::remove_dir_all(root.join("..v1")).unwrap();
    assert_eq!(value(&secret), ("sk-demo-k8s-second-002".into(), 1));
}

#[test]
fn a_failed_reread_keeps_the_old_value_until_it_is_refused_then_fails_closed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key");
    write(&path, "sk-demo-kept-value-0001\n", 0o600);
    let secret = RotatingSecret::open("CARE_X_FILE", &path, one_line).unwrap();

    std::fs::remove_file(&path).unwrap();
    assert_eq!(value(&secret), ("sk-demo-kept-value-0001".into(), 0));
    assert!(secret.is_stale());
    // Refused upstream while stale: dropped, the call fails closed.
    secret.refused(0);
    let err = secret.current().unwrap_err();
    assert_eq!(err.code, ErrorCode::UpstreamRejected);
    assert!(!format!("{err:?}").contains("sk-demo"));
    assert!(secret.current().is_err());

    // The file comes back: the next call uses it.
    write(&path, "sk-demo-fixed-value-0002\n", 0o600);
    assert_eq!(value(&secret), ("sk-demo-fixed-value-0002".into(), 1));
    assert!(!secret.is_stale());
}

#[test]
fn opened_permissions_or_a_bad_shape_are_failed_rereads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key");
    write(&path, "sk-demo-good-value-0001\n", 0o600);
    let secret = RotatingSecret::open("CARE_X_FILE", &path, one_line).unwrap();

    write(&path, "sk-demo-world-read-0002\n", 0o644);
    assert_eq!(value(&secret), ("sk-demo-good-value-0001".into(), 0));
    assert!(secret.is_stale());

    write(&path, "two\nlines\n", 0o600);
    assert_eq!(value(&secret), ("sk-demo-good-value-0001".into(), 0));
    assert!(secret.is_stale());

    write(&path, "sk-demo-good-again-0003\n", 0o600);
    assert_eq!(value(&secret), ("sk-demo-good-again-0003".into(), 1));
    assert!(!secret.is_stale());
}

#[test]
fn a_refusal_of_a_fresh_or_older_value_drops_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key");
    write(&path, "sk-demo-fresh-value-001\n", 0o600);
    let secret = RotatingSecret::open("CARE_X_FILE", &path, one_line).unwrap();
    secret.refused(0);
    assert_eq!(value(&secret), ("sk-demo-fresh-value-001".into(), 0));

    write(&path, "sk-demo-newer-value-002\n", 0o600);
    assert_eq!(value(&secret).1, 1);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(value(&secret).1, 1);
    assert!(secret.is_stale());
    // A late refusal of generation 0 says nothing about generation 1.
    secret.refused(0);
    assert_eq!(value(&secret), ("sk-demo-newer-value-002".into(), 1));
}

#[test]
fn a_start_with_a_bad_file_is_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key");
    assert!(RotatingSecret::open("CARE_X_FILE", &path, one_line).is_err());
    write(&path, "sk-demo-open-perms-001\n", 0o604);
    let reason = RotatingSecret::open("CARE_X_FILE", &path, one_line).unwrap_err();
    assert!(reason.contains("chmod"), "{reason}");
}
