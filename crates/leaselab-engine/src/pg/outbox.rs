//! How the PostgreSQL store meets the engine: its errors as the engine's [`OutboxError`],
//! and the connections an engine opens. The [`crate::outbox::Outbox`] parts are
//! implemented beside their SQL (`claim`, `retry`, `seed`, `read`).

use std::sync::Arc;

use super::{parse_url, PgError, PgStore};
use crate::outbox::{DbOrigin, Failure, OutboxError, Result, StoreShared};

impl From<PgError> for OutboxError {
    fn from(e: PgError) -> OutboxError {
        match e {
            PgError::Foreign(m) => OutboxError::Foreign(m),
            PgError::OtherSchema(o) => OutboxError::OtherSchema(o),
            PgError::InUse(m) => OutboxError::InUse(m),
            PgError::BadUrl(m) | PgError::Refused(m) => OutboxError::BadPath(m),
            PgError::Unreachable(m) => OutboxError::Unreachable(m),
            PgError::Postgres(e) => OutboxError::Database {
                failure: if super::connection_lost(&e) {
                    Failure::ConnectionLost
                } else {
                    Failure::Other
                },
                message: super::postgres_words(&e),
                cause: Some(e.into()),
            },
        }
    }
}

impl From<postgres::Error> for OutboxError {
    fn from(e: postgres::Error) -> OutboxError {
        PgError::Postgres(e).into()
    }
}

impl PgStore {
    /// The engine's own connection: make or reuse the schema (a database that is not
    /// leaselab's, or that another engine holds, is refused untouched), stamping writes
    /// from `shared`. The database is held until this connection closes.
    pub fn create_held(url: &str, shared: Arc<StoreShared>) -> Result<(PgStore, DbOrigin)> {
        let config = parse_url(url)?;
        let mut store = PgStore::open(&config)?;
        store.hold()?;
        let origin = store.make_or_reuse()?;
        store.share(shared)?;
        Ok((store, origin))
    }

    /// Another connection to a database that [`PgStore::create_held`] prepared, stamping
    /// its writes from `shared`.
    pub fn open_shared(url: &str, shared: Arc<StoreShared>) -> Result<PgStore> {
        let mut store = PgStore::open_url(url)?;
        store.share(shared)?;
        Ok(store)
    }
}
