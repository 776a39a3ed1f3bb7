//! `z` in free play: the selected worker thread freezes where it stands, holding what it
//! holds, and does nothing (no step, no run, no heartbeat) until `z` wakes it. Woken, it
//! carries on with what it believed, so its next write meets the lease version it holds:
//! the zombie of the lessons, improvised. Both are recorded as a lesson's `pause` and
//! `resume` are, so a replay and a watch of the database show them.

use crate::engine::worker::Control;

use super::App;

/// How the rows and the log name a freeze by `z`.
pub const FREEZE_HOW: &str = "z key";

impl App {
    /// `z`: freeze the selected worker, or wake it when it is frozen.
    pub(super) fn toggle_freeze(&mut self) {
        let slot = self.ui.selected;
        let Some(w) = self.engine.worker(slot) else {
            return;
        };
        let (name, alive) = (w.name.clone(), w.is_alive());
        if self.frozen.remove(&slot) {
            return self.wake(slot, &name);
        }
        if !alive {
            return self.ui.say(format!("{name} is down: r restarts it"));
        }
        if !self.engine.freeze(slot, FREEZE_HOW) {
            return self.ui.say(format!(
                "{name} did not stop (it may be reconnecting): it is not frozen"
            ));
        }
        self.frozen.insert(slot);
        self.after_engine_call();
        let lease = self.engine.worker(slot).and_then(|w| w.status().lease);
        self.ui.say(match lease {
            Some(l) => format!(
                "{name} FROZEN holding {} (lease v{}); z wakes it",
                l.key, l.version
            ),
            None => format!("{name} FROZEN holding no lease; z wakes it"),
        });
    }

    /// Record the wake first (its next write may follow at once), then let it run if the
    /// dashboard runs; paused, it moves at its turn of `n` like the others.
    fn wake(&mut self, slot: usize, name: &str) {
        self.engine.wake(slot, FREEZE_HOW);
        if !self.paused {
            if let Some(w) = self.engine.worker(slot) {
                w.send(Control::Resume);
            }
        }
        self.after_engine_call();
        self.ui
            .say(format!("{name} woken: it carries on with what it believed"));
    }

    /// Whether the worker in `slot` is frozen: by `z`, or by a lesson's `pause`.
    pub(super) fn is_frozen(&self, slot: usize) -> bool {
        self.frozen.contains(&slot)
            || self
                .stage
                .lesson()
                .is_some_and(|l| l.runner.frozen.contains(&slot))
    }

    /// The worker threads a single step may move: alive and not frozen.
    pub(super) fn movable_slots(&self) -> Vec<usize> {
        self.engine
            .alive_slots()
            .into_iter()
            .filter(|slot| !self.is_frozen(*slot))
            .collect()
    }
}
