//! A worker thread's loop: the clock and its commands, heartbeats, and how it ends.

use std::time::Duration;

use crossbeam_channel::Receiver;

use crate::events::EventKind;
use crate::outbox::{Fact, LeaseEventKind, Stamped};

use super::*;
use crate::outbox::CRASH_TOLD;

impl Worker {
    pub(in crate::worker) fn run(&mut self, rx: &Receiver<Control>) -> Option<WorkerError> {
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
                        match self.recover(e, rx) {
                            Ok(None) => continue,
                            Ok(Some(exit)) => return self.exit(exit),
                            Err(e) => return Some(e),
                        }
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
                Err(e) => match self.recover(e, rx) {
                    Ok(None) => {}
                    Ok(Some(exit)) => return self.exit(exit),
                    Err(e) => return Some(e),
                },
            }
        }
    }

    /// When the held lease is due its next heartbeat (not before a refused one is tried
    /// again); None when there is nothing to beat.
    pub(super) fn next_beat(&self) -> Option<i64> {
        let s = &self.ctx.settings;
        (matches!(self.phase, Phase::Holding(_)) && s.heartbeats() && s.leasing()).then(|| {
            let due = self.beat_base + s.heartbeat_ms();
            self.beat_retry_at.map_or(due, |at| at.max(due))
        })
    }

    /// A heartbeat when one can be given (heartbeats on, a lease held), whatever its time.
    pub(crate) fn beat_now(&mut self) -> Result<(), WorkerError> {
        if self.next_beat().is_some() {
            self.beat()?;
        }
        Ok(())
    }

    /// Extend the held lease; one SQLite refused the write lock is tried again later (see
    /// `busy`), the lease held meanwhile as it was.
    pub(super) fn beat(&mut self) -> Result<(), WorkerError> {
        match self.beat_once() {
            Ok(()) => {
                self.busy_tries = 0;
                self.beat_retry_at = None;
                Ok(())
            }
            Err(e) => {
                let now = self.ctx.clock.now();
                let at = self.try_again_later(e, Pace::Run)?;
                self.beat_retry_at = Some(at.unwrap_or(now));
                Ok(())
            }
        }
    }

    /// Extend the held lease. Zero rows changed means the lease is lost: the worker drops
    /// the message without calling the provider or trying a finalize.
    fn beat_once(&mut self) -> Result<(), WorkerError> {
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

    pub(super) fn set_wait(&mut self, until: Option<i64>) {
        self.wait_until = until;
        self.set_status(|s| s.waiting_until = until);
    }

    /// How long the running clock takes to reach `due`; None while it is frozen (only a
    /// move, which the clock announces, can bring `due` closer).
    pub(super) fn real_wait(&self, due: i64) -> Option<Duration> {
        let clock = &self.ctx.clock;
        let left = (due - clock.now()).max(0) as f64;
        (clock.is_running() && clock.speed() > 0.0)
            .then(|| Duration::from_secs_f64(left / clock.speed() / 1000.0))
    }

    pub(super) fn exit(&mut self, exit: Exit) -> Option<WorkerError> {
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

    pub(super) fn obey(&mut self, c: Control) -> Result<Option<Exit>, WorkerError> {
        match c {
            Control::Pause => {
                if !self.paused {
                    self.paused = true;
                    self.publish();
                    self.emit(EventKind::Paused);
                }
            }
            Control::Freeze(reply) => {
                self.obey(Control::Pause)?;
                let _ = reply.send(());
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
    pub(super) fn single_step(
        &mut self,
        pace: Pace,
        reply: Option<Sender<()>>,
    ) -> Result<(), WorkerError> {
        self.set_wait(None);
        self.act(pace)?;
        if let Some(r) = reply {
            let _ = r.send(());
        }
        Ok(())
    }
}
