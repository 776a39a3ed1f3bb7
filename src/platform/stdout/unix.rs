//! Unix: a constructor looks at descriptor 1 before Rust's runtime replaces a closed one.

use std::sync::atomic::{AtomicBool, Ordering};

static CLOSED_AT_START: AtomicBool = AtomicBool::new(false);

/// Run by the loader before Rust's runtime starts, as every constructor is.
#[used]
#[cfg_attr(target_os = "linux", link_section = ".init_array")]
#[cfg_attr(target_os = "macos", link_section = "__DATA,__mod_init_func")]
static LOOK_AT_STDOUT_AT_START: extern "C" fn() = look_at_stdout;

extern "C" fn look_at_stdout() {
    // SAFETY: F_GETFD only asks whether the descriptor is open; it changes nothing.
    let closed = unsafe { libc::fcntl(libc::STDOUT_FILENO, libc::F_GETFD) } == -1;
    CLOSED_AT_START.store(closed, Ordering::Relaxed);
}

pub(super) fn closed_at_start() -> bool {
    // Named here, so that the constructor is linked with whatever asks.
    std::hint::black_box(&LOOK_AT_STDOUT_AT_START);
    CLOSED_AT_START.load(Ordering::Relaxed)
}

pub(super) fn reader_gone(_e: &std::io::Error) -> bool {
    false
}
