//! Which lease each worker holds, as the events tell it: taken by its claim, given up by
//! the result it writes, a failed attempt, the rejection of its finalize or the loss its
//! heartbeat finds, and forgotten by a new seeding. Folded once, in the ledger, for every
//! reader of the stream.

use super::events::{Event, EventKind};
use super::outbox::Lease;

/// By worker slot: the lease of the slot's last claim, until that slot is done with it.
#[derive(Debug, Clone, Default)]
pub struct Holdings {
    by_slot: Vec<Option<Lease>>,
}

impl Holdings {
    /// Take in one event.
    pub fn apply(&mut self, ev: &Event) {
        if matches!(ev.kind, EventKind::Seeded { .. }) {
            self.by_slot.iter_mut().for_each(|h| *h = None);
        }
        let Some(slot) = ev.slot else { return };
        match &ev.kind {
            EventKind::Claimed {
                id,
                key,
                until_ms,
                version,
                ..
            } => {
                if self.by_slot.len() <= slot {
                    self.by_slot.resize(slot + 1, None);
                }
                // Shown, never written with: a reader of events takes no lease (seeding 0).
                let message = (*id, key.clone());
                self.by_slot[slot] =
                    Some(Lease::taken(&ev.actor, *until_ms, message, (*version, 0)));
            }
            // A failed attempt gives its message back too: Pending after its backoff, or
            // the dead letter.
            EventKind::Finalized { id, .. }
            | EventKind::FinalizeRejected { id, .. }
            | EventKind::LeaseLost { id, .. }
            | EventKind::QueuedLeaseRanOut { id, .. }
            | EventKind::Marked { id, .. }
            | EventKind::AttemptFailed { id, .. }
            | EventKind::DeadLettered { id, .. } => {
                if let Some(held) = self.by_slot.get_mut(slot) {
                    if held.as_ref().is_some_and(|l| l.id == *id) {
                        *held = None;
                    }
                }
            }
            _ => {}
        }
    }

    /// The lease `slot` holds, as its claim took it (a heartbeat's new expiry is in the row).
    pub fn of(&self, slot: usize) -> Option<&Lease> {
        self.by_slot.get(slot)?.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(slot: usize, actor: &str, kind: EventKind) -> Event {
        Event {
            seq: 0,
            at_ms: 1_000,
            slot: Some(slot),
            actor: actor.to_string(),
            kind,
            sql: None,
        }
    }

    fn claimed(id: i64) -> EventKind {
        EventKind::Claimed {
            id,
            key: format!("PAY-{id:03}"),
            until_ms: 4_000,
            version: 1,
            reclaim: false,
            way: crate::events::ClaimWay::Next,
            overlapped: None,
        }
    }

    #[test]
    fn a_claim_is_held_until_its_own_slot_is_done_with_that_message() {
        let mut h = Holdings::default();
        h.apply(&ev(1, "Worker-B", claimed(7)));
        assert_eq!(h.of(1).map(|l| l.id), Some(7));
        assert_eq!(h.of(0), None);
        // Another message's loss, or this message's loss in another slot, changes nothing.
        h.apply(&ev(
            1,
            "Worker-B",
            EventKind::LeaseLost {
                id: 8,
                key: "PAY-008".into(),
                version: 1,
            },
        ));
        h.apply(&ev(
            0,
            "Worker-A",
            EventKind::LeaseLost {
                id: 7,
                key: "PAY-007".into(),
                version: 1,
            },
        ));
        assert_eq!(h.of(1).map(|l| l.owner.as_str()), Some("Worker-B"));
        h.apply(&ev(
            1,
            "Worker-B",
            EventKind::FinalizeRejected {
                id: 7,
                key: "PAY-007".into(),
                version: 1,
            },
        ));
        assert_eq!(h.of(1), None);
        h.apply(&ev(1, "Worker-B", claimed(9)));
        let mut seeded = ev(0, "engine", EventKind::Seeded { messages: 3 });
        seeded.slot = None;
        h.apply(&seeded);
        assert_eq!(h.of(1), None, "a new seeding forgets every lease");
    }
}
