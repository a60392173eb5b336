//! Versioned, shareable specs: what templates and environments have in
//! common. Each save of a name is a new row with the next version, never
//! changed afterwards, so a recorded version always means what ran.
//! `public` is kept the same on every version of a name (a site admin
//! publishes a name): a published one is readable by every account as
//! `owner/name`; anything else of another account does not exist for the
//! caller.

use app::error::AppError;
use app::models::Account;
use sqlx::AnyPool;

use super::internal;
use crate::storage::db::WriteTx;
use crate::time::now_ms;

/// One stored version.
#[derive(Debug, Clone)]
pub struct Row {
    /// The spec as JSON.
    pub spec: String,
    /// Its version.
    pub version: u32,
    /// Published for everyone.
    pub public: bool,
    /// Who saved it.
    pub created_by: String,
    /// When (Unix ms).
    pub created_at: i64,
    /// The owning account's name.
    pub owner: String,
}

type RawRow = (String, i64, i64, String, i64, String);

impl From<RawRow> for Row {
    fn from((spec, version, public, created_by, created_at, owner): RawRow) -> Self {
        Self {
            spec,
            version: u32::try_from(version).unwrap_or(u32::MAX),
            public: public != 0,
            created_by,
            created_at,
            owner,
        }
    }
}

/// One table of versioned specs (`templates` or `environments`: the name
/// is always one of ours, never a user's).
#[derive(Clone)]
pub struct Catalog {
    pool: AnyPool,
    table: &'static str,
    /// What an entry is called in messages ("Template").
    kind: &'static str,
}

impl Catalog {
    /// The catalog in `table` of `kind`s, on a migrated pool.
    pub fn new(pool: AnyPool, table: &'static str, kind: &'static str) -> Self {
        Self { pool, table, kind }
    }

    fn select(&self) -> String {
        format!(
            "SELECT t.spec, t.version, t.public, t.created_by, t.created_at, a.name FROM {} t \
             JOIN accounts a ON a.id = t.account_id",
            self.table
        )
    }

    /// Saves `spec` as the next version of `name` in account `owner`
    /// (`account_id`), as public as the name's other versions (or as
    /// `public` for a new name). Two saves at once: the second takes the
    /// next number.
    pub async fn save(
        &self,
        account_id: i64,
        owner: &str,
        name: &str,
        spec: &str,
        by: &str,
        public: bool,
    ) -> Result<Row, AppError> {
        for _ in 0..5 {
            let newest: Option<(i64, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT version, public FROM {} WHERE account_id = $1 AND name = $2 \
                 ORDER BY version DESC LIMIT 1",
                self.table
            )))
            .bind(account_id)
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(internal("read a catalog entry's versions"))?;
            let (version, public) = match newest {
                Some((v, p)) => (v + 1, p),
                None => (1, i64::from(public)),
            };
            let now = now_ms();
            let saved = sqlx::query(sqlx::AssertSqlSafe(format!(
                "INSERT INTO {} (account_id, name, version, spec, public, created_by, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
                self.table
            )))
            .bind(account_id)
            .bind(name)
            .bind(version)
            .bind(spec)
            .bind(public)
            .bind(by)
            .bind(now)
            .execute(&self.pool)
            .await;
            match saved {
                Ok(_) => {
                    return Ok(Row {
                        spec: spec.to_owned(),
                        version: u32::try_from(version).unwrap_or(u32::MAX),
                        public: public != 0,
                        created_by: by.to_owned(),
                        created_at: now,
                        owner: owner.to_owned(),
                    });
                }
                Err(sqlx::Error::Database(db)) if db.is_unique_violation() => continue,
                Err(err) => return Err(internal("save a catalog entry")(err)),
            }
        }
        Err(AppError::conflict(
            "name",
            format!("“{name}” is being saved by someone else right now; try again."),
        ))
    }

    /// The newest version of every name `account_id` can read: its own
    /// first, then published ones, by owner and name.
    pub async fn list(&self, account_id: i64) -> Result<Vec<Row>, AppError> {
        let rows: Vec<RawRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{} WHERE (t.account_id = $1 OR t.public = 1) AND t.version = \
             (SELECT MAX(n.version) FROM {} n WHERE n.account_id = t.account_id AND n.name = t.name) \
             ORDER BY CASE WHEN t.account_id = $1 THEN 0 ELSE 1 END, a.name, t.name",
            self.select(),
            self.table
        )))
        .bind(account_id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list a catalog"))?;
        Ok(rows.into_iter().map(Row::from).collect())
    }

    /// Version `version` (`None`: the newest) of `owner/name`, if
    /// `account_id` can read it.
    pub async fn get(
        &self,
        account_id: i64,
        owner: &str,
        name: &str,
        version: Option<u32>,
    ) -> Result<Option<Row>, AppError> {
        let visible = "a.name = $1 AND t.name = $2 AND (t.account_id = $3 OR t.public = 1)";
        let row: Option<RawRow> = match version {
            Some(v) => {
                sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "{} WHERE {visible} AND t.version = $4",
                    self.select()
                )))
                .bind(owner)
                .bind(name)
                .bind(account_id)
                .bind(i64::from(v))
                .fetch_optional(&self.pool)
                .await
            }
            None => {
                sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "{} WHERE {visible} ORDER BY t.version DESC LIMIT 1",
                    self.select()
                )))
                .bind(owner)
                .bind(name)
                .bind(account_id)
                .fetch_optional(&self.pool)
                .await
            }
        }
        .map_err(internal("read a catalog entry"))?;
        Ok(row.map(Row::from))
    }

    /// [`Catalog::get`] for `account`, with a "not found" that names what
    /// was looked for (`owner/` only for another account's).
    pub async fn find(
        &self,
        account: &Account,
        owner: &str,
        name: &str,
        version: Option<u32>,
    ) -> Result<Row, AppError> {
        let row = self.get(account.id, owner, name, version).await?;
        row.ok_or_else(|| {
            let who = if owner == account.name {
                String::new()
            } else {
                format!("{owner}/")
            };
            AppError::not_found(match version {
                Some(v) => format!("{} “{who}{name}” version {v}", self.kind),
                None => format!("{} “{who}{name}”", self.kind),
            })
        })
    }

    /// Every version number of `owner/name`, newest first.
    pub async fn versions(&self, owner: &str, name: &str) -> Result<Vec<u32>, AppError> {
        let versions: Vec<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT t.version FROM {} t JOIN accounts a ON a.id = t.account_id \
             WHERE a.name = $1 AND t.name = $2 ORDER BY t.version DESC",
            self.table
        )))
        .bind(owner)
        .bind(name)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list a catalog entry's versions"))?;
        Ok(versions
            .into_iter()
            .map(|v| u32::try_from(v).unwrap_or(u32::MAX))
            .collect())
    }

    /// Publishes (or takes back) every version of `owner/name`, as `me`,
    /// who must be a site admin. The newest version, as it is now (the
    /// admin may not see it otherwise once it is taken back).
    pub async fn publish(
        &self,
        me: &app::models::Me,
        owner: &str,
        name: &str,
        public: bool,
    ) -> Result<Row, AppError> {
        if !super::users::is_site_admin(&self.pool, me.user_id).await? {
            return Err(AppError::forbidden(format!(
                "Only a site admin publishes a {} for everyone.",
                self.kind.to_lowercase()
            )));
        }
        let not_found = || AppError::not_found(format!("{} “{owner}/{name}”", self.kind));
        // The change and its audit entry (in the owner's log) go in together.
        let mut tx = self
            .pool
            .begin_write()
            .await
            .map_err(internal("begin a publication"))?;
        let account_id: i64 = sqlx::query_scalar("SELECT id FROM accounts WHERE name = $1")
            .bind(owner)
            .fetch_optional(&mut *tx)
            .await
            .map_err(internal("find a catalog entry's owner"))?
            .ok_or_else(not_found)?;
        let done = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE {} SET public = $1 WHERE name = $2 AND account_id = $3",
            self.table
        )))
        .bind(i64::from(public))
        .bind(name)
        .bind(account_id)
        .execute(&mut *tx)
        .await
        .map_err(internal("publish a catalog entry"))?;
        if done.rows_affected() == 0 {
            return Err(not_found());
        }
        let kind = self.kind.to_lowercase();
        let action = format!(
            "{kind}.{}",
            if public { "published" } else { "unpublished" }
        );
        let detail = format!(
            "{kind} {owner}/{name} {} every account",
            if public {
                "published for"
            } else {
                "taken back from"
            }
        );
        super::audit::record(
            &mut *tx,
            super::audit::Entry {
                account_id,
                actor: &me.email,
                action: &action,
                detail: &detail,
            },
        )
        .await?;
        tx.commit()
            .await
            .map_err(internal("commit a publication"))?;
        let newest: RawRow = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "{} WHERE a.name = $1 AND t.name = $2 ORDER BY t.version DESC LIMIT 1",
            self.select()
        )))
        .bind(owner)
        .bind(name)
        .fetch_one(&self.pool)
        .await
        .map_err(internal("read a published catalog entry"))?;
        Ok(Row::from(newest))
    }

    /// Saves what the console ships (`(name, spec as JSON)`) in account
    /// `owner` as the next version of each name whose newest stored spec
    /// differs, published for everyone when the name is new (a site admin
    /// may take one back; an upgrade keeps that).
    pub async fn install<T: serde::Serialize>(
        &self,
        owner: &str,
        shipped: &[(&str, T)],
    ) -> Result<(), AppError> {
        let account_id: Option<i64> = sqlx::query_scalar("SELECT id FROM accounts WHERE name = $1")
            .bind(owner)
            .fetch_optional(&self.pool)
            .await
            .map_err(internal("find the library account"))?;
        let Some(account_id) = account_id else {
            tracing::warn!(
                owner,
                table = self.table,
                "no library account: what the console ships is not installed"
            );
            return Ok(());
        };
        for (name, spec) in shipped {
            let value = serde_json::to_value(spec).map_err(|_| AppError::Internal)?;
            let spec = value.to_string();
            let newest = self.get(account_id, owner, name, None).await?;
            let same = |row: &Row| {
                serde_json::from_str::<serde_json::Value>(&row.spec).ok() == Some(value.clone())
            };
            if newest.as_ref().is_some_and(same) {
                continue;
            }
            let row = self
                .save(account_id, owner, name, &spec, owner, true)
                .await?;
            tracing::info!(
                table = self.table,
                name,
                version = row.version,
                "shipped entry installed"
            );
        }
        Ok(())
    }
}
