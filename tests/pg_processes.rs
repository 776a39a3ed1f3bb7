//! Worker processes on PostgreSQL: `leaselab worker --db postgres://...` joining a scratch
//! database of `LEASELAB_PG_URL`'s server (made and seeded once when two start together,
//! shared with an engine's threads, a foreign database refused), and the dashboards that
//! follow them (`--watch`, `--processes`). Every wait polls the database or the app's own
//! stream with a generous deadline; nothing sleeps to synchronise.

mod pg_support;
mod support;

use std::process::Command;
use std::time::Instant;

use leaselab::engine::backend::{Db, Outbox};
use leaselab::engine::checker::{self, HistoryCheck};
use leaselab::engine::clock::wall_now_ms;
use leaselab::engine::events_table::Translator;
use leaselab::engine::ledger::Ledger;
use leaselab::engine::pg::PgStore;
use leaselab::engine::store::{LeaseEventKind, LeaseEventRow, OutboxStatus};
use leaselab::engine::worker::WorkerState;
use leaselab::engine::{Engine, EngineConfig};
use leaselab::ui::app::{App, ExternalMode, WorkerView};
use leaselab::ui::{DashboardOptions, Theme};
use pg_support::{scratch, ScratchDb};
use support::processes::{children_of, gone, wait_for, WorkerProcess, DEADLINE, POLL};

fn events(db: &ScratchDb) -> Vec<LeaseEventRow> {
    PgStore::open_url(&db.url)
        .and_then(|mut s| s.all_events_after(0, 1_000_000))
        .unwrap_or_default()
}

fn reader(db: &ScratchDb) -> Option<Box<dyn Outbox>> {
    Db::Postgres(db.url.clone()).open_reader().ok()
}

fn drained(db: &ScratchDb) -> Option<()> {
    let r = reader(db)?;
    let c = r.outbox_counts().ok()?;
    (r.message_count().ok()? > 0 && c.drained()).then_some(())
}

/// The history checker over the events table alone, against the final rows.
fn history(db: &ScratchDb) -> (Ledger, HistoryCheck) {
    let mut ledger = Ledger::new();
    let mut t = Translator::new();
    for row in events(db) {
        for ev in t.events(&row) {
            ledger.apply(&ev);
        }
    }
    let rows = reader(db).unwrap().messages(0, 100_000).unwrap();
    let check = checker::check(&ledger, &rows);
    (ledger, check)
}

#[test]
fn two_workers_starting_at_once_make_and_seed_an_empty_database_once() {
    let Some(db) = scratch("twoworkers") else {
        return;
    };
    let args = [
        "--messages",
        "30",
        "--lease-ms",
        "5000",
        "--process-ms",
        "20",
    ];
    let a = WorkerProcess::start(&db.url, "laptop-1", &args);
    let b = WorkerProcess::start(&db.url, "laptop-2", &args);
    wait_for("the outbox to drain", || drained(&db));
    for w in [a, b] {
        let name = w.name.clone();
        let (status, stderr) = w.stop();
        assert_eq!(status.code(), Some(143), "{name}: {stderr}");
    }
    let seeded: Vec<_> = events(&db)
        .into_iter()
        .filter(|r| r.kind == LeaseEventKind::Seeded)
        .collect();
    assert_eq!(seeded.len(), 1, "one seeding: {seeded:?}");
    assert_eq!(seeded[0].detail.as_deref(), Some("30"));
    assert_eq!(reader(&db).unwrap().message_count().unwrap(), 30);
    let (ledger, check) = history(&db);
    assert!(check.passed(), "{check:?}");
    assert_eq!((check.seeded, check.processed), (30, 30));
    assert_eq!(ledger.per_worker.values().sum::<u64>(), 30);
}

#[test]
fn worker_processes_join_a_database_an_engine_holds_and_share_it_with_its_threads() {
    let Some(db) = scratch("mixed") else { return };
    let config = EngineConfig {
        workers: 2,
        messages: 120,
        lease_ms: 5_000,
        process_ms: 20,
        idle_ms: 50,
        db: Some(Db::Postgres(db.url.clone())),
        ..EngineConfig::default()
    };
    // The engine holds the database (its one-engine lock) and seeds it; its threads wait.
    let mut engine = Engine::start(config, true).unwrap();
    // Seeded again on the wall clock, as `--processes` does: worker processes refuse an
    // owner whose rows are on the scenario clock.
    engine.reseed_on_wall_clock().unwrap();
    let procs: Vec<_> = ["proc-1", "proc-2"]
        .iter()
        .map(|n| WorkerProcess::start(&db.url, n, &["--lease-ms", "5000", "--process-ms", "100"]))
        .collect();
    // A worker that took the engine's lock would be refused here instead.
    wait_for("both processes to claim", || {
        let rows = events(&db);
        procs
            .iter()
            .all(|p| rows.iter().any(|r| r.worker == p.name))
            .then_some(())
    });
    engine.clock.set(wall_now_ms());
    engine.clock.resume();
    engine.resume_all();
    wait_for("the outbox to drain", || drained(&db));
    drop(engine);
    for p in procs {
        let name = p.name.clone();
        let (status, stderr) = p.stop();
        assert_eq!(status.code(), Some(143), "{name}: {stderr}");
    }
    let (ledger, check) = history(&db);
    assert!(check.passed(), "{check:?}");
    assert_eq!(check.processed, 120);
    for name in ["Worker-A", "Worker-B", "proc-1", "proc-2"] {
        assert!(
            ledger.per_worker.get(name).copied().unwrap_or(0) > 0,
            "{name} did no work: {:?}",
            ledger.per_worker
        );
    }
}

#[test]
fn a_worker_refuses_a_foreign_postgres_database_in_one_line_untouched() {
    let Some(db) = scratch("foreign") else {
        return;
    };
    db.client()
        .batch_execute("CREATE TABLE notes (body text)")
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(["worker", "--db", &db.url, "--name", "A"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("another application (notes)"), "{stderr}");
    let tables: Vec<String> = db
        .client()
        .query(
            "SELECT table_name::text FROM information_schema.tables
              WHERE table_schema = 'public'",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(tables, ["notes"]);
}

/// A lost connection is retried, a refusal that will not heal is not: a worker whose
/// database is dropped under it (its connection ended by the server) tries a new one, is
/// told the database does not exist, and stops in one line, exit 3.
#[test]
fn a_worker_whose_database_is_dropped_tries_again_and_stops_in_one_line() {
    let Some(db) = scratch("dropped") else {
        return;
    };
    let child = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(["worker", "--db", &db.url, "--name", "A"])
        .args(["--messages", "5000", "--process-ms", "20"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("a claim", || {
        events(&db)
            .iter()
            .any(|r| r.kind == LeaseEventKind::Claimed)
            .then_some(())
    });
    let name = db.name.clone();
    // No new connection gets in between its end and the drop.
    let mut config = db.config.clone();
    config.dbname("postgres");
    config
        .connect(postgres::NoTls)
        .unwrap()
        .batch_execute(&format!("ALTER DATABASE {name} ALLOW_CONNECTIONS false"))
        .unwrap();
    drop(db);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!("database \"{name}\" does not exist")),
        "{stderr}"
    );
    assert!(stdout.contains("A connection lost: "), "{stdout}");
    assert!(
        stdout.contains("reconnecting (attempt 1, next in 250 ms)"),
        "{stdout}"
    );
}

/// Fold what arrived and take a frame until `view` of the worker `name` satisfies `done`.
fn wait_for_worker(app: &mut App, name: &str, what: &str, done: impl Fn(&WorkerView) -> bool) {
    wait_for(&format!("{name} to be {what}"), || {
        app.absorb_events();
        app.refresh(20, 10);
        let found = app
            .snapshot()
            .workers
            .iter()
            .find(|w| w.status.name == name);
        found.is_some_and(&done).then_some(())
    });
}

/// Fold and take frames until the app's history check has a verdict.
fn wait_for_verdict(app: &mut App) -> HistoryCheck {
    let start = Instant::now();
    loop {
        app.absorb_events();
        app.refresh(20, 10);
        if let Some(h) = app.snapshot().history.clone() {
            return h;
        }
        let db = &app.snapshot().db;
        assert!(
            start.elapsed() < DEADLINE,
            "no history verdict: {:?} {:?} {:?}",
            db.counts,
            db.error,
            app.snapshot().workers
        );
        std::thread::sleep(POLL);
    }
}

fn watch_options(db: &ScratchDb, messages: u64) -> DashboardOptions {
    DashboardOptions {
        db: Some(db.url.clone().into()),
        messages: Some(messages),
        watch: true,
        ..DashboardOptions::default()
    }
}

#[test]
fn watching_postgres_a_killed_worker_shows_and_its_lease_is_reclaimed_after_expiry() {
    // A slow machine may let the worker finish before the kill lands: then start over.
    for _ in 0..5 {
        let Some(db) = scratch("watch") else { return };
        let slow = [
            "--messages",
            "3",
            "--lease-ms",
            "2000",
            "--process-ms",
            "1900",
        ];
        let mut doomed = WorkerProcess::start(&db.url, "doomed", &slow);
        // Whichever of the two comes first makes the database, with the same payments.
        let mut app =
            App::external(ExternalMode::Watch, watch_options(&db, 3), Theme::plain()).unwrap();
        wait_for_worker(&mut app, "doomed", "holding a lease", |w| {
            w.status.lease.is_some()
        });
        doomed.kill();
        let rows = reader(&db).unwrap().messages(0, 10).unwrap();
        let Some(held) = rows.iter().find(|r| r.status == OutboxStatus::Processing) else {
            continue;
        };
        assert_eq!(held.locked_by.as_deref(), Some("doomed"));
        wait_for_worker(
            &mut app,
            "doomed",
            // Killed from outside, nothing recorded its end; the server says its session
            // is gone: it left, with the lease it held until that runs out.
            "shown left, holding its lease",
            |w| w.status.state == WorkerState::Left && w.status.lease.is_some(),
        );
        let steady = WorkerProcess::start(
            &db.url,
            "steady",
            &["--lease-ms", "2000", "--process-ms", "10"],
        );
        wait_for_worker(&mut app, "doomed", "taken over", |w| {
            w.taken_by.as_deref() == Some("steady")
        });
        let history = wait_for_verdict(&mut app);
        assert!(history.passed(), "{history:?}");
        assert_eq!(app.ledger.reclaims, 1);
        assert_eq!(app.ledger.finalized, 3);
        let (status, stderr) = steady.stop();
        assert_eq!(status.code(), Some(143), "{stderr}");
        return;
    }
    panic!("the worker finished before the kill five times in a row");
}

/// The dashboard in a pseudo-terminal (it needs one), its output read and dropped.
type PtyDashboard = (
    Box<dyn portable_pty::Child + Send + Sync>,
    u32,
    Box<dyn std::io::Write + Send>,
);

fn dashboard_in_pty(args: &[&str]) -> PtyDashboard {
    use portable_pty::{native_pty_system, CommandBuilder, PtySize};
    let pty = native_pty_system()
        .openpty(PtySize {
            rows: 40,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("open a pty");
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_leaselab"));
    cmd.args(args);
    cmd.env("TERM", "xterm-256color");
    let child = pty.slave.spawn_command(cmd).expect("spawn leaselab");
    drop(pty.slave);
    let pid = child.process_id().expect("child pid");
    let mut reader = pty.master.try_clone_reader().expect("pty reader");
    let keys = pty.master.take_writer().expect("pty writer");
    std::thread::spawn(move || {
        let _master = pty.master;
        let mut buf = [0u8; 8192];
        while matches!(std::io::Read::read(&mut reader, &mut buf), Ok(n) if n > 0) {}
    });
    (child, pid, keys)
}

#[test]
fn the_processes_dashboard_on_postgres_starts_worker_children_that_drain_it_cleanly() {
    let Some(db) = scratch("children") else {
        return;
    };
    let (mut dashboard, pid, mut keys) = dashboard_in_pty(&[
        "--processes",
        "--db",
        &db.url,
        "--workers",
        "2",
        "--messages",
        "20",
        "--lease-ms",
        "5000",
        "--process-ms",
        "50",
    ]);
    let kids = wait_for("two worker processes", || {
        let kids = children_of(pid);
        (kids.len() == 2).then_some(kids)
    });
    // The children open stopped: the first space starts them all.
    use std::io::Write;
    keys.write_all(b" ")
        .and_then(|()| keys.flush())
        .expect("type a space");
    wait_for("the outbox to drain", || drained(&db));
    let (ledger, check) = history(&db);
    assert!(check.passed(), "{check:?}");
    assert_eq!((check.seeded, check.processed), (20, 20));
    assert_eq!(ledger.finalized, 20);
    // SIGTERM to the dashboard ends it and, with it, its worker processes.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    dashboard.wait().expect("the dashboard ends");
    wait_for("every worker process gone", || {
        kids.iter().all(|k| gone(*k)).then_some(())
    });
}

/// A run and a worker process whose statement waits for a table lock another session holds
/// (a `LOCK TABLE` left open in psql) end at once on SIGINT, exit 130, while that session
/// still holds the lock: the signal cancels the statement on the server.
#[test]
fn a_run_and_a_worker_waiting_on_a_postgres_lock_end_on_sigint_while_it_is_still_held() {
    let Some(db) = scratch("pg_lock_sigint") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let made = support::leaselab(&["run", "outbox-leasing", "--db", &db.url], dir.path());
    assert_eq!(made.status.code(), Some(0), "{}", support::stderr(&made));
    let mut holder = db.client();
    let mut held = holder.transaction().unwrap();
    held.batch_execute("LOCK TABLE OutboxMessages IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    let mut watcher = db.client();
    for args in [
        vec!["run", "outbox-leasing", "--db", &db.url],
        vec!["worker", "--db", &db.url, "--name", "w1"],
    ] {
        let child = Command::new(env!("CARGO_BIN_EXE_leaselab"))
            .args(&args)
            .current_dir(dir.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Until its statement waits for the lock on the server.
        let waiting = || -> Option<()> {
            let n: i64 = watcher
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity
                      WHERE datname = current_database() AND wait_event_type = 'Lock'",
                    &[],
                )
                .unwrap()
                .get(0);
            (n > 0).then_some(())
        };
        wait_for(&format!("{args:?} waits for the lock"), waiting);
        let out = support::signal_and_wait(child, libc::SIGINT, &args.join(" "));
        assert_eq!(
            out.status.code(),
            Some(130),
            "{args:?}: {}",
            support::stderr(&out)
        );
        assert!(
            support::stderr(&out).contains("interrupted by SIGINT"),
            "{args:?}: {}",
            support::stderr(&out)
        );
    }
    held.rollback().unwrap();
}
