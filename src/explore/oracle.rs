//! The explorer's own reading of when a lease holds: the oracle its checks judge the engine
//! by, written apart from the engine's rule on purpose, and tested to agree with it.
//!
//! Why apart: the checker judges the engine's claims ("lease exclusivity": a claim took a
//! message under another worker's live lease). Were it to call `lease::is_live` or reuse
//! the SQL's claimable condition, a change to that rule would change the judge with the
//! judged, and the search would find nothing wrong with a claim that takes a live lease.
//! Written here, a change to either side shows: as a broken check in the search, or as a
//! failure of the test below, which holds the two to the same boundary (`until == now`).

use crate::engine::outbox::{MessageRow, OutboxStatus};

/// A lease holds up to and including its `until`: at `now == until` it still keeps every
/// other worker out, one millisecond later it has run out.
pub fn lease_holds(until_ms: i64, now_ms: i64) -> bool {
    until_ms >= now_ms
}

/// The row is Processing under a lease that still holds at `now`.
pub fn holds_live_lease(row: &MessageRow, now_ms: i64) -> bool {
    row.status == OutboxStatus::Processing
        && row
            .locked_until_ms
            .is_some_and(|until| lease_holds(until, now_ms))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::clock::SCENARIO_START_MS;
    use crate::engine::lease::is_live;
    use crate::engine::outbox::prelude::*;
    use crate::engine::outbox::{ClaimOutcome, StoreShared};
    use crate::engine::provider::Provider;
    use crate::engine::store::Store;

    #[test]
    fn the_oracle_agrees_with_the_engines_liveness_at_every_boundary() {
        for until in [i64::MIN + 1, -1, 0, 1, SCENARIO_START_MS, i64::MAX - 1] {
            for now in [until - 1, until, until + 1] {
                assert_eq!(
                    lease_holds(until, now),
                    is_live(until, now),
                    "until {until}, now {now}"
                );
            }
        }
        assert!(lease_holds(5, 5) && !lease_holds(5, 6));
    }

    /// On a real SQLite outbox: just before, at and just after a lease's `until`, the row
    /// holds a live lease by the oracle exactly when the engine's claim finds nothing to
    /// take (its claimable condition, `LockedUntilUtc < now`, is false).
    #[test]
    fn the_oracle_agrees_with_the_engines_claimable_condition_at_until() {
        let dir = tempfile::tempdir().unwrap();
        let shared = Arc::new(StoreShared::default());
        let (mut store, _) = Store::create(&dir.path().join("oracle.db"), shared).unwrap();
        store.seed(&Provider::new(), 1, SCENARIO_START_MS).unwrap();
        let claimed = store
            .claim_next("Worker-A", SCENARIO_START_MS, 3_000)
            .unwrap();
        let ClaimOutcome::Claimed(lease) = claimed.value else {
            panic!("the seeded message is claimable: {claimed:?}");
        };
        let until = lease.until_ms;
        // In time order: each claim that finds nothing leaves the row as it was.
        for (now, live) in [(until - 1, true), (until, true), (until + 1, false)] {
            let rows = store.messages(0, 10).unwrap();
            assert_eq!(
                holds_live_lease(&rows[0], now),
                live,
                "now = until + {}",
                now - until
            );
            let taken = store.claim_next("Worker-B", now, 3_000).unwrap().value;
            let claimable = matches!(taken, ClaimOutcome::Claimed(_));
            assert_eq!(live, !claimable, "now = until + {}: {taken:?}", now - until);
        }
    }
}
