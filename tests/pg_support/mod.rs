//! A throwaway PostgreSQL database per test, on the server named by `LEASELAB_PG_URL`.
//! Without that variable the tests say once that they were skipped and pass, except in CI,
//! where they must run. (A test that needs a server of its own, to restart it or one on
//! TCP with a password, starts one with `tests/pg_server`.)

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

use postgres::{Client, Config, NoTls};

pub const URL_ENV: &str = "LEASELAB_PG_URL";
pub const SKIP_LINE: &str = "skipped: no PostgreSQL server (set LEASELAB_PG_URL)";

/// What to do for a given environment: Ok(Some(url)) run, Ok(None) skip, Err fail.
pub fn decide(url: Option<String>, ci: Option<String>) -> Result<Option<String>, String> {
    match (url.filter(|u| !u.trim().is_empty()), ci.as_deref()) {
        (Some(url), _) => Ok(Some(url)),
        (None, Some("true") | Some("1")) => Err(format!(
            "CI=true but {URL_ENV} is not set: the PostgreSQL tests must run in CI (.ci/run starts a server)"
        )),
        (None, _) => Ok(None),
    }
}

/// A database made for one test and dropped after it.
pub struct ScratchDb {
    admin: Config,
    pub name: String,
    pub config: Config,
    /// The scratch database as a `postgres://` URL, as `--db` takes it.
    pub url: String,
}

impl ScratchDb {
    /// A plain client on the scratch database, for raw SQL beside the store under test.
    pub fn client(&self) -> Client {
        self.config
            .connect(NoTls)
            .expect("connect to the scratch database")
    }
}

impl Drop for ScratchDb {
    fn drop(&mut self) {
        if let Ok(mut admin) = self.admin.connect(NoTls) {
            let _ = admin.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// A new empty database named after the test, or None (after one line on stderr) when no
/// server is configured outside CI.
pub fn scratch(tag: &str) -> Option<ScratchDb> {
    let url = match decide(std::env::var(URL_ENV).ok(), std::env::var("CI").ok()) {
        Ok(Some(url)) => url,
        Ok(None) => {
            static SAID: Once = Once::new();
            // Straight to the stream: the harness hides what a passing test prints.
            SAID.call_once(|| {
                let _ = writeln!(std::io::stderr(), "{SKIP_LINE}");
            });
            return None;
        }
        Err(why) => panic!("{why}"),
    };
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let admin: Config = url
        .parse()
        .unwrap_or_else(|e| panic!("{URL_ENV} is not a PostgreSQL URL: {e}"));
    let name = format!(
        "leaselab_t{}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        tag
    );
    let mut client = admin
        .connect(NoTls)
        .unwrap_or_else(|e| panic!("cannot connect to {URL_ENV}: {e:?}"));
    client
        .batch_execute(&format!("CREATE DATABASE {name} TEMPLATE template0"))
        .expect("create the scratch database");
    let mut config = admin.clone();
    config.dbname(&name);
    Some(ScratchDb {
        admin,
        url: with_dbname(&url, &name),
        name,
        config,
    })
}

/// `url` with its database (the path after the host) replaced by `name`.
pub fn with_dbname(url: &str, name: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a postgres:// URL");
    let (authority, tail) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    let query = tail.find('?').map_or("", |i| &tail[i..]);
    format!("{scheme}://{authority}/{name}{query}")
}
