//! A student's statements on a real SQLite outbox: a step at a time, rolled back whole when
//! a transaction ends early, refused by the sandbox also when they reach the database
//! without the file's check, and the lab's own writes unharmed after.

use std::sync::Arc;

use leaselab_engine::outbox::prelude::*;
use leaselab_engine::outbox::{ClaimOutcome, LeaseEventKind, StoreShared};
use leaselab_engine::provider::{Provider, ProviderStatus, StatusCheck};
use leaselab_engine::store::Store;
use leaselab_engine::student::{
    Exercise, OpKind, OpResult, OpRun, Operation, Statement, Step, StudentStore, TxMode,
};

const T0: i64 = 1_000_000;

fn file(claim_tx: &str, claim: &[&str], finalize: &[&str]) -> String {
    let list = |s: &[&str]| {
        s.iter()
            .map(|x| format!("  \"{x}\",\n"))
            .collect::<String>()
    };
    format!(
        "name = \"t\"\ntitle = \"T\"\ntask = \"T\"\n[claim]\ntransaction = \"{claim_tx}\"\n\
         statements = [\n{}]\n[finalize]\ntransaction = \"immediate\"\nstatements = [\n{}]\n",
        list(claim),
        list(finalize)
    )
}

const SELECT: &str =
    "SELECT Id, LeaseVersion FROM OutboxMessages WHERE Status = 'Pending' ORDER BY Id LIMIT 1";
const TAKE: &str = "UPDATE OutboxMessages SET Status = 'Processing', LockedBy = :worker, LockedUntilUtc = :lease_until, LeaseVersion = LeaseVersion + 1, Attempts = Attempts + 1 WHERE Id = :id RETURNING Id, LeaseVersion";
const FINALIZE: &str = "UPDATE OutboxMessages SET Status = 'Processed', ProcessedAtUtc = :now, LockedUntilUtc = NULL WHERE Id = :id AND LockedBy = :worker AND LeaseVersion = :version";

struct Db {
    _dir: tempfile::TempDir,
    store: Store,
    provider: Provider,
}

fn seeded(messages: u64) -> Db {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, _) =
        Store::create(&dir.path().join("o.db"), Arc::new(StoreShared::default())).unwrap();
    let provider = Provider::new();
    store.seed(&provider, messages, T0).unwrap();
    Db {
        _dir: dir,
        store,
        provider,
    }
}

fn kinds(store: &Store) -> Vec<LeaseEventKind> {
    store
        .events_after(0, 100)
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .filter(|k| !matches!(k, LeaseEventKind::Seeded))
        .collect()
}

#[test]
fn without_a_transaction_each_step_runs_one_statement_and_says_what_it_did() {
    let mut db = seeded(2);
    let ex = Exercise::parse(&file("none", &[SELECT, TAKE], &[FINALIZE]), "t.toml").unwrap();
    let mut s = StudentStore::new(&mut db.store, Arc::new(ex));
    let mut run = OpRun::claim("Worker-A", T0, 500);
    let (step, shown) = s.step(&mut run).unwrap();
    assert_eq!(step, Step::Continue);
    assert_eq!(run.next, 1);
    assert_eq!(run.bound.id, Some(1));
    let first = &shown.statements[0];
    assert_eq!(first.line, 7);
    assert_eq!(first.effect, "returned Id = 1, LeaseVersion = 0");
    // The state of an operation in progress is a value: kept, compared, hashed.
    let kept = run.clone();
    assert_eq!(kept, run);
    let (step, shown) = s.step(&mut run).unwrap();
    let Step::Done(OpResult::Claimed(lease)) = step else {
        panic!("{step:?}");
    };
    assert_eq!((lease.id, lease.version, lease.until_ms), (1, 1, T0 + 500));
    assert_eq!(
        shown.statements[0].effect,
        "returned Id = 1, LeaseVersion = 1"
    );
    assert!(shown.statements[0]
        .parameters
        .contains(&(":worker".to_string(), "'Worker-A'".to_string())));
    assert!(shown.stamp.is_some());
    drop(s);
    assert_eq!(kinds(&db.store), [LeaseEventKind::Claimed]);
}

#[test]
fn a_rejected_finalize_in_a_transaction_leaves_nothing_of_the_students_statements() {
    let mut db = seeded(1);
    let fail_payment = "UPDATE Payments SET PaymentStatus = 'Failed' WHERE IdempotencyKey = (SELECT PaymentKey FROM OutboxMessages WHERE Id = :id)";
    let text = file("immediate", &[SELECT, TAKE], &[fail_payment, FINALIZE]);
    let ex = Arc::new(Exercise::parse(&text, "t.toml").unwrap());
    let mut s = StudentStore::new(&mut db.store, ex);
    let ClaimOutcome::Claimed(lease) = s.claim_next("Worker-A", T0, 500).unwrap().value else {
        panic!("no claim");
    };
    let stale = leaselab_engine::outbox::Lease {
        version: 0,
        ..lease.clone()
    };
    let answer = db.provider.check_status(&lease.key);
    let mut run = OpRun::finalize(&stale, &answer, T0 + 1);
    let (step, shown) = s.step(&mut run).unwrap();
    assert_eq!(step, Step::Done(OpResult::Rejected));
    assert!(shown.rolled_back);
    assert_eq!(shown.statements.len(), 2);
    assert_eq!(shown.statements[1].effect, "no row changed");
    let payments = s.payments().unwrap();
    assert_eq!(
        payments[0].status,
        leaselab_engine::outbox::PaymentStatus::Pending
    );
    // The holder's own finalize: the student's statements and the lab's answer stay.
    let paid = StatusCheck {
        status: ProviderStatus::Paid,
        transaction_id: Some("TX-9".into()),
    };
    let mut run = OpRun::finalize(&lease, &paid, T0 + 2);
    assert_eq!(s.step(&mut run).unwrap().0, Step::Done(OpResult::Accepted));
    let payments = s.payments().unwrap();
    assert_eq!(
        payments[0].status,
        leaselab_engine::outbox::PaymentStatus::Paid
    );
    drop(s);
    assert_eq!(
        kinds(&db.store),
        [
            LeaseEventKind::Claimed,
            LeaseEventKind::FinalizeRejected,
            LeaseEventKind::Finalized
        ]
    );
}

/// Forbidden statements built without the file's check (the fields are public) are still
/// refused when they run, by the authorizer on the store's own connection; the lab's own
/// writes work on that connection after.
#[test]
fn the_authorizer_refuses_at_run_time_too_and_is_gone_after() {
    for sql in [
        "DELETE FROM LeaseEvents RETURNING Seq AS Id, Seq AS LeaseVersion",
        "SELECT Seq AS Id, 1 AS LeaseVersion FROM LeaseEvents",
        "DROP TABLE Seedings",
        "PRAGMA foreign_keys = OFF",
        "ATTACH DATABASE ':memory:' AS other",
        "BEGIN",
    ] {
        let mut db = seeded(1);
        let schema = db.store.schema().unwrap();
        let op = |kind, sql: &str| Operation {
            kind,
            transaction: TxMode::None,
            statements: vec![Statement {
                sql: sql.into(),
                line: 3,
            }],
        };
        let ex = Exercise {
            file: "built.toml".into(),
            name: "built".into(),
            title: String::new(),
            task: String::new(),
            claim: op(OpKind::Claim, sql),
            finalize: op(OpKind::Finalize, FINALIZE),
            heartbeat: None,
        };
        let mut s = StudentStore::new(&mut db.store, Arc::new(ex));
        let err = s.step(&mut OpRun::claim("Worker-A", T0, 500)).unwrap_err();
        assert!(err.is_students(), "{sql}: {err}");
        assert!(
            err.to_string()
                .starts_with("built.toml:3: the claim's statement 1"),
            "{err}"
        );
        assert!(err.to_string().contains("may not"), "{sql}: {err}");
        drop(s);
        // The lab's own claim, on the same connection, writes its event row.
        let claimed = db.store.claim_next("Worker-B", T0, 500).unwrap().value;
        assert!(
            matches!(claimed, ClaimOutcome::Claimed(_)),
            "{sql}: {claimed:?}"
        );
        assert_eq!(kinds(&db.store), [LeaseEventKind::Claimed], "{sql}");
        assert_eq!(db.store.schema().unwrap(), schema, "{sql}");
    }
}

/// A stepwise store answers a claim call one statement at a time: partway it claims
/// nothing yet and says so, the next call goes on with the values bound at the start (a
/// later clock does not change them), and the statements it ran are the operation's so far.
#[test]
fn a_stepwise_store_takes_a_claim_a_statement_a_call() {
    let mut db = seeded(2);
    let ex = Exercise::parse(&file("none", &[SELECT, TAKE], &[FINALIZE]), "t.toml").unwrap();
    let mut s = StudentStore::new(&mut db.store, Arc::new(ex)).stepwise();
    let first = s.claim_next("Worker-A", T0, 500).unwrap();
    assert_eq!(first.value, ClaimOutcome::Empty);
    assert!(s.partway(), "the SELECT ran; the UPDATE waits");
    let ran = s.student_statements().unwrap();
    assert_eq!(ran.len(), 1);
    assert_eq!(ran[0].sql, SELECT);
    let done = s.claim_next("Worker-A", T0 + 9_999, 500).unwrap();
    let ClaimOutcome::Claimed(lease) = done.value else {
        panic!("{:?}", done.value);
    };
    assert_eq!(
        (lease.id, lease.until_ms),
        (1, T0 + 500),
        "bound when it began"
    );
    assert!(!s.partway());
    let ran = s.student_statements().unwrap();
    assert_eq!(
        ran.iter().map(|r| r.sql.as_str()).collect::<Vec<_>>(),
        [SELECT, TAKE]
    );
    // Not stepwise: a claim call runs the whole claim.
    drop(s);
    let ex = Exercise::parse(&file("none", &[SELECT, TAKE], &[FINALIZE]), "t.toml").unwrap();
    let mut whole = StudentStore::new(&mut db.store, Arc::new(ex));
    let ClaimOutcome::Claimed(lease) = whole.claim_next("Worker-B", T0, 500).unwrap().value else {
        panic!("a whole claim");
    };
    assert_eq!(lease.id, 2);
    assert!(!whole.partway());
}

#[test]
fn a_claim_of_a_row_the_lab_did_not_seed_is_refused_in_one_line() {
    // A row of no seeding (as only an insert the sandbox refuses could make): the claim's
    // result is checked against the seeded messages, not merely against the table.
    let mut db = seeded(1);
    let raw = rusqlite::Connection::open(db._dir.path().join("o.db")).unwrap();
    raw.execute_batch(
        "INSERT INTO Payments (IdempotencyKey, Amount, CreatedAtUtc) VALUES ('PAY-900', 1, 0);
         INSERT INTO OutboxMessages (Id, PaymentKey, CreatedAtUtc, Seeding)
         VALUES (900, 'PAY-900', 0, 0);",
    )
    .unwrap();
    drop(raw);
    let claim = "SELECT Id, LeaseVersion FROM OutboxMessages ORDER BY Id DESC LIMIT 1";
    let ex = Exercise::parse(&file("immediate", &[claim], &[FINALIZE]), "t.toml").unwrap();
    let mut s = StudentStore::new(&mut db.store, Arc::new(ex));
    let e = s.run_to_end(OpRun::claim("Worker-A", T0, 500)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.toml:7: the claim returned Id = 900, which is no message the lab seeded"
    );
    // A seeded one is claimed.
    drop(s);
    let ex = Exercise::parse(&file("immediate", &[SELECT, TAKE], &[FINALIZE]), "t.toml").unwrap();
    let mut s = StudentStore::new(&mut db.store, Arc::new(ex));
    let (result, _) = s.run_to_end(OpRun::claim("Worker-A", T0, 500)).unwrap();
    assert!(
        matches!(&result, OpResult::Claimed(l) if l.id == 1),
        "{result:?}"
    );
}
