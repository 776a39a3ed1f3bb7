//! The thread behind a worker: its handle, its control commands' channel, and how it is
//! started and joined; a panic inside it is reported as a crash.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};

use crate::events::{Event, EventKind};
use crate::outbox::{Fact, LeaseEventKind, CRASH_PANIC};
use crate::provider::WorkerThread;
use crate::worker_id::WorkerId;

use super::*;

pub struct WorkerHandle {
    /// Where it sits among the engine's workers, which its events carry.
    pub slot: usize,
    pub incarnation: u32,
    /// Whose name it carries: its own slot's, or, for a worker started under a stalled
    /// one's name, that one's.
    pub id: WorkerId,
    pub name: String,
    pub status: Arc<Mutex<WorkerStatus>>,
    control: Sender<Control>,
    join: Option<JoinHandle<()>>,
}

impl WorkerHandle {
    pub fn send(&self, c: Control) -> bool {
        self.control.send(c).is_ok()
    }

    pub fn status(&self) -> WorkerStatus {
        self.status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn is_alive(&self) -> bool {
        !matches!(
            self.status().state,
            WorkerState::Crashed | WorkerState::Stopped
        )
    }

    /// Ask for one action and wait until its events are out. False if the worker is gone.
    pub fn step(&self, timeout: Duration) -> bool {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.send(Control::Step(Some(tx))) && rx.recv_timeout(timeout).is_ok()
    }

    /// As [`WorkerHandle::step`], for a lesson's script: the action takes no scenario time.
    pub fn step_scripted(&self, timeout: Duration) -> bool {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.send(Control::ScriptedStep(Some(tx))) && rx.recv_timeout(timeout).is_ok()
    }

    /// Pause it, and wait until it has: false if it is gone, or did not answer in time.
    pub fn freeze(&self, timeout: Duration) -> bool {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.send(Control::Freeze(tx)) && rx.recv_timeout(timeout).is_ok()
    }

    /// Ask for a claim of one message and wait until its events are out.
    pub fn claim_id(&self, id: i64, timeout: Duration) -> bool {
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.send(Control::ClaimId(id, Some(tx))) && rx.recv_timeout(timeout).is_ok()
    }

    /// Wait for the thread to end (after a crash or shutdown was sent).
    pub fn join(&mut self) {
        if let Some(j) = self.join.take() {
            let _ = j.join();
        }
    }
}

impl Drop for WorkerHandle {
    fn drop(&mut self) {
        if self.join.is_some() {
            let _ = self.control.send(Control::Shutdown);
            self.join();
        }
    }
}

/// Start a worker thread. A paused worker acts only on `Step`/`ClaimId` until resumed.
pub fn spawn(ctx: WorkerContext, slot: usize, incarnation: u32, paused: bool) -> WorkerHandle {
    spawn_as(ctx, slot, WorkerId::new(slot, incarnation), paused)
}

/// Start a worker thread in `slot` under the name of `id`, which may be another slot's: a
/// worker a supervisor starts under a stalled one's name.
pub fn spawn_as(ctx: WorkerContext, slot: usize, id: WorkerId, paused: bool) -> WorkerHandle {
    start(ctx, slot, id, id.to_string(), paused)
}

/// Start a worker thread under a name of its own (a worker process's `--name`).
pub fn spawn_named(
    ctx: WorkerContext,
    slot: usize,
    incarnation: u32,
    name: String,
    paused: bool,
) -> WorkerHandle {
    start(ctx, slot, WorkerId::new(slot, incarnation), name, paused)
}

fn start(
    ctx: WorkerContext,
    slot: usize,
    id: WorkerId,
    name: String,
    paused: bool,
) -> WorkerHandle {
    let (control, rx) = crossbeam_channel::unbounded();
    let status = Arc::new(Mutex::new(WorkerStatus {
        id,
        name: name.clone(),
        state: if paused {
            WorkerState::Paused
        } else {
            WorkerState::Idle
        },
        paused,
        next: NextAction::Claim,
        ..WorkerStatus::default()
    }));
    let thread_status = status.clone();
    let thread_name = name.clone();
    let join = std::thread::Builder::new()
        .name(name.clone())
        .spawn(move || run_thread(ctx, slot, thread_name, paused, rx, thread_status))
        .expect("spawn worker thread");
    WorkerHandle {
        slot,
        incarnation: id.incarnation,
        id,
        name,
        status,
        control,
        join: Some(join),
    }
}

/// A `Crashed` row's `Detail` for a panic.
fn crash_detail(message: &str) -> String {
    format!("{CRASH_PANIC}{message}")
}

fn run_thread(
    ctx: WorkerContext,
    slot: usize,
    name: String,
    paused: bool,
    rx: Receiver<Control>,
    status: Arc<Mutex<WorkerStatus>>,
) {
    let events = ctx.events.clone();
    let db = ctx.db.clone();
    let shared = ctx.shared.clone();
    let clock = ctx.clock.clone();
    let st = status.clone();
    let nm = name.clone();
    let result = std::panic::catch_unwind(AssertUnwindSafe(move || {
        let _worker = WorkerThread::enter();
        let store = match open_store(&ctx) {
            Ok(s) => s,
            Err(e) => return Some(WorkerError::Open(e)),
        };
        Worker::new(ctx, slot, nm, store, st, paused).run(&rx)
    }));
    let emit = |kind| {
        let _ = events.send(Event {
            seq: shared.next_seq(),
            at_ms: clock.now(),
            slot: Some(slot),
            actor: name.clone(),
            kind,
            sql: None,
        });
    };
    let mut s = status.lock().unwrap_or_else(|p| p.into_inner());
    match result {
        Ok(None) => {}
        Ok(Some(error)) => {
            s.state = WorkerState::Stopped;
            s.stopped_why = Some(error.to_string());
            emit(EventKind::Failed {
                error: error.to_string(),
            });
        }
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".to_string());
            s.state = WorkerState::Crashed;
            s.next = NextAction::Nothing;
            let holding = s.lease.as_ref().map(|l| (l.id, l.key.clone(), l.until_ms));
            // Its connection went with the panic: a fresh one records the crash.
            let now = clock.now();
            let fact = Fact::of(LeaseEventKind::Crashed, now, &name, &crash_detail(&msg)).holding(
                s.lease
                    .as_ref()
                    .map(|l| (l.id, l.key.as_str(), l.version, l.until_ms)),
            );
            let seq = db
                .open(shared.clone())
                .and_then(|mut store| store.record(&fact))
                .map_or_else(|_| shared.next_seq(), |s| s.seq);
            let _ = events.send(Event {
                seq,
                at_ms: now,
                slot: Some(slot),
                actor: name.clone(),
                kind: EventKind::Crashed {
                    holding,
                    panic: Some(msg),
                    how: None,
                },
                sql: None,
            });
        }
    }
}

/// The worker's own connection: the database's store, or for an exercise a `StudentStore`
/// around its SQLite store, so that its claim, finalize and heartbeat are the student's,
/// a claim and a finalize a step an action, as `explore --sql` steps them.
pub(in crate::worker) fn open_store(
    ctx: &WorkerContext,
) -> crate::outbox::Result<Box<dyn crate::backend::Outbox>> {
    match (&ctx.exercise, &ctx.db) {
        (None, db) => db.open(ctx.shared.clone()),
        (Some(exercise), crate::backend::Db::Sqlite(path)) => {
            let store = crate::store::Store::open(path, ctx.shared.clone())?;
            Ok(Box::new(
                crate::student::StudentStore::new(store, exercise.clone()).stepwise(),
            ))
        }
        (Some(_), crate::backend::Db::Postgres(_)) => Err(crate::outbox::OutboxError::Exercise(
            STUDENT_ON_SQLITE.to_string(),
        )),
    }
}

/// Why an exercise is not run on PostgreSQL.
pub const STUDENT_ON_SQLITE: &str =
    "a student's SQL runs on SQLite only (its sandbox is SQLite's authorizer); drop --db postgres://…";
