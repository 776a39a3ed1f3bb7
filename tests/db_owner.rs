//! One leaselab per database file: a second run or dashboard on a `--db` in use is refused
//! and told who holds it; a database left by a killed leaselab is taken over, and the report
//! says so. Real processes throughout; every wait is on output or on a file, with a deadline.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use leaselab::engine::db_lock::lock_path;
use leaselab::engine::store::StoreError;
use leaselab::engine::{Engine, EngineConfig};
use serde_json::Value;

mod support;

use support::{leaselab, stderr, Dashboard, DEADLINE};

/// Wait until the lock file beside `db` names `pid`.
fn wait_for_lock_of(db: &Path, pid: u32) -> String {
    let lock = lock_path(db);
    let want = format!("pid {pid}\n");
    let deadline = Instant::now() + DEADLINE;
    loop {
        let text = std::fs::read_to_string(&lock).unwrap_or_default();
        if text.starts_with(&want) {
            return text;
        }
        assert!(Instant::now() < deadline, "no lock of pid {pid}: {text:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn processed(db: &Path) -> i64 {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap();
    c.query_row(
        "SELECT COUNT(*) FROM OutboxMessages WHERE Status = 'Processed'",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

#[test]
fn a_second_engine_on_a_database_in_use_is_refused_and_the_lock_goes_with_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("outbox.db");
    let config = EngineConfig {
        db: Some(db.clone().into()),
        ..EngineConfig::default()
    };
    let first = Engine::start(config.clone(), true).unwrap();
    assert!(first.recovered.is_none());
    let held = std::fs::read_to_string(lock_path(&db)).unwrap();
    assert!(
        held.starts_with(&format!("pid {}\n", std::process::id())),
        "{held}"
    );
    let err = Engine::start(config.clone(), true).err().expect("refused");
    assert!(matches!(err, StoreError::InUse(_)), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("pid {}", std::process::id())),
        "{msg}"
    );
    assert!(msg.contains("since 20"), "{msg}");
    assert_eq!(msg.lines().count(), 1);
    // The first engine's outbox was not reseeded under it.
    assert_eq!(first.store().message_count().unwrap(), 6);

    drop(first);
    assert!(!lock_path(&db).exists(), "a released lock leaves no file");
    let again = Engine::start(config, true).unwrap();
    assert!(again.recovered.is_none(), "a clean end is no recovery");
}

#[test]
fn a_run_on_the_database_of_an_open_dashboard_is_refused_and_the_dashboard_finishes_unharmed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("class.db");
    let db_arg = db.to_str().unwrap();
    let mut first = Dashboard::open_in(
        &["--db", db_arg, "--process-ms", "0", "--speed", "8"],
        dir.path(),
    );
    // Free play opens paused: space runs it.
    first.wait_for_text("PAUSED");
    first.press(" ");
    first.wait_for_text("RUNNING");
    wait_for_lock_of(&db, first.pid);
    // Its workers drain the outbox on their own.
    first.wait_for_text("0 pending · 0 processing · 6 processed");
    assert_eq!(processed(&db), 6);

    let second = leaselab(
        &["run", "outbox-leasing", "--db", db_arg, "--json"],
        dir.path(),
    );
    let err = stderr(&second);
    assert_eq!(second.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("in use by another leaselab"), "{err}");
    assert!(err.contains(&format!("pid {}", first.pid)), "{err}");
    assert!(err.contains("--db"), "{err}");
    assert!(second.stdout.is_empty());

    // A second dashboard is refused the same way, before it touches the terminal.
    let (status, out) = Dashboard::open_in(&["--db", db_arg], dir.path()).wait_exit();
    assert_eq!(status.exit_code(), 2, "{out}");
    assert!(
        out.contains(&format!("in use by another leaselab (pid {}", first.pid)),
        "{out}"
    );

    assert_eq!(processed(&db), 6, "the refused runs reseeded the outbox");
    let status = first.quit().0;
    assert!(status.success(), "{status:?}");
    assert!(!lock_path(&db).exists());
    let third = leaselab(
        &["run", "outbox-leasing", "--db", db_arg, "--json"],
        dir.path(),
    );
    assert_eq!(third.status.code(), Some(0), "{}", stderr(&third));
    let j: Value = serde_json::from_slice(&third.stdout).unwrap();
    assert_eq!(j["database"]["reused"], true);
    assert_eq!(j["db_recovered"], false);
}

#[test]
fn a_database_left_by_a_killed_leaselab_is_taken_over_and_the_report_says_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("class.db");
    let db_arg = db.to_str().unwrap();
    let mut first = Dashboard::open_in(&["--db", db_arg], dir.path());
    let pid = first.pid;
    wait_for_lock_of(&db, pid);
    // Killed with its database made and seeded: the first frame shows the seeded outbox.
    first.wait_for_text("6 pending · 0 processing · 0 processed");
    let kill = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(kill.success());
    let (status, _) = first.wait_exit();
    assert!(!status.success());
    // The killed holder could not clean up: its lock file is still there, but not held.
    assert!(std::fs::read_to_string(lock_path(&db))
        .unwrap()
        .starts_with(&format!("pid {pid}\n")));

    let o = leaselab(
        &["run", "outbox-leasing", "--db", db_arg, "--json"],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["db_recovered"], true);
    assert_eq!(j["database"]["reused"], true);
    let from = j["database"]["recovered_from"].as_str().unwrap();
    assert!(
        from.starts_with(&format!("pid {pid}, `leaselab --db")),
        "{from}"
    );
    assert_eq!(j["unique_processed"], 6);
    assert_eq!(j["passed"], true);
    assert!(!lock_path(&db).exists());

    // The dashboard says so too: kill a second holder, at any moment after it took the
    // lock, and open the database again.
    let second = Dashboard::open_in(&["--db", db_arg], dir.path());
    let pid = second.pid;
    wait_for_lock_of(&db, pid);
    let kill = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(kill.success());
    let _ = second.wait_exit();
    let mut third = Dashboard::open_in(&["--db", db_arg], dir.path());
    third.wait_for_text(&format!("database recovered from pid {pid}"));
    assert!(third.quit().0.success());
    assert!(!lock_path(&db).exists());

    let text = leaselab(&["run", "outbox-leasing", "--db", db_arg], dir.path());
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(
        !out.contains("recovered "),
        "only the run after the kill recovers: {out}"
    );
}
