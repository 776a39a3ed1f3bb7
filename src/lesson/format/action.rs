//! What a step makes happen (`do`): the actions a lesson names, in the lesson's words.

use crate::engine::worker_id::WorkerId;

use super::MessageSel;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// The worker claims the oldest claimable message, or the one named.
    Claim {
        slot: usize,
        message: Option<MessageSel>,
    },
    /// The worker takes its next action (claim, provider call, finalize).
    Act {
        slot: usize,
    },
    /// The worker extends the lease it holds, once (heartbeats must be on).
    Beat {
        slot: usize,
    },
    Crash {
        slot: usize,
    },
    Restart {
        slot: usize,
    },
    /// The worker freezes (a long GC pause): it holds what it holds and does nothing.
    Pause {
        slot: usize,
    },
    /// The worker in `slot` freezes holding what it holds, and its supervisor starts a new
    /// worker under its very name, in slot `new`.
    Stall {
        slot: usize,
        new: usize,
    },
    Resume {
        slot: usize,
    },
    Advance {
        ms: i64,
    },
    /// The clock moves `ms` while every live worker works on what it holds: with
    /// heartbeats on, each beats at its interval (in slot order, so replays agree).
    Work {
        ms: i64,
    },
    Heartbeats(bool),
    /// Put a dead letter (or every one) back to Pending with fresh attempts.
    Redrive(Option<MessageSel>),
    /// The provider stops failing for a message (or for all): the fault was fixed.
    Heal(Option<MessageSel>),
    Leasing(bool),
    /// Grow or shrink the crew to this many workers (new ones start paused, like all).
    Workers(usize),
    /// Messages each worker claims per transaction from its next claim on.
    Batch(usize),
    /// Switch the provider's idempotency-key honouring on or off.
    Idempotency(bool),
    /// Add this many payments, each with its outbox row (`add-payment` alone adds one).
    AddPayment(u64),
    /// Every live, unpaused worker acts in turn until the condition holds.
    RunUntil(Condition),
}

impl Action {
    /// The action in a few words, for the event log.
    pub fn describe(&self) -> String {
        let w = |slot: &usize| WorkerId::first(*slot).to_string();
        let on_off = |on: &bool| if *on { "on" } else { "off" };
        let which = |m: &Option<MessageSel>| {
            m.as_ref()
                .map_or_else(|| "every message".to_string(), |m| m.key.clone())
        };
        match self {
            Action::Claim {
                slot,
                message: Some(m),
            } => format!("{} tries to claim {}", w(slot), m.key),
            Action::Claim {
                slot,
                message: None,
            } => format!("{} claims", w(slot)),
            Action::Act { slot } => format!("{} takes its next action", w(slot)),
            Action::Beat { slot } => format!("{} extends its lease", w(slot)),
            Action::Crash { slot } => format!("{} crashes", w(slot)),
            Action::Restart { slot } => format!("{} restarts", w(slot)),
            Action::Pause { slot } => format!("{} pauses", w(slot)),
            Action::Stall { slot, .. } => format!("{} stalls", w(slot)),
            Action::Resume { slot } => format!("{} resumes", w(slot)),
            Action::Advance { ms } => format!("advance the clock by {ms} ms"),
            Action::Work { ms } => format!("work for {ms} ms"),
            Action::Heartbeats(on) => format!("heartbeats {}", on_off(on)),
            Action::Redrive(m) => format!("redrive {}", which(m)),
            Action::Heal(m) => format!("heal the provider for {}", which(m)),
            Action::Leasing(on) => format!("leasing {}", on_off(on)),
            Action::Workers(n) => format!("{n} workers"),
            Action::Batch(k) => format!("claim {k} at a time"),
            Action::Idempotency(on) => format!("provider idempotency {}", on_off(on)),
            Action::AddPayment(n) => format!("add {n} payment(s)"),
            Action::RunUntil(Condition::Drained) => "run until drained".to_string(),
        }
    }

    /// The one worker the action moves, if it moves one.
    pub fn worker(&self) -> Option<usize> {
        match self {
            Action::Claim { slot, .. }
            | Action::Act { slot }
            | Action::Beat { slot }
            | Action::Crash { slot }
            | Action::Restart { slot }
            | Action::Pause { slot }
            | Action::Stall { slot, .. }
            | Action::Resume { slot } => Some(*slot),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// Nothing Pending or Processing and every live, unpaused worker holds nothing.
    Drained,
}
