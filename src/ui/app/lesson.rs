//! A lesson in the dashboard: `n` runs the next step and checks its expectations, `b` goes
//! one step back by reseeding and replaying, and free play (space) between steps is
//! allowed; the panel then says the state has left the script.

use crate::engine::events::{Event, EventKind};
use crate::engine::worker::Control;
use crate::lesson::{Lesson, LessonRunner, StepReport};
use crate::scenario::Scenario;
use crate::setup::Timing;

use super::{App, DashboardOptions, Theme};

/// The lesson the dashboard is stepping.
#[derive(Debug, Clone)]
pub struct LessonMode {
    pub runner: LessonRunner,
    /// Something happened outside the script since the last scripted step.
    changed: bool,
    /// The clock when the script last stood still; free play may move it.
    script_clock: i64,
    /// The scenario's story rather than a lesson: it ends, or space leaves it, into free
    /// play with the scenario's outbox.
    pub story: bool,
    /// The learner's prediction (0-based) for the next step's question.
    pub prediction: Option<usize>,
    /// `n` was pressed once at a question: it is on screen, and the next `n` reveals.
    pub asked: bool,
    /// The step just run asked a question: what was predicted (None: no prediction).
    pub predicted: Option<Option<usize>>,
}

impl LessonMode {
    fn new(runner: LessonRunner, now_ms: i64, story: bool) -> LessonMode {
        LessonMode {
            runner,
            changed: false,
            script_clock: now_ms,
            story,
            prediction: None,
            asked: false,
            predicted: None,
        }
    }

    /// An engine event that did not come from a scripted step.
    pub(super) fn saw(&mut self, ev: &Event) {
        if !matches!(
            ev.kind,
            EventKind::Paused | EventKind::Resumed | EventKind::Note { .. }
        ) {
            self.changed = true;
        }
    }

    /// Free play has changed the state away from what the script left.
    pub fn left_script(&self, now_ms: i64) -> bool {
        self.changed || now_ms != self.script_clock
    }

    /// The question of the next step, while the outbox is where the script left it.
    pub fn question(&self, now_ms: i64) -> Option<&crate::lesson::Quiz> {
        if self.left_script(now_ms) {
            return None;
        }
        self.runner
            .lesson
            .steps
            .get(self.runner.done)
            .and_then(|s| s.quiz.as_ref())
    }

    /// The report of the step just run, if any.
    pub fn last_report(&self) -> Option<&StepReport> {
        self.runner
            .done
            .checked_sub(1)
            .and_then(|i| self.runner.reports.get(i))
    }
}

impl App {
    /// Open a lesson paused before its first step. `opts` gives speed and database only:
    /// the lesson's setup decides the outbox.
    pub fn for_lesson(
        lesson: Lesson,
        opts: DashboardOptions,
        theme: Theme,
    ) -> Result<App, crate::ui::DashboardError> {
        let setup = lesson.setup.clone();
        let opts = DashboardOptions {
            scenario: Scenario::OutboxLeasing,
            workers: setup.workers,
            messages: Some(setup.messages),
            timing: Timing {
                lease_ms: setup.lease_ms,
                process_ms: setup.process_ms,
                ..opts.timing
            },
            no_leasing: !setup.leasing,
            sql: setup.exercise.clone(),
            ..opts
        };
        let mut app = App::new(opts, theme)?;
        // A lesson that changes the crew or the batch size is about throughput: show it.
        app.ui.throughput = setup.batch > 1
            || lesson.steps.iter().flat_map(|s| &s.actions).any(|a| {
                matches!(
                    a,
                    crate::lesson::Action::Workers(_) | crate::lesson::Action::Batch(_)
                )
            });
        let mut runner = LessonRunner::new(lesson);
        runner.prepare(&mut app.engine);
        app.absorb_events();
        app.stage
            .begin_lesson(LessonMode::new(runner, app.engine.clock.now(), false));
        // A recovered database is news the teacher must see; the strip says how to go on.
        if app.ui.notice.is_none() {
            app.ui.say("n takes the first step");
        }
        Ok(app)
    }

    /// Step the lease-expiry story from the outbox as it stands (just seeded, paused).
    pub(super) fn tell_story(&mut self) {
        let config = crate::engine::EngineConfig {
            messages: self.messages,
            lease_ms: self.lease_ms(),
            leasing: self.leasing(),
            ..self.engine.config.clone()
        };
        let runner = LessonRunner::new(crate::scenario::lease_expiry_story(&config));
        let now = self.engine.clock.now();
        self.stage.begin_lesson(LessonMode::new(runner, now, true));
        // As a lesson says it: short enough to leave room for what n does, at 80 columns.
        self.ui.say("n takes the first step");
    }

    /// `lesson NAME` in the header instead of the scenario.
    pub fn setting_label(&self) -> (&'static str, String) {
        if self.stage.replay().is_some() {
            return ("replay ", self.engine.db_shown());
        }
        match self.stage.lesson() {
            Some(l) if !l.story => ("lesson ", l.runner.lesson.name.clone()),
            // The student's statements: the exercise's name says whose SQL runs.
            None if self.exercise().is_some() => (
                "free play --sql ",
                self.exercise().map_or_else(String::new, |e| e.name.clone()),
            ),
            // Headless, this scenario also tells the recovery story; here it does not.
            None if self.scenario == Scenario::OutboxLeasing => {
                ("free play ", self.scenario.name().to_string())
            }
            _ => ("scenario ", self.scenario.name().to_string()),
        }
    }

    /// Stop free play and put the outbox back where the script says it is.
    fn back_on_script(&mut self) {
        if !self.paused {
            self.pause();
        }
        let off = self
            .stage
            .lesson()
            .is_some_and(|l| l.left_script(self.engine.clock.now()));
        if off {
            let done = self.stage.lesson().map_or(0, |l| l.runner.done);
            self.lesson_goto(done);
        }
    }

    /// A digit while a question waits: the learner's prediction. False when no question
    /// waits (the digit then selects a worker).
    pub(super) fn predict(&mut self, choice: usize) -> bool {
        let now = self.engine.clock.now();
        let Some(mode) = self.stage.lesson_mut() else {
            return false;
        };
        let Some(n) = mode
            .question(now)
            .filter(|_| mode.asked)
            .map(|q| q.choices.len())
        else {
            return false;
        };
        if choice >= n {
            self.ui.say(format!("this question has choices 1-{n}"));
            return true;
        }
        mode.prediction = Some(choice);
        self.ui
            .say(format!("you predict {}: n reveals", choice + 1));
        true
    }

    pub(super) fn lesson_next(&mut self) {
        self.back_on_script();
        let now = self.engine.clock.now();
        if let Some(mode) = self.stage.lesson_mut() {
            let waiting = mode.question(now).map(|q| q.choices.len());
            if let (Some(n), false) = (waiting, mode.asked) {
                mode.asked = true;
                self.ui.say(format!(
                    "predict: press 1-{n}, then n reveals (n alone reveals without a prediction)"
                ));
                return;
            }
        }
        let Some(mut mode) = self.stage.take_lesson() else {
            return;
        };
        if mode.runner.finished() {
            // The keys are in the strip beside it (LESSON DONE: b back, R, space).
            self.ui.say("the lesson is over");
            self.stage.begin_lesson(mode);
            return;
        }
        self.run_next(&mut mode);
        if mode.story && mode.runner.finished() {
            self.ui
                .say("story done: n now steps the workers, space runs them, b steps back into it");
            self.told = Some(mode);
            return;
        }
        if mode.runner.finished() {
            self.ui.say("that was the last step");
        }
        self.stage.begin_lesson(mode);
    }

    pub(super) fn lesson_back(&mut self) {
        if self.stage.lesson().is_none() {
            // The story told to its end (only free play keeps one): back into it, at its
            // last step but one.
            if let Some(mode) = self.told.take() {
                self.stage.begin_lesson(mode);
            }
        }
        let Some(done) = self.stage.lesson().map(|l| l.runner.done) else {
            self.ui
                .say("b steps back in a lesson (leaselab lesson NAME)");
            return;
        };
        if !self.paused {
            self.pause();
        }
        self.lesson_goto(done.saturating_sub(1));
    }

    /// Reseed and replay the first `steps` steps.
    pub(super) fn lesson_goto(&mut self, steps: usize) {
        let Some(mut mode) = self.stage.take_lesson() else {
            return;
        };
        // While the mode is taken out, events count as the script's own.
        if let Err(e) = mode.runner.reseed(&mut self.engine) {
            self.ui.say(format!("could not reseed: {e}"));
            self.stage.begin_lesson(mode);
            return;
        }
        self.paused = true;
        self.next_slot = 0;
        self.ui.table_offset = 0;
        self.absorb_events();
        for _ in 0..steps.min(mode.runner.total()) {
            self.run_next(&mut mode);
        }
        mode.changed = false;
        mode.script_clock = self.engine.clock.now();
        (mode.prediction, mode.asked, mode.predicted) = (None, false, None);
        let now = self.engine.clock.now();
        self.log.note(
            now,
            format!(
                "LESSON back to step {}/{}: outbox reseeded, earlier steps replayed",
                mode.runner.done,
                mode.runner.total()
            ),
        );
        self.stage.begin_lesson(mode);
    }

    /// Run the next step on the engine and check its expectations.
    fn run_next(&mut self, mode: &mut LessonMode) {
        let number = mode.runner.done + 1;
        let what = mode
            .runner
            .lesson
            .steps
            .get(mode.runner.done)
            .map(|s| s.actions_text.join(", "))
            .unwrap_or_default();
        let now = self.engine.clock.now();
        let label = if mode.story { "STORY" } else { "LESSON" };
        self.log.note(
            now,
            format!("{label} step {number}/{}: {what}", mode.runner.total()),
        );
        let asked = mode
            .runner
            .lesson
            .steps
            .get(mode.runner.done)
            .is_some_and(|s| s.quiz.is_some());
        mode.predicted = asked.then_some(mode.prediction);
        let show = mode
            .runner
            .lesson
            .steps
            .get(mode.runner.done)
            .and_then(|s| s.show);
        (mode.prediction, mode.asked) = (None, false);
        let error = mode.runner.apply_next(&mut self.engine).err();
        self.after_engine_call();
        if show == Some(crate::lesson::Pane::Sql) {
            self.ui.sql = true;
        }
        let checks = mode.runner.evaluate(&self.engine, &self.ledger);
        mode.runner.record(error, checks);
        mode.changed = false;
        mode.script_clock = self.engine.clock.now();
    }

    /// Free play resumes every worker but one frozen (by `z`, or by the lesson).
    pub(super) fn resume_workers(&self) {
        for w in self.engine.workers() {
            if !self.is_frozen(w.slot) {
                w.send(Control::Resume);
            }
        }
    }
}
