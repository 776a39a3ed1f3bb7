//! What a path holds before anything is written: nothing, a leaselab database (with or
//! without its marker) or something else, which is refused.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use rusqlite::{Connection, OpenFlags};

use super::conn::End;
use crate::outbox::{Failure, OtherSchema};

use super::{
    DbOrigin, Durability, OutboxError, Result, Store, StoreShared, APPLICATION_ID, MAX_PATH_BYTES,
    SCHEMA_SQL, SCHEMA_VERSION,
};

/// What [`identify`] found at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Identity {
    Absent,
    /// Our marker and exactly our schema.
    Marked,
    /// Exactly our schema without the marker: made by a leaselab before the marker existed.
    Unmarked,
}

impl Store {
    /// Open the database for an engine: create it, or reuse an existing leaselab database
    /// (emptied by the caller's seeding). Anything else at `path` is refused before a single
    /// byte is written. A leaselab database made before the marker existed is accepted only
    /// when its schema is exactly ours, and is then stamped with the marker.
    pub fn create(path: &Path, shared: Arc<StoreShared>) -> Result<(Store, DbOrigin)> {
        refuse_read_only(path)?;
        match identify(path)? {
            Identity::Absent => {
                make(path, shared.durability, |_| Ok(()))?;
                let store = Store::open(path, shared).map_err(|e| open_failure(path, e))?;
                Ok((store, DbOrigin::Created))
            }
            Identity::Marked => {
                let store = Store::open(path, shared).map_err(|e| open_failure(path, e))?;
                Ok((store, DbOrigin::Reused))
            }
            Identity::Unmarked => {
                let mut store = Store::open(path, shared).map_err(|e| open_failure(path, e))?;
                store.write(|tx, _| Ok((tx.execute_batch(&marker_sql())?, End::Commit)))?;
                Ok((store, DbOrigin::Reused))
            }
        }
    }
}

impl Store {
    /// Open the database for a guest (a worker process, a watching dashboard), which shares
    /// it and never empties it. A missing file is created already filled by `fill`, whole or
    /// not at all, so a guest never sees a half-seeded outbox; when two guests race to
    /// create it, the loser opens the winner's file.
    pub fn join(
        path: &Path,
        shared: Arc<StoreShared>,
        fill: impl FnOnce(&mut Store) -> Result<()>,
    ) -> Result<(Store, DbOrigin)> {
        refuse_read_only(path)?;
        if identify(path)? == Identity::Absent {
            let fill_new = |new: &Path| -> Result<()> {
                let mut store = Store::open(new, shared.clone())?;
                fill(&mut store)
            };
            match make(path, shared.durability, fill_new) {
                Ok(()) => {
                    let store = Store::open(path, shared).map_err(|e| open_failure(path, e))?;
                    return Ok((store, DbOrigin::Created));
                }
                Err(_) if path.exists() => {}
                Err(e) => return Err(e),
            }
        }
        match identify(path)? {
            Identity::Marked => {
                let store = Store::open(path, shared).map_err(|e| open_failure(path, e))?;
                Ok((store, DbOrigin::Reused))
            }
            _ => Err(OutboxError::Foreign(format!(
                "{}: a guest only joins a leaselab database of schema version {SCHEMA_VERSION}; open it once with `leaselab run` or the dashboard",
                path.display()
            ))),
        }
    }
}

/// Decide what a path is, writing nothing: absent (to be created), a leaselab database
/// (reused), or anything else (refused).
pub fn inspect(path: &Path) -> Result<DbOrigin> {
    Ok(match identify(path)? {
        Identity::Absent => DbOrigin::Created,
        Identity::Marked | Identity::Unmarked => DbOrigin::Reused,
    })
}

fn identify(path: &Path) -> Result<Identity> {
    let shown = path.display();
    check_path_length(path)?;
    if !is_sqlite_file(path)? {
        return Ok(Identity::Absent);
    }
    let conn = super::conn::open_untouched(path).map_err(|e| match folder_not_writable(path) {
        Some(why) => OutboxError::BadPath(format!("{shown}: {why}")),
        None => OutboxError::Foreign(format!("{shown}: not a readable SQLite database: {e}")),
    })?;
    marker_and_schema(&conn, &shown.to_string())
}

/// Whether a file is there: false when it is absent (its folder exists), an error when
/// it is something other than a SQLite database.
fn is_sqlite_file(path: &Path) -> Result<bool> {
    let shown = path.display();
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let dir = folder_of(path);
            if !dir.is_dir() {
                return Err(OutboxError::BadPath(format!(
                    "{shown}: folder {} does not exist",
                    dir.display()
                )));
            }
            return Ok(false);
        }
        Err(e) => {
            return Err(OutboxError::BadPath(format!(
                "{shown}: cannot be opened: {e}"
            )))
        }
    };
    super::conn::refuse_special(path, &meta)?;
    let mut header = [0u8; 16];
    let read = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut header))
        .map_err(|e| OutboxError::BadPath(format!("{shown}: cannot read: {e}")))?;
    if read < 16 || &header != b"SQLite format 3\0" {
        return Err(OutboxError::Foreign(format!(
            "{shown} exists and is not a SQLite database; refusing to touch it"
        )));
    }
    Ok(true)
}

/// What the SQLite file's marker, version and schema say it is.
fn marker_and_schema(conn: &Connection, shown: &str) -> Result<Identity> {
    let unreadable = |e: rusqlite::Error| {
        OutboxError::Foreign(format!("{shown}: not a readable SQLite database: {e}"))
    };
    let app_id: i32 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(unreadable)?;
    let version: i32 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(unreadable)?;
    if app_id != 0 && app_id != APPLICATION_ID {
        return Err(OutboxError::Foreign(format!(
            "{shown} belongs to another application (application_id {app_id:#010x}); refusing to touch it"
        )));
    }
    let ours = app_id == APPLICATION_ID;
    if ours && (1..SCHEMA_VERSION).contains(&version) {
        let lacks = match version {
            1 => "without retries, dead letters or the LeaseEvents table",
            2 => "without the LeaseEvents table",
            3 => "without the seeding a lease fences on",
            4 => "with the claim's older indexes",
            5 => "without redrives in its LeaseEvents",
            6 => "with an index of unfinished messages that every claim rewrote",
            _ => "without the crashes, pauses, provider calls and settings a replay shows",
        };
        return Err(OutboxError::Foreign(format!(
            "{shown} was made by an earlier leaselab (schema version {version}, {lacks}; this leaselab needs version {SCHEMA_VERSION}); refusing to touch it: remove it or pass another --db"
        )));
    }
    if ours && version != SCHEMA_VERSION {
        return Err(OutboxError::OtherSchema(OtherSchema {
            shown: shown.to_string(),
            found: version,
            known: SCHEMA_VERSION,
        }));
    }
    let difference = schema_difference(conn).map_err(unreadable)?;
    match (ours, difference) {
        (true, None) => Ok(Identity::Marked),
        (true, Some(why)) => Err(OutboxError::Foreign(format!(
            "{shown} is a leaselab database whose schema was changed ({why}); refusing to touch it"
        ))),
        // An earlier leaselab set no marker, and no user_version either.
        (false, None) if version == 0 => Ok(Identity::Unmarked),
        (false, None) => Err(OutboxError::Foreign(format!(
            "{shown} is a SQLite database of another application (user_version {version}); refusing to touch it"
        ))),
        (false, Some(why)) => Err(OutboxError::Foreign(format!(
            "{shown} is a SQLite database of another application ({why}); refusing to touch it"
        ))),
    }
}

/// Whether another connection holds the write lock of the database at `path` right now (a
/// write transaction in progress). False for a missing file or anything else unusual: the
/// usual open reports those.
pub fn write_locked(path: &Path) -> bool {
    let Ok(conn) = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    ) else {
        return false;
    };
    // Asked, not waited for: no busy timeout (rusqlite's default would wait 5 s).
    if conn.busy_timeout(std::time::Duration::ZERO).is_err() {
        return false;
    }
    match conn.execute_batch("BEGIN IMMEDIATE; ROLLBACK;") {
        Err(rusqlite::Error::SqliteFailure(e, _)) => e.code == rusqlite::ErrorCode::DatabaseBusy,
        _ => false,
    }
}

/// A file leaselab may not write (its permissions, an immutable attribute, a read-only
/// mount) is refused before SQLite opens it: opened, it would leave `-wal` and `-shm`
/// files beside it and fail at the first write.
fn refuse_read_only(path: &Path) -> Result<()> {
    // Opening a FIFO for writing would wait for a reader.
    super::conn::refuse_special_path(path)?;
    match std::fs::OpenOptions::new().write(true).open(path) {
        Err(e) if path.exists() && e.kind() != std::io::ErrorKind::NotFound => {
            Err(OutboxError::BadPath(format!(
                "{}: cannot write the database ({e}); leaselab writes to it: give it write permission or pass another --db",
                path.display()
            )))
        }
        _ => Ok(()),
    }
}

/// Make a new database at `path` whole or not at all: the schema and the marker are written
/// to a hidden file beside it, which then takes the name without replacing anything. A run
/// killed meanwhile leaves no half-made file that the next run would refuse as foreign.
fn make(path: &Path, durability: Durability, fill: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let shown = path.display();
    let dir = folder_of(path);
    // Half-made databases of killed leaselabs go first; ours carries our pid.
    crate::leftovers::sweep(dir, ".leaselab-new-");
    let prefix = crate::leftovers::prefix(".leaselab-new-");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).rand_bytes(6);
    crate::platform::files::readable_by_all(&mut builder);
    let tmp = builder.tempfile_in(dir).map_err(|e| {
        OutboxError::BadPath(format!(
            "{shown}: cannot create the database: folder {} is not writable ({e})",
            dir.display()
        ))
    })?;
    {
        let conn = Connection::open_with_flags(
            tmp.path(),
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| open_failure(path, e.into()))?;
        conn.execute_batch(&format!(
            "PRAGMA synchronous={}; BEGIN IMMEDIATE; {SCHEMA_SQL} {} COMMIT;",
            durability.pragma(),
            marker_sql()
        ))?;
        conn.close().map_err(|(_, e)| OutboxError::from(e))?;
    }
    // Filled while nobody can see it; the last connection to close folds its WAL back in.
    fill(tmp.path())?;
    tmp.persist_noclobber(path).map_err(|e| {
        OutboxError::Io(format!(
            "{shown}: cannot put the new database in place: {}",
            e.error
        ))
    })?;
    Ok(())
}

/// The marker every leaselab database carries, set in the transaction that makes it.
fn marker_sql() -> String {
    format!("PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {SCHEMA_VERSION};")
}

/// The folder a database file lives in (`.` for a bare file name).
fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// SQLite would answer an over-long path with a bare "unable to open database file".
fn check_path_length(path: &Path) -> Result<()> {
    let shown = path.display();
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let bytes = absolute.as_os_str().len();
    if bytes > MAX_PATH_BYTES {
        return Err(OutboxError::BadPath(format!(
            "{shown}: path too long to open ({bytes} bytes as an absolute path; SQLite takes at most {MAX_PATH_BYTES})"
        )));
    }
    // The -wal file and the .lock file live beside the database under longer names.
    let name = path.file_name().map_or(0, |n| n.len());
    if name > 250 {
        return Err(OutboxError::BadPath(format!(
            "{shown}: file name too long ({name} bytes; at most 250, so that its -wal and .lock files fit beside it)"
        )));
    }
    Ok(())
}

/// Why SQLite could not create or open `path`, when its folder is the cause.
fn folder_not_writable(path: &Path) -> Option<String> {
    let dir = folder_of(path);
    // An unnamed temporary file (O_TMPFILE) asks the file system itself and leaves nothing.
    tempfile::tempfile_in(dir).err().map(|e| {
        format!(
            "folder {} is not writable, and SQLite must write beside the database ({e})",
            dir.display()
        )
    })
}

/// Turn SQLite's bare "unable to open database file" into a line that names the cause.
fn open_failure(path: &Path, e: OutboxError) -> OutboxError {
    let cannot_open = e.failure() == Some(Failure::CannotOpen);
    if !cannot_open {
        return e;
    }
    let shown = path.display();
    match folder_not_writable(path) {
        Some(why) => OutboxError::BadPath(format!(
            "{shown}: cannot create or write the database: {why}"
        )),
        None => OutboxError::BadPath(format!("{shown}: cannot be opened for writing: {e}")),
    }
}

/// Every table and index with its SQL, as `sqlite_schema` holds them.
type SchemaObject = (String, String, Option<String>);

fn schema_objects(conn: &Connection) -> rusqlite::Result<Vec<SchemaObject>> {
    conn.prepare(
        "SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY type DESC, name",
    )?
    .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
    .collect()
}

/// A table's columns: name, declared type, NOT NULL, default, primary-key position.
type Column = (String, String, bool, Option<String>, i64);

fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<Column>> {
    conn.prepare(r#"SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_xinfo(?1)"#)?
        .query_map([table], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?
        .collect()
}

/// The first way the database's schema differs from a fresh one made from
/// `assets/schema.sql`, or None when it is exactly the same.
fn schema_difference(conn: &Connection) -> rusqlite::Result<Option<String>> {
    let reference = Connection::open_in_memory()?;
    reference.execute_batch(SCHEMA_SQL)?;
    let want = schema_objects(&reference)?;
    let have = schema_objects(conn)?;
    if want == have {
        return Ok(None);
    }
    let tables = |objects: &[SchemaObject]| -> Vec<String> {
        objects
            .iter()
            .filter(|o| o.0 == "table")
            .map(|o| o.1.clone())
            .collect()
    };
    let (want_tables, have_tables) = (tables(&want), tables(&have));
    if !have_tables.iter().any(|t| want_tables.contains(t)) {
        return Ok(Some(format!(
            "tables: {}",
            if have_tables.is_empty() {
                "none".to_string()
            } else {
                have_tables.join(", ")
            }
        )));
    }
    for (kind, name, sql) in &want {
        let Some(theirs) = have.iter().find(|o| &o.0 == kind && &o.1 == name) else {
            return Ok(Some(format!("no {kind} {name}")));
        };
        if kind == "table" {
            let (ours, cols) = (columns(&reference, name)?, columns(conn, name)?);
            for c in &ours {
                match cols.iter().find(|t| t.0 == c.0) {
                    None => return Ok(Some(format!("no column {name}.{}", c.0))),
                    Some(t) if t != c => {
                        return Ok(Some(format!(
                            "column {name}.{} is declared otherwise ({} {}{})",
                            c.0,
                            t.1,
                            if t.2 { "NOT NULL" } else { "NULL" },
                            t.3.as_deref()
                                .map(|d| format!(" DEFAULT {d}"))
                                .unwrap_or_default()
                        )))
                    }
                    Some(_) => {}
                }
            }
            if let Some(extra) = cols.iter().find(|t| !ours.iter().any(|c| c.0 == t.0)) {
                return Ok(Some(format!("an extra column {name}.{}", extra.0)));
            }
        }
        if &theirs.2 != sql {
            return Ok(Some(format!("{kind} {name} has other constraints")));
        }
    }
    if let Some(extra) = have
        .iter()
        .find(|o| !want.iter().any(|w| w.0 == o.0 && w.1 == o.1))
    {
        return Ok(Some(format!("an extra {} {}", extra.0, extra.1)));
    }
    Ok(Some("its schema differs".to_string()))
}
