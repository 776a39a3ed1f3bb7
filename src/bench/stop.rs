//! How a bench learns that a stopping signal arrived (see `signals::watch`), and where its
//! databases live meanwhile: a scratch folder of its own, emptied as it goes.

use std::path::Path;

use super::error::BenchError;

/// Whether a stopping signal arrived: every loop of the bench asks before each message or
/// transaction.
pub(crate) fn stop_asked() -> bool {
    crate::signals::received().is_some()
}

/// [`BenchError::Stopped`] once a stopping signal arrived, between two runs.
pub(crate) fn go_on() -> Result<(), BenchError> {
    if stop_asked() {
        Err(BenchError::Stopped)
    } else {
        Ok(())
    }
}

/// A folder for the bench's databases in the temporary folder, named with this process's
/// pid; the folders of benches killed before they could remove theirs go first.
pub(crate) fn scratch_folder() -> Result<tempfile::TempDir, BenchError> {
    let tmp = std::env::temp_dir();
    crate::leftovers::sweep(&tmp, "leaselab-bench-");
    tempfile::Builder::new()
        .prefix(&crate::leftovers::prefix("leaselab-bench-"))
        .tempdir_in(&tmp)
        .map_err(BenchError::Scratch)
}

/// Remove the databases of finished runs so a long bench does not fill the disk.
pub(crate) fn clean(dir: &Path, keep: &str) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if !e.file_name().to_string_lossy().starts_with(keep) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}
