//! Sealing secret values at rest: ChaCha20-Poly1305 (ring's AEAD, already
//! built for TLS) under one 32-byte key from the configuration. Each value
//! gets a random nonce, and the account and name are bound in as associated
//! data, so a sealed value copied onto another row does not open.

use std::path::Path;

use anyhow::Context;
use base64::Engine;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305, NONCE_LEN};
use sha2::{Digest, Sha256};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// The key secrets are sealed with, and a short id of it that is stored
/// beside each value (so a console given another key says so, instead of
/// failing to open every value without a reason).
pub struct Sealer {
    key: LessSafeKey,
    id: String,
}

impl Sealer {
    /// The key in `path` (32 bytes, base64, one line), made there (mode
    /// 0600) when the file does not exist yet: the embedded default keeps
    /// it in the data folder. Replicas sharing a database must be given the
    /// same file.
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        if !path.exists() {
            let mut key = [0u8; 32];
            getrandom::fill(&mut key).context("the operating system's random source failed")?;
            // Made only if absent: replicas starting together on one empty
            // folder all read the one that won, never each their own.
            match create_private(path, format!("{}\n", B64.encode(key)).as_bytes()) {
                Ok(()) => {
                    tracing::info!(path = %path.display(), "made a new key for secrets")
                }
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(err) => {
                    return Err(err).with_context(|| {
                        format!("writing a new secrets key to {}", path.display())
                    })
                }
            }
        }
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the secrets key {}", path.display()))?;
        let key = B64
            .decode(text.trim())
            .ok()
            .filter(|k| k.len() == 32)
            .with_context(|| {
                format!(
                    "{} does not hold a secrets key: it needs 32 bytes in base64 \
                     (e.g. `head -c 32 /dev/urandom | base64`)",
                    path.display()
                )
            })?;
        Ok(Self::from_bytes(&key))
    }

    /// A sealer with `key` (32 bytes).
    pub fn from_bytes(key: &[u8]) -> Self {
        let id = hex::encode(&Sha256::digest(key)[..6]);
        let key = LessSafeKey::new(
            UnboundKey::new(&CHACHA20_POLY1305, key).expect("a 32-byte ChaCha20-Poly1305 key"),
        );
        Self { key, id }
    }

    /// The key's id, stored beside each value.
    pub fn key_id(&self) -> &str {
        &self.id
    }

    /// `value` sealed for the secret `name` of account `account_id`:
    /// base64 of nonce, ciphertext and tag.
    pub fn seal(&self, account_id: i64, name: &str, value: &[u8]) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).expect("the operating system's random source failed");
        let mut sealed = value.to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad(account_id, name)),
                &mut sealed,
            )
            .expect("sealing fits in memory");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        B64.encode(out)
    }

    /// The value [`Sealer::seal`] sealed, or `None` if `sealed` was not
    /// sealed by this key for this secret.
    pub fn open(&self, account_id: i64, name: &str, sealed: &str) -> Option<Vec<u8>> {
        let bytes = B64.decode(sealed).ok()?;
        if bytes.len() < NONCE_LEN {
            return None;
        }
        let (nonce, rest) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut rest = rest.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(aad(account_id, name)), &mut rest)
            .ok()?;
        Some(plain.to_vec())
    }
}

fn aad(account_id: i64, name: &str) -> Vec<u8> {
    format!("paddlecloud/secret/{account_id}/{name}").into_bytes()
}

/// Writes `bytes` to a file only its owner may read (its folder made if
/// missing): it holds a secret.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// [`write_private`] for a file that must not exist yet (`AlreadyExists`
/// otherwise); it appears whole: written aside, then linked in place.
fn create_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let unique = getrandom::u64().map_err(std::io::Error::other)?;
    let aside = path.with_extension(format!("new-{unique:016x}"));
    write_private(&aside, bytes)?;
    let linked = std::fs::hard_link(&aside, path);
    let _ = std::fs::remove_file(&aside);
    linked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_value_opens_only_for_its_own_account_name_and_key() {
        let sealer = Sealer::from_bytes(&[7; 32]);
        let sealed = sealer.seal(1, "s3-key", b"hunter2");
        assert!(!sealed.contains("hunter2"));
        assert_eq!(sealer.open(1, "s3-key", &sealed).unwrap(), b"hunter2");
        assert!(sealer.open(2, "s3-key", &sealed).is_none());
        assert!(sealer.open(1, "gcp", &sealed).is_none());
        assert!(Sealer::from_bytes(&[8; 32])
            .open(1, "s3-key", &sealed)
            .is_none());
        assert_ne!(
            sealed,
            sealer.seal(1, "s3-key", b"hunter2"),
            "a fresh nonce each time"
        );
    }

    #[test]
    fn a_missing_key_file_is_made_private_and_read_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys/secrets.key");
        let first = Sealer::from_file(&path).unwrap();
        let again = Sealer::from_file(&path).unwrap();
        assert_eq!(first.key_id(), again.key_id());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // A second console on the same folder reads the same key, never
        // making its own.
        let racers: Vec<_> = (0..8)
            .map(|i| {
                let path = dir.path().join("race.key");
                std::thread::spawn(move || {
                    (i, Sealer::from_file(&path).unwrap().key_id().to_owned())
                })
            })
            .collect();
        let ids: std::collections::BTreeSet<String> =
            racers.into_iter().map(|t| t.join().unwrap().1).collect();
        assert_eq!(ids.len(), 1, "{ids:?}");
        std::fs::write(&path, "short").unwrap();
        let err = Sealer::from_file(&path).err().unwrap().to_string();
        assert!(err.contains("32 bytes in base64"), "{err}");
    }
}
