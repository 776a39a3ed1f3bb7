//! Workers side by side, each on its own connection, drain the outbox while a reader tails
//! the events table: every message is finalized exactly once, by the holder of its newest
//! lease, and the reader misses no row and sees none out of Seq order.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use leaselab::engine::outbox::prelude::*;
use leaselab::engine::outbox::{ClaimOutcome, FinalizeOutcome, Lease, LeaseEventKind};
use leaselab::engine::provider::Provider;

use crate::backend::{lease_events, seeded, Backend, EventTail, Fixture, T0};
use crate::writes::{claim_next, finalize};

pub fn threads_with_their_own_connections_drain_every_message_exactly_once(b: &dyn Backend) {
    let Some((f, _store, _p)) = seeded(b, "drain", 120) else {
        return;
    };
    // Leases far longer than the run: no takeover, so every claim must finalize.
    let drained = drain(&*f, 4, 1_000_000, 1);
    assert_exactly_once(&*f, &drained, 120);
    let tallies = &drained.tallies;
    for t in tallies {
        assert!(t.rejected.is_empty());
        assert_eq!(t.claims.len(), t.committed.len());
    }
    let claims: usize = tallies.iter().map(|t| t.claims.len()).sum();
    assert_eq!(claims, 120, "each message claimed once");
}

pub fn threads_with_expiring_leases_never_let_a_non_owner_finalize(b: &dyn Backend) {
    let Some((f, _store, _p)) = seeded(b, "takeovers", 80) else {
        return;
    };
    // A lease of a few scenario steps: other threads' claims move the clock past it.
    let drained = drain(&*f, 4, 3, 1);
    assert_exactly_once(&*f, &drained, 80);
}

/// What one draining thread did: its claims and finalizes.
#[derive(Default)]
struct Tally {
    claims: Vec<Lease>,
    committed: Vec<Lease>,
    rejected: Vec<Lease>,
}

/// (Seq, kind, message id) of a lease event.
type Row = (u64, String, i64);

/// What the threads did, and the events a reader saw by tailing the table meanwhile.
struct Drained {
    tallies: Vec<Tally>,
    /// Each lease event, in the order the tail returned them.
    tailed: Vec<Row>,
}

/// The shared scenario clock and provider of a drain.
struct Shared {
    clock: AtomicI64,
    provider: Provider,
    start: Barrier,
    lease_ms: i64,
    step_ms: i64,
}

/// `threads` workers, each with its own connection, drain the outbox while a reader tails
/// `LeaseEvents`. Each claim moves the shared scenario clock on by `step_ms`, so with a
/// short lease some leases expire under their holder and are taken over.
fn drain(f: &dyn Fixture, threads: usize, lease_ms: i64, step_ms: i64) -> Drained {
    let shared = Shared {
        clock: AtomicI64::new(T0),
        provider: Provider::new(),
        start: Barrier::new(threads),
        lease_ms,
        step_ms,
    };
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|i| {
                let name = format!("Worker-{}", (b'A' + i as u8) as char);
                let (store, shared) = (f.connect(), &shared);
                scope.spawn(move || work(&name, store, shared))
            })
            .collect();
        let (tail, done) = (f.tail(), &done);
        let tailer = scope.spawn(move || follow(f, tail, done));
        let tallies = workers
            .into_iter()
            .map(|h| h.join().expect("worker thread"))
            .collect();
        done.store(true, Ordering::SeqCst);
        Drained {
            tallies,
            tailed: tailer.join().expect("tailer thread"),
        }
    })
}

/// One worker: claim, ask the provider, finalize, until the outbox is drained.
fn work(name: &str, mut store: Box<dyn Outbox>, shared: &Shared) -> Tally {
    let mut tally = Tally::default();
    shared.start.wait();
    for _ in 0..100_000 {
        let now = shared.clock.fetch_add(shared.step_ms, Ordering::SeqCst);
        match claim_next(&mut *store, name, now, shared.lease_ms).0 {
            ClaimOutcome::Claimed(lease) => {
                let check = shared.provider.check_status(&lease.key);
                let now = shared.clock.fetch_add(shared.step_ms, Ordering::SeqCst);
                match finalize(&mut *store, &lease, &check, now).0 {
                    FinalizeOutcome::Committed => tally.committed.push(lease.clone()),
                    FinalizeOutcome::Rejected => tally.rejected.push(lease.clone()),
                }
                tally.claims.push(lease);
            }
            ClaimOutcome::Empty => {
                if store.outbox_counts().expect("counts").drained() {
                    return tally;
                }
            }
            ClaimOutcome::Blocked { .. } => unreachable!("claim_next never blocks"),
        }
    }
    panic!("{name} did not see the outbox drained");
}

/// The tailing reader: every lease event it is given, until it has reached the last row
/// the workers wrote once they are done (a transaction of another test may hold a settled
/// point back for a moment; a tail that never gets there fails the test at its deadline).
fn follow(f: &dyn Fixture, mut tail: Box<dyn EventTail>, done: &AtomicBool) -> Vec<Row> {
    let mut seen = Vec::new();
    let mut end = None;
    loop {
        seen.extend(lease_rows(tail.next_rows()));
        if end.is_none() && done.load(Ordering::SeqCst) {
            let last = f.events().last().map_or(0, |r| r.seq);
            end = Some((last, Instant::now()));
        }
        if let Some((last, since)) = end {
            if tail.last() >= last || since.elapsed() > Duration::from_secs(60) {
                return seen;
            }
        }
    }
}

/// The rows about leases, as (Seq, kind, message id).
fn lease_rows(rows: Vec<leaselab::engine::outbox::LeaseEventRow>) -> Vec<Row> {
    rows.into_iter()
        .filter(|e| !matches!(e.kind, LeaseEventKind::Seeded | LeaseEventKind::Added))
        .map(|e| (e.seq, e.kind.as_str().to_string(), e.id.unwrap_or(0)))
        .collect()
}

/// Every message was finalized exactly once, by the holder of its last lease, and the
/// events table agrees with what the threads saw.
fn assert_exactly_once(f: &dyn Fixture, drained: &Drained, messages: u64) {
    let committed: Vec<&Lease> = drained.tallies.iter().flat_map(|t| &t.committed).collect();
    let mut per_message: BTreeMap<i64, u32> = BTreeMap::new();
    for lease in &committed {
        *per_message.entry(lease.id).or_default() += 1;
    }
    assert_eq!(
        per_message.len() as u64,
        messages,
        "every message finalized"
    );
    assert!(per_message.values().all(|&n| n == 1), "{per_message:?}");
    let store = f.connect();
    let rows = store.messages(0, messages + 1).unwrap();
    assert_eq!(rows.len() as u64, messages);
    for row in &rows {
        let winner = committed.iter().find(|l| l.id == row.id).unwrap();
        assert_eq!(row.status, "Processed");
        assert_ne!(row.payment_status, "Pending", "{row:?}");
        // The finalize that counted was made under the row's newest lease by its holder.
        assert_eq!(row.lease_version, winner.version, "{row:?}");
        assert_eq!(row.locked_by.as_deref(), Some(winner.owner.as_str()));
    }
    let payments = store.payment_counts().unwrap();
    assert_eq!(payments.paid + payments.failed, messages);
    the_events_agree(f, drained, committed.len());
}

/// The events table holds one row per claim and finalize, in Seq order, each finalize by
/// the owner of a lease claimed before it; the tail returned exactly those rows.
fn the_events_agree(f: &dyn Fixture, drained: &Drained, committed: usize) {
    let events = lease_events(f);
    assert!(events.windows(2).all(|w| w[0].seq < w[1].seq));
    // The tail, reading while the workers committed side by side, missed no row and
    // returned none out of Seq order (each message's commit order).
    let table = lease_rows(events.clone());
    assert_eq!(
        drained.tailed.len(),
        table.len(),
        "the tailing reader missed rows"
    );
    assert_eq!(drained.tailed, table);
    let claims: usize = drained.tallies.iter().map(|t| t.claims.len()).sum();
    let rejected: usize = drained.tallies.iter().map(|t| t.rejected.len()).sum();
    let count = |kind: &str| events.iter().filter(|e| e.kind == kind).count();
    assert_eq!(count("Claimed"), claims);
    assert_eq!(count("Finalized"), committed);
    assert_eq!(count("FinalizeRejected"), rejected);
    for e in events.iter().filter(|e| e.kind == "Finalized") {
        let claim = events
            .iter()
            .find(|c| c.kind == "Claimed" && c.id == e.id && c.version == e.version)
            .expect("the lease that finalized was claimed");
        assert_eq!(claim.worker, e.worker, "finalized by the lease's owner");
        assert!(claim.seq < e.seq);
    }
}
