//! `leaselab explore`: every schedule of a small world's worker steps and faults, run on a
//! real SQLite outbox, breadth first, so the first schedule found to break a check is a
//! shortest one. Each state reached is kept as the bytes of its database (an in-memory
//! SQLite copy, its pages shared with every state holding the same page) with the
//! provider's counts and the workers' memory; a state already seen is not explored again.
//! This file only names the parts; each does one job and none imports this file.

mod check;
mod clock;
mod error;
mod lesson;
mod options;
mod oracle;
mod report;
mod search;
mod seen;
mod state;
mod store;
mod student;
mod symmetry;
mod world;

pub use check::Check;
pub use error::{ExploreError, FaultsError};
pub use lesson::save_lesson;
pub use options::{ExploreOptions, Faults, Mode, LEASE_MS};
pub use report::{plural, Cut, Outcome, Report, Told, Verdict};
pub use search::{explore, Progress};
pub use world::{Move, Seen, World, JUMP_MS};
