//! Everything the engine asks of the operating system that is not the same on Linux, macOS
//! and Windows, one small module per concern, each with one implementation per system. No
//! other file of the engine names a system: what lies outside this folder is the same code
//! everywhere (a test holds it: `tests/platform_calls.rs`).
//!
//! - [`process`]: which process a pid names now, and whether it is gone;
//! - [`files`]: a file's identity, a new database's permissions, and opening a path without
//!   waiting on a fifo;
//! - [`socket`]: how a PostgreSQL host that is a local socket is named.

pub mod files;
pub mod process;
pub mod socket;
