//! The watching dashboard's state, driven without a terminal: a worker process killed with
//! SIGKILL while it holds a lease shows as `left` (its process has ended) holding it, and its message is taken over once the
//! lease runs out. Every wait polls the app's own stream with a deadline.

mod support;

use support::watcher;

use leaselab::engine::outbox::prelude::*;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use leaselab::engine::clock::wall_now_ms;
use leaselab::engine::outbox::{checked_detail, Fact, LeaseEventKind};
use leaselab::engine::provider::Provider;
use leaselab::engine::store::{ClaimOutcome, OutboxStatus, Store, StoreShared};
use leaselab::engine::worker::WorkerState;
use leaselab::ui::app::{App, ExternalMode, WorkerView};
use leaselab::ui::{DashboardOptions, Theme};

const DEADLINE: Duration = Duration::from_secs(90);

fn worker(db: &Path, name: &str, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_leaselab"))
        .args(["worker", "--db"])
        .arg(db)
        .args(["--name", name])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start a worker")
}

/// Fold what arrived and take a frame until `view` of the worker `name` satisfies `done`.
fn wait_for_worker(app: &mut App, name: &str, what: &str, done: impl Fn(&WorkerView) -> bool) {
    let start = Instant::now();
    loop {
        app.absorb_events();
        app.refresh(20, 10);
        let found = app
            .snapshot()
            .workers
            .iter()
            .find(|w| w.status.name == name);
        if found.is_some_and(&done) {
            return;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "gave up waiting for {name} to be {what}: {:?}",
            found
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_killed_worker_shows_holding_its_lease_until_another_takes_it_over() {
    // A slow machine may let the worker finish before the kill lands: then start over.
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("class.db");
        let slow = [
            "--messages",
            "1",
            "--lease-ms",
            "2000",
            "--process-ms",
            "1900",
        ];
        let mut doomed = worker(&db, "doomed", &slow);
        let opts = DashboardOptions {
            db: Some(db.clone()),
            messages: Some(1),
            watch: true,
            ..DashboardOptions::default()
        };
        // Whichever of the two comes first creates the database, with the same one payment.
        let mut app = App::external(ExternalMode::Watch, opts, Theme::plain()).unwrap();
        wait_for_worker(&mut app, "doomed", "holding a lease", |w| {
            w.status.lease.is_some()
        });
        doomed.kill().unwrap();
        doomed.wait().unwrap();
        let row = Store::open_read_only(&db)
            .unwrap()
            .messages(0, 1)
            .unwrap()
            .remove(0);
        if row.status != OutboxStatus::Processing {
            continue;
        }
        wait_for_worker(
            &mut app,
            "doomed",
            // Killed from outside, nothing recorded its end; but its process, which its
            // Joined row names, has ended on this machine: it left, holding its lease.
            "shown left",
            |w| w.status.state == WorkerState::Left && w.status.lease.is_some(),
        );
        let mut rescuer = worker(
            &db,
            "rescuer",
            &["--lease-ms", "2000", "--process-ms", "10"],
        );
        wait_for_worker(&mut app, "doomed", "taken over", |w| {
            w.taken_by.as_deref() == Some("rescuer")
        });
        wait_for_worker(&mut app, "rescuer", "done", |w| w.done == 1);
        let start = Instant::now();
        while app.snapshot().history.is_none() {
            assert!(start.elapsed() < DEADLINE, "no history verdict");
            app.absorb_events();
            app.refresh(20, 10);
            std::thread::sleep(Duration::from_millis(20));
        }
        let history = app.snapshot().history.clone().unwrap();
        assert!(history.passed(), "{history:?}");
        assert_eq!(app.ledger.reclaims, 1);
        unsafe { libc::kill(rescuer.id() as libc::pid_t, libc::SIGTERM) };
        rescuer.wait().unwrap();
        return;
    }
    panic!("the worker finished before the kill five times in a row");
}

#[test]
fn the_verdict_waits_for_the_events_of_rows_already_processed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("class.db");
    let mut app = watcher(&db, 3);
    app.absorb_events();
    app.refresh(20, 10);
    // Another process drains the outbox in one go, recording each provider call as a
    // worker does; its events reach the app only when the reader next tails the table,
    // while the rows are read at once.
    let provider = Provider::new();
    let mut store = Store::open(&db, Arc::new(StoreShared::default())).unwrap();
    let now = wall_now_ms();
    for _ in 0..3 {
        let ClaimOutcome::Claimed(lease) = store.claim_next("outsider", now, 60_000).unwrap().value
        else {
            panic!("nothing to claim");
        };
        let check = provider.check_status(&lease.key);
        let call = Fact {
            id: Some(lease.id),
            key: Some(lease.key.clone()),
            version: Some(lease.version),
            ..Fact::of(
                LeaseEventKind::Checked,
                now,
                "outsider",
                &checked_detail(check.status, true),
            )
        };
        store.record(&call).unwrap();
        store.finalize(&lease, &check, now).unwrap();
    }
    let start = Instant::now();
    let first = loop {
        app.absorb_events();
        app.refresh(20, 10);
        if let Some(h) = app.snapshot().history.clone() {
            break h;
        }
        assert!(start.elapsed() < DEADLINE, "no verdict");
        std::thread::sleep(Duration::from_millis(5));
    };
    // The first verdict is judged on the events of every processed row: nothing lost.
    assert!(first.passed(), "{first:?}");
    assert_eq!(first.processed, 3);
}

/// A worker that wakes after its lease ran out and was taken over finds it lost: the
/// watcher shows the loss from the events table, counts it, ends the sleeper's lease bar at
/// its expiry (not at the takeover or now), and shows crashes it cannot know as `-`.
#[test]
fn a_watcher_sees_a_lost_lease_and_draws_no_lease_past_its_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("class.db");
    let mut app = watcher(&db, 1);
    let mut store = Store::open(&db, Arc::new(StoreShared::default())).unwrap();
    let t0 = wall_now_ms() - 10_000;
    let ClaimOutcome::Claimed(sleepy) = store.claim_next("sleepy", t0, 1_000).unwrap().value else {
        panic!("nothing to claim");
    };
    let ClaimOutcome::Claimed(_) = store.claim_next("waker", t0 + 2_000, 60_000).unwrap().value
    else {
        panic!("the expired lease was not taken over");
    };
    // sleepy wakes from its SIGSTOP and beats: no row changes, a LeaseLost row says so.
    assert_eq!(
        store.heartbeat(&sleepy, t0 + 3_000, 1_000).unwrap().value,
        None
    );
    let start = Instant::now();
    let text = loop {
        app.absorb_events();
        let lines = frame_text(&mut app);
        if app.ledger.leases_lost == 1 && lines.contains("LEASE LOST PAY-001") {
            break lines;
        }
        assert!(start.elapsed() < DEADLINE, "no lost lease seen:\n{lines}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        text.contains("LEASE LOST PAY-001: sleepy woke after its lease ran out"),
        "{text}"
    );
    // The sleeper's lease bar ends at its expiry, and so is not drawn beside the waker's.
    let lane = app
        .timeline
        .lanes
        .iter()
        .find(|l| l.segments.iter().any(|s| s.from_ms == t0))
        .expect("sleepy's lane");
    let bar = lane.segments.iter().find(|s| s.from_ms == t0).unwrap();
    assert_eq!(bar.to_ms, Some(t0 + 1_000), "{bar:?}");
    // A watcher cannot see crashes, empty or blocked claims: `-`, never a false 0.
    assert!(text.contains("blocked -"), "{text}");
}

fn frame_text(app: &mut App) -> String {
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 40)).unwrap();
    leaselab::ui::draw(&mut t, app).unwrap();
    let buf = t.backend().buffer();
    (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}
