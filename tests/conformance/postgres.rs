//! The rules against PostgreSQL: a scratch database per test on the server named by
//! `LEASELAB_PG_URL` (without it the tests say once that they were skipped and pass,
//! except in CI, where they fail; see `tests/pg_support`).

use std::sync::Arc;

use leaselab::engine::outbox::{DbOrigin, LeaseEventRow, Outbox, StoreShared};
use leaselab::engine::pg::{PgStore, PgTail};

use crate::backend::{Backend, EventTail, Fixture, Fresh};

// Shared with the other PostgreSQL tests, whose raw-SQL helpers this suite does not need.
#[allow(dead_code)]
#[path = "../pg_support/mod.rs"]
mod pg_support;

pub struct Postgres;

struct Scratch {
    db: pg_support::ScratchDb,
    shared: Arc<StoreShared>,
}

/// A database name holds 63 bytes: the tag is cut so that the counter before it stays.
const TAG_BYTES: usize = 24;

impl Backend for Postgres {
    fn fresh(&self, tag: &str) -> Option<Fresh> {
        let db = pg_support::scratch(&tag[..tag.len().min(TAG_BYTES)])?;
        let shared = Arc::new(StoreShared::default());
        let (mut store, origin) = PgStore::create(&db.config).expect("create");
        assert_eq!(origin, DbOrigin::Created);
        store.share(shared.clone()).expect("share");
        Some((Box::new(Scratch { db, shared }), Box::new(store)))
    }
}

impl Fixture for Scratch {
    fn connect(&self) -> Box<dyn Outbox> {
        Box::new(PgStore::open_shared(&self.db.url, self.shared.clone()).expect("connect"))
    }

    fn events_after(&self, seq: u64) -> Vec<LeaseEventRow> {
        PgStore::open(&self.db.config)
            .expect("connect")
            .all_events_after(seq, i64::MAX as u64)
            .expect("events")
    }

    fn tail(&self) -> Box<dyn EventTail> {
        Box::new(Tail {
            store: PgStore::open(&self.db.config).expect("connect"),
            tail: PgTail::new(),
        })
    }
}

/// PostgreSQL's Seqs commit out of order: the settled tail holds a row back until no
/// lower one can still commit.
struct Tail {
    store: PgStore,
    tail: PgTail,
}

impl EventTail for Tail {
    fn next_rows(&mut self) -> Vec<LeaseEventRow> {
        self.store.tail_events(&mut self.tail, 1_000).expect("tail")
    }

    fn last(&self) -> u64 {
        self.tail.last()
    }
}

every_rule!(crate::postgres::Postgres);
