//! One leaselab per database file. A run or a dashboard holds an advisory lock on
//! `PATH.lock` for its whole life, with its pid, command and start time written inside, so a
//! second leaselab on the same `--db` is refused and told who holds it. The operating system
//! drops the lock when its holder dies, so a killed run's lock file is taken over; the
//! text it left says whose run was recovered.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::clock;
use super::outbox::OutboxError;
use super::text;

/// How often a lock taken on a lock file that its holder removed meanwhile is retried.
const TAKE_ATTEMPTS: usize = 5;

/// The held lock of one database file; dropping it releases the lock and removes the file.
#[derive(Debug)]
pub struct DbLock {
    file: File,
    path: PathBuf,
    /// Who held the lock last without releasing it (a killed or crashed run), if anyone.
    pub recovered: Option<String>,
}

/// `PATH.lock` beside the database `PATH`.
pub fn lock_path(db: &Path) -> PathBuf {
    let mut p = db.as_os_str().to_owned();
    p.push(".lock");
    PathBuf::from(p)
}

/// Whether `path` is a regular file or nothing: opening or reading a FIFO there would wait
/// for a writer that never comes.
fn regular_or_absent(path: &Path) -> bool {
    std::fs::metadata(path).map_or(true, |m| m.is_file())
}

impl DbLock {
    /// Take the lock of `db`, or say who holds it.
    pub fn acquire(db: &Path) -> Result<DbLock, OutboxError> {
        let path = lock_path(db);
        if !regular_or_absent(&path) {
            return Err(OutboxError::Foreign(format!(
                "{}: not a regular file (a FIFO, socket or device), not a lock file",
                path.display()
            )));
        }
        for _ in 0..TAKE_ATTEMPTS {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(|e| cannot_create(db, &path, &e))?;
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {
                    return Err(in_use(db, &describe(&read_holder(&mut file))))
                }
                Err(TryLockError::Error(e)) => {
                    return Err(OutboxError::Io(format!(
                        "{}: cannot lock: {e}",
                        path.display()
                    )))
                }
            }
            // The holder we waited out may have removed the file after we opened it: then we
            // hold the lock of a file nobody else can see, and must take the new one.
            if !same_file(&file, &path) {
                continue;
            }
            let left = read_holder(&mut file);
            let stamp = holder_text();
            file.set_len(0)
                .and_then(|()| file.seek(SeekFrom::Start(0)).map(|_| ()))
                .and_then(|()| file.write_all(stamp.as_bytes()))
                .map_err(|e| OutboxError::Io(format!("{}: cannot write: {e}", path.display())))?;
            return Ok(DbLock {
                file,
                path,
                recovered: (!left.is_empty()).then(|| describe(&left)),
            });
        }
        Err(OutboxError::Io(format!(
            "{}: the lock file kept changing under us; try again",
            path.display()
        )))
    }

    /// Who holds the lock of `db` right now, if anyone; creates nothing.
    pub fn holder(db: &Path) -> Option<String> {
        let path = lock_path(db);
        if !regular_or_absent(&path) {
            return None;
        }
        let mut file = File::open(path).ok()?;
        match file.try_lock_shared() {
            Err(TryLockError::WouldBlock) => Some(describe(&read_holder(&mut file))),
            _ => None,
        }
    }
}

impl Drop for DbLock {
    fn drop(&mut self) {
        // Removed while still locked; closing the file then releases the lock.
        let _ = std::fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

/// What a holder writes into the lock file.
fn holder_text() -> String {
    let command: Vec<String> = std::env::args()
        .enumerate()
        .map(|(i, a)| {
            if i == 0 {
                Path::new(&a)
                    .file_name()
                    .map_or(a.clone(), |n| n.to_string_lossy().into_owned())
            } else {
                a
            }
        })
        .collect();
    let since_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    format!(
        "pid {}\ncommand {}\nsince {}\n",
        std::process::id(),
        one_line(&command.join(" ")),
        clock::iso(since_ms)
    )
}

/// The lock file's text as one line: `pid 42, leaselab run soak, since 2026-...Z`.
fn describe(text: &str) -> String {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name).map(|v| one_line(v.trim())))
    };
    match (field("pid "), field("command "), field("since ")) {
        (Some(pid), command, since) => {
            let mut s = format!("pid {pid}");
            if let Some(c) = command {
                s.push_str(&format!(", `{c}`"));
            }
            if let Some(t) = since {
                s.push_str(&format!(", since {t}"));
            }
            s
        }
        // Locked, but the holder has not written its name yet.
        _ => "a leaselab that is starting up".to_string(),
    }
}

/// A holder's field as the one-line error and the report quote it: the lock file is
/// anyone's to write.
fn one_line(s: &str) -> String {
    text::quoted(s)
}

fn read_holder(file: &mut File) -> String {
    let mut text = String::new();
    let _ = file
        .seek(SeekFrom::Start(0))
        .and_then(|_| file.take(4096).read_to_string(&mut text));
    text
}

/// The refusal a second leaselab gets, naming the holder (as [`DbLock::holder`] gives it).
pub fn in_use(db: &Path, holder: &str) -> OutboxError {
    OutboxError::InUse(format!(
        "{} is in use by another leaselab ({holder}); wait for it to end or choose another --db",
        db.display()
    ))
}

fn cannot_create(db: &Path, lock: &Path, e: &std::io::Error) -> OutboxError {
    use std::io::ErrorKind;
    let dir = lock
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    match e.kind() {
        ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem if !lock.exists() => {
            OutboxError::BadPath(format!(
                "{}: cannot use this database: folder {} is not writable ({e})",
                db.display(),
                dir.display()
            ))
        }
        _ => OutboxError::BadPath(format!(
            "{}: cannot create its lock file {}: {e}",
            db.display(),
            lock.display()
        )),
    }
}

fn same_file(file: &File, path: &Path) -> bool {
    use crate::platform::files::{id_of_file, id_of_path};
    match (id_of_file(file), id_of_path(path)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
