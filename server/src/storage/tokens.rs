//! Secrets handed out once (session tokens, access keys, job and serving
//! tokens): random, and stored only as a hash.

use sha2::{Digest, Sha256};

/// 32 random bytes as 64 hex digits.
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random source failed");
    hex::encode(bytes)
}

/// What the database keeps of a token: its SHA-256, hex.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}
