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

/// A ledger figure: its one name (the words an `expect` uses after `ledger`, the Ledgers
/// panel's label, the narration's and the docs' word for it), the one-word name older lesson
/// files used, the key that holds it in `run --json`, and what it counts.
#[derive(Debug, Clone, Copy)]
pub struct LedgerFigure {
    pub name: &'static str,
    pub older: Option<&'static str>,
    pub json: &'static str,
    pub counts: &'static str,
}

const fn figure(
    name: &'static str,
    older: Option<&'static str>,
    json: &'static str,
    counts: &'static str,
) -> LedgerFigure {
    LedgerFigure {
        name,
        older,
        json,
        counts,
    }
}

/// Ledger figures an `expect` may name.
pub const LEDGER_FIGURES: &[LedgerFigure] = &[
    figure("claims", None, "claims_ok", "successful claims"),
    figure(
        "empty",
        None,
        "claims_empty",
        "claims that found nothing",
    ),
    figure(
        "blocked",
        None,
        "claims_blocked",
        "claims refused because another worker's lease still ran",
    ),
    figure(
        "reclaims",
        None,
        "reclaims",
        "claims of a message whose earlier lease had expired",
    ),
    figure(
        "attempts",
        None,
        "processing_attempts",
        "processing attempts: provider calls as the workers' events record them",
    ),
    figure(
        "unique",
        None,
        "unique_processed",
        "messages processed at least once",
    ),
    figure(
        "duplicates",
        None,
        "processed_more_than_once",
        "messages processed more than once",
    ),
    figure(
        "rejected",
        None,
        "rejected_finalizes",
        "finalizes rejected because the lease was lost",
    ),
    figure(
        "violations",
        None,
        "ownership_violations",
        "ownership violations",
    ),
    figure(
        "overlaps",
        None,
        "overlaps",
        "two live leases on one message at once, as the history check finds them: a claim while another lease on it still ran, or a heartbeat that extended a lease its worker no longer held",
    ),
    figure("crashes", None, "crashes", "worker crashes"),
    figure(
        "heartbeats",
        None,
        "heartbeats",
        "heartbeats that extended a lease",
    ),
    figure(
        "leases lost",
        Some("lost"),
        "leases_lost",
        "leases found lost by a heartbeat (the message was dropped)",
    ),
    figure(
        "retries",
        None,
        "retries",
        "failed attempts sent back to Pending after a backoff",
    ),
    figure(
        "dead letters",
        Some("dead"),
        "dead_letters",
        "messages dead-lettered after their last attempt failed",
    ),
    figure(
        "claim transactions",
        Some("transactions"),
        "claim_transactions",
        "claim transactions that took something (a batch claim is one)",
    ),
    figure(
        "writes",
        None,
        "writes",
        "write transactions by workers: claims, finalizes, heartbeats, failed attempts",
    ),
    figure(
        "results",
        None,
        "results_written",
        "results written, every message's `processed` added up (a message done twice counts two)",
    ),
];

/// The ledger figure called `words` (its name, or the one word older files used).
pub fn ledger_figure(words: &str) -> Option<&'static LedgerFigure> {
    LEDGER_FIGURES
        .iter()
        .find(|f| f.name == words || f.older == Some(words))
}

/// The provider's figures: `provider calls` (status checks) and `side effects` (calls that
/// did work), for all keys or one; `effects` is the word older files used.
pub const PROVIDER_CALLS: &str = "provider calls";
pub const SIDE_EFFECTS: &str = "side effects";

/// The names a message's own figures have in an `expect` and on its spotlight line.
pub const PROCESSED: &str = "processed";
