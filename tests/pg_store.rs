//! What is PostgreSQL's own in its store, against a real server (`LEASELAB_PG_URL`, see
//! `.ci/pg-start.sh`): making and refusing a database, its schema's checks, row locks, HOT
//! updates, the settled tail, connection errors. The outbox's rules, which SQLite keeps as
//! well, are tested once for both in `tests/conformance`. Every test makes its own
//! database and drops it, so the tests run in parallel.

mod pg_support;

use leaselab::engine::outbox::prelude::*;
use leaselab::engine::outbox::Stamped;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use leaselab::engine::backend::Db;
use leaselab::engine::outbox::LeaseEventRow;
use leaselab::engine::pg::{PgError, PgStore, PgTail};
use leaselab::engine::provider::{Provider, ProviderStatus, StatusCheck};
use leaselab::engine::store::{
    ClaimOutcome, DbOrigin, Durability, FinalizeOutcome, Lease, OutboxCounts, StoreShared,
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

/// No server now may be a restart: a later attempt may work. A server that answers and
/// refuses (no such database) will refuse again.
#[test]
fn a_server_that_is_away_may_heal_and_one_that_refuses_will_not() {
    use leaselab::engine::outbox::OutboxError;
    let dir = tempfile::tempdir().unwrap();
    let away = format!("postgres://leaselab@/nowhere?host={}", dir.path().display());
    let err: OutboxError = PgStore::open_url(&away).expect_err("no server").into();
    assert!(err.may_heal() && err.is_bad_input(), "{err:?}");
    let Some(db) = scratch("refused") else {
        return;
    };
    let url = pg_support::with_dbname(&db.url, "leaselab_no_such_database");
    let err = PgStore::open_url(&url).expect_err("no such database");
    assert!(matches!(err, PgError::Refused(_)), "{err:?}");
    assert!(err.to_string().contains("does not exist"), "{err}");
    let err: OutboxError = err.into();
    assert!(!err.may_heal() && err.is_bad_input(), "{err:?}");
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

/// A finalize whose answer is lost with its connection (a server restart) may have
/// committed: asked afterwards, the store finds its holder's `Finalized` row, and that
/// lease's only, where trying the finalize again would be rejected by its own commit.
#[test]
fn a_finalize_that_committed_is_found_by_its_lease_and_no_other() {
    let Some((_db, mut store)) = seeded("finalized_earlier", 2) else {
        return;
    };
    let a = claimed(store.claim_next("Worker-A", NOW, LEASE).unwrap().value);
    let b = claimed(store.claim_next("Worker-B", NOW, LEASE).unwrap().value);
    assert_eq!(store.finalized_earlier(&a).unwrap(), None);
    let done = store.finalize(&a, &paid(), NOW).unwrap();
    assert_eq!(done.value, FinalizeOutcome::Committed);
    assert_eq!(store.finalized_earlier(&a).unwrap(), Some(done.seq));
    let again = store.finalize(&a, &paid(), NOW).unwrap().value;
    assert_eq!(
        again,
        FinalizeOutcome::Rejected,
        "its own commit rejects it"
    );
    // Another message, another version of it, another owner's name: nothing committed.
    assert_eq!(store.finalized_earlier(&b).unwrap(), None);
    let later = Lease {
        version: a.version + 1,
        ..a.clone()
    };
    assert_eq!(store.finalized_earlier(&later).unwrap(), None);
    let namesake = Lease {
        owner: "Worker-B".into(),
        ..a
    };
    assert_eq!(store.finalized_earlier(&namesake).unwrap(), None);
}
