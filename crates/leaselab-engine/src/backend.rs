//! Which database `--db` names ([`Db`]), and a connection to it as an [`Outbox`]: the
//! SQLite [`Store`] or the PostgreSQL store, peers behind the one interface.

use crate::outbox::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use super::outbox::Outbox;
use super::outbox::{DbOrigin, Result, StoreShared};
use super::provider::Provider;
use super::store::Store;

/// Where the outbox lives: a SQLite file, or a PostgreSQL database named by its URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Db {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Db {
    /// `--db`: a `postgres://` or `postgresql://` URL names PostgreSQL, anything else a file.
    pub fn parse(arg: &Path) -> Db {
        match arg.to_str() {
            Some(s) if super::pg::is_url(s) => Db::Postgres(s.to_string()),
            _ => Db::Sqlite(arg.to_path_buf()),
        }
    }

    /// `SQLite` or `PostgreSQL`, as a report names it.
    pub fn engine_name(&self) -> &'static str {
        match self {
            Db::Sqlite(_) => "SQLite",
            Db::Postgres(_) => "PostgreSQL",
        }
    }

    pub fn is_postgres(&self) -> bool {
        matches!(self, Db::Postgres(_))
    }

    /// The location for a report or the header: a path, or the server without a password.
    pub fn shown(&self) -> String {
        match self {
            Db::Sqlite(p) => p.display().to_string(),
            Db::Postgres(url) => super::pg::parse_url(url)
                .map(|c| super::pg::describe(&c))
                .unwrap_or_else(|_| "PostgreSQL".to_string()),
        }
    }

    /// Another connection to a database the engine prepared, stamping its writes from
    /// `shared` (one per worker, as a separate application instance would have).
    pub fn open(&self, shared: Arc<StoreShared>) -> Result<Box<dyn Outbox>> {
        match self {
            Db::Sqlite(path) => Ok(Box::new(Store::open(path, shared)?)),
            Db::Postgres(url) => Ok(Box::new(super::pg::PgStore::open_shared(url, shared)?)),
        }
    }

    /// Join the database as a guest (a worker process, a watching dashboard): no hold on it,
    /// since others share it. A missing or empty database is made with `messages` payments
    /// at once, so that two guests starting together make it once; one that is not
    /// leaselab's is refused untouched.
    pub fn join(
        &self,
        shared: Arc<StoreShared>,
        provider: &Provider,
        messages: u64,
        now: i64,
    ) -> Result<(Box<dyn Outbox>, DbOrigin)> {
        match self {
            Db::Sqlite(path) => {
                let (store, origin) =
                    Store::join(path, shared, |s| s.seed(provider, messages, now))?;
                Ok((Box::new(store), origin))
            }
            Db::Postgres(url) => {
                let (store, origin) =
                    super::pg::PgStore::join(url, shared, provider, messages, now)?;
                Ok((Box::new(store), origin))
            }
        }
    }

    /// A connection for the dashboard's table (read-only where the database allows it).
    pub fn open_reader(&self) -> Result<Box<dyn Outbox>> {
        match self {
            Db::Sqlite(path) => Ok(Box::new(Store::open_read_only(path)?)),
            Db::Postgres(url) => Ok(Box::new(super::pg::PgStore::open_shared(
                url,
                Arc::new(StoreShared::default()),
            )?)),
        }
    }
}

impl From<PathBuf> for Db {
    fn from(p: PathBuf) -> Db {
        Db::parse(&p)
    }
}
