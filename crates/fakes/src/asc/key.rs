//! Throwaway App Store Connect API keys: a fresh P-256 key in Apple's `.p8` format (PKCS#8 PEM),
//! with a key id and issuer id, generated at run time so no private key is ever committed.

use std::path::{Path, PathBuf};

use p256::SecretKey;
use p256::elliptic_curve::Generate;
use p256::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};

/// Why a throwaway key could not be made or written.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("the system random generator failed")]
    Random,
    #[error("the key could not be encoded")]
    Encoding,
    #[error("the key file could not be written: {0}")]
    Io(#[from] std::io::Error),
}

/// A throwaway App Store Connect API key and the identities it is issued under.
#[derive(Clone)]
pub struct TestKey {
    /// The private key as Apple ships it: PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    pub private_key_pem: String,
    /// The public half (SPKI PEM): what the fake verifies tokens with.
    pub public_key_pem: String,
    /// Ten upper-case alphanumerics, like Apple's key ids.
    pub key_id: String,
    /// A UUID, like Apple's issuer ids.
    pub issuer_id: String,
}

impl std::fmt::Debug for TestKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Throwaway, but still a private key: it stays out of logs and test output.
        f.debug_struct("TestKey")
            .field("key_id", &self.key_id)
            .field("issuer_id", &self.issuer_id)
            .finish_non_exhaustive()
    }
}

impl TestKey {
    /// A fresh key from the system random generator.
    pub fn generate() -> Result<TestKey, KeyError> {
        let secret = SecretKey::try_generate().map_err(|_| KeyError::Random)?;
        let private_key_pem = secret
            .to_pkcs8_pem(LineEnding::LF)
            .map_err(|_| KeyError::Encoding)?
            .to_string();
        let public_key_pem = secret
            .public_key()
            .to_public_key_pem(LineEnding::LF)
            .map_err(|_| KeyError::Encoding)?;
        let id = uuid::Uuid::new_v4();
        let key_id: String = id
            .simple()
            .to_string()
            .to_ascii_uppercase()
            .chars()
            .take(10)
            .collect();
        Ok(TestKey {
            private_key_pem,
            public_key_pem,
            key_id,
            issuer_id: uuid::Uuid::new_v4().to_string(),
        })
    }

    /// A new key of the same team (same issuer id, new key id), as App Store Connect issues
    /// when a key is rotated.
    pub fn successor(&self) -> Result<TestKey, KeyError> {
        Ok(TestKey {
            issuer_id: self.issuer_id.clone(),
            ..TestKey::generate()?
        })
    }

    /// Writes the private key as `AuthKey_<KEY_ID>.p8` (Apple's file name) into `dir`, mode
    /// 0600, and returns its path.
    pub fn write_p8(&self, dir: &Path) -> Result<PathBuf, KeyError> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;

        let path = dir.join(format!("AuthKey_{}.p8", self.key_id));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)?;
        file.write_all(self.private_key_pem.as_bytes())?;
        file.sync_all()?;
        Ok(path)
    }
}
