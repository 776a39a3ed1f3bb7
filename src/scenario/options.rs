//! The settings of a headless run, each defaulting to the headless timing.

use std::time::Duration;

use crate::engine::Engine;
use crate::setup::{Reliability, Timing};

/// Settings for a headless run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// None: the scenario's own default.
    pub workers: Option<usize>,
    pub messages: Option<u64>,
    pub lease_ms: i64,
    pub process_ms: i64,
    pub speed: f64,
    pub db: Option<std::path::PathBuf>,
    pub no_leasing: bool,
    /// Soak: the seed of the fault schedule (None: one from the wall clock).
    pub seed: Option<u64>,
    /// Give up when no event arrives for this long.
    pub stall_after: Duration,
    /// A signal number here stops the run early with [`RunError::Interrupted`].
    pub interrupt: Option<crossbeam_channel::Receiver<i32>>,
    /// A fault a test injects once the engine is seeded, before the workers run.
    pub inject: Option<fn(&Engine)>,
    /// Heartbeats, retries and the dead letter.
    pub reliability: Reliability,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            workers: None,
            messages: None,
            seed: None,
            lease_ms: Timing::HEADLESS.lease_ms,
            process_ms: Timing::HEADLESS.process_ms,
            speed: Timing::HEADLESS.speed,
            db: None,
            no_leasing: false,
            stall_after: Duration::from_secs(60),
            interrupt: None,
            inject: None,
            reliability: Reliability::default(),
        }
    }
}
