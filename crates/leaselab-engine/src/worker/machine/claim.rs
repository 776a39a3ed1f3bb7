//! Taking work: a claim (the next, by id, or a batch) and, leasing off, the load.

use std::collections::VecDeque;

use crate::events::{ClaimWay, EventKind};
use crate::outbox::{
    ClaimOutcome, Fact, Lease, LeaseEventKind, MessageRef, Stamped, QUEUED_RAN_OUT,
};

use super::*;

impl Worker {
    pub(super) fn claim(&mut self, id: Option<i64>) -> Result<Acted, WorkerError> {
        let id_asked = id.is_some();
        let now = self.ctx.clock.now();
        let lease_ms = self.ctx.settings.lease_ms();
        self.set_status(|s| s.state = WorkerState::Claiming);
        let batch = self.ctx.settings.batch();
        let way = match id {
            Some(_) => ClaimWay::Id,
            None if batch > 1 => ClaimWay::Batch,
            None => ClaimWay::Next,
        };
        let Stamped {
            value: outcome,
            seq,
        } = match id {
            Some(id) => self.store.claim_id(id, &self.name, now, lease_ms),
            None if batch > 1 => self.claim_batch(now, lease_ms, batch),
            None => self.store.claim_next(&self.name, now, lease_ms),
        }?;
        if self.store.partway() {
            self.emit(EventKind::StatementRan { operation: "claim" });
            return Ok(Acted::Done);
        }
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
            ClaimOutcome::Claimed(lease) => Ok(self.claimed(lease, seq, now, way)),
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
                        way,
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

    /// A worker of a class claims nothing while the teacher holds it (a row it reads before
    /// each claim, `leaselab class hold`): it says so once, and once more on go. What it
    /// holds it finishes first, as it is not idle then.
    pub(super) fn teacher_holds(&mut self) -> Result<Option<Acted>, WorkerError> {
        if !self.ctx.settings.follows_teacher() {
            return Ok(None);
        }
        let held = self.store.held_by_teacher()?;
        if held != self.held_by_teacher {
            self.held_by_teacher = held;
            self.emit(EventKind::HeldByTeacher { held });
        }
        let now = self.ctx.clock.now();
        Ok(held.then(|| Acted::WaitUntil(now + self.ctx.settings.idle_ms())))
    }

    /// A claim took `lease` (and the rest of a batch): hold it, then tell everyone.
    pub(super) fn claimed(&mut self, lease: Lease, seq: u64, now: i64, way: ClaimWay) -> Acted {
        // Held before anyone hears of it: heartbeats count from the claim's time,
        // whatever the clock does once the event is out.
        let events: Vec<Lease> = std::iter::once(&lease)
            .chain(&self.batched)
            .cloned()
            .collect();
        self.batch_at = now;
        let acted = self.hold(lease, now, now);
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
                    way,
                    overlapped: None,
                },
            );
        }
        acted
    }

    /// Claim up to `k` messages in one transaction: the first is held, the rest wait in
    /// `batched`. Nothing claimed reads as an empty claim.
    pub(super) fn claim_batch(
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

    /// Start on a leased message taken at `taken` (heartbeats count from it), its work
    /// starting at `work_from`.
    pub(super) fn hold(&mut self, lease: Lease, taken: i64, work_from: i64) -> Acted {
        self.phase = Phase::Holding(lease);
        self.beat_base = taken;
        self.beat_retry_at = None;
        self.work_from = work_from;
        self.set_status(|s| s.last_beat_ms = None);
        Acted::Done
    }

    /// Start on the next lease of a batch: the claim took it at `batch_at`, and it has run
    /// since. One that ran out while the messages before it were worked on is given up
    /// (someone may have taken it over); one whose heartbeat came due meanwhile is extended
    /// at once by a running worker, before its work starts.
    pub(super) fn take_queued(&mut self, lease: Lease, pace: Pace) -> Result<Acted, WorkerError> {
        let now = self.ctx.clock.now();
        if !lease.is_live(now) {
            self.give_up_queued(lease, now)?;
            return Ok(Acted::Done);
        }
        let acted = self.hold(lease, self.batch_at, now);
        if pace == Pace::Run && self.next_beat().is_some_and(|beat| beat <= now) {
            self.beat()?;
        }
        Ok(acted)
    }

    /// A lease of the batch ran out before the worker got to it: say so, recorded (a watcher
    /// and a replay see the message dropped), and leave the message to whoever claims it.
    fn give_up_queued(&mut self, lease: Lease, now: i64) -> Result<(), WorkerError> {
        let fact = Fact {
            id: Some(lease.id),
            key: Some(lease.key.clone()),
            version: Some(lease.version),
            until_ms: Some(lease.until_ms),
            ..Fact::of(LeaseEventKind::LeaseLost, now, &self.name, QUEUED_RAN_OUT)
        };
        let seq = self.store.record(&fact)?.seq;
        self.emit_when(
            seq,
            now,
            EventKind::QueuedLeaseRanOut {
                id: lease.id,
                key: lease.key,
                version: lease.version,
                until_ms: lease.until_ms,
            },
        );
        Ok(())
    }

    pub(super) fn load(&mut self) -> Result<Acted, WorkerError> {
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
