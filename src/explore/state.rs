//! What a state is judged by and known by: the checks the state itself can break, and its
//! fingerprint, which keeps everything a step from it can read (for a student's statements,
//! every cell of the tables the sandbox lets them read), its times relative to the clock.

use std::hash::{Hash, Hasher};

use crate::engine::outbox::{OutboxStatus, PaymentStatus};
use crate::engine::store::Cell;
use crate::engine::student::OpRun;

use super::check::Check;
use super::clock::{Rel, Relative, TimeModel, Use};
use super::oracle::lease_holds;
use super::world::{Local, Seen, World};

impl World {
    /// The checks that the state itself can break, judged from what happened (the
    /// finalizes the lab accepted, the provider's calls), not from what the rows say.
    pub(super) fn judge(&self, seen: &Seen, broke: &mut Vec<Check>) {
        if self.finalized.iter().any(|&n| n >= 2) {
            broke.push(Check::ProcessedTwice);
        }
        if seen.calls.values().any(|c| c.side_effects >= 2) {
            broke.push(Check::SideEffectTwice);
        }
        if self.lost(seen).is_some() {
            broke.push(Check::Lost);
        }
        if self.sql.is_none() {
            return;
        }
        if paid_without_call(seen).is_some() {
            broke.push(Check::PaidWithoutCall);
        }
        if seen
            .rows
            .iter()
            .any(|r| r.status == OutboxStatus::DeadLettered)
        {
            broke.push(Check::GaveUp);
        }
    }

    /// The first message lost: done with (Processed, or its row gone) with no finalize
    /// the lab accepted for it; or Processed with no answer written.
    pub(super) fn lost(&self, seen: &Seen) -> Option<String> {
        for r in &seen.rows {
            let unanswered = r.status == OutboxStatus::Processed
                && r.payment_status == PaymentStatus::Pending;
            let unfinalized = r.status == OutboxStatus::Processed
                && self.finalized.get(r.id as usize).is_some_and(|n| *n == 0);
            if unanswered || unfinalized {
                return Some(r.key.clone());
            }
        }
        // A row gone: its message id no row holds any more.
        (1..self.finalized.len())
            .find(|id| {
                self.finalized[*id] == 0 && !seen.rows.iter().any(|r| r.id as usize == *id)
            })
            .map(|id| crate::engine::outbox::payment_key(id as u64))
    }

    /// The state's fingerprint: two states with the same fingerprint behave alike from
    /// here on. Times are kept relative to the clock (a lease's time left, or expired),
    /// since every rule compares them with the clock and nothing else. 128 bits, two
    /// halves hashed apart: two different states share one with a chance of about
    /// n^2 / 2^129 for n states, under 10^-25 at five million.
    pub fn fingerprint(&self, seen: &Seen) -> u128 {
        use std::hash::DefaultHasher;
        let half = |tag: u8| {
            let mut h = DefaultHasher::new();
            h.write_u8(tag);
            match &self.time {
                Some(model) => self.feed_sql(model, seen, &mut h),
                None => self.feed(seen, &mut h),
            }
            h.finish()
        };
        (u128::from(half(0)) << 64) | u128::from(half(1))
    }

    fn feed(&self, seen: &Seen, h: &mut impl Hasher) {
        let rel = |until: i64| {
            if lease_holds(until, self.now) {
                until - self.now
            } else {
                -1
            }
        };
        for a in &self.actors {
            (&a.name, a.replacement, a.stalled, a.twin).hash(h);
            a.local.feed(rel, h);
        }
        for r in &seen.rows {
            let until = r.locked_until_ms.map(rel);
            (r.id, r.status, &r.locked_by, r.lease_version, until).hash(h);
        }
        for p in &seen.payments {
            (p.status, &p.transaction_id).hash(h);
        }
        for (key, c) in &seen.calls {
            (key, c.status_checks, c.side_effects).hash(h);
        }
        (&self.finalized, &self.holder, &self.broken).hash(h);
    }

    /// A student's world: every cell a statement may read, each time relative to the
    /// clock (an old time by its order among the old), the workers' memory likewise.
    fn feed_sql(&self, model: &TimeModel, seen: &Seen, h: &mut impl Hasher) {
        let memory = self.actors.iter().flat_map(|a| memory_times(&a.local));
        let relative = Relative::new(model, self.now, seen.times(model).chain(memory));
        relative.clock().hash(h);
        let rel = |t: i64| match relative.rel(t) {
            Rel::At(d) => d,
            Rel::Old(rank) => i64::MIN + rank as i64,
        };
        for a in &self.actors {
            (&a.name, a.replacement, a.stalled, a.twin).hash(h);
            match &a.local {
                Local::Running(run) => {
                    h.write_u8(5);
                    feed_run(run, &rel, h);
                }
                other => other.feed(rel, h),
            }
        }
        for table in seen.cells.iter().flatten() {
            table.table.hash(h);
            h.write_usize(table.rows.len());
            for (c, column) in table.columns.iter().enumerate() {
                let how = match is_time(table.table, column) {
                    true => Some(model.use_of(column)),
                    false => None,
                };
                // An ordered time is kept by its place among the column's values.
                let mut order: Vec<i64> = Vec::new();
                if how == Some(Use::Ordered) {
                    order = table.rows.iter().filter_map(|r| integer(&r[c])).collect();
                    order.sort_unstable();
                    order.dedup();
                }
                for row in &table.rows {
                    match (how, &row[c]) {
                        (None, cell) => (0u8, cell).hash(h),
                        (Some(Use::Compared), Cell::Integer(t)) => (1u8, rel(*t)).hash(h),
                        (Some(Use::Ordered), Cell::Integer(t)) => {
                            (2u8, order.binary_search(t).unwrap_or(0)).hash(h)
                        }
                        (Some(Use::Compared | Use::Ordered), cell) => (0u8, cell).hash(h),
                        // Never read: whether it is NULL, which the schema's CHECKs ask.
                        (Some(Use::Unread), cell) => (3u8, *cell == Cell::Null).hash(h),
                    }
                }
            }
        }
        for (key, c) in &seen.calls {
            (key, c.status_checks, c.side_effects).hash(h);
        }
        (&self.finalized, &self.holder, &self.broken).hash(h);
        (&self.expiries, &self.finisher).hash(h);
    }
}

fn integer(cell: &Cell) -> Option<i64> {
    match cell {
        Cell::Integer(n) => Some(*n),
        _ => None,
    }
}

fn is_time(table: &str, column: &str) -> bool {
    TimeModel::is_time(table, column)
}

/// The times a worker's memory holds: its lease's end, an operation's bound times.
fn memory_times(local: &Local) -> Vec<i64> {
    match local {
        Local::Holding(l) | Local::Checked(l, _) => vec![l.until_ms],
        Local::Running(run) => {
            let mut out = vec![run.bound.now, run.bound.lease_until];
            out.extend(run.lease.as_ref().map(|l| l.until_ms));
            out
        }
        Local::Idle | Local::Loaded(_) | Local::Marking(..) => Vec::new(),
    }
}

/// An operation in progress, its times relative to the clock.
fn feed_run(run: &OpRun, rel: &impl Fn(i64) -> i64, h: &mut impl Hasher) {
    (run.kind, run.next, &run.bound.worker, run.bound.id, run.bound.version).hash(h);
    (rel(run.bound.now), rel(run.bound.lease_until), run.stale).hash(h);
    if let Some(l) = &run.lease {
        (l.id, l.version, &l.owner, &l.key, rel(l.until_ms)).hash(h);
    }
    run.answer.hash(h);
}

/// The first payment with an answer written (Paid, Failed, or a transaction) for which
/// the provider was never called.
pub(super) fn paid_without_call(seen: &Seen) -> Option<String> {
    seen.payments
        .iter()
        .find(|p| {
            let answered = p.status != PaymentStatus::Pending || p.transaction_id.is_some();
            let called = seen.calls.get(&p.key).is_some_and(|c| c.status_checks > 0);
            answered && !called
        })
        .map(|p| p.key.clone())
}
