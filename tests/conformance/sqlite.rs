//! The rules against SQLite: a real database file in a temporary folder per test.

use std::path::PathBuf;
use std::sync::Arc;

use leaselab::engine::outbox::{DbOrigin, LeaseEventRow, Outbox, StoreShared};
use leaselab::engine::store::Store;

use crate::backend::{Backend, EventTail, Fixture, Fresh};

pub struct Sqlite;

struct File {
    _dir: tempfile::TempDir,
    path: PathBuf,
    shared: Arc<StoreShared>,
}

impl Backend for Sqlite {
    fn fresh(&self, _tag: &str) -> Option<Fresh> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outbox.db");
        let shared = Arc::new(StoreShared::default());
        let (store, origin) = Store::create(&path, shared.clone()).unwrap();
        assert_eq!(origin, DbOrigin::Created);
        let file = File {
            _dir: dir,
            path,
            shared,
        };
        Some((Box::new(file), Box::new(store)))
    }
}

impl Fixture for File {
    fn connect(&self) -> Box<dyn Outbox> {
        Box::new(Store::open(&self.path, self.shared.clone()).unwrap())
    }

    fn events_after(&self, seq: u64) -> Vec<LeaseEventRow> {
        Store::open_read_only(&self.path)
            .unwrap()
            .events_after(seq, i64::MAX as u64)
            .unwrap()
    }

    fn tail(&self) -> Box<dyn EventTail> {
        Box::new(Tail {
            store: Store::open_read_only(&self.path).unwrap(),
            last: 0,
        })
    }
}

/// SQLite has one writer at a time, so a row's Seq is its commit order: reading after the
/// last Seq seen is enough.
struct Tail {
    store: Store,
    last: u64,
}

impl EventTail for Tail {
    fn next_rows(&mut self) -> Vec<LeaseEventRow> {
        let rows = self.store.events_after(self.last, 1_000).unwrap();
        if let Some(row) = rows.last() {
            self.last = row.seq;
        }
        rows
    }

    fn last(&self) -> u64 {
        self.last
    }
}

every_rule!(crate::sqlite::Sqlite);
