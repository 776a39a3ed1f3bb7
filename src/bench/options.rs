//! What a bench is asked to measure: its modes and its options.

use serde::Serialize;

use crate::engine::outbox::Durability;

/// Leases in the bench never expire: it measures claiming, not recovery.
pub(crate) const BENCH_LEASE_MS: i64 = 3_600_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Leased,
    Naive,
    Batch,
    /// The reference: a plain claim loop on a plain table (`store::PlainOutbox`).
    Plain,
    /// effectum, a job queue on SQLite, run as its own program (`reference/effectum`).
    Effectum,
}

#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub messages: u64,
    pub workers: Vec<usize>,
    pub durability: Durability,
    pub batch: usize,
    /// Also compare the per-message cost at 1,000 and at `scale_to` messages.
    pub scale_to: Option<u64>,
    /// Also run the leased loop on this PostgreSQL database, beside SQLite.
    pub postgres: Option<String>,
    /// With `postgres`, also run this `pgbench` with the leased loop's own statements
    /// between the PostgreSQL runs (None: not found, and that comparison is skipped).
    pub pgbench: Option<std::path::PathBuf>,
    /// Also run this build of `reference/effectum` beside the leased loop.
    pub effectum: Option<std::path::PathBuf>,
    /// How many times each leased, plain, batch and effectum run is measured; each
    /// target is the median of the rounds' figures.
    pub rounds: usize,
}
