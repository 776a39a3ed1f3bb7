//! A dashboard whose workers run a student's statements (`--sql FILE`, or a lesson that
//! names an exercise): the keys whose work the exercise does not define say so instead.

use super::keys::Action;
use super::App;
use crate::engine::student::Exercise;
use crate::engine::text::quoted;

impl App {
    /// The exercise whose statements the workers run, if any.
    pub fn exercise(&self) -> Option<&Exercise> {
        self.engine.config.exercise.as_deref()
    }

    /// Why `action` does nothing here: the exercise defines no statement for it.
    pub(super) fn undefined_by_exercise(&self, action: Action) -> Option<String> {
        let exercise = self.exercise()?;
        let why = match action {
            Action::ToggleLeasing => "leases its messages: it has no leasing-off relay",
            Action::ToggleHeartbeats if exercise.heartbeat.is_none() => {
                "defines no [heartbeat]: its workers never extend a lease"
            }
            Action::Redrive => {
                "defines no failed attempt, so nothing is dead-lettered and there is nothing to redrive"
            }
            _ => return None,
        };
        Some(format!(
            "{}: the exercise {} {why}",
            quoted(&exercise.file),
            quoted(&exercise.name)
        ))
    }
}
