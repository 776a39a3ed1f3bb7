//! One action of a worker's cycle: the provider call, then the finalize, the retry or the mark.

use std::collections::VecDeque;

use crate::events::EventKind;
use crate::outbox::{
    Fact, FailOutcome, FinalizeOutcome, Lease, LeaseEventKind, MessageRef, Stamped,
};
use crate::provider::StatusCheck;

use super::*;
use crate::outbox::checked_detail;

impl Worker {
    /// One action of the worker's cycle, at `pace`. A claim or finalize SQLite refused the
    /// write lock is tried again (see `busy`).
    pub(crate) fn act(&mut self, pace: Pace) -> Result<Acted, WorkerError> {
        match self.act_once(pace) {
            Ok(acted) => {
                self.busy_tries = 0;
                Ok(acted)
            }
            Err(e) => Ok(match self.try_again_later(e, pace)? {
                Some(at) => Acted::WaitUntil(at),
                None => Acted::Done,
            }),
        }
    }

    fn act_once(&mut self, pace: Pace) -> Result<Acted, WorkerError> {
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
        if matches!(self.phase, Phase::Idle) && self.batched.is_empty() {
            if let Some(wait) = self.teacher_holds()? {
                return Ok(wait);
            }
        }
        let phase = std::mem::replace(&mut self.phase, Phase::Idle);
        let acted = match phase {
            Phase::Idle if leasing => match self.batched.pop_front() {
                Some(lease) => self.take_queued(lease, pace)?,
                None => self.claim(None)?,
            },
            Phase::Idle => {
                // Leasing went off: the rest of a batch is left to expire.
                self.batched.clear();
                self.load()?
            }
            Phase::Holding(lease) => self.call_provider(lease)?,
            Phase::Checked(lease, check) => {
                if let Err(e) = self.record_kept_call(&lease, &check) {
                    self.phase = Phase::Checked(lease, check);
                    return Err(e);
                }
                self.finalize(lease, check)?
            }
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
            // The rest of a batch starts when the worker gets to it.
            let started = match self.phase {
                Phase::Holding(_) => self.work_from,
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
    pub(super) fn call_provider(&mut self, lease: Lease) -> Result<Acted, WorkerError> {
        let (check, effect) = match self.ctx.provider.try_call(&lease.key) {
            Ok(call) => call,
            Err(error) => {
                self.failed_attempt(lease, error)?;
                return Ok(Acted::Done);
            }
        };
        let at = self.ctx.clock.now();
        let seq = match self.record_check_at(at, Some(&lease), &lease.key, &check, effect) {
            Ok(seq) => seq,
            Err(e) => {
                // The provider answered: a worker that reconnects records the call, then
                // finalizes that answer.
                self.unrecorded_check = Some((lease.id, lease.version, at, effect));
                self.phase = Phase::Checked(lease, check);
                return Err(e);
            }
        };
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

    /// A call whose row a lost connection kept from being written: written now, at the time
    /// it was made, so no finalize carries an answer off the record.
    fn record_kept_call(&mut self, lease: &Lease, check: &StatusCheck) -> Result<(), WorkerError> {
        match self.unrecorded_check.take() {
            Some((id, version, at, effect)) if (id, version) == (lease.id, lease.version) => {
                let recorded = self.record_check_at(at, Some(lease), &lease.key, check, effect);
                if recorded.is_err() {
                    self.unrecorded_check = Some((id, version, at, effect));
                }
                recorded.map(|_| ())
            }
            _ => Ok(()),
        }
    }

    /// Record a provider call and its answer when it is made (a `Checked` row): a replay then
    /// shows it where it happened, also when the worker never gets to write a result.
    pub(super) fn record_check(
        &mut self,
        lease: Option<&Lease>,
        id: i64,
        key: &str,
        check: &StatusCheck,
        effect: bool,
    ) -> Result<u64, WorkerError> {
        let now = self.ctx.clock.now();
        self.record_check_of(now, lease, id, key, check, effect)
    }

    /// As [`Worker::record_check`], of a leased call made at `at`.
    fn record_check_at(
        &mut self,
        at: i64,
        lease: Option<&Lease>,
        key: &str,
        check: &StatusCheck,
        effect: bool,
    ) -> Result<u64, WorkerError> {
        let id = lease.map_or(0, |l| l.id);
        self.record_check_of(at, lease, id, key, check, effect)
    }

    fn record_check_of(
        &mut self,
        now: i64,
        lease: Option<&Lease>,
        id: i64,
        key: &str,
        check: &StatusCheck,
        effect: bool,
    ) -> Result<u64, WorkerError> {
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
    pub(super) fn failed_attempt(
        &mut self,
        lease: Lease,
        error: String,
    ) -> Result<(), WorkerError> {
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
    pub(super) fn finalize(
        &mut self,
        lease: Lease,
        check: StatusCheck,
    ) -> Result<Acted, WorkerError> {
        let now = self.ctx.clock.now();
        let guard = self.ctx.settings.finalize_guard();
        let tried = self
            .earlier_finalize(&lease)
            .and_then(|earlier| match earlier {
                Some(seq) => Ok(Stamped::new(FinalizeOutcome::Committed, seq)),
                None => self
                    .store
                    .guard_finalize(guard)
                    .and_then(|()| self.store.finalize(&lease, &check, now)),
            });
        let Stamped {
            value: outcome,
            seq,
        } = match tried {
            Ok(done) => done,
            Err(e) => {
                // Still checked: a worker that reconnects asks whether this finalize
                // committed, and if not tries it again; the fencing token decides it as it
                // would have.
                self.finalize_unanswered = true;
                self.phase = Phase::Checked(lease, check);
                return Err(e.into());
            }
        };
        self.finalize_unanswered = false;
        if self.store.partway() {
            self.phase = Phase::Checked(lease, check);
            self.emit(EventKind::StatementRan {
                operation: "finalize",
            });
            return Ok(Acted::Done);
        }
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

    /// After a finalize that got no answer: the commit stamp of its `Finalized` row if it
    /// committed after all (said in a line), so that it is not tried again and rejected by
    /// its own commit.
    fn earlier_finalize(&mut self, lease: &Lease) -> crate::outbox::Result<Option<u64>> {
        if !self.finalize_unanswered {
            return Ok(None);
        }
        let earlier = self.store.finalized_earlier(lease)?;
        if earlier.is_some() {
            self.emit(EventKind::Note {
                text: format!(
                    "its finalize of {} (lease v{}) had committed before the connection was lost",
                    lease.key, lease.version
                ),
            });
        }
        Ok(earlier)
    }

    /// Leasing off, the provider answered: mark the message Processed, asking nobody.
    pub(super) fn mark(
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
    pub(super) fn check_next_loaded(
        &mut self,
        mut queue: VecDeque<MessageRef>,
    ) -> Result<Acted, WorkerError> {
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
}
