//! macOS: `proc_pidinfo` for the resident size now, `getrusage` for the most (in bytes).

pub(super) fn resident_bytes() -> Option<u64> {
    // SAFETY: proc_taskinfo is plain data; zeroed is a valid value for it.
    let mut info: libc::proc_taskinfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::proc_taskinfo>() as libc::c_int;
    let pid = libc::c_int::try_from(std::process::id()).ok()?;
    // SAFETY: the buffer is `info`, of the size given, alive for the call.
    let n = unsafe {
        libc::proc_pidinfo(
            pid,
            libc::PROC_PIDTASKINFO,
            0,
            (&mut info as *mut libc::proc_taskinfo).cast(),
            size,
        )
    };
    (n == size).then_some(info.pti_resident_size)
}

pub(super) fn peak_bytes() -> Option<u64> {
    // SAFETY: rusage is plain data; zeroed is a valid value for it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a place for this process's usage.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return None;
    }
    // macOS counts it in bytes (Linux, in KiB).
    u64::try_from(usage.ru_maxrss).ok()
}
