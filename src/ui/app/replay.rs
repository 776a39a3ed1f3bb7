//! `leaselab replay DB`: the dashboard over a recorded run, read from its `LeaseEvents`.
//! A position is a number of events; at every position the table is rebuilt from the
//! events up to it (the rows as they stood), and the ledger, timeline, log and history
//! verdict are folded from the same events. `←`/`→` move one event, `[`/`]` to the
//! previous or next mark (a takeover, a rejected finalize, a duplicate, a lost lease, a
//! dead letter), `Home`/`End` to either end.

use std::sync::{Arc, Mutex};

use crossterm::event::KeyCode;

use crate::engine::backend::Db;
use crate::engine::events_table::Translator;
use crate::engine::ledger::Ledger;
use crate::engine::outbox::{
    BatchClaiming, Claiming, Finalizing, Reading, Seeding, Unleased, Upkeep,
};
use crate::engine::outbox::{
    ClaimOutcome, FailOutcome, FinalizeOutcome, Lease, MessageRef, MessageRow, OutboxCounts,
    OutboxError, OutboxStatus, PaymentCounts, PaymentRow, PaymentStatus, Result, RetryPolicy,
    RowsPerKey,
};
use crate::engine::provider::{Provider, StatusCheck};
use crate::engine::store::{LeaseEventKind, LeaseEventRow};
use crate::engine::{Engine, EngineConfig};
use crate::scenario::Scenario;
use crate::ui::snapshot::ReplayView;

use super::{App, Theme};

/// The most events a recording may hold to be replayed.
pub const MAX_REPLAY_EVENTS: usize = 2_000_000;

/// Something worth jumping to, at the position just after its event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    pub position: usize,
    pub text: String,
}

/// A recorded run: its events in commit order, and its marks.
#[derive(Debug, Clone)]
pub struct Recording {
    pub rows: Vec<LeaseEventRow>,
    pub marks: Vec<Mark>,
}

impl Recording {
    /// Every event of `db`. A database that is missing, not leaselab's, or holds no event
    /// is refused in one line.
    pub fn load(db: &Db) -> std::result::Result<Recording, String> {
        let rows = match db {
            Db::Sqlite(path) => {
                if !path.exists() {
                    return Err(format!("{}: no such database file", path.display()));
                }
                crate::engine::store::inspect(path).map_err(|e| e.to_string())?;
                let store =
                    crate::engine::store::Store::open_read_only(path).map_err(|e| e.to_string())?;
                store
                    .events_after(0, MAX_REPLAY_EVENTS as u64 + 1)
                    .map_err(|e| e.to_string())?
            }
            Db::Postgres(url) => settled_pg_events(db, url)?,
        };
        if rows.is_empty() {
            return Err(format!("{}: no events recorded", db.shown()));
        }
        if rows.len() > MAX_REPLAY_EVENTS {
            return Err(format!(
                "{}: more than {MAX_REPLAY_EVENTS} events, too many to replay",
                db.shown()
            ));
        }
        let marks = marks(&rows);
        Ok(Recording { rows, marks })
    }
}

/// How long a replay waits for transactions still open on the server, whose event rows could
/// commit below rows already visible.
const PG_SETTLE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The events of a PostgreSQL database, once they have settled: workers may still be writing,
/// and a row that commits later can take a lower Seq than one already visible, so the
/// history is read only when no transaction older than the read is still open. Refused in
/// one line when one stays open longer than `PG_SETTLE_WAIT`, naming it.
fn settled_pg_events(db: &Db, url: &str) -> std::result::Result<Vec<LeaseEventRow>, String> {
    let mut store = crate::engine::pg::PgStore::open_existing(url).map_err(|e| e.to_string())?;
    let settled = store
        .settled_events(MAX_REPLAY_EVENTS as u64 + 1, PG_SETTLE_WAIT)
        .map_err(|e| e.to_string())?;
    let Some(rows) = settled else {
        let who = store.open_transaction_named();
        return Err(format!(
            "{}: its events are held back by an open transaction{who}; replay it once that \
             transaction ends",
            db.shown()
        ));
    };
    Ok(rows)
}

/// The marks of a recording: where a lease was taken over, a finalize rejected, a message
/// processed again, a lease found lost, or a message dead-lettered.
fn marks(rows: &[LeaseEventRow]) -> Vec<Mark> {
    let mut processed: std::collections::HashMap<i64, u32> = Default::default();
    let mut held: std::collections::HashMap<i64, String> = Default::default();
    let mut out = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let key = r.key.clone().unwrap_or_default();
        let id = r.id.unwrap_or(0);
        let text = match r.kind {
            LeaseEventKind::Seeded => {
                processed.clear();
                held.clear();
                None
            }
            LeaseEventKind::Claimed => {
                let before = held.insert(id, r.worker.clone());
                before.map(|b| {
                    format!(
                        "takeover: {} claims {key} (v{}) after {b}'s lease ran out",
                        r.worker,
                        r.version.unwrap_or(0)
                    )
                })
            }
            LeaseEventKind::FinalizeRejected => Some(format!(
                "rejected finalize: {} no longer held {key} (v{})",
                r.worker,
                r.version.unwrap_or(0)
            )),
            LeaseEventKind::Finalized | LeaseEventKind::Marked => {
                let n = processed.entry(id).or_default();
                *n += 1;
                held.remove(&id);
                (*n > 1).then(|| format!("duplicate: {key} processed again by {}", r.worker))
            }
            LeaseEventKind::LeaseLost => Some(format!("lease lost: {} gives {key} up", r.worker)),
            LeaseEventKind::DeadLettered => {
                held.remove(&id);
                Some(format!("dead letter: {key}"))
            }
            LeaseEventKind::Retry => {
                held.remove(&id);
                None
            }
            _ => None,
        };
        if let Some(text) = text {
            out.push(Mark {
                position: i + 1,
                text,
            });
        }
    }
    out
}

/// The outbox's rows as they stood after some events.
#[derive(Debug, Clone, Default)]
pub struct Table {
    rows: Vec<MessageRow>,
    seeded_at: Option<i64>,
}

impl Table {
    /// The row of the event's message: ids are dense from 1 in a seeding, so its place is
    /// its id, unless added payments say otherwise.
    fn row(&mut self, r: &LeaseEventRow) -> Option<&mut MessageRow> {
        let id = r.id?;
        let at = usize::try_from(id - 1).ok()?;
        match self.rows.get(at).map(|m| m.id) {
            Some(found) if found == id => self.rows.get_mut(at),
            _ => self.rows.iter_mut().find(|m| m.id == id),
        }
    }

    fn apply(&mut self, r: &LeaseEventRow) {
        let new = |id: i64, key: String| MessageRow {
            id,
            key,
            status: OutboxStatus::Pending,
            locked_by: None,
            locked_until_ms: None,
            lease_version: 0,
            attempts: 0,
            processed_at_ms: None,
            payment_status: PaymentStatus::Pending,
            available_at_ms: r.at_ms,
        };
        match r.kind {
            LeaseEventKind::Seeded => {
                let n: i64 = r
                    .detail
                    .as_deref()
                    .and_then(|d| d.parse().ok())
                    .unwrap_or(0);
                self.rows = (1..=n)
                    .map(|i| new(i, crate::engine::store::payment_key(i as u64)))
                    .collect();
                self.seeded_at = Some(r.at_ms);
            }
            LeaseEventKind::Added => {
                if let (Some(id), Some(key)) = (r.id, r.key.clone()) {
                    self.rows.push(new(id, key));
                }
            }
            _ => self.change(r),
        }
    }

    /// What a worker's event did to its message's row.
    fn change(&mut self, r: &LeaseEventRow) {
        let Some(m) = self.row(r) else { return };
        match r.kind {
            LeaseEventKind::Claimed => {
                m.status = OutboxStatus::Processing;
                m.locked_by = Some(r.worker.clone());
                m.locked_until_ms = r.until_ms;
                m.lease_version = r.version.unwrap_or(m.lease_version + 1);
                m.attempts += 1;
            }
            LeaseEventKind::Heartbeat => m.locked_until_ms = r.until_ms.or(m.locked_until_ms),
            LeaseEventKind::Finalized | LeaseEventKind::Marked => {
                m.status = OutboxStatus::Processed;
                m.processed_at_ms = Some(r.at_ms);
                m.locked_until_ms = None;
                if r.kind == LeaseEventKind::Marked {
                    m.locked_by = None;
                }
                m.payment_status = match r.detail.as_deref() {
                    Some("Failed") => PaymentStatus::Failed,
                    _ => PaymentStatus::Paid,
                };
            }
            LeaseEventKind::Retry => {
                m.status = OutboxStatus::Pending;
                m.locked_by = None;
                m.locked_until_ms = None;
            }
            LeaseEventKind::DeadLettered => {
                m.status = OutboxStatus::DeadLettered;
                m.locked_by = None;
                m.locked_until_ms = None;
            }
            LeaseEventKind::Redriven => {
                m.status = OutboxStatus::Pending;
                m.attempts = 0;
                m.available_at_ms = r.at_ms;
            }
            _ => {}
        }
    }

    fn counts(&self) -> OutboxCounts {
        let mut c = OutboxCounts::default();
        for r in &self.rows {
            match r.status {
                OutboxStatus::Pending => c.pending += 1,
                OutboxStatus::Processing => c.processing += 1,
                OutboxStatus::Processed => c.processed += 1,
                OutboxStatus::DeadLettered => c.dead_lettered += 1,
            }
        }
        c
    }
}

/// The dashboard's reader during a replay: the rebuilt table, read-only.
struct ReplayOutbox {
    table: Arc<Mutex<Table>>,
}

impl ReplayOutbox {
    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn read_only<T>() -> Result<T> {
    Err(OutboxError::Database {
        failure: crate::engine::outbox::Failure::Other,
        message: "a replay only reads".into(),
    })
}

impl Claiming for ReplayOutbox {
    fn claim_next(&mut self, _: &str, _: i64, _: i64) -> Result<(ClaimOutcome, u64)> {
        read_only()
    }
    fn blocked_by(&self, _: &str, _: i64) -> Result<Option<ClaimOutcome>> {
        Ok(None)
    }
    fn claim_id(&mut self, _: i64, _: &str, _: i64, _: i64) -> Result<(ClaimOutcome, u64)> {
        read_only()
    }
}

impl BatchClaiming for ReplayOutbox {}

impl Finalizing for ReplayOutbox {
    fn finalize(&mut self, _: &Lease, _: &StatusCheck, _: i64) -> Result<(FinalizeOutcome, u64)> {
        read_only()
    }
}

impl Unleased for ReplayOutbox {
    fn load_pending(&self, _: i64) -> Result<Vec<MessageRef>> {
        Ok(Vec::new())
    }
    fn mark_processed(&mut self, _: &MessageRef, _: &StatusCheck, _: i64) -> Result<u64> {
        read_only()
    }
    fn mark_processed_by(
        &mut self,
        _: &str,
        _: &MessageRef,
        _: &StatusCheck,
        _: i64,
    ) -> Result<u64> {
        read_only()
    }
}

impl Upkeep for ReplayOutbox {
    fn heartbeat(&mut self, _: &Lease, _: i64, _: i64) -> Result<(Option<i64>, u64)> {
        read_only()
    }
    fn fail_attempt(
        &mut self,
        _: &Lease,
        _: &str,
        _: i64,
        _: &RetryPolicy,
    ) -> Result<(FailOutcome, u64)> {
        read_only()
    }
    fn redrive(&mut self, _: Option<&str>, _: i64) -> Result<(u64, u64)> {
        read_only()
    }
    fn last_error(&self, _: &str) -> Result<Option<String>> {
        Ok(None)
    }
}

impl Seeding for ReplayOutbox {
    fn empty(&mut self) -> Result<()> {
        read_only()
    }
    fn seed(&mut self, _: &Provider, _: u64, _: i64) -> Result<()> {
        read_only()
    }
    fn add_payment(&mut self, _: &Provider, _: &str, _: i64, _: i64) -> Result<MessageRef> {
        read_only()
    }
    fn next_payment_number(&self) -> Result<u64> {
        Ok(self.table().rows.len() as u64 + 1)
    }
}

impl crate::engine::outbox::Recording for ReplayOutbox {
    fn record(&mut self, _: &crate::engine::outbox::Fact) -> Result<u64> {
        read_only()
    }
}

impl Reading for ReplayOutbox {
    fn outbox_counts(&self) -> Result<OutboxCounts> {
        Ok(self.table().counts())
    }
    fn payment_counts(&self) -> Result<PaymentCounts> {
        let mut c = PaymentCounts::default();
        for r in &self.table().rows {
            match r.payment_status {
                PaymentStatus::Pending => c.pending += 1,
                PaymentStatus::Paid => c.paid += 1,
                PaymentStatus::Failed => c.failed += 1,
            }
        }
        Ok(c)
    }
    fn message_count(&self) -> Result<u64> {
        Ok(self.table().rows.len() as u64)
    }
    fn seeded_at(&self) -> Result<Option<i64>> {
        Ok(self.table().seeded_at)
    }
    fn owner(&self) -> Result<Option<String>> {
        Ok(None)
    }
    fn messages(&self, offset: u64, limit: u64) -> Result<Vec<MessageRow>> {
        let t = self.table();
        let from = (offset as usize).min(t.rows.len());
        let to = from
            .saturating_add(limit.min(usize::MAX as u64) as usize)
            .min(t.rows.len());
        Ok(t.rows[from..to].to_vec())
    }
    fn payments(&self) -> Result<Vec<PaymentRow>> {
        Ok(self
            .table()
            .rows
            .iter()
            .map(|r| PaymentRow {
                key: r.key.clone(),
                status: r.payment_status,
                transaction_id: None,
            })
            .collect())
    }
    fn max_rows_per_key(&self) -> Result<RowsPerKey> {
        Ok(RowsPerKey::default())
    }
    fn orphans(&self) -> Result<u64> {
        Ok(0)
    }
    fn schema(&self) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}

/// Where a replay stands.
pub struct Replay {
    recording: Recording,
    /// Events folded so far.
    pub position: usize,
    table: Arc<Mutex<Table>>,
    translator: Translator,
}

impl App {
    /// The dashboard over `db`'s recorded run, at its first event.
    pub fn replay(db: Db, theme: Theme) -> std::result::Result<App, String> {
        let recording = Recording::load(&db)?;
        App::replay_of(db, recording, theme)
    }

    /// As [`App::replay`], with the recording already read.
    pub fn replay_of(
        db: Db,
        recording: Recording,
        theme: Theme,
    ) -> std::result::Result<App, String> {
        let config = EngineConfig {
            workers: 0,
            messages: 1,
            lease_ms: crate::setup::Timing::DASHBOARD.lease_ms,
            process_ms: 0,
            idle_ms: 1,
            leasing: true,
            db: Some(db.clone()),
            durability: Default::default(),
            reliability: Default::default(),
        };
        let engine = Engine::guest(&db, config).map_err(|e| e.to_string())?;
        engine.clock.pause();
        // The header's heart says whether the recorded workers beat.
        let beat = recording
            .rows
            .iter()
            .any(|r| r.kind == LeaseEventKind::Heartbeat);
        engine
            .settings
            .heartbeats
            .store(beat, std::sync::atomic::Ordering::SeqCst);
        let table = Arc::new(Mutex::new(Table::default()));
        let reader = Box::new(ReplayOutbox {
            table: table.clone(),
        });
        let mut app = App::around(engine, reader, theme, Scenario::OutboxLeasing, 0);
        app.external = Some(super::external::External::replaying());
        app.replay = Some(Replay {
            recording,
            position: 0,
            table,
            translator: Translator::new(),
        });
        app.replay_to(1);
        app.ui
            .say("replay: → one event, ] the next mark, End the last event, q quits");
        Ok(app)
    }

    /// Move the replay to `position` events: forward by folding the events in between,
    /// back by folding again from the start.
    pub fn replay_to(&mut self, position: usize) {
        let Some(mut r) = self.replay.take() else {
            return;
        };
        let position = position.min(r.recording.rows.len());
        if position < r.position {
            *r.table.lock().unwrap_or_else(|p| p.into_inner()) = Table::default();
            r.translator = Translator::new();
            r.position = 0;
            self.ledger = Ledger::new();
            self.timeline = Default::default();
            self.log = Default::default();
            self.external = Some(super::external::External::replaying());
            self.ui.log_back = 0;
        }
        for row in &r.recording.rows[r.position..position] {
            r.table.lock().unwrap_or_else(|p| p.into_inner()).apply(row);
            for ev in r.translator.events(row) {
                self.apply_event(&ev);
            }
        }
        r.position = position;
        let at = position
            .checked_sub(1)
            .and_then(|i| r.recording.rows.get(i))
            .or(r.recording.rows.first())
            .map_or(0, |row| row.at_ms);
        self.engine.clock.set(at);
        self.replay = Some(r);
    }

    /// A key in a replay: the keys that move through it, and quit and help; any other key
    /// is answered with the replay's keys. True when the key was a replay's.
    pub(super) fn replay_key(&mut self, code: KeyCode) -> bool {
        let Some(r) = &self.replay else {
            return false;
        };
        let (at, total) = (r.position, r.recording.rows.len());
        let next_mark = r.recording.marks.iter().find(|m| m.position > at);
        let prev_mark = r.recording.marks.iter().rev().find(|m| m.position < at);
        let to = match code {
            KeyCode::Right => at + 1,
            KeyCode::Left => at.saturating_sub(1).max(1),
            KeyCode::Home => 1,
            KeyCode::End => total,
            KeyCode::Char(']') => match next_mark {
                Some(m) => m.position,
                None => return self.say_true("no mark after this event"),
            },
            KeyCode::Char('[') => match prev_mark {
                Some(m) => m.position,
                None => return self.say_true("no mark before this event"),
            },
            KeyCode::Char('q') | KeyCode::Char('?') | KeyCode::Esc => return false,
            KeyCode::Up | KeyCode::Down | KeyCode::PageUp | KeyCode::PageDown => return false,
            KeyCode::Tab | KeyCode::Enter | KeyCode::Char('j') | KeyCode::Char('k') => {
                return false
            }
            _ => return self.say_true("replay: ←/→ one event, [/] a mark, Home/End, q quits"),
        };
        self.replay_to(to);
        self.ui.notice = None;
        true
    }

    fn say_true(&mut self, text: &str) -> bool {
        self.ui.say(text.to_string());
        true
    }

    /// The position bar's figures.
    pub(super) fn replay_view(&self) -> Option<ReplayView> {
        let r = self.replay.as_ref()?;
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
