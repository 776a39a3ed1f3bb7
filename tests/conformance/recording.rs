//! What the events table records of the writes: each under the worker's own name, whatever
//! characters it holds.

use leaselab::engine::outbox::FinalizeOutcome;

use crate::backend::{claimed, lease_events, paid_tx, seeded, Backend, T0};
use crate::writes::{claim_next, finalize};

pub fn a_worker_name_with_quotes_and_backslashes_claims_and_finalizes_as_itself(b: &dyn Backend) {
    let Some((f, mut store, _p)) = seeded(b, "quoted_name", 1) else {
        return;
    };
    let name = r"o'brien\'; DROP TABLE LeaseEvents; --";
    let lease = claimed(claim_next(&mut *store, name, T0, 1_000).0);
    assert_eq!(lease.owner, name);
    let (outcome, _) = finalize(&mut *store, &lease, &paid_tx(), T0 + 1);
    assert_eq!(outcome, FinalizeOutcome::Committed);
    let events = lease_events(&*f);
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(events.iter().all(|e| e.worker == name), "{events:?}");
    let rows = store.messages(0, 10).unwrap();
    assert_eq!(rows[0].locked_by.as_deref(), Some(name));
}
