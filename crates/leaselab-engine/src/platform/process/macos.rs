//! macOS: `proc_pidinfo` tells a process's start time and state, `kern.bootsessionuuid`
//! the boot. There are no pid namespaces.

use super::Found;

pub(super) use super::unix::gone;

pub(super) fn look_up(pid: u32) -> Found {
    let Ok(id) = libc::c_int::try_from(pid) else {
        return Found::Ended;
    };
    // SAFETY: proc_bsdinfo is plain data; zeroed is a valid value for it.
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::proc_bsdinfo>() as libc::c_int;
    // SAFETY: the buffer is `info`, of the size given, alive for the call.
    let n = unsafe {
        libc::proc_pidinfo(
            id,
            libc::PROC_PIDTBSDINFO,
            0,
            (&mut info as *mut libc::proc_bsdinfo).cast(),
            size,
        )
    };
    if n != size {
        return if gone(pid) {
            Found::Ended
        } else {
            Found::Unreadable
        };
    }
    if info.pbi_status == libc::SZOMB {
        return Found::Ended;
    }
    Found::Running {
        started: info
            .pbi_start_tvsec
            .saturating_mul(1_000_000)
            .saturating_add(info.pbi_start_tvusec),
    }
}

pub(super) fn boot() -> Option<String> {
    let mut buf = [0u8; 64];
    let mut len = buf.len();
    // SAFETY: a NUL-terminated name, and a buffer of `len` bytes that sysctl fills.
    let rc = unsafe {
        libc::sysctlbyname(
            c"kern.bootsessionuuid".as_ptr(),
            buf.as_mut_ptr().cast(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if rc != 0 {
        return None;
    }
    let text = std::str::from_utf8(&buf[..len.min(buf.len())]).ok()?;
    let id = text.trim_end_matches('\0').trim();
    super::is_boot_id(id).then(|| id.to_string())
}

pub(super) fn pid_ns() -> Option<u64> {
    Some(0)
}
