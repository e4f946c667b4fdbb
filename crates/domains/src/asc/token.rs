//! App Store Connect API tokens: ES256 JWTs signed with the team's `.p8` key — header `kid`,
//! claims `iss`, `aud=appstoreconnect-v1`, `iat`, `exp` — cached and renewed before expiry.
//!
//! Apple refuses tokens whose `exp` is more than 20 minutes ahead; ours live
//! [`TOKEN_LIFETIME_SECS`] and are renewed [`RENEW_BEFORE_SECS`] before they run out, so a
//! token is never used within seconds of its expiry (clock skew, slow requests).

use std::sync::Mutex;

use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;

/// The audience App Store Connect requires.
pub const AUDIENCE: &str = "appstoreconnect-v1";
/// How long a minted token is valid (Apple's maximum is 20 minutes).
pub const TOKEN_LIFETIME_SECS: i64 = 15 * 60;
/// A cached token this close to expiry is replaced.
pub const RENEW_BEFORE_SECS: i64 = 2 * 60;

/// Why a token could not be made; never carries key material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the App Store Connect private key is not a usable P-256 key")]
    Key,
    #[error("the App Store Connect token could not be signed")]
    Sign,
}

#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    iat: i64,
    exp: i64,
    aud: &'a str,
}

/// Signs tokens; holds the parsed key, not its PEM text.
pub struct TokenSigner {
    key: EncodingKey,
    key_id: String,
    issuer_id: String,
}

impl std::fmt::Debug for TokenSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSigner")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl TokenSigner {
    pub fn new(private_key_pem: &str, key_id: &str, issuer_id: &str) -> Result<Self, TokenError> {
        let key =
            EncodingKey::from_ec_pem(private_key_pem.as_bytes()).map_err(|_| TokenError::Key)?;
        Ok(TokenSigner {
            key,
            key_id: key_id.to_owned(),
            issuer_id: issuer_id.to_owned(),
        })
    }

    /// A token issued at `now`, expiring [`TOKEN_LIFETIME_SECS`] later.
    pub fn mint(&self, now: DateTime<Utc>) -> Result<String, TokenError> {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.key_id.clone());
        header.typ = Some("JWT".to_owned());
        let iat = now.timestamp();
        let claims = Claims {
            iss: &self.issuer_id,
            iat,
            exp: iat + TOKEN_LIFETIME_SECS,
            aud: AUDIENCE,
        };
        jsonwebtoken::encode(&header, &claims, &self.key).map_err(|_| TokenError::Sign)
    }
}

/// The token in use, shared by every request of the process.
#[derive(Debug)]
pub struct TokenCache {
    signer: TokenSigner,
    current: Mutex<Option<(String, i64)>>,
}

impl TokenCache {
    pub fn new(signer: TokenSigner) -> Self {
        TokenCache {
            signer,
            current: Mutex::new(None),
        }
    }

    /// The cached token, or a new one when none is cached or it is close to expiry.
    pub fn bearer(&self, now: DateTime<Utc>) -> Result<String, TokenError> {
        let mut current = self
            .current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((token, exp)) = current.as_ref()
            && now.timestamp() < exp - RENEW_BEFORE_SECS
        {
            return Ok(token.clone());
        }
        let token = self.signer.mint(now)?;
        *current = Some((token.clone(), now.timestamp() + TOKEN_LIFETIME_SECS));
        Ok(token)
    }

    /// Drops the cached token (after a 401, the next request signs a fresh one).
    pub fn invalidate(&self) {
        *self
            .current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use chrono::Duration;
    use p256::elliptic_curve::Generate;
    use p256::pkcs8::{EncodePrivateKey, LineEnding};

    fn signer() -> TokenSigner {
        // A throwaway key generated for this test only.
        let pem = p256::SecretKey::try_generate()
            .unwrap()
            .to_pkcs8_pem(LineEnding::LF)
            .unwrap();
        TokenSigner::new(&pem, "TESTKEY001", "issuer-0000").unwrap()
    }

    #[test]
    fn a_token_is_reused_until_shortly_before_expiry() {
        let cache = TokenCache::new(signer());
        let t0 = Utc::now();
        let first = cache.bearer(t0).unwrap();
        assert_eq!(cache.bearer(t0 + Duration::minutes(12)).unwrap(), first);
        let renewed = cache.bearer(t0 + Duration::minutes(13)).unwrap();
        assert_ne!(renewed, first);
        assert_eq!(cache.bearer(t0 + Duration::minutes(14)).unwrap(), renewed);
        cache.invalidate();
        assert_ne!(cache.bearer(t0 + Duration::minutes(14)).unwrap(), renewed);
    }

    #[test]
    fn a_key_that_is_not_p256_pkcs8_is_refused() {
        assert_eq!(
            TokenSigner::new(
                "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
                "K",
                "I"
            )
            .unwrap_err(),
            TokenError::Key
        );
        assert!(!format!("{:?}", signer()).contains("PRIVATE"));
    }
}
