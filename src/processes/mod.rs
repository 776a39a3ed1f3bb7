//! Workers as OS processes: `leaselab worker` (one worker alone in its process, `worker.rs`)
//! and the fleet of such children a `--processes` dashboard starts and signals (`fleet.rs`),
//! both spelling the worker's command line from `flags.rs`; `name.rs` says what a worker may
//! be called; `join.rs` the command a class's students type; `present.rs` which names live
//! workers hold now; `lifeline.rs` the pipe by which a child knows its dashboard is there.

pub mod flags;
pub mod fleet;
pub mod join;
pub mod lifeline;
pub mod name;
pub mod present;
pub mod worker;

pub use flags::{ProcessSettings, CHILD_ENV, HOLD_ENV};
pub use fleet::{FleetError, ProcessState, WorkerProcesses};
