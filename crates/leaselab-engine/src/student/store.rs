//! [`StudentStore`]: a `Store` and the exercise whose statements it runs, with the
//! sandbox's state for its connection.

use std::borrow::BorrowMut;
use std::sync::Arc;

use super::sandbox::{Deadline, Refusals};
use super::Exercise;
use crate::store::Store;

/// A `Store` whose claim, finalize and heartbeat are a student's statements. `S` is the
/// store itself (a worker's own connection) or `&mut Store` (the explorer's, which it keeps).
pub struct StudentStore<S = Store> {
    store: S,
    pub(super) exercise: Arc<Exercise>,
    pub(super) refusals: Refusals,
    pub(super) deadline: Deadline,
    /// The statements of the operation run last (or running), as they ran.
    pub(super) ran: Vec<crate::outbox::StudentStatement>,
    /// A claim or finalize runs one step a call (`stepwise`), as `explore --sql` steps it.
    pub(super) stepwise: bool,
    /// The claim or finalize a stepwise call left partway: the next call goes on with it.
    pub(super) partway: Option<super::op::OpRun>,
    /// A deferred transaction that reads before it writes runs as two steps: its reads,
    /// then (unless another connection wrote meanwhile) its writes (`deferred_in_two`).
    pub(super) deferred_in_two: bool,
}

impl<S: BorrowMut<Store>> StudentStore<S> {
    pub fn new(store: S, exercise: Arc<Exercise>) -> StudentStore<S> {
        StudentStore {
            exercise,
            refusals: Refusals::default(),
            deadline: Deadline::new(store.borrow().student_quit()),
            ran: Vec::new(),
            stepwise: false,
            partway: None,
            deferred_in_two: false,
            store,
        }
    }

    /// Each claim and finalize call runs one step of it: one statement outside a
    /// transaction, or the whole transaction. A call that leaves its operation partway
    /// answers `Empty` or `Rejected` and `partway()` says it goes on at the next call of the
    /// same kind, with the values bound when it began. A heartbeat still runs whole.
    pub fn stepwise(mut self) -> StudentStore<S> {
        self.stepwise = true;
        self
    }

    /// A deferred transaction that reads, then writes, runs as two steps: its reads up to
    /// its first write (committed, as they change nothing), then the rest. Between the two
    /// another connection may write; SQLite would then refuse the first write with
    /// `SQLITE_BUSY` (its busy handler is not called for a read transaction that asks for
    /// the write lock), which the caller models by `OpRun::stale`. For `explore --sql`.
    pub fn deferred_in_two(mut self) -> StudentStore<S> {
        self.deferred_in_two = true;
        self
    }

    pub fn exercise(&self) -> &Exercise {
        &self.exercise
    }

    pub fn store(&self) -> &Store {
        self.store.borrow()
    }

    pub fn store_mut(&mut self) -> &mut Store {
        self.store.borrow_mut()
    }

    pub fn into_inner(self) -> S {
        self.store
    }
}
