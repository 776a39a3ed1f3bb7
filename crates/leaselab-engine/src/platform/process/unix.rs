//! What both Unix systems answer alike (POSIX).

/// Whether no process has the id `pid`: signal 0 checks existence only, and EPERM means it
/// lives under another user.
pub(super) fn gone(pid: u32) -> bool {
    // An id past pid_t names no process, but nothing can be asked of it either.
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill(2) with signal 0 sends nothing; it only asks whether the pid exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}
