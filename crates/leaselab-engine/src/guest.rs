//! An engine that shares its database with workers it did not start (worker processes, on
//! this machine or others): it runs on the wall clock (on PostgreSQL set to the server's,
//! whose clock every lease there goes by), and learns what the workers did from the events
//! table. An engine over a recorded
//! run is one too, with no connection at all.

use std::path::PathBuf;
use std::sync::Arc;

use crossbeam_channel::Sender;

use super::backend::Db;
use super::clock::{wall_now_ms, Clock};
use super::events::Event;
use super::holding::Holding;
use super::outbox::OutboxError;
use super::outbox::{DbOrigin, Durability, LeaseClock, Reading, StoreShared};
use super::provider::Provider;
use super::worker::Settings;
use super::{Engine, EngineConfig};

/// What an engine without workers is given: its connection and what it shares.
struct Shared {
    store: Holding,
    origin: DbOrigin,
    clock: Arc<Clock>,
    provider: Arc<Provider>,
    shared: Arc<StoreShared>,
}

impl Engine {
    /// Join the database `db` as a guest: no lock (the workers and other watchers share
    /// it), no worker threads, never emptied. A missing (or, on PostgreSQL, empty) database
    /// is created with `config.messages` payments.
    pub fn guest(db: &Db, config: EngineConfig) -> Result<Engine, OutboxError> {
        // On PostgreSQL the leases go by the server's clock, as the worker processes' do.
        let shared = Arc::new(StoreShared::new(Durability::Full).on(LeaseClock::Server));
        let clock = Arc::new(Clock::wall());
        let provider = Arc::new(Provider::new());
        let (store, origin) = db.join(shared.clone(), &provider, config.messages, clock.now())?;
        // Its countdowns are the server's too: its clock starts from the server's time.
        if let Ok(Some(server_ms)) = store.server_clock_ms() {
            clock.set(server_ms);
        }
        Ok(Engine::without_workers(
            db.clone(),
            config,
            Shared {
                store: Holding::Outbox(store),
                origin,
                clock,
                provider,
                shared,
            },
        ))
    }

    /// An engine over a recorded run: no connection, no worker, a paused clock the replay
    /// sets; `table` answers with the rebuilt table, and every write is refused.
    pub fn over_recording(db: Db, config: EngineConfig, table: Box<dyn Reading + Send>) -> Engine {
        let clock = Arc::new(Clock::frozen_at(0));
        clock.pause();
        let parts = Shared {
            store: Holding::Reader(table),
            origin: DbOrigin::Reused,
            clock,
            provider: Arc::new(Provider::new()),
            shared: Arc::new(StoreShared::default()),
        };
        Engine::without_workers(db, config, parts)
    }

    /// An engine of no worker threads over `db`, whose other workers' events come from its
    /// table: whatever it writes, a reader of the table brings back.
    fn without_workers(db: Db, config: EngineConfig, parts: Shared) -> Engine {
        let (events_tx, events_rx) = crossbeam_channel::unbounded();
        Engine {
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
            db_path: match &db {
                Db::Sqlite(path) => path.clone(),
                Db::Postgres(_) => PathBuf::from(db.shown()),
            },
            db,
            origin: parts.origin,
            recovered: None,
            clock: parts.clock,
            provider: parts.provider,
            shared: parts.shared,
            store: parts.store,
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
