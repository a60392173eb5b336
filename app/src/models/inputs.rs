//! What a job (or a notebook) reads: datasets and model versions, each
//! with the variable its folder is given in. One list for every backend, so
//! a replica finds the same names locally and on Kubernetes.

use serde::{Deserialize, Serialize};

use crate::error::AppError;
use crate::models::{
    dataset_dir_variable, model_dir_variable, split_dataset, AssetKind, AssetRef, ModelRef,
};

/// One dataset or model version read by a job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Input {
    /// The asset, its owner made explicit.
    pub asset: AssetRef,
    /// The version read: always one for a model; for a dataset a saved
    /// version (`name:N`), or `None` for its working files.
    pub version: Option<u32>,
    /// `PADDLE_DATASET_DIR_<NAME>` or `PADDLE_MODEL_DIR_<NAME>`.
    pub variable: String,
    /// The first of its kind, whose folder is also `PADDLE_DATASET_DIR`
    /// (or `PADDLE_MODEL_DIR`).
    pub first: bool,
}

impl Input {
    /// The variables its folder is given in: its own, and the kind's
    /// plain one when it is the first of its kind.
    pub fn variables(&self) -> Vec<String> {
        let mut all = vec![self.variable.clone()];
        if self.first {
            all.insert(0, first_variable(self.asset.kind).to_owned());
        }
        all
    }
}

fn first_variable(kind: AssetKind) -> &'static str {
    match kind {
        AssetKind::Dataset => "PADDLE_DATASET_DIR",
        AssetKind::Model => "PADDLE_MODEL_DIR",
    }
}

/// The inputs of a job of `account`: its `datasets` (`name` or
/// `owner/name`, either with `:N`) and its `models` (pinned `owner/name:version`, as the
/// console records them before a backend sees the spec). Each variable
/// names the asset without its owner, as the local executor always has.
pub fn job_inputs(
    account: &str,
    datasets: &[String],
    models: &[String],
) -> Result<Vec<Input>, AppError> {
    let mut inputs = Vec::with_capacity(datasets.len() + models.len());
    for (i, full) in datasets.iter().enumerate() {
        let (owner, name, version) = split_dataset(full)?;
        inputs.push(Input {
            asset: AssetRef {
                kind: AssetKind::Dataset,
                owner: owner.unwrap_or(account).to_owned(),
                name: name.to_owned(),
            },
            version,
            variable: dataset_dir_variable(name),
            first: i == 0,
        });
    }
    for (i, pinned) in models.iter().enumerate() {
        let reference = ModelRef::parse(pinned, "models")?;
        let Some(version) = reference.version else {
            return Err(AppError::invalid(
                "models",
                format!("Say which version of “{pinned}”."),
            ));
        };
        inputs.push(Input {
            asset: reference.asset(account),
            version: Some(version),
            variable: model_dir_variable(&reference.name),
            first: i == 0,
        });
    }
    Ok(inputs)
}

/// A dataset every notebook of its owner is given, as `PADDLE_DATASET_DIR_<NAME>`:
/// the account's own by name, others' as `owner/name`.
pub fn notebook_dataset(account: &str, asset: AssetRef) -> Input {
    let name = if asset.owner == account {
        asset.name.clone()
    } else {
        format!("{}/{}", asset.owner, asset.name)
    };
    Input {
        variable: dataset_dir_variable(&name),
        asset,
        version: None,
        first: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dataset_is_read_whole_or_as_a_saved_version() {
        let inputs =
            job_inputs("acme", &["mnist:3".into(), "shared/faces:12".into()], &[]).unwrap();
        assert_eq!(
            (inputs[0].asset.name.as_str(), inputs[0].version),
            ("mnist", Some(3))
        );
        assert_eq!(inputs[0].asset.owner, "acme");
        assert_eq!(
            inputs[0].variables(),
            ["PADDLE_DATASET_DIR", "PADDLE_DATASET_DIR_MNIST"]
        );
        assert_eq!(
            (inputs[1].asset.owner.as_str(), inputs[1].version),
            ("shared", Some(12))
        );
        for bad in ["mnist:0", "mnist:", "mnist:v2", "mnist:-1"] {
            let err = job_inputs("acme", &[bad.into()], &[])
                .unwrap_err()
                .to_string();
            assert!(err.contains("version is a number"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_jobs_inputs_name_their_owner_and_the_first_of_each_kind_gets_the_plain_variable() {
        let inputs = job_inputs(
            "acme",
            &["mnist".into(), "shared/faces".into()],
            &["acme/base:3".into()],
        )
        .unwrap();
        assert_eq!(inputs.len(), 3);
        assert_eq!(inputs[0].asset.owner, "acme");
        assert_eq!(
            inputs[0].variables(),
            ["PADDLE_DATASET_DIR", "PADDLE_DATASET_DIR_MNIST"]
        );
        assert_eq!(inputs[1].asset.owner, "shared");
        assert_eq!(inputs[1].variables(), ["PADDLE_DATASET_DIR_FACES"]);
        assert_eq!(inputs[2].version, Some(3));
        assert_eq!(
            inputs[2].variables(),
            ["PADDLE_MODEL_DIR", "PADDLE_MODEL_DIR_BASE"]
        );
    }

    #[test]
    fn a_model_without_a_pinned_version_is_refused_on_models() {
        let err = job_inputs("acme", &[], &["base".into()]).unwrap_err();
        assert_eq!(err.field(), Some("models"));
    }

    #[test]
    fn a_notebook_names_other_accounts_datasets_with_their_owner() {
        let asset = |owner: &str| AssetRef {
            kind: AssetKind::Dataset,
            owner: owner.into(),
            name: "mnist".into(),
        };
        assert_eq!(
            notebook_dataset("acme", asset("acme")).variable,
            "PADDLE_DATASET_DIR_MNIST"
        );
        assert_eq!(
            notebook_dataset("acme", asset("shared")).variable,
            "PADDLE_DATASET_DIR_SHARED_MNIST"
        );
    }
}
