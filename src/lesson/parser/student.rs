//! `sql = "my-claim.toml"`: a lesson whose workers run a student's statements. The
//! exercise file is read (within its bounds, sandboxed) when the lesson is, from a path
//! relative to the lesson file; what the lesson asks of its workers that the exercise does
//! not define is refused at its line.

use std::path::{Component, Path};
use std::sync::Arc;

use toml::Spanned;

use crate::engine::outbox::FinalizeGuard;
use crate::engine::student::Exercise;
use crate::engine::text::quoted;
use crate::lesson::format::{Action, Setup, MAX_SQL_PATH};

use super::ctx::Ctx;
use super::error::Mistake;
use super::source::Parser;

impl Parser<'_> {
    /// The exercise `sql` names, read from beside the lesson file.
    pub(super) fn exercise(
        &self,
        v: &Option<Spanned<String>>,
    ) -> Result<Option<Arc<Exercise>>, Mistake> {
        let Some(v) = v else {
            return Ok(None);
        };
        let (name, span) = (v.get_ref(), v.span());
        let refuse =
            |why: &str| Err(self.err(span.clone(), &format!("sql = '{}' {why}", quoted(name))));
        if name.trim().is_empty() {
            return refuse("names no file");
        }
        if name.chars().count() > MAX_SQL_PATH {
            return refuse(&format!("is longer than {MAX_SQL_PATH} characters"));
        }
        if name.chars().any(char::is_control) {
            return refuse("holds a control character");
        }
        let relative = Path::new(name);
        if !relative.components().all(|c| {
            matches!(
                c,
                Component::Normal(_) | Component::CurDir | Component::ParentDir
            )
        }) {
            return refuse("is not a path relative to the lesson file");
        }
        let beside = Path::new(self.path).parent().unwrap_or(Path::new(""));
        match crate::exercise::load_file(&beside.join(relative)) {
            Ok(exercise) => Ok(Some(Arc::new(exercise))),
            Err(e) => Err(self.err(span, &format!("sql = '{}': {e}", quoted(name)))),
        }
    }

    /// The setup a student's statements can run with: leased, the exercise's own finalize
    /// guard, one claim at a time, a provider that does not fail; heartbeats only with the
    /// exercise's `[heartbeat]`.
    pub(super) fn setup_for_exercise(
        &self,
        setup: &mut Setup,
        exercise: &Exercise,
        v: &Option<Spanned<String>>,
    ) -> Result<(), Mistake> {
        let span = v.as_ref().map_or(0..0, |v| v.span());
        let faults = &setup.reliability.faults;
        let why = if !setup.leasing {
            &format!(
                "{} (leasing = false)",
                crate::engine::student::NO_LEASING_OFF
            )
        } else if setup.finalize_guard == FinalizeGuard::OwnerOnly {
            "guards its finalize with its own statements, not finalize_guard = \"owner\""
        } else if setup.batch > 1 {
            "claims one message at a time (batch)"
        } else if !faults.fail_first.is_empty() || !faults.fail_always.is_empty() {
            "defines no failed attempt (fail_first, fail_always)"
        } else {
            if exercise.heartbeat.is_none() {
                setup.reliability.heartbeats = false;
            }
            return Ok(());
        };
        Err(self.err(
            span,
            &format!("the exercise '{}' {why}", quoted(&exercise.name)),
        ))
    }
}

impl Ctx<'_> {
    /// `action` as read, or why the exercise's workers cannot take it.
    pub(super) fn allowed_by_exercise(
        &self,
        span: std::ops::Range<usize>,
        action: Action,
    ) -> Result<Action, Mistake> {
        let Some(exercise) = self.exercise else {
            return Ok(action);
        };
        let no_beat = exercise.heartbeat.is_none();
        let why = match &action {
            Action::Claim {
                message: Some(_), ..
            } => "has no claim of one message by its Id",
            Action::Leasing(false) => crate::engine::student::NO_LEASING_OFF,
            Action::Batch(k) if *k > 1 => "claims one message at a time",
            Action::Redrive(_) => "defines no failed attempt, so there is nothing to redrive",
            Action::Beat { .. } | Action::Heartbeats(true) if no_beat => "defines no [heartbeat]",
            _ => return Ok(action),
        };
        Err(self.p.err(
            span,
            &format!("the exercise '{}' {why}", quoted(&exercise.name)),
        ))
    }
}
