//! `leaselab bench --db postgres://...`: the leased loop on PostgreSQL (`FOR UPDATE SKIP
//! LOCKED`) beside the same loop on SQLite, run after run in the same bench, so the ratio
//! compares figures measured moments apart.

use crate::engine::outbox::prelude::*;
use std::path::Path;
use std::sync::{Arc, Barrier};

use super::error::BenchError;
use super::measure::{each_once, measure, start_and_join};
use super::options::{Mode, BENCH_LEASE_MS};
use super::pg_report::{PgComparison, Versus};
use super::pgbench::{measure_pgbench, PGBENCH_CLIENTS};
use super::report::{median, workers as some_workers, BenchRun};
use super::stop::{clean, go_on, stop_asked};
use crate::engine::backend::{Db, Outbox};
use crate::engine::clock::SCENARIO_START_MS;
use crate::engine::outbox::{ClaimOutcome, Durability, FinalizeOutcome, OutboxError, StoreShared};
use crate::engine::pg::PgStore;
use crate::engine::provider::Provider;
use crate::engine::worker_id::WorkerId;

/// Each pairing runs this often, SQLite and PostgreSQL in turn; the medians are compared.
pub const REPEATS: usize = 3;
/// The most messages a comparison run seeds: enough for a steady rate, short enough that
/// the repeats stay within a few minutes.
pub const MAX_MESSAGES: u64 = 20_000;

/// Connect and check that the database is leaselab's (or empty), writing nothing else.
pub fn ready(url: &str) -> Result<(), BenchError> {
    PgStore::create_held(url, Arc::new(StoreShared::default()))?;
    Ok(())
}

/// Run the comparison for each worker count of `workers`, with `pgbench` (when there is
/// one) right after each PostgreSQL run.
pub fn compare(
    url: &str,
    (workers, messages): (&[usize], u64),
    durability: Durability,
    pgbench: Option<&Path>,
    dir: &Path,
    progress: &mut impl FnMut(&str),
) -> Result<PgComparison, BenchError> {
    let messages = messages.min(MAX_MESSAGES);
    let mut runs = Vec::new();
    for &w in workers {
        let (mut pg, mut sq, mut pgb) = (Vec::new(), Vec::new(), Vec::new());
        for round in 1..=REPEATS {
            let workers = some_workers(w);
            progress(&format!("PostgreSQL vs SQLite, {workers}, round {round}"));
            // Each round seeds a fresh file of the same name.
            clean(dir, "ceiling.db");
            sq.push(measure(dir, Mode::Leased, w, 1, messages, durability, 1.0)?);
            go_on()?;
            pg.push(measure_pg(url, w, messages, durability)?);
            go_on()?;
            if let Some(program) = pgbench {
                progress(&format!(
                    "pgbench, {PGBENCH_CLIENTS} clients, round {round}"
                ));
                pgb.push(measure_pgbench(program, url, messages, durability, dir)?);
                go_on()?;
            }
        }
        runs.push(versus(w, pg, sq, pgb));
    }
    Ok(PgComparison {
        database: Db::Postgres(url.to_string()).shown(),
        synchronous_commit: match durability {
            Durability::Full => "on",
            Durability::Normal | Durability::Off => "off",
        }
        .to_string(),
        messages,
        repeats: REPEATS,
        pgbench: pgbench.map(|p| p.display().to_string()),
        pgbench_clients: PGBENCH_CLIENTS,
        runs,
    })
}

fn versus(workers: usize, mut pg: Vec<PgRun>, sq: Vec<BenchRun>, pgbench_runs: Vec<f64>) -> Versus {
    let exactly_once = pg.iter().all(|r| r.exactly_once) && sq.iter().all(|r| r.exactly_once);
    let postgres_runs: Vec<f64> = pg.iter().map(|r| r.msgs_per_s).collect();
    let sqlite_runs: Vec<f64> = sq.iter().map(|r| r.msgs_per_s).collect();
    pg.sort_by(|a, b| a.msgs_per_s.total_cmp(&b.msgs_per_s));
    let median_pg = pg.swap_remove(pg.len() / 2);
    let sqlite = median(&sqlite_runs);
    let pgbench = (!pgbench_runs.is_empty()).then(|| median(&pgbench_runs));
    Versus {
        workers,
        postgres_msgs_per_s: median_pg.msgs_per_s,
        sqlite_msgs_per_s: sqlite,
        postgres_over_sqlite: median_pg.msgs_per_s / sqlite.max(f64::MIN_POSITIVE),
        pgbench_msgs_per_s: pgbench,
        leased_over_pgbench: pgbench.map(|p| median_pg.msgs_per_s / p.max(f64::MIN_POSITIVE)),
        postgres_runs,
        sqlite_runs,
        pgbench_runs,
        postgres_per_worker: median_pg.per_worker,
        exactly_once,
    }
}

/// One leased run on PostgreSQL.
#[derive(Debug, Clone)]
pub struct PgRun {
    pub msgs_per_s: f64,
    pub per_worker: Vec<u64>,
    pub exactly_once: bool,
}

/// Empty and reseed the database at `url`, then let `workers` threads, each on its own
/// connection, claim and finalize until nothing is left.
pub fn measure_pg(
    url: &str,
    workers: usize,
    messages: u64,
    durability: Durability,
) -> Result<PgRun, BenchError> {
    let shared = Arc::new(StoreShared::new(durability));
    let (mut store, _) = PgStore::create_held(url, shared.clone())?;
    let provider = Arc::new(Provider::new());
    store.empty()?;
    store.seed(&provider, messages, SCENARIO_START_MS)?;
    let db = Db::Postgres(url.to_string());
    let barrier = Arc::new(Barrier::new(workers + 1));
    let handles: Vec<_> = (0..workers)
        .map(|slot| {
            let (db, shared, provider, barrier) = (
                db.clone(),
                shared.clone(),
                provider.clone(),
                barrier.clone(),
            );
            std::thread::spawn(move || -> Result<u64, BenchError> {
                let mut s = db.open(shared)?;
                let me = WorkerId::first(slot).to_string();
                barrier.wait();
                Ok(leased_loop(s.as_mut(), &provider, &me)?)
            })
        })
        .collect();
    let (per_worker, seconds) = start_and_join(&barrier, handles)?;
    let counts = store.outbox_counts()?;
    let exactly_once = each_once(&provider, counts.processed, messages);
    Ok(PgRun {
        msgs_per_s: messages as f64 / seconds,
        per_worker,
        exactly_once,
    })
}

/// Claim, ask the provider, finalize, until a claim finds nothing; returns results written.
fn leased_loop(s: &mut dyn Outbox, provider: &Provider, me: &str) -> Result<u64, OutboxError> {
    let now = SCENARIO_START_MS;
    let mut written = 0;
    loop {
        let ClaimOutcome::Claimed(lease) = s.claim_next(me, now, BENCH_LEASE_MS)?.value else {
            return Ok(written);
        };
        if stop_asked() {
            return Ok(written);
        }
        let check = provider.check_status(&lease.key);
        if s.finalize(&lease, &check, now)?.value == FinalizeOutcome::Committed {
            written += 1;
        }
    }
}
