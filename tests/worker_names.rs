//! Duplicate worker names on SQLite (issue 38): a name whose newest row is recent and not
//! its leaving is held, and a second worker under it is refused at join with the names in
//! use; a worker that left, or whose newest row is older than `present::STALE_MS` (killed,
//! say), frees it. Every wait polls the file with a deadline.

mod support;

use std::path::Path;
use std::sync::Arc;

use leaselab::engine::clock::wall_now_ms;
use leaselab::engine::outbox::prelude::*;
use leaselab::engine::outbox::{Fact, LeaseEventKind};
use leaselab::engine::store::{Store, StoreShared};
use leaselab::processes::present::STALE_MS;
use support::processes::{wait_for, WorkerProcess};

/// A worker under `name` joining `db`: refused, it ends at once (one that joins fails the
/// test at the deadline).
fn refused(db: &Path, name: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = support::leaselab_bounded(
        &["worker", "--db", db.to_str().unwrap(), "--name", name],
        dir.path(),
    );
    let stderr = support::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    stderr
}

/// Whether `name` has written a row in `db`.
fn has_rows(db: &Path, name: &str) -> Option<()> {
    let rows = Store::open_read_only(db).ok()?.newest_rows().ok()?;
    rows.iter().any(|r| r.worker == name).then_some(())
}

#[test]
fn a_live_name_is_refused_on_sqlite_until_it_leaves_or_goes_stale() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("class.db");
    let slow = [
        "--messages",
        "50",
        "--lease-ms",
        "60000",
        "--process-ms",
        "30000",
    ];
    let sam = WorkerProcess::start(&db, "sam", &slow);
    wait_for("sam's Joined row", || has_rows(&db, "sam"));
    let said = refused(&db, "sam");
    assert!(
        said.contains("--name sam is taken") && said.contains("names in use: sam)"),
        "{said}"
    );
    // Ctrl-C: its Left row frees the name at once.
    let (status, stderr) = sam.stop();
    assert_eq!(status.code(), Some(143), "{stderr}");
    let again = WorkerProcess::start(&db, "sam", &slow);
    wait_for("the new sam's claim", || {
        let rows = Store::open_read_only(&db).ok()?.newest_rows().ok()?;
        let newest = rows.iter().find(|r| r.worker == "sam")?;
        (newest.kind == LeaseEventKind::Claimed).then_some(())
    });
    // Rows as a worker killed long ago and one at work now leave them.
    let now = wall_now_ms();
    let mut store = Store::open(&db, Arc::new(StoreShared::default())).unwrap();
    for (name, at) in [("gone", now - STALE_MS - 1_000), ("here", now)] {
        store
            .record(&Fact::of(
                LeaseEventKind::Joined,
                at,
                name,
                "lease_ms=60000",
            ))
            .unwrap();
    }
    let said = refused(&db, "here");
    assert!(said.contains("names in use: here, sam)"), "{said}");
    let gone = WorkerProcess::start(&db, "gone", &slow);
    wait_for("gone's claim", || {
        let rows = Store::open_read_only(&db).ok()?.newest_rows().ok()?;
        let newest = rows.iter().find(|r| r.worker == "gone")?;
        (newest.kind == LeaseEventKind::Claimed).then_some(())
    });
    for w in [again, gone] {
        let (status, stderr) = w.stop();
        assert_eq!(status.code(), Some(143), "{stderr}");
    }
}
