//! What a `leaselab worker` process is started with: its settings, the one spelling of its
//! flags (clap's definitions in `src/cli/` name these constants, and the fleet renders
//! them), and the environment a `--processes` child is given.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::setup::Reliability;

/// The command itself.
pub const WORKER: &str = "worker";
/// The database it shares: a SQLite file or a `postgres://` URL.
pub const DB: &str = "db";
pub const NAME: &str = "name";
pub const MESSAGES: &str = "messages";
pub const NO_LEASING: &str = "no-leasing";
pub const LEASE_MS: &str = "lease-ms";
pub const PROCESS_MS: &str = "process-ms";
pub const HEARTBEAT_MS: &str = "heartbeat-ms";
pub const NO_HEARTBEAT: &str = "no-heartbeat";
pub const MAX_ATTEMPTS: &str = "max-attempts";
pub const BACKOFF_MS: &str = "backoff-ms";
pub const BACKOFF_CAP_MS: &str = "backoff-cap-ms";
/// The worker's clock this many milliseconds ahead (negative: behind), on purpose.
pub const CLOCK_SKEW_MS: &str = "clock-skew-ms";
/// On PostgreSQL, lease times from the worker's own clock rather than the server's.
pub const LOCAL_CLOCK: &str = "local-clock";
/// `KEY=N`: the provider fails KEY's first N status checks.
pub const FAIL_FIRST: &str = "fail-first";
pub const FAIL_ALWAYS: &str = "fail-always";

/// Set in the environment of a child started held: it waits for its standard input to
/// give a byte or close before it opens the database (see `WorkerProcesses::start_held`).
pub const HOLD_ENV: &str = "LEASELAB_HOLD_UNTIL_STARTED";

/// Set in the environment of a `--processes` child: it may take a worker thread's name
/// (`Worker-A`), since its dashboard runs no threads of its own.
pub const CHILD_ENV: &str = "LEASELAB_PROCESSES_CHILD";

/// What every worker process is started with.
#[derive(Debug, Clone)]
pub struct ProcessSettings {
    pub db: PathBuf,
    pub lease_ms: i64,
    pub process_ms: i64,
    pub leasing: bool,
    /// Heartbeats, retries and provider failures, passed on to every child.
    pub reliability: Reliability,
}

/// `--flag=value`: joined, so a value that starts with `-` (a file `-x.db`) is still read
/// as the flag's value, and a path that is not UTF-8 passes unchanged.
fn flag(name: &str, value: impl Into<OsString>) -> OsString {
    let mut arg = OsString::from(format!("--{name}="));
    arg.push(value.into());
    arg
}

impl ProcessSettings {
    /// The command line after the program that starts a `leaselab worker` named `name`
    /// with these settings.
    pub fn worker_args(&self, name: &str) -> Vec<OsString> {
        let mut args = vec![
            OsString::from(WORKER),
            flag(DB, &self.db),
            flag(NAME, name),
            flag(LEASE_MS, self.lease_ms.to_string()),
            flag(PROCESS_MS, self.process_ms.to_string()),
        ];
        if !self.leasing {
            args.push(format!("--{NO_LEASING}").into());
        }
        args.extend(reliability_args(&self.reliability));
        args
    }
}

/// The flags that give a `leaselab worker` child `r`.
fn reliability_args(r: &Reliability) -> Vec<OsString> {
    let mut args = vec![
        flag(MAX_ATTEMPTS, r.retry.max_attempts.to_string()),
        flag(BACKOFF_MS, r.retry.base_ms.to_string()),
        flag(BACKOFF_CAP_MS, r.retry.cap_ms.to_string()),
    ];
    match (r.heartbeats, r.heartbeat_ms) {
        (false, _) => args.push(format!("--{NO_HEARTBEAT}").into()),
        (true, Some(ms)) => args.push(flag(HEARTBEAT_MS, ms.to_string())),
        (true, None) => {}
    }
    for (key, n) in &r.faults.fail_first {
        args.push(flag(FAIL_FIRST, format!("{key}={n}")));
    }
    for key in &r.faults.fail_always {
        args.push(flag(FAIL_ALWAYS, key));
    }
    args
}
