//! [`app::ports::Templates`] in the console's database: one row per saved
//! version, never changed afterwards.

use app::error::AppError;
use app::models::{Account, Me, Template, TemplateList, TemplateSpec};
use app::ports::Templates;
use async_trait::async_trait;
use sqlx::AnyPool;

use crate::storage::internal;
use crate::time::now_ms;

/// Templates on the console's database.
pub struct SqlTemplates {
    pool: AnyPool,
}

impl SqlTemplates {
    /// On a migrated pool.
    pub fn new(pool: AnyPool) -> Self {
        Self { pool }
    }
}

/// A row as a template.
fn template(row: (String, i64, String, i64)) -> Result<Template, AppError> {
    let (spec, version, created_by, created_at) = row;
    let spec: TemplateSpec = serde_json::from_str(&spec).map_err(|err| {
        tracing::error!(error = %err, "a stored template does not read back");
        AppError::Internal
    })?;
    Ok(Template {
        spec,
        version: u32::try_from(version).unwrap_or(u32::MAX),
        created_by,
        created_at,
    })
}

#[async_trait]
impl Templates for SqlTemplates {
    async fn save(&self, by: &Me, spec: TemplateSpec) -> Result<Template, AppError> {
        by.role.require_change()?;
        spec.validate()?;
        let text = serde_json::to_string(&spec).map_err(|_| AppError::Internal)?;
        // Two saves of one name at once: the second takes the next number.
        for _ in 0..5 {
            let newest: Option<i64> = sqlx::query_scalar(
                "SELECT MAX(version) FROM templates WHERE account_id = $1 AND name = $2",
            )
            .bind(by.account.id)
            .bind(&spec.name)
            .fetch_one(&self.pool)
            .await
            .map_err(internal("read a template's versions"))?;
            let version = newest.unwrap_or(0) + 1;
            let now = now_ms();
            let saved = sqlx::query(
                "INSERT INTO templates (account_id, name, version, spec, created_by, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(by.account.id)
            .bind(&spec.name)
            .bind(version)
            .bind(&text)
            .bind(&by.email)
            .bind(now)
            .execute(&self.pool)
            .await;
            match saved {
                Ok(_) => {
                    tracing::info!(account = %by.account.name, template = %spec.name, version, user = %by.email, "template saved");
                    return template((text, version, by.email.clone(), now));
                }
                Err(sqlx::Error::Database(db)) if db.is_unique_violation() => continue,
                Err(err) => return Err(internal("save a template")(err)),
            }
        }
        Err(AppError::conflict(
            "name",
            format!(
                "“{}” is being saved by someone else right now; try again.",
                spec.name
            ),
        ))
    }

    async fn list(&self, account: &Account) -> Result<TemplateList, AppError> {
        let rows: Vec<(String, i64, String, i64)> = sqlx::query_as(
            "SELECT t.spec, t.version, t.created_by, t.created_at FROM templates t \
             WHERE t.account_id = $1 AND t.version = \
             (SELECT MAX(n.version) FROM templates n WHERE n.account_id = t.account_id AND n.name = t.name) \
             ORDER BY t.name",
        )
        .bind(account.id)
        .fetch_all(&self.pool)
        .await
        .map_err(internal("list templates"))?;
        Ok(TemplateList {
            templates: rows.into_iter().map(template).collect::<Result<_, _>>()?,
        })
    }

    async fn get(
        &self,
        account: &Account,
        name: &str,
        version: Option<u32>,
    ) -> Result<Template, AppError> {
        let row: Option<(String, i64, String, i64)> = match version {
            Some(v) => {
                sqlx::query_as(
                    "SELECT spec, version, created_by, created_at FROM templates \
                 WHERE account_id = $1 AND name = $2 AND version = $3",
                )
                .bind(account.id)
                .bind(name)
                .bind(i64::from(v))
                .fetch_optional(&self.pool)
                .await
            }
            None => {
                sqlx::query_as(
                    "SELECT spec, version, created_by, created_at FROM templates \
                 WHERE account_id = $1 AND name = $2 ORDER BY version DESC LIMIT 1",
                )
                .bind(account.id)
                .bind(name)
                .fetch_optional(&self.pool)
                .await
            }
        }
        .map_err(internal("read a template"))?;
        let what = match version {
            Some(v) => format!("Template “{name}” version {v}"),
            None => format!("Template “{name}”"),
        };
        template(row.ok_or_else(|| AppError::not_found(what))?)
    }
}
