//! leaselab: a terminal lab that makes outbox leasing visible.
//!
//! Workers (OS threads, each with its own SQLite connection) compete for the rows of a real
//! SQLite outbox. The engine knows nothing of terminals; the scenarios, the reports and the
//! dashboard are all built on it.

pub mod bench;
/// The engine, a crate of its own (`crates/leaselab-engine`): it knows nothing of terminals
/// or command lines, and the compiler keeps it so.
pub use leaselab_engine as engine;
pub mod exercise;
pub mod explore;
/// Sweeping what killed makers left behind (kept in the engine, which makes those files).
pub use engine::leftovers;
pub mod lesson;
pub mod platform;
pub mod processes;
pub mod progress;
pub mod scenario;
/// The timing and reliability settings the engine runs with (kept in the engine, which
/// takes them; named here as well, as every command resolves them).
pub use engine::setup;
pub mod signals;
/// Text from outside (files, rows, flags) made fit to print (kept in the engine, whose
/// errors quote such text too).
pub use engine::text;
pub mod ui;
pub mod version;
