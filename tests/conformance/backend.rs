//! What the suite asks of a backend: an empty outbox of its own, more connections to it,
//! and its events table read from outside. The rest goes through `Outbox` alone.

use leaselab::engine::outbox::prelude::*;
use leaselab::engine::outbox::{ClaimOutcome, Lease, LeaseEventKind, LeaseEventRow};
use leaselab::engine::provider::{Provider, ProviderStatus, StatusCheck};

/// The scenario clock's time the suite seeds at and starts from.
pub const T0: i64 = 1_000_000;
/// The lease most rules are told with.
pub const LEASE: i64 = 500;

/// A database engine the outbox's rules run against.
pub trait Backend: Sync {
    /// A new, empty outbox in a database of its own, with the connection that made it; or
    /// None when this backend cannot run here (it has said why, or fails the test in CI).
    /// `tag` names the test, for a database that outlives a crash.
    fn fresh(&self, tag: &str) -> Option<Fresh>;
    /// Why `rule` does not apply to this backend, when it does not (the backend's file
    /// says so in one place, with a reason each).
    fn skips(&self, rule: &str) -> Option<&'static str> {
        let _ = rule;
        None
    }
}

/// A test's database and the connection that made it.
pub type Fresh = (Box<dyn Fixture>, Box<dyn Outbox>);

/// A test's database, the connection that seeded it and the provider it created the
/// payments at.
pub type Seeded = (Box<dyn Fixture>, Box<dyn Outbox>, Provider);

/// One test's database.
pub trait Fixture: Sync {
    /// Another connection to it, as another worker or process has.
    fn connect(&self) -> Box<dyn Outbox>;
    /// The rows of its events table after Seq `seq`, in Seq order, read through a
    /// connection of its own.
    fn events_after(&self, seq: u64) -> Vec<LeaseEventRow>;
    /// Every row of its events table.
    fn events(&self) -> Vec<LeaseEventRow> {
        self.events_after(0)
    }
    /// A reader that follows the events table while writers commit side by side, as a
    /// watching dashboard does: it must never miss a row nor return one out of Seq order.
    fn tail(&self) -> Box<dyn EventTail>;
}

/// The rows committed since the last call, in Seq order.
pub trait EventTail: Send {
    fn next_rows(&mut self) -> Vec<LeaseEventRow>;
    /// The highest Seq returned so far.
    fn last(&self) -> u64;
}

/// A fresh outbox seeded with `messages` payments at [`T0`], its connection and the
/// provider that created the payments; None when the backend is skipped here.
pub fn seeded(b: &dyn Backend, tag: &str, messages: u64) -> Option<Seeded> {
    let (fixture, mut outbox) = b.fresh(tag)?;
    let provider = Provider::new();
    outbox.seed(&provider, messages, T0).expect("seed");
    Some((fixture, outbox, provider))
}

pub fn claimed(outcome: ClaimOutcome) -> Lease {
    match outcome {
        ClaimOutcome::Claimed(lease) => lease,
        other => panic!("expected a claim, got {other:?}"),
    }
}

/// The provider's answer for `key`, which must be Paid.
pub fn paid(key: &str, p: &Provider) -> StatusCheck {
    let c = p.check_status(key);
    assert_eq!(c.status, ProviderStatus::Paid);
    c
}

/// A Paid answer made up, for a lease whose provider call is beside the point.
pub fn paid_tx() -> StatusCheck {
    StatusCheck {
        status: ProviderStatus::Paid,
        transaction_id: Some("TX-1".into()),
    }
}

/// The rows about leases: every row but the seedings' and added payments'.
pub fn lease_events(f: &dyn Fixture) -> Vec<LeaseEventRow> {
    f.events()
        .into_iter()
        .filter(|e| !matches!(e.kind, LeaseEventKind::Seeded | LeaseEventKind::Added))
        .collect()
}

/// The kinds of [`lease_events`], in Seq order.
pub fn kinds(f: &dyn Fixture) -> Vec<&'static str> {
    lease_events(f).iter().map(|e| e.kind.as_str()).collect()
}
