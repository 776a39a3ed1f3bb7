//! `leaselab replay DB`: the dashboard over a recorded run, read from its `LeaseEvents`.
//! A position is a number of events; at every position the table is rebuilt from the
//! events up to it (the rows as they stood), and the ledger, timeline, log and history
//! verdict are folded from the same events. `←`/`→` move one event, `[`/`]` to the
//! previous or next mark (a takeover, a rejected finalize, a duplicate, a lost lease, a
//! dead letter), `Home`/`End` to either end.
//!
//! `recording.rs` reads and checks the rows, `table.rs` rebuilds the outbox from them; here,
//! moving through them. What has been folded is kept every so many events, so a step back
//! folds again from the nearest kept position, not from the first event.

mod recording;
pub mod refusal;
mod table;

use std::sync::{Arc, Mutex};

use crate::engine::backend::Db;
use crate::engine::events_table::Translator;
use crate::engine::ledger::Ledger;
use crate::engine::{Engine, EngineConfig};
use crate::scenario::Scenario;
use crate::ui::keys::Action;
use crate::ui::log::EventLog;
use crate::ui::snapshot::ReplayView;
use crate::ui::sql::SqlFold;
use crate::ui::timeline::Timeline;

pub use recording::{Mark, Recording};
pub use refusal::{BadRow, ReplayError};
use table::{ReplayOutbox, Table};

use super::witness::Witness;
use super::{App, Theme};

/// Everything a position's events have made, kept at some positions: a step back starts
/// from the nearest one instead of the first event.
#[derive(Clone)]
struct Fold {
    table: Table,
    translator: Translator,
    ledger: Ledger,
    timeline: Timeline,
    sql: SqlFold,
    log: EventLog,
    witness: Witness,
}

/// How many positions are kept at most: memory stays a bounded number of folds, and a
/// step back folds at most a thirty-second of the recording again.
const KEPT: usize = 32;
/// Below this spacing keeping costs more than folding again.
const MIN_SPACING: usize = 2_048;

/// Where a replay stands.
#[derive(Default)]
pub struct Replay {
    recording: Recording,
    /// Events folded so far.
    pub position: usize,
    table: Arc<Mutex<Table>>,
    translator: Translator,
    /// Folds kept at every `spacing` events, in order of position; the first at 0.
    kept: Vec<(usize, Fold)>,
    spacing: usize,
}

impl App {
    /// The dashboard over `db`'s recorded run, at its first event.
    pub fn replay(db: Db, theme: Theme) -> std::result::Result<App, ReplayError> {
        let recording = Recording::load(&db)?;
        App::replay_of(db, recording, theme)
    }

    /// As [`App::replay`], with the recording already read. Nothing opens the database
    /// again: the dashboard reads the rebuilt table only.
    pub fn replay_of(
        db: Db,
        recording: Recording,
        theme: Theme,
    ) -> std::result::Result<App, ReplayError> {
        let config = EngineConfig {
            workers: 0,
            messages: 0,
            db: Some(db.clone()),
            ..EngineConfig::default()
        };
        let table = Arc::new(Mutex::new(Table::default()));
        let store = Box::new(ReplayOutbox {
            table: table.clone(),
        });
        let engine = Engine::over_recording(db, config, store);
        let reader = Box::new(ReplayOutbox {
            table: table.clone(),
        });
        let mut app = App::around(engine, reader, theme, Scenario::OutboxLeasing, 0);
        let total = recording.rows.len();
        let replay = Box::new(Replay {
            recording,
            position: 0,
            table,
            translator: Translator::new(),
            kept: Vec::new(),
            spacing: (total / KEPT).max(MIN_SPACING),
        });
        app.stage
            .begin_replay(replay, super::external::External::replaying());
        app.keep_fold();
        // One pass to the end keeps a fold every `spacing` events: from then on any position
        // is at most that many events from one.
        app.replay_to(total);
        app.replay_to(1);
        app.ui
            .say("replay: → one event, ] the next mark, End the last event, ? the keys, q quits");
        Ok(app)
    }

    /// What the replay has folded so far, to keep or to go back to.
    fn fold(&self, r: &Replay) -> Fold {
        Fold {
            table: r.table.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            translator: r.translator.clone(),
            ledger: self.ledger.clone(),
            timeline: self.timeline.clone(),
            sql: self.sql.clone(),
            log: self.log.clone(),
            witness: self
                .stage
                .external()
                .map(|x| x.witness.clone())
                .unwrap_or_default(),
        }
    }

    /// Keep the fold of the replay's position.
    fn keep_fold(&mut self) {
        let Some(r) = self.stage.take_replay() else {
            return;
        };
        let fold = self.fold(&r);
        let mut r = r;
        r.kept.push((r.position, fold));
        self.stage.put_replay(r);
    }

    /// Go back to the nearest kept fold at or before `position`.
    fn restore_fold(&mut self, r: &mut Replay, position: usize) {
        let Some((at, fold)) = r.kept.iter().rev().find(|(p, _)| *p <= position) else {
            return;
        };
        let fold = fold.clone();
        *r.table.lock().unwrap_or_else(|p| p.into_inner()) = fold.table;
        r.translator = fold.translator;
        r.position = *at;
        self.ledger = fold.ledger;
        self.timeline = fold.timeline;
        self.sql = fold.sql;
        self.log = fold.log;
        if let Some(x) = self.stage.external_mut() {
            x.witness = fold.witness;
        }
        self.ui.log_back = 0;
    }

    /// Move the replay to `position` events, folding the events from the nearest kept
    /// position before it (or from where it stands, when that is nearer).
    pub fn replay_to(&mut self, position: usize) {
        let Some(mut r) = self.stage.take_replay() else {
            return;
        };
        let position = position.min(r.recording.rows.len());
        // Back, or forward past a kept fold: start from the nearest fold before `position`.
        let nearest = r.kept.iter().rev().find(|(p, _)| *p <= position);
        if position < r.position || nearest.is_some_and(|(p, _)| *p > r.position) {
            self.restore_fold(&mut r, position);
        }
        while r.position < position {
            let row = &r.recording.rows[r.position];
            r.table.lock().unwrap_or_else(|p| p.into_inner()).apply(row);
            for ev in r.translator.events(row) {
                self.apply_event(&ev);
            }
            r.position += 1;
            let newest = r.kept.last().map_or(0, |k| k.0);
            if r.position % r.spacing == 0 && r.position > newest {
                let fold = self.fold(&r);
                r.kept.push((r.position, fold));
            }
        }
        let at = position
            .checked_sub(1)
            .and_then(|i| r.recording.rows.get(i))
            .or(r.recording.rows.first())
            .map_or(0, |row| row.at_ms);
        self.engine.clock.set(at);
        self.stage.put_replay(r);
    }

    /// A replay's own keys: one event, a mark, either end.
    pub(super) fn replay_move(&mut self, action: Action) {
        let Some(r) = self.stage.replay() else { return };
        let (at, total) = (r.position, r.recording.rows.len());
        let next_mark = r.recording.marks.iter().find(|m| m.position > at);
        let prev_mark = r.recording.marks.iter().rev().find(|m| m.position < at);
        let to = match action {
            Action::EventOn => at + 1,
            Action::EventBack => at.saturating_sub(1).max(1),
            Action::FirstEvent => 1,
            Action::LastEvent => total,
            Action::MarkOn => match next_mark {
                Some(m) => m.position,
                None => return self.ui.say("no mark after this event"),
            },
            Action::MarkBack => match prev_mark {
                Some(m) => m.position,
                None => return self.ui.say("no mark before this event"),
            },
            _ => return,
        };
        self.replay_to(to);
    }

    /// The position bar's figures.
    pub(super) fn replay_view(&self) -> Option<ReplayView> {
        let r = self.stage.replay()?;
        let at = r.position;
        Some(ReplayView {
            position: at,
            total: r.recording.rows.len(),
            mark: r
                .recording
                .marks
                .iter()
                .find(|m| m.position == at)
                .map(|m| m.text.clone()),
            marks: r.recording.marks.iter().map(|m| m.position).collect(),
        })
    }
}
