//! `--watch` and `--processes` show what the workers do, not what the watcher would do: the
//! header shows the settings the worker processes recorded when they joined (or `-`), `h`
//! and the other keys of worker threads are neither listed nor obeyed, a worker stopped with
//! Ctrl-C is `left`, held processes are `held`, and a lost connection says so and stops
//! every countdown instead of calling every worker CRASHED.

#[allow(dead_code)]
mod pg_support;
mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use leaselab::engine::clock::wall_now_ms;
use leaselab::engine::outbox::prelude::*;
use leaselab::engine::store::{ClaimOutcome, StoreShared};
use leaselab::engine::worker::WorkerState;
use leaselab::ui::app::App;
use support::processes::WorkerProcess;
use support::watcher;
use support::{frame_lines, press};

const DEADLINE: Duration = Duration::from_secs(90);

fn worker(db: &Path, name: &str, args: &[&str]) -> WorkerProcess {
    WorkerProcess::start(db, name, args)
}

/// Fold what arrived and draw frames until `done` holds of the screen's lines.
fn wait_until(app: &mut App, what: &str, done: impl Fn(&App, &[String]) -> bool) -> Vec<String> {
    let start = Instant::now();
    loop {
        app.absorb_events();
        let lines = frame_lines(app, 160, 40);
        if done(app, &lines) {
            return lines;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "gave up waiting for {what}:\n{}",
            lines.join("\n")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn state_of(app: &App, name: &str) -> Option<WorkerState> {
    app.snapshot()
        .workers
        .iter()
        .find(|w| w.status.name == name)
        .map(|w| w.status.state)
}

fn stop(mut w: WorkerProcess, signo: i32) {
    let mut child = w.child.take().expect("running");
    unsafe { libc::kill(child.id() as libc::pid_t, signo) };
    child.wait().unwrap();
}

#[test]
fn the_header_shows_the_workers_own_settings_and_h_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("class.db");
    let mut app = watcher(&db, 50);
    let header = frame_lines(&mut app, 160, 40)[0].clone();
    assert!(header.contains("lease - "), "before anyone joins: {header}");
    let slow = [
        "--lease-ms",
        "9000",
        "--process-ms",
        "4000",
        "--no-heartbeat",
    ];
    let a = worker(&db, "slowpoke", &slow);
    let lines = wait_until(&mut app, "slowpoke's settings", |_, l| {
        l[0].contains("lease 9000 ms")
    });
    assert!(lines[0].contains("process 4000 ms"), "{}", lines[0]);
    assert!(lines[0].contains("heartbeats OFF"), "{}", lines[0]);
    // h belongs to worker threads: it says why and changes nothing.
    press(&mut app, 'h');
    let notice = app.ui.notice.clone().unwrap_or_default();
    assert!(notice.contains("own leasing and heartbeats"), "{notice}");
    let header = frame_lines(&mut app, 160, 40)[0].clone();
    assert!(header.contains("heartbeats OFF"), "{header}");
    // A worker of other settings joins: what differs is said to differ.
    let b = worker(&db, "rogue", &["--lease-ms", "9000", "--no-leasing"]);
    wait_until(&mut app, "leasing mixed", |_, l| {
        l[0].contains("leasing mixed")
    });
    stop(a, libc::SIGTERM);
    stop(b, libc::SIGTERM);
}

/// A database a run seeded keeps the run's settings row; a worker process that joins it
/// later runs with its own, and the header must not go on showing the run's alone.
#[test]
fn a_worker_joining_a_run_s_database_is_not_given_the_run_s_settings() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("class.db");
    let run = support::leaselab(
        &[
            "run",
            "outbox-leasing",
            "--db",
            db.to_str().unwrap(),
            "--messages",
            "2",
            "--lease-ms",
            "500",
            "--process-ms",
            "100",
            "--report-dir",
            dir.path().join("reports").to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(run.status.success(), "{run:?}");
    let mut app = watcher(&db, 2);
    wait_until(&mut app, "the run's own settings", |_, l| {
        l[0].contains("lease 500 ms")
    });
    let w = worker(
        &db,
        "slowpoke",
        &["--lease-ms", "9000", "--process-ms", "4000"],
    );
    let lines = wait_until(&mut app, "slowpoke joined", |a, _| {
        state_of(a, "slowpoke").is_some()
    });
    // Stopped before the asserts, so a failing one leaves no worker behind.
    stop(w, libc::SIGTERM);
    assert!(lines[0].contains("lease mixed"), "{}", lines[0]);
    assert!(!lines[0].contains("500 ms"), "{}", lines[0]);
}

#[test]
fn the_watch_lists_only_the_keys_it_obeys_and_a_ctrl_c_worker_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("class.db");
    let mut app = watcher(&db, 2);
    let lines = frame_lines(&mut app, 160, 40);
    let footer = lines[lines.len() - 2..].join(" ");
    for absent in [" n ", " c ", " r ", " R ", " l ", " +/-", " a ", " A "] {
        assert!(!footer.contains(absent), "{absent:?} in {footer}");
    }
    // Space holds the screen, not the workers.
    assert!(footer.contains(" space hold "), "{footer}");
    press(&mut app, '?');
    let help = frame_lines(&mut app, 160, 60).join("\n");
    press(&mut app, '?');
    for absent in ["pause / resume", "c / r", "l / h", "reset:", "clock faster"] {
        assert!(!help.contains(absent), "{absent} in {help}");
    }
    assert!(help.contains("hold the screen still (HELD)"), "{help}");
    assert!(help.contains("the workers go on"), "{help}");
    let w = worker(&db, "laptop-1", &["--process-ms", "10"]);
    let lines = wait_until(&mut app, "the drain", |a, _| {
        a.drained() && a.snapshot().history.is_some()
    });
    let strip = &lines[1];
    assert!(!strip.contains("R reseeds"), "{strip}");
    stop(w, libc::SIGINT);
    wait_until(&mut app, "laptop-1 left", |a, _| {
        state_of(a, "laptop-1") == Some(WorkerState::Left)
    });
    let screen = frame_lines(&mut app, 160, 40).join("\n");
    assert!(screen.contains("left"), "{screen}");
    assert!(!screen.contains("CRASHED"), "{screen}");
}

/// `--processes` opens with its children held before they touch the database: the header
/// says HELD, not RUNNING, and each worker `held`, until the first space starts them.
#[test]
fn held_worker_processes_say_held_until_the_first_space() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = support::Dashboard::open_in(
        &["--processes", "--workers", "2", "--db", "p.db"],
        dir.path(),
    );
    d.wait_for_text("HELD");
    d.wait_for("both workers held", |s| {
        s.contents()
            .lines()
            .filter(|l| l.contains(" held "))
            .count()
            >= 2
    });
    assert!(!d.screen().lines().next().unwrap_or("").contains("RUNNING"));
    d.press(" ");
    d.wait_for("RUNNING in the header", |s| {
        s.contents()
            .lines()
            .next()
            .is_some_and(|l| l.contains("RUNNING"))
    });
    let (status, _) = d.quit();
    assert!(status.success(), "{status:?}");
}

/// The watcher's connections are ended from the server's side, and new ones are refused for
/// a while: the view says it is stale, since when, and that it reconnects; nothing on it
/// counts down and a live lease is not turned into a crash. When the database takes
/// connections again, the watch is current again and has caught up with a claim made while
/// it was away.
#[test]
fn a_lost_postgres_connection_makes_the_view_stale_until_it_reconnects_and_catches_up() {
    let Some(db) = pg_support::scratch("watch_lost") else {
        return;
    };
    let url = PathBuf::from(&db.url);
    let mut app = watcher(&url, 2);
    let open = || {
        leaselab::engine::pg::PgStore::open_shared(&db.url, Arc::new(StoreShared::default()))
            .unwrap()
    };
    let claim = |store: &mut leaselab::engine::pg::PgStore, who: &str| {
        let ClaimOutcome::Claimed(_) = store.claim_next(who, wall_now_ms(), 600_000).unwrap().value
        else {
            panic!("nothing to claim");
        };
    };
    claim(&mut open(), "laptop-1");
    wait_until(&mut app, "laptop-1's lease", |a, _| {
        state_of(a, "laptop-1") == Some(WorkerState::Processing)
    });
    // Every connection to the database older than this one is the watcher's; the
    // claimant's is newer. The database is changed from another one.
    let mut mark = db.client();
    let mut claimant = open();
    let mut admin = {
        let mut config = db.config.clone();
        config.dbname("postgres");
        config.connect(postgres::NoTls).unwrap()
    };
    admin
        .batch_execute(&format!(
            "ALTER DATABASE {} ALLOW_CONNECTIONS false",
            db.name
        ))
        .unwrap();
    mark.batch_execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE datname = current_database()
            AND backend_start < (SELECT backend_start FROM pg_stat_activity
                                  WHERE pid = pg_backend_pid())",
    )
    .unwrap();
    let lines = wait_until(&mut app, "the stale view", |a, l| {
        a.snapshot().stale_since.is_some() && l.join("\n").contains("reconnecting (attempt 2")
    });
    assert!(lines[0].contains("STALE since"), "{}", lines.join("\n"));
    assert!(
        lines[1].contains("CONNECTION LOST") && lines[1].contains("reconnecting"),
        "{}",
        lines[1]
    );
    assert!(!lines.join("\n").contains("SQLite"), "{}", lines.join("\n"));
    let frozen = app.snapshot().now_ms;
    claim(&mut claimant, "laptop-2");
    std::thread::sleep(Duration::from_millis(30));
    frame_lines(&mut app, 160, 40);
    assert_eq!(app.snapshot().now_ms, frozen, "nothing counts down");
    assert_eq!(state_of(&app, "laptop-1"), Some(WorkerState::Processing));
    assert_eq!(state_of(&app, "laptop-2"), None, "not seen while away");
    admin
        .batch_execute(&format!(
            "ALTER DATABASE {} ALLOW_CONNECTIONS true",
            db.name
        ))
        .unwrap();
    let lines = wait_until(&mut app, "the view current again, caught up", |a, _| {
        a.snapshot().stale_since.is_none()
            && state_of(a, "laptop-2") == Some(WorkerState::Processing)
    });
    assert!(!lines[0].contains("STALE"), "{}", lines[0]);
    assert!(app.snapshot().now_ms > frozen, "the clock runs again");
    assert_eq!(state_of(&app, "laptop-1"), Some(WorkerState::Processing));
}

/// A watched SQLite file deleted under the watch: the view says so and stays as it stood.
#[test]
fn a_watched_sqlite_file_deleted_stops_the_view_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("class.db");
    let mut app = watcher(&db, 5);
    frame_lines(&mut app, 160, 40);
    std::fs::remove_file(&db).unwrap();
    let lines = wait_until(&mut app, "the stopped view", |a, _| {
        a.snapshot().stale_since.is_some()
    });
    assert!(lines[0].contains("STALE since"), "{}", lines.join("\n"));
    assert!(
        lines[1].contains("STOPPED at") && lines[1].contains("class.db was deleted"),
        "{}",
        lines[1]
    );
    assert!(!lines[1].contains("reconnecting"), "{}", lines[1]);
}

/// A watch of the database free play uses shows the worker `z` froze as FROZEN, and at
/// work again once `z` woke it: the rows say so, as for a lesson's pause.
#[test]
fn the_watch_shows_a_freeze_by_z_in_free_play() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("free.db");
    let mut live = support::app(leaselab::ui::DashboardOptions {
        messages: Some(2),
        db: Some(db.clone()),
        ..Default::default()
    });
    press(&mut live, 'n'); // Worker-A claims PAY-001
    let mut watch = watcher(&db, 2);
    press(&mut live, 'z');
    wait_until(&mut watch, "Worker-A frozen", |a, lines| {
        state_of(a, "Worker-A") == Some(WorkerState::Paused)
            && lines
                .iter()
                .any(|l| l.contains("Worker-A") && l.contains("FROZEN"))
    });
    press(&mut live, 'z');
    wait_until(&mut watch, "Worker-A woken", |a, _| {
        state_of(a, "Worker-A") == Some(WorkerState::Processing)
    });
}
