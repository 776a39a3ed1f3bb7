//! Whether a SQLite file is still the one a process opened. A file deleted or replaced
//! under an open connection goes on answering (the connection holds the old inode), so a
//! worker or a watch on it would work on a file nobody else sees: they compare the path's
//! device and inode with the ones they opened, now and then, and stop when they differ.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::text::quoted;

/// How often a process looks whether its file is still there: a stat a second is nothing.
pub const LOOK_EVERY: Duration = Duration::from_secs(1);

/// The file a process opened, by its device and inode.
#[derive(Debug, Clone)]
pub struct OpenedFile {
    path: PathBuf,
    id: (u64, u64),
}

impl OpenedFile {
    /// The file at `path` now (just opened); None when it cannot be read.
    pub fn at(path: &Path) -> Option<OpenedFile> {
        let m = std::fs::metadata(path).ok()?;
        Some(OpenedFile {
            path: path.to_path_buf(),
            id: (m.dev(), m.ino()),
        })
    }

    /// Why the path no longer names the file opened, in words for one line; None while it
    /// does.
    pub fn gone(&self) -> Option<String> {
        let shown = quoted(&self.path.display().to_string());
        match std::fs::metadata(&self.path) {
            Ok(m) if (m.dev(), m.ino()) == self.id => None,
            Ok(_) => Some(format!("{shown} was replaced by another file")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Some(format!("{shown} was deleted"))
            }
            Err(e) => Some(format!("{shown} cannot be read any more: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deleted_or_replaced_file_is_told_apart_from_the_one_opened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.db");
        std::fs::write(&path, b"one").unwrap();
        let opened = OpenedFile::at(&path).unwrap();
        assert_eq!(opened.gone(), None, "the same file, written to");
        std::fs::write(&path, b"two").unwrap();
        assert_eq!(opened.gone(), None, "written again in place");
        let other = dir.path().join("y.db");
        std::fs::write(&other, b"three").unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert!(opened
            .gone()
            .unwrap()
            .ends_with("was replaced by another file"));
        std::fs::remove_file(&path).unwrap();
        assert!(opened.gone().unwrap().ends_with("was deleted"));
    }
}
