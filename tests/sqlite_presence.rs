//! Who is here, on SQLite (issue 38): there is no server to ask who is connected, so each
//! worker process writes which process it is in its `Joined` row, and a watch on the same
//! machine looks it up. A worker killed from outside (it records nothing) is `left` once
//! its process has ended, and its name is free at once; one merely stopped with SIGSTOP
//! still runs, and is not `left`; one whose row names a process of another machine is
//! only `unknown` once its lease has run out. Real worker processes on a real file; every wait polls with a
//! deadline.

mod support;

use std::sync::Arc;

use leaselab::engine::clock::wall_now_ms;
use leaselab::engine::outbox::prelude::*;
use leaselab::engine::outbox::{Fact, LeaseEventKind};
use leaselab::engine::process_identity::ProcessIdentity;
use leaselab::engine::store::{ClaimOutcome, Store, StoreShared};
use leaselab::engine::worker::WorkerState;
use leaselab::ui::app::App;
use support::processes::{wait_for, WorkerProcess};

/// Each holds a lease of a minute for half a minute: only the process can say it went.
const SLOW: [&str; 4] = ["--lease-ms", "60000", "--process-ms", "30000"];

/// The state the watch shows `name` in, and whether with a lease, after taking in what
/// arrived; with its line in the workers pane.
fn shown(app: &mut App, name: &str) -> Option<(WorkerState, bool, String)> {
    app.absorb_events();
    let lines = support::frame_lines(app, support::COLS, support::ROWS);
    let w = app
        .snapshot()
        .workers
        .iter()
        .find(|w| w.status.name == name)?;
    let line = lines
        .iter()
        .find(|l| l.contains(&format!(" {name} ")))
        .cloned()
        .unwrap_or_default();
    Some((w.status.state, w.status.lease.is_some(), line))
}

/// Process `pid`'s state letter in /proc (`T` stopped, `Z` a zombie).
fn state_of(pid: i32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().next().map(str::to_string)
}

#[test]
fn a_killed_worker_is_left_at_once_and_a_stopped_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("class.db");
    let mut watch = support::watcher(&db, 5);
    let mut gone = WorkerProcess::start(&db, "gone", &SLOW);
    let stopped = WorkerProcess::start(&db, "stopped", &SLOW);
    let stays = WorkerProcess::start(&db, "stays", &SLOW);
    // A worker of another machine (another boot): its row names a process no one here
    // can look up.
    let elsewhere = ProcessIdentity {
        boot: "00000000-0000-0000-0000-000000000000".into(),
        ..ProcessIdentity::of_this_process().unwrap()
    };
    let mut store = Store::open(&db, Arc::new(StoreShared::default())).unwrap();
    let detail = format!(
        "lease_ms=60000 process_ms=30000 leasing=on heartbeats=on heartbeat_ms=20000 batch=1 guard=token {}",
        elsewhere.detail()
    );
    let fact = Fact::of(LeaseEventKind::Joined, wall_now_ms(), "elsewhere", &detail);
    store.record(&fact).unwrap();
    // It takes a payment under a lease of a second, and is not heard of again.
    let taken = store
        .claim_next("elsewhere", wall_now_ms(), 1000)
        .unwrap()
        .value;
    assert!(matches!(taken, ClaimOutcome::Claimed(_)), "{taken:?}");
    wait_for("all three at work", || {
        let all = ["gone", "stopped", "stays"].map(|n| shown(&mut watch, n));
        all.iter()
            .all(|s| matches!(s, Some((WorkerState::Processing, true, _))))
            .then_some(())
    });
    // Its lease ran out and nothing says why: a crash, a sleeping laptop and a slow worker
    // look alike from the file, and a process of another machine cannot be looked up.
    wait_for("elsewhere shown unknown", || {
        shown(&mut watch, "elsewhere").filter(|(s, lease, _)| *s == WorkerState::Unknown && *lease)
    });
    let stopped_pid = stopped.pid();
    assert_eq!(unsafe { libc::kill(stopped_pid, libc::SIGSTOP) }, 0);
    wait_for("stopped to be stopped", || {
        (state_of(stopped_pid).as_deref() == Some("T")).then_some(())
    });
    gone.kill();
    // Its lease has a minute to run and it recorded nothing: only its ended process says it
    // went.
    let (_, held, line) = wait_for("gone shown left", || {
        shown(&mut watch, "gone").filter(|(s, _, _)| *s == WorkerState::Left)
    });
    assert!(held, "left holding its lease until it runs out");
    assert!(line.contains("left"), "{line}");
    // Looked up in the same look: stopped still runs, and the others are not said to go.
    let still = shown(&mut watch, "stopped").unwrap();
    assert_eq!(
        (still.0, still.1),
        (WorkerState::Processing, true),
        "{}",
        still.2
    );
    assert_eq!(
        shown(&mut watch, "stays").unwrap().0,
        WorkerState::Processing
    );
    assert_eq!(
        shown(&mut watch, "elsewhere").unwrap().0,
        WorkerState::Unknown
    );
    // Its name is free at once: a new worker under it joins and claims.
    let mut again = WorkerProcess::start(&db, "gone", &["--lease-ms", "60000"]);
    let pid = again.pid() as u32;
    wait_for("the new gone's Joined row", || {
        again.still_running();
        let rows = Store::open_read_only(&db).ok()?.newest_rows().ok()?;
        let newest = rows.iter().find(|r| r.worker == "gone")?;
        (newest.process.as_ref()?.pid == pid).then_some(())
    });
    wait_for("the new gone back at work in the watch", || {
        shown(&mut watch, "gone").filter(|(s, _, _)| *s != WorkerState::Left)
    });
    // The stopped one's name is held: it still runs.
    let out = support::leaselab_bounded(
        &["worker", "--db", db.to_str().unwrap(), "--name", "stopped"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", support::stderr(&out));
    assert!(support::stderr(&out).contains("--name stopped is taken"));
    assert_eq!(unsafe { libc::kill(stopped_pid, libc::SIGCONT) }, 0);
    for w in [again, stopped, stays] {
        let (status, stderr) = w.stop();
        assert_eq!(status.code(), Some(143), "{stderr}");
    }
}
