//! A database another program holds locked (an open `BEGIN IMMEDIATE`): a run or a
//! dashboard waiting for it ends at once on SIGINT, exit 130, instead of waiting out its
//! busy limit. The children get a limit of ten minutes, so only the signal can end them
//! within the test's deadline.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod support;

const DEADLINE: Duration = Duration::from_secs(60);

/// A kept leaselab database at `db`, then a connection holding its write lock.
fn locked(dir: &Path, db: &Path) -> rusqlite::Connection {
    let o = support::leaselab(&["run", "lease-expiry", "--db", db.to_str().unwrap()], dir);
    assert_eq!(o.status.code(), Some(0), "{}", support::stderr(&o));
    let holder = rusqlite::Connection::open(db).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    holder
}

/// Whether `pid` has `file` open (it is past its start and at the database).
fn has_open(pid: u32, file: &Path) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .any(|p| p == file)
}

fn interrupt_once_waiting(mut child: Child, db: &Path) -> std::process::ExitStatus {
    let start = Instant::now();
    while !has_open(child.id(), db) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "it ended before opening the database"
        );
        assert!(start.elapsed() < DEADLINE, "it never opened the database");
        std::thread::sleep(Duration::from_millis(10));
    }
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("still waiting for the lock {DEADLINE:?} after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_run_waiting_for_a_locked_database_ends_on_sigint_with_130() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("dl.db");
    let _holder = locked(dir.path(), &db);
    let child = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(["run", "outbox-leasing", "--db"])
        .arg(&db)
        .current_dir(dir.path())
        .env(leaselab::engine::store::BUSY_GIVE_UP_ENV, "600000")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = interrupt_once_waiting(child, &db);
    assert_eq!(status.code(), Some(130));
}

/// The dashboard on `dir/dl.db`, with a busy limit of `limit_ms`.
fn dashboard_on(dir: &Path, limit_ms: &str) -> support::Dashboard {
    let args = ["--scenario", "outbox-leasing", "--db", "dl.db"];
    let limit = [(
        leaselab::engine::store::BUSY_GIVE_UP_ENV,
        Path::new(limit_ms),
    )];
    support::Dashboard::spawn(40, 120, &args, dir, &limit)
}

#[test]
fn a_dashboard_waiting_for_a_locked_database_ends_on_sigint_with_130() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("dl.db");
    let _holder = locked(dir.path(), &db);
    let mut d = dashboard_on(dir.path(), "600000");
    d.wait_for_text("dl.db is locked");
    d.signal(libc::SIGINT);
    assert_eq!(d.wait_for_exit().exit_code(), 130);
}

#[test]
fn a_dashboard_says_what_lock_it_waits_for_q_ends_the_wait_and_a_release_lets_it_open() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("dl.db");
    let holder = locked(dir.path(), &db);
    let args = ["--scenario", "outbox-leasing", "--db", "dl.db"];
    // q ends the wait at once, exit 0, and the q does not land in the shell afterwards.
    let mut d = support::Dashboard::open_in(&args, dir.path());
    d.wait_for_text("dl.db is locked");
    d.press("q");
    assert!(d.wait_for_exit().success());
    // Released while it waits: the dashboard opens by itself.
    let mut d = support::Dashboard::open_in(&args, dir.path());
    d.wait_for_text("dl.db is locked");
    holder.execute_batch("ROLLBACK").unwrap();
    d.wait_for_text("PAUSED");
    let (status, _) = d.quit();
    assert!(status.success());
}

#[test]
fn a_dashboard_gives_up_on_a_lock_held_past_the_busy_limit_with_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("dl.db");
    let _holder = locked(dir.path(), &db);
    let d = dashboard_on(dir.path(), "300");
    let (status, out) = d.wait_exit();
    assert_eq!(status.exit_code(), 3, "{out}");
    assert!(out.contains("held its write lock for more than"), "{out}");
}
