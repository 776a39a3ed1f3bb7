//! A key this dashboard does not have, though another dashboard has: one line says why,
//! rather than nothing happening.

use super::keys::{self, Action};
use super::App;

impl App {
    /// A key this dashboard does not have, though another has: say why, and where the keys
    /// that work are listed.
    pub(super) fn not_here(&mut self, mode: keys::Mode, action: Action) {
        use keys::Mode;
        if (mode, action) == (Mode::Free, Action::StepBack) && self.told.is_some() {
            // Free play after the story told to its end: `b` steps back into it.
            return self.lesson_back();
        }
        let why = match (mode, action) {
            (Mode::Replay, _) => {
                "a replay changes nothing: ←/→ one event, [/] a mark, Home/End the ends, ? the keys"
            }
            (Mode::Free, Action::StepBack) => "b steps back in a lesson (leaselab lesson NAME)",
            (Mode::Lesson, Action::Freeze) if self.is_story() => {
                "z freezes a worker in free play: space leaves the story for it"
            }
            (Mode::Lesson, Action::Freeze) => {
                "z is free play's: here the lesson's steps drive the workers (its `pause` freezes one)"
            }
            (Mode::Processes, Action::Freeze) => {
                concat!(
                    "worker processes: space stops the selected one (",
                    crate::platform::children::stop_word!(),
                    "), holding its lease, and wakes it"
                )
            }
            (
                Mode::Watch,
                Action::Crash | Action::Restart | Action::TogglePause | Action::Freeze,
            ) => {
                "watch mode: the workers are other processes; stop them where they run"
            }
            (
                Mode::Watch | Mode::Processes,
                Action::Step
                | Action::AdvanceStep
                | Action::AdvanceLease
                | Action::Faster
                | Action::Slower,
            ) => "worker processes run on the wall clock: it cannot step, jump or change speed",
            (Mode::Watch | Mode::Processes, Action::ToggleLeasing | Action::ToggleHeartbeats) => {
                "each worker process has its own leasing and heartbeats (worker --no-leasing, --no-heartbeat)"
            }
            (Mode::Watch, Action::Reset) => "watch mode never empties a database other workers use",
            (Mode::Processes, Action::Reset) => {
                "R does nothing with worker processes: quit and start again for a fresh outbox"
            }
            (Mode::Watch | Mode::Processes, Action::AddWorker | Action::RemoveWorker) => {
                "w and W add and stop worker threads; these workers are processes"
            }
            _ => "that key does nothing here: ? lists the keys of this screen",
        };
        self.ui.say(why);
    }
}
