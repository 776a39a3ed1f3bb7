//! A process as its system names it: when it started, which boot (or machine) and which pid
//! namespace its id is counted in, and whether a process of a given id is still there. Each
//! system offers this differently:
//!
//! - Linux: `/proc/PID/stat` has the start time in clock ticks since the boot and the
//!   state (a zombie has ended); `/proc/sys/kernel/random/boot_id` names the boot, and the
//!   inode of `/proc/self/ns/pid` the pid namespace.
//! - macOS: `proc_pidinfo` has the start time (microseconds since 1970) and the state;
//!   `kern.bootsessionuuid` names the boot; there are no pid namespaces (0).
//! - Windows: `GetProcessTimes` has the creation time (100 ns since 1601), and
//!   `GetExitCodeProcess` whether it still runs; a creation time is absolute, so the
//!   installation's `MachineGuid` is enough to name where it runs; no pid namespaces (0).
//!
//! Whether a pid is gone at all (a leftover file's maker) is `kill(pid, 0)` on both Unix
//! systems and `OpenProcess` on Windows.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as system;

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as system;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as system;

#[cfg(unix)]
mod unix;

/// When a process started, in the system's own unit, and where its id counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    pub started: u64,
    pub boot: String,
    pub pid_ns: u64,
}

/// What the system says of a process id now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// A process of that id runs (or is stopped), started at this time.
    Running { started: u64 },
    /// A process of that id has ended (a zombie nobody has reaped), or none has the id.
    Ended,
    /// The system would not say (another user's process, hidden).
    Unreadable,
}

/// This process's stamp; None where the system does not say.
pub fn this_process() -> Option<Stamp> {
    let pid = std::process::id();
    let Found::Running { started } = system::look_up(pid) else {
        return None;
    };
    let (boot, pid_ns) = here()?;
    Some(Stamp {
        started,
        boot,
        pid_ns,
    })
}

/// The boot (or machine) and pid namespace this process runs in.
pub fn here() -> Option<(String, u64)> {
    Some((system::boot()?, system::pid_ns()?))
}

/// What the system says of process `pid` now, looked up from this process.
pub fn look_up(pid: u32) -> Found {
    system::look_up(pid)
}

/// Whether no process has the id `pid` (not merely another user's).
pub fn gone(pid: u32) -> bool {
    system::gone(pid)
}

/// A boot or machine id as the systems write them: hex digits and dashes, nothing a
/// detail could not hold.
pub fn is_boot_id(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_runs_and_its_stamp_is_read_twice_alike() {
        let me = this_process().expect("every supported system tells this process's stamp");
        assert!(is_boot_id(&me.boot), "{me:?}");
        assert_eq!(this_process(), Some(me.clone()));
        assert_eq!(
            look_up(std::process::id()),
            Found::Running {
                started: me.started
            }
        );
        assert!(!gone(std::process::id()));
    }

    #[test]
    fn a_reaped_child_is_gone() {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .arg("--list")
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        child.wait().unwrap();
        // Its id may be taken again by now, but then by a process of another start.
        match look_up(pid) {
            Found::Ended => assert!(gone(pid), "ended, and so no process of that id"),
            Found::Running { started } => {
                let me = this_process().unwrap();
                assert!(started >= me.started, "a newer process took its id");
            }
            Found::Unreadable => panic!("our own child's id is readable"),
        }
    }
}
