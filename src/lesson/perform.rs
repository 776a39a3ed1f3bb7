//! Carrying out a step's actions on the engine: a lesson's `do` lines, and the scenarios'
//! lease-expiry story told with the same actions. One executor, so a story step and a
//! lesson step that say the same thing do the same thing.

use std::collections::BTreeSet;

use crate::engine::events::EventKind;
use crate::engine::worker::NextAction;
use crate::engine::worker_id::WorkerId;
use crate::engine::Engine;

use super::error::ActionError;
use super::format::{Action, Condition, MessageSel};

/// Most actions `run-until` may take before it gives up (a frozen worker's lease can keep
/// an outbox from ever draining on a paused clock).
const RUN_UNTIL_LIMIT: usize = 100_000;

/// Carries out actions, keeping track of the workers a `pause` froze.
pub struct Performer<'a> {
    frozen: &'a mut BTreeSet<usize>,
}

impl<'a> Performer<'a> {
    pub fn new(frozen: &'a mut BTreeSet<usize>) -> Performer<'a> {
        Performer { frozen }
    }

    /// Carry out one action; every event it causes is on the engine's channel when this
    /// returns. An action that cannot be carried out says why and changes nothing.
    pub fn perform(&mut self, engine: &mut Engine, action: &Action) -> Result<(), ActionError> {
        match action {
            Action::Claim { slot, message } => self.claim(engine, *slot, message.as_ref())?,
            Action::Act { slot } => {
                self.live(engine, *slot)?;
                engine.step_scripted(*slot);
            }
            Action::Beat { slot } => {
                self.live(engine, *slot)?;
                if !engine.settings.heartbeats() {
                    return Err(ActionError::HeartbeatsOff);
                }
                engine.heartbeat(*slot);
            }
            Action::Crash { slot } => {
                let w = engine.worker(*slot).ok_or(ActionError::NoSuchSlot)?;
                if !w.is_alive() {
                    return Err(ActionError::AlreadyDown(w.name.clone()));
                }
                engine.crash(*slot);
                self.frozen.remove(slot);
            }
            Action::Restart { slot } => {
                engine.restart(*slot, true);
                self.frozen.remove(slot);
            }
            Action::Pause { slot } => {
                self.live(engine, *slot)?;
                if !engine.freeze(*slot, "a lesson step") {
                    return Err(ActionError::Down(label(engine, *slot)));
                }
                self.frozen.insert(*slot);
            }
            Action::Stall { slot, new } => self.stall(engine, *slot, *new)?,
            Action::Resume { slot } => {
                if engine.worker(*slot).is_none() {
                    return Err(ActionError::NoWorker(label(engine, *slot)));
                }
                if !self.frozen.remove(slot) {
                    return Err(ActionError::NotPaused(label(engine, *slot)));
                }
                engine.wake(*slot, "a lesson step");
            }
            Action::Advance { ms } => engine.advance(*ms),
            Action::Work { ms } => self.work(engine, *ms),
            Action::Heartbeats(on) => engine.set_heartbeats(*on),
            Action::Heal(which) => {
                let key = which.as_ref().map(|m| m.key.as_str());
                engine.provider.heal(key);
                engine.emit(EventKind::Note {
                    text: format!(
                        "provider fixed for {}: its status checks answer again",
                        key.unwrap_or("every payment")
                    ),
                });
            }
            Action::Redrive(which) => {
                engine.redrive(which.as_ref().map(|m| m.key.as_str()))?;
            }
            Action::Leasing(on) => engine.set_leasing(*on),
            Action::Idempotency(on) => set_idempotency(engine, *on),
            Action::Workers(n) => {
                engine.set_workers(*n, true);
                self.frozen.retain(|slot| slot < n);
            }
            Action::Batch(k) => engine.set_batch(*k),
            Action::AddPayment(n) => {
                for _ in 0..*n {
                    engine.add_payment()?;
                }
            }
            Action::RunUntil(c) => self.run_until(engine, *c)?,
        }
        Ok(())
    }

    fn live(&self, engine: &Engine, slot: usize) -> Result<(), ActionError> {
        if engine.worker(slot).is_none() {
            return Err(ActionError::NoWorker(label(engine, slot)));
        }
        let (w, shown) = (engine.worker(slot), label(engine, slot));
        if !w.is_some_and(|w| w.is_alive()) {
            return Err(ActionError::Down(shown));
        }
        if self.frozen.contains(&slot) {
            return Err(ActionError::Paused(shown));
        }
        Ok(())
    }

    /// The worker in `slot` freezes where it is, and its supervisor starts a new worker
    /// under its name, in slot `new` (the lesson's parser counted the slots).
    fn stall(&mut self, engine: &mut Engine, slot: usize, new: usize) -> Result<(), ActionError> {
        self.live(engine, slot)?;
        if engine.namesake(slot).is_some() {
            return Err(ActionError::StalledAlready(label(engine, slot)));
        }
        if engine.workers().len() != new {
            return Err(ActionError::CrewChanged {
                taken: engine.workers().len(),
                new,
            });
        }
        self.frozen.insert(slot);
        engine.start_namesake(slot, true);
        Ok(())
    }

    /// The worker claims the oldest claimable message, or the one named, if it is free to.
    fn claim(
        &self,
        engine: &mut Engine,
        slot: usize,
        message: Option<&MessageSel>,
    ) -> Result<(), ActionError> {
        self.live(engine, slot)?;
        let status = engine.worker(slot).map(|w| w.status()).unwrap_or_default();
        // A worker that holds nothing shows Claim or Load by the leasing mode it
        // last looked at; either way it is free to claim.
        if !matches!(status.next, NextAction::Claim | NextAction::Load) {
            return Err(ActionError::Busy {
                next: status.next.describe(),
                name: status.name,
            });
        }
        match message {
            Some(_) if !engine.settings.leasing() => {
                return Err(ActionError::OneMessageWithoutLeasing)
            }
            Some(m) => {
                engine.claim_id(slot, m.id);
            }
            None => {
                engine.step_scripted(slot);
            }
        }
        Ok(())
    }

    /// Let `ms` of processing time pass: with heartbeats on the clock moves one interval at
    /// a time and every live, unfrozen worker then beats, Worker-A first.
    fn work(&self, engine: &Engine, ms: i64) {
        let step = if engine.settings.heartbeats() {
            engine.settings.heartbeat_ms()
        } else {
            ms.max(1)
        };
        let mut left = ms;
        while left > 0 {
            let slice = step.min(left);
            engine.advance(slice);
            left -= slice;
            if engine.settings.heartbeats() {
                for slot in 0..engine.workers().len() {
                    if !self.frozen.contains(&slot) {
                        engine.heartbeat(slot);
                    }
                }
            }
        }
    }

    /// Every live, unfrozen worker acts in turn (Worker-A first) until the condition holds.
    fn run_until(&self, engine: &Engine, c: Condition) -> Result<(), ActionError> {
        let n = engine.workers().len();
        // Turns in a row in which every mover held nothing and the outbox did not change.
        let mut idle_turns = 0;
        let mut idle_counts = None;
        for turn in 0..RUN_UNTIL_LIMIT {
            let movers: Vec<usize> = (0..n)
                .filter(|s| !self.frozen.contains(s))
                .filter(|s| engine.worker(*s).is_some_and(|w| w.is_alive()))
                .collect();
            let counts = engine.store().outbox_counts()?;
            let idle = movers
                .iter()
                .all(|s| engine.worker(*s).is_some_and(|w| w.status().empty_handed()));
            match c {
                Condition::Drained => {
                    if counts.drained() && idle {
                        return Ok(());
                    }
                }
            }
            if movers.is_empty() {
                return Err(ActionError::NobodyCanMove);
            }
            if idle && idle_counts.as_ref() == Some(&counts) {
                idle_turns += 1;
            } else {
                idle_turns = 0;
                idle_counts = idle.then(|| counts.clone());
            }
            // Two whole rounds found nothing to take: on a paused clock nothing will change.
            if idle_turns > 2 * movers.len() {
                return Err(ActionError::Stuck {
                    pending: counts.pending,
                    processing: counts.processing,
                });
            }
            let slot = movers[turn % movers.len()];
            engine.step_scripted(slot);
        }
        Err(ActionError::NeverDrained(RUN_UNTIL_LIMIT))
    }
}

/// The provider honours idempotency keys, or stops honouring them.
fn set_idempotency(engine: &Engine, on: bool) {
    engine.provider.set_idempotent(on);
    engine.emit(EventKind::Note {
        text: format!(
            "provider idempotency {}",
            if on {
                "on: a repeated call replays the first answer"
            } else {
                "off"
            }
        ),
    });
}

/// A worker as a lesson names it: `Worker-A`, or `Worker-A (stalled)` and `Worker-A (new)`
/// once a stall has made two of that name.
pub fn label(engine: &Engine, slot: usize) -> String {
    let name = match engine.worker(slot) {
        Some(w) => w.name.clone(),
        // Past the crew, a slot is the worker a stall starts: one that has not happened.
        None if slot >= engine.config.workers => "worker its stall would have started".into(),
        None => WorkerId::first(slot).to_string(),
    };
    match engine.namesake(slot) {
        Some(n) => format!("{name} ({})", n.word()),
        None => name,
    }
}
