//! Saving a run's report: both files written whole and synced under temporary names, then
//! named, never over an earlier report; and, before a run, whether the folder takes them.

use std::io;
use std::path::{Path, PathBuf};

use crate::engine::clock::iso;

use super::catalog::Scenario;
use super::report::Report;

/// Why a report could not be saved, in the one line the user sees; the I/O error behind it
/// is its source.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("report folder {} is not a folder", .0.display())]
    NotAFolder(PathBuf),
    #[error("cannot create report folder {}: {source}", dir.display())]
    CreateFolder {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A temporary file in the folder could not be made, written or synced (a full disk).
    #[error("cannot write reports to {}: {source}", dir.display())]
    Write {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A written report could not be given its name.
    #[error("cannot write {}: {source}", path.display())]
    Name {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("too many reports with one timestamp in {}", .0.display())]
    TooMany(PathBuf),
    /// The probe before a run found the folder unfit.
    #[error("{0} (checked before the run)")]
    BeforeTheRun(#[source] Box<ReportError>),
}

impl Report {
    /// Save `<scenario>-<UTC timestamp>.txt` and `.json` under `dir`. Each file is written
    /// whole to a temporary file in `dir`, synced, and only then given its name: a failed
    /// save leaves nothing behind.
    pub fn save(&self, dir: &Path) -> Result<(PathBuf, PathBuf), ReportError> {
        create_folder(dir)?;
        let stamp = wall_stamp();
        let json = self.json_pretty() + "\n";
        let room = hooked_room();
        let txt_tmp = write_temp(dir, self.text.as_bytes(), room)?;
        let js_tmp = match write_temp(dir, json.as_bytes(), room) {
            Ok(t) => t,
            Err(e) => {
                let _ = std::fs::remove_file(&txt_tmp);
                return Err(e);
            }
        };
        let named = name_reports(dir, &stamp, self.scenario, &txt_tmp, &js_tmp);
        let _ = std::fs::remove_file(&txt_tmp);
        let _ = std::fs::remove_file(&js_tmp);
        let paths = named?;
        // The new names are durable once the folder itself is synced.
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(paths)
    }
}

fn create_folder(dir: &Path) -> Result<(), ReportError> {
    std::fs::create_dir_all(dir).map_err(|source| ReportError::CreateFolder {
        dir: dir.to_path_buf(),
        source,
    })
}

/// Test hook: the report folder takes this many bytes, then fails as a full disk would.
pub const REPORT_DISK_BYTES_ENV: &str = "LEASELAB_REPORT_DISK_BYTES";

/// The room the test hook gives the report folder, if it is set.
fn hooked_room() -> Option<usize> {
    std::env::var(REPORT_DISK_BYTES_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
}

/// Write `bytes` to a new temporary file in `dir` and sync it; removed again on failure.
/// `room`: fail as a full disk would after that many bytes (the test hook).
fn write_temp(dir: &Path, bytes: &[u8], room: Option<usize>) -> Result<PathBuf, ReportError> {
    use std::io::Write;
    let cannot = |source| ReportError::Write {
        dir: dir.to_path_buf(),
        source,
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".leaselab-report-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(cannot)?;
    let written = match room {
        Some(room) if room < bytes.len() => tmp.write_all(&bytes[..room]).and_then(|()| {
            Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "No space left on device",
            ))
        }),
        _ => tmp.write_all(bytes),
    };
    written
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(cannot)?;
    // Kept past this function; the caller links it under its final name and removes it.
    tmp.into_temp_path()
        .keep()
        .map_err(|e| cannot(io::Error::other(e)))
}

/// Give the two synced files their final names, never replacing an earlier report.
fn name_reports(
    dir: &Path,
    stamp: &str,
    scenario: Scenario,
    txt_tmp: &Path,
    js_tmp: &Path,
) -> Result<(PathBuf, PathBuf), ReportError> {
    for n in 1..1000 {
        let base = if n == 1 {
            format!("{}-{stamp}", scenario.name())
        } else {
            format!("{}-{stamp}-{n}", scenario.name())
        };
        let txt = dir.join(format!("{base}.txt"));
        let js = dir.join(format!("{base}.json"));
        if js.exists() {
            continue;
        }
        // A hard link takes the name atomically and fails if it is taken.
        match std::fs::hard_link(txt_tmp, &txt) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(source) => return Err(ReportError::Name { path: txt, source }),
        }
        if let Err(source) = std::fs::hard_link(js_tmp, &js) {
            let _ = std::fs::remove_file(&txt);
            return Err(ReportError::Name { path: js, source });
        }
        return Ok((txt, js));
    }
    Err(ReportError::TooMany(dir.to_path_buf()))
}

/// Can reports be written under `dir`? Creates it if needed, then writes, syncs and
/// removes a probe as large as a big report, so a full disk is found before the run.
pub fn check_writable(dir: &Path) -> Result<(), ReportError> {
    if dir.exists() && !dir.is_dir() {
        return Err(ReportError::NotAFolder(dir.to_path_buf()));
    }
    create_folder(dir)?;
    let probe = write_temp(dir, &[b' '; 64 * 1024], None)
        .map_err(|e| ReportError::BeforeTheRun(Box::new(e)))?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

/// `20261202T104500Z`: the wall-clock time of the run, for report file names.
fn wall_stamp() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    iso(ms)
        .replace(['-', ':'], "")
        .split('.')
        .next()
        .unwrap_or_default()
        .to_string()
        + "Z"
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn a_folder_that_cannot_be_made_says_so_in_one_line_and_keeps_its_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("taken");
        std::fs::write(&file, b"not a folder").unwrap();

        let e = check_writable(&file).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("report folder {} is not a folder", file.display())
        );

        let under = file.join("reports");
        let e = check_writable(&under).unwrap_err();
        let io = e
            .source()
            .and_then(|s| s.downcast_ref::<io::Error>())
            .expect("the io error is the source");
        assert_eq!(io.kind(), io::ErrorKind::NotADirectory);
        assert_eq!(
            e.to_string(),
            format!("cannot create report folder {}: {io}", under.display())
        );
    }

    #[test]
    fn a_probe_that_cannot_be_written_is_said_to_be_checked_before_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let e = write_temp(&dir.path().join("gone"), b"x", None).unwrap_err();
        let before = ReportError::BeforeTheRun(Box::new(e));
        let inner = before.source().expect("the failed write is the source");
        assert_eq!(
            before.to_string(),
            format!("{inner} (checked before the run)")
        );
        assert!(
            inner.to_string().starts_with("cannot write reports to "),
            "{inner}"
        );
        assert!(inner.source().is_some_and(|s| s.is::<io::Error>()));
    }
}
