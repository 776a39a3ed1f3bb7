//! The PostgreSQL store against a real server (`LEASELAB_PG_URL`, see `.ci/pg-start.sh`).
//! Every test makes its own database and drops it, so the tests run in parallel.

mod pg_support;

use leaselab::engine::outbox::prelude::*;
use leaselab::engine::outbox::Stamped;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Barrier};

use leaselab::engine::backend::Db;
use leaselab::engine::outbox::LeaseEventRow;
use leaselab::engine::pg::{PgError, PgStore, PgTail};
use leaselab::engine::provider::{Provider, ProviderStatus, StatusCheck};
use leaselab::engine::store::{
    ClaimOutcome, DbOrigin, Durability, FailOutcome, FinalizeOutcome, Lease, MessageRef,
    OutboxCounts, RetryPolicy, StoreShared,
};
use pg_support::{decide, scratch, ScratchDb};

const NOW: i64 = 1_000;
const LEASE: i64 = 500;

/// A scratch database with the schema and `n` seeded messages, or None when skipped.
fn seeded(tag: &str, n: u64) -> Option<(ScratchDb, PgStore)> {
    let db = scratch(tag)?;
    let (mut store, origin) = PgStore::create(&db.config).expect("create");
    assert_eq!(origin, DbOrigin::Created);
    store.seed(&Provider::new(), n, 0).expect("seed");
    Some((db, store))
}

fn claimed(outcome: ClaimOutcome) -> Lease {
    match outcome {
        ClaimOutcome::Claimed(lease) => lease,
        other => panic!("expected a claim, got {other:?}"),
    }
}

fn paid() -> StatusCheck {
    StatusCheck {
        status: ProviderStatus::Paid,
        transaction_id: Some("TX-1".into()),
    }
}

fn all_events(store: &mut PgStore) -> Vec<LeaseEventRow> {
    store.events_after(0, 1_000_000).expect("events")
}

#[test]
fn without_a_server_the_tests_skip_except_in_ci() {
    let url = || Some("postgres://u@/db?host=/tmp/s".to_string());
    assert_eq!(decide(None, None), Ok(None));
    assert_eq!(decide(Some(" ".into()), Some("false".into())), Ok(None));
    assert_eq!(decide(url(), None), Ok(url()));
    assert_eq!(decide(url(), Some("true".into())), Ok(url()));
    let err = decide(None, Some("true".into())).unwrap_err();
    assert!(err.contains("LEASELAB_PG_URL"), "{err}");
}

#[test]
fn an_empty_database_is_made_once_then_reused() {
    let Some(db) = scratch("made") else { return };
    let (_, origin) = PgStore::create(&db.config).expect("create");
    assert_eq!(origin, DbOrigin::Created);
    let (store, origin) = PgStore::create(&db.config).expect("reopen");
    assert_eq!(origin, DbOrigin::Reused);
    assert_eq!(store.outbox_counts().unwrap(), OutboxCounts::default());
    let marker = db
        .client()
        .query_one("SELECT Application, SchemaVersion FROM LeaselabMarker", &[])
        .unwrap();
    assert_eq!(marker.get::<_, String>(0), "leaselab");
    assert_eq!(
        marker.get::<_, i32>(1),
        leaselab::engine::pg::SCHEMA_VERSION
    );
}

#[test]
fn a_database_of_another_application_is_refused_untouched() {
    let Some(db) = scratch("foreign") else { return };
    let mut raw = db.client();
    raw.batch_execute("CREATE TABLE customers (id int); INSERT INTO customers VALUES (7)")
        .unwrap();
    let err = PgStore::create(&db.config).expect_err("must refuse");
    assert!(matches!(err, PgError::Foreign(_)), "{err:?}");
    assert!(err.is_bad_input());
    let line = err.to_string();
    assert!(!line.contains('\n'), "one line: {line}");
    assert!(
        line.contains("customers") && line.contains("refusing"),
        "{line}"
    );
    let tables: i64 = raw
        .query_one(
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(tables, 1, "nothing was created beside the foreign table");
    let kept: i32 = raw
        .query_one("SELECT id FROM customers", &[])
        .unwrap()
        .get(0);
    assert_eq!(kept, 7);
}

#[test]
fn a_leaselab_database_of_another_schema_version_is_refused() {
    let Some(db) = scratch("version") else { return };
    PgStore::create(&db.config).expect("create");
    db.client()
        .batch_execute("UPDATE LeaselabMarker SET SchemaVersion = 99")
        .unwrap();
    let line = PgStore::create(&db.config).expect_err("refuse").to_string();
    assert!(line.contains("schema version 99"), "{line}");
}

#[test]
fn a_database_whose_tables_were_dropped_by_hand_is_made_again() {
    let Some(db) = scratch("remade") else { return };
    PgStore::create(&db.config).expect("create");
    // The tables go; the domains their columns used stay behind.
    db.client()
        .batch_execute("DROP TABLE LeaseEvents, OutboxMessages, Payments, Seedings, LeaselabMarker")
        .unwrap();
    let (_, origin) = PgStore::create(&db.config).expect("made again");
    assert_eq!(origin, DbOrigin::Created);
}

#[test]
fn postgresql_refuses_a_value_outside_each_checked_column() {
    let Some((db, _store)) = seeded("checks", 1) else {
        return;
    };
    let mut raw = db.client();
    let refused = [
        "UPDATE OutboxMessages SET Status = 'Lost'",
        "UPDATE OutboxMessages SET Status = 'Processing', LockedBy = NULL, LockedUntilUtc = 5",
        "UPDATE Payments SET PaymentStatus = 'Refunded'",
        "UPDATE Payments SET Amount = -1",
        "INSERT INTO LeaseEvents (AtUtc, Worker, Kind) VALUES (0, 'w', 'Stolen')",
    ];
    for sql in refused {
        let err = raw.batch_execute(sql).expect_err(sql);
        let why = err.as_db_error().map(|e| e.message().to_string());
        assert!(
            why.as_deref()
                .is_some_and(|m| m.contains("check constraint")),
            "{sql}: {err:?}"
        );
    }
    let accepted =
        "UPDATE OutboxMessages SET Status = 'Processing', LockedBy = 'w', LockedUntilUtc = 5";
    raw.batch_execute(accepted).expect(accepted);
}

#[test]
fn a_claim_touches_no_index_and_keeps_its_row_on_its_page() {
    let Some((db, mut store)) = seeded("hot", 20) else {
        return;
    };
    for _ in 0..10 {
        claimed(store.claim_next_recorded("Worker-A", NOW, LEASE).unwrap().0);
    }
    // A backend reports its table counters when it ends: close the store's connection,
    // then wait (bounded) for the ten updates to be counted.
    drop(store);
    let mut raw = db.client();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let (updated, hot) = loop {
        let row = raw
            .query_one(
                "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables
                  WHERE relname = 'outboxmessages'",
                &[],
            )
            .unwrap();
        let (updated, hot): (i64, i64) = (row.get(0), row.get(1));
        if updated >= 10 || std::time::Instant::now() > deadline {
            break (updated, hot);
        }
        raw.batch_execute("SELECT pg_sleep(0.05)").unwrap();
    };
    assert_eq!(updated, 10, "the ten claims were counted");
    assert_eq!(
        hot, 10,
        "every claim was a HOT update: no index entry written"
    );
}

#[test]
fn an_unreachable_server_is_one_line_of_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("postgres://leaselab@/nowhere?host={}", dir.path().display());
    let err = PgStore::open_url(&url).expect_err("no server there");
    assert!(matches!(err, PgError::Unreachable(_)), "{err:?}");
    assert!(!err.to_string().contains('\n'), "{err}");
    let err = PgStore::open_url("postgres://u@h:notaport/db").expect_err("bad url");
    assert!(matches!(err, PgError::BadUrl(_)), "{err:?}");
}

#[test]
fn claim_takes_pending_oldest_first_and_an_expired_lease_only_after_its_expiry() {
    let Some((_db, mut store)) = seeded("claimrule", 2) else {
        return;
    };
    let a = claimed(store.claim_next_recorded("Worker-A", NOW, LEASE).unwrap().0);
    let b = claimed(store.claim_next_recorded("Worker-B", NOW, LEASE).unwrap().0);
    assert_eq!((a.id, a.key.as_str(), a.version), (1, "PAY-001", 1));
    assert_eq!((b.id, b.version, b.until_ms), (2, 1, NOW + LEASE));
    assert_eq!(
        store.claim_next_recorded("Worker-C", NOW, LEASE).unwrap(),
        (ClaimOutcome::Empty, None)
    );
    // At its expiry instant a lease still holds; one millisecond later it is claimable.
    let at_expiry = NOW + LEASE;
    assert_eq!(
        store
            .claim_next_recorded("Worker-C", at_expiry, LEASE)
            .unwrap()
            .0,
        ClaimOutcome::Empty
    );
    let c = claimed(
        store
            .claim_next_recorded("Worker-C", at_expiry + 1, LEASE)
            .unwrap()
            .0,
    );
    assert_eq!((c.id, c.owner.as_str(), c.version), (1, "Worker-C", 2));
    let rows = store.messages(0, 10).unwrap();
    assert_eq!(rows[0].locked_by.as_deref(), Some("Worker-C"));
    assert_eq!((rows[0].lease_version, rows[0].attempts), (2, 2));
    assert_eq!(rows[0].locked_until_ms, Some(at_expiry + 1 + LEASE));
    assert_eq!(
        store.outbox_counts().unwrap(),
        OutboxCounts {
            pending: 0,
            processing: 2,
            processed: 0,
            dead_lettered: 0
        }
    );
}

#[test]
fn an_expired_lease_on_an_older_message_is_claimed_before_a_newer_pending_one() {
    let Some((_db, mut store)) = seeded("older", 2) else {
        return;
    };
    let a = claimed(
        store
            .claim_id_recorded(1, "Worker-A", NOW, LEASE)
            .unwrap()
            .0,
    );
    let later = a.until_ms + 1;
    let b = claimed(
        store
            .claim_next_recorded("Worker-B", later, LEASE)
            .unwrap()
            .0,
    );
    assert_eq!((b.id, b.version), (1, 2));
    let c = claimed(
        store
            .claim_next_recorded("Worker-C", later, LEASE)
            .unwrap()
            .0,
    );
    assert_eq!((c.id, c.version), (2, 1));
}

#[test]
fn emptying_starts_the_outbox_again_from_one_while_event_seqs_carry_on() {
    let Some((_db, mut store)) = seeded("reseed", 3) else {
        return;
    };
    let provider = Provider::new();
    let (first, first_seq) = store.claim_next_recorded("Worker-A", NOW, LEASE).unwrap();
    claimed(first);
    store.empty().unwrap();
    assert_eq!(store.outbox_counts().unwrap(), OutboxCounts::default());
    assert_eq!(store.message_count().unwrap(), 0);
    assert!(all_events(&mut store).is_empty());
    store.seed(&provider, 2, NOW).unwrap();
    let added = store
        .add_payment(&provider, "PAY-EXTRA", 1_234, NOW)
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
    let (lease, seq) = store.claim_next_recorded("Worker-A", NOW, LEASE).unwrap();
    assert_eq!(claimed(lease).id, 1);
    assert!(seq > first_seq, "{seq:?} after {first_seq:?}");
}

#[test]
fn claim_of_a_held_message_is_blocked_with_owner_and_time_left() {
    let Some((_db, mut store)) = seeded("blocked", 2) else {
        return;
    };
    let a = claimed(
        store
            .claim_id_recorded(1, "Worker-A", NOW, LEASE)
            .unwrap()
            .0,
    );
    assert_eq!(a.version, 1);
    let blocked = |left_ms| ClaimOutcome::Blocked {
        id: 1,
        key: "PAY-001".into(),
        owner: "Worker-A".into(),
        left_ms,
    };
    assert_eq!(
        store
            .claim_id_recorded(1, "Worker-B", NOW + 200, LEASE)
            .unwrap(),
        (blocked(300), None)
    );
    assert_eq!(
        store
            .claim_id_recorded(1, "Worker-B", NOW + LEASE, LEASE)
            .unwrap()
            .0,
        blocked(0)
    );
    let b = claimed(
        store
            .claim_id_recorded(1, "Worker-B", NOW + LEASE + 1, LEASE)
            .unwrap()
            .0,
    );
    assert_eq!((b.owner.as_str(), b.version), ("Worker-B", 2));
    assert_eq!(
        store
            .claim_id_recorded(99, "Worker-B", NOW, LEASE)
            .unwrap()
            .0,
        ClaimOutcome::Empty
    );
    let two = claimed(
        store
            .claim_id_recorded(2, "Worker-B", NOW, LEASE)
            .unwrap()
            .0,
    );
    store.finalize_recorded(&two, &paid(), NOW).unwrap();
    assert_eq!(
        store
            .claim_id_recorded(2, "Worker-A", NOW + 10 * LEASE, LEASE)
            .unwrap()
            .0,
        ClaimOutcome::Empty,
        "a processed message is never claimed again"
    );
}

#[test]
fn finalize_after_a_takeover_is_rejected_and_leaves_the_payment_alone() {
    let Some((_db, mut store)) = seeded("takeover", 1) else {
        return;
    };
    let (a, seq_a) = store.claim_next_recorded("Worker-A", NOW, LEASE).unwrap();
    let a = claimed(a);
    let (b, seq_b) = store
        .claim_next_recorded("Worker-B", NOW + LEASE + 1, LEASE)
        .unwrap();
    let b = claimed(b);
    assert_eq!(b.version, a.version + 1);

    let (late, seq_late) = store
        .finalize_recorded(&a, &paid(), NOW + LEASE + 2)
        .unwrap();
    assert_eq!(late, FinalizeOutcome::Rejected);
    let row = &store.messages(0, 1).unwrap()[0];
    assert_eq!(row.status, "Processing");
    assert_eq!(row.locked_by.as_deref(), Some("Worker-B"));
    assert_eq!(
        row.payment_status, "Pending",
        "the rejected finalize wrote no payment"
    );
    assert_eq!(store.payment_counts().unwrap().pending, 1);

    let failed = StatusCheck {
        status: ProviderStatus::Failed,
        transaction_id: None,
    };
    let (done, seq_done) = store
        .finalize_recorded(&b, &failed, NOW + LEASE + 3)
        .unwrap();
    assert_eq!(done, FinalizeOutcome::Committed);
    let row = &store.messages(0, 1).unwrap()[0];
    assert_eq!(
        (row.status.as_str(), row.payment_status.as_str()),
        ("Processed", "Failed")
    );
    assert_eq!(row.processed_at_ms, Some(NOW + LEASE + 3));
    assert_eq!(row.locked_until_ms, None);

    // The events table tells the same story in commit order, one row per write.
    let events = all_events(&mut store);
    let story: Vec<(u64, &str, &str, i64)> = events
        .iter()
        .map(|e| {
            (
                e.seq,
                e.kind.as_str(),
                e.worker.as_str(),
                e.version.unwrap(),
            )
        })
        .collect();
    assert_eq!(
        story,
        vec![
            (seq_a.unwrap(), "Claimed", "Worker-A", 1),
            (seq_b.unwrap(), "Claimed", "Worker-B", 2),
            (seq_late, "FinalizeRejected", "Worker-A", 1),
            (seq_done, "Finalized", "Worker-B", 2),
        ]
    );
    assert!(story.windows(2).all(|w| w[0].0 < w[1].0));
    assert_eq!(events[0].until_ms, Some(NOW + LEASE));
    assert_eq!(events[3].detail.as_deref(), Some("Failed"));
    assert_eq!(events[3].at_ms, NOW + LEASE + 3);
    assert_eq!(store.events_after(events[1].seq, 10).unwrap(), events[2..]);
}

#[test]
fn a_claim_skips_a_row_another_transaction_has_locked() {
    let Some((db, mut store)) = seeded("skiplocked", 2) else {
        return;
    };
    let mut other = db.client();
    let mut tx = other.transaction().unwrap();
    tx.query("SELECT Id FROM OutboxMessages WHERE Id = 1 FOR UPDATE", &[])
        .unwrap();
    // With the oldest row locked elsewhere the claim takes the next one instead of waiting.
    let lease = claimed(store.claim_next_recorded("Worker-A", NOW, LEASE).unwrap().0);
    assert_eq!(lease.id, 2);
    tx.commit().unwrap();
    let lease = claimed(store.claim_next_recorded("Worker-B", NOW, LEASE).unwrap().0);
    assert_eq!(lease.id, 1);
}

/// What one draining thread did: its claims and finalizes.
#[derive(Default)]
struct Tally {
    claims: Vec<Lease>,
    committed: Vec<Lease>,
    rejected: Vec<Lease>,
}

/// What the threads did, and the events a reader saw by tailing the table meanwhile.
struct Drained {
    tallies: Vec<Tally>,
    /// (Seq, kind, message id) of each lease event, in the order the tail returned them.
    tailed: Vec<(u64, String, i64)>,
}

/// `threads` workers, each with its own connection, drain the outbox while a reader tails
/// `LeaseEvents`. Each claim moves the shared scenario clock on by `step_ms`, so with a
/// short lease some leases expire under their holder and are taken over.
fn drain(db: &ScratchDb, threads: usize, lease_ms: i64, step_ms: i64) -> Drained {
    let clock = Arc::new(AtomicI64::new(NOW));
    let provider = Arc::new(Provider::new());
    let start = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            let (config, clock, provider, start) = (
                db.config.clone(),
                clock.clone(),
                provider.clone(),
                start.clone(),
            );
            std::thread::spawn(move || {
                let name = format!("Worker-{}", (b'A' + i as u8) as char);
                let mut store = PgStore::open(&config).expect("open");
                let mut tally = Tally::default();
                start.wait();
                for _ in 0..100_000 {
                    let now = clock.fetch_add(step_ms, Ordering::SeqCst);
                    match store
                        .claim_next_recorded(&name, now, lease_ms)
                        .expect("claim")
                        .0
                    {
                        ClaimOutcome::Claimed(lease) => {
                            let check = provider.check_status(&lease.key);
                            let now = clock.fetch_add(step_ms, Ordering::SeqCst);
                            let (outcome, _) = store
                                .finalize_recorded(&lease, &check, now)
                                .expect("finalize");
                            match outcome {
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
            })
        })
        .collect();
    let done = Arc::new(AtomicBool::new(false));
    let tailer = {
        let (config, done) = (db.config.clone(), done.clone());
        std::thread::spawn(move || {
            let mut store = PgStore::open(&config).expect("open");
            let mut tail = PgTail::new();
            let mut seen: Vec<(u64, String, i64)> = Vec::new();
            let mut end = None;
            loop {
                for row in store.tail_events(&mut tail, 1_000).expect("tail") {
                    let kind = row.kind.as_str();
                    if kind != "Seeded" && kind != "Added" {
                        seen.push((row.seq, kind.to_string(), row.id.unwrap_or(0)));
                    }
                }
                // Once the workers are done, read on until the tail has reached the last row
                // they wrote (a transaction of another test may hold the settled point back
                // for a moment; a tail that never gets there fails the test at its deadline).
                if end.is_none() && done.load(Ordering::SeqCst) {
                    end = Some((
                        store
                            .all_events_after(0, 1_000_000)
                            .expect("all")
                            .last()
                            .map_or(0, |r| r.seq),
                        std::time::Instant::now(),
                    ));
                }
                if let Some((last, since)) = end {
                    if tail.last() >= last || since.elapsed() > std::time::Duration::from_secs(60) {
                        return seen;
                    }
                }
            }
        })
    };
    let tallies = handles
        .into_iter()
        .map(|h| h.join().expect("worker thread"))
        .collect();
    done.store(true, Ordering::SeqCst);
    Drained {
        tallies,
        tailed: tailer.join().expect("tailer thread"),
    }
}

/// Every message was finalized exactly once, by the holder of its last lease, and the
/// events table agrees with what the threads saw.
fn assert_exactly_once(db: &ScratchDb, drained: &Drained, messages: u64) {
    let tallies = &drained.tallies;
    let mut store = PgStore::open(&db.config).unwrap();
    let committed: Vec<&Lease> = tallies.iter().flat_map(|t| &t.committed).collect();
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

    let events = all_events(&mut store);
    assert!(events.windows(2).all(|w| w[0].seq < w[1].seq));
    // The tail, reading while the workers committed side by side, missed no row and
    // returned none out of Seq order (each message's commit order).
    let table: Vec<(u64, String, i64)> = events
        .iter()
        .map(|e| (e.seq, e.kind.to_string(), e.id.unwrap()))
        .collect();
    assert_eq!(
        drained.tailed.len(),
        table.len(),
        "the tailing reader missed rows"
    );
    assert_eq!(drained.tailed, table);
    let claims: usize = tallies.iter().map(|t| t.claims.len()).sum();
    let rejected: usize = tallies.iter().map(|t| t.rejected.len()).sum();
    let count = |kind: &str| events.iter().filter(|e| e.kind == kind).count();
    assert_eq!(count("Claimed"), claims);
    assert_eq!(count("Finalized"), committed.len());
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

#[test]
fn threads_with_their_own_connections_drain_every_message_exactly_once() {
    let Some((db, _store)) = seeded("drain", 120) else {
        return;
    };
    // Leases far longer than the run: no takeover, so every claim must finalize.
    let drained = drain(&db, 4, 1_000_000, 1);
    assert_exactly_once(&db, &drained, 120);
    let tallies = &drained.tallies;
    for t in tallies {
        assert!(t.rejected.is_empty());
        assert_eq!(t.claims.len(), t.committed.len());
    }
    let claims: usize = tallies.iter().map(|t| t.claims.len()).sum();
    assert_eq!(claims, 120, "each message claimed once");
}

#[test]
fn threads_with_expiring_leases_never_let_a_non_owner_finalize() {
    let Some((db, _store)) = seeded("takeovers", 80) else {
        return;
    };
    // A lease of a few scenario steps: other threads' claims move the clock past it.
    let drained = drain(&db, 4, 3, 1);
    assert_exactly_once(&db, &drained, 80);
}

#[test]
fn a_url_gets_the_scratch_database_name_in_place_of_its_own() {
    let with = pg_support::with_dbname;
    assert_eq!(
        with("postgres://u@/leaselab?host=/tmp/s", "t1"),
        "postgres://u@/t1?host=/tmp/s"
    );
    assert_eq!(
        with("postgresql://u@h:5432/db", "t2"),
        "postgresql://u@h:5432/t2"
    );
    assert_eq!(with("postgres://u@h", "t3"), "postgres://u@h/t3");
}

const POLICY: RetryPolicy = RetryPolicy {
    base_ms: 100,
    cap_ms: 2_000,
    max_attempts: 3,
};

fn kinds(store: &mut PgStore) -> Vec<String> {
    all_events(store)
        .into_iter()
        .map(|e| e.kind.to_string())
        .collect()
}

#[test]
fn a_heartbeat_extends_only_the_holders_live_lease_and_never_shortens_it() {
    let Some((_db, mut store)) = seeded("heartbeat", 1) else {
        return;
    };
    let a = claimed(store.claim_next_recorded("Worker-A", NOW, LEASE).unwrap().0);
    let until = store.heartbeat(&a, NOW + 100, LEASE).unwrap().value;
    assert_eq!(until, Some(NOW + 100 + LEASE));
    let until = store.heartbeat(&a, NOW + 200, 10).unwrap().value;
    assert_eq!(until, Some(NOW + 100 + LEASE), "never shorter");
    let stale = Lease {
        version: a.version + 1,
        ..a.clone()
    };
    assert_eq!(
        store.heartbeat(&stale, NOW + 300, LEASE).unwrap().value,
        None
    );
    let late = NOW + 100 + LEASE + 1;
    assert_eq!(
        store.heartbeat(&a, late, LEASE).unwrap().value,
        None,
        "expired"
    );
    let row = &store.messages(0, 1).unwrap()[0];
    assert_eq!(row.locked_until_ms, Some(NOW + 100 + LEASE));
    // Each heartbeat that found its lease gone wrote a LeaseLost row for a watcher.
    assert_eq!(
        kinds(&mut store),
        [
            "Claimed",
            "Heartbeat",
            "Heartbeat",
            "LeaseLost",
            "LeaseLost"
        ]
    );
}

#[test]
fn failed_attempts_back_off_then_dead_letter_until_a_redrive() {
    let Some((_db, mut store)) = seeded("retry", 1) else {
        return;
    };
    let mut now = NOW;
    for attempt in 1..=2 {
        let lease = claimed(store.claim_next_recorded("Worker-A", now, LEASE).unwrap().0);
        let outcome = store
            .fail_attempt(&lease, "timeout", now, &POLICY)
            .unwrap()
            .value;
        let at = now + POLICY.backoff_ms(attempt);
        let retry = FailOutcome::Retry {
            attempt,
            available_at_ms: at,
        };
        assert_eq!(outcome, retry);
        assert_eq!(
            store
                .claim_next_recorded("Worker-B", at - 1, LEASE)
                .unwrap()
                .0,
            ClaimOutcome::Empty,
            "still backing off"
        );
        assert_eq!(
            store
                .claim_id_recorded(1, "Worker-B", at - 1, LEASE)
                .unwrap()
                .0,
            ClaimOutcome::Empty
        );
        now = at;
    }
    let lease = claimed(store.claim_next_recorded("Worker-A", now, LEASE).unwrap().0);
    let outcome = store
        .fail_attempt(&lease, "declined", now, &POLICY)
        .unwrap()
        .value;
    assert_eq!(outcome, FailOutcome::DeadLettered { attempts: 3 });
    assert_eq!(store.outbox_counts().unwrap().dead_lettered, 1);
    assert_eq!(
        store.last_error("PAY-001").unwrap().as_deref(),
        Some("declined")
    );
    let far = now + 1_000_000;
    assert_eq!(
        store.claim_next_recorded("Worker-B", far, LEASE).unwrap().0,
        ClaimOutcome::Empty
    );
    assert_eq!(store.redrive(Some("PAY-002"), far).unwrap().value, 0);
    assert_eq!(store.redrive(None, far).unwrap().value, 1);
    let last = all_events(&mut store).pop().unwrap();
    assert_eq!(
        (
            last.kind.as_str(),
            last.key.as_deref().unwrap(),
            last.worker.as_str()
        ),
        ("Redriven", "PAY-001", "engine")
    );
    let again = claimed(store.claim_next_recorded("Worker-B", far, LEASE).unwrap().0);
    assert_eq!(
        store.messages(0, 1).unwrap()[0].attempts,
        1,
        "fresh attempts"
    );
    assert_eq!(
        store
            .fail_attempt(&lease, "late", far, &POLICY)
            .unwrap()
            .value,
        FailOutcome::LeaseLost,
        "the old lease writes nothing"
    );
    assert_eq!(
        store.messages(0, 1).unwrap()[0].locked_by.as_deref(),
        Some("Worker-B")
    );
    let (done, _) = store.finalize_recorded(&again, &paid(), far).unwrap();
    assert_eq!(done, FinalizeOutcome::Committed);
    assert_eq!(
        kinds(&mut store),
        [
            "Claimed",
            "Retry",
            "Claimed",
            "Retry",
            "Claimed",
            "DeadLettered",
            "Redriven",
            "Claimed",
            "Finalized"
        ]
    );
}

#[test]
fn leasing_off_loads_every_pending_message_and_marks_it_unguarded() {
    let Some((_db, mut store)) = seeded("naive", 3) else {
        return;
    };
    let held = claimed(store.claim_next_recorded("Worker-A", NOW, LEASE).unwrap().0);
    let loaded = store.load_pending(NOW).unwrap();
    let ids: Vec<i64> = loaded.iter().map(|m| m.id).collect();
    assert_eq!(ids, [2, 3]);
    for msg in &loaded {
        store
            .mark_processed_by("Worker-B", msg, &paid(), NOW)
            .unwrap();
    }
    // Unguarded: it also overwrites a message another worker holds.
    let one = MessageRef {
        id: held.id,
        key: held.key.clone(),
    };
    store
        .mark_processed_by("Worker-B", &one, &paid(), NOW)
        .unwrap();
    assert_eq!(store.outbox_counts().unwrap().processed, 3);
    let marked = all_events(&mut store)
        .into_iter()
        .filter(|e| e.kind == "Marked")
        .map(|e| (e.worker, e.detail))
        .collect::<Vec<_>>();
    assert_eq!(marked.len(), 3);
    assert!(marked
        .iter()
        .all(|(w, s)| w == "Worker-B" && s.as_deref() == Some("Paid")));
}

#[test]
fn through_the_outbox_interface_writes_are_stamped_from_the_engines_counter() {
    let Some(db) = scratch("outbox") else { return };
    let shared = Arc::new(StoreShared::new(Durability::Normal));
    let (mut engine_side, origin) = PgStore::create_held(&db.url, shared.clone()).unwrap();
    assert_eq!(origin, DbOrigin::Created);
    let provider = Provider::new();
    engine_side.seed(&provider, 2, 0).unwrap();
    let location = Db::parse(std::path::Path::new(&db.url));
    assert!(location.is_postgres());
    assert!(location.shown().contains(&db.name), "{}", location.shown());
    let mut worker = location.open(shared.clone()).unwrap();
    let Stamped {
        value: outcome,
        seq: s1,
    } = worker.claim_next("Worker-A", NOW, LEASE).unwrap();
    let lease = claimed(outcome);
    let s2 = worker.finalize(&lease, &paid(), NOW).unwrap().seq;
    assert!(s1 < s2, "{s1} {s2}");
    assert_eq!(shared.commit_seq.load(Ordering::SeqCst), s2);
    let reader = location.open_reader().unwrap();
    assert_eq!(reader.outbox_counts().unwrap().processed, 1);
    assert_eq!(reader.payments().unwrap().len(), 2);
    assert_eq!(reader.max_rows_per_key().unwrap().payments, 1);
    assert_eq!(reader.orphans().unwrap(), 0);
    assert_eq!(reader.next_payment_number().unwrap(), 3);
    assert!(reader.schema().unwrap()[0].starts_with("CREATE TABLE LeaselabMarker"));
}

/// A lease taken before a reseed never matches a row after it, though `TRUNCATE ...
/// RESTART IDENTITY` gives the new row the same id and, after one claim, the same version.
#[test]
fn a_lease_from_before_a_reseed_fences_nothing_after_it() {
    let Some((db, mut engine)) = seeded("reseed_fence", 1) else {
        return;
    };
    let (mut stale_process, _) = PgStore::create(&db.config).expect("second connection");
    let stale = claimed(
        stale_process
            .claim_next_recorded("Worker-B", 0, 500)
            .unwrap()
            .0,
    );
    engine.empty().unwrap();
    engine.seed(&Provider::new(), 1, 0).unwrap();
    let live = claimed(engine.claim_next("Worker-B", 0, 500).unwrap().value);
    assert_eq!((stale.id, stale.version), (live.id, live.version));
    assert_ne!(stale.seeding, live.seeding);
    assert_eq!(stale_process.heartbeat(&stale, 1, 500).unwrap().value, None);
    let policy = leaselab::engine::store::RetryPolicy::default();
    assert_eq!(
        stale_process
            .fail_attempt(&stale, "late", 1, &policy)
            .unwrap()
            .value,
        leaselab::engine::store::FailOutcome::LeaseLost
    );
    assert_eq!(
        stale_process
            .finalize_recorded(&stale, &paid(), 1)
            .unwrap()
            .0,
        FinalizeOutcome::Rejected,
        "the stale owner's result was committed to the new seeding's row"
    );
    assert_eq!(
        engine.finalize(&live, &paid(), 2).unwrap().value,
        FinalizeOutcome::Committed
    );
}

#[test]
fn a_tail_holds_back_a_row_until_a_lower_seq_still_in_flight_commits_then_returns_both_in_order() {
    let Some((db, mut store)) = seeded("tail_in_flight", 2) else {
        return;
    };
    // Another writer draws a Seq and has not committed yet.
    let mut writer = db.client();
    let mut open = writer.transaction().unwrap();
    let low: i64 = open
        .query_one(
            "INSERT INTO LeaseEvents (AtUtc, Worker, Kind, MessageId, PaymentKey, LeaseVersion)
             SELECT $1, 'Worker-Z', 'LeaseLost', 2, 'PAY-002', 0
               FROM (SELECT pg_current_xact_id()) AS identified
             RETURNING Seq",
            &[&NOW],
        )
        .unwrap()
        .get(0);
    // A claim with a higher Seq commits first.
    let lease = claimed(store.claim_next_recorded("Worker-A", NOW, 1_000).unwrap().0);
    let high = all_events(&mut store)
        .iter()
        .find(|e| e.kind == "Claimed" && e.id == Some(lease.id))
        .expect("the claim's row")
        .seq;
    assert!(high > low as u64);

    let mut tail = PgTail::new();
    let first: Vec<u64> = store
        .tail_events(&mut tail, 1_000)
        .unwrap()
        .iter()
        .map(|r| r.seq)
        .collect();
    assert!(
        first.iter().all(|&s| s < low as u64),
        "the tail returned {first:?} while Seq {low} was still in flight"
    );
    // Reading "after the last Seq seen" would have returned the claim now, and never the
    // lower row that commits after it.
    let naive = store.all_events_after(tail.last(), 1_000).unwrap();
    assert!(naive.iter().any(|r| r.seq == high));
    assert!(naive.iter().all(|r| r.seq != low as u64));

    open.commit().unwrap();
    let mut later = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !later.contains(&high) && std::time::Instant::now() < deadline {
        later.extend(
            store
                .tail_events(&mut tail, 1_000)
                .unwrap()
                .iter()
                .map(|r| r.seq),
        );
    }
    let stream: Vec<u64> = first.iter().chain(&later).copied().collect();
    assert_eq!(
        stream,
        (1..=high).collect::<Vec<u64>>(),
        "every row once, in Seq order: the one in flight before the claim after it"
    );
}

#[test]
fn a_tail_says_when_an_open_transaction_holds_its_rows_back_and_when_they_flow_again() {
    use leaselab::engine::events::EventKind;
    use leaselab::engine::events_table::Tail;
    use std::time::{Duration, Instant};

    let Some((db, mut store)) = seeded("tail_held_back", 2) else {
        return;
    };
    // A transaction with an id of its own stays open: anything written after it waits.
    let mut other = db.client();
    let mut open = other.transaction().unwrap();
    open.query_one("SELECT pg_current_xact_id()", &[]).unwrap();
    let (sender, events) = crossbeam_channel::unbounded();
    let _tail = Tail::start(
        &Db::Postgres(db.url.clone()),
        Duration::from_millis(20),
        sender,
    )
    .unwrap();
    let lease = claimed(store.claim_next_recorded("Worker-A", NOW, 1_000).unwrap().0);
    let deadline = Instant::now() + Duration::from_secs(60);
    let next = || {
        events
            .recv_deadline(deadline)
            .expect("the tail said nothing in time")
            .kind
    };
    let claim_of = |k: &EventKind| matches!(k, EventKind::Claimed { id, .. } if *id == lease.id);
    loop {
        match next() {
            EventKind::Note { text } if text.starts_with("EVENTS HELD BACK") => {
                assert!(text.contains("server pid"), "{text}");
                break;
            }
            k => assert!(!claim_of(&k), "the claim came through while held back"),
        }
    }
    open.commit().unwrap();
    let (mut claim, mut flowing) = (false, false);
    while !(claim && flowing) {
        let k = next();
        claim |= claim_of(&k);
        flowing |= matches!(&k, EventKind::Note { text } if text.starts_with("events flow again"));
    }
}

#[test]
fn a_worker_name_with_quotes_and_backslashes_claims_and_finalizes_as_itself() {
    let Some((_db, mut store)) = seeded("quoted_name", 1) else {
        return;
    };
    let name = r"o'brien\'; DROP TABLE LeaseEvents; --";
    let lease = claimed(store.claim_next_recorded(name, NOW, 1_000).unwrap().0);
    assert_eq!(lease.owner, name);
    let (outcome, _) = store.finalize_recorded(&lease, &paid(), NOW + 1).unwrap();
    assert_eq!(outcome, FinalizeOutcome::Committed);
    let events = all_events(&mut store);
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(events.iter().all(|e| e.worker == name), "{events:?}");
    let rows = store.messages(0, 10).unwrap();
    assert_eq!(rows[0].locked_by.as_deref(), Some(name));
}
