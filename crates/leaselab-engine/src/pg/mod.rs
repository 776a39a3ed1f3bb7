//! The outbox in PostgreSQL: the same schema (adapted), a claim with `FOR UPDATE SKIP
//! LOCKED`, the same ownership-guarded finalize, heartbeats, retries with backoff and dead
//! letters, and a `LeaseEvents` row written in the transaction of every write about a
//! message. Every PostgreSQL statement lives in this folder.
//!
//! Each worker opens its own [`PgStore`] (its own connection), as a separate application
//! instance would. `now` is a bound parameter taken from the caller's clock (the scenario
//! clock of one engine), except on a connection on the server's clock
//! ([`LeaseClock::Server`](crate::outbox::LeaseClock), worker processes): there every lease
//! time is the server's `clock_timestamp()`, read inside the statement (`clock!`).

/// The server's clock, `clock_timestamp()`, in the epoch milliseconds the columns hold.
macro_rules! server_ms {
    () => {
        "floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
    };
}

/// The time a statement goes by, `$now` being the parameter its caller bound: the server's
/// clock on a connection set to it (`LeaseClock::Server`, worker processes, whose machines'
/// clocks differ), else `$now` (the scenario clock every worker of one engine shares).
macro_rules! clock {
    ($now:literal) => {
        concat!(
            "(CASE WHEN current_setting('leaselab.lease_clock', true) = 'server' THEN ",
            server_ms!(),
            " ELSE ",
            $now,
            " END)"
        )
    };
}

/// A lease still holds at `$now`: up to and including its until. The SQL of
/// `lease::is_live`, written once for every PostgreSQL statement (`tests/dialects.rs` holds
/// both dialects to the same answers). `$now` is the statement's parameter for the clock,
/// which the server's own clock replaces on a connection set to it (`clock!`).
macro_rules! holds {
    ($now:literal) => {
        concat!("(LockedUntilUtc >= ", clock!($now), ")")
    };
}

/// A Processing row whose lease still holds: it blocks a claim, and takes a heartbeat.
macro_rules! live {
    ($now:literal) => {
        concat!("(Status = 'Processing' AND ", holds!($now), ")")
    };
}

/// A Processing row whose lease has run out: the half of the claimable condition that
/// takes a message from its owner.
macro_rules! expired {
    ($now:literal) => {
        concat!("(Status = 'Processing' AND NOT ", holds!($now), ")")
    };
}

/// A Pending row whose backoff is over (`AvailableAtUtc` not after `$now`, or the server's
/// clock).
macro_rules! available {
    ($now:literal) => {
        concat!(
            "(Status = 'Pending' AND AvailableAtUtc <= ",
            clock!($now),
            ")"
        )
    };
}

/// The claimable condition, written once for every PostgreSQL statement: Pending and
/// available, or Processing with an expired lease.
macro_rules! claimable {
    ($now:literal) => {
        concat!("(", available!($now), " OR ", expired!($now), ")")
    };
}

mod cancel;
mod claim;
mod class;
mod outbox;
mod read;
mod retry;
mod seed;
mod session;
mod status;
mod tail;

use crate::outbox::prelude::*;
use std::cell::{RefCell, RefMut};
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use postgres::{Client, Config, NoTls, Statement};

use super::outbox::{DbOrigin, Durability, LeaseClock, StoreShared};

pub use cancel::cancel_all;
pub use class::{Runs, Score, ScoreError};
pub use session::{is_this_process, name_sessions, named_in, session_name, SESSION_PREFIX};
pub use tail::PgTail;

/// The statements the PostgreSQL store runs for a worker, by name: the dashboard's SQL pane
/// shows these very texts (`crate::statements`).
pub mod sql {
    pub use super::claim::{
        CLAIM_NEXT_SQL, CLAIM_NEXT_TYPES, FINALIZE_SQL, FINALIZE_TYPES, HOLDER_SQL,
        OWNER_ONLY_FINALIZE_SQL, SOONEST_LIVE_LEASE_SQL, TAKE_LEASE_SQL, WRITE_ANSWER_SQL,
    };
    pub use super::retry::{
        HEARTBEAT_SQL, HELD_ATTEMPTS_SQL, LOAD_PENDING_SQL, MARK_SQL, RELEASE_SQL,
    };
}

/// The server's clock, as every statement on the server's clock reads it.
const SERVER_MS_SQL: &str = concat!("SELECT ", server_ms!());

pub const SCHEMA_PG_SQL: &str = include_str!("../../assets/schema.pg.sql");

/// The version of `assets/schema.pg.sql` a database was made with (in `LeaselabMarker`).
/// Version 2: `AvailableAtUtc`, `LastError`, `DeadLettered`, and the heartbeat, mark and
/// failed-attempt event kinds. Version 3: `Seeded` and `Added` events and their `Detail`, so
/// that a dashboard following the table learns what was seeded. Version 6: `LeaseEvents`
/// checks its `Kind` only, as SQLite's does (its other CHECKs cost every write). Version 7:
/// one-column CHECKs are domains, one index of unfinished messages serves the claim, and a
/// claim changes no indexed column, so its row version stays on its page. Version 8: the
/// facts a replay shows without guessing (crashes, freezes, restarts, provider calls, a
/// run's settings, worker processes joining and leaving) are `LeaseEvents` kinds. Version 9:
/// `LeaselabMarker.Held`, the teacher's hold on a class (`class.rs`).
pub const SCHEMA_VERSION: i32 = 9;

/// Key of the advisory lock under which a database is identified and made ("LSLB"), so two
/// workers that meet an empty database at once do not both create the schema.
const MAKE_LOCK: i64 = 0x4C53_4C42;
/// Key of the session advisory lock an engine holds on its database for its whole life
/// ("LSLO"), as a kept SQLite file's lock file does; it goes with the connection, also
/// when the process is killed.
const OWNER_LOCK: i64 = 0x4C53_4C4F;

/// The tables of a leaselab database, as PostgreSQL names them (unquoted names fold).
const TABLES: [&str; 5] = [
    "leaseevents",
    "leaselabmarker",
    "outboxmessages",
    "payments",
    "seedings",
];

/// The domains that carry the one-column CHECKs (see `assets/schema.pg.sql`).
const DOMAINS: [&str; 4] = [
    "leaselab_amount",
    "leaselab_payment_status",
    "leaselab_outbox_status",
    "leaselab_event_kind",
];

#[derive(Debug)]
pub enum PgError {
    Postgres(postgres::Error),
    /// The URL cannot be parsed as a PostgreSQL connection string.
    BadUrl(String),
    /// No connection could be made now (no server answers, it is starting or stopping): a
    /// later attempt may work.
    Unreachable(String),
    /// The server answered and refused: a wrong user or password, no such database. Trying
    /// again will not help.
    Refused(String),
    /// The database holds something that is not a leaselab outbox; it was left untouched.
    Foreign(String),
    /// The database is leaselab's, of another schema version; it was left untouched.
    OtherSchema(crate::outbox::OtherSchema),
    /// Another leaselab engine holds the database; it was left untouched.
    InUse(String),
}

impl fmt::Display for PgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PgError::Postgres(e) => f.write_str(&postgres_words(e)),
            PgError::BadUrl(m)
            | PgError::Unreachable(m)
            | PgError::Refused(m)
            | PgError::Foreign(m)
            | PgError::InUse(m) => f.write_str(m),
            PgError::OtherSchema(o) => o.fmt(f),
        }
    }
}

impl PgError {
    /// True when the `--db` given cannot be used (bad input, not a failure of the run).
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            PgError::BadUrl(_)
                | PgError::Unreachable(_)
                | PgError::Refused(_)
                | PgError::Foreign(_)
                | PgError::OtherSchema(_)
                | PgError::InUse(_)
        )
    }
}

impl std::error::Error for PgError {}

/// What PostgreSQL said. The server's own message is in the source; Display alone says
/// only "db error".
pub(crate) fn postgres_words(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("PostgreSQL: {}: {}", db.severity(), db.message()),
        None => format!("PostgreSQL: {e}"),
    }
}

/// True when `e` says the connection went away rather than that the statement was refused:
/// the driver found it closed or could not talk to the server, or the server said it is
/// shutting down, crashed or cannot take connections now (SQLSTATE class 08, 57P01-57P03).
pub(crate) fn connection_lost(e: &postgres::Error) -> bool {
    use postgres::error::SqlState;
    if e.is_closed() {
        return true;
    }
    match e.code() {
        Some(code) => {
            code.code().starts_with("08")
                || [
                    SqlState::ADMIN_SHUTDOWN,
                    SqlState::CRASH_SHUTDOWN,
                    SqlState::CANNOT_CONNECT_NOW,
                ]
                .contains(code)
        }
        // No word from the server: the socket failed under the driver.
        None => std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>()),
    }
}

/// True when a failed connection attempt was refused by the server for good: a wrong user
/// or password (SQLSTATE class 28), no such database (3D000).
fn refused_for_good(e: &postgres::Error) -> bool {
    e.code().is_some_and(|c| {
        c.code().starts_with("28") || *c == postgres::error::SqlState::INVALID_CATALOG_NAME
    })
}

impl From<postgres::Error> for PgError {
    fn from(e: postgres::Error) -> Self {
        PgError::Postgres(e)
    }
}

pub type Result<T> = std::result::Result<T, PgError>;

/// The statements of `assets/schema.pg.sql`, comments left out: what a leaselab database
/// holds once `identify` has found its marker and tables.
pub fn schema_statements() -> Vec<String> {
    SCHEMA_PG_SQL
        .split(';')
        .map(|stmt| {
            stmt.lines()
                .filter(|l| !l.trim_start().starts_with("--"))
                .collect::<Vec<_>>()
                .join("\n")
                .trim()
                .to_string()
        })
        .filter(|stmt| !stmt.is_empty())
        .collect()
}

/// True when `--db` names a PostgreSQL server rather than a SQLite file.
pub fn is_url(db: &str) -> bool {
    db.starts_with("postgres://") || db.starts_with("postgresql://")
}

/// Parse a `postgres://` URL (or a `key=value` connection string).
pub fn parse_url(url: &str) -> Result<Config> {
    let mut config = Config::from_str(url).map_err(|e| {
        PgError::BadUrl(format!(
            "cannot read the PostgreSQL URL (postgres://USER@HOST/DB or postgres://USER@/DB?host=/socket/dir): {}",
            with_source(&e)
        ))
    })?;
    // A server that does not answer is given up on, not waited for as long as TCP waits
    // (a URL's own connect_timeout wins).
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    // A password kept out of the URL (a class's join command leaves it out), as psql reads it.
    if config.get_password().is_none() {
        if let Some(password) = std::env::var_os("PGPASSWORD") {
            config.password(password.as_encoded_bytes());
        }
    }
    Ok(config)
}

/// How long a connection attempt waits for a server that does not answer.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The driver's error with its cause, which its Display leaves out.
fn with_source(e: &postgres::Error) -> String {
    match std::error::Error::source(e) {
        Some(cause) if !e.to_string().contains(&cause.to_string()) => format!("{e}: {cause}"),
        _ => e.to_string(),
    }
}

/// `database "leaselab" at /tmp/x/socket`, without the password.
pub fn describe(config: &Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(crate::platform::socket::host_name)
        .collect();
    format!(
        "PostgreSQL database \"{}\" at {}",
        config.get_dbname().unwrap_or("(default)"),
        if hosts.is_empty() {
            "the default socket".to_string()
        } else {
            hosts.join(",")
        }
    )
}

/// One connection to the outbox database.
pub struct PgStore {
    /// The connection needs `&mut` even to read, and the engine reads through `&self`: one
    /// owner per connection, so the cell is never contended.
    client: RefCell<Client>,
    shown: String,
    /// Where the stamps of this connection's writes come from (an engine's counter).
    shared: Arc<StoreShared>,
    /// Statements prepared once per connection: a query by text costs a parse round trip.
    prepared: RefCell<HashMap<&'static str, Statement>>,
    /// What a finalize checks: leaselab's fencing token, or the owner's name only.
    finalize_guard: crate::outbox::FinalizeGuard,
    /// The connection's cancel token, kept where a stopping signal finds it.
    _cancel: cancel::Registered,
}

impl fmt::Debug for PgStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgStore")
            .field("database", &self.shown)
            .finish()
    }
}

/// What a database holds, found without writing anything.
enum Identity {
    /// No table at all: ours to make.
    Empty,
    /// The marker, our schema version and all our tables.
    Ours,
}

impl PgStore {
    /// Open the database for an engine: make the schema in an empty database, or reuse a
    /// leaselab one. A database holding anything else is refused before a byte is written.
    pub fn create(config: &Config) -> Result<(PgStore, DbOrigin)> {
        let mut store = PgStore::open(config)?;
        let origin = store.make_or_reuse()?;
        Ok((store, origin))
    }

    /// Make the schema in an empty database, or find a leaselab one; refuse anything else.
    fn make_or_reuse(&mut self) -> Result<DbOrigin> {
        let mut client = self.client();
        let mut tx = client.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MAKE_LOCK])?;
        let origin = match identify(&mut tx, &self.shown)? {
            Identity::Ours => DbOrigin::Reused,
            Identity::Empty => {
                make_schema(&mut tx)?;
                DbOrigin::Created
            }
        };
        tx.commit()?;
        Ok(origin)
    }

    /// Open a leaselab database that is already there, to read it: an empty database or
    /// another application's is refused, and nothing is written.
    pub fn open_existing(url: &str) -> Result<PgStore> {
        let store = PgStore::open_url(url)?;
        {
            let mut client = store.client();
            let mut tx = client.build_transaction().read_only(true).start()?;
            if let Identity::Empty = identify(&mut tx, &store.shown)? {
                return Err(PgError::Foreign(format!(
                    "{} holds no leaselab tables: nothing was recorded there",
                    store.shown
                )));
            }
            tx.commit()?;
        }
        Ok(store)
    }

    /// Open another connection to a database that [`PgStore::create`] prepared.
    pub fn open(config: &Config) -> Result<PgStore> {
        let shown = describe(config);
        // A worker process's sessions carry its name, for `pg_stat_activity` to tell.
        let mut named = config.clone();
        if let Some(name) = session::this_session() {
            named.application_name(name);
        }
        let config = &named;
        let client = config.connect(NoTls).map_err(|e| {
            let mut why = match e.as_db_error() {
                Some(db) => db.message().to_string(),
                None => with_source(&e),
            };
            if config.get_password().is_none() && why.contains("password") {
                why.push_str(" (give it in PGPASSWORD, not in the URL)");
            }
            let line = format!("{shown}: cannot connect: {why}");
            if refused_for_good(&e) {
                PgError::Refused(line)
            } else {
                PgError::Unreachable(line)
            }
        })?;
        let registered = cancel::register(&client);
        Ok(PgStore {
            finalize_guard: Default::default(),
            _cancel: registered,
            client: RefCell::new(client),
            shown,
            shared: Arc::new(StoreShared::default()),
            prepared: RefCell::new(HashMap::new()),
        })
    }

    /// The connection, for one statement or one transaction at a time.
    fn client(&self) -> RefMut<'_, Client> {
        self.client.borrow_mut()
    }

    /// `sql` prepared on this connection, the first time only.
    fn prepared(&self, sql: &'static str) -> Result<Statement> {
        if let Some(s) = self.prepared.borrow().get(sql) {
            return Ok(s.clone());
        }
        let s = self.client().prepare(sql)?;
        self.prepared.borrow_mut().insert(sql, s.clone());
        Ok(s)
    }

    /// `sql` prepared on this connection with its parameters' types, the first time only.
    fn prepared_typed(
        &self,
        sql: &'static str,
        types: &[postgres::types::Type],
    ) -> Result<Statement> {
        if let Some(s) = self.prepared.borrow().get(sql) {
            return Ok(s.clone());
        }
        let s = self.client().prepare_typed(sql, types)?;
        self.prepared.borrow_mut().insert(sql, s.clone());
        Ok(s)
    }

    /// Stamp this connection's writes from `shared`, and commit as durably as it says:
    /// `Normal` and `Off` do not wait for the WAL flush, like SQLite's `synchronous=NORMAL`
    /// in WAL mode (a crash of the server may lose the newest commits, never half of one).
    pub fn share(&mut self, shared: Arc<StoreShared>) -> Result<()> {
        let wait = match shared.durability {
            Durability::Full => "on",
            Durability::Normal | Durability::Off => "off",
        };
        let clock = match shared.lease_clock {
            LeaseClock::Caller => "caller",
            LeaseClock::Server => "server",
        };
        self.client().batch_execute(&format!(
            "SET synchronous_commit = {wait}; SET leaselab.lease_clock = '{clock}'"
        ))?;
        self.shared = shared;
        Ok(())
    }

    /// True when this connection's leases go by the server's clock.
    fn on_server_clock(&self) -> bool {
        self.shared.lease_clock == LeaseClock::Server
    }

    /// The time a lease goes by on this connection: the server's clock on a connection set
    /// to it, else the caller's `now`.
    fn lease_now(&self, now: i64) -> Result<i64> {
        if !self.on_server_clock() {
            return Ok(now);
        }
        self.server_ms()
    }

    /// The server's clock now, in epoch milliseconds.
    pub fn server_ms(&self) -> Result<i64> {
        let q = self.prepared(SERVER_MS_SQL)?;
        Ok(self.client().query_one(&q, &[])?.get(0))
    }

    /// Open by URL: [`parse_url`] then [`PgStore::open`].
    pub fn open_url(url: &str) -> Result<PgStore> {
        PgStore::open(&parse_url(url)?)
    }

    pub fn describe(&self) -> &str {
        &self.shown
    }

    /// Hold the database for this connection's life: a second engine on it is refused in
    /// one line naming this one, before it writes anything.
    pub fn hold(&mut self) -> Result<()> {
        let me = format!("leaselab pid {}", std::process::id());
        self.client()
            .execute("SELECT set_config('application_name', $1, false)", &[&me])?;
        let got: bool = self
            .client()
            .query_one("SELECT pg_try_advisory_lock($1)", &[&OWNER_LOCK])?
            .get(0);
        if got {
            return Ok(());
        }
        let holder = Reading::owner(self).ok().flatten();
        Err(PgError::InUse(format!(
            "{} is in use by another leaselab ({}); wait for it to end or choose another --db",
            self.shown,
            holder.as_deref().unwrap_or("it just ended")
        )))
    }
}

/// Make the schema and its marker. PostgreSQL's DDL is transactional: they land whole with
/// the rest of `tx`, or not at all.
fn make_schema(tx: &mut postgres::Transaction<'_>) -> Result<()> {
    // A database whose leaselab tables were dropped by hand keeps their domains (types
    // outlive tables); without tables nothing uses them. A domain still used elsewhere
    // stops the drop, and with it the whole transaction.
    tx.batch_execute(&format!("DROP DOMAIN IF EXISTS {}", DOMAINS.join(", ")))?;
    tx.batch_execute(SCHEMA_PG_SQL)?;
    tx.execute(
        "INSERT INTO LeaselabMarker (Application, SchemaVersion) VALUES ('leaselab', $1)",
        &[&SCHEMA_VERSION],
    )?;
    Ok(())
}

/// Decide what the database holds, writing nothing.
fn identify(tx: &mut postgres::Transaction<'_>, shown: &str) -> Result<Identity> {
    let tables: Vec<String> = tx
        .query(
            "SELECT table_name::text FROM information_schema.tables
              WHERE table_schema = current_schema() ORDER BY 1",
            &[],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if tables.is_empty() {
        return Ok(Identity::Empty);
    }
    if !tables.iter().any(|t| t == "leaselabmarker") {
        return Err(PgError::Foreign(format!(
            "{shown} holds tables of another application ({}); refusing to touch it",
            tables.join(", ")
        )));
    }
    let marker: Vec<(String, i32)> = tx
        .query("SELECT Application, SchemaVersion FROM LeaselabMarker", &[])?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    match marker.as_slice() {
        [(_, version)] if *version == SCHEMA_VERSION => {}
        [(_, version)] => {
            return Err(PgError::OtherSchema(crate::outbox::OtherSchema {
                shown: shown.to_string(),
                found: *version,
                known: SCHEMA_VERSION,
            }))
        }
        _ => {
            return Err(PgError::Foreign(format!(
            "{shown} has a LeaselabMarker table with {} rows instead of one; refusing to touch it",
            marker.len()
        )))
        }
    }
    if let Some(missing) = TABLES.iter().find(|t| !tables.iter().any(|h| h == *t)) {
        return Err(PgError::Foreign(format!(
            "{shown} is a leaselab database whose schema was changed (no table {missing}); refusing to touch it"
        )));
    }
    if let Some(extra) = tables.iter().find(|t| !TABLES.contains(&t.as_str())) {
        return Err(PgError::Foreign(format!(
            "{shown} is a leaselab database whose schema was changed (an extra table {extra}); refusing to touch it"
        )));
    }
    Ok(Identity::Ours)
}
