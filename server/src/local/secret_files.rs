//! The secrets a local workload uses as files: a folder only the console's
//! user may enter, one file per use, readable by its owner only; removed
//! when the workload's run ends (and, for what a killed console left, when
//! the next one starts).

use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// One run's secret files; the folder goes when this is dropped.
pub struct SecretFiles {
    dir: Option<PathBuf>,
}

impl SecretFiles {
    /// Writes `files` into `<root>/<key>` (nothing, and no folder, when
    /// there are none).
    pub fn write(root: &Path, key: &str, files: &[(String, Vec<u8>)]) -> io::Result<Self> {
        if files.is_empty() {
            return Ok(Self { dir: None });
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(root)?;
        let dir = root.join(key);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        let made = Self {
            dir: Some(dir.clone()),
        };
        for (name, bytes) in files {
            crate::secrets::seal::write_private(&dir.join(name), bytes)?;
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o500))?;
        Ok(made)
    }

    /// The folder, if there are files.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The variable that names the folder, if there are files.
    pub fn env(&self) -> Option<(String, String)> {
        self.dir.as_ref().map(|d| {
            (
                app::models::SECRETS_DIR_VARIABLE.to_owned(),
                d.display().to_string(),
            )
        })
    }

    /// Removes every run's folder under `root`: at start, no workload of an
    /// earlier console process runs any more.
    pub fn clear_all(root: &Path) {
        if root.exists() {
            let _ = make_writable(root);
            if let Err(err) = std::fs::remove_dir_all(root) {
                tracing::warn!(dir = %root.display(), error = %err, "removing old secret files");
            }
        }
    }
}

fn make_writable(dir: &Path) -> io::Result<()> {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    for entry in std::fs::read_dir(dir)?.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            make_writable(&entry.path())?;
        }
    }
    Ok(())
}

impl Drop for SecretFiles {
    fn drop(&mut self) {
        if let Some(dir) = self.dir.take() {
            let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
            if let Err(err) = std::fs::remove_dir_all(&dir) {
                tracing::warn!(dir = %dir.display(), error = %err, "removing secret files");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_files_are_private_and_gone_when_the_run_ends() {
        let root = tempfile::tempdir().unwrap();
        let files = vec![("gcp.json".to_owned(), b"{\"k\":1}".to_vec())];
        let made = SecretFiles::write(root.path(), "job-7", &files).unwrap();
        let dir = made.dir().unwrap().to_owned();
        assert_eq!(std::fs::read(dir.join("gcp.json")).unwrap(), b"{\"k\":1}");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir.join("gcp.json")), 0o600);
        assert_eq!(mode(&dir), 0o500);
        assert_eq!(made.env().unwrap().1, dir.display().to_string());
        drop(made);
        assert!(!dir.exists());
        assert!(SecretFiles::write(root.path(), "none", &[])
            .unwrap()
            .dir()
            .is_none());
    }
}
