//! Verification of App Store Connect API tokens, written against the JWS spec directly (not
//! with the JWT library the client signs with), so an encoding bug on the signing side — a DER
//! signature instead of raw `r||s`, a padded base64, a wrong `kid` — fails here.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::pkcs8::DecodePublicKey;
use serde::Deserialize;

/// The audience App Store Connect requires.
pub const AUDIENCE: &str = "appstoreconnect-v1";
/// Apple refuses tokens that expire more than 20 minutes ahead.
pub const MAX_LIFETIME_SECS: i64 = 20 * 60;
/// Clock skew tolerated between the client and the fake.
const LEEWAY_SECS: i64 = 5;

/// Why a token was refused; the fake answers 401 for every one of them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    #[error("no bearer token")]
    Missing,
    #[error("token is not three base64url parts")]
    Malformed,
    #[error("header alg is not ES256")]
    Algorithm,
    #[error("header kid does not match the key id")]
    KeyId,
    #[error("claim iss does not match the issuer id")]
    Issuer,
    #[error("claim aud is not appstoreconnect-v1")]
    Audience,
    #[error("token expired")]
    Expired,
    #[error("exp is more than 20 minutes ahead")]
    TooLong,
    #[error("signature is not a raw 64-byte ES256 signature")]
    SignatureEncoding,
    #[error("signature does not verify")]
    Signature,
    #[error("public key unusable")]
    PublicKey,
}

#[derive(Debug, Deserialize)]
struct Header {
    alg: String,
    kid: Option<String>,
}

/// The claims App Store Connect reads.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct Claims {
    pub iss: String,
    pub aud: String,
    pub iat: Option<i64>,
    pub exp: i64,
}

/// What the fake checks tokens against.
#[derive(Debug, Clone)]
pub struct TokenVerifier {
    key: VerifyingKey,
    key_id: String,
    issuer_id: String,
}

impl TokenVerifier {
    pub fn new(public_key_pem: &str, key_id: &str, issuer_id: &str) -> Result<Self, JwtError> {
        let key =
            VerifyingKey::from_public_key_pem(public_key_pem).map_err(|_| JwtError::PublicKey)?;
        Ok(TokenVerifier {
            key,
            key_id: key_id.to_owned(),
            issuer_id: issuer_id.to_owned(),
        })
    }

    /// Verifies `token` at `now` (seconds since the epoch): header, claims and signature.
    pub fn verify(&self, token: &str, now: i64) -> Result<Claims, JwtError> {
        let mut parts = token.split('.');
        let (Some(h), Some(c), Some(s), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(JwtError::Malformed);
        };
        let decode = |part: &str| {
            URL_SAFE_NO_PAD
                .decode(part)
                .map_err(|_| JwtError::Malformed)
        };
        let header: Header =
            serde_json::from_slice(&decode(h)?).map_err(|_| JwtError::Malformed)?;
        if header.alg != "ES256" {
            return Err(JwtError::Algorithm);
        }
        if header.kid.as_deref() != Some(self.key_id.as_str()) {
            return Err(JwtError::KeyId);
        }
        let signature = decode(s)?;
        if signature.len() != 64 {
            return Err(JwtError::SignatureEncoding);
        }
        let signature =
            Signature::from_slice(&signature).map_err(|_| JwtError::SignatureEncoding)?;
        let signing_input = &token[..h.len() + 1 + c.len()];
        self.key
            .verify(signing_input.as_bytes(), &signature)
            .map_err(|_| JwtError::Signature)?;
        let claims: Claims =
            serde_json::from_slice(&decode(c)?).map_err(|_| JwtError::Malformed)?;
        if claims.iss != self.issuer_id {
            return Err(JwtError::Issuer);
        }
        if claims.aud != AUDIENCE {
            return Err(JwtError::Audience);
        }
        if claims.exp <= now - LEEWAY_SECS {
            return Err(JwtError::Expired);
        }
        if claims.exp > now + MAX_LIFETIME_SECS + LEEWAY_SECS {
            return Err(JwtError::TooLong);
        }
        Ok(claims)
    }
}
