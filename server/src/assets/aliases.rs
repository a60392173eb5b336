//! Model aliases on [`SqlAssets`]: who may read, set, move and delete them
//! (the model's account writes; a protected alias only its owners), and
//! the version an alias may point at (one of the model's, ready).

use app::error::AppError;
use app::models::{
    validate_alias, AliasChange, AliasForm, AssetKind, AssetRef, Me, ModelAlias, Role,
};
use app::ports::Viewer;

use super::{SqlAssets, READY};
use crate::time::now_ms;

/// Changes of a model's aliases a reader gets (the newest).
const HISTORY_SHOWN: i64 = 200;

/// Refused unless `me` owns the model's account: protected aliases are
/// theirs to move.
fn owners_only(me: &Me, alias: &str) -> Result<(), AppError> {
    if me.role == Role::Owner {
        Ok(())
    } else {
        Err(AppError::forbidden(format!(
            "“{alias}” is protected: only the account's owners move, delete or unprotect it."
        )))
    }
}

fn models_only(r: &AssetRef) -> Result<(), AppError> {
    if r.kind == AssetKind::Model {
        Ok(())
    } else {
        Err(AppError::invalid("alias", "Only models have aliases."))
    }
}

impl SqlAssets {
    /// A model's aliases, for whoever may read it.
    pub(super) async fn list_aliases(
        &self,
        viewer: &Viewer,
        r: &AssetRef,
    ) -> Result<Vec<ModelAlias>, AppError> {
        models_only(r)?;
        let (row, _) = self.readable(viewer, r).await?;
        self.aliases.list(row.id).await
    }

    /// Sets or moves `alias` of the model to `form.version`.
    pub(super) async fn put_alias(
        &self,
        me: &Me,
        r: &AssetRef,
        alias: &str,
        form: AliasForm,
    ) -> Result<ModelAlias, AppError> {
        models_only(r)?;
        let alias = validate_alias(alias)?;
        let row = self.owned(me, r).await?;
        let version = self
            .store
            .versions(row.id)
            .await?
            .into_iter()
            .find(|v| v.version == form.version)
            .ok_or_else(|| {
                AppError::invalid(
                    "version",
                    format!("“{}/{}” has no version {}.", r.owner, r.name, form.version),
                )
            })?;
        if version.state != READY {
            return Err(AppError::invalid(
                "version",
                format!("Version {} is still uploading.", form.version),
            ));
        }
        let before = self.aliases.get(row.id, &alias).await?;
        let was_protected = before.as_ref().is_some_and(|a| a.protected);
        let protected = form.protected.unwrap_or(was_protected);
        if was_protected || protected {
            owners_only(me, &alias)?;
        }
        let set = ModelAlias {
            alias: alias.clone(),
            version: form.version,
            protected,
            updated_by: me.email.clone(),
            updated_at: now_ms(),
        };
        let from = before.map(|a| a.version);
        if !self.aliases.set(row.id, &set, from).await? {
            return Err(AppError::conflict(
                "alias",
                format!("“{alias}” changed while you set it; look again and retry."),
            ));
        }
        Ok(set)
    }

    /// Deletes `alias` of the model.
    pub(super) async fn remove_alias(
        &self,
        me: &Me,
        r: &AssetRef,
        alias: &str,
    ) -> Result<(), AppError> {
        models_only(r)?;
        let row = self.owned(me, r).await?;
        let missing =
            || AppError::not_found(format!("Alias “{alias}” of model “{}/{}”", r.owner, r.name));
        let before = self.aliases.get(row.id, alias).await?.ok_or_else(missing)?;
        if before.protected {
            owners_only(me, alias)?;
        }
        if !self
            .aliases
            .delete(row.id, alias, before.version, &me.email, now_ms())
            .await?
        {
            return Err(missing());
        }
        Ok(())
    }

    /// What happened to the model's aliases, newest first.
    pub(super) async fn alias_changes(
        &self,
        viewer: &Viewer,
        r: &AssetRef,
    ) -> Result<Vec<AliasChange>, AppError> {
        models_only(r)?;
        let (row, _) = self.readable(viewer, r).await?;
        self.aliases.history(row.id, HISTORY_SHOWN).await
    }
}
