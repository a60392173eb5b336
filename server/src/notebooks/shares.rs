//! Notebook files shared read-only: the owner shares a file that has
//! versions with the account's members, another account, or a link;
//! recipients see its newest version rendered (nothing runs) and may copy
//! it into a running notebook of their own, where it gets a version of its
//! own.

use app::error::AppError;
use app::models::{
    copy_name, Me, NewNotebookShare, NotebookShare, NotebookShareSpec, NotebookVersion,
    ShareAudience, SharedNotebookFile, VersionReason, NOTEBOOK_LINK_PREFIX,
};
use app::ports::SharedVia;

use super::contents::Contents;
use super::NotebookService;
use crate::storage::notebook_shares::{NewShare, StoredShare};
use crate::storage::tokens::{random_token, token_hash};
use crate::time::now_ms;

/// What a recipient may read of `stored`: the share, if `by` is among those
/// it is shared with (a link's holder is let in by its token alone).
fn may_read(by: Option<&Me>, stored: &StoredShare) -> bool {
    let Some(me) = by else {
        return false;
    };
    match stored.share.with {
        ShareAudience::Members => me.account.id == stored.owner_account_id,
        ShareAudience::Account => stored.share.account.as_deref() == Some(me.account.name.as_str()),
        ShareAudience::Link => false,
    }
}

impl NotebookService {
    /// Shares file `spec.path` of `by`'s notebook `name`.
    pub(super) async fn share_file_of(
        &self,
        by: &Me,
        name: &str,
        spec: &NotebookShareSpec,
    ) -> Result<NewNotebookShare, AppError> {
        by.role.require_change()?;
        spec.validate()?;
        let stored = self.readable(by, name).await?;
        if self
            .store
            .latest_version(stored.id, &spec.path)
            .await?
            .is_none()
        {
            return Err(AppError::invalid(
                "path",
                format!(
                    "“{}” has no version yet: save it in JupyterLab (or stop the notebook) first.",
                    spec.path
                ),
            ));
        }
        let account_id = match (spec.with, spec.account.as_deref().map(str::trim)) {
            (ShareAudience::Account, Some(account)) => {
                let id = self.store.account_id(account).await?.ok_or_else(|| {
                    AppError::invalid("account", format!("There is no account “{account}”."))
                })?;
                if id == stored.account.id {
                    return Err(AppError::invalid(
                        "account",
                        "That is this notebook's own account: share it with its members instead.",
                    ));
                }
                Some(id)
            }
            _ => None,
        };
        let token = (spec.with == ShareAudience::Link)
            .then(|| format!("{NOTEBOOK_LINK_PREFIX}{}", random_token()));
        let hash = token.as_deref().map(token_hash);
        let now = now_ms();
        let new = NewShare {
            path: &spec.path,
            with: spec.with,
            account_id,
            link: token
                .as_deref()
                .zip(hash.as_deref())
                .map(|(token, hash)| (hash, &token[..12])),
            expires_at: spec
                .expires_days
                .map(|d| now + i64::from(d) * 24 * 3600 * 1000),
            by: &by.email,
            at: now,
        };
        let id = self.store.add_share(stored.id, &new).await?;
        let share = self.store.share(id).await?.ok_or(AppError::Internal)?.share;
        tracing::info!(notebook = %name, path = %spec.path, with = %share.audience(), user = %by.email, "notebook file shared");
        Ok(NewNotebookShare {
            share,
            link: token.map(|t| format!("/shared/notebooks/{t}")),
        })
    }

    /// The shares of `by`'s notebook `name`, newest first.
    pub(super) async fn shares_of(
        &self,
        by: &Me,
        name: &str,
    ) -> Result<Vec<NotebookShare>, AppError> {
        let stored = self.readable(by, name).await?;
        Ok(self
            .store
            .shares_of(stored.id)
            .await?
            .into_iter()
            .map(|s| s.share)
            .collect())
    }

    /// Ends share `id` of `by`'s notebook `name`.
    pub(super) async fn revoke_file_share(
        &self,
        by: &Me,
        name: &str,
        id: i64,
    ) -> Result<(), AppError> {
        by.role.require_change()?;
        let stored = self.readable(by, name).await?;
        if !self.store.revoke_share(stored.id, id).await? {
            return Err(AppError::not_found("Share"));
        }
        tracing::info!(notebook = %name, share = id, user = %by.email, "notebook share revoked");
        Ok(())
    }

    /// The file a share shows: its newest version.
    async fn shown(&self, stored: StoredShare) -> Result<SharedNotebookFile, AppError> {
        let version = self
            .store
            .latest_version(stored.notebook_id, &stored.share.path)
            .await?
            .ok_or_else(|| AppError::not_found("Shared file"))?;
        Ok(SharedNotebookFile {
            share: match stored.share.with {
                ShareAudience::Link => 0,
                _ => stored.share.id,
            },
            owner_account: stored.owner_account,
            owner: stored.owner,
            notebook: stored.share.notebook,
            path: stored.share.path,
            with: stored.share.with,
            version,
        })
    }

    /// Files other users shared with `by` (with their account's members, or
    /// with the account), newest share first.
    pub(super) async fn shared_with(&self, by: &Me) -> Result<Vec<SharedNotebookFile>, AppError> {
        let mut files = Vec::new();
        for stored in self.store.shared_with(by.account.id).await? {
            // Your own file shared with your account's members is yours
            // already; shared with another account of yours, it is not.
            if stored.owner_id == by.user_id && stored.share.with == ShareAudience::Members {
                continue;
            }
            // A file whose versions all went has nothing to show.
            if let Ok(file) = self.shown(stored).await {
                files.push(file);
            }
        }
        Ok(files)
    }

    /// The share `via` names, if `by` (or the link's holder) may read it;
    /// else the "not found" a share that does not exist gets.
    async fn resolve(&self, by: Option<&Me>, via: &SharedVia) -> Result<StoredShare, AppError> {
        let found = match via {
            SharedVia::Share(id) => self
                .store
                .share(*id)
                .await?
                .filter(|s| s.share.with != ShareAudience::Link && may_read(by, s)),
            SharedVia::Link(token) => self
                .store
                .share_by_token(&token_hash(token))
                .await?
                .filter(|s| s.share.expires_at.is_none_or(|at| at > now_ms())),
        };
        found.ok_or_else(|| AppError::not_found("Shared file"))
    }

    /// A shared file and its newest version's bytes.
    pub(super) async fn shared_file(
        &self,
        by: Option<&Me>,
        via: &SharedVia,
    ) -> Result<(SharedNotebookFile, Vec<u8>), AppError> {
        let stored = self.resolve(by, via).await?;
        let notebook_id = stored.notebook_id;
        let file = self.shown(stored).await?;
        let bytes = self.file_of(notebook_id, &file.version).await?;
        Ok((file, bytes))
    }

    /// A shared file's newest version as nbconvert's page.
    pub(super) async fn shared_page(
        &self,
        by: Option<&Me>,
        via: &SharedVia,
    ) -> Result<Vec<u8>, AppError> {
        let stored = self.resolve(by, via).await?;
        let notebook_id = stored.notebook_id;
        let file = self.shown(stored).await?;
        self.page_of(notebook_id, &file.version).await
    }

    /// Copies a shared file into `by`'s running notebook `into`, at the top
    /// of its workspace under a name no file there has; the copy's version.
    pub(super) async fn copy_shared_file(
        &self,
        by: &Me,
        via: &SharedVia,
        into: &str,
    ) -> Result<NotebookVersion, AppError> {
        by.role.require_change()?;
        let (file, bytes) = self.shared_file(Some(by), via).await?;
        let target = self.readable(by, into).await?;
        let route = self.running_route(&target, "copy a file into it").await?;
        let taken = Contents::new(&route, &route.base_path)
            .names("")
            .await
            .map_err(|why| AppError::Unavailable {
                message: format!("The server of notebook “{into}” did not answer: {why}"),
            })?;
        let name = copy_name(file.file_name(), |n| taken.iter().any(|t| t == n));
        let notebook: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|_| AppError::Internal)?;
        let copied = self
            .write_into(&route, by, &name, notebook, VersionReason::Save, None)
            .await?;
        tracing::info!(from = %format!("{}/{}:{}", file.owner_account, file.notebook, file.path), into, path = %name, user = %by.email, "shared notebook file copied");
        Ok(copied)
    }
}
