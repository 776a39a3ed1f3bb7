//! One clock for every lease, and a stopped worker's lease given back: `leaselab worker`
//! processes on PostgreSQL go by the server's clock, so a worker whose clock is 60 s ahead
//! (`--clock-skew-ms`) takes over no live lease; a worker
//! stopped with SIGINT releases the lease it holds at once, on SQLite and on PostgreSQL.
//! Every wait polls the database or a child's output with a generous deadline.

#[allow(dead_code)]
mod pg_support;
mod support;

use std::ffi::OsStr;
use std::process::Command;

use leaselab::engine::backend::Db;
use leaselab::engine::clock::wall_now_ms;
use leaselab::engine::events_table::Translator;
use leaselab::engine::outbox::prelude::*;
use leaselab::engine::outbox::{
    ClaimOutcome, Durability, FailOutcome, LeaseClock, RetryPolicy, StoreShared,
};
use leaselab::engine::pg::PgStore;
use leaselab::engine::provider::Provider;
use leaselab::engine::store::{LeaseEventKind, LeaseEventRow, OutboxStatus, Store};
use std::sync::Arc;
use support::processes::WorkerProcess;

/// `leaselab worker --db DB --name NAME EXTRA... --clock-skew-ms=OFFSET`.
fn worker(db: impl AsRef<OsStr>, name: &str, offset_ms: i64, extra: &[&str]) -> WorkerProcess {
    let skew = format!("--clock-skew-ms={offset_ms}");
    let args: Vec<&str> = extra.iter().copied().chain([skew.as_str()]).collect();
    WorkerProcess::start(db, name, &args)
}

/// Send `signo`; its exit code, the rest of its stdout (after the lines read) and its
/// stderr.
fn signal(w: WorkerProcess, signo: i32) -> (Option<i32>, String, String) {
    let ended = w.signal(signo);
    (ended.code(), ended.rest, ended.err)
}

fn events(db: &Db) -> Vec<LeaseEventRow> {
    match db {
        Db::Sqlite(path) => Store::open_read_only(path)
            .and_then(|s| s.events_after(0, 100_000))
            .unwrap_or_default(),
        Db::Postgres(url) => PgStore::open_url(url)
            .and_then(|mut s| s.all_events_after(0, 100_000))
            .unwrap_or_default(),
    }
}

/// One payment, in hand for ten minutes under a lease of 1000 s: only leaving gives it back.
const HOLDS_ITS_ONE_PAYMENT: &[&str] = &[
    "--messages",
    "1",
    "--lease-ms",
    "1000000",
    "--process-ms",
    "600000",
    "--no-heartbeat",
];

/// A worker holding PAY-001 under a lease of 1000 s gets SIGINT: it says what it released,
/// the row is Pending and claimable at once, and a `Retry` row says it was released.
fn sigint_gives_the_lease_back(db: Db, arg: &OsStr) {
    let mut w = worker(arg, "holder", 0, HOLDS_ITS_ONE_PAYMENT);
    w.line_with("CLAIMED PAY-001");
    let (code, out, err) = signal(w, libc::SIGINT);
    assert_eq!(code, Some(130), "{err}");
    assert!(
        out.contains("holder released PAY-001 (lease v1)"),
        "{out}\n{err}"
    );
    let mut store = db
        .open(std::sync::Arc::new(StoreShared::default()))
        .unwrap();
    let row = store.messages(0, 1).unwrap().remove(0);
    assert_eq!(row.status, OutboxStatus::Pending, "{row:?}");
    assert_eq!(row.locked_by, None);
    let released = events(&db)
        .into_iter()
        .find(|r| r.kind == LeaseEventKind::Retry)
        .expect("the release's event row");
    assert_eq!(
        (
            released.worker.as_str(),
            released.version,
            released.detail.as_deref()
        ),
        ("holder", Some(1), Some("released: SIGINT"))
    );
    assert!(released.until_ms.unwrap() <= wall_now_ms(), "{released:?}");
    // A watcher tells it from a failed attempt.
    let told: Vec<String> = Translator::new()
        .events(&released)
        .iter()
        .map(|e| e.describe())
        .collect();
    assert_eq!(
        told,
        ["RELEASED PAY-001 (lease v1, SIGINT): claimable now"],
        "{released:?}"
    );
    let left = events(&db)
        .into_iter()
        .find(|r| r.kind == LeaseEventKind::Left)
        .expect("its Left row");
    assert_eq!(left.id, None, "it left holding nothing: {left:?}");
    // Claimable now, not in 1000 s.
    let claim = store
        .claim_next("probe", wall_now_ms(), 1000)
        .unwrap()
        .value;
    assert!(
        matches!(&claim, ClaimOutcome::Claimed(l) if l.version == 2),
        "{claim:?}"
    );
}

#[test]
fn sigint_gives_the_lease_back_at_once_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("outbox.db");
    sigint_gives_the_lease_back(Db::Sqlite(path.clone()), path.as_os_str());
}

#[test]
fn sigint_gives_the_lease_back_at_once_on_postgres() {
    let Some(db) = pg_support::scratch("release") else {
        return;
    };
    sigint_gives_the_lease_back(Db::Postgres(db.url.clone()), OsStr::new(&db.url));
}

/// A worker whose output nobody reads any more (the reading end of its pipe closed, as a
/// closed terminal's is) stops at its next line and gives its lease back at once, as a
/// signal makes it do: the row is Pending, a `Retry` row says why, and it exits 0.
#[test]
fn a_worker_whose_output_is_closed_gives_its_lease_back() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("outbox.db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(["worker", "--db"])
        .arg(&path)
        .args([
            "--name",
            "reader-gone",
            "--messages",
            "1",
            "--lease-ms",
            "1000000",
        ])
        .args(["--process-ms", "600000", "--heartbeat-ms", "100"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.contains("(created it with 1 payment)"), "{line}");
    while !line.contains("CLAIMED PAY-001") {
        line.clear();
        assert_ne!(
            out.read_line(&mut line).unwrap(),
            0,
            "ended before its claim"
        );
    }
    // Nobody reads: its next line (a heartbeat, a tenth of a second on) fails.
    drop(out);
    let status = support::processes::wait_for("the worker to end", || child.try_wait().unwrap());
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    let db = Db::Sqlite(path.clone());
    let store = db.open(Arc::new(StoreShared::default())).unwrap();
    let row = store.messages(0, 1).unwrap().remove(0);
    assert_eq!(row.status, OutboxStatus::Pending, "{row:?}");
    assert_eq!(row.locked_by, None, "{row:?}");
    let released = events(&db)
        .into_iter()
        .find(|r| r.kind == LeaseEventKind::Retry)
        .expect("the release's event row");
    assert_eq!(
        (released.worker.as_str(), released.detail.as_deref()),
        ("reader-gone", Some("released: its output closed"))
    );
    let left = events(&db)
        .into_iter()
        .find(|r| r.kind == LeaseEventKind::Left)
        .expect("its Left row");
    assert_eq!(left.id, None, "it left holding nothing: {left:?}");
}

/// A lease taken over while its worker did not look is not released by it: the guarded
/// release changes no row, and the worker says so.
#[test]
fn a_stopped_worker_whose_lease_was_taken_over_says_it_released_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("outbox.db");
    let slow = [
        "--messages",
        "1",
        "--lease-ms",
        "60000",
        "--process-ms",
        "50000",
        "--no-heartbeat",
    ];
    let mut w = worker(&path, "holder", 0, &slow);
    w.line_with("CLAIMED PAY-001");
    // Another worker, 61 s later by its clock, takes the expired lease over.
    let mut other = Store::open(&path, std::sync::Arc::new(StoreShared::default())).unwrap();
    let taken = other
        .claim_next("taker", wall_now_ms() + 61_000, 1_000_000)
        .unwrap()
        .value;
    assert!(matches!(taken, ClaimOutcome::Claimed(_)), "{taken:?}");
    let (code, out, err) = signal(w, libc::SIGINT);
    assert_eq!(code, Some(130), "{err}");
    assert!(
        out.contains("holder did not release PAY-001 (lease v1): its lease was taken over"),
        "{out}"
    );
    let row = other.messages(0, 1).unwrap().remove(0);
    assert_eq!(
        (row.status, row.locked_by.as_deref(), row.lease_version),
        (OutboxStatus::Processing, Some("taker"), 2)
    );
}

/// On PostgreSQL a worker whose clock is 60 s ahead, with a 30 s lease, meets another's
/// live lease: the server's clock says it holds, so the fast worker never claims it (on
/// its own clock the lease ran out 30 s ago). One 60 s behind keeps the lease it takes.
/// Each says at join that its clock is off.
#[test]
fn a_worker_whose_clock_is_ahead_takes_over_no_live_lease_on_postgres() {
    let Some(db) = pg_support::scratch("skew") else {
        return;
    };
    let lease = [
        "--messages",
        "1",
        "--lease-ms",
        "30000",
        "--process-ms",
        "25000",
        "--no-heartbeat",
    ];
    let mut honest = worker(&db.url, "honest", 0, &lease);
    honest.line_with("CLAIMED PAY-001");
    let mut fast = worker(&db.url, "fast", 60_000, &lease);
    // Its first claim found the message under honest's live lease.
    let first = fast.line_with("PAY-001");
    assert!(first.contains("BLOCKED on PAY-001 by honest"), "{first}");
    let (_, out, err) = signal(fast, libc::SIGINT);
    assert!(
        err.contains("fast's clock is 60.0 s ahead of the database server's"),
        "{err}"
    );
    assert!(!out.contains("CLAIMED"), "{out}");
    let takeovers: Vec<LeaseEventRow> = events(&Db::Postgres(db.url.clone()))
        .into_iter()
        .filter(|r| r.kind == LeaseEventKind::Claimed && r.worker == "fast")
        .collect();
    assert!(
        takeovers.is_empty(),
        "a live lease taken over: {takeovers:?}"
    );
    // honest still holds it, and gives it back when stopped.
    let (_, out, err) = signal(honest, libc::SIGTERM);
    assert!(out.contains("honest released PAY-001 (lease v1)"), "{out}");
    assert!(!err.contains("clock is"), "{err}");
    // A worker 60 s behind claims the released message at once and keeps its lease to the
    // end: on its own clock the release is 60 s in the future, and every lease it took
    // would have run out 30 s before it was taken.
    let mut late = worker(
        &db.url,
        "late",
        -60_000,
        &["--lease-ms", "30000", "--process-ms", "200"],
    );
    late.line_with("FINALIZED PAY-001");
    let (_, _, err) = signal(late, libc::SIGTERM);
    assert!(
        err.contains("late's clock is 60.0 s behind the database server's"),
        "{err}"
    );
    let late_rows: Vec<LeaseEventKind> = events(&Db::Postgres(db.url.clone()))
        .into_iter()
        .filter(|r| r.worker == "late")
        .map(|r| r.kind)
        .collect();
    assert!(
        late_rows.contains(&LeaseEventKind::Finalized),
        "{late_rows:?}"
    );
    assert!(
        !late_rows.contains(&LeaseEventKind::LeaseLost),
        "{late_rows:?}"
    );
    assert!(
        !late_rows.contains(&LeaseEventKind::FinalizeRejected),
        "{late_rows:?}"
    );
}

/// The store itself: on a connection set to the server's clock the `now` each call passes
/// does not matter to a lease. Callers an hour behind and an hour ahead of the server
/// claim, block, beat, release and claim again exactly as the server's clock says, and
/// every event row carries the server's time.
#[test]
fn on_the_server_s_clock_a_caller_s_now_moves_no_lease() {
    let Some(db) = pg_support::scratch("serverclock") else {
        return;
    };
    let hour = 3_600_000;
    let on_server = || Arc::new(StoreShared::new(Durability::Full).on(LeaseClock::Server));
    let provider = Provider::new();
    // Seeded an hour in the past by its caller's clock: the server's time is what counts.
    let (mut a, _) =
        PgStore::join(&db.url, on_server(), &provider, 1, wall_now_ms() - hour).expect("join");
    let mut b = PgStore::open_shared(&db.url, on_server()).unwrap();
    let start = a.server_ms().unwrap();
    let ClaimOutcome::Claimed(lease) = a.claim_next("behind", start - hour, 30_000).unwrap().value
    else {
        panic!("a Pending message is claimable by the server's clock");
    };
    let after_claim = a.server_ms().unwrap();
    assert!(
        (start + 30_000..=after_claim + 30_000).contains(&lease.until_ms),
        "the lease runs 30 s from the server's time: {} not in {}..={}",
        lease.until_ms,
        start + 30_000,
        after_claim + 30_000
    );
    // An hour ahead, the lease is still live.
    let none = b.claim_next("ahead", start + hour, 30_000).unwrap().value;
    assert_eq!(none, ClaimOutcome::Empty);
    match b.blocked_by("ahead", start + hour).unwrap() {
        Some(ClaimOutcome::Blocked { left_ms, owner, .. }) => {
            assert_eq!(owner, "behind");
            assert!((1..=30_000).contains(&left_ms), "{left_ms} ms left");
        }
        other => panic!("blocked by behind's lease, not {other:?}"),
    }
    let beat = a.heartbeat(&lease, start - hour, 30_000).unwrap().value;
    assert!(beat.is_some_and(|u| u >= lease.until_ms), "{beat:?}");
    let released = a
        .fail_attempt(
            &lease,
            "released: test",
            start - hour,
            &RetryPolicy::RELEASE,
        )
        .unwrap()
        .value;
    let FailOutcome::Retry {
        available_at_ms, ..
    } = released
    else {
        panic!("released, not {released:?}");
    };
    assert!(available_at_ms >= start, "{available_at_ms} < {start}");
    // An hour behind, the released message is claimable at once.
    let again = b.claim_next("late", start - hour, 30_000).unwrap().value;
    assert!(
        matches!(&again, ClaimOutcome::Claimed(l) if l.version == 2),
        "{again:?}"
    );
    let end = a.server_ms().unwrap();
    for row in events(&Db::Postgres(db.url.clone())) {
        assert!(
            (start - 60_000..=end).contains(&row.at_ms),
            "an event off the server's clock: {row:?} (server {start}..={end})"
        );
    }
}

/// The harm on purpose: `honest` holds PAY-001 under a 30 s lease; `fast`, its clock 60 s
/// ahead and its leases on that clock, takes the live lease over at once, and `honest`,
/// stopped, finds nothing to give back.
fn a_skewed_clock_takes_over_a_live_lease(db: &OsStr, fast_flags: &[&str], said: &str) {
    let lease = [
        "--messages",
        "1",
        "--lease-ms",
        "30000",
        "--process-ms",
        "25000",
        "--no-heartbeat",
    ];
    let mut honest = worker(db, "honest", 0, &lease);
    honest.line_with("CLAIMED PAY-001");
    let flags: Vec<&str> = lease.iter().chain(fast_flags).copied().collect();
    let mut fast = worker(db, "fast", 60_000, &flags);
    let first = fast.line_with("PAY-001");
    assert!(first.contains("RECLAIMED PAY-001"), "{first}");
    assert!(first.contains("(lease v2)"), "{first}");
    let (_, _, err) = signal(fast, libc::SIGTERM);
    assert!(err.contains(said), "{err}");
    let (_, out, _) = signal(honest, libc::SIGINT);
    assert!(
        out.contains("honest did not release PAY-001 (lease v1): its lease was taken over"),
        "{out}"
    );
}

#[test]
fn on_sqlite_a_worker_whose_clock_is_ahead_takes_over_a_live_lease() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("outbox.db");
    let said = "fast's clock runs 60.0 s ahead on purpose (--clock-skew-ms)";
    a_skewed_clock_takes_over_a_live_lease(path.as_os_str(), &[], said);
}

#[test]
fn with_local_clock_a_worker_whose_clock_is_ahead_takes_over_a_live_lease_on_postgres() {
    let Some(db) = pg_support::scratch("localclock") else {
        return;
    };
    let said = "with --local-clock its leases go by its own clock";
    a_skewed_clock_takes_over_a_live_lease(OsStr::new(&db.url), &["--local-clock"], said);
}

#[test]
fn a_clock_skew_beyond_a_day_is_refused_in_one_line_before_the_database_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("outbox.db");
    for bad in ["86400001", "-86400001", "1e3", "+5", "--5"] {
        let out = Command::new(env!("CARGO_BIN_EXE_leaselab"))
            .args(["worker", "--db"])
            .arg(&path)
            .args(["--name", "w"])
            .arg(format!("--clock-skew-ms={bad}"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert_eq!(
            err.trim_end(),
            format!(
                "leaselab: --clock-skew-ms: '{bad}' is not a whole number in -86400000-86400000 (see leaselab --help)"
            ),
            "{bad}"
        );
        assert!(!path.exists(), "{bad}");
    }
}

/// A worker that leaves waits for the lock to give its lease back, whatever stops come
/// while it waits: two Ctrl-Cs (or a dashboard's end, which comes as its pipe closing and
/// the kernel's hang-up) while another connection holds the SQLite file's write lock. It
/// cannot end before the lock is free (it has a release to write), and once free, it
/// writes it.
#[test]
fn a_second_stop_does_not_cancel_the_leaving() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("outbox.db");
    let mut w = worker(path.as_os_str(), "holder", 0, HOLDS_ITS_ONE_PAYMENT);
    w.line_with("CLAIMED PAY-001");
    // The write lock, held by another connection.
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let pid = w.pid();
    for _ in 0..2 {
        assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    }
    // For a second, it must still be there: waiting for the lock to write its release.
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(1) {
        let child = w.child.as_mut().unwrap();
        assert!(
            child.try_wait().unwrap().is_none(),
            "it ended while the lock was held: {:?}",
            w.lines()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    other.execute_batch("ROLLBACK").unwrap();
    let (code, out, err) = signal(w, 0);
    assert_eq!(code, Some(130), "{out}\n{err}");
    let db = Db::Sqlite(path);
    let released: Vec<_> = events(&db)
        .into_iter()
        .filter(|r| matches!(r.kind, LeaseEventKind::Retry | LeaseEventKind::Left))
        .map(|r| (r.kind, r.detail))
        .collect();
    assert_eq!(
        released,
        vec![
            (LeaseEventKind::Retry, Some("released: SIGINT".to_string())),
            (LeaseEventKind::Left, Some("SIGINT".to_string())),
        ],
        "{out}\n{err}"
    );
}
