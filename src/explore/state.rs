//! What a state is judged by and known by: the checks the state itself can break, and its
//! fingerprint, which keeps everything a step from it can read (for a student's statements,
//! every cell of the tables the sandbox lets them read), its times relative to the clock.

use std::hash::{Hash, Hasher};

use crate::engine::outbox::{OutboxStatus, PaymentStatus};
use crate::engine::store::Cell;
use crate::engine::student::OpRun;

use super::check::Check;
use super::clock::{Rel, Relative, TimeModel, Use};
use super::oracle::{holds_live_lease, lease_holds};
use super::world::{done_with, Local, Seen, World};
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
            Some(model) => {
                let workers = self.actors.iter().filter(|a| !a.replacement).count();
                let identity: Vec<usize> = (0..workers).collect();
                self.feed_sql(model, seen, &identity, &mut bytes)
            }
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
    pub(super) fn feed_sql(
        &self,
        model: &TimeModel,
        seen: &Seen,
        to: &[usize],
        h: &mut impl Hasher,
    ) {
        // The workers renamed by `to` (slot k becomes slot to[k]; the identity keeps them):
        // each actor by its renamed slot, and every name a state holds by its slot.
        let names = Names {
            actors: &self.actors,
            to,
        };
        let place = |i: usize| {
            (
                names.of(&self.actors[i].name).ok(),
                self.actors[i].replacement,
            )
        };
        let mut order: Vec<usize> = (0..self.actors.len()).collect();
        order.sort_by_key(|&i| place(i));
        let memory = order
            .iter()
            .flat_map(|&i| memory_times(&self.actors[i].local));
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
        for &i in &order {
            let a = &self.actors[i];
            (place(i), a.stalled, a.twin.is_some()).hash(h);
            match &a.local {
                Local::Running(run) => {
                    h.write_u8(5);
                    feed_run(run, &rel, &names, h);
                }
                other => other.feed(rel, h),
            }
        }
        self.feed_cells(model, seen, &names, &rel, h);
        for (key, c) in &seen.calls {
            (key, c.status_checks, c.side_effects).hash(h);
        }
        let holders: Vec<_> = self.holder.iter().map(|w| w.map(place)).collect();
        let finishers: Vec<_> = self
            .finisher
            .iter()
            .map(|f| f.map(|(i, v)| (place(i), v)))
            .collect();
        let mut broken = self.broken.clone();
        broken.sort();
        (&self.finalized, holders, broken).hash(h);
        (
            &self.expiries,
            finishers,
            self.crashes_and_stalls,
            self.beats,
        )
            .hash(h);
    }

    /// Every cell of the two tables: a time by its class (compared: `rel`; ordered: its
    /// place in its column; unread: whether it is NULL), an owner by `names`.
    fn feed_cells(
        &self,
        model: &TimeModel,
        seen: &Seen,
        names: &Names<'_>,
        rel: &impl Fn(i64) -> i64,
        h: &mut impl Hasher,
    ) {
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
                let owner = table.columns[c].eq_ignore_ascii_case("LockedBy");
                for row in &table.rows {
                    match (how, &row[c]) {
                        (None, Cell::Text(n)) if owner => (4u8, names.of(n)).hash(h),
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
/// The workers' names under a renaming: a worker's name is its renamed slot; any other
/// text stays itself.
struct Names<'w> {
    actors: &'w [super::world::Actor],
    to: &'w [usize],
}

impl Names<'_> {
    fn of<'a>(&self, name: &'a str) -> Result<usize, &'a str> {
        let workers = self.to.len().min(self.actors.len());
        self.actors[..workers]
            .iter()
            .position(|a| a.name == name)
            .map(|k| self.to[k])
            .ok_or(name)
    }
}

fn feed_run(run: &OpRun, rel: &impl Fn(i64) -> i64, names: &Names<'_>, h: &mut impl Hasher) {
    let worker = names.of(&run.bound.worker);
    (run.kind, run.next, worker, run.bound.id, run.bound.version).hash(h);
    (rel(run.bound.now), rel(run.bound.lease_until), run.stale).hash(h);
    if let Some(l) = &run.lease {
        (l.id, l.version, names.of(&l.owner), &l.key, rel(l.until_ms)).hash(h);
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

/// The message a broken check is about: the one finalized twice, the one the provider
/// worked on twice, the one the move acted on, or the first unfinished one.
pub(super) fn about(c: Check, world: &World, seen: &Seen, moved: Option<&str>) -> String {
    let key_of = |id: i64| seen.rows.iter().find(|r| r.id == id).map(|r| r.key.clone());
    let found = match c {
        Check::ProcessedTwice => world
            .finalized
            .iter()
            .position(|n| *n >= 2)
            .and_then(|id| key_of(id as i64)),
        Check::SideEffectTwice => seen
            .calls
            .iter()
            .find(|(_, k)| k.side_effects >= 2)
            .map(|(key, _)| key.clone()),
        Check::Lost => world.lost(seen),
        Check::PaidWithoutCall => paid_without_call(seen),
        Check::GaveUp => seen
            .rows
            .iter()
            .find(|r| r.status == crate::engine::outbox::OutboxStatus::DeadLettered)
            .map(|r| r.key.clone()),
        Check::NonOwnerFinalize | Check::LeaseExclusivity => moved.map(str::to_string),
        // Found once the search is over (`find_stuck`), from what each state kept.
        Check::Stuck => None,
    };
    found
        .or_else(|| {
            seen.rows
                .iter()
                .find(|r| !done_with(r.status))
                .map(|r| r.key.clone())
        })
        .unwrap_or_default()
}
