//! `--db`: a leaselab database is recognised by its exact schema and its marker before a
//! single byte is written; anything else is refused and left exactly as it was.

mod support;

use leaselab::engine::outbox::prelude::*;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use leaselab::engine::store::{
    inspect, DbOrigin, Store, StoreError, StoreShared, APPLICATION_ID, MAX_PATH_BYTES, SCHEMA_SQL,
    SCHEMA_VERSION,
};
use leaselab::engine::{Engine, EngineConfig};
use rusqlite::Connection;

fn shared() -> Arc<StoreShared> {
    Arc::new(StoreShared::default())
}

/// The names in a folder: nothing may appear beside a refused file (-wal, -shm, .lock).
fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

/// Every way in: the store itself, and an engine as `run` and the dashboard start one.
/// Each must refuse with `needle` in its one line and leave the folder byte for byte alone.
fn assert_refused_untouched(path: &Path, needle: &str) {
    let dir = path.parent().unwrap();
    let before = std::fs::read(path).unwrap();
    let beside = names(dir);
    let err = inspect(path).unwrap_err();
    assert!(
        matches!(err, StoreError::Foreign(_) | StoreError::OtherSchema(_)),
        "{err:?}"
    );
    let err = Store::create(path, shared()).unwrap_err();
    assert!(err.to_string().contains(needle), "{needle:?} not in {err}");
    assert_eq!(err.to_string().lines().count(), 1, "{err}");
    let config = EngineConfig {
        db: Some(path.to_path_buf().into()),
        ..EngineConfig::default()
    };
    let err = Engine::start(config, true).err().expect("refused");
    assert!(err.is_bad_input(), "{err:?}");
    assert!(err.to_string().contains(needle), "{needle:?} not in {err}");
    assert_eq!(
        std::fs::read(path).unwrap(),
        before,
        "{} changed",
        path.display()
    );
    assert_eq!(
        names(dir),
        beside,
        "files appeared beside {}",
        path.display()
    );
}

/// An application that followed the article's table names, with its own columns and rows.
const APP_SCHEMA: &str = "
    CREATE TABLE Payments(Id INTEGER PRIMARY KEY, Customer TEXT NOT NULL, Total REAL);
    CREATE TABLE OutboxMessages(Id INTEGER PRIMARY KEY, Topic TEXT, Body TEXT, SentAt TEXT);
    INSERT INTO Payments VALUES (1, 'ACME', 12.5), (2, 'Initech', 99.0);
    INSERT INTO OutboxMessages VALUES (1, 'invoice', '{}', NULL);";

#[test]
fn an_app_database_with_the_articles_table_names_is_refused_with_its_bytes_unchanged() {
    for journal in ["DELETE", "WAL"] {
        let dir = tempfile::tempdir().unwrap();
        let app = dir.path().join("app.db");
        {
            let c = Connection::open(&app).unwrap();
            let _: String = c
                .query_row(&format!("PRAGMA journal_mode={journal}"), [], |r| r.get(0))
                .unwrap();
            c.execute_batch(APP_SCHEMA).unwrap();
        }
        assert_eq!(names(dir.path()), BTreeSet::from(["app.db".to_string()]));
        assert_refused_untouched(&app, "another application");
        let c = Connection::open(&app).unwrap();
        let rows: i64 = c
            .query_row(
                "SELECT (SELECT COUNT(*) FROM Payments) + (SELECT COUNT(*) FROM OutboxMessages)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(rows, 3, "{journal}");
    }
}

/// A database leaselab made, closed, then changed by `sql`.
fn leaselab_db_changed_by(dir: &Path, name: &str, sql: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    let (mut store, _) = Store::create(&path, shared()).unwrap();
    store
        .seed(&leaselab::engine::provider::Provider::new(), 6, 0)
        .unwrap();
    drop(store);
    Connection::open(&path).unwrap().execute_batch(sql).unwrap();
    path
}

#[test]
fn a_leaselab_database_whose_schema_or_marker_was_changed_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    for (name, sql, needle) in [
        (
            "dropped.db",
            "ALTER TABLE OutboxMessages DROP COLUMN LeaseVersion;",
            "schema was changed (no column OutboxMessages.LeaseVersion)",
        ),
        (
            "added.db",
            "ALTER TABLE Payments ADD COLUMN Note TEXT;",
            "an extra column Payments.Note",
        ),
        (
            "index.db",
            "CREATE INDEX IX_Mine ON Payments (Amount);",
            "an extra index IX_Mine",
        ),
        (
            "unindexed.db",
            "DROP INDEX IX_Outbox_Unfinished;",
            "no index IX_Outbox_Unfinished",
        ),
        (
            "unchecked.db",
            "PRAGMA writable_schema = ON;
             UPDATE sqlite_schema SET sql = replace(sql, 'CHECK (Amount >= 0)', '')
              WHERE name = 'Payments';",
            "table Payments has other constraints",
        ),
        (
            "version1.db",
            "PRAGMA user_version = 1;",
            "earlier leaselab (schema version 1, without retries, dead letters or the LeaseEvents table; this leaselab needs version 8)",
        ),
        (
            "version2.db",
            "PRAGMA user_version = 2;",
            "earlier leaselab (schema version 2, without the LeaseEvents table; this leaselab needs version 8)",
        ),
        (
            "version3.db",
            "PRAGMA user_version = 3;",
            "earlier leaselab (schema version 3, without the seeding a lease fences on; this leaselab needs version 8)",
        ),
        (
            "version4.db",
            "PRAGMA user_version = 4;",
            "earlier leaselab (schema version 4, with the claim's older indexes; this leaselab needs version 8)",
        ),
        (
            "version5.db",
            "PRAGMA user_version = 5;",
            "earlier leaselab (schema version 5, without redrives in its LeaseEvents; this leaselab needs version 8)",
        ),
        (
            "version6.db",
            "PRAGMA user_version = 6;",
            "earlier leaselab (schema version 6, with an index of unfinished messages that every claim rewrote; this leaselab needs version 8)",
        ),
        (
            "version7.db",
            "PRAGMA user_version = 7;",
            "earlier leaselab (schema version 7, without the crashes, pauses, provider calls and settings a replay shows; this leaselab needs version 8)",
        ),
        (
            "future.db",
            "PRAGMA user_version = 99;",
            "schema version 99",
        ),
        (
            "claimed.db",
            "PRAGMA application_id = 42;",
            "another application (application_id 0x0000002a)",
        ),
    ] {
        let path = leaselab_db_changed_by(dir.path(), name, sql);
        assert_refused_untouched(&path, needle);
    }
}

#[test]
fn a_genuine_leaselab_database_carries_the_marker_and_is_reused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("outbox.db");
    assert_eq!(inspect(&path).unwrap(), DbOrigin::Created);
    let (store, origin) = Store::create(&path, shared()).unwrap();
    assert_eq!(origin, DbOrigin::Created);
    drop(store);
    let marker = |p: &Path| -> (i32, i32) {
        let c = Connection::open(p).unwrap();
        (
            c.query_row("PRAGMA application_id", [], |r| r.get(0))
                .unwrap(),
            c.query_row("PRAGMA user_version", [], |r| r.get(0))
                .unwrap(),
        )
    };
    assert_eq!(marker(&path), (APPLICATION_ID, SCHEMA_VERSION));
    assert_eq!(inspect(&path).unwrap(), DbOrigin::Reused);
    let (store, origin) = Store::create(&path, shared()).unwrap();
    assert_eq!(origin, DbOrigin::Reused);
    assert_eq!(store.message_count().unwrap(), 0);
}

#[test]
fn a_database_made_before_the_marker_is_reused_only_with_our_exact_schema_and_stamped() {
    let dir = tempfile::tempdir().unwrap();
    // What the previous version left: the schema, no application_id, no user_version.
    let old = dir.path().join("old.db");
    Connection::open(&old)
        .unwrap()
        .execute_batch(SCHEMA_SQL)
        .unwrap();
    assert_eq!(inspect(&old).unwrap(), DbOrigin::Reused);
    let (store, origin) = Store::create(&old, shared()).unwrap();
    assert_eq!(origin, DbOrigin::Reused);
    drop(store);
    let c = Connection::open(&old).unwrap();
    let id: i32 = c
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .unwrap();
    let version: i32 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!((id, version), (APPLICATION_ID, SCHEMA_VERSION));

    // The same, one column short: not ours.
    let short = dir.path().join("short.db");
    Connection::open(&short)
        .unwrap()
        .execute_batch(&SCHEMA_SQL.replace("    Attempts       INTEGER NOT NULL DEFAULT 0,\n", ""))
        .unwrap();
    assert_refused_untouched(
        &short,
        "another application (no column OutboxMessages.Attempts)",
    );
}

#[test]
fn an_over_long_path_is_named_and_refused_before_sqlite_sees_it() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::path::absolute(dir.path()).unwrap();
    // Folders of 100 bytes until a file name of 20-120 bytes reaches the limit exactly.
    let mut folder = base.clone();
    while folder.as_os_str().len() + 1 + 100 + 1 + 20 <= MAX_PATH_BYTES {
        folder.push("f".repeat(100));
    }
    std::fs::create_dir_all(&folder).unwrap();
    let name_len = MAX_PATH_BYTES - folder.as_os_str().len() - 1;
    let at_limit = folder.join(format!("{}.db", "a".repeat(name_len - 3)));
    assert_eq!(at_limit.as_os_str().len(), MAX_PATH_BYTES);
    let (store, origin) =
        Store::create(&at_limit, shared()).expect("the longest path SQLite takes");
    assert_eq!(origin, DbOrigin::Created);
    drop(store);

    let over = folder.join(format!("{}.db", "b".repeat(name_len - 2)));
    let err = Store::create(&over, shared()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, StoreError::BadPath(_)), "{err:?}");
    assert!(msg.starts_with(&over.display().to_string()), "{msg}");
    assert!(msg.contains("path too long"), "{msg}");
    assert!(!over.exists());

    let long_name = base.join(format!("{}.db", "c".repeat(252)));
    let msg = Store::create(&long_name, shared()).unwrap_err().to_string();
    assert!(msg.contains("file name too long"), "{msg}");
    assert!(msg.starts_with(&long_name.display().to_string()), "{msg}");
}

/// Make `file` unwritable for this process: mode 0444, and for root (whom modes do not
/// stop) the immutable attribute. False when neither holds here.
fn make_unwritable(file: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o444)).unwrap();
    if std::fs::OpenOptions::new().write(true).open(file).is_err() {
        return true;
    }
    let status = std::process::Command::new("chattr")
        .arg("+i")
        .arg(file)
        .status();
    status.is_ok_and(|s| s.success())
}

#[test]
fn a_read_only_database_file_is_named_refused_with_exit_2_and_left_alone() {
    // Beside the build, not in a tmpfs, which has no immutable attribute for root.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_leaselab"))
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    assert_eq!(
        run(&["run", "lease-expiry", "--db", "r.db"]).status.code(),
        Some(0)
    );
    let file = dir.path().join("r.db");
    assert!(
        make_unwritable(&file),
        "cannot make a read-only file here (chattr missing?)"
    );
    let before = std::fs::read(&file).unwrap();
    for args in [
        &["run", "lease-expiry", "--db", "r.db"][..],
        &["worker", "--db", "r.db", "--name", "w"],
    ] {
        let o = run(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("r.db: cannot write the database"), "{err}");
    }
    let _ = std::process::Command::new("chattr")
        .arg("-i")
        .arg(&file)
        .status();
    assert_eq!(std::fs::read(&file).unwrap(), before, "the file changed");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("r.db") && n != "r.db")
        .collect();
    assert!(left.is_empty(), "left beside it: {left:?}");
}

/// A FIFO (or socket, or device) named by `--db`, or sitting where the database's lock file
/// goes, is refused in one line before anything opens it: opening or reading a FIFO waits for
/// a writer that never comes, and that wait once ignored Ctrl-C. Nothing is made beside it.
#[test]
fn a_fifo_as_the_database_or_its_lock_file_is_refused_in_one_line_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let made = std::process::Command::new("mkfifo")
        .args(["f.db", "g.db.lock"])
        .current_dir(dir.path())
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let before = names(dir.path());
    let cases: [(&[&str], &str); 4] = [
        (
            &["run", "outbox-leasing", "--db", "f.db"],
            "f.db is not a regular file",
        ),
        (
            &["worker", "--db", "f.db", "--name", "w1"],
            "f.db is not a regular file",
        ),
        (&["replay", "f.db"], "f.db is not a regular file"),
        (
            &["run", "outbox-leasing", "--db", "g.db"],
            "g.db.lock: not a regular file",
        ),
    ];
    for (args, needle) in cases {
        let out = support::leaselab_bounded(args, dir.path());
        let err = support::stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
    // `run` makes its report folder before it starts, so that an unwritable one stops it
    // early; nothing else appears.
    let mut after = names(dir.path());
    after.remove("reports");
    assert_eq!(after, before);
}
