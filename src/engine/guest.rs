//! An engine that shares its database with workers it did not start (worker processes, on
//! this machine or others): it runs on the wall clock, the one time separate processes
//! share, and learns what the workers did from the events table.

use std::path::PathBuf;
use std::sync::Arc;

use crossbeam_channel::Sender;

use super::backend::Db;
use super::clock::{wall_now_ms, Clock};
use super::events::Event;
use super::outbox::OutboxError;
use super::outbox::{Durability, StoreShared};
use super::provider::Provider;
use super::worker::Settings;
use super::{Engine, EngineConfig};

impl Engine {
    /// Join the database `db` as a guest: no lock (the workers and other watchers share
    /// it), no worker threads, never emptied. A missing (or, on PostgreSQL, empty) database
    /// is created with `config.messages` payments.
    pub fn guest(db: &Db, config: EngineConfig) -> Result<Engine, OutboxError> {
        let shared = Arc::new(StoreShared::new(Durability::Full));
        let clock = Arc::new(Clock::wall());
        let provider = Arc::new(Provider::new());
        let (store, origin) = db.join(shared.clone(), &provider, config.messages, clock.now())?;
        let db_path = match db {
            Db::Sqlite(path) => path.clone(),
            Db::Postgres(_) => PathBuf::from(db.shown()),
        };
        let (events_tx, events_rx) = crossbeam_channel::unbounded();
        Ok(Engine {
            settings: Arc::new(Settings::new(
                config.leasing,
                config.lease_ms,
                config.process_ms,
                config.idle_ms.max(1),
            )),
            config: EngineConfig {
                workers: 0,
                db: Some(db.clone()),
                ..config
            },
            db: db.clone(),
            db_path,
            origin,
            recovered: None,
            clock,
            provider,
            shared,
            store,
            workers: Vec::new(),
            namesakes: Vec::new(),
            events_tx,
            events_rx,
            // Whatever a guest writes, its tail of the events table reads back.
            table_events: true,
            _lock: None,
            _tmp: None,
        })
    }

    /// An engine over a recorded run: no connection, no worker, a paused clock the replay
    /// sets; `store` answers with the rebuilt table and refuses every write.
    pub fn over_recording(
        db: Db,
        config: EngineConfig,
        store: Box<dyn super::backend::Outbox>,
    ) -> Engine {
        let (events_tx, events_rx) = crossbeam_channel::unbounded();
        let clock = Arc::new(Clock::frozen_at(0));
        clock.pause();
        Engine {
            settings: Arc::new(Settings::new(
                config.leasing,
                config.lease_ms,
                config.process_ms,
                config.idle_ms.max(1),
            )),
            config,
            db_path: match &db {
                Db::Sqlite(path) => path.clone(),
                Db::Postgres(_) => PathBuf::from(db.shown()),
            },
            db,
            origin: super::outbox::DbOrigin::Reused,
            recovered: None,
            clock,
            provider: Arc::new(Provider::new()),
            shared: Arc::new(StoreShared::default()),
            store,
            workers: Vec::new(),
            namesakes: Vec::new(),
            events_tx,
            events_rx,
            table_events: true,
            _lock: None,
            _tmp: None,
        }
    }

    /// Move this engine onto the wall clock, running, so that its workers and worker
    /// processes agree on when a lease runs out.
    pub fn follow_wall_clock(&self) {
        self.clock.set_speed(1.0);
        self.clock.set(wall_now_ms());
        self.clock.resume();
    }

    /// Move onto the wall clock and seed the outbox again there, so that its rows and
    /// events carry the times the worker processes will use.
    pub fn reseed_on_wall_clock(&mut self) -> Result<(), OutboxError> {
        self.follow_wall_clock();
        self.seed()
    }

    /// Where events from outside the engine (the events table's reader) join its stream.
    pub fn events_sender(&self) -> Sender<Event> {
        self.events_tx.clone()
    }
}
