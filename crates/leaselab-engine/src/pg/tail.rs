//! Following `LeaseEvents` on PostgreSQL while workers write it, without a lock that every
//! write would queue on.
//!
//! Seq comes from a sequence, drawn when a row is made and committed later, so rows become
//! visible out of Seq order: a reader that only asked for "Seq after the last one I saw"
//! would skip a lower Seq that commits late. A tail therefore returns rows only up to a
//! settled Seq, below which no row can still appear:
//!
//! - every writer takes its transaction id before it draws a Seq (its row lock, or
//!   `pg_current_xact_id()` in the insert's FROM);
//! - so after the tail reads the sequence's last value L and then takes a transaction id X
//!   of its own, every Seq up to L belongs to a transaction older than X;
//! - once no transaction of this database older than X is still running (nor prepared),
//!   all of them have ended, and every Seq up to L is committed or gone for good.
//!   Transactions in other databases of the server cannot write these rows and are not
//!   waited for (`pg_stat_activity` names every session's database and transaction id,
//!   also to a user who may see nothing else of it).
//!
//! Rows come in Seq order, which is each message's commit order (a message's rows draw
//! their Seqs while holding its row lock). A transaction left open anywhere on the server
//! holds the settled point back until it ends.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::{PgStore, Result};
use crate::outbox::LeaseEventRow;

/// Marks kept while the settled point waits for old transactions; beyond it the newest is
/// moved forward instead (which only delays, never skips).
const MARKS: usize = 64;

/// How often a one-time reader asks again whether older transactions have ended.
const SETTLE_POLL: Duration = Duration::from_millis(2);

/// Where a reader of `LeaseEvents` is, and the marks that will settle the Seqs above it.
#[derive(Debug, Default, Clone)]
pub struct PgTail {
    /// The last Seq returned.
    last: u64,
    /// Every Seq up to this one is committed or gone.
    settled: u64,
    /// (transaction id taken after the sequence was read, the sequence's last value then,
    /// when), oldest first.
    marks: VecDeque<(i64, u64, Instant)>,
}

impl PgTail {
    pub fn new() -> PgTail {
        PgTail::default()
    }

    /// The last Seq returned.
    pub fn last(&self) -> u64 {
        self.last
    }

    /// How long rows have waited for a transaction older than them to end, when they have.
    pub fn held_back(&self) -> Option<Duration> {
        self.marks.front().map(|m| m.2.elapsed())
    }

    fn mark(&mut self, xid: i64, drawn: u64) {
        let newest = self.marks.back().map_or(self.settled, |m| m.1);
        if drawn <= newest {
            return;
        }
        let since = match self.marks.len() >= MARKS {
            true => self.marks.pop_back().map_or_else(Instant::now, |m| m.2),
            false => Instant::now(),
        };
        self.marks.push_back((xid, drawn, since));
    }

    /// Settle every mark, oldest first, that `ended_before` says no transaction older than
    /// its own still holds back; stop at the first one that is still held.
    fn settle_while(&mut self, mut ended_before: impl FnMut(i64) -> Result<bool>) -> Result<()> {
        while let Some(&(xid, drawn, _)) = self.marks.front() {
            if !ended_before(xid)? {
                break;
            }
            self.settled = self.settled.max(drawn);
            self.marks.pop_front();
        }
        Ok(())
    }

    /// [`PgTail::settle_while`] with the oldest transaction still running given.
    #[cfg(test)]
    fn settle(&mut self, oldest_running: i64) {
        let _ = self.settle_while(|xid| Ok(xid <= oldest_running));
    }
}

/// Whether every transaction of this database older than transaction `$1` (a full id) has
/// ended, prepared ones included. Ids are compared by their age, which wraps as they do.
const NOTHING_OLDER_RUNS_SQL: &str = "
SELECT NOT EXISTS (
         SELECT 1 FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid()
            AND backend_xid IS NOT NULL
            AND age(backend_xid) > age(($1::bigint % 4294967296)::text::xid))
   AND NOT EXISTS (
         SELECT 1 FROM pg_prepared_xacts
          WHERE database = current_database()
            AND age(transaction) > age(($1::bigint % 4294967296)::text::xid))";

impl PgStore {
    /// Up to `limit` events after the tail's last one, only from its settled part, in Seq
    /// order. A row returned is never followed by one with a lower Seq.
    pub fn tail_events(&mut self, tail: &mut PgTail, limit: u64) -> Result<Vec<LeaseEventRow>> {
        let (drawn, xid) = {
            let mut client = self.client();
            let mut tx = client.transaction()?;
            let drawn: Option<i64> = tx
            .query_one(
                "SELECT pg_sequence_last_value(pg_get_serial_sequence('leaseevents', 'seq')::regclass)",
                &[],
            )?
            .get(0);
            let xid: i64 = tx
                .query_one("SELECT pg_current_xact_id()::text::bigint", &[])?
                .get(0);
            tx.commit()?;
            (drawn, xid)
        };
        tail.mark(xid, drawn.unwrap_or(0).max(0) as u64);
        let ended = self.prepared(NOTHING_OLDER_RUNS_SQL)?;
        tail.settle_while(|xid| Ok(self.client().query_one(&ended, &[&xid])?.get(0)))?;
        let rows = self.all_events_between(tail.last, tail.settled, limit)?;
        if let Some(r) = rows.last() {
            tail.last = r.seq;
        }
        Ok(rows)
    }
}

/// A transaction still open: its server process id, how long it has been open and its
/// application's name (where this user may see them).
pub type OpenTransaction = (i32, Option<f64>, Option<String>);

impl PgStore {
    /// Up to `limit` events from the first, in Seq order, once every row up to the sequence's
    /// value when asked has settled: a one-time reader (a replay) sees the history with no
    /// row missing that commits later. Waits at most `wait` for the transactions older than
    /// the read to end; None if one is still open then.
    pub fn settled_events(
        &mut self,
        limit: u64,
        wait: Duration,
    ) -> Result<Option<Vec<LeaseEventRow>>> {
        let deadline = Instant::now() + wait;
        let mut tail = PgTail::new();
        let mut rows = self.tail_events(&mut tail, limit)?;
        // The sequence's value at the first read: everything up to it is the history asked for.
        // Marks settle oldest first, so until this one has, nothing has.
        let target = tail.marks.back().map_or(tail.settled, |m| m.1);
        while tail.settled < target {
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(SETTLE_POLL);
            rows = self.tail_events(&mut tail, limit)?;
        }
        Ok(Some(rows))
    }

    /// The oldest writing transaction still open in this database (another than this
    /// connection's): its process id, how long it has been open, and its application's
    /// name, the last two where this user may see them.
    pub fn oldest_open_transaction(&mut self) -> Result<Option<OpenTransaction>> {
        let row = self.client().query_opt(
            "SELECT pid, EXTRACT(EPOCH FROM now() - xact_start)::float8, application_name
               FROM pg_stat_activity
              WHERE datname = current_database() AND backend_xid IS NOT NULL
                AND pid <> pg_backend_pid()
              ORDER BY age(backend_xid) DESC LIMIT 1",
            &[],
        )?;
        Ok(row.map(|r| (r.get(0), r.get(1), r.get(2))))
    }
}

impl PgStore {
    /// The oldest open transaction as a reader is told of it, ` (server pid N, app, open S s)`,
    /// or nothing when there is none (or the question fails).
    pub fn open_transaction_named(&mut self) -> String {
        let Ok(Some((pid, secs, app))) = self.oldest_open_transaction() else {
            return String::new();
        };
        let app = app
            .map(|a| crate::text::quoted(&a))
            .filter(|a| !a.is_empty())
            .map(|a| format!(", {a}"))
            .unwrap_or_default();
        let open = secs.map(|s| format!(", open {s:.0} s")).unwrap_or_default();
        format!(" (server pid {pid}{app}{open})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_settles_only_when_the_oldest_running_transaction_is_its_own_or_newer() {
        let mut t = PgTail::new();
        t.mark(100, 7);
        t.settle(99);
        assert_eq!(t.settled, 0, "transaction 99 may still hold a Seq up to 7");
        t.mark(105, 9);
        t.settle(100);
        assert_eq!(t.settled, 7);
        assert!(t.held_back().is_some(), "the mark for 9 still waits");
        t.settle(200);
        assert_eq!(t.settled, 9);
        assert!(t.marks.is_empty());
        assert_eq!(t.held_back(), None);
    }

    #[test]
    fn marks_are_bounded_and_the_newest_moves_forward() {
        let mut t = PgTail::new();
        for i in 0..(MARKS as i64 + 10) {
            t.mark(1000 + i, 1 + i as u64);
        }
        assert_eq!(t.marks.len(), MARKS);
        let newest = t.marks.back().map(|m| (m.0, m.1));
        assert_eq!(newest, Some((1000 + MARKS as i64 + 9, MARKS as u64 + 10)));
        t.mark(5000, 3);
        assert_eq!(t.marks.len(), MARKS, "a Seq already marked adds nothing");
    }
}
