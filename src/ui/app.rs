//! The dashboard's state and what each action does to it. No terminal here: tests drive an
//! `App` with key presses and read its state, and the renderer only borrows it.

use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use crossterm::event::{KeyCode, KeyEvent};

use crate::engine::checker::{self, HistoryCheck};
use crate::engine::clock::hms;
use crate::engine::events::Event;
use crate::engine::ledger::Ledger;
use crate::engine::store::{MessageRow, OutboxCounts, Store};
use crate::engine::worker::{WorkerState, WorkerStatus};
use crate::engine::{Engine, EngineConfig};
use crate::scenario::{lease_expiry_story, Scenario, StoryStep};

use super::keys::{self, Action};
use super::log::EventLog;
use super::theme::Theme;
use super::timeline::Timeline;
use super::DashboardOptions;

mod lesson;
pub use lesson::LessonMode;

/// Slow enough that a class can follow a claim, a countdown and a finalize.
pub const DEFAULT_LEASE_MS: i64 = 3_000;
pub const DEFAULT_PROCESS_MS: i64 = 1_200;
pub const DEFAULT_SPEED: f64 = 1.0;
/// Scenario time a worker waits after finding nothing to claim.
pub const IDLE_MS: i64 = 250;
/// What `a` adds to the clock.
pub const SMALL_ADVANCE_MS: i64 = 250;
/// Outboxes up to this size have their status counts read every frame.
const SMALL_OUTBOX: u64 = 10_000;
/// Larger ones at most this often: counting every status scans the whole table.
const COUNTS_EVERY: Duration = Duration::from_millis(300);
pub const SPEEDS: [f64; 8] = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Table,
    Log,
}

/// One worker as this frame shows it.
#[derive(Debug, Clone)]
pub struct WorkerView {
    pub slot: usize,
    pub status: WorkerStatus,
}

impl WorkerView {
    pub fn alive(&self) -> bool {
        !matches!(
            self.status.state,
            WorkerState::Crashed | WorkerState::Stopped
        )
    }
}

/// What SQLite says this frame, read through the dashboard's own read-only connection.
#[derive(Debug, Clone, Default)]
pub struct DbView {
    /// Only the rows the table can show.
    pub rows: Vec<MessageRow>,
    pub total: u64,
    pub counts: OutboxCounts,
    pub error: Option<String>,
}

pub struct App {
    /// Declared before `engine` so it closes before the temporary database is removed.
    reader: Store,
    pub engine: Engine,
    events: Receiver<Event>,
    pub theme: Theme,
    pub scenario: Scenario,
    /// Payments seeded by a reset.
    pub messages: u64,
    pub ledger: Ledger,
    pub log: EventLog,
    pub timeline: Timeline,
    pub selected: usize,
    /// Round-robin position of the single step.
    next_slot: usize,
    pub paused: bool,
    pub speed: f64,
    pub story: Vec<StoryStep>,
    pub story_at: usize,
    pub focus: Focus,
    /// First table row shown.
    pub table_offset: u64,
    /// Lines scrolled back from the newest log line; 0 follows the newest.
    pub log_back: usize,
    pub help: bool,
    pub quit: bool,
    /// The last frame was the "terminal too small" screen.
    pub too_small: bool,
    /// Feedback on the last key press, shown in the status strip.
    pub notice: Option<String>,
    // Per-frame snapshot, filled by `refresh`.
    pub now_ms: i64,
    pub workers: Vec<WorkerView>,
    pub db: DbView,
    pub table_page: u16,
    pub log_page: u16,
    counts_at: Option<Instant>,
    /// The history checker's verdict, taken once each time the outbox drains.
    pub history: Option<HistoryCheck>,
    /// What the ledger looked like when `history` was taken (claims, results, rejections).
    history_key: (u64, u64, u64, i64, usize),
    /// A lesson being stepped, with its narration.
    pub lesson: Option<LessonMode>,
}

impl App {
    /// Start the engine with everything paused; [`App::start`] lets it run.
    pub fn new(opts: DashboardOptions, theme: Theme) -> Result<App, String> {
        let scenario = opts.scenario;
        let leasing = scenario.leasing() && !opts.no_leasing;
        // The dashboard steps the story only for lease-expiry; outbox-leasing runs freely.
        scenario.check_setup(leasing, opts.workers, scenario == Scenario::LeaseExpiry)?;
        let messages = opts.messages.unwrap_or(scenario.default_messages());
        let lease_ms = opts.lease_ms.unwrap_or(DEFAULT_LEASE_MS);
        let speed = opts.speed.unwrap_or(DEFAULT_SPEED);
        let config = EngineConfig {
            workers: opts.workers,
            messages,
            lease_ms,
            process_ms: opts.process_ms.unwrap_or(DEFAULT_PROCESS_MS),
            idle_ms: IDLE_MS,
            leasing,
            db: opts.db.clone(),
            durability: Default::default(),
        };
        let engine = Engine::start(config, true).map_err(|e| e.to_string())?;
        engine.clock.set_speed(speed);
        let reader = Store::open_read_only(engine.db_path()).map_err(|e| e.to_string())?;
        let events = engine.events().clone();
        let story = if scenario == Scenario::LeaseExpiry {
            lease_expiry_story(lease_ms)
        } else {
            Vec::new()
        };
        let mut app = App {
            reader,
            events,
            theme,
            scenario,
            messages,
            ledger: Ledger::new(),
            log: EventLog::default(),
            timeline: Timeline::default(),
            selected: 0,
            next_slot: 0,
            paused: true,
            speed,
            story,
            story_at: 0,
            focus: Focus::Table,
            table_offset: 0,
            log_back: 0,
            help: false,
            quit: false,
            too_small: false,
            notice: None,
            now_ms: engine.clock.now(),
            workers: Vec::new(),
            db: DbView::default(),
            table_page: 10,
            log_page: 5,
            counts_at: None,
            history: None,
            history_key: (0, 0, 0, 0, 0),
            lesson: None,
            engine,
        };
        app.absorb_events();
        if let Some(holder) = &app.engine.recovered {
            app.notice = Some(format!(
                "database recovered from {holder}, which ended without releasing it"
            ));
        }
        if app.is_story() {
            app.notice = Some("the lease-expiry story: press n to take each step".into());
        }
        Ok(app)
    }

    /// Let the clock and the workers run, unless this is a story to be stepped.
    pub fn start(&mut self) {
        if !self.is_story() && self.lesson.is_none() {
            self.resume();
        }
    }

    /// True while story steps remain.
    pub fn is_story(&self) -> bool {
        self.story_at < self.story.len()
    }

    pub fn next_story_step(&self) -> Option<&StoryStep> {
        self.story.get(self.story_at)
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
        if matches!(ev.kind, crate::engine::events::EventKind::Seeded { .. }) {
            // A reseed starts a new story: the old ledger describes rows that are gone.
            self.ledger = Ledger::new();
        }
        if let Some(l) = &mut self.lesson {
            l.saw(ev);
        }
        self.ledger.apply(ev);
        self.timeline.apply(ev);
        if self.log.push_event(ev) && self.log_back > 0 {
            // Keep the lines the reader is looking at in place while new ones arrive.
            self.log_back += 1;
        }
    }

    /// Take this frame's snapshot: the clock, the workers, and the visible table rows.
    pub fn refresh(&mut self, table_rows: u16, log_rows: u16) {
        self.table_page = table_rows.max(1);
        self.log_page = log_rows.max(1);
        self.now_ms = self.engine.clock.now();
        self.workers = self
            .engine
            .workers()
            .iter()
            .map(|w| WorkerView {
                slot: w.slot,
                status: w.status(),
            })
            .collect();
        let counts_due = self.db.total <= SMALL_OUTBOX
            || self.counts_at.is_none_or(|t| t.elapsed() >= COUNTS_EVERY);
        let read = |app: &App| -> Result<DbView, crate::engine::store::StoreError> {
            let total = app.reader.message_count()?;
            let max_offset = total.saturating_sub(app.table_page as u64);
            let offset = app.table_offset.min(max_offset);
            let counts = if counts_due || total <= SMALL_OUTBOX {
                app.reader.outbox_counts()?
            } else {
                app.db.counts.clone()
            };
            Ok(DbView {
                rows: app.reader.messages(offset, table_rows as u64)?,
                total,
                counts,
                error: None,
            })
        };
        match read(self) {
            Ok(v) => {
                if counts_due {
                    self.counts_at = Some(Instant::now());
                }
                self.table_offset = self
                    .table_offset
                    .min(v.total.saturating_sub(self.table_page as u64));
                self.db = v;
                self.check_history();
            }
            Err(e) => self.db.error = Some(e.to_string()),
        }
        self.log_back = self
            .log_back
            .min(self.log.len().saturating_sub(self.log_page as usize));
    }

    /// Run the history checker when the outbox has drained and the work changed since the
    /// last verdict (not on every idle claim: at 100,000 rows it reads every row).
    fn check_history(&mut self) {
        let l = &self.ledger;
        let key = (
            l.claims_ok,
            l.results_written(),
            l.rejected_finalizes,
            l.seeded_upto,
            l.added.len(),
        );
        if !self.drained() {
            self.history = None;
            return;
        }
        if self.history.is_some() && key == self.history_key {
            return;
        }
        if let Ok(rows) = self.reader.messages(0, self.db.total) {
            self.history = Some(checker::check(&self.ledger, &rows));
            self.history_key = key;
        }
    }

    /// Nothing left for anyone: Pending and Processing are both empty.
    pub fn drained(&self) -> bool {
        self.db.error.is_none() && self.db.total > 0 && self.db.counts.drained()
    }

    /// The worker a single step would move, while paused.
    pub fn next_mover(&self) -> Option<usize> {
        if let Some(step) = self.next_story_step() {
            return match step {
                StoryStep::Claim { slot, .. }
                | StoryStep::Crash { slot }
                | StoryStep::Act { slot } => Some(*slot),
                StoryStep::Advance { .. } => None,
            };
        }
        let alive: Vec<usize> = self.engine.alive_slots();
        let n = self.engine.workers().len();
        (0..n)
            .map(|i| (self.next_slot + i) % n.max(1))
            .find(|s| alive.contains(s))
    }

    pub fn handle_key(&mut self, key: KeyEvent) {
        if self.help && matches!(key.code, KeyCode::Esc) {
            self.help = false;
            return;
        }
        match keys::action_for(&key) {
            // On the too-small screen nothing else can be seen happening, so only quit acts.
            Some(Action::Quit) => self.act(Action::Quit),
            Some(action) if !self.too_small => self.act(action),
            _ => {}
        }
    }

    pub fn act(&mut self, action: Action) {
        self.notice = None;
        let n_workers = self.engine.workers().len();
        match action {
            Action::Quit => self.quit = true,
            Action::Help => self.help = !self.help,
            Action::TogglePause => {
                if self.paused {
                    self.resume();
                } else {
                    self.pause();
                }
            }
            Action::Step if self.lesson.is_some() => self.lesson_next(),
            Action::Step => self.step(),
            Action::StepBack => self.lesson_back(),
            Action::NextWorker => self.selected = (self.selected + 1) % n_workers.max(1),
            Action::PrevWorker => {
                self.selected = (self.selected + n_workers.max(1) - 1) % n_workers.max(1)
            }
            Action::SelectWorker(slot) => {
                if slot < n_workers {
                    self.selected = slot;
                } else {
                    self.notice = Some(format!("there are only {n_workers} workers"));
                }
            }
            Action::Crash => self.crash_selected(),
            Action::Restart => {
                self.engine.restart(self.selected, self.paused);
                self.after_engine_call();
            }
            Action::AdvanceStep => {
                self.engine.advance(SMALL_ADVANCE_MS);
                self.after_engine_call();
            }
            Action::AdvanceLease => {
                self.engine.advance(self.lease_ms());
                self.after_engine_call();
            }
            Action::Faster => self.set_speed(next_speed(self.speed, true)),
            Action::Slower => self.set_speed(next_speed(self.speed, false)),
            Action::ToggleLeasing => {
                self.engine.set_leasing(!self.leasing());
                self.after_engine_call();
            }
            Action::AddPayment => {
                if let Err(e) = self.engine.add_payment() {
                    self.notice = Some(format!("could not add a payment: {e}"));
                }
                self.after_engine_call();
            }
            Action::Reset => self.reset(),
            Action::FocusNext => {
                self.focus = match self.focus {
                    Focus::Table => Focus::Log,
                    Focus::Log => Focus::Table,
                }
            }
            Action::ScrollUp => self.scroll(-1),
            Action::ScrollDown => self.scroll(1),
            Action::PageUp => self.scroll(-(self.page() as i64)),
            Action::PageDown => self.scroll(self.page() as i64),
            Action::Top => self.scroll(i64::MIN / 2),
            Action::Bottom => self.scroll(i64::MAX / 2),
        }
    }

    fn page(&self) -> u16 {
        match self.focus {
            Focus::Table => self.table_page,
            Focus::Log => self.log_page,
        }
    }

    /// Move the focused pane: positive is towards the end (newer log lines, higher ids).
    fn scroll(&mut self, by: i64) {
        match self.focus {
            Focus::Table => {
                let max = self.db.total.saturating_sub(self.table_page as u64) as i64;
                self.table_offset =
                    (self.table_offset as i64).saturating_add(by).clamp(0, max) as u64;
            }
            Focus::Log => {
                let max = self.log.len().saturating_sub(self.log_page as usize) as i64;
                self.log_back = (self.log_back as i64).saturating_sub(by).clamp(0, max) as usize;
            }
        }
    }

    fn after_engine_call(&mut self) {
        self.absorb_events();
        self.now_ms = self.engine.clock.now();
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
            self.story_at = self.story.len();
            self.notice = Some("story left: the workers now run on their own".into());
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
            self.notice = Some("n steps while paused: press space first".into());
            return;
        }
        if let Some(step) = self.next_story_step().cloned() {
            self.story_at += 1;
            let now = self.engine.clock.now();
            self.log.note(
                now,
                format!(
                    "story {}/{}: {}",
                    self.story_at,
                    self.story.len(),
                    step.describe()
                ),
            );
            step.apply(&mut self.engine);
            self.after_engine_call();
            if !self.is_story() {
                self.notice = Some("story done: n now steps the workers, space runs them".into());
            }
            return;
        }
        let Some(slot) = self.next_mover() else {
            self.notice = Some("every worker is down: select one and press r".into());
            return;
        };
        self.engine.step(slot);
        self.next_slot = (slot + 1) % self.engine.workers().len().max(1);
        self.after_engine_call();
    }

    fn crash_selected(&mut self) {
        let slot = self.selected;
        match self.engine.worker(slot) {
            Some(w) if w.is_alive() => {
                self.engine.crash(slot);
                self.after_engine_call();
            }
            Some(w) => {
                self.notice = Some(format!("{} is already down: r restarts it", w.name));
            }
            None => {}
        }
    }

    fn set_speed(&mut self, speed: f64) {
        self.speed = speed;
        self.engine.clock.set_speed(speed);
        self.notice = Some(format!("speed x{}", speed_label(speed)));
    }

    /// Reseed and restart the workers; leasing mode, speed and worker count stay.
    fn reset(&mut self) {
        if self.lesson.is_some() {
            return self.lesson_goto(0);
        }
        if let Err(e) = self.engine.reset(self.messages, self.paused) {
            self.notice = Some(format!("reset failed: {e}"));
            return;
        }
        self.next_slot = 0;
        self.table_offset = 0;
        if self.scenario == Scenario::LeaseExpiry && self.paused && self.leasing() {
            self.story = lease_expiry_story(self.lease_ms());
            self.story_at = 0;
        }
        self.after_engine_call();
        let now = self.engine.clock.now();
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

/// `1`, `0.25`, `8`: a speed without trailing zeros.
pub fn speed_label(speed: f64) -> String {
    let s = format!("{speed:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
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
