//! A recorded run read for a replay: every `LeaseEvents` row, checked before anything is
//! shown. The table of a file or a server is untrusted: a row a leaselab could not have
//! written (a Seq below 1, a time past the year 9999, a claim of a message nobody seeded,
//! a seeding of a trillion payments) refuses the whole recording in one line that names
//! the database and the row, rather than showing a history the database never held.

use std::collections::HashMap;

use crate::engine::backend::Db;
use crate::engine::outbox::RunSettings;
use crate::engine::store::{LeaseEventKind, LeaseEventRow};

use super::refusal::{BadRow, ReplayError};
pub use super::refusal::{MAX_REPLAY_EVENTS, MAX_SEEDED};

/// The latest time a row may carry: the last millisecond of the year 9999.
const MAX_TIME_MS: i64 = 253_402_300_799_999;
/// The largest lease version a row may carry.
const MAX_VERSION: i64 = 1_000_000_000;
/// The longest worker name (a process's `--name` is at most 32 characters).
const MAX_WORKER: usize = 64;
/// The longest payment key and the longest `Detail` (an error, the settings).
const MAX_KEY: usize = 64;
const MAX_DETAIL: usize = 1_000;

/// Something worth jumping to, at the position just after its event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    pub position: usize,
    pub text: String,
}

/// A recorded run: its events in commit order, and its marks.
#[derive(Debug, Clone, Default)]
pub struct Recording {
    pub rows: Vec<LeaseEventRow>,
    pub marks: Vec<Mark>,
}

impl Recording {
    /// Every event of `db`. A database that is missing, not leaselab's, holds no event or
    /// holds a row no leaselab writes is refused in one line.
    pub fn load(db: &Db) -> Result<Recording, ReplayError> {
        let rows = match db {
            Db::Sqlite(path) => sqlite_events(path)?,
            Db::Postgres(url) => settled_pg_events(db, url)?,
        };
        Recording::of_rows(&db.shown(), rows)
    }

    /// A recording of rows already read; `shown` names their database in a refusal.
    pub fn of_rows(shown: &str, rows: Vec<LeaseEventRow>) -> Result<Recording, ReplayError> {
        if rows.is_empty() {
            return Err(ReplayError::Empty(shown.to_string()));
        }
        too_many(shown, rows.len() as u64)?;
        let mut check = Checker::default();
        for (i, row) in rows.iter().enumerate() {
            check.row(i, row).map_err(|why| ReplayError::Row {
                shown: shown.to_string(),
                seq: row.seq,
                why,
            })?;
        }
        let marks = marks(&rows);
        Ok(Recording { rows, marks })
    }
}

/// The events of a SQLite file, read without writing a byte beside it.
fn sqlite_events(path: &std::path::Path) -> Result<Vec<LeaseEventRow>, ReplayError> {
    let shown = path.display().to_string();
    if !path.exists() {
        return Err(ReplayError::NoFile(shown));
    }
    crate::engine::store::inspect(path)?;
    let store = crate::engine::store::Store::open_untouched(path)?;
    // Counted before anything is read: a recording too long is refused at once.
    let count = store.event_count()?;
    too_many(&shown, count)?;
    store
        .recorded_events(MAX_REPLAY_EVENTS as u64 + 1)
        .map_err(|source| ReplayError::Unreadable { shown, source })
}

/// A recording longer than [`MAX_REPLAY_EVENTS`] is refused, saying how long it is.
fn too_many(shown: &str, count: u64) -> Result<(), ReplayError> {
    if count > MAX_REPLAY_EVENTS as u64 {
        return Err(ReplayError::TooMany {
            shown: shown.to_string(),
            count,
        });
    }
    Ok(())
}

/// How long a replay waits for transactions still open on the server, whose event rows could
/// commit below rows already visible.
const PG_SETTLE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The events of a PostgreSQL database, once they have settled: workers may still be writing,
/// and a row that commits later can take a lower Seq than one already visible, so the
/// history is read only when no transaction of this database older than the read is still
/// open. Refused in one line when one stays open longer than `PG_SETTLE_WAIT`, naming it.
fn settled_pg_events(db: &Db, url: &str) -> Result<Vec<LeaseEventRow>, ReplayError> {
    let mut store = crate::engine::pg::PgStore::open_existing(url)?;
    let count = store.event_count()?;
    too_many(&db.shown(), count)?;
    if let Some(seq) = store.events_below_one()? {
        return Err(ReplayError::SeqBelowOne {
            shown: db.shown(),
            seq,
        });
    }
    let settled = store.settled_events(MAX_REPLAY_EVENTS as u64 + 1, PG_SETTLE_WAIT)?;
    let Some(rows) = settled else {
        return Err(ReplayError::HeldBack {
            shown: db.shown(),
            who: store.open_transaction_named(),
        });
    };
    Ok(rows)
}

/// What the rows so far have made: the messages (ids 1 to `seeded`, and those added, by
/// id), and who claimed each of their lease versions.
#[derive(Default)]
struct Checker {
    seeded: i64,
    added: HashMap<i64, String>,
    /// By message: the worker of each claim, version 1 first.
    claimers: HashMap<i64, Vec<String>>,
    seeded_at: i64,
    messages: i64,
}

/// Rows the lab itself writes, under the name `engine`; every other row is a worker's.
fn by_the_engine(kind: LeaseEventKind) -> bool {
    use LeaseEventKind::*;
    matches!(kind, Seeded | Added | Settings | Redriven)
}

impl Checker {
    /// Whether row `i` is one a leaselab could have written after the rows before it.
    fn row(&mut self, i: usize, r: &LeaseEventRow) -> Result<(), BadRow> {
        use LeaseEventKind::*;
        within("AtUtc", r.at_ms, 0, MAX_TIME_MS)?;
        if let Some(until) = r.until_ms {
            within("LockedUntilUtc", until, 0, MAX_TIME_MS)?;
        }
        if let Some(v) = r.version {
            within("LeaseVersion", v, 0, MAX_VERSION)?;
        }
        text("Worker", Some(&r.worker), MAX_WORKER)?;
        if r.worker.is_empty() {
            return Err(BadRow::NoWorker);
        }
        text("PaymentKey", r.key.as_deref(), MAX_KEY)?;
        text("Detail", r.detail.as_deref(), MAX_DETAIL)?;
        if i > 0 && r.at_ms < self.seeded_at {
            return Err(BadRow::BeforeSeeding(r.at_ms));
        }
        let engine = r.worker == crate::engine::events::ENGINE;
        if engine != by_the_engine(r.kind) {
            return Err(match engine {
                true => BadRow::WorkersRowByEngine(r.kind),
                false => BadRow::EnginesRowByWorker(r.kind),
            });
        }
        match (i, r.kind) {
            (0, Seeded) => {}
            (0, kind) => return Err(BadRow::NoSeedingFirst(kind)),
            (_, Seeded) => return Err(BadRow::SecondSeeding),
            _ => {}
        }
        match r.kind {
            Seeded => self.seeding(r),
            Added => self.added(r),
            Settings | Joined => RunSettings::parse(r.detail.as_deref().unwrap_or(""))
                .map(|_| ())
                .map_err(BadRow::Settings),
            Paused | Resumed | Restarted | Left | Crashed => {
                if r.detail.as_deref().is_none_or(str::is_empty) {
                    return Err(BadRow::SaysNotHow(r.kind));
                }
                self.held(r)
            }
            Claimed => {
                self.about_a_message(r)?;
                self.claim(r)
            }
            _ => {
                self.about_a_message(r)?;
                self.under_a_claimed_lease(r)
            }
        }
    }

    /// A claim takes the next lease version of its message.
    fn claim(&mut self, r: &LeaseEventRow) -> Result<(), BadRow> {
        let id = r.id.unwrap_or_default();
        let claimers = self.claimers.entry(id).or_default();
        let next = claimers.len() as i64 + 1;
        if r.version != Some(next) {
            return Err(BadRow::ClaimOutOfTurn {
                id,
                version: r.version.map_or("none".to_string(), |v| v.to_string()),
                next,
            });
        }
        claimers.push(r.worker.clone());
        Ok(())
    }

    /// A row under a lease names a version its message was claimed under, by this worker.
    fn under_a_claimed_lease(&self, r: &LeaseEventRow) -> Result<(), BadRow> {
        use LeaseEventKind::*;
        let Some(v) = r.version else {
            // A provider call, a mark or a redrive may concern a message nobody leased.
            return match r.kind {
                Checked | Marked | Redriven => Ok(()),
                kind => Err(BadRow::NoLeaseVersion(kind)),
            };
        };
        if r.kind == Redriven {
            return Ok(());
        }
        let id = r.id.unwrap_or_default();
        let claimer = usize::try_from(v - 1)
            .ok()
            .and_then(|i| self.claimers.get(&id)?.get(i));
        match claimer {
            Some(w) if *w == r.worker => Ok(()),
            Some(w) => Err(BadRow::AnothersLease {
                kind: r.kind,
                worker: r.worker.clone(),
                version: v,
                id,
                claimer: w.clone(),
            }),
            None => Err(BadRow::UnclaimedLease {
                kind: r.kind,
                version: v,
                id,
            }),
        }
    }

    /// The key of message `id`, if it was seeded or added.
    fn key_of(&self, id: i64) -> Option<String> {
        if (1..=self.seeded).contains(&id) {
            return Some(crate::engine::store::payment_key(id as u64));
        }
        self.added.get(&id).cloned()
    }

    fn seeding(&mut self, r: &LeaseEventRow) -> Result<(), BadRow> {
        let n = r
            .detail
            .as_deref()
            .and_then(|d| d.parse::<i64>().ok())
            .filter(|n| (0..=MAX_SEEDED).contains(n))
            .ok_or(BadRow::BadSeeding)?;
        self.seeded = n;
        self.messages = n;
        self.seeded_at = r.at_ms;
        Ok(())
    }

    fn added(&mut self, r: &LeaseEventRow) -> Result<(), BadRow> {
        let (Some(id), Some(key)) = (r.id, &r.key) else {
            return Err(BadRow::AddedNamesNoMessage);
        };
        if id < 1 || self.key_of(id).is_some() {
            return Err(BadRow::IdNotFree(id));
        }
        if self.messages >= MAX_SEEDED {
            return Err(BadRow::TooManyMessages);
        }
        self.added.insert(id, key.clone());
        self.messages += 1;
        Ok(())
    }

    /// A row about a worker: it may name the lease the worker held, which must be a message.
    fn held(&self, r: &LeaseEventRow) -> Result<(), BadRow> {
        match r.id {
            Some(_) => {
                self.about_a_message(r)?;
                self.under_a_claimed_lease(r)
            }
            None => Ok(()),
        }
    }

    fn about_a_message(&self, r: &LeaseEventRow) -> Result<(), BadRow> {
        let Some(id) = r.id else {
            return Err(BadRow::NamesNoMessage(r.kind));
        };
        let Some(key) = self.key_of(id) else {
            return Err(BadRow::UnknownMessage { kind: r.kind, id });
        };
        if r.key.as_deref() != Some(key.as_str()) {
            return Err(BadRow::WrongPayment { id, key });
        }
        use LeaseEventKind::*;
        if matches!(r.kind, Claimed | Heartbeat) && r.until_ms.is_none() {
            return Err(BadRow::NoExpiry(r.kind));
        }
        let answer = match (r.kind, r.detail.as_deref()) {
            (Checked, Some(d)) => {
                Some(d.strip_suffix(crate::engine::outbox::REPLAYED).unwrap_or(d))
            }
            (_, d) => d,
        };
        if matches!(r.kind, Checked | Finalized | Marked)
            && !matches!(answer, Some("Paid" | "Failed"))
        {
            return Err(BadRow::BadAnswer(r.kind));
        }
        Ok(())
    }
}

fn within(name: &'static str, value: i64, min: i64, max: i64) -> Result<(), BadRow> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(BadRow::OutOfRange {
            name,
            value,
            min,
            max,
        })
    }
}

/// Text a row carries: printable and bounded, or the row is refused.
fn text(name: &'static str, v: Option<&str>, max: usize) -> Result<(), BadRow> {
    let Some(v) = v else { return Ok(()) };
    if v.chars().count() > max {
        return Err(BadRow::TooLong { name, max });
    }
    if !v.chars().all(crate::engine::text::is_printable) {
        return Err(BadRow::ControlCharacter { name });
    }
    Ok(())
}

/// The marks of a recording: where a lease was taken over, a finalize rejected, a message
/// processed again, a lease found lost, or a message dead-lettered.
fn marks(rows: &[LeaseEventRow]) -> Vec<Mark> {
    let mut processed: HashMap<i64, u32> = Default::default();
    let mut held: HashMap<i64, String> = Default::default();
    let mut out = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let key = r.key.clone().unwrap_or_default();
        let id = r.id.unwrap_or(0);
        let text = match r.kind {
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
