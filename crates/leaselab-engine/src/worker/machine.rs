//! The worker's state machine: claim, call the provider, finalize (or, leasing off, load
//! and mark), with heartbeats, retries and the commands it obeys between actions.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::Receiver;

use crate::backend::Outbox;
use crate::events::{Event, EventKind};
use crate::outbox::{
    ClaimOutcome, Fact, FailOutcome, FinalizeOutcome, Lease, LeaseEventKind, MessageRef, Stamped,
};
use crate::provider::StatusCheck;

use super::*;
use crate::outbox::{checked_detail, CRASH_TOLD};

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
    /// The rest of a batch claim, leased, in claim order: taken one by one after the held one.
    batched: VecDeque<Lease>,
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
            batched: VecDeque::new(),
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

    fn emit_at(&self, seq: u64, kind: EventKind) {
        self.emit_when(seq, self.ctx.clock.now(), kind);
    }

    /// Emit with the scenario time the action itself used (a claim's `now`).
    fn emit_when(&self, seq: u64, at_ms: i64, kind: EventKind) {
        let _ = self.ctx.events.send(Event {
            seq,
            at_ms,
            slot: Some(self.slot),
            actor: self.name.clone(),
            kind,
        });
    }

    fn emit(&self, kind: EventKind) {
        self.emit_at(self.ctx.shared.next_seq(), kind);
    }

    fn set_status(&self, f: impl FnOnce(&mut WorkerStatus)) {
        let mut s = self.status.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut s);
    }

    /// Publish what the worker holds and will do next.
    fn publish(&self) {
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
                    Some(m) => (
                        WorkerState::Processing,
                        None,
                        Some(m.clone()),
                        queue.len(),
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

    pub(super) fn run(&mut self, rx: &Receiver<Control>) -> Option<WorkerError> {
        self.publish();
        loop {
            // Listen for commands: block while paused, block until the clock can have
            // reached what is due (or moves) while waiting, else peek.
            let control = if self.paused {
                rx.recv().ok().or(Some(Control::Shutdown))
            } else if let Some(due) = self.wait_until {
                let command = |c: Result<Control, _>| Some(c.unwrap_or(Control::Shutdown));
                let wake = self.next_beat().map_or(due, |beat| beat.min(due));
                match self.real_wait(wake) {
                    Some(real) => crossbeam_channel::select! {
                        recv(rx) -> c => command(c),
                        recv(self.clock_moved) -> _ => None,
                        default(real) => None,
                    },
                    None => crossbeam_channel::select! {
                        recv(rx) -> c => command(c),
                        recv(self.clock_moved) -> _ => None,
                    },
                }
            } else {
                rx.try_recv().ok()
            };
            if let Some(c) = control {
                match self.obey(c) {
                    Ok(Some(exit)) => return self.exit(exit),
                    Ok(None) => continue,
                    Err(e) => return Some(e),
                }
            }
            if self.paused {
                continue;
            }
            if let Some(due) = self.wait_until {
                if self
                    .next_beat()
                    .is_some_and(|beat| self.ctx.clock.now() >= beat)
                {
                    if let Err(e) = self.beat() {
                        return Some(e);
                    }
                    if matches!(self.phase, Phase::Idle) {
                        // The lease was lost: the message is dropped, nothing to wait for.
                        self.set_wait(None);
                        continue;
                    }
                }
                if self.ctx.clock.now() < due {
                    continue;
                }
                self.set_wait(None);
            }
            match self.act(Pace::Run) {
                Ok(Acted::Done) => {}
                Ok(Acted::WaitUntil(t)) => self.set_wait(Some(t)),
                Err(e) => return Some(e),
            }
        }
    }

    /// When the held lease is due its next heartbeat; None when there is nothing to beat.
    fn next_beat(&self) -> Option<i64> {
        let s = &self.ctx.settings;
        (matches!(self.phase, Phase::Holding(_)) && s.heartbeats() && s.leasing())
            .then(|| self.beat_base + s.heartbeat_ms())
    }

    /// A heartbeat when one can be given (heartbeats on, a lease held), whatever its time.
    pub(crate) fn beat_now(&mut self) -> Result<(), WorkerError> {
        if self.next_beat().is_some() {
            self.beat()?;
        }
        Ok(())
    }

    /// Extend the held lease. Zero rows changed means the lease is lost: the worker drops
    /// the message without calling the provider or trying a finalize.
    fn beat(&mut self) -> Result<(), WorkerError> {
        let Phase::Holding(lease) = &self.phase else {
            return Ok(());
        };
        let mut lease = lease.clone();
        let now = self.ctx.clock.now();
        let lease_ms = self.ctx.settings.lease_ms();
        let Stamped { value: until, seq } = self.store.heartbeat(&lease, now, lease_ms)?;
        self.beat_base = now;
        match until {
            Some(until_ms) => {
                lease.until_ms = until_ms;
                self.emit_when(
                    seq,
                    now,
                    EventKind::Heartbeat {
                        id: lease.id,
                        key: lease.key.clone(),
                        version: lease.version,
                        until_ms,
                    },
                );
                self.phase = Phase::Holding(lease);
                self.set_status(|s| s.last_beat_ms = Some(now));
            }
            None => {
                self.emit_when(
                    seq,
                    now,
                    EventKind::LeaseLost {
                        id: lease.id,
                        key: lease.key,
                        version: lease.version,
                    },
                );
                self.phase = Phase::Idle;
                self.set_status(|s| s.last_beat_ms = None);
            }
        }
        self.publish();
        Ok(())
    }

    fn set_wait(&mut self, until: Option<i64>) {
        self.wait_until = until;
        self.set_status(|s| s.waiting_until = until);
    }

    /// How long the running clock takes to reach `due`; None while it is frozen (only a
    /// move, which the clock announces, can bring `due` closer).
    fn real_wait(&self, due: i64) -> Option<Duration> {
        let clock = &self.ctx.clock;
        let left = (due - clock.now()).max(0) as f64;
        (clock.is_running() && clock.speed() > 0.0)
            .then(|| Duration::from_secs_f64(left / clock.speed() / 1000.0))
    }

    fn exit(&mut self, exit: Exit) -> Option<WorkerError> {
        match exit {
            Exit::Shutdown => {
                self.set_status(|s| s.state = WorkerState::Stopped);
            }
            Exit::Crash => {
                let held = match &self.phase {
                    Phase::Holding(l) | Phase::Checked(l, _) => Some(l.clone()),
                    _ => None,
                };
                let holding = held.as_ref().map(|l| (l.id, l.key.clone(), l.until_ms));
                // Recorded, so a replay says CRASHED only where a crash happened. A crash
                // the table could not take is still a crash here; the replay then says only
                // what it knows (the lease ran out).
                let now = self.ctx.clock.now();
                let fact = Fact::of(LeaseEventKind::Crashed, now, &self.name, CRASH_TOLD).holding(
                    held.as_ref()
                        .map(|l| (l.id, l.key.as_str(), l.version, l.until_ms)),
                );
                let seq = self
                    .store
                    .record(&fact)
                    .map_or_else(|_| self.ctx.shared.next_seq(), |s| s.seq);
                self.set_status(|s| {
                    s.state = WorkerState::Crashed;
                    s.next = NextAction::Nothing;
                    s.working_on = None;
                    s.queued = 0;
                    s.blocked_on = None;
                });
                self.emit_when(
                    seq,
                    now,
                    EventKind::Crashed {
                        holding,
                        panic: None,
                        how: None,
                    },
                );
            }
        }
        None
    }

    fn obey(&mut self, c: Control) -> Result<Option<Exit>, WorkerError> {
        match c {
            Control::Pause => {
                if !self.paused {
                    self.paused = true;
                    self.publish();
                    self.emit(EventKind::Paused);
                }
            }
            Control::Resume => {
                if self.paused {
                    self.paused = false;
                    self.publish();
                    self.emit(EventKind::Resumed);
                }
            }
            // A single step does not wait for the running clock: it moves it, or, in a
            // lesson's script, skips the processing time (see `act`).
            Control::Step(reply) => self.single_step(Pace::Step, reply)?,
            Control::ScriptedStep(reply) => self.single_step(Pace::Script, reply)?,
            Control::ClaimId(id, reply) => {
                if matches!(self.phase, Phase::Idle) {
                    self.claim(Some(id))?;
                    let process_ms = self.ctx.settings.process_ms();
                    if matches!(self.phase, Phase::Holding(_)) && process_ms > 0 {
                        self.work_done_at = Some(self.ctx.clock.now() + process_ms);
                    }
                    self.publish();
                }
                if let Some(r) = reply {
                    let _ = r.send(());
                }
            }
            Control::Heartbeat(reply) => {
                if self.next_beat().is_some() {
                    self.beat()?;
                    if matches!(self.phase, Phase::Idle) {
                        self.set_wait(None);
                    }
                }
                if let Some(r) = reply {
                    let _ = r.send(());
                }
            }
            Control::Crash => return Ok(Some(Exit::Crash)),
            Control::Panic => panic!("injected panic in {}", self.name),
            Control::CreatePayment(key, reply) => {
                self.ctx.provider.create_payment(&key);
                if let Some(r) = reply {
                    let _ = r.send(());
                }
            }
            Control::Shutdown => return Ok(Some(Exit::Shutdown)),
        }
        Ok(None)
    }

    /// Exactly one action, then the reply that its events are out.
    fn single_step(&mut self, pace: Pace, reply: Option<Sender<()>>) -> Result<(), WorkerError> {
        self.set_wait(None);
        self.act(pace)?;
        if let Some(r) = reply {
            let _ = r.send(());
        }
        Ok(())
    }

    /// One action of the worker's cycle, at `pace`.
    pub(crate) fn act(&mut self, pace: Pace) -> Result<Acted, WorkerError> {
        let stepping = pace != Pace::Run;
        self.set_status(|s| s.acts += 1);
        let leasing = self.ctx.settings.leasing();
        let calls_provider = matches!(self.phase, Phase::Holding(_))
            || matches!(self.phase, Phase::Naive { current: None, .. });
        if let Some(done_at) = self.work_done_at.take().filter(|_| calls_provider) {
            // A single step takes the processing time on the scenario clock, as a run does;
            // a scripted one skips it.
            let now = self.ctx.clock.now();
            if pace == Pace::Step && done_at > now {
                self.ctx.clock.advance(done_at - now);
            }
        }
        let phase = std::mem::replace(&mut self.phase, Phase::Idle);
        let acted = match phase {
            Phase::Idle if leasing => match self.batched.pop_front() {
                Some(lease) => {
                    let now = self.ctx.clock.now();
                    self.hold(lease, now)
                }
                None => self.claim(None)?,
            },
            Phase::Idle => {
                // Leasing went off: the rest of a batch is left to expire.
                self.batched.clear();
                self.load()?
            }
            Phase::Holding(lease) => self.call_provider(lease)?,
            Phase::Checked(lease, check) => self.finalize(lease, check)?,
            // Leasing came back on: drop the unowned snapshot at this cycle.
            Phase::Naive { .. } if leasing => Acted::Done,
            Phase::Naive {
                queue,
                current: Some((msg, check)),
            } => self.mark(queue, msg, check)?,
            Phase::Naive {
                queue,
                current: None,
            } => self.check_next_loaded(queue)?,
        };
        self.publish();
        // Processing takes time on the scenario clock: a run waits for it, a single step
        // moves the clock by it when it calls the provider.
        let process_ms = self.ctx.settings.process_ms();
        let starts_work = matches!(self.phase, Phase::Holding(_))
            || matches!(self.phase, Phase::Naive { current: None, .. });
        if process_ms > 0 && starts_work {
            // Work on a claimed message starts at the claim's time: whoever heard of the
            // claim may have moved the clock since, and must not push the work's end out.
            let started = match self.phase {
                Phase::Holding(_) => self.beat_base,
                _ => self.ctx.clock.now(),
            };
            let done_at = started + process_ms;
            self.work_done_at = Some(done_at);
            if !stepping {
                return Ok(Acted::WaitUntil(done_at));
            }
        }
        Ok(acted)
    }

    /// Leasing on, holding a lease: ask the provider for the payment's status. A failed
    /// call is recorded on the row: back to Pending after a backoff, or dead-lettered.
    fn call_provider(&mut self, lease: Lease) -> Result<Acted, WorkerError> {
        let (check, effect) = match self.ctx.provider.try_call(&lease.key) {
            Ok(call) => call,
            Err(error) => {
                self.failed_attempt(lease, error)?;
                return Ok(Acted::Done);
            }
        };
        let seq = self.record_check(Some(&lease), lease.id, &lease.key, &check, effect)?;
        self.emit_at(
            seq,
            EventKind::ProviderCalled {
                id: lease.id,
                key: lease.key.clone(),
                status: check.status,
                effect,
            },
        );
        self.phase = Phase::Checked(lease, check);
        Ok(Acted::Done)
    }

    /// Record a provider call and its answer when it is made (a `Checked` row): a replay then
    /// shows it where it happened, also when the worker never gets to write a result.
    fn record_check(
        &mut self,
        lease: Option<&Lease>,
        id: i64,
        key: &str,
        check: &StatusCheck,
        effect: bool,
    ) -> Result<u64, WorkerError> {
        let now = self.ctx.clock.now();
        let fact = Fact {
            id: Some(id),
            key: Some(key.to_string()),
            version: lease.map(|l| l.version),
            ..Fact::of(
                LeaseEventKind::Checked,
                now,
                &self.name,
                &checked_detail(check.status, effect),
            )
        };
        Ok(self.store.record(&fact)?.seq)
    }

    /// The provider failed: release the lease with a backoff, or dead-letter the message
    /// when this was its last attempt. A lease lost meanwhile writes nothing.
    fn failed_attempt(&mut self, lease: Lease, error: String) -> Result<(), WorkerError> {
        let now = self.ctx.clock.now();
        let policy = self.ctx.settings.retry();
        let Stamped {
            value: outcome,
            seq,
        } = self.store.fail_attempt(&lease, &error, now, &policy)?;
        let (id, key, version) = (lease.id, lease.key, lease.version);
        let kind = match outcome {
            FailOutcome::Retry {
                attempt,
                available_at_ms,
            } => EventKind::AttemptFailed {
                id,
                key,
                version,
                attempt,
                available_at_ms,
                error,
            },
            FailOutcome::DeadLettered { attempts } => EventKind::DeadLettered {
                id,
                key,
                version,
                attempts,
                error,
            },
            FailOutcome::LeaseLost => EventKind::AttemptLost {
                id,
                key,
                version,
                error,
            },
        };
        self.emit_when(seq, now, kind);
        self.phase = Phase::Idle;
        Ok(())
    }

    /// Leasing on, the provider answered: the ownership-guarded finalize.
    fn finalize(&mut self, lease: Lease, check: StatusCheck) -> Result<Acted, WorkerError> {
        let now = self.ctx.clock.now();
        let guard = self.ctx.settings.finalize_guard();
        self.store.guard_finalize(guard)?;
        let Stamped {
            value: outcome,
            seq,
        } = self.store.finalize(&lease, &check, now)?;
        let kind = match outcome {
            FinalizeOutcome::Committed => {
                self.set_status(|s| s.processed += 1);
                EventKind::Finalized {
                    id: lease.id,
                    key: lease.key,
                    version: lease.version,
                    status: check.status,
                }
            }
            FinalizeOutcome::Rejected => EventKind::FinalizeRejected {
                id: lease.id,
                key: lease.key,
                version: lease.version,
            },
        };
        self.emit_at(seq, kind);
        Ok(Acted::Done)
    }

    /// Leasing off, the provider answered: mark the message Processed, asking nobody.
    fn mark(
        &mut self,
        queue: VecDeque<MessageRef>,
        msg: MessageRef,
        check: StatusCheck,
    ) -> Result<Acted, WorkerError> {
        let now = self.ctx.clock.now();
        let seq = self
            .store
            .mark_processed_by(&self.name, &msg, &check, now)?
            .seq;
        self.set_status(|s| s.processed += 1);
        self.emit_at(
            seq,
            EventKind::Marked {
                id: msg.id,
                key: msg.key,
                status: check.status,
            },
        );
        if !queue.is_empty() {
            self.phase = Phase::Naive {
                queue,
                current: None,
            };
        }
        Ok(Acted::Done)
    }

    /// Leasing off: ask the provider about the next loaded message, owning nothing.
    fn check_next_loaded(&mut self, mut queue: VecDeque<MessageRef>) -> Result<Acted, WorkerError> {
        if let Some(msg) = queue.pop_front() {
            let (check, effect) = self.ctx.provider.call(&msg.key);
            let seq = self.record_check(None, msg.id, &msg.key, &check, effect)?;
            self.emit_at(
                seq,
                EventKind::ProviderCalled {
                    id: msg.id,
                    key: msg.key.clone(),
                    status: check.status,
                    effect,
                },
            );
            self.phase = Phase::Naive {
                queue,
                current: Some((msg, check)),
            };
        }
        Ok(Acted::Done)
    }

    fn claim(&mut self, id: Option<i64>) -> Result<Acted, WorkerError> {
        let id_asked = id.is_some();
        let now = self.ctx.clock.now();
        let lease_ms = self.ctx.settings.lease_ms();
        self.set_status(|s| s.state = WorkerState::Claiming);
        let batch = self.ctx.settings.batch();
        let Stamped {
            value: outcome,
            seq,
        } = match id {
            Some(id) => self.store.claim_id(id, &self.name, now, lease_ms),
            None if batch > 1 => self.claim_batch(now, lease_ms, batch),
            None => self.store.claim_next(&self.name, now, lease_ms),
        }?;
        // Nothing claimable: say whose live lease is in the way, as a claim by id would.
        let outcome = match (outcome, id) {
            (ClaimOutcome::Empty, None) => self
                .store
                .blocked_by(&self.name, now)?
                .unwrap_or(ClaimOutcome::Empty),
            (outcome, _) => outcome,
        };
        self.blocked_on = None;
        match outcome {
            ClaimOutcome::Claimed(lease) => Ok(self.claimed(lease, seq, now)),
            ClaimOutcome::Empty => {
                self.emit_at(seq, EventKind::ClaimEmpty);
                Ok(Acted::WaitUntil(now + self.ctx.settings.idle_ms()))
            }
            ClaimOutcome::Blocked {
                id,
                key,
                owner,
                left_ms,
            } => {
                self.blocked_on = Some(BlockedOn {
                    id,
                    key: key.clone(),
                    owner: owner.clone(),
                    until_ms: now + left_ms,
                });
                self.emit_when(
                    seq,
                    now,
                    EventKind::ClaimBlocked {
                        id,
                        key,
                        owner,
                        left_ms,
                    },
                );
                if id_asked {
                    return Ok(Acted::Done);
                }
                // Ask again when idle, or the moment that lease runs out if that is sooner.
                let idle = now + self.ctx.settings.idle_ms();
                Ok(Acted::WaitUntil(idle.min(now + left_ms + 1)))
            }
        }
    }

    /// A claim took `lease` (and the rest of a batch): hold it, then tell everyone.
    fn claimed(&mut self, lease: Lease, seq: u64, now: i64) -> Acted {
        // Held before anyone hears of it: heartbeats count from the claim's time,
        // whatever the clock does once the event is out.
        let events: Vec<Lease> = std::iter::once(&lease)
            .chain(&self.batched)
            .cloned()
            .collect();
        let acted = self.hold(lease, now);
        // One transaction, one stamp: the whole batch was claimed at once.
        for l in &events {
            self.emit_when(
                seq,
                now,
                EventKind::Claimed {
                    id: l.id,
                    key: l.key.clone(),
                    until_ms: l.until_ms,
                    version: l.version,
                    reclaim: l.version > 1,
                },
            );
        }
        acted
    }

    /// Claim up to `k` messages in one transaction: the first is held, the rest wait in
    /// `batched`. Nothing claimed reads as an empty claim.
    fn claim_batch(
        &mut self,
        now: i64,
        lease_ms: i64,
        k: usize,
    ) -> crate::outbox::Result<Stamped<ClaimOutcome>> {
        let claimed = self.store.claim_batch(&self.name, now, lease_ms, k)?;
        let mut leases = VecDeque::from(claimed.value);
        let outcome = leases
            .pop_front()
            .map_or(ClaimOutcome::Empty, ClaimOutcome::Claimed);
        self.batched = leases;
        Ok(Stamped::new(outcome, claimed.seq))
    }

    /// Start on a leased message: heartbeats count from `since`.
    fn hold(&mut self, lease: Lease, since: i64) -> Acted {
        self.phase = Phase::Holding(lease);
        self.beat_base = since;
        self.set_status(|s| s.last_beat_ms = None);
        Acted::Done
    }

    fn load(&mut self) -> Result<Acted, WorkerError> {
        let now = self.ctx.clock.now();
        self.set_status(|s| s.state = WorkerState::Claiming);
        let queue: VecDeque<MessageRef> = self.store.load_pending(now)?.into();
        self.emit(EventKind::Loaded { count: queue.len() });
        if queue.is_empty() {
            return Ok(Acted::WaitUntil(now + self.ctx.settings.idle_ms()));
        }
        self.phase = Phase::Naive {
            queue,
            current: None,
        };
        Ok(Acted::Done)
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
