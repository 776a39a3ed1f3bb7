//! A worker: one OS thread with its own SQLite connection, as a separate application
//! instance would be. It claims, calls the provider, finalizes, and tells the world what
//! it did over the event channel. It obeys control commands between actions.
//!
//! `settings.rs` holds what every worker reads live, `status.rs` what a worker shows,
//! `handle.rs` its thread and how it is started and joined, `machine.rs` what it does;
//! here, what it is given ([`WorkerContext`]) and told ([`Control`]).

use std::sync::Arc;

use crossbeam_channel::Sender;

use super::backend::Db;
use super::clock::Clock;
use super::events::Event;
use super::outbox::StoreShared;
use super::provider::Provider;
use super::student::Exercise;

mod error;
mod handle;
mod machine;
mod settings;
mod status;

pub use error::WorkerError;
pub use handle::*;
pub(crate) use machine::{Pace, Worker};
pub use settings::*;
pub use status::*;

/// Everything a worker thread shares with the engine.
#[derive(Clone)]
pub struct WorkerContext {
    pub db: Db,
    pub shared: Arc<StoreShared>,
    pub clock: Arc<Clock>,
    pub provider: Arc<Provider>,
    pub settings: Arc<Settings>,
    pub events: Sender<Event>,
    /// The exercise whose statements the workers run in place of the lab's own, if any.
    pub exercise: Option<Arc<Exercise>>,
}

/// A command to a worker. Replies are sent once the action's events are on the channel.
#[derive(Debug)]
pub enum Control {
    Pause,
    /// Pause, and reply once paused: its status then says what it holds while it waits.
    Freeze(Sender<()>),
    Resume,
    /// While paused: perform exactly one action (a claim, a provider call or a finalize).
    Step(Option<Sender<()>>),
    /// As `Step`, for a lesson's script: the action takes no scenario time (a lesson moves
    /// the clock only by its `advance` and `work` actions).
    ScriptedStep(Option<Sender<()>>),
    /// While paused and holding nothing: try to claim this message.
    ClaimId(i64, Option<Sender<()>>),
    /// If it holds a lease and heartbeats are on: extend the lease now.
    Heartbeat(Option<Sender<()>>),
    /// Stop at once without finalizing; any lease held stays in the database.
    Crash,
    /// Panic inside the worker thread (to prove a panic is contained).
    Panic,
    /// Call the gateway's payment creation from the worker (a fault: workers must never
    /// create payments, and the report's check has to catch it).
    CreatePayment(String, Option<Sender<()>>),
    /// Stop quietly (end of a run).
    Shutdown,
}
