//! The worker's state machine: its state and what it tells (status, events). What it does is
//! in one file a job: its loop and commands (`run`), taking work (`claim`), one action (`act`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crossbeam_channel::Receiver;

use crate::backend::Outbox;
use crate::events::{Event, EventKind};
use crate::outbox::{Lease, MessageRef};
use crate::provider::StatusCheck;

use super::*;

mod act;
mod busy;
mod claim;
mod reconnect;
mod run;

enum Phase {
    Idle,
    /// Leasing on: holds a lease; the provider has not been called yet.
    Holding(Lease),
    /// Leasing on: the provider answered; the result waits for the guarded finalize.
    Checked(Lease, StatusCheck),
    /// Leasing off: a snapshot of Pending messages, worked through one by one.
    Naive {
        queue: VecDeque<MessageRef>,
        current: Option<(MessageRef, StatusCheck)>,
    },
}

pub(crate) enum Acted {
    /// Did something; go on.
    Done,
    /// Nothing to do before this scenario time.
    WaitUntil(i64),
}

enum Exit {
    Crash,
    Shutdown,
}

pub(crate) struct Worker {
    ctx: WorkerContext,
    slot: usize,
    name: String,
    store: Box<dyn Outbox>,
    phase: Phase,
    status: Arc<Mutex<WorkerStatus>>,
    paused: bool,
    /// Processing or idling: the scenario time at which the next action is due.
    wait_until: Option<i64>,
    /// Told whenever the scenario clock moves, so a waiting worker blocks instead of polling.
    clock_moved: Receiver<()>,
    /// What its last claim was blocked on, if it was.
    blocked_on: Option<BlockedOn>,
    /// Work set up: the scenario time its processing is done and the provider answers.
    work_done_at: Option<i64>,
    /// The scenario time the held lease was taken or last extended: heartbeats count from it.
    beat_base: i64,
    /// The scenario time work on the held lease started: its claim's, or, for the rest of a
    /// batch, the moment the worker got to it.
    work_from: i64,
    /// The rest of a batch claim, leased, in claim order: taken one by one after the held one.
    batched: VecDeque<Lease>,
    /// The scenario time of the batch claim `batched` came from: their leases count from it.
    batch_at: i64,
    /// The teacher's hold, as this worker last read it (it says so when it changes).
    held_by_teacher: bool,
    /// Its last finalize failed without an answer (the connection went away): whether it
    /// committed is asked before it is tried again.
    finalize_unanswered: bool,
    /// Its transactions SQLite refused the write lock, in a row (see `busy`).
    busy_tries: u32,
    /// A heartbeat refused the write lock: the next is not tried before this scenario time.
    beat_retry_at: Option<i64>,
    /// A provider call whose `Checked` row could not be written (the connection went away
    /// right after the call): when it was made and whether it did work. It is written, at
    /// its own time, before the finalize that carries its answer: the message and lease it
    /// was made under, when, and whether it did work.
    unrecorded_check: Option<(i64, i64, i64, bool)>,
}

impl Worker {
    pub(crate) fn new(
        ctx: WorkerContext,
        slot: usize,
        name: String,
        store: Box<dyn Outbox>,
        status: Arc<Mutex<WorkerStatus>>,
        paused: bool,
    ) -> Worker {
        Worker {
            clock_moved: ctx.clock.watch(),
            ctx,
            slot,
            name,
            store,
            phase: Phase::Idle,
            status,
            paused,
            wait_until: None,
            blocked_on: None,
            work_done_at: None,
            beat_base: 0,
            work_from: 0,
            batched: VecDeque::new(),
            batch_at: 0,
            held_by_teacher: false,
            finalize_unanswered: false,
            busy_tries: 0,
            beat_retry_at: None,
            unrecorded_check: None,
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// What the worker will do next, as its status says.
    pub(crate) fn next(&self) -> NextAction {
        self.publish();
        self.status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .next
            .clone()
    }

    /// Stop at once; a held lease stays in the database.
    pub(crate) fn crash(&mut self) {
        self.exit(Exit::Crash);
    }

    pub(super) fn emit_at(&self, seq: u64, kind: EventKind) {
        self.emit_when(seq, self.ctx.clock.now(), kind);
    }

    /// Emit with the scenario time the action itself used (a claim's `now`).
    pub(super) fn emit_when(&self, seq: u64, at_ms: i64, kind: EventKind) {
        let _ = self.ctx.events.send(Event {
            seq,
            at_ms,
            slot: Some(self.slot),
            actor: self.name.clone(),
            sql: self
                .store
                .student_statements()
                .filter(|_| kind.is_statement()),
            kind,
        });
    }

    pub(super) fn emit(&self, kind: EventKind) {
        self.emit_at(self.ctx.shared.next_seq(), kind);
    }

    pub(super) fn set_status(&self, f: impl FnOnce(&mut WorkerStatus)) {
        let mut s = self.status.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut s);
    }

    /// Publish what the worker holds and will do next.
    pub(super) fn publish(&self) {
        let leasing = self.ctx.settings.leasing();
        let paused = self.paused;
        let blocked_on = match self.phase {
            Phase::Idle => self.blocked_on.clone(),
            _ => None,
        };
        let (state, lease, working_on, queued, next) = match &self.phase {
            Phase::Idle if blocked_on.is_some() => {
                (WorkerState::Blocked, None, None, 0, NextAction::Claim)
            }
            Phase::Idle => (
                WorkerState::Idle,
                None,
                None,
                0,
                if leasing {
                    NextAction::Claim
                } else {
                    NextAction::Load
                },
            ),
            Phase::Holding(l) => (
                WorkerState::Processing,
                Some(l.clone()),
                None,
                self.batched.len(),
                NextAction::CallProvider(l.key.clone()),
            ),
            Phase::Checked(l, _) => (
                WorkerState::Finalizing,
                Some(l.clone()),
                None,
                self.batched.len(),
                NextAction::Finalize(l.key.clone()),
            ),
            Phase::Naive { queue, current } => match current {
                Some((m, _)) => (
                    WorkerState::Finalizing,
                    None,
                    Some(m.clone()),
                    queue.len(),
                    NextAction::Mark(m.key.clone()),
                ),
                None => match queue.front() {
                    // The front of the queue is the one it works on; the others are queued.
                    Some(m) => (
                        WorkerState::Processing,
                        None,
                        Some(m.clone()),
                        queue.len() - 1,
                        NextAction::CallProvider(m.key.clone()),
                    ),
                    None => (WorkerState::Idle, None, None, 0, NextAction::Load),
                },
            },
        };
        self.set_status(|s| {
            // Blocked says more than paused: a class steps through it waiting for a lease.
            s.state = match state {
                WorkerState::Blocked => state,
                _ if paused => WorkerState::Paused,
                _ => state,
            };
            s.paused = paused;
            s.lease = lease;
            s.working_on = working_on;
            s.queued = queued;
            s.next = next;
            s.blocked_on = blocked_on;
        });
    }
}

/// How an action meets the processing time of the message it works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pace {
    /// A running worker waits for it on the scenario clock.
    Run,
    /// A teacher's single step moves the clock by what is left of it, as a run would take.
    Step,
    /// A lesson's scripted step skips it: a lesson moves the clock by `advance` and `work`.
    Script,
}
