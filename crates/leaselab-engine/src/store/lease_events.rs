//! The `LeaseEvents` table: one row per change to the outbox, written by the transaction
//! that makes the change, and read back in commit order by whoever follows the workers.

use std::cell::Cell;
use std::time::Instant;

use super::prepared::{Hot, Tx};
use super::{Result, Store};
use crate::outbox::Stamped;
pub use crate::outbox::{LeaseEventKind, LeaseEventRow};

/// A row about to be written; `Seq` is the table's to give.
#[derive(Debug, Clone, Copy)]
pub(super) struct NewEvent<'a> {
    pub at_ms: i64,
    pub worker: &'a str,
    pub kind: LeaseEventKind,
    pub id: Option<i64>,
    pub key: Option<&'a str>,
    pub version: Option<i64>,
    pub until_ms: Option<i64>,
    pub detail: Option<&'a str>,
}

impl<'a> NewEvent<'a> {
    /// An event about one message.
    pub fn about(
        kind: LeaseEventKind,
        at_ms: i64,
        worker: &'a str,
        id: i64,
        key: &'a str,
    ) -> NewEvent<'a> {
        NewEvent {
            at_ms,
            worker,
            kind,
            id: Some(id),
            key: Some(key),
            version: None,
            until_ms: None,
            detail: None,
        }
    }
}

/// `Seq` is one more than the largest so far, or than the floor the last emptying left
/// (`Seedings.LastSeq`): never reused, without a sequence table written every time. SQLite
/// gives a row without a `Seq` one more than the largest (no second read of the table for
/// it); only in a table that emptying left empty, where that is 1, is the row then moved
/// above the floor by [`LIFT_FIRST_EVENT_SQL`], in the same transaction.
const INSERT_EVENT_SQL: &str = "INSERT INTO LeaseEvents
    (AtUtc, Worker, Kind, MessageId, PaymentKey, LeaseVersion, LockedUntilUtc, Detail)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

/// The first row after an emptying: moved from Seq 1 to one above the floor.
const LIFT_FIRST_EVENT_SQL: &str = "UPDATE LeaseEvents
    SET Seq = COALESCE((SELECT MAX(LastSeq) FROM Seedings), 0) + 1 WHERE Seq = 1";

const EVENTS_AFTER_SQL: &str =
    "SELECT Seq, AtUtc, Worker, Kind, MessageId, PaymentKey, LeaseVersion, LockedUntilUtc, Detail
       FROM LeaseEvents WHERE Seq > ?1 ORDER BY Seq LIMIT ?2";

/// Append one row inside the caller's write transaction.
/// A heartbeat's row: the lease extended until `until`, or, with `None`, lost (a watcher
/// sees the worker drop the message).
pub(super) fn record_beat(
    tx: &Tx<'_, '_>,
    lease: &crate::outbox::Lease,
    now: i64,
    until: Option<i64>,
) -> Result<()> {
    let kind = match until {
        Some(_) => LeaseEventKind::Heartbeat,
        None => LeaseEventKind::LeaseLost,
    };
    record(
        tx,
        &NewEvent {
            version: Some(lease.version),
            until_ms: until,
            ..NewEvent::about(kind, now, &lease.owner, lease.id, &lease.key)
        },
    )
}

pub(super) fn record(tx: &Tx<'_, '_>, e: &NewEvent<'_>) -> Result<()> {
    let started = EVENTS_TIMED.with(Cell::get).then(Instant::now);
    tx.run(Hot::RecordEvent, INSERT_EVENT_SQL, |s| {
        s.execute(rusqlite::params![
            e.at_ms,
            e.worker,
            e.kind.as_str(),
            e.id,
            e.key,
            e.version,
            e.until_ms,
            e.detail,
        ])
    })?;
    if tx.last_insert_rowid() == 1 {
        tx.prepare_cached(LIFT_FIRST_EVENT_SQL)?.execute([])?;
    }
    if let Some(t) = started {
        EVENTS_NS.with(|n| n.set(n.get() + t.elapsed().as_nanos() as u64));
    }
    Ok(())
}

thread_local! {
    static EVENTS_TIMED: Cell<bool> = const { Cell::new(false) };
    static EVENTS_NS: Cell<u64> = const { Cell::new(0) };
}

/// From now on this thread times the event rows it writes (the bench's cost split).
pub fn time_events_on_this_thread() {
    EVENTS_TIMED.with(|t| t.set(true));
    EVENTS_NS.with(|n| n.set(0));
}

/// Nanoseconds this thread spent writing event rows since it started timing them.
pub fn events_ns_on_this_thread() -> u64 {
    EVENTS_NS.with(Cell::get)
}

impl crate::outbox::Recording for Store {
    /// A fact's commit does not wait for the disk: in WAL mode it is on disk with the next
    /// commit that does (the worker's next claim or finalize syncs the log up to and past
    /// it), and a power cut before that loses only the record of a fact, never the outbox's
    /// state. A run that syncs every commit pays for its provider calls' rows no sync of
    /// their own (it cost a `run` about two fifths of its time).
    fn record(&mut self, fact: &crate::outbox::Fact) -> Result<Stamped<()>> {
        let full = self.shared.durability == super::Durability::Full;
        if full {
            self.conn.execute_batch("PRAGMA synchronous=NORMAL")?;
        }
        let stamp = self.record_now(fact);
        if full {
            self.conn.execute_batch("PRAGMA synchronous=FULL")?;
        }
        stamp
    }
}

impl Store {
    fn record_now(&mut self, fact: &crate::outbox::Fact) -> Result<Stamped<()>> {
        self.write(|tx, shared| {
            record(
                tx,
                &NewEvent {
                    at_ms: fact.at_ms,
                    worker: &fact.worker,
                    kind: fact.kind,
                    id: fact.id,
                    key: fact.key.as_deref(),
                    version: fact.version,
                    until_ms: fact.until_ms,
                    detail: fact.detail.as_deref(),
                },
            )?;
            Ok((
                Stamped::new((), shared.next_seq()),
                super::conn::End::Commit,
            ))
        })
    }
}

impl Store {
    /// Up to `limit` events after `seq`, in commit order: a reader tails the table by
    /// asking again with the last Seq it saw.
    pub fn events_after(&self, seq: u64, limit: u64) -> Result<Vec<LeaseEventRow>> {
        let mut stmt = self.conn.prepare_cached(EVENTS_AFTER_SQL)?;
        let rows = stmt
            .query_map(rusqlite::params![seq as i64, limit as i64], |r| {
                let kind: String = r.get(3)?;
                Ok(LeaseEventRow {
                    seq: r.get::<_, i64>(0)? as u64,
                    at_ms: r.get(1)?,
                    worker: r.get(2)?,
                    kind: LeaseEventKind::parse(&kind).ok_or_else(|| {
                        rusqlite::Error::FromSqlConversionFailure(
                            3,
                            rusqlite::types::Type::Text,
                            format!("unknown LeaseEvents kind '{kind}'").into(),
                        )
                    })?,
                    id: r.get(4)?,
                    key: r.get(5)?,
                    version: r.get(6)?,
                    until_ms: r.get(7)?,
                    detail: r.get(8)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        self.absorb_busy();
        Ok(rows)
    }

    /// Up to `limit` events of a recording, every row whatever its Seq, in Seq order. A
    /// row whose columns hold what no leaselab writes (text for a number, an unknown kind) is
    /// refused, naming its Seq: the table of a file is untrusted.
    pub fn recorded_events(&self, limit: u64) -> Result<Vec<LeaseEventRow>> {
        use rusqlite::types::ValueRef;
        let mut stmt = self.conn.prepare(
            "SELECT Seq, AtUtc, Worker, Kind, MessageId, PaymentKey, LeaseVersion,
                    LockedUntilUtc, Detail
               FROM LeaseEvents ORDER BY Seq LIMIT ?1",
        )?;
        let mut rows = stmt.query([limit.min(i64::MAX as u64) as i64])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            let seq: i64 = r.get(0)?;
            let bad = |what: String| {
                super::OutboxError::Foreign(format!("LeaseEvents row Seq {seq}: {what}"))
            };
            let int = |i: usize, name: &str| -> Result<Option<i64>> {
                match r.get_ref(i)? {
                    ValueRef::Null => Ok(None),
                    ValueRef::Integer(v) => Ok(Some(v)),
                    _ => Err(bad(format!("{name} is not a whole number"))),
                }
            };
            let text = |i: usize, name: &str| -> Result<Option<String>> {
                match r.get_ref(i)? {
                    ValueRef::Null => Ok(None),
                    ValueRef::Text(t) => String::from_utf8(t.to_vec())
                        .map(Some)
                        .map_err(|_| bad(format!("{name} is not UTF-8 text"))),
                    _ => Err(bad(format!("{name} is not text"))),
                }
            };
            let kind = text(3, "Kind")?.unwrap_or_default();
            out.push(LeaseEventRow {
                seq: u64::try_from(seq).map_err(|_| bad("Seq is not above 0".into()))?,
                at_ms: int(1, "AtUtc")?.ok_or_else(|| bad("AtUtc is empty".into()))?,
                worker: text(2, "Worker")?.ok_or_else(|| bad("Worker is empty".into()))?,
                kind: LeaseEventKind::parse(&kind)
                    .ok_or_else(|| bad(format!("unknown kind '{}'", crate::text::quoted(&kind))))?,
                id: int(4, "MessageId")?,
                key: text(5, "PaymentKey")?,
                version: int(6, "LeaseVersion")?,
                until_ms: int(7, "LockedUntilUtc")?,
                detail: text(8, "Detail")?,
            });
        }
        Ok(out)
    }

    /// How many rows the events table holds.
    pub fn event_count(&self) -> Result<u64> {
        let n: i64 = self
            .conn
            .query_row("SELECT COUNT(*) FROM LeaseEvents", [], |r| r.get(0))?;
        Ok(n as u64)
    }

    /// Every event since the last seeding, in commit order.
    pub fn all_events(&self) -> Result<Vec<LeaseEventRow>> {
        self.events_after(0, i64::MAX as u64)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::outbox::{Durability, Fact, Recording, StoreShared};

    /// A fact's own commit skips the disk sync; every write after it syncs again.
    #[test]
    fn a_fact_leaves_the_connection_syncing_every_commit() {
        let dir = tempfile::tempdir().unwrap();
        let shared = Arc::new(StoreShared::new(Durability::Full));
        let (mut store, _) = Store::create(&dir.path().join("f.db"), shared).unwrap();
        let sync = |s: &Store| -> i64 {
            s.conn
                .query_row("PRAGMA synchronous", [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(sync(&store), 2, "FULL before");
        let fact = Fact::of(LeaseEventKind::Paused, 1, "Worker-A", "pause");
        store.record(&fact).unwrap();
        assert_eq!(sync(&store), 2, "FULL again after the fact");
        assert_eq!(store.all_events().unwrap().len(), 1);
    }
}
