//! Workers as OS processes: `leaselab worker` (one worker alone in its process, `worker.rs`)
//! and the fleet of such children a `--processes` dashboard starts and signals (`fleet.rs`).

pub mod fleet;
pub mod worker;

pub use fleet::{ProcessSettings, ProcessState, WorkerProcesses, CHILD_ENV, HOLD_ENV};
