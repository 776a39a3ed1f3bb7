//! A worker without a thread, for schedules driven from one thread (property tests).

use std::sync::{Arc, Mutex};

use super::provider::WorkerThread;
use super::worker::{NextAction, Pace, Worker, WorkerContext, WorkerError, WorkerStatus};
use super::worker_id::WorkerId;

/// Each `act` is exactly one action on the worker's own connection, as a single step would be.
pub struct Stepper {
    worker: Worker,
}

impl Stepper {
    pub fn new(ctx: WorkerContext, slot: usize, incarnation: u32) -> Result<Stepper, WorkerError> {
        let id = WorkerId::new(slot, incarnation);
        let store = ctx.db.open(ctx.shared.clone())?;
        let status = Arc::new(Mutex::new(WorkerStatus {
            id,
            name: id.to_string(),
            ..WorkerStatus::default()
        }));
        Ok(Stepper {
            worker: Worker::new(ctx, slot, id.to_string(), store, status, false),
        })
    }

    pub fn name(&self) -> &str {
        self.worker.name()
    }

    /// One action: a claim (or load), a provider call, or a finalize (or mark).
    pub fn act(&mut self) -> Result<(), WorkerError> {
        let _worker = WorkerThread::enter();
        self.worker.act(Pace::Step).map(|_| ())
    }

    /// Extend the held lease now, if heartbeats are on and it holds one; a lease found
    /// lost drops the message, as a running worker's beat does.
    pub fn heartbeat(&mut self) -> Result<(), WorkerError> {
        self.worker.beat_now()
    }

    pub fn next(&self) -> NextAction {
        self.worker.next()
    }

    /// Stop at once; a held lease stays in the database.
    pub fn crash(mut self) {
        self.worker.crash();
    }
}
