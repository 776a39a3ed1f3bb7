//! Following workers this process did not start: `LeaseEvents` rows turned into the same
//! [`Event`]s that worker threads send, so a dashboard, a ledger or the history checker sees
//! one kind of stream whoever did the work.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

use super::backend::Db;
use super::events::{ClaimWay, Event, EventKind, ENGINE};
use super::file_identity::{OpenedFile, LOOK_EVERY};
use super::outbox::{RunSettings, CRASH_PANIC, CRASH_TOLD, QUEUED_RAN_OUT, REPLAYED};
use super::pg::{PgStore, PgTail};
use super::provider::ProviderStatus;
use super::store::{LeaseEventKind, LeaseEventRow, OutboxError, Store};
use super::text;
use super::worker_id::WorkerId;

/// The longest name or key a row's event carries, and the longest error or detail.
const MAX_NAME: usize = 64;
const MAX_DETAIL: usize = 1_000;

/// How often a tail asks the table for new rows when the last look found none.
pub const TAIL_EVERY: Duration = Duration::from_millis(150);
/// Rows read per look, so a long backlog reaches the screen in pieces.
const TAIL_BATCH: u64 = 2_000;
/// How long PostgreSQL rows may wait for an older open transaction before the tail says so.
pub const HELD_BACK_TELL: Duration = Duration::from_secs(2);

/// Turns rows into events, giving each worker name a slot in the order it first appears.
#[derive(Debug, Clone, Default)]
pub struct Translator {
    slots: HashMap<String, usize>,
    names: Vec<String>,
    /// Each message's claims since it was seeded or redriven: its `Attempts` column, which
    /// a failed attempt's row does not carry.
    attempts: HashMap<i64, i64>,
}

impl Translator {
    pub fn new() -> Translator {
        Translator::default()
    }

    /// Worker names by slot (restarts share their first incarnation's slot; a slot nobody
    /// took is empty).
    pub fn workers(&self) -> &[String] {
        &self.names
    }

    /// A name leaselab gives (`Worker-B#2`) keeps its own slot, as its thread had; any other
    /// name takes the first free slot.
    fn slot(&mut self, worker: &str) -> Option<usize> {
        if worker == ENGINE || worker.is_empty() {
            return None;
        }
        let id = WorkerId::parse(worker);
        let base = id.map_or_else(|| worker.to_string(), |id| id.base().to_string());
        if let Some(slot) = self.slots.get(&base) {
            return Some(*slot);
        }
        let taken = |names: &[String], s: usize| names.get(s).is_some_and(|n| !n.is_empty());
        let slot = match id {
            Some(id) if !taken(&self.names, id.slot) => id.slot,
            _ => (0..).find(|s| !taken(&self.names, *s)).unwrap_or(0),
        };
        if self.names.len() <= slot {
            self.names.resize(slot + 1, String::new());
        }
        self.names[slot] = base.clone();
        self.slots.insert(base, slot);
        Some(slot)
    }

    /// The events one row stands for. What a row says in words (a worker's name, a key, an
    /// error) comes from a database anyone may write: it is made printable and bounded
    /// before it can reach a screen.
    pub fn events(&mut self, row: &LeaseEventRow) -> Vec<Event> {
        let fits =
            |t: &str, max: usize| t.chars().count() <= max && t.chars().all(text::is_printable);
        let clean = |t: &str, max| text::bounded(&text::printable(t), max).into_owned();
        let cleaned;
        let row = if fits(&row.worker, MAX_NAME)
            && row.key.as_deref().is_none_or(|k| fits(k, MAX_NAME))
            && row.detail.as_deref().is_none_or(|d| fits(d, MAX_DETAIL))
        {
            row
        } else {
            cleaned = LeaseEventRow {
                worker: clean(&row.worker, MAX_NAME),
                key: row.key.as_deref().map(|k| clean(k, MAX_NAME)),
                detail: row.detail.as_deref().map(|d| clean(d, MAX_DETAIL)),
                ..row.clone()
            };
            &cleaned
        };
        let slot = self.slot(&row.worker);
        let actor = if slot.is_some() {
            row.worker.clone()
        } else {
            ENGINE.to_string()
        };
        let event = |kind| Event {
            seq: row.seq,
            at_ms: row.at_ms,
            slot,
            actor: actor.clone(),
            kind,
            sql: None,
        };
        let attempts = self.count_attempts(row);
        row_events(row, attempts, event)
    }

    /// Follow the message's attempts as its row counts them: one more per claim, none after
    /// a seeding or a redrive. Returns the count after `row`.
    fn count_attempts(&mut self, row: &LeaseEventRow) -> i64 {
        let id = row.id.unwrap_or(0);
        match row.kind {
            LeaseEventKind::Seeded => self.attempts.clear(),
            LeaseEventKind::Claimed => *self.attempts.entry(id).or_default() += 1,
            LeaseEventKind::Redriven => {
                self.attempts.remove(&id);
            }
            _ => {}
        }
        self.attempts.get(&id).copied().unwrap_or(0)
    }
}

/// The events of one row, made by `event` (which adds the row's seq, time and actor);
/// `attempts` is the message's attempt count after the row. A row stands for what it
/// records and nothing more: a provider call is its own `Checked` row, written when the call
/// was made, so a call whose worker died before writing anything is still in the table.
fn row_events(
    row: &LeaseEventRow,
    attempts: i64,
    event: impl Fn(EventKind) -> Event,
) -> Vec<Event> {
    let id = row.id.unwrap_or(0);
    let key = row.key.clone().unwrap_or_default();
    let version = row.version.unwrap_or(0);
    let status = answer(row);
    let kind = match row.kind {
        LeaseEventKind::Seeded => EventKind::Seeded {
            messages: row
                .detail
                .as_deref()
                .and_then(|d| d.parse().ok())
                .unwrap_or(0),
        },
        LeaseEventKind::Added => EventKind::MessageAdded { id, key },
        LeaseEventKind::Claimed => EventKind::Claimed {
            id,
            key,
            until_ms: row.until_ms.unwrap_or(row.at_ms),
            version,
            reclaim: version > 1,
            way: ClaimWay::Unrecorded,
            overlapped: None,
        },
        LeaseEventKind::Checked => EventKind::ProviderCalled {
            id,
            key,
            status,
            effect: !row.detail.as_deref().is_some_and(|d| d.ends_with(REPLAYED)),
        },
        LeaseEventKind::Finalized => EventKind::Finalized {
            id,
            key,
            version,
            status,
        },
        LeaseEventKind::FinalizeRejected => EventKind::FinalizeRejected { id, key, version },
        LeaseEventKind::Marked => EventKind::Marked { id, key, status },
        LeaseEventKind::Heartbeat => EventKind::Heartbeat {
            id,
            key,
            version,
            until_ms: row.until_ms.unwrap_or(row.at_ms),
        },
        LeaseEventKind::LeaseLost if row.detail.as_deref() == Some(QUEUED_RAN_OUT) => {
            EventKind::QueuedLeaseRanOut {
                id,
                key,
                version,
                until_ms: row.until_ms.unwrap_or(row.at_ms),
            }
        }
        LeaseEventKind::LeaseLost => EventKind::LeaseLost { id, key, version },
        LeaseEventKind::Redriven => EventKind::Redriven {
            key: Some(key),
            count: 1,
        },
        LeaseEventKind::Retry | LeaseEventKind::DeadLettered => failure(row, key, attempts),
        _ => return worker_fact(row).map(&event).into_iter().collect(),
    };
    vec![event(kind)]
}

/// The provider's answer a row carries (`Paid` or `Failed`, a call's perhaps `replayed`).
fn answer(row: &LeaseEventRow) -> ProviderStatus {
    match row.detail.as_deref().map(|d| d.trim_end_matches(REPLAYED)) {
        Some("Failed") => ProviderStatus::Failed,
        _ => ProviderStatus::Paid,
    }
}

/// What a row about a worker itself records: a crash, a freeze and its end, a restart, the
/// settings it runs with, its joining and leaving.
fn worker_fact(row: &LeaseEventRow) -> Option<EventKind> {
    let detail = row.detail.clone().unwrap_or_default();
    let holding = match (row.id, &row.key, row.until_ms) {
        (Some(id), Some(key), Some(until)) => Some((id, key.clone(), until)),
        _ => None,
    };
    Some(match row.kind {
        LeaseEventKind::Crashed => {
            let (panic, how) = crash_cause(&detail);
            EventKind::Crashed {
                holding,
                panic,
                how,
            }
        }
        LeaseEventKind::Paused => EventKind::Froze { how: detail },
        LeaseEventKind::Resumed => EventKind::Woke { how: detail },
        LeaseEventKind::Restarted => EventKind::Restarted { previous: detail },
        LeaseEventKind::Left => EventKind::Left {
            how: detail,
            holding,
        },
        LeaseEventKind::Joined => EventKind::Joined {
            settings: RunSettings::parse(&detail).ok()?,
            process: crate::process_identity::ProcessIdentity::in_detail(&detail),
            software: crate::software::Software::in_detail(&detail),
        },
        LeaseEventKind::Settings => EventKind::SettingsRecorded {
            settings: RunSettings::parse(&detail).ok()?,
        },
        _ => return None,
    })
}

/// A `Crashed` row's cause: a panic's message, or how a worker process ended.
fn crash_cause(detail: &str) -> (Option<String>, Option<String>) {
    if detail == CRASH_TOLD {
        (None, None)
    } else if let Some(p) = detail.strip_prefix(CRASH_PANIC) {
        (Some(p.to_string()), None)
    } else {
        (None, Some(detail.to_string()))
    }
}

/// A failed attempt's row: retried after its backoff, or dead-lettered.
fn failure(row: &LeaseEventRow, key: String, attempts: i64) -> EventKind {
    let (id, version) = (row.id.unwrap_or(0), row.version.unwrap_or(0));
    let error = row
        .detail
        .clone()
        .unwrap_or_else(|| "no error recorded".to_string());
    if row.kind == LeaseEventKind::Retry {
        EventKind::AttemptFailed {
            id,
            key,
            version,
            attempt: attempts,
            // When the message may be claimed again; a row written before that was recorded
            // says only when the attempt failed.
            available_at_ms: row.until_ms.unwrap_or(row.at_ms),
            error,
        }
    } else {
        EventKind::DeadLettered {
            id,
            key,
            version,
            attempts,
            error,
        }
    }
}

/// Every event in the table of `path` since its last seeding, in commit order.
pub fn read_all(path: &Path) -> Result<Vec<Event>, OutboxError> {
    let store = Store::open_read_only(path)?;
    let mut t = Translator::new();
    Ok(store
        .all_events()?
        .iter()
        .flat_map(|row| t.events(row))
        .collect())
}

/// Where a tail reads the table: a SQLite file (read-only) or a PostgreSQL connection.
enum Source {
    /// The file's store, and the file it opened (which may be deleted or replaced).
    Sqlite(Store, Option<OpenedFile>),
    Postgres(Box<PgStore>, PgTail),
}

impl Source {
    fn open(db: &Db) -> Result<Source, OutboxError> {
        Ok(match db {
            Db::Sqlite(path) => {
                let store = Store::open_read_only(path)?;
                Source::Sqlite(store, OpenedFile::at(path))
            }
            Db::Postgres(url) => Source::Postgres(Box::new(PgStore::open_url(url)?), PgTail::new()),
        })
    }

    /// A new connection for a PostgreSQL tail whose connection went away. The tail keeps
    /// its place: the rows committed meanwhile come next.
    fn reopen(&mut self, db: &Db) -> Result<(), OutboxError> {
        if let (Source::Postgres(store, _), Db::Postgres(url)) = (self, db) {
            **store = PgStore::open_url(url)?;
        }
        Ok(())
    }

    /// SQLite only: why the file is no longer the one opened (deleted, replaced).
    fn gone(&self) -> Option<String> {
        match self {
            Source::Sqlite(_, Some(opened)) => opened.gone(),
            _ => None,
        }
    }

    fn after(&mut self, seq: u64, limit: u64) -> Result<Vec<LeaseEventRow>, OutboxError> {
        match self {
            Source::Sqlite(store, _) => store.events_after(seq, limit),
            // The tail keeps its own place: PostgreSQL's Seqs commit out of order.
            Source::Postgres(store, tail) => Ok(store.tail_events(tail, limit)?),
        }
    }

    /// PostgreSQL only: one line when rows have waited [`HELD_BACK_TELL`] for an older
    /// transaction to end (naming it), and one when they flow again.
    fn held_back(&mut self, told: &mut bool) -> Option<String> {
        let Source::Postgres(store, tail) = self else {
            return None;
        };
        match tail.held_back() {
            Some(waited) if waited >= HELD_BACK_TELL && !*told => {
                *told = true;
                let who = store.open_transaction_named();
                Some(format!(
                    "EVENTS HELD BACK by an open transaction{who}; the table is current"
                ))
            }
            None if *told => {
                *told = false;
                Some("events flow again: the open transaction ended".to_string())
            }
            _ => None,
        }
    }
}

/// A thread that follows the events table of a database and sends its rows as events.
pub struct Tail {
    stop: Option<Sender<()>>,
    join: Option<JoinHandle<()>>,
    /// Set while its PostgreSQL connection is gone and it tries new ones.
    lost: Arc<AtomicBool>,
}

impl Tail {
    /// Start following the table of `db` from its first row, looking again every `every`
    /// while nothing is new (one query per look, so the rate is bounded). A PostgreSQL
    /// connection that goes away is opened again, with a note each attempt, and the tail
    /// catches up from where it was; any other read error, or a SQLite file deleted or
    /// replaced, is sent as a `Failed` event and ends the tail.
    pub fn start(db: &Db, every: Duration, events: Sender<Event>) -> Result<Tail, OutboxError> {
        let mut store = Source::open(db)?;
        let (stop, stopped) = crossbeam_channel::bounded::<()>(1);
        let lost = Arc::new(AtomicBool::new(false));
        let following = Following {
            db: db.clone(),
            every,
            events,
            stopped,
            lost: lost.clone(),
        };
        let join = std::thread::Builder::new()
            .name("events-tail".into())
            .spawn(move || following.follow(&mut store))
            .map_err(|e| OutboxError::Io(format!("cannot start the events reader: {e}")))?;
        Ok(Tail {
            stop: Some(stop),
            join: Some(join),
            lost,
        })
    }

    /// True while the tail's connection is gone and it tries new ones: what it sent is
    /// all that is known.
    pub fn lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }
}

/// What the tail's thread follows, where its events go, and what stops it.
struct Following {
    db: Db,
    every: Duration,
    events: Sender<Event>,
    stopped: Receiver<()>,
    lost: Arc<AtomicBool>,
}

/// A line of the tail's own, at the wall clock's time (worker processes stamp their rows
/// with it).
fn note(last: u64, text: String) -> Event {
    Event {
        seq: last,
        at_ms: super::clock::wall_now_ms(),
        slot: None,
        actor: ENGINE.to_string(),
        kind: EventKind::Note { text },
        sql: None,
    }
}

/// The tail cannot go on: `Failed`, which the dashboard shows as a view no longer current.
fn failed(last: u64, error: String) -> Event {
    Event {
        seq: last,
        at_ms: 0,
        slot: None,
        actor: ENGINE.to_string(),
        kind: EventKind::Failed { error },
        sql: None,
    }
}

impl Following {
    /// Open a new connection after the old one went away, waiting longer between attempts
    /// (`crate::reconnect`), one note each. False when told to stop meanwhile, or when the
    /// server now refuses for good (after a `Failed`).
    fn reconnect(&self, store: &mut Source, last: u64) -> bool {
        self.lost.store(true, Ordering::SeqCst);
        for attempt in 1u32.. {
            let wait = crate::reconnect::wait_before(attempt);
            let text = format!(
                "connection lost, reconnecting (attempt {attempt}, next in {})",
                crate::reconnect::shown(wait)
            );
            if self.events.send(note(last, text)).is_err() {
                return false;
            }
            match self.stopped.recv_timeout(wait) {
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
                _ => return false,
            }
            match store.reopen(&self.db) {
                Ok(()) => {
                    self.lost.store(false, Ordering::SeqCst);
                    let text = "reconnected: catching up from the events table".to_string();
                    return self.events.send(note(last, text)).is_ok();
                }
                Err(e) if e.may_heal() => {}
                Err(e) => {
                    let _ = self
                        .events
                        .send(failed(last, format!("cannot reconnect: {e}")));
                    return false;
                }
            }
        }
        false
    }

    fn follow(&self, store: &mut Source) {
        let (events, every, stopped) = (&self.events, self.every, &self.stopped);
        let mut translator = Translator::new();
        let mut last = 0;
        let mut told = false;
        let mut looked = Instant::now();
        loop {
            if looked.elapsed() >= LOOK_EVERY {
                looked = Instant::now();
                if let Some(why) = store.gone() {
                    let _ = events.send(failed(last, format!("the events table is gone: {why}")));
                    return;
                }
            }
            let rows = match store.after(last, TAIL_BATCH) {
                Ok(rows) => rows,
                Err(e) if e.may_heal() && matches!(store, Source::Postgres(..)) => {
                    if !self.reconnect(store, last) {
                        return;
                    }
                    continue;
                }
                Err(e) => {
                    // A file deleted under the reader may fail its reads: say why.
                    let error = match store.gone() {
                        Some(why) => format!("the events table is gone: {why}"),
                        None => format!("cannot read the events table: {e}"),
                    };
                    let _ = events.send(failed(last, error));
                    return;
                }
            };
            let full = rows.len() as u64 == TAIL_BATCH;
            for row in &rows {
                last = row.seq;
                for ev in translator.events(row) {
                    if events.send(ev).is_err() {
                        return;
                    }
                }
            }
            if let Some(text) = store.held_back(&mut told) {
                if events.send(note(last, text)).is_err() {
                    return;
                }
            }
            // A full batch means more is waiting: read on without a pause.
            let pause = if full { Duration::ZERO } else { every };
            match stopped.recv_timeout(pause) {
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
                _ => return,
            }
        }
    }
}

impl Drop for Tail {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(j) = self.join.take() {
            let _ = j.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row anyone could have written into a watched database: its words reach the screen
    /// without a control character and within their bounds.
    #[test]
    fn a_hostile_rows_words_are_made_printable_and_bounded() {
        let row = LeaseEventRow {
            seq: 3,
            at_ms: 0,
            worker: format!("Worker\u{1b}[2J-{}", "x".repeat(200)),
            kind: LeaseEventKind::Claimed,
            id: Some(1),
            key: Some("PAY\u{7}-001".into()),
            version: Some(1),
            until_ms: Some(10),
            detail: None,
        };
        let events = Translator::new().events(&row);
        let ev = &events[0];
        assert!(ev.actor.chars().all(text::is_printable), "{:?}", ev.actor);
        assert_eq!(
            ev.actor.chars().count(),
            MAX_NAME + 1,
            "cut, with its ellipsis"
        );
        assert!(ev.actor.starts_with("Worker[2J-"));
        assert_eq!(
            ev.message().map(|m| m.1.to_string()),
            Some("PAY-001".into())
        );
    }
}
