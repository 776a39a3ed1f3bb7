//! The figures an expectation states: a row's columns, a count of rows, a ledger counter or
//! the provider's calls.

use crate::engine::outbox::{OutboxStatus, PaymentStatus};

use super::MessageSel;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Figure {
    /// The outbox row's Status.
    Status(MessageSel),
    /// The outbox row's LockedBy (`none` for NULL).
    Owner(MessageSel),
    /// The outbox row's LeaseVersion (the fencing token).
    Lease(MessageSel),
    /// The payment row's PaymentStatus.
    Payment(MessageSel),
    /// Results written for the message (the processing ledger).
    Processed(MessageSel),
    /// The outbox row's Attempts.
    Attempts(MessageSel),
    /// A ledger counter by name (see [`LEDGER_FIGURES`]).
    Ledger(&'static str),
    /// Outbox rows with this status.
    Outbox(OutboxStatus),
    /// Payments with this status.
    Payments(PaymentStatus),
    /// Provider status-check calls, for one key or all.
    ProviderCalls(Option<MessageSel>),
    /// Provider side effects, for one key or all.
    ProviderEffects(Option<MessageSel>),
}

impl Figure {
    /// The message the figure is about, if it is about one.
    pub fn message(&self) -> Option<&MessageSel> {
        match self {
            Figure::Status(m)
            | Figure::Owner(m)
            | Figure::Lease(m)
            | Figure::Payment(m)
            | Figure::Processed(m)
            | Figure::Attempts(m)
            | Figure::ProviderCalls(Some(m))
            | Figure::ProviderEffects(Some(m)) => Some(m),
            _ => None,
        }
    }
}

/// Ledger figures an `expect` may name, with what each counts.
pub const LEDGER_FIGURES: &[(&str, &str)] = &[
    ("claims", "successful claims"),
    ("empty", "claims that found nothing"),
    (
        "blocked",
        "claims refused because another worker's lease still ran",
    ),
    (
        "reclaims",
        "claims of a message whose earlier lease had expired",
    ),
    (
        "attempts",
        "processing attempts (provider status checks by workers)",
    ),
    ("unique", "messages processed at least once"),
    ("duplicates", "messages processed more than once"),
    ("rejected", "finalizes rejected because the lease was lost"),
    ("violations", "ownership violations"),
    (
        "overlaps",
        "two live leases on one message at once, as the history check finds them: a claim while another lease on it still ran, or a heartbeat that extended a lease its worker no longer held",
    ),
    ("crashes", "worker crashes"),
    ("heartbeats", "heartbeats that extended a lease"),
    (
        "lost",
        "leases found lost by a heartbeat (the message was dropped)",
    ),
    (
        "retries",
        "failed attempts sent back to Pending after a backoff",
    ),
    (
        "dead",
        "messages dead-lettered after their last attempt failed",
    ),
    (
        "transactions",
        "claim transactions that took something (a batch claim is one)",
    ),
    (
        "writes",
        "write transactions by workers: claims, finalizes, heartbeats, failed attempts",
    ),
];
