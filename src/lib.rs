//! leaselab: a terminal lab that makes outbox leasing visible.
//!
//! Workers (OS threads, each with its own SQLite connection) compete for the rows of a real
//! SQLite outbox. The engine knows nothing of terminals; the scenarios, the reports and the
//! dashboard are all built on it.

pub mod bench;
pub mod checks;
pub mod engine;
pub mod leftovers;
pub mod lesson;
pub mod processes;
pub mod progress;
pub mod report;
pub mod scenario;
pub mod setup;
pub mod signals;
pub mod ui;
pub mod worker_cmd;
