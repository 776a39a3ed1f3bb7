//! Workers as real processes on one database file: `leaselab worker` started as a child,
//! stopped by SIGTERM or killed by SIGKILL. Every wait polls the database (its events table
//! and its rows) with a generous deadline; nothing sleeps to synchronise.

mod support;

use leaselab::engine::outbox::prelude::*;
use std::path::{Path, PathBuf};
use std::process::Command;

use leaselab::engine::checker::{self, HistoryCheck};
use leaselab::engine::clock::wall_now_ms;
use leaselab::engine::events_table;
use leaselab::engine::ledger::Ledger;
use leaselab::engine::store::{LeaseEventKind, LeaseEventRow, OutboxStatus, Store};
use leaselab::engine::{Engine, EngineConfig};
use support::processes::{wait_for, WorkerProcess};

fn events(db: &Path) -> Vec<LeaseEventRow> {
    if !db.exists() {
        return Vec::new();
    }
    Store::open_read_only(db)
        .and_then(|s| s.all_events())
        .unwrap_or_default()
}

fn drained(db: &Path) -> Option<()> {
    let s = Store::open_read_only(db).ok()?;
    let c = s.outbox_counts().ok()?;
    (s.message_count().ok()? > 0 && c.drained()).then_some(())
}

/// The history checker over the events table alone, against the final rows.
fn history(db: &Path) -> (Ledger, HistoryCheck) {
    let mut ledger = Ledger::new();
    for ev in events_table::read_all(db).unwrap() {
        ledger.apply(&ev);
    }
    let rows = Store::open_read_only(db)
        .unwrap()
        .messages(0, 100_000)
        .unwrap();
    let check = checker::check(&ledger, &rows);
    (ledger, check)
}

fn db_in(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("class.db")
}

#[test]
fn two_worker_processes_drain_a_shared_database_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let args = [
        "--messages",
        "30",
        "--lease-ms",
        "5000",
        "--process-ms",
        "20",
    ];
    let a = WorkerProcess::start(&db, "laptop-1", &args);
    let b = WorkerProcess::start(&db, "laptop-2", &args);
    wait_for("the outbox to drain", || drained(&db));
    for w in [a, b] {
        let name = w.name.clone();
        let (status, stderr) = w.stop();
        assert_eq!(status.code(), Some(143), "{name}: {stderr}");
        assert!(
            stderr.contains("interrupted by SIGTERM"),
            "{name}: {stderr}"
        );
    }
    let (ledger, check) = history(&db);
    assert!(check.passed(), "{check:?}");
    assert_eq!((check.seeded, check.processed), (30, 30));
    assert_eq!(ledger.finalized, 30);
    assert_eq!(ledger.per_worker.values().sum::<u64>(), 30);
}

#[test]
fn a_worker_killed_holding_a_lease_is_taken_over_after_expiry() {
    // A slow machine may let the first worker finish before the kill lands: then start over.
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let db = db_in(&dir);
        let slow = [
            "--messages",
            "1",
            "--lease-ms",
            "3000",
            "--process-ms",
            "2900",
            // Heartbeats off: the lease ends 3000 ms after the claim, as the test expects.
            "--no-heartbeat",
        ];
        let mut a = WorkerProcess::start(&db, "doomed", &slow);
        let claim = wait_for("doomed to claim", || {
            events(&db)
                .into_iter()
                .find(|r| r.kind == LeaseEventKind::Claimed)
        });
        a.kill(); // SIGKILL: no clean-up, the lease stays in the row
        let row = Store::open_read_only(&db)
            .unwrap()
            .messages(0, 1)
            .unwrap()
            .remove(0);
        if row.status != OutboxStatus::Processing {
            continue;
        }
        assert_eq!(row.locked_by.as_deref(), Some("doomed"));
        let b = WorkerProcess::start(
            &db,
            "rescuer",
            &["--lease-ms", "3000", "--process-ms", "10"],
        );
        wait_for("the rescuer to finish the message", || drained(&db));
        b.stop();
        let rows = events(&db);
        let reclaim = rows
            .iter()
            .find(|r| r.kind == LeaseEventKind::Claimed && r.worker == "rescuer")
            .expect("the rescuer's claim");
        assert_eq!(
            reclaim.version,
            Some(2),
            "a reclaim bumps the fencing token"
        );
        assert!(
            reclaim.at_ms > claim.until_ms.unwrap(),
            "reclaimed at {} before the lease ran out at {:?}",
            reclaim.at_ms,
            claim.until_ms
        );
        let (ledger, check) = history(&db);
        assert!(check.passed(), "{check:?}");
        assert_eq!((ledger.reclaims, ledger.finalized), (1, 1));
        return;
    }
    panic!("the first worker finished before the kill five times in a row");
}

#[test]
fn thread_workers_and_process_workers_share_one_outbox_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let config = EngineConfig {
        workers: 2,
        messages: 120,
        lease_ms: 5_000,
        process_ms: 20,
        idle_ms: 50,
        db: Some(db.clone().into()),
        ..EngineConfig::default()
    };
    // The engine owns and seeds the database; its threads wait, paused.
    let mut engine = Engine::start(config, true).unwrap();
    // Seeded again on the wall clock, as `--processes` does: worker processes refuse an
    // owner whose rows are on the scenario clock.
    engine.reseed_on_wall_clock().unwrap();
    let procs: Vec<_> = ["proc-1", "proc-2"]
        .iter()
        .map(|n| WorkerProcess::start(&db, n, &["--lease-ms", "5000", "--process-ms", "100"]))
        .collect();
    wait_for("both processes to claim", || {
        let rows = events(&db);
        procs
            .iter()
            .all(|p| rows.iter().any(|r| r.worker == p.name))
            .then_some(())
    });
    // Threads and processes now compete on one clock: the wall clock.
    engine.clock.set(wall_now_ms());
    engine.clock.resume();
    engine.resume_all();
    wait_for("the outbox to drain", || drained(&db));
    drop(engine);
    for p in procs {
        p.stop();
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
fn a_worker_and_the_process_dashboards_refuse_bad_input_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("notes.txt");
    std::fs::write(&foreign, "not a database").unwrap();
    for (args, says) in [
        (vec!["worker", "--name", "A"], "needs --db PATH"),
        (
            vec!["worker", "--db", foreign.to_str().unwrap(), "--name", "A"],
            "not a SQLite database",
        ),
        (
            vec!["worker", "--db", "x.db", "--name", "two words"],
            "holds a space",
        ),
        (
            vec!["worker", "--db", "x.db", "--name", "Worker-B"],
            "--name Worker-B is the name of a leaselab worker thread",
        ),
        (
            vec!["worker", "--db", "x.db", "--name", "Worker-A#2"],
            "is the name of a leaselab worker thread",
        ),
        (
            vec!["worker", "--db", "x.db", "--name", "A", "--speed", "2"],
            "--speed does not apply",
        ),
        (vec!["--watch"], "--watch needs --db PATH"),
        (
            vec!["--watch", "--db", "x.db", "--workers", "3"],
            "--workers does not apply to --watch",
        ),
        (
            vec!["--processes", "--process-ms", "5000", "--no-heartbeat"],
            "needs a longer --lease-ms",
        ),
        (
            vec!["--watch", "--db", "x.db", "list"],
            "--watch is for the dashboard",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_leaselab"))
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    assert!(!dir.path().join("x.db").exists());
}

#[test]
fn a_stopped_worker_wakes_to_a_refused_finalize() {
    // A slow machine may let the first worker finish before SIGSTOP lands: then start over.
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let db = db_in(&dir);
        // Without heartbeats: with them, the woken zombie's overdue beat would find its
        // lease lost and drop the job before any finalize (tests/heartbeats.rs).
        let slow = [
            "--messages",
            "1",
            "--lease-ms",
            "3000",
            "--process-ms",
            "2900",
            "--no-heartbeat",
        ];
        let zombie = WorkerProcess::start(&db, "zombie", &slow);
        let zombie_pid = zombie.child.as_ref().unwrap().id() as libc::pid_t;
        wait_for("the zombie to claim", || {
            events(&db)
                .into_iter()
                .find(|r| r.kind == LeaseEventKind::Claimed)
        });
        assert_eq!(unsafe { libc::kill(zombie_pid, libc::SIGSTOP) }, 0);
        let row = Store::open_read_only(&db)
            .unwrap()
            .messages(0, 1)
            .unwrap()
            .remove(0);
        if row.status != OutboxStatus::Processing {
            continue;
        }
        let b = WorkerProcess::start(
            &db,
            "rescuer",
            &["--lease-ms", "3000", "--process-ms", "10"],
        );
        wait_for("the rescuer to finish the message", || drained(&db));
        // Woken, the zombie finishes its processing and tries to finalize under lease v1.
        assert_eq!(unsafe { libc::kill(zombie_pid, libc::SIGCONT) }, 0);
        let refused = wait_for("the zombie's refused finalize", || {
            events(&db)
                .into_iter()
                .find(|r| r.kind == LeaseEventKind::FinalizeRejected)
        });
        assert_eq!(
            (refused.worker.as_str(), refused.version),
            ("zombie", Some(1))
        );
        b.stop();
        zombie.stop();
        let (ledger, check) = history(&db);
        assert!(check.passed(), "{check:?}");
        assert_eq!((ledger.finalized, ledger.rejected_finalizes), (1, 1));
        let row = Store::open_read_only(&db)
            .unwrap()
            .messages(0, 1)
            .unwrap()
            .remove(0);
        assert_eq!(
            (row.locked_by.as_deref(), row.lease_version),
            (Some("rescuer"), 2)
        );
        return;
    }
    panic!("the first worker finished before SIGSTOP five times in a row");
}

/// A worker process refuses a database whose owner runs on the scenario clock (its leases
/// would all look long expired), and joins one whose owner runs on the wall clock.
#[test]
fn a_worker_refuses_an_owner_on_the_scenario_clock_and_joins_one_on_the_wall_clock() {
    use leaselab::engine::backend::Db;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("owned.db");
    let config = EngineConfig {
        workers: 0,
        db: Some(Db::Sqlite(db.clone())),
        ..EngineConfig::default()
    };
    let mut owner = Engine::start(config, true).expect("an owner on the scenario clock, seeded");
    let out = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(["worker", "--db"])
        .arg(&db)
        .args(["--name", "laptop-1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("runs on the scenario clock"), "{err}");
    assert!(err.contains("2026-01-15T09:00:00.000Z"), "{err}");
    let untouched = owner.store().outbox_counts().unwrap();
    assert_eq!(untouched.pending, 6, "the refused worker claimed something");

    // The same owner on the wall clock (as `--processes` runs) takes worker processes.
    owner.reseed_on_wall_clock().unwrap();
    let worker = WorkerProcess::start(&db, "laptop-1", &["--process-ms", "0"]);
    wait_for("laptop-1 to finish a payment", || {
        let rows = owner.store().messages(0, 6).ok()?;
        rows.iter().any(|r| r.status == "Processed").then_some(())
    });
    let (status, err) = worker.stop();
    assert_eq!(status.code(), Some(143), "{err}");
}

/// A `leaselab worker` child whose stdout arrives line by line on a channel.
fn worker_with_output(
    db: &Path,
    name: &str,
) -> (std::process::Child, crossbeam_channel::Receiver<String>) {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(["worker", "--db"])
        .arg(db)
        .args(["--name", name, "--process-ms", "0"])
        // The usual limit, cut short so the test need not wait 30 s for the notice.
        .env(leaselab::engine::store::BUSY_GIVE_UP_ENV, "300")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

fn wait_for_line(lines: &crossbeam_channel::Receiver<String>, needle: &str) -> String {
    loop {
        let line = lines
            .recv_timeout(support::processes::DEADLINE)
            .unwrap_or_else(|e| panic!("no line with {needle:?}: {e}"));
        if line.contains(needle) {
            return line;
        }
    }
}

/// Another process holding the write lock (a worker stopped inside its transaction) does
/// not end a worker process: it waits as long as it takes, says so once, goes on when the
/// lock is free, and still answers SIGINT while it waits.
#[test]
fn a_worker_waits_out_a_held_write_lock_says_so_once_and_answers_sigint() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("held.db");
    {
        let shared = std::sync::Arc::new(leaselab::engine::store::StoreShared::default());
        let (mut store, _) = Store::create(&db, shared).unwrap();
        store
            .seed(
                &leaselab::engine::provider::Provider::new(),
                6,
                wall_now_ms(),
            )
            .unwrap();
    }
    let mut holder = rusqlite::Connection::open(&db).unwrap();
    let tx = holder
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .unwrap();
    let (mut patient, lines) = worker_with_output(&db, "patient");
    let said = wait_for_line(&lines, "waiting for the write lock");
    assert!(
        said.starts_with("patient waiting for the write lock (held "),
        "{said}"
    );
    // Well past the limit it is still alive, and has said it once.
    assert!(patient.try_wait().unwrap().is_none(), "the worker gave up");
    tx.commit().unwrap();
    let before = Store::open_read_only(&db).unwrap().outbox_counts().unwrap();
    assert_eq!(
        before.processed, 0,
        "a payment was finished under the held lock"
    );
    wait_for("the patient worker to finish a payment", || {
        let s = Store::open_read_only(&db).ok()?;
        (s.outbox_counts().ok()?.processed > 0).then_some(())
    });
    let said_again: Vec<String> = lines
        .try_iter()
        .filter(|l| l.contains("waiting for the write lock"))
        .collect();
    assert!(said_again.is_empty(), "said more than once: {said_again:?}");
    unsafe { libc::kill(patient.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(patient.wait().unwrap().code(), Some(143));

    // Held again: SIGINT ends the waiting worker at once, exit 130.
    let tx = holder
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .unwrap();
    let (mut waiting, lines) = worker_with_output(&db, "waiting");
    wait_for_line(&lines, "waiting for the write lock");
    unsafe { libc::kill(waiting.id() as libc::pid_t, libc::SIGINT) };
    let status =
        support::processes::wait_for("the waiting worker to end", || waiting.try_wait().unwrap());
    assert_eq!(status.code(), Some(130));
    drop(tx);
}

/// A worker whose output cannot be written stops: exit 3 and one line for a full disk,
/// quietly for a reader that went away. It does not go on working unseen.
#[test]
fn a_worker_whose_output_is_lost_stops() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("out.db");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(["worker", "--db"])
        .arg(&db)
        .args(["--name", "w"])
        .stdout(full)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("cannot write to standard output"), "{err}");
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let status = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(["worker", "--db"])
        .arg(&db)
        .args(["--name", "w2"])
        .stdout(writer)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

/// A worker whose SQLite file is deleted, or replaced by another file, does not go on with
/// a file nobody else sees: it says so in one line and exits 3.
#[test]
fn a_worker_stops_in_one_line_when_its_file_is_deleted_or_replaced() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let start = |file: &str| {
        let db = dir.path().join(file);
        let mut child = Command::new(env!("CARGO_BIN_EXE_leaselab"))
            .args(["worker", "--db"])
            .arg(&db)
            .args(["--name", "w", "--messages", "5000", "--process-ms", "20"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, rx) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        wait_for_line(&rx, "CLAIMED");
        (db, child)
    };
    let ended = |mut child: std::process::Child| {
        let status = child.wait().unwrap();
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        (status.code(), stderr)
    };
    let (deleted, child) = start("deleted.db");
    std::fs::remove_file(&deleted).unwrap();
    let (code, stderr) = ended(child);
    assert_eq!(code, Some(3), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("w stopped: ") && stderr.contains("deleted.db was deleted"),
        "{stderr}"
    );
    assert!(!deleted.exists(), "not made again");

    let (replaced, child) = start("replaced.db");
    let other = dir.path().join("other.db");
    std::fs::write(&other, b"").unwrap();
    std::fs::rename(&other, &replaced).unwrap();
    let (code, stderr) = ended(child);
    assert_eq!(code, Some(3), "{stderr}");
    assert!(
        stderr.contains("replaced.db was replaced by another file"),
        "{stderr}"
    );
}

/// A `--processes` child as its dashboard starts it: held, its lifeline (standard input) a
/// pipe from the test.
fn held_child(db: &Path) -> std::process::Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_leaselab"));
    cmd.args(["worker", "--db"])
        .arg(db)
        .args(["--name", "Worker-A", "--messages", "1"])
        // Its one payment in hand for ten minutes: only leaving gives it back.
        .args(["--lease-ms", "1200000", "--process-ms", "600000"])
        .env(leaselab::processes::CHILD_ENV, "1")
        .env(leaselab::processes::HOLD_ENV, "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    leaselab::platform::children::detach(&mut cmd);
    cmd.spawn().expect("start a held worker")
}

#[test]
fn a_held_child_freezes_wakes_and_ends_when_its_lifeline_closes() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let mut child = held_child(&db);
    use leaselab::platform::children::set_frozen;
    set_frozen(&child, true).unwrap();
    assert!(child.try_wait().unwrap().is_none(), "held, then frozen");
    set_frozen(&child, false).unwrap();
    assert!(child.try_wait().unwrap().is_none(), "held, it waits");
    // Its dashboard gone: the pipe closes, and the child ends untouched by the database.
    drop(child.stdin.take());
    let status = wait_for("the held child to end", || child.try_wait().unwrap());
    assert_eq!(status.code(), Some(129), "it ends as a hang-up does");
    assert!(!db.exists(), "held, it never opened the database");
}

#[test]
fn a_started_child_whose_lifeline_closes_gives_its_lease_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let mut child = held_child(&db);
    {
        use std::io::Write;
        let pipe = child.stdin.as_mut().unwrap();
        pipe.write_all(&[leaselab::processes::lifeline::START])
            .unwrap();
        pipe.flush().unwrap();
    }
    wait_for("its claim", || {
        events(&db)
            .iter()
            .any(|r| r.kind == LeaseEventKind::Claimed)
            .then_some(())
    });
    drop(child.stdin.take());
    let status = wait_for("the child to end", || child.try_wait().unwrap());
    assert_eq!(status.code(), Some(129));
    let released: Vec<_> = events(&db)
        .into_iter()
        .filter(|r| r.kind == LeaseEventKind::Retry)
        .map(|r| r.detail.unwrap_or_default())
        .collect();
    assert_eq!(
        released,
        vec!["released: the end of its dashboard".to_string()]
    );
}
