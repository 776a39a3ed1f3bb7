//! The engine: a real SQLite outbox, worker threads that compete for it, and the scenario
//! clock they share. No terminal code lives here: the dashboard, `leaselab run` and the
//! tests all drive the same engine.

pub mod backend;
pub mod checker;
pub mod clock;
pub mod db_lock;
pub mod events;
pub mod events_table;
pub mod file_identity;
mod guest;
mod holding;
pub mod holdings;
pub mod lease;
pub mod lease_walk;
pub mod ledger;
pub mod leftovers;
pub mod outbox;
pub mod pg;
pub mod platform;
pub mod process_identity;
pub mod provider;
pub mod reconnect;
pub mod setup;
pub mod software;
pub mod statements;
mod stopping;
pub use stopping::{stop_waiting, wait_again};
pub mod stepper;
pub mod store;
pub mod student;
pub mod text;
pub mod worker;
pub mod worker_id;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};

use backend::{Db, Outbox};
use clock::{Clock, SCENARIO_START_MS};
use db_lock::DbLock;
use events::{Event, EventKind, ENGINE};
use outbox::{Fact, LeaseEventKind, Reading, RunSettings, Stamped};
use provider::Provider;
use setup::{Reliability, Timing};
use store::{DbOrigin, Durability, OutboxError, Store, StoreShared};
use worker::{Control, Settings, WorkerContext, WorkerHandle, WorkerState};
use worker_id::WorkerId;

/// The most workers an engine runs (Worker-A to Worker-Z).
pub const MAX_WORKERS: usize = 26;

/// How an engine is set up.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub workers: usize,
    pub messages: u64,
    pub lease_ms: i64,
    pub process_ms: i64,
    /// After an empty claim a worker waits this long (scenario time) before asking again.
    pub idle_ms: i64,
    pub leasing: bool,
    /// Keep the database here (a file or a PostgreSQL URL); None means a temporary SQLite
    /// file in a folder removed at the end.
    pub db: Option<Db>,
    /// SQLite's `synchronous` for every connection of the engine.
    pub durability: Durability,
    /// Heartbeats, retries and the dead letter.
    pub reliability: Reliability,
    /// The workers run this exercise's statements (`StudentStore`), on SQLite only; an
    /// exercise without a heartbeat runs with heartbeats off.
    pub exercise: Option<Arc<student::Exercise>>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            workers: 2,
            messages: 6,
            lease_ms: Timing::HEADLESS.lease_ms,
            process_ms: Timing::HEADLESS.process_ms,
            idle_ms: Timing::HEADLESS.idle_ms(),
            leasing: true,
            db: None,
            durability: Durability::Full,
            reliability: Reliability::default(),
            exercise: None,
        }
    }
}

pub struct Engine {
    pub config: EngineConfig,
    /// The database the workers open: `db_path` for SQLite, or a PostgreSQL URL.
    pub db: Db,
    pub db_path: PathBuf,
    pub origin: DbOrigin,
    /// The leaselab that held this database last and ended without releasing it, if any.
    pub recovered: Option<String>,
    pub clock: Arc<Clock>,
    pub provider: Arc<Provider>,
    pub settings: Arc<Settings>,
    pub shared: Arc<StoreShared>,
    store: holding::Holding,
    workers: Vec<WorkerHandle>,
    /// Each stalled worker's slot with the slot of the worker its supervisor started under
    /// its name.
    namesakes: Vec<(usize, usize)>,
    events_tx: Sender<Event>,
    events_rx: Receiver<Event>,
    /// A reader of the `LeaseEvents` table sends the events of this engine's own writes
    /// (seeding, an added payment): the engine does not send them a second time.
    table_events: bool,
    /// This process's claim on a kept database, released after the connections close.
    _lock: Option<DbLock>,
    /// Dropped last: removes the temporary database folder.
    _tmp: Option<tempfile::TempDir>,
}

impl Engine {
    /// Open (or create) the database, seed it, and start the workers. Paused workers act
    /// only when stepped.
    pub fn start(config: EngineConfig, paused: bool) -> Result<Engine, OutboxError> {
        if config.exercise.is_some() && config.db.as_ref().is_some_and(Db::is_postgres) {
            return Err(OutboxError::Exercise(worker::STUDENT_ON_SQLITE.to_string()));
        }
        let shared = Arc::new(StoreShared::new(config.durability));
        let Opened {
            db,
            db_path,
            store,
            origin,
            lock,
            tmp,
        } = open_database(config.db.as_ref(), shared.clone())?;
        let (events_tx, events_rx) = crossbeam_channel::unbounded();
        let mut engine = Engine {
            settings: Arc::new(Settings::new(
                config.leasing,
                config.lease_ms,
                config.process_ms,
                config.idle_ms.max(1),
            )),
            config,
            db,
            db_path,
            origin,
            recovered: lock.as_ref().and_then(|l| l.recovered.clone()),
            clock: Arc::new(Clock::frozen_at(SCENARIO_START_MS)),
            provider: Arc::new(Provider::new()),
            shared,
            store: holding::Holding::Outbox(store),
            workers: Vec::new(),
            namesakes: Vec::new(),
            events_tx,
            events_rx,
            table_events: false,
            _lock: lock,
            _tmp: tmp,
        };
        engine
            .settings
            .apply(&engine.config.reliability, engine.config.lease_ms);
        if engine
            .config
            .exercise
            .as_ref()
            .is_some_and(|e| e.heartbeat.is_none())
        {
            engine.settings.heartbeats.store(false, Ordering::SeqCst);
        }
        engine
            .provider
            .set_faults(engine.config.reliability.faults.clone());
        engine.seed()?;
        for slot in 0..engine.config.workers {
            let w = worker::spawn(engine.context(), slot, 1, paused);
            engine.workers.push(w);
        }
        Ok(engine)
    }

    fn seed(&mut self) -> Result<(), OutboxError> {
        let store = self.store.writing()?;
        store.empty()?;
        store.seed(&self.provider, self.config.messages, self.clock.now())?;
        if !self.table_events {
            self.emit(EventKind::Seeded {
                messages: self.config.messages,
            });
            self.record_settings()?;
        }
        Ok(())
    }

    /// Record a fact in the engine's own connection (what a dashboard did to a worker
    /// process); returns the write's stamp.
    pub fn record(&mut self, fact: &Fact) -> Result<u64, OutboxError> {
        Ok(self.store.writing()?.record(fact)?.seq)
    }

    /// The settings this engine's worker threads run with now.
    pub fn run_settings(&self) -> RunSettings {
        RunSettings {
            student: self.config.exercise.is_some(),
            ..self.settings.recorded()
        }
    }

    /// Record the settings the worker threads run with (at a seeding and at every change),
    /// so a replay's header shows what the run used. An engine whose workers are processes
    /// records none: each process records its own when it joins.
    pub fn record_settings(&mut self) -> Result<(), OutboxError> {
        if self.table_events {
            return Ok(());
        }
        let detail = self.run_settings().detail();
        let fact = Fact::of(LeaseEventKind::Settings, self.clock.now(), ENGINE, &detail);
        self.store.writing()?.record(&fact)?;
        Ok(())
    }

    /// Record a fact about worker `slot` (its name and the lease it holds now) and send its
    /// event, stamped by the write.
    fn record_worker_fact(
        &mut self,
        slot: usize,
        kind: LeaseEventKind,
        detail: &str,
        event: EventKind,
    ) {
        let Some(w) = self.workers.get(slot) else {
            return;
        };
        let status = w.status();
        let now = self.clock.now();
        let held = status
            .lease
            .as_ref()
            .map(|l| (l.id, l.key.as_str(), l.version, l.until_ms));
        let fact = Fact::of(kind, now, &status.name, detail).holding(held);
        // A fact the table could not take is still sent: the live screen shows it, and a
        // replay of this database says only what the table holds.
        let seq = self
            .store
            .writing()
            .and_then(|s| s.record(&fact))
            .map_or_else(|_| self.shared.next_seq(), |s| s.seq);
        let _ = self.events_tx.send(Event {
            seq,
            at_ms: now,
            slot: Some(slot),
            actor: status.name,
            kind: event,
            sql: None,
        });
    }

    /// Freeze one worker (a lesson's `pause`, the dashboard's `z`; `how` says which): it
    /// stops where it is, holds what it holds and does nothing until it is woken. Recorded
    /// once it has stopped, so the row names the lease it holds while frozen and a replay
    /// shows it frozen, not crashed. False, with nothing recorded, if it did not stop.
    pub fn freeze(&mut self, slot: usize, how: &str) -> bool {
        let stopped = self
            .workers
            .get(slot)
            .is_some_and(|w| w.is_alive() && w.freeze(STEP_TIMEOUT));
        if stopped {
            let event = EventKind::Froze { how: how.into() };
            self.record_worker_fact(slot, LeaseEventKind::Paused, how, event);
        }
        stopped
    }

    /// Record that a frozen worker wakes: it carries on with what it believed, once it is
    /// let run (or stepped).
    pub fn wake(&mut self, slot: usize, how: &str) {
        let event = EventKind::Woke { how: how.into() };
        self.record_worker_fact(slot, LeaseEventKind::Resumed, how, event);
    }

    fn context(&self) -> WorkerContext {
        WorkerContext {
            db: self.db.clone(),
            shared: self.shared.clone(),
            clock: self.clock.clone(),
            provider: self.provider.clone(),
            settings: self.settings.clone(),
            events: self.events_tx.clone(),
            exercise: self.config.exercise.clone(),
        }
    }

    /// From now on a reader of the `LeaseEvents` table brings the events of this engine's
    /// seedings and added payments: they are not sent here as well.
    pub fn events_from_table(&mut self) {
        self.table_events = true;
    }

    /// Emit an event on behalf of the engine itself.
    pub fn emit(&self, kind: EventKind) {
        let _ = self.events_tx.send(Event {
            seq: self.shared.next_seq(),
            at_ms: self.clock.now(),
            slot: None,
            actor: ENGINE.to_string(),
            kind,
            sql: None,
        });
    }

    pub fn events(&self) -> &Receiver<Event> {
        &self.events_rx
    }

    /// The outbox's rows as they stand, read through the engine's connection.
    pub fn store(&self) -> &dyn Reading {
        self.store.reading()
    }

    /// The database as a report or the header names it.
    pub fn db_shown(&self) -> String {
        self.db.shown()
    }

    pub fn db_path(&self) -> &Path {
        &self.db_path
    }

    /// True when the database lives in a temporary folder removed with the engine.
    pub fn is_temporary(&self) -> bool {
        self._tmp.is_some()
    }

    pub fn workers(&self) -> &[WorkerHandle] {
        &self.workers
    }

    pub fn worker(&self, slot: usize) -> Option<&WorkerHandle> {
        self.workers.get(slot)
    }

    /// Crash a worker: it stops at once, keeps whatever lease it holds, and its thread ends.
    pub fn crash(&mut self, slot: usize) {
        if let Some(w) = self.workers.get_mut(slot) {
            if w.is_alive() && w.send(Control::Crash) {
                w.join();
            }
        }
    }

    /// Replace a worker with a new incarnation (a new identity). A live one is crashed first.
    pub fn restart(&mut self, slot: usize, paused: bool) {
        if slot >= self.workers.len() {
            return;
        }
        self.crash(slot);
        let old = &self.workers[slot];
        let previous = old.name.clone();
        // The next start of whose name it carries (a namesake's restart too).
        let id = WorkerId::new(old.id.slot, old.id.incarnation + 1);
        let fresh = worker::spawn_as(self.context(), slot, id, paused);
        self.workers[slot] = fresh;
        self.record_worker_fact(
            slot,
            LeaseEventKind::Restarted,
            &previous.clone(),
            EventKind::Restarted { previous },
        );
    }

    /// A supervisor starts a new worker under the very name of the one in `slot`, which has
    /// stalled (frozen, holding what it holds): the new one goes in a slot of its own after
    /// the others, and its claims and finalizes carry the same LockedBy. Returns that slot;
    /// None when `slot` has no worker, or has already stalled or stands in for one that did.
    pub fn start_namesake(&mut self, slot: usize, paused: bool) -> Option<usize> {
        let stalled = self.workers.get(slot)?;
        if self.namesake(slot).is_some() {
            return None;
        }
        let new = self.workers.len();
        let w = worker::spawn_as(self.context(), new, stalled.id, paused);
        // Recorded as the freeze it is: a replay shows the stalled worker frozen.
        let how = format!(
            "stall: its supervisor starts a new {} under the same name",
            w.name
        );
        self.record_worker_fact(
            slot,
            LeaseEventKind::Paused,
            &how,
            EventKind::Froze { how: how.clone() },
        );
        self.workers.push(w);
        self.namesakes.push((slot, new));
        Some(new)
    }

    /// Whether the worker in `slot` stalled, or stands in for one that did.
    pub fn namesake(&self, slot: usize) -> Option<Namesake> {
        self.namesakes.iter().find_map(|(stalled, new)| {
            if *stalled == slot {
                Some(Namesake::Stalled)
            } else if *new == slot {
                Some(Namesake::New)
            } else {
                None
            }
        })
    }

    /// Grow or shrink the crew while it runs: new slots start as first incarnations (paused
    /// or not), the last ones stop between actions. A lease a stopped worker held stays
    /// until it runs out, as after a crash. Keeps 1 to [`MAX_WORKERS`].
    pub fn set_workers(&mut self, n: usize, paused: bool) -> usize {
        let n = n.clamp(1, MAX_WORKERS);
        while self.workers.len() < n {
            let w = worker::spawn(self.context(), self.workers.len(), 1, paused);
            self.emit(EventKind::Note {
                text: format!("{} joined: {} workers", w.name, self.workers.len() + 1),
            });
            self.workers.push(w);
        }
        while self.workers.len() > n {
            let mut w = self.workers.pop().expect("more than n workers");
            let gone = self.workers.len();
            self.namesakes.retain(|(s, new)| *s < gone && *new < gone);
            w.send(Control::Shutdown);
            w.join();
            self.emit(EventKind::Note {
                text: format!("{} stopped: {} workers", w.name, self.workers.len()),
            });
        }
        self.config.workers = n;
        n
    }

    /// Messages each worker claims per transaction from its next claim on (1 to
    /// [`worker::MAX_BATCH`]).
    pub fn set_batch(&mut self, k: usize) {
        let k = k.clamp(1, worker::MAX_BATCH);
        self.settings.batch.store(k as i64, Ordering::SeqCst);
        let _ = self.record_settings();
        self.emit(EventKind::Note {
            text: if k == 1 {
                "batch claims off: one message per claim transaction".to_string()
            } else {
                format!("batch claims: up to {k} messages per claim transaction")
            },
        });
    }

    pub fn pause_all(&self) {
        for w in &self.workers {
            w.send(Control::Pause);
        }
    }

    pub fn resume_all(&self) {
        for w in &self.workers {
            w.send(Control::Resume);
        }
    }

    /// Jump the scenario clock forward.
    pub fn advance(&self, ms: i64) {
        let (from_ms, to_ms) = self.clock.advance(ms);
        self.emit(EventKind::ClockMoved { from_ms, to_ms });
    }

    /// Switch leasing; workers change at their next cycle.
    pub fn set_leasing(&mut self, on: bool) {
        self.settings.leasing.store(on, Ordering::SeqCst);
        let _ = self.record_settings();
        self.emit(EventKind::LeasingChanged { on });
    }

    /// Switch heartbeats for every worker; a worker processing a message beats from now on.
    pub fn set_heartbeats(&mut self, on: bool) {
        self.settings.heartbeats.store(on, Ordering::SeqCst);
        let _ = self.record_settings();
        self.emit(EventKind::HeartbeatsChanged { on });
    }

    /// Ask a worker to extend the lease it holds now (if heartbeats are on); its events are
    /// out when this returns. False if it is gone.
    pub fn heartbeat(&self, slot: usize) -> bool {
        self.workers.get(slot).is_some_and(|w| {
            let (tx, rx) = crossbeam_channel::bounded(1);
            w.is_alive()
                && w.send(Control::Heartbeat(Some(tx)))
                && rx.recv_timeout(STEP_TIMEOUT).is_ok()
        })
    }

    /// Put dead letters back to Pending with fresh attempts: the one of `key`, or all.
    /// Returns how many were redriven.
    pub fn redrive(&mut self, key: Option<&str>) -> Result<u64, OutboxError> {
        let now = self.clock.now();
        let Stamped { value: count, seq } = self.store.writing()?.redrive(key, now)?;
        if self.table_events {
            // A reader of the events table brings one event per message redriven.
            return Ok(count);
        }
        let _ = self.events_tx.send(Event {
            seq,
            at_ms: now,
            slot: None,
            actor: ENGINE.to_string(),
            kind: EventKind::Redriven {
                key: key.map(str::to_string),
                count,
            },
            sql: None,
        });
        Ok(count)
    }

    /// A new payment and its outbox row, in one transaction.
    pub fn add_payment(&mut self) -> Result<(), OutboxError> {
        let store = self.store.writing()?;
        let n = store.next_payment_number()?;
        let key = store::payment_key(n);
        let msg =
            store.add_payment(&self.provider, &key, store::amount_for(n), self.clock.now())?;
        if !self.table_events {
            self.emit(EventKind::MessageAdded {
                id: msg.id,
                key: msg.key,
            });
        }
        Ok(())
    }

    /// Stop the workers, empty and reseed the outbox, rewind the clock, start fresh workers.
    pub fn reset(&mut self, messages: u64, paused: bool) -> Result<(), OutboxError> {
        self.shutdown_workers();
        self.provider.clear();
        self.clock.set(SCENARIO_START_MS);
        self.config.messages = messages;
        self.seed()?;
        self.namesakes.clear();
        self.workers = (0..self.config.workers)
            .map(|slot| worker::spawn(self.context(), slot, 1, paused))
            .collect();
        Ok(())
    }

    /// Stop every worker thread and wait for it.
    pub fn shutdown_workers(&mut self) {
        for w in &self.workers {
            w.send(Control::Shutdown);
        }
        for w in &mut self.workers {
            w.join();
        }
    }

    /// Step one worker while it is paused: exactly one action. False if it is gone.
    pub fn step(&self, slot: usize) -> bool {
        self.workers
            .get(slot)
            .is_some_and(|w| w.is_alive() && w.step(STEP_TIMEOUT))
    }

    /// As [`Engine::step`], for a lesson's script: the action takes no scenario time, since
    /// a lesson moves the clock only when a step says so.
    pub fn step_scripted(&self, slot: usize) -> bool {
        self.workers
            .get(slot)
            .is_some_and(|w| w.is_alive() && w.step_scripted(STEP_TIMEOUT))
    }

    /// Ask a paused worker to claim one particular message.
    pub fn claim_id(&self, slot: usize, id: i64) -> bool {
        self.workers
            .get(slot)
            .is_some_and(|w| w.is_alive() && w.claim_id(id, STEP_TIMEOUT))
    }

    pub fn alive_slots(&self) -> Vec<usize> {
        self.workers
            .iter()
            .filter(|w| w.is_alive())
            .map(|w| w.slot)
            .collect()
    }

    pub fn worker_states(&self) -> Vec<WorkerState> {
        self.workers.iter().map(|w| w.status().state).collect()
    }
}

/// An engine's database, opened, checked and (for a kept file) locked.
struct Opened {
    db: Db,
    db_path: PathBuf,
    store: Box<dyn Outbox>,
    origin: DbOrigin,
    lock: Option<DbLock>,
    tmp: Option<tempfile::TempDir>,
}

/// Open the database `db` names, or a new temporary SQLite file when it names none.
fn open_database(db: Option<&Db>, shared: Arc<StoreShared>) -> Result<Opened, OutboxError> {
    let path = match db {
        Some(db @ Db::Postgres(url)) => {
            let (store, origin) = pg::PgStore::create_held(url, shared)?;
            return Ok(Opened {
                db: db.clone(),
                db_path: PathBuf::from(db.shown()),
                store: Box::new(store),
                origin,
                lock: None,
                tmp: None,
            });
        }
        Some(Db::Sqlite(p)) => Some(p.clone()),
        None => None,
    };
    let (tmp, db_path) = match path {
        Some(p) => (None, p),
        None => {
            // Folders of killed leaselabs go first; ours carries our pid for the next one.
            leftovers::sweep(&std::env::temp_dir(), "leaselab-");
            let dir = tempfile::Builder::new()
                .prefix(&leftovers::prefix("leaselab-"))
                .tempdir()
                .map_err(|e| OutboxError::Io(format!("cannot create a temporary folder: {e}")))?;
            let path = dir.path().join("outbox.db");
            (Some(dir), path)
        }
    };
    // A kept database belongs to one leaselab at a time; a temporary one is ours alone.
    let lock = match tmp {
        None => Some(claim_database(&db_path)?),
        Some(_) => None,
    };
    let (store, origin) = Store::create(&db_path, shared)?;
    Ok(Opened {
        db: Db::Sqlite(db_path.clone()),
        db_path,
        store: Box::new(store),
        origin,
        lock,
        tmp,
    })
}

/// Check what is at `db` without writing, then lock it. Something that is not ours is
/// refused untouched (no lock file is made beside it), unless another leaselab holds it,
/// which is the better answer while that one is still making the file.
fn claim_database(db: &Path) -> Result<DbLock, OutboxError> {
    if let Err(e) = store::inspect(db) {
        return Err(match DbLock::holder(db) {
            Some(holder) => db_lock::in_use(db, &holder),
            None => e,
        });
    }
    DbLock::acquire(db)
}

/// One of two workers of one name: the one that stalled, or the one its supervisor started
/// under that name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Namesake {
    Stalled,
    New,
}

impl Namesake {
    /// How a lesson and the dashboard tell the two apart: `Worker-A (stalled)`.
    pub fn word(self) -> &'static str {
        match self {
            Namesake::Stalled => "stalled",
            Namesake::New => "new",
        }
    }
}

/// A single action is one short transaction; this only guards against a wedged worker.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(30);

impl Drop for Engine {
    fn drop(&mut self) {
        student::quit(&self.shared.student_quit);
        self.shutdown_workers();
    }
}
