//! Approver keys on disk and new keypairs. A key file holds one secret (nsec or hex) on one
//! line; like ssh, a file others can read is refused rather than used.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use nostr_sdk::{Keys, ToBech32};

use crate::error::NostrError;

/// Reads the approver's secret key from `path`; refuses group- or world-accessible files.
pub fn read_key_file(path: &Path) -> Result<Keys, NostrError> {
    let meta = std::fs::metadata(path).map_err(|e| NostrError::KeyFile(e.kind().to_string()))?;
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(NostrError::KeyFile(
            "readable by others: run chmod 600 on it".into(),
        ));
    }
    let text =
        std::fs::read_to_string(path).map_err(|e| NostrError::KeyFile(e.kind().to_string()))?;
    Keys::parse(text.trim())
        .map_err(|_| NostrError::KeyFile("not an nsec or 64-character hex secret key".into()))
}

/// A new keypair as the operator prints it.
#[derive(Debug)]
pub struct NewKeypair {
    pub nsec: String,
    pub npub: String,
    pub public_hex: String,
}

pub fn generate() -> NewKeypair {
    let keys = Keys::generate();
    let Ok(nsec) = keys.secret_key().to_bech32();
    let Ok(npub) = keys.public_key().to_bech32();
    NewKeypair {
        nsec,
        npub,
        public_hex: keys.public_key().to_hex(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn generated_keys_read_back_and_loose_files_are_refused() {
        let pair = generate();
        assert!(pair.nsec.starts_with("nsec1") && pair.npub.starts_with("npub1"));
        assert_eq!(pair.public_hex.len(), 64);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("approver.nsec");
        let mut file = std::fs::File::create(&path).unwrap();
        writeln!(file, "{}", pair.nsec).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let keys = read_key_file(&path).unwrap();
        assert_eq!(keys.public_key().to_hex(), pair.public_hex);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = read_key_file(&path).unwrap_err().to_string();
        assert!(err.contains("chmod 600"), "{err}");
        assert!(!err.contains(&pair.nsec));
        std::fs::write(&path, "nsec-garbage").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let err = read_key_file(&path).unwrap_err().to_string();
        assert!(!err.contains("garbage"), "{err}");
    }
}
