//! Everything the application asks of the operating system that is not the same on Linux,
//! macOS and Windows, one small module per concern, each with one implementation per
//! system; the engine's own are in `leaselab_engine::platform` (process and file identity).
//! No other file names a system: what lies outside these folders is the same code
//! everywhere (a test holds it: `tests/platform_calls.rs`).
//!
//! - [`signals`]: a stop asked from outside (SIGTERM, Ctrl-C, Ctrl-Break, a closed
//!   terminal) and job control (Ctrl-Z, which only Unix has);
//! - [`children`]: worker processes a dashboard starts: detached from its terminal, dead
//!   with it, frozen and woken, killed with what they started;
//! - [`stdout`]: whether the program was started with its standard output closed;
//! - [`memory`]: how much memory this process holds now, and at most.
//!
//! What differs is also said to people: `docs/systems.md` has the table.

pub mod children;
pub mod memory;
pub mod signals;
pub mod stdout;
