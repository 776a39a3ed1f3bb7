//! The dashboard over worker processes, end to end in a pseudo-terminal: `--watch` showing
//! workers started elsewhere, `--processes` starting its own and leaving none behind. Every
//! wait reads the screen, the database or /proc with a deadline; nothing sleeps to wait.

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::processes::{children_of, gone};
use support::{Dashboard, DEADLINE};

/// Poll `what` until it holds, or fail after the deadline saying what was awaited.
fn wait_until(awaited: &str, mut what: impl FnMut() -> bool) {
    let start = Instant::now();
    while !what() {
        assert!(start.elapsed() < DEADLINE, "gave up waiting for {awaited}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn start_worker(db: &Path, name: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(["worker", "--db"])
        .arg(db)
        .args([
            "--name",
            name,
            "--messages",
            "40",
            "--lease-ms",
            "5000",
            "--process-ms",
            "200",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start a worker")
}

#[test]
fn watch_shows_two_workers_started_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("class.db");
    let mut workers = vec![start_worker(&db, "laptop-1"), start_worker(&db, "laptop-2")];
    let mut d = Dashboard::open(&["--watch", "--db", db.to_str().unwrap()]);
    d.wait_for_text("laptop-1");
    d.wait_for_text("laptop-2");
    d.wait_for_text("watching");
    // Keys that need in-process workers say why they do nothing.
    d.press("c");
    d.wait_for_text("watch mode: the workers are other processes");
    d.press("a");
    d.wait_for_text("wall clock");
    d.press("q");
    assert!(d.wait_for_exit().success());
    for w in &mut workers {
        unsafe { libc::kill(w.id() as libc::pid_t, libc::SIGTERM) };
        w.wait().unwrap();
    }
    // The watcher left the database to its workers: nothing emptied it.
    assert!(db.exists());
}

fn open_processes() -> (Dashboard, Vec<u32>) {
    let mut d = Dashboard::open(&["--processes", "--workers", "2"]);
    d.wait_for_text("Worker-A");
    d.wait_for_text("Worker-B");
    let pid = d.pid;
    wait_until("two worker processes", || children_of(pid).len() == 2);
    let kids = children_of(pid);
    (d, kids)
}

#[test]
fn processes_end_with_the_dashboard_on_quit() {
    let (mut d, kids) = open_processes();
    // c is a real SIGKILL of the selected worker's process.
    d.press("c");
    d.wait_for_text("killed with SIGKILL");
    let pid = d.pid;
    wait_until("one worker process left", || children_of(pid).len() == 1);
    d.press("r");
    d.wait_for_text("Worker-A#2 started");
    wait_until("two worker processes again", || children_of(pid).len() == 2);
    let mut all = kids;
    all.extend(children_of(pid));
    d.press("q");
    assert!(d.wait_for_exit().success());
    wait_until("every worker process gone", || all.iter().all(|p| gone(*p)));
}

#[test]
fn processes_end_with_the_dashboard_on_sigterm() {
    let (mut d, kids) = open_processes();
    // Stopped workers must die too: SIGKILL reaches a stopped process. Started, then one
    // stopped again.
    d.press(" ");
    d.wait_for_text("the worker processes start");
    d.press(" ");
    d.wait_for_text("SIGSTOP sent to Worker-A");
    unsafe { libc::kill(d.pid as libc::pid_t, libc::SIGTERM) };
    let status = d.wait_for_exit();
    assert!(!status.success());
    wait_until("every worker process gone", || {
        kids.iter().all(|p| gone(*p))
    });
}

#[test]
fn processes_die_with_a_dashboard_killed_without_warning() {
    let (mut d, kids) = open_processes();
    // SIGKILL: no quit, no drop, no clean-up; only the kernel's parent-death signal is left.
    assert_eq!(
        unsafe { libc::kill(d.pid as libc::pid_t, libc::SIGKILL) },
        0
    );
    let _ = d.wait_for_exit();
    wait_until("every worker process gone", || {
        kids.iter().all(|p| gone(*p))
    });
}

/// The figure on the ledger line that starts with `label`, as drawn.
fn ledger_figure(screen: &str, label: &str) -> Option<String> {
    screen
        .lines()
        .filter_map(|l| {
            l.split('│')
                .find(|cell| cell.trim_start().starts_with(label))
        })
        .map(|cell| cell.split_whitespace().last().unwrap_or("").to_string())
        .next()
}

#[test]
fn processes_log_an_added_payment_once_and_count_a_killed_process_as_a_crash() {
    let (mut d, _kids) = open_processes();
    d.press("p");
    d.wait_for_text("added payment PAY-007");
    // The dashboard's own write comes back through the events table: one line, not two.
    let added = d.screen().matches("added payment PAY-007").count();
    assert_eq!(added, 1, "{}", d.screen());
    d.press("c");
    d.wait_for_text("killed with SIGKILL");
    d.wait_for("the kill counted as a crash", |s| {
        ledger_figure(&s.contents(), "crashes").as_deref() == Some("1")
    });
    d.press("q");
    assert!(d.wait_for_exit().success());
}

/// The state letter of `pid` in /proc (`T` for a stopped process).
fn state_of(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}

/// The child blocks in poll(2) on its standard input, a pipe: its stdin is a pipe and it
/// has opened no database file yet.
fn waits_on_its_start_pipe(pid: u32) -> bool {
    let stdin = std::fs::read_link(format!("/proc/{pid}/fd/0")).unwrap_or_default();
    let opened_db = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.flatten().any(|fd| {
                std::fs::read_link(fd.path()).is_ok_and(|p| p.to_string_lossy().contains(".db"))
            })
        })
        .unwrap_or(false);
    stdin.to_string_lossy().starts_with("pipe:") && !opened_db && state_of(pid) == Some('S')
}

#[test]
fn processes_open_stopped_and_the_first_space_starts_them_all() {
    let (mut d, kids) = open_processes();
    // Opened like free play: the children wait before their first database access (so
    // none can hold the write lock while it waits), and nothing is claimed.
    wait_until("both children waiting to start", || {
        kids.iter().all(|p| waits_on_its_start_pipe(*p))
    });
    assert!(
        d.screen().contains("space starts them all"),
        "{}",
        d.screen()
    );
    // The dashboard's own write goes through while they wait: no child holds the lock.
    d.press("p");
    d.wait_for_text("added payment PAY-007");
    assert!(!d.screen().contains("CLAIMED"), "{}", d.screen());
    d.press(" ");
    d.wait_for_text("the worker processes start");
    wait_until("both children running", || {
        kids.iter().all(|p| !waits_on_its_start_pipe(*p))
    });
    d.wait_for_text("CLAIMED");
    d.press("q");
    assert!(d.wait_for_exit().success());
}

/// Every `Retry` row's worker and detail in the SQLite database at `db`.
fn releases(db: &Path) -> Vec<(String, String)> {
    use leaselab::engine::store::{LeaseEventKind, Store};
    Store::open_read_only(db)
        .and_then(|s| s.events_after(0, 100_000))
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.kind == LeaseEventKind::Retry)
        .map(|r| (r.worker, r.detail.unwrap_or_default()))
        .collect()
}

/// A `--processes` dashboard on `db` whose two workers each hold a lease for ten minutes,
/// Worker-A frozen: its pid and its children's.
fn a_fleet_holding_leases(db: &Path) -> (Dashboard, Vec<u32>) {
    // Each worker holds its lease for ten minutes: only leaving gives it back.
    let mut d = Dashboard::open(&[
        "--processes",
        "--workers",
        "2",
        "--db",
        db.to_str().unwrap(),
        "--lease-ms",
        "1200000",
        "--process-ms",
        "600000",
    ]);
    d.wait_for_text("Worker-B");
    let pid = d.pid;
    wait_until("two worker processes", || children_of(pid).len() == 2);
    let kids = children_of(pid);
    d.press(" ");
    d.wait_for_text("the worker processes start");
    wait_until("both workers holding a lease", || {
        use leaselab::engine::outbox::prelude::*;
        use leaselab::engine::store::{OutboxStatus, Store};
        Store::open_read_only(db)
            .and_then(|s| s.messages(0, 100))
            .is_ok_and(|rows| {
                rows.iter()
                    .filter(|r| r.status == OutboxStatus::Processing)
                    .count()
                    == 2
            })
    });
    // Worker-A frozen: it cannot read its lifeline; Worker-B reads it.
    d.press(" ");
    d.wait_for_text("SIGSTOP sent to Worker-A");
    wait_until("Worker-A stopped", || {
        kids.iter().any(|p| state_of(*p) == Some('T'))
    });
    (d, kids)
}

#[test]
fn a_dashboard_killed_without_warning_leaves_no_worker_and_no_lease_behind() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("fleet.db");
    let (mut d, kids) = a_fleet_holding_leases(&db);
    // SIGKILL: no quit, no drop, no clean-up in the dashboard.
    assert_eq!(
        unsafe { libc::kill(d.pid as libc::pid_t, libc::SIGKILL) },
        0
    );
    let _ = d.wait_for_exit();
    wait_until("every worker process gone", || {
        kids.iter().all(|p| gone(*p))
    });
    // Each gave its lease back on its way out: the running one when its lifeline closed,
    // the frozen one when its orphaned process group was sent SIGHUP and SIGCONT (its
    // lifeline's end may come first, once it runs again).
    let mut released = releases(&db);
    released.sort();
    assert_eq!(released.len(), 2, "{released:?}\n{:#?}", {
        use leaselab::engine::store::Store;
        Store::open_read_only(&db)
            .and_then(|s| s.events_after(0, 100_000))
            .unwrap_or_default()
            .into_iter()
            .map(|r| format!("{} {:?} {:?}", r.worker, r.kind, r.detail))
            .collect::<Vec<_>>()
    });
    assert_eq!(released[0].0, "Worker-A", "{released:?}");
    assert!(
        ["released: SIGHUP", "released: the end of its dashboard"]
            .contains(&released[0].1.as_str()),
        "{released:?}"
    );
    assert_eq!(
        released[1],
        (
            "Worker-B".to_string(),
            "released: the end of its dashboard".to_string()
        )
    );
}

#[test]
fn a_dashboard_that_quits_has_its_workers_give_their_leases_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("fleet.db");
    let (mut d, kids) = a_fleet_holding_leases(&db);
    d.press("q");
    assert!(d.wait_for_exit().success());
    // Gone by the time the dashboard is: it waited for them.
    assert!(
        kids.iter().all(|p| gone(*p)),
        "a worker outlived its dashboard"
    );
    let mut released = releases(&db);
    released.sort();
    assert_eq!(
        released,
        vec![
            (
                "Worker-A".to_string(),
                "released: the end of its dashboard".to_string()
            ),
            (
                "Worker-B".to_string(),
                "released: the end of its dashboard".to_string()
            ),
        ]
    );
}
