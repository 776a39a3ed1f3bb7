//! What kind of dashboard an [`App`](super::App) is: one variant for each legal combination
//! of a lesson, worker processes and a replay, so no `if` chain has to rule out the others.

use super::external::External;
use super::keys::Mode;
use super::lesson::LessonMode;
use super::replay::Replay;

/// The dashboard's kind. A lesson runs over the lab's own threads; worker processes are
/// watched or started without one; a replay reads its recording through a witness, as a
/// watch reads the rows of outside workers.
#[derive(Default)]
pub enum Stage {
    /// The lab's worker threads, run freely.
    #[default]
    Free,
    /// A lesson, or the lease-expiry story, stepped over the lab's threads.
    Lesson(LessonMode),
    /// Workers in other processes: watched (`--watch`) or started here (`--processes`).
    External(External),
    /// A recorded run replayed, and the witness of the facts it recorded.
    Replay(Box<Replay>, External),
}

impl Stage {
    /// The lesson being stepped, if this is one.
    pub fn lesson(&self) -> Option<&LessonMode> {
        match self {
            Stage::Lesson(l) => Some(l),
            _ => None,
        }
    }

    pub fn lesson_mut(&mut self) -> Option<&mut LessonMode> {
        match self {
            Stage::Lesson(l) => Some(l),
            _ => None,
        }
    }

    /// What follows workers this dashboard does not run as threads: processes, or a
    /// recording's witness.
    pub fn external(&self) -> Option<&External> {
        match self {
            Stage::External(x) | Stage::Replay(_, x) => Some(x),
            _ => None,
        }
    }

    pub fn external_mut(&mut self) -> Option<&mut External> {
        match self {
            Stage::External(x) | Stage::Replay(_, x) => Some(x),
            _ => None,
        }
    }

    /// The replay, if this is one.
    pub fn replay(&self) -> Option<&Replay> {
        match self {
            Stage::Replay(r, _) => Some(r),
            _ => None,
        }
    }

    pub fn replay_mut(&mut self) -> Option<&mut Replay> {
        match self {
            Stage::Replay(r, _) => Some(r),
            _ => None,
        }
    }

    /// Which key list this dashboard has.
    pub fn mode(&self) -> Mode {
        match self {
            Stage::Free => Mode::Free,
            Stage::Lesson(_) => Mode::Lesson,
            Stage::External(x) if x.children.is_some() => Mode::Processes,
            Stage::External(_) => Mode::Watch,
            Stage::Replay(..) => Mode::Replay,
        }
    }

    /// Step a lesson (or the story) from now on; put back a lesson taken out.
    pub fn begin_lesson(&mut self, lesson: LessonMode) {
        *self = Stage::Lesson(lesson);
    }

    /// Follow workers in other processes from now on.
    pub fn begin_external(&mut self, external: External) {
        *self = Stage::External(external);
    }

    /// Replay a recording, read through `witness`, from now on.
    pub fn begin_replay(&mut self, replay: Box<Replay>, witness: External) {
        *self = Stage::Replay(replay, witness);
    }

    /// The lesson taken out to be worked on; the dashboard is free play until it is put
    /// back, so the events it causes meanwhile count as the script's own.
    pub fn take_lesson(&mut self) -> Option<LessonMode> {
        match std::mem::take(self) {
            Stage::Lesson(l) => Some(l),
            other => {
                *self = other;
                None
            }
        }
    }

    /// The replay taken out to be moved; its witness stays, and sees the events the move
    /// folds. Put it back with [`Stage::put_replay`].
    pub fn take_replay(&mut self) -> Option<Replay> {
        match self {
            Stage::Replay(r, _) => Some(std::mem::take(&mut **r)),
            _ => None,
        }
    }

    pub fn put_replay(&mut self, replay: Replay) {
        if let Stage::Replay(r, _) = self {
            **r = replay;
        }
    }
}
