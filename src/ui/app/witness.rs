//! What the events table says of each worker the dashboard did not start (worker processes,
//! a recorded run): its name, whether a crash, a freeze or its leaving was recorded, and the
//! settings it recorded. Only what a row records is said; a lease that ran out with nothing
//! recorded about its holder is just that, not a crash.

use crate::engine::events::{Event, EventKind};
use crate::engine::outbox::RunSettings;
use crate::engine::process_identity::ProcessIdentity;
use crate::engine::software::Software;
use crate::ui::snapshot::{Setting, SettingsView};

/// What was last recorded about a worker itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fate {
    /// Nothing but its work: it claims, calls and finalizes.
    #[default]
    Working,
    /// A crash was recorded (by the lab, a panic, or a worker process killed or ended).
    Crashed,
    /// It was frozen (a lesson's freeze, SIGSTOP) and not woken since.
    Frozen,
    /// A worker process stopped between two actions (Ctrl-C, SIGTERM).
    Left,
    /// Woken from a recorded freeze: it carries on with the lease it believed it held, until
    /// its next write says what became of it.
    Woken,
}

/// Each slot's newest name, fate and recorded settings, folded from events.
#[derive(Debug, Clone, Default)]
pub struct Witness {
    /// By slot: the newest name seen there (`Worker-A#2`, `laptop-3`).
    pub names: Vec<String>,
    pub fates: Vec<Fate>,
    /// By slot: the settings its worker process recorded when it joined.
    joined: Vec<Option<RunSettings>>,
    /// By slot: which process it said it is when it joined, where it could tell.
    processes: Vec<Option<ProcessIdentity>>,
    /// By slot: which leaselab it said it runs when it joined, on which system.
    software: Vec<Option<Software>>,
    /// The settings the engine's worker threads ran with, as last recorded.
    engine: Option<RunSettings>,
}

impl Witness {
    /// Take in one event.
    pub fn saw(&mut self, ev: &Event) {
        if let EventKind::SettingsRecorded { settings } = &ev.kind {
            self.engine = Some(*settings);
        }
        let Some(slot) = ev.slot else { return };
        if self.names.len() <= slot {
            self.names.resize(slot + 1, String::new());
            self.fates.resize(slot + 1, Fate::Working);
            self.joined.resize(slot + 1, None);
            self.processes.resize(slot + 1, None);
            self.software.resize(slot + 1, None);
        }
        self.names[slot] = ev.actor.clone();
        let fate = &mut self.fates[slot];
        match &ev.kind {
            EventKind::Crashed { .. } => *fate = Fate::Crashed,
            // A stall freezes a worker whose name a new one goes on using: the rows cannot tell
            // the two apart, so the name's slot is not shown frozen while the new one works.
            EventKind::Froze { how } if how.starts_with("stall") => {}
            EventKind::Froze { .. } => *fate = Fate::Frozen,
            EventKind::Woke { .. } => *fate = Fate::Woken,
            EventKind::Restarted { .. } => *fate = Fate::Working,
            // Its first write after waking says what became of its lease.
            EventKind::Finalized { .. }
            | EventKind::FinalizeRejected { .. }
            | EventKind::Heartbeat { .. }
            | EventKind::LeaseLost { .. }
            | EventKind::QueuedLeaseRanOut { .. }
            | EventKind::AttemptFailed { .. }
            | EventKind::DeadLettered { .. }
                if *fate == Fate::Woken =>
            {
                *fate = Fate::Working
            }
            EventKind::Left { .. } => *fate = Fate::Left,
            EventKind::Joined {
                settings,
                process,
                software,
            } => {
                *fate = Fate::Working;
                self.joined[slot] = Some(*settings);
                self.processes[slot] = process.clone();
                self.software[slot] = Some(software.clone());
            }
            // A worker recorded as gone that acts again is a new process under its name.
            EventKind::Claimed { .. } | EventKind::Loaded { .. }
                if matches!(*fate, Fate::Crashed | Fate::Left) =>
            {
                *fate = Fate::Working
            }
            _ => {}
        }
    }

    /// Whether any worker recorded here was a process of its own (a `Joined` row).
    pub fn has_processes(&self) -> bool {
        self.joined.iter().any(Option::is_some)
    }

    /// Whether the worker in `slot` is a process that recorded its joining.
    pub fn joined(&self, slot: usize) -> bool {
        self.joined.get(slot).is_some_and(Option::is_some)
    }

    /// Which process the worker in `slot` said it is when it joined, if it could tell.
    pub fn process(&self, slot: usize) -> Option<&ProcessIdentity> {
        self.processes.get(slot).and_then(Option::as_ref)
    }

    /// Which leaselab the worker in `slot` said it runs when it joined (each part unknown
    /// where its row does not say); None for a worker that recorded no joining.
    pub fn software(&self, slot: usize) -> Option<&Software> {
        self.software.get(slot).and_then(Option::as_ref)
    }

    pub fn count(&self) -> usize {
        self.names.len()
    }

    pub fn fate(&self, slot: usize) -> Fate {
        self.fates.get(slot).copied().unwrap_or_default()
    }

    /// Whether the recorded settings say finalizes checked the owner's name only.
    pub fn owner_only(&self) -> bool {
        self.engine.is_some_and(|s| s.owner_only)
    }

    /// The settings the header shows: those of the workers still there, each a process
    /// with the settings it joined with or a thread with the engine's as last recorded
    /// (each value `Mixed` where they differ); the engine's before any worker is seen;
    /// else unknown. A database a run seeded keeps the run's row when worker processes
    /// join it later: theirs are not the run's.
    pub fn settings(&self) -> SettingsView {
        let present: Vec<RunSettings> = self
            .joined
            .iter()
            .zip(&self.fates)
            .filter(|(_, f)| matches!(f, Fate::Working | Fate::Frozen | Fate::Woken))
            .filter_map(|(s, _)| s.or(self.engine))
            .collect();
        if let (true, Some(s)) = (present.is_empty(), self.engine) {
            return SettingsView::of(&s);
        }
        let present: Vec<&RunSettings> = present.iter().collect();
        SettingsView {
            lease_ms: agreed(&present, |s| s.lease_ms),
            process_ms: agreed(&present, |s| s.process_ms),
            leasing: agreed(&present, |s| s.leasing),
            heartbeats: agreed(&present, |s| s.heartbeats),
        }
    }
}

/// One setting over several workers: theirs when they agree, `Mixed` when not, unknown when
/// there are none.
fn agreed<T: Copy + PartialEq>(all: &[&RunSettings], of: impl Fn(&RunSettings) -> T) -> Setting<T> {
    let mut values = all.iter().map(|s| of(s));
    match values.next() {
        None => Setting::Unknown,
        Some(first) if values.all(|v| v == first) => Setting::Is(first),
        Some(_) => Setting::Mixed,
    }
}
