//! Who is here now, as a watch can know it, and whether the teacher holds the class: what
//! the watch shows as `left` and `CLASS HELD`. On PostgreSQL the server knows who is
//! connected (`pg_stat_activity`, by `application_name`). On SQLite there is no server:
//! a worker process wrote which process it is in its `Joined` row, and a watch on the same
//! machine looks that process up. Gone, the worker is `left`; running (also stopped with
//! SIGSTOP), it is not; on another machine or in another pid namespace, or with no
//! identity recorded, nothing is said.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use crate::engine::outbox::Reading;
use crate::engine::pg::{named_in, session_name};
use crate::engine::process_identity::Presence;

use super::super::witness::{Fate, Witness};

/// How often the watch asks again.
const ASK_EVERY: Duration = Duration::from_secs(1);

/// What the watch last learned of who is here.
#[derive(Default)]
pub(in crate::ui::app) struct WhoIsHere {
    /// The worker sessions the server has (PostgreSQL); None where no server can tell.
    sessions: Option<HashSet<String>>,
    /// Slots whose worker process is known to have ended, on this machine (SQLite).
    ended: HashSet<usize>,
    asked_at: Option<Instant>,
    /// The teacher holds the class (`leaselab class hold`).
    pub(in crate::ui::app) teacher_holds: bool,
}

impl WhoIsHere {
    /// Ask the server, or this machine, again at most every [`ASK_EVERY`]. A failed
    /// question keeps the last answer.
    pub(in crate::ui::app) fn look(&mut self, reader: &dyn Reading, witness: &Witness) {
        if self.asked_at.is_some_and(|t| t.elapsed() < ASK_EVERY) {
            return;
        }
        self.asked_at = Some(Instant::now());
        if let Ok(held) = reader.held_by_teacher() {
            self.teacher_holds = held;
        }
        if let Ok(sessions) = reader.sessions() {
            self.sessions = sessions.map(|s| s.iter().map(|s| named_in(s).to_string()).collect());
        }
        self.ended = match self.sessions {
            Some(_) => HashSet::new(),
            None => (0..witness.count())
                .filter(|&slot| {
                    witness
                        .process(slot)
                        .is_some_and(|p| p.presence() == Presence::Gone)
                })
                .collect(),
        };
    }

    /// Ask again at the next look: a worker joined, and has its session or process already.
    pub(in crate::ui::app) fn ask_again(&mut self) {
        self.asked_at = None;
    }

    /// A worker process gone: no session of its name on the server, or its process ended
    /// on this machine, however it went (Ctrl-C, kill -9, a closed laptop). Only a process
    /// that recorded its joining is looked for; a recorded crash stays a crash.
    pub(in crate::ui::app) fn gone(&self, witness: &Witness, slot: usize, name: &str) -> bool {
        if !witness.joined(slot) || witness.fate(slot) == Fate::Crashed {
            return false;
        }
        match &self.sessions {
            Some(sessions) => !sessions.contains(&session_name(name)),
            None => self.ended.contains(&slot),
        }
    }
}
