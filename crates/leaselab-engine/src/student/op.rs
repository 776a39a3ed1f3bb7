//! An operation in progress ([`OpRun`]) and the values its statements are bound to
//! ([`Bound`]): a value the explorer keeps in its states and a stepwise store keeps
//! between two calls.

use super::OpKind;
use crate::outbox::Lease;
use crate::provider::StatusCheck;

/// The values a statement's named parameters are bound to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Bound {
    pub worker: String,
    pub now: i64,
    pub lease_until: i64,
    /// The held lease's, or what a statement before returned as `Id`.
    pub id: Option<i64>,
    /// The held lease's, or what a statement before returned as `LeaseVersion`.
    pub version: Option<i64>,
}

/// An operation in progress: which, the next statement, the values bound so far, and for a
/// finalize or a heartbeat the lease it is about (and a finalize's provider answer).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OpRun {
    pub kind: OpKind,
    pub next: usize,
    pub bound: Bound,
    pub lease: Option<Lease>,
    pub answer: Option<StatusCheck>,
    /// A deferred transaction split in two (`StudentStore::deferred_in_two`): another
    /// connection wrote after its reads, so its first write meets `SQLITE_BUSY`.
    pub stale: bool,
}

impl OpRun {
    /// A claim by `worker` at `now` for a lease of `lease_ms`.
    pub fn claim(worker: &str, now: i64, lease_ms: i64) -> OpRun {
        OpRun {
            kind: OpKind::Claim,
            next: 0,
            bound: Bound {
                worker: worker.to_string(),
                now,
                lease_until: now.saturating_add(lease_ms),
                id: None,
                version: None,
            },
            lease: None,
            answer: None,
            stale: false,
        }
    }

    /// The finalize of `lease` with the provider's `answer`.
    pub fn finalize(lease: &Lease, answer: &StatusCheck, now: i64) -> OpRun {
        OpRun {
            answer: Some(answer.clone()),
            ..OpRun::about(OpKind::Finalize, lease, now, 0)
        }
    }

    /// A heartbeat of `lease` asking for `lease_ms` more from `now`.
    pub fn heartbeat(lease: &Lease, now: i64, lease_ms: i64) -> OpRun {
        OpRun::about(OpKind::Heartbeat, lease, now, lease_ms)
    }

    fn about(kind: OpKind, lease: &Lease, now: i64, lease_ms: i64) -> OpRun {
        OpRun {
            kind,
            next: 0,
            bound: Bound {
                worker: lease.owner.clone(),
                now,
                lease_until: now.saturating_add(lease_ms),
                id: Some(lease.id),
                version: Some(lease.version),
            },
            lease: Some(lease.clone()),
            answer: None,
            stale: false,
        }
    }
}
