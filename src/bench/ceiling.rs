//! The ceiling a run is measured against: one connection looping the cheapest write
//! transaction on a file of its own, in bursts right before and after each run.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::engine::outbox::Durability;
use crate::engine::store::Store;

use super::error::BenchError;
use super::measure::fresh_db;
use super::report::{median, BenchRun};
use super::stop::go_on;

/// How long each burst of the ceiling loop runs; one burst before and one after every run,
/// so each ratio compares numbers measured moments apart on a noisy machine.
const CEILING_BURST: Duration = Duration::from_millis(400);

/// One connection looping the cheapest write transaction, on its own file with the same
/// settings as the runs.
pub struct Ceiling {
    store: Store,
    bursts: Vec<f64>,
}

impl Ceiling {
    pub fn new(dir: &Path, durability: Durability) -> Result<Ceiling, BenchError> {
        let (store, _, _) = fresh_db(dir, "ceiling.db", 1, durability)?;
        Ok(Ceiling {
            store,
            bursts: Vec::new(),
        })
    }

    /// Write transactions per second over one burst.
    pub fn burst(&mut self) -> Result<f64, BenchError> {
        let start = Instant::now();
        let mut n = 0u64;
        while start.elapsed() < CEILING_BURST {
            go_on()?;
            self.store.touch(1)?;
            n += 1;
        }
        let rate = n as f64 / start.elapsed().as_secs_f64();
        self.bursts.push(rate);
        Ok(rate)
    }

    pub fn median(&self) -> f64 {
        median(&self.bursts)
    }
}

/// `run` between two ceiling bursts, its ratio taken against their mean.
pub(crate) fn around(
    ceiling: &mut Ceiling,
    run: impl FnOnce(f64) -> Result<BenchRun, BenchError>,
) -> Result<BenchRun, BenchError> {
    let before = ceiling.burst()?;
    let mut run = run(before)?;
    go_on()?;
    let around = (before + ceiling.burst()?) / 2.0;
    run.ceiling_txn_per_s = around;
    run.ratio = run.msgs_per_s / (around / 2.0);
    Ok(run)
}
