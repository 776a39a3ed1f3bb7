//! What is SQLite's own in its store, against real files: a file's identity, query plans,
//! pages written, its batch claim and finalize, a write's rollback from inside. The
//! outbox's rules, which PostgreSQL keeps as well, are tested once for both in
//! `tests/conformance`.

use leaselab::engine::outbox::prelude::*;
use std::sync::Arc;

use leaselab::engine::provider::{Provider, ProviderStatus, StatusCheck};
use leaselab::engine::store::{
    inspect, ClaimOutcome, DbOrigin, FinalizeOutcome, Lease, Store, StoreError, StoreShared,
};

const T0: i64 = 1_000_000;
const LEASE: i64 = 500;

fn fresh(messages: u64) -> (tempfile::TempDir, Store, Provider) {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, origin) = Store::create(
        &dir.path().join("outbox.db"),
        Arc::new(StoreShared::default()),
    )
    .unwrap();
    assert_eq!(origin, DbOrigin::Created);
    let provider = Provider::new();
    store.seed(&provider, messages, T0).unwrap();
    (dir, store, provider)
}

fn second_connection(dir: &tempfile::TempDir) -> Store {
    Store::open(
        &dir.path().join("outbox.db"),
        Arc::new(StoreShared::default()),
    )
    .unwrap()
}

fn claimed(outcome: ClaimOutcome) -> Lease {
    match outcome {
        ClaimOutcome::Claimed(l) => l,
        other => panic!("expected a claim, got {other:?}"),
    }
}

/// The rule itself (the soonest-ending live lease of another) is in `tests/conformance`.
#[test]
fn the_blocked_by_query_reads_the_index_of_unfinished_messages() {
    let (_d, s, _p) = fresh(2);
    let plan = s.blocked_by_query_plan().unwrap().join(" | ");
    assert!(plan.contains("IX_Outbox_Unfinished"), "{plan}");
}

fn paid(key: &str, p: &Provider) -> StatusCheck {
    let c = p.check_status(key);
    assert_eq!(c.status, ProviderStatus::Paid);
    c
}

#[test]
fn seeding_is_atomic_a_failure_between_the_inserts_leaves_neither_row() {
    let (_d, mut s, p) = fresh(0);
    let err = s
        .add_payment_with(&p, "PAY-777", 1_000, T0, || {
            Err(StoreError::Injected("crash between the two inserts".into()))
        })
        .unwrap_err();
    assert!(matches!(err, StoreError::Injected(_)));
    assert!(s.payments().unwrap().is_empty());
    assert_eq!(s.message_count().unwrap(), 0);
    // The same key then goes through whole.
    s.add_payment(&p, "PAY-777", 1_000, T0).unwrap();
    assert_eq!(s.payments().unwrap().len(), 1);
    assert_eq!(s.message_count().unwrap(), 1);
}

#[test]
fn a_panic_inside_a_write_rolls_it_back_and_the_connection_writes_on() {
    let (_d, mut s, p) = fresh(0);
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = s.add_payment_with(&p, "PAY-778", 1_000, T0, || {
            panic!("a bug between the two inserts")
        });
    }));
    assert!(panicked.is_err());
    // Nothing of it stays, and the connection is not left inside it: the next write
    // begins, commits and is seen.
    assert!(s.payments().unwrap().is_empty());
    s.add_payment(&p, "PAY-778", 1_000, T0).unwrap();
    assert_eq!(s.payments().unwrap().len(), 1);
    assert_eq!(s.message_count().unwrap(), 1);
}

#[test]
fn the_claim_query_never_scans_the_whole_outbox() {
    let (_d, s, _p) = fresh(10);
    let plan = s.claim_query_plan().unwrap();
    let on_outbox: Vec<&String> = plan
        .iter()
        .filter(|l| l.contains("OutboxMessages"))
        .collect();
    // The candidate, then the conditional update of that row by id.
    assert_eq!(on_outbox.len(), 2, "{plan:#?}");
    for step in on_outbox {
        // Every visit to the table goes through an index: the candidate is the first
        // claimable row of the unfinished messages' index in its own order (LIMIT 1, no
        // sort).
        assert!(
            step.contains("USING INDEX")
                || step.contains("USING COVERING INDEX")
                || step.contains("USING INTEGER PRIMARY KEY"),
            "a full scan of the outbox: {step} in {plan:#?}"
        );
    }
    assert!(
        plan.iter()
            .any(|l| l.contains("INDEX IX_Outbox_Unfinished")),
        "{plan:#?}"
    );
    assert!(!plan.iter().any(|l| l.contains("TEMP B-TREE")), "{plan:#?}");
}

#[test]
fn inspect_refuses_what_is_not_a_leaselab_database_and_leaves_it_untouched() {
    let dir = tempfile::tempdir().unwrap();
    // A directory.
    assert!(matches!(inspect(dir.path()), Err(StoreError::Foreign(_))));
    // A text file.
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "my precious notes\n").unwrap();
    assert!(matches!(inspect(&text), Err(StoreError::Foreign(_))));
    assert_eq!(
        std::fs::read_to_string(&text).unwrap(),
        "my precious notes\n"
    );
    // A SQLite database of another application.
    let other = dir.path().join("other.db");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch(
            "CREATE TABLE Customers(Id INTEGER PRIMARY KEY); INSERT INTO Customers VALUES (7);",
        )
        .unwrap();
    let before = std::fs::read(&other).unwrap();
    let err = Store::create(&other, Arc::new(StoreShared::default())).unwrap_err();
    assert!(err.to_string().contains("Customers"), "{err}");
    assert_eq!(std::fs::read(&other).unwrap(), before);
    // An absent file is created; an earlier leaselab database is reused.
    let ours = dir.path().join("outbox.db");
    assert_eq!(inspect(&ours).unwrap(), DbOrigin::Created);
    drop(Store::create(&ours, Arc::new(StoreShared::default())).unwrap());
    assert_eq!(inspect(&ours).unwrap(), DbOrigin::Reused);
}

/// SQLite's own: it claims a batch in one transaction, where PostgreSQL's store takes one
/// message per claim (the interface's default), and only SQLite has a batch finalize.
#[test]
fn batch_claims_take_the_oldest_k_and_batch_finalize_guards_each_message() {
    let (d, mut a, p) = fresh(5);
    let mut b = second_connection(&d);
    let leases = a.claim_batch("Worker-A", T0, LEASE, 3).unwrap().value;
    assert_eq!(leases.iter().map(|l| l.id).collect::<Vec<_>>(), [1, 2, 3]);
    // Worker-B takes message 2 over after the lease ran out; A's batch finalize must
    // commit 1 and 3 and leave 2 (and its payment) alone.
    let stolen = claimed(
        b.claim_id(2, "Worker-B", T0 + LEASE + 1, LEASE)
            .unwrap()
            .value,
    );
    assert_eq!(stolen.version, 2);
    let results: Vec<_> = leases
        .into_iter()
        .map(|l| {
            let c = p.check_status(&l.key);
            (l, c)
        })
        .collect();
    let outcomes = a.finalize_batch(&results, T0 + LEASE + 2).unwrap().value;
    assert_eq!(
        outcomes,
        [
            FinalizeOutcome::Committed,
            FinalizeOutcome::Rejected,
            FinalizeOutcome::Committed
        ]
    );
    let pays = a.payments().unwrap();
    assert_eq!(
        pays[1].status, "Pending",
        "PAY-002's payment must stay untouched"
    );
    assert_eq!(pays[0].status, "Paid");
    assert_eq!(a.outbox_counts().unwrap().processed, 2);
}

/// SQLite's batch finalize fences a lease from before a reseed as the single finalize does
/// (the rest of that rule, for every outbox, is in `tests/conformance`).
#[test]
fn a_batch_finalize_of_a_lease_from_before_a_reseed_is_rejected() {
    let (d, mut engine, provider) = fresh(1);
    let mut stale_process = second_connection(&d);
    let stale = claimed(
        stale_process
            .claim_next("Worker-B", T0, LEASE)
            .unwrap()
            .value,
    );
    engine.empty().unwrap();
    engine.seed(&provider, 1, T0).unwrap();
    let live = claimed(engine.claim_next("Worker-B", T0, LEASE).unwrap().value);
    assert_eq!(
        (stale.id, stale.version, &stale.owner),
        (live.id, live.version, &live.owner),
        "the reseed gave the new row the old lease's id, version and owner"
    );
    let check = StatusCheck {
        status: ProviderStatus::Paid,
        transaction_id: Some("TX-PAY-001-1".into()),
    };
    assert_eq!(
        stale_process
            .finalize_batch(&[(stale.clone(), check.clone())], T0 + 1)
            .unwrap()
            .value,
        [FinalizeOutcome::Rejected]
    );
    assert_eq!(
        engine.finalize(&live, &check, T0 + 2).unwrap().value,
        FinalizeOutcome::Committed
    );
}

/// Pages the last write transaction committed: the frames in a WAL that a checkpoint had
/// emptied just before it.
fn frames_in_wal(raw: &rusqlite::Connection, path: &std::path::Path) -> u64 {
    let page = raw
        .query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0))
        .unwrap() as u64;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let len = std::fs::metadata(&wal).unwrap().len();
    assert_eq!((len.max(32) - 32) % (24 + page), 0, "{len} bytes of WAL");
    len.saturating_sub(32) / (24 + page)
}

fn empty_the_wal(raw: &rusqlite::Connection, path: &std::path::Path) {
    let busy: i64 = raw
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
        .unwrap();
    assert_eq!(busy, 0);
    assert_eq!(frames_in_wal(raw, path), 0);
}

#[test]
fn a_claim_writes_two_pages_and_a_finalize_four() {
    let (d, mut s, p) = fresh(10);
    let path = d.path().join("outbox.db");
    let raw = rusqlite::Connection::open(&path).unwrap();
    empty_the_wal(&raw, &path);
    let lease = claimed(s.claim_next("Worker-A", T0, LEASE).unwrap().value);
    // The row and the event row: the index of unfinished messages is not touched.
    assert_eq!(frames_in_wal(&raw, &path), 2);
    empty_the_wal(&raw, &path);
    let check = paid(&lease.key, &p);
    assert_eq!(
        s.finalize(&lease, &check, T0 + 1).unwrap().value,
        FinalizeOutcome::Committed
    );
    // The row, its index entry leaving, the payment and the event row.
    assert_eq!(frames_in_wal(&raw, &path), 4);
}

/// The opcodes SQLite compiles `sql` to.
fn opcodes(raw: &rusqlite::Connection, sql: &str) -> Vec<String> {
    let mut stmt = raw.prepare(&format!("EXPLAIN {sql}")).unwrap();
    let rows = stmt.query_map([], |r| r.get::<_, String>(1)).unwrap();
    rows.map(Result::unwrap).collect()
}

#[test]
fn writing_a_row_builds_no_temporary_btree_for_its_checks() {
    let (d, _s, _p) = fresh(1);
    let raw = rusqlite::Connection::open(d.path().join("outbox.db")).unwrap();
    // Every table a claim or a finalize writes, with each CHECKed column set.
    for sql in [
        "UPDATE OutboxMessages SET Status = 'Processed', ProcessedAtUtc = 1, LockedBy = 'W'
          WHERE Id = 1",
        "UPDATE Payments SET PaymentStatus = 'Paid', TransactionId = 't'
          WHERE IdempotencyKey = 'PAY-001'",
        "INSERT INTO LeaseEvents (Seq, AtUtc, Worker, Kind, MessageId, PaymentKey)
         VALUES (100, 1, 'W', 'Claimed', 1, 'PAY-001')",
    ] {
        let ops = opcodes(&raw, sql);
        // No CHECK builds a b-tree of constants each time the statement runs.
        assert!(
            !ops.iter().any(|o| o == "OpenEphemeral"),
            "{sql} opens a temporary b-tree: {ops:?}"
        );
    }
}

/// SQLite quotes a statement it cannot prepare, and ours span several lines: the error a
/// worker stops with is still one line (a column dropped under a run reached stderr as
/// three, depending on which statement met it first).
#[test]
fn a_statement_sqlite_cannot_prepare_is_reported_on_one_line() {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    conn.execute_batch("CREATE TABLE OutboxMessages (Id INTEGER PRIMARY KEY)")
        .unwrap();
    let e = conn
        .prepare(
            "UPDATE OutboxMessages\n   SET Attempts = Attempts + 1\n WHERE Id = 1\n   AND Id > 0",
        )
        .map(|_| ())
        .expect_err("no such column");
    let line = leaselab::engine::outbox::OutboxError::from(e).to_string();
    assert!(line.contains("no such column: Attempts"), "{line}");
    assert!(!line.contains('\n') && !line.contains('\r'), "{line:?}");
    assert!(
        !line.contains("  "),
        "indentation folded into single spaces: {line:?}"
    );
}
