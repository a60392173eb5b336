//! Listing one folder of an asset's flat file index.

use app::models::FileEntry;

/// The entries of one folder of `files`: its files, and its subfolders with
/// their total size, count and newest change. Folders first, then by name.
pub fn folder(files: &[FileEntry], dir: &str) -> Vec<FileEntry> {
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    let mut out: Vec<FileEntry> = Vec::new();
    for f in files.iter().filter(|f| f.path.starts_with(&prefix)) {
        let rest = &f.path[prefix.len()..];
        match rest.split_once('/') {
            None => out.push(f.clone()),
            Some((sub, _)) => {
                let path = format!("{prefix}{sub}");
                match out.iter_mut().find(|e| e.dir && e.path == path) {
                    Some(d) => {
                        d.size += f.size;
                        d.files += 1;
                        d.modified = d.modified.max(f.modified);
                    }
                    None => out.push(FileEntry {
                        path,
                        dir: true,
                        size: f.size,
                        modified: f.modified,
                        files: 1,
                    }),
                }
            }
        }
    }
    out.sort_by(|a, b| b.dir.cmp(&a.dir).then_with(|| a.path.cmp(&b.path)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, size: u64, modified: i64) -> FileEntry {
        FileEntry {
            path: path.into(),
            dir: false,
            size,
            modified,
            files: 1,
        }
    }

    #[test]
    fn a_folder_lists_its_files_and_subfolders_with_their_totals() {
        let files = [
            file("a.txt", 1, 10),
            file("img/x.png", 5, 20),
            file("img/y.png", 7, 30),
            file("img/deep/z.png", 1, 5),
            file("z.csv", 2, 1),
        ];
        let root = folder(&files, "");
        let names: Vec<(&str, bool, u64, u64)> = root
            .iter()
            .map(|e| (e.path.as_str(), e.dir, e.size, e.files))
            .collect();
        assert_eq!(
            names,
            [
                ("img", true, 13, 3),
                ("a.txt", false, 1, 1),
                ("z.csv", false, 2, 1)
            ]
        );
        assert_eq!(root[0].modified, 30);
        let img = folder(&files, "img");
        let names: Vec<&str> = img.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(names, ["img/deep", "img/x.png", "img/y.png"]);
        assert!(folder(&files, "nope").is_empty());
    }
}
