//! The reduction by symmetry: workers are interchangeable. Every rule of the engine's
//! store treats a worker's name as a name only (a claim takes the oldest claimable row
//! whoever asks, a finalize compares the row's owner with its own), and every worker
//! starts idle; so renaming the workers of a state gives a state that behaves alike, its
//! schedules the same schedules under the new names and the same checks broken after as
//! many steps. A state's key under the reduction is its fingerprint under the renaming
//! that gives the smallest encoding: one state is kept for each class of states equal up
//! to renaming, and the first one reached stands for the class. The state kept is a state
//! the search reached, so every schedule it reports names the workers that took it.
//!
//! A student's statements (`explore --sql`) may read the worker's name as they like (sort
//! by it, compare it): the reduction is used there only for a file that treats a name as a
//! name (`clock::names_only`), each state encoded with every cell, every name a state holds
//! (a row's `LockedBy`, a worker's memory) by its renamed slot.

use std::hash::{Hash, Hasher};

use super::options::MAX_RENAMED;
use super::oracle::lease_holds;
use super::world::{Seen, World};

/// A hasher that keeps what it is fed, as bytes: the encoding two states are compared
/// by.
#[derive(Default)]
struct Bytes(Vec<u8>);

impl Hasher for Bytes {
    fn write(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }

    fn finish(&self) -> u64 {
        0
    }
}

/// Every order of `n` slots, built once for each `n` the explorer has (1 to 3 workers).
fn orders(n: usize) -> &'static [Vec<usize>] {
    static ORDERS: std::sync::OnceLock<Vec<Vec<Vec<usize>>>> = std::sync::OnceLock::new();
    let all = ORDERS.get_or_init(|| (0..=MAX_RENAMED).map(every_order).collect());
    all.get(n).map_or(&[], Vec::as_slice)
}

/// Every order of `n` slots.
fn every_order(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for rest in every_order(n - 1) {
        for at in 0..=rest.len() {
            let mut o = rest.clone();
            o.insert(at, n - 1);
            out.push(o);
        }
    }
    out
}

impl World {
    /// The fingerprint of the class of this state under renaming its workers: equal for
    /// two states that one renaming of the workers makes equal, and 128 bits, as
    /// [`World::fingerprint`].
    pub fn class_fingerprint(&self, seen: &Seen) -> u128 {
        // The first actors are the workers, in their slots; a replacement comes after.
        let workers = self.actors.iter().filter(|a| !a.replacement).count();
        // A world of more workers than the orders are built for (the library asks for no
        // bound) is not reduced: its key is its own fingerprint, never one shared by all.
        if orders(workers).is_empty() {
            return self.fingerprint(seen);
        }
        let mut best: Option<Vec<u8>> = None;
        for to in orders(workers) {
            let mut b = Bytes(Vec::with_capacity(256));
            match &self.time {
                // A student's statements: every cell, each worker's name by its renamed slot.
                Some(model) => self.feed_sql(model, seen, to, &mut b),
                None => self.encode(seen, to, workers, &mut b),
            }
            if best.as_ref().is_none_or(|kept| b.0 < *kept) {
                best = Some(b.0);
            }
        }
        let bytes = best.unwrap_or_default();
        let half = |tag: u8| {
            let mut h = std::hash::DefaultHasher::new();
            h.write_u8(tag);
            h.write(&bytes);
            h.finish()
        };
        (u128::from(half(0)) << 64) | u128::from(half(1))
    }

    /// The slot of the worker named `name` (its index among the first actors).
    fn slot(&self, name: &str, workers: usize) -> Option<usize> {
        self.actors[..workers].iter().position(|a| a.name == name)
    }

    /// The state with worker slot `k` renamed to slot `to[k]`, as bytes: the actors in the
    /// renamed slots' order (a worker, then its replacement if a stall made one), each row's
    /// owner renamed, the explorer's record of each message's holder renamed. Everything
    /// [`World::fingerprint`] feeds, in a form that names no worker.
    fn encode(&self, seen: &Seen, to: &[usize], workers: usize, h: &mut Bytes) {
        let rel = |until: i64| {
            if lease_holds(until, self.now) {
                until - self.now
            } else {
                -1
            }
        };
        // Actor index to its place once renamed: (renamed slot, replacement).
        let place = |i: usize| -> (usize, bool) {
            let a = &self.actors[i];
            let slot = self.slot(&a.name, workers).map_or(usize::MAX, |s| to[s]);
            (slot, a.replacement)
        };
        let mut order: Vec<usize> = (0..self.actors.len()).collect();
        order.sort_by_key(|&i| place(i));
        for i in order {
            let a = &self.actors[i];
            (place(i), a.stalled, a.twin.is_some()).hash(h);
            a.local.feed(rel, h);
        }
        for r in seen.rows.iter() {
            let until = r.locked_until_ms.map(rel);
            let owner = r.locked_by.as_deref().map(|n| match self.slot(n, workers) {
                Some(s) => Ok(to[s]),
                None => Err(n),
            });
            (r.id, r.status, owner, r.lease_version, until).hash(h);
        }
        for p in seen.payments.iter() {
            (p.status, &p.transaction_id).hash(h);
        }
        for (key, c) in &seen.calls {
            (key, c.status_checks, c.side_effects).hash(h);
        }
        let holders: Vec<Option<(usize, bool)>> =
            self.holder.iter().map(|w| w.map(place)).collect();
        let mut broken = self.broken.clone();
        broken.sort_by_key(|c| super::check::Check::ALL.iter().position(|x| x == c));
        (&self.finalized, holders, broken).hash(h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_order_of_three_slots_once() {
        let mut all = orders(3).to_vec();
        assert_eq!(all.len(), 6);
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 6);
        assert_eq!(orders(1), [vec![0]]);
        assert!(orders(4).is_empty(), "no world has four workers");
    }
}
