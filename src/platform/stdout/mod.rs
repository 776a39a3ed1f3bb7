//! Whether the program was started with its standard output closed (`>&-`), so that nothing
//! it prints could be seen:
//!
//! - Unix (Linux and macOS alike): Rust's runtime opens `/dev/null` in place of a closed
//!   standard descriptor before `main`, so the descriptor is looked at earlier, by a
//!   constructor the loader runs (`.init_array` on Linux, `__mod_init_func` on macOS).
//! - Windows: a process started without a standard output has no handle for it, and Rust's
//!   runtime leaves that as it is, so `GetStdHandle` answers at any time.
//!
//! A reader that went away (`| head`) is a broken pipe on Unix; on Windows the write may
//! also find the pipe no longer connected (`ERROR_PIPE_NOT_CONNECTED`).

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as system;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as system;

/// Whether a failed write found its reader gone (`| head` that ended): on Unix a broken
/// pipe; on Windows also a pipe whose other end is no longer connected.
pub fn reader_gone(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::BrokenPipe || system::reader_gone(e)
}

/// Whether standard output was closed when the program started.
pub fn closed_at_start() -> bool {
    system::closed_at_start()
}
