//! SQL for notebook files shared read-only (`notebook_shares`).

use app::error::AppError;
use app::models::{NotebookShare, ShareAudience};

use super::internal;
use super::notebooks::NotebookStore;

/// The columns [`ShareRow`] reads, over [`FROM`].
const COLUMNS: &str = "s.id, s.notebook_id, n.name AS notebook, s.path, s.audience, \
     sa.name AS account, s.prefix, s.expires_at, s.created_by, s.created_at, \
     a.name AS owner_account, u.email AS owner, n.account_id AS owner_account_id, \
     n.user_id AS owner_id";

/// A share with its notebook, the notebook's account and owner, and the
/// account it is shared with.
const FROM: &str = "notebook_shares s JOIN notebooks n ON n.id = s.notebook_id \
     JOIN accounts a ON a.id = n.account_id JOIN users u ON u.id = n.user_id \
     LEFT JOIN accounts sa ON sa.id = s.account_id";

#[derive(sqlx::FromRow)]
struct ShareRow {
    id: i64,
    notebook_id: i64,
    notebook: String,
    path: String,
    audience: String,
    account: Option<String>,
    prefix: Option<String>,
    expires_at: Option<i64>,
    created_by: String,
    created_at: i64,
    owner_account: String,
    owner: String,
    owner_account_id: i64,
    owner_id: i64,
}

/// A share as the service needs it: what the owner sees, and whose it is.
#[derive(Debug, Clone)]
pub struct StoredShare {
    /// The share.
    pub share: NotebookShare,
    /// The notebook's id.
    pub notebook_id: i64,
    /// The notebook's account.
    pub owner_account: String,
    /// Its id.
    pub owner_account_id: i64,
    /// The notebook's owner's address.
    pub owner: String,
    /// Their user id.
    pub owner_id: i64,
}

impl From<ShareRow> for StoredShare {
    fn from(r: ShareRow) -> Self {
        Self {
            share: NotebookShare {
                id: r.id,
                notebook: r.notebook,
                path: r.path,
                with: ShareAudience::parse(&r.audience).unwrap_or(ShareAudience::Link),
                account: r.account,
                link_prefix: r.prefix,
                expires_at: r.expires_at,
                created_by: r.created_by,
                created_at: r.created_at,
            },
            notebook_id: r.notebook_id,
            owner_account: r.owner_account,
            owner_account_id: r.owner_account_id,
            owner: r.owner,
            owner_id: r.owner_id,
        }
    }
}

/// A share to record.
#[derive(Debug, Clone)]
pub struct NewShare<'a> {
    /// The file.
    pub path: &'a str,
    /// With whom.
    pub with: ShareAudience,
    /// For an account share: its id.
    pub account_id: Option<i64>,
    /// For a link: its token's hash and first characters.
    pub link: Option<(&'a str, &'a str)>,
    /// For a link: when it stops working.
    pub expires_at: Option<i64>,
    /// Who shares it.
    pub by: &'a str,
    /// When.
    pub at: i64,
}

impl NotebookStore {
    async fn shares_where(
        &self,
        condition: &str,
        first: i64,
        second: Option<&str>,
    ) -> Result<Vec<StoredShare>, AppError> {
        let sql = format!("SELECT {COLUMNS} FROM {FROM} WHERE {condition} ORDER BY s.id DESC");
        let query = sqlx::query_as::<_, ShareRow>(sqlx::AssertSqlSafe(sql)).bind(first);
        let query = match second {
            Some(v) => query.bind(v.to_owned()),
            None => query,
        };
        let rows = query
            .fetch_all(&self.pool)
            .await
            .map_err(internal("read notebook shares"))?;
        Ok(rows.into_iter().map(StoredShare::from).collect())
    }

    /// Records a share; its id. The same file shared twice with the same
    /// members or account is a conflict.
    pub async fn add_share(&self, notebook_id: i64, new: &NewShare<'_>) -> Result<i64, AppError> {
        if new.with != ShareAudience::Link {
            let same: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM notebook_shares WHERE notebook_id = $1 AND path = $2 \
                 AND audience = $3 AND COALESCE(account_id, 0) = $4",
            )
            .bind(notebook_id)
            .bind(new.path)
            .bind(new.with.as_str())
            .bind(new.account_id.unwrap_or(0))
            .fetch_one(&self.pool)
            .await
            .map_err(internal("look for a notebook share"))?;
            if same > 0 {
                return Err(AppError::conflict(
                    "with",
                    format!("{} is shared with them already.", new.path),
                ));
            }
        }
        sqlx::query_scalar(
            "INSERT INTO notebook_shares (notebook_id, path, audience, account_id, token_hash, \
             prefix, expires_at, created_by, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
        )
        .bind(notebook_id)
        .bind(new.path)
        .bind(new.with.as_str())
        .bind(new.account_id)
        .bind(new.link.map(|(hash, _)| hash))
        .bind(new.link.map(|(_, prefix)| prefix))
        .bind(new.expires_at)
        .bind(new.by)
        .bind(new.at)
        .fetch_one(&self.pool)
        .await
        .map_err(internal("share a notebook file"))
    }

    /// The notebook's shares, newest first.
    pub async fn shares_of(&self, notebook_id: i64) -> Result<Vec<StoredShare>, AppError> {
        self.shares_where("s.notebook_id = $1", notebook_id, None)
            .await
    }

    /// Share `id`, if there is one.
    pub async fn share(&self, id: i64) -> Result<Option<StoredShare>, AppError> {
        Ok(self.shares_where("s.id = $1", id, None).await?.pop())
    }

    /// The share whose link's token hashes to `hash`, if there is one.
    pub async fn share_by_token(&self, hash: &str) -> Result<Option<StoredShare>, AppError> {
        Ok(self
            .shares_where("s.token_hash = $2 AND s.id > $1", 0, Some(hash))
            .await?
            .pop())
    }

    /// What is shared with account `account_id`: its members' shares with
    /// the account, and other accounts' shares with it.
    pub async fn shared_with(&self, account_id: i64) -> Result<Vec<StoredShare>, AppError> {
        self.shares_where(
            "(s.audience = 'members' AND n.account_id = $1) \
             OR (s.audience = 'account' AND s.account_id = $1)",
            account_id,
            None,
        )
        .await
    }

    /// Removes share `id` of notebook `notebook_id`; whether there was one.
    pub async fn revoke_share(&self, notebook_id: i64, id: i64) -> Result<bool, AppError> {
        let done = sqlx::query("DELETE FROM notebook_shares WHERE id = $1 AND notebook_id = $2")
            .bind(id)
            .bind(notebook_id)
            .execute(&self.pool)
            .await
            .map_err(internal("revoke a notebook share"))?;
        Ok(done.rows_affected() > 0)
    }
}

impl NotebookStore {
    /// The id of the account named `name`, if there is one.
    pub async fn account_id(&self, name: &str) -> Result<Option<i64>, AppError> {
        Ok(super::users::account_named(&self.pool, name)
            .await?
            .map(|a| a.id))
    }
}
