//! One connection: its pragmas, its busy handler, and the one write transaction every
//! statement that changes the outbox runs in.

use std::cell::Cell;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};

use super::prepared::{Conn, Hot, Tx};
use super::{OutboxError, Result, Store, StoreShared};

/// A transaction [`Store::write`] began: rolled back when this goes while it is still open.
struct Open<'c>(&'c Connection);

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if !self.0.is_autocommit() {
            let _ = self.0.execute_batch("ROLLBACK");
        }
    }
}

/// How a write transaction ends.
pub(super) enum End {
    Commit,
    /// Nothing it did stays (a finalize whose guard matched no row).
    RollBack,
}

impl End {
    fn statement(&self) -> (Hot, &'static str) {
        match self {
            End::Commit => (Hot::Commit, "COMMIT"),
            End::RollBack => (Hot::Rollback, "ROLLBACK"),
        }
    }
}

/// How long a connection keeps retrying a locked database before giving up.
const BUSY_GIVE_UP: Duration = Duration::from_secs(30);
/// Overrides [`BUSY_GIVE_UP`] in milliseconds, read once per process (tests use a short one).
pub const BUSY_GIVE_UP_ENV: &str = "LEASELAB_BUSY_GIVE_UP_MS";
/// How long a connection waits before asking for a locked database again.
const BUSY_PAUSE: Duration = Duration::from_millis(1);

thread_local! {
    static BUSY_MET_HERE: Cell<u64> = const { Cell::new(0) };
}

/// How long a connection waits out a locked database before it fails with SQLITE_BUSY.
pub fn busy_give_up() -> Duration {
    static LIMIT: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::env::var(BUSY_GIVE_UP_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map_or(BUSY_GIVE_UP, Duration::from_millis)
    })
}

/// A worker process waits for the write lock as long as it takes (another process may be
/// stopped inside its transaction): set once, for the whole process.
static PATIENT: AtomicBool = AtomicBool::new(false);
/// Set when the process is asked to stop: a wait for the lock then gives up at once.
static STOPPING: AtomicBool = AtomicBool::new(false);
/// Told once per wait, when a patient wait passes the busy limit, how long it has waited.
static ON_LONG_WAIT: OnceLock<Box<dyn Fn(Duration) + Send + Sync>> = OnceLock::new();

/// From now on this process waits for a locked database without a limit, and tells
/// `on_long_wait` once per wait that passes the usual limit (30 s).
pub fn wait_for_the_lock_without_limit(on_long_wait: impl Fn(Duration) + Send + Sync + 'static) {
    let _ = ON_LONG_WAIT.set(Box::new(on_long_wait));
    PATIENT.store(true, Ordering::Relaxed);
}

/// Every wait for a locked database in this process gives up now (a signal asked it to
/// stop): the statement fails with SQLITE_BUSY and the worker ends.
pub fn stop_waiting_for_the_lock() {
    STOPPING.store(true, Ordering::Relaxed);
}

/// This process is leaving: the few writes that give its lease back and say it left wait
/// for a locked database again, up to [`LEAVING_WAIT`] each, whatever stops come meanwhile
/// (a dashboard's end comes as two: its pipe closing and the kernel's hang-up; workers that
/// leave together take the lock in turn).
pub fn wait_for_the_lock_again() {
    LEAVING.store(true, Ordering::Relaxed);
}

/// How long each write of a leaving process waits for the lock.
pub const LEAVING_WAIT: Duration = Duration::from_secs(5);

static LEAVING: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// The last wait for the lock this thread gave up: how long it waited, and whether a stop
    /// (not the time limit) ended it. Taken by the error the statement then fails with.
    static GAVE_UP: Cell<Option<(Duration, bool)>> = const { Cell::new(None) };
}

/// How the last wait for the lock on this thread ended, if one was given up since asked.
pub(crate) fn take_given_up_wait() -> Option<(Duration, bool)> {
    GAVE_UP.with(Cell::take)
}

/// A wait given up on this thread whose error nobody took (as a statement whose error is
/// dropped or said otherwise leaves it).
#[cfg(test)]
pub(super) fn leave_a_given_up_wait(waited: Duration) {
    GAVE_UP.with(|g| g.set(Some((waited, false))));
}

/// A new transaction starts: a wait given up before it, whose error nobody took, is not
/// this transaction's (an error of its own met without a wait must not name that one).
pub(crate) fn forget_given_up_wait() {
    GAVE_UP.with(|g| g.set(None));
}

/// Waits out a locked database like busy_timeout does, but counts each encounter.
fn busy_handler(attempt: i32) -> bool {
    thread_local! {
        static STARTED: Cell<Option<Instant>> = const { Cell::new(None) };
        static TOLD: Cell<bool> = const { Cell::new(false) };
    }
    if attempt == 0 {
        forget_given_up_wait();
        BUSY_MET_HERE.with(|c| c.set(c.get() + 1));
        STARTED.with(|s| s.set(Some(Instant::now())));
        TOLD.with(|t| t.set(false));
    }
    let started = STARTED.with(|s| s.get()).unwrap_or_else(Instant::now);
    let waited = started.elapsed();
    let give_up = |stopped: bool| {
        GAVE_UP.with(|g| g.set(Some((waited, stopped))));
        false
    };
    if LEAVING.load(Ordering::Relaxed) {
        if waited > LEAVING_WAIT {
            return give_up(false);
        }
    } else if STOPPING.load(Ordering::Relaxed) {
        return give_up(true);
    } else if waited > busy_give_up() {
        if !PATIENT.load(Ordering::Relaxed) {
            return give_up(false);
        }
        if !TOLD.with(|t| t.replace(true)) {
            if let Some(tell) = ON_LONG_WAIT.get() {
                tell(waited);
            }
        }
    }
    // A whole millisecond, not a short nap: while a waiter sleeps, the lock holder runs
    // several transactions on a warm page cache. Every hand-over costs the next connection
    // its cache, so fewer hand-overs mean more messages per second (and less fairness).
    std::thread::sleep(BUSY_PAUSE);
    true
}

impl Store {
    /// Open another connection to a database that [`Store::create`] prepared.
    pub fn open(path: &Path, shared: Arc<StoreShared>) -> Result<Store> {
        refuse_special_path(path)?;
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        Store::configure(conn, path, shared)
    }

    /// A new file at `path` with this module's connection settings (the bench's plain
    /// reference outbox; a leaselab database is made by [`Store::create`]).
    pub(super) fn open_new(path: &Path, shared: Arc<StoreShared>) -> Result<Store> {
        refuse_special_path(path)?;
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        Store::configure(conn, path, shared)
    }

    /// A connection that can only read (the dashboard's table).
    pub fn open_read_only(path: &Path) -> Result<Store> {
        refuse_special_path(path)?;
        let mut conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_handler(Some(busy_handler))?;
        stable_plans(&conn)?;
        Ok(Store {
            conn: Conn::new(conn),
            path: path.to_path_buf(),
            shared: Arc::new(StoreShared::default()),
            rules: Default::default(),
            sandbox: None,
        })
    }

    /// A connection that reads without creating or changing anything beside the file (no
    /// `-wal`, no `-shm`): a replay changes nothing on disk.
    pub fn open_untouched(path: &Path) -> Result<Store> {
        refuse_special_path(path)?;
        let conn = open_untouched(path)?;
        stable_plans(&conn)?;
        Ok(Store {
            conn: Conn::new(conn),
            path: path.to_path_buf(),
            shared: Arc::new(StoreShared::default()),
            rules: Default::default(),
            sandbox: None,
        })
    }

    fn configure(mut conn: Connection, path: &Path, shared: Arc<StoreShared>) -> Result<Store> {
        conn.busy_handler(Some(busy_handler))?;
        stable_plans(&conn)?;
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(OutboxError::Io(format!(
                "{}: could not switch to WAL (journal_mode={mode})",
                path.display()
            )));
        }
        conn.execute_batch(&format!(
            // 512 KiB of page cache per connection: the claim's working set is a few index
            // pages, and sixteen workers with SQLite's default 2 MiB each would hold 32 MiB.
            // A checkpoint every 10,000 WAL pages (about 40 MiB) instead of 1,000: the same
            // hot pages (the index's front, the events' tail) are copied back once per
            // checkpoint, so fewer checkpoints copy fewer pages per message. The WAL goes
            // when the last connection closes.
            "PRAGMA synchronous={}; PRAGMA foreign_keys=ON; PRAGMA cache_size=-512;
             PRAGMA wal_autocheckpoint=10000;",
            shared.durability.pragma()
        ))?;
        Ok(Store {
            conn: Conn::new(conn),
            path: path.to_path_buf(),
            shared,
            rules: Default::default(),
            sandbox: None,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Run `body` in one IMMEDIATE transaction, then commit it (or roll it back when `body`
    /// says so, fails or panics) and count the busy waits it met. A write that needs a
    /// commit stamp takes it in `body` from `StoreShared::next_seq`, while it still holds
    /// the write lock. `BEGIN IMMEDIATE` and `COMMIT` are prepared once per connection, not
    /// parsed again for every transaction.
    pub(super) fn write<T>(
        &mut self,
        body: impl FnOnce(&Tx<'_, '_>, &StoreShared) -> Result<(T, End)>,
    ) -> Result<T> {
        let shared = &self.shared;
        forget_given_up_wait();
        let value = self.conn.with(|tx| {
            tx.run(Hot::Begin, "BEGIN IMMEDIATE", |s| s.execute([]))?;
            // Every way out that leaves the transaction open (the body's error, a panic, a
            // COMMIT that failed) rolls it back when `open` goes.
            let open = Open(tx);
            let (value, end) = body(tx, shared)?;
            let (finish, sql) = end.statement();
            tx.run(finish, sql, |s| s.execute([]))?;
            drop(open);
            Ok::<T, OutboxError>(value)
        })?;
        self.absorb_busy();
        Ok(value)
    }

    /// Fold this thread's SQLITE_BUSY encounters into the engine's counter.
    pub(super) fn absorb_busy(&self) {
        let met = BUSY_MET_HERE.with(|c| c.replace(0));
        if met > 0 {
            self.shared.busy_met.fetch_add(met, Ordering::Relaxed);
        }
    }
}

/// A directory, a FIFO, a socket or a device is refused before anything opens it: opening or
/// reading a FIFO would wait for a writer that never comes.
pub(super) fn refuse_special(path: &Path, meta: &std::fs::Metadata) -> Result<()> {
    let shown = path.display();
    if meta.is_dir() {
        return Err(OutboxError::Foreign(format!(
            "{shown} is a directory, not a database file"
        )));
    }
    if !meta.is_file() {
        return Err(OutboxError::Foreign(format!(
            "{shown} is not a regular file (a FIFO, socket or device), not a database file"
        )));
    }
    Ok(())
}

/// An existing `path` that is not a regular file is refused (see [`refuse_special`]); a
/// missing one is left to the opener.
pub(super) fn refuse_special_path(path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(meta) => refuse_special(path, &meta),
        Err(_) => Ok(()),
    }
}

/// A read-only connection that creates nothing beside the file. A plain read-only open of
/// a WAL database creates its -wal and -shm files; with no -wal present there is nothing
/// but the main file to read, so it is opened as immutable.
pub(super) fn open_untouched(path: &Path) -> rusqlite::Result<Connection> {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut uri = String::from("file:");
    for &b in absolute.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    let mut wal = absolute.into_os_string();
    wal.push("-wal");
    uri.push_str("?mode=ro");
    if !Path::new(&wal).exists() {
        uri.push_str("&immutable=1");
    }
    Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
}

/// A statement keeps the plan it was prepared with whatever values are bound to it. Left to
/// itself, SQLite prepares a statement again whenever a new value is bound to a parameter
/// that a plan could turn on (a `LIMIT ?`, a `LIKE ?`): the same work over and over for a
/// statement run once per message or per state explored.
fn stable_plans(conn: &Connection) -> Result<()> {
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    Ok(())
}
