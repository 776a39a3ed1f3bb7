//! Argument groups more than one command shares, each flattened into the commands that
//! use it (`#[command(flatten)]`), so a command lists exactly the flags it acts on. The
//! flags `worker` takes are named from `leaselab::processes::flags`, which the
//! `--processes` dashboard's fleet renders for its children: one spelling for both.

use clap::Args;

use leaselab::engine::outbox::RetryPolicy;
use leaselab::engine::provider::ProviderFaults;
use leaselab::processes::flags;
use leaselab::setup::Reliability;

use super::numbers::{self, MAX_THREADS};

/// Most messages `run`, the dashboard and a worker process seed: each message costs about
/// 1 KB of ledger and final-state checks, and a million of them would not drain in
/// reasonable time with every commit synced (see docs/scenarios.md).
pub const MAX_RUN_MESSAGES: i64 = 100_000;

/// The outbox's size and whether it is leased: `run`, the dashboard and `worker`.
#[derive(Args, Debug, Clone, Default)]
pub struct OutboxArgs {
    /// Payments (and outbox messages) to seed (1-100000).
    #[arg(long = flags::MESSAGES, value_name = "N", allow_negative_numbers = true, value_parser = numbers::whole::<1, MAX_RUN_MESSAGES>)]
    pub messages: Option<i64>,
    /// Switch leasing off: workers load every Pending row and process it unguarded.
    #[arg(long = flags::NO_LEASING)]
    pub no_leasing: bool,
}

impl OutboxArgs {
    pub fn messages(&self) -> Option<u64> {
        self.messages.map(|n| n as u64)
    }
}

/// Worker threads and the scenario clock's speed: `run` and the dashboard.
#[derive(Args, Debug, Clone, Default)]
pub struct ThreadArgs {
    /// Worker threads, each with its own database connection (1-64).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = numbers::whole::<1, MAX_THREADS>)]
    pub workers: Option<i64>,
    /// Scenario clock speed: scenario seconds per wall second (0.05-1000).
    #[arg(long, value_name = "X", allow_negative_numbers = true, value_parser = numbers::speed)]
    pub speed: Option<f64>,
}

impl ThreadArgs {
    pub fn workers(&self) -> Option<usize> {
        self.workers.map(|n| n as usize)
    }
}

/// The longest lease, heartbeat or backoff, in scenario milliseconds: an hour.
pub const MAX_LEASE_MS: i64 = 3_600_000;
/// The longest processing time of one message, in scenario milliseconds.
pub const MAX_PROCESS_MS: i64 = 600_000;

/// The lease and the processing time: `run`, the dashboard and `worker`.
#[derive(Args, Debug, Clone, Default)]
pub struct TimingArgs {
    /// Lease length in scenario milliseconds (1-3600000).
    #[arg(long = flags::LEASE_MS, value_name = "N", allow_negative_numbers = true, value_parser = numbers::whole::<1, MAX_LEASE_MS>)]
    pub lease_ms: Option<i64>,
    /// Scenario milliseconds one message takes to process (0-600000); `run` needs a
    /// --lease-ms above it without heartbeats.
    #[arg(long = flags::PROCESS_MS, value_name = "N", allow_negative_numbers = true, value_parser = numbers::whole::<0, MAX_PROCESS_MS>)]
    pub process_ms: Option<i64>,
}

/// Most attempts a message may be given before it is dead-lettered.
pub const MAX_ATTEMPTS: i64 = 1_000;

/// Heartbeats, retries and provider faults: `run`, the dashboard and `worker`.
#[derive(Args, Debug, Clone, Default)]
pub struct ReliabilityArgs {
    /// A worker processing a message extends its lease every N scenario ms (1 to below the
    /// lease; default a third of the lease).
    #[arg(long = flags::HEARTBEAT_MS, value_name = "N", allow_negative_numbers = true, value_parser = numbers::whole::<1, MAX_LEASE_MS>)]
    pub heartbeat_ms: Option<i64>,
    /// Workers never extend a lease: a message that outlives it is taken over.
    #[arg(long = flags::NO_HEARTBEAT, conflicts_with = "heartbeat_ms")]
    pub no_heartbeat: bool,
    /// Attempts a message gets before it is dead-lettered (1-1000; default 5).
    #[arg(long = flags::MAX_ATTEMPTS, value_name = "N", allow_negative_numbers = true, value_parser = numbers::whole::<1, MAX_ATTEMPTS>)]
    pub max_attempts: Option<i64>,
    /// Backoff after the first failed attempt, doubled after each further one (0-3600000;
    /// default 100).
    #[arg(long = flags::BACKOFF_MS, value_name = "N", allow_negative_numbers = true, value_parser = numbers::whole::<0, MAX_LEASE_MS>)]
    pub backoff_ms: Option<i64>,
    /// The longest backoff (0-3600000; default 2000).
    #[arg(long = flags::BACKOFF_CAP_MS, value_name = "N", allow_negative_numbers = true, value_parser = numbers::whole::<0, MAX_LEASE_MS>)]
    pub backoff_cap_ms: Option<i64>,
    /// The provider fails the first N status checks of KEY (a transient fault), e.g.
    /// PAY-002=2; may be repeated.
    #[arg(long = flags::FAIL_FIRST, value_name = "KEY=N", value_parser = numbers::fail_first)]
    pub fail_first: Vec<(String, u64)>,
    /// The provider fails every status check of KEY (a poison message); may be repeated.
    #[arg(long = flags::FAIL_ALWAYS, value_name = "KEY", value_parser = numbers::key)]
    pub fail_always: Vec<String>,
}

impl ReliabilityArgs {
    /// Heartbeats and retries from the command line, checked against the lease in use.
    pub fn reliability(&self, lease_ms: i64) -> Result<Reliability, String> {
        let d = RetryPolicy::default();
        let retry = RetryPolicy::new(
            self.backoff_ms.unwrap_or(d.base_ms),
            self.backoff_cap_ms
                .unwrap_or(d.cap_ms.max(self.backoff_ms.unwrap_or(0))),
            self.max_attempts.unwrap_or(d.max_attempts),
        )?;
        let r = Reliability {
            heartbeats: !self.no_heartbeat,
            heartbeat_ms: self.heartbeat_ms,
            retry,
            faults: ProviderFaults {
                fail_first: self.fail_first.iter().cloned().collect(),
                fail_always: self.fail_always.iter().cloned().collect(),
            },
        };
        r.check(lease_ms)
            .map_err(|e| format!("--heartbeat-ms: {e}"))?;
        Ok(r)
    }

    /// Whether any of these was given.
    pub fn any(&self) -> bool {
        self.heartbeat_ms.is_some()
            || self.no_heartbeat
            || self.max_attempts.is_some()
            || self.backoff_ms.is_some()
            || self.backoff_cap_ms.is_some()
            || !self.fail_first.is_empty()
            || !self.fail_always.is_empty()
    }
}
