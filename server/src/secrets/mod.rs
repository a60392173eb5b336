//! [`app::ports::Secrets`] on the SQL database, and the vault workloads'
//! launches read values from ([`SqlSecrets::reveal`]). Values are sealed
//! (`seal.rs`) before they are stored and opened only for a launch; every
//! set, delete and use is in the account's audit log.

pub mod seal;

use std::sync::Arc;

use app::error::AppError;
use app::models::{validate_secret_name, Account, SecretForm, SecretInfo, SecretUse};
use app::ports::{Principal, Secrets};
use async_trait::async_trait;

use self::seal::Sealer;
use crate::storage::audit;
use crate::storage::db::Pool;
use crate::storage::secrets::{NewValue, SecretTable};
use crate::time::now_ms;

/// Secrets in the console's database, sealed with the configured key.
pub struct SqlSecrets {
    table: SecretTable,
    sealer: Arc<Sealer>,
}

/// What a launch gives a workload: its variables and files, with values.
/// Kept in memory only, for as long as the launch needs them.
#[derive(Default, Clone)]
pub struct Revealed {
    /// `(variable, value)`.
    pub env: Vec<(String, String)>,
    /// `(file name, bytes)`, for the folder [`app::models::SECRETS_DIR_VARIABLE`] names.
    pub files: Vec<(String, Vec<u8>)>,
}

impl std::fmt::Debug for Revealed {
    /// Names only: a value never reaches a log through a `{:?}`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Revealed")
            .field("env", &self.env.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .field(
                "files",
                &self.files.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Revealed {
    /// Whether the workload uses no secret.
    pub fn is_empty(&self) -> bool {
        self.env.is_empty() && self.files.is_empty()
    }

    /// The values, whose pieces ([`app::models::mask_pieces`]) logs hide.
    pub fn masks(&self) -> Vec<String> {
        self.env
            .iter()
            .map(|(_, v)| v.clone())
            .chain(
                self.files
                    .iter()
                    .map(|(_, b)| String::from_utf8_lossy(b).into_owned()),
            )
            .collect()
    }
}

impl SqlSecrets {
    /// Wraps a migrated pool and the key.
    pub fn new(pool: Pool, sealer: Arc<Sealer>) -> Arc<Self> {
        Arc::new(Self {
            table: SecretTable::new(pool),
            sealer,
        })
    }

    /// The values of `uses` in `account`, for a workload (`what`, e.g.
    /// `job fit`) that `by` launches; the use is audited. A secret that does
    /// not exist, or a file's bytes used as a variable, is refused naming
    /// the `secrets` field.
    pub async fn reveal(
        &self,
        account: &Account,
        uses: &[SecretUse],
        by: &str,
        what: &str,
    ) -> Result<Revealed, AppError> {
        if uses.is_empty() {
            return Ok(Revealed::default());
        }
        let mut names: Vec<String> = uses.iter().map(|u| u.secret.clone()).collect();
        names.sort();
        names.dedup();
        let rows = self.table.sealed(account.id, &names).await?;
        let mut out = Revealed::default();
        for u in uses {
            let Some(row) = rows.iter().find(|r| r.name == u.secret) else {
                return Err(AppError::invalid(
                    "secrets",
                    format!(
                        "There is no secret “{}” in {}: an owner sets it on the Secrets page.",
                        u.secret, account.name
                    ),
                ));
            };
            let value = self.open(account, row)?;
            match (&u.env, &u.file) {
                (Some(env), _) => {
                    let text = String::from_utf8(value).map_err(|_| {
                        AppError::invalid(
                            "secrets",
                            format!(
                                "Secret “{}” is not text, so it cannot be a variable: use it \
                                 as a file (file:name={}).",
                                u.secret, u.secret
                            ),
                        )
                    })?;
                    out.env.push((env.clone(), text));
                }
                (None, Some(file)) => out.files.push((file.clone(), value)),
                (None, None) => {}
            }
        }
        let at = now_ms();
        self.table.touch(account.id, &names, at).await?;
        let how: Vec<String> = uses
            .iter()
            .map(|u| format!("{} as {}", u.secret, u.target()))
            .collect();
        audit::record(
            self.table.pool(),
            audit::Entry {
                account_id: account.id,
                actor: by,
                action: "secret.used",
                detail: &format!("{what}: {}", how.join(", ")),
            },
        )
        .await?;
        Ok(out)
    }

    /// The values of `uses` that still open, for masking a log read after
    /// the launch (a console restarted since); none is audited as a use.
    pub async fn masks(&self, account: &Account, uses: &[SecretUse]) -> Vec<String> {
        let names: Vec<String> = uses.iter().map(|u| u.secret.clone()).collect();
        let Ok(rows) = self.table.sealed(account.id, &names).await else {
            return Vec::new();
        };
        rows.iter()
            .filter_map(|row| self.open(account, row).ok())
            .map(|v| String::from_utf8_lossy(&v).into_owned())
            .collect()
    }

    fn open(
        &self,
        account: &Account,
        row: &crate::storage::secrets::SealedRow,
    ) -> Result<Vec<u8>, AppError> {
        if row.key_id != self.sealer.key_id() {
            return Err(AppError::invalid(
                "secrets",
                format!(
                    "Secret “{}” was sealed with another key (id {}) than this console's (id {}): \
                     start the console with the key it was set with, or set the secret again.",
                    row.name,
                    row.key_id,
                    self.sealer.key_id()
                ),
            ));
        }
        self.sealer
            .open(account.id, &row.name, &row.sealed)
            .ok_or_else(|| {
                tracing::error!(account = %account.name, secret = %row.name, "a sealed secret did not open");
                AppError::invalid(
                    "secrets",
                    format!("Secret “{}” could not be opened: set it again.", row.name),
                )
            })
    }
}

#[async_trait]
impl Secrets for SqlSecrets {
    async fn secrets(&self, who: &Principal) -> Result<Vec<SecretInfo>, AppError> {
        self.table.list(who.me.account.id).await
    }

    async fn set_secret(&self, who: &Principal, form: SecretForm) -> Result<SecretInfo, AppError> {
        who.me.role.require_owner("set secrets")?;
        let (name, value, description) = form.validated()?;
        let account = &who.me.account;
        let sealed = self.sealer.seal(account.id, &name, &value);
        self.table
            .put(NewValue {
                account_id: account.id,
                name: &name,
                description: &description,
                key_id: self.sealer.key_id(),
                sealed: &sealed,
                size: value.len(),
                by: &who.me.email,
                at: now_ms(),
            })
            .await?;
        tracing::info!(account = %account.name, user = %who.me.email, secret = %name, "secret set");
        self.table
            .info(account.id, &name)
            .await?
            .ok_or(AppError::Internal)
    }

    async fn delete_secret(&self, who: &Principal, name: &str) -> Result<(), AppError> {
        who.me.role.require_owner("delete secrets")?;
        let name = validate_secret_name(name)?;
        let account = &who.me.account;
        if !self.table.delete(account.id, &name, &who.me.email).await? {
            return Err(AppError::not_found(format!("Secret {name}")));
        }
        Ok(())
    }
}
