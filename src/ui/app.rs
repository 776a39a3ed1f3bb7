//! The dashboard's state and what each action does to it. No terminal here: tests drive an
//! `App` with key presses and read its state. Each frame, `refresh` copies what the screen
//! needs into a [`Snapshot`]; the renderers read that, the [`UiState`] and the theme only.

use std::collections::BTreeSet;
use std::time::Instant;

use crossbeam_channel::Receiver;
use crossterm::event::{KeyCode, KeyEvent};

use crate::engine::backend::Db;
use crate::engine::clock::hms;
use crate::engine::events::{Event, EventKind};
use crate::engine::ledger::Ledger;
use crate::engine::outbox::Reading;
use crate::engine::{Engine, EngineConfig};
use crate::scenario::Scenario;

use super::keys::{self, Action};
use super::log::EventLog;
pub use super::render::speed_label;
use super::snapshot::Snapshot;
use super::sql::SqlFold;
use super::state::UiState;
use super::theme::Theme;
use super::timeline::Timeline;
use super::{DashboardError, DashboardOptions};

mod class;
mod elsewhere;
mod exercise;
mod external;
mod freeze;
mod lesson;
mod refresh;
pub mod replay;
mod screen;
mod spotlight;
mod stage;
mod witness;
pub use super::snapshot::{DbView, WorkerView};
pub use super::state::Focus;
pub use external::ExternalMode;
pub use lesson::LessonMode;
pub use replay::{Mark, Recording, Replay};
pub use stage::Stage;

/// Why a `--sql` dashboard's provider honours the idempotency key, as its log says.
pub const IDEMPOTENT_FOR_SQL: &str = "the provider honours the idempotency key, as explore \
     --sql's does: the checks judge the student's SQL, not the provider";

/// What `a` adds to the clock.
pub const SMALL_ADVANCE_MS: i64 = 250;
pub const SPEEDS: [f64; 8] = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0];

pub struct App {
    /// What kind of dashboard this is: free play, a lesson, worker processes or a replay.
    /// Declared first, so worker processes and the events table's reader end before the
    /// database does.
    stage: Stage,
    /// Declared before `engine` so it closes before the temporary database is removed.
    reader: Box<dyn Reading + Send>,
    pub engine: Engine,
    events: Receiver<Event>,
    pub theme: Theme,
    scenario: Scenario,
    /// Payments seeded by a reset.
    messages: u64,
    pub ledger: Ledger,
    /// A class's connection for the scoreboard, and the scoreboard last read.
    class: class::Class,
    pub log: EventLog,
    pub timeline: Timeline,
    /// Each worker's last statements, for the SQL pane.
    pub sql: SqlFold,
    pub ui: UiState,
    paused: bool,
    /// Free play's worker threads frozen by `z`, by slot.
    frozen: BTreeSet<usize>,
    speed: f64,
    /// Round-robin position of the single step.
    next_slot: usize,
    counts_at: Option<Instant>,
    /// What the ledger looked like when the history verdict was taken.
    history_key: (u64, u64, u64, i64, usize),
    /// Since when the verdict waits for events that explain rows already read.
    history_waits: Option<Instant>,
    /// Empty claims seen so far, and how many of them came while the outbox was drained.
    idle_polls: (u64, u64),
    /// Results written per wall-clock second, for the throughput strip.
    throughput: super::throughput::Throughput,
    /// This frame's data, filled by `refresh`.
    snap: Snapshot,
    /// The lease-expiry story once told to its end: `b` steps back into it.
    told: Option<LessonMode>,
}

impl App {
    /// Start the engine with everything paused; [`App::start`] lets it run.
    pub fn new(opts: DashboardOptions, theme: Theme) -> Result<App, DashboardError> {
        let scenario = opts.scenario;
        let leasing = scenario.leasing() && !opts.no_leasing;
        // The dashboard steps the story only for lease-expiry; outbox-leasing runs freely.
        scenario.check_setup(leasing, opts.workers, scenario == Scenario::LeaseExpiry)?;
        let messages = opts.messages.unwrap_or(scenario.default_messages());
        let timing = opts.timing;
        let (lease_ms, speed) = (timing.lease_ms, timing.speed);
        let config = EngineConfig {
            workers: opts.workers,
            messages,
            lease_ms,
            process_ms: timing.process_ms,
            idle_ms: timing.idle_ms(),
            leasing,
            db: opts.db.clone().map(Db::from),
            durability: Default::default(),
            reliability: opts.reliability.clone(),
            exercise: opts.sql.clone(),
        };
        let engine = Engine::start(config, true)?;
        engine.clock.set_speed(speed);
        let reader = engine.db.open_reader()?;
        let mut app = App::around(engine, reader, theme, scenario, messages);
        app.speed = speed;
        app.ui.sql = opts.sql.is_some();
        app.absorb_events();
        if opts.sql.is_some() {
            // Graded as `explore --sql` grades it: the provider honours the idempotency key,
            // so the checks judge the student's statements, not the provider. (Said after
            // the seeding's events, which start the log afresh.)
            app.engine.provider.set_idempotent(true);
            let now = app.engine.clock.now();
            app.log.note(now, IDEMPOTENT_FOR_SQL);
        }
        if let Some(holder) = &app.engine.recovered {
            let notice =
                format!("database recovered from {holder}, which ended without releasing it");
            app.ui.say(notice);
        }
        if scenario == Scenario::LeaseExpiry {
            app.tell_story();
        }
        Ok(app)
    }

    /// A dashboard over a started engine: paused, at x1, with an empty ledger, log and
    /// timeline, no story, no lesson and no worker processes.
    pub(super) fn around(
        engine: Engine,
        reader: Box<dyn Reading + Send>,
        theme: Theme,
        scenario: Scenario,
        messages: u64,
    ) -> App {
        App {
            stage: Stage::Free,
            reader,
            events: engine.events().clone(),
            theme,
            scenario,
            messages,
            ledger: Ledger::new(),
            log: EventLog::default(),
            timeline: Timeline::default(),
            sql: SqlFold::new(dialect_of(&engine.db)),
            ui: UiState::default(),
            paused: true,
            frozen: BTreeSet::new(),
            speed: 1.0,
            next_slot: 0,
            counts_at: None,
            history_key: (0, 0, 0, 0, 0),
            history_waits: None,
            class: Default::default(),
            idle_polls: (0, 0),
            throughput: Default::default(),
            snap: Snapshot::default(),
            told: None,
            engine,
        }
    }

    /// Let the clock and the workers run, unless this is a story to be stepped.
    pub fn start(&mut self) {
        if !self.is_story() && self.stage.lesson().is_none() {
            self.resume();
        }
    }

    /// What kind of dashboard this is.
    pub fn stage(&self) -> &Stage {
        &self.stage
    }

    /// The frame last taken by [`App::refresh`].
    pub fn snapshot(&self) -> &Snapshot {
        &self.snap
    }

    /// True while the scenario's story has steps left.
    pub fn is_story(&self) -> bool {
        self.stage.lesson().is_some_and(|l| l.story)
    }

    pub fn paused(&self) -> bool {
        self.paused
    }

    pub fn speed(&self) -> f64 {
        self.speed
    }

    pub fn leasing(&self) -> bool {
        self.engine.settings.leasing()
    }

    pub fn lease_ms(&self) -> i64 {
        self.engine.settings.lease_ms()
    }

    /// Fold every engine event that is waiting; never blocks.
    pub fn absorb_events(&mut self) -> usize {
        let mut n = 0;
        while let Ok(ev) = self.events.try_recv() {
            self.apply_event(&ev);
            n += 1;
        }
        n
    }

    pub fn apply_event(&mut self, ev: &Event) {
        let settled;
        let ev = if matches!(ev.kind, EventKind::Claimed { .. }) {
            let mut e = ev.clone();
            self.ledger.settle_claim(&mut e);
            settled = e;
            &settled
        } else {
            ev
        };
        if matches!(ev.kind, EventKind::Seeded { .. }) {
            // A reseed starts a new story: the old ledger describes rows that are gone.
            self.ledger = Ledger::new();
        }
        if let Some(l) = self.stage.lesson_mut() {
            l.saw(ev);
        }
        if let Some(x) = self.stage.external_mut() {
            // The events table could not be read (a lost connection): the view is stale.
            if let (None, EventKind::Failed { error }) = (ev.slot, &ev.kind) {
                x.tail_ended.get_or_insert_with(|| error.clone());
                x.stale_since.get_or_insert(self.engine.clock.now());
            }
            x.saw(ev);
        }
        self.ui.tell_a_stop(ev);
        self.ledger.apply(ev);
        self.timeline.apply(ev);
        if self.stage.external().is_none() {
            // This dashboard's own threads: their settings are the engine's, now.
            self.sql.settle(&self.engine.run_settings());
        }
        self.sql.apply(ev);
        // Two workers of one name: the line says which one acted.
        let tag = ev
            .slot
            .filter(|_| self.stage.external().is_none() && self.stage.replay().is_none())
            .and_then(|slot| self.engine.namesake(slot))
            .map(|n| n.word());
        if self.log.push_event_of(ev, tag) && self.ui.log_back > 0 {
            // Keep the lines the reader is looking at in place while new ones arrive.
            self.ui.log_back += 1;
        }
    }

    /// Stop the scenario clock for a suspension, if it runs: its workers stop with the
    /// process, and a lease must not run out while nobody can act. The wall clock of
    /// worker processes, which go on, is left alone. True when it was stopped here.
    pub fn hold_clock(&self) -> bool {
        let hold = self.stage.external().is_none() && self.engine.clock.is_running();
        if hold {
            self.engine.clock.pause();
        }
        hold
    }

    /// Nothing left for anyone: Pending and Processing are both empty.
    pub fn drained(&self) -> bool {
        let db = &self.snap.db;
        // An outbox whose every row was deleted holds no work either: the history check
        // then finds its messages lost.
        let seeded = self.ledger.seeded_upto > 0 || !self.ledger.added.is_empty();
        db.error.is_none() && (db.total > 0 || seeded) && db.counts.drained()
    }

    /// The worker a single step would move, while paused.
    pub fn next_mover(&self) -> Option<usize> {
        if let Some(l) = self.stage.lesson().filter(|l| l.story) {
            let next = l.runner.lesson.steps.get(l.runner.done);
            return next
                .and_then(|s| s.actions.first())
                .and_then(|a| a.worker());
        }
        let movable = self.movable_slots();
        let n = self.worker_count();
        (0..n)
            .map(|i| (self.next_slot + i) % n.max(1))
            .find(|s| movable.contains(s))
    }

    pub fn handle_key(&mut self, key: KeyEvent) {
        // Esc closes an overlay and never quits, so a second Esc cannot end a lesson.
        if matches!(key.code, KeyCode::Esc) {
            self.ui.help = false;
            self.ui.history = None;
            return;
        }
        // Ctrl-Z suspends from any screen, the help and a replay included, as in a shell.
        if keys::action_for(self.mode(), &key) == Some(Action::Suspend) {
            return self.ui.suspend = true;
        }
        if self.ui.help {
            return self.key_under_help(&key);
        }
        let mode = self.mode();
        match keys::action_for(mode, &key) {
            // On the too-small screen nothing else can be seen happening, so only quit acts.
            Some(Action::Quit) => self.act(Action::Quit),
            Some(action) if !self.ui.too_small => self.act(action),
            None if !self.ui.too_small => {
                if let Some(action) = keys::elsewhere(mode, &key) {
                    self.not_here(mode, action);
                }
            }
            _ => {}
        }
    }

    /// Which dashboard this is, and so which keys it has.
    pub fn mode(&self) -> keys::Mode {
        self.stage.mode()
    }

    /// While the help is open only its own keys act: it scrolls, `?` closes it, `q` quits.
    /// Nothing happens behind it.
    fn key_under_help(&mut self, key: &KeyEvent) {
        let mode = self.mode();
        let lines = super::render::help::line_count(mode) as i64;
        let shown = i64::from(self.ui.height.saturating_sub(2)).max(1);
        let most = (lines - shown).max(0);
        let by = match keys::action_for(mode, key) {
            Some(Action::Quit) => return self.act(Action::Quit),
            Some(Action::Help) => return self.ui.help = false,
            Some(Action::ScrollUp) => -1,
            Some(Action::ScrollDown) => 1,
            Some(Action::PageUp) => -shown,
            Some(Action::PageDown) => shown,
            Some(Action::Top | Action::FirstEvent) => -lines,
            Some(Action::Bottom | Action::LastEvent) => lines,
            _ => return,
        };
        let at = (i64::from(self.ui.help_offset) + by).clamp(0, most);
        self.ui.help_offset = at as u16;
    }

    pub fn act(&mut self, action: Action) {
        self.ui.notice = None;
        if let Some(why) = self.undefined_by_exercise(action) {
            return self.ui.say(why);
        }
        if self.act_on_external(action) || self.act_on_class(action) {
            return;
        }
        match action {
            Action::Quit
            | Action::Help
            | Action::FocusNext
            | Action::ScrollUp
            | Action::ScrollDown
            | Action::PageUp
            | Action::PageDown
            | Action::Top
            | Action::Bottom
            | Action::History
            | Action::ToggleSql
            | Action::Suspend => self.act_on_view(action),
            Action::WorkersPage(_) | Action::HoldScreen => self.act_on_screen(action),
            Action::NextWorker
            | Action::PrevWorker
            | Action::SelectWorker(_)
            | Action::Crash
            | Action::Restart => self.act_on_worker(action),
            Action::Freeze => self.toggle_freeze(),
            Action::AddWorker | Action::RemoveWorker => self.change_crew(action),
            Action::AddPayment
            | Action::Reset
            | Action::ToggleLeasing
            | Action::ToggleHeartbeats
            | Action::Redrive => self.act_on_outbox(action),
            Action::TogglePause
            | Action::Step
            | Action::StepBack
            | Action::AdvanceStep
            | Action::AdvanceLease
            | Action::Faster
            | Action::Slower => self.act_on_time(action),
            Action::EventBack
            | Action::EventOn
            | Action::MarkBack
            | Action::MarkOn
            | Action::FirstEvent
            | Action::LastEvent => self.replay_move(action),
            // The watch's alone, done by `act_on_class`.
            Action::Scoreboard | Action::AddRoundPayments | Action::WhoRunsWhat => {}
        }
    }

    /// Keys that change only what is shown.
    fn act_on_view(&mut self, action: Action) {
        let page = self.ui.page() as i64;
        let by = match action {
            Action::Quit => return self.ui.quit = true,
            Action::Suspend => return self.ui.suspend = true,
            Action::Help => {
                self.ui.help = !self.ui.help;
                self.ui.help_offset = 0;
                return;
            }
            Action::FocusNext => return self.ui.toggle_focus(),
            Action::ToggleSql => return self.ui.sql = !self.ui.sql,
            Action::History => return self.open_history(),
            // Narration longer than its panel: PgUp/PgDn read on.
            Action::PageUp | Action::PageDown if self.ui.narration_more > 0 => {
                let most = self.ui.narration_more;
                let at = &mut self.ui.narration_scroll;
                *at = match action {
                    Action::PageDown => at.saturating_add(most).min(most),
                    _ => 0,
                };
                return;
            }
            Action::ScrollUp => -1,
            Action::ScrollDown => 1,
            Action::PageUp => -page,
            Action::PageDown => page,
            Action::Top => i64::MIN / 2,
            _ => i64::MAX / 2,
        };
        self.ui.scroll(by, self.snap.db.total, self.log.len());
    }

    /// Enter: open the history of the message under the table's cursor (or the first row
    /// shown, which the cursor then marks).
    fn open_history(&mut self) {
        if self.ui.focus != Focus::Table {
            return self
                .ui
                .say("Enter shows a message's history: ← focuses the table");
        }
        let cursor = self.ui.table_cursor.unwrap_or(self.ui.table_offset);
        let row = cursor
            .checked_sub(self.ui.table_offset)
            .and_then(|i| self.snap.db.rows.get(i as usize));
        match row {
            Some(r) => {
                self.ui.history = Some(r.id);
                self.ui.table_cursor = Some(cursor);
                self.ui.table_follows = false;
            }
            None => self.ui.say("no message under the cursor"),
        }
    }

    /// Selecting, crashing and restarting a worker.
    fn act_on_worker(&mut self, action: Action) {
        let n_workers = self.worker_count().max(1);
        if let Action::SelectWorker(choice) = action {
            // While a question waits, a digit is the learner's prediction.
            if self.predict(choice) {
                return;
            }
        }
        match action {
            Action::NextWorker => self.ui.selected = (self.ui.selected + 1) % n_workers,
            Action::PrevWorker => self.ui.selected = (self.ui.selected + n_workers - 1) % n_workers,
            Action::SelectWorker(slot) if slot < self.worker_count() => self.ui.selected = slot,
            Action::SelectWorker(_) => {
                let n = self.worker_count();
                self.ui.say(format!("there are only {n} workers"));
            }
            Action::Crash => self.crash_selected(),
            _ => {
                self.frozen.remove(&self.ui.selected);
                self.engine.restart(self.ui.selected, self.paused);
                self.after_engine_call();
            }
        }
    }

    /// `w` and `W`: one worker thread more or fewer, and the throughput strip to watch.
    fn change_crew(&mut self, action: Action) {
        if self.stage.external().is_some() {
            return self
                .ui
                .say("w and W add and stop worker threads; these workers are processes");
        }
        let n = self.engine.workers().len();
        let want = if action == Action::AddWorker {
            n + 1
        } else {
            n.saturating_sub(1)
        };
        let got = self.engine.set_workers(want, self.paused);
        self.frozen.retain(|slot| *slot < got);
        self.ui.throughput = true;
        self.ui.selected = self.ui.selected.min(got - 1);
        self.ui.say(match (got == n, action == Action::AddWorker) {
            (true, true) => format!("{got} workers is the most"),
            (true, false) => "one worker is the fewest".to_string(),
            _ => format!("{got} workers; the strip shows messages per second"),
        });
        self.after_engine_call();
    }

    /// Adding a payment, reseeding, switching leasing.
    fn act_on_outbox(&mut self, action: Action) {
        match action {
            Action::AddPayment => {
                if let Err(e) = self.engine.add_payment() {
                    self.ui.say(format!("could not add a payment: {e}"));
                }
                self.after_engine_call();
            }
            Action::Reset => self.reset(),
            Action::Redrive => {
                match self.engine.redrive(None) {
                    Ok(0) => self.ui.say("no dead letters to redrive"),
                    Ok(n) => self.ui.say(format!("redrove {n} dead letters")),
                    Err(e) => self.ui.say(format!("could not redrive: {e}")),
                }
                self.after_engine_call();
            }
            Action::ToggleHeartbeats => {
                let on = !self.engine.settings.heartbeats();
                self.engine.set_heartbeats(on);
                self.ui.say(format!(
                    "heartbeats {}",
                    if on {
                        format!("on: every {} ms", self.engine.settings.heartbeat_ms())
                    } else {
                        "off: a job longer than its lease will be taken over".into()
                    }
                ));
                self.after_engine_call();
            }
            _ => {
                self.engine.set_leasing(!self.leasing());
                self.after_engine_call();
            }
        }
    }

    /// Pausing, stepping and moving the clock.
    fn act_on_time(&mut self, action: Action) {
        match action {
            Action::TogglePause if self.paused => self.resume(),
            Action::TogglePause => self.pause(),
            Action::Step if self.stage.lesson().is_some() => self.lesson_next(),
            Action::Step => self.step(),
            Action::StepBack => self.lesson_back(),
            Action::AdvanceStep => self.advance(SMALL_ADVANCE_MS),
            Action::AdvanceLease => self.advance(self.lease_ms()),
            Action::Faster => self.set_speed(next_speed(self.speed, true)),
            _ => self.set_speed(next_speed(self.speed, false)),
        }
    }

    fn advance(&mut self, ms: i64) {
        self.engine.advance(ms);
        self.after_engine_call();
    }

    fn after_engine_call(&mut self) {
        self.absorb_events();
    }

    fn pause(&mut self) {
        self.engine.clock.pause();
        self.engine.pause_all();
        self.paused = true;
        self.absorb_events();
        let now = self.engine.clock.now();
        self.log.note(
            now,
            format!("PAUSED at {}: clock and workers stopped", hms(now)),
        );
    }

    fn resume(&mut self) {
        if self.is_story() {
            self.stage = Stage::Free;
            self.ui.say("story left: the workers now run on their own");
        }
        self.engine.clock.set_speed(self.speed);
        self.engine.clock.resume();
        self.resume_workers();
        self.paused = false;
        self.absorb_events();
        let now = self.engine.clock.now();
        self.log
            .note(now, format!("RUNNING at x{}", speed_label(self.speed)));
    }

    /// One story step, or one action of the next worker in turn.
    fn step(&mut self) {
        if !self.paused {
            return self.ui.say("n steps while paused: press space first");
        }
        let Some(slot) = self.next_mover() else {
            return self
                .ui
                .say("every worker is down or frozen: r restarts the selected one, z wakes it");
        };
        self.engine.step(slot);
        self.next_slot = (slot + 1) % self.worker_count().max(1);
        self.after_engine_call();
    }

    fn crash_selected(&mut self) {
        let slot = self.ui.selected;
        match self.engine.worker(slot) {
            Some(w) if w.is_alive() => {
                self.frozen.remove(&slot);
                self.engine.crash(slot);
                self.after_engine_call();
            }
            Some(w) => {
                let notice = format!("{} is already down: r restarts it", w.name);
                self.ui.say(notice);
            }
            None => {}
        }
    }

    fn set_speed(&mut self, speed: f64) {
        self.speed = speed;
        self.engine.clock.set_speed(speed);
        self.ui.say(format!("speed x{}", speed_label(speed)));
    }

    /// Reseed and restart the workers; leasing mode, speed and worker count stay.
    fn reset(&mut self) {
        if self.stage.lesson().is_some() {
            return self.lesson_goto(0);
        }
        self.frozen.clear();
        if let Err(e) = self.engine.reset(self.messages, self.paused) {
            return self.ui.say(format!("reset failed: {e}"));
        }
        self.told = None;
        self.next_slot = 0;
        self.ui.table_offset = 0;
        if self.scenario == Scenario::LeaseExpiry && self.paused && self.leasing() {
            self.tell_story();
        }
        self.after_engine_call();
        let now = self.engine.clock.now();
        self.ui.log_back = 0;
        self.log
            .note(now, "RESET: outbox reseeded, workers restarted");
    }
}

/// The next speed step up or down from `current`.
pub fn next_speed(current: f64, faster: bool) -> f64 {
    if faster {
        SPEEDS
            .iter()
            .copied()
            .find(|s| *s > current + 1e-9)
            .unwrap_or(current)
    } else {
        SPEEDS
            .iter()
            .rev()
            .copied()
            .find(|s| *s < current - 1e-9)
            .unwrap_or(current)
    }
}

/// Which database's statements the workers of `db` run.
fn dialect_of(db: &Db) -> crate::engine::statements::Dialect {
    match db {
        Db::Sqlite(_) => crate::engine::statements::Dialect::Sqlite,
        Db::Postgres(_) => crate::engine::statements::Dialect::Postgres,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_steps_stop_at_the_ends_and_snap_odd_values() {
        assert_eq!(next_speed(1.0, true), 2.0);
        assert_eq!(next_speed(0.25, false), 0.25);
        assert_eq!(next_speed(32.0, true), 32.0);
        assert_eq!(next_speed(3.0, false), 2.0);
        assert_eq!(speed_label(0.25), "0.25");
        assert_eq!(speed_label(2.0), "2");
    }
}
