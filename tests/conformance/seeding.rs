//! Making the rows a run works on, and reading them back: each payment created once, and
//! an emptied outbox that starts again while the events' Seq carries on.

use leaselab::engine::outbox::OutboxCounts;
use leaselab::engine::provider::Provider;

use crate::backend::{claimed, lease_events, seeded, Backend, LEASE, T0};
use crate::writes::claim_next;

pub fn seeding_creates_each_payment_once_at_the_gateway(b: &dyn Backend) {
    let Some((_f, s, p)) = seeded(b, "gateway", 6) else {
        return;
    };
    assert_eq!(p.creations_total(), 6);
    assert!(p.calls().values().all(|c| c.creations == 1));
    assert_eq!(s.outbox_counts().unwrap().pending, 6);
    assert_eq!(s.payment_counts().unwrap().pending, 6);
    let rows = s.max_rows_per_key().unwrap();
    assert_eq!((rows.payments, rows.outbox), (1, 1));
}

pub fn emptying_starts_the_outbox_again_from_one_while_event_seqs_carry_on(b: &dyn Backend) {
    let Some((f, mut store, _p)) = seeded(b, "reseed", 3) else {
        return;
    };
    let provider = Provider::new();
    let (first, first_stamp) = claim_next(&mut *store, "Worker-A", T0, LEASE);
    claimed(first);
    let first_seq = lease_events(&*f).last().expect("the claim's row").seq;
    store.empty().unwrap();
    assert_eq!(store.outbox_counts().unwrap(), OutboxCounts::default());
    assert_eq!(store.message_count().unwrap(), 0);
    assert!(f.events().is_empty());
    store.seed(&provider, 2, T0).unwrap();
    let added = store
        .add_payment(&provider, "PAY-EXTRA", 1_234, T0)
        .unwrap();
    assert_eq!((added.id, added.key.as_str()), (3, "PAY-EXTRA"));
    let rows = store.messages(1, 10).unwrap();
    let ids: Vec<(i64, &str, &str)> = rows
        .iter()
        .map(|r| (r.id, r.key.as_str(), r.payment_status.as_str()))
        .collect();
    assert_eq!(
        ids,
        vec![(2, "PAY-002", "Pending"), (3, "PAY-EXTRA", "Pending")]
    );
    assert_eq!(provider.creations_total(), 3);
    // Seq never goes back, so a reader tailing the table follows the new seeding.
    let (lease, stamp) = claim_next(&mut *store, "Worker-A", T0, LEASE);
    assert_eq!(claimed(lease).id, 1);
    let seq = lease_events(&*f).last().expect("the claim's row").seq;
    assert!(seq > first_seq, "{seq} after {first_seq}");
    assert!(stamp > first_stamp, "{stamp} after {first_stamp}");
}
