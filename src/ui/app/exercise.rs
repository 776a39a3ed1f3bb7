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
            Action::ToggleLeasing => crate::engine::student::NO_LEASING_OFF,
            Action::ToggleHeartbeats if exercise.heartbeat.is_none() => {
                "defines no [heartbeat]: its workers never extend a lease"
            }
            Action::Redrive => {
                "defines no failed attempt, so nothing is dead-lettered and there is nothing to redrive"
            }
            _ => return None,
        };
        // The file alone where its name is the exercise's: the strip has 80 columns.
        let stem = std::path::Path::new(&exercise.file).file_stem();
        Some(
            if stem.is_some_and(|s| s.to_string_lossy() == exercise.name) {
                format!("{} {why}", quoted(&exercise.file))
            } else {
                format!(
                    "{}: the exercise {} {why}",
                    quoted(&exercise.file),
                    quoted(&exercise.name)
                )
            },
        )
    }
}
