//! Whether a SQLite file is still the one a process opened. A file deleted or replaced
//! under an open connection goes on answering (the connection holds the old inode), so a
//! worker or a watch on it would work on a file nobody else sees: they compare the file the
//! path names (its identity as the system tells files apart: `platform::files`) with the one
//! they opened, now and then, and stop when they differ.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::platform::files::{id_of_path, FileId};
use crate::text::quoted;

/// How often a process looks whether its file is still there: a stat a second is nothing.
pub const LOOK_EVERY: Duration = Duration::from_secs(1);

/// The file a process opened, by its identity.
#[derive(Debug, Clone)]
pub struct OpenedFile {
    path: PathBuf,
    id: FileId,
}

impl OpenedFile {
    /// The file at `path` now (just opened); None when it cannot be read.
    pub fn at(path: &Path) -> Option<OpenedFile> {
        Some(OpenedFile {
            path: path.to_path_buf(),
            id: id_of_path(path).ok()?,
        })
    }

    /// Why the path no longer names the file opened, in words for one line; None while it
    /// does.
    pub fn gone(&self) -> Option<String> {
        let shown = quoted(&self.path.display().to_string());
        match id_of_path(&self.path) {
            Ok(id) if id == self.id => None,
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
