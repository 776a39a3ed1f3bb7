//! What a state is judged by and known by: the checks the state itself can break, and its
//! fingerprint, which keeps everything a step from it can read (for a student's statements,
//! every cell of the tables the sandbox lets them read), its times relative to the clock.

use std::hash::{Hash, Hasher};

use crate::engine::outbox::{MessageRow, OutboxStatus, PaymentRow, PaymentStatus};
use crate::engine::store::{Cell, TableCells};
use crate::engine::student::OpRun;

use super::check::Check;
use super::clock::{Rel, Relative, TimeModel, Use};
use super::oracle::{holds_live_lease, lease_holds};
use super::world::{Local, Seen, World};
use crate::engine::clock::hms;

impl World {
    /// A `--sql` search's clock move: the time, and each lease it lets run out, counted.
    pub(super) fn tick(&mut self, delta: i64, before: &Seen) -> String {
        let ended: Vec<usize> = self.expiring(before, delta).collect();
        let mut out = format!(
            "the clock moves {} to {}",
            seconds(delta),
            hms(self.now.saturating_add(delta))
        );
        for id in &ended {
            if let Some(n) = self.expiries.get_mut(*id) {
                *n = n.saturating_add(1);
            }
            if let Some(r) = before.rows.iter().find(|r| r.id as usize == *id) {
                let until = r.locked_until_ms.map(hms).unwrap_or_default();
                out.push_str(&format!(
                    "; the lease on {} (v{}, until {until}) has run out",
                    r.key, r.lease_version
                ));
            }
        }
        self.now = self.now.saturating_add(delta);
        out
    }

    /// The messages whose lease a move of the clock by `delta` lets run out.
    pub(super) fn expiring<'a>(
        &'a self,
        seen: &'a Seen,
        delta: i64,
    ) -> impl Iterator<Item = usize> + 'a {
        let (now, then) = (self.now, self.now.saturating_add(delta));
        seen.rows
            .iter()
            .filter(move |r| holds_live_lease(r, now) && !holds_live_lease(r, then))
            .map(|r| r.id as usize)
    }
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
        for r in seen.rows.iter() {
            let unanswered =
                r.status == OutboxStatus::Processed && r.payment_status == PaymentStatus::Pending;
            let unfinalized = r.status == OutboxStatus::Processed
                && self.finalized.get(r.id as usize).is_some_and(|n| *n == 0);
            if unanswered || unfinalized {
                return Some(r.key.clone());
            }
        }
        // A row gone: its message id no row holds any more.
        (1..self.finalized.len())
            .find(|id| self.finalized[*id] == 0 && !seen.rows.iter().any(|r| r.id as usize == *id))
            .map(|id| crate::engine::outbox::payment_key(id as u64))
    }

    /// The state's fingerprint: two states with the same fingerprint behave alike from
    /// here on. Times are kept relative to the clock (a lease's time left, or expired),
    /// since every rule compares them with the clock and nothing else. 128 bits, two
    /// halves hashed apart: two different states share one with a chance of about
    /// n^2 / 2^129 for n states, under 10^-25 at five million.
    pub fn fingerprint(&self, seen: &Seen) -> u128 {
        use std::hash::DefaultHasher;
        // The state is encoded once, then hashed twice.
        let mut bytes = Encoded(Vec::with_capacity(512));
        match &self.time {
            Some(model) => self.feed_sql(model, seen, &mut bytes),
            None => self.feed(seen, &mut bytes),
        }
        let half = |tag: u8| {
            let mut h = DefaultHasher::new();
            h.write_u8(tag);
            h.write(&bytes.0);
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
        for r in seen.rows.iter() {
            let until = r.locked_until_ms.map(rel);
            (r.id, r.status, &r.locked_by, r.lease_version, until).hash(h);
        }
        for p in seen.payments.iter() {
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
        let times: Vec<i64> = seen.times(model, self.exact_clock).chain(memory).collect();
        let relative = Relative::new(model, self.now, times.iter().copied());
        relative.clock().hash(h);
        // Every time not old is kept by where it stands among the instants at which an
        // answer may change (`regions`); the cells and the memory say only which is which.
        let exact = self.exact_clock || model.absolute;
        if !exact {
            regions(model, self.now, &relative, &times).hash(h);
        }
        let rel = |t: i64| match relative.rel(t) {
            Rel::At(_) if !exact => 0,
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
        let cells = seen.cells.as_deref().map_or(&[][..], Vec::as_slice);
        let classes = model.classes(cells);
        for (table, classes) in cells.iter().zip(classes) {
            table.table.hash(h);
            h.write_usize(table.rows.len());
            for (c, how) in classes.iter().copied().enumerate() {
                // The exact clock keeps every time as if compared: the test that what the
                // regions and the uses leave out does not matter.
                let how = match self.exact_clock {
                    true => how.map(|_| Use::Compared),
                    false => how,
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
        (
            &self.expiries,
            &self.finisher,
            self.crashes_and_stalls,
            self.beats,
        )
            .hash(h);
    }
}

fn integer(cell: &Cell) -> Option<i64> {
    match cell {
        Cell::Integer(n) => Some(*n),
        _ => None,
    }
}

/// Where the times that are not old stand: every instant `t ± k` (for each such time
/// `t`, in the order `times` lists them, each offset `k`) and each instant a statement
/// run now could write (`now + v`, for `v` the file's offsets and the lease), with the
/// clock, sorted, each told by whose it is and by its distance to the one before, a
/// distance of 3 ms or more told as 3. The clock stands in turn just before, at and just
/// after each of these instants, so two states that tell them alike take the same moves of
/// the clock, and every comparison a statement can make (a time with the clock plus an
/// offset, two times, a time with another plus an offset) answers alike in both, now and
/// after every move.
fn regions(
    model: &TimeModel,
    now: i64,
    relative: &Relative,
    times: &[i64],
) -> Vec<(u32, i8, u8, i64)> {
    const NOW: u32 = u32::MAX;
    let mut points: Vec<(i64, (u32, i8, u8))> = vec![(now, (NOW, 0, 0))];
    let mut add = |slot: u32, t: i64| {
        for (ki, d) in model.offsets.iter().enumerate() {
            points.push((t.saturating_add(*d), (slot, 1, ki as u8)));
        }
    };
    for (slot, t) in times.iter().enumerate() {
        if matches!(relative.rel(*t), Rel::At(_)) {
            add(slot as u32, *t);
        }
    }
    let virtual_from = times.len() as u32;
    for (vi, v) in model.written.iter().enumerate() {
        add(virtual_from + vi as u32, now.saturating_add(*v));
    }
    points.sort_unstable();
    let mut prev = points.first().map_or(now, |p| p.0);
    points
        .into_iter()
        .map(|(at, (slot, sign, k))| {
            let gap = at.saturating_sub(prev).min(3);
            prev = at;
            (slot, sign, k, gap)
        })
        .collect()
}

/// A state's encoding, written as a hasher writes, to be hashed twice.
struct Encoded(Vec<u8>);

impl Hasher for Encoded {
    fn write(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }

    fn finish(&self) -> u64 {
        0
    }
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
    (
        run.kind,
        run.next,
        &run.bound.worker,
        run.bound.id,
        run.bound.version,
    )
        .hash(h);
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

/// `1.000 s`, `2.999 s`: a move of the clock, to the millisecond.
fn seconds(ms: i64) -> String {
    format!("{}.{:03} s", ms / 1000, ms % 1000)
}

/// The outbox's rows (each with its payment's status) and the payments, as the checks read
/// them, from every cell of the two tables (`Store::messages` and `Store::payments` read
/// the same from the database).
pub(super) fn rows_of(cells: &[TableCells]) -> (Vec<MessageRow>, Vec<PaymentRow>) {
    let table = |name: &str| cells.iter().find(|t| t.table == name);
    let at = |t: &TableCells, column: &str| t.columns.iter().position(|c| c == column);
    let int = |row: &[Cell], i: Option<usize>| match i.map(|i| &row[i]) {
        Some(Cell::Integer(n)) => Some(*n),
        _ => None,
    };
    let text = |row: &[Cell], i: Option<usize>| match i.map(|i| &row[i]) {
        Some(Cell::Text(t)) => Some(t.clone()),
        _ => None,
    };
    let mut payments = Vec::new();
    if let Some(p) = table("Payments") {
        let (key, status, tx) = (
            at(p, "IdempotencyKey"),
            at(p, "PaymentStatus"),
            at(p, "TransactionId"),
        );
        for row in &p.rows {
            let status = text(row, status).and_then(|s| PaymentStatus::parse(&s));
            payments.push(PaymentRow {
                key: text(row, key).unwrap_or_default(),
                status: status.unwrap_or(PaymentStatus::Pending),
                transaction_id: text(row, tx),
            });
        }
    }
    let mut rows = Vec::new();
    if let Some(o) = table("OutboxMessages") {
        let c = |name| at(o, name);
        for row in &o.rows {
            let key = text(row, c("PaymentKey")).unwrap_or_default();
            let paid = payments.iter().find(|p| p.key == key).map(|p| p.status);
            rows.push(MessageRow {
                id: int(row, c("Id")).unwrap_or(0),
                status: text(row, c("Status"))
                    .and_then(|s| OutboxStatus::parse(&s))
                    .unwrap_or(OutboxStatus::Pending),
                locked_by: text(row, c("LockedBy")),
                locked_until_ms: int(row, c("LockedUntilUtc")),
                lease_version: int(row, c("LeaseVersion")).unwrap_or(0),
                attempts: int(row, c("Attempts")).unwrap_or(0),
                processed_at_ms: int(row, c("ProcessedAtUtc")),
                payment_status: paid.unwrap_or(PaymentStatus::Pending),
                available_at_ms: int(row, c("AvailableAtUtc")).unwrap_or(0),
                key,
            });
        }
    }
    (rows, payments)
}
