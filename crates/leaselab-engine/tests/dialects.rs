//! Both dialects keep the lease rules alike: the same rows at the same `now` give the same
//! answers on a real SQLite file and on the real PostgreSQL server, and both agree with
//! `lease::is_live`. The SQL each answer rests on is written once per dialect (`holds!`,
//! `live!`, `expired!`, `available!`, `claimable!` in `store` and in `pg`).

#[path = "../../../tests/pg_support/mod.rs"]
mod pg_support;

use std::sync::Arc;

use leaselab_engine::lease;
use leaselab_engine::outbox::prelude::*;
use leaselab_engine::outbox::{ClaimOutcome, Lease, StoreShared};
use leaselab_engine::pg::PgStore;
use leaselab_engine::provider::Provider;
use leaselab_engine::store::Store;

const NOW: i64 = 1_000;
const LEASE_MS: i64 = 500;

/// One row's state: status, until (of a lease held by Worker-X), available at.
type Row = (&'static str, Option<i64>, i64);

/// Each side of every boundary: a backoff over, just over, not over; a lease run out, at
/// its last millisecond, still running; a finished row and a dead letter.
const ROWS: [Row; 8] = [
    ("Pending", None, NOW - 1),
    ("Pending", None, NOW),
    ("Pending", None, NOW + 1),
    ("Processing", Some(NOW - 1), 0),
    ("Processing", Some(NOW), 0),
    ("Processing", Some(NOW + 1), 0),
    ("Processed", None, 0),
    ("DeadLettered", None, 0),
];

/// The statement that puts row `id` in its state; `$n` or `?n` placeholders alike.
fn set_row_sql(mark: char) -> String {
    format!(
        "UPDATE OutboxMessages SET Status = {m}1::text, LockedBy = {m}2::text,
                LockedUntilUtc = {m}3, AvailableAtUtc = {m}4, LeaseVersion = 1,
                ProcessedAtUtc = CASE WHEN {m}1::text IN ('Processed', 'DeadLettered')
                                      THEN 0 END
          WHERE Id = {m}5",
        m = mark
    )
}

fn holder(id: i64, row: &Row) -> Option<Lease> {
    row.1.map(|until| Lease {
        id,
        key: format!("PAY-{id:03}"),
        owner: "Worker-X".into(),
        until_ms: until,
        version: 1,
        seeding: 1,
    })
}

/// What a dialect answers about [`ROWS`]: a claim of each row by id, then (rows set again)
/// whose lease blocks an empty claim, a heartbeat of each held lease, and every claim in order.
fn answers(store: &mut dyn Outbox, set_rows: &mut dyn FnMut()) -> Vec<String> {
    let mut said = Vec::new();
    set_rows();
    for id in 1..=ROWS.len() as i64 {
        let outcome = store.claim_id(id, "Worker-Z", NOW, LEASE_MS).unwrap().value;
        said.push(format!("claim {id}: {}", brief(&outcome)));
    }
    set_rows();
    let blocked = store.blocked_by("Worker-Z", NOW).unwrap();
    said.push(format!("blocked by: {:?}", blocked.as_ref().map(brief)));
    for (i, row) in ROWS.iter().enumerate() {
        if let Some(lease) = holder(i as i64 + 1, row) {
            let beat = store.heartbeat(&lease, NOW, LEASE_MS).unwrap().value;
            said.push(format!("heartbeat {}: {beat:?}", lease.id));
        }
    }
    set_rows();
    loop {
        let outcome = store.claim_next("Worker-Z", NOW, LEASE_MS).unwrap().value;
        said.push(format!("claim next: {}", brief(&outcome)));
        if outcome == ClaimOutcome::Empty {
            break;
        }
    }
    said
}

fn brief(outcome: &ClaimOutcome) -> String {
    match outcome {
        ClaimOutcome::Claimed(l) => format!("claimed {} until {}", l.id, l.until_ms),
        ClaimOutcome::Blocked {
            id, owner, left_ms, ..
        } => format!("{id} blocked by {owner}, {left_ms} ms left"),
        ClaimOutcome::Empty => "empty".into(),
    }
}

fn sqlite_answers() -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dialects.db");
    let (mut store, _) = Store::create(&path, Arc::new(StoreShared::default())).unwrap();
    store.seed(&Provider::new(), ROWS.len() as u64, 0).unwrap();
    let raw = rusqlite::Connection::open(&path).unwrap();
    let sql = set_row_sql('?').replace("::text", "");
    let mut set_rows = || {
        for (i, (status, until, available)) in ROWS.iter().enumerate() {
            let owner = until.map(|_| "Worker-X");
            raw.execute(
                &sql,
                rusqlite::params![status, owner, until, available, i as i64 + 1],
            )
            .unwrap();
        }
    };
    answers(&mut store, &mut set_rows)
}

fn postgres_answers(db: &pg_support::ScratchDb) -> Vec<String> {
    let (mut store, _) = PgStore::create_held(&db.url, Arc::new(StoreShared::default())).unwrap();
    store.seed(&Provider::new(), ROWS.len() as u64, 0).unwrap();
    let mut raw = db.client();
    let sql = set_row_sql('$');
    let mut set_rows = || {
        for (i, (status, until, available)) in ROWS.iter().enumerate() {
            let owner = until.map(|_| "Worker-X");
            raw.execute(&sql, &[status, &owner, until, available, &(i as i64 + 1)])
                .unwrap();
        }
    };
    answers(&mut store, &mut set_rows)
}

#[test]
fn sqlite_keeps_the_lease_rule_of_lease_is_live() {
    let said = sqlite_answers();
    for (i, (status, until, _)) in ROWS.iter().enumerate() {
        if let (&"Processing", Some(until)) = (status, until) {
            let blocked = said[i].contains("blocked");
            assert_eq!(blocked, lease::is_live(*until, NOW), "{}", said[i]);
        }
    }
}

#[test]
fn both_dialects_answer_the_same_rows_alike() {
    let Some(db) = pg_support::scratch("dialects") else {
        return;
    };
    assert_eq!(postgres_answers(&db), sqlite_answers());
}
