//! [`app::ports::Templates`] in the console's database
//! ([`crate::storage::catalog`]: one row per saved version, never changed
//! afterwards), with the library the console ships.

use crate::storage::db::Pool;
use app::error::AppError;
use app::models::{Account, Me, Template, TemplateList, TemplateSpec};
use app::ports::Templates;
use async_trait::async_trait;

use crate::environments::LIBRARY_ACCOUNT;
use crate::storage::catalog::{Catalog, Row};

/// Templates on the console's database.
pub struct SqlTemplates {
    catalog: Catalog,
}

impl SqlTemplates {
    /// On a migrated pool.
    pub fn new(pool: Pool) -> Self {
        Self {
            catalog: Catalog::new(pool, "templates", "Template"),
        }
    }

    /// Saves the templates the console ships ([`shipped`]) as the next
    /// version of each in the library account where the newest stored one
    /// differs, published for everyone.
    pub async fn install_library(&self) -> Result<(), AppError> {
        let shipped = shipped();
        let mut entries = Vec::new();
        for spec in &shipped {
            spec.validate()?;
            entries.push((spec.name.as_str(), spec));
        }
        self.catalog.install(LIBRARY_ACCOUNT, &entries).await
    }
}

/// The template library: JSON files in `library/templates/` (each
/// program beside its template as a `.py` file, the same text).
pub fn shipped() -> Vec<TemplateSpec> {
    [
        include_str!("../../library/templates/fit-a-line.json"),
        include_str!("../../library/templates/evaluate-a-line.json"),
    ]
    .iter()
    .map(|text| serde_json::from_str(text).expect("a shipped template reads"))
    .collect()
}

/// A row as a template.
fn read(row: &Row) -> Result<Template, AppError> {
    let spec: TemplateSpec = serde_json::from_str(&row.spec).map_err(|err| {
        tracing::error!(error = %err, "a stored template does not read back");
        AppError::Internal
    })?;
    Ok(Template {
        spec,
        owner: row.owner.clone(),
        public: row.public,
        version: row.version,
        created_by: row.created_by.clone(),
        created_at: row.created_at,
    })
}

#[async_trait]
impl Templates for SqlTemplates {
    async fn save(&self, by: &Me, spec: TemplateSpec) -> Result<Template, AppError> {
        by.role.require_change()?;
        spec.validate()?;
        let text = serde_json::to_string(&spec).map_err(|_| AppError::Internal)?;
        let row = self
            .catalog
            .save(
                by.account.id,
                &by.account.name,
                &spec.name,
                &text,
                &by.email,
                false,
            )
            .await?;
        tracing::info!(account = %by.account.name, template = %spec.name, version = row.version, user = %by.email, "template saved");
        read(&row)
    }

    async fn list(&self, account: &Account) -> Result<TemplateList, AppError> {
        Ok(TemplateList {
            templates: self
                .catalog
                .list(account.id)
                .await?
                .iter()
                .map(read)
                .collect::<Result<_, _>>()?,
        })
    }

    async fn get(
        &self,
        account: &Account,
        owner: Option<&str>,
        name: &str,
        version: Option<u32>,
    ) -> Result<Template, AppError> {
        let owner = owner.filter(|o| !o.is_empty()).unwrap_or(&account.name);
        read(&self.catalog.find(account, owner, name, version).await?)
    }

    async fn publish(
        &self,
        me: &Me,
        owner: &str,
        name: &str,
        public: bool,
    ) -> Result<Template, AppError> {
        let row = self.catalog.publish(me, owner, name, public).await?;
        read(&row)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_shipped_templates_are_valid_and_carry_their_programs_as_written() {
        let shipped = super::shipped();
        for t in &shipped {
            t.validate().unwrap();
        }
        let programs = [
            (
                "fit-a-line",
                include_str!("../../library/templates/fit-a-line.py"),
            ),
            (
                "evaluate-a-line",
                include_str!("../../library/templates/evaluate-a-line.py"),
            ),
        ];
        for (name, program) in programs {
            let t = shipped.iter().find(|t| t.name == name).unwrap();
            assert_eq!(t.job["command"][2].as_str().unwrap(), program, "{name}");
        }
    }
}
