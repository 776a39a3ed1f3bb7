//! When a lease still holds. SQL's claimable condition (`LockedUntilUtc < now`) and every
//! place the dashboard says "held" or "expired" must agree, so the rule is written here once.

use super::outbox::Lease;

/// A lease is live up to and including its `until`: at `now == until` nobody may claim it.
pub fn is_live(until_ms: i64, now_ms: i64) -> bool {
    now_ms <= until_ms
}

impl Lease {
    /// The lease still keeps other workers from claiming its message.
    pub fn is_live(&self, now_ms: i64) -> bool {
        is_live(self.until_ms, now_ms)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::outbox::prelude::*;
    use crate::outbox::{ClaimOutcome, StoreShared};
    use crate::provider::Provider;
    use crate::store::Store;

    #[test]
    fn a_lease_is_held_at_its_until_and_claimable_one_millisecond_later() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outbox.db");
        let (mut store, _) = Store::create(&path, Arc::new(StoreShared::default())).unwrap();
        store.seed(&Provider::new(), 1, 0).unwrap();
        let lease = match store.claim_next("Worker-A", 0, 500).unwrap().value {
            ClaimOutcome::Claimed(l) => l,
            other => panic!("expected a claim, got {other:?}"),
        };
        let until = lease.until_ms;
        assert!(lease.is_live(until) && is_live(until, until));
        assert!(!lease.is_live(until + 1));
        // SQL agrees: at `until` the row is neither claimable nor claimable by id.
        assert_eq!(
            store.claim_next("Worker-B", until, 500).unwrap().value,
            ClaimOutcome::Empty
        );
        assert!(matches!(
            store
                .claim_id(lease.id, "Worker-B", until, 500)
                .unwrap()
                .value,
            ClaimOutcome::Blocked { left_ms: 0, .. }
        ));
        assert!(matches!(
            store.claim_next("Worker-B", until + 1, 500).unwrap().value,
            ClaimOutcome::Claimed(_)
        ));
    }
}
